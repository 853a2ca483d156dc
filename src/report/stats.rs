//! Small statistics for repeated measurements: mean, spread, Welch's t-test, and the one
//! comparison every sentence and cell of a report quotes ([`compare`]).
//!
//! Welch's test (unequal variances) is the honest default for throughput samples from
//! different topologies; the p-value comes from Student's t distribution (`statrs::StudentsT`).
//! The ratio's interval is Fieller's, at Welch's degrees of freedom and with Welch's variances, so that it excludes 1×
//! exactly when the test is significant: a report never says "significant" beside an interval
//! that contains 1×.

use serde::Serialize;

/// Significance level of every comparison (Welch's t-test, two-sided; 95 % intervals).
pub(crate) const ALPHA: f64 = 0.05;

/// Below this many repetitions on either side a comparison is said to be fragile: with n=2
/// Welch's test has one or two degrees of freedom and one repetition more can turn it over.
const STURDY_N: usize = 3;

/// Arithmetic mean; `None` for no samples.
pub(crate) fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Lowest and highest sample (infinities for no samples).
pub(crate) fn range(xs: &[f64]) -> (f64, f64) {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    (lo, xs.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

/// Sample standard deviation (n − 1); `None` with fewer than two samples.
pub(crate) fn stddev(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
    Some(var.sqrt())
}

/// The outcome of Welch's two-sample t-test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Welch {
    /// The t statistic (a − b).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's t-test on a difference of means, from each side's variance of the mean and count.
pub(crate) fn welch(diff: f64, (va, na): (f64, f64), (vb, nb): (f64, f64)) -> Welch {
    let se2 = va + vb;
    if se2 <= 0.0 {
        // No variance at all: any difference is certain, none is none.
        let p = if diff.abs() > 0.0 { 0.0 } else { 1.0 };
        let t = if p == 0.0 {
            diff.signum() * f64::INFINITY
        } else {
            0.0
        };
        let df = na + nb - 2.0;
        return Welch { t, df, p };
    }
    let t = diff / se2.sqrt();
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let p = student_t_two_sided_p(t, df);
    Welch { t, df, p }
}

/// A sample's squared standard error and size; `None` with fewer than two values.
fn variance_of_mean(xs: &[f64]) -> Option<(f64, f64)> {
    Some((stddev(xs)?.powi(2) / xs.len() as f64, xs.len() as f64))
}

/// The 95 % confidence interval of a ratio of means.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Interval {
    /// Both ends are positive ratios.
    Bounded {
        /// Lower end.
        lo: f64,
        /// Upper end.
        hi: f64,
    },
    /// The interval reaches zero: only its upper end says something (a throughput ratio is
    /// never negative, so nothing is clipped to show it).
    UpTo {
        /// Upper end.
        hi: f64,
    },
    /// Unbounded above: only its lower end says something (a ceiling known only from below).
    From {
        /// Lower end.
        lo: f64,
    },
    /// Unbounded: the reference's mean is not known well enough to divide by.
    Wide,
}

/// What a comparison's interval and test are made of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Repeated measurements of each side (Welch's test, Fieller's interval).
    #[default]
    Repetitions,
    /// Whole ceiling searches of each side: the interval holds every search's bracket and the
    /// spread between searches (`report::searches`).
    Searches,
}

/// What Welch's test says of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Difference {
    /// Significantly higher throughput than the reference.
    Faster,
    /// Significantly lower throughput than the reference.
    Slower,
    /// Not significantly different from the reference.
    NotSignificant,
}

/// One topology's throughput against a reference's (the baseline, the previous topology, the
/// same cell in another experiment): the ratio of means, its interval, Welch's test and its
/// verdict. Every sentence and cell that states a comparison quotes this value, so they agree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Comparison {
    /// Mean over the reference's mean.
    pub ratio: f64,
    /// Two-sided p-value of Welch's t-test.
    pub p: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// p < [`ALPHA`].
    pub significant: bool,
    /// The mean is above the reference's (the direction of a significant difference).
    pub faster: bool,
    /// The ratio's 95 % interval (Fieller's, consistent with the test).
    pub interval: Interval,
    /// Repetitions on the smaller side.
    pub n: usize,
    /// What the interval and the test are made of.
    pub basis: Basis,
}

/// Compares samples `a` with the reference samples `b`; `None` when either has fewer than two
/// values (nothing can be tested) or `b`'s mean is not positive (nothing to divide by).
pub(crate) fn compare(a: &[f64], b: &[f64]) -> Option<Comparison> {
    let (ma, mb) = (mean(a)?, mean(b)?);
    let ((va, na), (vb, nb)) = (variance_of_mean(a)?, variance_of_mean(b)?);
    if mb <= 0.0 {
        return None;
    }
    let w = welch(ma - mb, (va, na), (vb, nb));
    Some(Comparison {
        ratio: ma / mb,
        p: w.p,
        df: w.df,
        significant: w.p < ALPHA,
        faster: w.t > 0.0,
        interval: fieller((ma, va), (mb, vb), w.df),
        n: a.len().min(b.len()),
        basis: Basis::Repetitions,
    })
}

/// Fieller's interval of `ma / mb` from each mean and its squared standard error: every ρ with
/// |ma − ρ·mb| ≤ q·√(va + ρ²·vb), q being Student's 97.5 % quantile at Welch's `df`. At ρ = 1
/// the inequality is Welch's test itself, so 1× lies outside exactly when p < [`ALPHA`].
fn fieller((ma, va): (f64, f64), (mb, vb): (f64, f64), df: f64) -> Interval {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if va + vb <= 0.0 {
        let r = ma / mb;
        return Interval::Bounded { lo: r, hi: r };
    }
    let Ok(t) = StudentsT::new(0.0, 1.0, df) else {
        return Interval::Wide;
    };
    let q2 = t.inverse_cdf(1.0 - ALPHA / 2.0).powi(2);
    // (mb² − q²vb)·ρ² − 2·ma·mb·ρ + (ma² − q²va) ≤ 0
    let a = mb * mb - q2 * vb;
    let half_b = -ma * mb;
    let c = ma * ma - q2 * va;
    let disc = half_b * half_b - a * c;
    if a <= 0.0 || disc < 0.0 {
        return Interval::Wide;
    }
    let (lo, hi) = ((-half_b - disc.sqrt()) / a, (-half_b + disc.sqrt()) / a);
    if lo <= 0.0 {
        Interval::UpTo { hi }
    } else {
        Interval::Bounded { lo, hi }
    }
}

impl Comparison {
    /// What the test says: faster, slower or not significantly different.
    pub(crate) fn difference(&self) -> Difference {
        match (self.significant, self.faster) {
            (true, true) => Difference::Faster,
            (true, false) => Difference::Slower,
            (false, _) => Difference::NotSignificant,
        }
    }

    /// `p=0.032`, or `p < 0.001` (never `p=0.000`); `one search each: not tested` without a
    /// test.
    pub(crate) fn p_words(&self) -> String {
        if !self.tested() {
            "one search each: not tested".into()
        } else if self.p < 0.001 {
            "p < 0.001".into()
        } else {
            format!("p={:.3}", self.p)
        }
    }

    /// `95 % CI 1.80–2.00×`, `95 % CI up to 0.90×`, or `95 % CI wide: n=2`; of ceiling
    /// searches, `bracket 0.91–1.10×` (one search each) or `95 % CI 0.89–1.12× incl. the
    /// brackets`.
    pub(crate) fn interval_words(&self) -> String {
        let name = match (self.basis, self.tested()) {
            (Basis::Searches, false) => "bracket",
            _ => "95 % CI",
        };
        let brackets = match (self.basis, self.tested()) {
            (Basis::Searches, true) => " incl. the brackets",
            _ => "",
        };
        match self.interval {
            Interval::Bounded { lo, hi } => format!("{name} {lo:.2}–{hi:.2}×{brackets}"),
            Interval::UpTo { hi } => format!("{name} up to {hi:.2}×{brackets}"),
            Interval::From { lo } => format!("{name} from {lo:.2}×{brackets}"),
            Interval::Wide => format!("{name} wide: n={}", self.n),
        }
    }

    /// Whether a test was made: two or more repetitions or searches on each side.
    pub(crate) fn tested(&self) -> bool {
        self.basis == Basis::Repetitions || self.n >= 2
    }

    /// `; n=2: fragile` when too few repetitions make the verdict easy to turn over (and the
    /// interval's words do not already name n).
    pub(crate) fn fragile_words(&self) -> String {
        match (self.n < STURDY_N, self.interval) {
            _ if !self.tested() => String::new(),
            (true, Interval::Wide) | (false, _) => String::new(),
            (true, _) => format!("; n={}: fragile", self.n),
        }
    }

    /// `95 % CI 1.80–2.00×, p=0.012`, with `; n=2: fragile` when it is: the parenthesis of a
    /// sentence whose own words already say what the test found.
    pub(crate) fn detail(&self) -> String {
        format!(
            "{}, {}{}",
            self.interval_words(),
            self.p_words(),
            self.fragile_words()
        )
    }

    /// `95 % CI 1.80–2.00×, significant, p=0.012` (and `; n=2: fragile`): [`Comparison::detail`]
    /// with the test's verdict, for a sentence that does not say it.
    pub(crate) fn words(&self) -> String {
        if !self.tested() {
            return self.detail();
        }
        format!(
            "{}, {}, {}{}",
            self.interval_words(),
            if self.significant {
                "significant"
            } else {
                "not significant"
            },
            self.p_words(),
            self.fragile_words()
        )
    }

    /// The `significant` cell of a table: `yes, faster (95 % CI 1.80–2.00×, p=0.012)` or
    /// `no (…)`, the answer with [`Comparison::detail`].
    pub(crate) fn cell(&self) -> String {
        let answer = match self.difference() {
            _ if !self.tested() => "not tested",
            Difference::Faster => "yes, faster",
            Difference::Slower => "yes, slower",
            Difference::NotSignificant => "no",
        };
        format!("{answer} ({})", self.detail())
    }
}

/// Two-sided p-value of Student's t with `df` degrees of freedom (statrs' Student's t
/// distribution: 2 × P(T > |t|)).
pub(crate) fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if !t.is_finite() {
        return 0.0;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => (2.0 * dist.sf(t.abs())).clamp(0.0, 1.0),
        Err(_) => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The comparison of `a` with `b`, which these tests know exists.
    fn cmp(a: &[f64], b: &[f64]) -> Comparison {
        compare(a, b).unwrap_or_else(|| panic!("no comparison of {a:?} with {b:?}"))
    }

    #[test]
    fn the_ratio_interval_brackets_the_ratio() {
        let a = [9000.0, 9200.0, 9100.0];
        let b = [27000.0, 28000.0, 27500.0];
        let c = cmp(&a, &b);
        let r = 9100.0 / 27500.0;
        assert!((c.ratio - r).abs() < 1e-12);
        let Interval::Bounded { lo, hi } = c.interval else {
            panic!("{c:?}")
        };
        assert!(lo < r && r < hi && hi - lo < 0.1, "{lo} {hi}");
        assert_eq!(c.difference(), Difference::Slower);
        assert_eq!(compare(&a[..1], &b), None, "one repetition is not tested");
        assert_eq!(compare(&a, &[0.0, 0.0]), None, "nothing to divide by");
    }

    /// Fieller's interval at Welch's df excludes 1× exactly when Welch's test is significant,
    /// over many pairs of small samples (a fixed pseudo-random sequence).
    #[test]
    fn the_interval_agrees_with_the_test() {
        let mut state = 0x2545_f491_u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut significant, mut wide) = (0, 0);
        for _ in 0..2000 {
            let n = 2 + (next() * 3.0) as usize;
            let (m, spread) = (500.0 + next() * 2000.0, next() * 800.0);
            let a: Vec<f64> = (0..n).map(|_| m + spread * (next() - 0.5)).collect();
            let b: Vec<f64> = (0..n).map(|_| 1000.0 + 300.0 * (next() - 0.5)).collect();
            let c = cmp(&a, &b);
            let excludes_one = match c.interval {
                Interval::Bounded { lo, hi } => !(lo..=hi).contains(&1.0),
                Interval::UpTo { hi } => hi < 1.0,
                Interval::From { lo } => lo > 1.0,
                Interval::Wide => {
                    wide += 1;
                    continue;
                }
            };
            assert_eq!(excludes_one, c.significant, "{a:?} vs {b:?}: {c:?}");
            significant += usize::from(c.significant);
        }
        assert!(significant > 200 && significant < 1800, "{significant}");
        assert!(wide < 1000, "{wide}");
    }

    /// A significant ratio of 0.48× at n=2 (t ≈ 5.6, df ≈ 2) was shown with
    /// "95 % CI 0.00–1.04×". Its interval now lies below 1× and is never clipped at zero.
    #[test]
    fn a_significant_ratio_has_an_interval_without_one() {
        let single = [13735.0, 15665.0];
        let two = [6091.0, 8021.0];
        let c = cmp(&two, &single);
        assert!((c.ratio - 0.48).abs() < 0.005, "{c:?}");
        assert!(c.significant && c.p > 0.02 && c.p < 0.04, "{c:?}");
        let words = c.words();
        assert!(!words.contains("0.00"), "{words}");
        assert!(
            words.starts_with("95 % CI ") && words.ends_with("significant, p=0.030; n=2: fragile"),
            "{words}"
        );
        match c.interval {
            Interval::Bounded { hi, .. } | Interval::UpTo { hi } => assert!(hi < 1.0, "{c:?}"),
            Interval::From { .. } | Interval::Wide => panic!("{c:?}"),
        }
    }

    /// A capacity model that doubles with the shards: microshard-4 at 1.79× microshard-2 with
    /// p ≈ 0.063 at n=2 is not significant, and its interval says so by containing 1×.
    #[test]
    fn a_large_ratio_at_n2_can_be_not_significant() {
        let two = [2388.0, 3212.0];
        let four = [4600.0, 5424.0];
        let c = cmp(&four, &two);
        assert!((c.ratio - 1.79).abs() < 0.005, "{c:?}");
        assert_eq!(c.difference(), Difference::NotSignificant);
        assert!((c.p - 0.063).abs() < 0.002, "{c:?}");
        assert!(
            c.words()
                .ends_with("not significant, p=0.063; n=2: fragile"),
            "{}",
            c.words()
        );
        assert!(c.cell().starts_with("no (95 % CI "), "{}", c.cell());
        assert!(
            c.cell().ends_with(", p=0.063; n=2: fragile)"),
            "{}",
            c.cell()
        );
    }

    #[test]
    fn tiny_p_values_and_unbounded_intervals_are_said_as_such() {
        let c = cmp(&[2000.0, 2010.0, 1990.0], &[1000.0, 1005.0, 995.0]);
        assert_eq!(c.p_words(), "p < 0.001");
        assert_eq!(c.fragile_words(), "", "n=3 is not called fragile");
        assert!(
            c.cell().starts_with("yes, faster (95 % CI 1."),
            "{}",
            c.cell()
        );
        assert!(c.cell().ends_with("×, p < 0.001)"), "{}", c.cell());
        // A reference whose own mean is not known well enough to divide by: no number at all.
        let c = cmp(&[1000.0, 1100.0], &[100.0, 1900.0]);
        assert_eq!(c.interval, Interval::Wide);
        assert_eq!(c.interval_words(), "95 % CI wide: n=2");
        assert!(!c.words().contains("fragile"), "said once: {}", c.words());
    }

    #[test]
    fn mean_and_stddev() {
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[2.0, 4.0]), Some(3.0));
        let s = stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap_or(0.0);
        assert!((s - 2.138_089_935).abs() < 1e-6, "{s}");
        assert_eq!(stddev(&[1.0]), None);
    }

    #[test]
    fn t_distribution_matches_tables() {
        // Critical values: t(0.975, df=10) = 2.228, t(0.975, df=2) = 4.303, t(0.975, 1000) ≈ 1.962.
        assert!((student_t_two_sided_p(2.228, 10.0) - 0.05).abs() < 1e-3);
        assert!((student_t_two_sided_p(4.303, 2.0) - 0.05).abs() < 1e-3);
        assert!((student_t_two_sided_p(1.962, 1000.0) - 0.05).abs() < 1e-3);
        assert!((student_t_two_sided_p(0.0, 5.0) - 1.0).abs() < 1e-9);
    }

    /// Welch's test between two samples, as `compare` runs it.
    fn welch_of(a: &[f64], b: &[f64]) -> Option<Welch> {
        let d = mean(a)? - mean(b)?;
        Some(welch(d, variance_of_mean(a)?, variance_of_mean(b)?))
    }

    #[test]
    fn welch_separates_distinct_means_and_not_noise() {
        let a = [1000.0, 1010.0, 990.0, 1005.0];
        let b = [2000.0, 2020.0, 1985.0, 1990.0];
        let w = welch_of(&b, &a).unwrap_or(Welch {
            t: 0.0,
            df: 0.0,
            p: 1.0,
        });
        assert!(w.p < 0.05, "{w:?}");
        assert!(w.t > 0.0);
        let c = [1002.0, 995.0, 1012.0, 998.0];
        let w = welch_of(&c, &a).unwrap_or(Welch {
            t: 0.0,
            df: 0.0,
            p: 0.0,
        });
        assert!(w.p >= 0.05, "{w:?}");
        assert_eq!(welch_of(&[1.0], &a), None);
    }

    #[test]
    fn without_variance_a_difference_is_certain_and_points_its_way() {
        let w = welch(-5.0, (0.0, 3.0), (0.0, 3.0));
        assert_eq!((w.p, w.t, w.df), (0.0, f64::NEG_INFINITY, 4.0));
        assert_eq!(welch(0.0, (0.0, 3.0), (0.0, 3.0)).p, 1.0);
    }

    #[test]
    fn welch_known_value() {
        // Two samples with textbook result: t ≈ -2.2 , df ≈ 12.3 (computed independently).
        let a = [19.1, 20.2, 21.3, 18.9, 20.0, 19.5, 20.8];
        let b = [21.0, 22.1, 20.7, 23.0, 21.9, 22.4, 20.3];
        let w = welch_of(&a, &b).unwrap_or(Welch {
            t: 0.0,
            df: 0.0,
            p: 1.0,
        });
        let ma = a.iter().sum::<f64>() / 7.0;
        let mb = b.iter().sum::<f64>() / 7.0;
        let se =
            ((stddev(&a).unwrap_or(0.0).powi(2) + stddev(&b).unwrap_or(0.0).powi(2)) / 7.0).sqrt();
        assert!((w.t - (ma - mb) / se).abs() < 1e-9);
        assert!(w.p < 0.05 && w.p > 0.0001, "{w:?}");
    }
}
