//! The runner: executes a workload phase against a database — client tasks, pacing, the status
//! line, the watch beside every run and its verdict, several client processes (`fanout`, with
//! their Docker launcher `fanout::docker`), and what a phase is asked on the command line
//! (`command_line`). One entry point, [`execute`], runs a phase in this process or with the
//! several clients its options name. Everything it says is an event (`crate::events`) for the
//! sink its caller passes.

/// Which YCSB phase to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Insert the data set (`-load`).
    Load,
    /// Run the operation mix (`-t`).
    Run,
}

impl Phase {
    /// Its name: the subcommand that runs it, and the result document's `phase`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Run => "run",
        }
    }
}

pub(crate) mod affinity;
mod client;
pub(crate) mod command_line;
mod election;
mod error;
mod exec;
pub(crate) mod fanout;
pub(crate) mod fdlimit;
mod outputs;
pub(crate) mod pacing;
pub(crate) mod quiet;
mod reuse;
pub(crate) mod size_notice;
mod status;
pub(crate) mod verdict;
pub(crate) mod watch;

/// YCSB's banner for the command line `argv` (credentials hidden), so a diff against a YCSB log
/// lines up (`docs/engine.md`).
pub(crate) fn ycsb_banner(argv: &[String]) -> Vec<String> {
    vec![
        format!(
            "Command line: {}",
            crate::redact::redact_text(&argv.join(" "))
        ),
        format!(
            "microshard {} (YCSB Client compatible)",
            env!("CARGO_PKG_VERSION")
        ),
        String::new(),
    ]
}

pub use error::RunError;
pub use exec::{ExecuteOptions, Executed, YcsbReport, execute};
pub use fanout::ClientLauncher;
pub use fanout::docker::DockerClients;
pub use reuse::{Reuse, remove_inserted};
