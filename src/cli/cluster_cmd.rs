//! `microshard up`, `down`, `status`, `doctor`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::backend::docker::check_reference;
use crate::backend::{self, UpOptions, state};
use crate::cluster::AssemblyOptions;
use crate::error::{as_bad_input, bad_input};
use crate::output;
use crate::preflight::Unfit;
use crate::topology::{BackendKind, Plan, PlanOptions, TopologySpec};

/// Arguments of `up`.
#[derive(Debug, Args)]
pub(crate) struct UpArgs {
    /// Topology name (`microshard-4` → topologies/microshard-4.toml) or path to a TOML file.
    pub topology: String,
    /// process | docker | existing | kubernetes (default: process when mongod is found, else docker when an engine answers; kubernetes: a namespace per run in the current kubeconfig context's cluster, in a build with the kubernetes feature).
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,
    /// Directory holding mongod and mongos (process backend; default: PATH).
    #[arg(long, conflicts_with = "standin")]
    pub bin_dir: Option<PathBuf>,
    /// Bring the topology up on microshard's stand-in server (process backend; no MongoDB needed).
    #[arg(long)]
    pub standin: bool,
    /// First port of the topology (default: the topology file's `base_port`).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub base_port: Option<u16>,
    /// Print the plan (members, ports, directories, command lines) and start nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// With --backend kubernetes: print the topology's manifests (YAML) to apply yourself, and
    /// start nothing; needs no cluster.
    #[arg(long, conflicts_with = "dry_run")]
    pub emit_manifests: bool,
    /// Keep member directories (data, logs) when the cluster is torn down.
    #[arg(long)]
    pub keep: bool,
    /// Run directory for member directories and sockets (default: a new directory under the system temp dir).
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Docker image for every member, instead of the topology's (e.g. microshard-standin:test).
    #[arg(long)]
    pub image: Option<String>,
    /// Bound, in seconds, of each wait (first answer, primary, addShard); 1 s to 30 days.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u64).range(1..=2_592_000))]
    pub timeout: u64,
}

/// Arguments of `down`.
#[derive(Debug, Args)]
pub(crate) struct DownArgs {
    /// Topology name (or run id) to tear down; with the kubernetes feature, also a namespace
    /// microshard created (labelled app.kubernetes.io/managed-by=microshard) that no state
    /// file records.
    #[arg(required_unless_present = "all")]
    pub topology: Option<String>,
    /// Tear down everything microshard left for you: every cluster in your state directory,
    /// every Docker object labelled with your owner id, and every Kubernetes namespace labelled
    /// with it whose lease expired.
    #[arg(long, conflicts_with = "topology")]
    pub all: bool,
    /// With --all: also every microshard-labelled Docker object of other users and state
    /// directories (their running experiments included), and their Kubernetes namespaces whose
    /// lease expired.
    #[arg(long, requires = "all")]
    pub any_owner: bool,
    /// With --all: print, and start nothing, the manifests of a reaper for a Kubernetes cluster
    /// (a CronJob running `microshard down --all --any-owner` in image IMAGE every 5 minutes,
    /// with the rights it needs), which deletes the runs whose CLI died; apply them once.
    #[arg(
        long,
        value_name = "IMAGE",
        requires = "all",
        conflicts_with = "any_owner"
    )]
    pub emit_reaper: Option<String>,
}

/// Arguments of `status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// Print the state records as JSON (an empty array when there are none).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Directory holding mongod and mongos to check instead of PATH.
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Print nothing; exit 0 only when a Docker engine answers and already has the default
    /// MongoDB image (scripts use this to choose the Docker backend without pulling).
    #[arg(long)]
    pub docker_ready: bool,
}

/// Brings a topology up and leaves it running (detached) until `microshard down`.
pub(crate) async fn up(mut args: UpArgs) -> anyhow::Result<()> {
    let cancel = crate::signals::install();
    // The topology and flags first: the stand-in's links are made last, by the servers check.
    let spec = args.spec()?;
    args.take_standin()?;
    args.bin_dir = crate::experiment::flags::absolute_bin_dir(args.bin_dir)?;
    if args.emit_manifests {
        return emit_manifests(args.backend.unwrap_or_default(), &spec);
    }
    let chosen = match args.backend {
        Some(kind) => backend::Chosen { kind, note: None },
        None => backend::default_backend(&spec, args.bin_dir.as_deref()).await?,
    };
    let backend = chosen.kind;
    // A dry run refuses what the real run refuses (docs/reliability.md §1).
    if backend::of(backend).starts_servers()
        && let Some(running) = state::matching(&spec.name).first()
    {
        return Err(crate::error::bad_input(format!(
            "topology {} is already running (run {}); `microshard down {}` first, or bring up a copy of its file with another `name =` and --base-port to keep both (one cluster per topology name; compare and sweep run beside it)",
            spec.name, running.run_id, spec.name
        )));
    }
    let plan = args.plan(&spec, backend)?;
    args.preflight(backend).await?;
    if args.dry_run {
        output::print(&plan.render())?;
        return Ok(());
    }
    if let Some(note) = &chosen.note {
        output::eprintln(&format!("microshard: note: {note}"));
    }
    for n in &plan.notes {
        output::eprintln(&format!("microshard: note: {n}"));
    }
    let cluster = backend::up(&plan, &args.up_options(cancel)).await?;
    let mut text = cluster.render();
    if backend::of(cluster.backend).starts_servers() {
        text.push_str(&format!(
            "left running; stop it with: microshard down {}\n",
            cluster.name
        ));
    }
    output::print(&text)?;
    Ok(())
}

/// Prints the topology's manifests, for a backend that has them (`docs/kubernetes.md`).
fn emit_manifests(kind: BackendKind, spec: &TopologySpec) -> anyhow::Result<()> {
    let (yaml, notes) = backend::of(kind).manifests(spec)?;
    for n in &notes {
        output::eprintln(&format!("microshard: note: {n}"));
    }
    output::print(&yaml)?;
    Ok(())
}

impl UpArgs {
    /// `--standin`: the process backend with the stand-in's links as the binaries directory
    /// (another `--backend` is bad input).
    fn take_standin(&mut self) -> anyhow::Result<()> {
        if !self.standin {
            return Ok(());
        }
        if self
            .backend
            .is_some_and(|b| !backend::of(b).runs_binaries())
        {
            return Err(crate::error::bad_input(
                "--standin: the stand-in runs with the process backend (drop --backend)",
            ));
        }
        self.backend = Some(BackendKind::Process);
        // Linked by the servers check once everything else has passed.
        self.bin_dir = Some(crate::experiment::flags::standin_links_dir());
        Ok(())
    }

    /// The topology file with `--base-port` and `--image` applied, loaded as the servers check
    /// loads every topology.
    fn spec(&self) -> anyhow::Result<TopologySpec> {
        if let Some(image) = &self.image {
            check_reference(image).map_err(|e| bad_input(format!("--image {image}: {e}")))?;
        }
        let (port, topology) = (self.base_port.unwrap_or_default(), &self.topology);
        crate::preflight::topology(topology, self.base_port, self.image.as_deref()).map_err(|u| {
            match u {
                Unfit::Load(e) => as_bad_input(e),
                Unfit::Ports { name, needed } => bad_input(format!(
                    "--base-port {port}: {name} needs {needed} port(s) from {port}, past 65535"
                )),
                Unfit::Image(e) => bad_input(format!("{topology}: {e}")),
            }
        })
    }

    /// The plan of this run: a new run id, and its run directory (`--run-dir` or a new one under
    /// the system temp dir).
    fn plan(&self, spec: &TopologySpec, backend: BackendKind) -> anyhow::Result<Plan> {
        let mut opts = PlanOptions::new(spec, backend);
        opts.run_dir = self.run_dir.clone().unwrap_or(opts.run_dir);
        opts.bin_dir = self.bin_dir.clone();
        opts.links_pending =
            crate::experiment::flags::is_standin_dir(backend, self.bin_dir.as_deref());
        backend::plan(spec, &opts).map_err(as_bad_input)
    }

    /// Binaries, CPU sets, ports, the run directory and the backend's engine or cluster, checked
    /// before anything starts (`docs/reliability.md` §1), for a dry run too.
    async fn preflight(&self, backend: BackendKind) -> anyhow::Result<()> {
        if let Some(dir) = &self.run_dir {
            crate::writable::dir("--run-dir", dir)?;
        }
        crate::preflight::servers(&crate::preflight::Servers {
            label: "topology",
            backend,
            pulls: Some(&crate::output::Terminal),
            topologies: std::slice::from_ref(&self.topology),
            bin_dir: self.bin_dir.as_deref(),
            image: self.image.as_deref(),
            base_port: self.base_port,
            dry_run: self.dry_run,
            ..Default::default()
        })
        .await
        .map(drop)
    }

    /// How the bring-up waits (`--timeout` for each wait) and whether it keeps the members'
    /// directories (`--keep`).
    fn up_options(&self, cancel: tokio_util::sync::CancellationToken) -> UpOptions {
        let t = Duration::from_secs(self.timeout);
        UpOptions {
            assembly: AssemblyOptions {
                ready_timeout: t,
                primary_timeout: t,
                add_shard_timeout: t,
            },
            keep: self.keep,
            cancel: Some(cancel),
            events: crate::output::Terminal::sink(),
            ..UpOptions::default()
        }
    }
}

/// Tears down one topology (by name or run id) or, with `--all`, everything microshard left.
pub(crate) async fn down(args: DownArgs) -> anyhow::Result<()> {
    if let Some(image) = &args.emit_reaper {
        let yaml = backend::kubernetes::reaper::reaper_manifests(image)?;
        return Ok(output::print(&yaml)?);
    }
    if args.all {
        let report = backend::down_all(args.any_owner, &crate::output::Terminal).await?;
        for n in &report.not_searched {
            output::eprintln(&format!("microshard: note: {}", n.note));
        }
        if report.done.is_empty() {
            let names: Vec<&str> = report.not_searched.iter().map(|n| n.name).collect();
            output::println(&match names.is_empty() {
                false => format!(
                    "nothing to tear down in {} ({} not searched)",
                    state::state_dir().display(),
                    names.join(", ")
                ),
                true => "nothing to tear down".to_string(),
            })?;
        }
        for d in report.done {
            output::println(&format!("torn down: {d}"))?;
        }
        return Ok(());
    }
    let wanted = args
        .topology
        .ok_or_else(|| bad_input("down: name a topology or pass --all"))?;
    let matches = match state::find(&wanted) {
        Ok(found) => found,
        Err(why) => return down_unrecorded(&wanted, why).await,
    };
    let mut errors = Vec::new();
    let mut done = String::new();
    for c in matches {
        match backend::down(&c, &crate::output::Terminal).await {
            Ok(()) => done.push_str(&format!(
                "torn down: {} (run {}, {})\n",
                c.name, c.run_id, c.backend
            )),
            Err(e) => errors.push(format!("{}: {e:#}", c.run_id)),
        }
    }
    // Printed once everything is down: a reader that goes away must not stop the teardown, nor
    // hide a teardown that failed.
    let printed = output::print(&done);
    if !errors.is_empty() {
        return Err(anyhow::anyhow!("{}", errors.join("; ")));
    }
    Ok(printed?)
}

/// `down NAME` with no recorded run NAME: a Kubernetes namespace NAME that microshard created
/// (in a build with the `kubernetes` feature), else `why` nothing matched.
async fn down_unrecorded(wanted: &str, why: String) -> anyhow::Result<()> {
    #[cfg(feature = "kubernetes")]
    if let Some(done) = backend::kubernetes::down_named(wanted).await? {
        return Ok(output::println(&format!("torn down: {done}"))?);
    }
    let _ = wanted;
    Err(bad_input(why))
}

/// Lists the clusters microshard is running, with each member's state checked now.
pub(crate) async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let all = state::list_checked();
    if all.is_empty() && !args.json {
        output::println(&format!(
            "no clusters recorded in {}",
            state::state_dir().display()
        ))?;
        return Ok(());
    }
    let mut records = Vec::new();
    for (path, r) in all {
        match r {
            Ok(c) => records.push(c),
            Err(e) => output::eprintln(&format!("microshard: {}: {e:#}", path.display())),
        }
    }
    if args.json {
        let mut v = Vec::new();
        for mut c in records {
            c.entry_uri = c.entry_uri_redacted();
            c.plan.uri = c.plan.uri.as_deref().map(crate::redact::redact_uri);
            v.push(serde_json::to_value(&c)?);
        }
        output::println(&serde_json::to_string_pretty(&v)?)?;
    } else {
        for c in &records {
            output::println(&c.render())?;
        }
    }
    Ok(())
}

/// Tells which backends are usable here, and why not.
pub(crate) async fn doctor(args: DoctorArgs) -> anyhow::Result<()> {
    if args.docker_ready {
        return match backend::doctor::docker_ready().await {
            true => Ok(()),
            false => Err(anyhow::anyhow!(
                "no Docker engine with the {} image here",
                crate::topology::spec_default_image()
            )),
        };
    }
    output::print(&backend::doctor::report(args.bin_dir.as_deref()).await)?;
    Ok(())
}
