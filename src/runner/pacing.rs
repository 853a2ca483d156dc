//! Target throttling per client, as YCSB does it, and the intended start times it implies.
//!
//! Each client gets `target / threads` ops/s. After its k-th op the client sleeps until
//! `start + k × tick`, and that deadline is the *intended* start of the next op. A client that is
//! behind schedule does not sleep (it bursts to catch up, as in YCSB); its intended start times stay
//! on the schedule, so the intended latency shows the queueing a fixed-rate load would have seen.

use std::time::{Duration, Instant};

/// One client's schedule.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    tick_ns: u64,
    start: Instant,
    ops_done: u64,
    next_intended: Instant,
}

/// Nanoseconds between two ops of one client, as YCSB computes it; `None` when unthrottled.
pub(crate) fn tick_ns(target_ops_per_sec: f64, threads: usize) -> Option<u64> {
    if target_ops_per_sec.is_nan() || target_ops_per_sec <= 0.0 || threads == 0 {
        return None;
    }
    let per_thread_per_ms = target_ops_per_sec / threads as f64 / 1000.0;
    // Java's (long) cast truncates toward zero and saturates.
    let tick = 1e6 / per_thread_per_ms;
    Some(if tick >= u64::MAX as f64 {
        u64::MAX
    } else {
        tick as u64
    })
}

/// YCSB sleeps a random fraction of one tick before the first op when a client's rate is at most
/// one op per millisecond, so the clients do not fire in lockstep.
pub(crate) fn wants_initial_delay(target_ops_per_sec: f64, threads: usize) -> bool {
    threads > 0 && target_ops_per_sec > 0.0 && target_ops_per_sec / threads as f64 / 1000.0 <= 1.0
}

impl Pacer {
    /// A schedule with `tick_ns` between ops, starting now (call after any initial delay).
    pub(crate) fn new(tick_ns: u64, start: Instant) -> Pacer {
        Pacer {
            tick_ns,
            start,
            ops_done: 0,
            next_intended: start,
        }
    }

    /// Nanoseconds between two ops.
    pub(crate) fn tick_ns(&self) -> u64 {
        self.tick_ns
    }

    /// The intended start time of the next op.
    pub(crate) fn intended_start(&self) -> Instant {
        self.next_intended
    }

    /// Records that one op finished and returns the deadline to sleep until (may be in the past).
    pub(crate) fn op_done(&mut self) -> Instant {
        self.ops_done += 1;
        let offset = u128::from(self.ops_done) * u128::from(self.tick_ns);
        let offset = Duration::from_nanos(u64::try_from(offset).unwrap_or(u64::MAX));
        // Far-future deadlines (absurdly low targets) saturate instead of overflowing.
        self.next_intended = self
            .start
            .checked_add(offset)
            .unwrap_or(self.start + Duration::from_secs(86_400 * 365));
        self.next_intended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_matches_ycsb_formula() {
        // 1000 ops/s over 4 threads: 0.25 ops/ms per thread → 4 ms.
        assert_eq!(tick_ns(1000.0, 4), Some(4_000_000));
        assert_eq!(tick_ns(3.0, 1), Some(333_333_333));
        assert_eq!(tick_ns(0.0, 4), None);
        assert_eq!(tick_ns(-5.0, 4), None);
        assert_eq!(tick_ns(100.0, 0), None);
    }

    #[test]
    fn initial_delay_only_at_low_rates() {
        assert!(wants_initial_delay(1000.0, 1));
        assert!(!wants_initial_delay(1001.0, 1));
        assert!(wants_initial_delay(8000.0, 8));
        assert!(!wants_initial_delay(0.0, 8));
    }

    #[test]
    fn deadlines_follow_the_schedule_without_catch_up_drift() {
        let t0 = Instant::now();
        let mut p = Pacer::new(1_000_000, t0);
        assert_eq!(p.intended_start(), t0);
        assert_eq!(p.op_done(), t0 + Duration::from_millis(1));
        assert_eq!(p.op_done(), t0 + Duration::from_millis(2));
        // However late the client is, the schedule stays anchored at the start.
        assert_eq!(p.op_done(), t0 + Duration::from_millis(3));
        assert_eq!(p.intended_start(), t0 + Duration::from_millis(3));
    }
}
