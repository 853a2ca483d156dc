//! The search's driver: the steps it runs on a deployment that is up and loaded (the probe, the
//! climb, the bisection, the confirmations), each kept as it ends. `ceiling` runs one search;
//! `compare --ceiling` runs one per cell (README, "Glossary": ceiling, bound).

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::search::{self, MAX_STEPS, Search, judge, micros, thousands};
use super::{CeilingRecord, Outcome, SearchSpec, Step, StepKind, write_json_atomic};
use crate::experiment::lab::{Deployment, Lab, Measured};
use crate::experiment::progress::Progress;
use crate::measure::registry::MapKind;
use crate::runner::Phase;
use crate::workload::{Origin, Properties, prop};

/// Inserts a closed-loop load probe may make: its step's time bound ends it long before.
const PROBE_INSERTS: u64 = 50_000_000;

/// Seconds each step that inserts nothing leaves out at its start when `--warmup` is not given.
const STEP_WARMUP_S: f64 = 1.0;

/// One search: how it steps, the workload and phase it steps with, where it runs and where its
/// steps are kept.
pub(crate) struct SearchOn<'a> {
    /// Bounds, step length, precision, thread cap.
    pub spec: &'a SearchSpec,
    /// Confirmations of the rate found.
    pub repeat: u32,
    /// The workload's properties (before each step's rate and threads).
    pub base: &'a Properties,
    /// `Load`: every step inserts fresh keys after the ones there; `Run`: the scenario's mix.
    pub phase: Phase,
    /// The servers, up and loaded.
    pub deployment: &'a Deployment,
    /// Where each step's result document goes (`NN.json`).
    pub steps_dir: PathBuf,
    /// Where the record is written after every step.
    pub record_path: PathBuf,
    /// The topology as the progress lines name it.
    pub where_: &'a str,
}

/// How a search ended, with the confirmations' measurements when it found a ceiling (a
/// `compare --ceiling` keeps them as the cell's repetitions).
pub(crate) struct Searched {
    /// How it ended.
    pub outcome: Outcome,
    /// The confirmations, in order; empty unless a ceiling was found.
    pub confirmations: Vec<Measured>,
}

impl Searched {
    /// A search that ended without a ceiling confirmed.
    fn ended(outcome: Outcome) -> Searched {
        let confirmations = Vec::new();
        Searched {
            outcome,
            confirmations,
        }
    }
}

/// Probes, then searches and confirms until a rate is confirmed, none met the bound, the client
/// could not offer a rate, Ctrl-C, or the steps ran out.
pub(crate) async fn find<L: Lab>(
    lab: &mut L,
    on: &SearchOn<'_>,
    record: &mut CeilingRecord,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Searched> {
    let threads = on
        .base
        .get(prop::THREADCOUNT.name)
        .and_then(|t| t.parse().ok())
        .unwrap_or(1u32)
        .min(on.spec.max_threads);
    let (probe, _) = step(
        lab,
        on,
        record,
        (StepKind::Probe, None, threads),
        cancel,
        progress,
    )
    .await?;
    let mut state = SearchState {
        search: Search::new(on.spec.precision, (probe.achieved / 64.0).max(1.0)),
        rate: (probe.achieved / 2.0).max(1.0),
        lowest_failure: None,
        steps_left: MAX_STEPS,
    };
    let ended = Searched::ended;
    loop {
        if let Some(end) = climb_and_bisect(lab, on, record, &mut state, cancel, progress).await? {
            return Ok(ended(end));
        }
        if let Some(limited) = state.client_limited(on.spec.max_threads) {
            return Ok(ended(limited));
        }
        let Some(found) = state.search.pass() else {
            let why = state.lowest_failure.map(|f| f.why).unwrap_or_default();
            return Ok(ended(Outcome::NoRateMetBound {
                lowest: state.rate,
                why,
            }));
        };
        let next_failure = state.lowest_failure.as_ref().map(|f| f.why.clone());
        match confirm(lab, on, record, found, next_failure, cancel, progress).await? {
            Err(why) if state.steps_left > 0 => {
                // Not confirmed: the rate failed after all, and the search goes on below it.
                state.failed(found, why, threads_for(found, &on.spec.bounds));
                if let Some(r) = state.search.next() {
                    state.rate = r;
                }
            }
            Err(_) => {
                return Ok(ended(Outcome::NoRateMetBound {
                    lowest: found,
                    why: "no rate was confirmed within the steps allowed".into(),
                }));
            }
            Ok(searched) => return Ok(searched),
        }
    }
}

/// The search between its steps: where it stands, the rate to offer next, the lowest failure
/// and how many steps it may still take.
struct SearchState {
    search: Search,
    rate: f64,
    lowest_failure: Option<Failure>,
    steps_left: usize,
}

/// A rate that failed: why, and the client threads the rate needed at the bound.
struct Failure {
    rate: f64,
    why: String,
    wanted: u32,
}

impl SearchState {
    fn failed(&mut self, rate: f64, why: String, wanted: u32) {
        self.search.record(rate, false);
        if self.lowest_failure.as_ref().is_none_or(|f| rate <= f.rate) {
            self.lowest_failure = Some(Failure { rate, why, wanted });
        }
    }

    /// When the search has converged on a failure whose rate needed more threads than `cap`, it
    /// cannot tell the server's limit from the client's: the client could not offer that rate,
    /// and what passed below it is only a lower bound. A capped step that failed above a lower
    /// failure says nothing of the client: the server failed first.
    fn client_limited(&self, cap: u32) -> Option<Outcome> {
        let f = self.lowest_failure.as_ref().filter(|f| f.wanted > cap)?;
        Some(Outcome::ClientLimited {
            rate: f.rate,
            lower_bound: self.search.pass(),
            why: format!(
                "the rate needs about {} threads at the bound, --max-threads is {cap}; the step: {}",
                f.wanted, f.why
            ),
        })
    }
}

/// Offers rates until the search has converged (`None`), or ends it on Ctrl-C.
async fn climb_and_bisect<L: Lab>(
    lab: &mut L,
    on: &SearchOn<'_>,
    record: &mut CeilingRecord,
    state: &mut SearchState,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Option<Outcome>> {
    let started = state.search.pass().is_some() || state.search.fail.is_some();
    if started && state.search.next().is_none() {
        return Ok(None);
    }
    let cap = on.spec.max_threads;
    while state.steps_left > 0 {
        if cancel.is_cancelled() {
            return Ok(Some(Outcome::Interrupted {
                lower_bound: state.search.pass(),
            }));
        }
        state.steps_left -= 1;
        let rate = state.rate;
        let wanted = threads_for(rate, &on.spec.bounds);
        let kind = (StepKind::Search, Some(rate), wanted.min(cap));
        let (s, _) = step(lab, on, record, kind, cancel, progress).await?;
        match s.failed {
            Some(why) => state.failed(rate, why, wanted),
            None => state.search.record(rate, true),
        }
        match state.search.next() {
            Some(r) => state.rate = r,
            None => break,
        }
    }
    Ok(None)
}

/// Measures the rate found `repeat` times: the ceiling is their mean achieved rate. A
/// confirmation that fails is `Err(why)`: the rate is not the ceiling after all.
async fn confirm<L: Lab>(
    lab: &mut L,
    on: &SearchOn<'_>,
    record: &mut CeilingRecord,
    found: f64,
    next_failure: Option<String>,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Result<Searched, String>> {
    let threads = threads_for(found, &on.spec.bounds).min(on.spec.max_threads);
    let mut steps = Vec::new();
    let mut confirmations = Vec::new();
    for _ in 0..on.repeat {
        if cancel.is_cancelled() {
            let lower_bound = Some(found);
            return Ok(Ok(Searched::ended(Outcome::Interrupted { lower_bound })));
        }
        let kind = (StepKind::Confirm, Some(found), threads);
        let (s, measured) = step(lab, on, record, kind, cancel, progress).await?;
        if let Some(why) = s.failed {
            return Ok(Err(why));
        }
        steps.push(s);
        confirmations.push(measured);
    }
    let achieved: Vec<f64> = steps.iter().map(|s| s.achieved).collect();
    let outcome = Outcome::Found {
        ceiling: achieved.iter().sum::<f64>() / achieved.len().max(1) as f64,
        low: achieved.iter().copied().fold(f64::INFINITY, f64::min),
        high: achieved.iter().copied().fold(0.0, f64::max),
        p99_us: steps.iter().map(|s| s.intended_us[1]).max().unwrap_or(0),
        threads,
        next_failure,
    };
    Ok(Ok(Searched {
        outcome,
        confirmations,
    }))
}

/// Client threads for an open-loop rate: by Little's law, the rate times the largest bound,
/// twice over, so the threads are not what holds the rate back while latency stays in bounds.
fn threads_for(rate: f64, bounds: &[search::Bound]) -> u32 {
    let limit_s = bounds.iter().map(|b| b.limit_us).max().unwrap_or(1) as f64 / 1e6;
    let wanted = (rate * limit_s * 2.0).ceil();
    (wanted as u32).max(4)
}

/// Runs one step, keeps its result document under the steps directory and its record; returns
/// both the step and what it measured.
async fn step<L: Lab>(
    lab: &mut L,
    on: &SearchOn<'_>,
    record: &mut CeilingRecord,
    (kind, offered, threads): (StepKind, Option<f64>, u32),
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<(Step, Measured)> {
    let n = record.steps.len() + 1;
    let what = match offered {
        Some(r) => format!("{} ops/s offered", thousands(r)),
        None => "saturation probe".into(),
    };
    let caption = format!("{}: step {n}: {what}, {threads} threads", on.where_);
    let bar = progress.phase(&caption, Some(on.spec.step()));
    let props = step_props(on, record.inserted, offered, threads);
    let measured = lab.run(on.deployment, &props, on.phase, cancel).await?;
    let s = judged(&measured, (kind, offered, threads), &on.spec.bounds, &props);
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
    record.inserted += crate::experiment::summary::insert_attempts(&measured.document);
    std::fs::create_dir_all(&on.steps_dir)?;
    write_json_atomic(
        &on.steps_dir.join(format!("{n:02}.json")),
        &measured.document,
    )?;
    record.steps.push(s.clone());
    write_json_atomic(&on.record_path, record)?;
    Ok((s, measured))
}

/// A step's properties: the workload's, open loop at `offered` (intended latency recorded) or
/// closed loop for the probe, with `threads` threads for one step's length. The keys the steps
/// before it inserted count as records; a load step inserts the next fresh keys after them.
fn step_props(on: &SearchOn<'_>, inserted: u64, offered: Option<f64>, threads: u32) -> Properties {
    let mut props = on.base.clone();
    let step_s = on.spec.step_s.max(1);
    let records = u64::try_from(props.value(&prop::RECORDCOUNT).unwrap_or(0)).unwrap_or(0);
    // Each step leaves its start out (`--warmup`, else a second): the connections its threads
    // open and the rate's first operations are not the rate sustained. Not a step that inserts:
    // the keys its warm-up took would not be counted, and the next step would take them again.
    let inserts =
        on.phase == Phase::Load || props.value(&prop::INSERTPROPORTION).is_ok_and(|p| p > 0.0);
    let warmup_s = (props.value(&prop::WARMUP).ok())
        .filter(|w| *w > 0.0)
        .unwrap_or(if inserts { 0.0 } else { STEP_WARMUP_S });
    let mut set = |k: &str, v: String| props.set(k, v, Origin::Experiment);
    set(prop::THREADCOUNT.name, threads.to_string());
    set(prop::MAXEXECUTIONTIME.name, step_s.to_string());
    set(prop::WARMUP.name, warmup_s.to_string());
    if let Some(rate) = offered {
        set(
            prop::TARGET.name,
            (rate.round().max(1.0) as u64).to_string(),
        );
        set(prop::MEASUREMENT_INTERVAL.name, "both".into());
    }
    match on.phase {
        Phase::Load => {
            // Enough keys for the whole step, warm-up included: its time bound ends it.
            let count = offered.map_or(PROBE_INSERTS, |r| {
                (r * (step_s as f64 + warmup_s) * 1.25).ceil() as u64 + 100
            });
            let start = records + inserted;
            set(prop::INSERTSTART.name, start.to_string());
            set(prop::INSERTCOUNT.name, count.to_string());
            set(prop::RECORDCOUNT.name, (start + count).to_string());
        }
        Phase::Run => {
            set(prop::OPERATIONCOUNT.name, "0".into());
            if inserted > 0 {
                set(prop::RECORDCOUNT.name, (records + inserted).to_string());
            }
        }
    }
    props
}

/// The step record of one measurement: its intended latencies and the judgement.
fn judged(
    m: &Measured,
    (kind, offered, threads): (StepKind, Option<f64>, u32),
    bounds: &[search::Bound],
    props: &Properties,
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
                    .value(&prop::MAXERRORRATE)
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
    let mut histograms = doc
        .measurements
        .iter()
        .filter(|m| m.kind == MapKind::Intended && !m.name.contains("CLEANUP"))
        .filter_map(|m| m.decode_histogram().ok());
    let mut all = histograms.next()?;
    for h in histograms {
        let _ = all.add(&h);
    }
    Some(all)
}
