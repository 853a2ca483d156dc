//! `microshard rerun DIR`: measure an experiment again from its own record (`experiment.json`:
//! the stored command and resolved scenario properties) into a new run directory, then print the
//! `diff` against the original and whether it reproduced (`report::reproduced`).

use std::path::PathBuf;

use clap::Args;

use super::experiment_cmd::matrix_exit;
use super::progress::ProgressDisplay;
use crate::error::bad_input;
use crate::events::Events;
use crate::experiment::checked::Checked;
use crate::experiment::compare::{self, NewRun};
use crate::experiment::lab::Session;
use crate::experiment::live::LiveLab;
use crate::experiment::model::ExperimentConfig;
use crate::experiment::results::ExperimentDir;
use crate::output::Terminal;
use crate::preflight;
use crate::report::{self, Format};

/// Arguments of `rerun`.
#[derive(Debug, Args)]
pub(crate) struct RerunArgs {
    /// The experiment: its directory, its name (`compare`: the newest of that name under
    /// results/), `latest` or `previous`.
    pub dir: PathBuf,
    /// Where the new run directory is created (default: beside the original).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Format of the diff printed at the end.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Exit 3 for a degraded result too (by default a degraded result is a caveat, exit 0).
    #[arg(long)]
    pub strict: bool,
    /// No progress output.
    #[arg(short, long)]
    pub quiet: bool,
}

/// The original experiment and its record, checked before anything starts: a `compare` run
/// directory whose record this version reads (bad input otherwise, exit 2).
fn original(args: &RerunArgs) -> anyhow::Result<(ExperimentDir, ExperimentConfig)> {
    let refuse =
        |e: &dyn std::fmt::Display| bad_input(format!("rerun {}: {e}", args.dir.display()));
    let named = ExperimentDir::find(&args.dir).map_err(|e| refuse(&e))?;
    // `results/latest` moves to the new run: hold on to the directory it names now.
    let path = std::fs::canonicalize(named.path()).map_err(|e| refuse(&e))?;
    let dir = ExperimentDir::open(&path).map_err(|e| refuse(&e))?;
    crate::experiment::results::known_schema(&dir).map_err(|e| refuse(&e))?;
    if dir.is_sweep() {
        return Err(refuse(
            &"this is a sweep, not a compare experiment; rerun measures compare experiments \
             (run the sweep's command again instead)",
        ));
    }
    let record = dir.config().map_err(|e| refuse(&e))?;
    Ok((dir, record))
}

/// Measures the experiment again and says whether it reproduced.
pub(crate) async fn rerun(args: RerunArgs) -> anyhow::Result<()> {
    let (original, record) = original(&args)?;
    let mut command = record.command.clone();
    // Stand-in figures were measured through links to this binary: the servers check makes
    // them again if they are gone (a demo's temporary links), as for `compare --standin`.
    if let Some(gone) = command.servers.bin_dir.as_ref().filter(|d| !d.is_dir()) {
        let runs_binaries = crate::backend::of(command.servers.backend).runs_binaries();
        if !(record.standin && runs_binaries) {
            return Err(bad_input(format!(
                "rerun: the experiment's binaries directory {} is gone",
                gone.display()
            )));
        }
        command.servers.bin_dir = Some(crate::experiment::flags::standin_links_dir());
    }
    let beside = || original.path().parent().map(PathBuf::from);
    let out = args
        .out
        .clone()
        .or_else(beside)
        .unwrap_or_else(|| PathBuf::from("results"));
    crate::writable::dir("--out", &out)?;
    let pulls = (!args.quiet).then_some(&Terminal as &dyn Events);
    let specs = preflight::servers(&preflight::Servers::of_compare(&command, pulls)).await?;
    let checked = Checked::new(command, specs);
    let cancel = crate::signals::install();
    let progress = ProgressDisplay::auto(args.quiet);
    let mut prepared = compare::create(
        checked.record(),
        &NewRun {
            client_ceiling: record.client_ceiling,
            results_root: out,
            workload_dir: None,
        },
    )?;
    // The scenarios as the original resolved them, not as the workload files read today.
    prepared.config.properties = record.properties.clone();
    prepared.config.scale_note = record.scale_note.clone();
    prepared.dir.write_config(&prepared.config)?;
    progress.line(&format!(
        "microshard: measuring {} again from its record",
        original.path().display()
    ));
    let checked = checked.with(prepared);
    let (mut lab, _links) = LiveLab::for_compare(&checked)?;
    lab.events = progress.events();
    let mut session = Session::new(&mut lab, &cancel, &progress);
    let (dir, outcome) = compare::compare_with(&mut session, checked.into_record()).await?;
    report::write_reports(&dir)?;
    let mut text = report::diff::render(&report::diff::diff_of(&original, &dir)?, args.format);
    let verdict = report::reproduced::verdict(&report::build(&original)?, &report::build(&dir)?);
    if matches!(args.format, Format::Table | Format::Markdown) {
        text.push_str(&verdict.text);
    } else {
        // Other formats keep stdout one document.
        crate::output::eprintln(&verdict.text);
    }
    matrix_exit(&dir, &outcome, &text, args.strict)?;
    match verdict.compared {
        0 => Err(crate::error::NotValid(
            "rerun: nothing compared: no cell is valid in both runs".into(),
        )
        .into()),
        _ => Ok(()),
    }
}
