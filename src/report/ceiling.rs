//! A ceiling search as a reader sees it: every step (offered and achieved rate, threads, intended
//! latency, why it failed) and the finding under it; and a `compare --ceiling`'s ceilings, the
//! ratio taken apart and their table (README, "Glossary": ceiling, bound, routing tax).

use serde::Serialize;

use super::Row;
use super::stats::{self, Comparison};
use crate::experiment::ceiling::search::{micros, thousands};
use crate::experiment::ceiling::{Bound, CeilingRecord, Outcome, StepKind};
use crate::measure::STANDIN_MARKER;

/// The steps table and the finding, for the terminal and `ceiling.txt`.
pub(crate) fn render(record: &CeilingRecord) -> String {
    let header = [
        "step",
        "kind",
        "offered ops/s",
        "achieved ops/s",
        "threads",
        "intended p50 µs",
        "p99 µs",
        "p99.9 µs",
        "validity",
        "result",
    ];
    let rows = record.steps.iter().enumerate().map(|(i, s)| {
        let (kind, result) = match (s.kind, &s.failed) {
            (StepKind::Probe, _) => ("probe", "closed loop: where the search starts".to_string()),
            (StepKind::Search, None) => ("search", "sustained".to_string()),
            (StepKind::Confirm, None) => ("confirm", "sustained".to_string()),
            (StepKind::Search, Some(w)) => ("search", format!("failed: {w}")),
            (StepKind::Confirm, Some(w)) => ("confirm", format!("failed: {w}")),
        };
        let latency = |us: u64| match s.kind {
            StepKind::Probe => "—".to_string(),
            _ => us.to_string(),
        };
        [
            (i + 1).to_string(),
            kind.to_string(),
            s.offered.map_or("—".into(), |o| format!("{o:.0}")),
            format!("{:.0}", s.achieved),
            s.threads.to_string(),
            latency(s.intended_us[0]),
            latency(s.intended_us[1]),
            latency(s.intended_us[2]),
            s.verdict.clone(),
            result,
        ]
    });
    let t = super::rounded(header, rows);
    let mut out = String::new();
    if record.standin {
        out.push_str(STANDIN_MARKER);
        out.push('\n');
    }
    let bounds: Vec<String> = record.bounds.iter().map(|b| b.shown()).collect();
    out.push_str(&format!(
        "Ceiling search: {} on {} at {} (intended latency, {:.0} s per step)\n{t}\n{}\n",
        record.workload,
        record.topology,
        bounds.join(", "),
        record.step_s,
        record.finding()
    ));
    out
}

/// The ceilings of a `compare --ceiling`, as every report format carries them: the bound, each
/// cell's search and the ratio taken apart (README, "Glossary": ceiling, routing tax).
#[derive(Debug, Clone, Serialize)]
pub struct CeilingPart {
    /// `p99 ≤ 50 ms` (all must hold, on intended latency).
    pub bounds: String,
    /// The first bound: the one the chart draws and its points are measured at.
    pub drawn: Option<Bound>,
    /// Measured seconds per step.
    pub step_s: f64,
    /// One per scenario × topology searched, in the table's order.
    pub cells: Vec<CeilingCell>,
    /// Routing tax, sharding gain and net, per scenario, when the experiment holds them.
    pub decomposed: Vec<Decomposed>,
}

/// One cell's search as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CeilingCell {
    /// Scenario.
    pub scenario: String,
    /// Topology, as shown.
    pub topology: String,
    /// The ceiling (mean achieved over the confirmations), ops/s; `None` when none was found.
    pub ceiling: Option<f64>,
    /// Lowest and highest confirmation.
    pub spread: Option<(f64, f64)>,
    /// Intended p99 at the ceiling (the worst confirmation), µs.
    pub p99_us: Option<u64>,
    /// Client threads at the ceiling.
    pub threads: Option<u32>,
    /// Steps the search took.
    pub steps: usize,
    /// Why the lowest failing rate failed (or why there is no ceiling).
    pub next_failure: Option<String>,
    /// The search's one-line finding.
    pub finding: String,
    /// Each open-loop step: offered ops/s, intended latency at the first bound (µs), passed.
    pub points: Vec<(f64, u64, bool)>,
}

/// One part of the micro-shard ratio taken apart, for one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Decomposed {
    /// Scenario.
    pub scenario: String,
    /// `routing tax`, `sharding gain` or `net`.
    pub part: String,
    /// The topology measured.
    pub of: String,
    /// The topology it is measured against.
    pub against: String,
    /// Ceiling over ceiling.
    pub ratio: f64,
    /// The test, with two or more confirmations on both sides.
    pub significance: Option<Comparison>,
}

impl Decomposed {
    /// `S5 routing tax (microshard-1 vs single): 0.95× (95 % CI …, significant, p=…)`.
    pub(crate) fn sentence(&self) -> String {
        let test = match &self.significance {
            Some(c) => c.words(),
            None => "one confirmation: not tested".into(),
        };
        format!(
            "{} {} ({} vs {}): {:.2}× ({test})",
            self.scenario, self.part, self.of, self.against, self.ratio
        )
    }
}

impl CeilingPart {
    /// The part of a report: `records` are the experiment's searches, `rows` its table (whose
    /// samples are the confirmations), `baseline` its baseline topology as shown.
    pub(crate) fn of(records: &[CeilingRecord], rows: &[Row], baseline: &str) -> Option<Self> {
        let first = records.first()?;
        let order = |c: &CeilingCell| {
            (rows.iter())
                .position(|r| r.scenario == c.scenario && r.topology == c.topology)
                .unwrap_or(usize::MAX)
        };
        let mut cells: Vec<CeilingCell> = records.iter().map(cell).collect();
        cells.sort_by_key(order);
        Some(CeilingPart {
            bounds: (first.bounds.iter())
                .map(|b| b.shown())
                .collect::<Vec<_>>()
                .join(", "),
            drawn: first.bounds.first().cloned(),
            step_s: first.step_s,
            decomposed: decompose(rows, baseline),
            cells,
        })
    }

    /// The ceilings as a table (terminal), with the decomposition under it.
    pub(crate) fn table(&self) -> String {
        let t = super::rounded(Self::HEADERS, self.cells.iter().map(CeilingCell::fields));
        let mut out = format!("{}\n{t}\n", self.title());
        out.extend(self.decomposed.iter().map(|d| d.sentence() + "\n"));
        out
    }

    /// The table's title: what a ceiling is here.
    pub(crate) fn title(&self) -> String {
        format!(
            "Ceilings at {} (intended latency; {:.0} s steps; the highest offered rate sustained, mean of its confirmations):",
            self.bounds, self.step_s
        )
    }

    /// The table's columns.
    pub(crate) const HEADERS: [&'static str; 7] = [
        "scenario",
        "topology",
        "ceiling ops/s",
        "intended p99",
        "threads",
        "steps",
        "the next step",
    ];
}

impl CeilingCell {
    /// The table's fields, in [`CeilingPart::HEADERS`]' order.
    pub(crate) fn fields(&self) -> Vec<String> {
        let ceiling = match (self.ceiling, self.spread) {
            (Some(c), Some((lo, hi))) if lo < hi => {
                format!("{} ({}–{})", thousands(c), thousands(lo), thousands(hi))
            }
            (Some(c), _) => thousands(c),
            (None, _) => "no ceiling".into(),
        };
        vec![
            self.scenario.clone(),
            self.topology.clone(),
            ceiling,
            self.p99_us.map(micros).unwrap_or_else(|| "—".into()),
            self.threads
                .map(|t| t.to_string())
                .unwrap_or_else(|| "—".into()),
            self.steps.to_string(),
            match (self.ceiling, &self.next_failure) {
                (None, _) => self.finding.clone(),
                (Some(_), Some(f)) => format!("failed: {f}"),
                (Some(_), None) => "—".into(),
            },
        ]
    }
}

/// The file stem of a scenario's ceiling chart in the run directory.
pub(crate) fn chart_stem(scenario: &str) -> String {
    format!("ceiling-{}", crate::experiment::results::sanitize(scenario))
}

/// The scenarios searched, in table order.
pub(crate) fn scenarios(part: &CeilingPart) -> Vec<String> {
    super::charts::distinct(part.cells.iter().map(|c| c.scenario.clone()))
}

/// A search as one cell of the report.
fn cell(r: &CeilingRecord) -> CeilingCell {
    let points = (r.steps.iter())
        .filter_map(|s| {
            let p = s.at_bounds_us.first().copied().unwrap_or(s.intended_us[1]);
            Some((s.offered?, p, s.failed.is_none()))
        })
        .collect();
    let base = CeilingCell {
        scenario: r.workload.clone(),
        topology: r.topology.clone(),
        ceiling: None,
        spread: None,
        p99_us: None,
        threads: None,
        steps: r.steps.len(),
        next_failure: None,
        finding: r.finding(),
        points,
    };
    match &r.outcome {
        Some(Outcome::Found {
            ceiling,
            low,
            high,
            p99_us,
            threads,
            next_failure,
        }) => CeilingCell {
            ceiling: Some(*ceiling),
            spread: Some((*low, *high)),
            p99_us: Some(*p99_us),
            threads: Some(*threads),
            next_failure: next_failure.clone(),
            ..base
        },
        _ => base,
    }
}

/// The micro-shard ratio taken apart, per scenario, when the experiment holds the baseline
/// (`single`), `microshard-1` and larger micro-shard topologies: routing tax (microshard-1 vs the
/// baseline), sharding gain (each larger one vs microshard-1) and net (each larger one vs the
/// baseline). Only rows with a ceiling take part.
fn decompose(rows: &[Row], baseline: &str) -> Vec<Decomposed> {
    let mut out = Vec::new();
    for s in super::charts::distinct(rows.iter().map(|r| r.scenario.clone())) {
        let s = s.as_str();
        let found = |t: &str| {
            (rows.iter()).find(|r| r.scenario == s && r.topology == t && !r.samples.is_empty())
        };
        let (Some(base), Some(one)) = (found(baseline), found("microshard-1")) else {
            continue;
        };
        let larger = (rows.iter()).filter(|r| {
            r.scenario == s
                && !r.samples.is_empty()
                && r.topology.starts_with("microshard-")
                && r.topology != "microshard-1"
        });
        let part = |name: &str, of: &Row, against: &Row| Decomposed {
            scenario: s.to_string(),
            part: name.to_string(),
            of: of.topology.clone(),
            against: against.topology.clone(),
            ratio: stats::mean(&of.samples).unwrap_or(0.0)
                / stats::mean(&against.samples).unwrap_or(f64::NAN),
            significance: stats::compare(&of.samples, &against.samples),
        };
        out.push(part("routing tax", one, base));
        for n in larger {
            out.push(part("sharding gain", n, one));
            out.push(part("net", n, base));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::ceiling::{SearchSpec, Step};
    use crate::report::build_from;
    use crate::report::tests::{cell, config};

    /// A search of S5 on `topology` that found `ceiling`, its last passing step at `p99_us`.
    fn found(topology: &str, ceiling: f64) -> CeilingRecord {
        let spec = SearchSpec {
            bounds: Bound::parse_list("p99=50ms").expect("a bound"),
            step_s: 2,
            precision: 0.05,
            max_threads: 512,
        };
        let mut r = CeilingRecord::new("S5".into(), topology.into(), &spec, Default::default());
        let step = |offered: f64, failed: Option<&str>| Step {
            kind: StepKind::Search,
            offered: Some(offered),
            achieved: offered,
            threads: 100,
            intended_us: [1_000, 20_000, 30_000],
            at_bounds_us: vec![20_000],
            verdict: "valid".into(),
            failed: failed.map(str::to_string),
        };
        r.steps = vec![
            step(ceiling, None),
            step(ceiling * 1.1, Some("p99 80 ms > 50 ms")),
        ];
        r.outcome = Some(Outcome::Found {
            ceiling,
            low: ceiling * 0.99,
            high: ceiling * 1.01,
            p99_us: 20_000,
            threads: 100,
            next_failure: Some("p99 80 ms > 50 ms".into()),
        });
        r
    }

    #[test]
    fn the_ratio_comes_apart_into_routing_tax_sharding_gain_and_net() {
        let tps = [
            ("single", 2_000.0),
            ("microshard-1", 1_800.0),
            ("microshard-2", 3_600.0),
        ];
        let mut cells = Vec::new();
        for (t, tp) in tps {
            for (i, jitter) in [0.99, 1.0, 1.01].iter().enumerate() {
                cells.push(cell(t, "S5", i as u32 + 1, tp * jitter));
            }
        }
        let mut cfg = config(false);
        cfg.command.topologies = tps.iter().map(|(t, _)| t.to_string()).collect();
        cfg.command.scenarios = vec!["S5".into()];
        cfg.command.repeat = 3;
        let report = build_from(&cfg, &cells);
        let records: Vec<CeilingRecord> = tps.iter().map(|(t, tp)| found(t, *tp)).collect();
        let part = CeilingPart::of(&records, &report.rows, "single").expect("a part");
        let said: Vec<(String, f64, bool)> = (part.decomposed.iter())
            .map(|d| {
                (
                    d.part.clone(),
                    d.ratio,
                    d.significance.is_some_and(|c| c.significant),
                )
            })
            .collect();
        assert_eq!(said.len(), 3, "{said:?}");
        assert_eq!((said[0].0.as_str(), said[0].2), ("routing tax", true));
        assert!((said[0].1 - 0.9).abs() < 0.01, "{said:?}");
        assert_eq!(said[1].0, "sharding gain");
        assert!((said[1].1 - 2.0).abs() < 0.01, "{said:?}");
        assert_eq!(said[2].0, "net");
        assert!((said[2].1 - 1.8).abs() < 0.01, "{said:?}");
        assert!(
            part.decomposed[0]
                .sentence()
                .starts_with("S5 routing tax (microshard-1 vs single): 0.90× (95 % CI"),
            "{}",
            part.decomposed[0].sentence()
        );
        // The table: the ceiling with its spread, p99 at it, and why the next step failed.
        let table = part.table();
        assert!(table.contains("Ceilings at p99 ≤ 50.0 ms"), "{table}");
        assert!(table.contains("2,000 (1,980–2,020)"), "{table}");
        assert!(table.contains("failed: p99 80 ms > 50 ms"), "{table}");
        // Each open-loop step is a point of the chart, passing or not.
        assert_eq!(
            part.cells[0].points,
            vec![(2_000.0, 20_000, true), (2_200.0, 20_000, false)]
        );
    }

    #[test]
    fn without_microshard_1_nothing_is_taken_apart_and_no_ceiling_is_said_so() {
        let mut cfg = config(false);
        cfg.command.topologies = vec!["single".into(), "microshard-2".into()];
        cfg.command.scenarios = vec!["S5".into()];
        let cells = vec![cell("single", "S5", 1, 2_000.0)];
        let report = build_from(&cfg, &cells);
        let mut none = found("microshard-2", 0.0);
        none.outcome = Some(Outcome::NoRateMetBound {
            lowest: 10.0,
            why: "p99 2.0 s > 50.0 ms".into(),
        });
        let part = CeilingPart::of(&[found("single", 2_000.0), none], &report.rows, "single")
            .expect("a part");
        assert!(part.decomposed.is_empty());
        let fields = part.cells[1].fields();
        assert_eq!(fields[2], "no ceiling");
        assert!(
            fields[6].contains("no rate met p99 ≤ 50.0 ms"),
            "{fields:?}"
        );
    }
}
