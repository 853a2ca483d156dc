//! The tables and charts of a thread sweep and of a `--vary` sweep (seed 2): terminal, Markdown,
//! CSV and the SVG/PNG chart, from the stored curves.

use super::table::{Cell, Column, HeaderRule, Table};
use super::{Columns, Format, charts, marker_line, stats};
use crate::experiment::metrics::{MemoryAtEnd, bytes};
use crate::experiment::model::{CellSummary, SweepFile, SweepOutcome, SweepPoint};
use crate::experiment::results::ExperimentDir;
use crate::measure::validity::Verdict;

/// A seed-2 table and chart as the page shows them: its chart's label, its files' stem and
/// its curves.
#[derive(Debug, Clone)]
pub(crate) struct VaryShown {
    /// What the curves were measured on (`S2 on single`), as the chart's title names it.
    pub label: String,
    /// The file stem of its table and chart (`vary`, `vary-single`).
    pub stem: String,
    /// The curves.
    pub outcome: SweepOutcome,
}

/// The seed-2 outcomes of a run directory, so the page shows the table a write-up publishes:
/// one per topology of a `compare --sweep --vary` (from its stored curves),
/// or a `sweep --vary`'s own (its `vary.json`).
pub(crate) fn vary_shown(dir: &ExperimentDir) -> Vec<VaryShown> {
    let Ok(config) = dir.config() else {
        return Vec::new();
    };
    let compared = crate::experiment::compare::vary_outcomes(dir, &config);
    if !compared.is_empty() {
        let scenario = config.command.scenarios.get(1).cloned().unwrap_or_default();
        return (compared.into_iter())
            .map(|outcome| {
                let topology = outcome.topology.clone().unwrap_or_default();
                VaryShown {
                    label: format!("{scenario} on {topology}"),
                    stem: crate::experiment::compare::vary_stem(&topology),
                    outcome,
                }
            })
            .collect();
    }
    let stored =
        crate::experiment::results::read_json::<SweepOutcome>(&dir.path().join("vary.json"));
    stored
        .ok()
        .filter(|o| !o.is_single())
        .map(|outcome| VaryShown {
            label: outcome_label(&outcome),
            stem: "vary".into(),
            outcome,
        })
        .into_iter()
        .collect()
}

/// A sweep's label from its first curve's (`S2 on single readbatchsize=1 #1` → `S2 on single`).
fn outcome_label(outcome: &SweepOutcome) -> String {
    let Some((_, first)) = outcome.curves.first() else {
        return String::new();
    };
    let cut = match &outcome.property {
        Some(p) => first.label.find(&format!(" {p}=")),
        None => first.label.find(" #"),
    };
    first.label[..cut.unwrap_or(first.label.len())].to_string()
}

/// The seed-2 table: per value its mean ops/s with the lowest–highest over repetitions and the
/// verdict of each point that is degraded, invalid or not run (the page's, and the terminal's
/// and Markdown's but with `--wide`); `wide`, one column per repetition and their mean, the CSV
/// writing each repetition's verdict in a column of its own beside its number, so every figure
/// column stays numeric.
pub(crate) fn vary_table(outcome: &SweepOutcome, wide: bool) -> Table {
    let (values, repeats) = (outcome.values(), outcome.repeats());
    let mut table = Table::new(vec![Column::figures("threads", "threads")]);
    for value in &values {
        let name = c_label(&outcome.property, value, "ops/s");
        let both = |title: String| Column::figures(title.clone(), title);
        table.columns.extend(match (wide, repeats > 1) {
            (false, true) => vec![Column::figures(format!("{name} (min–max)"), "")],
            (false, false) => vec![Column::figures(name, "")],
            (true, _) => (1..=repeats)
                .flat_map(|r| {
                    let validity = format!("{name} #{r} validity");
                    [
                        both(format!("{name} #{r}")),
                        Column::figures("", validity).csv_only(),
                    ]
                })
                .chain([both(format!("{name} mean"))])
                .collect(),
        });
    }
    for &t in &outcome.threads {
        let mut row = vec![Cell::text(t.to_string())];
        for value in &values {
            let points = points_at(outcome, value, t);
            let got: Vec<f64> = points
                .iter()
                .flatten()
                .map(|p| p.summary.throughput)
                .collect();
            let mean = stats::mean(&got);
            if !wide {
                let marks = charts::distinct(points.iter().flatten().map(|p| mark(&p.summary)));
                let (lo, hi) = stats::range(&got);
                let spread = (repeats > 1).then(|| format!(" ({lo:.0}–{hi:.0})"));
                row.push(Cell::text(mean.map_or("—".into(), |m| {
                    format!("{m:.0}{}{}", spread.unwrap_or_default(), marks.concat())
                })));
                continue;
            }
            for point in &points {
                row.extend(match point.map(|p| &p.summary) {
                    Some(s) => {
                        let tp = format!("{:.0}", s.throughput);
                        let read = format!("{tp}{}", mark(s));
                        [
                            Cell::figure(read, tp),
                            Cell::text(s.validity.verdict.as_str()),
                        ]
                    }
                    None => [Cell::figure("—", ""), Cell::text("not run")],
                });
            }
            row.push(Cell::or_dash(mean.map(|m| format!("{m:.0}"))));
        }
        table.rows.push(row);
    }
    table
}

/// ` (degraded)`: what a point's figure carries when it is degraded, invalid or not run;
/// nothing when it is valid.
fn mark(s: &CellSummary) -> String {
    match s.validity.is_valid() {
        true => String::new(),
        false => format!(" ({})", s.validity.verdict),
    }
}

/// The point of `value` at `t` threads in each repetition, in order (`None`: not run).
fn points_at<'a>(
    outcome: &'a SweepOutcome,
    value: &Option<String>,
    t: u32,
) -> Vec<Option<&'a SweepPoint>> {
    (1..=outcome.repeats())
        .map(|r| {
            (outcome.curves.iter())
                .find(|(v, _)| v.value == *value && v.repeat == r)
                .and_then(|(_, s)| s.points.iter().find(|p| p.threads == t))
        })
        .collect()
}

/// Writes an outcome's seed-2 table and chart into the run directory as `{stem}.md`, `.csv`,
/// `.txt`, `.json`, `.svg` and, when a font is found, `.png`.
pub(crate) fn write_vary(
    dir: &ExperimentDir,
    outcome: &SweepOutcome,
    label: &str,
    stem: &str,
) -> Result<(), super::ReportError> {
    for (ext, format) in [
        ("md", Format::Markdown),
        ("csv", Format::Csv),
        ("txt", Format::Table),
    ] {
        let text = render_vary(outcome, format, &Columns::Compact);
        dir.write_text(&format!("{stem}.{ext}"), &text)?;
    }
    let json = serde_json::to_string_pretty(outcome)?;
    dir.write_text(&format!("{stem}.json"), &json)?;
    super::png::write_chart(dir, stem, &vary_chart(outcome, label)?.svg)?;
    Ok(())
}

/// The seed-2 chart of an outcome: one line per value, min–max over repetitions. Points that
/// are degraded or invalid are counted under it, not listed: the list is said once, under the table
/// ([`vary_point_notes`]).
pub(crate) fn vary_chart(
    outcome: &SweepOutcome,
    label: &str,
) -> Result<charts::Chart, charts::ChartError> {
    let values = outcome.values();
    let series: Vec<charts::VarySeries> = (values.iter())
        .map(|value| vary_series(outcome, value))
        .collect();
    let mut notes = Vec::new();
    let flagged = vary_point_notes(outcome).len();
    if flagged > 0 {
        notes.push(format!(
            "{flagged} measured points are degraded or invalid (their curves say so in the legend); the seed-2 table (vary.md, vary.txt) lists which and why."
        ));
    }
    if let Some(table) = memory_table(outcome) {
        let header = table.header();
        for r in table.read_rows() {
            notes.push(format!(
                "{}={} at the end: {} {}, {} {}, index {} on disk, {} in cache (all indexes, incl. shard key)",
                header[0], r[0], header[1], r[1], header[2], r[2], r[3], r[4]
            ));
        }
    }
    let standin = outcome.curves.iter().any(|(_, s)| s.standin);
    charts::vary(
        &format!(
            "Throughput by client threads{}: {label}",
            outcome
                .property
                .as_ref()
                .map(|p| format!(" and {p}"))
                .unwrap_or_default()
        ),
        &series,
        outcome.repeats(),
        &server_words(outcome, standin),
        standin,
        &notes,
    )
}

/// One value's curve of the seed-2 chart: per thread count, the lowest, mean and highest
/// throughput over its repetitions.
fn vary_series(outcome: &SweepOutcome, value: &Option<String>) -> charts::VarySeries {
    let curves: Vec<&SweepFile> = (outcome.curves.iter())
        .filter(|(v, _)| v.value == *value)
        .map(|(_, s)| s)
        .collect();
    let mut worst = Verdict::Valid;
    let points = (outcome.threads.iter())
        .filter_map(|&t| {
            let got: Vec<f64> = (curves.iter())
                .filter_map(|c| c.points.iter().find(|p| p.threads == t))
                .inspect(|p| worst = worst.max(p.summary.validity.verdict))
                .map(|p| p.summary.throughput)
                .collect();
            let ((lo, hi), mean) = (stats::range(&got), stats::mean(&got)?);
            Some((t, lo, mean, hi))
        })
        .collect();
    charts::VarySeries {
        label: c_label(&outcome.property, value, "throughput"),
        points,
        worst,
    }
}

/// One line per measured point that is degraded or invalid: its value, thread count, repetition,
/// verdict and why; said once, under the seed-2 table.
pub(crate) fn vary_point_notes(outcome: &SweepOutcome) -> Vec<String> {
    point_lines(outcome, |p| {
        let v = &p.summary.validity;
        let said = (!v.is_valid()).then(|| format!(", is {}: {}", v.verdict, v.summary()));
        said.into_iter().collect()
    })
}

/// Each point whose client and server disagree (its cross-check's warnings: an extra `getMore`
/// per multi-id read, a server that counts nothing), one line each; said beside the figures,
/// not folded into a verdict.
fn crosscheck_notes(outcome: &SweepOutcome) -> Vec<String> {
    point_lines(outcome, |p| {
        let warnings = p.crosscheck.iter().flat_map(|c| c.warnings.iter());
        warnings.map(|w| format!(": {w}")).collect()
    })
}

/// A line for each thing `said` of a point: its value, thread count and repetition first.
fn point_lines(outcome: &SweepOutcome, said: impl Fn(&SweepPoint) -> Vec<String>) -> Vec<String> {
    let mut lines = Vec::new();
    for (v, s) in &outcome.curves {
        let label = c_label(&outcome.property, &v.value, "throughput");
        for p in &s.points {
            let at = format!("{label} at {} threads, repeat {}", p.threads, v.repeat);
            lines.extend(said(p).into_iter().map(|s| format!("{at}{s}")));
        }
    }
    lines
}

/// Notes as a titled list under the seed-2 table (terminal or Markdown); nothing without notes.
fn listed(title: &str, notes: &[String]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    format!("\n{title}:\n\n{}", listed_lines(notes))
}

/// Each line as a list item.
fn listed_lines(lines: &[String]) -> String {
    lines.iter().map(|n| format!("- {n}\n")).collect()
}

/// The server the curves were measured on, as the chart names it: "MongoDB 8.0.4", "stand-in
/// …", or that its version is unknown.
fn server_words(outcome: &SweepOutcome, standin: bool) -> String {
    let version = outcome
        .curves
        .iter()
        .flat_map(|(_, s)| s.points.iter())
        .find_map(|p| p.summary.server_version.clone());
    match (&version, standin) {
        (Some(v), true) => format!("stand-in {v}"),
        (Some(v), false) => format!("MongoDB {v}"),
        (None, _) => "server version unknown".to_string(),
    }
}

/// A curve's name: `property=value`, else `unvaried`.
fn c_label(property: &Option<String>, value: &Option<String>, unvaried: &str) -> String {
    match (property, value) {
        (Some(p), Some(v)) => format!("{p}={v}"),
        _ => unvaried.to_string(),
    }
}

/// The seed-2-shaped table: one row per thread count; for each value of the varied property, its
/// mean ops/s with the lowest–highest over repetitions (`--wide` and CSV: one column per
/// repetition and their mean). JSON and HTML print the terminal table.
pub(crate) fn render_vary(outcome: &SweepOutcome, format: Format, columns: &Columns) -> String {
    let table = match (format, columns) {
        (Format::Csv, _) | (_, Columns::Wide) => vary_table(outcome, true),
        _ => vary_table(outcome, false),
    };
    let standin = outcome.curves.iter().any(|(_, s)| s.standin);
    let mut out = match format {
        Format::Csv => return table.csv(standin),
        Format::Markdown => {
            let mut out = marker_line(standin, format);
            if outcome.topology.is_some() {
                // `compare` writes one table per topology: each file says which.
                out.push_str(&format!("{}\n\n", vary_title(outcome)));
            }
            out + &table.markdown(HeaderRule::Tight)
        }
        _ => {
            let (marker, title) = (marker_line(standin, format), vary_title(outcome));
            format!("{marker}{title}\n{}\n", table.terminal())
        }
    };
    out.push_str(&memory_section(outcome, format));
    out.push_str(&listed(
        "Points degraded or invalid",
        &vary_point_notes(outcome),
    ));
    out.push_str(&listed(
        "Client and server disagree",
        &crosscheck_notes(outcome),
    ));
    out
}

/// Per value, the server's memory when its last curve ended (seed 2 reads throughput beside
/// memory: the index must fit in RAM): one row per value, or `None` when no curve recorded it.
/// Figures the server does not report, or reported beyond belief, are said so, never shown as
/// numbers; the index is on disk (prefix-compressed) beside what it holds in the cache, and the
/// members summed are named.
fn memory_table(outcome: &SweepOutcome) -> Option<Table> {
    let values = outcome.values();
    if values.iter().all(|v| last_memory(outcome, v).is_none()) {
        return None;
    }
    let standin = outcome.curves.iter().any(|(_, s)| s.standin);
    let property = outcome.property.clone().unwrap_or_else(|| "curve".into());
    let mut table = Table::new(vec![
        Column::words(property, ""),
        Column::figures("resident", ""),
        Column::figures("WiredTiger cache in use", ""),
        Column::figures("index (on disk, compressed)", ""),
        // On a sharded topology the collection's indexes include the hashed shard-key index,
        // which `single` does not have.
        Column::figures("index in cache (incl. shard key)", ""),
        Column::figures("members summed", ""),
    ]);
    for value in &values {
        let memory = last_memory(outcome, value).unwrap_or_default();
        let name = value.clone().unwrap_or_else(|| "—".into());
        let cells = std::iter::once(name).chain(memory_cells(&memory, standin));
        table.rows.push(cells.map(Cell::text).collect());
    }
    Some(table)
}

/// The memory recorded when the last curve of `value` ended.
fn last_memory(outcome: &SweepOutcome, value: &Option<String>) -> Option<MemoryAtEnd> {
    (outcome.curves.iter().rev())
        .filter(|(v, _)| v.value == *value)
        .find_map(|(_, s)| s.memory.clone())
}

/// One value's memory cells after its name: resident, cache, index on disk against the cache,
/// index in cache, members summed.
fn memory_cells(m: &MemoryAtEnd, standin: bool) -> Vec<String> {
    let none = || match standin {
        true => "not reported (stand-in: no WiredTiger)".to_string(),
        false => "not reported".to_string(),
    };
    let resident = match m.resident_bytes {
        Some(r) => bytes(r),
        None if m.flagged.iter().any(|f| f.contains("resident")) => "implausible: not used".into(),
        None => "not reported".into(),
    };
    let cache = match (m.cache_bytes, m.cache_max_bytes) {
        (Some(c), Some(max)) => format!("{} of {}", bytes(c), bytes(max)),
        (Some(c), None) => bytes(c),
        (None, _) => none(),
    };
    let index = match (m.index_bytes, m.cache_max_bytes) {
        (Some(i), Some(max)) if max > 0 => {
            format!(
                "{} ({:.0}% of the cache)",
                bytes(i),
                i as f64 / max as f64 * 100.0
            )
        }
        (Some(i), _) => format!("{} (no cache reported)", bytes(i)),
        (None, _) => "not reported".into(),
    };
    let members = match m.members.is_empty() {
        true => "not recorded".into(),
        false => m.members.join(", "),
    };
    vec![
        resident,
        cache,
        index,
        m.index_cache_bytes.map(bytes).unwrap_or_else(none),
        members,
    ]
}

/// The memory table under the seed-2 table (terminal or Markdown), and the implausible figures
/// left out of it, one line each.
fn memory_section(outcome: &SweepOutcome, format: Format) -> String {
    let Some(table) = memory_table(outcome) else {
        return String::new();
    };
    let title = "Server memory when each value's last curve ended";
    let memories = outcome.curves.iter().filter_map(|(_, s)| s.memory.as_ref());
    let flagged = charts::distinct(memories.flat_map(|m| m.flagged.iter().cloned()));
    let flagged: String = match flagged.is_empty() {
        true => String::new(),
        false => "\nLeft out as implausible:\n".to_string() + &listed_lines(&flagged),
    };
    match format {
        Format::Markdown => format!(
            "\n{title}:\n\n{}{flagged}",
            table.markdown(HeaderRule::Tight)
        ),
        _ => format!("{title}:\n{}\n{flagged}", table.terminal()),
    }
}

/// "Throughput (ops/s) by threads and PROPERTY[ on TOPOLOGY]": what a seed-2 table shows.
fn vary_title(outcome: &SweepOutcome) -> String {
    let on = outcome.topology.as_ref().map(|t| format!(" on {t}"));
    format!("{}{}", vary_heading(outcome, None), on.unwrap_or_default())
}

/// The page's heading of a seed-2 table: what it shows, on what (`Throughput (ops/s) by threads
/// and readbatchsize: S2 on single`).
pub(crate) fn vary_heading(outcome: &SweepOutcome, label: Option<&str>) -> String {
    let and = outcome.property.as_ref().map(|p| format!(" and {p}"));
    let label = label.map(|l| format!(": {l}"));
    format!(
        "Throughput (ops/s) by threads{}{}",
        and.unwrap_or_default(),
        label.unwrap_or_default()
    )
}

/// A sweep's table: per point its threads, throughput, latency and verdict, the maximum and knee
/// marked; the CSV has the raw figures, p99.9, the label, and the marks as two columns.
pub(crate) fn sweep_table(sweep: &SweepFile) -> Table {
    let mut table = Table::new(vec![
        Column::words("", "label").csv_only(),
        Column::figures("threads", "threads"),
        Column::figures("ops/s", "throughput_ops_s"),
        Column::words("op", "main_op"),
        Column::figures("avg µs", "avg_us"),
        Column::figures("p95 µs", "p95_us"),
        Column::figures("p99 µs", "p99_us"),
        Column::figures("", "p999_us").csv_only(),
        Column::figures("errors", "errors"),
        Column::words("validity", "validity"),
        Column::words("", MARKS).read_only(),
        Column::words("", "max").csv_only(),
        Column::words("", "knee").csv_only(),
    ]);
    let figure = |v: f64| Cell::figure(format!("{v:.0}"), format!("{v:.3}"));
    for p in &sweep.points {
        let max = Some(p.threads) == sweep.max_threads;
        let knee = Some(p.threads) == sweep.knee_threads;
        let marks: Vec<&str> = [(max, "max"), (knee, "knee")]
            .iter()
            .filter_map(|&(on, word)| on.then_some(word))
            .collect();
        let (s, l) = (&p.summary, &p.summary.latency);
        table.rows.push(vec![
            Cell::text(sweep.label.clone()),
            Cell::text(p.threads.to_string()),
            figure(s.throughput),
            Cell::text(s.main_op.clone()),
            figure(l.avg),
            figure(l.p95),
            figure(l.p99),
            figure(l.p999),
            Cell::text(s.errors.to_string()),
            Cell::text(s.validity.verdict.to_string()),
            Cell::text(marks.join(", ")),
            Cell::text(max.to_string()),
            Cell::text(knee.to_string()),
        ]);
    }
    table
}

/// The column of a sweep's table marking its maximum and knee (titled in Markdown only).
const MARKS: &str = "max, knee";

/// The lines under a sweep's table: the maximum and knee, their caveats, each degraded or
/// invalid point.
fn sweep_lines(sweep: &SweepFile) -> Vec<String> {
    let mut out = vec![match (sweep.max_threads, sweep.knee_threads) {
        (Some(m), Some(k)) => format!(
            "Maximum at {m} threads; knee (smallest count within {:.0}% of the maximum) at {k} threads.",
            sweep.tolerance * 100.0
        ),
        _ => "No usable points: no maximum or knee.".into(),
    }];
    out.extend(crate::experiment::knee_caveats::caveats(sweep));
    out.extend(
        (sweep.points.iter())
            .filter(|p| !p.summary.validity.is_valid())
            .map(|p| {
                format!(
                    "validity: {} threads is {}: {}",
                    p.threads,
                    p.summary.validity.verdict,
                    p.summary.validity.summary()
                )
            }),
    );
    // Where the point's client and server disagree (its cross-check's warnings).
    for p in &sweep.points {
        let warnings = p.crosscheck.iter().flat_map(|c| c.warnings.iter());
        out.extend(warnings.map(|w| format!("warning: {} threads: {w}", p.threads)));
    }
    out
}

/// A sweep as a terminal table: threads, throughput, latency, and the maximum and knee marked.
pub(crate) fn render_sweep(sweep: &SweepFile) -> String {
    let mut out = marker_line(sweep.standin, Format::Table);
    let t = sweep_table(sweep).terminal();
    out.push_str(&format!("Thread sweep: {}\n{t}\n", sweep.label));
    out.extend(sweep_lines(sweep).into_iter().map(|l| l + "\n"));
    out
}

/// A sweep as Markdown: the same table and lines as [`render_sweep`].
pub(crate) fn sweep_markdown(sweep: &SweepFile) -> String {
    let mut out = marker_line(sweep.standin, Format::Markdown);
    out.push_str(&format!(
        "### Thread sweep: {}\n\n",
        sweep.label.replace('|', "\\|")
    ));
    let mut table = sweep_table(sweep);
    for c in table.columns.iter_mut().filter(|c| c.csv == MARKS) {
        c.title = MARKS.into();
    }
    out.push_str(&table.markdown(HeaderRule::Spaced));
    out.push('\n');
    for line in sweep_lines(sweep) {
        out.push_str(&format!("- {}\n", line.replace('|', "\\|")));
    }
    out
}

/// A sweep's own run directory in a report format: a `--vary` or `--repeat`
/// sweep as its seed-2 table (values in the order given, as `sweep` printed it), one curve as its
/// table; JSON is every curve, in that order. HTML is the page (`html::page`).
pub(crate) fn render_sweep_dir(
    dir: &ExperimentDir,
    format: super::Format,
    columns: &Columns,
) -> Result<String, serde_json::Error> {
    let varied = vary_shown(dir).into_iter().next();
    let curves: Vec<SweepFile> = match &varied {
        Some(v) => v.outcome.curves.iter().map(|(_, s)| s.clone()).collect(),
        None => dir.sweeps().into_iter().map(|(_, s)| s).collect(),
    };
    if format == Format::Json {
        return serde_json::to_string_pretty(&curves);
    }
    if let Some(v) = varied {
        return Ok(render_vary(&v.outcome, format, columns));
    }
    let each: Vec<String> = curves
        .iter()
        .map(|s| match format {
            Format::Markdown => sweep_markdown(s),
            Format::Csv => sweep_table(s).csv(s.standin),
            _ => render_sweep(s),
        })
        .collect();
    Ok(each.join(if format == Format::Csv { "" } else { "\n" }))
}

/// What the terminal table of a `compare` shows under the comparison: with `--sweep --vary`,
/// each topology's seed-2 table (`varied`); with `--sweep`, each topology's curve and knee, and
/// the thread count its cells then used.
pub(crate) fn under_comparison(
    dir: &ExperimentDir,
    varied: &[SweepOutcome],
    columns: &Columns,
) -> String {
    let mut text = String::new();
    for v in varied {
        text.push_str(&format!("\n{}", render_vary(v, Format::Table, columns)));
    }
    let sweeps = dir.sweeps();
    if varied.is_empty() && !sweeps.is_empty() {
        text.extend(sweeps.iter().map(|(_, s)| format!("\n{}", render_sweep(s))));
        if let Some(line) = crate::experiment::knee_caveats::cells_at_knees(&sweeps) {
            text.push_str(&format!("{line}\n"));
        }
    }
    text
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiment::model::{CellSummary, SweepPoint, Variant};

    /// The seed-2 shape: three values × three repetitions at four thread counts.
    pub(crate) fn seed_two() -> SweepOutcome {
        let threads = vec![1, 10, 50, 100];
        let mut curves = Vec::new();
        for value in ["1", "10", "20"] {
            for repeat in 1..=3 {
                let points = threads
                    .iter()
                    .map(|&t| SweepPoint {
                        crosscheck: None,
                        threads: t,
                        summary: CellSummary {
                            throughput: 12_345.0 * f64::from(t) + f64::from(repeat) * 100.0,
                            ..Default::default()
                        },
                    })
                    .collect();
                curves.push((
                    Variant {
                        value: Some(value.into()),
                        repeat,
                    },
                    SweepFile {
                        label: format!("S2 readbatchsize={value} #{repeat}"),
                        points,
                        max_threads: None,
                        knee_threads: None,
                        tolerance: 0.05,
                        standin: true,
                        not_run: Vec::new(),
                        dead: None,
                        planned_threads: threads.clone(),
                        memory: None,
                    },
                ));
            }
        }
        SweepOutcome {
            property: Some("readbatchsize".into()),
            threads,
            curves,
            topology: None,
        }
    }

    #[test]
    fn the_compact_vary_table_fits_100_characters_and_wide_has_every_repetition() {
        let outcome = seed_two();
        for format in [Format::Table, Format::Markdown] {
            let text = render_vary(&outcome, format, &Columns::Compact);
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(widest <= 100, "{widest} characters:\n{text}");
            assert!(
                text.contains("readbatchsize=20 (min–max)")
                    && text.contains("1234700 (1234600–1234800)"),
                "the mean with its spread:\n{text}"
            );
            assert!(!text.contains("#2"), "{text}");
        }
        let wide = render_vary(&outcome, Format::Table, &Columns::Wide);
        for column in [
            "readbatchsize=1 #1",
            "readbatchsize=10 #3",
            "readbatchsize=20 mean",
        ] {
            assert!(wide.contains(column), "{column}:\n{wide}");
        }
        let csv = render_vary(&outcome, Format::Csv, &Columns::Compact);
        assert_eq!(
            csv.lines().next().map(|h| h.split(',').count()),
            Some(2 + 3 * (3 * 2 + 1)),
            "per value: each repetition and its verdict, then the mean"
        );
    }

    #[test]
    fn vary_csv_keeps_figures_numeric_with_validity_in_its_own_column() {
        // `6289 (degraded)` in a numeric column.
        let mut outcome = seed_two();
        outcome.curves[1].1.points[2]
            .summary
            .validity
            .degrade("too few operations");
        let csv = render_vary(&outcome, Format::Csv, &Columns::Wide);
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
        let mut degraded = 0;
        for line in lines {
            for (name, cell) in header.iter().zip(line.split(',')).skip(1) {
                if name.ends_with(" validity") {
                    degraded += usize::from(cell == "degraded");
                    assert!(["valid", "degraded"].contains(&cell), "{name}: {cell}");
                } else {
                    assert!(cell.parse::<f64>().is_ok(), "{name}: {cell:?} in\n{csv}");
                }
            }
        }
        assert_eq!(degraded, 1, "{csv}");
        assert!(
            header.contains(&"readbatchsize=1 #2 validity"),
            "{header:?}"
        );
    }

    #[test]
    fn points_degraded_or_invalid_are_listed_once_under_the_table_and_counted_on_the_chart() {
        let mut outcome = seed_two();
        for (_, s) in outcome.curves.iter_mut().take(4) {
            s.points[0]
                .summary
                .validity
                .degrade("too few operations: give more --records");
        }
        let md = render_vary(&outcome, Format::Markdown, &Columns::Compact);
        assert_eq!(md.matches("give more --records").count(), 4, "{md}");
        assert!(md.contains("- readbatchsize=1 at 1 threads, repeat 2, is degraded: too few"));
        let chart = vary_chart(&outcome, "S2 on single")
            .map(|c| c.svg)
            .unwrap_or_default();
        assert!(
            !chart.contains("give more --records"),
            "no list under the chart"
        );
        assert!(
            chart.contains("4 measured points are degraded or invalid"),
            "{chart}"
        );
    }

    #[test]
    fn points_whose_client_and_server_disagree_are_listed_under_the_tables() {
        use crate::experiment::crosscheck::CrossCheck;
        let mut outcome = seed_two();
        let said =
            "the server counted 2.0 round trips (find + getMore) per READ: an extra getMore each";
        let md = render_vary(&outcome, Format::Markdown, &Columns::Compact);
        assert!(!md.contains("Client and server disagree"), "{md}");
        let (v, s) = &mut outcome.curves[4];
        let value = v.value.clone().unwrap_or_default();
        let repeat = v.repeat;
        s.points[1].crosscheck = Some(CrossCheck {
            warnings: vec![said.into()],
            ..CrossCheck::default()
        });
        let threads = s.points[1].threads;
        let line = format!("- readbatchsize={value} at {threads} threads, repeat {repeat}: {said}");
        for format in [Format::Markdown, Format::Table] {
            let text = render_vary(&outcome, format, &Columns::Compact);
            assert!(text.contains("Client and server disagree:"), "{text}");
            assert!(text.contains(&line), "{line}\n{text}");
        }
        let sweep = render_sweep(&outcome.curves[4].1);
        assert!(
            sweep.contains(&format!("warning: {threads} threads: {said}")),
            "{sweep}"
        );
    }

    #[test]
    fn the_vary_table_shows_memory_per_value_and_says_what_is_not_reported() {
        let mut outcome = seed_two();
        let text = render_vary(&outcome, Format::Table, &Columns::Compact);
        assert!(
            !text.contains("Server memory"),
            "nothing recorded, nothing shown:\n{text}"
        );
        for (i, (v, s)) in outcome.curves.iter_mut().enumerate() {
            s.standin = false;
            let twenty = v.value.as_deref() == Some("20");
            s.memory = Some(MemoryAtEnd {
                resident_bytes: Some((1 + i as u64) << 30),
                cache_bytes: (!twenty).then_some(512 << 20),
                cache_max_bytes: Some(2 << 30),
                index_bytes: Some(1 << 30),
                index_cache_bytes: (!twenty).then_some(3 << 29),
                members: vec!["mongos0".into(), "sh0".into(), "cfg0".into()],
                flagged: Vec::new(),
            });
        }
        let text = render_vary(&outcome, Format::Table, &Columns::Compact);
        assert!(
            text.contains("index (on disk, compressed)")
                && text.contains("index in cache (incl. shard key)"),
            "{text}"
        );
        // The last repetition of each value: curves 3, 6 and 9.
        for line in [
            "│ 1             │ 3.0 GiB  │ 512.0 MiB of 2.0 GiB    │ 1.0 GiB (50% of the cache)  │ 1.5 GiB                          │ mongos0, sh0, cfg0 │",
            "│ 20            │ 9.0 GiB  │ not reported            │ 1.0 GiB (50% of the cache)  │ not reported                     │ mongos0, sh0, cfg0 │",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
        assert!(
            !text.contains(" 0 B"),
            "never a 0 for what is not reported:\n{text}"
        );
        for (_, s) in &mut outcome.curves {
            s.standin = true;
        }
        let md = render_vary(&outcome, Format::Markdown, &Columns::Compact);
        assert!(
            md.contains("| 20 | 9.0 GiB | not reported (stand-in: no WiredTiger) |"),
            "{md}"
        );
        let chart = vary_chart(&outcome, "Q20M on single").expect("a chart");
        assert!(
            chart.svg.contains("resident 9.0 GiB"),
            "the chart says it too"
        );
        // A resident memory no machine has is not a number in the table, and is said under it.
        for (_, s) in &mut outcome.curves {
            if let Some(m) = s.memory.as_mut() {
                m.resident_bytes = None;
                m.flagged = vec!["entry reports a resident memory of 56.0 TiB, above this machine's 8.0 GiB: not used".into()];
            }
        }
        let md = render_vary(&outcome, Format::Markdown, &Columns::Compact);
        assert!(md.contains("| 20 | implausible: not used |"), "{md}");
        assert!(
            md.contains("Left out as implausible:\n- entry reports a resident memory of 56.0 TiB"),
            "{md}"
        );
        assert!(!md.contains("56.0 TiB |"), "{md}");
    }
}
