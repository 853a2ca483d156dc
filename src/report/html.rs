//! The report page: one self-contained HTML file (inline CSS and SVG, no script, nothing fetched)
//! with the comparison table, the charts, the validity notes and the run's facts (scenarios and
//! their resolved properties, topology plans, server versions, host, microshard version, dates),
//! so one file can be attached to a write-up or opened years later.
//!
//! Stand-in figures carry the marker at the top of the page, in the title and on every chart.

use std::fmt::Write as _;

use super::sweep::{sweep_table, vary_table};
use super::table::Table;
use super::{Columns, Report, STANDIN_MARKER, charts, footer};
use crate::experiment::model::{CellFile, ExperimentConfig, SweepFile};
use crate::measure::validity::Verdict;

/// Everything the page shows; only the report is required.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Page<'a> {
    /// The comparison.
    pub report: &'a Report,
    /// The experiment's configuration (`experiment.json`), when the page is made from a run.
    pub config: Option<&'a ExperimentConfig>,
    /// Every cell file, for plans, server versions and dates.
    pub cells: &'a [CellFile],
    /// Thread sweeps, by label.
    pub sweeps: &'a [(String, SweepFile)],
    /// The seed-2 tables and charts (`--vary`), shown before the curves they are made of.
    pub varies: &'a [super::sweep::VaryShown],
    /// Draw every cell's timeline, not only those of degraded or invalid cells.
    pub all_timelines: bool,
}

impl<'a> Page<'a> {
    /// The page of a comparison alone, with no run behind it.
    pub(crate) fn of(report: &'a Report) -> Page<'a> {
        Page {
            report,
            config: None,
            cells: &[],
            sweeps: &[],
            varies: &[],
            all_timelines: false,
        }
    }
}

/// Escapes text for HTML element content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    // `&` first, so the entities written after it are not escaped again.
    (s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;"))
    .replace('"', "&quot;")
    .replace('\'', "&#39;")
}

const CSS: &str = r#"
:root { color-scheme: light; }
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 24px auto; max-width: 1180px; padding: 0 16px; color: #111; line-height: 1.45; }
h1 { font-size: 1.7em; margin: 0.2em 0; overflow-wrap: break-word; }
h2 { font-size: 1.3em; border-bottom: 2px solid #ddd; padding-bottom: 4px; margin-top: 1.8em; }
h3 { font-size: 1.08em; margin-top: 1.3em; }
.standin { background: #fdecea; border: 2px solid #b71c1c; color: #8a1111; padding: 10px 14px; font-weight: bold; font-size: 1.1em; margin: 8px 0 16px; }
ul.meta { color: #444; margin: 0.2em 0 1em; padding-left: 1.2em; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.86em; }
th, td { border: 1px solid #ccc; padding: 4px 7px; text-align: right; vertical-align: top; }
th { background: #f3f3f3; }
td.text, th.text { text-align: left; }
table.results td, table.results th, table.latency td, table.latency th, table.wide td, table.wide th, table.sweep th, table.servers td:first-child { white-space: nowrap; }
.scroll { overflow-x: auto; max-width: 100%; }
summary { overflow-wrap: break-word; }
tr.degraded td { background: #fff7e0; }
tr.invalid td { background: #f2f2f2; color: #666; text-decoration: line-through; }
tr.invalid td.validity, tr.degraded td.validity { text-decoration: none; font-weight: bold; color: #8a1111; }
figure { margin: 16px 0 28px; }
figure svg { max-width: 100%; height: auto; border: 1px solid #e3e3e3; }
figcaption { color: #444; font-size: 0.9em; }
dl { display: grid; grid-template-columns: minmax(0, max-content) minmax(0, 1fr); gap: 2px 16px; font-size: 0.92em; }
dt { font-weight: bold; overflow-wrap: break-word; }
dd { margin: 0; overflow-wrap: anywhere; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 0.85em; overflow-wrap: anywhere; }
table.servers td, table.plan td { white-space: nowrap; }
table.servers code { overflow-wrap: normal; }
table.plan td:last-child { white-space: normal; min-width: 32em; }
ul.notes li { margin: 3px 0; }
ul.notes li, ul.found li, ul.meta li { overflow-wrap: break-word; }
details { margin: 6px 0; }
summary { cursor: pointer; font-weight: bold; }
footer { margin-top: 3em; color: #666; font-size: 0.85em; }
"#;

/// The page's head, up to and with `<body>`.
pub(crate) fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(title)
    )
}

/// A list of escaped items.
pub(crate) fn ul<S: AsRef<str>>(out: &mut String, class: &str, items: impl IntoIterator<Item = S>) {
    let _ = writeln!(out, "<ul class=\"{class}\">");
    for item in items {
        let _ = writeln!(out, "<li>{}</li>", esc(item.as_ref()));
    }
    out.push_str("</ul>\n");
}

/// The whole page.
pub(crate) fn page(p: &Page) -> String {
    let r = p.report;
    let standin = match r.standin() {
        true => " (stand-in figures, not MongoDB)",
        false => "",
    };
    let mut out = head(&format!("microshard report: {}{standin}", r.experiment));
    if r.standin() {
        let _ = writeln!(
            out,
            "<div class=\"standin\" id=\"standin\">{}: every figure on this page was measured against microshard's stand-in server. They are not MongoDB figures. {}</div>",
            esc(STANDIN_MARKER),
            esc(r.capacity.as_deref().unwrap_or(""))
        );
    }
    if let Some(i) = &r.interrupted {
        let _ = writeln!(
            out,
            "<div class=\"standin\" id=\"interrupted\">{}</div>",
            esc(&i.sentence())
        );
    }
    let _ = writeln!(out, "<h1>Experiment {}</h1>", esc(&r.experiment));
    meta_line(&mut out, p);
    // A sweep-only run has no comparison: its tables are the sweeps'.
    found_section(&mut out, r);
    if r.rows.iter().any(|row| row.repeats > 0) || p.sweeps.is_empty() {
        results_section(&mut out, r);
        ceiling_section(&mut out, r);
        validity_section(&mut out, r);
        timelines_section(&mut out, p);
    }
    charts_section(&mut out, p);
    vary_section(&mut out, p);
    sweeps_section(&mut out, p);
    facts_section(&mut out, p);
    let _ = writeln!(
        out,
        "<footer>Written by microshard {} at {}. The page is self-contained: no script, nothing fetched.</footer>\n</body>\n</html>",
        esc(env!("CARGO_PKG_VERSION")),
        esc(&super::when::day_and_minute(
            &chrono::Utc::now().to_rfc3339()
        ))
    );
    out
}

/// The run's facts under the title, as a short list: when, with what, at which sizes.
fn meta_line(out: &mut String, p: &Page) {
    let mut items = Vec::new();
    let finished: Vec<&str> = p.cells.iter().map(|c| c.finished.as_str()).collect();
    if let Some(c) = p.config {
        items.push(super::when::experiment_times(&c.created, &finished));
        items.push(format!(
            "microshard {}, {} backend",
            c.tool_version, c.command.servers.backend
        ));
    }
    items.push(p.report.scale_note.clone());
    ul(out, "meta", items);
}

/// "What this experiment found", first on the page.
fn found_section(out: &mut String, r: &Report) {
    if r.found.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"found\">What this experiment found</h2>\n");
    ul(out, "found", &r.found);
}

/// The comparison as the compact table, its latency detail, and every column folded away
/// (each scrolls inside its own box on a narrow screen).
fn results_section(out: &mut String, r: &Report) {
    out.push_str("<h2 id=\"results\">Results</h2>\n");
    results_table(out, r, "results", &Columns::Compact);
    ul(out, "notes", footer(r, &Columns::Compact));
    out.push_str("<h3>Latency detail</h3>\n");
    results_table(out, r, "latency", &Columns::latency_detail());
    out.push_str("<details class=\"wide\"><summary>Every column</summary>\n");
    results_table(out, r, "wide", &Columns::Wide);
    out.push_str("</details>\n");
}

/// `compare --ceiling`: the ceilings' table, the ratio taken apart and one chart per scenario
/// of intended latency against the offered rate.
fn ceiling_section(out: &mut String, r: &Report) {
    let Some(c) = &r.ceiling else {
        return;
    };
    let _ = writeln!(
        out,
        "<h2 id=\"ceilings\">Ceilings</h2>\n<p>{}</p>",
        esc(&c.title())
    );
    let open = ("<table class=\"ceilings\">\n<thead><tr>", "\n");
    table_box(out, open, &c.table(), None, false);
    ul(out, "notes", c.decomposed.iter().map(|d| d.sentence()));
    let where_ = super::where_lines(r);
    for scenario in &super::ceiling::scenarios(c) {
        if let Some(chart) = charts::ceiling(c, scenario, &where_, r.standin()) {
            let caption = format!(
                "{scenario}: intended latency by offered rate, one line per topology (also ceiling-{scenario}.svg / .png)."
            );
            figure(out, &format!("chart-ceiling-{scenario}"), chart, &caption);
        }
    }
}

/// One table of the report's rows with these columns, a row class per verdict.
fn results_table(out: &mut String, r: &Report, class: &str, columns: &Columns) {
    let open = format!("<table class=\"{class}\">\n<thead><tr>");
    let classes = (r.rows.iter()).map(|row| match row.repeats {
        0 => "missing",
        _ => row.validity.verdict.as_str(),
    });
    let classes: Vec<&str> = classes.collect();
    table_box(out, (&open, "\n"), &columns.table(r), Some(&classes), false);
}

/// A table of escaped cells in a scrolling box; `open` is the markup before the first header
/// cell and `mid` what comes between the header and the body. With `verdicts` (one per row) each
/// row is classed by its verdict, each column of words classed `text` and the verdicts' column
/// `validity` — a column of words too where `validity_text` (a sweep's; the comparison's is not);
/// without, no cell is classed.
pub(crate) fn table_box(
    out: &mut String,
    (open, mid): (&str, &str),
    table: &Table,
    verdicts: Option<&[&str]>,
    validity_text: bool,
) {
    let shown = table.shown();
    let validity = |i: usize| verdicts.is_some() && shown[i].title == "validity";
    let text = |i: usize| verdicts.is_some() && shown[i].left && (validity_text || !validity(i));
    let _ = write!(out, "<div class=\"scroll\">{open}");
    for (i, c) in shown.iter().enumerate() {
        let class = if text(i) { " class=\"text\"" } else { "" };
        let _ = write!(out, "<th{class}>{}</th>", esc(&c.title));
    }
    let _ = writeln!(out, "</tr></thead>{mid}<tbody>");
    for (r, cells) in table.read_rows().iter().enumerate() {
        let _ = match verdicts {
            Some(classes) => write!(out, "<tr class=\"{}\">", classes[r]),
            None => write!(out, "<tr>"),
        };
        for (i, cell) in cells.iter().enumerate() {
            let class = match (text(i), validity(i)) {
                (true, true) => " class=\"text validity\"",
                (false, true) => " class=\"validity\"",
                (true, false) => " class=\"text\"",
                (false, false) => "",
            };
            let _ = write!(out, "<td{class}>{}</td>", esc(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

fn validity_section(out: &mut String, r: &Report) {
    out.push_str("<h2 id=\"validity\">Validity</h2>\n");
    if r.validity_notes.is_empty() {
        out.push_str("<p>Every measured cell is valid: no member stopped answering, the run never stalled, and no operation failed.</p>\n");
        return;
    }
    let _ = writeln!(out, "<p>{}</p>", esc(&validity_words(r)));
    ul(out, "notes validity-notes", &r.validity_notes);
}

/// What the Validity section's cells are, in the README's words ("Results you can trust"):
/// degraded is a figure to use with its caveat, invalid one never to publish, not run none.
fn validity_words(r: &Report) -> String {
    let measured = |v: Verdict| {
        r.rows
            .iter()
            .any(|x| x.repeats > 0 && x.validity.verdict == v)
    };
    let mut words = Vec::new();
    if measured(Verdict::Degraded) {
        words.push("Degraded cells are figures you may use with the caveat named beside each.");
    }
    if measured(Verdict::Invalid) {
        words.push("Invalid cells do not measure what they claim: never publish them as figures.");
    }
    if r.rows.iter().any(|x| x.not_run.is_some()) {
        words.push("Cells not run have no figure (compare --resume DIR measures them).");
    }
    if r.interrupted.is_some() {
        words.push("Cells marked interrupted were never run: the experiment stopped before them (the banner above says how to finish it).");
    }
    if words.is_empty() {
        words.push("Each cell below is named with its verdict and why.");
    }
    words.join(" ")
}

/// A chart and its caption, the SVG inline without its XML prolog; or why there is none.
pub(crate) fn figure(
    out: &mut String,
    id: &str,
    chart: Result<charts::Chart, charts::ChartError>,
    caption: &str,
) {
    match chart {
        Ok(c) => {
            let svg = &c.svg[c.svg.find("<svg").unwrap_or(0)..];
            let _ = writeln!(
                out,
                "<figure id=\"{id}\">\n{svg}\n<figcaption>{}</figcaption>\n</figure>",
                esc(caption)
            );
        }
        Err(e) => {
            let _ = writeln!(out, "<p>{}</p>", esc(&e.to_string()));
        }
    }
}

/// Each cell's timeline beside its verdict: every degraded or invalid cell, or all of them, in
/// table order; a cell too short for a timeline gets one line instead of an empty chart.
fn timelines_section(out: &mut String, p: &Page) {
    let shown: Vec<&CellFile> = super::timeline::table_order(p.report, p.cells)
        .into_iter()
        .filter(|c| p.all_timelines || !c.summary.validity.is_valid())
        .collect();
    if shown.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"timelines\">Timelines</h2>\n<p>Operations per second over each run, in the table's order; member outages, server stalls and the warm-up are shaded and named under each chart.</p>\n");
    use crate::experiment::results::sanitize;
    for cell in shown {
        let name = super::topology_label(&cell.cell.topology, cell.topology.as_ref());
        let (t, s, r) = (
            sanitize(&name),
            sanitize(&cell.cell.scenario),
            cell.cell.repeat,
        );
        let id = format!("timeline-{t}-{s}-{r}");
        if let Some(line) = super::timeline::too_short(cell, &name) {
            let _ = writeln!(
                out,
                "<p class=\"timeline-short\" id=\"{id}\">{}</p>",
                esc(&line)
            );
            continue;
        }
        // The chart's file stem beside its cell, as `report::timeline_stem` writes it.
        let caption = format!(
            "{} on {name}, repeat {r}: {} (also cells/{t}/{s}-r{r}.timeline.svg / .png in the run directory).",
            cell.cell.scenario, cell.summary.validity.verdict,
        );
        figure(out, &id, super::timeline::timeline(cell, &name), &caption);
    }
}

fn charts_section(out: &mut String, p: &Page) {
    let r = p.report;
    if !r.rows.iter().any(|row| row.repeats > 0) {
        return;
    }
    out.push_str("<h2 id=\"charts\">Charts</h2>\n");
    figure(
        out,
        "chart-throughput",
        charts::throughput(r),
        "Throughput by scenario and topology (also throughput.svg / throughput.png in the run directory).",
    );
    figure(
        out,
        "chart-latency",
        charts::latency(r),
        "Latency percentiles of the main operation (also latency.svg / latency.png).",
    );
}

/// The seed-2 tables, each with its points degraded or invalid and its chart.
fn vary_section(out: &mut String, p: &Page) {
    for v in p.varies {
        let id = format!("vary-{}", crate::experiment::results::sanitize(&v.label));
        let _ = writeln!(
            out,
            "<h2 id=\"{id}\">{}</h2>",
            esc(&super::sweep::vary_heading(&v.outcome, Some(&v.label)))
        );
        let (open, table) = (
            "<table class=\"vary\"><thead><tr>",
            vary_table(&v.outcome, false),
        );
        table_box(out, (open, ""), &table, None, false);
        let notes = super::sweep::vary_point_notes(&v.outcome);
        if !notes.is_empty() {
            out.push_str("<p>Points degraded or invalid:</p>\n");
            ul(out, "notes", &notes);
        }
        let caption = format!("{} (also {}.svg / .png).", v.label, v.stem);
        figure(
            out,
            &format!("chart-{id}"),
            super::sweep::vary_chart(&v.outcome, &v.label),
            &caption,
        );
    }
}

fn sweeps_section(out: &mut String, p: &Page) {
    if p.sweeps.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"sweeps\">Thread sweeps</h2>\n");
    for (label, s) in p.sweeps {
        let facts = super::sweep_topology(p.report, s);
        let name = charts::sweep_label(s, facts);
        let _ = writeln!(out, "<h3>{}</h3>", esc(&name));
        if s.standin {
            let _ = writeln!(out, "<p class=\"standin\">{}</p>", esc(STANDIN_MARKER));
        }
        let classes: Vec<&str> = (s.points.iter())
            .map(|p| p.summary.validity.verdict.as_str())
            .collect();
        let open = ("<table class=\"sweep\"><thead><tr>", "");
        table_box(out, open, &sweep_table(s), Some(&classes), true);
        let data = &p.report.scale_note;
        figure(
            out,
            &format!("chart-sweep-{}", esc(label)),
            charts::sweep(s, facts, data),
            &format!("Thread sweep {name} (also sweep-{label}.svg / .png)."),
        );
        figure(
            out,
            &format!("chart-sweep-{}-latency", esc(label)),
            charts::sweep_latency(s, facts, data),
            &format!("Its latency by threads (also sweep-{label}-latency.svg / .png)."),
        );
    }
}

fn dl(out: &mut String, items: &[(String, String)]) {
    out.push_str("<dl>\n");
    for (k, v) in items {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    }
    out.push_str("</dl>\n");
}

/// Flattens a JSON value into `key: value` pairs (`a.b` for nested objects).
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        serde_json::Value::Null => {}
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// The run's facts: the experiment's record, the host, the topologies and their servers, the
/// plans and every scenario's resolved properties.
fn facts_section(out: &mut String, p: &Page) {
    out.push_str("<h2 id=\"facts\">The run</h2>\n");
    if let Some(c) = p.config {
        out.push_str("<h3>Experiment</h3>\n");
        dl(out, &experiment_items(c, p));
        host_facts(out, c);
    }
    servers(out, p);
    plans(out, p);
    if let Some(c) = p.config {
        scenario_properties(out, c);
    }
}

/// What failed operations make of a cell (README, "Results you can trust"): any failure
/// degrades it, a share above `microshard.maxerrorrate` makes it invalid. The threshold is each
/// scenario's resolved property where one set it, else the recorded default.
fn failure_rule(c: &ExperimentConfig) -> String {
    let default = c.degraded_error_fraction.to_string();
    let set = c
        .properties
        .values()
        .map(|p| p.get("microshard.maxerrorrate"));
    let mut rates: std::collections::BTreeSet<&str> = set.map(|r| r.unwrap_or(&default)).collect();
    if rates.is_empty() {
        rates.insert(&default);
    }
    let percent = |r: &&str| match r.parse::<f64>() {
        Ok(x) => format!("{}%", (x * 100_000.0).round() / 1000.0),
        Err(_) => r.to_string(),
    };
    let shown: Vec<String> = rates.iter().map(percent).collect();
    format!(
        "any makes a cell degraded; above {} of its operations (microshard.maxerrorrate), invalid",
        shown.join(" or ")
    )
}

/// The experiment's record as name/value pairs: what was asked, at which sizes, and the
/// settings given only when they were.
fn experiment_items(c: &ExperimentConfig, p: &Page) -> Vec<(String, String)> {
    let cmd = &c.command;
    let topologies: Vec<&str> = (p.report.topologies.iter())
        .map(|t| t.name.as_str())
        .collect();
    // A thread sweep alone has no baseline.
    let compares = p.sweeps.is_empty() || p.report.rows.iter().any(|r| r.repeats > 0);
    let sweep_threads: Vec<String> = cmd.sweep_threads.iter().map(u32::to_string).collect();
    let mongod_args = &cmd.servers.mongod_args;
    let items = [
        ("name", Some(cmd.name.clone())),
        ("created", Some(super::when::day_and_minute(&c.created))),
        ("microshard version", Some(c.tool_version.clone())),
        ("topologies", Some(topologies.join(", "))),
        ("scenarios", Some(cmd.scenarios.join(", "))),
        ("repetitions per cell", Some(cmd.repeat.to_string())),
        ("backend", Some(cmd.servers.backend.to_string())),
        ("sizes", Some(c.scale_note.clone())),
        ("full sizes", Some(cmd.workload.full.to_string())),
        ("failed operations", Some(failure_rule(c))),
        ("baseline", compares.then(|| p.report.baseline.clone())),
        (
            "server binaries",
            (cmd.servers.bin_dir.as_ref()).map(|d| d.display().to_string()),
        ),
        ("image", cmd.image.clone()),
        ("run phase bound (s)", cmd.duration_s.map(|d| d.to_string())),
        ("client threads", cmd.threads.map(|t| t.to_string())),
        (
            "calibrated client ceiling (ops/s)",
            c.client_ceiling.map(|x| format!("{x:.0}")),
        ),
        ("thread sweep", cmd.sweep.then(|| sweep_threads.join(", "))),
        (
            "extra mongod arguments",
            (!mongod_args.is_empty()).then(|| mongod_args.join(" ")),
        ),
        ("stand-in", Some(p.report.standin().to_string())),
    ];
    (items.into_iter())
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect()
}

/// The client machine's facts, as recorded with the experiment.
fn host_facts(out: &mut String, c: &ExperimentConfig) {
    out.push_str("<h3>Host (the client machine)</h3>\n");
    let mut host = Vec::new();
    flatten(
        "",
        &serde_json::to_value(&c.host).unwrap_or_default(),
        &mut host,
    );
    // Byte counts read as sizes too ("memory_bytes 25276071936").
    for (k, v) in host.iter_mut() {
        if let (true, Ok(n)) = (k.ends_with("_bytes"), v.parse::<u64>()) {
            *v = format!("{n} ({})", crate::experiment::metrics::bytes(n));
        }
    }
    if host.is_empty() {
        out.push_str("<p>Not recorded.</p>\n");
    } else {
        dl(out, &host);
    }
}

/// Every scenario's resolved properties, one folded table each.
fn scenario_properties(out: &mut String, c: &ExperimentConfig) {
    out.push_str("<h3>Scenarios and their resolved properties</h3>\n");
    for (name, props) in &c.properties {
        let props = props.by_name();
        let _ = writeln!(
            out,
            "<details class=\"scenario\"><summary>{} ({} properties)</summary>\n<div class=\"scroll\"><table><tbody>",
            esc(name),
            props.len()
        );
        for (k, v) in props {
            let _ = writeln!(
                out,
                "<tr><td class=\"text\"><code>{}</code></td><td class=\"text\"><code>{}</code></td></tr>",
                esc(k),
                esc(v)
            );
        }
        out.push_str("</tbody></table></div></details>\n");
    }
}

fn servers(out: &mut String, p: &Page) {
    out.push_str("<h3>Topologies and servers</h3>\n<div class=\"scroll\"><table class=\"servers\"><thead><tr><th class=\"text\">topology</th><th class=\"text\">given as</th><th class=\"text\">size</th><th class=\"text\">server</th><th class=\"text\">members' versions</th></tr></thead><tbody>\n");
    for t in &p.report.topologies {
        let members = charts::distinct(
            p.cells
                .iter()
                .filter(|c| c.cell.topology == t.given)
                .flat_map(|c| c.server_versions.iter().map(|(m, v)| format!("{m}: {v}"))),
        );
        let _ = writeln!(
            out,
            "<tr><td class=\"text\">{}</td><td class=\"text\"><code>{}</code></td><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td></tr>",
            esc(&t.name),
            esc(&t.given),
            esc(t.size.as_deref().unwrap_or("not recorded")),
            esc(&charts::server_words(t)),
            esc(&members.join(", "))
        );
    }
    out.push_str("</tbody></table></div>\n");
}

fn plans(out: &mut String, p: &Page) {
    for t in &p.report.topologies {
        let mut mine = p.cells.iter().filter(|c| c.cell.topology == t.given);
        let Some(plan) = mine.find_map(|c| c.topology.as_ref()) else {
            continue;
        };
        let _ = writeln!(
            out,
            "<h3>Plan of {} ({} backend{})</h3>",
            esc(&plan.name),
            plan.backend,
            if plan.runs_image() {
                format!(", image {}", esc(&plan.image))
            } else {
                String::new()
            }
        );
        out.push_str("<div class=\"scroll\"><table class=\"plan\"><thead><tr><th class=\"text\">member</th><th class=\"text\">role</th><th class=\"text\">replica set</th><th>port</th><th>cache GB</th><th class=\"text\">cpuset</th><th>memory limit GB</th><th class=\"text\">command line</th></tr></thead><tbody>\n");
        let gb = |g: Option<f64>| g.map_or_else(|| "—".into(), crate::topology::format_gb);
        for m in &plan.members {
            let _ = writeln!(
                out,
                "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td><td>{}</td><td class=\"text\"><code>{}</code></td></tr>",
                esc(&m.name),
                m.role,
                esc(m.replica_set.as_deref().unwrap_or("—")),
                m.port,
                gb(m.cache_gb),
                esc(m.cpuset.as_deref().unwrap_or("—")),
                gb(m.memory_limit_gb),
                esc(&crate::redact::redact_text(&m.argv.join(" ")))
            );
        }
        out.push_str("</tbody></table></div>\n");
        if !plan.notes.is_empty() {
            ul(out, "notes", &plan.notes);
        }
    }
}

/// A page's head, the stand-in marker when its figures are the stand-in's, and its title.
pub(crate) fn titled(title: &str, standin: bool) -> String {
    let mut out = head(title);
    if standin {
        let _ = writeln!(out, "<div class=\"standin\">{}</div>", esc(STANDIN_MARKER));
    }
    let _ = writeln!(out, "<h1>{}</h1>", esc(title));
    out
}

/// A page holding one table (used by `diff --format html`).
pub(crate) fn table_page(title: &str, standin: bool, table: &Table) -> String {
    let mut out = titled(title, standin);
    table_box(&mut out, ("<table><thead><tr>\n", ""), table, None, false);
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{cell, config};

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn page_has_table_rows_marker_and_facts() {
        let mut cells = vec![
            cell("single", "S1", 1, 1000.0),
            cell("microshard-2", "S1", 1, 1900.0),
        ];
        cells[1].summary.standin = true;
        cells[1]
            .summary
            .validity
            .invalid("sh0 stopped answering at 2.0 s");
        let mut cfg = config(false);
        cfg.host.memory_bytes = Some(25_276_071_936);
        let report = crate::report::build_from(&cfg, &cells);
        let html = page(&Page {
            report: &report,
            config: Some(&cfg),
            cells: &cells,
            sweeps: &[],
            varies: &[],
            all_timelines: false,
        });
        assert!(html.starts_with("<!DOCTYPE html>"));
        // A byte count reads as a size.
        assert!(html.contains("25276071936 (23.5 GiB)"), "{html}");
        assert!(
            html.contains("id=\"timelines\"") && html.contains("id=\"timeline-"),
            "the invalid cell's timeline is on the page"
        );
        // A row each in the compact, latency-detail and every-column tables.
        assert_eq!(html.matches("<tr class=\"valid\">").count(), 3);
        assert_eq!(html.matches("<tr class=\"invalid\">").count(), 3);
        assert!(html.contains("id=\"standin\""));
        assert!(html.contains("sh0 stopped answering"));
        assert!(html.contains("<svg"));
        assert!(!html.contains("<script"), "no script");
        assert!(
            !html.contains(" src=") && !html.contains(" href="),
            "nothing is fetched"
        );
        assert!(html.contains("100000 records (laptop scale)"));
    }

    /// The Validity section calls degraded cells usable with their caveat
    /// (never lumped with invalid ones), and the facts state the failure rule as the README does.
    #[test]
    fn validity_and_facts_use_the_readme_words() {
        let mut cells = vec![
            cell("single", "S1", 1, 1000.0),
            cell("microshard-2", "S1", 1, 1900.0),
        ];
        cells[0]
            .summary
            .validity
            .degrade("12 of 1,000 operations failed (1.20 %)");
        let mut cfg = config(false);
        let report = crate::report::build_from(&cfg, &cells);
        let words = validity_words(&report);
        assert_eq!(
            words,
            "Degraded cells are figures you may use with the caveat named beside each."
        );
        cells[1]
            .summary
            .validity
            .invalid("sh0 stopped answering at 2.0 s");
        let report = crate::report::build_from(&cfg, &cells);
        assert!(
            validity_words(&report).ends_with(
                "Invalid cells do not measure what they claim: never publish them as figures."
            ),
            "{}",
            validity_words(&report)
        );
        let rule = "any makes a cell degraded; above 1% of its operations (microshard.maxerrorrate), invalid";
        assert_eq!(failure_rule(&cfg), rule);
        let page = page(&Page {
            report: &report,
            config: Some(&cfg),
            cells: &cells,
            sweeps: &[],
            varies: &[],
            all_timelines: false,
        });
        assert!(
            page.contains(rule) && !page.contains("degraded above"),
            "the facts"
        );
        // A scenario that set its own threshold is shown with it.
        let props = crate::workload::Properties::from_pairs([("microshard.maxerrorrate", "0.05")]);
        cfg.properties.insert("S1".into(), props);
        assert!(
            failure_rule(&cfg).contains("above 5% of its operations"),
            "{}",
            failure_rule(&cfg)
        );
    }

    /// A sub-second cell is one line, not an empty chart; timelines come in
    /// the table's order.
    #[test]
    fn timelines_in_table_order_and_a_line_for_a_short_cell() {
        let mut cells = vec![
            cell("microshard-2", "S2", 1, 1900.0),
            cell("single", "S2", 1, 1000.0),
            cell("single", "S1", 1, 14_000.0),
        ];
        cells[2].summary.runtime_ms = 400.0;
        let cfg = config(false);
        let report = crate::report::build_from(&cfg, &cells);
        let html = page(&Page {
            report: &report,
            config: Some(&cfg),
            cells: &cells,
            sweeps: &[],
            varies: &[],
            all_timelines: true,
        });
        let short = "S1 on single (repeat 1, valid) lasted 0.4 s: too short for a timeline.";
        assert!(
            html.contains(&format!(
                "<p class=\"timeline-short\" id=\"timeline-single-S1-1\">{short}</p>"
            )),
            "{html}"
        );
        assert!(!html.contains("<figure id=\"timeline-single-S1-1\""));
        let at = |id: &str| {
            html.find(&format!("id=\"timeline-{id}\""))
                .unwrap_or(usize::MAX)
        };
        assert!(at("single-S1-1") < at("single-S2-1"));
        assert!(
            at("single-S2-1") < at("microshard-2-S2-1") && at("microshard-2-S2-1") < usize::MAX
        );
    }
}
