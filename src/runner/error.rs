//! What can go wrong running a phase.

use crate::db::DbError;
use crate::error::{BadInput, Interrupted};
use crate::measure::ResultError;

/// A phase that could not run, or whose clients failed. Each message is one line naming what was
/// being done and why; a cause is part of that line (errors print on one line, `crate::error`).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The user's input is wrong: a property, a flag, the URL, an unreachable server, more clients
    /// than threads (exit status 2). The message names the culprit.
    #[error("{0}")]
    BadInput(String),
    /// Ctrl-C ended the phase before it started (exit status 3): `error::Interrupted`, whose words it
    /// keeps.
    #[error("interrupted: {0}")]
    Interrupted(String),
    /// A client failed or went away: a client task, a client process or container, the
    /// coordinator of a client of several.
    #[error("{0}")]
    Clients(String),
    /// A file of the run could not be created or written, or a program not started.
    #[error("{what}: {error}")]
    Io {
        /// What was being done (`cannot write PATH`).
        what: String,
        /// Why it failed.
        error: std::io::Error,
    },
    /// The database refused an operation of the phase's own (`load --drop`).
    #[error(transparent)]
    Db(#[from] DbError),
    /// The clients' result documents could not be merged.
    #[error(transparent)]
    Merge(#[from] ResultError),
    /// A fault of microshard's own.
    #[error("internal: {0}")]
    Internal(String),
    /// A failure and what happened after it (the clients' containers that could not be removed).
    #[error("{context}")]
    Context {
        /// What happened after.
        context: String,
        /// The failure.
        #[source]
        source: Box<RunError>,
    },
}

impl RunError {
    /// The user's input is wrong: `message` names the culprit (exit status 2).
    pub(crate) fn bad_input(message: impl Into<String>) -> RunError {
        RunError::BadInput(message.into())
    }

    /// A typed error of the input (a property, the URL), as bad input with its message.
    pub(crate) fn as_bad_input(err: impl std::fmt::Display) -> RunError {
        RunError::BadInput(err.to_string())
    }

    /// `error` met while doing `what` (`cannot write PATH`).
    pub(crate) fn io(what: impl Into<String>, error: std::io::Error) -> RunError {
        RunError::Io {
            what: what.into(),
            error,
        }
    }

    /// True when the user's input is wrong (exit status 2).
    pub fn is_bad_input(&self) -> bool {
        match self {
            RunError::BadInput(_) => true,
            RunError::Context { source, .. } => source.is_bad_input(),
            _ => false,
        }
    }

    /// True when Ctrl-C ended the phase (exit status 3).
    pub fn is_interrupted(&self) -> bool {
        match self {
            RunError::Interrupted(_) => true,
            RunError::Context { source, .. } => source.is_interrupted(),
            _ => false,
        }
    }
}

impl From<BadInput> for RunError {
    fn from(err: BadInput) -> RunError {
        RunError::BadInput(err.0)
    }
}

impl From<Interrupted> for RunError {
    fn from(err: Interrupted) -> RunError {
        RunError::Interrupted(err.0)
    }
}
