//! What a step measured, as the search judges it: the intended and the actual latency at each
//! bound, the client's side (its schedule, its CPU), the judgement; and the caveats a ceiling
//! found carries (`docs/ceiling.md`, "Caveats").

use hdrhistogram::Histogram;

use super::Trial;
use crate::experiment::ceiling::Step;
use crate::experiment::ceiling::search::{self, Bound, Rule, micros, thousands};
use crate::experiment::lab::Measured;
use crate::measure::registry::MapKind;
use crate::measure::validity::Verdict;
use crate::workload::{Properties, prop};

/// A step whose latency at the bound was under this share of it passed easily...
const EASY_SHARE: f64 = 0.25;
/// ...and one over this many times the bound failed wildly: side by side, a stall, not a knee.
const WILD_TIMES: f64 = 4.0;
/// Latency at low load over this share of the bound leaves the search little room: noise
/// decides as much as load.
const NOISY_SHARE: f64 = 0.5;
/// Fewer operations than this above a bound's quantile make its value one sample's luck.
const TAIL_SAMPLES: f64 = 10.0;

/// The step record of one measurement: its latencies, its client's side and the judgement.
pub(super) fn judged(m: &Measured, trial: Trial, bounds: &[Bound], props: &Properties) -> Step {
    let doc = &m.document;
    let intended = merged(doc, MapKind::Intended);
    let actual = merged(doc, MapKind::Actual);
    let at = |h: &Option<Histogram<u64>>, q: f64| h.as_ref().map_or(0, |h| h.value_at_quantile(q));
    let load = doc.host_load.clone().unwrap_or_default();
    let schedule = doc.schedule.unwrap_or_default();
    let mut s = Step {
        kind: trial.kind,
        offered: trial.offered,
        achieved: m.summary.throughput,
        threads: trial.threads,
        step_s: doc.runtime_ms as f64 / 1e3,
        operations: doc.operations,
        intended_us: [
            at(&intended, 0.5),
            at(&intended, 0.99),
            at(&intended, 0.999),
        ],
        at_bounds_us: bounds.iter().map(|b| at(&intended, b.quantile)).collect(),
        actual_at_bounds_us: bounds.iter().map(|b| at(&actual, b.quantile)).collect(),
        actual_mean_us: actual.as_ref().map_or(0.0, |h| h.mean()),
        schedule,
        client_cores: load.client_cores,
        server_cores: (!load.server_cpu_us.is_empty() && doc.runtime_ms > 0).then(|| {
            load.server_cpu_us.values().sum::<u64>() as f64 / (doc.runtime_ms as f64 * 1e3)
        }),
        verdict: doc.validity.verdict.to_string(),
        verdict_reasons: (doc.validity.reasons.iter())
            .map(|r| r.message.clone())
            .collect(),
        failed: None,
        rule: None,
        counted: true,
    };
    let Some(offered) = trial.offered else {
        return s;
    };
    let measured = search::StepFigures {
        offered,
        achieved: s.achieved,
        at_bounds_us: s.at_bounds_us.clone(),
        actual_at_bounds_us: s.actual_at_bounds_us.clone(),
        actual_mean_us: s.actual_mean_us,
        invalid: (doc.validity.verdict == Verdict::Invalid).then(|| doc.validity.summary()),
        stalled: doc.validity.server_stalls.is_some(),
        error_share: m.summary.errors as f64 / doc.operations.max(1) as f64,
        max_error_share: props
            .value(&prop::MAXERRORRATE)
            .unwrap_or(prop::MAXERRORRATE.default),
        threads: trial.threads,
        can_grow: trial.can_grow,
        capped: trial.capped,
        unsent: schedule.unsent,
        window_s: doc.runtime_ms as f64 / 1e3,
        client_cores: load.client_cores,
        cores: f64::from(load.cores.max(doc.host.cpu_count as u32)),
        busy_cores: load.busy_cores,
    };
    if let Some(miss) = search::judge(&measured, bounds) {
        s.counted = !(miss.rule == Rule::Threads && trial.can_grow);
        s.failed = Some(miss.why);
        s.rule = Some(miss.rule);
    }
    s
}

/// Every operation's latencies of one kind in one histogram (the cleanup left out): the bound
/// is on the workload as a whole, planned but unsent operations included. `None` without such
/// measurements (no intended latency in a closed-loop probe).
fn merged(doc: &crate::measure::RunDocument, kind: MapKind) -> Option<Histogram<u64>> {
    let mut histograms = (doc.measurements.iter())
        .filter(|m| m.kind == kind && !m.name.contains("CLEANUP"))
        .filter_map(|m| m.decode_histogram().ok());
    let mut all = histograms.next()?;
    for h in histograms {
        let _ = all.add(&h);
    }
    Some(all)
}

/// What a reader must know before quoting a ceiling found from `passes` (the trials of the rate
/// found), `missed` (the next rate's last failure) and the lowest rate that passed.
pub(super) fn caveats(
    bounds: &[Bound],
    passes: &[Step],
    missed: Option<&Step>,
    lowest_pass: Option<&Step>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = stall_not_knee(bounds, passes, missed) {
        out.push(c);
    }
    if let Some(c) = lowest_pass.and_then(|low| noisy_at_low_load(bounds, low)) {
        out.push(c);
    }
    if let Some(c) = passes.last().and_then(|p| thin_tail(bounds, p)) {
        out.push(c);
    }
    let mut degraded: Vec<String> = (passes.iter())
        .filter(|s| s.verdict == Verdict::Degraded.to_string())
        .flat_map(|s| s.verdict_reasons.iter().cloned())
        .collect();
    degraded.dedup();
    if !degraded.is_empty() {
        out.push(format!("degraded: {}", degraded.join("; ")));
    }
    out
}

/// The rate found passed far under the bound while the next failed far over it: a stall the
/// next step caught, not the server's knee.
fn stall_not_knee(bounds: &[Bound], passes: &[Step], missed: Option<&Step>) -> Option<String> {
    let (b, missed) = (bounds.first()?, missed?);
    let passed_at = passes.iter().filter_map(|s| s.at_bounds_us.first()).max()?;
    let failed_at = *missed.at_bounds_us.first()?;
    let limit = b.limit_us as f64;
    let wild = failed_at as f64 > WILD_TIMES * limit || missed.rule == Some(Rule::Stall);
    (wild && (*passed_at as f64) < EASY_SHARE * limit).then(|| {
        format!(
            "a stall, not a knee: {} was {} at the rate found and {} at the next (bound {}); longer steps average stalls in",
            b.name,
            micros(*passed_at),
            micros(failed_at),
            micros(b.limit_us)
        )
    })
}

/// Even the lowest passing rate came near the bound: the bound is within the latency's noise.
fn noisy_at_low_load(bounds: &[Bound], low: &Step) -> Option<String> {
    let (b, at) = (bounds.iter().zip(&low.at_bounds_us))
        .find(|(b, at)| **at as f64 > NOISY_SHARE * b.limit_us as f64)?;
    Some(format!(
        "noise-limited: at {} ops/s, the lowest rate that passed, {} was already {} of the {} bound",
        thousands(low.achieved),
        b.name,
        micros(*at),
        micros(b.limit_us)
    ))
}

/// Too few operations per step for a bound's quantile: its value is a handful of samples.
fn thin_tail(bounds: &[Bound], pass: &Step) -> Option<String> {
    let b = bounds
        .iter()
        .find(|b| pass.operations as f64 * (1.0 - b.quantile) < TAIL_SAMPLES)?;
    let above = (pass.operations as f64 * (1.0 - b.quantile)).floor();
    Some(format!(
        "noise-limited: {} operations per step leave {above:.0} above {}; longer steps give the tail more samples",
        thousands(pass.operations as f64),
        b.name
    ))
}
