//! `microshard ycsb load|run mongodb <YCSB arguments>`: YCSB's own command line, as users paste it.

use clap::Args;

/// The raw YCSB arguments.
#[derive(Debug, Args)]
pub struct YcsbArgs {
    /// `load` or `run`, the binding name, then YCSB's flags (`-P`, `-p`, `-threads`, `-target`, `-s`, `-l`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Translates and runs a YCSB command line.
pub async fn run(_args: YcsbArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
