//! `microshard ycsb load|run mongodb <YCSB arguments>`: YCSB's own command line, as users paste it,
//! translated (`runner::command_line::translate`) into what `microshard load|run` runs.

use clap::Args;

use crate::runner::command_line::translate;

/// The raw YCSB arguments.
#[derive(Debug, Args)]
pub(crate) struct YcsbArgs {
    /// `load` or `run`, the binding name, then YCSB's flags (`-P`, `-p`, `-threads`, `-target`, `-s`, `-l`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Translates and runs a YCSB command line.
pub(crate) async fn run(args: YcsbArgs) -> anyhow::Result<()> {
    let translated = translate(&args.args)?;
    for note in &translated.notes {
        crate::output::eprintln(note);
    }
    super::workload_cmd::run(translated.phase, translated.args).await
}
