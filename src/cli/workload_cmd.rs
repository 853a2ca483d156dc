//! `microshard load` and `microshard run`.

use std::path::PathBuf;

use clap::Args;

use crate::error::as_bad_input;
use crate::events::{Event, Events};
use crate::measure::ExporterKind;
use crate::output::Terminal;
use crate::runner::{ExecuteOptions, Phase};
use crate::workload::{Properties, prop};

/// Arguments shared by `load` and `run` (and produced by `microshard ycsb`).
#[derive(Debug, Default, Args)]
pub(crate) struct PhaseArgs {
    /// A property file (Java `.properties`, e.g. `workloads/S1`); repeatable, later files override earlier ones.
    #[arg(short = 'P', value_name = "FILE")]
    pub property_files: Vec<PathBuf>,
    /// A property override `name=value`; repeatable, applied after every file.
    #[arg(short = 'p', value_name = "NAME=VALUE")]
    pub properties: Vec<String>,
    /// Print YCSB's status line to stderr every `status.interval` seconds.
    #[arg(short = 's', long = "status")]
    pub status: bool,
    /// Number of client tasks (`threadcount`).
    #[arg(long, value_name = "N")]
    pub threads: Option<u64>,
    /// Target throughput for the whole run in ops/s (`target`); 0 = as fast as possible.
    #[arg(long, value_name = "OPS")]
    pub target: Option<u64>,
    /// The MongoDB connection string (`mongodb.url`).
    #[arg(long, value_name = "URI")]
    pub uri: Option<String>,
    /// A label glued before the status-line timestamp (`label`).
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Also write the result document (properties, server facts, measurements) to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Stop a run whose share of failed operations exceeds this fraction (0..1), checked every
    /// second after 100 operations (`microshard.maxerrorrate`).
    #[arg(long, value_name = "FRACTION")]
    pub max_error_rate: Option<String>,
    /// Set by `load --drop` ([`LoadArgs`]); `run` has no such flag.
    #[arg(skip)]
    pub drop: bool,
    /// Leave the first DURATION out of every measurement (`microshard.warmup`); with
    /// `maxexecutiontime` the run lasts warm-up + that bound.
    #[arg(long, value_name = "DURATION", value_parser = super::experiment_cmd::parse_duration)]
    pub warmup: Option<std::time::Duration>,
    /// Drive the phase with N client processes on this machine (`threadcount` is the total,
    /// split across them); their results are merged exactly into one.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub clients: u64,
    /// Internal: a client of `--clients` waits at the start barrier once connected.
    #[arg(long, hide = true)]
    pub barrier: bool,
    /// Exit 3 for a degraded result too (by default a degraded result is a caveat, exit 0).
    #[arg(long)]
    pub strict: bool,
    /// Not a flag of `load`/`run` (they drive a server that runs): refused with what to do.
    #[arg(long, hide = true)]
    pub standin: bool,
}

/// `load`'s arguments: those of every phase, and `--drop`.
#[derive(Debug, Default, Args)]
pub(crate) struct LoadArgs {
    #[command(flatten)]
    pub phase: PhaseArgs,
    /// Drop the benchmark database first, so the load does not collide with keys an earlier
    /// load left (the seed procedure drops it by hand).
    #[arg(long)]
    pub drop: bool,
}

impl LoadArgs {
    /// The phase's arguments with `--drop` in them.
    pub(crate) fn into_phase(self) -> PhaseArgs {
        PhaseArgs {
            drop: self.drop,
            ..self.phase
        }
    }
}

/// Builds the run's properties with YCSB's precedence: every `-P` file in order, then every `-p`,
/// then the flags (which name themselves as the origin in error messages).
pub(crate) fn build_properties(args: &PhaseArgs) -> anyhow::Result<Properties> {
    let flags = [
        (
            prop::THREADCOUNT.name,
            args.threads.map(|n| n.to_string()),
            "--threads",
        ),
        (
            prop::TARGET.name,
            args.target.map(|n| n.to_string()),
            "--target",
        ),
        (prop::MONGODB_URL.name, args.uri.clone(), "--uri"),
        (prop::LABEL.name, args.label.clone(), "--label"),
        (prop::STATUS.name, args.status.then(|| "true".into()), "-s"),
        (
            prop::WARMUP.name,
            args.warmup.map(|w| w.as_secs_f64().to_string()),
            "--warmup",
        ),
        (
            prop::MAXERRORRATE.name,
            args.max_error_rate.clone(),
            "--max-error-rate",
        ),
    ];
    Properties::from_command_line(&args.property_files, &args.properties, &flags)
        .map_err(as_bad_input)
}

/// Runs one phase of the workload: status lines on stderr with `-s`, YCSB's report on stdout.
pub(crate) async fn run(phase: Phase, args: PhaseArgs) -> anyhow::Result<()> {
    if args.standin {
        return Err(crate::error::bad_input(
            "--standin: load and run drive a server that already runs; start a stand-in with `microshard up single --standin`, then give --uri mongodb://localhost:27017/ycsb",
        ));
    }
    let props = build_properties(&args)?;
    crate::preflight::property_bounds(&props)?;
    // Output paths are proven before connecting: a run must not end by losing its result.
    if let Some(path) = &args.json {
        crate::preflight::writable_file("--json", path)?;
    }
    if let Some(path) = props.get(prop::EXPORTFILE.name) {
        let origin = props.origin_or_default(prop::EXPORTFILE.name);
        crate::preflight::writable_file(
            &format!("{origin}: {}", prop::EXPORTFILE.name),
            std::path::Path::new(path),
        )?;
    }
    // Only for a workload that will start: bad input stays one line.
    if let Some(line) = crate::runner::size_notice::notice(phase, &props)
        .filter(|_| !args.barrier)
        .filter(|_| crate::workload::CoreWorkload::from_properties(&props).is_ok())
    {
        crate::output::eprintln(&line);
    }
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let opts = ExecuteOptions {
        cancel: crate::signals::install(),
        status_lines: args.status,
        uri: None,
        events: Some(Terminal::sink()),
        drop_database: args.drop,
        banner: crate::runner::ycsb_banner(&argv),
        barrier: args.barrier,
        ..Default::default()
    };
    let doc = if args.clients > 1 {
        let doc = crate::runner::fanout::execute_clients(
            &props,
            phase,
            &opts,
            usize::try_from(args.clients).unwrap_or(usize::MAX),
        )
        .await?;
        print_merged(&doc, &props)?;
        doc
    } else {
        let executed = crate::runner::execute_with_report(&props, phase, &opts).await?;
        write_report(&render_report(&executed, &props), &props)?;
        executed.document
    };
    if let Some(path) = &args.json {
        write_json(path, &doc)?;
    }
    if opts.cancel.is_cancelled() {
        anyhow::bail!("interrupted: the report covers only the operations done before Ctrl-C");
    }
    crate::error::verdict_exit(&doc.validity, "the result", args.strict)
}

/// YCSB's report of a run as the exporter the properties name renders it, after the raw data
/// points when they go to stdout (YCSB prints them first).
fn render_report(executed: &crate::runner::Executed, props: &Properties) -> String {
    if let Some(raw) = &executed.raw_data
        && let Err(e) = crate::output::print(raw)
    {
        Terminal.event(Event::Warning(format!(
            "warning: cannot print the raw data points: {e}"
        )));
    }
    let (exporter, warning) = ExporterKind::for_class(props.text(&prop::EXPORTER));
    if let Some(w) = warning {
        Terminal.event(Event::Note(w));
    }
    exporter.render(&executed.run, &executed.overall, &executed.config)
}

/// Writes YCSB's report where YCSB writes it: to `exportfile` when set, else to stdout.
fn write_report(text: &str, props: &Properties) -> anyhow::Result<()> {
    match props.get(prop::EXPORTFILE.name) {
        Some(path) => std::fs::write(path, text).map_err(|e| {
            anyhow::anyhow!(
                "property {}: cannot write {path}: {e}",
                prop::EXPORTFILE.name
            )
        }),
        None if text.ends_with('\n') => Ok(crate::output::print(text)?),
        None => Ok(crate::output::println(text)?),
    }
}

/// Writes the result document to `--json`'s file.
pub(crate) fn write_json(
    path: &std::path::Path,
    doc: &crate::measure::ResultDocument,
) -> anyhow::Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(doc)?)
        .map_err(|e| anyhow::anyhow!("--json: cannot write {}: {e}", path.display()))
}

/// Prints YCSB's report of a merged result (the exporter the properties name).
pub(crate) fn print_merged(
    doc: &crate::measure::ResultDocument,
    props: &Properties,
) -> anyhow::Result<()> {
    let run = doc.to_run_measurements()?;
    let overall = crate::measure::Overall {
        runtime_ms: doc.runtime_ms,
        operations: doc.operations,
    };
    let config = crate::measure::MeasurementConfig::from_properties(props).map_err(as_bad_input)?;
    let (exporter, _) = ExporterKind::for_class(props.text(&prop::EXPORTER));
    let text = exporter.render(&run, &overall, &config);
    crate::output::println(text.trim_end())?;
    Ok(())
}
