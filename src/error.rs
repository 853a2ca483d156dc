//! The kinds of failure every command shares (the user's input wrong, a result not valid,
//! Ctrl-C), and which modules return which errors.
//!
//! The engines (`runner`, `backend`, `cluster`, `db`, `report`, and the typed modules below them:
//! `measure`, `topology`, `workload`, `props`) return their own typed errors (`thiserror`:
//! `RunError`, `BackendError`, `ClusterError`, `DbError`, `ReportError`, …); `RunError`,
//! `BackendError` and `ClusterError` say with `is_bad_input()` when the user's input is wrong.
//! `anyhow` is for `cli` and `experiment` (and `preflight`), where errors are reported rather
//! than handled: they build the markers below ([`bad_input`], [`interrupted`]) and take the
//! engines' errors with `?`. The `exit` module maps any of them to the exit status: 2 for bad
//! input, 3 for [`NotValid`] and [`Interrupted`], 1 for everything else. This module prints
//! nothing and knows no measurement. Errors are printed on one line (`{:#}`), so messages must
//! not contain newlines, and a typed error whose message already says its cause does not also
//! return it as its `source()`.

use std::fmt;

/// Marks an error as the user's input being wrong (exit status 2).
///
/// The message names the culprit: `file:line`, the property, the flag or the host.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadInput(pub String);

/// Builds an `anyhow::Error` that `main` reports with exit status 2.
pub(crate) fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}

/// Refuses `value` given for `flag` when it is below `low`: bad input (exit 2) on one line naming
/// the flag and the value, in the wording every lower bound shares ([`crate::props::at_least`]).
pub(crate) fn flag_at_least(flag: &str, value: u64, low: u64) -> anyhow::Result<()> {
    Ok(BadInput::unless_at_least(flag, value, low)?)
}

impl BadInput {
    /// [`flag_at_least`] for a module with its own typed error (`From<BadInput>`).
    pub(crate) fn unless_at_least(flag: &str, value: u64, low: u64) -> Result<(), BadInput> {
        if value < low {
            return Err(BadInput(format!(
                "{flag} {value}: {}",
                crate::props::at_least(low)
            )));
        }
        Ok(())
    }
}

/// Wraps any typed error as bad input, keeping its message.
pub(crate) fn as_bad_input<E: fmt::Display>(err: E) -> anyhow::Error {
    bad_input(err.to_string())
}

/// Marks a command that finished but one of whose results is invalid or was not run, or degraded
/// under `--strict` (exit status 3): the figures were written, with their verdict, but must not be published as
/// normal results. The message says which result and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NotValid(pub String);

/// Ctrl-C ended the command: whatever was measured is kept, but the run is not a complete
/// measurement (exit status 3, README "Results you can trust"). The message says what was kept
/// and how to finish.
#[derive(Debug, thiserror::Error)]
#[error("interrupted: {0}")]
pub(crate) struct Interrupted(pub String);

/// Builds the [`Interrupted`] error (exit 3): `what` says what was kept.
pub(crate) fn interrupted(what: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Interrupted(what.into()))
}
