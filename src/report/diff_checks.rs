//! What `diff` must say before its table: where the two experiments differ in how they were
//! measured (backend, duration, records, repetitions, kind), since a ratio across such a
//! difference measures the difference. (Whether each row's change is significant is the
//! comparison of its samples, [`super::stats::compare`].)

use crate::experiment::model::ExperimentConfig;

/// What makes two runs measure different things altogether, so that no row of theirs is
/// compared: the ceiling search's bound, step length and precision (or none), and the stand-in's
/// capacity model. `None` when they measured the same thing.
pub(crate) fn unlike(a: &ExperimentConfig, b: &ExperimentConfig) -> Vec<String> {
    type Fact = fn(&ExperimentConfig) -> String;
    let facts: [(&str, Fact); 2] = [
        ("search", |c| match &c.command.ceiling {
            Some(s) => format!(
                "ceilings at {}, {} s steps, {}",
                s.bounds_shown(),
                s.step_s,
                s.precision_shown()
            ),
            None => "closed-loop throughput".into(),
        }),
        ("capacity model", |c| {
            match super::capacity::model(&c.command.servers.mongod_args) {
                Some((w, us)) => format!("{w} worker(s) × {us} µs"),
                None => "none".into(),
            }
        }),
    ];
    facts
        .into_iter()
        .map(|(what, fact)| (what, fact(a), fact(b)))
        .filter(|(_, x, y)| x != y)
        .map(|(what, x, y)| format!("{what}: A {x}, B {y}"))
        .collect()
}

/// Why one scenario's rows of A and B measure different workloads, if they do: a resolved
/// property that differs (the first, named), or a different main operation.
pub(crate) fn scenario_unlike(
    (a, b): (&ExperimentConfig, &ExperimentConfig),
    scenario: &str,
    (op_a, op_b): (Option<&str>, Option<&str>),
) -> Option<String> {
    if let (Some(x), Some(y)) = (op_a, op_b)
        && x != y
    {
        return Some(format!("main operation: A {x}, B {y}"));
    }
    let (pa, pb) = (a.properties.get(scenario)?, b.properties.get(scenario)?);
    let (ma, mb) = (pa.by_name(), pb.by_name());
    let keys = ma.keys().chain(mb.keys());
    let differs = keys
        .filter(|k| !matches!(**k, "mongodb.url" | "threadcount" | "label"))
        .find(|k| ma.get(*k) != mb.get(*k))?;
    Some(format!(
        "workload: {differs} A {}, B {}",
        ma.get(differs).unwrap_or(&"unset"),
        mb.get(differs).unwrap_or(&"unset")
    ))
}

/// One sentence per way `b` was measured differently from `a`.
pub(crate) fn mismatches(a: &ExperimentConfig, b: &ExperimentConfig) -> Vec<String> {
    type Fact = fn(&ExperimentConfig) -> String;
    let facts: [(&str, Fact); 6] = [
        ("kind", |c| {
            match c.command.name.starts_with("sweep-") && c.command.sweep {
                true => "sweep".into(),
                false => "compare".into(),
            }
        }),
        ("backend", |c| c.command.servers.backend.to_string()),
        ("duration per cell", |c| {
            c.command
                .duration_s
                .map_or("unbounded".to_string(), |s| format!("{s} s"))
        }),
        ("records", |c| {
            match (c.command.workload.full, c.command.workload.records) {
                (true, _) => "the files' full sizes".to_string(),
                (false, Some(n)) => format!("{n} records"),
                (false, None) => "the default records".to_string(),
            }
        }),
        ("repetitions", |c| c.command.repeat.to_string()),
        ("server", |c| {
            if c.standin { "stand-in" } else { "MongoDB" }.to_string()
        }),
    ];
    facts
        .into_iter()
        .map(|(what, fact)| (what, fact(a), fact(b)))
        .filter(|(_, x, y)| x != y)
        .map(|(what, x, y)| format!("A and B differ in {what}: A {x}, B {y}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_at_other_bounds_and_other_workloads_are_unlike() {
        let a = crate::report::tests::config(false);
        let mut b = a.clone();
        assert!(unlike(&a, &b).is_empty());
        let spec = |slo: &str| crate::experiment::slo::SearchSpec {
            bounds: crate::experiment::slo::Bound::parse_list(slo).unwrap_or_default(),
            step_s: 1,
            precision: 0.05,
            max_threads: 64,
        };
        let mut a = a;
        a.command.ceiling = Some(spec("p99=10ms"));
        b.command.ceiling = Some(spec("p99=200ms"));
        let u = unlike(&a, &b).join("\n");
        assert!(
            u.contains(
                "search: A ceilings at p99 ≤ 10.0 ms, 1 s steps, 5 %, B ceilings at p99 ≤ 200.0 ms"
            ),
            "{u}"
        );
        let ops = (Some("READ"), Some("INSERT"));
        let said = scenario_unlike((&a, &b), "S5", ops).unwrap_or_default();
        assert_eq!(said, "main operation: A READ, B INSERT");
        assert_eq!(
            scenario_unlike((&a, &b), "S5", (Some("READ"), Some("READ"))),
            None
        );
    }

    #[test]
    fn differences_in_how_they_were_measured_are_named() {
        let a = crate::report::tests::config(false);
        let mut b = a.clone();
        assert!(mismatches(&a, &b).is_empty());
        b.command.duration_s = Some(2);
        b.command.repeat = a.command.repeat + 1;
        b.command.servers.backend = crate::topology::BackendKind::Docker;
        let m = mismatches(&a, &b).join("\n");
        assert!(m.contains("differ in backend: A process, B docker"), "{m}");
        assert!(m.contains("differ in repetitions"), "{m}");
        assert!(m.contains("differ in duration per cell"), "{m}");
    }
}
