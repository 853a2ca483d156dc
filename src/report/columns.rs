//! Which columns a comparison table shows. The default is compact, one row per cell in at most
//! 100 characters for three topologies (scenario, topology, ops/s with its spread, the ratio to
//! the baseline marked when significant, p99 of the main operation, validity); `--wide` shows
//! every column and `--columns LIST` a chosen few. CSV and JSON always carry every figure.

use super::{Report, Row};
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
        let Some(list) = list else {
            return Ok(if wide {
                Columns::Wide
            } else {
                Columns::Compact
            });
        };
        if wide {
            return Err("--wide and --columns: give one of them".into());
        }
        let picked: Result<Vec<usize>, String> = list
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(|n| {
                NAMES
                    .iter()
                    .position(|k| k.eq_ignore_ascii_case(n))
                    .ok_or_else(|| {
                        format!(
                            "--columns {list}: unknown column '{n}'; the columns are {}",
                            NAMES.join(",")
                        )
                    })
            })
            .collect();
        let picked = picked?;
        if picked.is_empty() {
            return Err(format!(
                "--columns {list}: no column named; the columns are {}",
                NAMES.join(",")
            ));
        }
        Ok(Columns::Pick(picked))
    }

    /// The table's header row.
    pub(crate) fn headers(&self, report: &Report) -> Vec<String> {
        match self {
            Columns::Compact => compact_headers(report),
            Columns::Wide => headers(report),
            Columns::Pick(ix) => pick(&headers(report), ix),
        }
    }

    /// One row's cells (of `report`'s table).
    pub(crate) fn cells(&self, report: &Report, row: &Row) -> Vec<String> {
        match self {
            Columns::Compact => {
                let mut cells = compact_cells(row);
                if threads_differ(report) {
                    let threads = row.threads.filter(|_| row.repeats > 0);
                    cells.insert(2, threads.map_or_else(|| "—".into(), |t| t.to_string()));
                }
                cells
            }
            Columns::Wide => row_cells(row),
            Columns::Pick(ix) => pick(&row_cells(row), ix),
        }
    }

    /// Whether column `i` of this table holds text (left-aligned in Markdown) rather than a
    /// figure.
    pub(crate) fn is_text(&self, i: usize) -> bool {
        let name = match self {
            Columns::Compact => return i < 2,
            Columns::Wide => NAMES.get(i),
            Columns::Pick(ix) => ix.get(i).and_then(|&k| NAMES.get(k)),
        };
        matches!(name, Some(&"scenario" | &"topology" | &"op"))
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

fn pick(all: &[String], ix: &[usize]) -> Vec<String> {
    ix.iter().filter_map(|&i| all.get(i).cloned()).collect()
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

fn compact_headers(report: &Report) -> Vec<String> {
    let mut headers = compact_named(report);
    if threads_differ(report) {
        headers.insert(2, "threads".into());
    }
    headers
}

fn compact_named(report: &Report) -> Vec<String> {
    [
        "scenario".to_string(),
        "topology".to_string(),
        match (report.ceiling.is_some(), report.repeat > 1) {
            (true, true) => "ceiling ops/s (min–max)".to_string(),
            (true, false) => "ceiling ops/s".to_string(),
            (false, true) => "ops/s (min–max)".to_string(),
            (false, false) => "ops/s".to_string(),
        },
        format!("× {}", report.baseline),
        match report.ceiling.is_some() {
            true => "actual p99 µs".to_string(),
            false => "p99 µs".to_string(),
        },
        "validity".to_string(),
    ]
    .to_vec()
}

fn compact_cells(row: &Row) -> Vec<String> {
    let dash = || "—".to_string();
    if row.repeats == 0 {
        let validity = match row.not_run {
            Some(_) => row.verdict.to_uppercase(),
            None => dash(),
        };
        return vec![
            row.scenario.clone(),
            row.topology.clone(),
            unmeasured(row),
            dash(),
            dash(),
            validity,
        ];
    }
    let ops = match (row.throughput, row.spread) {
        (Some(t), Some((lo, hi))) if row.repeats > 1 => {
            format!("{} ({}–{})", fmt_num(t), fmt_num(lo), fmt_num(hi))
        }
        (Some(t), _) => fmt_num(t),
        (None, _) => dash(),
    };
    let ratio = row
        .vs_baseline
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

/// Column headers shared by every tabular format.
fn headers(report: &Report) -> Vec<String> {
    [
        "scenario",
        "topology",
        "threads",
        "ops/s",
        &format!("× {}", report.baseline),
        "op",
        "avg µs",
        "p50 µs",
        "p95 µs",
        "p99 µs",
        "p99.9 µs",
        "errors",
        "validity",
        "spread (min–max)",
        "± stddev",
        "significant",
        "client CPU",
        "CPU µs/op: client / servers",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
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

fn row_cells(row: &Row) -> Vec<String> {
    let dash = || "—".to_string();
    if row.repeats == 0 {
        let mut cells = vec![row.scenario.clone(), row.topology.clone(), dash()];
        cells.push(unmeasured(row));
        cells.resize(NAMES.len(), dash());
        if row.not_run.is_some() {
            cells[12] = row.verdict.to_uppercase();
        }
        return cells;
    }
    let lat = row.latency.clone().unwrap_or_default();
    vec![
        row.scenario.clone(),
        row.topology.clone(),
        row.threads.map(|t| t.to_string()).unwrap_or_else(dash),
        row.throughput.map(fmt_num).unwrap_or_else(dash),
        row.vs_baseline
            .map(|r| {
                if row.baseline_not_valid {
                    format!("{r:.2}× (baseline {})", row.baseline_verdict)
                } else {
                    format!("{r:.2}×")
                }
            })
            .unwrap_or_else(dash),
        row.main_op.clone().unwrap_or_else(dash),
        fmt_num(lat.avg),
        fmt_num(lat.p50),
        fmt_num(lat.p95),
        fmt_num(lat.p99),
        fmt_num(lat.p999),
        row.errors.to_string(),
        validity_cell(row),
        row.spread
            .map(|(a, b)| format!("{}–{}", fmt_num(a), fmt_num(b)))
            .unwrap_or_else(dash),
        row.stddev
            .map(|s| format!("±{}", fmt_num(s)))
            .unwrap_or_else(dash),
        significance_cell(row),
        match row.client_cpu {
            Some(u) if row.client_bound => format!("{:.0}% CLIENT-BOUND", u * 100.0),
            Some(u) => format!("{:.0}%", u * 100.0),
            None if row.client_bound => "CLIENT-BOUND".into(),
            None => dash(),
        },
        cpu_per_op_cell(row),
    ]
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

/// The validity cell of a measured row: `valid`, or the verdict in capitals.
fn validity_cell(row: &Row) -> String {
    match row.validity.verdict {
        Verdict::Valid => "valid".to_string(),
        Verdict::Degraded => "DEGRADED".to_string(),
        Verdict::Invalid => "INVALID".to_string(),
        Verdict::NotRun => "NOT RUN".to_string(),
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
        let headers = Columns::Compact.headers(&report);
        assert_eq!(headers[2], "threads");
        let row = |t: &str| {
            let r = report
                .rows
                .iter()
                .find(|r| r.topology == t && r.scenario == "S2");
            Columns::Compact.cells(&report, r.unwrap_or_else(|| panic!("{t}")))
        };
        assert_eq!(
            (row("single")[2].as_str(), row("microshard-2")[2].as_str()),
            ("8", "32")
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
        assert_eq!(Columns::Compact.headers(&same).len(), 6);
    }
}
