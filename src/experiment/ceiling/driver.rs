//! The search's driver: the steps it runs on a deployment that is up and loaded (the probe, then
//! trials of rates until the bracket is within the precision), each kept as it ends. `ceiling`
//! runs one search per `--repeat`; `compare --ceiling` runs one per cell and repetition
//! (README, "Glossary": ceiling, bound; `docs/ceiling.md`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::search::{self, MAX_STEPS, Rule, Search, micros, rate_key, thousands};
use super::{Bracket, CeilingRecord, Outcome, SearchSpec, Step, StepKind, write_json_atomic};
use crate::experiment::lab::{Deployment, Lab, Measured, Session};
use crate::runner::Phase;
use crate::workload::Properties;

mod evidence;
mod props;
use evidence::{caveats, judged};

/// One search: how it steps, the workload and phase it steps with, where it runs and where its
/// steps are kept.
pub(crate) struct SearchOn<'a> {
    /// Bounds, step length, precision, thread cap.
    pub spec: &'a SearchSpec,
    /// The workload's properties (before each step's rate and threads).
    pub base: &'a Properties,
    /// `Load`: every step inserts fresh keys after the data; `Run`: the scenario's mix.
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

/// How a search ended, with the measurement of the rate it found (a `compare --ceiling` keeps
/// it as the cell's repetition).
pub(crate) struct Searched {
    /// How it ended.
    pub outcome: Outcome,
    /// The last passing trial of the rate found; `None` without a ceiling.
    pub best: Option<Measured>,
}

/// Probes, then tries rates until the bracket is within the precision, no rate met the bound,
/// Ctrl-C, or the steps ran out.
pub(crate) async fn find<L: Lab>(
    s: &mut Session<'_, L>,
    on: &SearchOn<'_>,
    record: &mut CeilingRecord,
) -> anyhow::Result<Searched> {
    record.phase = on.phase.name().into();
    record.uri = crate::redact::redact_uri(&on.deployment.entry_uri);
    let threads = (on
        .base
        .value(&crate::workload::prop::THREADCOUNT)
        .unwrap_or(1) as u32)
        .clamp(1, on.spec.max_threads);
    let (probe, _) = step(s, on, record, Trial::probe(threads)).await?;
    let mut state = State {
        search: Search::new(on.spec.precision, (probe.achieved / 64.0).max(1.0)),
        rate: (probe.achieved / 2.0).max(1.0),
        probe_mean_us: probe.actual_mean_us.max(1.0),
        passes: BTreeMap::new(),
        misses: BTreeMap::new(),
        threads_per_rate: 0.0,
        best: None,
    };
    for _ in 0..MAX_STEPS {
        if s.cancel.is_cancelled() {
            let lower_bound = state.best_achieved();
            let outcome = Outcome::Interrupted { lower_bound };
            return Ok(Searched {
                outcome,
                best: None,
            });
        }
        let trial = state.trial(on.spec);
        let (taken, measured) = step(s, on, record, trial).await?;
        if !state.note(trial, taken, measured, on.spec) {
            continue;
        }
        match state.search.next() {
            Some(r) => state.rate = r,
            None => break,
        }
    }
    let points: Vec<(f64, f64)> = (record.steps.iter())
        .filter(|s| s.kind == StepKind::Search && s.counted)
        .filter_map(|s| Some((s.achieved, s.server_cores?)))
        .collect();
    record.server_cpu = super::CpuFit::of(&points);
    Ok(state.conclude(&on.spec.bounds))
}

/// One step to run: what it is for, its rate, threads and how many times the first step's
/// length it lasts.
#[derive(Debug, Clone, Copy)]
struct Trial {
    kind: StepKind,
    offered: Option<f64>,
    threads: u32,
    lengthening: f64,
    /// More threads could be given to this rate.
    can_grow: bool,
    /// `--max-threads` holds the threads below what the rate may need.
    capped: bool,
}

impl Trial {
    fn probe(threads: u32) -> Trial {
        Trial {
            kind: StepKind::Probe,
            offered: None,
            threads,
            lengthening: 1.0,
            can_grow: false,
            capped: false,
        }
    }
}

/// The search between its steps: the rates and their trials, the rate to offer next, what each
/// rate measured, and the measurement of the best pass.
struct State {
    search: Search,
    rate: f64,
    /// The probe's mean latency: Little's law's start before any rate passed.
    probe_mean_us: f64,
    /// Each passing rate's trials: achieved, intended at the bounds, mean latency, threads.
    passes: BTreeMap<u64, Vec<Step>>,
    /// Each failing rate's last failing step.
    misses: BTreeMap<u64, Step>,
    /// Threads per ops/s that a rate whose threads were all busy was given again: higher
    /// rates get at least as many per ops/s.
    threads_per_rate: f64,
    /// The last passing trial of the highest rate that passed, with its measurement.
    best: Option<(f64, Measured)>,
}

impl State {
    /// The next trial: its rate, threads by Little's law at the mean latency of the nearest
    /// passing rate below it (the probe's before any), or more when its last trial ran out.
    fn trial(&self, spec: &SearchSpec) -> Trial {
        let rate = self.rate;
        let mean_us = (self.passes.range(..=rate_key(rate)).next_back())
            .and_then(|(_, steps)| steps.last())
            .map_or(self.probe_mean_us, |s| s.actual_mean_us);
        let cap = spec.max_threads;
        let enough = search::enough_threads(rate, &spec.bounds, cap);
        let grown = (rate * self.threads_per_rate).ceil() as u32;
        let threads = search::threads_for(rate, mean_us, &spec.bounds, cap).max(grown.min(enough));
        Trial {
            kind: StepKind::Search,
            offered: Some(rate),
            threads,
            lengthening: self.search.lengthening(),
            can_grow: threads < enough,
            capped: threads >= cap && cap < search::enough_threads(rate, &spec.bounds, u32::MAX),
        }
    }

    /// Takes one step's outcome into the search: a step whose threads could grow is not
    /// counted, and its rate is tried again with threads enough for any passing step (false);
    /// any other counts as a trial of its rate (true).
    fn note(&mut self, trial: Trial, s: Step, measured: Measured, spec: &SearchSpec) -> bool {
        let Some(rate) = trial.offered else {
            return true;
        };
        let key = rate_key(rate);
        if !s.counted {
            let (bounds, cap) = (&spec.bounds, spec.max_threads);
            let grown = search::grown_threads(rate, trial.threads, s.actual_mean_us, bounds, cap);
            self.threads_per_rate = self.threads_per_rate.max(f64::from(grown) / rate);
            return false;
        }
        let passed = s.failed.is_none();
        self.search.record(rate, passed);
        if !passed {
            self.misses.insert(key, s);
            return true;
        }
        if self.best.as_ref().is_none_or(|(r, _)| *r <= rate) {
            self.best = Some((rate, measured));
        }
        self.passes.entry(key).or_default().push(s);
        true
    }

    /// The mean achieved rate of the highest passing rate's passing trials.
    fn best_achieved(&self) -> Option<f64> {
        let steps = self.passes.get(&rate_key(self.search.pass()?))?;
        Some(steps.iter().map(|s| s.achieved).sum::<f64>() / steps.len().max(1) as f64)
    }

    /// How the search ended, from the rates it decided.
    fn conclude(self, bounds: &[search::Bound]) -> Searched {
        let fail = self.search.fail();
        let missed = fail.and_then(|f| self.misses.get(&rate_key(f)));
        let client_miss = missed.filter(|m| m.rule.is_some_and(Rule::is_client));
        let why = || missed.and_then(|m| m.failed.clone()).unwrap_or_default();
        let Some(pass) = self.search.pass() else {
            let outcome = match client_miss {
                Some(_) => Outcome::ClientLimited {
                    rate: fail.unwrap_or(self.rate),
                    lower_bound: None,
                    why: why(),
                },
                None => Outcome::NoRateMetBound {
                    lowest: fail.unwrap_or(self.rate),
                    why: why(),
                },
            };
            return Searched {
                outcome,
                best: None,
            };
        };
        if let (Some(rate), Some(_)) = (fail, client_miss) {
            let lower_bound = self.best_achieved();
            let outcome = Outcome::ClientLimited {
                rate,
                lower_bound,
                why: why(),
            };
            return Searched {
                outcome,
                best: self.best.map(|(_, m)| m),
            };
        }
        self.found(pass, fail, bounds)
    }

    /// The ceiling at `pass`: its passing trials, the bracket and the caveats.
    fn found(self, pass: f64, fail: Option<f64>, bounds: &[search::Bound]) -> Searched {
        let steps = self
            .passes
            .get(&rate_key(pass))
            .cloned()
            .unwrap_or_default();
        let achieved: Vec<f64> = steps.iter().map(|s| s.achieved).collect();
        let worst = |i: usize| {
            steps
                .iter()
                .map(move |s| s.at_bounds_us.get(i).copied().unwrap_or(0))
        };
        let missed = fail.and_then(|f| self.misses.get(&rate_key(f)));
        let lowest_pass = self.passes.values().next().and_then(|s| s.last());
        let mut caveats = caveats(bounds, &steps, missed, lowest_pass);
        if fail.is_none() {
            caveats.push(format!(
                "no rate above it failed within the {MAX_STEPS} steps allowed: a lower bound"
            ));
        }
        let outcome = Outcome::Found {
            ceiling: achieved.iter().sum::<f64>() / achieved.len().max(1) as f64,
            low: achieved.iter().copied().fold(f64::INFINITY, f64::min),
            high: achieved.iter().copied().fold(0.0, f64::max),
            at_bounds_us: (0..bounds.len())
                .map(|i| worst(i).max().unwrap_or(0))
                .collect(),
            threads: steps.last().map_or(0, |s| s.threads),
            next_failure: missed.and_then(|m| m.failed.clone()),
            bracket: Some(Bracket {
                passed: pass,
                passed_tally: self.search.tally(pass),
                failed: fail,
                failed_tally: fail.map(|f| self.search.tally(f)),
            }),
            caveats,
        };
        Searched {
            outcome,
            best: self.best.map(|(_, m)| m),
        }
    }
}

/// Runs one step, deletes the keys it inserted, keeps its result document under the steps
/// directory and its record; returns both the step and what it measured.
async fn step<L: Lab>(
    session: &mut Session<'_, L>,
    on: &SearchOn<'_>,
    record: &mut CeilingRecord,
    trial: Trial,
) -> anyhow::Result<(Step, Measured)> {
    let n = record.steps.len() + 1;
    let props = props::step_props(on, trial);
    let measured_s = props::measured_seconds(&props);
    let what = match trial.offered {
        Some(r) => format!("{} ops/s offered", thousands(r)),
        None => "saturation probe".into(),
    };
    let caption = format!("{}: step {n}: {what}, {} threads", on.where_, trial.threads);
    let bar = (session.progress).phase(&caption, Some(std::time::Duration::from_secs(measured_s)));
    let measured = (session.lab)
        .run(on.deployment, &props, on.phase, session.cancel)
        .await?;
    let s = judged(&measured, trial, &on.spec.bounds, &props);
    bar.finish(&match (&s.failed, trial.kind) {
        (_, StepKind::Probe) => format!("{} ops/s", thousands(s.achieved)),
        (None, _) => format!(
            "sustained ({} ops/s, intended {} {})",
            thousands(s.achieved),
            on.spec.bounds.first().map_or("p99", |b| b.name.as_str()),
            micros(s.at_bounds_us.first().copied().unwrap_or(0))
        ),
        (Some(why), _) if !s.counted => format!("not counted, more threads next: {why}"),
        (Some(why), _) => format!("failed: {why}"),
    });
    if let Some(keys) = measured.document.inserted_keys {
        record.removed += session
            .lab
            .remove_inserted(on.deployment, &props, keys)
            .await?;
    }
    record.standin |= measured.summary.standin;
    std::fs::create_dir_all(&on.steps_dir)?;
    let file = on.steps_dir.join(format!("{n:02}.json"));
    write_json_atomic(&file, &measured.document)?;
    record.steps.push(s.clone());
    write_json_atomic(&on.record_path, record)?;
    Ok((s, measured))
}
