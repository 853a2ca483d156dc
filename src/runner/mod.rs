//! The runner: client tasks, pacing and the status line; executes a workload phase against a database.

pub(crate) mod pacing;

/// Which YCSB phase to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Insert the data set (`-load`).
    Load,
    /// Run the operation mix (`-t`).
    Run,
}

pub(crate) mod affinity;
mod client;
pub(crate) mod container;
mod exec;
pub(crate) mod fanout;
mod outputs;
mod status;
pub(crate) mod verdict;
pub(crate) mod watch;

pub use exec::{ExecuteOptions, Executed, execute, execute_with_report};
pub use watch::Notify;

pub(crate) mod fdlimit;
