//! What `diff` must say before its table: where the two experiments differ in how they were
//! measured (backend, duration, records, repetitions, kind), since a ratio across such a
//! difference measures the difference. (Whether each row's change is significant is the
//! comparison of its samples, [`super::stats::compare`].)

use crate::experiment::model::ExperimentConfig;

/// One sentence per way `b` was measured differently from `a`.
pub(crate) fn mismatches(a: &ExperimentConfig, b: &ExperimentConfig) -> Vec<String> {
    let (ca, cb) = (&a.command, &b.command);
    let kind = |c: &ExperimentConfig| match c.command.name.starts_with("sweep-") && c.command.sweep
    {
        true => "sweep",
        false => "compare",
    };
    let secs = |d: Option<u64>| d.map_or("unbounded".to_string(), |s| format!("{s} s"));
    let records = |c: &crate::experiment::model::CompareCommand| match (
        c.workload.full,
        c.workload.records,
    ) {
        (true, _) => "the files' full sizes".to_string(),
        (false, Some(n)) => format!("{n} records"),
        (false, None) => "the default records".to_string(),
    };
    let mut out = Vec::new();
    let mut differs = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("A and B differ in {what}: A {x}, B {y}"));
        }
    };
    differs("kind", kind(a).into(), kind(b).into());
    differs(
        "backend",
        ca.servers.backend.to_string(),
        cb.servers.backend.to_string(),
    );
    differs(
        "duration per cell",
        secs(ca.duration_s),
        secs(cb.duration_s),
    );
    differs("records", records(ca), records(cb));
    differs("repetitions", ca.repeat.to_string(), cb.repeat.to_string());
    differs(
        "server",
        if a.standin { "stand-in" } else { "MongoDB" }.into(),
        if b.standin { "stand-in" } else { "MongoDB" }.into(),
    );
    out
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
