//! The comparison table rendered in every format: terminal, Markdown (with the latency-detail
//! table and links to the charts), CSV and JSON, and the HTML page through `html`.

use super::columns::Columns;
use super::html::{self, Page};
use super::table::HeaderRule;
use super::{Format, Report, footer, where_lines};
use crate::experiment::results::{ExperimentDir, ResultsError};

/// Renders a report in the requested format (tests: production renders a run's page).
#[cfg(test)]
pub(crate) fn render(report: &Report, format: Format) -> String {
    render_with(report, format, &Columns::Compact)
}

/// [`render`] with the table's columns chosen (terminal and Markdown; CSV, JSON and the HTML
/// page always carry every column).
#[cfg(test)]
pub(crate) fn render_with(report: &Report, format: Format, columns: &Columns) -> String {
    render_page(&Page::of(report), format, columns)
}

/// A report in `format` with what its run holds besides: Markdown links the charts of the
/// comparison and its sweeps; HTML is the whole page with the run's facts.
pub(crate) fn render_page(page: &Page, format: Format, columns: &Columns) -> String {
    let report = page.report;
    match format {
        Format::Table => render_table(report, columns),
        Format::Markdown => render_markdown(report, &chart_links(report, page.sweeps), columns),
        Format::Csv => super::columns::wide_table(report).csv(report.standin()),
        Format::Json => serde_json::to_string_pretty(report)
            .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}")),
        Format::Html => html::page(page),
    }
}

/// Builds and renders the report of an experiment directory ([`render_page`]), the page with
/// every cell's timeline when `all_timelines` (`report --timelines`), not only those of
/// degraded or invalid cells.
pub(crate) fn render_dir(
    dir: &ExperimentDir,
    format: Format,
    all_timelines: bool,
    columns: &Columns,
) -> Result<String, ResultsError> {
    let (config, cells, sweeps) = (dir.config()?, dir.cells()?, dir.sweeps());
    let report = super::build_with(dir, &config, &cells);
    let varies = super::sweep::vary_shown(dir);
    let page = Page {
        config: Some(&config),
        cells: &cells,
        sweeps: &sweeps,
        varies: &varies,
        all_timelines,
        ..Page::of(&report)
    };
    Ok(render_page(&page, format, columns))
}

/// The charts written for a report (see [`write_files`]), in page order: each file name,
/// relative to the run directory (`throughput.svg`), and its alternative text.
pub(crate) fn chart_links(
    report: &Report,
    sweeps: &[(String, crate::experiment::model::SweepFile)],
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if report.rows.iter().any(|r| r.repeats > 0) {
        out.push((
            "throughput.svg".into(),
            "Throughput by scenario and topology".into(),
        ));
        out.push((
            "latency.svg".into(),
            "Latency percentiles of the main operation".into(),
        ));
    }
    if let Some(c) = &report.ceiling {
        for scenario in &super::ceiling::scenarios(c) {
            let file = format!("{}.svg", super::ceiling::chart_stem(scenario));
            out.push((
                file,
                format!("{scenario}: intended latency by offered rate"),
            ));
        }
    }
    for (label, s) in sweeps {
        out.push((
            format!("sweep-{label}.svg"),
            format!("Thread sweep: {}", s.label),
        ));
        let alt = format!("Thread sweep's latency: {}", s.label);
        out.push((format!("sweep-{label}-latency.svg"), alt));
    }
    out
}

fn render_table(report: &Report, columns: &Columns) -> String {
    let table = columns.table(report).terminal();
    let mut out = super::marker_line(report.standin(), Format::Table);
    if let Some(i) = &report.interrupted {
        out.push_str(&format!("{}\n", i.sentence()));
    }
    out.push_str(&format!("Experiment {}\n{table}\n", report.experiment));
    if let Some(c) = &report.ceiling {
        out.push_str(&c.terminal());
    }
    if !report.found.is_empty() {
        out.push_str("What this experiment found:\n");
        out.extend(report.found.iter().map(|f| format!("- {f}\n")));
    }
    out.extend(footer(report, columns).into_iter().map(|l| l + "\n"));
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

fn render_markdown(report: &Report, charts: &[(String, String)], columns: &Columns) -> String {
    let mut out = super::marker_line(report.standin(), Format::Markdown);
    if let Some(i) = &report.interrupted {
        out.push_str(&format!("**{}**\n\n", md_escape(&i.sentence())));
    }
    out.push_str(&format!(
        "### Experiment {}\n\n",
        md_escape(&report.experiment)
    ));
    for line in where_lines(report) {
        out.push_str(&format!("_{}_  \n", md_escape(&line)));
    }
    out.push('\n');
    if !report.found.is_empty() {
        out.push_str("#### What this experiment found\n\n");
        out.extend(report.found.iter().map(|f| format!("- {}\n", md_escape(f))));
        out.push('\n');
    }
    markdown_table(&mut out, report, columns);
    if let Some(c) = &report.ceiling {
        markdown_ceilings(&mut out, c);
    }
    if *columns == Columns::Compact {
        out.push_str("#### Latency detail\n\n");
        markdown_table(&mut out, report, &Columns::latency_detail());
    }
    for line in footer(report, columns) {
        out.push_str(&format!("- {}\n", md_escape(&line)));
    }
    if !charts.is_empty() {
        out.push_str("\n#### Charts\n\n");
        for (file, alt) in charts {
            // Relative links: the Markdown sits beside its charts in the run directory.
            out.push_str(&format!("![{}]({file})\n\n", md_escape(alt)));
        }
    }
    out
}

/// One Markdown table of the report's rows, and a blank line.
fn markdown_table(out: &mut String, report: &Report, columns: &Columns) {
    out.push_str(&columns.table(report).markdown(HeaderRule::Spaced));
    out.push('\n');
}

/// The ceilings' table and the ratio taken apart (`compare --ceiling`).
fn markdown_ceilings(out: &mut String, c: &super::ceiling::CeilingPart) {
    out.push_str(&format!("#### {}\n\n", md_escape(&c.title())));
    out.push_str(&c.table().markdown(HeaderRule::Spaced));
    out.push('\n');
    if !c.decomposed.is_empty() {
        // The ratios taken apart are said once, in "What this experiment found" above.
        out.push_str("The ratio taken apart (routing tax, with microshard-1u its mongos hop and sharding overhead, sharding gain, net) is in \"What this experiment found\" above.\n\n");
    }
}
