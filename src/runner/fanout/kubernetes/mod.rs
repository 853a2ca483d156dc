//! Client pods (a topology's `clients = [{ kubernetes = "CONTEXT", count = N }]`): a phase's
//! clients as one Indexed Job in a Kubernetes cluster, for clusters whose entry point resolves
//! only inside it. The split, the barrier and the merge stay `runner::fanout`'s; this module
//! builds the Job ([`job`]), calls the API ([`api`]) and reads each pod's placement ([`pods`])
//! (`docs/kubernetes.md`, "Client pods").

pub(crate) mod api;
pub(crate) mod job;
pub(crate) mod launch;
/// Shared with the live backend's tests (`backend::kubernetes`).
#[cfg(test)]
pub(crate) mod mock;
pub(crate) mod pods;

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
