//! The run's measurement registry: one uncontended slot per client task, folded together only
//! when the status task asks for an interval or the run finishes.
//!
//! Recording locks the client's own slot (no other task touches it except the aggregation every
//! status interval), so a record costs one uncontended mutex plus a histogram increment.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use hdrhistogram::Histogram;

use super::config::{IntervalMode, MeasurementConfig, MeasurementType};
use super::hdrlog::HdrLogs;
use super::legacy::BucketHistogram;
use super::series::{RawLog, TimeSeries};
use super::{Status, hdr, javafmt, order};

/// Which of YCSB's two maps a measurement lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MapKind {
    /// `opToMesurementMap`: actual latencies and, except in `intended` mode, the status counts.
    Actual,
    /// `opToIntendedMesurementMap`: intended latencies; in `intended` mode also the status counts.
    Intended,
}

const NO_SEQ: u64 = u64::MAX;

/// What one measurement records, per `measurementtype`: the HdrHistogram always, the others
/// only when the type asks for them (so the other types pay one untaken branch per record).
struct Parts {
    hist: Histogram<u64>,
    /// `histogram`, `hdrhistogram+histogram`: the legacy 1-ms buckets.
    buckets: Option<BucketHistogram>,
    /// `timeseries`: the average latency per time unit.
    series: Option<TimeSeries>,
    /// `raw`, `hdrhistogram+raw`: every point.
    raw: Option<RawLog>,
}

impl Parts {
    /// Empty parts of the configured measurement type.
    fn new(config: &MeasurementConfig) -> Parts {
        let t = config.measurement_type;
        Parts {
            hist: hdr::new_histogram(),
            buckets: t
                .has_buckets()
                .then(|| BucketHistogram::new(config.histogram_buckets)),
            series: (t == MeasurementType::TimeSeries).then(TimeSeries::new),
            raw: t.has_raw().then(RawLog::default),
        }
    }

    /// Moves the counts out, leaving empty parts (the histogram from `pool`): O(1), as it runs
    /// under a client's lock. Empty buckets stay in place rather than allocating new ones.
    fn take(&mut self, pool: &mut Vec<Histogram<u64>>) -> Parts {
        let spare = pool.pop().unwrap_or_else(hdr::new_histogram);
        Parts {
            hist: std::mem::replace(&mut self.hist, spare),
            buckets: self
                .buckets
                .as_mut()
                .filter(|b| b.operations > 0)
                .map(|b| std::mem::replace(b, BucketHistogram::new(b.buckets.len()))),
            series: self
                .series
                .as_mut()
                .map(|s| std::mem::replace(s, TimeSeries::new())),
            raw: self.raw.as_mut().map(std::mem::take),
        }
    }

    /// Adds `other`'s counts to the parts both have.
    fn add(&mut self, other: &Parts) {
        // Both histograms auto-resize, so adding cannot fail; an empty one is not walked.
        if !other.hist.is_empty() {
            let _ = self.hist.add(&other.hist);
        }
        if let (Some(dst), Some(src)) = (self.buckets.as_mut(), other.buckets.as_ref()) {
            dst.add(src);
        }
        if let (Some(dst), Some(src)) = (self.series.as_mut(), other.series.as_ref()) {
            dst.add(src);
        }
        if let (Some(dst), Some(src)) = (self.raw.as_mut(), other.raw.as_ref()) {
            dst.add(src);
        }
    }

    /// Empties every part, keeping which parts there are.
    fn reset(&mut self) {
        self.hist.reset();
        if let Some(b) = self.buckets.as_mut() {
            b.reset();
        }
        self.series = self.series.take().map(|_| TimeSeries::new());
        self.raw = self.raw.take().map(|_| RawLog::default());
    }
}

/// Counters of one measurement since the last aggregation, inside one client's slot; also what
/// an aggregation takes out of it.
struct SlotEntry {
    kind: MapKind,
    key: Box<str>,
    first_seq: u64,
    parts: Parts,
    /// `timeseries`: the measurement's first operation (shared by clients), the series' zero;
    /// set exactly when `parts.series` is.
    series_start: Option<Instant>,
    /// When this client first recorded the measurement (the interval log's start).
    created: SystemTime,
    statuses: [u64; 9],
    status_seq: [u64; 9],
}

/// One client task's private counters.
#[derive(Default)]
struct ClientSlot {
    entries: Vec<SlotEntry>,
}

struct RegistryState {
    config: MeasurementConfig,
    seq: AtomicU64,
    /// `timeseries`: each measurement's first operation, so every client's units line up.
    series_starts: Mutex<Vec<(MapKind, Box<str>, Instant)>>,
}

impl RegistryState {
    fn series_start(&self, kind: MapKind, key: &str) -> Instant {
        let mut starts = lock(&self.series_starts);
        match starts.iter().find(|(k, n, _)| *k == kind && **n == *key) {
            Some((_, _, t)) => *t,
            None => {
                let now = Instant::now();
                starts.push((kind, key.into(), now));
                now
            }
        }
    }
}

/// Cumulative and current-interval data of one measurement, across all clients.
struct AggEntry {
    kind: MapKind,
    key: String,
    first_seq: u64,
    total: Parts,
    interval: Parts,
    created: SystemTime,
    statuses: [u64; 9],
    status_seq: [u64; 9],
}

#[derive(Default)]
struct Aggregate {
    entries: Vec<AggEntry>,
    /// Empty histograms to swap into client slots.
    pool: Vec<Histogram<u64>>,
    /// `hdrhistogram.fileoutput`: the interval logs.
    logs: Option<HdrLogs>,
}

/// The registry shared by a run (`Arc<Measurements>`): hands out recorders, aggregates.
pub struct Measurements {
    shared: Arc<RegistryState>,
    clients: Mutex<Vec<Arc<Mutex<ClientSlot>>>>,
    aggregate: Mutex<Aggregate>,
}

/// A client task's handle for recording; one per task, cheap to use on every operation.
pub struct ClientRecorder {
    shared: Arc<RegistryState>,
    slot: Arc<Mutex<ClientSlot>>,
}

/// The statistics the status line shows for one measurement over one interval.
#[derive(Debug, Clone, PartialEq)]
pub enum SummaryStats {
    /// HdrHistogram interval: count, max, min, mean and the fixed status percentiles.
    Hdr {
        /// Operations in the interval.
        count: u64,
        /// Highest equivalent of the interval's maximum.
        max: u64,
        /// Lowest equivalent of the interval's minimum.
        min: u64,
        /// Bucket-median mean.
        mean: f64,
        /// 50th, 90th, 99th, 99.9th, 99.99th percentiles.
        percentiles: [u64; 5],
    },
    /// Legacy histogram or timeseries window: operations and exact average.
    Histogram {
        /// Operations in the window.
        operations: u64,
        /// Σ latency in the window.
        total_latency: i64,
    },
    /// Raw window: operations and exact average.
    Raw {
        /// Operations in the window.
        operations: u64,
        /// Σ latency in the window.
        total_latency: i64,
    },
    /// `hdrhistogram+histogram` / `hdrhistogram+raw`: the HdrHistogram part (`HdrOP`), then the
    /// other (`BucketOP` / `RawOP`).
    Pair(Box<SummaryStats>, Box<SummaryStats>),
}

/// One measurement's interval statistics, named as YCSB prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalSummary {
    /// Printed name (`READ`, `READ-FAILED`, `Intended-READ`).
    pub name: String,
    /// Which map it belongs to.
    pub kind: MapKind,
    /// The interval's numbers.
    pub stats: SummaryStats,
}

impl IntervalSummary {
    /// YCSB's `getSummary()` text for this measurement (master format, with `, 50=`).
    pub(crate) fn text(&self) -> String {
        stats_text(&self.name, &self.stats)
    }
}

/// One summary text; a pair joins its parts with a newline, as `TwoInOneMeasurement` does.
fn stats_text(name: &str, stats: &SummaryStats) -> String {
    let d = javafmt::decimal_2;
    match stats {
        SummaryStats::Hdr {
            count,
            max,
            min,
            mean,
            percentiles: [p50, p90, p99, p999, p9999],
        } => format!(
            "[{name}: Count={count}, Max={max}, Min={min}, Avg={}, 50={p50}, 90={p90}, 99={p99}, 99.9={p999}, 99.99={p9999}]",
            d(*mean)
        ),
        // An empty window prints nothing.
        SummaryStats::Histogram { operations: 0, .. } | SummaryStats::Raw { operations: 0, .. } => {
            String::new()
        }
        SummaryStats::Histogram {
            operations,
            total_latency,
        } => format!(
            "[{name} AverageLatency(us)={}]",
            d(*total_latency as f64 / *operations as f64)
        ),
        SummaryStats::Raw {
            operations,
            total_latency,
        } => format!(
            "{name} count: {operations}, average latency(us): {}",
            javafmt::format_2f(*total_latency as f64 / *operations as f64)
        ),
        SummaryStats::Pair(hdr, other) => {
            let second = match **other {
                SummaryStats::Raw { .. } => "Raw",
                _ => "Bucket",
            };
            format!(
                "{}\n{}",
                stats_text(&format!("Hdr{name}"), hdr),
                stats_text(&format!("{second}{name}"), other)
            )
        }
    }
}

/// Per-measurement statistics of one status interval, in YCSB's summary order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IntervalSummaries {
    /// Actual map in map order, then the intended map in map order.
    pub entries: Vec<IntervalSummary>,
}

impl IntervalSummaries {
    /// YCSB's `Measurements.getSummary()`: each summary followed by one space.
    pub(crate) fn text(&self) -> String {
        self.entries.iter().map(|e| e.text() + " ").collect()
    }
}

/// One measurement's cumulative data at the end of a run.
#[derive(Debug, Clone)]
pub struct OpMeasurement {
    /// Printed name (`READ`, `READ-FAILED`, `Intended-READ`, `CLEANUP`).
    pub name: String,
    /// The map key: the operation name without the `Intended-` prefix.
    pub key: String,
    /// Which map it belongs to.
    pub kind: MapKind,
    /// All recorded latencies (µs), HdrHistogram with YCSB's shape.
    pub histogram: Histogram<u64>,
    /// The legacy 1-ms histogram, when `measurementtype=histogram` or `hdrhistogram+histogram`.
    pub buckets: Option<BucketHistogram>,
    /// The time series, when `measurementtype=timeseries`.
    pub series: Option<TimeSeries>,
    /// Every latency, when `measurementtype=raw` or `hdrhistogram+raw`.
    pub raw: Option<RawLog>,
    /// `Return=` counts in YCSB's order.
    pub statuses: Vec<(Status, u64)>,
}

impl OpMeasurement {
    /// Number of latencies recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }
}

/// The cumulative measurements of a run, in YCSB's export order.
#[derive(Debug, Clone, Default)]
pub struct RunMeasurements {
    /// Actual map in map order, then the intended map in map order.
    pub measurements: Vec<OpMeasurement>,
    /// Interval logs (`hdrhistogram.fileoutput`) that could not be written, one line each.
    pub log_problems: Vec<String>,
}

impl RunMeasurements {
    /// The measurement printed as `name`, if any.
    pub fn get(&self, name: &str) -> Option<&OpMeasurement> {
        self.measurements.iter().find(|m| m.name == name)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a measurement lock leaves counters that are still usable.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn matches_key(key: &str, op: &str, suffix: Option<&str>) -> bool {
    match suffix {
        None => key == op,
        Some(s) => {
            key.len() == op.len() + 1 + s.len()
                && key.starts_with(op)
                && key.as_bytes()[op.len()] == b'-'
                && key.ends_with(s)
        }
    }
}

impl Aggregate {
    /// The aggregate's entry for what was taken (same kind and key), created empty when it is
    /// the first.
    fn entry_for(&mut self, t: &SlotEntry, config: &MeasurementConfig) -> &mut AggEntry {
        let pos = self
            .entries
            .iter()
            .position(|a| a.kind == t.kind && *a.key == *t.key);
        let p = pos.unwrap_or_else(|| {
            self.entries.push(AggEntry {
                kind: t.kind,
                key: t.key.to_string(),
                first_seq: t.first_seq,
                total: Parts::new(config),
                interval: Parts::new(config),
                created: t.created,
                statuses: [0; 9],
                status_seq: [NO_SEQ; 9],
            });
            self.entries.len() - 1
        });
        &mut self.entries[p]
    }
}

impl AggEntry {
    /// Adds what was taken from a client into the interval part; returns the client's
    /// histogram, emptied, for the pool.
    fn add_interval(&mut self, t: SlotEntry) -> Histogram<u64> {
        self.first_seq = self.first_seq.min(t.first_seq);
        self.created = self.created.min(t.created);
        self.interval.add(&t.parts);
        for i in 0..9 {
            self.statuses[i] += t.statuses[i];
            self.status_seq[i] = self.status_seq[i].min(t.status_seq[i]);
        }
        let mut spare = t.parts.hist;
        spare.reset();
        spare
    }

    /// Adds the current interval into the totals and starts the next one empty.
    fn fold_interval(&mut self) {
        self.total.add(&self.interval);
        self.interval.reset();
    }
}

impl ClientSlot {
    /// Takes the slot's counters since the last aggregation into `taken`, leaving empty ones
    /// (histograms from `pool`) in their place: O(1) per entry, so the client is not held up.
    fn take_interval(&mut self, pool: &mut Vec<Histogram<u64>>, taken: &mut Vec<SlotEntry>) {
        for e in self.entries.iter_mut() {
            taken.push(SlotEntry {
                key: e.key.clone(),
                parts: e.parts.take(pool),
                statuses: std::mem::take(&mut e.statuses),
                ..*e
            });
        }
    }

    /// The index of the entry for `op` (`op-suffix` with a suffix) in map `kind`, created on
    /// first use (a timeseries one starting at the measurement's shared start).
    fn entry_index(
        &mut self,
        shared: &RegistryState,
        kind: MapKind,
        op: &str,
        suffix: Option<&str>,
    ) -> usize {
        let pos = self
            .entries
            .iter()
            .position(|e| e.kind == kind && matches_key(&e.key, op, suffix));
        if let Some(p) = pos {
            return p;
        }
        let key = match suffix {
            None => op.to_string(),
            Some(s) => format!("{op}-{s}"),
        };
        let parts = Parts::new(&shared.config);
        let series_start = parts
            .series
            .as_ref()
            .map(|_| shared.series_start(kind, &key));
        self.entries.push(SlotEntry {
            kind,
            key: key.into_boxed_str(),
            first_seq: shared.seq.fetch_add(1, Ordering::Relaxed),
            parts,
            series_start,
            created: SystemTime::now(),
            statuses: [0; 9],
            status_seq: [NO_SEQ; 9],
        });
        self.entries.len() - 1
    }

    /// Records `us` under `op` (`op-suffix` with a suffix) in map `kind`; returns the entry's index.
    fn measure(
        &mut self,
        shared: &RegistryState,
        kind: MapKind,
        op: &str,
        suffix: Option<&str>,
        us: u64,
    ) -> usize {
        let idx = self.entry_index(shared, kind, op, suffix);
        // YCSB casts latencies to Java int.
        let v = us.min(i32::MAX as u64);
        let e = &mut self.entries[idx];
        let p = &mut e.parts;
        // Auto-resizing: `record` grows the histogram (`saturating_record` would clamp instead).
        if p.hist.record(v).is_err() {
            p.hist.saturating_record(v);
        }
        // The other types cost one untaken branch each when they are off.
        if let Some(b) = p.buckets.as_mut() {
            b.record(v as i64);
        }
        if let (Some(s), Some(start)) = (p.series.as_mut(), e.series_start) {
            let elapsed = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
            s.record(elapsed, shared.config.timeseries_granularity_ms, v as i64);
        }
        if let Some(r) = p.raw.as_mut() {
            r.record(now_ms(), v as u32);
        }
        idx
    }

    fn status_at(&mut self, shared: &RegistryState, idx: usize, status: Status) {
        let e = &mut self.entries[idx];
        let i = status.index();
        if e.status_seq[i] == NO_SEQ {
            e.status_seq[i] = shared.seq.fetch_add(1, Ordering::Relaxed);
        }
        e.statuses[i] += 1;
    }
}

/// `System.currentTimeMillis()`.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The map that holds status counts: the intended one in `intended` mode, else the actual one.
fn status_kind(shared: &RegistryState) -> MapKind {
    if shared.config.interval == IntervalMode::Intended {
        MapKind::Intended
    } else {
        MapKind::Actual
    }
}

impl ClientRecorder {
    /// Records one database call the way YCSB's DBWrapper does: the latency goes under `op`
    /// when `status` is OK, else under `OP-FAILED` / `OP-<STATUS>`; the intended latency
    /// (the actual one when `None`, as YCSB falls back to "now") is recorded per
    /// `measurement.interval`; the status is counted on the plain `op`.
    pub fn record(&self, op: &str, latency_us: u64, intended_us: Option<u64>, status: Status) {
        let shared = &*self.shared;
        let suffix = (!status.is_ok()).then(|| shared.config.failed_suffix(status));
        let status_map = status_kind(shared);
        let mode = shared.config.interval;
        let mut slot = lock(&self.slot);
        // The status goes on the plain `op` entry; when that is the entry just measured (an OK
        // status), reuse its index instead of looking it up again.
        let mut status_idx = None;
        if mode.records_actual() {
            let idx = slot.measure(shared, MapKind::Actual, op, suffix, latency_us);
            if suffix.is_none() && status_map == MapKind::Actual {
                status_idx = Some(idx);
            }
        }
        if mode.records_intended() {
            let us = intended_us.unwrap_or(latency_us);
            let idx = slot.measure(shared, MapKind::Intended, op, suffix, us);
            if suffix.is_none() && status_map == MapKind::Intended {
                status_idx = Some(idx);
            }
        }
        let idx = match status_idx {
            Some(idx) => idx,
            None => slot.entry_index(shared, status_map, op, None),
        };
        slot.status_at(shared, idx, status);
    }

    /// Records a latency with no status, as YCSB does for `CLEANUP` (actual and intended per
    /// `measurement.interval`).
    pub fn record_without_status(&self, op: &str, latency_us: u64, intended_us: Option<u64>) {
        let shared = &*self.shared;
        let mut slot = lock(&self.slot);
        if shared.config.interval.records_actual() {
            slot.measure(shared, MapKind::Actual, op, None, latency_us);
        }
        if shared.config.interval.records_intended() {
            let us = intended_us.unwrap_or(latency_us);
            slot.measure(shared, MapKind::Intended, op, None, us);
        }
    }
}

impl ClientRecorder {
    /// Records an operation the schedule planned before the run's end that was never sent, at
    /// its intended latency so far, under `UNSENT` (intended only: it has no service latency).
    /// HdrHistogram's expected-interval correction counts such operations the same way.
    pub fn record_unsent(&self, intended_us: u64) {
        let shared = &*self.shared;
        if shared.config.interval.records_intended() {
            lock(&self.slot).measure(shared, MapKind::Intended, "UNSENT", None, intended_us);
        }
    }
}

impl Measurements {
    /// A registry for one run.
    pub fn new(config: MeasurementConfig) -> Arc<Measurements> {
        let logs = config.hdr_log_prefix.clone().map(HdrLogs::new);
        Arc::new(Measurements {
            shared: Arc::new(RegistryState {
                config,
                seq: AtomicU64::new(0),
                series_starts: Mutex::new(Vec::new()),
            }),
            clients: Mutex::new(Vec::new()),
            aggregate: Mutex::new(Aggregate {
                logs,
                ..Aggregate::default()
            }),
        })
    }

    /// Forgets everything recorded so far: the end of a warm-up (`--warmup`), after which the
    /// measurement starts afresh.
    pub(crate) fn reset(&self) {
        let mut agg = lock(&self.aggregate);
        for slot in lock(&self.clients).iter() {
            lock(slot).entries.clear();
        }
        agg.entries.clear();
        lock(&self.shared.series_starts).clear();
        if let Some(logs) = agg.logs.as_mut() {
            logs.restart();
        }
    }

    /// A recorder for one client task.
    pub fn client(&self) -> ClientRecorder {
        let slot = Arc::new(Mutex::new(ClientSlot::default()));
        lock(&self.clients).push(Arc::clone(&slot));
        ClientRecorder {
            shared: Arc::clone(&self.shared),
            slot,
        }
    }

    /// Moves every client's counters into the aggregate's interval part.
    ///
    /// Under a client's lock we only swap its histograms for empty ones from a pool (O(1)), so a
    /// recording task is never blocked for a histogram walk; the adding happens after unlocking.
    fn collect(&self, agg: &mut Aggregate) {
        let clients: Vec<Arc<Mutex<ClientSlot>>> = lock(&self.clients).clone();
        let mut taken: Vec<SlotEntry> = Vec::new();
        for slot in clients {
            lock(&slot).take_interval(&mut agg.pool, &mut taken);
            for t in taken.drain(..) {
                let spare = agg.entry_for(&t, &self.shared.config).add_interval(t);
                agg.pool.push(spare);
            }
        }
    }

    /// Indices of the aggregate's entries in YCSB's order: actual map, then intended map.
    fn ordered(agg: &Aggregate) -> Vec<usize> {
        let mut out = Vec::new();
        for kind in [MapKind::Actual, MapKind::Intended] {
            let mut idx: Vec<usize> = (0..agg.entries.len())
                .filter(|&i| agg.entries[i].kind == kind)
                .collect();
            idx.sort_by_key(|&i| agg.entries[i].first_seq);
            let names: Vec<&str> = idx.iter().map(|&i| agg.entries[i].key.as_str()).collect();
            out.extend(order::order_names(&names).into_iter().map(|j| idx[j]));
        }
        out
    }

    fn display_name(&self, kind: MapKind, key: &str) -> String {
        if kind == MapKind::Intended && self.shared.config.interval == IntervalMode::Both {
            format!("Intended-{key}")
        } else {
            key.to_string()
        }
    }

    /// Per-measurement statistics since the previous call (for the status line); the interval
    /// is folded into the cumulative totals (and written to the interval logs, if any).
    pub fn take_interval(&self) -> IntervalSummaries {
        let mut agg = lock(&self.aggregate);
        self.collect(&mut agg);
        let order = Self::ordered(&agg);
        let now = SystemTime::now();
        let mut entries = Vec::with_capacity(order.len());
        for i in order {
            let name = self.display_name(agg.entries[i].kind, &agg.entries[i].key);
            let stats = self.interval_stats(&agg.entries[i]);
            Self::log_interval(&mut agg, i, &name, now);
            let a = &mut agg.entries[i];
            a.fold_interval();
            entries.push(IntervalSummary {
                name,
                kind: a.kind,
                stats,
            });
        }
        IntervalSummaries { entries }
    }

    /// The status-line numbers of one measurement's current interval, per measurement type.
    fn interval_stats(&self, a: &AggEntry) -> SummaryStats {
        let h = &a.interval.hist;
        let hdr = || SummaryStats::Hdr {
            count: h.len(),
            max: hdr::max(h),
            min: hdr::min(h),
            mean: hdr::mean(h),
            percentiles: [50.0, 90.0, 99.0, 99.9, 99.99].map(|p| hdr::percentile(h, p)),
        };
        let window = |operations, total_latency| SummaryStats::Histogram {
            operations,
            total_latency,
        };
        let exact = match (&a.interval.buckets, &a.interval.series, &a.interval.raw) {
            (Some(b), _, _) => Some(window(b.operations, b.total_latency)),
            (_, Some(s), _) => Some(window(s.operations, s.total_latency)),
            (_, _, Some(r)) => Some(SummaryStats::Raw {
                operations: r.points.len() as u64,
                total_latency: r.total_latency,
            }),
            _ => None,
        };
        match exact {
            Some(other) if self.shared.config.measurement_type.is_combined() => {
                SummaryStats::Pair(Box::new(hdr()), Box::new(other))
            }
            Some(other) => other,
            None => hdr(),
        }
    }

    /// Writes entry `i`'s current interval to its interval log (`hdrhistogram.fileoutput`):
    /// `HdrOP.hdr` for the combined types, as YCSB names their inner measurement.
    fn log_interval(agg: &mut Aggregate, i: usize, name: &str, now: SystemTime) {
        let Aggregate { entries, logs, .. } = agg;
        if let Some(logs) = logs.as_mut() {
            let a = &entries[i];
            let combined = a.interval.buckets.is_some() || a.interval.raw.is_some();
            let file = if combined {
                format!("Hdr{name}")
            } else {
                name.to_string()
            };
            logs.interval(&file, a.created, &a.interval.hist, now);
        }
    }

    /// The cumulative measurements of the run (everything recorded so far), in export order.
    /// The interval logs get their last interval and are closed.
    pub fn finish(&self) -> RunMeasurements {
        let mut agg = lock(&self.aggregate);
        self.collect(&mut agg);
        let order = Self::ordered(&agg);
        let now = SystemTime::now();
        let mut measurements = Vec::with_capacity(order.len());
        for i in order {
            let name = self.display_name(agg.entries[i].kind, &agg.entries[i].key);
            Self::log_interval(&mut agg, i, &name, now);
            let a = &mut agg.entries[i];
            a.fold_interval();
            let mut seen: Vec<Status> = Status::ALL
                .into_iter()
                .filter(|s| a.status_seq[s.index()] != NO_SEQ)
                .collect::<Vec<_>>();
            seen.sort_by_key(|s| a.status_seq[s.index()]);
            let statuses = order::order_statuses(&seen)
                .into_iter()
                .map(|j| (seen[j], a.statuses[seen[j].index()]))
                .collect();
            measurements.push(OpMeasurement {
                name,
                key: a.key.clone(),
                kind: a.kind,
                histogram: a.total.hist.clone(),
                buckets: a.total.buckets.clone(),
                series: a.total.series.clone(),
                raw: a.total.raw.clone(),
                statuses,
            });
        }
        let problems = agg.logs.as_mut().map(HdrLogs::close).unwrap_or_default();
        RunMeasurements {
            measurements,
            log_problems: problems,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(run: &RunMeasurements) -> Vec<String> {
        run.measurements.iter().map(|m| m.name.clone()).collect()
    }

    #[test]
    fn dbwrapper_logic_and_order() {
        let m = Measurements::new(MeasurementConfig::default());
        let c1 = m.client();
        let c2 = m.client();
        c1.record("READ", 120, None, Status::Ok);
        c2.record("UPDATE", 300, None, Status::Ok);
        c2.record("READ", 5000, None, Status::NotFound);
        c1.record_without_status("CLEANUP", 3, None);
        let run = m.finish();
        assert_eq!(names(&run), ["READ", "CLEANUP", "UPDATE", "READ-FAILED"]);
        let read = run.get("READ").unwrap();
        assert_eq!(read.count(), 1);
        assert_eq!(read.statuses, vec![(Status::Ok, 1), (Status::NotFound, 1)]);
        let failed = run.get("READ-FAILED").unwrap();
        assert_eq!((failed.count(), hdr::max(&failed.histogram)), (1, 5003));
        assert!(failed.statuses.is_empty());
        assert!(run.get("CLEANUP").unwrap().statuses.is_empty());
    }

    #[test]
    fn per_error_names() {
        let cfg = MeasurementConfig {
            latency_tracked_errors: vec!["ERROR".into()],
            ..MeasurementConfig::default()
        };
        let m = Measurements::new(cfg);
        let c = m.client();
        c.record("INSERT", 10, None, Status::Error);
        c.record("INSERT", 10, None, Status::NotFound);
        c.record("INSERT", 10, None, Status::BatchedOk);
        let run = m.finish();
        // Bins: INSERT-ERROR 4, INSERT 10, INSERT-FAILED 15.
        assert_eq!(names(&run), ["INSERT-ERROR", "INSERT", "INSERT-FAILED"]);
        assert_eq!(
            run.get("INSERT").unwrap().statuses,
            vec![
                (Status::BatchedOk, 1),
                (Status::NotFound, 1),
                (Status::Error, 1)
            ]
        );
    }

    #[test]
    fn interval_modes() {
        for (mode, expected) in [
            (IntervalMode::Op, vec!["READ"]),
            (IntervalMode::Intended, vec!["READ"]),
            (IntervalMode::Both, vec!["READ", "Intended-READ"]),
        ] {
            let m = Measurements::new(MeasurementConfig {
                interval: mode,
                ..MeasurementConfig::default()
            });
            let c = m.client();
            c.record("READ", 100, Some(900), Status::Ok);
            let run = m.finish();
            assert_eq!(names(&run), expected, "{mode:?}");
            let first = &run.measurements[0];
            assert_eq!(first.statuses, vec![(Status::Ok, 1)]);
            let expected_max = if mode == IntervalMode::Intended {
                900
            } else {
                100
            };
            assert_eq!(hdr::max(&first.histogram), expected_max);
            if mode == IntervalMode::Both {
                let intended = &run.measurements[1];
                assert_eq!(hdr::max(&intended.histogram), 900);
                assert!(intended.statuses.is_empty());
            }
        }
    }

    #[test]
    fn intervals_fold_into_totals() {
        let m = Measurements::new(MeasurementConfig::default());
        let c = m.client();
        for v in [120, 250, 250, 999, 1500, 2047] {
            c.record("READ", v, None, Status::Ok);
        }
        let first = m.take_interval();
        assert_eq!(
            first.text(),
            "[READ: Count=6, Max=2047, Min=120, Avg=861, 50=250, 90=2047, 99=2047, 99.9=2047, 99.99=2047] "
        );
        for v in [2048, 2049, 3001, 4097, 10000, 123456] {
            c.record("READ", v, None, Status::Ok);
        }
        c.record("UPDATE", 5, None, Status::Ok);
        let second = m.take_interval();
        assert_eq!(second.entries.len(), 2);
        assert_eq!(
            second.entries[0].text(),
            "[READ: Count=6, Max=123519, Min=2048, Avg=24114.83, 50=3001, 90=123519, 99=123519, 99.9=123519, 99.99=123519]"
        );
        let empty = m.take_interval();
        assert_eq!(
            empty.entries[1].text(),
            "[UPDATE: Count=0, Max=0, Min=0, Avg=0, 50=0, 90=0, 99=0, 99.9=0, 99.99=0]"
        );
        let run = m.finish();
        let read = run.get("READ").unwrap();
        assert_eq!(read.count(), 12);
        assert_eq!(hdr::mean(&read.histogram), 12487.916666666666);
        assert_eq!(hdr::percentile(&read.histogram, 50.0), 2047);
    }

    #[test]
    fn legacy_histogram_summary() {
        let m = Measurements::new(MeasurementConfig {
            measurement_type: MeasurementType::Histogram,
            ..MeasurementConfig::default()
        });
        let c = m.client();
        c.record("READ", 100, None, Status::Ok);
        c.record("READ", 201, None, Status::Ok);
        assert_eq!(m.take_interval().text(), "[READ AverageLatency(us)=150.5] ");
        assert_eq!(m.take_interval().text(), " ");
        let run = m.finish();
        let b = run.get("READ").unwrap().buckets.clone().unwrap();
        assert_eq!((b.operations, b.min, b.max), (2, 100, 201));
    }

    #[test]
    fn recorders_work_across_threads() {
        let m = Measurements::new(MeasurementConfig::default());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = m.client();
                std::thread::spawn(move || {
                    for i in 0..1000u64 {
                        c.record("READ", i, None, Status::Ok);
                    }
                })
            })
            .collect();
        let mut seen = 0;
        for _ in 0..3 {
            seen += m
                .take_interval()
                .entries
                .iter()
                .map(|e| match e.stats {
                    SummaryStats::Hdr { count, .. } => count,
                    _ => 0,
                })
                .sum::<u64>();
        }
        for h in handles {
            h.join().unwrap();
        }
        let run = m.finish();
        assert_eq!(run.get("READ").unwrap().count(), 4000);
        assert!(seen <= 4000);
        assert_eq!(run.get("READ").unwrap().statuses, vec![(Status::Ok, 4000)]);
    }
}
