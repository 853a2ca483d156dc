//! The run's background tasks: the `maxexecutiontime` timer, the error-rate guard, the warm-up's end and the progress ticks a client of several sends its coordinator.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::events::{ClientLine, Event, Sink};
use crate::measure::{self, Measurements};
use crate::runner::client::{ClientProgress, TICK_PERIOD, Totals};
use crate::workload::prop;

/// `maxexecutiontime`: cancels `stop` after `after` (the warm-up plus the bound), saying so
/// in YCSB's notes.
pub(super) fn spawn_timer(
    after: Duration,
    max_execution_s: u64,
    stop: &CancellationToken,
    done: &CancellationToken,
    events: Sink,
) -> tokio::task::JoinHandle<()> {
    let stop = stop.clone();
    let done = done.clone();
    tokio::spawn(async move {
        events.event(Event::Note(format!(
            "Maximum execution time specified as: {max_execution_s} secs"
        )));
        tokio::select! {
            _ = tokio::time::sleep(after) => {
                events.event(Event::Note(
                    "Maximum time elapsed. Requesting stop for the workload.".into(),
                ));
                stop.cancel();
            }
            _ = done.cancelled() => {}
        }
    })
}

/// `microshard.maxerrorrate` set explicitly: once a second, after 100 operations, stops the run
/// when more than `rate` of them failed; the task's output is the reason, when it stopped it.
pub(super) fn spawn_error_guard(
    rate: f64,
    stop: &CancellationToken,
    progress: Vec<Arc<ClientProgress>>,
    done: &CancellationToken,
) -> tokio::task::JoinHandle<Option<String>> {
    let stop = stop.clone();
    let done = done.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = done.cancelled() => return None,
            }
            let Totals {
                done: ops, failed, ..
            } = Totals::of(progress.iter().map(|p| &**p));
            if ops >= 100 && failed as f64 > rate * ops as f64 {
                stop.cancel();
                return Some(format!(
                    "stopped: {failed} of {ops} operations failed, more than {}={rate}",
                    prop::MAXERRORRATE.name
                ));
            }
        }
    })
}

/// `--warmup`: at its end forgets everything measured so far; the task's output is where the
/// timed window starts (CPU, instant, wall clock, counts), when the warm-up ended.
pub(super) fn spawn_warmup_end(
    warmup: Duration,
    measurements: &Arc<Measurements>,
    progress: Vec<Arc<ClientProgress>>,
    done: &CancellationToken,
    (members, member_cpu): (Vec<(String, String)>, crate::backend::MemberCpu),
) -> tokio::task::JoinHandle<Option<WarmupEnd>> {
    let measurements = measurements.clone();
    let done = done.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep(warmup) => {}
            _ = done.cancelled() => return None,
        }
        // The engine's answer first, so the window starts with what is reset and counted.
        let elsewhere = member_cpu.read().await;
        measurements.reset();
        let totals = Totals::of(progress.iter().map(|p| &**p));
        Some(WarmupEnd {
            cpu: measure::ClientCpu::now(),
            at: Instant::now(),
            wall: chrono::Utc::now(),
            totals,
            host: measure::host_load::sample(&members).map(|s| s.with_elsewhere(elsewhere)),
        })
    })
}

/// A client of several (`--barrier`) tells its coordinator how far it is, once a second and
/// once at the end, so the coordinator can print one merged status line (`docs/engine.md`,
/// "Several clients").
pub(super) fn spawn_ticks(
    progress: Vec<Arc<ClientProgress>>,
    done: &CancellationToken,
    events: &Sink,
) -> tokio::task::JoinHandle<()> {
    let done = done.clone();
    let events = events.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TICK_PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let finished = tokio::select! {
                _ = tick.tick() => false,
                _ = done.cancelled() => true,
            };
            let ops = Totals::of(progress.iter().map(|p| &**p)).done;
            events.event(Event::Protocol(ClientLine::Progress(ops)));
            if finished {
                return;
            }
        }
    })
}

/// The moment the warm-up ended, and the clients' counters then.
#[derive(Debug)]
pub(super) struct WarmupEnd {
    pub(super) cpu: measure::ClientCpu,
    pub(super) at: Instant,
    pub(super) wall: chrono::DateTime<chrono::Utc>,
    /// The counts by the warm-up's end, which the window's figures leave out.
    pub(super) totals: Totals,
    /// The machine at the warm-up's end, where the window of its quietness starts.
    pub(super) host: Option<measure::host_load::HostSample>,
}
