//! `microshard rerun`'s verdict: did the experiment measured again from its own record land where
//! the original did? One line: "reproduced: all N valid cells within their spread", or the cells
//! that moved beyond it.
//!
//! A cell moved when its new mean throughput lies outside the original's spread (lowest–highest
//! over repetitions, widened by [`MARGIN`] of the mean so that one repetition has a spread too)
//! and, where both sides have two or more repetitions, Welch's t-test finds the difference
//! significant (p < [`super::ALPHA`]). Cells that are not valid on either side are left out and
//! named.

use super::diff_checks::welch_p;
use super::{ALPHA, Report, Row};

/// How far beyond its lowest–highest a cell may land, as a fraction of its mean.
pub(crate) const MARGIN: f64 = 0.10;

/// Whether `again` lands beyond `original`'s spread (see the module doc).
fn moved(original: &Row, again: &Row) -> Option<bool> {
    let (ta, tb) = (original.throughput?, again.throughput?);
    let (lo, hi) = original.spread.unwrap_or((ta, ta));
    let outside = tb < lo - MARGIN * ta || tb > hi + MARGIN * ta;
    let significant = welch_p(
        (ta, original.stddev, original.repeats),
        (tb, again.stddev, again.repeats),
    )
    .is_none_or(|p| p < ALPHA);
    Some(outside && significant)
}

/// The verdict line, after a line naming the cells left out (when some were).
pub(crate) fn verdict(original: &Report, again: &Report) -> String {
    let mut compared = 0;
    let mut beyond = Vec::new();
    let mut left_out = Vec::new();
    for a in original.rows.iter().filter(|r| r.repeats > 0) {
        let b = again
            .rows
            .iter()
            .find(|b| b.repeats > 0 && b.scenario == a.scenario && b.topology == a.topology);
        let name = format!("{} on {}", a.scenario, a.topology);
        let Some(b) = b.filter(|b| a.validity.is_valid() && b.validity.is_valid()) else {
            left_out.push(name);
            continue;
        };
        match moved(a, b) {
            Some(true) => beyond.push(format!(
                "{name} {:.0} → {:.0} ops/s ({:.2}×)",
                a.throughput.unwrap_or_default(),
                b.throughput.unwrap_or_default(),
                b.throughput.unwrap_or_default() / a.throughput.unwrap_or(1.0).max(f64::EPSILON)
            )),
            Some(false) => {}
            None => {
                left_out.push(name);
                continue;
            }
        }
        compared += 1;
    }
    let mut out = String::new();
    if !left_out.is_empty() {
        out.push_str(&format!(
            "not compared (not valid in one of the runs): {}\n",
            left_out.join(", ")
        ));
    }
    if beyond.is_empty() {
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
    out
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
            verdict(&original, &again),
            "reproduced: all 2 valid cells within their spread"
        );
        let halved = report(&[1000.0, 1010.0], &[1000.0, 1020.0]);
        let line = verdict(&original, &halved);
        assert!(
            line.starts_with("not reproduced: 1 of 2 valid cells moved beyond their spread: S2 on microshard-2 1990 → 1010 ops/s (0.51×)"),
            "{line}"
        );
        // One repetition: the margin alone decides.
        let one = report(&[1000.0], &[2000.0]);
        assert!(verdict(&one, &report(&[1050.0], &[2100.0])).starts_with("reproduced: all 2"));
        assert!(verdict(&one, &report(&[1000.0], &[1500.0])).contains("S2 on microshard-2"));
    }

    #[test]
    fn cells_not_valid_are_left_out_and_named() {
        let original = report(&[1000.0], &[2000.0]);
        let mut cells = vec![
            cell("single", "S2", 1, 1000.0),
            cell("microshard-2", "S2", 1, 10.0),
        ];
        cells[1].summary.validity.invalid("sh0 stopped answering");
        let again = build_from(&config(true), &cells);
        let line = verdict(&original, &again);
        assert_eq!(
            line,
            "not compared (not valid in one of the runs): S2 on microshard-2\nreproduced: all 1 valid cells within their spread"
        );
    }
}
