//! "What this experiment found": the answer the tool was built for, in sentences made from the
//! report — per scenario, the best topology and its ratio to the baseline with its interval and
//! whether it is significant; where adding micro-shards stops paying; the knee of each sweep;
//! and which cells were left out because they are not valid. Shown first on the page, at the top
//! of the Markdown report and after the terminal table.

use super::{Report, Row};
use crate::experiment::model::SweepFile;
use crate::measure::validity::Verdict;

/// Below this ratio, an untested step to the next topology is not counted as paying.
const PAYS: f64 = 1.05;

/// A row whose figure may be used (measured, not invalid).
fn usable(r: &Row) -> bool {
    r.repeats > 0 && r.validity.verdict != Verdict::Invalid && r.throughput.is_some()
}

/// The sentences, in order; empty when nothing was measured.
pub(crate) fn found(report: &Report, sweeps: &[(String, SweepFile)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut scenarios: Vec<&str> = Vec::new();
    for r in &report.rows {
        if !scenarios.contains(&r.scenario.as_str()) {
            scenarios.push(&r.scenario);
        }
    }
    for s in scenarios {
        let rows: Vec<&Row> = report.rows.iter().filter(|r| r.scenario == s).collect();
        out.extend(scenario_sentences(report, s, &rows));
    }
    for (_, sweep) in sweeps {
        out.push(knee_sentence(sweep));
    }
    let left_out = left_out(report);
    if !left_out.is_empty() {
        out.push(format!(
            "Left out as not valid: {} (see Validity).",
            left_out.join("; ")
        ));
    }
    if let (false, Some(c)) = (out.is_empty(), &report.capacity) {
        out.push(c.clone());
    }
    out
}

fn scenario_sentences(report: &Report, scenario: &str, rows: &[&Row]) -> Vec<String> {
    let base = &report.baseline;
    let Some(baseline) = rows
        .iter()
        .find(|r| r.topology == *base)
        .filter(|r| usable(r))
    else {
        return vec![format!(
            "{scenario}: no valid {base} figure to compare with, so no ratio is given."
        )];
    };
    let others: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| r.topology != *base && usable(r))
        .collect();
    let Some(best) = others.iter().copied().max_by(|a, b| {
        a.throughput
            .partial_cmp(&b.throughput)
            .unwrap_or(std::cmp::Ordering::Equal)
    }) else {
        return vec![format!(
            "{scenario}: no other topology has a valid figure to compare with {base}."
        )];
    };
    let ratio = best.vs_baseline.unwrap_or(0.0);
    let test = test_words(best);
    let caveat = caveat_words(&[baseline, best]);
    let tested_and_significant = best.significance.is_some_and(|s| s.significant);
    let mut out = vec![
        if ratio > 1.0 && (tested_and_significant || best.significance.is_none()) {
            format!(
                "{scenario}: {} is fastest, {ratio:.2}× {base}{test}{caveat}.",
                best.topology
            )
        } else {
            format!(
                "{scenario}: nothing beats {base}{}: the best other topology, {}, reaches {ratio:.2}×{test}{caveat}.",
                if ratio > 1.0 { " significantly" } else { "" },
                best.topology
            )
        },
    ];
    out.extend(stops_paying(scenario, &others));
    out
}

/// `(95 % CI 1.8–2.0×, significant, p=0.012)`, or why nothing was tested.
fn test_words(r: &Row) -> String {
    match r.significance {
        Some(s) => {
            let ci = s
                .interval
                .map(|(lo, hi)| format!("95 % CI {lo:.2}–{hi:.2}×, "))
                .unwrap_or_default();
            let verdict = if s.significant {
                "significant"
            } else {
                "not significant"
            };
            format!(" ({ci}{verdict}, p={:.3})", s.p)
        }
        None => " (not tested: one repetition; --repeat 2 or more tests it)".into(),
    }
}

fn caveat_words(rows: &[&Row]) -> String {
    let degraded: Vec<&str> = rows
        .iter()
        .filter(|r| r.validity.verdict == Verdict::Degraded)
        .map(|r| r.topology.as_str())
        .collect();
    match degraded.as_slice() {
        [] => String::new(),
        names => format!(
            " — with a caveat: {} degraded (see Validity)",
            names.join(" and ")
        ),
    }
}

/// The first step from one topology to the next (in table order) that does not pay.
fn stops_paying(scenario: &str, others: &[&Row]) -> Option<String> {
    others.windows(2).find_map(|w| {
        let (a, b) = (w[0], w[1]);
        let ratio = b.throughput? / a.throughput?;
        let test = super::stats::welch(&b.samples, &a.samples);
        let pays = match test {
            Some(t) => ratio > 1.0 && t.significant(super::ALPHA),
            None => ratio >= PAYS,
        };
        (!pays).then(|| {
            let words = match test {
                Some(t) if t.significant(super::ALPHA) => format!("significant, p={:.3}", t.p),
                Some(t) => format!("not significant, p={:.3}", t.p),
                None => "not tested".into(),
            };
            format!(
                "{scenario}: {} is not faster than {}: {ratio:.2}× ({words}); adding micro-shards stops paying there.",
                b.topology, a.topology
            )
        })
    })
}

fn knee_sentence(s: &SweepFile) -> String {
    let mut text = match (s.knee_threads, s.max_threads) {
        (Some(k), Some(m)) => format!("{}: knee at {k} threads (maximum at {m}).", s.label),
        _ => format!("{}: no knee (nothing measured).", s.label),
    };
    for c in crate::experiment::knee_caveats::caveats(s) {
        // Each caveat follows a full stop: it starts a sentence.
        let mut letters = c.chars();
        text.push(' ');
        text.extend(letters.next().map(|f| f.to_ascii_uppercase()));
        text.push_str(letters.as_str());
    }
    text
}

fn left_out(report: &Report) -> Vec<String> {
    report
        .rows
        .iter()
        .filter_map(|r| {
            let why = match (&r.not_run, r.repeats, r.validity.verdict) {
                (Some(_), 0, _) => "not run",
                (_, n, Verdict::Invalid) if n > 0 => "invalid",
                _ => return None,
            };
            Some(format!("{} on {} ({why})", r.scenario, r.topology))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::build_from;
    use crate::report::tests::{cell, config};

    /// Three repetitions of each topology at these throughputs (a little spread each).
    fn experiment(tps: &[(&str, f64)]) -> Report {
        let mut cells = Vec::new();
        for (t, tp) in tps {
            for (i, jitter) in [0.99, 1.0, 1.01].iter().enumerate() {
                cells.push(cell(t, "S2", i as u32 + 1, tp * jitter));
            }
        }
        let mut cfg = config(false);
        cfg.command.topologies = tps.iter().map(|(t, _)| t.to_string()).collect();
        cfg.command.scenarios = vec!["S2".into()];
        cfg.command.repeat = 3;
        build_from(&cfg, &cells)
    }

    #[test]
    fn micro_shards_pay_until_they_stop() {
        let r = experiment(&[
            ("single", 1000.0),
            ("microshard-2", 1900.0),
            ("microshard-4", 3700.0),
            ("microshard-8", 3720.0),
        ]);
        let f = found(&r, &[]);
        assert!(
            f[0].starts_with("S2: microshard-8 is fastest, 3.72× single (95 % CI"),
            "{f:?}"
        );
        assert!(f[0].contains("significant, p="), "{f:?}");
        assert_eq!(
            f[1].split(" (").next(),
            Some("S2: microshard-8 is not faster than microshard-4: 1.01×"),
            "{f:?}"
        );
        assert!(f[1].contains("not significant"), "{f:?}");
    }

    /// One invalid cell among two topologies (no repetitions).
    fn with_an_invalid_cell() -> Report {
        let mut cells = Vec::new();
        for (t, tp) in [("single", 1000.0), ("microshard-2", 2000.0)] {
            cells.push(cell(t, "S2", 1, tp));
        }
        cells[1]
            .summary
            .validity
            .invalid("sh0 (localhost:1) stopped answering at 2.0 s");
        let mut cfg = config(false);
        cfg.command.topologies = vec!["single".into(), "microshard-2".into()];
        cfg.command.scenarios = vec!["S2".into()];
        build_from(&cfg, &cells)
    }

    /// The three fixed experiments (micro-shards pay; nothing beats the baseline; one invalid
    /// cell): each one's sentences are in the terminal table, the Markdown report and the page,
    /// first on the page.
    #[test]
    fn every_format_says_it_first_or_after_the_table() {
        let pays = experiment(&[("single", 1000.0), ("microshard-2", 1900.0)]);
        let loses = experiment(&[("single", 1000.0), ("microshard-2", 400.0)]);
        for (r, opening) in [
            (pays, "S2: microshard-2 is fastest"),
            (loses, "S2: nothing beats single"),
            (
                with_an_invalid_cell(),
                "S2: no other topology has a valid figure",
            ),
        ] {
            assert!(r.found[0].starts_with(opening), "{:?}", r.found);
            for format in [
                crate::report::Format::Table,
                crate::report::Format::Markdown,
                crate::report::Format::Html,
            ] {
                let text = crate::report::render::render(&r, format);
                assert!(text.contains("What this experiment found"), "{format:?}");
                for sentence in &r.found {
                    let shown = match format {
                        crate::report::Format::Html => crate::report::html::esc(sentence),
                        _ => sentence.clone(),
                    };
                    assert!(text.contains(&shown), "{format:?}: {sentence}");
                }
            }
            let page = crate::report::render::render(&r, crate::report::Format::Html);
            let found_at = page.find("id=\"found\"").unwrap_or(usize::MAX);
            assert!(
                found_at < page.find("id=\"results\"").unwrap_or(0),
                "first on the page"
            );
        }
    }

    #[test]
    fn nothing_beats_the_baseline() {
        let r = experiment(&[("single", 1000.0), ("microshard-2", 400.0)]);
        let f = found(&r, &[]);
        assert!(
            f[0].starts_with(
                "S2: nothing beats single: the best other topology, microshard-2, reaches 0.40×"
            ),
            "{f:?}"
        );
    }

    #[test]
    fn an_invalid_cell_is_left_out_and_named() {
        let f = found(&with_an_invalid_cell(), &[]);
        assert_eq!(
            f,
            vec![
                "S2: no other topology has a valid figure to compare with single.".to_string(),
                "Left out as not valid: S2 on microshard-2 (invalid) (see Validity).".to_string()
            ]
        );
    }
}
