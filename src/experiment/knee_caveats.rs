//! What a sweep's maximum and knee cannot tell: a maximum at the largest thread count tried is
//! not a peak (the curve may still rise), and an interrupted sweep's knee is over the points it
//! measured only. Every rendering of a sweep says so in words.

use super::model::SweepFile;

/// One sentence per caveat of `sweep`'s maximum and knee (none for a complete curve that peaks
/// before its end).
pub(crate) fn caveats(sweep: &SweepFile) -> Vec<String> {
    let mut out = Vec::new();
    let missing: Vec<String> = sweep
        .planned_threads
        .iter()
        .filter(|n| !sweep.points.iter().any(|p| p.threads == **n))
        .map(u32::to_string)
        .collect();
    if !missing.is_empty() {
        out.push(format!(
            "interrupted: {} of {} thread counts never measured ({} threads); the maximum and knee \
             are over the measured points only",
            missing.len(),
            sweep.planned_threads.len(),
            missing.join(", ")
        ));
    } else if let (Some(max), Some(last)) = (sweep.max_threads, sweep.points.last())
        && sweep.points.len() > 1
        && max == last.threads
    {
        out.push(match flat_since(sweep) {
            Some(knee) => format!(
                "flat from {knee} threads on: every count from there is within {:.0}% of the \
                 maximum, which is at the last point tried ({max} threads)",
                sweep.tolerance * 100.0
            ),
            None => format!(
                "still rising at {max} threads: the maximum is the last point tried, so the curve \
                 may not have peaked; extend --threads"
            ),
        });
    }
    out
}

/// The knee, when it lies before the last point and every point from it on is within the
/// tolerance of the maximum: the curve is flat there, not rising.
pub(crate) fn flat_since(sweep: &SweepFile) -> Option<u32> {
    let knee = sweep.knee_threads?;
    let last = sweep.points.last()?;
    let top = sweep
        .points
        .iter()
        .map(|p| p.summary.throughput)
        .fold(f64::NEG_INFINITY, f64::max);
    let floor = top * (1.0 - sweep.tolerance);
    let flat = sweep
        .points
        .iter()
        .filter(|p| p.threads >= knee)
        .all(|p| p.summary.throughput >= floor);
    (knee < last.threads && flat).then_some(knee)
}

/// Whether anything was measured past the knee (what a latency chart's "past the knee" needs).
pub(crate) fn measured_past_knee(sweep: &SweepFile) -> bool {
    sweep
        .knee_threads
        .zip(sweep.points.last())
        .is_some_and(|(k, last)| last.threads > k)
}

/// Under a `compare --sweep` table: the thread count each topology's cells ran at (its knee),
/// and a warning when they differ, since the ratios then compare different thread counts.
pub(crate) fn cells_at_knees(sweeps: &[(String, SweepFile)]) -> Option<String> {
    let knees: Vec<(String, u32)> = sweeps
        .iter()
        .filter_map(|(name, s)| Some((name.clone(), s.knee_threads?)))
        .collect();
    if knees.is_empty() {
        return None;
    }
    let each: Vec<String> = knees
        .iter()
        .map(|(name, k)| format!("{name} at {k} threads"))
        .collect();
    let differ = knees.iter().any(|(_, k)| *k != knees[0].1);
    Some(format!(
        "The run cells ran at each topology's knee: {}.{}",
        each.join(", "),
        if differ {
            " The thread counts differ, so each ratio compares a topology at its own knee with the baseline at its own."
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::model::SweepPoint;

    fn sweep(points: &[(u32, f64)], planned: &[u32]) -> SweepFile {
        let k = crate::experiment::knee::find(points, 0.05);
        SweepFile {
            label: "S5 on single".into(),
            points: points
                .iter()
                .map(|&(threads, t)| SweepPoint {
                    crosscheck: None,
                    threads,
                    summary: crate::experiment::model::CellSummary {
                        throughput: t,
                        ..Default::default()
                    },
                })
                .collect(),
            max_threads: k.map(|k| k.max_threads),
            knee_threads: k.map(|k| k.knee_threads),
            tolerance: 0.05,
            standin: true,
            not_run: Vec::new(),
            dead: None,
            planned_threads: planned.to_vec(),
            memory: None,
        }
    }

    #[test]
    fn a_maximum_at_the_last_point_says_still_rising() {
        let s = sweep(&[(1, 100.0), (4, 300.0), (16, 900.0)], &[1, 4, 16]);
        let c = caveats(&s);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(c[0].starts_with("still rising at 16 threads"), "{c:?}");
        assert!(c[0].contains("extend --threads"), "{c:?}");
    }

    #[test]
    fn compare_sweep_says_the_thread_count_of_each_topology() {
        let a = sweep(&[(4, 300.0), (16, 900.0), (32, 880.0)], &[4, 16, 32]);
        let b = sweep(&[(4, 300.0), (16, 290.0)], &[4, 16]);
        let line =
            cells_at_knees(&[("single".into(), a), ("microshard-2".into(), b)]).unwrap_or_default();
        assert!(
            line.contains("single at 16 threads, microshard-2 at 4 threads")
                && line.contains("differ"),
            "{line}"
        );
    }

    #[test]
    fn a_curve_flat_since_its_knee_is_not_still_rising() {
        // 1,000 ops/s from 8 threads on, the maximum (by noise) at 32.
        let s = sweep(&[(2, 250.0), (8, 990.0), (32, 1000.0)], &[2, 8, 32]);
        let c = caveats(&s);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(c[0].starts_with("flat from 8 threads on"), "{c:?}");
        assert!(!c.iter().any(|x| x.contains("still rising")), "{c:?}");
        assert!(measured_past_knee(&s));
        // Rising within the tolerance and then above it again: still rising.
        let s = sweep(
            &[(2, 250.0), (8, 960.0), (16, 900.0), (32, 1000.0)],
            &[2, 8, 16, 32],
        );
        assert!(
            caveats(&s)[0].starts_with("still rising at 32"),
            "{:?}",
            caveats(&s)
        );
        // A knee at the last point: nothing past it.
        let s = sweep(&[(1, 100.0), (4, 300.0), (16, 900.0)], &[1, 4, 16]);
        assert!(!measured_past_knee(&s));
    }

    #[test]
    fn a_peak_inside_the_range_has_no_caveat() {
        let s = sweep(&[(1, 100.0), (4, 300.0), (16, 250.0)], &[1, 4, 16]);
        assert!(caveats(&s).is_empty());
    }

    #[test]
    fn an_interrupted_sweep_names_the_points_never_measured() {
        let s = sweep(&[(1, 100.0), (2, 190.0)], &[1, 2, 4, 8]);
        let c = caveats(&s);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(
            c[0].contains("2 of 4 thread counts never measured (4, 8 threads)"),
            "{c:?}"
        );
    }
}
