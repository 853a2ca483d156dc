//! `microshard.waitquiet`: before a run starts, wait for other processes to leave the host
//! quiet, so that a figure measured on a shared box can be a valid one (README, "Results you can
//! trust"). The host is quiet when, over one second, other work (and the hypervisor's steal)
//! took no more than `microshard.busyhost` of the cores: the rule that makes a result "busy
//! host" once measured, applied before instead of after.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::events::{Event, Sink};
use crate::measure::host_load;

/// How long each look at the host lasts.
const LOOK: Duration = Duration::from_secs(1);

/// Waits until the host is quiet, at most `timeout`; `members` are the run's servers as
/// `(name, "host:port")`, whose work is not other work. Says once that it waits, and how it
/// ended; returns at once when `timeout` is zero, or on `stop`.
pub(crate) async fn wait_for_quiet(
    (timeout, share): (Duration, f64),
    members: &[(String, String)],
    stop: &CancellationToken,
    events: &Sink,
) {
    if timeout.is_zero() {
        return;
    }
    let started = Instant::now();
    let mut said = false;
    loop {
        let Some(busy) = look(members, share, stop).await else {
            if said {
                let waited = started.elapsed().as_secs_f64();
                events.event(Event::Note(format!(
                    "microshard: the host is quiet after {waited:.0} s: measuring"
                )));
            }
            return;
        };
        if stop.is_cancelled() || started.elapsed() >= timeout {
            events.event(Event::Finding(format!(
                "microshard: the host is still busy after {} s (microshard.waitquiet): measuring anyway; the result will say so ({busy})",
                timeout.as_secs()
            )));
            return;
        }
        if !said {
            events.event(Event::Note(format!(
                "microshard: waiting up to {} s for a quiet host: {busy}",
                timeout.as_secs()
            )));
            said = true;
        }
    }
}

/// One second of the host: why it is busy, or `None` when quiet (or when `/proc` cannot say).
async fn look(
    members: &[(String, String)],
    share: f64,
    stop: &CancellationToken,
) -> Option<String> {
    let before = host_load::sample(members)?;
    tokio::select! {
        _ = tokio::time::sleep(LOOK) => {}
        _ = stop.cancelled() => return None,
    }
    let after = host_load::sample(members)?;
    let load = host_load::between(&before, &after);
    load.busy(share)?;
    Some(format!(
        "other processes use {:.1} of {} cores (more than microshard.busyhost={share} of them)",
        load.other_cores.unwrap_or(0.0) + load.steal_cores,
        load.cores
    ))
}
