//! `microshard compare`, `sweep`, `report`, `diff`, `calibrate`, `demo`.

use clap::Args;

/// Arguments of `compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {}
/// Arguments of `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {}
/// Arguments of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {}
/// Arguments of `diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {}
/// Arguments of `calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {}
/// Arguments of `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {}

/// Runs an experiment.
pub async fn compare(_args: CompareArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
/// Runs a thread sweep.
pub async fn sweep(_args: SweepArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
/// Prints an experiment's table.
pub async fn report(_args: ReportArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
/// Compares two experiments.
pub async fn diff(_args: DiffArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
/// Measures the client's ceiling.
pub async fn calibrate(_args: CalibrateArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
/// Runs the stand-in demo.
pub async fn demo(_args: DemoArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
