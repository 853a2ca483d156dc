//! What can go wrong bringing a plan up or tearing it down.

use super::docker::DockerError;
use crate::cluster::ClusterError;
use crate::error::Interrupted;

/// A bring-up, teardown or state file that failed. Each message is one line naming what was being
/// done and why; a cause is part of that line (errors print on one line, `crate::error`).
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The user's input is wrong: a port already in use, a flag the server refused, no backend
    /// usable here (exit status 2).
    #[error("{0}")]
    BadInput(String),
    /// Ctrl-C ended the bring-up; everything started was torn down (exit status 3): `error::Interrupted`, whose words it
    /// keeps.
    #[error("interrupted: {0}")]
    Interrupted(String),
    /// A file or directory of the run could not be created, read or written.
    #[error("{what}: {error}")]
    Io {
        /// What was being done (`cannot create PATH`).
        what: String,
        /// Why it failed.
        error: std::io::Error,
    },
    /// A state file could not be read back (`state file PATH is damaged: …`).
    #[error("{0}")]
    State(String),
    /// The Docker engine refused or failed a call.
    #[error(transparent)]
    Docker(#[from] DockerError),
    /// A step of the shared bring-up failed (readiness, `replSetInitiate`, `addShard`, …).
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// A server program (`mongod --version`, `ldd`) could not be run or said no, or a member
    /// could not be started.
    #[error("{0}")]
    Program(String),
    /// The servers of the `existing` backend are not what it needs: no `uri`, never initiated, a
    /// secondary, another kind than the topology says.
    #[error("{0}")]
    Existing(String),
    /// Teardown left something behind: one part per object, joined with "; ".
    #[error("{0}")]
    Teardown(String),
    /// The Kubernetes API refused or failed a call of the live backend, or its pods did not
    /// become Ready.
    #[cfg(feature = "kubernetes")]
    #[error(transparent)]
    Kubernetes(super::kubernetes::KubeError),
    /// A fault of microshard's own.
    #[error("internal: {0}")]
    Internal(String),
    /// A failure and what happened after it (`teardown after the failure also failed: …`).
    #[error("{context}")]
    Context {
        /// What happened after.
        context: String,
        /// The failure.
        #[source]
        source: Box<BackendError>,
    },
}

impl BackendError {
    /// `error` met while doing `what` (`cannot create PATH`).
    pub(crate) fn io(what: impl Into<String>, error: std::io::Error) -> BackendError {
        BackendError::Io {
            what: what.into(),
            error,
        }
    }

    /// True when the user's input is wrong (exit status 2).
    pub fn is_bad_input(&self) -> bool {
        match self {
            BackendError::BadInput(_) => true,
            BackendError::Cluster(err) => err.is_bad_input(),
            BackendError::Context { source, .. } => source.is_bad_input(),
            _ => false,
        }
    }

    /// True when Ctrl-C ended the bring-up (exit status 3).
    pub fn is_interrupted(&self) -> bool {
        match self {
            BackendError::Interrupted(_) => true,
            BackendError::Context { source, .. } => source.is_interrupted(),
            _ => false,
        }
    }

    /// The error the shared bring-up ended with: a member's start failure is the backend's own
    /// error again, and a member that refused a flag the user gave (`mongod_args`,
    /// `--mongod-arg`) is bad input, said in the server's own words.
    pub(crate) fn from_assembly(err: ClusterError) -> BackendError {
        match err {
            ClusterError::Start(start) => match start.downcast::<BackendError>() {
                Ok(own) => *own,
                Err(other) => BackendError::Cluster(ClusterError::Start(other)),
            },
            ClusterError::Exited {
                user_flag: Some(ref flag),
                ..
            } => BackendError::BadInput(format!(
                "{err}; {flag} comes from the topology's mongod_args or --mongod-arg"
            )),
            other => BackendError::Cluster(other),
        }
    }
}

impl From<Interrupted> for BackendError {
    fn from(err: Interrupted) -> BackendError {
        BackendError::Interrupted(err.0)
    }
}
