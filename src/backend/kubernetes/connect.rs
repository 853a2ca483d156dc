//! How microshard reaches a Kubernetes API server: by a kubeconfig context it is given (client
//! pods, a run recorded in a state file), or by the current one (`up --backend kubernetes`).

use super::live::KubeError;

/// The context that means "the cluster this process runs in" (its service account).
pub(crate) const IN_CLUSTER: &str = "in-cluster";

/// Why the API server of a context cannot be reached.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// The kubeconfig has no such context, or it cannot be read.
    #[error("kubeconfig context {context:?}: {source}")]
    Kubeconfig {
        context: String,
        source: kube::config::KubeconfigError,
    },
    /// Not in a pod with a service account.
    #[error("{IN_CLUSTER}: {0}")]
    InCluster(kube::config::InClusterError),
    /// The client cannot be built from the configuration (TLS, proxy).
    #[error("kubeconfig context {context:?}: {source}")]
    Client {
        context: String,
        source: kube::Error,
    },
}

/// A client of the API server of kubeconfig context `context` (or of this pod's cluster).
pub(crate) async fn connect(context: &str) -> Result<kube::Client, ConnectError> {
    let config = if context == IN_CLUSTER {
        kube::Config::incluster().map_err(ConnectError::InCluster)?
    } else {
        let options = kube::config::KubeConfigOptions {
            context: Some(context.to_string()),
            ..Default::default()
        };
        kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|source| ConnectError::Kubeconfig {
                context: context.to_string(),
                source,
            })?
    };
    kube::Client::try_from(config).map_err(|source| ConnectError::Client {
        context: context.to_string(),
        source,
    })
}

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

/// The current kubeconfig context (`KUBECONFIG`, else `~/.kube/config`), which a run brought up
/// there records so that its teardown reaches the same cluster whatever the current context is
/// then; `None` with no kubeconfig (microshard in a pod: its own cluster).
pub(crate) fn current_context() -> Option<String> {
    kube::config::Kubeconfig::read().ok()?.current_context
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
