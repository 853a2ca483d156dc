//! The capacity model: W slots, each operation holding one for exactly T µs, so a stand-in has a
//! known ceiling of W·10⁶/T operations per second.
//!
//! Tokio's timer has millisecond granularity, far too coarse for T ≈ 100 µs. Slots therefore keep
//! their own virtual clock: an operation takes the slot that frees first, starts at
//! `max(now, slot_free)` and ends exactly T later; the slot's next start is that end, not the moment the
//! waiting task happens to wake. Waiting itself is done by one timer thread with 1 ns timer slack that
//! wakes futures at their deadline, so late wake-ups add latency but never lower the ceiling.

use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// W slots of T µs each.
#[derive(Debug)]
pub(crate) struct Capacity {
    service: Duration,
    slots: Mutex<Vec<Instant>>,
}

impl Capacity {
    /// A model with `workers` slots and `service_time_us` per operation.
    pub(crate) fn new(service_time_us: u64, workers: usize) -> Capacity {
        let now = Instant::now();
        Capacity {
            service: Duration::from_micros(service_time_us),
            slots: Mutex::new(vec![now; workers.max(1)]),
        }
    }

    /// Occupies a slot for `ops` service times and returns when the work is "done".
    pub(crate) async fn occupy(&self, ops: u32) {
        if ops == 0 {
            return;
        }
        let end = {
            let Ok(mut slots) = self.slots.lock() else {
                return;
            };
            let now = Instant::now();
            let (idx, free) = slots
                .iter()
                .enumerate()
                .min_by_key(|(_, t)| **t)
                .map(|(i, t)| (i, *t))
                .unwrap_or((0, now));
            let start = free.max(now);
            let end = start + self.service * ops;
            slots[idx] = end;
            end
        };
        sleep_until(end).await;
    }
}

struct Entry {
    at: Instant,
    tx: oneshot::Sender<()>,
}
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.at.cmp(&self.at) // min-heap
    }
}

struct Timer {
    heap: Mutex<BinaryHeap<Entry>>,
    cv: Condvar,
}

fn timer() -> Option<&'static Arc<Timer>> {
    static TIMER: OnceLock<Option<Arc<Timer>>> = OnceLock::new();
    TIMER
        .get_or_init(|| {
            let t = Arc::new(Timer {
                heap: Mutex::new(BinaryHeap::new()),
                cv: Condvar::new(),
            });
            let worker = t.clone();
            std::thread::Builder::new()
                .name("standin-timer".into())
                .spawn(move || run_timer(&worker))
                .ok()?;
            Some(t)
        })
        .as_ref()
}

fn run_timer(t: &Timer) {
    // Linux rounds sleeps up by the thread's timer slack (50 µs by default); make it 1 ns.
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
    let Ok(mut heap) = t.heap.lock() else { return };
    loop {
        let now = Instant::now();
        while heap.peek().is_some_and(|e| e.at <= now) {
            if let Some(e) = heap.pop() {
                let _ = e.tx.send(());
            }
        }
        let wait = heap.peek().map(|e| e.at.saturating_duration_since(now));
        heap = match wait {
            None => match t.cv.wait(heap) {
                Ok(h) => h,
                Err(_) => return,
            },
            Some(d) => match t.cv.wait_timeout(heap, d) {
                Ok((h, _)) => h,
                Err(_) => return,
            },
        };
    }
}

/// Sleeps until `at` with microsecond-level precision (tokio's own timer is millisecond-grained).
pub(crate) async fn sleep_until(at: Instant) {
    let now = Instant::now();
    if at <= now {
        return;
    }
    if at - now > Duration::from_millis(20) {
        tokio::time::sleep_until(tokio::time::Instant::from_std(
            at - Duration::from_millis(2),
        ))
        .await;
    }
    let Some(t) = timer() else {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
        return;
    };
    let (tx, rx) = oneshot::channel();
    {
        let Ok(mut heap) = t.heap.lock() else { return };
        let earliest = heap.peek().map(|e| e.at);
        heap.push(Entry { at, tx });
        if earliest.is_none_or(|e| at < e) {
            t.cv.notify_one();
        }
    }
    let _ = rx.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sleep_never_wakes_early() {
        for _ in 0..20 {
            let at = Instant::now() + Duration::from_micros(200);
            sleep_until(at).await;
            assert!(Instant::now() >= at);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ceiling_holds_at_two_hundred_microseconds() {
        // One slot of 200 µs → 5000 ops/s. Over-driven by 32 tasks, the slot's virtual clock decides
        // completion times, so neither late wake-ups nor scheduling noise move the ceiling.
        let cap = Arc::new(Capacity::new(200, 1));
        let start = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let c = cap.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..50 {
                    c.occupy(1).await;
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let rate = 1600.0 / start.elapsed().as_secs_f64();
        assert!(rate <= 5000.0 * 1.01, "{rate:.0} ops/s exceeds the ceiling");
        assert!(
            rate > 5000.0 * 0.85,
            "{rate:.0} ops/s is far below the ceiling"
        );
    }

    #[tokio::test]
    async fn slots_serialise_service_time() {
        let cap = Arc::new(Capacity::new(500, 1));
        let start = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let c = cap.clone();
            tasks.push(tokio::spawn(async move { c.occupy(1).await }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        // 8 operations × 500 µs on one slot cannot finish in under 4 ms.
        assert!(
            start.elapsed() >= Duration::from_micros(4000),
            "{:?}",
            start.elapsed()
        );
    }
}
