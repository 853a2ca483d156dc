//! `ceiling`: the highest rate a topology sustains for one scenario while its **intended**
//! latency stays within a bound (README, "Glossary": ceiling, bound). Open-loop steps (`target`)
//! after a short closed-loop saturation probe: climb geometrically, bisect between the last
//! passing and the first failing rate to `--precision`, then confirm the rate found. A step
//! passes when it achieved ≥ 95 % of the offered rate, every bound held on intended latency
//! (coordinated omission corrected), its result is not invalid, errors stayed under
//! `microshard.maxerrorrate` and the server did not stall. When the client cannot be given
//! enough threads for a rate, the search stops there and says so: never a server ceiling that
//! is the client's. Every step is kept in the run directory (`ceiling.json`, `steps/`).

pub(crate) mod search;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::lab::{Deployment, Lab, Measured};
use super::progress::Progress;
use super::results::{ExperimentDir, write_json_atomic};
use super::scenario::{self, PropertyMap, Scaling};
use super::sweep::{SweepTarget, reach_target};
use crate::measure::registry::MapKind;
use crate::runner::Phase;
use crate::workload::prop;
pub(crate) use search::Bound;
use search::{MAX_STEPS, Search, judge, micros, thousands};

/// The schema of `ceiling.json`.
pub(crate) const CEILING_SCHEMA: &str = "microshard-ceiling/1";

/// Everything `ceiling` is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct CeilingConfig {
    /// Workload file (`-P`).
    pub workload: String,
    /// Where to run.
    pub target: SweepTarget,
    /// The latency bounds; all must hold.
    pub bounds: Vec<Bound>,
    /// Measured length of each step.
    pub step: Duration,
    /// Stop bisecting when the gap is this share of the passing rate.
    pub precision: f64,
    /// Confirmations of the rate found.
    pub repeat: u32,
    /// The most client threads a step may use.
    pub max_threads: u32,
    /// `-p` overrides (with `--warmup`).
    pub overrides: Vec<String>,
    /// The file's sizes instead of the laptop scale.
    pub full: bool,
    /// Records at laptop scale.
    pub records: u64,
    /// Skip the load (the data is already there).
    pub no_load: bool,
    /// Where the run directory is created.
    pub results_root: PathBuf,
}

/// What a step was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StepKind {
    /// Closed loop at the scenario's threads: where the search starts.
    Probe,
    /// A rate the search tried.
    Search,
    /// The rate found, measured again.
    Confirm,
}

/// One step, as kept in `ceiling.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Step {
    /// What it was for.
    pub kind: StepKind,
    /// Offered rate (ops/s); `None` for the closed-loop probe.
    pub offered: Option<f64>,
    /// Achieved rate (ops/s).
    pub achieved: f64,
    /// Client threads.
    pub threads: u32,
    /// Intended latency percentiles (µs): p50, p99, p99.9.
    pub intended_us: [u64; 3],
    /// The intended latency at each bound's quantile (µs), in the bounds' order.
    pub at_bounds_us: Vec<u64>,
    /// The step's result verdict (`valid`, `degraded`, `invalid`).
    pub verdict: String,
    /// Why the step did not sustain its rate; `None` when it did (or for the probe).
    pub failed: Option<String>,
}

/// How the search ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// The ceiling: the rate that passed, with its confirmations' achieved rates.
    Found {
        /// Mean achieved rate over the confirmations (ops/s).
        ceiling: f64,
        /// Lowest and highest confirmation.
        low: f64,
        high: f64,
        /// Intended p99 at it (µs, the worst confirmation).
        p99_us: u64,
        /// Client threads at it.
        threads: u32,
        /// Why the lowest failing rate failed.
        next_failure: Option<String>,
    },
    /// Not even the lowest rate tried met the bound.
    NoRateMetBound {
        /// The lowest rate tried (ops/s).
        lowest: f64,
        /// Why it failed.
        why: String,
    },
    /// The client could not offer a rate: no server ceiling was measured past it.
    ClientLimited {
        /// The rate it could not offer.
        rate: f64,
        /// The highest rate that passed before it (a lower bound of the ceiling).
        lower_bound: Option<f64>,
        /// What limited the client.
        why: String,
    },
    /// Ctrl-C: the steps so far are kept.
    Interrupted {
        /// The highest rate that passed (a lower bound of the ceiling).
        lower_bound: Option<f64>,
    },
}

/// `ceiling.json`: the request, every step and how the search ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CeilingRecord {
    /// [`CEILING_SCHEMA`].
    pub schema: String,
    /// When the search started (RFC 3339).
    pub created: String,
    /// The workload's name.
    pub workload: String,
    /// The topology's name or the redacted URI.
    pub topology: String,
    /// The bounds; all must hold.
    pub bounds: Vec<Bound>,
    /// Seconds each step measured.
    pub step_s: f64,
    /// `--precision` as a share.
    pub precision: f64,
    /// The workload's resolved properties (before each step's rate and threads).
    pub properties: PropertyMap,
    /// The client machine.
    pub host: crate::measure::HostFacts,
    /// Measured against microshard's stand-in, not MongoDB.
    pub standin: bool,
    /// Every step, in order.
    pub steps: Vec<Step>,
    /// How it ended (`None` while it runs).
    pub outcome: Option<Outcome>,
}

impl CeilingRecord {
    /// The one-line finding: the ceiling, or why there is none.
    pub(crate) fn finding(&self) -> String {
        let bounds: Vec<String> = self.bounds.iter().map(Bound::shown).collect();
        let bounds = bounds.join(", ");
        let (w, t) = (&self.workload, &self.topology);
        match &self.outcome {
            Some(Outcome::Found {
                ceiling,
                low,
                high,
                p99_us,
                threads,
                next_failure,
            }) => {
                let spread = match (self.repeat(), low < high) {
                    (n, true) if n > 1 => format!(
                        " ({} – {} over {n} confirmations)",
                        thousands(*low),
                        thousands(*high)
                    ),
                    _ => String::new(),
                };
                let next = next_failure
                    .as_ref()
                    .map(|f| format!("; the next step failed: {f}"))
                    .unwrap_or_default();
                format!(
                    "ceiling: {t} sustains {} {w} ops/s at {bounds}{spread}: intended p99 {} there, {threads} threads{next}",
                    thousands(*ceiling),
                    micros(*p99_us)
                )
            }
            Some(Outcome::NoRateMetBound { lowest, why }) => format!(
                "no ceiling: no rate met {bounds} on {t}; the lowest tried, {} ops/s, failed: {why}",
                thousands(*lowest)
            ),
            Some(Outcome::ClientLimited {
                rate,
                lower_bound,
                why,
            }) => format!(
                "no server ceiling measured: the client could not offer {} ops/s ({why}){}",
                thousands(*rate),
                lower_bound
                    .map(|l| format!(
                        "; {t} sustained {} ops/s at {bounds}, a lower bound",
                        thousands(l)
                    ))
                    .unwrap_or_default()
            ),
            Some(Outcome::Interrupted { lower_bound }) => format!(
                "interrupted: the search did not finish{}",
                lower_bound
                    .map(|l| format!("; {t} sustained {} ops/s at {bounds} so far", thousands(l)))
                    .unwrap_or_default()
            ),
            None => "the search has not ended".into(),
        }
    }

    fn repeat(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.kind == StepKind::Confirm)
            .count()
    }
}

/// The workload at the chosen scale, with `-p` applied; bad input names the flag.
pub(crate) fn resolve(cfg: &CeilingConfig) -> anyhow::Result<(String, PropertyMap, String)> {
    let scaling = Scaling {
        full: cfg.full,
        records: cfg.records,
        duration_s: None,
        threads: None,
    };
    let one = scenario::OneWorkload::resolve(&cfg.workload, &scaling, &cfg.overrides)?;
    scenario::refuse_outputs(
        &one.props,
        "a ceiling search, whose steps would each overwrite the last one's files",
    )?;
    let base = one.base();
    Ok((one.name, base, one.scale_note))
}

/// What a search works with once its deployment is reached.
struct CeilingRun<'a> {
    cfg: &'a CeilingConfig,
    base: &'a PropertyMap,
    deployment: &'a Deployment,
    dir: &'a ExperimentDir,
    where_: &'a str,
}

/// Runs a ceiling search and keeps it in a new run directory; returns the directory and the
/// record (its outcome set).
pub(crate) async fn ceiling_with<L: Lab>(
    lab: &mut L,
    cfg: &CeilingConfig,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<(ExperimentDir, CeilingRecord)> {
    let (name, base, scale_note) = resolve(cfg)?;
    let where_ = match &cfg.target {
        SweepTarget::Topology(t) => crate::topology::topology_label(t, None),
        SweepTarget::Uri(u) => crate::redact::redact_uri(u),
    };
    let dir = ExperimentDir::create(&cfg.results_root, &format!("ceiling-{name}"))?;
    let mut record = CeilingRecord {
        schema: CEILING_SCHEMA.into(),
        created: chrono::Utc::now().to_rfc3339(),
        workload: name,
        topology: where_.clone(),
        bounds: cfg.bounds.clone(),
        step_s: cfg.step.as_secs_f64(),
        precision: cfg.precision,
        properties: base.clone(),
        host: crate::measure::HostFacts::collect(),
        standin: false,
        steps: Vec::new(),
        outcome: None,
    };
    write_record(&dir, &record)?;
    progress.line(&format!("microshard: results in {}", dir.path().display()));
    progress.line(&format!("microshard: sizes: {scale_note}"));
    let (deployment, handle) = reach_target(lab, &cfg.target, &where_, cancel, progress).await?;
    let run = CeilingRun {
        cfg,
        base: &base,
        deployment: &deployment,
        dir: &dir,
        where_: &where_,
    };
    let searched = load_and_search(lab, &run, &mut record, cancel, progress).await;
    if let Some(h) = handle {
        let bar = progress.phase(&format!("{where_}: teardown"), None);
        let down = lab.down(h).await;
        bar.finish(if down.is_ok() { "down" } else { "failed" });
        down?;
    }
    record.outcome = Some(searched?);
    write_record(&dir, &record)?;
    Ok((dir, record))
}

fn write_record(dir: &ExperimentDir, record: &CeilingRecord) -> anyhow::Result<()> {
    write_json_atomic(&dir.path().join("ceiling.json"), record)?;
    Ok(())
}

/// Loads the data (unless `--no-load`), probes, then searches and confirms until a rate is
/// confirmed, none met the bound, the client could not offer a rate, or the steps ran out.
async fn load_and_search<L: Lab>(
    lab: &mut L,
    run: &CeilingRun<'_>,
    record: &mut CeilingRecord,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Outcome> {
    if !run.cfg.no_load {
        let bar = progress.phase(&format!("{}: load", run.where_), None);
        let m = lab
            .run(run.deployment, run.base, Phase::Load, cancel)
            .await?;
        bar.finish(&format!("{:.0} ops/s", m.summary.throughput));
    }
    let threads = run
        .base
        .get(prop::THREADCOUNT.name)
        .and_then(|t| t.parse().ok())
        .unwrap_or(1u32)
        .min(run.cfg.max_threads);
    let probe = step(
        lab,
        run,
        record,
        (StepKind::Probe, None, threads),
        cancel,
        progress,
    )
    .await?;
    let mut state = SearchState {
        search: Search::new(run.cfg.precision, (probe.achieved / 64.0).max(1.0)),
        rate: (probe.achieved / 2.0).max(1.0),
        lowest_failure: None,
        steps_left: MAX_STEPS,
    };
    loop {
        if let Some(end) = climb_and_bisect(lab, run, record, &mut state, cancel, progress).await? {
            return Ok(end);
        }
        let Some(found) = state.search.pass() else {
            let why = state.lowest_failure.map(|(_, w)| w).unwrap_or_default();
            return Ok(Outcome::NoRateMetBound {
                lowest: state.rate,
                why,
            });
        };
        let next_failure = state.lowest_failure.as_ref().map(|(_, w)| w.clone());
        match confirm(lab, run, record, found, next_failure, cancel, progress).await? {
            Err(why) if state.steps_left > 0 => {
                // Not confirmed: the rate failed after all, and the search goes on below it.
                state.failed(found, why);
                if let Some(r) = state.search.next() {
                    state.rate = r;
                }
            }
            Err(_) => {
                return Ok(Outcome::NoRateMetBound {
                    lowest: found,
                    why: "no rate was confirmed within the steps allowed".into(),
                });
            }
            Ok(outcome) => return Ok(outcome),
        }
    }
}

/// The search between its steps: where it stands, the rate to offer next, the lowest failure
/// (and why) and how many steps it may still take.
struct SearchState {
    search: Search,
    rate: f64,
    lowest_failure: Option<(f64, String)>,
    steps_left: usize,
}

impl SearchState {
    fn failed(&mut self, rate: f64, why: String) {
        self.search.record(rate, false);
        if self.lowest_failure.as_ref().is_none_or(|(r, _)| rate <= *r) {
            self.lowest_failure = Some((rate, why));
        }
    }
}

/// Offers rates until the search has converged (`None`), or ends it: Ctrl-C, or a rate the
/// client could not offer.
async fn climb_and_bisect<L: Lab>(
    lab: &mut L,
    run: &CeilingRun<'_>,
    record: &mut CeilingRecord,
    state: &mut SearchState,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Option<Outcome>> {
    let started = state.search.pass().is_some() || state.search.fail.is_some();
    if started && state.search.next().is_none() {
        return Ok(None);
    }
    while state.steps_left > 0 {
        if cancel.is_cancelled() {
            return Ok(Some(Outcome::Interrupted {
                lower_bound: state.search.pass(),
            }));
        }
        state.steps_left -= 1;
        let rate = state.rate;
        let wanted = threads_for(rate, &run.cfg.bounds);
        let threads = wanted.min(run.cfg.max_threads);
        let s = step(
            lab,
            run,
            record,
            (StepKind::Search, Some(rate), threads),
            cancel,
            progress,
        )
        .await?;
        match s.failed {
            Some(why) if wanted > run.cfg.max_threads => {
                return Ok(Some(Outcome::ClientLimited {
                    rate,
                    lower_bound: state.search.pass(),
                    why: format!(
                        "the rate needs about {wanted} threads at the bound, --max-threads is {}; the step: {why}",
                        run.cfg.max_threads
                    ),
                }));
            }
            Some(why) => state.failed(rate, why),
            None => state.search.record(rate, true),
        }
        match state.search.next() {
            Some(r) => state.rate = r,
            None => break,
        }
    }
    Ok(None)
}

/// Measures the rate found `--repeat` times: the ceiling is their mean achieved rate. A
/// confirmation that fails is `Err(why)`: the rate is not the ceiling after all.
async fn confirm<L: Lab>(
    lab: &mut L,
    run: &CeilingRun<'_>,
    record: &mut CeilingRecord,
    found: f64,
    next_failure: Option<String>,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Result<Outcome, String>> {
    let threads = threads_for(found, &run.cfg.bounds).min(run.cfg.max_threads);
    let mut steps = Vec::new();
    for _ in 0..run.cfg.repeat {
        if cancel.is_cancelled() {
            return Ok(Ok(Outcome::Interrupted {
                lower_bound: Some(found),
            }));
        }
        let s = step(
            lab,
            run,
            record,
            (StepKind::Confirm, Some(found), threads),
            cancel,
            progress,
        )
        .await?;
        if let Some(why) = s.failed {
            return Ok(Err(why));
        }
        steps.push(s);
    }
    let achieved: Vec<f64> = steps.iter().map(|s| s.achieved).collect();
    Ok(Ok(Outcome::Found {
        ceiling: achieved.iter().sum::<f64>() / achieved.len().max(1) as f64,
        low: achieved.iter().copied().fold(f64::INFINITY, f64::min),
        high: achieved.iter().copied().fold(0.0, f64::max),
        p99_us: steps.iter().map(|s| s.intended_us[1]).max().unwrap_or(0),
        threads,
        next_failure,
    }))
}

/// Client threads for an open-loop rate: by Little's law, the rate times the largest bound,
/// twice over, so the threads are not what holds the rate back while latency stays in bounds.
fn threads_for(rate: f64, bounds: &[Bound]) -> u32 {
    let limit_s = bounds.iter().map(|b| b.limit_us).max().unwrap_or(1) as f64 / 1e6;
    let wanted = (rate * limit_s * 2.0).ceil();
    (wanted as u32).max(4)
}

/// Runs one step, keeps its result document under `steps/` and its record in `ceiling.json`.
async fn step<L: Lab>(
    lab: &mut L,
    run: &CeilingRun<'_>,
    record: &mut CeilingRecord,
    (kind, offered, threads): (StepKind, Option<f64>, u32),
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Step> {
    let n = record.steps.len() + 1;
    let caption = match offered {
        Some(r) => format!(
            "{}: step {n}: {} ops/s offered, {threads} threads",
            run.where_,
            thousands(r)
        ),
        None => format!(
            "{}: step {n}: saturation probe, {threads} threads",
            run.where_
        ),
    };
    let bar = progress.phase(&caption, Some(run.cfg.step));
    let props = step_props(run, offered, threads);
    let measured = lab.run(run.deployment, &props, Phase::Run, cancel).await?;
    let s = judged(&measured, kind, offered, threads, &run.cfg.bounds, &props);
    bar.finish(&match (&s.failed, kind) {
        (_, StepKind::Probe) => format!("{} ops/s", thousands(s.achieved)),
        (None, _) => format!(
            "sustained ({} ops/s, intended p99 {})",
            thousands(s.achieved),
            micros(s.intended_us[1])
        ),
        (Some(why), _) => format!("failed: {why}"),
    });
    record.standin |= measured.summary.standin;
    let steps_dir = run.dir.path().join("steps");
    std::fs::create_dir_all(&steps_dir)?;
    write_json_atomic(&steps_dir.join(format!("{n:02}.json")), &measured.document)?;
    record.steps.push(s.clone());
    write_record(run.dir, record)?;
    Ok(s)
}

/// A step's properties: the workload's, open loop at `offered` (intended latency recorded) or
/// closed loop for the probe, with `threads` threads for one step's length.
fn step_props(run: &CeilingRun<'_>, offered: Option<f64>, threads: u32) -> PropertyMap {
    let mut props = run.base.clone();
    let mut set = |k: &str, v: String| props.insert(k.to_string(), v);
    set(prop::THREADCOUNT.name, threads.to_string());
    set(prop::OPERATIONCOUNT.name, "0".into());
    set(
        prop::MAXEXECUTIONTIME.name,
        run.cfg.step.as_secs().max(1).to_string(),
    );
    if let Some(rate) = offered {
        set(
            prop::TARGET.name,
            (rate.round().max(1.0) as u64).to_string(),
        );
        set(prop::MEASUREMENT_INTERVAL.name, "both".into());
    }
    props
}

/// The step record of one measurement: its intended latencies and the judgement.
fn judged(
    m: &Measured,
    kind: StepKind,
    offered: Option<f64>,
    threads: u32,
    bounds: &[Bound],
    props: &PropertyMap,
) -> Step {
    let doc = &m.document;
    let intended = intended_histogram(doc);
    let at = |q: f64| intended.as_ref().map_or(0, |h| h.value_at_quantile(q));
    let at_bounds_us: Vec<u64> = bounds.iter().map(|b| at(b.quantile)).collect();
    let validity = &doc.validity;
    let failed = offered.and_then(|offered| {
        judge(
            &search::Measured {
                offered,
                achieved: m.summary.throughput,
                at_bounds_us: at_bounds_us.clone(),
                invalid: (validity.verdict == crate::measure::validity::Verdict::Invalid)
                    .then(|| validity.summary()),
                stalled: validity.server_stalls.is_some(),
                error_share: m.summary.errors as f64 / doc.operations.max(1) as f64,
                max_error_share: props
                    .get(prop::MAXERRORRATE.name)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(prop::MAXERRORRATE.default),
            },
            bounds,
        )
    });
    Step {
        kind,
        offered,
        achieved: m.summary.throughput,
        threads,
        intended_us: [at(0.5), at(0.99), at(0.999)],
        at_bounds_us,
        verdict: validity.verdict.to_string(),
        failed,
    }
}

/// Every operation's intended latencies in one histogram (the cleanup left out): the bound is on
/// the workload as a whole. `None` without intended measurements (the closed-loop probe).
fn intended_histogram(
    doc: &crate::measure::ResultDocument,
) -> Option<hdrhistogram::Histogram<u64>> {
    let mut all: Option<hdrhistogram::Histogram<u64>> = None;
    for m in doc
        .measurements
        .iter()
        .filter(|m| m.kind == MapKind::Intended && !m.name.contains("CLEANUP"))
    {
        let Ok(h) = m.decode_histogram() else {
            continue;
        };
        match &mut all {
            Some(a) => {
                let _ = a.add(&h);
            }
            None => all = Some(h),
        }
    }
    all
}
