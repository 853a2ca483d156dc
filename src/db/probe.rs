//! Liveness probes: every member of the topology (each shard member, config server, mongos, the
//! single mongod) gets a `hello` on a connection of its own four times a second while a run goes
//! on, one outstanding at a time, waited for until it would count as dead. A member that stops
//! answering is what turns a normal-looking figure into an invalid one (`docs/reliability.md`,
//! "Results that went wrong say so"). `hello` costs what `ping` does (no lock, no storage
//! ticket) and also says whether the member is its set's writable primary, so a set with no
//! primary (an election) is told apart from a server that stalls while its primary stands.
//!
//! The probes run on a thread and runtime of their own, so a client saturating the benchmark
//! runtime cannot delay them into false alarms.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mongodb::bson::doc;
use mongodb::options::ClientOptions;
use tokio_util::sync::CancellationToken;

/// One server to probe.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProbeTarget {
    /// The member's name in the topology (`sh0`, `cfg0`, `mongos0`, `single`).
    pub name: String,
    /// `host:port` the probe connects to.
    pub address: String,
    /// The replica set (shard) it is a member of, when it belongs to one: members of one set
    /// are watched together for a primary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<String>,
    /// A config server: its set's elections leave the data path alone (routing is cached),
    /// and are said apart from a shard's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub config_server: bool,
}

impl ProbeTarget {
    /// `name (host:port)`, the way verdicts and stderr lines name a member.
    pub(crate) fn label(&self) -> String {
        format!("{} ({})", self.name, self.address)
    }
}

/// One probe's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProbeResult {
    /// Index into the probed targets.
    pub member: usize,
    /// When the ping was sent.
    pub sent: Instant,
    /// When it answered or gave up.
    pub done: Instant,
    /// Whether the member answered.
    pub answered: bool,
    /// Whether its answer said it is a writable primary (`hello.isWritablePrimary`: a
    /// primary, a mongos or a standalone; false for a secondary or a member of a set with no
    /// primary).
    pub writable: bool,
}

impl ProbeResult {
    /// The ping's round trip (or how long it waited before giving up).
    pub(crate) fn round_trip(&self) -> Duration {
        self.done.saturating_duration_since(self.sent)
    }
}

/// Every probe so far, and the ping each member still owes an answer to.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProbeLog {
    /// Finished probes, in the order they finished.
    pub results: Vec<ProbeResult>,
    /// Per member, when its outstanding ping was sent (`None`: none outstanding).
    pub pending: Vec<Option<Instant>>,
}

/// The probe log as the probes and the watch share it.
pub(crate) type SharedProbeLog = Arc<Mutex<ProbeLog>>;

/// Probes running in the background; [`Prober::finish`] stops them and returns every result.
pub(crate) struct Prober {
    targets: Vec<ProbeTarget>,
    log: SharedProbeLog,
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Prober {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prober")
            .field("targets", &self.targets)
            .finish()
    }
}

impl Prober {
    /// Starts probing every target each `period` (one ping outstanding per member at a time),
    /// giving each ping up to `patience` to answer: a late answer is a slow member, recorded
    /// with its round trip, not a silent one (`docs/reliability.md`, "Two kinds of trouble").
    /// Each member is dialled as `dial` says (the user's TLS and credentials).
    pub(crate) fn start(
        targets: Vec<ProbeTarget>,
        dial: &super::dial::Dial,
        period: Duration,
        patience: Duration,
    ) -> Prober {
        let log: SharedProbeLog = Arc::new(Mutex::new(ProbeLog {
            results: Vec::new(),
            pending: vec![None; targets.len()],
        }));
        let stop = CancellationToken::new();
        let thread = {
            let uris: Vec<String> = targets
                .iter()
                .map(|t| dial.member_uri(&t.address))
                .collect();
            let log = log.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("microshard-probe".into())
                .spawn(move || probe_thread(uris, period, patience, log, stop))
                .ok()
        };
        Prober {
            targets,
            log,
            stop,
            thread,
        }
    }

    /// The members probed, in order.
    pub(crate) fn targets(&self) -> &[ProbeTarget] {
        &self.targets
    }

    /// The shared log the probes append to (the live watch reads it while the run goes on).
    pub(crate) fn log_handle(&self) -> SharedProbeLog {
        self.log.clone()
    }

    /// The log so far.
    pub(crate) fn snapshot(&self) -> ProbeLog {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Stops the probes and returns the log; pings still outstanding stay `pending`.
    pub(crate) fn finish(mut self) -> ProbeLog {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.snapshot()
    }
}

/// Probes each member at its connection string (`uris`, one per target, in order).
fn probe_thread(
    uris: Vec<String>,
    period: Duration,
    patience: Duration,
    log: SharedProbeLog,
    stop: CancellationToken,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async {
        let tasks: Vec<_> = uris
            .into_iter()
            .enumerate()
            .map(|(i, uri)| {
                let member = probe_member(i, uri, period, patience, log.clone(), stop.clone());
                tokio::spawn(member)
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    rt.shutdown_timeout(Duration::from_millis(500));
}

/// A probe client for the member at `uri` (its own connection string, `db::dial`), whose
/// every wait ends within `patience`.
async fn probe_client(uri: &str, patience: Duration) -> Option<mongodb::Client> {
    let mut options = ClientOptions::parse(uri).await.ok()?;
    options.server_selection_timeout = Some(patience);
    options.connect_timeout = Some(patience);
    options.heartbeat_freq = Some(Duration::from_millis(500));
    options.app_name = Some("microshard-probe".into());
    mongodb::Client::with_options(options).ok()
}

/// One probe: whether the member answered within `patience`, and if so whether it is a writable
/// primary. A server before 4.4.2 does not know `hello` (CommandNotFound): it is asked
/// `isMaster` from then on (`legacy`), whose `ismaster` says the same.
async fn ask(client: &mongodb::Client, patience: Duration, legacy: &mut bool) -> Option<bool> {
    let admin = client.database("admin");
    let (command, field) = if *legacy {
        ("isMaster", "ismaster")
    } else {
        ("hello", "isWritablePrimary")
    };
    let reply = tokio::time::timeout(patience, admin.run_command(doc! {command: 1})).await;
    match reply {
        Ok(Ok(reply)) => Some(reply.get_bool(field).unwrap_or(false)),
        Ok(Err(e)) if !*legacy && crate::db::errors::command_code(&e) == Some(59) => {
            *legacy = true;
            Box::pin(ask(client, patience, legacy)).await
        }
        _ => None,
    }
}

/// Sends `member` at `uri` a `hello` every `period`, each waited for up to `patience`.
async fn probe_member(
    member: usize,
    uri: String,
    period: Duration,
    patience: Duration,
    log: SharedProbeLog,
    stop: CancellationToken,
) {
    let client = probe_client(&uri, patience).await;
    let mut legacy = false;
    let set_pending = |at: Option<Instant>| {
        if let Ok(mut l) = log.lock()
            && let Some(p) = l.pending.get_mut(member)
        {
            *p = at;
        }
    };
    loop {
        let sent = Instant::now();
        set_pending(Some(sent));
        let hello = async {
            match &client {
                Some(c) => ask(c, patience, &mut legacy).await,
                None => None,
            }
        };
        let answer = tokio::select! {
            a = hello => a,
            _ = stop.cancelled() => return,
        };
        let done = Instant::now();
        if let Ok(mut l) = log.lock() {
            l.results.push(ProbeResult {
                member,
                sent,
                done,
                answered: answer.is_some(),
                writable: answer == Some(true),
            });
            if let Some(p) = l.pending.get_mut(member) {
                *p = None;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep_until((sent + period).into()) => {}
            _ = stop.cancelled() => return,
        }
    }
}

/// A span in which one member gave no answer in time: from the first ping it did not answer
/// (or answered only after `threshold`) to its next timely answer (or to `end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Silence {
    /// Index into the probed targets.
    pub member: usize,
    /// When the first unanswered probe was sent.
    pub from: Instant,
    /// When the member answered again, or `None` if it had not by `end`.
    pub until: Option<Instant>,
}

/// Every span of silence per member in `log`, as seen at `end`. A span shorter than `threshold`
/// (one slow answer on a busy machine) is not reported; a ping answered after `threshold` or
/// more is a silence from when it was sent.
pub(crate) fn silences(log: &ProbeLog, end: Instant, threshold: Duration) -> Vec<Silence> {
    let mut out = Vec::new();
    for member in 0..log.pending.len() {
        let mut open: Option<Instant> = None;
        let mut mine: Vec<&ProbeResult> =
            log.results.iter().filter(|r| r.member == member).collect();
        mine.sort_by_key(|r| r.sent);
        for r in mine {
            if !r.answered || r.round_trip() >= threshold {
                open.get_or_insert(r.sent);
            }
            if !r.answered {
                continue;
            }
            if let Some(from) = open.take()
                && r.done.saturating_duration_since(from) >= threshold
            {
                out.push(Silence {
                    member,
                    from,
                    until: Some(r.done),
                });
            }
        }
        if let Some(sent) = log.pending[member] {
            open.get_or_insert(sent);
        }
        if let Some(from) = open
            && end.saturating_duration_since(from) >= threshold
        {
            out.push(Silence {
                member,
                from,
                until: None,
            });
        }
    }
    out.sort_by_key(|s| s.from);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe of `member` sent `at_ms` after `t0`, done `rtt_ms` later.
    fn probe(member: usize, t0: Instant, at_ms: u64, rtt_ms: u64, answered: bool) -> ProbeResult {
        let sent = t0 + Duration::from_millis(at_ms);
        let done = sent + Duration::from_millis(rtt_ms);
        ProbeResult {
            member,
            sent,
            done,
            answered,
            writable: answered,
        }
    }

    /// A probe answered in 5 ms, or given up after a second.
    fn r(member: usize, t0: Instant, at_ms: u64, answered: bool) -> ProbeResult {
        probe(member, t0, at_ms, if answered { 5 } else { 1000 }, answered)
    }

    #[test]
    fn one_slow_probe_is_not_an_outage_but_a_long_silence_is() {
        let t0 = Instant::now();
        let results = vec![
            r(0, t0, 0, true),
            r(0, t0, 1000, false),
            r(0, t0, 2000, true),
            r(1, t0, 0, true),
            r(1, t0, 1000, false),
            r(1, t0, 2000, false),
            r(1, t0, 3000, false),
            r(1, t0, 4000, true),
            r(2, t0, 0, true),
            r(2, t0, 1000, false),
            r(2, t0, 2000, false),
            r(2, t0, 3000, false),
        ];
        let end = t0 + Duration::from_millis(5000);
        let log = ProbeLog {
            results,
            pending: vec![None; 3],
        };
        let s = silences(&log, end, Duration::from_secs(2));
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].member, 1);
        assert_eq!(s[0].from, t0 + Duration::from_millis(1000));
        assert!(s[0].until.is_some());
        assert_eq!(s[1].member, 2);
        assert_eq!(s[1].until, None);
    }

    #[test]
    fn a_late_answer_is_slow_below_the_threshold_and_silent_above_it() {
        let t0 = Instant::now();
        let answered_after = |at_ms, rtt_ms| probe(0, t0, at_ms, rtt_ms, true);
        let threshold = Duration::from_secs(2);
        let slow = ProbeLog {
            results: vec![answered_after(0, 1500), answered_after(1500, 5)],
            pending: vec![None],
        };
        assert!(silences(&slow, t0 + Duration::from_secs(5), threshold).is_empty());
        let frozen = ProbeLog {
            results: vec![answered_after(0, 2600), answered_after(2600, 5)],
            pending: vec![None],
        };
        let s = silences(&frozen, t0 + Duration::from_secs(5), threshold);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].until, Some(t0 + Duration::from_millis(2600)));
    }

    #[test]
    fn an_outstanding_ping_is_an_ongoing_silence_once_old_enough() {
        let t0 = Instant::now();
        let log = ProbeLog {
            results: Vec::new(),
            pending: vec![Some(t0)],
        };
        let threshold = Duration::from_secs(2);
        assert!(silences(&log, t0 + Duration::from_secs(1), threshold).is_empty());
        let s = silences(&log, t0 + Duration::from_secs(3), threshold);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].until, None);
        assert_eq!(s[0].from, t0);
    }
}
