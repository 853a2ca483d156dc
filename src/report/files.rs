//! The report files of a run directory: `report.{md,csv,json,txt,html}`, the charts as SVG with
//! a PNG beside each, and the timeline charts of degraded and invalid cells.

use super::render::render_page;
use super::{Columns, Format, charts, html, png, sweep, timeline};
use super::{sweep_topology, topology_label};
use crate::experiment::model::CellFile;
use crate::experiment::results::{ExperimentDir, ResultsError};

/// A report that could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReportError {
    /// The results directory could not be read or written.
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// A chart could not be drawn.
    #[error(transparent)]
    Chart(#[from] charts::ChartError),
    /// A table or a sweep could not be rendered as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// The file stem of a cell's timeline chart, relative to the run directory: beside its cell
/// file (`cells/<topology>/<scenario>-r<N>.timeline`).
pub(crate) fn timeline_stem(dir: &ExperimentDir, cell: &CellFile) -> String {
    let path = dir.cell_path(&cell.cell).with_extension("timeline");
    path.strip_prefix(dir.path())
        .unwrap_or(&path)
        .display()
        .to_string()
}

/// Draws the timeline chart (SVG and PNG) of every degraded or invalid cell, or of every cell
/// with `all` (`report --timelines`); a cell too short for one gets none (the page says so).
pub(crate) fn write_timelines(
    dir: &ExperimentDir,
    cells: &[CellFile],
    all: bool,
) -> Result<(), ReportError> {
    for cell in cells
        .iter()
        .filter(|c| all || !c.summary.validity.is_valid())
    {
        let shown = topology_label(&cell.cell.topology, cell.topology.as_ref());
        if timeline::too_short(cell, &shown).is_some() {
            continue;
        }
        let chart = timeline::timeline(cell, &shown)?;
        png::write_chart(dir, &timeline_stem(dir, cell), &chart.svg)?;
    }
    Ok(())
}

/// The files [`write_reports`] replaces whatever the experiment holds (charts of sweeps, ceilings
/// and timelines come and go with the cells).
const REPORT_FILES: [&str; 9] = [
    "report.md",
    "report.csv",
    "report.json",
    "report.html",
    "report.txt",
    "throughput.svg",
    "throughput.png",
    "latency.svg",
    "latency.png",
];

/// Proves, before any report is written, that none of the report files is in the way: each is
/// written to a temporary file then renamed over the old one, which only a directory of that
/// name stops. (That the directory takes new files is `writable::dir`'s proof.)
pub(crate) fn check_replaceable(dir: &ExperimentDir) -> Result<(), String> {
    for name in REPORT_FILES {
        let path = dir.path().join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            return Err(format!(
                "{}: a directory is where the report file {name} goes",
                path.display()
            ));
        }
    }
    Ok(())
}

/// Writes the report files (Markdown, CSV, JSON, text, the HTML page) and charts (SVG and PNG)
/// into the run directory; returns the terminal table.
pub(crate) fn write_reports(dir: &ExperimentDir) -> Result<String, ReportError> {
    let varies = sweep::vary_shown(dir);
    for v in &varies {
        sweep::write_vary(dir, &v.outcome, &v.label, &v.stem)?;
    }
    let table = write_files(dir, &varies)?;
    let sweeps = dir.sweeps();
    if dir.cells()?.is_empty() && !sweeps.is_empty() {
        // A sweep's own run directory: its reports are the sweep's, each in its format.
        let columns = Columns::Compact;
        let text = sweep::render_sweep_dir(dir, Format::Table, &columns)?;
        dir.write_text("report.txt", &text)?;
        for (file, format) in [
            ("report.md", Format::Markdown),
            ("report.csv", Format::Csv),
            ("report.json", Format::Json),
        ] {
            dir.write_text(file, &sweep::render_sweep_dir(dir, format, &columns)?)?;
        }
        return Ok(text);
    }
    Ok(table)
}

/// Writes every report of a run directory: `report.{md,csv,json,txt,html}`, the charts (SVG and
/// PNG) and one chart per thread sweep, the page with the seed-2 tables `varies`; returns the
/// terminal table.
pub(crate) fn write_files(
    dir: &ExperimentDir,
    varies: &[sweep::VaryShown],
) -> Result<String, ReportError> {
    let config = dir.config()?;
    let cells = dir.cells()?;
    let sweeps = dir.sweeps();
    let rep = super::build_with(dir, &config, &cells);
    write_timelines(dir, &cells, false)?;
    if rep.rows.iter().any(|r| r.repeats > 0) {
        png::write_chart(dir, "throughput", &charts::throughput(&rep)?.svg)?;
        png::write_chart(dir, "latency", &charts::latency(&rep)?.svg)?;
    }
    if let Some(c) = &rep.ceiling {
        let where_ = super::where_lines(&rep);
        for scenario in &super::ceiling::scenarios(c) {
            if let Some(chart) = charts::ceiling(c, scenario, &where_, rep.standin()) {
                png::write_chart(dir, &super::ceiling::chart_stem(scenario), &chart?.svg)?;
            }
        }
    }
    for (label, sweep) in &sweeps {
        let (facts, data) = (sweep_topology(&rep, sweep), &rep.scale_note);
        let throughput = charts::sweep(sweep, facts, data)?;
        png::write_chart(dir, &format!("sweep-{label}"), &throughput.svg)?;
        let latency = charts::sweep_latency(sweep, facts, data)?;
        png::write_chart(dir, &format!("sweep-{label}-latency"), &latency.svg)?;
    }
    let page = html::Page {
        config: Some(&config),
        cells: &cells,
        sweeps: &sweeps,
        varies,
        ..html::Page::of(&rep)
    };
    let formats = [
        ("report.md", Format::Markdown),
        ("report.csv", Format::Csv),
        ("report.json", Format::Json),
        ("report.html", Format::Html),
    ];
    for (file, format) in formats {
        dir.write_text(file, &render_page(&page, format, &Columns::Compact))?;
    }
    let table = render_page(&page, Format::Table, &Columns::Compact);
    dir.write_text("report.txt", &table)?;
    Ok(table)
}
