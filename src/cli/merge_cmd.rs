//! `microshard merge`: one result from the documents of clients started by hand (as YCSB users
//! run several client machines), merged exactly like `--clients` does.

use std::path::PathBuf;

use clap::Args;

use crate::runner::fanout;

/// Arguments of `merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// Result documents (`--json` files) of clients that ran at the same time.
    #[arg(required = true, num_args = 1.., value_name = "RESULT.json")]
    pub files: Vec<PathBuf>,
    /// Also write the merged result document here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// What to print: YCSB's text report of the merge, or the merged document.
    #[arg(long, value_enum, default_value = "ycsb")]
    pub format: MergeFormat,
    /// Exit 3 for a degraded merge too (by default a degraded result is a caveat, exit 0).
    #[arg(long)]
    pub strict: bool,
}

/// Output of `merge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MergeFormat {
    /// YCSB's `[OVERALL]`/`[READ]` report lines.
    Ycsb,
    /// The merged result document.
    Json,
}

/// Merges the files and prints the result; exit status 3 when the merge is invalid (or degraded
/// under --strict).
pub(crate) async fn merge(args: MergeArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.json {
        crate::writable::file("--json", path)?;
    }
    let docs = fanout::merge_input::read(&args.files)?;
    let merged = fanout::merge_clients(
        docs.into_iter()
            .enumerate()
            .map(|(i, (_, d))| (i, d))
            .collect(),
    )?;
    if let Some(path) = &args.json {
        super::workload_cmd::write_json(path, &merged)?;
    }
    match args.format {
        MergeFormat::Json => crate::output::println(&serde_json::to_string_pretty(&merged)?)?,
        MergeFormat::Ycsb => {
            let mut props = crate::workload::Properties::new();
            for p in &merged.properties {
                props.set(
                    p.key.clone(),
                    p.value.clone(),
                    crate::workload::Origin::Override,
                );
            }
            super::workload_cmd::print_merged(&merged, &props)?;
        }
    }
    crate::cli::verdicts::verdict_exit(&merged.validity, "the merged result", args.strict)
}
