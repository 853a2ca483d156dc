//! What `diff` must say before its table: where the two experiments differ in how they were
//! measured (backend, duration, records, repetitions, kind), since a ratio across such a
//! difference measures the difference. (Whether each row's change is significant is the
//! comparison of its samples, [`super::stats::compare`].)

use crate::experiment::model::ExperimentConfig;

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
