//! The knee of a thread sweep: the smallest thread count whose throughput is within a tolerance
//! of the best one (seed 001 found it by eye at 10–20 threads; here it is computed).

/// Default tolerance: within 5% of the maximum.
pub(crate) const DEFAULT_TOLERANCE: f64 = 0.05;

/// The best point and the knee of a throughput-by-threads curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Knee {
    /// Thread count with the highest throughput.
    pub max_threads: u32,
    /// Smallest thread count within the tolerance of the maximum.
    pub knee_threads: u32,
}

/// Finds the maximum and the knee of `(threads, throughput)` points; `None` without usable points.
pub(crate) fn find(points: &[(u32, f64)], tolerance: f64) -> Option<Knee> {
    let usable: Vec<(u32, f64)> = points
        .iter()
        .copied()
        .filter(|(_, t)| t.is_finite() && *t > 0.0)
        .collect();
    let &(max_threads, max_throughput) = usable
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?;
    let floor = max_throughput * (1.0 - tolerance);
    let &(knee_threads, _) = usable
        .iter()
        .filter(|(_, t)| *t >= floor)
        .min_by_key(|(n, _)| *n)?;
    Some(Knee {
        max_threads,
        knee_threads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_001_shape() {
        // 1-id queries from seed 001: peak at 10-20 threads, falling after.
        let pts = [
            (1, 900.0),
            (5, 2900.0),
            (10, 3700.0),
            (20, 3850.0),
            (50, 2500.0),
            (100, 1200.0),
        ];
        let k = find(&pts, DEFAULT_TOLERANCE);
        assert_eq!(k.map(|k| (k.max_threads, k.knee_threads)), Some((20, 10)));
    }

    #[test]
    fn plateau_knee_is_first_point_within_tolerance() {
        let pts = [(1, 100.0), (2, 200.0), (4, 390.0), (8, 400.0), (16, 401.0)];
        let k = find(&pts, 0.05);
        assert_eq!(k.map(|k| k.knee_threads), Some(4));
        assert_eq!(k.map(|k| k.max_threads), Some(16));
        let k = find(&pts, 0.0);
        assert_eq!(k.map(|k| k.knee_threads), Some(16));
    }

    #[test]
    fn empty_or_zero_is_none() {
        assert_eq!(find(&[], 0.05), None);
        assert_eq!(find(&[(1, 0.0), (2, f64::NAN)], 0.05), None);
    }
}
