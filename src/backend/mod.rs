//! Backends that execute a plan: local processes, Docker containers, or hosts that already run.
//!
//! A backend is one module behind [`Backend`] (`process`, `docker`, `existing`): where a plan's
//! members go, what must be ready before anything starts, the ports it needs here, how members
//! start and stop, and what it labels for `down --all`. [`of`] picks the module for a
//! [`BackendKind`], the one `match` on it. [`up`] starts what the plan lists, runs the shared
//! assembly ([`crate::cluster::assemble`]) and returns a [`RunningCluster`]; [`down`] tears it
//! down and never leaks. Every run is recorded in a state file before anything starts (see
//! [`state`]), so a run that crashed is found again by `microshard down --all`.

mod bring_up;
pub mod docker;
pub(crate) mod doctor;
mod error;
pub(crate) mod existing;
mod extra_hosts;
pub mod kubernetes;
pub(crate) mod labels;
mod member_cpu;
pub(crate) mod ports;
pub mod process;
mod ready;
mod running;
pub mod state;
mod teardown;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;

pub use bring_up::UpOptions;
#[cfg(feature = "kubernetes")]
pub(crate) use bring_up::entry_uri_via;
pub(crate) use bring_up::{
    InFlight, STOP_ORDER, create_dir, lock, record_started, snapshot_write, start_members,
};
pub use error::BackendError;
pub use member_cpu::MemberCpu;
pub(crate) use ready::{Readiness, ready};
pub use running::{Handle, MemberState, RunningCluster, RunningMember};
pub use teardown::{DownAll, NotSearched, down, down_all_where};
pub(crate) use teardown::{LabelSearch, Labels, down_all, down_with};

use crate::cluster::Launcher;
use crate::events::Events;
use crate::topology::{BackendKind, Plan, PlanOptions, TopologyError, TopologySpec};

/// Everything microshard does differently by where the servers run. Each backend is one module
/// implementing it; [`of`] picks it. Adding a backend is a module, a [`BackendKind`] variant
/// and its arm in [`of`] (`CONTRIBUTING.md`).
pub(crate) trait Backend: Sync {
    /// Placement: the plan of `spec` on this backend — where each member listens and is
    /// reached, its directories or container, its command line — refusing hosts it cannot use.
    fn plan(&self, spec: &TopologySpec, opts: &PlanOptions) -> Result<Plan, TopologyError>;

    /// Whether it starts the servers itself (not so for a cluster that already runs: its CPU
    /// sets, ports and names are not microshard's to check, its servers not microshard's to stop).
    fn starts_servers(&self) -> bool {
        true
    }

    /// Whether it runs `mongod`/`mongos` binaries of this machine (`--bin-dir`, `--standin`).
    fn runs_binaries(&self) -> bool {
        false
    }

    /// Refuses missing server programs (`mongod`, and `mongos` when `sharded`), before any
    /// topology is planned.
    fn programs_found(&self, _bin_dir: Option<&Path>, _sharded: bool) -> Result<(), BackendError> {
        Ok(())
    }

    /// Readiness: what the servers need before anything starts (an engine with its images, a
    /// cluster that answers), checked for every planned topology.
    fn ready<'a>(&'a self, _check: &'a Readiness<'a>) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async { Ok(()) })
    }

    /// The ports `plan` needs free on this machine (none when its members run elsewhere).
    fn local_ports(&self, _plan: &Plan) -> Vec<u16> {
        Vec::new()
    }

    /// Brings `plan` up: starts its members and assembles them ([`bring_up::start_members`]
    /// with [`Backend::launcher`]), or attaches to what runs.
    fn up<'a>(
        &'a self,
        plan: &'a Plan,
        opts: &'a UpOptions,
    ) -> BoxFuture<'a, Result<RunningCluster, BackendError>> {
        Box::pin(start_members(self, plan, opts))
    }

    /// The member launcher the shared assembly drives, once what every member needs (engines,
    /// images, networks, directories) is in place.
    fn launcher<'a>(
        &'a self,
        _plan: &'a Plan,
        _record: Arc<Mutex<RunningCluster>>,
        _opts: &'a UpOptions,
        _in_flight: InFlight,
    ) -> BoxFuture<'a, Result<Box<dyn Launcher>, BackendError>> {
        Box::pin(async {
            Err(BackendError::Internal(
                "this backend has no launcher".into(),
            ))
        })
    }

    /// Stops everything of `cluster` that it started: members, then what they needed.
    fn teardown<'a>(
        &'a self,
        _cluster: &'a RunningCluster,
        _stop_timeout: Duration,
        _events: &'a dyn Events,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async { Ok(()) })
    }

    /// What teardown leaves on other machines for the user to remove, one line each.
    fn left_elsewhere(&self, _plan: &Plan) -> Vec<String> {
        Vec::new()
    }

    /// What to add when a run directory cannot be removed for want of permission.
    fn undeletable_hint(&self) -> &'static str {
        ""
    }

    /// `up --emit-manifests`: the topology as manifests to apply by hand, and the plan's notes;
    /// refused by a backend that has none.
    fn manifests(&self, _spec: &TopologySpec) -> Result<(String, Vec<String>), BackendError> {
        Err(BackendError::BadInput(
            "--emit-manifests: only with --backend kubernetes".into(),
        ))
    }

    /// Each of `members`' cumulative CPU nanoseconds, by name, where this backend can read it
    /// other than from `/proc` (a container's through its engine): none by default, where the
    /// members are local processes found by pid and port, or not reachable at all.
    fn member_cpu_ns<'a>(
        &'a self,
        _members: &'a [RunningMember],
    ) -> BoxFuture<'a, std::collections::BTreeMap<String, u64>> {
        Box::pin(async { std::collections::BTreeMap::new() })
    }

    /// Where client pods of `plan` run and what they dial, when its servers are pods this
    /// backend brought up: the run's namespace and the members' in-cluster names. `None`: the
    /// pods run in their context's default namespace and dial the run's entry URI.
    #[cfg(feature = "kubernetes")]
    fn client_pods_home(&self, _plan: &Plan) -> Option<PodsHome> {
        None
    }

    /// `down --all`: removes every object it labelled whose labels pass `keep`; one line each.
    fn remove_labelled<'a>(
        &'a self,
        _keep: &'a (dyn Fn(&Labels) -> bool + Sync),
    ) -> BoxFuture<'a, Result<Vec<String>, LabelSearch>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// Where a run's client pods go: a namespace, and the entry URI as seen from there.
#[cfg(feature = "kubernetes")]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PodsHome {
    /// The namespace to create their Job in.
    pub namespace: String,
    /// The entry point dialled from inside it.
    pub uri: String,
}

/// Every backend, in the order `down --all` searches them.
const ALL: [BackendKind; 4] = [
    BackendKind::Process,
    BackendKind::Docker,
    BackendKind::Existing,
    BackendKind::Kubernetes,
];

/// The backend of `kind`.
pub(crate) fn of(kind: BackendKind) -> &'static dyn Backend {
    match kind {
        BackendKind::Process => &process::ProcessBackend,
        BackendKind::Docker => &docker::DockerBackend,
        BackendKind::Existing => &existing::ExistingBackend,
        BackendKind::Kubernetes => &kubernetes::KubernetesBackend,
    }
}

/// The plan of `spec` on the backend `opts` names: every member, port, directory, container
/// and command line, before anything starts.
pub fn plan(spec: &TopologySpec, opts: &PlanOptions) -> Result<Plan, TopologyError> {
    of(opts.backend).plan(spec, opts)
}

/// Brings the plan up on its backend. On any failure or cancellation everything started so far
/// is torn down before the error returns.
pub async fn up(plan: &Plan, opts: &UpOptions) -> Result<RunningCluster, BackendError> {
    of(plan.backend).up(plan, opts).await
}

/// The backend picked when the user did not name one, and why, when the user should hear it.
pub(crate) struct Chosen {
    /// The backend.
    pub(crate) kind: BackendKind,
    /// A note for the user (a fallback they may not expect).
    pub(crate) note: Option<String>,
}

/// Picks the backend when the user did not: `existing` for a topology with a `uri`, `process`
/// when `mongod` is found in `bin_dir` or on PATH, else `docker` when an engine answers (said,
/// never silent).
pub(crate) async fn default_backend(
    spec: &TopologySpec,
    bin_dir: Option<&Path>,
) -> Result<Chosen, BackendError> {
    let quietly = |kind| Chosen { kind, note: None };
    if spec.uri.is_some() {
        return Ok(quietly(BackendKind::Existing));
    }
    let mongod = crate::topology::find_program("mongod", bin_dir);
    if mongod.is_ok() {
        return Ok(quietly(BackendKind::Process));
    }
    let endpoint = spec.hosts.first().and_then(|h| h.docker.clone());
    match docker::connect(endpoint.as_deref()).await {
        Ok(_) => Ok(Chosen {
            kind: BackendKind::Docker,
            note: Some(format!(
                "no mongod on PATH: bringing {} up on Docker (image {}); add --standin for microshard's stand-in server, or --bin-dir DIR",
                spec.name, spec.image
            )),
        }),
        Err(derr) => Err(BackendError::BadInput(format!(
            "no backend usable here: {} and {derr:#}; run `microshard doctor`",
            mongod.err().map(|e| e.to_string()).unwrap_or_default()
        ))),
    }
}
