//! The pure half of the ceiling search: the judgement of one step, the rates tried and their
//! trials, which rate to offer next, with how many threads and for how long (README, "Glossary":
//! ceiling, bound; `docs/ceiling.md`). The driver in `ceiling::driver` runs the steps; everything
//! here is decided from numbers, so it is tested on fixed inputs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An achieved rate below this share of the offered one means the server did not keep up.
pub(crate) const ACHIEVED_SHARE: f64 = 0.95;

/// Each climbing step offers this many times the last passing rate.
const GROWTH: f64 = 1.5;

/// At most this many steps after the probe, retests included.
pub(crate) const MAX_STEPS: usize = 40;

/// A rate fails only when more of its trials failed than passed, and at least this many did: one
/// chance failure is retested, never taken at its word (`docs/ceiling.md`, "Trials").
const FAILS_TO_FAIL: u32 = 2;

/// Client threads per operation in flight that Little's law asks for at the measured latency:
/// room for the latency to grow towards the bound before the threads hold the rate back.
const HEADROOM: f64 = 4.0;

/// The fewest client threads a step uses.
const MIN_THREADS: u32 = 4;

/// Bisecting steps grow by this factor each (as NoSQLBench's findmax does), up to [`MAX_LENGTHENING`]
/// times the first step's length: a narrow bracket needs more samples to tell its two ends apart.
const LENGTHENING: f64 = 1.33;
const MAX_LENGTHENING: f64 = 4.0;

pub(crate) use crate::experiment::slo::{Bound, micros};

/// Which rule a step broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// An intended-latency bound was exceeded.
    Latency,
    /// Less than [`ACHIEVED_SHARE`] of the offered rate was achieved.
    Achieved,
    /// The step's result is invalid.
    Invalid,
    /// The server stalled during the step.
    Stall,
    /// More operations failed than `microshard.maxerrorrate` allows.
    Errors,
    /// Every client thread was busy while the server answered within the bound: the client's
    /// threads, not the server, held the rate back.
    Threads,
    /// The client used the CPU it could have.
    ClientCpu,
}

impl Rule {
    /// The client, not the server, was the limit.
    pub(crate) fn is_client(self) -> bool {
        matches!(self, Rule::Threads | Rule::ClientCpu)
    }

    /// The word a chart's legend and a table give it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Rule::Latency => "latency bound",
            Rule::Achieved => "achieved rate",
            Rule::Invalid => "invalid",
            Rule::Stall => "server stall",
            Rule::Errors => "errors",
            Rule::Threads => "client threads",
            Rule::ClientCpu => "client CPU",
        }
    }
}

/// Why a step did not sustain its rate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Miss {
    /// The rule broken.
    pub rule: Rule,
    /// The numbers behind it, in words.
    pub why: String,
}

impl Miss {
    fn new(rule: Rule, why: String) -> Miss {
        Miss { rule, why }
    }
}

/// What one step measured, as the judgement needs it.
#[derive(Debug, Clone, Default)]
pub(crate) struct StepFigures {
    /// Rate offered (ops/s).
    pub offered: f64,
    /// Rate achieved (ops/s).
    pub achieved: f64,
    /// The intended latency at each bound's quantile, µs, in the bounds' order.
    pub at_bounds_us: Vec<u64>,
    /// The actual (service) latency at each bound's quantile, µs.
    pub actual_at_bounds_us: Vec<u64>,
    /// Mean actual latency, µs: what Little's law sizes the threads by.
    pub actual_mean_us: f64,
    /// Why the step's result is invalid, if it is.
    pub invalid: Option<String>,
    /// The server stalled during the step.
    pub stalled: bool,
    /// Failed operations over all operations.
    pub error_share: f64,
    /// `microshard.maxerrorrate`.
    pub max_error_share: f64,
    /// The step's threads; whether more could be given; whether `--max-threads` held them
    /// below what the rate may need.
    pub threads: u32,
    pub can_grow: bool,
    pub capped: bool,
    /// Operations the schedule planned that were never sent, and the window's seconds.
    pub unsent: u64,
    pub window_s: f64,
    /// Cores the client used, the cores there are, and the cores every process used.
    pub client_cores: f64,
    pub cores: f64,
    pub busy_cores: f64,
}

impl StepFigures {
    /// Every thread had an operation in flight nearly all the time (Little's law on what was
    /// measured), or more than a few of the operations the schedule planned were never sent.
    fn threads_busy(&self) -> bool {
        let in_flight = self.achieved * self.actual_mean_us / 1e6;
        let planned = self.offered * self.operations_window_s();
        self.unsent as f64 > 0.01 * planned || in_flight >= 0.9 * f64::from(self.threads.max(1))
    }

    /// The measured window's seconds, from what was achieved in it.
    fn operations_window_s(&self) -> f64 {
        self.window_s.max(0.0)
    }

    /// The server answered every bound's quantile within its limit.
    fn server_within(&self, bounds: &[Bound]) -> bool {
        (bounds.iter().zip(&self.actual_at_bounds_us)).all(|(b, at)| *at <= b.limit_us)
    }

    /// The client's CPU was its limit: it used nearly every core, or the machine's cores were
    /// all busy with the client holding half of them.
    fn client_cpu_bound(&self) -> Option<String> {
        let cores = self.cores.max(1.0);
        let saturated = self.busy_cores >= 0.9 * cores && self.client_cores >= 0.5 * cores;
        (self.client_cores >= 0.85 * cores || saturated).then(|| {
            format!(
                "the client used {:.1} of {cores:.0} cores ({:.1} busy in all)",
                self.client_cores, self.busy_cores
            )
        })
    }
}

/// Why a step did not sustain its rate, or `None` when it did. A step that fell short while
/// the client was the limit says so ([`Rule::Threads`], [`Rule::ClientCpu`]), on measured
/// evidence only: its threads all busy, its CPU used.
pub(crate) fn judge(m: &StepFigures, bounds: &[Bound]) -> Option<Miss> {
    if let Some(why) = &m.invalid {
        return Some(Miss::new(Rule::Invalid, format!("invalid: {why}")));
    }
    let server = server_miss(m, bounds)?;
    if matches!(server.rule, Rule::Stall | Rule::Errors) {
        return Some(server);
    }
    if let Some(cpu) = m.client_cpu_bound() {
        return Some(Miss::new(
            Rule::ClientCpu,
            format!("{cpu}; the step: {}", server.why),
        ));
    }
    if m.threads_busy() && (m.can_grow || m.capped) && m.server_within(bounds) {
        let why = format!(
            "all {} client threads busy, {} planned operations unsent, the server's own {} ({})",
            m.threads,
            thousands(m.unsent as f64),
            actual_words(m, bounds),
            server.why
        );
        return Some(Miss::new(Rule::Threads, why));
    }
    Some(server)
}

/// The server's side of the judgement: stall, errors, achieved rate, then each bound.
fn server_miss(m: &StepFigures, bounds: &[Bound]) -> Option<Miss> {
    if m.stalled {
        return Some(Miss::new(Rule::Stall, "the server stalled".into()));
    }
    if m.error_share > m.max_error_share {
        let why = format!(
            "{:.1} % of operations failed (more than {:.1} %)",
            m.error_share * 100.0,
            m.max_error_share * 100.0
        );
        return Some(Miss::new(Rule::Errors, why));
    }
    if m.achieved < ACHIEVED_SHARE * m.offered {
        let why = format!(
            "achieved {} of {} ops/s ({}, under {:.0} %)",
            thousands(m.achieved),
            thousands(m.offered),
            share_below(m.achieved / m.offered, ACHIEVED_SHARE),
            ACHIEVED_SHARE * 100.0
        );
        return Some(Miss::new(Rule::Achieved, why));
    }
    let (b, at) = bounds
        .iter()
        .zip(&m.at_bounds_us)
        .find(|(b, at)| **at > b.limit_us)?;
    let why = format!(
        "{} {} > {} at {} ops/s",
        b.name,
        micros(*at),
        micros(b.limit_us),
        thousands(m.offered)
    );
    Some(Miss::new(Rule::Latency, why))
}

/// `latency p99 4.1 ms`: the server's latency at each bound's quantile.
fn actual_words(m: &StepFigures, bounds: &[Bound]) -> String {
    let parts: Vec<String> = (bounds.iter().zip(&m.actual_at_bounds_us))
        .map(|(b, at)| format!("{} {}", b.name, micros(*at)))
        .collect();
    format!("latency {}", parts.join(", "))
}

/// A share as a percentage with enough decimals that a share below `threshold` never prints
/// as the threshold itself (94.6 %, not 95 %).
pub(crate) fn share_below(share: f64, threshold: f64) -> String {
    let whole = (share * 100.0).round() / 100.0;
    match whole >= threshold {
        true => format!("{:.1} %", (share * 1000.0).floor() / 10.0),
        false => format!("{:.0} %", share * 100.0),
    }
}

/// `12,345` ops/s, rounded.
pub(crate) fn thousands(rate: f64) -> String {
    crate::runner::verdict::thousands(rate.round().max(0.0) as u64)
}

/// The trials of one rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Tally {
    /// Trials that passed.
    pub passed: u32,
    /// Trials that failed.
    pub failed: u32,
}

impl Tally {
    /// Passed (`Some(true)`), failed (`Some(false)`), or to be tried again: a rate passes on
    /// its first trial, fails on its second failure when failures outnumber passes, and a tie
    /// takes another trial.
    pub(crate) fn verdict(&self) -> Option<bool> {
        match (self.passed, self.failed) {
            (p, 0) if p > 0 => Some(true),
            (p, f) if f >= FAILS_TO_FAIL && f > p => Some(false),
            (p, f) if p > f && p >= FAILS_TO_FAIL => Some(true),
            _ => None,
        }
    }

    /// `2 of 3 passed`.
    pub(crate) fn words(&self) -> String {
        format!("{} of {} passed", self.passed, self.passed + self.failed)
    }
}

/// Where the search stands: every rate tried with its trials.
#[derive(Debug, Clone, Default)]
pub(crate) struct Search {
    /// Stop bisecting when the gap is this share of the passing rate (`--precision`).
    pub precision: f64,
    /// Below this rate the search stops descending: no rate met the bound.
    pub floor: f64,
    /// Every rate tried (rounded to whole ops/s, as `target` takes it), with its trials.
    trials: BTreeMap<u64, Tally>,
    /// Steps taken once both a pass and a failure were known.
    narrowing: u32,
}

/// A rate as the search keys it: whole ops/s.
pub(crate) fn rate_key(rate: f64) -> u64 {
    rate.round().max(1.0) as u64
}

impl Search {
    /// A search that bisects to `precision` and descends no lower than `floor`.
    pub(crate) fn new(precision: f64, floor: f64) -> Search {
        Search {
            precision,
            floor,
            ..Default::default()
        }
    }

    /// Records one trial of `rate`.
    pub(crate) fn record(&mut self, rate: f64, passed: bool) {
        if self.pass().is_some() && self.fail().is_some() {
            self.narrowing += 1;
        }
        let t = self.trials.entry(rate_key(rate)).or_default();
        match passed {
            true => t.passed += 1,
            false => t.failed += 1,
        }
    }

    /// The trials of `rate` so far.
    pub(crate) fn tally(&self, rate: f64) -> Tally {
        self.trials
            .get(&rate_key(rate))
            .copied()
            .unwrap_or_default()
    }

    /// The lowest rate that failed.
    pub(crate) fn fail(&self) -> Option<f64> {
        (self.trials.iter())
            .find(|(_, t)| t.verdict() == Some(false))
            .map(|(r, _)| *r as f64)
    }

    /// The highest rate that passed below every failure.
    pub(crate) fn pass(&self) -> Option<f64> {
        let fail = self.fail();
        (self.trials.iter().rev())
            .filter(|(r, _)| fail.is_none_or(|f| (**r as f64) < f))
            .find(|(_, t)| t.verdict() == Some(true))
            .map(|(r, _)| *r as f64)
    }

    /// The next rate to offer: a rate still undecided is tried again; otherwise climb
    /// geometrically past every pass, halve below every failure, then bisect between them;
    /// `None` when the gap is within `precision` or nothing passed above the floor.
    pub(crate) fn next(&self) -> Option<f64> {
        if let Some((r, _)) = self.trials.iter().find(|(_, t)| t.verdict().is_none()) {
            return Some(*r as f64);
        }
        match (self.pass(), self.fail()) {
            (None, None) => None,
            (Some(p), None) => Some(p * GROWTH),
            (None, Some(f)) => Some(f / 2.0).filter(|r| *r >= self.floor),
            (Some(p), Some(f)) => ((f - p) / p > self.precision).then_some((p + f) / 2.0),
        }
    }

    /// How many times the first step's length the next step lasts.
    pub(crate) fn lengthening(&self) -> f64 {
        LENGTHENING.powi(self.narrowing as i32).min(MAX_LENGTHENING)
    }
}

/// Client threads for an open-loop `rate`: Little's law at the mean latency measured so far,
/// with [`HEADROOM`], never more than a step that meets the bound can have in flight
/// (`rate × bound`) nor more than `cap`.
pub(crate) fn threads_for(rate: f64, mean_us: f64, bounds: &[Bound], cap: u32) -> u32 {
    let little = (rate * mean_us / 1e6 * HEADROOM).ceil() as u32;
    little
        .max(MIN_THREADS)
        .min(enough_threads(rate, bounds, cap))
}

/// Threads for a rate tried again because every thread was busy: twice as many, or Little's
/// law at the latency that step measured if that is more, never more than [`enough_threads`].
pub(crate) fn grown_threads(
    rate: f64,
    threads: u32,
    mean_us: f64,
    bounds: &[Bound],
    cap: u32,
) -> u32 {
    let little = (rate * mean_us / 1e6 * HEADROOM).ceil() as u32;
    little
        .max(threads.saturating_mul(2))
        .min(enough_threads(rate, bounds, cap))
}

/// Threads enough for any step that meets the bounds: its operations in flight are the rate
/// times their mean latency, which is below the largest bound (Little's law); at most `cap`.
pub(crate) fn enough_threads(rate: f64, bounds: &[Bound], cap: u32) -> u32 {
    let limit_s = bounds.iter().map(|b| b.limit_us).max().unwrap_or(1) as f64 / 1e6;
    ((rate * limit_s).ceil() as u32).max(MIN_THREADS).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds() -> Vec<Bound> {
        Bound::parse_list("p99=10ms").expect("a bound")
    }

    fn step(offered: f64, achieved: f64, p99_us: u64) -> StepFigures {
        StepFigures {
            offered,
            achieved,
            at_bounds_us: vec![p99_us],
            actual_at_bounds_us: vec![p99_us],
            actual_mean_us: 1_000.0,
            max_error_share: 0.01,
            threads: 1_000,
            cores: 2.0,
            ..Default::default()
        }
    }

    #[test]
    fn a_step_fails_on_its_first_broken_rule_with_the_numbers() {
        let b = bounds();
        assert_eq!(judge(&step(1000.0, 990.0, 9_000), &b), None);
        let miss = judge(&step(4400.0, 4390.0, 31_000), &b).expect("a miss");
        assert_eq!(miss.rule, Rule::Latency);
        assert_eq!(miss.why, "p99 31.0 ms > 10.0 ms at 4,400 ops/s");
        let miss = judge(&step(2000.0, 1700.0, 1_000), &b).expect("a miss");
        assert_eq!(miss.rule, Rule::Achieved);
        assert_eq!(miss.why, "achieved 1,700 of 2,000 ops/s (85 %, under 95 %)");
        let mut stalled = step(1000.0, 1000.0, 1);
        stalled.stalled = true;
        assert_eq!(judge(&stalled, &b).map(|m| m.rule), Some(Rule::Stall));
        let mut errors = step(1000.0, 1000.0, 1);
        errors.error_share = 0.05;
        let miss = judge(&errors, &b).expect("a miss");
        assert!(
            miss.why.starts_with("5.0 % of operations failed"),
            "{miss:?}"
        );
    }

    #[test]
    fn a_failure_just_under_the_threshold_never_prints_as_the_threshold() {
        let miss = judge(&step(2048.0, 1938.0, 1_000), &bounds()).expect("a miss");
        assert!(miss.why.contains("(94.6 %, under 95 %)"), "{}", miss.why);
        assert_eq!(share_below(0.946, 0.95), "94.6 %");
        assert_eq!(share_below(0.9499, 0.95), "94.9 %");
        assert_eq!(share_below(0.85, 0.95), "85 %");
    }

    #[test]
    fn the_client_is_named_only_on_measured_evidence() {
        let b = bounds();
        // Every thread busy (10 in flight on 10 threads) while the server answered in 1 ms.
        let mut busy = step(20_000.0, 10_000.0, 900);
        busy.threads = 10;
        busy.at_bounds_us = vec![400_000];
        busy.can_grow = true;
        let miss = judge(&busy, &b).expect("a miss");
        assert_eq!(miss.rule, Rule::Threads, "{miss:?}");
        assert!(
            miss.why.starts_with("all 10 client threads busy"),
            "{}",
            miss.why
        );
        // Busy, but the server itself over the bound: the server's failure, more threads or not.
        let mut slow_server = busy.clone();
        slow_server.actual_at_bounds_us = vec![40_000];
        assert_eq!(
            judge(&slow_server, &b).map(|m| m.rule),
            Some(Rule::Achieved)
        );
        // At the cap, the server within the bound: the client's threads.
        busy.can_grow = false;
        busy.capped = true;
        assert_eq!(judge(&busy, &b).map(|m| m.rule), Some(Rule::Threads));
        // At the cap, with the server over the bound itself: the server's failure.
        busy.actual_at_bounds_us = vec![40_000];
        assert_eq!(judge(&busy, &b).map(|m| m.rule), Some(Rule::Achieved));
        // Threads enough for any passing step, all busy: the server is slow, not the client.
        busy.capped = false;
        busy.actual_at_bounds_us = vec![900];
        assert_eq!(judge(&busy, &b).map(|m| m.rule), Some(Rule::Achieved));
        // Threads to spare: the server's failure, however slow.
        let slow = step(2_000.0, 1_000.0, 500_000);
        assert_eq!(judge(&slow, &b).map(|m| m.rule), Some(Rule::Achieved));
        // The client used nearly both cores.
        let mut cpu = step(2_000.0, 1_000.0, 500_000);
        cpu.client_cores = 1.8;
        cpu.busy_cores = 1.9;
        let miss = judge(&cpu, &b).expect("a miss");
        assert_eq!(miss.rule, Rule::ClientCpu);
        assert!(
            miss.why.starts_with("the client used 1.8 of 2 cores"),
            "{}",
            miss.why
        );
        // A passing step is a pass whatever the client did.
        let mut fine = step(1_000.0, 1_000.0, 1_000);
        fine.client_cores = 1.9;
        assert_eq!(judge(&fine, &b), None);
    }

    #[test]
    fn a_rate_fails_only_on_a_second_failure_and_a_tie_is_tried_again() {
        let tally = |passed, failed| Tally { passed, failed }.verdict();
        assert_eq!(tally(1, 0), Some(true));
        assert_eq!(tally(0, 1), None);
        assert_eq!(tally(1, 1), None);
        assert_eq!(tally(0, 2), Some(false));
        assert_eq!(tally(2, 1), Some(true));
        assert_eq!(tally(1, 2), Some(false));
    }

    /// Runs a search against a server that sustains `capacity`, failing `chance` rates once.
    fn search(capacity: f64, chance: &[u64]) -> (Search, usize) {
        let mut s = Search::new(0.05, 1.0);
        let mut rate = 500.0;
        let mut chanced = Vec::new();
        let mut steps = 0;
        loop {
            let unlucky = chance.contains(&rate_key(rate)) && !chanced.contains(&rate_key(rate));
            chanced.push(rate_key(rate));
            s.record(rate, rate <= capacity && !unlucky);
            steps += 1;
            match s.next() {
                Some(r) => rate = r,
                None => return (s, steps),
            }
        }
    }

    #[test]
    fn the_search_climbs_bisects_to_the_precision_and_stops() {
        let (s, steps) = search(1_900.0, &[]);
        let (p, f) = (s.pass().unwrap_or(0.0), s.fail().unwrap_or(0.0));
        assert!(p <= 1_900.0 && f > 1_900.0, "{p} {f}");
        assert!((f - p) / p <= 0.05, "{p} {f}");
        assert!(steps < MAX_STEPS, "{steps}");
        assert!(s.lengthening() > 1.0, "bisecting steps grow longer");
        assert!(s.lengthening() <= MAX_LENGTHENING);
    }

    #[test]
    fn one_chance_failure_below_the_knee_leaves_the_ceiling_within_the_precision() {
        // 750 and 1,125 fail once by chance: each is tried again, passes, and counts.
        let (s, _) = search(1_900.0, &[750, 1_125]);
        let p = s.pass().unwrap_or(0.0);
        assert!(p >= 1_900.0 * 0.95, "{p}");
        assert_eq!(s.tally(750.0).words(), "2 of 3 passed");
    }

    #[test]
    fn the_search_descends_and_gives_up_at_the_floor() {
        let mut s = Search::new(0.05, 10.0);
        let mut rate = 1_000.0;
        while let Some(r) = {
            s.record(rate, false);
            s.next()
        } {
            rate = r;
        }
        assert!(s.pass().is_none());
        assert!((10.0..20.0).contains(&rate), "{rate}");
    }

    #[test]
    fn the_servers_cpu_comes_apart_into_a_fixed_cost_and_a_cost_per_operation() {
        use crate::experiment::ceiling::CpuFit;
        // 0.2 cores idle, 100 µs per operation.
        let points = [(1_000.0, 0.3), (2_000.0, 0.4), (4_000.0, 0.6)];
        let fit = CpuFit::of(&points).expect("a line");
        assert!((fit.fixed_cores - 0.2).abs() < 1e-9 && (fit.per_op_us - 100.0).abs() < 1e-6);
        assert_eq!(
            fit.words(),
            "servers: 0.20 cores idle + 100 µs per operation (fitted over 3 steps)"
        );
        assert_eq!(CpuFit::of(&points[..2]), None, "two points are not a fit");
        assert_eq!(
            CpuFit::of(&[(1.0, 0.1), (1.0, 0.2), (1.0, 0.3)]),
            None,
            "one rate"
        );
    }

    #[test]
    fn threads_follow_the_measured_latency_not_the_bound() {
        let b = Bound::parse_list("p99=200ms").expect("a bound");
        // 2,000 ops/s at a 2 ms mean: 4 in flight, 16 with headroom; the bound alone would ask 400.
        assert_eq!(threads_for(2_000.0, 2_000.0, &b, 4_096), 16);
        assert_eq!(enough_threads(2_000.0, &b, 4_096), 400);
        // Never more than the bound allows or the cap.
        assert_eq!(threads_for(2_000.0, 1e6, &b, 4_096), 400);
        assert_eq!(threads_for(2_000.0, 1e6, &b, 100), 100);
        assert_eq!(threads_for(10.0, 10.0, &b, 4_096), MIN_THREADS);
        assert_eq!(
            threads_for(2_000.0, 2_000.0, &b, 1),
            1,
            "the cap holds below the minimum"
        );
        // All busy at 16: twice as many, or more if the step's own latency asks for it.
        assert_eq!(grown_threads(2_000.0, 16, 2_000.0, &b, 4_096), 32);
        assert_eq!(grown_threads(2_000.0, 16, 20_000.0, &b, 4_096), 160);
        assert_eq!(grown_threads(2_000.0, 300, 20_000.0, &b, 4_096), 400);
    }
}
