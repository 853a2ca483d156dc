//! `compare --dry-run` and `sweep --dry-run`: what an experiment will do and how long it will
//! measure, said after every input has been checked and before anything is created or started.
//! An hours-long `--full` run is worth one look first (`README.md`, "Reproducing the two seed
//! experiments").

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::checked::Checked;
use super::model::CompareCommand;
use super::sweep::{Resolved, SweepCommand};
use crate::runner::verdict::thousands;
use crate::topology::{Kind, Loaded, TopologySpec};
use crate::workload::{Properties, prop};

/// The first line of every plan.
pub(crate) const HEADER: &str =
    "dry run: every input was checked; nothing was created, started or written";

/// Seconds as `2 h 5 min`, `12 min 30 s` or `45 s`.
fn span(seconds: u64) -> String {
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    match (h, m, s) {
        (0, 0, s) => format!("{s} s"),
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, 0, _) => format!("{h} h"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// `N records of F × L B fields (about S of values)`.
fn data_set(props: &Properties) -> String {
    let count = |p: &prop::Prop<i64>| props.value(p).map_or(0, i64::unsigned_abs);
    let records = count(&prop::RECORDCOUNT);
    let (fields, length) = (count(&prop::FIELDCOUNT), count(&prop::FIELDLENGTH));
    format!(
        "{} records of {fields} × {length} B fields (about {} of values)",
        thousands(records),
        super::metrics::bytes(records.saturating_mul(fields).saturating_mul(length))
    )
}

fn topology_line(spec: &TopologySpec) -> String {
    let hosts = spec.hosts.len().max(1);
    match spec.kind {
        Kind::Standalone => format!("topology {}: one mongod", spec.name),
        Kind::Sharded => format!(
            "topology {}: sharded, {} shard(s) per host on {hosts} host(s), {}-member shard replica sets, behind mongos",
            spec.name,
            spec.shards_per_host,
            spec.shard_members.max(1)
        ),
    }
}

/// The plan of the new `compare` `cmd` asks for, its scenarios resolved as the run would (bad
/// input names the flag or file at fault), its topologies as the server checks loaded them.
pub(crate) fn new_compare_plan(
    checked: &Checked<CompareCommand>,
    results_root: &std::path::Path,
) -> anyhow::Result<String> {
    let cmd = checked.record();
    let (scenarios, note) = super::compare::resolve(cmd, None)?;
    Ok(compare_plan(
        cmd,
        &scenarios,
        &note,
        checked.topologies(),
        results_root,
    ))
}

/// The plan of a new `compare`: its cells, each scenario's phase and size, the topologies and a
/// bound on the time spent measuring (loads excepted: their time is the server's to tell).
pub(crate) fn compare_plan(
    cmd: &CompareCommand,
    scenarios: &BTreeMap<String, Properties>,
    scale_note: &str,
    topologies: &[Loaded],
    results_root: &std::path::Path,
) -> String {
    let mut out = String::new();
    let repeat = cmd.repeat.max(1);
    let cells = cmd.scenarios.len() * topologies.len() * repeat as usize;
    let _ = writeln!(out, "{HEADER}");
    let _ = writeln!(
        out,
        "cells: {} scenario(s) × {} topolog{} × {repeat} repetition(s) = {cells}, on the {} backend",
        cmd.scenarios.len(),
        topologies.len(),
        if topologies.len() == 1 { "y" } else { "ies" },
        cmd.servers.backend
    );
    let _ = writeln!(out, "sizes: {scale_note}");
    for t in topologies {
        let _ = writeln!(out, "{}", topology_line(&t.spec));
    }
    let run_time = scenario_lines(&mut out, cmd, scenarios);
    match &cmd.ceiling {
        Some(spec) => {
            let steps = 1 + super::ceiling::search::MAX_STEPS;
            let searches = cmd.scenarios.len() * topologies.len() * repeat as usize;
            let _ = writeln!(
                out,
                "ceiling: every cell a search at {} (intended latency): a closed-loop probe, open-loop rates climbing ×1.5, a failing rate tried again before it counts, bisected to {} with steps lengthening up to 4×; {repeat} whole search(es) per cell, the topologies taking turns; {searches} searches of at most {steps} steps of {} s to {} s after a warm-up, at most {} threads a step",
                spec.bounds_shown(),
                spec.precision_shown(),
                spec.step_s,
                spec.step_s * 4,
                spec.max_threads
            );
            let _ = writeln!(
                out,
                "measuring: typically about {} s (some 15 steps a search), at most {} s, plus {} load(s), bring-up and teardown",
                searches as u64 * 15 * (2 * spec.step_s + 1),
                searches as u64 * steps as u64 * (4 * spec.step_s + 1),
                topologies.len() * repeat as usize
            );
        }
        None => {
            let _ = writeln!(
                out,
                "{}, plus {} load(s), bring-up and teardown, whose time the servers decide",
                measuring_time(cmd, &run_time, topologies.len()),
                topologies.len() * repeat as usize
            );
        }
    }
    let _ = write!(
        out,
        "results: a new directory {}/<date>-{}",
        results_root.display(),
        cmd.name
    );
    out
}

/// One line per scenario (the first loads, the others run, with their bounds and threads);
/// returns how long a topology's run phases take at most: the seconds of those bounded by
/// `maxexecutiontime` (one repetition), and the scenarios bounded by their operation count only.
fn scenario_lines(
    out: &mut String,
    cmd: &CompareCommand,
    scenarios: &BTreeMap<String, Properties>,
) -> (u64, Vec<String>) {
    let (mut bounded_s, mut unbounded) = (0, Vec::new());
    for (i, name) in cmd.scenarios.iter().enumerate() {
        let Some(props) = scenarios.get(name) else {
            continue;
        };
        let threads = props
            .value(&prop::THREADCOUNT)
            .unwrap_or(prop::THREADCOUNT.default);
        if cmd.ceiling.is_some() {
            // A search sets each step's rate, threads and length itself.
            let what = match i {
                0 => format!(
                    "loads {} first, then its steps insert fresh keys",
                    data_set(props)
                ),
                _ => "a run mix on the data loaded".to_string(),
            };
            let _ = writeln!(
                out,
                "scenario {name}: searched: {what}; the probe at {threads} thread(s)"
            );
            continue;
        }
        if i == 0 {
            let _ = writeln!(
                out,
                "scenario {name}: load {}, {threads} thread(s)",
                data_set(props)
            );
            continue;
        }
        let ops = props.value(&prop::OPERATIONCOUNT).unwrap_or(0);
        let bound = match props.value(&prop::MAXEXECUTIONTIME).ok().filter(|s| *s > 0) {
            Some(s) => {
                bounded_s += s;
                format!("at most {}", span(s))
            }
            None => {
                unbounded.push(name.clone());
                "until its operations are done".to_string()
            }
        };
        let _ = writeln!(
            out,
            "scenario {name}: run {} operation(s), {bound}, {threads} thread(s)",
            thousands(ops)
        );
    }
    (bounded_s, unbounded)
}

/// "measuring: at most …": the run phases over every topology and repetition, the thread
/// sweep's points and the scenarios bounded by operation count only.
fn measuring_time(
    cmd: &CompareCommand,
    run_time: &(u64, Vec<String>),
    topologies: usize,
) -> String {
    let (bounded_s, unbounded) = run_time;
    let per_topology = bounded_s * u64::from(cmd.repeat.max(1));
    let mut time = format!(
        "measuring: at most {} of run phases ({} per topology)",
        span(per_topology * topologies as u64),
        span(per_topology)
    );
    if cmd.sweep {
        let points = cmd.sweep_threads.len() as u64 * cmd.sweep_curves();
        let each = cmd.sweep_point_seconds();
        let _ = write!(
            time,
            ", plus a thread sweep of {points} point(s) × {} per topology",
            span(each)
        );
    }
    if !unbounded.is_empty() {
        let _ = write!(
            time,
            ", plus {} bounded by operation count only",
            unbounded.join(", ")
        );
    }
    time
}

/// The plan of a `sweep`: its curves and points, the data set and a bound on the time spent
/// measuring.
pub(crate) fn sweep_plan(cfg: &SweepCommand, resolved: &Resolved) -> String {
    let where_ = cfg.target.shown();
    let mut out = String::new();
    let _ = writeln!(out, "{HEADER}");
    let curves = resolved.variants.len();
    let points = curves * cfg.threads.len();
    let threads: Vec<String> = cfg.threads.iter().map(u32::to_string).collect();
    let _ = writeln!(
        out,
        "sweep: {} on {where_}, {curves} curve(s) × {} thread count(s) ({}) = {points} point(s)",
        resolved.one.name,
        cfg.threads.len(),
        threads.join(", ")
    );
    if let Some(vary) = &cfg.vary {
        let _ = writeln!(
            out,
            "curves: {} = {}, {} repetition(s) each",
            vary.property,
            vary.values.join(", "),
            cfg.repeat
        );
    }
    let _ = writeln!(out, "sizes: {}", resolved.one.scale_note);
    if !cfg.no_load {
        let _ = writeln!(out, "load: {}", data_set(&resolved.base));
    }
    let seconds = cfg.duration.as_secs().max(1);
    let ops = resolved.base.value(&prop::OPERATIONCOUNT).unwrap_or(0);
    let each = if resolved.count_bounded() {
        format!("{} operation(s), at most {}", thousands(ops), span(seconds))
    } else {
        span(seconds)
    };
    let _ = writeln!(out, "each point: {each}");
    let _ = write!(
        out,
        "measuring: at most {}, plus the load, bring-up and teardown",
        span(seconds * points as u64)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_spans_read_as_a_person_writes_them() {
        assert_eq!(thousands(5_000_000), "5,000,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(span(45), "45 s");
        assert_eq!(span(600), "10 min");
        assert_eq!(span(750), "12 min 30 s");
        assert_eq!(span(7200), "2 h");
        assert_eq!(span(9000), "2 h 30 min");
    }

    #[test]
    fn a_sweep_counts_every_curve_of_every_value_and_repetition() {
        let cmd = CompareCommand {
            sweep: true,
            sweep_threads: vec![1, 5],
            sweep_duration_s: Some(2),
            repeat: 3,
            vary: Some(crate::experiment::sweep::Vary {
                property: "readbatchsize".into(),
                values: vec!["1".into(), "10".into()],
            }),
            ..CompareCommand::default()
        };
        let plan = compare_plan(
            &cmd,
            &BTreeMap::new(),
            "toy",
            &[],
            std::path::Path::new("results"),
        );
        assert!(
            plan.contains("a thread sweep of 12 point(s) × 2 s per topology"),
            "{plan}"
        );
    }

    #[test]
    fn a_load_names_its_data_set_size() {
        let props = Properties::from_pairs([
            ("recordcount", "5000000"),
            ("fieldcount", "10"),
            ("fieldlength", "200"),
        ]);
        assert_eq!(
            data_set(&props),
            "5,000,000 records of 10 × 200 B fields (about 9.3 GiB of values)"
        );
    }
}
