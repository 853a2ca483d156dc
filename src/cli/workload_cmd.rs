//! `microshard load` and `microshard run`.

use crate::events::{Event, Events};
use crate::measure::ExporterKind;
use crate::output::Terminal;
use crate::runner::command_line::{PhaseArgs, build_properties};
use crate::runner::{ClientLauncher, ExecuteOptions, Phase, YcsbReport};
use crate::workload::{Properties, prop};

/// Runs one phase of the workload: status lines on stderr with `-s`, YCSB's report on stdout.
pub(crate) async fn run(phase: Phase, args: PhaseArgs) -> anyhow::Result<()> {
    if args.standin {
        return Err(crate::error::bad_input(
            "--standin: load and run drive a server that already runs; start a stand-in with `microshard up single --standin`, then give --uri mongodb://localhost:27017/ycsb",
        ));
    }
    let props = build_properties(&args)?;
    props
        .periods_bounded()
        .map_err(crate::error::as_bad_input)?;
    // Output paths are proven before connecting: a run must not end by losing its result.
    if let Some(path) = &args.json {
        crate::writable::file("--json", path)?;
    }
    if let Some(path) = props.get(prop::EXPORTFILE.name) {
        let origin = props.origin_or_default(prop::EXPORTFILE.name);
        crate::writable::file(
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
        status_lines: args.status_line,
        uri: None,
        events: Some(Terminal::sink()),
        drop_database: args.drop,
        banner: crate::runner::ycsb_banner(&argv),
        barrier: args.barrier,
        clients: ClientLauncher::Local {
            count: usize::try_from(args.clients).unwrap_or(usize::MAX),
        },
        ..Default::default()
    };
    let executed = crate::runner::execute(&props, phase, &opts).await?;
    match &executed.report {
        Some(report) => write_report(&render_report(report, &props), &props)?,
        None => print_merged(&executed.document, &props)?,
    }
    let doc = executed.document;
    if let Some(path) = &args.json {
        write_json(path, &doc)?;
    }
    if opts.cancel.is_cancelled() {
        return Err(crate::error::interrupted(
            "the report covers only the operations done before Ctrl-C",
        ));
    }
    crate::cli::verdicts::verdict_exit(&doc.validity, "the result", args.strict)
}

/// YCSB's report of a run as the exporter the properties name renders it, after the raw data
/// points when they go to stdout (YCSB prints them first).
fn render_report(report: &YcsbReport, props: &Properties) -> String {
    if let Some(raw) = &report.raw_data
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
    exporter.render(&report.run, &report.overall, &report.config)
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
    doc: &crate::measure::RunDocument,
) -> anyhow::Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(doc)?)
        .map_err(|e| anyhow::anyhow!("--json: cannot write {}: {e}", path.display()))
}

/// Prints YCSB's report of a merged result (the exporter the properties name).
pub(crate) fn print_merged(
    doc: &crate::measure::RunDocument,
    props: &Properties,
) -> anyhow::Result<()> {
    let (text, _) = doc.ycsb_report(props)?;
    crate::output::println(text.trim_end())?;
    Ok(())
}
