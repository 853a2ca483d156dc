//! HdrHistogram statistics computed exactly as YCSB's HdrHistogram 2.1.12 computes them.
//!
//! The `hdrhistogram` crate stores values the same way (3 significant digits, auto-resize), but
//! two of its statistics differ from Java: `mean()` divides every bucket term by the total before
//! summing (different rounding), and `value_at_quantile()` neither steps the percentile one ulp
//! down nor divides by 100 in Java's order. We therefore compute every reported number from the
//! buckets here, following the Java code.

use hdrhistogram::Histogram;

/// Significant digits YCSB gives its histograms.
pub(crate) const SIGNIFICANT_DIGITS: u8 = 3;

/// A new, empty, auto-resizing histogram shaped like YCSB's (lowest discernible value 1, 3 digits).
pub fn new_histogram() -> Histogram<u64> {
    // 3 significant digits is always a valid configuration.
    let mut h = Histogram::<u64>::new(SIGNIFICANT_DIGITS)
        .unwrap_or_else(|_| unreachable!("3 significant digits is a valid histogram"));
    h.auto(true);
    h
}

/// `getMinValue()`: 0 if empty or a zero was recorded, else the lowest equivalent of the minimum.
pub(crate) fn min(h: &Histogram<u64>) -> u64 {
    match h.iter_recorded().next() {
        None => 0,
        Some(v) => h.lowest_equivalent(v.value_iterated_to()),
    }
}

/// `getMaxValue()`: the highest equivalent of the maximum, 0 if empty or only zeros.
pub(crate) fn max(h: &Histogram<u64>) -> u64 {
    if h.is_empty() {
        return 0;
    }
    let m = h.max();
    if m == 0 { 0 } else { h.highest_equivalent(m) }
}

/// `getMean()`: Σ median-equivalent × count over buckets in ascending order, then ÷ total.
pub(crate) fn mean(h: &Histogram<u64>) -> f64 {
    let total = h.len();
    if total == 0 {
        return 0.0;
    }
    // Summed in bucket order from the first term, as Java's loop adds them.
    let sum: f64 = (h.iter_recorded())
        .map(|v| h.median_equivalent(v.value_iterated_to()) as f64 * v.count_at_value() as f64)
        .sum();
    sum / total as f64
}

/// `getValueAtPercentile(p)` of HdrHistogram 2.1.12: `nextDown(p)` clamped to [0, 100], target
/// count `max(1, ceil(q * total / 100))` (in that order of operations), first bucket whose cumulative count reaches it,
/// reported as its highest equivalent value (lowest when `p == 0`). 0 when empty.
pub fn percentile(h: &Histogram<u64>, p: f64) -> u64 {
    let total = h.len();
    if total == 0 {
        return 0;
    }
    // Java's `Math.nextAfter(p, -∞)`.
    let q = p.next_down().clamp(0.0, 100.0);
    let fractional = (q * total as f64) / 100.0;
    let target = (fractional.ceil() as u64).max(1);
    let mut cumulative = 0u64;
    for v in h.iter_recorded() {
        cumulative += v.count_at_value();
        if cumulative >= target {
            let value = v.value_iterated_to();
            return if p == 0.0 {
                h.lowest_equivalent(value)
            } else {
                h.highest_equivalent(value)
            };
        }
    }
    0
}

/// The (value, count) pairs YCSB's verbose export prints: each recorded bucket's highest
/// equivalent value (capped at `i32::MAX` as Java's `int` cast does) and its count.
pub(crate) fn recorded_buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| {
            (
                v.value_iterated_to().min(i32::MAX as u64),
                v.count_at_value(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = new_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn spec_read_example() {
        let h = hist(&[
            120, 250, 250, 999, 1500, 2047, 2048, 2049, 3001, 4097, 10000, 123456,
        ]);
        assert_eq!(h.len(), 12);
        assert_eq!(mean(&h), 12487.916666666666);
        assert_eq!(min(&h), 120);
        assert_eq!(max(&h), 123519);
        assert_eq!(percentile(&h, 50.0), 2047);
        assert_eq!(percentile(&h, 95.0), 123519);
        assert_eq!(percentile(&h, 99.0), 123519);
    }

    #[test]
    fn spec_update_example() {
        let values: Vec<u64> = (1..=100).map(|i| i * 100).collect();
        let h = hist(&values);
        assert_eq!(mean(&h), 5051.42);
        assert_eq!(min(&h), 100);
        assert_eq!(max(&h), 10007);
        assert_eq!(percentile(&h, 50.0), 5003);
        assert_eq!(percentile(&h, 95.0), 9503);
        assert_eq!(percentile(&h, 99.0), 9903);
    }

    #[test]
    fn quantisation_matches_spec_formula() {
        // b = 53 - nlz(v | 2047); lowest = (v >> b) << b; highest = lowest + 2^b - 1.
        let h = new_histogram();
        for v in [
            0u64,
            1,
            2047,
            2048,
            2049,
            4095,
            4096,
            123456,
            10_000_000,
            1 << 40,
        ] {
            let b = 53 - (v | 2047).leading_zeros() as i64;
            let b = b.max(0) as u32;
            let lowest = (v >> b) << b;
            assert_eq!(h.lowest_equivalent(v), lowest, "lowest {v}");
            assert_eq!(
                h.highest_equivalent(v),
                lowest + (1u64 << b) - 1,
                "highest {v}"
            );
        }
    }

    #[test]
    fn empty_and_zero() {
        let empty = new_histogram();
        assert_eq!((min(&empty), max(&empty), mean(&empty)), (0, 0, 0.0));
        assert_eq!(percentile(&empty, 99.0), 0);
        let h = hist(&[0, 5000]);
        assert_eq!(min(&h), 0);
        assert_eq!(max(&h), 5003);
        assert_eq!(percentile(&h, 0.0), 0);
        assert_eq!(percentile(&h, 50.0), 0);
        assert_eq!(percentile(&h, 50.1), 5003);
        let zeros = hist(&[0, 0]);
        assert_eq!((min(&zeros), max(&zeros)), (0, 0));
    }

    #[test]
    fn next_down_avoids_overrun() {
        // 10 values: 90th percentile target is exactly 9 thanks to nextDown; without it,
        // rounding noise could ask for a 10th value.
        let h = hist(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(percentile(&h, 90.0), 9);
        assert_eq!(percentile(&h, 100.0), 10);
        assert_eq!(percentile(&h, 150.0), 10);
        assert_eq!(percentile(&h, 0.0), 1);
        // Where the crate's own quantile lookup does not step down, we still agree with Java.
        let many: Vec<u64> = (1..=1000).collect();
        let h = hist(&many);
        assert_eq!(percentile(&h, 99.9), 999);
    }

    #[test]
    fn verbose_buckets_use_highest_equivalent() {
        let h = hist(&[3, 3, 5000]);
        assert_eq!(recorded_buckets(&h), vec![(3, 2), (5003, 1)]);
    }

    /// An independent model of HdrHistogram 2.1.12 with 3 digits (the spec's formulas),
    /// over a plain sorted list of values.
    mod model {
        pub(crate) fn shift(v: u64) -> u32 {
            (53 - (v | 2047).leading_zeros() as i64).max(0) as u32
        }
        pub(crate) fn lowest(v: u64) -> u64 {
            (v >> shift(v)) << shift(v)
        }
        pub(crate) fn highest(v: u64) -> u64 {
            lowest(v) + (1u64 << shift(v)) - 1
        }
        pub(crate) fn median(v: u64) -> u64 {
            lowest(v) + ((1u64 << shift(v)) >> 1)
        }
        /// (bucket lowest value, count), ascending.
        pub(crate) fn buckets(values: &[u64]) -> Vec<(u64, u64)> {
            let mut lows: Vec<u64> = values.iter().map(|&v| lowest(v)).collect();
            lows.sort_unstable();
            let mut out: Vec<(u64, u64)> = Vec::new();
            for l in lows {
                match out.last_mut() {
                    Some((b, c)) if *b == l => *c += 1,
                    _ => out.push((l, 1)),
                }
            }
            out
        }
        pub(crate) fn mean(values: &[u64]) -> f64 {
            let sum: f64 = buckets(values)
                .iter()
                .map(|&(b, c)| median(b) as f64 * c as f64)
                .sum();
            sum / values.len() as f64
        }
        pub(crate) fn percentile(values: &[u64], p: f64) -> u64 {
            let q = p.next_down().clamp(0.0, 100.0);
            let target = ((q * values.len() as f64 / 100.0).ceil() as u64).max(1);
            let mut cum = 0;
            for (b, c) in buckets(values) {
                cum += c;
                if cum >= target {
                    return if p == 0.0 { lowest(b) } else { highest(b) };
                }
            }
            0
        }
    }

    proptest::proptest! {
        #[test]
        fn stats_match_the_model(
            values in proptest::collection::vec(
                proptest::prop_oneof![0u64..3000, 0u64..200_000, 0u64..50_000_000],
                1..200,
            ),
            split in 0usize..200,
        ) {
            // Record in two histograms and add them, as the registry does across clients.
            let split = split.min(values.len());
            let mut a = hist(&values[..split]);
            let b = hist(&values[split..]);
            a.add(&b).unwrap();
            let min_v = *values.iter().min().unwrap();
            let max_v = *values.iter().max().unwrap();
            let expected_min = if min_v == 0 { 0 } else { model::lowest(min_v) };
            let expected_max = if max_v == 0 { 0 } else { model::highest(max_v) };
            proptest::prop_assert_eq!(a.len(), values.len() as u64);
            proptest::prop_assert_eq!(min(&a), expected_min);
            proptest::prop_assert_eq!(max(&a), expected_max);
            proptest::prop_assert_eq!(mean(&a), model::mean(&values));
            for p in [0.0, 1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0] {
                proptest::prop_assert_eq!(percentile(&a, p), model::percentile(&values, p), "p{}", p);
            }
        }
    }
}
