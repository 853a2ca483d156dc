//! `microshard rerun`'s verdict: did the experiment measured again from its own record land where
//! the original did? One line: "reproduced: all N valid cells within their spread", or the cells
//! that moved beyond it.
//!
//! A cell moved when its new mean throughput lies outside the original's spread (lowest–highest
//! over repetitions, widened by [`MARGIN`] of the mean so that one repetition has a spread too)
//! and, where both sides have two or more repetitions, the comparison of the two
//! ([`super::stats::compare`]) is significant. Only cells valid on both sides are compared; the
//! others are named with their verdict on each side (README, "Results you can trust").

use super::stats::{Comparison, compare};
use super::{Report, Row};
use crate::measure::validity::Verdict;

/// How far beyond its lowest–highest a cell may land, as a fraction of its mean.
pub(crate) const MARGIN: f64 = 0.10;

/// Whether `again` lands beyond `original`'s spread (see the module doc), with the comparison
/// that decided it when both sides were repeated.
fn moved(original: &Row, again: &Row) -> Option<(bool, Option<Comparison>)> {
    let (ta, tb) = (original.throughput?, again.throughput?);
    let (lo, hi) = original.spread.unwrap_or((ta, ta));
    let outside = tb < lo - MARGIN * ta || tb > hi + MARGIN * ta;
    let test = compare(&again.samples, &original.samples);
    Some((outside && test.is_none_or(|c| c.significant), test))
}

/// Why a measured cell of the original is not compared: its verdict where it is degraded or
/// invalid, or that it was not measured again.
fn why_not(original: &Row, again: Option<&Row>) -> Option<String> {
    let Some(again) = again else {
        return Some("not measured again".into());
    };
    match (original.validity.verdict, again.validity.verdict) {
        (Verdict::Valid, Verdict::Valid) => None,
        (a, b) if a == b => Some(format!("{a} in both")),
        (Verdict::Valid, b) => Some(format!("{b} again")),
        (a, Verdict::Valid) => Some(format!("{a} in the original")),
        (a, b) => Some(format!("{a} in the original, {b} again")),
    }
}

/// What `rerun` found: its lines, and whether any cell was compared at all (none compared is
/// its own outcome, never "reproduced").
pub(crate) struct Reproduced {
    /// The verdict line, after a line naming the cells left out (when some were).
    pub text: String,
    /// Cells compared.
    pub compared: usize,
}

/// Did `again` land where `original` did, over the cells valid in both.
pub(crate) fn verdict(original: &Report, again: &Report) -> Reproduced {
    let mut compared = 0;
    let mut beyond = Vec::new();
    let mut left_out = Vec::new();
    for a in original.rows.iter().filter(|r| r.repeats > 0) {
        let b = again
            .rows
            .iter()
            .find(|b| b.repeats > 0 && b.scenario == a.scenario && b.topology == a.topology);
        let name = format!("{} on {}", a.scenario, a.topology);
        let outcome = match why_not(a, b) {
            Some(why) => Err(why),
            None => b
                .and_then(|b| moved(a, b))
                .ok_or_else(|| "no throughput".into()),
        };
        match outcome {
            Err(why) => left_out.push(format!("{name} ({why})")),
            Ok((true, test)) => {
                let ta = a.throughput.unwrap_or_default();
                let tb = b.and_then(|b| b.throughput).unwrap_or_default();
                let words = test.map(|c| format!(", {}", c.words())).unwrap_or_default();
                beyond.push(format!(
                    "{name} {ta:.0} → {tb:.0} ops/s ({:.2}×{words})",
                    tb / ta.max(f64::EPSILON)
                ));
                compared += 1;
            }
            Ok((false, _)) => compared += 1,
        }
    }
    let mut out = String::new();
    if !left_out.is_empty() {
        out.push_str(&format!(
            "not compared (only cells valid in both runs are): {}\n",
            left_out.join(", ")
        ));
    }
    if compared == 0 {
        out.push_str("nothing compared: no cell is valid in both runs, so whether it reproduced is not known (the cells and why are above)");
    } else if beyond.is_empty() {
        out.push_str(&format!(
            "reproduced: all {compared} valid cells within their spread"
        ));
    } else {
        out.push_str(&format!(
            "not reproduced: {} of {compared} valid cells moved beyond their spread: {}",
            beyond.len(),
            beyond.join("; ")
        ));
    }
    Reproduced {
        text: out,
        compared,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::build_from;
    use crate::report::tests::{cell, config};

    fn report(single: &[f64], two: &[f64]) -> Report {
        let mut cells = Vec::new();
        for (i, &tp) in single.iter().enumerate() {
            cells.push(cell("single", "S2", i as u32 + 1, tp));
        }
        for (i, &tp) in two.iter().enumerate() {
            cells.push(cell("microshard-2", "S2", i as u32 + 1, tp));
        }
        build_from(&config(true), &cells)
    }

    #[test]
    fn the_same_figures_reproduce_and_a_halved_capacity_moves() {
        let original = report(&[1000.0, 1020.0], &[2000.0, 1980.0]);
        let again = report(&[1010.0, 1030.0], &[1990.0, 2010.0]);
        assert_eq!(
            verdict(&original, &again).text,
            "reproduced: all 2 valid cells within their spread"
        );
        let halved = report(&[1000.0, 1010.0], &[1000.0, 1020.0]);
        let line = verdict(&original, &halved).text;
        assert!(
            line.starts_with("not reproduced: 1 of 2 valid cells moved beyond their spread: S2 on microshard-2 1990 → 1010 ops/s (0.51×, 95 % CI 0."),
            "{line}"
        );
        // One repetition: the margin alone decides.
        let one = report(&[1000.0], &[2000.0]);
        let same = verdict(&one, &report(&[1050.0], &[2100.0]));
        assert!(same.text.starts_with("reproduced: all 2") && same.compared == 2);
        let moved = verdict(&one, &report(&[1000.0], &[1500.0])).text;
        assert!(moved.contains("S2 on microshard-2"));
    }

    #[test]
    fn nothing_compared_is_never_said_to_reproduce() {
        let mut cells = vec![cell("single", "S2", 1, 1000.0)];
        cells[0]
            .summary
            .validity
            .degrade("busy host: other processes used 1.5 of 2 cores");
        let degraded = build_from(&config(true), &cells);
        let v = verdict(&degraded, &degraded);
        assert_eq!(v.compared, 0);
        assert!(!v.text.contains("reproduced:"), "{}", v.text);
        assert!(
            v.text
                .contains("nothing compared: no cell is valid in both runs"),
            "{}",
            v.text
        );
    }

    #[test]
    fn cells_left_out_are_named_with_their_verdicts() {
        let original = report(&[1000.0], &[2000.0]);
        let mut cells = vec![
            cell("single", "S2", 1, 1000.0),
            cell("microshard-2", "S2", 1, 10.0),
        ];
        cells[1].summary.validity.invalid("sh0 stopped answering");
        let again = build_from(&config(true), &cells);
        let line = verdict(&original, &again).text;
        assert_eq!(
            line,
            "not compared (only cells valid in both runs are): S2 on microshard-2 (invalid again)\nreproduced: all 1 valid cells within their spread"
        );
    }

    /// A degraded cell is named as degraded, on the side where it was, never
    /// lumped with invalid ones; a cell the rerun did not measure says so.
    #[test]
    fn a_degraded_cell_is_named_as_degraded() {
        let mut cells = vec![
            cell("single", "S2", 1, 1000.0),
            cell("microshard-2", "S2", 1, 2000.0),
        ];
        cells[0]
            .summary
            .validity
            .degrade("client-bound: 17,000 ops/s");
        let original = build_from(&config(true), &cells);
        let again = build_from(&config(true), &[cell("single", "S2", 1, 1000.0)]);
        let line = verdict(&original, &again).text;
        assert_eq!(
            line.lines().next(),
            Some(
                "not compared (only cells valid in both runs are): S2 on single (degraded in the original), S2 on microshard-2 (not measured again)"
            ),
            "{line}"
        );
    }
}
