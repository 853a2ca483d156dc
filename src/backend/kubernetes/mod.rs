//! The Kubernetes backend. It plans a topology as pods and prints that plan as manifests (`up
//! --backend kubernetes --emit-manifests`, [`manifests`]) for users who apply them themselves;
//! with the `kubernetes` cargo feature it also brings them up itself ([`live`]): a namespace per
//! run, the manifests' Services and StatefulSets in it, the shared assembly through
//! port-forwards, and the namespace deleted at teardown (`docs/kubernetes.md`).

use futures::future::BoxFuture;

use super::{Backend, BackendError, Readiness, RunningCluster, UpOptions};
use crate::topology::{BackendKind, Plan, PlanOptions, TopologyError, TopologySpec};

#[cfg(feature = "kubernetes")]
pub(crate) mod client_jobs;
#[cfg(feature = "kubernetes")]
pub(crate) mod connect;
#[cfg(feature = "kubernetes")]
mod live;
mod manifests;
mod place;
pub mod reaper;
mod yaml;

#[cfg(feature = "kubernetes")]
pub use live::KubeError;
#[cfg(feature = "kubernetes")]
pub(crate) use live::down_named;
pub use manifests::manifests;

/// Why a command that would bring pods up is refused by a build without the `kubernetes`
/// feature.
#[cfg(not(feature = "kubernetes"))]
const NOT_BUILT: &str = "--backend kubernetes: this microshard was built without the kubernetes feature (cargo build --release --features kubernetes); `microshard up TOPOLOGY --backend kubernetes --emit-manifests` prints the topology's manifests to apply yourself (then use --backend existing)";

/// The Kubernetes backend: one StatefulSet per replica set, placed on the topology's nodes.
pub(crate) struct KubernetesBackend;

impl Backend for KubernetesBackend {
    fn plan(&self, spec: &TopologySpec, opts: &PlanOptions) -> Result<Plan, TopologyError> {
        place::plan(spec, opts)
    }

    /// The plan with the topology's name as run id, so the same topology always gives the
    /// same text.
    fn manifests(&self, spec: &TopologySpec) -> Result<(String, Vec<String>), BackendError> {
        let mut opts = PlanOptions::new(spec, BackendKind::Kubernetes);
        opts.run_id = spec.name.clone();
        let plan = place::plan(spec, &opts).map_err(|e| BackendError::BadInput(e.to_string()))?;
        Ok((manifests(&plan)?, plan.notes))
    }

    /// The plans build as objects and the cluster of the kubeconfig answers.
    fn ready<'a>(&'a self, check: &'a Readiness<'a>) -> BoxFuture<'a, Result<(), BackendError>> {
        #[cfg(feature = "kubernetes")]
        {
            let plans: Vec<&Plan> = check.plans.iter().map(|(_, _, p)| p).collect();
            let measured = check.measured;
            Box::pin(async move { live::ready(&plans, measured).await })
        }
        #[cfg(not(feature = "kubernetes"))]
        {
            let _ = check;
            Box::pin(async { Err(BackendError::BadInput(NOT_BUILT.into())) })
        }
    }

    fn up<'a>(
        &'a self,
        plan: &'a Plan,
        opts: &'a UpOptions,
    ) -> BoxFuture<'a, Result<RunningCluster, BackendError>> {
        #[cfg(feature = "kubernetes")]
        {
            Box::pin(live::up(plan, opts))
        }
        #[cfg(not(feature = "kubernetes"))]
        {
            let _ = (plan, opts);
            Box::pin(async { Err(BackendError::BadInput(NOT_BUILT.into())) })
        }
    }

    /// The run's namespace, where the client pods find the servers by their in-cluster names
    /// (and the anti-affinity to the server pods, which selects in its own namespace, applies).
    #[cfg(feature = "kubernetes")]
    fn client_pods_home(&self, plan: &Plan) -> Option<super::PodsHome> {
        Some(super::PodsHome {
            namespace: live::namespace_of(&plan.run_id),
            uri: super::entry_uri_via(plan, |m| m.member_host.clone()).ok()?,
        })
    }

    /// The run's namespace deleted (kept with `--keep`), only if it carries the run's labels.
    #[cfg(feature = "kubernetes")]
    fn teardown<'a>(
        &'a self,
        cluster: &'a RunningCluster,
        _stop_timeout: std::time::Duration,
        events: &'a dyn crate::events::Events,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(live::teardown(cluster, events))
    }

    /// Every microshard namespace whose Lease expired and whose labels pass `keep`.
    #[cfg(feature = "kubernetes")]
    fn remove_labelled<'a>(
        &'a self,
        keep: &'a (dyn Fn(&super::Labels) -> bool + Sync),
    ) -> BoxFuture<'a, Result<Vec<String>, super::LabelSearch>> {
        Box::pin(live::remove_expired(keep))
    }
}
