//! "What this experiment found": the answer the tool was built for, in sentences made from the
//! report — per scenario, how the other topologies compare with the baseline; where adding
//! micro-shards stops paying; the knee of each sweep; and which cells were left out because they
//! are invalid or were not run. Shown first on the page, at the top of the Markdown report and
//! after the terminal table.
//!
//! Every ratio is quoted with its comparison ([`stats::Comparison`]: interval, Welch's test,
//! verdict), and a sentence's first words never claim more than that test: "faster" only when
//! significantly so, "nothing beats" only when every other topology is significantly slower,
//! "stops paying" only when the larger topology is not faster at all; anything else is "not
//! significantly different".

use super::ceiling::CeilingPart;
use super::stats::{self, Difference};
use super::{Report, Row};
use crate::experiment::ceiling::search::thousands;
use crate::experiment::model::SweepFile;
use crate::measure::validity::Verdict;

/// A row whose figure may be used (measured, not invalid).
fn usable(r: &Row) -> bool {
    r.repeats > 0 && r.validity.verdict != Verdict::Invalid && r.throughput.is_some()
}

/// The sentences, in order; empty when nothing was measured.
pub(crate) fn found(report: &Report, sweeps: &[(String, SweepFile)]) -> Vec<String> {
    let mut out = Vec::new();
    let scenarios = super::charts::distinct(report.rows.iter().map(|r| r.scenario.as_str()));
    // A thread sweep alone compares nothing: no ratio, no baseline.
    let compares = sweeps.is_empty() || report.rows.iter().any(|r| r.repeats > 0);
    for s in scenarios.into_iter().filter(|_| compares) {
        let rows: Vec<&Row> = report.rows.iter().filter(|r| r.scenario == s).collect();
        if let Some(c) = &report.ceiling {
            out.extend(ceiling_sentences(c, s, &report.baseline, &rows));
        }
        out.extend(scenario_sentences(report, s, &rows));
    }
    for (_, sweep) in sweeps {
        out.push(knee_sentence(sweep));
    }
    let left_out = left_out(report);
    if !left_out.is_empty() {
        out.push(format!("Left out: {} (see Validity).", left_out.join("; ")));
    }
    if let (false, Some(c)) = (out.is_empty(), &report.capacity) {
        out.push(c.clone());
    }
    out
}

/// A `compare --ceiling` scenario in ceiling terms: what each topology sustains at the bound
/// (its ratio to the baseline's ceiling), then the ratio taken apart.
fn ceiling_sentences(c: &CeilingPart, scenario: &str, base: &str, rows: &[&Row]) -> Vec<String> {
    let said: Vec<String> = (c.cells.iter())
        .filter(|x| x.scenario == scenario)
        .map(|x| {
            let ratio = (rows.iter())
                .find(|r| r.topology == x.topology && x.topology != base)
                .and_then(|r| r.vs_baseline);
            match (x.ceiling, ratio) {
                (Some(v), Some(r)) => format!("{} {} ({r:.2}×)", x.topology, thousands(v)),
                (Some(v), None) => format!("{} sustains {} ops/s", x.topology, thousands(v)),
                (None, _) => format!("{} has no ceiling ({})", x.topology, x.finding),
            }
        })
        .collect();
    if said.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!("{scenario} at {}: {}.", c.bounds, said.join("; "))];
    out.extend(
        (c.decomposed.iter())
            .filter(|d| d.scenario == scenario)
            .map(|d| format!("{}.", d.sentence())),
    );
    out
}

fn scenario_sentences(report: &Report, scenario: &str, rows: &[&Row]) -> Vec<String> {
    let base = &report.baseline;
    let found = rows.iter().find(|r| r.topology == *base);
    let Some(baseline) = found.filter(|r| usable(r)) else {
        let why = match found {
            Some(r) if r.repeats > 0 => "is invalid",
            Some(r) if r.not_run.is_some() => "was not run",
            Some(r) if r.interrupted => "was never run: the experiment was interrupted before it",
            _ => "was not measured",
        };
        return vec![format!("{scenario}: {base} {why}, so no ratio is given.")];
    };
    let others: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| r.topology != *base && usable(r))
        .collect();
    if others.is_empty() && rows.iter().any(|r| r.topology != *base && r.interrupted) {
        return vec![format!(
            "{scenario}: no other topology has a figure to compare with {base} yet: the experiment was interrupted before them."
        )];
    }
    if others.is_empty() {
        return vec![format!(
            "{scenario}: no other topology has a valid or degraded figure to compare with {base}."
        )];
    }
    let mut out = vec![headline(scenario, base, baseline, &others)];
    let compare = |b: &Row, a: &Row| match &report.ceiling {
        Some(c) => c.compare(scenario, &b.topology, &a.topology),
        None => stats::compare(&b.samples, &a.samples),
    };
    out.extend(stops_paying(scenario, &others, &compare));
    out
}

/// The row with the highest mean throughput among `rows`.
fn best<'a>(rows: impl Iterator<Item = &'a Row>) -> Option<&'a Row> {
    rows.max_by(|a, b| {
        a.throughput
            .partial_cmp(&b.throughput)
            .unwrap_or(std::cmp::Ordering::Equal)
    })
}

/// What the baseline comparison says of `r`, when it was tested.
fn said(r: &Row) -> Option<Difference> {
    r.significance
        .filter(|c| c.tested())
        .map(|c| c.difference())
}

/// The scenario's first sentence: the significantly faster topology with the highest mean; else
/// "nothing beats" when every other one is significantly slower; else the best mean among those
/// not significantly different, said so; else the best untested mean.
fn headline(scenario: &str, base: &str, baseline: &Row, others: &[&Row]) -> String {
    let top = best(others.iter().copied()).unwrap_or(baseline);
    let best_said = |d| best(others.iter().copied().filter(|r| said(r) == Some(d)));
    let (faster, same) = (
        best_said(Difference::Faster),
        best_said(Difference::NotSignificant),
    );
    let ratio = |r: &Row| r.vs_baseline.unwrap_or(0.0);
    // A tested row's ratio with its comparison's words.
    let figure = |r: &Row| format!("{:.2}× ({})", ratio(r), words(r));
    let (lead, text) = match (faster, same, top) {
        (Some(f), _, t) => {
            let also = match (t.topology != f.topology, t.significance) {
                (true, Some(c)) => format!(
                    "; {} reaches {:.2}× but is not significantly different ({})",
                    t.topology,
                    ratio(t),
                    c.detail()
                ),
                (true, None) => format!("; {} reaches {:.2}× (not tested)", t.topology, ratio(t)),
                (false, _) => String::new(),
            };
            let text = format!(
                "{} is significantly faster than {base}: {}{also}",
                f.topology,
                figure(f)
            );
            (f, text)
        }
        (None, _, t) if others.iter().all(|r| said(r) == Some(Difference::Slower)) => {
            let text = format!(
                "nothing beats {base}: every other topology is significantly slower; the best, {}, reaches {}",
                t.topology,
                figure(t)
            );
            (t, text)
        }
        (None, Some(n), _) => {
            let text = format!(
                "{} is not significantly different from {base}: {}; no topology is significantly faster",
                n.topology,
                figure(n)
            );
            (n, text)
        }
        (None, None, _) => {
            let untested = others.iter().copied().filter(|r| said(r).is_none());
            let t = best(untested).unwrap_or(baseline);
            let how = match t.significance {
                Some(c) => format!(" ({})", c.detail()),
                None => " in one repetition: not tested (--repeat 2 or more tests it)".into(),
            };
            let text = format!(
                "the best other topology, {}, measured {:.2}× {base}{how}",
                t.topology,
                ratio(t),
            );
            (t, text)
        }
    };
    format!("{scenario}: {text}{}.", caveat_words(&[baseline, lead]))
}

/// A tested row's comparison, for a sentence that says the test's verdict itself
/// ([`stats::Comparison::detail`]).
fn words(r: &Row) -> String {
    r.significance.map(|c| c.detail()).unwrap_or_default()
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

/// The first step from one topology to the next (in table order) that the test does not show
/// to pay. It "stops paying" only when the larger topology is not faster at all (a ratio of 1×
/// or less, or significantly slower); a higher mean that is not significant is said as such.
fn stops_paying(
    scenario: &str,
    others: &[&Row],
    compare: &dyn Fn(&Row, &Row) -> Option<stats::Comparison>,
) -> Option<String> {
    others.windows(2).find_map(|w| {
        let (a, b) = (w[0], w[1]);
        match compare(b, a).filter(|c| c.tested()) {
            Some(c) if c.difference() == Difference::Faster => None,
            Some(c) if c.difference() == Difference::Slower || c.ratio <= 1.0 => {
                let how = match c.difference() {
                    Difference::Slower => "significantly slower than",
                    _ => "not significantly different from",
                };
                Some(format!(
                    "{scenario}: {} is {how} {}: {:.2}× ({}); adding micro-shards stops paying there.",
                    b.topology,
                    a.topology,
                    c.ratio,
                    c.detail()
                ))
            }
            Some(c) => Some(format!(
                "{scenario}: {} over {}: {:.2}×, not significant at n={} ({}, {}); whether adding micro-shards still pays there needs more repetitions.",
                b.topology,
                a.topology,
                c.ratio,
                c.n,
                c.interval_words(),
                c.p_words()
            )),
            None => {
                let ratio = b.throughput? / a.throughput?;
                (ratio <= 1.0).then(|| format!(
                    "{scenario}: {} measured {ratio:.2}× {} in one repetition (not tested); adding micro-shards stops paying there.",
                    b.topology, a.topology
                ))
            }
        }
    })
}

fn knee_sentence(s: &SweepFile) -> String {
    let mut text = match (s.knee_threads, s.max_threads) {
        (Some(k), Some(m)) => format!("{}: knee at {k} threads (maximum at {m}).", s.label),
        _ => format!("{}: no knee (nothing measured).", s.label),
    };
    for c in crate::experiment::knee_caveats::caveats(s) {
        // Each caveat follows a full stop: it starts a sentence.
        text.push(' ');
        text.push_str(&super::capitalised(&c));
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

    /// Each topology's repetitions at exactly these throughputs (S3).
    fn measured(samples: &[(&str, &[f64])]) -> Report {
        let mut cells = Vec::new();
        for (t, tps) in samples {
            for (i, tp) in tps.iter().enumerate() {
                cells.push(cell(t, "S3", i as u32 + 1, *tp));
            }
        }
        let mut cfg = config(false);
        cfg.command.topologies = samples.iter().map(|(t, _)| t.to_string()).collect();
        cfg.command.scenarios = vec!["S3".into()];
        cfg.command.repeat = samples
            .iter()
            .map(|(_, s)| s.len() as u32)
            .max()
            .unwrap_or(1);
        build_from(&cfg, &cells)
    }

    #[test]
    fn micro_shards_pay_until_they_stop() {
        let r = experiment(&[
            ("single", 1000.0),
            ("microshard-2", 1900.0),
            ("microshard-4", 3700.0),
            ("microshard-8", 3650.0),
        ]);
        let f = found(&r, &[]);
        assert!(
            f[0].starts_with(
                "S2: microshard-4 is significantly faster than single: 3.70× (95 % CI 3."
            ),
            "{f:?}"
        );
        assert!(f[0].ends_with("×, p < 0.001)."), "{f:?}");
        assert!(!f[0].contains("fragile"), "n=3 is not fragile: {f:?}");
        assert!(
            f[1].starts_with(
                "S2: microshard-8 is not significantly different from microshard-4: 0.99× (95 % CI "
            ),
            "{f:?}"
        );
        assert!(
            f[1].ends_with("; adding micro-shards stops paying there."),
            "{f:?}"
        );
        // Significantly slower: said so, and it stops paying.
        let r = experiment(&[
            ("single", 1000.0),
            ("microshard-2", 1900.0),
            ("microshard-4", 1500.0),
        ]);
        let f = found(&r, &[]);
        assert!(
            f[1].starts_with("S2: microshard-4 is significantly slower than microshard-2: 0.79×"),
            "{f:?}"
        );
        // A higher mean, significant: it pays, and nothing is said of the step.
        let r = experiment(&[
            ("single", 1000.0),
            ("microshard-2", 1900.0),
            ("microshard-4", 3700.0),
        ]);
        assert_eq!(found(&r, &[]).len(), 1, "{:?}", found(&r, &[]));
    }

    /// Under a capacity model that doubles capacity with the shards: S3's table
    /// marks microshard-2 1.89× `*` (significant) while microshard-4's 3.26× has p ≈ 0.10, and
    /// microshard-4 over microshard-2 is 1.73× with p ≈ 0.16 at n=2. The headline is the
    /// significant topology; nothing "stops paying"; nothing claims "nothing beats".
    #[test]
    fn the_capacity_model_case_is_said_as_the_test_says() {
        let r = measured(&[
            ("single", &[1450.0, 1510.0]),
            ("microshard-2", &[2760.0, 2834.0]),
            ("microshard-4", &[4295.0, 5355.0]),
        ]);
        let f = found(&r, &[]);
        let table = crate::report::render::render(&r, crate::report::Format::Table);
        assert!(table.contains("1.89× *"), "{table}");
        assert!(
            f[0].starts_with(
                "S3: microshard-2 is significantly faster than single: 1.89× (95 % CI 1."
            ),
            "{f:?}"
        );
        assert!(
            f[0].contains(
                "; microshard-4 reaches 3.26× but is not significantly different (95 % CI"
            ),
            "{f:?}"
        );
        assert!(
            f[1].starts_with(
                "S3: microshard-4 over microshard-2: 1.73×, not significant at n=2 (95 % CI "
            ),
            "{f:?}"
        );
        assert!(f[1].contains("needs more repetitions"), "{f:?}");
        let all = f.join("\n");
        for claim in ["stops paying", "nothing beats", "is not faster", "CI 0.00"] {
            assert!(!all.contains(claim), "{claim}: {all}");
        }
    }

    /// A higher mean that is not significant at n=2 (1.79×, p ≈ 0.063) is "not
    /// significant at n=2", never "is not faster … stops paying".
    #[test]
    fn a_step_that_is_not_significant_does_not_stop_paying() {
        let r = measured(&[
            ("single", &[1000.0, 1010.0]),
            ("microshard-2", &[2388.0, 3212.0]),
            ("microshard-4", &[4600.0, 5424.0]),
        ]);
        let f = found(&r, &[]);
        assert_eq!(
            f[1].split(" (").next(),
            Some("S3: microshard-4 over microshard-2: 1.79×, not significant at n=2"),
            "{f:?}"
        );
        assert!(
            f[1].contains(", p=0.063); whether adding micro-shards"),
            "{f:?}"
        );
    }

    /// A slower mean that is not significant is "not significantly
    /// different", never "nothing beats"; one that is significant says "nothing beats" with an
    /// interval below 1× and the fragility of n=2.
    #[test]
    fn nothing_beats_only_what_is_significantly_slower() {
        let r = measured(&[
            ("single", &[9000.0, 19000.0]),
            ("microshard-2", &[5000.0, 9000.0]),
        ]);
        let f = found(&r, &[]);
        assert!(
            f[0].starts_with(
                "S3: microshard-2 is not significantly different from single: 0.50× (95 % CI "
            ),
            "{f:?}"
        );
        assert!(
            f[0].ends_with("; no topology is significantly faster."),
            "{f:?}"
        );
        let r = measured(&[
            ("single", &[13735.0, 15665.0]),
            ("microshard-2", &[6091.0, 8021.0]),
        ]);
        let f = found(&r, &[]);
        assert!(
            f[0].starts_with("S3: nothing beats single: every other topology is significantly slower; the best, microshard-2, reaches 0.48× (95 % CI"),
            "{f:?}"
        );
        assert!(f[0].ends_with("×, p=0.030; n=2: fragile)."), "{f:?}");
        assert!(!f[0].contains("0.00"), "{f:?}");
    }

    /// One repetition: the ratio is given as measured once, never as "fastest".
    #[test]
    fn one_repetition_claims_nothing() {
        let r = measured(&[("single", &[1000.0]), ("microshard-2", &[1090.0])]);
        assert_eq!(
            found(&r, &[])[0],
            "S3: the best other topology, microshard-2, measured 1.09× single in one repetition: not tested (--repeat 2 or more tests it)."
        );
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
            (pays, "S2: microshard-2 is significantly faster than single"),
            (loses, "S2: nothing beats single"),
            (
                with_an_invalid_cell(),
                "S2: no other topology has a valid or degraded figure",
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
                "S2: nothing beats single: every other topology is significantly slower; the best, microshard-2, reaches 0.40×"
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
                "S2: no other topology has a valid or degraded figure to compare with single."
                    .to_string(),
                "Left out: S2 on microshard-2 (invalid) (see Validity).".to_string()
            ]
        );
    }

    /// A thread sweep's findings are its knee, never a ratio or a baseline.
    #[test]
    fn a_thread_sweep_speaks_of_no_ratio_or_baseline() {
        let mut cfg = config(true);
        cfg.command.topologies = vec!["single".into()];
        cfg.command.scenarios = vec!["Q20M".into()];
        let report = build_from(&cfg, &[]);
        let sweep = SweepFile {
            label: "Q20M on single".into(),
            max_threads: Some(16),
            knee_threads: Some(8),
            tolerance: 0.05,
            ..Default::default()
        };
        let f = found(&report, &[("q".into(), sweep)]);
        assert!(
            f[0].starts_with("Q20M on single: knee at 8 threads"),
            "{f:?}"
        );
        let all = f.join(" ");
        for word in ["ratio", "baseline", "compare with", "single figure"] {
            assert!(!all.contains(word), "{word}: {all}");
        }
    }
}
