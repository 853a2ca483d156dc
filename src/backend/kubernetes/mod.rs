//! The Kubernetes backend. For now it plans a topology as pods and prints that plan as
//! manifests (`up --backend kubernetes --emit-manifests`, [`manifests`]) for users who apply them
//! themselves and then run `--backend existing`; bringing the pods up itself is not built yet,
//! and every command that would is refused before anything starts (`docs/kubernetes.md`).

use futures::future::BoxFuture;

use super::{Backend, BackendError, Readiness, RunningCluster, UpOptions};
use crate::topology::{BackendKind, Plan, PlanOptions, TopologyError, TopologySpec};

mod manifests;
mod place;
mod yaml;

pub use manifests::manifests;

/// Why a command that would bring pods up is refused.
const NOT_BUILT: &str = "--backend kubernetes: the live Kubernetes backend is not built yet; `microshard up TOPOLOGY --backend kubernetes --emit-manifests` prints the topology's manifests to apply yourself (then use --backend existing)";

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

    fn ready<'a>(&'a self, _check: &'a Readiness<'a>) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async { Err(BackendError::BadInput(NOT_BUILT.into())) })
    }

    fn up<'a>(
        &'a self,
        _plan: &'a Plan,
        _opts: &'a UpOptions,
    ) -> BoxFuture<'a, Result<RunningCluster, BackendError>> {
        Box::pin(async { Err(BackendError::BadInput(NOT_BUILT.into())) })
    }
}
