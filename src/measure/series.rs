//! The exact-latency measurement types YCSB offers beside its histograms: `timeseries` (the
//! average latency per `timeseries.granularity` ms, `OneMeasurementTimeSeries`) and `raw` (every
//! latency with its wall-clock time, `OneMeasurementRaw`).
//!
//! Each client slot keeps its own [`TimeSeries`] / [`RawLog`] only when the type asks for it
//! (an `Option` in the slot, so the other types pay one untaken branch per record); the status
//! task moves them into the run's aggregate, where they are added up.

/// One time unit of a time series: its start (ms after the measurement's first operation), its
/// operations and their summed latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesUnit {
    /// Start of the unit, ms after the measurement's first operation (a multiple of the granularity).
    pub start_ms: u64,
    /// Operations in the unit.
    pub count: u64,
    /// Σ latency (µs) in the unit.
    pub sum: i64,
}

impl SeriesUnit {
    /// The unit's average latency, as YCSB prints it.
    pub fn average(&self) -> f64 {
        self.sum as f64 / self.count as f64
    }
}

/// A time series of one measurement: its units in time order, and its exact totals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimeSeries {
    /// Units with at least one operation, ascending (YCSB prints no line for an empty unit).
    pub units: Vec<SeriesUnit>,
    /// Operations.
    pub operations: u64,
    /// Σ latency (µs).
    pub total_latency: i64,
    /// Lowest latency (µs), -1 before the first (YCSB's initial value).
    pub min: i64,
    /// Highest latency (µs), -1 before the first.
    pub max: i64,
}

impl TimeSeries {
    /// An empty series.
    pub fn new() -> TimeSeries {
        TimeSeries {
            min: -1,
            max: -1,
            ..TimeSeries::default()
        }
    }

    /// Records `us` at `elapsed_ms` after the measurement's first operation.
    pub(crate) fn record(&mut self, elapsed_ms: u64, granularity_ms: u64, us: i64) {
        let start_ms = elapsed_ms / granularity_ms * granularity_ms;
        match self.units.last_mut() {
            Some(u) if u.start_ms == start_ms => {
                u.count += 1;
                u.sum += us;
            }
            _ => self.add_unit(SeriesUnit {
                start_ms,
                count: 1,
                sum: us,
            }),
        }
        self.operations += 1;
        self.total_latency += us;
        self.max = self.max.max(us);
        if self.min < 0 || us < self.min {
            self.min = us;
        }
    }

    fn add_unit(&mut self, unit: SeriesUnit) {
        match self
            .units
            .binary_search_by_key(&unit.start_ms, |u| u.start_ms)
        {
            Ok(i) => {
                self.units[i].count += unit.count;
                self.units[i].sum += unit.sum;
            }
            Err(i) => self.units.insert(i, unit),
        }
    }

    /// Adds another client's (or interval's) series of the same measurement.
    pub(crate) fn add(&mut self, other: &TimeSeries) {
        for &u in &other.units {
            self.add_unit(u);
        }
        self.operations += other.operations;
        self.total_latency += other.total_latency;
        if other.operations > 0 {
            self.max = self.max.max(other.max);
            if self.min < 0 || (other.min >= 0 && other.min < self.min) {
                self.min = other.min;
            }
        }
    }
}

/// One raw data point: when the operation was measured (ms since the epoch) and its latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPoint {
    /// `System.currentTimeMillis()` when the latency was recorded.
    pub at_ms: i64,
    /// Latency (µs), capped at Java's `int`.
    pub us: u32,
}

/// Every latency of one measurement, in recording order per client.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawLog {
    /// The points.
    pub points: Vec<RawPoint>,
    /// Σ latency (µs).
    pub total_latency: i64,
}

impl RawLog {
    /// Records one point.
    pub(crate) fn record(&mut self, at_ms: i64, us: u32) {
        self.points.push(RawPoint { at_ms, us });
        self.total_latency += i64::from(us);
    }

    /// Appends another client's (or interval's) points.
    pub(crate) fn add(&mut self, other: &RawLog) {
        self.points.extend_from_slice(&other.points);
        self.total_latency += other.total_latency;
    }

    /// YCSB's raw data block: a header line, then `NAME,<ms>,<us>` per point in time order.
    pub(crate) fn data_block(&self, name: &str) -> String {
        let mut points = self.points.clone();
        points.sort_by_key(|p| p.at_ms);
        let mut out = format!("{name} latency raw data: op, timestamp(ms), latency(us)\n");
        for p in points {
            out.push_str(&format!("{name},{},{}\n", p.at_ms, p.us));
        }
        out
    }

    /// YCSB's summary values, in export order: `Min`, `Max`, then `p1` … `p99.99` taken at index
    /// `(int)(n × q)` of the latencies sorted ascending. Empty when there are no points.
    pub(crate) fn summary(&self) -> Vec<(&'static str, i64)> {
        let mut v: Vec<u32> = self.points.iter().map(|p| p.us).collect();
        if v.is_empty() {
            return Vec::new();
        }
        v.sort_unstable();
        let n = v.len();
        let at = |q: f64| i64::from(v[((n as f64 * q) as usize).min(n - 1)]);
        vec![
            ("Min", i64::from(v[0])),
            ("Max", i64::from(v[n - 1])),
            ("p1", at(0.01)),
            ("p5", at(0.05)),
            ("p50", at(0.5)),
            ("p90", at(0.9)),
            ("p95", at(0.95)),
            ("p99", at(0.99)),
            ("p99.9", at(0.999)),
            ("p99.99", at(0.9999)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_average_per_granularity_and_skip_empty_ones() {
        let mut a = TimeSeries::new();
        a.record(0, 1000, 100);
        a.record(999, 1000, 300);
        a.record(3500, 1000, 50);
        let mut b = TimeSeries::new();
        b.record(1200, 1000, 1000);
        b.record(3999, 1000, 150);
        a.add(&b);
        let units: Vec<(u64, f64)> = a.units.iter().map(|u| (u.start_ms, u.average())).collect();
        assert_eq!(units, [(0, 200.0), (1000, 1000.0), (3000, 100.0)]);
        assert_eq!(
            (a.operations, a.total_latency, a.min, a.max),
            (5, 1600, 50, 1000)
        );
        assert_eq!((TimeSeries::new().min, TimeSeries::new().max), (-1, -1));
    }

    #[test]
    fn raw_summary_indexes_the_sorted_list_as_ycsb() {
        let mut r = RawLog::default();
        for (i, us) in (1..=200u32).rev().enumerate() {
            r.record(1000 + i as i64, us);
        }
        let s = r.summary();
        assert_eq!(s[0], ("Min", 1));
        assert_eq!(s[1], ("Max", 200));
        // (int)(200 × 0.5) = 100 → the 101st smallest value.
        assert_eq!(s[4], ("p50", 101));
        assert_eq!(s[9], ("p99.99", 200));
        let block = r.data_block("READ");
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(
            lines[0],
            "READ latency raw data: op, timestamp(ms), latency(us)"
        );
        assert_eq!(lines[1], "READ,1000,200");
        assert_eq!(lines.len(), 201);
        assert!(RawLog::default().summary().is_empty());
    }
}
