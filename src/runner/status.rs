//! The `-s` status task: YCSB's status line (an event the CLI prints on stderr) at start, every `status.interval` seconds and at the end.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::client::ClientProgress;
use crate::measure::Measurements;

/// Prints status lines until the clients are done.
pub(crate) struct StatusPrinter {
    pub measurements: Arc<Measurements>,
    /// Per client: ops done so far, and its op count (0 = unlimited).
    pub counters: Vec<(Arc<ClientProgress>, u64)>,
    pub label: String,
    pub interval: Duration,
    pub start: Instant,
    /// Where the lines go (the CLI prints them on stderr).
    pub events: crate::events::Sink,
    /// Say the lines; when false the task only takes the intervals (a client of several keeps
    /// its interval logs in step with the status interval, the coordinator prints).
    pub print: bool,
    /// Print each line on stdout as well (YCSB does with `measurementtype=timeseries`).
    pub stdout: bool,
}

impl StatusPrinter {
    /// Operations done and still to do; at the start line, none done: YCSB starts its status
    /// thread before its clients, so its first line always says 0 operations, and ours would
    /// otherwise count what the clients (spawned a moment earlier) finished meanwhile.
    fn totals(&self, at_start: bool) -> (u64, u64) {
        let mut done = 0u64;
        let mut todo = 0u64;
        for (c, n) in &self.counters {
            let d = if at_start {
                0
            } else {
                c.done.load(Ordering::Relaxed)
            };
            done += d;
            if *n > 0 {
                todo += n.saturating_sub(d);
            }
        }
        (done, todo)
    }

    /// Runs until `done` is cancelled, then prints the final line.
    pub(crate) async fn run(self, done: CancellationToken) {
        let mut prev_ops = 0u64;
        let mut prev_ms = 0u64;
        let mut next = self.start;
        let mut at_start = true;
        loop {
            // The start line is said even when the clients finished before this task first ran
            // (YCSB's status thread starts before its clients): the end line follows it.
            let finished = !at_start && done.is_cancelled();
            let now = Instant::now();
            let (ops, todo) = self.totals(at_start);
            // The start line's operations (none, as said) are left to the next interval.
            let summaries = if at_start {
                crate::measure::IntervalSummaries::default()
            } else {
                self.measurements.take_interval()
            };
            at_start = false;
            let elapsed_ms = u64::try_from(now.saturating_duration_since(self.start).as_millis())
                .unwrap_or(u64::MAX);
            let line = crate::measure::status_line(&crate::measure::StatusInput {
                label: &self.label,
                now: chrono::Local::now(),
                elapsed_ms,
                total_ops: ops,
                prev_ops,
                prev_elapsed_ms: prev_ms,
                todo_ops: todo,
                summaries: &summaries,
            });
            if self.print {
                self.events.event(crate::events::Event::Status {
                    line,
                    also_stdout: self.stdout,
                });
            }
            if finished {
                return;
            }
            prev_ops = ops;
            prev_ms = elapsed_ms;
            // Deadline-based like YCSB, so printing time does not drift the schedule.
            while next <= Instant::now() {
                next += self.interval;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(next.into()) => {}
                _ = done.cancelled() => {}
            }
        }
    }
}
