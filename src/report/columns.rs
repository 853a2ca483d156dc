//! Which columns a comparison table shows. The default is compact, one row per cell in at most
//! 100 characters for three topologies (scenario, topology, ops/s with its spread, the ratio to
//! the baseline marked when significant, p99 of the main operation, validity); `--wide` shows
//! every column and `--columns LIST` a chosen few. CSV and JSON always carry every figure.

use super::table::{Cell, Column, Table};
use super::{Report, Row};
use crate::experiment::model::Latency;
use crate::measure::validity::Verdict;

/// The names `--columns` accepts, in the order of the wide table.
pub(crate) const NAMES: [&str; 18] = [
    "scenario",
    "topology",
    "threads",
    "ops",
    "ratio",
    "op",
    "avg",
    "p50",
    "p95",
    "p99",
    "p999",
    "errors",
    "validity",
    "spread",
    "stddev",
    "significant",
    "cpu",
    "cpuop",
];

/// The columns of the latency-detail table under the compact Markdown table.
const LATENCY_DETAIL: [&str; 9] = [
    "scenario", "topology", "op", "avg", "p50", "p95", "p99", "p999", "errors",
];

/// How many columns a table shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Columns {
    /// The compact default.
    #[default]
    Compact,
    /// Every column.
    Wide,
    /// These columns of the wide table (indexes into [`NAMES`]), in the order given.
    Pick(Vec<usize>),
}

impl Columns {
    /// The columns `--wide` / `--columns LIST` choose; an unknown name is bad input naming the flag
    /// and the names.
    pub fn chosen(wide: bool, list: Option<&str>) -> Result<Columns, String> {
        let list = match (wide, list) {
            (false, None) => return Ok(Columns::Compact),
            (true, None) => return Ok(Columns::Wide),
            (true, Some(_)) => return Err("--wide and --columns: give one of them".into()),
            (false, Some(list)) => list,
        };
        let all = NAMES.join(",");
        let known = |n: &str| NAMES.iter().position(|k| k.eq_ignore_ascii_case(n));
        let picked: Vec<usize> = (list.split(',').map(str::trim))
            .filter(|n| !n.is_empty())
            .map(|n| {
                known(n).ok_or_else(|| {
                    format!("--columns {list}: unknown column '{n}'; the columns are {all}")
                })
            })
            .collect::<Result<_, _>>()?;
        if picked.is_empty() {
            return Err(format!(
                "--columns {list}: no column named; the columns are {all}"
            ));
        }
        Ok(Columns::Pick(picked))
    }

    /// The table these columns show of `report`: Markdown left-aligns its words and the
    /// verdicts.
    pub(crate) fn table(&self, report: &Report) -> Table {
        match self {
            Columns::Compact => compact_table(report),
            Columns::Wide => wide_table(report),
            Columns::Pick(ix) => wide_table(report).pick(ix),
        }
    }

    /// The latency-detail table shown under the compact Markdown table.
    pub(crate) fn latency_detail() -> Columns {
        Columns::Pick(
            LATENCY_DETAIL
                .iter()
                .filter_map(|n| NAMES.iter().position(|k| k == n))
                .collect(),
        )
    }
}

/// Whether the measured rows ran at different client thread counts (`compare --sweep` runs
/// each topology at its own knee): the compact table then shows a threads column, so latencies
/// measured at different concurrency are not read side by side unawares.
pub(crate) fn threads_differ(report: &Report) -> bool {
    let mut seen = report
        .rows
        .iter()
        .filter(|r| r.repeats > 0)
        .filter_map(|r| r.threads);
    let first = seen.next();
    seen.any(|t| Some(t) != first)
}

/// The compact table: scenario, topology, ops/s with its spread, the ratio marked, p99 and the
/// verdict, with the threads when the rows ran at different counts.
fn compact_table(report: &Report) -> Table {
    let differ = threads_differ(report);
    let mut table = Table::new(compact_columns(report));
    if differ {
        table.columns.insert(2, Column::figures("threads", ""));
    }
    for row in &report.rows {
        let mut cells = compact_cells(row);
        if differ {
            let threads = row.threads.filter(|_| row.repeats > 0);
            cells.insert(2, threads.map_or_else(|| "—".into(), |t| t.to_string()));
        }
        table.rows.push(cells.into_iter().map(Cell::text).collect());
    }
    table
}

/// The compact table's columns: its words (and the verdicts) left-aligned in Markdown.
fn compact_columns(report: &Report) -> Vec<Column> {
    let ops = match (report.ceiling.is_some(), report.repeat > 1) {
        (true, true) => "ceiling ops/s (min–max)",
        (true, false) => "ceiling ops/s",
        (false, true) => "ops/s (min–max)",
        (false, false) => "ops/s",
    };
    let p99 = match report.ceiling.is_some() {
        true => "actual p99 µs",
        false => "p99 µs",
    };
    vec![
        Column::words("scenario", ""),
        Column::words("topology", ""),
        Column::figures(ops, ""),
        Column::figures(format!("× {}", report.baseline), ""),
        Column::figures(p99, ""),
        Column::words("validity", ""),
    ]
}

fn compact_cells(row: &Row) -> Vec<String> {
    let dash = || "—".to_string();
    let ops = match (row.throughput, row.spread) {
        (Some(t), Some((lo, hi))) if row.repeats > 1 => {
            format!("{} ({}–{})", fmt_num(t), fmt_num(lo), fmt_num(hi))
        }
        (Some(t), _) => fmt_num(t),
        (None, _) => unmeasured(row),
    };
    let ratio = (row.vs_baseline.filter(|_| row.repeats > 0))
        .map(|r| {
            let mut cell = format!("{r:.2}×");
            if row.significance.is_some_and(|s| s.significant) {
                cell.push_str(" *");
            }
            if row.baseline_not_valid {
                cell.push_str(" !");
            }
            cell
        })
        .unwrap_or_else(dash);
    let p99 = match (&row.latency, &row.main_op) {
        (Some(l), Some(op)) => format!("{} {op}", fmt_num(l.p99)),
        (Some(l), None) => fmt_num(l.p99),
        _ => dash(),
    };
    vec![
        row.scenario.clone(),
        row.topology.clone(),
        ops,
        ratio,
        p99,
        validity_cell(row),
    ]
}

/// What a row with no repetition measured says in place of its throughput: its verdict's
/// word when it was not run (`not run`, `no ceiling`).
fn unmeasured(row: &Row) -> String {
    match row.not_run {
        Some(_) => row.verdict.clone(),
        None if row.interrupted => "interrupted".into(),
        None => "not measured".into(),
    }
}

/// What the compact table's marks mean (a line under it).
pub(crate) fn compact_key(report: &Report) -> String {
    let mut key = match (report.ceiling.is_some(), report.repeat > 1) {
        (true, _) => "ceiling ops/s: each cell's ceiling, the highest rate its search sustained (mean, lowest–highest over whole searches); actual p99 µs: the main operation's service latency there (the bound holds on the intended latency: the Ceilings table). ".to_string(),
        (false, true) => "ops/s: mean, (lowest–highest) over repetitions. ".to_string(),
        (false, false) => String::new(),
    };
    key.push_str(&format!(
        "× {}: * significantly different (Welch's t-test, p < 0.05)",
        report.baseline
    ));
    if let Some(words) = flagged_baseline_words(report) {
        key.push_str(&format!(", ! the baseline is {words}"));
    }
    key.push_str(match report.ceiling.is_some() {
        true => ": the ceilings compared over whole searches, their brackets included.",
        false => ". p99 µs of the row's main operation.",
    });
    if threads_differ(report) {
        key.push_str(" threads: the rows ran at different client thread counts, so their latencies are not measured at the same concurrency.");
    }
    key.push_str(" --wide shows every column.");
    key
}

/// Every column of the comparison: its figures rounded for reading (`--wide`, `--columns`) and
/// raw in the CSV, which has columns of its own (repetitions, the spread's two ends, the
/// p-value; with `compare --ceiling`, each cell's search).
pub(crate) fn wide_table(report: &Report) -> Table {
    let csv = |name: &str| Column::figures("", name).csv_only();
    let mut columns = vec![
        Column::words("scenario", "scenario"),
        Column::words("topology", "topology"),
        csv("repeats"),
        Column::figures("threads", "threads"),
        Column::figures("ops/s", "throughput_ops_s"),
        Column::figures(format!("× {}", report.baseline), "vs_baseline"),
        Column::words("op", "main_op"),
        Column::figures("avg µs", "avg_us"),
        Column::figures("p50 µs", "p50_us"),
        Column::figures("p95 µs", "p95_us"),
        Column::figures("p99 µs", "p99_us"),
        Column::figures("p99.9 µs", "p999_us"),
        Column::figures("errors", "errors"),
        Column::words("validity", "validity"),
        Column::figures("spread (min–max)", "").read_only(),
        csv("min_ops_s"),
        csv("max_ops_s"),
        Column::figures("± stddev", "stddev_ops_s"),
        csv("p_value"),
        Column::figures("significant", "significant"),
        Column::figures("client CPU", "client_cpu_fraction"),
        csv("cpu_us_per_op"),
        Column::figures("CPU µs/op: client / servers", "").read_only(),
        csv("client_bound"),
        csv("server_cpu_us_per_op"),
        csv("interrupted"),
        csv("sessions"),
    ];
    if let Some(c) = &report.ceiling {
        columns.extend(c.csv_names().iter().map(|n| csv(n)));
    }
    let mut table = Table::new(columns);
    for row in &report.rows {
        let mut cells = wide_cells(row);
        if let Some(c) = &report.ceiling {
            cells.extend(c.csv_fields(row).into_iter().map(Cell::text));
        }
        table.rows.push(cells);
    }
    table
}

/// One row of [`wide_table`].
fn wide_cells(row: &Row) -> Vec<Cell> {
    let raw = |v: Option<f64>| Cell::text(v.map(|x| format!("{x:.3}")).unwrap_or_default());
    let read = |v: Option<f64>, f: &dyn Fn(f64) -> String| Cell {
        read: v.map_or_else(|| "—".into(), f),
        ..raw(v)
    };
    let latency = |f: fn(&Latency) -> f64| read(row.latency.as_ref().map(f), &fmt_num);
    let significant = row.significance.map(|s| s.significant.to_string());
    let sessions: Vec<String> = row.sessions.iter().map(u32::to_string).collect();
    let spread = (row.spread).map(|(a, b)| format!("{}–{}", fmt_num(a), fmt_num(b)));
    let mut cells = vec![
        Cell::text(row.scenario.clone()),
        Cell::text(row.topology.clone()),
        Cell::text(row.repeats.to_string()),
        Cell::or_dash(row.threads),
        read(row.throughput, &fmt_num),
        read(row.vs_baseline, &|r| ratio_cell(row, r)),
        Cell::or_dash(row.main_op.as_ref()),
        latency(|l| l.avg),
        latency(|l| l.p50),
        latency(|l| l.p95),
        latency(|l| l.p99),
        latency(|l| l.p999),
        Cell::text(row.errors.to_string()),
        Cell::figure(validity_cell(row), &row.verdict),
        Cell::or_dash(spread),
        raw(row.spread.map(|s| s.0)),
        raw(row.spread.map(|s| s.1)),
        read(row.stddev, &|s| format!("±{}", fmt_num(s))),
        raw(row.significance.map(|s| s.p)),
        Cell::figure(significance_cell(row), significant.unwrap_or_default()),
        Cell {
            read: client_cpu_cell(row),
            ..raw(row.client_cpu)
        },
        raw(row.cpu_us_per_op),
        Cell::text(cpu_per_op_cell(row)),
        Cell::text(row.client_bound.to_string()),
        raw(row.server_cpu_us_per_op),
        Cell::text(row.interrupted.to_string()),
        Cell::text(sessions.join(";")),
    ];
    if row.repeats == 0 {
        unmeasured_cells(row, &mut cells);
    }
    cells
}

/// A row with nothing measured, as a reader reads it: its word in place of the throughput and
/// of its verdict, dashes between.
fn unmeasured_cells(row: &Row, cells: &mut [Cell]) {
    const THREADS: usize = 3;
    const OPS: usize = 4;
    const VALIDITY: usize = 13;
    for c in &mut cells[THREADS..] {
        c.read = "—".into();
    }
    cells[OPS].read = unmeasured(row);
    cells[VALIDITY].read = validity_cell(row);
}

/// `1.52×`, and what the baseline was when it is degraded, invalid or not run.
fn ratio_cell(row: &Row, r: f64) -> String {
    match row.baseline_not_valid {
        true => format!("{r:.2}× (baseline {})", row.baseline_verdict),
        false => format!("{r:.2}×"),
    }
}

/// The client's CPU use of its cores, and whether it was probably the bottleneck.
fn client_cpu_cell(row: &Row) -> String {
    match (row.client_cpu, row.client_bound) {
        (Some(u), true) => format!("{:.0}% CLIENT-BOUND", u * 100.0),
        (Some(u), false) => format!("{:.0}%", u * 100.0),
        (None, true) => "CLIENT-BOUND".into(),
        (None, false) => "—".into(),
    }
}

/// A table figure: three significant figures at least, thousands grouped as publications write
/// them (`13,986 (13,158–14,815)`); the CSV keeps plain numbers.
fn fmt_num(v: f64) -> String {
    if v >= 1000.0 {
        crate::experiment::ceiling::search::thousands(v)
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `42 / 310`: the client's and the servers' CPU µs per operation; "not reported" for servers
/// not measured (containers, servers elsewhere).
fn cpu_per_op_cell(row: &Row) -> String {
    let client = row.cpu_us_per_op.map_or("—".into(), fmt_num);
    let servers = row
        .server_cpu_us_per_op
        .map_or("not reported".into(), fmt_num);
    format!("{client} / {servers}")
}

/// The validity cell: `valid`, or the verdict in capitals; for a row with nothing measured, its
/// word in capitals when it was not run (a dead member, an interrupted experiment), a dash when it
/// is merely missing.
fn validity_cell(row: &Row) -> String {
    match (row.repeats, row.validity.verdict) {
        (0, Verdict::NotRun) => row.verdict.to_uppercase(),
        (0, _) => "—".into(),
        (_, Verdict::Valid) => "valid".into(),
        (_, Verdict::Degraded) => "DEGRADED".into(),
        (_, Verdict::Invalid) => "INVALID".into(),
        (_, Verdict::NotRun) => "NOT RUN".into(),
    }
}

/// The `significant` cell: the baseline comparison's own words ([`super::stats::Comparison::cell`]),
/// marked when the baseline is degraded or invalid, and a dash (explained under the table)
/// without repetitions.
fn significance_cell(row: &Row) -> String {
    let Some(s) = row.significance else {
        return "—".into();
    };
    let mark = row
        .baseline_not_valid
        .then(|| format!(" (baseline {})", row.baseline_verdict));
    format!("{}{}", s.cell(), mark.unwrap_or_default())
}

/// `degraded`, `invalid` or `degraded or invalid`: the verdicts of the baselines that rows'
/// ratios are marked for (README, "Results you can trust": degraded is a figure usable with its
/// caveat, invalid one never to publish), or `None` when no ratio is marked.
pub(crate) fn flagged_baseline_words(report: &Report) -> Option<&'static str> {
    let flagged = |v: Verdict| {
        report
            .rows
            .iter()
            .any(|r| r.baseline_not_valid && r.baseline_verdict == v)
    };
    match (flagged(Verdict::Degraded), flagged(Verdict::Invalid)) {
        (false, false) => None,
        (true, false) => Some("degraded"),
        (false, true) => Some("invalid"),
        (true, true) => Some("degraded or invalid"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{cell, config};
    use crate::report::{Format, build_from, render::render};

    #[test]
    fn the_compact_table_shows_threads_when_rows_ran_at_different_counts() {
        // `compare --sweep`: single's cells at its knee (8 threads), microshard-2's at 32.
        let c = config(false);
        let mut cells = vec![
            cell("single", "S2", 1, 1000.0),
            cell("microshard-2", "S2", 1, 3000.0),
        ];
        cells[1].summary.threads = 32;
        let report = build_from(&c, &cells);
        assert!(threads_differ(&report));
        let table = Columns::Compact.table(&report);
        assert_eq!(table.header()[2], "threads");
        let threads: Vec<String> = table
            .read_rows()
            .into_iter()
            .map(|r| r[2].clone())
            .collect();
        assert_eq!(
            threads,
            ["—", "—", "8", "32"],
            "S1 not measured, S2 at each knee"
        );
        for format in [Format::Table, Format::Markdown] {
            let text = render(&report, format);
            assert!(
                text.contains("ran at different client thread counts"),
                "{text}"
            );
        }
        // Markdown aligns the validity words left, the figures right.
        let md = render(&report, Format::Markdown);
        let rule = md
            .lines()
            .find(|l| l.starts_with("| ---"))
            .unwrap_or_default();
        assert_eq!(
            rule, "| --- | --- | ---: | ---: | ---: | ---: | --- |",
            "{md}"
        );
        // One thread count for every row: no column.
        cells[1].summary.threads = 8;
        let same = build_from(&c, &cells);
        assert!(!threads_differ(&same));
        assert_eq!(Columns::Compact.table(&same).header().len(), 6);
    }
}
