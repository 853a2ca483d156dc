//! `microshard compare`, `sweep`, `report`, `diff`, `calibrate`, `demo`: arguments and dispatch.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::progress::ProgressDisplay;
use crate::error::bad_input;
use crate::events::Events;
use crate::experiment::calibrate;
use crate::experiment::checked::Checked;
use crate::experiment::compare::{self, MatrixOutcome, NewRun};
use crate::experiment::demo;
use crate::experiment::dry_run;
use crate::experiment::flags::{ServerFlags, WorkloadFlags};
use crate::experiment::lab::Session;
use crate::experiment::live::LiveLab;
use crate::experiment::model::{CompareCommand, DEFAULT_SCENARIOS, DEFAULT_TOPOLOGIES};
use crate::experiment::results::ExperimentDir;
use crate::experiment::sweep::{self, SweepCommand, SweepTarget};
use crate::output::{self, Terminal};
use crate::preflight;
use crate::props::flag_values::{list_item, parse_duration};
use crate::report::{self, Columns, Format};

/// Arguments of `compare`.
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    #[command(flatten)]
    pub asked: CompareCommand,
    /// Search every cell's ceiling under `--slo` instead of measuring it at one thread count;
    /// `--repeat` repeats every whole search, the topologies taking turns.
    #[arg(long, conflicts_with = "sweep")]
    pub ceiling: bool,
    /// How a `--ceiling` search steps.
    #[command(flatten)]
    pub search: crate::experiment::flags::SearchFlags,
    /// Where run directories are created.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Finish an interrupted experiment without measuring its finished cells again (cells not
    /// run because a member died are measured, their topology brought up again).
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// With --resume: also measure the invalid cells again, keeping each earlier attempt's file
    /// beside the new one (`cells/<topology>/earlier/`); the same as `--remeasure invalid`.
    #[arg(long, requires = "resume")]
    pub remeasure_invalid: bool,
    /// With --resume: also measure these cells again (`invalid`; `degraded`: those degraded by a
    /// busy host), keeping each earlier attempt's file beside the new one; comma-separated.
    #[arg(long, requires = "resume", value_enum, value_delimiter = ',')]
    pub remeasure: Vec<RemeasureWhat>,
    /// Exit 3 for a degraded result too (by default a degraded result is a caveat, exit 0, listed
    /// on the last stderr line).
    #[arg(long)]
    pub strict: bool,
    /// Check every input, print the plan (cells, sizes, how long it measures) and start nothing.
    #[arg(long, conflicts_with = "resume")]
    pub dry_run: bool,
    /// Report format printed at the end.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    #[command(flatten)]
    pub columns: ColumnArgs,
    /// No progress output.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `--wide` / `--columns`: which columns the terminal and Markdown tables show.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ColumnArgs {
    /// Show every column of the tables (terminal and Markdown; CSV, JSON and HTML always carry
    /// every column).
    #[arg(long)]
    pub wide: bool,
    /// Show these columns of the comparison table, comma-separated, from: scenario, topology,
    /// threads, ops, ratio, op, avg, p50, p95, p99, p999, errors, validity, spread, stddev,
    /// significant, cpu.
    #[arg(long, value_name = "LIST", conflicts_with = "wide")]
    pub columns: Option<String>,
}

impl ColumnArgs {
    /// The columns asked for; an unknown name is bad input (exit 2), before anything starts.
    pub(crate) fn resolve(&self) -> anyhow::Result<Columns> {
        Columns::chosen(self.wide, self.columns.as_deref()).map_err(bad_input)
    }
}

/// Arguments of `sweep`: its record (the servers and the workload flags are `compare`'s, said
/// of its points), and how the command line shows it.
#[derive(Debug, Args)]
pub(crate) struct SweepArgs {
    #[command(flatten)]
    pub asked: SweepCommand,
    /// Check every input, print the plan (curves, points, sizes, how long it measures) and start nothing.
    #[arg(long, conflicts_with = "resume")]
    pub dry_run: bool,
    /// Exit 3 for a degraded point too (by default a degraded result is a caveat, exit 0).
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub columns: ColumnArgs,
    /// No progress output.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Arguments of `report`.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// The experiment: its directory, its name (`compare`: the newest of that name under
    /// results/), `latest` or `previous` [default: the newest, `results/latest`].
    #[arg(default_value = "results/latest", hide_default_value = true)]
    pub dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    #[command(flatten)]
    pub columns: ColumnArgs,
    /// Also (re)write the report files and charts into the directory.
    #[arg(long)]
    pub write: bool,
    /// Replace this machine's details in the printed report (host name, member, binary, run and
    /// home directories) by placeholders, to publish it.
    #[arg(long)]
    pub redact_paths: bool,
    /// Draw every cell's timeline (operations per second, outages and stalls shaded), not only
    /// those of degraded or invalid cells: beside each cell file with --write, on the page with
    /// --format html.
    #[arg(long)]
    pub timelines: bool,
}

/// Arguments of `diff`.
#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The earlier experiment: its directory, its name (`compare`: the newest of that name
    /// under results/), `latest` or `previous`.
    pub a: PathBuf,
    /// The later experiment, named the same ways [default: the newest, `results/latest`].
    #[arg(default_value = "results/latest", hide_default_value = true)]
    pub b: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

/// Arguments of `calibrate`.
#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    #[command(flatten)]
    pub asked: calibrate::CalibrateCommand,
    /// No progress output.
    #[arg(short, long)]
    pub quiet: bool,
}

/// What `--remeasure` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum RemeasureWhat {
    /// Invalid cells.
    Invalid,
    /// Cells degraded by a busy host.
    Degraded,
}

impl CompareArgs {
    /// The record the flags ask for, its search settled from `--ceiling` and `--slo`, checked.
    fn asked(&self) -> anyhow::Result<CompareCommand> {
        let mut asked = self.asked.clone();
        asked.ceiling = self.search.settled(self.ceiling, asked.workload.full)?;
        asked.checked()
    }

    /// `--remeasure` and `--remeasure-invalid` as one value.
    fn remeasure(&self) -> crate::experiment::model::Remeasure {
        crate::experiment::model::Remeasure {
            invalid: self.remeasure_invalid || self.remeasure.contains(&RemeasureWhat::Invalid),
            degraded: self.remeasure.contains(&RemeasureWhat::Degraded),
        }
    }
}

/// Arguments of `demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Where the run directory is created.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Length of each run-phase cell.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Records loaded per topology.
    #[arg(long, default_value_t = demo::DEMO_RECORDS, value_parser = clap::value_parser!(u64).range(1..))]
    pub records: u64,
    /// Stand-in service time per operation, µs (the capacity model).
    #[arg(long, default_value_t = demo::DEMO_SERVICE_TIME_US)]
    pub service_time_us: u64,
    /// Stand-in workers per mongod (capacity = workers × 10⁶ / service time ops/s).
    #[arg(long, default_value_t = demo::DEMO_WORKERS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub workers: u32,
    /// Client threads.
    #[arg(long, default_value_t = demo::DEMO_THREADS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: u32,
    /// Search every cell's ceiling under `--slo` (the main job's figure) instead of measuring
    /// it at `--threads`.
    #[arg(long)]
    pub ceiling: bool,
    /// How a `--ceiling` search steps.
    #[command(flatten)]
    pub search: crate::experiment::flags::SearchFlags,
    /// Whole searches or repetitions per cell.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// Topologies, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = list_item, default_value = DEFAULT_TOPOLOGIES)]
    pub topologies: Vec<String>,
    /// Scenarios, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = list_item, default_value = DEFAULT_SCENARIOS)]
    pub scenarios: Vec<String>,
    /// Report format printed at the end.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    #[command(flatten)]
    pub columns: ColumnArgs,
    /// No progress output.
    #[arg(short, long)]
    pub quiet: bool,
    /// First port of every topology (default: a free range below the kernel's ephemeral ports).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub base_port: Option<u16>,
    /// Exit 3 for a degraded result too (by default a degraded result is a caveat, exit 0).
    #[arg(long)]
    pub strict: bool,
}

fn finish_matrix(
    dir: &ExperimentDir,
    outcome: &MatrixOutcome,
    format: Format,
    columns: &Columns,
    strict: bool,
) -> anyhow::Result<()> {
    report::write_reports(dir)?;
    let mut text = report::render_dir(dir, format, false, columns)?;
    if format == Format::Table {
        // Other formats keep stdout one document; the tables are in the run directory.
        let under = report::sweep::under_comparison(dir, &outcome.varied, columns);
        text.push_str(&under);
    }
    matrix_exit(dir, outcome, &text, strict)
}

/// Prints `text` and ends a measured experiment: interrupted or failed first (a reader that went
/// away, `| head`, must not turn them into a success), then its cells' verdicts (exit 3 for an
/// invalid cell or one not run).
pub(crate) fn matrix_exit(
    dir: &ExperimentDir,
    outcome: &MatrixOutcome,
    text: &str,
    strict: bool,
) -> anyhow::Result<()> {
    let printed = output::println(text);
    output::eprintln(&format!(
        "microshard: results, reports and charts in {}",
        dir.path().display()
    ));
    let verdicts = outcome.verdicts(dir)?;
    printed?;
    crate::cli::verdicts::verdicts_exit(verdicts, strict)
}

/// How a `compare` begins: a record read back by `--resume`, or a new one from the flags.
// One value per command, moved once: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Start {
    Resumed(compare::Prepared),
    New(CompareCommand),
    /// A resume with nothing left to measure.
    Finished(ExperimentDir),
}

/// What `compare` starts from, every flag checked before the run directory is made or a
/// topology started (`docs/reliability.md` §1); on resume the stored record decides
/// (`compare::resume`).
fn starting_point(args: &CompareArgs) -> anyhow::Result<Start> {
    let remeasure = args.remeasure();
    let asked = args.asked()?;
    let Some(path) = &args.resume else {
        crate::writable::dir("--out", &args.out)?;
        let mut command = asked;
        command.servers.take_standin(false)?;
        return Ok(Start::New(command));
    };
    let dir = crate::experiment::results::resumable(path)?;
    if super::resume_cmd::nothing_to_resume(&dir, remeasure)? {
        return Ok(Start::Finished(dir));
    }
    let mut given = asked;
    given.servers.take_standin(true)?;
    Ok(Start::Resumed(compare::resume(path, &given, remeasure)?))
}

/// Runs an experiment.
pub(crate) async fn compare(args: CompareArgs) -> anyhow::Result<()> {
    let columns = args.columns.resolve()?;
    let cancel = crate::signals::install();
    let progress = ProgressDisplay::auto(args.quiet);
    let start = match starting_point(&args)? {
        Start::Finished(dir) => {
            return super::resume_cmd::finished_compare(&dir, args.format, &columns, args.strict);
        }
        start => start,
    };
    let specs = check_servers(&args, &start).await?;
    let checked = match start {
        Start::New(command) => {
            let checked = Checked::new(command, specs);
            if args.dry_run {
                output::println(&dry_run::new_compare_plan(&checked, &args.out)?)?;
                return Ok(());
            }
            let prepared = new_run(&args, checked.record(), &cancel, &progress).await?;
            checked.with(prepared)
        }
        Start::Resumed(prepared) => Checked::new(prepared, specs),
        Start::Finished(_) => return Ok(()),
    };
    let (mut lab, _demo_links) = LiveLab::for_compare(&checked)?;
    lab.events = progress.events();
    let mut session = Session::new(&mut lab, &cancel, &progress);
    let (dir, outcome) = compare::compare_with(&mut session, checked.into_record()).await?;
    finish_matrix(&dir, &outcome, args.format, &columns, args.strict)
}

/// The servers check of a `compare` (`preflight::servers`): its topologies as loaded.
async fn check_servers(
    args: &CompareArgs,
    start: &Start,
) -> anyhow::Result<Vec<crate::topology::Loaded>> {
    let (command, relink) = match start {
        Start::Resumed(p) => (&p.config.command, p.relinks_standin()),
        Start::New(command) => (command, false),
        Start::Finished(_) => return Ok(Vec::new()),
    };
    let pulls = (!args.quiet).then_some(&Terminal as &dyn Events);
    let servers = preflight::Servers::of_compare(command, pulls)
        .linked_later(relink)
        .dry_run(args.dry_run)
        .resumed(!matches!(start, Start::New(_)));
    preflight::servers(&servers).await
}

/// A new experiment's run directory and record, this machine's client ceiling measured first.
async fn new_run(
    args: &CompareArgs,
    command: &CompareCommand,
    cancel: &tokio_util::sync::CancellationToken,
    progress: &crate::experiment::progress::Progress,
) -> anyhow::Result<compare::Prepared> {
    let threads = command.threads.unwrap_or(calibrate::SCENARIO_THREADS);
    let overrides = &command.workload.overrides();
    let client_ceiling =
        calibrate::machine_ceiling(&args.out, threads, overrides, cancel, progress).await;
    let at = NewRun {
        client_ceiling,
        results_root: args.out.clone(),
        workload_dir: None,
    };
    compare::create(command, &at)
}

/// Runs a thread sweep, or finishes one (`--resume`).
pub(crate) async fn sweep(args: SweepArgs) -> anyhow::Result<()> {
    let columns = args.columns.resolve()?;
    let cancel = crate::signals::install();
    let progress = ProgressDisplay::auto(args.quiet);
    // The command line's sweep, checked, or with `--resume` the stored one (and its directory).
    let (cfg, resumed) = match args.asked.resume.clone() {
        Some(path) => {
            let (dir, cfg) = super::resume_cmd::reopen_sweep(&path, args.asked)?;
            (cfg, Some(dir))
        }
        None => {
            let mut cfg = args.asked.checked()?;
            crate::writable::dir("--out", &cfg.results_root)?;
            cfg.servers.take_standin(false)?;
            (cfg, None)
        }
    };
    // The workload and every curve, checked before the servers' check links anything.
    let resolved = sweep::resolve(&cfg)?;
    if let Some(dir) = resumed.as_ref()
        && sweep::remaining_curves(dir, &cfg, &resolved) == 0
    {
        let outcome = sweep::stored_outcome(dir, &cfg, &resolved);
        return super::resume_cmd::finished_sweep(dir, &outcome, &columns, args.strict);
    }
    let specs = target_preflight(&cfg.target, &cfg.servers, args.quiet, args.dry_run).await?;
    let checked = Checked::new(cfg, specs);
    let cfg = checked.record();
    if args.dry_run {
        output::println(&dry_run::sweep_plan(cfg, &resolved))?;
        return Ok(());
    }
    let mut lab = LiveLab::of(&checked);
    lab.events = progress.events();
    let mut session = Session::new(&mut lab, &cancel, &progress);
    let swept = match resumed {
        Some(dir) => sweep::resume_with(&mut session, cfg, &resolved, dir).await?,
        None => sweep::sweep_with(&mut session, cfg, &resolved).await?,
    };
    // The seed-2 table first: the page written with the reports shows it (`vary.json`).
    if !swept.outcome.is_single() {
        report::sweep::write_vary(&swept.dir, &swept.outcome, &swept.label, "vary")?;
    }
    report::write_reports(&swept.dir)?;
    if cancel.is_cancelled() {
        return Err(swept.interrupted());
    }
    super::resume_cmd::print_sweep(&swept.outcome, &columns)?;
    output::eprintln(&format!(
        "microshard: sweep and chart in {}",
        swept.dir.path().display()
    ));
    let verdicts = swept.outcome.verdict_lines();
    crate::cli::verdicts::verdicts_exit(verdicts, args.strict)
}

/// Checks the servers of a `sweep` or a `ceiling` before anything starts: the topology's
/// binaries, ports and backend, or that the server at `--uri` answers. Returns the topology as
/// loaded (none for `--uri`).
pub(crate) async fn target_preflight(
    target: &SweepTarget,
    servers: &ServerFlags,
    quiet: bool,
    dry_run: bool,
) -> anyhow::Result<Vec<crate::topology::Loaded>> {
    if let SweepTarget::Uri(uri) = target {
        return crate::backend::existing::cluster_answers("--uri", uri)
            .await
            .map(|()| vec![])
            .map_err(Into::into);
    }
    let pulls = (!quiet).then_some(&Terminal as &dyn Events);
    let servers = preflight::Servers::of("--topology", servers, target.topologies(), pulls);
    preflight::servers(&servers.dry_run(dry_run)).await
}

/// Prints an experiment's table, or a standalone ceiling search's.
pub(crate) async fn report(args: ReportArgs) -> anyhow::Result<()> {
    let columns = args.columns.resolve()?;
    if report::ceiling_dir::is_ceiling_dir(&args.dir) {
        return report_search(&args);
    }
    let dir = ExperimentDir::find(&args.dir).map_err(crate::error::as_bad_input)?;
    crate::experiment::results::known_schema(&dir)?;
    for damaged in crate::experiment::results::damaged_cells(&dir) {
        output::eprintln(&format!(
            "microshard: warning: {damaged}; its cell is shown as not measured"
        ));
    }
    if args.write {
        crate::writable::dir("report --write", dir.path())?;
        report::check_replaceable(&dir).map_err(|e| bad_input(format!("report --write {e}")))?;
        report::write_reports(&dir)?;
        if args.timelines {
            report::write_timelines(&dir, &dir.cells()?, true)?;
        }
    }
    let sweeps = dir.sweeps();
    let sweep_only = !sweeps.is_empty() && dir.cells()?.is_empty();
    if sweep_only && args.format != Format::Html {
        // In the format asked for; a --vary sweep as its seed-2 table.
        output::println(&report::sweep::render_sweep_dir(
            &dir,
            args.format,
            &columns,
        )?)?;
        return Ok(());
    }
    let text = report::render_dir(&dir, args.format, args.timelines, &columns)?;
    let text = match args.redact_paths {
        true => report::redact_paths::Redaction::of(dir.path(), &dir.config()?, &dir.cells()?)
            .apply(&text),
        false => text,
    };
    output::println(&text)?;
    if args.format == Format::Table {
        for (_, s) in &sweeps {
            output::println(&report::sweep::render_sweep(s))?;
        }
        if let Some(line) = crate::experiment::knee_caveats::cells_at_knees(&sweeps) {
            output::println(&line)?;
        }
    }
    Ok(())
}

/// Prints a standalone ceiling search's report in the format asked for (and writes its files
/// with `--write`).
fn report_search(args: &ReportArgs) -> anyhow::Result<()> {
    let records = report::ceiling_dir::read(&args.dir).map_err(crate::error::as_bad_input)?;
    if args.write {
        crate::writable::dir("report --write", &args.dir)?;
        let dir = ExperimentDir::of_search(&args.dir);
        report::ceiling_dir::write_files(&dir, &records)?;
    }
    output::println(report::ceiling_dir::render(&records, args.format)?.trim_end())?;
    Ok(())
}

/// Compares two experiments.
pub(crate) async fn diff(args: DiffArgs) -> anyhow::Result<()> {
    let a = ExperimentDir::find(&args.a).map_err(crate::error::as_bad_input)?;
    let b = ExperimentDir::find(&args.b).map_err(crate::error::as_bad_input)?;
    crate::experiment::results::known_schema(&a)?;
    crate::experiment::results::known_schema(&b)?;
    if let (Ok(ca), Ok(cb)) = (a.config(), b.config()) {
        for m in report::diff_checks::mismatches(&ca, &cb) {
            output::eprintln(&format!(
                "microshard: warning: {m}; their ratio measures that too"
            ));
        }
    }
    output::println(&report::diff::render(
        &report::diff::diff_of(&a, &b)?,
        args.format,
    ))?;
    Ok(())
}

/// Measures the client's ceiling.
pub(crate) async fn calibrate(args: CalibrateArgs) -> anyhow::Result<()> {
    let cancel = crate::signals::install();
    let progress = ProgressDisplay::auto(args.quiet);
    crate::writable::dir("--out", &args.asked.results_root)?;
    let outcome = calibrate::calibrate(&args.asked, &cancel, &progress).await?;
    output::println(&outcome.render())?;
    Ok(())
}

impl DemoArgs {
    /// The `compare` record the demo runs: `compare`'s defaults with the demo's names, sizes,
    /// stand-in capacity model and ports (checked, nothing created).
    fn command(&self) -> anyhow::Result<CompareCommand> {
        if self.service_time_us > crate::standin::MAX_SERVICE_TIME_US {
            return Err(bad_input(format!(
                "--service-time-us {}: at most {} (10 s per operation)",
                self.service_time_us,
                crate::standin::MAX_SERVICE_TIME_US
            )));
        }
        let defaults = CompareCommand::default();
        let command = CompareCommand {
            name: "demo".into(),
            topologies: self.topologies.clone(),
            scenarios: self.scenarios.clone(),
            baseline: String::new(),
            duration_s: Some(self.duration.as_secs().max(1)),
            threads: Some(self.threads),
            repeat: self.repeat,
            ceiling: self.search.settled(self.ceiling, false)?,
            workload: WorkloadFlags {
                records: Some(self.records),
                ..defaults.workload.clone()
            },
            servers: ServerFlags {
                mongod_args: demo::capacity_args(self.service_time_us, self.workers),
                base_port: self.base_port,
                ..defaults.servers.clone()
            },
            ..defaults
        };
        command.checked()
    }
}

/// Runs the stand-in demo.
pub(crate) async fn demo(args: DemoArgs) -> anyhow::Result<()> {
    let columns = args.columns.resolve()?;
    let cancel = crate::signals::install();
    let progress = ProgressDisplay::auto(args.quiet);
    let command = args.command()?;
    crate::writable::dir("--out", &args.out)?;
    let pulls = (!args.quiet).then_some(&Terminal as &dyn Events);
    let specs = preflight::servers(&preflight::Servers::of_demo(&command, pulls)).await?;
    let checked = Checked::new(command, specs);
    progress.line(&format!(
        "microshard demo: stand-in servers (not MongoDB) with a capacity of {} workers × {} µs per operation = {:.0} ops/s per mongod",
        args.workers,
        args.service_time_us,
        f64::from(args.workers) * 1e6 / args.service_time_us.max(1) as f64
    ));
    let (dir, outcome) = demo::demo(checked, &args.out, &cancel, &progress).await?;
    finish_matrix(&dir, &outcome, args.format, &columns, args.strict)
}
