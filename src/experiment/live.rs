//! The live [`Lab`]: real topologies through `topology`/`backend`, real runs through `runner`
//! (`calibrate` and `demo` use it from their own modules).

use std::collections::BTreeMap;
use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::checked::{Checked, Record};
use super::lab::{Deployment, Lab, Measured};
use super::metrics::Watched;
use super::summary::summarize;
use crate::error::bad_input;
use crate::runner::Phase;
use crate::topology::{BackendKind, TopologySpec};
use crate::workload::prop;

/// Consecutive ports reserved for a demo topology (microshard-4 needs 6).
pub(crate) const DEMO_PORTS: u16 = 16;

/// A temporary directory of `mongod`/`mongos` links to microshard's stand-in, for `demo`.
pub(crate) fn demo_links() -> anyhow::Result<tempfile::TempDir> {
    let bin = tempfile::Builder::new()
        .prefix("microshard-demo-bin-")
        .tempdir()
        .map_err(|e| anyhow::anyhow!("cannot create a directory for the stand-in binaries: {e}"))?;
    crate::standin::link_binaries(bin.path())
        .map_err(|e| anyhow::anyhow!("cannot link the stand-in binaries: {e}"))?;
    Ok(bin)
}

/// The live lab: brings topologies up with a backend and runs phases with the runner.
#[derive(Debug)]
pub(crate) struct LiveLab {
    backend: BackendKind,
    bin_dir: Option<PathBuf>,
    /// Every topology it may bring up, by the name or file it was given as, as the servers
    /// check loaded it (`--mongod-arg`, `--image` and `--base-port` applied): never loaded again.
    specs: BTreeMap<String, TopologySpec>,
    /// First port of every topology brought up, over the checked one (a demo's free range).
    pub base_port: Option<u16>,
    /// Where the runs and bring-ups say what they find (a member stopped answering); the CLI
    /// passes its progress display.
    pub events: crate::events::Sink,
    /// Client processes per cell (`--clients`); 1 runs the cell in this process.
    pub clients: usize,
    /// The client last connected, kept for the next phase asking for the same connection: a
    /// ceiling search's steps share one pool (`docs/ceiling.md`, "Steps").
    connections: crate::runner::Reuse,
}

impl LiveLab {
    /// The lab bringing a checked record's topologies up with its backend and binaries, each
    /// run driven by its client processes: the only way to make one, so it brings up only
    /// topologies that passed the servers check.
    pub(crate) fn of<C: Record>(checked: &Checked<C>) -> LiveLab {
        let servers = checked.record().servers();
        let loaded = checked.topologies().iter().cloned();
        LiveLab {
            backend: servers.backend,
            bin_dir: servers.bin_dir.clone(),
            specs: loaded.map(|t| (t.given, t.spec)).collect(),
            base_port: None,
            events: crate::events::Discard::sink(),
            clients: checked.record().clients(),
            connections: Default::default(),
        }
    }

    /// The lab a checked `compare` record asks for: its backend, binaries, ports and clients. A
    /// resumed `demo` whose stand-in links are gone gets new ones (and, with no `--base-port`, a
    /// free port range), held by the returned directory for the lab's life.
    pub(crate) fn for_compare(
        checked: &Checked<super::compare::Prepared>,
    ) -> anyhow::Result<(LiveLab, Option<tempfile::TempDir>)> {
        let cmd = &checked.record().config.command;
        let mut lab = LiveLab::of(checked);
        if !checked.record().relinks_standin() {
            return Ok((lab, None));
        }
        let links = demo_links()?;
        lab.bin_dir = Some(links.path().to_path_buf());
        if cmd.servers.base_port.is_none() {
            lab.base_port = free_port_range(DEMO_PORTS);
        }
        Ok((lab, Some(links)))
    }

    /// A line for the user.
    fn say(&self, line: &str) {
        self.events
            .event(crate::events::Event::Line(line.to_string()))
    }

    /// The topology's plan from its checked spec, with this lab's base port and binaries.
    fn plan(&self, topology: &str) -> anyhow::Result<crate::topology::Plan> {
        let mut spec = (self.specs.get(topology).cloned()).ok_or_else(|| {
            anyhow::anyhow!("--topologies {topology}: not among the checked topologies")
        })?;
        if let Some(port) = self.base_port {
            spec.base_port = port;
        }
        let mut opts = crate::topology::PlanOptions::new(&spec, self.backend);
        opts.bin_dir = self.bin_dir.clone();
        crate::backend::plan(&spec, &opts)
            .map_err(|e| bad_input(format!("--topologies {topology}: {e}")))
    }
}

/// Handle of a running topology: the backend's record, needed by `down`.
#[derive(Debug)]
pub(crate) struct LiveHandle(Option<crate::backend::RunningCluster>);

/// The members whose server status a cell records: the entry point(s) and each shard's
/// primary.
fn watched_members(cluster: &crate::backend::RunningCluster) -> Vec<Watched> {
    use crate::topology::MemberRole;
    // The entry point: the single mongod, or every mongos on its own (the entry URI lists all
    // of them, and a serverStatus through it would reach only one).
    let routers: Vec<Watched> = (cluster.members.iter())
        .filter(|m| m.role == MemberRole::Mongos && !m.direct_uri.is_empty())
        .map(|m| Watched::new(&m.name, "entry", &m.direct_uri))
        .collect();
    let mut watched = match routers.len() > 1 {
        true => routers,
        false => vec![Watched::new("entry", "entry", &cluster.entry_uri)],
    };
    // Per-shard figures come from the member that takes the writes (shards may have secondaries).
    watched.extend(
        (cluster.data_primaries())
            .filter(|m| m.role == MemberRole::Shard)
            .map(|m| Watched::new(&m.name, "shard", &m.direct_uri)),
    );
    watched
}

/// The members the run's watch probes for liveness: every member with an address.
fn probe_targets(cluster: &crate::backend::RunningCluster) -> Vec<crate::db::probe::ProbeTarget> {
    cluster
        .members
        .iter()
        .filter(|m| !m.address.is_empty())
        .map(|m| crate::db::probe::ProbeTarget {
            name: m.name.clone(),
            address: m.address.clone(),
            set: cluster.plan.set_of(&m.name).cloned(),
            config_server: m.role == crate::topology::MemberRole::Config,
        })
        .collect()
}

impl Lab for LiveLab {
    type Handle = LiveHandle;

    async fn up(
        &mut self,
        topology: &str,
        cancel: &CancellationToken,
    ) -> anyhow::Result<(Deployment, LiveHandle)> {
        let plan = self.plan(topology)?;
        let up = crate::backend::UpOptions {
            cancel: Some(cancel.clone()),
            events: self.events.clone(),
            ..Default::default()
        };
        let cluster = crate::backend::up(&plan, &up).await?;
        // What the plan says the user should know (memory caps, end-of-life versions, ...).
        for note in &cluster.plan.notes {
            self.say(&format!("microshard: {}: {note}", cluster.name));
        }
        let watched = watched_members(&cluster);
        let default_write_concern = Some(
            super::facts::default_write_concern(Some(&cluster.plan), &cluster.entry_uri).await,
        );
        let mut plan = cluster.plan.clone();
        plan.uri = plan.uri.as_deref().map(crate::redact::redact_uri);
        let deployment = Deployment {
            topology: cluster.name.clone(),
            entry_uri: cluster.entry_uri.clone(),
            watched,
            members: probe_targets(&cluster),
            plan: Some(plan),
            server_versions: cluster
                .servers
                .iter()
                .map(|(k, v)| (k.clone(), v.version.clone()))
                .collect(),
            default_write_concern,
            member_cpu: crate::backend::MemberCpu::of(&cluster),
            caveats: cluster.caveats.clone(),
            server_images: cluster.images.clone(),
        };
        Ok((deployment, LiveHandle(Some(cluster))))
    }

    async fn run(
        &mut self,
        deployment: &Deployment,
        properties: &crate::workload::Properties,
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
                crate::runner::ClientLauncher::Docker(d)
            }
            None => pod_launcher(deployment, properties).unwrap_or(
                crate::runner::ClientLauncher::Local {
                    count: self.clients,
                },
            ),
        };
        let opts = crate::runner::ExecuteOptions {
            cancel: cancel.clone(),
            uri: Some(deployment.entry_uri.clone()),
            probe_targets: targets,
            member_cpu: deployment.member_cpu.clone(),
            events: Some(self.events.clone()),
            clients: launcher,
            reuse: Some(self.connections.clone()),
            ..Default::default()
        };
        let mut measured = run_phase(properties, phase, opts).await?;
        let colocated = colocation(deployment.plan.as_ref(), &measured.document);
        for why in deployment.caveats.iter().chain(&colocated) {
            measured.degrade(why.clone());
        }
        Ok(measured)
    }

    async fn remove_inserted(
        &mut self,
        deployment: &Deployment,
        properties: &crate::workload::Properties,
        keys: crate::measure::KeySpan,
    ) -> anyhow::Result<u64> {
        let uri = pin_write_concern(&deployment.entry_uri, properties);
        Ok(crate::runner::remove_inserted(properties, &uri, keys, &self.connections).await?)
    }

    async fn down(&mut self, handle: LiveHandle) -> anyhow::Result<()> {
        // The kept client would go on monitoring servers that are gone.
        self.connections = Default::default();
        match handle.0 {
            Some(cluster) => Ok(crate::backend::down(&cluster, &*self.events).await?),
            None => Ok(()),
        }
    }
}

/// Runs one phase with the runner as `opts` say (against `opts.uri`, its clients in this
/// process, client processes or containers), and summarises its result document.
///
/// The write concern is pinned: when neither the entry URI nor the scenario sets one, `w=1` is
/// added (YCSB's default URL carries it), because from MongoDB 5.0 on replica sets and sharded
/// clusters default to `w:"majority"` and the same scenario would otherwise measure different
/// things on different versions (`docs/mongodb-versions.md`).
pub(crate) async fn run_phase(
    properties: &crate::workload::Properties,
    phase: Phase,
    mut opts: crate::runner::ExecuteOptions,
) -> anyhow::Result<Measured> {
    opts.uri = opts.uri.map(|u| pin_write_concern(&u, properties));
    let mut document = crate::runner::execute(properties, phase, &opts)
        .await?
        .document;
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
    properties: &crate::workload::Properties,
) -> anyhow::Result<()> {
    let table = properties.text(&prop::TABLE);
    let Some(plan) = &deployment.plan else {
        return Ok(());
    };
    if table == "usertable" || plan.kind != crate::topology::Kind::Sharded || !plan.shard_collection
    {
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

/// The topology's client pods (`clients = [{ kubernetes = ... }]`), dialling the entry with the
/// write concern pinned as every client does; `None` without them or in a build without the
/// `kubernetes` feature (which refuses such a topology when it reads it).
fn pod_launcher(
    deployment: &Deployment,
    properties: &crate::workload::Properties,
) -> Option<crate::runner::ClientLauncher> {
    #[cfg(feature = "kubernetes")]
    {
        use crate::runner::fanout::kubernetes::launch::KubernetesClients;
        let mut k = KubernetesClients::for_plan(deployment.plan.as_ref()?, &deployment.entry_uri)?;
        k.uri = pin_write_concern(&k.uri, properties);
        Some(crate::runner::ClientLauncher::Kubernetes(k))
    }
    #[cfg(not(feature = "kubernetes"))]
    {
        let _ = (deployment, properties);
        None
    }
}

/// What a cell whose client pods may share the servers' nodes (`allow_colocated = true`) must
/// say: the pods that did, or, where the servers' nodes are not known (a cluster microshard did
/// not bring up), that they may have. A client on a server's node takes that server's CPUs.
fn colocation(
    plan: Option<&crate::topology::Plan>,
    document: &crate::measure::RunDocument,
) -> Option<String> {
    plan?.client_pods.as_ref().filter(|p| p.allow_colocated)?;
    let shared: Vec<String> = (document.clients.iter())
        .filter_map(|c| c.pod.as_ref().filter(|p| p.colocated))
        .map(|p| format!("{} on {}", p.pod, p.node))
        .collect();
    // The servers' nodes are read where they are the run's own pods (`--backend kubernetes`).
    #[cfg(feature = "kubernetes")]
    let placed = plan.is_some_and(|p| crate::backend::of(p.backend).client_pods_home(p).is_some());
    #[cfg(not(feature = "kubernetes"))]
    let placed = false;
    match (shared.is_empty(), placed) {
        (false, _) => Some(format!(
            "client pods ran beside server pods (allow_colocated = true): {}; they took CPU from those servers",
            shared.join(", ")
        )),
        (true, false) => Some("client pods were allowed beside the server pods (allow_colocated = true), whose nodes microshard does not know here: the figures may include clients taking the servers' CPUs".into()),
        (true, true) => None,
    }
}

/// `uri` with `w=1` added unless it, or the scenario's `mongodb.writeConcern`, sets `w`.
pub(crate) fn pin_write_concern(uri: &str, properties: &crate::workload::Properties) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "kubernetes")]
    #[test]
    fn client_pods_allowed_beside_the_servers_say_so_in_every_cell() {
        let plan = |extra: &str| {
            let toml = format!(
                "name = \"kp\"\nkind = \"standalone\"\nuri = \"mongodb://h:27017/\"\nclient_image = \"ghcr.io/o/microshard:0.1.0\"\nclients = [{{ kubernetes = \"lab\", count = 2{extra} }}]\n"
            );
            let spec = crate::topology::TopologySpec::parse(&toml, std::path::Path::new("kp.toml"))
                .unwrap_or_else(|e| panic!("{e}"));
            let opts =
                crate::topology::PlanOptions::new(&spec, crate::topology::BackendKind::Existing);
            crate::backend::plan(&spec, &opts).ok()
        };
        let mut doc = crate::measure::RunDocument {
            clients: vec![Default::default(), Default::default()],
            ..Default::default()
        };
        doc.clients[1].pod = Some(crate::measure::ClientPod {
            pod: "kp-run-clients-1".into(),
            node: "node-a".into(),
            colocated: true,
            ..Default::default()
        });
        let allowed = plan(", allow_colocated = true");
        let said = colocation(allowed.as_ref(), &doc).unwrap_or_default();
        assert!(said.starts_with("client pods ran beside server pods (allow_colocated = true): kp-run-clients-1 on node-a"), "{said}");
        doc.clients[1].pod = None;
        let said = colocation(allowed.as_ref(), &doc).unwrap_or_default();
        assert!(
            said.contains("whose nodes microshard does not know here"),
            "{said}"
        );
        assert_eq!(
            colocation(plan("").as_ref(), &doc),
            None,
            "kept apart: nothing to say"
        );
    }

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
        // (URI, the scenario's mongodb.writeConcern, the URI the clients get)
        let cases = [
            (
                "mongodb://localhost:27017/",
                None,
                "mongodb://localhost:27017/?w=1",
            ),
            (
                "mongodb://localhost:27017",
                None,
                "mongodb://localhost:27017/?w=1",
            ),
            (
                "mongodb://localhost:27017/?directConnection=true",
                None,
                "mongodb://localhost:27017/?directConnection=true&w=1",
            ),
            (
                "mongodb://h:1/ycsb?w=majority",
                None,
                "mongodb://h:1/ycsb?w=majority",
            ),
            ("mongodb://h:1/", Some("majority"), "mongodb://h:1/"),
            ("mongodb://h:1/", Some("journaled"), "mongodb://h:1/?w=1"),
        ];
        for (uri, concern, expected) in cases {
            let mut props = crate::workload::Properties::new();
            if let Some(c) = concern {
                props.set("mongodb.writeConcern", c, crate::workload::Origin::Override);
            }
            assert_eq!(
                pin_write_concern(uri, &props),
                expected,
                "{uri} {concern:?}"
            );
        }
    }
}
