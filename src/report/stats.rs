//! Small statistics for repeated measurements: mean, spread and Welch's t-test.
//!
//! Welch's test (unequal variances) is the honest default for throughput samples from
//! different topologies; the p-value uses Student's t distribution through the regularised
//! incomplete beta function.

/// Arithmetic mean; `None` for no samples.
pub(crate) fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
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

impl Welch {
    /// Significant at the given level (0.05 for 95%).
    pub(crate) fn significant(&self, alpha: f64) -> bool {
        self.p < alpha
    }
}

/// Welch's t-test between two samples; `None` when either has fewer than two values.
pub(crate) fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (ma, mb) = (mean(a)?, mean(b)?);
    let (sa, sb) = (stddev(a)?, stddev(b)?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (sa * sa / na, sb * sb / nb);
    let se2 = va + vb;
    if se2 <= 0.0 {
        // No variance at all: any difference is certain, none is none.
        let p = if (ma - mb).abs() > 0.0 { 0.0 } else { 1.0 };
        return Some(Welch {
            t: if p == 0.0 { f64::INFINITY } else { 0.0 },
            df: na + nb - 2.0,
            p,
        });
    }
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Some(Welch {
        t,
        df,
        p: student_t_two_sided_p(t, df),
    })
}

/// The `level` (0.95) confidence interval of `mean(a) / mean(b)`, by the delta method with
/// Welch's degrees of freedom; `None` when either side has fewer than two values or `b`'s
/// mean is not positive.
pub(crate) fn ratio_interval(a: &[f64], b: &[f64], level: f64) -> Option<(f64, f64)> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let (ma, mb) = (mean(a)?, mean(b)?);
    let (sa, sb) = (stddev(a)?, stddev(b)?);
    if mb <= 0.0 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let ratio = ma / mb;
    let (ra, rb) = (
        sa * sa / (na * mb * mb),
        sb * sb * ma * ma / (nb * mb.powi(4)),
    );
    let se = (ra + rb).sqrt();
    if se <= 0.0 {
        return Some((ratio, ratio));
    }
    let df = (ra + rb).powi(2) / (ra * ra / (na - 1.0) + rb * rb / (nb - 1.0));
    let q = StudentsT::new(0.0, 1.0, df)
        .ok()?
        .inverse_cdf(1.0 - (1.0 - level) / 2.0);
    Some(((ratio - q * se).max(0.0), ratio + q * se))
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

    #[test]
    fn the_ratio_interval_brackets_the_ratio() {
        let a = [9000.0, 9200.0, 9100.0];
        let b = [27000.0, 28000.0, 27500.0];
        let (lo, hi) = ratio_interval(&a, &b, 0.95).unwrap_or_default();
        let r = 9100.0 / 27500.0;
        assert!(lo < r && r < hi && hi - lo < 0.1, "{lo} {hi}");
        assert_eq!(ratio_interval(&a[..1], &b, 0.95), None);
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

    #[test]
    fn welch_separates_distinct_means_and_not_noise() {
        let a = [1000.0, 1010.0, 990.0, 1005.0];
        let b = [2000.0, 2020.0, 1985.0, 1990.0];
        let w = welch(&b, &a).unwrap_or(Welch {
            t: 0.0,
            df: 0.0,
            p: 1.0,
        });
        assert!(w.significant(0.05), "{w:?}");
        assert!(w.t > 0.0);
        let c = [1002.0, 995.0, 1012.0, 998.0];
        let w = welch(&c, &a).unwrap_or(Welch {
            t: 0.0,
            df: 0.0,
            p: 0.0,
        });
        assert!(!w.significant(0.05), "{w:?}");
        assert_eq!(welch(&[1.0], &a), None);
    }

    #[test]
    fn welch_known_value() {
        // Two samples with textbook result: t ≈ -2.2 , df ≈ 12.3 (computed independently).
        let a = [19.1, 20.2, 21.3, 18.9, 20.0, 19.5, 20.8];
        let b = [21.0, 22.1, 20.7, 23.0, 21.9, 22.4, 20.3];
        let w = welch(&a, &b).unwrap_or(Welch {
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
