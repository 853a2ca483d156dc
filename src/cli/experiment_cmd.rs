//! `microshard compare`, `sweep`, `report`, `diff`, `calibrate`, `demo`: arguments and dispatch.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::progress::ProgressDisplay;
use crate::error::bad_input;
use crate::events::Events;
use crate::experiment::calibrate;
use crate::experiment::compare::{self, MatrixOutcome, NewRun};
use crate::experiment::demo;
use crate::experiment::dry_run;
use crate::experiment::flags::{ServerFlags, WorkloadFlags};
use crate::experiment::live::LiveLab;
use crate::experiment::model::{
    CompareCommand, DEFAULT_SCENARIOS, DEFAULT_SWEEP_THREADS, DEFAULT_TOPOLOGIES,
};
use crate::experiment::results::ExperimentDir;
use crate::experiment::sweep::{self, SweepConfig, SweepTarget};
use crate::output::{self, Terminal};
use crate::preflight;
use crate::props::flag_values::{list_item, parse_duration, parse_threads};
use crate::report::{self, Columns, Format};

/// Arguments of `compare`.
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    #[command(flatten)]
    pub asked: CompareCommand,
    /// Where run directories are created.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Finish an interrupted experiment without measuring its finished cells again (cells not
    /// run because a member died are measured, their topology brought up again).
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// With --resume: also measure the invalid cells again, keeping each earlier attempt's file
    /// beside the new one (`cells/<topology>/earlier/`).
    #[arg(long, requires = "resume")]
    pub remeasure_invalid: bool,
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

/// Arguments of `sweep`: the servers and the workload flags are `compare`'s, said of its points.
#[derive(Debug, Args)]
#[command(
    mut_arg("backend", |a| a.help("Backend for `--topology`: process, docker or existing")),
    mut_arg("overrides", |a| a.help("Set a workload property (repeatable)")),
    mut_arg("warmup", |a| a.help("Leave the first DURATION of every point out of its measurement (`microshard.warmup`)")),
    mut_arg("clients", |a| a.help("Drive every point with N client processes (`threadcount` split across them)")),
    mut_arg("full", |a| a.help("Use the file's record count instead of the laptop scale")),
)]
pub(crate) struct SweepArgs {
    /// Workload file (or a name in `workloads/`).
    #[arg(short = 'P', value_name = "FILE", required_unless_present = "resume")]
    pub workload: Option<String>,
    /// Finish a sweep cut short (Ctrl-C, a dead member): its stored request is measured again
    /// without the curves and points it has (give --standin/--bin-dir, --base-port, --uri or -p
    /// again to change those).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["dry_run", "topology", "vary"])]
    pub resume: Option<PathBuf>,
    /// Thread counts, comma-separated.
    #[arg(long, default_value = DEFAULT_SWEEP_THREADS, value_parser = parse_threads)]
    pub threads: ::std::vec::Vec<u32>,
    /// Bring this topology up for the sweep and tear it down after.
    #[arg(long, conflicts_with = "uri")]
    pub topology: Option<String>,
    /// Sweep against a server that already runs.
    #[arg(long)]
    pub uri: Option<String>,
    #[command(flatten)]
    pub servers: ServerFlags,
    /// Length of each thread count's run.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub duration: Duration,
    #[command(flatten)]
    pub workload_flags: WorkloadFlags,
    /// Do not load: the data is already there.
    #[arg(long)]
    pub no_load: bool,
    /// One curve per value of a property, e.g. `readbatchsize=1,10,20` (ids per query).
    #[arg(long, value_name = "PROPERTY=V1,V2,...")]
    pub vary: Option<String>,
    /// Curves per value, to show the spread (the seed measured three).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Where the run directory is created.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Check every input, print the plan (curves, points, sizes, how long it measures) and start nothing.
    #[arg(long)]
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
        text.push_str(&report::sweep::under_comparison(
            dir,
            &outcome.varied,
            columns,
        ));
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
    crate::cli::verdicts::verdicts_exit(verdicts.invalid, verdicts.degraded, strict)
}

/// How a `compare` begins: a record read back by `--resume`, or a new one from the flags.
// One value per command, moved once: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Start {
    Resumed(compare::Prepared),
    New(CompareCommand),
}

impl Start {
    /// Names the record's topologies from the specs the servers check loaded (a resumed record
    /// keeps the names it stored).
    fn name_topologies(&mut self, specs: &[crate::topology::TopologySpec]) {
        match self {
            Start::Resumed(p) => p.config.command.name_topologies(specs),
            Start::New(command) => command.name_topologies(specs),
        }
    }
}

/// Runs an experiment.
pub(crate) async fn compare(args: CompareArgs) -> anyhow::Result<()> {
    let columns = args.columns.resolve()?;
    let cancel = crate::signals::install();
    let progress = ProgressDisplay::auto(args.quiet);
    // Everything is checked before the run directory is made or a topology started
    // (`docs/reliability.md` §1). On resume the stored record decides (`compare::resume`).
    let asked = args.asked.checked()?;
    let mut start = match &args.resume {
        Some(path) => {
            let dir = preflight::resumable(path)?;
            if super::resume_cmd::nothing_to_resume(&dir, args.remeasure_invalid)? {
                return super::resume_cmd::finished_compare(
                    &dir,
                    args.format,
                    &columns,
                    args.strict,
                );
            }
            let mut servers = asked.servers.clone();
            let flags = compare::ResumeFlags {
                bin_dir: servers.link_standin()?,
                image: asked.image.clone(),
                base_port: servers.base_port,
                overrides: asked.workload.overrides.clone(),
                remeasure_invalid: args.remeasure_invalid,
            };
            Start::Resumed(compare::resume(path, &flags)?)
        }
        None => {
            preflight::writable_dir("--out", &args.out)?;
            let mut command = asked;
            command.servers.standin_to_link()?;
            Start::New(command)
        }
    };
    let (command, relink) = match &start {
        Start::Resumed(p) => (&p.config.command, p.relinks_standin()),
        Start::New(command) => (command, false),
    };
    let specs = preflight::servers(&preflight::Servers {
        label: "--topologies",
        backend: command.servers.backend,
        topologies: &command.topologies,
        bin_dir: command.servers.bin_dir.as_deref().filter(|_| !relink),
        extra_mongod_args: &command.servers.mongod_args,
        image: command.image.as_deref(),
        base_port: command.servers.base_port,
        binaries_linked_later: relink,
        pulls: (!args.quiet).then_some(&Terminal as &dyn Events),
        dry_run: args.dry_run,
        scenarios: matches!(start, Start::New(_)).then_some(command),
    })
    .await?;
    start.name_topologies(&specs);
    if let (true, Start::New(command)) = (args.dry_run, &start) {
        output::println(&dry_run::new_compare_plan(command, &specs, &args.out)?)?;
        return Ok(());
    }
    let prepared = match start {
        Start::Resumed(prepared) => prepared,
        Start::New(command) => compare::create(
            &command,
            &NewRun {
                client_ceiling: calibrate::machine_ceiling(
                    &args.out,
                    command.threads.unwrap_or(calibrate::SCENARIO_THREADS),
                    &cancel,
                    &progress,
                )
                .await,
                results_root: args.out.clone(),
                workload_dir: None,
            },
        )?,
    };
    let (mut lab, _demo_links) = LiveLab::for_compare(&prepared, specs)?;
    lab.events = progress.events();
    let (dir, outcome) = compare::compare_with(&mut lab, prepared, &cancel, &progress).await?;
    finish_matrix(&dir, &outcome, args.format, &columns, args.strict)
}

/// Runs a thread sweep, or finishes one (`--resume`).
pub(crate) async fn sweep(args: SweepArgs) -> anyhow::Result<()> {
    let columns = args.columns.resolve()?;
    let cancel = crate::signals::install();
    let progress = ProgressDisplay::auto(args.quiet);
    let (mut cfg, resumed) = args.request()?;
    if let Some(dir) = resumed.as_ref()
        && sweep::remaining_curves(dir, &cfg)? == 0
    {
        return super::resume_cmd::finished_sweep(dir, &cfg, &columns, args.strict);
    }
    let servers = super::resume_cmd::server_flags(&cfg);
    let specs = target_preflight(
        &cfg.target,
        &servers,
        cfg.servers.bin_dir.as_deref(),
        args.quiet,
        args.dry_run,
    )
    .await?;
    cfg.topology_name = cfg.topology_name.or(cfg.target.loaded_name(&specs));
    if args.dry_run {
        let resolved = sweep::resolve(&cfg)?;
        output::println(&dry_run::sweep_plan(&cfg, &resolved, &cfg.target.shown()))?;
        return Ok(());
    }
    let mut lab = LiveLab::new(
        cfg.backend,
        cfg.servers.bin_dir.clone(),
        cfg.target.topologies(),
        specs,
    );
    lab.events = progress.events();
    lab.clients = cfg.clients;
    let swept = match resumed {
        Some(dir) => sweep::resume_with(&mut lab, &cfg, dir, &cancel, &progress).await?,
        None => sweep::sweep_with(&mut lab, &cfg, &cancel, &progress).await?,
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
    crate::cli::verdicts::verdicts_exit(verdicts.invalid, verdicts.degraded, args.strict)
}

impl SweepArgs {
    /// The sweep to measure: the command line's, or with `--resume` the stored one (and its
    /// directory).
    fn request(&self) -> anyhow::Result<(SweepConfig, Option<ExperimentDir>)> {
        let Some(path) = &self.resume else {
            return Ok((self.config()?, None));
        };
        let (dir, cfg) = super::resume_cmd::reopen_sweep(
            path,
            &self.servers,
            self.uri.clone(),
            self.workload_flags.overrides(),
        )?;
        Ok((cfg, Some(dir)))
    }

    /// The sweep this command line asks for, with the binaries directory (`--bin-dir` made
    /// absolute, or `--standin`'s links); each bad flag is one line naming it (exit 2).
    fn config(&self) -> anyhow::Result<SweepConfig> {
        let target = match (&self.topology, &self.uri) {
            (Some(t), None) => SweepTarget::Topology(t.clone()),
            (None, Some(u)) => SweepTarget::Uri(u.clone()),
            _ => return Err(bad_input("sweep: give --topology NAME or --uri URI")),
        };
        let vary = self.vary.as_deref().map(sweep::Vary::parse).transpose()?;
        preflight::writable_dir("--out", &self.out)?;
        let bin_dir = self.servers.clone().checked()?.standin_to_link()?;
        let cfg = SweepConfig {
            workload: self.workload.clone().unwrap_or_default(),
            threads: self.threads.clone(),
            target,
            duration: self.duration,
            overrides: self.workload_flags.overrides(),
            full: self.workload_flags.full,
            records: self.workload_flags.laptop_records(),
            no_load: self.no_load,
            results_root: self.out.clone(),
            backend: self.servers.backend,
            vary,
            repeat: self.repeat,
            clients: self.workload_flags.clients(),
            servers: sweep::SweepServers {
                bin_dir,
                mongod_args: self.servers.mongod_args.clone(),
                base_port: self.servers.base_port,
            },
            topology_name: None,
        };
        Ok(cfg)
    }
}

/// Checks the servers of a `sweep` or a `ceiling` before anything starts: the topology's
/// binaries, ports and backend, or that the server at `--uri` answers. Returns the topology as
/// loaded (none for `--uri`).
pub(crate) async fn target_preflight(
    target: &SweepTarget,
    servers: &ServerFlags,
    bin_dir: Option<&std::path::Path>,
    quiet: bool,
    dry_run: bool,
) -> anyhow::Result<Vec<crate::topology::TopologySpec>> {
    if let SweepTarget::Uri(uri) = target {
        return preflight::cluster_answers("--uri", uri)
            .await
            .map(|()| vec![]);
    }
    preflight::servers(&preflight::Servers {
        label: "--topology",
        backend: servers.backend,
        topologies: target.topologies(),
        bin_dir,
        extra_mongod_args: &servers.mongod_args,
        base_port: servers.base_port,
        pulls: (!quiet).then_some(&Terminal as &dyn Events),
        dry_run,
        ..Default::default()
    })
    .await
}

/// Prints an experiment's table.
pub(crate) async fn report(args: ReportArgs) -> anyhow::Result<()> {
    let columns = args.columns.resolve()?;
    let dir = ExperimentDir::find(&args.dir).map_err(crate::error::as_bad_input)?;
    preflight::known_schema(&dir)?;
    for damaged in preflight::damaged_cells(&dir) {
        output::eprintln(&format!(
            "microshard: warning: {damaged}; its cell is shown as not measured"
        ));
    }
    if args.write {
        preflight::writable_dir("report --write", dir.path())?;
        report::check_replaceable(&dir).map_err(|e| bad_input(format!("report --write {e}")))?;
        report::write_reports(&dir)?;
        if args.timelines {
            report::write_timelines(&dir, &dir.cells()?, true)?;
        }
    }
    let sweeps = dir.sweeps();
    let sweep_only = !sweeps.is_empty() && dir.cells()?.is_empty();
    if sweep_only && args.format != Format::Html {
        // In the format asked for; a --vary sweep as its seed-2 table (NEWCOMER-2 #25).
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

/// Compares two experiments.
pub(crate) async fn diff(args: DiffArgs) -> anyhow::Result<()> {
    let a = ExperimentDir::find(&args.a).map_err(crate::error::as_bad_input)?;
    let b = ExperimentDir::find(&args.b).map_err(crate::error::as_bad_input)?;
    preflight::known_schema(&a)?;
    preflight::known_schema(&b)?;
    if let (Ok(ca), Ok(cb)) = (a.config(), b.config()) {
        for m in report::diff_checks::mismatches(&ca, &cb) {
            output::eprintln(&format!(
                "microshard: warning: {m}; their ratio measures that too"
            ));
        }
    }
    output::println(&report::diff::diff_dirs(&a, &b, args.format)?)?;
    Ok(())
}

/// Measures the client's ceiling.
pub(crate) async fn calibrate(args: CalibrateArgs) -> anyhow::Result<()> {
    let cancel = crate::signals::install();
    let progress = ProgressDisplay::auto(args.quiet);
    preflight::writable_dir("--out", &args.asked.results_root)?;
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
    preflight::writable_dir("--out", &args.out)?;
    let specs = preflight::servers(&preflight::Servers {
        label: "--topologies",
        backend: crate::topology::BackendKind::Process,
        topologies: &command.topologies,
        extra_mongod_args: &command.servers.mongod_args,
        binaries_linked_later: true,
        pulls: (!args.quiet).then_some(&Terminal as &dyn Events),
        scenarios: Some(&command),
        ..Default::default()
    })
    .await?;
    progress.line(&format!(
        "microshard demo: stand-in servers (not MongoDB) with a capacity of {} workers × {} µs per operation = {:.0} ops/s per mongod",
        args.workers,
        args.service_time_us,
        f64::from(args.workers) * 1e6 / args.service_time_us.max(1) as f64
    ));
    let (dir, outcome) = demo::demo(&command, specs, &args.out, &cancel, &progress).await?;
    finish_matrix(&dir, &outcome, args.format, &columns, args.strict)
}
