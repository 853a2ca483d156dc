//! What `diff` must say before its table: where the two experiments differ in how they were
//! measured (backend, duration, records, repetitions, kind), since a ratio across such a
//! difference measures the difference; and whether each row's change is significant, from the
//! two sides' means, spreads and repetitions.

use crate::experiment::model::ExperimentConfig;

/// One sentence per way `b` was measured differently from `a`.
pub(crate) fn mismatches(a: &ExperimentConfig, b: &ExperimentConfig) -> Vec<String> {
    let (ca, cb) = (&a.command, &b.command);
    let kind = |c: &ExperimentConfig| match c.command.name.starts_with("sweep-") && c.command.sweep
    {
        true => "sweep",
        false => "compare",
    };
    let secs = |d: Option<u64>| d.map_or("unbounded".to_string(), |s| format!("{s} s"));
    let records = |c: &crate::experiment::model::CompareCommand| match (c.full, c.records) {
        (true, _) => "the files' full sizes".to_string(),
        (false, Some(n)) => format!("{n} records"),
        (false, None) => "the default records".to_string(),
    };
    let mut out = Vec::new();
    let mut differs = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("A and B differ in {what}: A {x}, B {y}"));
        }
    };
    differs("kind", kind(a).into(), kind(b).into());
    differs("backend", ca.backend.to_string(), cb.backend.to_string());
    differs(
        "duration per cell",
        secs(ca.duration_s),
        secs(cb.duration_s),
    );
    differs("records", records(ca), records(cb));
    differs("repetitions", ca.repeat.to_string(), cb.repeat.to_string());
    differs(
        "server",
        if a.standin { "stand-in" } else { "MongoDB" }.into(),
        if b.standin { "stand-in" } else { "MongoDB" }.into(),
    );
    out
}

/// Welch's two-sided p-value from each side's mean, sample standard deviation and count;
/// `None` with fewer than two values on either side.
pub(crate) fn welch_p(a: (f64, Option<f64>, usize), b: (f64, Option<f64>, usize)) -> Option<f64> {
    let ((ma, sa, na), (mb, sb, nb)) = (a, b);
    let (sa, sb) = (sa?, sb?);
    if na < 2 || nb < 2 {
        return None;
    }
    let (na, nb) = (na as f64, nb as f64);
    let (va, vb) = (sa * sa / na, sb * sb / nb);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return Some(if (ma - mb).abs() > 0.0 { 0.0 } else { 1.0 });
    }
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Some(super::stats::student_t_two_sided_p(t, df))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_in_how_they_were_measured_are_named() {
        let a = crate::report::tests::config(false);
        let mut b = a.clone();
        assert!(mismatches(&a, &b).is_empty());
        b.command.duration_s = Some(2);
        b.command.repeat = a.command.repeat + 1;
        b.command.backend = crate::topology::BackendKind::Docker;
        let m = mismatches(&a, &b).join("\n");
        assert!(m.contains("differ in backend: A process, B docker"), "{m}");
        assert!(m.contains("differ in repetitions"), "{m}");
        assert!(m.contains("differ in duration per cell"), "{m}");
    }

    #[test]
    fn welch_from_summaries_matches_the_samples() {
        let xs = [10.0, 11.0, 12.0];
        let ys = [20.0, 21.0, 19.0];
        let direct = crate::report::stats::welch(&xs, &ys).map(|w| w.p);
        let from = welch_p(
            (11.0, crate::report::stats::stddev(&xs), 3),
            (20.0, crate::report::stats::stddev(&ys), 3),
        );
        assert!(matches!((direct, from), (Some(d), Some(f)) if (d - f).abs() < 1e-9));
        assert_eq!(welch_p((1.0, None, 1), (2.0, Some(1.0), 3)), None);
    }
}
