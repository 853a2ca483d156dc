//! Backends that execute a plan: local processes, Docker containers, or hosts that already run.
//!
//! [`up`] starts what the plan lists, runs the shared assembly ([`crate::cluster::assemble`]) and
//! returns a [`RunningCluster`]; [`down`] tears it down and never leaks. Every run is recorded in a
//! state file before anything starts (see [`state`]), so a run that crashed is found again by
//! `microshard down --all`. Callers that run experiments use [`with_cluster`], which tears down on
//! success, on error and on cancellation.

pub mod docker;
pub(crate) mod doctor;
mod error;
pub(crate) mod existing;
mod extra_hosts;
pub(crate) mod ports;
pub mod process;
pub mod state;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use error::BackendError;

use crate::cluster::{AssemblyOptions, ServerInfo};
use crate::events::{Discard, Event, Events, Sink};
use crate::topology::{BackendKind, Kind, MemberRole, Plan, TopologySpec};

/// How far a member got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemberState {
    /// In the plan, not started (or its start was interrupted).
    #[default]
    Planned,
    /// Process spawned / container started.
    Started,
    /// Answered and took its part in the cluster.
    Ready,
    /// Not running any more.
    Stopped,
}

impl std::fmt::Display for MemberState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MemberState::Planned => "planned",
            MemberState::Started => "started",
            MemberState::Ready => "ready",
            MemberState::Stopped => "stopped",
        })
    }
}

/// One member of a running cluster.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunningMember {
    /// Plan name (`sh0`).
    pub name: String,
    /// MemberRole in the cluster.
    pub role: MemberRole,
    /// `host:port` as members see each other.
    pub member_host: String,
    /// `host:port` microshard reaches it at: the published port in Docker ([`Plan::dial_address`]).
    pub address: String,
    /// Direct-connection URI for per-member statistics.
    pub direct_uri: String,
    /// Current state.
    pub state: MemberState,
    /// Process id (process backend).
    pub pid: Option<u32>,
    /// Port it listens on.
    pub port: u16,
    /// Container name (Docker).
    pub container: Option<String>,
    /// Docker endpoint (Docker; `None` = local default).
    pub endpoint: Option<String>,
    /// The exact command line it runs.
    pub argv: Vec<String>,
    /// Environment variables microshard set for it (`GLIBC_TUNABLES` for local 8.0+ mongod).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// WiredTiger cache (GB) it was given (mongod only), recorded with results.
    #[serde(default)]
    pub cache_gb: Option<f64>,
    /// Container memory limit (GB), when there is one.
    #[serde(default)]
    pub memory_limit_gb: Option<f64>,
    /// The soft open-files limit it started with, when microshard set or read it (`None`:
    /// unknown, e.g. an engine that refused to raise it); it caps connections at 0.8 × this.
    #[serde(default)]
    pub nofile: Option<u64>,
}

/// A cluster that `up` started (or found, for `existing`): what experiments connect to and what
/// `down` tears down. Serialized as the state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunningCluster {
    /// Topology name.
    pub name: String,
    /// Run id (labels, container names, state file name).
    pub run_id: String,
    /// Backend that runs it.
    pub backend: BackendKind,
    /// Standalone or sharded.
    pub kind: Kind,
    /// Where clients connect (mongos or the standalone). May hold credentials (existing): print
    /// [`RunningCluster::entry_uri_redacted`] instead.
    pub entry_uri: String,
    /// Every member.
    pub members: Vec<RunningMember>,
    /// `member → buildInfo.version / stand-in flag`.
    pub servers: BTreeMap<String, ServerInfo>,
    /// True when any server is the microshard stand-in: figures measured against it are not MongoDB figures.
    pub standin: bool,
    /// `mongod --version` / `mongos --version` first lines (process backend).
    pub binary_versions: BTreeMap<String, String>,
    /// Chunks of ycsb.usertable per shard after sharding.
    pub chunks: BTreeMap<String, u64>,
    /// `replica set → member` that won its first election (any member of a larger set may).
    #[serde(default)]
    pub primaries: BTreeMap<String, String>,
    /// Docker networks created: `(endpoint, name)`.
    pub networks: Vec<(Option<String>, String)>,
    /// Directories created that `down` removes unless `keep`.
    pub created_dirs: Vec<PathBuf>,
    /// Keep directories at teardown.
    pub keep: bool,
    /// The plan it was made from.
    pub plan: Plan,
    /// This cluster's state file.
    pub state_file: PathBuf,
    /// The microshard process that started it.
    pub owner_pid: u32,
    /// When it was started (UTC, RFC 3339).
    pub started_at: String,
}

impl RunningCluster {
    /// The entry URI with any password masked, for printing and storing.
    pub(crate) fn entry_uri_redacted(&self) -> String {
        crate::redact::redact_uri(&self.entry_uri)
    }

    /// The members that hold data: the shards, or the standalone.
    pub fn data_members(&self) -> impl Iterator<Item = &RunningMember> {
        self.members
            .iter()
            .filter(|m| matches!(m.role, MemberRole::Shard | MemberRole::Standalone))
    }

    /// The members that take writes: each shard set's elected primary (or its only member), or
    /// the standalone — where per-shard server metrics belong, since secondaries of a stand-in
    /// or of a lagging set do not show the load.
    pub fn data_primaries(&self) -> impl Iterator<Item = &RunningMember> {
        self.data_members().filter(|m| {
            let set = self
                .plan
                .members
                .iter()
                .find(|p| p.name == m.name)
                .and_then(|p| p.replica_set.clone());
            match set.and_then(|s| self.primaries.get(&s)) {
                Some(primary) => *primary == m.name,
                None => true,
            }
        })
    }

    /// A new record for `plan`, all members planned.
    fn from_plan(plan: &Plan, keep: bool) -> RunningCluster {
        let members = plan
            .members
            .iter()
            .map(|m| RunningMember {
                name: m.name.clone(),
                role: m.role,
                member_host: m.member_host.clone(),
                address: plan.dial_address(m),
                port: m.port,
                container: m.container.clone(),
                endpoint: m.docker_endpoint.clone(),
                argv: m.argv.clone(),
                cache_gb: m.cache_gb,
                memory_limit_gb: m.memory_limit_gb,
                ..RunningMember::default() // planned: not started, no pid yet
            })
            .collect();
        RunningCluster {
            name: plan.name.clone(),
            run_id: plan.run_id.clone(),
            backend: plan.backend,
            kind: plan.kind,
            entry_uri: String::new(),
            members,
            servers: BTreeMap::new(),
            standin: false,
            binary_versions: BTreeMap::new(),
            chunks: BTreeMap::new(),
            primaries: BTreeMap::new(),
            networks: Vec::new(),
            created_dirs: Vec::new(),
            keep,
            plan: plan.clone(),
            state_file: state::state_path(&plan.run_id),
            owner_pid: std::process::id(),
            started_at: chrono::Utc::now().to_rfc3339(),
        }
    }

    /// The member table `up` and `status` print.
    pub(crate) fn render(&self) -> String {
        #[derive(tabled::Tabled)]
        struct MemberRow {
            role: String,
            name: String,
            #[tabled(rename = "host:port")]
            host: String,
            state: String,
            version: String,
            #[tabled(rename = "pid / container")]
            place: String,
        }
        let rows: Vec<MemberRow> = self
            .members
            .iter()
            .map(|m| MemberRow {
                role: m.role.to_string(),
                name: m.name.clone(),
                host: m.member_host.clone(),
                state: m.state.to_string(),
                version: self
                    .servers
                    .get(&m.name)
                    .map(|s| s.version.clone())
                    .unwrap_or_else(|| "-".into()),
                place: m
                    .container
                    .clone()
                    .or_else(|| m.pid.map(|p| p.to_string()))
                    .unwrap_or_else(|| "-".into()),
            })
            .collect();
        let mut out = format!(
            "{} ({}, {}, run {})\nconnect: {}\n",
            self.name,
            match self.kind {
                Kind::Standalone => "standalone",
                Kind::Sharded => "sharded",
            },
            self.backend,
            self.run_id,
            self.entry_uri_redacted()
        );
        if !rows.is_empty() {
            let mut t = tabled::Table::new(rows);
            t.with(tabled::settings::Style::psql());
            out.push_str(&t.to_string());
            out.push('\n');
        }
        if self.standin {
            out.push_str("note: these servers are the microshard stand-in, not MongoDB; figures measured against them are stand-in figures\n");
        }
        out
    }
}

/// Bounds and switches of `up`/`down`.
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// Timeouts of the assembly sequence and progress output.
    pub assembly: AssemblyOptions,
    /// Keep member directories at teardown.
    pub keep: bool,
    /// Cancels bring-up (Ctrl-C / SIGTERM); whatever started is torn down.
    pub cancel: Option<CancellationToken>,
    /// How long a member gets to exit after `shutdown` before SIGTERM, and after SIGTERM before SIGKILL.
    pub stop_timeout: Duration,
    /// Where the bring-up's steps, an image pull and the teardown's warnings go.
    pub events: Sink,
}

impl Default for UpOptions {
    fn default() -> Self {
        UpOptions {
            assembly: AssemblyOptions::default(),
            keep: false,
            cancel: None,
            stop_timeout: Duration::from_secs(15),
            events: Discard::sink(),
        }
    }
}

/// How long members of a bring-up that failed or was interrupted get to stop before they are
/// killed (unless `keep`): their data is thrown away, and a container stopped before its server
/// installed a signal handler ignores SIGTERM (it is PID 1), which would hold Ctrl-C up for the
/// whole `stop_timeout`.
const ABORTED_STOP_TIMEOUT: Duration = Duration::from_secs(2);

/// Bound on waiting for engine calls already sent when a bring-up is abandoned ([`InFlight`]).
const IN_FLIGHT_BOUND: Duration = Duration::from_secs(60);

/// Engine calls of a bring-up that run to completion even when the bring-up is abandoned.
///
/// Ctrl-C drops the bring-up in the middle of whatever it awaits; a Docker create or start
/// already sent still takes effect on the engine, possibly after teardown looked. Calls made
/// through [`InFlight::run`] go on on a task of their own, and [`up`] waits for them
/// ([`InFlight::settle`]) before it tears down, so teardown sees every object they made.
#[derive(Clone, Default)]
pub(crate) struct InFlight(Arc<tokio::sync::RwLock<()>>);

impl InFlight {
    /// Runs `call` on its own task: dropping the caller does not abandon it half-way.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        call: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Result<T, BackendError> {
        let running = self.0.clone().read_owned().await;
        let task = tokio::spawn(async move {
            let out = call.await;
            drop(running);
            out
        });
        task.await
            .map_err(|e| BackendError::Internal(format!("an engine call did not finish: {e}")))
    }

    /// Waits, at most `bound`, until every call started through [`InFlight::run`] has returned
    /// (and keeps new ones from starting meanwhile).
    pub(crate) async fn settle(&self, bound: Duration) {
        let _ = tokio::time::timeout(bound, self.0.write()).await;
    }
}

/// Brings the plan up: starts members, assembles the cluster, records the state file. On any
/// failure or cancellation everything started so far is torn down before the error returns.
pub async fn up(plan: &Plan, opts: &UpOptions) -> Result<RunningCluster, BackendError> {
    if plan.backend == BackendKind::Existing {
        return existing::up(plan, opts).await;
    }
    let record = Arc::new(Mutex::new(RunningCluster::from_plan(plan, opts.keep)));
    snapshot_write(&record)?;
    let in_flight = InFlight::default();
    let outcome = {
        let work = bring_up(plan, opts, record.clone(), in_flight.clone());
        match &opts.cancel {
            Some(token) => tokio::select! {
                r = work => r,
                _ = token.cancelled() => Err(crate::error::Interrupted(format!("during bring-up of {}; everything started was torn down", plan.name)).into()),
            },
            None => work.await,
        }
    };
    match outcome {
        Ok(()) => {
            let snapshot = snapshot(&record);
            state::write(&snapshot)?;
            Ok(snapshot)
        }
        Err(err) => {
            in_flight.settle(IN_FLIGHT_BOUND).await;
            let snapshot = snapshot(&record);
            let stop_timeout = if opts.keep {
                opts.stop_timeout
            } else {
                opts.stop_timeout.min(ABORTED_STOP_TIMEOUT)
            };
            if let Err(td) = down_with(&snapshot, stop_timeout, &*opts.events).await {
                return Err(BackendError::Context {
                    context: format!("teardown after the failure also failed: {td:#}"),
                    source: Box::new(err),
                });
            }
            Err(err)
        }
    }
}

async fn bring_up(
    plan: &Plan,
    opts: &UpOptions,
    record: Arc<Mutex<RunningCluster>>,
    in_flight: InFlight,
) -> Result<(), BackendError> {
    let launcher: Box<dyn crate::cluster::Launcher> = match plan.backend {
        BackendKind::Process => {
            Box::new(process::ProcessLauncher::prepare(plan, record.clone()).await?)
        }
        BackendKind::Docker => {
            Box::new(docker::DockerLauncher::prepare(plan, record.clone(), opts, in_flight).await?)
        }
        BackendKind::Existing => {
            return Err(BackendError::Internal(
                "existing backend has no launcher".into(),
            ));
        }
    };
    let assembly = crate::cluster::assemble(plan, &*launcher, &opts.assembly, &*opts.events)
        .await
        .map_err(BackendError::from_assembly)?;
    let mut c = lock(&record);
    for m in &mut c.members {
        m.state = MemberState::Ready;
    }
    c.standin = assembly.servers.values().any(|s| s.standin);
    c.servers = assembly.servers;
    c.chunks = assembly.chunks;
    c.primaries = assembly.primaries;
    c.entry_uri = entry_uri(plan)?;
    Ok(())
}

/// Where clients connect: every mongos (drivers spread operations over all routers in the seed
/// list, so a second mongos is used rather than idle), or the standalone directly.
pub(crate) fn entry_uri(plan: &Plan) -> Result<String, BackendError> {
    let entry = plan
        .entry()
        .ok_or_else(|| BackendError::Internal(format!("plan {} has no entry member", plan.name)))?;
    if entry.role == MemberRole::Mongos {
        let routers: Vec<String> = plan
            .members_with(MemberRole::Mongos)
            .map(|m| plan.dial_address(m))
            .collect();
        return Ok(format!("mongodb://{}/", routers.join(",")));
    }
    let address = plan.dial_address(entry);
    Ok(if entry.replica_set.is_some() {
        format!("mongodb://{address}/?directConnection=true")
    } else {
        format!("mongodb://{address}/")
    })
}

pub(crate) fn lock(record: &Mutex<RunningCluster>) -> std::sync::MutexGuard<'_, RunningCluster> {
    record
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn snapshot(record: &Mutex<RunningCluster>) -> RunningCluster {
    lock(record).clone()
}

pub(crate) fn snapshot_write(record: &Mutex<RunningCluster>) -> Result<(), BackendError> {
    state::write(&snapshot(record))
}

/// Records that `member` started (`update` sets its pid, address, ...) and writes the state file.
pub(crate) fn record_started(
    record: &Mutex<RunningCluster>,
    member: &str,
    update: impl FnOnce(&mut RunningMember),
) -> Result<(), BackendError> {
    if let Some(m) = lock(record).members.iter_mut().find(|m| m.name == member) {
        m.state = MemberState::Started;
        update(m);
    }
    snapshot_write(record)
}

/// `std::fs::create_dir_all`, its error naming the directory.
pub(crate) fn create_dir(dir: &Path) -> Result<(), BackendError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| BackendError::io(format!("cannot create {}", dir.display()), e))
}

/// The order members stop in: routers, then the data-bearing mongods, then config servers.
pub(crate) const STOP_ORDER: [&[MemberRole]; 3] = [
    &[MemberRole::Mongos],
    &[MemberRole::Shard, MemberRole::Standalone],
    &[MemberRole::Config],
];

/// Tears the cluster down: `shutdown` mongos → shards → config, SIGTERM/SIGKILL (or container
/// stop/remove) as fallback, networks and anonymous volumes removed, directories removed unless
/// `keep`, state file removed. Never touches a cluster it did not start (existing). What it must
/// say (a member that did not go quietly, directories left on another machine) goes to `events`.
pub async fn down(cluster: &RunningCluster, events: &dyn Events) -> Result<(), BackendError> {
    down_with(cluster, Duration::from_secs(15), events).await
}

async fn down_with(
    cluster: &RunningCluster,
    stop_timeout: Duration,
    events: &dyn Events,
) -> Result<(), BackendError> {
    let result = match cluster.backend {
        BackendKind::Process => process::teardown(cluster, stop_timeout, events).await,
        BackendKind::Docker => docker::teardown(cluster, stop_timeout).await,
        BackendKind::Existing => Ok(()),
    };
    if result.is_ok() || cluster.backend == BackendKind::Existing {
        // Nothing runs any more: the state file goes even when a directory stays, and the
        // directories that could not be removed are the error.
        let left = remove_dirs(cluster);
        if !cluster.keep {
            for line in remote_dirs(&cluster.plan) {
                events.event(Event::Warning(format!("microshard: {line}")));
            }
        }
        state::remove(&cluster.state_file);
        if !left.is_empty() {
            return Err(BackendError::Teardown(format!(
                "{} stopped, but could not remove {}",
                cluster.name,
                left.join("; ")
            )));
        }
    }
    result
}

/// Removes the directories the run created (unless `keep`); returns one line per directory
/// that could not be removed, with the reason — never swallowed: a container's entrypoint hands
/// bind-mounted data directories to uid 999, which the user running microshard may not delete.
fn remove_dirs(cluster: &RunningCluster) -> Vec<String> {
    if cluster.keep {
        return Vec::new();
    }
    let mut left = Vec::new();
    for d in &cluster.created_dirs {
        // Log files outside the member directory are recorded here too.
        let removed = match std::fs::symlink_metadata(d) {
            Ok(meta) if !meta.is_dir() => std::fs::remove_file(d),
            _ => std::fs::remove_dir_all(d),
        };
        if let Err(e) = removed
            && e.kind() != std::io::ErrorKind::NotFound
        {
            let hint = if e.kind() == std::io::ErrorKind::PermissionDenied
                && cluster.backend == BackendKind::Docker
            {
                " (files written by the container's mongod, uid 999: remove them as root)"
            } else {
                ""
            };
            left.push(format!("{}: {e}{hint}", d.display()));
        }
    }
    left
}

/// The data directories of members on engines on other machines, which Docker created there and
/// microshard cannot remove from here: one line each, naming the engine (FIDELITY-2 N9).
pub(crate) fn remote_dirs(plan: &Plan) -> Vec<String> {
    plan.members
        .iter()
        .filter(|m| plan.on_remote_engine(m))
        .filter_map(|m| {
            let dir = m.dir.as_ref()?;
            let engine = m
                .docker_endpoint
                .clone()
                .unwrap_or_else(|| docker::endpoint_label(None));
            Some(format!(
                "{} stays on the machine of {engine} (Docker created it there for {}; remove it there)",
                dir.display(),
                m.name
            ))
        })
        .collect()
}

/// Picks the backend when the user did not: `existing` for a topology with a `uri`, `process`
/// when `mongod` is found in `bin_dir` or on PATH, else `docker` when an engine answers.
pub(crate) async fn default_backend(
    spec: &TopologySpec,
    bin_dir: Option<&Path>,
) -> Result<BackendKind, BackendError> {
    if spec.uri.is_some() {
        return Ok(BackendKind::Existing);
    }
    let mongod = crate::topology::find_program("mongod", bin_dir);
    if mongod.is_ok() {
        return Ok(BackendKind::Process);
    }
    let endpoint = spec.hosts.first().and_then(|h| h.docker.clone());
    match docker::connect(endpoint.as_deref()).await {
        Ok(_) => Ok(BackendKind::Docker),
        Err(derr) => Err(BackendError::BadInput(format!(
            "no backend usable here: {} and {derr:#}; run `microshard doctor`",
            mongod.err().map(|e| e.to_string()).unwrap_or_default()
        ))),
    }
}

/// What `down --all` did: one line per cluster or object torn down, and why Docker objects were
/// not searched when they were not (so "nothing to tear down" is never said without knowing).
#[derive(Debug, Default)]
pub struct DownAll {
    /// One line per cluster (state file) or Docker object removed.
    pub done: Vec<String>,
    /// Set when the local Docker engine did not answer.
    pub docker_unreachable: Option<String>,
}

/// Tears down every run recorded in this user's state directory and every Docker object on the
/// local engine labelled with this user's owner id ([`docker::owner_id`]); with `any_owner`,
/// every microshard-labelled object on the engine, whoever made it.
pub(crate) async fn down_all(
    any_owner: bool,
    events: &dyn Events,
) -> Result<DownAll, BackendError> {
    let owner = docker::owner_id();
    let mine =
        |l: &HashMap<String, String>| any_owner || l.get(docker::LABEL_OWNER) == Some(&owner);
    let (done, docker_unreachable) = down_matching(|_| true, mine, events).await?;
    Ok(DownAll {
        done,
        docker_unreachable,
    })
}

/// Every state file and every microshard-labelled Docker object (any owner) whose topology name
/// passes `keep`; tests use it so they never touch another run on the same engine.
pub async fn down_all_where(
    keep: impl Fn(&str) -> bool,
    events: &dyn Events,
) -> Result<Vec<String>, BackendError> {
    let labelled =
        |l: &HashMap<String, String>| l.get(docker::LABEL_CLUSTER).is_some_and(|c| keep(c));
    Ok(down_matching(&keep, labelled, events).await?.0)
}

/// Tears down the clusters recorded in the state directory whose name passes `keep`, then the
/// local engine's microshard objects whose labels pass `labelled`: one line per cluster or
/// object, and why Docker was not searched when the engine did not answer.
async fn down_matching(
    keep: impl Fn(&str) -> bool,
    labelled: impl Fn(&HashMap<String, String>) -> bool,
    events: &dyn Events,
) -> Result<(Vec<String>, Option<String>), BackendError> {
    let mut done = Vec::new();
    let mut errors = Vec::new();
    for (path, rec) in state::list() {
        match rec {
            Ok(c) if !keep(&c.name) => {}
            Ok(c) => match down(&c, events).await {
                Ok(()) => done.push(format!("{} (run {}, {})", c.name, c.run_id, c.backend)),
                Err(e) => errors.push(format!("{}: {e:#}", c.run_id)),
            },
            Err(e) => errors.push(format!("{}: {e:#}", path.display())),
        }
    }
    let mut unreachable = None;
    match docker::remove_labelled_matching(None, None, labelled).await {
        Ok(removed) => done.extend(removed),
        Err(docker::DockerError::Unreachable(why)) => unreachable = Some(why),
        Err(e) => errors.push(format!("docker: {e}")),
    }
    if errors.is_empty() {
        Ok((done, unreachable))
    } else {
        Err(BackendError::Teardown(errors.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_uri_lists_every_mongos() {
        let spec = TopologySpec::parse(
            "name = \"m\"\nkind = \"sharded\"\nshards_per_host = 1\n[mongos]\ncount = 3\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let opts = crate::topology::PlanOptions {
            links_pending: false,
            backend: BackendKind::Docker,
            run_id: "t-1".into(),
            run_dir: PathBuf::from("/tmp/ms/t-1"),
            bin_dir: None,
            total_memory_gb: Some(9.0),
        };
        let plan = Plan::new(&spec, &opts).unwrap();
        assert_eq!(
            entry_uri(&plan).unwrap(),
            "mongodb://127.0.0.1:27017,127.0.0.1:27018,127.0.0.1:27019/"
        );
        let spec =
            TopologySpec::parse("name = \"s\"\nkind = \"standalone\"\n", Path::new("t.toml"))
                .unwrap();
        let plan = Plan::new(&spec, &opts).unwrap();
        assert_eq!(
            entry_uri(&plan).unwrap(),
            "mongodb://127.0.0.1:27017/?directConnection=true"
        );
    }

    /// FIDELITY-2 N9: a remote engine's data directories are that machine's; named, not removed.
    #[test]
    fn remote_engines_data_directories_are_named_not_made_here() {
        let spec = TopologySpec::parse(
            "name = \"r\"\nkind = \"standalone\"\n[[hosts]]\naddress = \"10.1.2.3\"\ndocker = \"tcp://10.1.2.3:2375\"\npublish_address = \"0.0.0.0\"\ndata_dirs = [\"/srv/ms\"]\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let opts = crate::topology::PlanOptions {
            links_pending: false,
            backend: BackendKind::Docker,
            run_id: "r-1".into(),
            run_dir: PathBuf::from("/tmp/ms/r-1"),
            bin_dir: None,
            total_memory_gb: Some(9.0),
        };
        let plan = Plan::new(&spec, &opts).unwrap();
        assert!(plan.on_remote_engine(&plan.members[0]));
        let lines = remote_dirs(&plan);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("/srv/ms") && lines[0].contains("tcp://10.1.2.3:2375"),
            "{lines:?}"
        );
        let local = TopologySpec::parse(
            "name = \"l\"\nkind = \"standalone\"\n[[hosts]]\ndata_dirs = [\"/srv/ms\"]\n",
            Path::new("t.toml"),
        )
        .unwrap();
        if std::env::var("DOCKER_HOST").is_err() {
            assert!(remote_dirs(&Plan::new(&local, &opts).unwrap()).is_empty());
        }
    }

    #[test]
    fn directories_that_cannot_be_removed_are_reported() {
        let root = tempfile::tempdir().unwrap();
        let spec =
            TopologySpec::parse("name = \"s\"\nkind = \"standalone\"\n", Path::new("t.toml"))
                .unwrap();
        let opts = crate::topology::PlanOptions {
            links_pending: false,
            backend: BackendKind::Docker,
            run_id: "t-1".into(),
            run_dir: root.path().join("run"),
            bin_dir: None,
            total_memory_gb: Some(9.0),
        };
        let plan = Plan::new(&spec, &opts).unwrap();
        let mut c = RunningCluster::from_plan(&plan, false);
        let gone = root.path().join("gone");
        let file = root.path().join("a.log");
        std::fs::write(&file, "x").unwrap();
        // A directory whose parent forbids removal stands for one a container's uid 999 owns.
        let locked = root.path().join("locked");
        let inner = locked.join("db");
        std::fs::create_dir_all(&inner).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
        // Under a regular file: removing it fails for root too (not a directory).
        let under_file = root.path().join("plain");
        std::fs::write(&under_file, "x").unwrap();
        let impossible = under_file.join("db");
        c.created_dirs = vec![gone, file.clone(), impossible.clone(), inner.clone()];
        let left = remove_dirs(&c);
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!file.exists(), "a recorded log file is removed too");
        assert!(
            left[0].starts_with(&format!("{}: ", impossible.display())),
            "{left:?}"
        );
        if inner.exists() {
            // Not root: the permission failure is reported with the path and the likely cause.
            assert_eq!(left.len(), 2, "{left:?}");
            assert!(
                left[1].starts_with(&inner.display().to_string()),
                "{left:?}"
            );
            assert!(left[1].contains("uid 999"), "{left:?}");
        } else {
            // Root removes what the permissions protect: only the impossible one is reported.
            assert_eq!(left.len(), 1, "{left:?}");
        }
        // `down` turns them into its error, after removing the state file.
        c.created_dirs = vec![impossible.clone()];
        c.state_file = root.path().join("state.json");
        std::fs::write(&c.state_file, "{}").unwrap();
        c.backend = BackendKind::Existing;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let err = rt.block_on(down(&c, &Discard)).unwrap_err().to_string();
        assert!(
            err.contains("could not remove") && err.contains(&impossible.display().to_string()),
            "{err}"
        );
        assert!(!c.state_file.exists());
    }

    use std::sync::atomic::{AtomicBool, Ordering};

    /// A call abandoned by its caller (Ctrl-C drops the bring-up) still finishes, and `settle`
    /// returns only after it did.
    #[tokio::test]
    async fn an_abandoned_call_finishes_before_settle_returns() {
        let in_flight = InFlight::default();
        let done = Arc::new(AtomicBool::new(false));
        let call = {
            let done = done.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                done.store(true, Ordering::SeqCst);
            }
        };
        let caller = in_flight.run(call);
        // The caller gives up long before the call is done.
        assert!(
            tokio::time::timeout(Duration::from_millis(20), caller)
                .await
                .is_err()
        );
        assert!(!done.load(Ordering::SeqCst));
        in_flight.settle(Duration::from_secs(10)).await;
        assert!(
            done.load(Ordering::SeqCst),
            "settle returned before the call finished"
        );
    }

    #[tokio::test]
    async fn settle_is_bounded_and_immediate_when_idle() {
        let in_flight = InFlight::default();
        let t = std::time::Instant::now();
        in_flight.settle(Duration::from_secs(10)).await;
        assert!(t.elapsed() < Duration::from_secs(1));
        assert_eq!(in_flight.run(async { 7 }).await.unwrap(), 7);
        let stuck = in_flight.clone();
        let _caller = tokio::spawn(async move {
            stuck.run(std::future::pending::<()>()).await.ok();
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let t = std::time::Instant::now();
        in_flight.settle(Duration::from_millis(200)).await;
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}
