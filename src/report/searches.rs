//! Ratios of ceilings, each side measured by whole searches (`docs/ceiling.md`, "Ratios and
//! their intervals"). A search knows its ceiling only to its bracket: the achieved rate that
//! passed below it, the offered rate that failed above. So a ratio's interval holds the ratio
//! of the brackets, and with two or more searches on each side it is widened by the spread
//! between searches (Welch on the logarithms). Everything is on the log scale, so that routing
//! tax × sharding gain = net holds for the ratios, and their intervals are symmetric in it.

use super::stats::{ALPHA, Basis, Comparison, Interval, mean, welch};

/// One search's ceiling as the ratio needs it (`Outcome::bounds`): the achieved rate that passed
/// and the offered rate that failed (`None`: nothing failed above it, a lower bound only).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bounds {
    /// ops/s.
    pub passed: f64,
    /// ops/s.
    pub failed: Option<f64>,
}

/// The mean of the logarithms of the passing rates: the point of a side.
fn log_mean(side: &[Bounds]) -> Option<f64> {
    let logs: Vec<f64> = side.iter().map(|s| s.passed.ln()).collect();
    mean(&logs)
}

/// The geometric mean of the passing rates: a side's ceiling over its searches.
pub(crate) fn geometric_mean(side: &[Bounds]) -> Option<f64> {
    log_mean(side).map(f64::exp)
}

/// The mean of the logarithms of the failing rates; `None` when any search has none.
fn log_mean_failed(side: &[Bounds]) -> Option<f64> {
    let failed: Option<Vec<f64>> = side.iter().map(|s| s.failed.map(f64::ln)).collect();
    mean(&failed?)
}

/// The logs' variance of the mean (n − 1), and n.
fn variance_of_mean(side: &[Bounds]) -> Option<(f64, f64)> {
    let n = side.len() as f64;
    let m = log_mean(side)?;
    let var = side
        .iter()
        .map(|s| (s.passed.ln() - m).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    (side.len() >= 2).then_some((var / n, n))
}

/// Welch's test on the logarithms: the half-width of the 95 % interval, the p-value and the
/// degrees of freedom; `None` below two searches on either side.
fn spread(a: &[Bounds], b: &[Bounds], diff: f64) -> Option<(f64, f64, f64)> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let ((va, na), (vb, nb)) = (variance_of_mean(a)?, variance_of_mean(b)?);
    let w = welch(diff, (va, na), (vb, nb));
    let q = StudentsT::new(0.0, 1.0, w.df)
        .map(|t| t.inverse_cdf(1.0 - ALPHA / 2.0))
        .unwrap_or(f64::INFINITY);
    Some((q * (va + vb).sqrt(), w.p, w.df))
}

/// The ceilings of `a` over those of `b`; `None` when a side has no search or a rate that is
/// not positive.
pub(crate) fn compare(a: &[Bounds], b: &[Bounds]) -> Option<Comparison> {
    if [a, b]
        .iter()
        .any(|side| side.iter().any(|s| s.passed <= 0.0))
    {
        return None;
    }
    let diff = log_mean(a)? - log_mean(b)?;
    let (half, p, df) = spread(a, b, diff).unwrap_or((0.0, 1.0, 0.0));
    let lo = log_mean_failed(b).map(|fb| (log_mean(a).unwrap_or(0.0) - fb - half).exp());
    let hi = log_mean_failed(a).map(|fa| (fa - log_mean(b).unwrap_or(0.0) + half).exp());
    let interval = match (lo, hi) {
        (Some(lo), Some(hi)) => Interval::Bounded { lo, hi },
        (None, Some(hi)) => Interval::UpTo { hi },
        (Some(lo), None) => Interval::From { lo },
        (None, None) => Interval::Wide,
    };
    let n = a.len().min(b.len());
    let excludes_one = lo.is_some_and(|l| l > 1.0) || hi.is_some_and(|h| h < 1.0);
    Some(Comparison {
        ratio: diff.exp(),
        p,
        df,
        significant: n >= 2 && excludes_one,
        faster: diff > 0.0,
        interval,
        n,
        basis: Basis::Searches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(passed: f64, failed: f64) -> Bounds {
        Bounds {
            passed,
            failed: Some(failed),
        }
    }

    #[test]
    fn one_search_each_gives_the_brackets_ratio_and_no_test() {
        let c = compare(&[s(1_450.0, 1_520.0)], &[s(1_470.0, 1_540.0)]).expect("a ratio");
        assert!((c.ratio - 1_450.0 / 1_470.0).abs() < 1e-9);
        let Interval::Bounded { lo, hi } = c.interval else {
            panic!("{c:?}")
        };
        assert!((lo - 1_450.0 / 1_540.0).abs() < 1e-9 && (hi - 1_520.0 / 1_470.0).abs() < 1e-9);
        assert!(!c.significant && !c.tested());
        assert_eq!(c.words(), "bracket 0.94–1.03×, one search each: not tested");
    }

    #[test]
    fn the_interval_holds_the_true_ratio_of_noisy_searches_and_is_never_narrower_than_the_brackets()
    {
        // Capacities 1,500 and 3,000: every search's bracket holds its capacity.
        let one = [
            s(1_440.0, 1_510.0),
            s(1_470.0, 1_545.0),
            s(1_455.0, 1_530.0),
        ];
        let two = [
            s(2_900.0, 3_050.0),
            s(2_960.0, 3_100.0),
            s(2_870.0, 3_020.0),
        ];
        let c = compare(&two, &one).expect("a ratio");
        let Interval::Bounded { lo, hi } = c.interval else {
            panic!("{c:?}")
        };
        assert!(lo < 2.0 && 2.0 < hi, "{lo}–{hi}");
        assert!(c.significant && c.faster, "{c:?}");
        assert!(hi / lo >= 1.05 * 1.04, "at least the brackets: {lo}–{hi}");
        // The same capacity on both sides: not significant, 1× inside.
        let c = compare(&one, &one).expect("a ratio");
        assert!(!c.significant, "{c:?}");
    }

    #[test]
    fn tax_times_gain_is_net() {
        let single = [s(1_480.0, 1_550.0), s(1_500.0, 1_560.0)];
        let one = [s(1_400.0, 1_470.0), s(1_420.0, 1_490.0)];
        let two = [s(2_800.0, 2_950.0), s(2_830.0, 2_990.0)];
        let (tax, gain, net) = (
            compare(&one, &single).map(|c| c.ratio).unwrap_or(0.0),
            compare(&two, &one).map(|c| c.ratio).unwrap_or(0.0),
            compare(&two, &single).map(|c| c.ratio).unwrap_or(0.0),
        );
        assert!((tax * gain - net).abs() < 1e-12, "{tax} × {gain} ≠ {net}");
    }

    #[test]
    fn a_lower_bound_only_gives_an_open_interval() {
        let limited = [Bounds {
            passed: 3_000.0,
            failed: None,
        }];
        let c = compare(&limited, &[s(1_500.0, 1_560.0)]).expect("a ratio");
        assert!(
            matches!(c.interval, Interval::From { lo } if (lo - 3_000.0 / 1_560.0).abs() < 1e-9)
        );
    }
}
