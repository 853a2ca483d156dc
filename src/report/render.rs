//! The comparison table rendered in every format: terminal, Markdown (with the latency-detail
//! table and links to the charts), CSV and JSON, and the HTML page through `html`.

use super::columns::Columns;
use super::html;
use super::{Format, Report, csv_row, figures, footer, md_row, rounded, where_lines};
use crate::experiment::results::{ExperimentDir, ResultsError};

/// Renders a report in the requested format.
pub(crate) fn render(report: &Report, format: Format) -> String {
    render_with(report, format, &Columns::Compact)
}

/// [`render`] with the table's columns chosen (terminal and Markdown; CSV, JSON and the HTML
/// page always carry every column).
pub(crate) fn render_with(report: &Report, format: Format, columns: &Columns) -> String {
    match format {
        Format::Table => render_table(report, columns),
        Format::Markdown => render_markdown(report, &chart_links(report, &[]), columns),
        Format::Csv => render_csv(report),
        Format::Json => serde_json::to_string_pretty(report)
            .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}")),
        Format::Html => html::page(&html::Page {
            report,
            config: None,
            cells: &[],
            sweeps: &[],
            varies: &[],
            all_timelines: false,
        }),
    }
}

/// Builds and renders the report of an experiment directory. Markdown links the charts the
/// directory holds; HTML is the whole page with the run's facts, with every cell's timeline when
/// `all_timelines` (`report --timelines`), not only those of degraded or invalid cells.
pub(crate) fn render_dir(
    dir: &ExperimentDir,
    format: Format,
    all_timelines: bool,
    columns: &Columns,
) -> Result<String, ResultsError> {
    let config = dir.config()?;
    let cells = dir.cells()?;
    let report = super::build_with(dir, &config, &cells);
    Ok(match format {
        Format::Markdown => render_markdown(&report, &chart_links(&report, &dir.sweeps()), columns),
        Format::Html => html::page(&html::Page {
            report: &report,
            config: Some(&config),
            cells: &cells,
            sweeps: &dir.sweeps(),
            varies: &super::sweep::vary_shown(dir),
            all_timelines,
        }),
        other => render_with(&report, other, columns),
    })
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
    let rows = report.rows.iter().map(|row| columns.cells(report, row));
    let table = rounded(columns.headers(report), rows);
    let mut out = String::new();
    if let Some(marker) = &report.marker {
        out.push_str(&format!("{marker}\n"));
    }
    if let Some(i) = &report.interrupted {
        out.push_str(&format!("{}\n", i.sentence()));
    }
    out.push_str(&format!("Experiment {}\n{table}\n", report.experiment));
    if let Some(c) = &report.ceiling {
        out.push_str(&c.table());
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

pub(super) fn render_markdown(
    report: &Report,
    charts: &[(String, String)],
    columns: &Columns,
) -> String {
    let mut out = String::new();
    if let Some(marker) = &report.marker {
        out.push_str(&format!("**{marker}**\n\n"));
    }
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
    let h = columns.headers(report);
    let escaped = |cells: Vec<String>| cells.iter().map(|c| md_escape(c)).collect::<Vec<_>>();
    out.push_str(&md_row(&escaped(h.clone())));
    let aligns: Vec<&str> = (0..h.len())
        // Words left-aligned, figures right-aligned (the validity column is words: #46).
        .map(|i| match columns.is_text(i) || h[i] == "validity" {
            true => "---",
            false => "---:",
        })
        .collect();
    out.push_str(&md_row(&aligns));
    for row in &report.rows {
        out.push_str(&md_row(&escaped(columns.cells(report, row))));
    }
    out.push('\n');
}

/// A row's ceiling columns: the bracket's two ends (ops/s), intended latency at the bound
/// (µs), threads, steps, and why the next rate failed (or why there is no ceiling).
fn ceiling_csv(c: &super::ceiling::CeilingPart, row: &super::Row) -> [String; 6] {
    let Some(cell) =
        (c.cells.iter()).find(|x| x.scenario == row.scenario && x.topology == row.topology)
    else {
        return Default::default();
    };
    let (passed, failed) = cell.bracket.map_or((None, None), |(p, f)| (Some(p), f));
    [
        opt(passed),
        opt(failed),
        cell.at_bound_us.map(|p| p.to_string()).unwrap_or_default(),
        cell.threads.map(|t| t.to_string()).unwrap_or_default(),
        cell.steps.to_string(),
        match cell.ceiling {
            Some(_) => cell.next_failure.clone().unwrap_or_default(),
            None => cell.finding.clone(),
        },
    ]
}

/// The ceilings' table and the ratio taken apart (`compare --ceiling`).
fn markdown_ceilings(out: &mut String, c: &super::ceiling::CeilingPart) {
    out.push_str(&format!("#### {}\n\n", md_escape(&c.title())));
    out.push_str(&md_row(&c.headers()));
    out.push_str("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for cell in &c.cells {
        let fields: Vec<String> = cell.fields().iter().map(|f| md_escape(f)).collect();
        out.push_str(&md_row(&fields));
    }
    out.push('\n');
    if !c.decomposed.is_empty() {
        // The ratios taken apart are said once, in "What this experiment found" above.
        out.push_str("The ratio taken apart (routing tax, with microshard-1u its mongos hop and sharding overhead, sharding gain, net) is in \"What this experiment found\" above.\n\n");
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_default()
}

/// CSV header; machine-friendly names, one figure per column, and a `figures` column carrying
/// `stand-in` or `mongodb` on every row so the marker survives any spreadsheet.
pub(crate) const CSV_HEADER: &str = "figures,scenario,topology,repeats,threads,throughput_ops_s,vs_baseline,main_op,avg_us,p50_us,p95_us,p99_us,p999_us,errors,validity,min_ops_s,max_ops_s,stddev_ops_s,p_value,significant,client_cpu_fraction,cpu_us_per_op,client_bound,server_cpu_us_per_op,interrupted,sessions";

/// The columns a `compare --ceiling` adds to the CSV (its throughput columns are the ceilings),
/// the intended latency's named by the bound's percentile.
fn csv_ceiling_header(c: &super::ceiling::CeilingPart) -> String {
    let name = c.drawn.as_ref().map_or("p99", |b| b.name.as_str());
    format!(
        ",ceiling_bracket_passed_ops_s,ceiling_bracket_failed_ops_s,ceiling_intended_{name}_us,ceiling_threads,ceiling_steps,ceiling_next_failure"
    )
}

fn render_csv(report: &Report) -> String {
    let mut out = String::from(CSV_HEADER);
    if let Some(c) = &report.ceiling {
        out.push_str(&csv_ceiling_header(c));
    }
    out.push('\n');
    for row in &report.rows {
        let lat = row.latency.clone();
        let fields = [
            figures(row.standin || report.standin()),
            row.scenario.clone(),
            row.topology.clone(),
            row.repeats.to_string(),
            row.threads.map(|t| t.to_string()).unwrap_or_default(),
            opt(row.throughput),
            opt(row.vs_baseline),
            row.main_op.clone().unwrap_or_default(),
            opt(lat.as_ref().map(|l| l.avg)),
            opt(lat.as_ref().map(|l| l.p50)),
            opt(lat.as_ref().map(|l| l.p95)),
            opt(lat.as_ref().map(|l| l.p99)),
            opt(lat.as_ref().map(|l| l.p999)),
            row.errors.to_string(),
            row.verdict.clone(),
            opt(row.spread.map(|s| s.0)),
            opt(row.spread.map(|s| s.1)),
            opt(row.stddev),
            opt(row.significance.map(|s| s.p)),
            row.significance
                .map(|s| s.significant.to_string())
                .unwrap_or_default(),
            opt(row.client_cpu),
            opt(row.cpu_us_per_op),
            row.client_bound.to_string(),
            opt(row.server_cpu_us_per_op),
            row.interrupted.to_string(),
            row.sessions
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(";"),
        ];
        let mut line = Vec::from(fields);
        if let Some(c) = &report.ceiling {
            line.extend(ceiling_csv(c, row));
        }
        out.push_str(&csv_row(&line));
    }
    out
}
