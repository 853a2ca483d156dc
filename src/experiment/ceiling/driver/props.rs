//! A step's properties: the workload's, at the trial's rate, threads and length, every step
//! starting from the same data (`docs/ceiling.md`, "Steps").

use super::{SearchOn, Trial};
use crate::runner::Phase;
use crate::workload::{Origin, Properties, prop};

/// Seconds each step leaves out at its start when `--warmup` is not given: the rate's first
/// operations, and any connection the pool still opens for new threads, are not the rate
/// sustained. Steps that insert warm up too: their warm-up takes keys of its own.
const STEP_WARMUP_S: f64 = 1.0;

/// Inserts a closed-loop load probe may make: its step's time bound ends it long before.
const PROBE_INSERTS: u64 = 50_000_000;

/// Seconds a step measures: the first step's length, times the trial's lengthening.
fn step_seconds(on: &SearchOn<'_>, trial: Trial) -> u64 {
    (on.spec.step_s.max(1) as f64 * trial.lengthening).ceil() as u64
}

/// The seconds a step's properties measure (`maxexecutiontime`).
pub(super) fn measured_seconds(props: &Properties) -> u64 {
    props.value(&prop::MAXEXECUTIONTIME).unwrap_or(1)
}

/// A step's properties: open loop at the trial's rate (intended latency recorded) or closed
/// loop for the probe, with its threads, for its length after a warm-up. A load step inserts
/// fresh keys after the data, a run step runs the scenario's mix on the data as loaded: the keys
/// any step inserted are deleted after it, so every step starts from the same documents.
pub(super) fn step_props(on: &SearchOn<'_>, trial: Trial) -> Properties {
    let mut props = on.base.clone();
    let step_s = step_seconds(on, trial);
    let records = props.value(&prop::RECORDCOUNT).unwrap_or(0).max(0) as u64;
    let warmup_s = (props.value(&prop::WARMUP).ok())
        .filter(|w| *w > 0.0)
        .unwrap_or(STEP_WARMUP_S);
    let mut set = |k: &str, v: String| props.set(k, v, Origin::Experiment);
    set(prop::THREADCOUNT.name, trial.threads.to_string());
    set(prop::MAXEXECUTIONTIME.name, step_s.to_string());
    set(prop::WARMUP.name, warmup_s.to_string());
    // One pool for the whole search: every step asks for the same pool size, so the runner
    // keeps the client it connected and its connections (`docs/ceiling.md`, "Steps").
    set(
        prop::MONGODB_MAXCONNECTIONS.name,
        on.spec.max_threads.to_string(),
    );
    if let Some(rate) = trial.offered {
        let target = rate.round().max(1.0) as u64;
        set(prop::TARGET.name, target.to_string());
        set(prop::MEASUREMENT_INTERVAL.name, "both".into());
    }
    match on.phase {
        Phase::Load => {
            // Enough keys for the whole step, warm-up included: its time bound ends it.
            let count = trial.offered.map_or(PROBE_INSERTS, |r| {
                (r * (step_s as f64 + warmup_s) * 1.25).ceil() as u64 + 100
            });
            set(prop::INSERTSTART.name, records.to_string());
            set(prop::INSERTCOUNT.name, count.to_string());
            set(prop::RECORDCOUNT.name, (records + count).to_string());
        }
        Phase::Run => set(prop::OPERATIONCOUNT.name, "0".into()),
    }
    props
}
