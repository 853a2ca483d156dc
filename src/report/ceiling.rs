//! A ceiling search as a reader sees it: every step (offered and achieved rate, threads,
//! intended and actual latency at the bound, why it failed) and the finding under it; and a
//! `compare --ceiling`'s ceilings, each over its searches, with the ratio taken apart (README,
//! "Glossary": ceiling, bound, routing tax; `docs/ceiling.md`).

use serde::Serialize;

use super::Row;
use super::searches::{self, Bounds};
use super::stats::{self, Comparison};
use super::table::{Cell, Column, Table};
use crate::experiment::ceiling::search::{Rule, micros, thousands};
use crate::experiment::ceiling::{Bound, CeilingRecord, Outcome, Step, StepKind};

/// The steps table of one search and its finding, for the terminal and `ceiling.txt`.
pub(crate) fn render(record: &CeilingRecord) -> String {
    let t = steps_table(std::slice::from_ref(record)).terminal();
    let mut out = super::marker_line(record.standin, super::Format::Table);
    out.push_str(&format!(
        "{} (intended latency; steps of {:.0} s and longer once bracketed, each after a warm-up)\n{t}\n",
        title(record),
        record.step_s,
    ));
    out.extend(said(record).into_iter().map(|l| l + "\n"));
    out
}

/// What is said under a search's steps: why steps are degraded or invalid, the finding, and the
/// servers' CPU per operation when it was fitted.
pub(crate) fn said(r: &CeilingRecord) -> Vec<String> {
    let mut said = verdict_notes(&r.steps);
    said.push(r.finding());
    said.extend(r.server_cpu.map(|f| f.words()));
    said
}

/// The title every format of a search opens with.
pub(crate) fn title(r: &CeilingRecord) -> String {
    let (w, t, bounds) = (&r.workload, &r.topology, Bound::all_shown(&r.bounds));
    format!("Ceiling search: {w} on {t} at {bounds}")
}

/// The steps of searches as one table: per step its kind, the rates offered and achieved, the
/// threads, the intended and actual latency at the first bound, the operations the schedule
/// left unsent, the verdict and the result; the CSV adds the search, the rule broken and whether
/// the step counted, with raw figures.
pub(crate) fn steps_table(records: &[CeilingRecord]) -> Table {
    let first = records.first().and_then(|r| r.bounds.first());
    let name = first.map_or("p99", |b| b.name.as_str());
    let mut table = Table::new(vec![
        Column::figures("", "search").csv_only(),
        Column::figures("step", "step"),
        Column::words("kind", "kind"),
        Column::figures("offered ops/s", "offered_ops_s"),
        Column::figures("achieved ops/s", "achieved_ops_s"),
        Column::figures("threads", "threads"),
        Column::figures("s", "step_s"),
        Column::figures(format!("intended {name}"), format!("intended_{name}_us")),
        Column::figures(format!("actual {name}"), format!("actual_{name}_us")),
        Column::figures("unsent", "unsent"),
        Column::words("validity", "validity"),
        Column::words("result", "").read_only(),
        Column::words("", "rule").csv_only(),
        Column::words("", "counted").csv_only(),
        Column::words("", "failed").csv_only(),
    ]);
    for r in records {
        let steps = r.steps.iter().enumerate();
        table
            .rows
            .extend(steps.map(|(i, s)| step_cells(r.repeat, i, s)));
    }
    table
}

/// One step's row of [`steps_table`].
fn step_cells(search: u32, i: usize, s: &Step) -> Vec<Cell> {
    let (kind, result) = match (s.kind, &s.failed, s.counted) {
        (StepKind::Probe, _, _) => ("probe", "closed loop: where the search starts".to_string()),
        (_, None, _) => ("search", "sustained".to_string()),
        (_, Some(w), false) => ("search", format!("not counted, more threads next: {w}")),
        (_, Some(w), true) => ("search", format!("failed: {w}")),
    };
    let latency = |at: Option<&u64>| {
        let read = match (s.kind, at) {
            (StepKind::Probe, _) | (_, None) => "—".to_string(),
            (_, Some(us)) => micros(*us),
        };
        Cell::figure(read, at.map(u64::to_string).unwrap_or_default())
    };
    let offered = s.offered.map(|o| format!("{o:.3}")).unwrap_or_default();
    vec![
        Cell::text(search.to_string()),
        Cell::text((i + 1).to_string()),
        Cell::text(kind),
        Cell::figure(s.offered.map_or("—".into(), thousands), offered),
        Cell::figure(thousands(s.achieved), format!("{:.3}", s.achieved)),
        Cell::text(s.threads.to_string()),
        Cell::figure(format!("{:.0}", s.step_s), format!("{:.3}", s.step_s)),
        latency(s.at_bounds_us.first()),
        latency(s.actual_at_bounds_us.first()),
        Cell::text(s.schedule.unsent.to_string()),
        Cell::text(s.verdict.clone()),
        Cell::text(result),
        Cell::text(s.rule.map(|r| r.word()).unwrap_or_default()),
        Cell::text(s.counted.to_string()),
        Cell::quoted(s.failed.clone().unwrap_or_default()),
    ]
}

/// `degraded (steps 3, 5): busy host: …`: why steps whose result is degraded or invalid are so, one
/// line per kind of reason (the words before its first colon), quoting its first instance.
pub(crate) fn verdict_notes(steps: &[Step]) -> Vec<String> {
    // Per kind of reason: its verdict, its first instance and the steps that gave it.
    let mut notes: Vec<(String, &str, &str, Vec<String>)> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        for r in &s.verdict_reasons {
            let kind = format!("{} {}", s.verdict, r.split(':').next().unwrap_or(r));
            match notes.iter_mut().find(|n| n.0 == kind) {
                Some(n) => n.3.push((i + 1).to_string()),
                None => notes.push((kind, &s.verdict, r, vec![(i + 1).to_string()])),
            }
        }
    }
    (notes.into_iter())
        .map(|(_, verdict, why, at)| {
            let more = if at.len() > 1 {
                ", the first of them"
            } else {
                ""
            };
            format!("{verdict} (step {}{more}): {why}", at.join(", "))
        })
        .collect()
}

/// Several searches of one topology (`ceiling --repeat`): each one's table and finding, then
/// what they found together.
pub(crate) fn render_all(records: &[CeilingRecord]) -> String {
    let mut out: String = records.iter().map(render).collect::<Vec<_>>().join("\n");
    if let Some(summary) = summary(records) {
        out.push_str(&summary);
        out.push('\n');
    }
    out
}

/// `over 3 searches: single sustains 1,470 S5 ops/s (1,455–1,490 over the searches; their
/// brackets 1,440–1,545)`; `None` for one search or none found.
pub(crate) fn summary(records: &[CeilingRecord]) -> Option<String> {
    let first = records.first().filter(|_| records.len() > 1)?;
    let found: Vec<Bounds> = records.iter().filter_map(searched).collect();
    let passed: Vec<f64> = found.iter().map(|s| s.passed).collect();
    let (geo, (lo, hi)) = (searches::geometric_mean(&found)?, stats::range(&passed));
    let top = found.iter().filter_map(|s| s.failed).reduce(f64::max);
    let brackets = match top {
        Some(t) => format!("; their brackets {}–{}", thousands(lo), thousands(t)),
        None => String::new(),
    };
    Some(format!(
        "over {} searches ({} with a ceiling): {} sustains {} {} ops/s at {} ({}–{} over the searches{brackets})",
        records.len(),
        found.len(),
        first.topology,
        thousands(geo),
        first.workload,
        Bound::all_shown(&first.bounds),
        thousands(lo),
        thousands(hi),
    ))
}

/// A search's ceiling for the ratios: a found ceiling with its bracket, or a client-limited
/// search's lower bound; `None` otherwise.
pub(crate) fn searched(r: &CeilingRecord) -> Option<Bounds> {
    let (passed, failed) = r.outcome.as_ref()?.bounds()?;
    Some(Bounds { passed, failed })
}

/// The ceilings of a `compare --ceiling`, as every report format carries them: the bound, each
/// cell over its searches, and the ratio taken apart (README, "Glossary": ceiling, routing tax).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CeilingPart {
    /// `p99 ≤ 50 ms` (all must hold, on intended latency).
    pub bounds: String,
    /// The first bound: the one the chart draws and its points are measured at.
    pub drawn: Option<Bound>,
    /// Measured seconds of the first steps (later ones lengthen).
    pub step_s: f64,
    /// One per scenario × topology searched, in the table's order.
    pub cells: Vec<CeilingCell>,
    /// Routing tax, sharding gain and net, per scenario, when the experiment holds them.
    pub decomposed: Vec<Decomposed>,
    /// The stand-in's capacity model per topology (ops/s), when one was in force.
    pub model: Vec<(String, f64)>,
}

/// One step of a search as a chart draws it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// Offered rate, ops/s.
    pub offered: f64,
    /// Achieved rate, ops/s.
    pub achieved: f64,
    /// Intended latency at the first bound, µs.
    pub at_bound_us: u64,
    /// The rule it broke; `None` when it passed.
    pub rule: Option<Rule>,
    /// Its result was degraded.
    pub degraded: bool,
    /// Which search it belongs to.
    pub repeat: u32,
}

/// One cell (a scenario on a topology) over its searches, as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CeilingCell {
    /// Scenario.
    pub scenario: String,
    /// Topology, as shown.
    pub topology: String,
    /// `load` when every step inserted fresh keys (an insert-only scenario), else `run`.
    pub phase: String,
    /// The ceiling: the geometric mean over the searches that found one (a client-limited
    /// search's lower bound counts, marked), ops/s; `None` when none did.
    pub ceiling: Option<f64>,
    /// Lowest and highest search.
    pub spread: Option<(f64, f64)>,
    /// The brackets: the lowest rate that passed and the highest that failed, over searches.
    pub bracket: Option<(f64, Option<f64>)>,
    /// Searches, and how many found a ceiling.
    pub searches: usize,
    pub found: usize,
    /// Some search was limited by the client: the ceiling is a lower bound.
    pub client_limited: bool,
    /// How the last search ended (`found`, `no ceiling`, `client-limited`, `interrupted`).
    pub outcome: String,
    /// Intended latency at the first bound at the ceiling (the worst search), µs.
    pub at_bound_us: Option<u64>,
    /// Client threads at the ceiling (the most any search used there).
    pub threads: Option<u32>,
    /// The servers' CPU per operation beyond their idle cost, µs (the last search's fit).
    pub server_us_per_op: Option<f64>,
    /// Steps over all searches.
    pub steps: usize,
    /// Why the next rate failed (the last search's).
    pub next_failure: Option<String>,
    /// The searches' one-line findings.
    pub finding: String,
    /// Each open-loop step of every search.
    pub points: Vec<Point>,
    /// Each search's ceiling as the chart rings it: the offered rate that passed and the
    /// intended latency at the bound there.
    pub rings: Vec<(f64, u64)>,
    /// What a reader must know before quoting it.
    pub caveats: Vec<String>,
    /// What each search established, for any comparison a sentence makes.
    #[serde(skip)]
    pub(crate) searched: Vec<Bounds>,
}

/// One part of the micro-shard ratio taken apart, for one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Decomposed {
    /// Scenario.
    pub scenario: String,
    /// `routing tax`, `mongos hop`, `sharding overhead`, `sharding gain` or `net`.
    pub part: String,
    /// The topology measured.
    pub of: String,
    /// The topology it is measured against.
    pub against: String,
    /// Ceiling over ceiling.
    pub ratio: f64,
    /// The interval (the brackets, and the spread between searches) and the test.
    pub significance: Option<Comparison>,
    /// A side's figure is degraded or a lower bound: the caveat every line quoting it carries.
    pub caveat: Option<String>,
}

impl Decomposed {
    /// `S5 routing tax (microshard-1 vs single): 0.95× (95 % CI …, significant, p=…)`.
    pub(crate) fn sentence(&self) -> String {
        let test = self
            .significance
            .as_ref()
            .map_or("not tested".into(), Comparison::words);
        let caveat = self
            .caveat
            .as_ref()
            .map(|c| format!("; {c}"))
            .unwrap_or_default();
        format!(
            "{} {} ({} vs {}): {:.2}× ({test}{caveat})",
            self.scenario, self.part, self.of, self.against, self.ratio
        )
    }
}

impl CeilingPart {
    /// The part of a report: `records` are the experiment's searches (every repetition), `rows`
    /// its table, `baseline` its baseline topology as shown.
    pub(crate) fn of(records: &[CeilingRecord], rows: &[Row], baseline: &str) -> Option<Self> {
        let first = records.first()?;
        let order = |c: &CeilingCell| {
            (rows.iter())
                .position(|r| r.scenario == c.scenario && r.topology == c.topology)
                .unwrap_or(usize::MAX)
        };
        let mut cells: Vec<CeilingCell> = group(records).into_iter().map(cell).collect();
        cells.sort_by_key(order);
        let mut part = CeilingPart {
            bounds: Bound::all_shown(&first.bounds),
            drawn: first.bounds.first().cloned(),
            step_s: first.step_s,
            cells,
            ..CeilingPart::default()
        };
        part.decomposed = part.decompose(baseline, rows);
        Some(part)
    }

    /// The cell of `topology` in `scenario`, when it was searched.
    fn cell_of(&self, scenario: &str, topology: &str) -> Option<&CeilingCell> {
        (self.cells.iter()).find(|c| c.scenario == scenario && c.topology == topology)
    }

    /// What the searches of `topology` in `scenario` established, when it was searched.
    fn found(&self, scenario: &str, topology: &str) -> Option<&[Bounds]> {
        self.cell_of(scenario, topology)
            .map(|c| c.searched.as_slice())
    }

    /// The ceiling of `of` against that of `against` in `scenario`, over their searches.
    pub(crate) fn compare(&self, scenario: &str, of: &str, against: &str) -> Option<Comparison> {
        searches::compare(self.found(scenario, of)?, self.found(scenario, against)?)
    }

    /// Every row of a ceiling compare quotes its ceiling's comparison with the baseline's (the
    /// brackets and the spread between searches), not the repetitions' throughputs alone.
    pub(crate) fn quote_in(&self, rows: &mut [Row], baseline: &str) {
        for r in rows.iter_mut().filter(|r| r.topology != baseline) {
            if let Some(c) = self.compare(&r.scenario, &r.topology, baseline) {
                r.vs_baseline = Some(c.ratio);
                r.significance = Some(c);
            }
        }
    }

    /// The ceilings as a table (terminal), with the decomposition under it.
    pub(crate) fn terminal(&self) -> String {
        let mut out = format!("{}\n{}\n", self.title(), self.table().terminal());
        out.extend(self.decomposed.iter().map(|d| d.sentence() + "\n"));
        out
    }

    /// The table's title: what a ceiling is here.
    pub(crate) fn title(&self) -> String {
        format!(
            "Ceilings at {} (intended latency; steps of {:.0} s and longer once bracketed; the highest rate sustained below every rate that failed, mean over searches; bracket: what passed – what failed):",
            self.bounds, self.step_s
        )
    }

    /// The columns a `compare --ceiling` adds to the CSV (its throughput columns are the
    /// ceilings), the intended latency's named by the bound's percentile.
    pub(crate) fn csv_names(&self) -> [String; 6] {
        let name = self.drawn.as_ref().map_or("p99", |b| b.name.as_str());
        [
            "ceiling_bracket_passed_ops_s".into(),
            "ceiling_bracket_failed_ops_s".into(),
            format!("ceiling_intended_{name}_us"),
            "ceiling_threads".into(),
            "ceiling_steps".into(),
            "ceiling_next_failure".into(),
        ]
    }

    /// A row's fields under [`CeilingPart::csv_names`]: the bracket's two ends (ops/s), intended
    /// latency at the bound (µs), threads, steps, and why the next rate failed (or why there is
    /// no ceiling); empty for a row not searched.
    pub(crate) fn csv_fields(&self, row: &Row) -> [String; 6] {
        let Some(cell) = self.cell_of(&row.scenario, &row.topology) else {
            return Default::default();
        };
        let (passed, failed) = cell.bracket.map_or((None, None), |(p, f)| (Some(p), f));
        let raw = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_default();
        [
            raw(passed),
            raw(failed),
            cell.at_bound_us.map(|p| p.to_string()).unwrap_or_default(),
            cell.threads.map(|t| t.to_string()).unwrap_or_default(),
            cell.steps.to_string(),
            match cell.ceiling {
                Some(_) => cell.next_failure.clone().unwrap_or_default(),
                None => cell.finding.clone(),
            },
        ]
    }

    /// The ceilings' table: one row per cell ([`CeilingCell::cells`]).
    pub(crate) fn table(&self) -> Table {
        let name = self.drawn.as_ref().map_or("p99", |b| b.name.as_str());
        let mut table = Table::new(vec![
            Column::words("scenario", ""),
            Column::words("topology", ""),
            Column::figures("ceiling ops/s", ""),
            Column::figures("bracket ops/s", ""),
            Column::figures(format!("intended {name}"), ""),
            Column::figures("threads", ""),
            Column::figures("server µs/op", ""),
            Column::figures("steps", ""),
            Column::words("the next rate", ""),
        ]);
        table.rows = self.cells.iter().map(CeilingCell::cells).collect();
        table
    }
}

impl CeilingCell {
    /// Its row of [`CeilingPart::table`].
    fn cells(&self) -> Vec<Cell> {
        let ceiling = match (self.ceiling, self.spread) {
            (Some(c), Some((lo, hi))) if lo < hi => {
                format!("{} ({}–{})", thousands(c), thousands(lo), thousands(hi))
            }
            (Some(c), _) => thousands(c),
            (None, _) => self.outcome.clone(),
        };
        let ceiling = match (self.client_limited, self.phase.as_str()) {
            (true, _) => format!("≥ {ceiling} client-limited"),
            (false, "load") => format!("{ceiling} (load)"),
            _ => ceiling,
        };
        let bracket = match self.bracket {
            Some((lo, Some(hi))) => format!("{}–{}", thousands(lo), thousands(hi)),
            Some((lo, None)) => format!("≥ {}", thousands(lo)),
            None => "—".into(),
        };
        let next = match (self.ceiling, &self.next_failure) {
            (None, _) => self.finding.clone(),
            (Some(_), Some(f)) => format!("failed: {f}"),
            (Some(_), None) => "—".into(),
        };
        vec![
            Cell::text(self.scenario.clone()),
            Cell::text(self.topology.clone()),
            Cell::text(ceiling),
            Cell::text(bracket),
            Cell::or_dash(self.at_bound_us.map(micros)),
            Cell::or_dash(self.threads),
            Cell::or_dash(self.server_us_per_op.map(|u| format!("{u:.0}"))),
            Cell::text(self.steps.to_string()),
            Cell::text(next),
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

/// The records by cell (scenario, topology), each cell's searches in repetition order.
fn group(records: &[CeilingRecord]) -> Vec<Vec<&CeilingRecord>> {
    let cells = super::charts::distinct(records.iter().map(|r| (&r.workload, &r.topology)));
    (cells.into_iter())
        .map(|cell| {
            let mine = records
                .iter()
                .filter(|r| (&r.workload, &r.topology) == cell);
            let mut searches: Vec<&CeilingRecord> = mine.collect();
            searches.sort_by_key(|r| r.repeat);
            searches
        })
        .collect()
}

/// A cell's searches as one cell of the report.
fn cell(searches: Vec<&CeilingRecord>) -> CeilingCell {
    let first = searches[0];
    let found: Vec<Bounds> = searches.iter().filter_map(|r| searched(r)).collect();
    let passed: Vec<f64> = found.iter().map(|s| s.passed).collect();
    let ceiling = searches::geometric_mean(&found);
    let failed: Option<Vec<f64>> = found.iter().map(|s| s.failed).collect();
    let last_found = searches.iter().rev().find_map(|r| match &r.outcome {
        Some(Outcome::Found {
            at_bounds_us,
            threads,
            next_failure,
            caveats,
            ..
        }) => Some((at_bounds_us, *threads, next_failure, caveats)),
        _ => None,
    });
    let findings: Vec<String> = searches.iter().map(|r| r.finding()).collect();
    CeilingCell {
        scenario: first.workload.clone(),
        topology: first.topology.clone(),
        phase: first.phase.clone(),
        spread: ceiling.map(|_| stats::range(&passed)),
        ceiling,
        bracket: ceiling.map(|_| (stats::range(&passed).0, failed.map(|f| stats::range(&f).1))),
        searches: searches.len(),
        found: found.len(),
        client_limited: (searches.iter())
            .any(|r| matches!(r.outcome, Some(Outcome::ClientLimited { .. }))),
        outcome: (searches.iter().rev())
            .find_map(|r| r.outcome.as_ref().map(|o| o.word().to_string()))
            .unwrap_or_else(|| "not ended".into()),
        at_bound_us: last_found.and_then(|f| f.0.first().copied()),
        threads: last_found.map(|f| f.1),
        server_us_per_op: (searches.iter().rev()).find_map(|r| r.server_cpu.map(|f| f.per_op_us)),
        steps: searches.iter().map(|r| r.steps.len()).sum(),
        next_failure: last_found.and_then(|f| f.2.clone()),
        finding: findings.join(" | "),
        points: searches.iter().flat_map(|r| points(r)).collect(),
        rings: searches.iter().filter_map(|r| ring(r)).collect(),
        caveats: last_found.map(|f| f.3.clone()).unwrap_or_default(),
        searched: found,
    }
}

/// Each open-loop step of a search as a chart point.
fn points(r: &CeilingRecord) -> Vec<Point> {
    (r.steps.iter())
        .filter(|s| s.counted)
        .filter_map(|s| {
            Some(Point {
                offered: s.offered?,
                achieved: s.achieved,
                at_bound_us: s.at_bounds_us.first().copied().unwrap_or(s.intended_us[1]),
                rule: s.failed.as_ref().map(|_| s.rule.unwrap_or(Rule::Latency)),
                degraded: s.verdict == "degraded",
                repeat: r.repeat,
            })
        })
        .collect()
}

/// Where a chart rings a search's ceiling: the offered rate that passed, at the intended
/// latency at the bound there.
fn ring(r: &CeilingRecord) -> Option<(f64, u64)> {
    match &r.outcome {
        Some(Outcome::Found {
            bracket: Some(b),
            at_bounds_us,
            ..
        }) => Some((b.passed, at_bounds_us.first().copied().unwrap_or(0))),
        _ => None,
    }
}

/// The one-shard cluster the routing tax and the sharding gain are measured against.
const ONE_SHARD: &str = "microshard-1";
/// The one-shard cluster whose collection is not sharded: the mongos hop without the shard key.
const ONE_SHARD_UNSHARDED: &str = "microshard-1u";

impl CeilingPart {
    /// The micro-shard ratio taken apart, per scenario, when the experiment holds the baseline
    /// (`single`), `microshard-1` and larger micro-shard topologies: routing tax (microshard-1 vs the
    /// baseline), sharding gain (each larger one vs microshard-1) and net (each larger one vs the
    /// baseline). With `microshard-1u` as well, the routing tax comes apart into the mongos hop
    /// (microshard-1u vs the baseline) and the sharding overhead (microshard-1 vs microshard-1u:
    /// the shard-key index and the ownership filter). Only cells with a ceiling take part; a
    /// degraded or lower-bound side is said.
    fn decompose(&self, baseline: &str, rows: &[Row]) -> Vec<Decomposed> {
        let mut out = Vec::new();
        for s in super::charts::distinct(self.cells.iter().map(|c| c.scenario.as_str())) {
            let has = |t: &str| self.found(s, t).is_some_and(|f| !f.is_empty());
            if !has(baseline) || !has("microshard-1") {
                continue;
            }
            let larger = (self.cells.iter()).filter(|c| {
                c.scenario == s
                    && c.ceiling.is_some()
                    && c.topology.starts_with("microshard-")
                    && ![ONE_SHARD, ONE_SHARD_UNSHARDED].contains(&c.topology.as_str())
            });
            let part = |name: &str, of: &str, against: &str| {
                let c = self.compare(s, of, against);
                Decomposed {
                    scenario: s.to_string(),
                    part: name.to_string(),
                    of: of.to_string(),
                    against: against.to_string(),
                    ratio: c.map_or(f64::NAN, |c| c.ratio),
                    significance: c,
                    caveat: caveat(&self.cells, rows, s, [of, against]),
                }
            };
            out.push(part("routing tax", ONE_SHARD, baseline));
            if has(ONE_SHARD_UNSHARDED) {
                out.push(part("mongos hop", ONE_SHARD_UNSHARDED, baseline));
                out.push(part("sharding overhead", ONE_SHARD, ONE_SHARD_UNSHARDED));
            }
            for n in larger {
                out.push(part("sharding gain", &n.topology, "microshard-1"));
                out.push(part("net", &n.topology, baseline));
            }
        }
        out
    }
}

/// `degraded: single; microshard-2 a lower bound (client-limited)`: what a line quoting these
/// two cells must carry.
fn caveat(cells: &[CeilingCell], rows: &[Row], scenario: &str, pair: [&str; 2]) -> Option<String> {
    let degraded: Vec<&str> = (pair.iter().copied())
        .filter(|t| {
            (rows.iter()).any(|r| {
                r.scenario == scenario
                    && r.topology == *t
                    && r.validity.verdict == crate::measure::validity::Verdict::Degraded
            })
        })
        .collect();
    let limited: Vec<&str> = (pair.iter().copied())
        .filter(|t| {
            (cells.iter()).any(|c| c.scenario == scenario && c.topology == *t && c.client_limited)
        })
        .collect();
    let mut parts = Vec::new();
    if !degraded.is_empty() {
        parts.push(format!("degraded: {}", degraded.join(", ")));
    }
    if !limited.is_empty() {
        parts.push(format!(
            "{} only a lower bound (client-limited)",
            limited.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiment::ceiling::search::Tally;
    use crate::experiment::ceiling::{Bracket, SearchSpec, Step};
    use crate::report::build_from;
    use crate::report::tests::{cell, config};

    /// A step of a search at `offered`, passing or failing for `failed`.
    pub(crate) fn step(offered: f64, failed: Option<&str>) -> Step {
        Step {
            kind: StepKind::Search,
            offered: Some(offered),
            achieved: offered,
            threads: 100,
            step_s: 2.0,
            operations: (offered * 2.0) as u64,
            intended_us: [1_000, 20_000, 30_000],
            at_bounds_us: vec![20_000],
            actual_at_bounds_us: vec![15_000],
            actual_mean_us: 5_000.0,
            schedule: Default::default(),
            client_cores: 0.5,
            server_cores: Some(0.3),
            verdict: "valid".into(),
            verdict_reasons: Vec::new(),
            failed: failed.map(str::to_string),
            rule: failed.map(|_| Rule::Latency),
            counted: true,
        }
    }

    /// Search `repeat` of S5 on `topology` that found `ceiling`, the next rate 5 % above failing.
    pub(crate) fn found(topology: &str, ceiling: f64, repeat: u32) -> CeilingRecord {
        let spec = SearchSpec {
            bounds: Bound::parse_list("p99=50ms").expect("a bound"),
            step_s: 2,
            precision: 0.05,
            max_threads: 512,
        };
        let mut r = CeilingRecord::new("S5".into(), topology.into(), &spec, Default::default());
        r.repeat = repeat;
        let fail = ceiling * 1.05;
        r.steps = vec![step(ceiling, None), step(fail, Some("p99 80 ms > 50 ms"))];
        r.outcome = Some(Outcome::Found {
            ceiling,
            low: ceiling,
            high: ceiling,
            at_bounds_us: vec![20_000],
            threads: 100,
            next_failure: Some("p99 80 ms > 50 ms".into()),
            bracket: Some(Bracket {
                passed: ceiling,
                passed_tally: Tally {
                    passed: 1,
                    failed: 0,
                },
                failed: Some(fail),
                failed_tally: Some(Tally {
                    passed: 0,
                    failed: 2,
                }),
            }),
            caveats: Vec::new(),
        });
        r
    }

    /// Three whole S5 searches per topology around each of its ceilings (±1 %), with the
    /// compare's report over them.
    pub(crate) fn searched_s5(tps: &[(&str, f64)]) -> (crate::report::Report, Vec<CeilingRecord>) {
        let (mut cells, mut records) = (Vec::new(), Vec::new());
        for &(t, tp) in tps {
            for (i, jitter) in [0.99, 1.0, 1.01].iter().enumerate() {
                cells.push(cell(t, "S5", i as u32 + 1, tp * jitter));
                records.push(found(t, tp * jitter, i as u32 + 1));
            }
        }
        let mut cfg = config(false);
        cfg.command.topologies = tps.iter().map(|(t, _)| t.to_string()).collect();
        cfg.command.scenarios = vec!["S5".into()];
        cfg.command.repeat = 3;
        (build_from(&cfg, &cells), records)
    }

    #[test]
    fn with_microshard_1u_the_routing_tax_comes_apart_into_the_hop_and_the_sharding_overhead() {
        let tps = [
            ("single", 2_000.0),
            ("microshard-1u", 1_800.0),
            ("microshard-1", 1_700.0),
            ("microshard-2", 3_600.0),
        ];
        let (report, records) = searched_s5(&tps);
        let part = CeilingPart::of(&records, &report.rows, "single").expect("a part");
        let said: Vec<(&str, &str, &str, f64)> = (part.decomposed.iter())
            .map(|d| (d.part.as_str(), d.of.as_str(), d.against.as_str(), d.ratio))
            .collect();
        let names: Vec<(&str, &str, &str)> = said.iter().map(|(p, o, a, _)| (*p, *o, *a)).collect();
        assert_eq!(
            names,
            [
                ("routing tax", "microshard-1", "single"),
                ("mongos hop", "microshard-1u", "single"),
                ("sharding overhead", "microshard-1", "microshard-1u"),
                ("sharding gain", "microshard-2", "microshard-1"),
                ("net", "microshard-2", "single"),
            ],
            "microshard-1u is no larger micro-shard topology"
        );
        assert!((said[1].3 - 0.9).abs() < 0.01, "{said:?}");
        assert!(
            (said[1].3 * said[2].3 - said[0].3).abs() < 1e-9,
            "hop × overhead = routing tax: {said:?}"
        );
        assert!(
            part.decomposed[1]
                .sentence()
                .starts_with("S5 mongos hop (microshard-1u vs single): 0.90×"),
            "{}",
            part.decomposed[1].sentence()
        );
    }

    #[test]
    fn the_ratio_comes_apart_into_routing_tax_sharding_gain_and_net_over_whole_searches() {
        let tps = [
            ("single", 2_000.0),
            ("microshard-1", 1_700.0),
            ("microshard-2", 3_600.0),
        ];
        let (mut report, records) = searched_s5(&tps);
        let part = CeilingPart::of(&records, &report.rows, "single").expect("a part");
        let said: Vec<(String, f64, bool)> = (part.decomposed.iter())
            .map(|d| {
                let significant = d.significance.is_some_and(|c| c.significant);
                (d.part.clone(), d.ratio, significant)
            })
            .collect();
        assert_eq!(said.len(), 3, "{said:?}");
        assert_eq!((said[0].0.as_str(), said[0].2), ("routing tax", true));
        assert!((said[0].1 - 0.85).abs() < 0.01, "{said:?}");
        assert_eq!(said[1].0, "sharding gain");
        assert!(
            (said[1].1 * said[0].1 - said[2].1).abs() < 1e-9,
            "tax × gain = net"
        );
        let sentence = part.decomposed[0].sentence();
        assert!(
            sentence.starts_with("S5 routing tax (microshard-1 vs single): 0.85× (95 % CI")
                && sentence.contains("incl. the brackets, significant"),
            "{sentence}"
        );
        // The rows quote the searches' comparison, not the repetitions' throughputs alone.
        part.quote_in(&mut report.rows, "single");
        let one = (report.rows.iter()).find(|r| r.topology == "microshard-1");
        let basis = one.and_then(|r| r.significance).map(|c| c.basis);
        assert_eq!(basis, Some(crate::report::stats::Basis::Searches));
        // The table: the ceiling over its searches, the brackets, the next rate's failure.
        let table = part.terminal();
        assert!(table.contains("Ceilings at p99 ≤ 50.0 ms"), "{table}");
        assert!(table.contains("2,000 (1,980–2,020)"), "{table}");
        assert!(table.contains("1,980–2,121"), "{table}");
        assert!(table.contains("failed: p99 80 ms > 50 ms"), "{table}");
        // Each counted open-loop step of every search is a point of the chart.
        assert_eq!(part.cells[0].points.len(), 6);
        assert_eq!(part.cells[0].points[1].rule, Some(Rule::Latency));
    }

    #[test]
    fn one_search_each_gives_the_brackets_and_no_significance() {
        let mut cfg = config(false);
        cfg.command.topologies = vec!["single".into(), "microshard-1".into()];
        cfg.command.scenarios = vec!["S5".into()];
        let cells = vec![
            cell("single", "S5", 1, 2_000.0),
            cell("microshard-1", "S5", 1, 1_940.0),
        ];
        let report = build_from(&cfg, &cells);
        let records = [
            found("single", 2_000.0, 1),
            found("microshard-1", 1_940.0, 1),
        ];
        let part = CeilingPart::of(&records, &report.rows, "single").expect("a part");
        let sentence = part.decomposed[0].sentence();
        assert_eq!(
            sentence,
            "S5 routing tax (microshard-1 vs single): 0.97× (bracket 0.92–1.02×, one search each: not tested)"
        );
    }

    #[test]
    fn without_microshard_1_nothing_is_taken_apart_and_no_ceiling_is_said_so() {
        let mut cfg = config(false);
        cfg.command.topologies = vec!["single".into(), "microshard-2".into()];
        cfg.command.scenarios = vec!["S5".into()];
        let cells = vec![cell("single", "S5", 1, 2_000.0)];
        let report = build_from(&cfg, &cells);
        let mut none = found("microshard-2", 1.0, 1);
        none.outcome = Some(Outcome::NoRateMetBound {
            lowest: 10.0,
            why: "p99 2.0 s > 50.0 ms".into(),
        });
        let part = CeilingPart::of(&[found("single", 2_000.0, 1), none], &report.rows, "single")
            .expect("a part");
        assert!(part.decomposed.is_empty());
        let fields = part.table().read_rows().remove(1);
        assert_eq!(fields[2], "no ceiling");
        assert!(
            fields[8].contains("no rate met p99 ≤ 50.0 ms"),
            "{fields:?}"
        );
    }

    #[test]
    fn the_chart_marks_each_step_by_what_it_did_and_reads_without_the_tables() {
        let mut r = found("single", 2_000.0, 1);
        let mut achieved = step(
            2_100.0,
            Some("achieved 1,900 of 2,100 ops/s (90 %, under 95 %)"),
        );
        achieved.rule = Some(Rule::Achieved);
        achieved.verdict = "degraded".into();
        let again = step(2_100.0, None);
        r.steps.extend([achieved, again]);
        let mut part = CeilingPart::of(&[r], &[], "").expect("a part");
        part.model = vec![("single".into(), 2_100.0)];
        let chart = crate::report::charts::ceiling(&part, "S5", &[], true)
            .expect("a chart")
            .expect("drawn");
        for said in [
            "failed: latency bound",
            "failed: achieved rate",
            "grey halo: a degraded step",
            "ringed: a search",
            "dotted: the stand-in",
            "1 of 4 steps are degraded",
            "single 2,100 ops/s",
            "intended p99 (log scale)",
            "1/3",
        ] {
            assert!(chart.svg.contains(said), "{said}");
        }
    }

    #[test]
    fn a_bound_on_another_percentile_is_the_one_every_format_shows() {
        let mut r = found("single", 2_000.0, 1);
        r.bounds = Bound::parse_list("p99.9=80ms").expect("a bound");
        let part = CeilingPart::of(&[r.clone()], &[], "").expect("a part");
        assert_eq!(part.table().header()[4], "intended p99.9");
        assert!(
            part.title().starts_with("Ceilings at p99.9 ≤ 80.0 ms"),
            "{}",
            part.title()
        );
        let chart = crate::report::charts::ceiling(&part, "S5", &[], false)
            .expect("a chart")
            .expect("drawn");
        assert!(
            chart.svg.contains("intended p99.9 (log scale)"),
            "the chart's axis"
        );
        assert!(
            chart.svg.contains("the bound: p99.9 ≤ 80.0 ms"),
            "the chart's bound"
        );
        let steps = render(&r);
        assert!(
            steps.contains("intended p99.9") && steps.contains("actual p99.9"),
            "{steps}"
        );
        let mut report =
            crate::report::build_from(&config(false), &[cell("single", "S5", 1, 2_000.0)]);
        report.ceiling = Some(part);
        let csv = crate::report::render::render(&report, crate::report::Format::Csv);
        assert!(
            csv.lines()
                .next()
                .is_some_and(|h| h.contains("ceiling_intended_p99.9_us")),
            "{csv}"
        );
    }

    #[test]
    fn a_step_table_names_each_rule_and_groups_the_reasons_for_a_verdict() {
        let mut r = found("single", 2_000.0, 1);
        for s in &mut r.steps {
            s.verdict = "degraded".into();
            s.verdict_reasons = vec![format!(
                "busy host: other processes used {} of 2 cores",
                s.threads
            )];
        }
        let text = render(&r);
        assert!(text.contains("degraded (step 1, 2, the first of them): busy host: other processes used 100 of 2 cores"), "{text}");
        assert!(
            text.contains("intended p99") && text.contains("actual p99"),
            "{text}"
        );
        assert!(
            text.contains("bracket: 2,000 passed (1 of 1 passed) – 2,100 failed (0 of 2 passed)"),
            "{text}"
        );
    }
}
