//! One row of the comparison table: a scenario's cells on one topology, their figures and what
//! is said of them, against the baseline's cells of that scenario.

use super::{Row, stats};
use crate::experiment::model::{CellFile, ExperimentConfig, Latency};
use crate::measure::validity::{Validity, Verdict};

/// Client CPU utilisation above which the client, not the server, is the likely bottleneck.
const CLIENT_BOUND_UTILISATION: f64 = 0.85;
/// Fraction of the calibrated client ceiling above which the client is the likely bottleneck.
const CLIENT_BOUND_CEILING: f64 = 0.9;

/// The baseline's cells of one scenario, as each row of it is compared against them.
pub(super) struct Against {
    throughputs: Vec<f64>,
    mean: Option<f64>,
    verdict: Verdict,
}

impl Against {
    pub(super) fn of(group: &[&CellFile]) -> Against {
        let throughputs = throughputs(group);
        let verdict = (group.iter().map(|c| c.summary.validity.verdict).max()).unwrap_or_default();
        let mean = stats::mean(&throughputs);
        Against {
            throughputs,
            mean,
            verdict,
        }
    }
}

/// What the rows say beside their figures, each line naming its row.
#[derive(Default)]
pub(super) struct Said {
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

fn throughputs(group: &[&CellFile]) -> Vec<f64> {
    group.iter().map(|c| c.summary.throughput).collect()
}

/// The row of `group`, the cells of `scenario` on `topology` (the baseline or not).
pub(super) fn row(
    config: &ExperimentConfig,
    (scenario, topology, is_baseline): (&str, String, bool),
    group: &[&CellFile],
    base: &Against,
    said: &mut Said,
) -> Row {
    let tp = throughputs(group);
    let mean_tp = stats::mean(&tp);
    let lines = (group.iter())
        .flat_map(|c| (c.warnings.iter()).chain(c.server.iter().flat_map(|s| &s.warnings)));
    (said.warnings).extend(lines.map(|w| format!("{scenario}/{topology}: {w}")));
    let validity = group.iter().fold(Validity::valid(), |mut acc, c| {
        acc.merge(&c.summary.validity);
        acc
    });
    let flagged = group.iter().map(|c| (c.cell.repeat, &c.summary.validity));
    said.notes
        .extend(flagged.filter(|(_, v)| !v.is_valid()).map(|(repeat, v)| {
            let summary = v.summary();
            format!(
                "{scenario}/{topology} #{repeat} is {}: {summary}",
                v.verdict
            )
        }));
    // An invalid figure is not a result: nothing is tested on it, or against it.
    let tested =
        !is_baseline && validity.verdict != Verdict::Invalid && base.verdict != Verdict::Invalid;
    let client_cpu = mean_of(group.iter().map(|c| c.summary.client_cpu_utilisation()));
    let client_bound = client_bound(config.client_ceiling, client_cpu, mean_tp);
    if let Some(why) = &client_bound {
        said.warnings.push(format!(
            "{scenario}/{topology}: the client is probably the bottleneck ({why}), not the server"
        ));
    }
    Row {
        scenario: scenario.to_string(),
        topology,
        repeats: group.len(),
        threads: group.last().map(|c| c.summary.threads),
        load: !group.is_empty() && group.iter().all(|c| c.summary.phase == "load"),
        throughput: mean_tp,
        vs_baseline: match (mean_tp, base.mean) {
            (Some(t), Some(b)) if b > 0.0 => Some(t / b),
            _ => None,
        },
        spread: (tp.len() > 1).then(|| stats::range(&tp)),
        stddev: stats::stddev(&tp),
        significance: tested
            .then(|| stats::compare(&tp, &base.throughputs))
            .flatten(),
        samples: tp,
        main_op: group.last().map(|c| c.summary.main_op.clone()),
        latency: merged_latency(group),
        errors: group.iter().map(|c| c.summary.errors).sum(),
        verdict: match group.is_empty() {
            true => "not measured".into(),
            false => validity.verdict.to_string(),
        },
        validity,
        baseline_not_valid: base.verdict != Verdict::Valid && !is_baseline,
        baseline_verdict: base.verdict,
        client_cpu,
        cpu_us_per_op: mean_of(group.iter().map(|c| c.summary.cpu_us_per_op())),
        server_cpu_us_per_op: mean_of(group.iter().map(|c| c.summary.server_cpu_us_per_op())),
        client_bound: client_bound.is_some(),
        standin: group.iter().any(|c| c.summary.standin),
        ..Row::default()
    }
}

/// Why the client, not the server, probably bounded a row's throughput: near this machine's
/// calibrated client ceiling, or its CPU nearly full; `None` when neither.
fn client_bound(ceiling: Option<f64>, cpu: Option<f64>, tp: Option<f64>) -> Option<String> {
    let near_ceiling = match (ceiling, tp) {
        (Some(ceiling), Some(tp)) if ceiling > 0.0 => tp >= ceiling * CLIENT_BOUND_CEILING,
        _ => false,
    };
    match (near_ceiling, cpu) {
        (true, _) => Some("throughput near this machine's calibrated client ceiling".into()),
        (false, Some(u)) if u >= CLIENT_BOUND_UTILISATION => {
            Some(format!("client CPU at {:.0}% of its cores", u * 100.0))
        }
        _ => None,
    }
}

fn mean_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    stats::mean(&v)
}

/// The main operation's latency over a row's repetitions: the percentiles of their histograms
/// added, as several clients' are merged (`docs/result-schema.md`, "Merging"); averaged only
/// where a cell's histograms cannot be read.
fn merged_latency(group: &[&CellFile]) -> Option<Latency> {
    match group {
        [] => None,
        [one] => Some(one.summary.latency.clone()),
        _ => {
            let docs: Vec<_> = group.iter().map(|c| c.result.clone()).collect();
            crate::measure::RunDocument::merge(&docs)
                .ok()
                .filter(|m| !m.measurements.is_empty())
                .map(|m| crate::experiment::summary::summarize(&m).latency)
                .or_else(|| Some(mean_latency(group)))
        }
    }
}

/// Two or more cells' latencies averaged, where their histograms cannot be added.
fn mean_latency(group: &[&CellFile]) -> Latency {
    let n = group.len() as f64;
    let all = |f: fn(&Latency) -> f64| group.iter().map(move |c| f(&c.summary.latency));
    let avg = |f: fn(&Latency) -> f64| all(f).sum::<f64>() / n;
    Latency {
        avg: avg(|l| l.avg),
        min: all(|l| l.min).fold(f64::INFINITY, f64::min),
        max: all(|l| l.max).fold(0.0, f64::max),
        p50: avg(|l| l.p50),
        p95: avg(|l| l.p95),
        p99: avg(|l| l.p99),
        p999: avg(|l| l.p999),
    }
}
