//! YCSB's legacy `histogram` measurement type (`OneMeasurementHistogram`): 1-ms buckets,
//! exact mean/variance/min/max, kept for users who compare against old YCSB outputs.

/// One operation's 1-ms bucket histogram; mergeable across clients.
#[derive(Debug, Clone, PartialEq)]
pub struct BucketHistogram {
    /// Count per 1-ms bucket (`latency_us / 1000`).
    pub buckets: Vec<u64>,
    /// Latencies at or above `buckets.len()` ms.
    pub overflow: u64,
    /// Number of latencies recorded.
    pub operations: u64,
    /// Σ latency (Java `long`).
    pub total_latency: i64,
    /// Σ latency² (Java `double`).
    pub total_squared_latency: f64,
    /// Smallest latency, -1 when none (Java's initial value).
    pub min: i64,
    /// Largest latency, -1 when none.
    pub max: i64,
}

impl BucketHistogram {
    /// An empty histogram with `n` 1-ms buckets.
    pub(crate) fn new(n: usize) -> Self {
        BucketHistogram {
            buckets: vec![0; n],
            overflow: 0,
            operations: 0,
            total_latency: 0,
            total_squared_latency: 0.0,
            min: -1,
            max: -1,
        }
    }

    /// Records one latency (µs).
    pub(crate) fn record(&mut self, latency_us: i64) {
        let ms = (latency_us / 1000) as usize;
        match self.buckets.get_mut(ms) {
            Some(b) if latency_us >= 0 => *b += 1,
            _ => self.overflow += 1,
        }
        self.operations += 1;
        self.total_latency = self.total_latency.wrapping_add(latency_us);
        self.total_squared_latency += (latency_us as f64) * (latency_us as f64);
        if self.min < 0 || latency_us < self.min {
            self.min = latency_us;
        }
        if self.max < 0 || latency_us > self.max {
            self.max = latency_us;
        }
    }

    /// Adds another histogram's counts (same bucket count expected; extra buckets overflow).
    pub(crate) fn add(&mut self, other: &BucketHistogram) {
        for (i, &c) in other.buckets.iter().enumerate() {
            match self.buckets.get_mut(i) {
                Some(b) => *b += c,
                None => self.overflow += c,
            }
        }
        self.overflow += other.overflow;
        self.operations += other.operations;
        self.total_latency = self.total_latency.wrapping_add(other.total_latency);
        self.total_squared_latency += other.total_squared_latency;
        if other.min >= 0 && (self.min < 0 || other.min < self.min) {
            self.min = other.min;
        }
        if other.max >= 0 && (self.max < 0 || other.max > self.max) {
            self.max = other.max;
        }
    }

    /// Empties the histogram, keeping its bucket count.
    pub(crate) fn reset(&mut self) {
        let n = self.buckets.len();
        *self = BucketHistogram::new(n);
    }

    /// Exact mean (NaN when empty, as Java prints it).
    pub(crate) fn mean(&self) -> f64 {
        self.total_latency as f64 / self.operations as f64
    }

    /// `E[x²] - mean²` (NaN when empty).
    pub(crate) fn variance(&self) -> f64 {
        let mean = self.mean();
        self.total_squared_latency / self.operations as f64 - mean * mean
    }

    /// YCSB's 95th/99th lines: the first bucket whose cumulative fraction reaches the level,
    /// as `bucket * 1000`; a level that is only reached in the overflow yields no line.
    pub(crate) fn percentile_lines(&self) -> Vec<(&'static str, i64)> {
        let mut out = Vec::new();
        let mut counter = 0u64;
        let mut done95 = false;
        for (i, &c) in self.buckets.iter().enumerate() {
            counter += c;
            let frac = counter as f64 / self.operations as f64;
            if !done95 && frac >= 0.95 {
                out.push(("95thPercentileLatency(us)", i as i64 * 1000));
                done95 = true;
            }
            if frac >= 0.99 {
                out.push(("99thPercentileLatency(us)", i as i64 * 1000));
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_percentiles() {
        let mut h = BucketHistogram::new(1000);
        for v in [
            120, 250, 250, 999, 1500, 2047, 2048, 2049, 3001, 4097, 10000, 123456,
        ] {
            h.record(v);
        }
        assert_eq!(
            h.percentile_lines(),
            vec![
                ("95thPercentileLatency(us)", 123000),
                ("99thPercentileLatency(us)", 123000)
            ]
        );
        assert_eq!(h.min, 120);
        assert_eq!(h.max, 123456);
        let mut cleanup = BucketHistogram::new(1000);
        cleanup.record(3);
        assert_eq!(
            cleanup.percentile_lines(),
            vec![
                ("95thPercentileLatency(us)", 0),
                ("99thPercentileLatency(us)", 0)
            ]
        );
        assert_eq!(cleanup.mean(), 3.0);
        assert_eq!(cleanup.variance(), 0.0);
    }

    #[test]
    fn overflow_hides_percentiles() {
        let mut h = BucketHistogram::new(2);
        h.record(500);
        h.record(5000);
        assert_eq!(h.overflow, 1);
        assert!(h.percentile_lines().is_empty());
        let mut other = BucketHistogram::new(2);
        other.record(100);
        h.add(&other);
        assert_eq!((h.min, h.max, h.operations), (100, 5000, 3));
        assert!(BucketHistogram::new(2).mean().is_nan());
    }
}
