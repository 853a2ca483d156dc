//! Why the live Kubernetes backend failed: one line each, naming what microshard was doing.

use crate::backend::BackendError;
use crate::backend::docker::one_line;

/// Why a call of the live Kubernetes backend failed.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// No cluster is configured here (no kubeconfig, not in a pod), or its configuration is
    /// unusable.
    #[error("{0}")]
    NoCluster(String),
    /// The API refused or failed a call.
    #[error("{what}: {}", one_line(source))]
    Api {
        /// What microshard was doing (`creating namespace x`).
        what: String,
        /// What the API said.
        source: kube::Error,
    },
    /// A namespace microshard must not delete: it lacks microshard's labels, or is another run's.
    #[error(
        "namespace {namespace}: {why}; microshard deletes only the namespaces it created, so it left this one alone"
    )]
    NotOurs {
        /// The namespace.
        namespace: String,
        /// Which label is missing or differs.
        why: String,
    },
    /// The run's pods did not become Ready: one cannot start, or the time-out passed.
    #[error("{0}")]
    Pods(String),
    /// A fault of microshard's own (a manifest the API's types do not take).
    #[error("internal: {0}")]
    Internal(String),
    /// A local port for a port-forward could not be opened.
    #[error("port-forward to pod {pod}: {error}")]
    Forward {
        /// The pod.
        pod: String,
        /// Why.
        error: std::io::Error,
    },
}

/// `what` failed with `source`.
pub(super) fn failed(what: impl Into<String>) -> impl FnOnce(kube::Error) -> KubeError {
    let what = what.into();
    move |source| KubeError::Api { what, source }
}

/// Whether the API said the object is not there.
pub(super) fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

impl From<KubeError> for BackendError {
    /// What the user must fix is bad input (exit status 2); the rest is the backend's failure.
    fn from(e: KubeError) -> BackendError {
        match e {
            KubeError::NoCluster(_) | KubeError::NotOurs { .. } => {
                BackendError::BadInput(e.to_string())
            }
            other => BackendError::Kubernetes(other),
        }
    }
}
