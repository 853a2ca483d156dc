//! The live [`Lab`]: real topologies through `topology`/`backend`, real runs through `runner`;
//! plus `calibrate` (an in-process stand-in) and `demo` (stand-in topologies, capacity model).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::compare::{MatrixOutcome, NewRun};
use super::lab::{Deployment, Lab, Measured};
use super::metrics::Watched;
use super::model::CompareCommand;
use super::progress::Progress;
use super::results::{ExperimentDir, read_json, write_json_atomic};
use super::scenario::PropertyMap;
use super::summary::summarize;
use crate::error::bad_input;
use crate::runner::Phase;
use crate::topology::BackendKind;
use crate::workload::prop;

/// Stand-in service time per operation in `demo`, µs (2 workers → 200 ops/s per mongod, 800 for
/// four shards: below what the client, mongos and shards push on 2 busy cores, so the capacity
/// model, not the CPU, decides).
pub(crate) const DEMO_SERVICE_TIME_US: u64 = 10_000;
/// Stand-in workers per mongod in `demo` (ceiling = workers × 10⁶ / service time per mongod).
pub(crate) const DEMO_WORKERS: u32 = 2;
/// Records loaded per topology in `demo` (a few seconds of load at the capacity model's rate).
pub(crate) const DEMO_RECORDS: u64 = 2000;
/// Client threads in `demo`: enough in flight to saturate four shards' workers.
pub(crate) const DEMO_THREADS: u32 = 64;

/// Consecutive ports reserved for a demo topology (microshard-4 needs 6).
pub(crate) const DEMO_PORTS: u16 = 16;

/// File (under the results root) holding the last `calibrate` figure on this machine.
pub(crate) const CALIBRATE_FILE: &str = ".calibrate.json";

/// The live lab: brings topologies up with a backend and runs phases with the runner.
#[derive(Debug)]
pub(crate) struct LiveLab {
    backend: BackendKind,
    bin_dir: Option<PathBuf>,
    extra_mongod_args: Vec<String>,
    /// First port of every topology brought up (`None` = the topology file's).
    pub base_port: Option<u16>,
    /// Docker image for every member (`None` = the topology file's).
    pub image: Option<String>,
    /// Where live findings during a cell go (a member stopped answering); stderr when `None`.
    pub notify: Option<crate::runner::Notify>,
    /// Client processes per cell (`--clients`); 1 runs the cell in this process.
    pub clients: usize,
}

impl LiveLab {
    /// A lab for `backend`.
    pub(crate) fn new(
        backend: BackendKind,
        bin_dir: Option<PathBuf>,
        extra_mongod_args: Vec<String>,
    ) -> LiveLab {
        LiveLab {
            backend,
            bin_dir,
            extra_mongod_args,
            base_port: None,
            image: None,
            notify: None,
            clients: 1,
        }
    }

    /// The lab a `compare` record asks for: its backend, binaries, mongod arguments, image, ports
    /// and clients. A resumed `demo` whose stand-in links are gone gets new ones (and, with no
    /// `--base-port`, a free port range), held by the returned directory for the lab's life.
    pub(crate) fn for_compare(
        prepared: &super::compare::Prepared,
    ) -> anyhow::Result<(LiveLab, Option<tempfile::TempDir>)> {
        let cmd = &prepared.config.command;
        let (bin_dir, links) = if prepared.relinks_standin() {
            let links = demo_links()?;
            (Some(links.path().to_path_buf()), Some(links))
        } else {
            (cmd.bin_dir.clone(), None)
        };
        let mut lab = LiveLab::new(cmd.backend, bin_dir, cmd.extra_mongod_args.clone());
        lab.base_port = cmd.base_port;
        lab.image = cmd.image.clone();
        lab.clients = cmd.clients;
        if links.is_some() && lab.base_port.is_none() {
            lab.base_port = free_port_range(DEMO_PORTS);
        }
        Ok((lab, links))
    }
}

/// A temporary directory of `mongod`/`mongos` links to microshard's stand-in, for `demo`.
fn demo_links() -> anyhow::Result<tempfile::TempDir> {
    let bin = tempfile::Builder::new()
        .prefix("microshard-demo-bin-")
        .tempdir()
        .map_err(|e| anyhow::anyhow!("cannot create a directory for the stand-in binaries: {e}"))?;
    crate::standin::link_binaries(bin.path())
        .map_err(|e| anyhow::anyhow!("cannot link the stand-in binaries: {e}"))?;
    Ok(bin)
}

/// Handle of a running topology: the backend's record, needed by `down`.
#[derive(Debug)]
pub(crate) struct LiveHandle(Option<crate::backend::RunningCluster>);

impl LiveLab {
    /// A line for the user: through the progress display when there is one.
    fn say(&self, line: &str) {
        self.notify
            .clone()
            .unwrap_or_else(crate::runner::Notify::stderr)
            .say(line)
    }
}

impl Lab for LiveLab {
    type Handle = LiveHandle;

    async fn up(
        &mut self,
        topology: &str,
        cancel: &CancellationToken,
    ) -> anyhow::Result<(Deployment, LiveHandle)> {
        let kind = self.backend;
        let mut spec = crate::topology::TopologySpec::load(topology)
            .map_err(|e| bad_input(format!("--topologies {topology}: {e}")))?;
        spec.mongod_args
            .extend(self.extra_mongod_args.iter().cloned());
        if let Some(port) = self.base_port {
            spec.base_port = port;
        }
        if let Some(image) = &self.image {
            spec.image = image.clone();
        }
        let mut opts = crate::topology::PlanOptions::new(&spec, kind);
        opts.bin_dir = self.bin_dir.clone();
        let plan = crate::topology::Plan::new(&spec, &opts)
            .map_err(|e| bad_input(format!("--topologies {topology}: {e}")))?;
        let up = crate::backend::UpOptions {
            cancel: Some(cancel.clone()),
            ..Default::default()
        };
        let cluster = crate::backend::up(&plan, &up).await?;
        // What the plan says the user should know (memory caps, end-of-life versions, ...).
        for note in &cluster.plan.notes {
            self.say(&format!("microshard: {}: {note}", cluster.name));
        }
        // The entry point: the single mongod, or every mongos on its own (the entry URI lists all
        // of them, and a serverStatus through it would reach only one).
        let mut watched = Vec::new();
        let routers: Vec<&crate::backend::RunningMember> = cluster
            .members
            .iter()
            .filter(|m| m.role == crate::topology::Role::Mongos && !m.direct_uri.is_empty())
            .collect();
        if routers.len() > 1 {
            for m in routers {
                watched.push(Watched {
                    name: m.name.clone(),
                    role: "entry".into(),
                    uri: m.direct_uri.clone(),
                });
            }
        } else {
            watched.push(Watched {
                name: "entry".into(),
                role: "entry".into(),
                uri: cluster.entry_uri.clone(),
            });
        }
        // Per-shard figures come from the member that takes the writes (shards may have secondaries).
        for m in cluster.data_primaries() {
            if m.role == crate::topology::Role::Shard {
                watched.push(Watched {
                    name: m.name.clone(),
                    role: "shard".into(),
                    uri: m.direct_uri.clone(),
                });
            }
        }
        let members = cluster
            .members
            .iter()
            .filter(|m| !m.address.is_empty())
            .map(|m| crate::db::probe::ProbeTarget {
                name: m.name.clone(),
                address: m.address.clone(),
            })
            .collect();
        let default_write_concern = Some(
            super::facts::default_write_concern(Some(&cluster.plan), &cluster.entry_uri).await,
        );
        let mut plan = cluster.plan.clone();
        plan.uri = plan.uri.as_deref().map(crate::redact::redact_uri);
        let deployment = Deployment {
            topology: cluster.name.clone(),
            entry_uri: cluster.entry_uri.clone(),
            watched,
            members,
            plan: Some(plan),
            server_versions: cluster
                .servers
                .iter()
                .map(|(k, v)| (k.clone(), v.version.clone()))
                .collect(),
            default_write_concern,
        };
        Ok((deployment, LiveHandle(Some(cluster))))
    }

    async fn run(
        &mut self,
        deployment: &Deployment,
        properties: &PropertyMap,
        phase: Phase,
        cancel: &CancellationToken,
    ) -> anyhow::Result<Measured> {
        let targets = (!deployment.members.is_empty()).then(|| deployment.members.clone());
        // The topology's `client_cpuset` applies to microshard's own threads during the cell.
        let cpuset = deployment
            .plan
            .as_ref()
            .and_then(|p| p.client_cpuset.clone());
        let _pinned = match &cpuset {
            Some(set) => {
                let cpus = crate::topology::parse_cpuset(set)
                    .map_err(|e| bad_input(format!("client_cpuset {set}: {e}")))?;
                Some(crate::runner::affinity::pin_process(&cpus).map_err(|e| {
                    bad_input(format!("client_cpuset {set}: cannot pin the client: {e}"))
                })?)
            }
            None => None,
        };
        if phase == Phase::Load {
            shard_scenario_table(deployment, properties).await?;
        }
        // A topology's client engines replace `--clients` (docs/engine.md, "Several clients").
        let launcher = match deployment.plan.as_ref().and_then(|p| {
            crate::runner::fanout::docker::DockerClients::for_plan(p, &deployment.entry_uri)
        }) {
            Some(mut d) => {
                d.uri = pin_write_concern(&d.uri, properties);
                if let Some(n) = d.network.as_mut() {
                    n.uri = pin_write_concern(&n.uri, properties);
                }
                crate::runner::fanout::ClientLauncher::Docker(d)
            }
            None => crate::runner::fanout::ClientLauncher::Local {
                count: self.clients,
            },
        };
        run_phase_with(
            &deployment.entry_uri,
            properties,
            phase,
            cancel,
            targets,
            self.notify.clone(),
            &launcher,
        )
        .await
    }

    async fn down(&mut self, handle: LiveHandle) -> anyhow::Result<()> {
        match handle.0 {
            Some(cluster) => crate::backend::down(&cluster).await,
            None => Ok(()),
        }
    }
}

/// Runs one phase with the runner against `uri` and summarises its result document.
///
/// The write concern is pinned: when neither the entry URI nor the scenario sets one, `w=1` is
/// added (YCSB's default URL carries it), because from MongoDB 5.0 on replica sets and sharded
/// clusters default to `w:"majority"` and the same scenario would otherwise measure different
/// things on different versions (`docs/mongodb-versions.md`).
pub(crate) async fn run_phase(
    uri: &str,
    properties: &PropertyMap,
    phase: Phase,
    cancel: &CancellationToken,
    probe_targets: Option<Vec<crate::db::probe::ProbeTarget>>,
    notify: Option<crate::runner::Notify>,
    clients: usize,
) -> anyhow::Result<Measured> {
    let launcher = crate::runner::fanout::ClientLauncher::Local { count: clients };
    run_phase_with(
        uri,
        properties,
        phase,
        cancel,
        probe_targets,
        notify,
        &launcher,
    )
    .await
}

/// [`run_phase`] with its clients started by `launcher` (processes here, or containers).
pub(crate) async fn run_phase_with(
    uri: &str,
    properties: &PropertyMap,
    phase: Phase,
    cancel: &CancellationToken,
    probe_targets: Option<Vec<crate::db::probe::ProbeTarget>>,
    notify: Option<crate::runner::Notify>,
    launcher: &crate::runner::fanout::ClientLauncher,
) -> anyhow::Result<Measured> {
    let mut props = crate::workload::Properties::new();
    for (k, v) in properties {
        props.set(k.clone(), v.clone(), crate::workload::Origin::Override);
    }
    let opts = crate::runner::ExecuteOptions {
        cancel: cancel.clone(),
        quiet: true,
        uri: Some(pin_write_concern(uri, properties)),
        probe_targets,
        notify,
        ..Default::default()
    };
    // Several client processes (`--clients`) probe on their own; their results merge into one.
    let several = !matches!(
        launcher,
        crate::runner::fanout::ClientLauncher::Local { count: 0 | 1 }
    );
    let mut document = if several {
        crate::runner::fanout::execute_with(&props, phase, &opts, launcher).await?
    } else {
        crate::runner::execute(&props, phase, &opts).await?
    };
    if let Some(why) = crate::runner::verdict::too_short(document.runtime_ms, document.operations) {
        document.validity.degrade(why);
    }
    Ok(Measured {
        summary: summarize(&document),
        document,
    })
}

/// Shards `ycsb.<table>` by hashed `_id` when the scenario uses another collection than the
/// `usertable` the bring-up sharded: otherwise a "micro-shard" run would silently run on one
/// shard (`docs/mongodb-versions.md`, R8).
async fn shard_scenario_table(
    deployment: &Deployment,
    properties: &PropertyMap,
) -> anyhow::Result<()> {
    let table = properties
        .get(prop::TABLE.name)
        .map(String::as_str)
        .unwrap_or(prop::TABLE.default);
    let Some(plan) = &deployment.plan else {
        return Ok(());
    };
    if table == "usertable" || plan.kind != crate::topology::Kind::Sharded {
        return Ok(());
    }
    let version = deployment
        .server_versions
        .values()
        .next()
        .cloned()
        .unwrap_or_default();
    let shards: Vec<String> = plan.shard_sets().into_iter().map(|(s, _)| s).collect();
    crate::cluster::shard_table_on_every_shard(
        &deployment.entry_uri,
        table,
        &version,
        plan.initial_chunks_per_shard,
        &shards,
    )
    .await
    .map(|_| ())
    .map_err(|e| anyhow::anyhow!("sharding ycsb.{table}: {e}"))
}

/// `uri` with `w=1` added unless it, or the scenario's `mongodb.writeConcern`, sets `w`.
pub(crate) fn pin_write_concern(uri: &str, properties: &PropertyMap) -> String {
    // `journaled` adds only `journal=true`: like YCSB's default URL, `w=1` stays pinned then.
    let scenario_sets_w = properties
        .get(prop::MONGODB_WRITE_CONCERN.name)
        .is_some_and(|w| !w.trim().eq_ignore_ascii_case("journaled"));
    if crate::db::url::query_option(uri, "w").is_some() || scenario_sets_w {
        return uri.to_string();
    }
    let sep = if uri.contains('?') {
        "&"
    } else if uri.split_once("://").is_some_and(|(_, r)| r.contains('/')) {
        "?"
    } else {
        "/?"
    };
    format!("{uri}{sep}w=1")
}

/// A base port with `count` consecutive free loopback ports, probed from a pseudo-random start
/// (bounded attempts) below this machine's ephemeral range (`ip_local_port_range`, 32768 when
/// unreadable), so that demos and tests collide neither with servers already running nor with
/// the kernel's outgoing connections.
pub(crate) fn free_port_range(count: u16) -> Option<u16> {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    let low = 10_000u16;
    let span = ephemeral_low.saturating_sub(low).saturating_sub(count);
    if span < 100 {
        return None;
    }
    let seed = u32::from(std::process::id() as u16)
        ^ (chrono::Utc::now().timestamp_subsec_micros() & 0xffff);
    for attempt in 0..200u32 {
        let base =
            low + (seed.wrapping_mul(7919).wrapping_add(attempt * 977) % u32::from(span)) as u16;
        let free = (0..count).all(|i| {
            std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, base + i)).is_ok()
        });
        if free {
            return Some(base);
        }
    }
    None
}

/// What `calibrate` is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct CalibrateConfig {
    /// Workload (default S2).
    pub workload: String,
    /// Length of the measured run.
    pub duration: Duration,
    /// Client threads.
    pub threads: u32,
    /// Records loaded first.
    pub records: u64,
    /// `-p` overrides.
    pub overrides: Vec<String>,
    /// Where the figure is stored.
    pub results_root: PathBuf,
}

/// The client's ceiling on this machine, as stored for later experiments.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Calibration {
    /// When measured (RFC 3339).
    pub measured: String,
    /// Operations per second the client reached against a stand-in with no service time.
    pub ops_per_s: f64,
    /// Client CPU µs per operation.
    pub cpu_us_per_op: Option<f64>,
    /// Workload used.
    pub workload: String,
    /// Client threads.
    pub threads: u32,
    /// Logical CPUs of the machine.
    pub cpus: usize,
}

impl Calibration {
    /// The figure, labelled as a client ceiling measured against the stand-in.
    pub(crate) fn render(&self) -> String {
        format!(
            "{}\nClient ceiling on this machine (measured against a stand-in mongod process with no service time):\n  {:.0} ops/s, {} client CPU µs per operation ({} threads, {} CPUs, workload {})\nThis is the most this client can drive here; it says nothing about MongoDB.",
            crate::measure::STANDIN_MARKER,
            self.ops_per_s,
            self.cpu_us_per_op
                .map(|c| format!("{c:.1}"))
                .unwrap_or_else(|| "?".into()),
            self.threads,
            self.cpus,
            self.workload
        )
    }
}

/// The client's ceiling on this machine for an experiment about to start: the one stored under
/// `results_root` (by `calibrate` or an earlier experiment) when it was measured on a machine
/// with as many CPUs, else measured now, quickly (one second of S2 against an in-process
/// stand-in), and stored there. `None` when it could not be measured (said on stderr).
pub(crate) async fn machine_ceiling(
    results_root: &Path,
    cancel: &CancellationToken,
    progress: &Progress,
) -> Option<f64> {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if let Ok(c) = read_json::<Calibration>(&results_root.join(CALIBRATE_FILE))
        && c.cpus == cpus
    {
        return Some(c.ops_per_s);
    }
    let cfg = CalibrateConfig {
        workload: "S2".into(),
        duration: Duration::from_secs(1),
        threads: 16,
        records: 2_000,
        overrides: Vec::new(),
        results_root: results_root.to_path_buf(),
    };
    progress.line("microshard: measuring this machine's client ceiling first (about 2 s, once per results directory)");
    match calibrate(&cfg, cancel, progress).await {
        Ok(c) => {
            progress.line(&format!(
                "microshard: client ceiling {:.0} ops/s (cells near it are marked client-bound)",
                c.ops_per_s
            ));
            Some(c.ops_per_s)
        }
        Err(e) => {
            progress.line(&format!(
                "microshard: warning: the client ceiling could not be measured ({e}); cells are not checked for it"
            ));
            None
        }
    }
}

/// Stores a calibration for later experiments.
pub(crate) fn store_calibration(results_root: &Path, c: &Calibration) -> anyhow::Result<()> {
    write_json_atomic(&results_root.join(CALIBRATE_FILE), c)?;
    Ok(())
}

/// Measures the client's own ceiling against an in-process stand-in.
pub(crate) async fn calibrate(
    cfg: &CalibrateConfig,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Calibration> {
    let path = super::scenario::locate(&cfg.workload, None)
        .map_err(|e| bad_input(format!("-P {}: {e}", cfg.workload)))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| cfg.workload.clone());
    let overrides = super::scenario::parse_overrides(&cfg.overrides)?;
    let scaling = super::scenario::Scaling {
        full: false,
        records: cfg.records,
        duration_s: None,
        threads: Some(cfg.threads),
    };
    let (props, _) = super::scenario::resolve(&[(name.clone(), path)], &scaling, &overrides)?;
    let base = props.get(&name).cloned().unwrap_or_default();
    let server = super::ceiling_server::start().await?;
    let uri = server.uri.clone();
    let outcome = async {
        let mut load = base.clone();
        load.insert(prop::INSERTCOUNT.name.into(), cfg.records.to_string());
        let bar = progress.phase("calibrate: load", None);
        let m = run_phase(&uri, &load, Phase::Load, cancel, None, None, 1).await?;
        bar.finish(&format!("{:.0} ops/s", m.summary.throughput));
        let mut run = base.clone();
        let secs = cfg.duration.as_secs().max(1);
        run.insert(prop::MAXEXECUTIONTIME.name.into(), secs.to_string());
        run.insert(prop::OPERATIONCOUNT.name.into(), "1000000000".into());
        let bar = progress.phase("calibrate: run", Some(cfg.duration));
        let m = run_phase(&uri, &run, Phase::Run, cancel, None, None, 1).await?;
        bar.finish(&format!("{:.0} ops/s", m.summary.throughput));
        anyhow::Ok(m)
    }
    .await;
    server.stop().await;
    let m = outcome?;
    if cancel.is_cancelled() {
        anyhow::bail!("interrupted: calibration not stored");
    }
    let c = Calibration {
        measured: chrono::Utc::now().to_rfc3339(),
        ops_per_s: m.summary.throughput,
        cpu_us_per_op: m.summary.cpu_us_per_op(),
        workload: name,
        threads: cfg.threads,
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    };
    store_calibration(&cfg.results_root, &c)?;
    Ok(c)
}

/// What `demo` is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct DemoConfig {
    /// Where the run directory is created.
    pub results_root: PathBuf,
    /// Length of each run cell.
    pub duration: Duration,
    /// Records per topology.
    pub records: u64,
    /// Stand-in service time, µs.
    pub service_time_us: u64,
    /// Stand-in workers per mongod.
    pub workers: u32,
    /// Client threads.
    pub threads: u32,
    /// Topologies.
    pub topologies: Vec<String>,
    /// Scenarios.
    pub scenarios: Vec<String>,
    /// First port of every topology (`--base-port`); a free range below the ephemeral ports when
    /// `None`.
    pub base_port: Option<u16>,
}

/// The compare record the demo runs (exposed so preflight checks the same thing).
pub(crate) fn demo_command(cfg: &DemoConfig) -> CompareCommand {
    CompareCommand {
        name: "demo".into(),
        baseline: cfg.topologies.first().cloned().unwrap_or_default(),
        topologies: cfg.topologies.clone(),
        scenarios: cfg.scenarios.clone(),
        backend: BackendKind::Process,
        duration_s: Some(cfg.duration.as_secs().max(1)),
        records: Some(cfg.records),
        threads: Some(cfg.threads),
        extra_mongod_args: vec![
            format!("--service-time-us={}", cfg.service_time_us),
            format!("--workers={}", cfg.workers),
        ],
        ..Default::default()
    }
}

/// The whole compare pipeline on stand-in topologies.
pub(crate) async fn demo(
    cfg: &DemoConfig,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<(ExperimentDir, MatrixOutcome)> {
    let bin = demo_links()?;
    let mut command = demo_command(cfg);
    command.bin_dir = Some(bin.path().to_path_buf());
    let mut lab = LiveLab::new(
        BackendKind::Process,
        command.bin_dir.clone(),
        command.extra_mongod_args.clone(),
    );
    lab.base_port = cfg.base_port.or_else(|| free_port_range(DEMO_PORTS));
    let lines = progress.clone();
    lab.notify = Some(crate::runner::Notify::new(move |l| lines.line(l)));
    progress.line(&format!(
        "microshard demo: stand-in servers (not MongoDB) with a capacity of {} workers × {} µs per operation = {:.0} ops/s per mongod",
        cfg.workers,
        cfg.service_time_us,
        f64::from(cfg.workers) * 1e6 / cfg.service_time_us.max(1) as f64
    ));
    let at = NewRun {
        results_root: cfg.results_root.clone(),
        ..Default::default()
    };
    let prepared = super::compare::create(&command, &at)?;
    super::compare::compare_with(&mut lab, prepared, cancel, progress).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_ports_lie_below_the_ephemeral_range() {
        let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
            .unwrap_or(32_768);
        if let Some(base) = free_port_range(16) {
            assert!(base >= 10_000 && base + 16 <= low, "{base} vs {low}");
        }
    }

    #[test]
    fn write_concern_is_pinned_unless_the_uri_or_scenario_sets_one() {
        let none = PropertyMap::new();
        assert_eq!(
            pin_write_concern("mongodb://localhost:27017/", &none),
            "mongodb://localhost:27017/?w=1"
        );
        assert_eq!(
            pin_write_concern("mongodb://localhost:27017", &none),
            "mongodb://localhost:27017/?w=1"
        );
        assert_eq!(
            pin_write_concern("mongodb://localhost:27017/?directConnection=true", &none),
            "mongodb://localhost:27017/?directConnection=true&w=1"
        );
        assert_eq!(
            pin_write_concern("mongodb://h:1/ycsb?w=majority", &none),
            "mongodb://h:1/ycsb?w=majority"
        );
        let mut majority = PropertyMap::new();
        majority.insert("mongodb.writeConcern".into(), "majority".into());
        assert_eq!(
            pin_write_concern("mongodb://h:1/", &majority),
            "mongodb://h:1/"
        );
        let mut journaled = PropertyMap::new();
        journaled.insert("mongodb.writeConcern".into(), "journaled".into());
        assert_eq!(
            pin_write_concern("mongodb://h:1/", &journaled),
            "mongodb://h:1/?w=1"
        );
    }
}
