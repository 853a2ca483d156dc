//! `microshard up`, `down`, `status`, `doctor`.

use clap::Args;

/// Arguments of `up`.
#[derive(Debug, Args)]
pub struct UpArgs {}
/// Arguments of `down`.
#[derive(Debug, Args)]
pub struct DownArgs {}
/// Arguments of `status`.
#[derive(Debug, Args)]
pub struct StatusArgs {}
/// Arguments of `doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {}

/// Brings a topology up.
pub async fn up(_args: UpArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
/// Tears a topology down.
pub async fn down(_args: DownArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
/// Lists running topologies.
pub async fn status(_args: StatusArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
/// Reports usable backends.
pub async fn doctor(_args: DoctorArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
