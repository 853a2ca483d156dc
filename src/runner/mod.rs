//! The runner: client tasks, pacing and the status line; executes a workload phase against a database.

pub mod pacing;

/// Which YCSB phase to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Insert the data set (`-load`).
    Load,
    /// Run the operation mix (`-t`).
    Run,
}

pub mod affinity;
mod client;
pub mod container;
mod exec;
pub mod fanout;
mod status;
pub mod verdict;
pub mod watch;

pub use exec::{ExecuteOptions, Executed, execute, execute_with_report};
pub use watch::Notify;

pub mod fdlimit;
