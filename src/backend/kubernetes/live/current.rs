//! How the live backend reaches a cluster: the current kubeconfig context's (`up`), or the one
//! a run recorded (`down`).

use super::KubeError;
use crate::backend::kubernetes::connect::connect;

/// A client of the cluster of the current kubeconfig context (`KUBECONFIG`, else
/// `~/.kube/config`), or of this pod's cluster when microshard runs in one.
pub(crate) async fn connect_current() -> Result<kube::Client, KubeError> {
    let config = kube::Config::infer().await.map_err(|e| {
        // With nothing configured, kube's error lists every place it looked: too long to help.
        let why = match configured() {
            true => crate::backend::docker::one_line(e),
            false => "no kubeconfig in KUBECONFIG or ~/.kube/config, and not in a pod".into(),
        };
        KubeError::NoCluster(format!(
            "no Kubernetes cluster configured here ({why}); set KUBECONFIG or run microshard in a pod"
        ))
    })?;
    kube::Client::try_from(config)
        .map_err(|e| KubeError::NoCluster(crate::backend::docker::one_line(e)))
}

/// Whether a cluster is configured here at all (a kubeconfig, or a pod's service account):
/// without one, `down --all` has no cluster to search and says nothing of it.
pub(crate) fn configured() -> bool {
    let kubeconfig = match std::env::var_os("KUBECONFIG").filter(|k| !k.is_empty()) {
        Some(paths) => std::env::split_paths(&paths).any(|p| p.exists()),
        None => std::env::var_os("HOME")
            .map(|h| std::path::Path::new(&h).join(".kube/config"))
            .is_some_and(|p| p.exists()),
    };
    kubeconfig || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}

/// A client of the cluster of `context` when one was recorded, else of the current one.
pub(crate) async fn connect_recorded(context: Option<&str>) -> Result<kube::Client, KubeError> {
    match context {
        Some(c) => connect(c)
            .await
            .map_err(|e| KubeError::NoCluster(e.to_string())),
        None => connect_current().await,
    }
}
