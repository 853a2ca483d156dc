//! The bring-up of a backend that starts its own members (process, Docker): its record, written
//! as the state file after every step; the launcher the shared assembly drives
//! ([`crate::cluster::assemble`]); engine calls that finish even when Ctrl-C abandons the
//! bring-up; and the teardown of whatever started when it fails.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Backend, BackendError, MemberState, RunningCluster, RunningMember, state};
use crate::cluster::AssemblyOptions;
use crate::events::{Discard, Sink};
use crate::topology::{MemberRole, Plan};

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

/// Brings the plan up on `backend`, which starts its members: starts them, assembles the
/// cluster, records the state file. On any failure or cancellation everything started so far
/// is torn down before the error returns.
pub(crate) async fn start_members<B: Backend + ?Sized>(
    backend: &B,
    plan: &Plan,
    opts: &UpOptions,
) -> Result<RunningCluster, BackendError> {
    let record = Arc::new(Mutex::new(RunningCluster::from_plan(plan, opts.keep)));
    snapshot_write(&record)?;
    let in_flight = InFlight::default();
    let outcome = {
        let work = bring_up(backend, plan, opts, record.clone(), in_flight.clone());
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
            if let Err(td) = super::down_with(&snapshot, stop_timeout, &*opts.events).await {
                return Err(BackendError::Context {
                    context: format!("teardown after the failure also failed: {td:#}"),
                    source: Box::new(err),
                });
            }
            Err(err)
        }
    }
}

/// Starts the members through `backend`'s launcher and runs the shared assembly, recording
/// what it learned.
async fn bring_up<B: Backend + ?Sized>(
    backend: &B,
    plan: &Plan,
    opts: &UpOptions,
    record: Arc<Mutex<RunningCluster>>,
    in_flight: InFlight,
) -> Result<(), BackendError> {
    let launcher = backend
        .launcher(plan, record.clone(), opts, in_flight)
        .await?;
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
    entry_uri_via(plan, |m| plan.dial_address(m))
}

/// [`entry_uri`] with each member reached at `address(member)` (a port-forward's local end).
pub(crate) fn entry_uri_via(
    plan: &Plan,
    address: impl Fn(&crate::topology::Member) -> String,
) -> Result<String, BackendError> {
    let entry = plan
        .entry()
        .ok_or_else(|| BackendError::Internal(format!("plan {} has no entry member", plan.name)))?;
    if entry.role == MemberRole::Mongos {
        let routers: Vec<String> = plan
            .members_with(MemberRole::Mongos)
            .map(&address)
            .collect();
        return Ok(format!("mongodb://{}/", routers.join(",")));
    }
    let address = address(entry);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{BackendKind, TopologySpec};
    use std::path::PathBuf;

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
        let plan = super::super::plan(&spec, &opts).unwrap();
        assert_eq!(
            entry_uri(&plan).unwrap(),
            "mongodb://127.0.0.1:27017,127.0.0.1:27018,127.0.0.1:27019/"
        );
        let spec =
            TopologySpec::parse("name = \"s\"\nkind = \"standalone\"\n", Path::new("t.toml"))
                .unwrap();
        let plan = super::super::plan(&spec, &opts).unwrap();
        assert_eq!(
            entry_uri(&plan).unwrap(),
            "mongodb://127.0.0.1:27017/?directConnection=true"
        );
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
