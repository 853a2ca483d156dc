//! The watch beside every run: builds the per-second timeline from the clients' counters, notices
//! a stall (no operation completed by any client for `microshard.stallseconds`) and members that
//! stop answering their liveness probe, and says so on one line the moment it happens
//! (`docs/reliability.md`, "Results that went wrong say so").

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::client::{Progress, TIMELINE_OPS};
use crate::db::probe::{ProbeResult, ProbeTarget, Prober, silences};
use crate::measure::timeline::{Outage, Timeline, TimelineSecond, seconds};

/// Where the runner's live messages go (stderr from the CLI, the progress display in experiments).
#[derive(Clone)]
pub struct Notify(Arc<dyn Fn(&str) + Send + Sync>);

impl Notify {
    /// A sink calling `f` with each line.
    pub(crate) fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Notify {
        Notify(Arc::new(f))
    }

    /// Lines to stderr.
    pub(crate) fn stderr() -> Notify {
        Notify::new(crate::output::eprintln)
    }

    /// Says one line.
    pub(crate) fn say(&self, line: &str) {
        (self.0)(line)
    }
}

impl std::fmt::Debug for Notify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notify")
    }
}

/// How often the watch looks at the counters and probes.
const TICK: Duration = Duration::from_millis(250);
/// Probe period and time-out.
pub(crate) const PROBE_PERIOD: Duration = Duration::from_secs(1);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// What the watch is given.
pub(crate) struct WatchSetup {
    /// Start of the timed window.
    pub start: Instant,
    /// No completed operation for this long is a stall.
    pub stall_after: Duration,
    /// A stall this long stops the run (it can only end invalid).
    pub stall_abort_after: Duration,
    /// Every client's counters.
    pub progress: Vec<Arc<Progress>>,
    /// Members to probe (empty: none).
    pub targets: Vec<ProbeTarget>,
    /// The run's stop token: cancelled when a stall lasts too long.
    pub stop: CancellationToken,
    /// Live messages.
    pub notify: Notify,
}

/// The watch running beside the clients.
pub(crate) struct Watch {
    task: tokio::task::JoinHandle<WatchLog>,
    done: CancellationToken,
    prober: Option<Prober>,
    start: Instant,
    stall_after: Duration,
}

#[derive(Default)]
struct WatchLog {
    seconds: Vec<TimelineSecond>,
    stalls: Vec<Outage>,
    aborted: Option<String>,
}

/// What the watch saw, for the result document and the verdict.
pub(crate) struct Watched {
    /// Per second, per member, stalls and outages.
    pub timeline: Timeline,
    /// Set when a stall stopped the run.
    pub aborted: Option<String>,
}

impl Watch {
    /// Starts the probes and the watch task.
    pub(crate) fn start(setup: WatchSetup) -> Watch {
        let prober = (!setup.targets.is_empty())
            .then(|| Prober::start(setup.targets.clone(), PROBE_PERIOD, PROBE_TIMEOUT));
        let done = CancellationToken::new();
        let start = setup.start;
        let stall_after = setup.stall_after;
        let probe_log = prober
            .as_ref()
            .map(|p| (p.targets().to_vec(), p.log_handle()));
        let task = tokio::spawn(watch_loop(setup, probe_log, done.clone()));
        Watch {
            task,
            done,
            prober,
            start,
            stall_after,
        }
    }

    /// Stops watching (call once the clients are joined) and returns the timeline.
    pub(crate) async fn finish(self, end: Instant) -> Watched {
        self.done.cancel();
        let log = self.task.await.unwrap_or_default();
        let (targets, results) = match self.prober {
            Some(p) => (p.targets().to_vec(), p.finish()),
            None => (Vec::new(), Vec::new()),
        };
        let mut timeline = Timeline {
            seconds: log.seconds,
            probed: targets.iter().map(ProbeTarget::label).collect(),
            member_outages: Vec::new(),
            stalls: log.stalls,
        };
        annotate_members(&mut timeline, &targets, &results, self.start);
        for s in silences(&results, targets.len(), end, self.stall_after) {
            let Some(t) = targets.get(s.member) else {
                continue;
            };
            let until = s.until.unwrap_or(end);
            timeline.member_outages.push(Outage {
                subject: t.label(),
                from_s: s.from.saturating_duration_since(self.start).as_secs_f64(),
                duration_s: until.saturating_duration_since(s.from).as_secs_f64(),
                ongoing: s.until.is_none(),
            });
        }
        Watched {
            timeline,
            aborted: log.aborted,
        }
    }
}

/// The probed members and the prober's shared log, as the watch task reads them.
type ProbeLog = (Vec<ProbeTarget>, Arc<std::sync::Mutex<Vec<ProbeResult>>>);

fn op_counts(progress: &[Arc<Progress>]) -> ([u64; TIMELINE_OPS.len()], [u64; TIMELINE_OPS.len()]) {
    let mut ops = [0u64; TIMELINE_OPS.len()];
    let mut errs = [0u64; TIMELINE_OPS.len()];
    for p in progress {
        for i in 0..TIMELINE_OPS.len() {
            ops[i] += p.by_op[i].load(Ordering::Relaxed);
            errs[i] += p.failed_by_op[i].load(Ordering::Relaxed);
        }
    }
    (ops, errs)
}

fn second_of(
    second: u32,
    ops: &[u64; TIMELINE_OPS.len()],
    errs: &[u64; TIMELINE_OPS.len()],
    prev: &([u64; TIMELINE_OPS.len()], [u64; TIMELINE_OPS.len()]),
) -> TimelineSecond {
    let mut operations = BTreeMap::new();
    let mut errors = BTreeMap::new();
    for (i, name) in TIMELINE_OPS.iter().enumerate() {
        let n = ops[i].saturating_sub(prev.0[i]);
        let e = errs[i].saturating_sub(prev.1[i]);
        if n > 0 || prev.0[i] > 0 {
            operations.insert((*name).to_string(), n);
            errors.insert((*name).to_string(), e);
        }
    }
    TimelineSecond {
        second,
        operations,
        errors,
        ..Default::default()
    }
}

async fn watch_loop(
    setup: WatchSetup,
    probes: Option<ProbeLog>,
    done: CancellationToken,
) -> WatchLog {
    let mut log = WatchLog::default();
    let start = setup.start;
    let total =
        |p: &[Arc<Progress>]| -> u64 { p.iter().map(|c| c.done.load(Ordering::Relaxed)).sum() };
    let mut last_done = 0u64;
    let mut last_progress = start;
    let mut stall_from: Option<Instant> = None;
    let mut prev = ([0u64; TIMELINE_OPS.len()], [0u64; TIMELINE_OPS.len()]);
    let mut current_second = 0u32;
    let mut announced: Vec<bool> = probes
        .as_ref()
        .map(|(t, _)| vec![false; t.len()])
        .unwrap_or_default();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let finished = tokio::select! {
            _ = tick.tick() => false,
            _ = done.cancelled() => true,
        };
        let now = Instant::now();
        let at = |t: Instant| seconds(t.saturating_duration_since(start).as_secs_f64());
        // Seconds of the timeline.
        let second =
            u32::try_from(now.saturating_duration_since(start).as_secs()).unwrap_or(u32::MAX);
        if second > current_second || finished {
            let (ops, errs) = op_counts(&setup.progress);
            log.seconds
                .push(second_of(current_second, &ops, &errs, &prev));
            prev = (ops, errs);
            current_second = second;
        }
        // Stalls: only while the clients are meant to be working.
        let stopping = setup.stop.is_cancelled() || finished;
        let done_now = total(&setup.progress);
        if done_now != last_done {
            last_done = done_now;
            last_progress = now;
            if let Some(from) = stall_from.take() {
                let len = now.saturating_duration_since(from);
                log.stalls.push(Outage {
                    subject: "all clients".into(),
                    from_s: from.saturating_duration_since(start).as_secs_f64(),
                    duration_s: len.as_secs_f64(),
                    ongoing: false,
                });
                setup.notify.say(&format!(
                    "microshard: operations complete again at {} (no operation completed for {})",
                    at(now),
                    seconds(len.as_secs_f64())
                ));
            }
        } else if !stopping {
            let quiet_for = now.saturating_duration_since(last_progress);
            if stall_from.is_none() && quiet_for >= setup.stall_after {
                stall_from = Some(last_progress);
                setup.notify.say(&format!(
                    "microshard: no operation completed since {} into the run ({} so far): the result will be invalid",
                    at(last_progress),
                    seconds(quiet_for.as_secs_f64())
                ));
            }
            if let Some(from) = stall_from
                && log.aborted.is_none()
                && now.saturating_duration_since(from) >= setup.stall_abort_after
            {
                let reason = format!(
                    "stopped after {} without a completed operation (from {} into the run)",
                    seconds(now.saturating_duration_since(from).as_secs_f64()),
                    at(from)
                );
                setup.notify.say(&format!("microshard: {reason}"));
                log.aborted = Some(reason);
                setup.stop.cancel();
            }
        }
        // Members that stopped (or started again) answering.
        if let Some((targets, results)) = &probes {
            let results = results.lock().map(|l| l.clone()).unwrap_or_default();
            let open = silences(&results, targets.len(), now, setup.stall_after);
            for (i, t) in targets.iter().enumerate() {
                let silent = open.iter().find(|s| s.member == i && s.until.is_none());
                match (silent, announced[i]) {
                    (Some(s), false) => {
                        announced[i] = true;
                        setup.notify.say(&format!(
                            "microshard: {} stopped answering at {}: the result will be invalid",
                            t.label(),
                            at(s.from)
                        ));
                    }
                    (None, true) => {
                        announced[i] = false;
                        setup.notify.say(&format!(
                            "microshard: {} answers again at {}",
                            t.label(),
                            at(now)
                        ));
                    }
                    _ => {}
                }
            }
        }
        if finished {
            break;
        }
    }
    if let Some(from) = stall_from {
        log.stalls.push(Outage {
            subject: "all clients".into(),
            from_s: from.saturating_duration_since(start).as_secs_f64(),
            duration_s: Instant::now().saturating_duration_since(from).as_secs_f64(),
            ongoing: true,
        });
    }
    log
}

/// Fills each timeline second's `answered` / `silent` member lists from the probe results.
fn annotate_members(
    timeline: &mut Timeline,
    targets: &[ProbeTarget],
    results: &[ProbeResult],
    start: Instant,
) {
    for sec in &mut timeline.seconds {
        let from = start + Duration::from_secs(u64::from(sec.second));
        let to = from + Duration::from_secs(1);
        for (i, t) in targets.iter().enumerate() {
            let mut answered = false;
            let mut probed = false;
            for r in results
                .iter()
                .filter(|r| r.member == i && r.done >= from && r.done < to)
            {
                probed = true;
                answered |= r.answered;
            }
            if answered {
                sec.answered.push(t.label());
            } else if probed {
                sec.silent.push(t.label());
            }
        }
    }
}
