//! `microshard load` and `microshard run`.

use std::path::PathBuf;

use clap::Args;

/// Arguments shared by `load` and `run` (and produced by `microshard ycsb`).
#[derive(Debug, Default, Args)]
pub struct PhaseArgs {
    /// A property file (Java `.properties`, e.g. `workloads/S1`); repeatable, later files override earlier ones.
    #[arg(short = 'P', value_name = "FILE")]
    pub property_files: Vec<PathBuf>,
    /// A property override `name=value`; repeatable, applied after every file.
    #[arg(short = 'p', value_name = "NAME=VALUE")]
    pub properties: Vec<String>,
    /// Print YCSB's status line to stderr every `status.interval` seconds.
    #[arg(short = 's', long = "status")]
    pub status: bool,
    /// Number of client tasks (`threadcount`).
    #[arg(long, value_name = "N")]
    pub threads: Option<u64>,
    /// Target throughput for the whole run in ops/s (`target`); 0 = as fast as possible.
    #[arg(long, value_name = "OPS")]
    pub target: Option<u64>,
    /// The MongoDB connection string (`mongodb.url`).
    #[arg(long, value_name = "URI")]
    pub uri: Option<String>,
    /// A label glued before the status-line timestamp (`label`).
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Also write the result document (properties, server facts, measurements) to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs one phase of the workload.
pub async fn run(_phase: crate::runner::Phase, _args: PhaseArgs) -> anyhow::Result<()> {
    anyhow::bail!("microshard load/run: waiting for the workload and measure modules")
}
