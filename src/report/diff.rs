//! `microshard diff A B`: two experiments compared cell by cell (throughput ratio, latency changes).

use serde::Serialize;

use super::table::{Cell, Column, HeaderRule, Table};
use super::{Format, Report, Row, STANDIN_MARKER};
use crate::experiment::results::{ExperimentDir, ResultsError};

/// One scenario × topology present in either experiment.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DiffRow {
    /// Scenario name.
    pub scenario: String,
    /// Topology name.
    pub topology: String,
    /// Throughput in A, ops/s.
    pub a: Option<f64>,
    /// Throughput in B, ops/s.
    pub b: Option<f64>,
    /// B over A.
    pub ratio: Option<f64>,
    /// Relative change of the median latency, B vs A (0.1 = 10% slower).
    pub p50_change: Option<f64>,
    /// Relative change of the 99th percentile, B vs A.
    pub p99_change: Option<f64>,
    /// Welch's p-value of B's throughput against A's (both sides repeated): the comparison's.
    pub p: Option<f64>,
    /// B's throughput against A's ([`super::stats::compare`]), when both sides were repeated
    /// and measured the same thing.
    pub comparison: Option<super::stats::Comparison>,
    /// Why A's and B's figures of this row measure different things, if they do (other bounds,
    /// another capacity model, another workload or main operation): the row is not compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlike: Option<String>,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Diff {
    /// [`STANDIN_MARKER`] when either side has stand-in figures.
    pub marker: Option<String>,
    /// Name of experiment A.
    pub a: String,
    /// Name of experiment B.
    pub b: String,
    /// Rows in A's order, then B-only rows.
    pub rows: Vec<DiffRow>,
}

fn change(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 => Some(b / a - 1.0),
        _ => None,
    }
}

/// Compares two built reports.
pub(crate) fn compare(a: &Report, b: &Report) -> Diff {
    let key = |r: &Row| (r.scenario.clone(), r.topology.clone());
    // A's rows, then those in B only.
    let measured = a.rows.iter().chain(&b.rows).filter(|r| r.repeats > 0);
    let keys = super::charts::distinct(measured.map(key));
    let find = |rep: &Report, k: &(String, String)| {
        rep.rows
            .iter()
            .find(|r| r.repeats > 0 && key(r) == *k)
            .cloned()
    };
    let rows = keys
        .iter()
        .map(|k| {
            let (ra, rb) = (find(a, k), find(b, k));
            let ta = ra.as_ref().and_then(|r| r.throughput);
            let tb = rb.as_ref().and_then(|r| r.throughput);
            let lat = |r: &Option<Row>, f: fn(&crate::experiment::model::Latency) -> f64| {
                r.as_ref().and_then(|r| r.latency.as_ref()).map(f)
            };
            let comparison = ra
                .as_ref()
                .zip(rb.as_ref())
                .and_then(|(ra, rb)| super::stats::compare(&rb.samples, &ra.samples));
            DiffRow {
                scenario: k.0.clone(),
                topology: k.1.clone(),
                a: ta,
                b: tb,
                ratio: change(ta, tb).map(|c| c + 1.0),
                p50_change: change(lat(&ra, |l| l.p50), lat(&rb, |l| l.p50)),
                p99_change: change(lat(&ra, |l| l.p99), lat(&rb, |l| l.p99)),
                p: comparison.map(|c| c.p),
                comparison,
                unlike: None,
            }
        })
        .collect();
    Diff {
        marker: (a.standin() || b.standin()).then(|| STANDIN_MARKER.to_string()),
        a: a.experiment.clone(),
        b: b.experiment.clone(),
        rows,
    }
}

/// Builds the comparison of two experiment directories, each row that measured something else
/// in B than in A said so and not compared.
pub(crate) fn diff_of(a: &ExperimentDir, b: &ExperimentDir) -> Result<Diff, ResultsError> {
    let (ra, rb) = (super::build(a)?, super::build(b)?);
    let mut d = compare(&ra, &rb);
    let (ca, cb) = (a.config()?, b.config()?);
    let everywhere = super::diff_checks::unlike(&ca, &cb);
    let op = |rep: &Report, r: &DiffRow| {
        (rep.rows.iter())
            .find(|x| x.scenario == r.scenario && x.topology == r.topology)
            .and_then(|x| x.main_op.clone())
    };
    for row in &mut d.rows {
        let ops = (op(&ra, row), op(&rb, row));
        let ops = (ops.0.as_deref(), ops.1.as_deref());
        let scenario = super::diff_checks::scenario_unlike((&ca, &cb), &row.scenario, ops);
        let why: Vec<String> = everywhere.iter().cloned().chain(scenario).collect();
        if !why.is_empty() {
            row.unlike = Some(why.join("; "));
            row.comparison = None;
            row.p = None;
        }
    }
    Ok(d)
}

/// B against A in the comparison's own words ([`super::stats::Comparison::cell`]), or why there
/// is none: the cell is in one experiment only, or a side was measured once.
fn significance(r: &DiffRow) -> String {
    if let Some(why) = &r.unlike {
        return format!("not comparable ({why})");
    }
    match (r.comparison, r.a, r.b) {
        (Some(c), _, _) => c.cell(),
        (None, None, _) => "— (not in A)".into(),
        (None, _, None) => "— (not in B)".into(),
        (None, Some(_), Some(_)) => "— (needs --repeat 2+ on both)".into(),
    }
}

/// Renders a diff in the requested format, each under the stand-in marker when there is one.
pub(crate) fn render(d: &Diff, format: Format) -> String {
    let marker = super::marker_line(d.marker.is_some(), format);
    match format {
        Format::Json => {
            serde_json::to_string_pretty(d).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
        }
        Format::Csv => table(d).csv(d.marker.is_some()),
        Format::Markdown => marker + &table(d).markdown(HeaderRule::Spaced),
        Format::Html => super::html::table_page(
            &format!("microshard diff: {} → {}", d.a, d.b),
            d.marker.is_some(),
            &table(d),
        ),
        Format::Table => format!("{marker}{}\n", table(d).terminal()),
    }
}

/// The diff's table, naming both sides: figures rounded for reading, raw (four decimals) in
/// the CSV, which says why a row is not compared where the others say whether it differs.
fn table(d: &Diff) -> Table {
    let mut table = Table::new(vec![
        Column::words("scenario", "scenario"),
        Column::words("topology", "topology"),
        Column::figures(format!("A ops/s ({})", d.a), "a_ops_s"),
        Column::figures(format!("B ops/s ({})", d.b), "b_ops_s"),
        Column::figures("B/A", "ratio"),
        Column::figures("p50 change", "p50_change"),
        Column::figures("p99 change", "p99_change"),
        Column::figures("significant (B vs A)", "").read_only(),
        Column::words("", "not_comparable").csv_only(),
    ]);
    let figure = |v: Option<f64>, read: &dyn Fn(f64) -> String| {
        let raw = v.map(|x| format!("{x:.4}")).unwrap_or_default();
        Cell::figure(v.map_or("—".into(), read), raw)
    };
    let ops = |x: f64| format!("{x:.0}");
    let pct = |c: f64| format!("{:+.1}%", c * 100.0);
    for r in &d.rows {
        table.rows.push(vec![
            Cell::text(r.scenario.clone()),
            Cell::text(r.topology.clone()),
            figure(r.a, &ops),
            figure(r.b, &ops),
            figure(r.ratio, &|x| format!("{x:.2}×")),
            figure(r.p50_change, &pct),
            figure(r.p99_change, &pct),
            Cell::text(significance(r)),
            Cell::text(r.unlike.clone().unwrap_or_default()),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{cell, config};

    #[test]
    fn ratio_and_latency_changes() {
        let a = super::super::build_from(&config(false), &[cell("single", "S1", 1, 1000.0)]);
        let mut c = cell("single", "S1", 1, 1500.0);
        c.summary.latency.p99 = 600.0;
        c.summary.standin = true;
        let b = super::super::build_from(&config(false), &[c]);
        let d = compare(&a, &b);
        let row = d
            .rows
            .iter()
            .find(|r| r.scenario == "S1" && r.topology == "single");
        assert!(
            row.and_then(|r| r.ratio)
                .is_some_and(|x| (x - 1.5).abs() < 1e-9)
        );
        assert!(
            row.and_then(|r| r.p99_change)
                .is_some_and(|x| (x - 1.0).abs() < 1e-9)
        );
        assert!(
            row.and_then(|r| r.p50_change)
                .is_some_and(|x| x.abs() < 1e-9)
        );
        assert!(render(&d, Format::Table).contains(STANDIN_MARKER));
        assert_eq!(d.rows.len(), 1, "unmeasured rows are left out");
        let page = render(&d, Format::Html);
        assert!(page.starts_with("<!DOCTYPE html>") && page.contains(STANDIN_MARKER));
        assert_eq!(page.matches("<tr>").count(), 1 + d.rows.len(), "{page}");
    }

    /// A cell in one experiment only says so; "needs --repeat 2+" is kept for
    /// cells both measured, once on a side; repeated cells carry the comparison's own words.
    #[test]
    fn each_missing_significance_gives_its_true_reason() {
        let cells =
            |tp: f64, reps: u32, scenario: &str| -> Vec<crate::experiment::model::CellFile> {
                (1..=reps)
                    .map(|i| cell("single", scenario, i, tp + f64::from(i)))
                    .collect()
            };
        let a = super::super::build_from(
            &config(false),
            &[cells(1000.0, 2, "S1"), cells(1000.0, 2, "S2")].concat(),
        );
        let b = super::super::build_from(
            &config(false),
            &[
                cells(3000.0, 2, "S1"),
                cells(1000.0, 1, "S2"),
                cells(1.0, 2, "S3"),
            ]
            .concat(),
        );
        let d = compare(&a, &b);
        let said = |s: &str| {
            d.rows
                .iter()
                .find(|r| r.scenario == s)
                .map(significance)
                .unwrap_or_default()
        };
        assert!(
            said("S1").starts_with("yes, faster (95 % CI "),
            "{}",
            said("S1")
        );
        assert_eq!(said("S2"), "— (needs --repeat 2+ on both)");
        assert_eq!(said("S3"), "— (not in A)");
        let d = compare(&b, &a);
        let s3 = d.rows.iter().find(|r| r.scenario == "S3").map(significance);
        assert_eq!(s3.as_deref(), Some("— (not in B)"));
    }
}
