//! The watch beside every run: builds the per-second timeline from the clients' counters, notices
//! a stall (no operation completed by any client for `microshard.stallseconds`) and members that
//! stop answering their liveness probe, and says so on one line the moment it happens
//! (`docs/reliability.md`, "Results that went wrong say so").

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::client::{ClientProgress, TIMELINE_OPS, Totals};
use super::election::{dead_member_note, no_primary_spans};
use crate::db::probe::{ProbeLog, ProbeTarget, Prober, SharedProbeLog, silences};
use crate::events::{Event, Sink};
use crate::measure::timeline::{NoPrimary, Outage, Timeline, TimelineSecond, seconds};

/// How often the watch looks at the counters and probes.
const TICK: Duration = Duration::from_millis(250);
/// Probe period: four pings a second, so a pause of `microshard.stallseconds` is seen whenever it
/// falls between two pings (one ping a second would miss most of a 1.5 s freeze).
pub(crate) const PROBE_PERIOD: Duration = Duration::from_millis(250);

/// What the watch is given.
pub(crate) struct WatchSetup {
    /// Start of the timed window.
    pub start: Instant,
    /// No completed operation for this long is a stall.
    pub stall_after: Duration,
    /// A stall this long stops the run (it can only end invalid).
    pub stall_abort_after: Duration,
    /// A member silent this long is dead (`microshard.deadseconds`): the run ends at once.
    pub dead_after: Duration,
    /// Every client's counters.
    pub progress: Vec<Arc<ClientProgress>>,
    /// Members to probe (empty: none).
    pub targets: Vec<ProbeTarget>,
    /// How each member is dialled (the user's TLS and credentials).
    pub dial: crate::db::dial::Dial,
    /// The run's stop token: cancelled when a stall lasts too long or a member is dead.
    pub stop: CancellationToken,
    /// Cancelled when a member is dead: clients still waiting on it are abandoned at once.
    pub abandon: CancellationToken,
    /// Where the findings go.
    pub events: Sink,
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
    dead: Option<Outage>,
}

/// What the watch saw, for the result document and the verdict.
pub(crate) struct WatchReport {
    /// Per second, per member, stalls and outages.
    pub timeline: Timeline,
    /// Set when a stall stopped the run.
    pub aborted: Option<String>,
}

impl Watch {
    /// Starts the probes and the watch task.
    pub(crate) fn start(setup: WatchSetup) -> Watch {
        // A ping may take until the member would count as dead, so a late answer is a slow
        // member with its round trip recorded, not a silent one.
        let patience = setup.dead_after + PROBE_PERIOD;
        let prober = (!setup.targets.is_empty())
            .then(|| Prober::start(setup.targets.clone(), &setup.dial, PROBE_PERIOD, patience));
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
    pub(crate) async fn finish(self, end: Instant) -> WatchReport {
        self.done.cancel();
        let log = self.task.await.unwrap_or_default();
        let (targets, probes) = match self.prober {
            Some(p) => (p.targets().to_vec(), p.finish()),
            None => (Vec::new(), ProbeLog::default()),
        };
        let mut timeline = Timeline {
            seconds: log.seconds,
            probed: targets.iter().map(ProbeTarget::label).collect(),
            member_outages: Vec::new(),
            stalls: log.stalls,
            dead_member: log.dead,
            no_primary: elections(&targets, &probes, self.start, end),
        };
        annotate_members(&mut timeline, &targets, &probes, self.start);
        for s in silences(&probes, end, self.stall_after) {
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
        WatchReport {
            timeline,
            aborted: log.aborted,
        }
    }
}

/// The spans in which a probed set had no primary, in seconds into the run.
fn elections(
    targets: &[ProbeTarget],
    probes: &ProbeLog,
    start: Instant,
    end: Instant,
) -> Vec<NoPrimary> {
    no_primary_spans(targets, probes)
        .into_iter()
        .map(|s| {
            let until = s.until.unwrap_or(end);
            let config_server = of_config_servers(targets, &s.set);
            NoPrimary {
                set: s.set,
                from_s: s.from.saturating_duration_since(start).as_secs_f64(),
                duration_s: until.saturating_duration_since(s.from).as_secs_f64(),
                ongoing: s.until.is_none(),
                new_primary: s.after.and_then(|i| targets.get(i)).map(ProbeTarget::label),
                config_server,
            }
        })
        .collect()
}

/// Whether `set` is the config servers' replica set.
fn of_config_servers(targets: &[ProbeTarget], set: &str) -> bool {
    (targets.iter()).any(|t| t.config_server && t.set.as_deref() == Some(set))
}

/// The probed members and the prober's shared log, as the watch task reads them.
type Probes = (Vec<ProbeTarget>, SharedProbeLog);

fn op_counts(
    progress: &[Arc<ClientProgress>],
) -> ([u64; TIMELINE_OPS.len()], [u64; TIMELINE_OPS.len()]) {
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
    probes: Option<Probes>,
    done: CancellationToken,
) -> WatchLog {
    let members = probes.as_ref().map_or(0, |(t, _)| t.len());
    let mut state = WatchState {
        log: WatchLog::default(),
        last_done: 0,
        last_progress: setup.start,
        stall_from: None,
        prev: ([0; TIMELINE_OPS.len()], [0; TIMELINE_OPS.len()]),
        current_second: 0,
        announced: vec![false; members],
        without_primary: BTreeMap::new(),
    };
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let finished = tokio::select! {
            _ = tick.tick() => false,
            _ = done.cancelled() => true,
        };
        let now = Instant::now();
        state.count_seconds(&setup, now, finished);
        state.watch_progress(&setup, now, finished);
        if let Some((targets, log)) = &probes {
            let snapshot = log.lock().map(|l| l.clone()).unwrap_or_default();
            state.watch_members(&setup, targets, &snapshot, now);
            state.watch_primaries(&setup, targets, &snapshot);
        }
        if finished {
            break;
        }
    }
    if let Some(from) = state.stall_from {
        state.log.stalls.push(Outage {
            subject: "all clients".into(),
            from_s: from.saturating_duration_since(setup.start).as_secs_f64(),
            duration_s: Instant::now().saturating_duration_since(from).as_secs_f64(),
            ongoing: true,
        });
    }
    state.log
}

/// What the watch task keeps between ticks.
struct WatchState {
    log: WatchLog,
    last_done: u64,
    last_progress: Instant,
    stall_from: Option<Instant>,
    prev: ([u64; TIMELINE_OPS.len()], [u64; TIMELINE_OPS.len()]),
    current_second: u32,
    announced: Vec<bool>,
    /// Sets said to have no primary, with when that began.
    without_primary: BTreeMap<String, Instant>,
}

impl WatchState {
    /// Closes a second of the timeline when the clock has moved past it.
    fn count_seconds(&mut self, setup: &WatchSetup, now: Instant, finished: bool) {
        let second =
            u32::try_from(now.saturating_duration_since(setup.start).as_secs()).unwrap_or(u32::MAX);
        if second > self.current_second || finished {
            let (ops, errs) = op_counts(&setup.progress);
            let sec = second_of(self.current_second, &ops, &errs, &self.prev);
            self.log.seconds.push(sec);
            self.prev = (ops, errs);
            self.current_second = second;
        }
    }

    /// Stalls: no operation completed by any client, while the clients are meant to be working.
    fn watch_progress(&mut self, setup: &WatchSetup, now: Instant, finished: bool) {
        let at = |t: Instant| seconds(t.saturating_duration_since(setup.start).as_secs_f64());
        let done_now = Totals::of(setup.progress.iter().map(|c| &**c)).done;
        if done_now != self.last_done {
            self.last_done = done_now;
            self.last_progress = now;
            if let Some(from) = self.stall_from.take() {
                let len = now.saturating_duration_since(from);
                self.log.stalls.push(Outage {
                    subject: "all clients".into(),
                    from_s: from.saturating_duration_since(setup.start).as_secs_f64(),
                    duration_s: len.as_secs_f64(),
                    ongoing: false,
                });
                setup.events.event(Event::Finding(format!(
                    "microshard: operations complete again at {} (no operation completed for {})",
                    at(now),
                    seconds(len.as_secs_f64())
                )));
            }
            return;
        }
        if setup.stop.is_cancelled() || finished {
            return;
        }
        let quiet_for = now.saturating_duration_since(self.last_progress);
        if self.stall_from.is_none() && quiet_for >= setup.stall_after {
            self.stall_from = Some(self.last_progress);
            setup.events.event(Event::Finding(format!(
                "microshard: no operation completed since {} into the run ({} so far)",
                at(self.last_progress),
                seconds(quiet_for.as_secs_f64())
            )));
        }
        if let Some(from) = self.stall_from
            && self.log.aborted.is_none()
            && now.saturating_duration_since(from) >= setup.stall_abort_after
        {
            let reason = format!(
                "stopped after {} without a completed operation (from {} into the run)",
                seconds(now.saturating_duration_since(from).as_secs_f64()),
                at(from)
            );
            setup
                .events
                .event(Event::Finding(format!("microshard: {reason}")));
            self.log.aborted = Some(reason);
            setup.stop.cancel();
        }
    }

    /// Members that stopped (or started again) answering, said once each way; a member silent
    /// for `dead_after` ends the run at once (`docs/reliability.md`, "Fail fast").
    fn watch_members(
        &mut self,
        setup: &WatchSetup,
        targets: &[ProbeTarget],
        probes: &ProbeLog,
        now: Instant,
    ) {
        let at = |t: Instant| seconds(t.saturating_duration_since(setup.start).as_secs_f64());
        let open = silences(probes, now, setup.stall_after);
        for (i, t) in targets.iter().enumerate() {
            let silent = open.iter().find(|s| s.member == i && s.until.is_none());
            match (silent, self.announced[i]) {
                (Some(s), false) => {
                    self.announced[i] = true;
                    setup.events.event(Event::Finding(format!(
                        "microshard: {} stopped answering at {}: the result will be invalid",
                        t.label(),
                        at(s.from)
                    )));
                }
                (None, true) => {
                    self.announced[i] = false;
                    setup.events.event(Event::Finding(format!(
                        "microshard: {} answers again at {}",
                        t.label(),
                        at(now)
                    )));
                }
                _ => {}
            }
            let Some(s) =
                silent.filter(|s| now.saturating_duration_since(s.from) >= setup.dead_after)
            else {
                continue;
            };
            if self.log.dead.is_none() {
                let note = dead_member_note(targets, probes, i, s.from);
                self.declare_dead(setup, t, s.from, now, note);
            }
        }
        // Stopped (its bound, Ctrl-C) while a member is silent: the clients waiting on it will
        // not be answered, so they get the short grace.
        if setup.stop.is_cancelled() && self.announced.iter().any(|&a| a) {
            setup.abandon.cancel();
        }
    }

    /// Sets that lost their primary (an election) or have one again, said once each way.
    fn watch_primaries(&mut self, setup: &WatchSetup, targets: &[ProbeTarget], probes: &ProbeLog) {
        let at = |t: Instant| seconds(t.saturating_duration_since(setup.start).as_secs_f64());
        for span in no_primary_spans(targets, probes) {
            let said = self.without_primary.get(&span.set) == Some(&span.from);
            match (span.until, said) {
                (None, false) => {
                    let effect = match of_config_servers(targets, &span.set) {
                        true => "a config server election; the data path is unaffected)",
                        false => "an election): the result will be invalid",
                    };
                    setup.events.event(Event::Finding(format!(
                        "microshard: {} has no primary since {} ({effect}",
                        span.set,
                        at(span.from)
                    )));
                    self.without_primary.insert(span.set, span.from);
                }
                (Some(until), true) => {
                    let who = span.after.and_then(|i| targets.get(i));
                    setup.events.event(Event::Finding(format!(
                        "microshard: {} has a primary again at {}: {}",
                        span.set,
                        at(until),
                        who.map(ProbeTarget::label).unwrap_or_default()
                    )));
                    self.without_primary.remove(&span.set);
                }
                _ => {}
            }
        }
    }

    fn declare_dead(
        &mut self,
        setup: &WatchSetup,
        t: &ProbeTarget,
        from: Instant,
        now: Instant,
        note: Option<String>,
    ) {
        let silent_for = now.saturating_duration_since(from).as_secs_f64();
        let from_s = from.saturating_duration_since(setup.start).as_secs_f64();
        setup.events.event(Event::Finding(format!(
            "microshard: {} has not answered for {} (microshard.deadseconds): ending the run now",
            t.label(),
            seconds(silent_for)
        )));
        self.log.dead = Some(Outage {
            subject: t.label(),
            from_s,
            duration_s: silent_for,
            ongoing: true,
        });
        let note = note.map(|n| format!("; {n}")).unwrap_or_default();
        self.log.aborted.get_or_insert_with(|| {
            format!(
                "ended early: {} was dead (silent for {} from {}){note}",
                t.label(),
                seconds(silent_for),
                seconds(from_s)
            )
        });
        setup.stop.cancel();
        setup.abandon.cancel();
    }
}

/// Fills each timeline second's `answered` / `silent` member lists and the slowest answered
/// probe's round trip from the probe log.
fn annotate_members(
    timeline: &mut Timeline,
    targets: &[ProbeTarget],
    probes: &ProbeLog,
    start: Instant,
) {
    for sec in &mut timeline.seconds {
        let from = start + Duration::from_secs(u64::from(sec.second));
        let to = from + Duration::from_secs(1);
        for (i, t) in targets.iter().enumerate() {
            let mut slowest: Option<Duration> = None;
            let mut probed = false;
            for r in probes
                .results
                .iter()
                .filter(|r| r.member == i && r.done >= from && r.done < to)
            {
                probed = true;
                if r.answered {
                    slowest = slowest.max(Some(r.round_trip()));
                }
            }
            match slowest {
                Some(rtt) => {
                    sec.answered.push(t.label());
                    let ms = u32::try_from(rtt.as_millis()).unwrap_or(u32::MAX);
                    sec.probe_ms.insert(t.label(), ms);
                }
                None if probed => sec.silent.push(t.label()),
                None => {}
            }
        }
    }
}
