//! One client task: draws operations from the shared workload, calls the binding, times and records
//! each call, and keeps its pace.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;
use tokio_util::sync::CancellationToken;

use super::Phase;
use super::pacing::Pacer;
use crate::db::{DbClient, DbOutcome, ErrorClass, MongoBinding, ReadRecord};
use crate::events::Event;
use crate::measure::{ClientRecorder, Measurements, Status};
use crate::workload::{ClientState, CoreWorkload, Operation};

/// What every client of a run shares.
pub(crate) struct RunShared {
    pub phase: Phase,
    pub workload: Arc<CoreWorkload>,
    pub binding: MongoBinding,
    pub measurements: Arc<Measurements>,
    pub table: String,
    /// Set by Ctrl-C, `maxexecutiontime` or the error-rate guard.
    pub stop: CancellationToken,
    /// Nanoseconds between two ops of one client (`target`), if throttled.
    pub tick_ns: Option<u64>,
    /// `spin.sleep`: wait for a throttled op's deadline by spinning (yielding), not by a timer.
    pub spin_sleep: bool,
    /// Sleep a random part of one tick before the first op (low per-client rates).
    pub initial_delay: bool,
    /// How long the run may last from the clients' start (warm-up plus `maxexecutiontime`):
    /// the end against which planned but unsent operations are counted.
    pub time_bound: Option<Duration>,
    /// `dataintegrity`: verify every read.
    pub verify: bool,
    /// Where YCSB's retry and cleanup messages go.
    pub events: crate::events::Sink,
}

/// How often a client of several reports its [`ClientProgress`] counts to the coordinator.
pub(crate) const TICK_PERIOD: Duration = Duration::from_secs(1);

/// One client's running counts, read by the status line and the error-rate guard. Each client
/// writes only its own, on a cache line of its own, so counting an operation never contends with
/// another client (a shared counter is a cache line bounced between cores on every operation).
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct ClientProgress {
    /// Operations done.
    pub done: AtomicU64,
    /// Operations whose status was not ok.
    pub failed: AtomicU64,
    /// Per timeline operation ([`TIMELINE_OPS`]): completed, every status.
    pub by_op: [AtomicU64; TIMELINE_OPS.len()],
    /// Per timeline operation: completed with a status other than OK.
    pub failed_by_op: [AtomicU64; TIMELINE_OPS.len()],
    /// Failures by class. Kept here, not in the client's report, so a client abandoned while
    /// blocked on a dead member still has its earlier errors counted (only errors take the lock).
    pub error_classes: std::sync::Mutex<BTreeMap<ErrorClass, u64>>,
    /// Throttled operations started late and planned operations never sent
    /// ([`crate::measure::Schedule`]).
    pub late: AtomicU64,
    pub unsent: AtomicU64,
}

/// The operations the per-second timeline counts, in YCSB's names.
pub(crate) const TIMELINE_OPS: [&str; 5] =
    ["INSERT", "READ", "UPDATE", "SCAN", "READ-MODIFY-WRITE"];

fn timeline_index(op: &str) -> Option<usize> {
    TIMELINE_OPS.iter().position(|o| *o == op)
}

impl ClientProgress {
    /// Counts one failure of `class`.
    fn count_error(&self, class: ErrorClass) {
        if let Ok(mut classes) = self.error_classes.lock() {
            *classes.entry(class).or_insert(0) += 1;
        }
    }

    /// Counts one completed operation for the timeline.
    fn count(&self, op: &str, ok: bool) {
        if let Some(i) = timeline_index(op) {
            self.by_op[i].fetch_add(1, Ordering::Relaxed);
            if !ok {
                self.failed_by_op[i].fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Every client's counts added up.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Totals {
    /// Operations done.
    pub done: u64,
    /// Operations whose status was not ok.
    pub failed: u64,
    /// Inserts that succeeded: a load's `[OVERALL]` operation count, because YCSB's load loop
    /// counts an operation only when its insert succeeded (`docs/engine.md`).
    pub inserted: u64,
    /// Throttled operations started late ([`crate::measure::Schedule`]).
    pub late: u64,
}

impl Totals {
    /// Sums every client's counts.
    pub(crate) fn of<'a>(all: impl IntoIterator<Item = &'a ClientProgress>) -> Totals {
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let insert = timeline_index("INSERT");
        let mut t = Totals::default();
        for p in all {
            t.done += load(&p.done);
            t.failed += load(&p.failed);
            if let Some(i) = insert {
                t.inserted += load(&p.by_op[i]).saturating_sub(load(&p.failed_by_op[i]));
            }
            t.late += load(&p.late);
        }
        t
    }

    /// The counts since `earlier` (the warm-up's end).
    pub(crate) fn since(self, earlier: Totals) -> Totals {
        Totals {
            done: self.done.saturating_sub(earlier.done),
            failed: self.failed.saturating_sub(earlier.failed),
            inserted: self.inserted.saturating_sub(earlier.inserted),
            late: self.late.saturating_sub(earlier.late),
        }
    }
}

/// What a client hands back when it is done.
#[derive(Debug, Default)]
pub(crate) struct ClientReport {
    /// Set when the client stopped early because an insert failed after its retries.
    pub gave_up: bool,
    /// An error that makes the whole run invalid (e.g. too many unacknowledged inserts).
    pub fatal: Option<String>,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

struct Ctx<'a> {
    shared: &'a RunShared,
    progress: &'a ClientProgress,
    db: DbClient,
    rec: ClientRecorder,
    report: ClientReport,
    records: Vec<ReadRecord>,
}

impl Ctx<'_> {
    fn note(&mut self, outcome: DbOutcome) -> Status {
        if !outcome.status.is_ok() {
            self.progress.failed.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(class) = outcome.error_class {
            self.progress.count_error(class);
        }
        outcome.status
    }

    fn record(&mut self, op: &str, start: Instant, intended: Option<Instant>, status: Status) {
        let end = Instant::now();
        let latency = micros(end.saturating_duration_since(start));
        let intended_us = intended.map(|i| micros(end.saturating_duration_since(i)));
        self.rec.record(op, latency, intended_us, status);
        self.progress.count(op, status.is_ok());
    }

    /// Verifies returned records (`dataintegrity`), timed as `VERIFY`.
    fn verify(&mut self, expected: usize, intended: Option<Instant>) {
        let start = Instant::now();
        let status = if self.records.len() < expected.max(1) {
            Status::Error
        } else {
            (self.records.iter())
                .map(|(key, fields)| self.shared.workload.verify(key, fields))
                .find(|s| !s.is_ok())
                .unwrap_or(Status::Ok)
        };
        self.record("VERIFY", start, intended, status);
    }

    async fn read(
        &mut self,
        keys: &[String],
        fields: &crate::workload::FieldSelection,
        intended: Option<Instant>,
    ) -> Status {
        self.records.clear();
        let start = Instant::now();
        let out = if self.shared.verify {
            Some(&mut self.records)
        } else {
            None
        };
        let outcome = self.db.read(keys, fields, out).await;
        let status = self.note(outcome);
        self.record("READ", start, intended, status);
        if self.shared.verify && status.is_ok() {
            self.verify(keys.len(), intended);
        }
        status
    }

    async fn update(
        &mut self,
        key: &str,
        values: &[crate::workload::FieldValue],
        intended: Option<Instant>,
    ) -> Status {
        let start = Instant::now();
        let outcome = self.db.update(key, values).await;
        let status = self.note(outcome);
        self.record("UPDATE", start, intended, status);
        status
    }

    /// Runs one operation; false when the client must stop (a load insert failed for good).
    async fn run_op(
        &mut self,
        op: &Operation,
        intended: Option<Instant>,
        state: &mut ClientState,
    ) -> bool {
        match op {
            Operation::Insert {
                keynum,
                key,
                values,
                acknowledge,
            } => {
                let ack = acknowledge.then_some(*keynum);
                self.insert_with_retries(key, values, ack, intended, state)
                    .await
            }
            Operation::Read { keys, fields } => {
                self.read(keys, fields, intended).await;
                true
            }
            Operation::Update { key, values } => {
                self.update(key, values, intended).await;
                true
            }
            Operation::Scan {
                start_key,
                count,
                fields,
            } => {
                let start = Instant::now();
                let outcome = self.db.scan(start_key, *count, fields, None).await;
                let status = self.note(outcome);
                self.record("SCAN", start, intended, status);
                true
            }
            Operation::ReadModifyWrite {
                key,
                read_fields,
                values,
            } => {
                self.read_modify_write(key, read_fields, values, intended)
                    .await;
                true
            }
        }
    }

    /// Inserts a record, retrying a failed load insert up to `core_workload_insertion_retry_limit`
    /// times (YCSB's loop); a run-phase insert (`ack`, its key number before hashing) is
    /// acknowledged once, whatever its outcome. False when the client must stop.
    async fn insert_with_retries(
        &mut self,
        key: &str,
        values: &[crate::workload::FieldValue],
        ack: Option<i64>,
        intended: Option<Instant>,
        state: &mut ClientState,
    ) -> bool {
        let workload = &self.shared.workload;
        let retry_limit = u64::from(workload.retry_limit);
        let mut attempts = 0u64;
        loop {
            attempts += 1;
            let start = Instant::now();
            let outcome = self.db.insert(key, values).await;
            let status = self.note(outcome);
            self.record("INSERT", start, intended, status);
            if let Some(keynum) = ack {
                // Run-phase inserts are acknowledged even when they failed (YCSB's finally).
                if let Err(e) = workload.acknowledge_insert(keynum) {
                    self.report.fatal = Some(e.to_string());
                    self.shared.stop.cancel();
                    return false;
                }
                return true;
            }
            if status.is_ok() {
                return true;
            }
            if attempts > retry_limit || self.shared.stop.is_cancelled() {
                self.shared.events.event(Event::Finding(format!(
                    "Error inserting, not retrying any more. number of attempts: {attempts}Insertion Retry Limit: {retry_limit}"
                )));
                if workload.keep_going_on_error {
                    return true;
                }
                self.report.gave_up = true;
                return false;
            }
            self.shared.events.event(Event::Finding(format!(
                "Retrying insertion, retry count: {attempts}"
            )));
            let pause = workload.insertion_retry_sleep(state);
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = self.shared.stop.cancelled() => {}
            }
        }
    }

    /// A read then an update of one record, measured as one `READ-MODIFY-WRITE` (latency only:
    /// YCSB reports no status for it) besides the READ and UPDATE it is made of.
    async fn read_modify_write(
        &mut self,
        key: &String,
        read_fields: &crate::workload::FieldSelection,
        values: &[crate::workload::FieldValue],
        intended: Option<Instant>,
    ) {
        let start = Instant::now();
        self.read(std::slice::from_ref(key), read_fields, intended)
            .await;
        self.update(key, values, intended).await;
        let end = Instant::now();
        let latency = micros(end.saturating_duration_since(start));
        let intended_us = intended.map(|i| micros(end.saturating_duration_since(i)));
        self.rec
            .record_without_status("READ-MODIFY-WRITE", latency, intended_us);
        self.progress.count("READ-MODIFY-WRITE", true);
    }
}

/// Runs one client: `opcount` ops (0 = until stopped), then its cleanup (the batch flush).
pub(crate) async fn run_client(
    shared: Arc<RunShared>,
    index: usize,
    opcount: u64,
    progress: Arc<ClientProgress>,
) -> ClientReport {
    let db = shared.binding.client(&shared.table);
    let rec = shared.measurements.client();
    let mut state = shared.workload.client_state(index);
    let mut ctx = Ctx {
        shared: &shared,
        progress: &progress,
        db,
        rec,
        report: ClientReport::default(),
        records: Vec::new(),
    };
    if let (Some(tick), true) = (shared.tick_ns, shared.initial_delay) {
        let delay = rand::rng().random_range(0..tick.max(1));
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_nanos(delay)) => {}
            _ = shared.stop.cancelled() => {}
        }
    }
    let began = Instant::now();
    let mut pacer = shared.tick_ns.map(|t| Pacer::new(t, Instant::now()));
    let mut done = 0u64;
    while (opcount == 0 || done < opcount) && !shared.stop.is_cancelled() {
        let intended = pacer.as_ref().map(Pacer::intended_start);
        if intended.is_some_and(|i| micros(i.elapsed()) > crate::measure::Schedule::LATE_US) {
            progress.late.fetch_add(1, Ordering::Relaxed);
        }
        let op = match shared.phase {
            Phase::Load => shared.workload.next_load_op(&mut state),
            Phase::Run => shared.workload.next_transaction_op(&mut state),
        };
        let keep_going = ctx.run_op(&op, intended, &mut state).await;
        state.recycle(op);
        done += 1;
        progress.done.fetch_add(1, Ordering::Relaxed);
        if !keep_going {
            break;
        }
        if let Some(p) = pacer.as_mut() {
            keep_pace(p, &shared).await;
        }
    }
    if let (Some(p), true) = (&pacer, shared.stop.is_cancelled()) {
        let end = shared
            .time_bound
            .map_or(Instant::now(), |b| (began + b).min(Instant::now()));
        count_unsent(p, end, &ctx.rec, &progress);
    }
    // CLEANUP: flushes the last partial insert batch (YCSB never sends it).
    let pending = ctx.db.pending_inserts();
    let start = Instant::now();
    let outcome = ctx.db.cleanup().await;
    let latency = micros(start.elapsed());
    ctx.rec.record_without_status("CLEANUP", latency, None);
    if !outcome.status.is_ok() {
        if let Some(class) = outcome.error_class {
            ctx.progress.count_error(class);
        }
        shared.events.event(Event::Finding(format!(
            "client {index}: the final batch of {pending} inserts failed; those records are missing"
        )));
    }
    drop(ctx.rec);
    ctx.report
}

/// Counts one operation done on the schedule and waits for the next one's intended start (not
/// at all when behind: the client catches up, as YCSB's does).
async fn keep_pace(pacer: &mut Pacer, shared: &RunShared) {
    let deadline = pacer.op_done();
    if deadline <= Instant::now() {
        return;
    }
    if shared.spin_sleep {
        spin_until(deadline, &shared.stop).await;
    } else {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline.into()) => {}
            _ = shared.stop.cancelled() => {}
        }
    }
}

/// Records every operation the schedule planned before `end` that this client never sent (its
/// threads were busy), each at its intended latency at `end`: without them a client that fell
/// behind would leave its worst latencies out of its own figures.
fn count_unsent(pacer: &Pacer, end: Instant, rec: &ClientRecorder, progress: &ClientProgress) {
    /// More than this many are counted but not each recorded: the figure is already lost.
    const MAX_RECORDED: u64 = 1_000_000;
    let first = pacer.intended_start();
    let Some(behind) = end.checked_duration_since(first).filter(|d| !d.is_zero()) else {
        return;
    };
    let tick = pacer.tick_ns().max(1);
    let unsent = u64::try_from(behind.as_nanos() / u128::from(tick)).unwrap_or(u64::MAX) + 1;
    for k in 0..unsent.min(MAX_RECORDED) {
        let intended = first + Duration::from_nanos(k.saturating_mul(tick));
        rec.record_unsent(micros(end.saturating_duration_since(intended)));
    }
    progress.unsent.fetch_add(unsent, Ordering::Relaxed);
}

/// `spin.sleep=true`: YCSB busy-waits for the deadline instead of parking the thread, for
/// deadlines finer than the timer's. Here the task yields in a loop (the timer only covers
/// all but the last millisecond), so other tasks on the worker still run; it costs CPU, as in YCSB.
async fn spin_until(deadline: Instant, stop: &tokio_util::sync::CancellationToken) {
    let coarse = deadline.checked_sub(Duration::from_millis(1));
    if let Some(coarse) = coarse.filter(|c| *c > Instant::now()) {
        tokio::select! {
            _ = tokio::time::sleep_until(coarse.into()) => {}
            _ = stop.cancelled() => return,
        }
    }
    while Instant::now() < deadline && !stop.is_cancelled() {
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{IntervalMode, MapKind, MeasurementConfig};

    #[test]
    fn operations_planned_before_the_end_but_never_sent_are_counted_at_their_lateness() {
        let config = MeasurementConfig {
            interval: IntervalMode::Both,
            ..MeasurementConfig::default()
        };
        let measurements = Measurements::new(config);
        let rec = measurements.client();
        let progress = ClientProgress::default();
        let start = Instant::now();
        // One op every 10 ms; the client did 2 and the run ended at 55 ms: 3, 4 and 5 (at
        // 20, 30, 40 and 50 ms) were planned and never sent.
        let mut pacer = Pacer::new(10_000_000, start);
        pacer.op_done();
        pacer.op_done();
        count_unsent(&pacer, start + Duration::from_millis(55), &rec, &progress);
        assert_eq!(progress.unsent.load(Ordering::Relaxed), 4);
        drop(rec);
        let run = measurements.finish();
        let unsent = (run.measurements.iter())
            .find(|m| m.name.ends_with("UNSENT") && m.kind == MapKind::Intended)
            .expect("an UNSENT measurement");
        assert_eq!(unsent.histogram.len(), 4);
        let worst = unsent.histogram.max();
        assert!(
            (35_000..35_100).contains(&worst),
            "the first unsent was 35 ms late: {worst}"
        );
        // On schedule: nothing unsent.
        let fresh = Pacer::new(10_000_000, start);
        let progress = ClientProgress::default();
        count_unsent(&fresh, start, &measurements.client(), &progress);
        assert_eq!(progress.unsent.load(Ordering::Relaxed), 0);
    }
}
