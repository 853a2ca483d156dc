//! The pure half of the ceiling search: the latency bound, the judgement of one step, and which
//! rate to offer next (README, "Glossary": ceiling, bound). The driver in `ceiling::driver` runs the
//! steps; everything here is decided from numbers, so it is tested on fixed inputs.

/// An achieved rate below this share of the offered one means the server did not keep up.
pub(crate) const ACHIEVED_SHARE: f64 = 0.95;

/// Each climbing step offers this many times the last passing rate.
const GROWTH: f64 = 1.5;

/// At most this many climbing, descending and bisecting steps (confirmations come on top).
pub(crate) const MAX_STEPS: usize = 24;

pub(crate) use crate::experiment::slo::{Bound, micros};

/// What one step measured, as the judgement needs it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Measured {
    /// Rate offered (ops/s).
    pub offered: f64,
    /// Rate achieved (ops/s).
    pub achieved: f64,
    /// The intended latency at each bound's quantile, µs, in the bounds' order.
    pub at_bounds_us: Vec<u64>,
    /// Why the step's result is invalid, if it is.
    pub invalid: Option<String>,
    /// The server stalled during the step.
    pub stalled: bool,
    /// Failed operations over all operations.
    pub error_share: f64,
    /// `microshard.maxerrorrate`.
    pub max_error_share: f64,
}

/// Why a step did not sustain its rate, or `None` when it did.
pub(crate) fn judge(m: &Measured, bounds: &[Bound]) -> Option<String> {
    if let Some(why) = &m.invalid {
        return Some(format!("invalid: {why}"));
    }
    if m.stalled {
        return Some("the server stalled".into());
    }
    if m.error_share > m.max_error_share {
        return Some(format!(
            "{:.1} % of operations failed (more than {:.1} %)",
            m.error_share * 100.0,
            m.max_error_share * 100.0
        ));
    }
    if m.achieved < ACHIEVED_SHARE * m.offered {
        return Some(format!(
            "achieved {} of {} ops/s ({:.0} %)",
            thousands(m.achieved),
            thousands(m.offered),
            m.achieved / m.offered * 100.0
        ));
    }
    bounds
        .iter()
        .zip(&m.at_bounds_us)
        .find(|(b, at)| **at > b.limit_us)
        .map(|(b, at)| {
            format!(
                "{} {} > {} at {} ops/s",
                b.name,
                micros(*at),
                micros(b.limit_us),
                thousands(m.offered)
            )
        })
}

/// `12,345` ops/s, rounded.
pub(crate) fn thousands(rate: f64) -> String {
    crate::runner::verdict::thousands(rate.round().max(0.0) as u64)
}

/// Where the search stands: the rates that passed and the lowest that failed. A rate that passed
/// once and failed later (a confirmation) counts as failed: only passes below every failure count.
#[derive(Debug, Clone, Default)]
pub(crate) struct Search {
    /// Stop bisecting when the gap is this share of the passing rate (`--precision`).
    pub precision: f64,
    /// Below this rate the search stops descending: no rate met the bound.
    pub floor: f64,
    /// Every rate that passed.
    passed: Vec<f64>,
    /// Lowest failing rate so far.
    pub fail: Option<f64>,
}

impl Search {
    /// A search that bisects to `precision` and descends no lower than `floor`.
    pub(crate) fn new(precision: f64, floor: f64) -> Search {
        Search {
            precision,
            floor,
            ..Default::default()
        }
    }

    /// Records one step's outcome.
    pub(crate) fn record(&mut self, rate: f64, passed: bool) {
        if passed {
            self.passed.push(rate);
        } else {
            self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
        }
    }

    /// The highest rate that passed below every failure.
    pub(crate) fn pass(&self) -> Option<f64> {
        self.passed
            .iter()
            .copied()
            .filter(|p| self.fail.is_none_or(|f| *p < f))
            .reduce(f64::max)
    }

    /// The next rate to offer: climb geometrically past every pass, halve below every fail, then
    /// bisect between them; `None` when the gap is within `precision` or nothing passed above
    /// the floor.
    pub(crate) fn next(&self) -> Option<f64> {
        match (self.pass(), self.fail) {
            (None, None) => None,
            (Some(p), None) => Some(p * GROWTH),
            (None, Some(f)) => Some(f / 2.0).filter(|r| *r >= self.floor),
            (Some(p), Some(f)) => ((f - p) / p > self.precision).then_some((p + f) / 2.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_read_percentiles_and_units_and_refuse_the_rest() {
        let b = Bound::parse_list("p99=10ms, p99.9=1s,p50=500us").unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!((b[0].quantile, b[0].limit_us), (0.99, 10_000));
        assert!((b[1].quantile - 0.999).abs() < 1e-12);
        assert_eq!(b[1].limit_us, 1_000_000);
        assert_eq!(b[2].limit_us, 500);
        assert_eq!(b[0].shown(), "p99 ≤ 10.0 ms");
        for bad in ["p99", "q99=1ms", "p100=1ms", "p99=fast", "p99=0ms", ""] {
            assert!(Bound::parse_list(bad).is_err(), "{bad}");
        }
    }

    fn step(offered: f64, achieved: f64, p99_us: u64) -> Measured {
        Measured {
            offered,
            achieved,
            at_bounds_us: vec![p99_us],
            max_error_share: 0.01,
            ..Default::default()
        }
    }

    #[test]
    fn a_step_fails_on_its_first_broken_condition_with_the_numbers() {
        let bounds = Bound::parse_list("p99=10ms").unwrap();
        assert_eq!(judge(&step(1000.0, 990.0, 9_000), &bounds), None);
        assert_eq!(
            judge(&step(4400.0, 4390.0, 31_000), &bounds).as_deref(),
            Some("p99 31.0 ms > 10.0 ms at 4,400 ops/s")
        );
        assert_eq!(
            judge(&step(2000.0, 1700.0, 1_000), &bounds).as_deref(),
            Some("achieved 1,700 of 2,000 ops/s (85 %)")
        );
        let mut stalled = step(1000.0, 1000.0, 1);
        stalled.stalled = true;
        assert_eq!(
            judge(&stalled, &bounds).as_deref(),
            Some("the server stalled")
        );
        let mut errors = step(1000.0, 1000.0, 1);
        errors.error_share = 0.05;
        assert!(
            judge(&errors, &bounds)
                .unwrap_or_default()
                .starts_with("5.0 % of operations failed")
        );
    }

    #[test]
    fn the_search_climbs_bisects_to_the_precision_and_stops() {
        // A server that sustains exactly 1,900 ops/s.
        let mut s = Search::new(0.05, 1.0);
        let mut rate = 500.0;
        let mut steps = 0;
        loop {
            s.record(rate, rate <= 1_900.0);
            steps += 1;
            match s.next() {
                Some(r) => rate = r,
                None => break,
            }
        }
        let (p, f) = (s.pass().unwrap(), s.fail.unwrap());
        assert!(p <= 1_900.0 && f > 1_900.0, "{p} {f}");
        assert!((f - p) / p <= 0.05, "{p} {f}");
        assert!(p > 1_800.0, "{p}");
        assert!(steps < MAX_STEPS, "{steps}");
    }

    #[test]
    fn a_pass_that_later_failed_no_longer_counts() {
        let mut s = Search::new(0.05, 1.0);
        s.record(1_000.0, true);
        s.record(1_500.0, true);
        s.record(2_000.0, false);
        assert_eq!(s.pass(), Some(1_500.0));
        // A confirmation of 1,500 failed: the search goes on between 1,000 and 1,500.
        s.record(1_500.0, false);
        assert_eq!(s.pass(), Some(1_000.0));
        assert_eq!(s.next(), Some(1_250.0));
    }

    #[test]
    fn the_search_descends_and_gives_up_at_the_floor() {
        let mut s = Search::new(0.05, 10.0);
        let mut rate = 1_000.0;
        while let Some(r) = {
            s.record(rate, false);
            s.next()
        } {
            rate = r;
        }
        assert!(s.pass().is_none());
        assert!((10.0..20.0).contains(&rate), "{rate}");
    }
}
