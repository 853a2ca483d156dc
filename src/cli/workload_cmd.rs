//! `microshard load` and `microshard run`.

use clap::Args;

/// Arguments shared by `load` and `run`.
#[derive(Debug, Args)]
pub struct PhaseArgs {}

/// Runs one phase of the workload.
pub async fn run(_phase: crate::runner::Phase, _args: PhaseArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
