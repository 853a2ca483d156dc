//! How microshard reaches a Kubernetes API server: by a kubeconfig context it is given (client
//! pods, a run recorded in a state file), or by the current one (`up --backend kubernetes`).

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

/// The current kubeconfig context (`KUBECONFIG`, else `~/.kube/config`), which a run brought up
/// there records so that its teardown reaches the same cluster whatever the current context is
/// then; `None` with no kubeconfig (microshard in a pod: its own cluster).
pub(crate) fn current_context() -> Option<String> {
    kube::config::Kubeconfig::read().ok()?.current_context
}
