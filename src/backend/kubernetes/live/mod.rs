//! The live Kubernetes backend (the `kubernetes` cargo feature): `up` creates a namespace per
//! run with a Lease this process renews, the topology's Services and StatefulSets in it, waits
//! for their pods and assembles the cluster through port-forwards; `down` deletes the
//! namespace; `down --all` deletes every microshard namespace whose Lease expired
//! (`docs/kubernetes.md`, "The live backend").

mod apply;
mod down;
mod error;
mod forward;
mod held;
mod lease;
mod namespace;
mod pods;
mod provision;
#[cfg(test)]
mod tests;
mod up;

pub(crate) use down::{down_named, remove_expired, teardown};
pub use error::KubeError;
pub(crate) use up::up;

use crate::backend::BackendError;
use crate::topology::Plan;

/// A client of the cluster of the current kubeconfig context (`KUBECONFIG`, else
/// `~/.kube/config`), or of this pod's cluster when microshard runs in one.
pub(crate) async fn connect() -> Result<kube::Client, KubeError> {
    let config = kube::Config::infer().await.map_err(|e| {
        KubeError::NoCluster(format!(
            "no Kubernetes cluster configured here ({}); set KUBECONFIG or run microshard in a pod",
            crate::backend::docker::one_line(e)
        ))
    })?;
    kube::Client::try_from(config)
        .map_err(|e| KubeError::NoCluster(crate::backend::docker::one_line(e)))
}

/// Whether a cluster is configured here at all (a kubeconfig, or a pod's service account):
/// without one, `down --all` has no cluster to search and says nothing of it.
pub(crate) fn configured() -> bool {
    let home_config = std::env::var_os("HOME")
        .map(|h| std::path::Path::new(&h).join(".kube/config"))
        .is_some_and(|p| p.exists());
    std::env::var_os("KUBECONFIG").is_some_and(|k| !k.is_empty())
        || home_config
        || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}

/// Before anything starts: every plan's objects build (a pinned image), and the API server
/// answers.
pub(crate) async fn ready(plans: &[&Plan]) -> Result<(), BackendError> {
    for plan in plans {
        apply::objects(plan, &namespace::labels(plan))?;
    }
    let refuse = |why: String| BackendError::BadInput(format!("--backend kubernetes: {why}"));
    let client = connect().await.map_err(|e| refuse(e.to_string()))?;
    client.apiserver_version().await.map_err(|e| {
        refuse(format!(
            "the Kubernetes cluster does not answer: {}",
            crate::backend::docker::one_line(e)
        ))
    })?;
    Ok(())
}
