//! Experiment reports: the comparison table (terminal, Markdown, CSV, JSON, one HTML page),
//! `diff` between two experiments, and charts (SVG, with a PNG beside each).
//!
//! Reports are computed from the results directory alone (configuration + cell files), so a
//! finished, interrupted or copied experiment reports the same way.

pub(crate) mod capacity;
pub(crate) mod ceiling;
pub(crate) mod ceiling_dir;
pub mod charts;
pub(crate) mod columns;
pub(crate) mod diff;
pub(crate) mod diff_checks;
mod files;
pub(crate) mod found;
#[cfg(test)]
mod golden_tests;
pub(crate) mod history;
pub(crate) mod html;
pub mod png;
pub(crate) mod redact_paths;
mod render;
pub(crate) mod reproduced;
mod rows;
#[cfg(test)]
mod run_tests;
pub(crate) mod searches;
pub(crate) mod stats;
pub(crate) mod sweep;
pub(crate) mod table;
pub mod timeline;
pub(crate) mod when;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::experiment::model::{
    CellFile, CompareCommand, ExperimentConfig, Latency, NotRun, SweepFile,
};
use crate::experiment::results::{ExperimentDir, ResultsError};
use crate::measure::validity::{Validity, Verdict};
pub(crate) use crate::topology::topology_label;
pub use columns::Columns;
pub(crate) use files::ReportError;
pub(crate) use files::{check_replaceable, write_reports, write_timelines};
pub(crate) use render::render_dir;

pub(crate) use crate::measure::STANDIN_MARKER;

pub(crate) use stats::ALPHA;

/// How a report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// A terminal table.
    Table,
    /// A GitHub-flavoured Markdown table for write-ups.
    Markdown,
    /// Comma-separated values with a header row.
    Csv,
    /// One JSON document.
    Json,
    /// One self-contained HTML page: table, charts, validity notes and the run's facts.
    Html,
}

/// One row: a scenario on a topology, aggregated over its repetitions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    /// Scenario name.
    pub scenario: String,
    /// Topology name.
    pub topology: String,
    /// Repetitions measured (0 = not measured yet).
    pub repeats: usize,
    /// Client threads (of the last repetition).
    pub threads: Option<u32>,
    /// Every repetition was a load phase (S1): its throughput is inserts per second while the
    /// data were written, not comparable with a run phase's.
    pub load: bool,
    /// Mean throughput, ops/s.
    pub throughput: Option<f64>,
    /// Throughput over the baseline topology's for the same scenario.
    pub vs_baseline: Option<f64>,
    /// Lowest and highest throughput over repetitions.
    pub spread: Option<(f64, f64)>,
    /// Sample standard deviation of throughput over repetitions.
    pub stddev: Option<f64>,
    /// Each repetition's throughput, ops/s (what the tests between topologies use).
    pub samples: Vec<f64>,
    /// The comparison with the baseline ([`stats::compare`]: two or more repetitions on both
    /// sides), which every sentence and cell about this row quotes.
    pub significance: Option<stats::Comparison>,
    /// Operation the latency columns describe.
    pub main_op: Option<String>,
    /// Latency of the main operation over repetitions (their histograms added), µs.
    pub latency: Option<Latency>,
    /// Operations that did not return OK, summed over repetitions.
    pub errors: u64,
    /// The worst verdict over the row's repetitions, with every reason.
    pub validity: Validity,
    /// The row's one word, as every format says it: `valid`, `degraded`, `invalid`, or, with no
    /// repetition measured, `not run` (a reason in `not_run`) or `not measured` (README,
    /// "Glossary").
    pub verdict: String,
    /// The baseline's figure for this scenario is degraded or invalid: the ratio says so.
    pub baseline_not_valid: bool,
    /// The baseline's worst verdict for this scenario (the word the ratio's mark uses).
    pub baseline_verdict: Verdict,
    /// Client CPU utilisation of its cores (mean), 0..1.
    pub client_cpu: Option<f64>,
    /// Client CPU µs per operation (mean).
    pub cpu_us_per_op: Option<f64>,
    /// Server CPU µs per operation, every member measured summed (mean); `None`: not reported.
    pub server_cpu_us_per_op: Option<f64>,
    /// The client, not the server, was probably the bottleneck.
    pub client_bound: bool,
    /// Measured against the stand-in.
    pub standin: bool,
    /// Why a repetition of this cell was not run (a dead member of its topology), if one was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
    /// A repetition of this cell never ran: the experiment was interrupted before it
    /// ([`history`]).
    pub interrupted: bool,
    /// The invocations that measured this row's cells, when the experiment was resumed (empty
    /// when one invocation measured every cell).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<u32>,
}

/// A whole comparison report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// [`STANDIN_MARKER`] when any cell was measured against the stand-in.
    pub marker: Option<String>,
    /// Experiment name.
    pub experiment: String,
    /// Baseline topology.
    pub baseline: String,
    /// Which sizes were used.
    pub scale_note: String,
    /// The significance test used.
    pub test: String,
    /// Rows, scenario-major in configuration order.
    pub rows: Vec<Row>,
    /// One line per degraded or invalid cell: which cell, the verdict and why.
    pub validity_notes: Vec<String>,
    /// Warnings collected from cells (deduplicated).
    pub warnings: Vec<String>,
    /// Repetitions asked for per cell.
    pub repeat: u32,
    /// Each topology in table order: its name, size and server, for chart titles and pages.
    pub topologies: Vec<TopologyFacts>,
    /// Stand-in figures only: which capacity model they were measured under, in words.
    pub capacity: Option<String>,
    /// "What this experiment found", one sentence each ([`found::found`]).
    pub found: Vec<String>,
    /// Where the CPU went and whether client and servers shared cores ([`cpu_line`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// `compare --ceiling`: the bound, each cell's search and the ratio taken apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<ceiling::CeilingPart>,
    /// The experiment stopped before measuring every cell ([`history`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<history::Unfinished>,
    /// Which invocation measured which cells, when more than one did (a resumed experiment).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<history::SessionCells>,
}

/// What a reader needs to know about a topology to read its figures: the name it is shown by,
/// what it was given as, its size and the server that answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TopologyFacts {
    /// The label used in every table, legend and title (its `name`, never a path).
    pub name: String,
    /// What the experiment was given (a name or a file path).
    pub given: String,
    /// Members in words (`2 shards × 1 member, 1 config server, 1 mongos`), when a cell recorded
    /// the plan.
    pub size: Option<String>,
    /// The server version the cells saw (`buildInfo.version`).
    pub server_version: Option<String>,
    /// Measured against the stand-in.
    pub standin: bool,
}

impl Report {
    /// True when any figure came from the stand-in.
    pub(crate) fn standin(&self) -> bool {
        self.marker.is_some()
    }

    /// The report with its "found" sentences made again (after cells not run were marked, and
    /// with the experiment's sweeps).
    pub(crate) fn with_found(mut self, sweeps: &[(String, SweepFile)]) -> Report {
        self.found = found::found(&self, sweeps);
        self
    }
}

/// Builds the report of an experiment directory: its cells, the cells it did not run, and
/// whether it was interrupted or resumed.
pub(crate) fn build(dir: &ExperimentDir) -> Result<Report, ResultsError> {
    let config = dir.config()?;
    let cells = dir.cells()?;
    Ok(build_with(dir, &config, &cells))
}

/// [`build`] from the directory's configuration and cells, already read.
pub(crate) fn build_with(
    dir: &ExperimentDir,
    config: &ExperimentConfig,
    cells: &[CellFile],
) -> Report {
    let mut report = with_not_run(build_from(config, cells), config, &dir.not_run());
    let searched = crate::experiment::ceiling::stored(dir);
    let mut part = ceiling::CeilingPart::of(&searched, &report.rows, &report.baseline);
    if let Some(part) = &mut part {
        part.quote_in(&mut report.rows, &report.baseline);
        let args = &config.command.servers.mongod_args;
        part.model = capacity::per_topology(args, cells, |t| config.command.topology_name(t));
    }
    report.ceiling = part;
    let report = history::with_history(
        report,
        config,
        &history::Holdings {
            cells,
            missing: &dir.never_run(config),
            resume: format!("microshard compare --resume {}", dir.path().display()),
        },
    );
    report.with_found(&dir.sweeps())
}

/// Marks the rows of cells that were not run (a dead member; `docs/result-schema.md`, "Cells
/// not run") and says why in the validity notes.
pub(crate) fn with_not_run(
    mut report: Report,
    config: &ExperimentConfig,
    not_run: &[NotRun],
) -> Report {
    for n in not_run {
        let topology = config.command.topology_name(&n.cell.topology);
        let note = format!(
            "{}/{topology} #{} {}",
            n.cell.scenario, n.cell.repeat, n.reason
        );
        if let Some(row) = report
            .rows
            .iter_mut()
            .find(|r| r.scenario == n.cell.scenario && r.topology == topology)
        {
            row.not_run = Some(n.reason.clone());
            if row.repeats == 0 {
                row.verdict = n.word.clone().unwrap_or_else(|| "not run".into());
                row.validity = Validity::valid();
                row.validity.add(Verdict::NotRun, n.reason.clone());
            }
        }
        if !report.validity_notes.contains(&note) {
            report.validity_notes.push(note);
        }
    }
    report
}

/// Builds the report from a configuration and its cells (pure; used by tests and `diff`).
pub fn build_from(config: &ExperimentConfig, cells: &[CellFile]) -> Report {
    let mut groups: BTreeMap<(&String, &String), Vec<&CellFile>> = BTreeMap::new();
    for cell in cells {
        let key = (&cell.cell.scenario, &cell.cell.topology);
        groups.entry(key).or_default().push(cell);
    }
    for group in groups.values_mut() {
        group.sort_by_key(|c| c.cell.repeat);
    }
    // Those of the configuration first, then any other a cell names.
    let cmd = &config.command;
    let scenarios = charts::distinct(cmd.scenarios.iter().chain(groups.keys().map(|k| k.0)));
    let topologies = charts::distinct(cmd.topologies.iter().chain(groups.keys().map(|k| k.1)));
    let labels = topology_labels(cmd, &topologies, cells);
    let label = |t: &str| labels.get(t).cloned().unwrap_or_else(|| t.to_string());
    let group_of = |s, t| groups.get(&(s, t)).cloned().unwrap_or_default();
    let (mut rows, mut said) = (Vec::new(), rows::Said::default());
    for &scenario in &scenarios {
        let base = rows::Against::of(&group_of(scenario, &cmd.baseline));
        for &given in &topologies {
            let at = (scenario.as_str(), label(given), *given == cmd.baseline);
            rows.push(rows::row(
                config,
                at,
                &group_of(scenario, given),
                &base,
                &mut said,
            ));
        }
    }
    let any_standin = config.standin || rows.iter().any(|r| r.standin);
    let (baseline, level) = (label(&cmd.baseline), ((1.0 - ALPHA) * 100.0).round());
    let facts = topologies
        .iter()
        .map(|given| topology_facts(given, &label(given), config, cells))
        .collect();
    Report {
        marker: any_standin.then(|| STANDIN_MARKER.to_string()),
        experiment: cmd.name.clone(),
        baseline: baseline.clone(),
        scale_note: config.scale_note.clone(),
        test: match cmd.ceiling {
            Some(_) => format!(
                "the ceilings vs {baseline} over whole searches, the interval holding every bracket, Welch's two-sided t-test on their logarithms at the {level}% level (docs/ceiling.md)"
            ),
            None => format!("Welch's two-sided t-test on throughput vs {baseline}, {level}% level"),
        },
        rows,
        validity_notes: charts::distinct(said.notes.into_iter()),
        warnings: charts::distinct(said.warnings.into_iter()),
        repeat: cmd.repeat,
        topologies: facts,
        capacity: any_standin.then(|| {
            capacity::sentence(&cmd.servers.mongod_args, config.host.cpu_count)
        }),
        cpu: cpu_line(cells, config.host.cpu_count),
        ..Report::default()
    }
    .with_found(&[])
}

/// Whether the client and the servers shared this machine's cores, and the CPU sets a topology
/// pinned them to: on one box that decides the comparison (README, "Results you can trust").
/// `None` when no server member's CPU was measured here (containers, servers elsewhere).
fn cpu_line(cells: &[CellFile], cores: u64) -> Option<String> {
    if !cells.iter().any(|c| c.summary.server_cpu_s.is_some()) {
        return None;
    }
    let plans = cells.iter().filter_map(|c| c.topology.as_ref());
    let pinned = charts::distinct(plans.filter_map(|plan| {
        let sets: Vec<String> = (plan.members.iter())
            .filter_map(|m| Some(format!("{} {}", m.name, m.cpuset.as_ref()?)))
            .chain(plan.client_cpuset.iter().map(|c| format!("client {c}")))
            .collect();
        (!sets.is_empty()).then(|| format!("{}: {}", plan.name, sets.join(", ")))
    }));
    let how = match pinned.is_empty() {
        true => "no CPU sets: each took cores from the others".to_string(),
        false => format!("CPU sets {}", pinned.join("; ")),
    };
    Some(format!(
        "CPU: the client and the servers shared this machine's {cores} cores ({how}); client and server CPU µs per operation are in the wide table (--wide) and the CSV.{}",
        partial_cpu(cells)
    ))
}

/// ` Server CPU leaves out …` when some cells' server CPU was summed over part of their
/// members: the topologies and the members left out, each once.
fn partial_cpu(cells: &[CellFile]) -> String {
    let partial = (cells.iter())
        .filter(|c| c.summary.server_cpu_s.is_some())
        .filter_map(|c| {
            let missing = &c.result.host_load.as_ref()?.server_cpu_missing;
            (!missing.is_empty()).then(|| format!("{}: {}", c.cell.topology, missing.join(", ")))
        });
    let partial = charts::distinct(partial);
    match partial.is_empty() {
        true => String::new(),
        false => format!(
            " Server CPU leaves out members not found on this machine ({}): on those topologies it is partial.",
            partial.join("; ")
        ),
    }
}

/// Where the figures were measured: the server(s), each topology's size when known, the data.
pub(crate) fn where_lines(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    let servers = charts::distinct(report.topologies.iter().map(charts::server_words));
    // Each topology with its size, and its server when they differ.
    let each: Vec<String> = (report.topologies.iter())
        .map(|t| {
            let mut facts: Vec<String> = t.size.iter().cloned().collect();
            facts.extend((servers.len() > 1).then(|| charts::server_words(t)));
            match facts.is_empty() {
                true => t.name.clone(),
                false => format!("{} = {}", t.name, facts.join(", ")),
            }
        })
        .collect();
    out.push(match servers.as_slice() {
        [one] => format!("Server: {one}. Topologies: {}.", each.join("; ")),
        _ => format!("Topologies: {}.", each.join("; ")),
    });
    out.push(format!(
        "Data: {}. Experiment {}, {} repetition{} per cell.",
        report.scale_note,
        report.experiment,
        report.repeat,
        if report.repeat == 1 { "" } else { "s" }
    ));
    out.extend(report.capacity.clone());
    out
}

/// Labels for every topology: the name stored as it loaded, else its cells' plan's; two
/// topologies that would share a label keep what was given, so no two columns or bars ever
/// carry the same name.
fn topology_labels(
    cmd: &CompareCommand,
    topologies: &[&String],
    cells: &[CellFile],
) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = topologies
        .iter()
        .map(|given| {
            let plan = cells
                .iter()
                .filter(|c| c.cell.topology == **given)
                .find_map(|c| c.topology.as_ref());
            let stored = cmd.topology_names.get(*given).cloned();
            (
                given.to_string(),
                stored.unwrap_or_else(|| topology_label(given, plan)),
            )
        })
        .collect();
    let clashing: Vec<String> = labels
        .iter()
        .filter(|(g, l)| labels.iter().any(|(g2, l2)| g2 != *g && l2 == *l))
        .map(|(g, _)| g.clone())
        .collect();
    for given in clashing {
        labels.insert(given.clone(), given);
    }
    labels
}

/// The facts of one topology, from its cells (plan, versions) and the configuration.
fn topology_facts(
    given: &str,
    label: &str,
    config: &ExperimentConfig,
    cells: &[CellFile],
) -> TopologyFacts {
    let mine: Vec<&CellFile> = cells.iter().filter(|c| c.cell.topology == given).collect();
    let standin = mine.iter().any(|c| c.summary.standin);
    let plan = mine.iter().find_map(|c| c.topology.as_ref());
    let size = plan.map(|p| p.size_in_words(standin));
    let server_version = mine
        .iter()
        .find_map(|c| c.summary.server_version.clone())
        .or_else(|| config.server_versions.get(given).cloned());
    TopologyFacts {
        name: label.to_string(),
        given: given.to_string(),
        size,
        server_version,
        standin,
    }
}

/// The topology a sweep ran on, when the report knows it: `compare --sweep` labels a sweep by
/// the topology, `sweep` by `SCENARIO on TOPOLOGY`.
pub(crate) fn sweep_topology<'a>(
    report: &'a Report,
    sweep: &crate::experiment::model::SweepFile,
) -> Option<&'a TopologyFacts> {
    report.topologies.iter().find(|t| {
        let on = format!(" on {}", t.given);
        // A `--vary` curve adds its value after the topology: `S2 on single readbatchsize=1`.
        sweep.label == t.given
            || sweep.label.ends_with(&on)
            || sweep.label.contains(&format!("{on} "))
    })
}

/// The stand-in marker as a format opens with it (a line; in Markdown, bold), or nothing.
pub(crate) fn marker_line(standin: bool, format: Format) -> String {
    match (standin, format) {
        (false, _) => String::new(),
        (true, Format::Markdown) => format!("**{STANDIN_MARKER}**\n\n"),
        (true, _) => format!("{STANDIN_MARKER}\n"),
    }
}

/// `s` with its first letter in capitals, to start a sentence.
fn capitalised(s: &str) -> String {
    let mut letters = s.chars();
    letters
        .next()
        .map(|f| f.to_ascii_uppercase().to_string())
        .unwrap_or_default()
        + letters.as_str()
}

/// The notes under the table: sizes, what the columns mean, significance, validity, warnings.
pub(crate) fn footer(report: &Report, columns: &Columns) -> Vec<String> {
    let mut lines = vec![
        format!("Sizes: {}", report.scale_note),
        format!(
            "Latency columns: the row's main operation, microseconds. Significance: {}.",
            report.test
        ),
    ];
    if *columns == Columns::Compact {
        lines.push(columns::compact_key(report));
    }
    if report.repeat < 2 && report.rows.iter().any(|r| r.repeats > 0) {
        // The compact table has no `significant` column: name what is missing without it.
        lines.push(if *columns == Columns::Compact {
            "Significance is not tested: one repetition per cell cannot be; run with --repeat 2 or more (3 is better)."
        } else {
            "significant: — means not tested: one repetition per cell cannot be; run with --repeat 2 or more (3 is better)."
        }
        .into());
    }
    if report
        .rows
        .iter()
        .any(|r| r.significance.is_some_and(|c| c.n == 2))
    {
        // The compact table's `*` has no room for it.
        lines.push("n=2: fragile: with two repetitions Welch's test has one or two degrees of freedom, so one more repetition can turn a verdict over; --repeat 3 or more steadies it.".into());
    }
    lines.extend(report.cpu.clone());
    if report.standin() {
        lines.push("Measured against microshard's stand-in server, not MongoDB.".into());
        // Said once per table: the findings end with it when there are any (#19).
        lines.extend(
            report
                .capacity
                .clone()
                .filter(|c| !report.found.contains(c)),
        );
    }
    lines.extend(
        report
            .validity_notes
            .iter()
            .map(|n| format!("validity: {n}")),
    );
    if let Some(words) = columns::flagged_baseline_words(report) {
        let mark = match columns {
            Columns::Compact => "!",
            _ => "\"baseline invalid\" or \"baseline degraded\"",
        };
        let base = &report.baseline;
        lines.push(match words {
            "degraded" => format!(
                "A ratio marked {mark} divides by a degraded {base} figure: quote it with that figure's caveat (see validity)."
            ),
            "invalid" => format!(
                "A ratio marked {mark} divides by an invalid {base} figure: do not publish it."
            ),
            _ => format!(
                "A ratio marked {mark} divides by a degraded or invalid {base} figure: quote one over a degraded {base} with its caveat, never one over an invalid {base} (see validity)."
            ),
        });
    }
    lines.extend(report.warnings.iter().map(|w| format!("warning: {w}")));
    lines.extend(report.sessions.iter().map(|s| s.sentence()));
    lines
}

#[cfg(test)]
pub(crate) mod tests {
    use super::render::{render, render_with};
    use super::*;
    use crate::experiment::model::{
        CELL_SCHEMA, CONFIG_SCHEMA, CellId, CellSummary, CompareCommand,
    };
    use crate::measure::{MeasurementConfig, Measurements, Overall, RunDocument, Status};

    /// A result document holding `n` successful operations of `op` (fixtures for report,
    /// compare and sweep tests, which need a real document but not its figures).
    pub(crate) fn document(op: &str, n: u64) -> RunDocument {
        let m = Measurements::new(MeasurementConfig::default());
        let c = m.client();
        for _ in 0..n {
            c.record(op, 100, None, Status::Ok);
        }
        let t0 = chrono::Utc::now();
        let overall = Overall {
            runtime_ms: 1000,
            operations: n,
        };
        RunDocument::new("run", t0, t0, &overall, &m.finish()).unwrap_or_else(|e| panic!("{e}"))
    }

    pub(crate) fn config(standin: bool) -> ExperimentConfig {
        ExperimentConfig {
            schema: CONFIG_SCHEMA.into(),
            created: "2026-01-01T00:00:00Z".into(),
            tool_version: "0".into(),
            command: CompareCommand {
                name: "t".into(),
                topologies: vec!["single".into(), "microshard-2".into()],
                baseline: "single".into(),
                scenarios: vec!["S1".into(), "S2".into()],
                repeat: 3,
                duration_s: Some(5),
                threads: Some(8),
                sweep_duration_s: None,
                ..Default::default()
            },
            scale_note: "100000 records (laptop scale)".into(),
            properties: Default::default(),
            host: Default::default(),
            server_versions: Default::default(),
            standin,
            degraded_error_fraction: 0.01,
            client_ceiling: None,
            sessions: Vec::new(),
        }
    }

    pub(crate) fn cell(topology: &str, scenario: &str, repeat: u32, tp: f64) -> CellFile {
        CellFile {
            schema: CELL_SCHEMA.into(),
            cell: CellId {
                topology: topology.into(),
                scenario: scenario.into(),
                repeat,
            },
            finished: "now".into(),
            summary: CellSummary {
                phase: "run".into(),
                threads: 8,
                operations: (tp * 10.0) as u64,
                runtime_ms: 10_000.0,
                throughput: tp,
                main_op: "READ".into(),
                latency: Latency {
                    avg: 100.0,
                    min: 10.0,
                    max: 1000.0,
                    p50: 90.0,
                    p95: 200.0,
                    p99: 300.0,
                    p999: 900.0,
                },
                errors: 0,
                client_cpu_s: Some(2.0),
                client_cores: Some(2),
                server_cpu_s: None,
                standin: false,
                server_version: Some("7.0.0".into()),
                write_concern: None,
                validity: Validity::valid(),
            },
            result: document("READ", 1),
            server: None,
            warnings: vec![],
            crosscheck: None,
            topology: None,
            server_versions: Default::default(),
            server_images: Default::default(),
            session: 1,
            default_write_concern: None,
        }
    }

    /// A document of READs with these latencies, µs.
    fn latencies(values: &[u64]) -> RunDocument {
        let m = Measurements::new(MeasurementConfig::default());
        let c = m.client();
        for &v in values {
            c.record("READ", v, None, Status::Ok);
        }
        let t0 = chrono::Utc::now();
        let overall = Overall {
            runtime_ms: 1000,
            operations: values.len() as u64,
        };
        RunDocument::new("run", t0, t0, &overall, &m.finish()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn percentiles_over_repetitions_are_those_of_the_added_histograms() {
        // Repetition 1: 90 fast reads; repetition 2: 10 slow ones. Averaging p50s would say
        // (100 + 5000) / 2; the added histogram's p50 is 100 and its p99 5000.
        let fast: Vec<u64> = vec![100; 90];
        let slow: Vec<u64> = vec![5000; 10];
        let mut a = cell("single", "S2", 1, 1000.0);
        a.result = latencies(&fast);
        a.summary.latency = crate::experiment::summary::summarize(&a.result).latency;
        let mut b = cell("single", "S2", 2, 1000.0);
        b.result = latencies(&slow);
        b.summary.latency = crate::experiment::summary::summarize(&b.result).latency;
        let all: Vec<u64> = fast.iter().chain(&slow).copied().collect();
        let added = crate::experiment::summary::summarize(&latencies(&all)).latency;
        let r = build_from(&config(false), &[a, b]);
        let row = r.rows.iter().find(|r| r.repeats == 2).expect("the row");
        let lat = row.latency.clone().expect("latency");
        assert_eq!((lat.p50, lat.p99), (added.p50, added.p99));
        assert!(lat.p50 < 200.0 && lat.p99 > 4000.0, "{lat:?}");
    }

    pub(crate) fn cells() -> Vec<CellFile> {
        let mut v = Vec::new();
        for (r, jitter) in [(1, 0.0), (2, 10.0), (3, -10.0)] {
            v.push(cell("single", "S1", r, 1000.0 + jitter));
            v.push(cell("microshard-2", "S1", r, 2000.0 + jitter));
            v.push(cell("single", "S2", r, 500.0 + jitter));
            v.push(cell("microshard-2", "S2", r, 505.0 - jitter));
        }
        v
    }

    #[test]
    fn baseline_ratio_spread_and_significance() {
        let r = build_from(&config(false), &cells());
        assert!(r.marker.is_none());
        let get = |s: &str, t: &str| {
            r.rows
                .iter()
                .find(|x| x.scenario == s && x.topology == t)
                .cloned()
        };
        let base = get("S1", "single");
        assert_eq!(base.as_ref().and_then(|b| b.vs_baseline), Some(1.0));
        assert!(base.as_ref().is_some_and(|b| b.significance.is_none()));
        let ms = get("S1", "microshard-2");
        assert!(
            ms.as_ref()
                .and_then(|m| m.vs_baseline)
                .is_some_and(|x| (x - 2.0).abs() < 1e-9)
        );
        assert_eq!(ms.as_ref().and_then(|m| m.spread), Some((1990.0, 2010.0)));
        assert!(
            ms.as_ref()
                .and_then(|m| m.significance)
                .is_some_and(|s| s.significant)
        );
        let s2 = get("S2", "microshard-2");
        assert!(
            s2.and_then(|m| m.significance)
                .is_some_and(|s| !s.significant)
        );
    }

    /// An invalid figure is not a result: no `*` on it, nor on a figure compared with it.
    #[test]
    fn nothing_is_tested_on_or_against_an_invalid_figure() {
        let tested = |invalid: &str| {
            let mut all = cells();
            for c in all.iter_mut().filter(|c| c.cell.topology == invalid) {
                c.summary.validity.invalid("sh0 stopped answering at 1.0 s");
            }
            let r = build_from(&config(false), &all);
            (r.rows.iter())
                .find(|x| x.scenario == "S1" && x.topology == "microshard-2")
                .is_some_and(|m| m.significance.is_some())
        };
        assert!(tested("nobody"));
        assert!(!tested("microshard-2"));
        assert!(!tested("single"));
    }

    /// Two repetitions are said to be fragile under every table; three are not.
    #[test]
    fn two_repetitions_are_called_fragile_under_the_table() {
        let fragile = "n=2: fragile: with two repetitions";
        let two: Vec<CellFile> = cells().into_iter().filter(|c| c.cell.repeat < 3).collect();
        let table = render(&build_from(&config(false), &two), Format::Table);
        assert!(table.contains(fragile), "{table}");
        let three = render(&build_from(&config(false), &cells()), Format::Table);
        assert!(!three.contains(fragile), "{three}");
    }

    #[test]
    fn standin_marker_in_every_format() {
        let mut cs = cells();
        cs[0].summary.standin = true;
        let r = build_from(&config(false), &cs);
        for f in [Format::Table, Format::Markdown, Format::Json] {
            assert!(render(&r, f).contains(STANDIN_MARKER), "{f:?}");
        }
        let csv = render(&r, Format::Csv);
        assert!(
            csv.lines().skip(1).all(|l| l.starts_with("stand-in,")),
            "{csv}"
        );
        let plain = render(&build_from(&config(false), &cells()), Format::Table);
        assert!(!plain.contains(STANDIN_MARKER));
    }

    #[test]
    fn degraded_invalid_and_missing_cells_show() {
        let mut cs = cells();
        cs.retain(|c| !(c.cell.scenario == "S2" && c.cell.topology == "microshard-2"));
        let baseline = config(false).command.baseline;
        for c in cs.iter_mut().filter(|c| c.cell.scenario == "S2") {
            c.summary.validity.degrade("12 of 1,000 operations failed");
        }
        let invalid = cs
            .iter_mut()
            .find(|c| c.cell.topology == baseline && c.cell.scenario == "S1")
            .map(|c| {
                c.summary
                    .validity
                    .invalid("sh0 (localhost:41110) stopped answering at 5.2 s for 20.1 s");
            });
        assert!(invalid.is_some());
        let r = build_from(&config(false), &cs);
        let table = render(&r, Format::Table);
        assert!(table.contains("DEGRADED"), "{table}");
        assert!(table.contains("INVALID"), "{table}");
        assert!(table.contains("not measured"), "{table}");
        assert!(
            table.contains(
                "validity: S1/single #1 is invalid: sh0 (localhost:41110) stopped answering"
            ),
            "{table}"
        );
        assert!(
            table.contains(" !")
                && table.contains("! divides by a degraded or invalid single figure"),
            "the compact table marks and explains the ratio:\n{table}"
        );
        let wide = render_with(&r, Format::Table, &Columns::Wide);
        assert!(wide.contains("(baseline invalid)"), "{wide}");
        let csv = render(&r, Format::Csv);
        assert!(csv.lines().any(|l| l.contains(",invalid,")), "{csv}");
    }

    #[test]
    fn csv_has_header_and_rectangular_rows() {
        let r = build_from(&config(false), &cells());
        let csv = render(&r, Format::Csv);
        let n = csv.lines().next().map_or(0, |h| h.split(',').count());
        assert_eq!(n, 26, "{csv}");
        assert_eq!(csv.lines().count(), 1 + r.rows.len());
        for line in csv.lines() {
            assert_eq!(line.split(',').count(), n, "{line}");
        }
    }

    #[test]
    fn markdown_rows_have_header_width() {
        let r = build_from(&config(false), &cells());
        // Compact: the comparison, then the latency detail, each as wide as its header.
        let md = render(&r, Format::Markdown);
        let (first, detail) = md
            .split_once("#### Latency detail")
            .expect("a detail table");
        for (part, columns) in [(first, 6), (detail, 9)] {
            let table: Vec<&str> = part.lines().filter(|l| l.starts_with('|')).collect();
            assert_eq!(table.len(), 2 + r.rows.len(), "{md}");
            assert!(
                table
                    .iter()
                    .all(|l| l.matches(" | ").count() == columns - 1),
                "{md}"
            );
        }
        let md = render_with(&r, Format::Markdown, &Columns::Wide);
        let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(table.len(), 2 + r.rows.len());
        let width = table[0].matches(" | ").count();
        assert_eq!(width + 1, columns::NAMES.len(), "every column");
        assert!(
            table.iter().all(|l| l.matches(" | ").count() == width),
            "{md}"
        );
    }

    /// The name stored as the topology loaded labels it, never the file: this one was deleted
    /// (or renamed) after the experiment ran; without a stored name, the file stem.
    #[test]
    fn topologies_given_as_files_are_labelled_by_their_stored_name() {
        let named = "/gone/my-file.toml".to_string();
        assert_eq!(
            topology_label(&named, None),
            "my-file",
            "else the file stem"
        );
        assert_eq!(topology_label("single", None), "single");

        let mut c = config(false);
        c.command.topologies = vec![named.clone(), "microshard-2".into()];
        c.command.baseline = named.clone();
        (c.command.topology_names).insert(named.clone(), "four-shards".into());
        let cells = vec![
            cell(&named, "S1", 1, 1000.0),
            cell("microshard-2", "S1", 1, 1500.0),
        ];
        let r = build_from(&c, &cells);
        assert_eq!(r.baseline, "four-shards");
        assert!(r.rows.iter().any(|row| row.topology == "four-shards"));
        // JSON keeps the path once, as the topology's `given` fact; rows carry the name.
        for f in [Format::Table, Format::Markdown, Format::Csv] {
            let out = render(&r, f);
            assert!(!out.contains(&named), "{f:?} shows the path:\n{out}");
        }
        assert!(render(&r, Format::Markdown).contains("× four-shards"));
    }

    #[test]
    fn two_topologies_with_one_name_keep_what_was_given() {
        let a = "/somewhere/a/single.toml".to_string();
        let labels = topology_labels(&config(false).command, &[&a, &"single".into()], &[]);
        assert_eq!(labels.get(&a), Some(&a));
        assert_eq!(labels.get("single").map(String::as_str), Some("single"));
    }

    #[test]
    fn markdown_links_the_charts_relatively() {
        let r = build_from(&config(false), &cells());
        let md = render(&r, Format::Markdown);
        assert!(md.contains("](throughput.svg)"), "{md}");
        assert!(md.contains("](latency.svg)"), "{md}");
        let empty = build_from(&config(false), &[]);
        assert!(
            !render(&empty, Format::Markdown).contains(".svg)"),
            "no chart, no link"
        );
    }

    #[test]
    fn client_bound_flagged_near_ceiling() {
        let mut c = config(false);
        c.client_ceiling = Some(2100.0);
        let r = build_from(&c, &cells());
        let ms = r
            .rows
            .iter()
            .find(|x| x.scenario == "S1" && x.topology == "microshard-2");
        assert!(ms.is_some_and(|m| m.client_bound));
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("client is probably the bottleneck"))
        );
    }
}
