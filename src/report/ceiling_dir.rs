//! A standalone ceiling search as a result like any other: its run directory (`ceiling.json`,
//! `ceiling-rN.json` for `--repeat`) read back and rendered in every format — the steps tables,
//! the finding, the chart, the page — and its report files written beside the records
//! (`docs/result-schema.md`, "The ceiling search").

use std::fmt::Write as _;
use std::path::Path;

use super::ceiling::{CeilingPart, render_all, said, steps_table, summary, title, verdict_notes};
use super::table::HeaderRule;
use super::{Format, ReportError, charts, html};
use crate::experiment::ceiling::CeilingRecord;
use crate::experiment::results::{ExperimentDir, ResultsError, read_json};

/// The file a standalone search keeps its first record in: what makes a directory one.
const RECORD: &str = "ceiling.json";

/// Whether `dir` holds a standalone ceiling search (and no experiment).
pub(crate) fn is_ceiling_dir(dir: &Path) -> bool {
    dir.join(RECORD).is_file() && !dir.join("experiment.json").exists()
}

/// Every search the directory keeps, in repetition order.
pub(crate) fn read(dir: &Path) -> Result<Vec<CeilingRecord>, ResultsError> {
    let mut records = vec![read_json::<CeilingRecord>(&dir.join(RECORD))?];
    for repeat in 2.. {
        let path = dir.join(format!("ceiling-r{repeat}.json"));
        if !path.is_file() {
            break;
        }
        records.push(read_json(&path)?);
    }
    Ok(records)
}

/// The searches in `format`.
pub(crate) fn render(records: &[CeilingRecord], format: Format) -> Result<String, ReportError> {
    Ok(match format {
        Format::Table => render_all(records),
        Format::Markdown => markdown(records),
        Format::Csv => steps_table(records).csv(records.first().is_some_and(|r| r.standin)),
        Format::Json => serde_json::to_string_pretty(records)? + "\n",
        Format::Html => page(records),
    })
}

/// Writes the report files of a search beside its records: `ceiling.txt`, `.md`, `.csv`,
/// `.html` and the chart `ceiling.svg`/`.png`.
pub(crate) fn write_files(
    dir: &ExperimentDir,
    records: &[CeilingRecord],
) -> Result<(), ReportError> {
    for (ext, format) in [
        ("txt", Format::Table),
        ("md", Format::Markdown),
        ("csv", Format::Csv),
        ("html", Format::Html),
    ] {
        dir.write_text(&format!("ceiling.{ext}"), &render(records, format)?)?;
    }
    if let Some(chart) = chart(records) {
        super::png::write_chart(dir, "ceiling", &chart?.svg)?;
    }
    Ok(())
}

/// The chart of every search's steps, as a compare draws one scenario's.
fn chart(records: &[CeilingRecord]) -> Option<Result<charts::Chart, charts::ChartError>> {
    let first = records.first()?;
    let part = CeilingPart::of(records, &[], "")?;
    let where_ = vec![format!("{}: {}", first.topology, first.uri)];
    charts::ceiling(&part, &first.workload, &where_, first.standin)
}

fn markdown(records: &[CeilingRecord]) -> String {
    let Some(first) = records.first() else {
        return String::new();
    };
    let mut out = super::marker_line(first.standin, Format::Markdown);
    let _ = writeln!(out, "### {}\n", title(first));
    let _ = writeln!(out, "![the search's steps](ceiling.svg)\n");
    for r in records {
        if records.len() > 1 {
            let _ = writeln!(out, "#### Search {}\n", r.repeat);
        }
        out.push_str(&steps_table(std::slice::from_ref(r)).markdown(HeaderRule::Spaced));
        out.push('\n');
        for line in verdict_notes(&r.steps) {
            let _ = writeln!(out, "- {line}");
        }
        let _ = writeln!(out, "\n{}\n", r.finding());
        if let Some(fit) = &r.server_cpu {
            let _ = writeln!(out, "{}\n", fit.words());
        }
    }
    if let Some(all) = summary(records) {
        let _ = writeln!(out, "{all}\n");
    }
    out
}

fn page(records: &[CeilingRecord]) -> String {
    let Some(first) = records.first() else {
        return String::new();
    };
    let mut out = html::titled(&title(first), first.standin);
    let _ = writeln!(
        out,
        "<p>{}</p>",
        html::esc(&format!("Server: {}", first.uri))
    );
    if let Some(chart) = chart(records) {
        let caption = "Each point is one step: the rate offered and the intended latency at the bound's percentile there, marked by the rule it failed; each search's ceiling ringed.";
        html::figure(&mut out, "chart-ceiling", chart, caption);
    }
    for r in records {
        if records.len() > 1 {
            let _ = writeln!(out, "<h2>Search {}</h2>", r.repeat);
        }
        let steps = steps_table(std::slice::from_ref(r));
        html::table_box(&mut out, ("<table><thead><tr>\n", ""), &steps, None, false);
        html::ul(&mut out, "notes", said(r));
    }
    if let Some(all) = summary(records) {
        let _ = writeln!(out, "<p>{}</p>", html::esc(&all));
    }
    out.push_str("</body>\n</html>\n");
    out
}
