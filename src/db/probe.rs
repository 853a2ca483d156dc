//! Liveness probes: every member of the topology (each shard member, config server, mongos, the
//! single mongod) gets a `ping` on a connection of its own about once a second while a run goes
//! on, with a short time-out. A member that stops answering is what turns a normal-looking figure
//! into an invalid one (`docs/reliability.md`, "Results that went wrong say so").
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
}

/// Probes running in the background; [`Prober::finish`] stops them and returns every result.
pub(crate) struct Prober {
    targets: Vec<ProbeTarget>,
    log: Arc<Mutex<Vec<ProbeResult>>>,
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
    /// Starts probing every target each `period`, giving each ping `timeout` to answer.
    pub(crate) fn start(targets: Vec<ProbeTarget>, period: Duration, timeout: Duration) -> Prober {
        let log: Arc<Mutex<Vec<ProbeResult>>> = Arc::default();
        let stop = CancellationToken::new();
        let thread = {
            let targets = targets.clone();
            let log = log.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("microshard-probe".into())
                .spawn(move || probe_thread(targets, period, timeout, log, stop))
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
    pub(crate) fn log_handle(&self) -> Arc<Mutex<Vec<ProbeResult>>> {
        self.log.clone()
    }

    /// The results so far.
    pub(crate) fn results(&self) -> Vec<ProbeResult> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Stops the probes (within one time-out) and returns every result.
    pub(crate) fn finish(mut self) -> Vec<ProbeResult> {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.results()
    }
}

fn probe_thread(
    targets: Vec<ProbeTarget>,
    period: Duration,
    timeout: Duration,
    log: Arc<Mutex<Vec<ProbeResult>>>,
    stop: CancellationToken,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async {
        let tasks: Vec<_> = targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                tokio::spawn(probe_member(
                    i,
                    t.address.clone(),
                    period,
                    timeout,
                    log.clone(),
                    stop.clone(),
                ))
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    rt.shutdown_timeout(Duration::from_millis(500));
}

async fn probe_member(
    member: usize,
    address: String,
    period: Duration,
    timeout: Duration,
    log: Arc<Mutex<Vec<ProbeResult>>>,
    stop: CancellationToken,
) {
    let ms = timeout.as_millis().max(1);
    let uri = format!(
        "mongodb://{address}/?directConnection=true&serverSelectionTimeoutMS={ms}&connectTimeoutMS={ms}&heartbeatFrequencyMS=500&appName=microshard-probe"
    );
    let client = match ClientOptions::parse(&uri).await {
        Ok(o) => mongodb::Client::with_options(o).ok(),
        Err(_) => None,
    };
    loop {
        let sent = Instant::now();
        let answered = match &client {
            Some(c) => matches!(
                tokio::time::timeout(timeout, c.database("admin").run_command(doc! {"ping": 1}))
                    .await,
                Ok(Ok(_))
            ),
            None => false,
        };
        let done = Instant::now();
        if let Ok(mut l) = log.lock() {
            l.push(ProbeResult {
                member,
                sent,
                done,
                answered,
            });
        }
        tokio::select! {
            _ = tokio::time::sleep_until((sent + period).into()) => {}
            _ = stop.cancelled() => return,
        }
    }
}

/// A span in which one member gave no answer, from the first unanswered probe to the next
/// answered one (or to `end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Silence {
    /// Index into the probed targets.
    pub member: usize,
    /// When the first unanswered probe was sent.
    pub from: Instant,
    /// When the member answered again, or `None` if it had not by `end`.
    pub until: Option<Instant>,
}

/// Every span of silence per member in `results`, as seen at `end`. A span shorter than
/// `threshold` (one slow answer on a busy machine) is not reported.
pub(crate) fn silences(
    results: &[ProbeResult],
    members: usize,
    end: Instant,
    threshold: Duration,
) -> Vec<Silence> {
    let mut out = Vec::new();
    for member in 0..members {
        let mut open: Option<Instant> = None;
        let mut mine: Vec<&ProbeResult> = results.iter().filter(|r| r.member == member).collect();
        mine.sort_by_key(|r| r.sent);
        for r in mine {
            match (r.answered, open) {
                (false, None) => open = Some(r.sent),
                (true, Some(from)) => {
                    if r.done.saturating_duration_since(from) >= threshold {
                        out.push(Silence {
                            member,
                            from,
                            until: Some(r.done),
                        });
                    }
                    open = None;
                }
                _ => {}
            }
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

    fn r(member: usize, t0: Instant, at_ms: u64, answered: bool) -> ProbeResult {
        let sent = t0 + Duration::from_millis(at_ms);
        ProbeResult {
            member,
            sent,
            done: sent + Duration::from_millis(if answered { 5 } else { 1000 }),
            answered,
        }
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
        let s = silences(&results, 3, end, Duration::from_secs(2));
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].member, 1);
        assert_eq!(s[0].from, t0 + Duration::from_millis(1000));
        assert!(s[0].until.is_some());
        assert_eq!(s[1].member, 2);
        assert_eq!(s[1].until, None);
    }
}
