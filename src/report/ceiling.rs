//! A ceiling search as a reader sees it: every step (offered and achieved rate, threads, intended
//! latency, why it failed) and the finding under it (README, "Glossary": ceiling, bound).

use crate::experiment::ceiling::{CeilingRecord, StepKind};
use crate::measure::STANDIN_MARKER;

/// The steps table and the finding, for the terminal and `ceiling.txt`.
pub(crate) fn render(record: &CeilingRecord) -> String {
    let mut b = tabled::builder::Builder::new();
    b.push_record([
        "step",
        "kind",
        "offered ops/s",
        "achieved ops/s",
        "threads",
        "intended p50 µs",
        "p99 µs",
        "p99.9 µs",
        "validity",
        "result",
    ]);
    for (i, s) in record.steps.iter().enumerate() {
        let (kind, result) = match (s.kind, &s.failed) {
            (StepKind::Probe, _) => ("probe", "closed loop: where the search starts".to_string()),
            (StepKind::Search, None) => ("search", "sustained".to_string()),
            (StepKind::Confirm, None) => ("confirm", "sustained".to_string()),
            (StepKind::Search, Some(w)) => ("search", format!("failed: {w}")),
            (StepKind::Confirm, Some(w)) => ("confirm", format!("failed: {w}")),
        };
        let latency = |us: u64| match s.kind {
            StepKind::Probe => "—".to_string(),
            _ => us.to_string(),
        };
        b.push_record([
            (i + 1).to_string(),
            kind.to_string(),
            s.offered.map_or("—".into(), |o| format!("{o:.0}")),
            format!("{:.0}", s.achieved),
            s.threads.to_string(),
            latency(s.intended_us[0]),
            latency(s.intended_us[1]),
            latency(s.intended_us[2]),
            s.verdict.clone(),
            result,
        ]);
    }
    let mut t = b.build();
    t.with(tabled::settings::Style::rounded());
    let mut out = String::new();
    if record.standin {
        out.push_str(STANDIN_MARKER);
        out.push('\n');
    }
    let bounds: Vec<String> = record.bounds.iter().map(|b| b.shown()).collect();
    out.push_str(&format!(
        "Ceiling search: {} on {} at {} (intended latency, {:.0} s per step)\n{t}\n{}\n",
        record.workload,
        record.topology,
        bounds.join(", "),
        record.step_s,
        record.finding()
    ));
    out
}
