//! `--resume` of `compare` and `sweep`, where it is not the measuring itself: reading a sweep's
//! request back with the flags given again, and the answer when nothing is left to measure.

use std::path::Path;

use crate::experiment::results::ExperimentDir;
use crate::experiment::sweep::{self, SweepCommand};
use crate::output;
use crate::report::{self, Columns, Format};

/// `sweep --resume DIR`: the directory and its stored request, with the servers' binaries and
/// ports, a URI and `-p` given again applied.
pub(crate) fn reopen_sweep(
    path: &Path,
    mut given: SweepCommand,
) -> anyhow::Result<(ExperimentDir, SweepCommand)> {
    if let Ok(dir) = ExperimentDir::open(path) {
        crate::experiment::results::known_schema(&dir)
            .map_err(|e| crate::error::bad_input(format!("--resume: {e}")))?;
    }
    given.servers = given.servers.checked()?;
    given.servers.take_standin(true)?;
    let (dir, cfg) = sweep::reopen(path, &given)?;
    crate::writable::dir("--resume", dir.path())?;
    if let Some(gone) = cfg.servers.bin_dir.as_ref().filter(|d| !d.is_dir()) {
        return Err(crate::error::bad_input(format!(
            "--resume: the sweep's binaries directory {} is gone; give --bin-dir or --standin",
            gone.display()
        )));
    }
    Ok((dir, cfg))
}

/// `sweep --resume` of a sweep with every curve measured: says so, prints it and ends by its
/// verdicts; nothing is written (no session is added).
pub(crate) fn finished_sweep(
    dir: &ExperimentDir,
    outcome: &sweep::SweepOutcome,
    columns: &Columns,
    strict: bool,
) -> anyhow::Result<()> {
    output::eprintln(&format!(
        "microshard: nothing to resume: every curve of {} is measured (nothing was touched)",
        dir.path().display()
    ));
    print_sweep(outcome, columns)?;
    let verdicts = outcome.verdict_lines();
    crate::cli::verdicts::verdicts_exit(verdicts, strict)
}

/// Whether a `compare --resume` has nothing left to measure: every cell has a file, none was
/// recorded as not run, and `--remeasure` finds no cell to measure again.
pub(crate) fn nothing_to_resume(
    dir: &ExperimentDir,
    remeasure: crate::experiment::model::Remeasure,
) -> anyhow::Result<bool> {
    let config = dir.config()?;
    if !dir.never_run(&config).is_empty() || !dir.not_run().is_empty() {
        return Ok(false);
    }
    Ok(!dir.cells()?.iter().any(|c| remeasure.takes(c)))
}

/// `compare --resume` of a finished experiment: says so, prints its report and ends by its
/// cells' verdicts; nothing is written (no session is added).
pub(crate) fn finished_compare(
    dir: &ExperimentDir,
    format: Format,
    columns: &Columns,
    strict: bool,
) -> anyhow::Result<()> {
    output::eprintln(&format!(
        "microshard: nothing to resume: every cell of {} is measured (nothing was touched; --remeasure invalid,degraded measures invalid cells and cells degraded by a busy host again)",
        dir.path().display()
    ));
    output::println(&report::render_dir(dir, format, false, columns)?)?;
    let verdicts = crate::experiment::compare::verdict_lines(dir)?;
    crate::cli::verdicts::verdicts_exit(verdicts, strict)
}

/// Prints a sweep's curve (one plain curve) or its seed-2 table (`--vary`, `--repeat`).
pub(crate) fn print_sweep(outcome: &sweep::SweepOutcome, columns: &Columns) -> anyhow::Result<()> {
    use report::sweep::{render_sweep, render_vary};
    if !outcome.is_single() {
        return Ok(output::println(&render_vary(
            outcome,
            Format::Table,
            columns,
        ))?);
    }
    for (_, curve) in &outcome.curves {
        output::println(&render_sweep(curve))?;
    }
    Ok(())
}
