//! Extracts the figures reports need from a runner result document, so that reports read a small
//! stable summary and the full document is kept beside it untouched.

use super::model::{CellSummary, Latency};
use crate::measure::{MapKind, MeasurementResult, RunDocument, Status};

/// True for the measurements that carry an operation's actual latencies and statuses.
fn is_operation(m: &MeasurementResult) -> bool {
    m.kind == MapKind::Actual
        && !m.name.is_empty()
        && !m.name.ends_with("-FAILED")
        && !m.name.starts_with("Intended-")
        && !m.name.eq_ignore_ascii_case("CLEANUP")
}

/// Builds the summary of a result document.
pub(crate) fn summarize(doc: &RunDocument) -> CellSummary {
    let ops: Vec<&MeasurementResult> = doc
        .measurements
        .iter()
        .filter(|m| is_operation(m))
        .collect();
    let main = ops.iter().max_by_key(|m| m.count).copied();
    let errors: u64 = ops
        .iter()
        .flat_map(|m| m.statuses.iter())
        .filter(|s| !matches!(s.status, Status::Ok | Status::BatchedOk))
        .map(|s| s.count)
        .sum();
    let latency = main
        .map(|m| Latency {
            avg: m.mean,
            min: m.min as f64,
            max: m.max as f64,
            p50: m.p50 as f64,
            p95: m.p95 as f64,
            p99: m.p99 as f64,
            p999: m.p99_9 as f64,
        })
        .unwrap_or_default();
    CellSummary {
        phase: doc.phase.clone(),
        threads: doc
            .server
            .threads
            .and_then(|t| u32::try_from(t).ok())
            .unwrap_or(0),
        operations: doc.operations,
        runtime_ms: doc.runtime_ms as f64,
        throughput: doc.throughput.unwrap_or(0.0),
        main_op: main.map(|m| m.name.clone()).unwrap_or_default(),
        latency,
        errors,
        client_cpu_s: Some(doc.client_cpu.total_us() as f64 / 1e6),
        client_cores: u32::try_from(doc.host.cpu_count).ok(),
        server_cpu_s: (doc.host_load.as_ref())
            .filter(|h| !h.server_cpu_us.is_empty())
            .map(|h| h.server_cpu_us.values().sum::<u64>() as f64 / 1e6),
        standin: doc.server.standin,
        server_version: doc.server.version.clone(),
        write_concern: doc.server.write_concern.clone(),
        validity: doc.validity.clone(),
    }
}

/// The sentence a cell carries when its server CPU is summed over some members only: which
/// were summed, and which were not found (elsewhere, in a container, or no process listening
/// on their port), so a partial figure is never read as the whole deployment's.
pub(crate) fn partial_server_cpu(doc: &RunDocument) -> Option<String> {
    let load = doc.host_load.as_ref()?;
    if load.server_cpu_us.is_empty() || load.server_cpu_missing.is_empty() {
        return None;
    }
    let summed: Vec<&str> = load.server_cpu_us.keys().map(String::as_str).collect();
    Some(format!(
        "server CPU is summed over {} only: {} not found on this machine (run elsewhere, in a container, or no process found listening on its port), so CPU per operation leaves them out",
        summed.join(", "),
        load.server_cpu_missing.join(", ")
    ))
}

/// How many inserts a run attempted (every status counts: each one consumed a key number), so
/// the next scenario on the same data knows where its own inserts start.
///
/// Not by successful inserts only (issue 31 suggests it): YCSB's insert key sequence
/// acknowledges a key number whatever the insert's status, so a failed insert leaves a gap
/// *inside* the range, not at its end. Growing `recordcount` by successes would not close that
/// gap (reads still find it NOT_FOUND, and the cell that failed counts it among its errors) and
/// would start the next cell's inserts on keys that exist, each a duplicate-key error; an insert
/// that timed out may also have been applied.
pub(crate) fn insert_attempts(doc: &RunDocument) -> u64 {
    let actual = |m: &&MeasurementResult| m.kind == MapKind::Actual;
    let by_status: u64 = doc
        .measurements
        .iter()
        .filter(actual)
        .filter(|m| m.name == "INSERT")
        .flat_map(|m| m.statuses.iter())
        .map(|s| s.count)
        .sum();
    let by_latency: u64 = doc
        .measurements
        .iter()
        .filter(actual)
        .filter(|m| m.name == "INSERT" || m.name.starts_with("INSERT-"))
        .map(|m| m.count)
        .sum();
    by_status.max(by_latency)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{MeasurementConfig, Measurements, Overall};

    fn document(records: &[(&str, u64, Status)]) -> RunDocument {
        let m = Measurements::new(MeasurementConfig::default());
        let c = m.client();
        for &(op, us, status) in records {
            c.record(op, us, None, status);
        }
        let t0 = chrono::Utc::now();
        let overall = Overall {
            runtime_ms: 2000,
            operations: records.len() as u64,
        };
        let mut d = RunDocument::new("run", t0, t0, &overall, &m.finish())
            .unwrap_or_else(|e| panic!("{e}"));
        d.server.threads = Some(16);
        d.server.standin = true;
        d.server.version = Some("7.0.0-standin".into());
        d
    }

    #[test]
    fn a_partial_server_cpu_names_the_members_left_out() {
        let mut d = document(&[("READ", 10, Status::Ok)]);
        let load = |found: &[&str], missing: &[&str]| crate::measure::host_load::HostLoad {
            server_cpu_us: found.iter().map(|n| (n.to_string(), 1_000)).collect(),
            server_cpu_missing: missing.iter().map(|n| n.to_string()).collect(),
            ..Default::default()
        };
        d.host_load = Some(load(&["mongos", "sh0"], &["cfg0", "sh1"]));
        let said = partial_server_cpu(&d).unwrap_or_default();
        assert!(
            said.starts_with(
                "server CPU is summed over mongos, sh0 only: cfg0, sh1 not found on this machine"
            ),
            "{said}"
        );
        // Every member found, or none (the figure is "not reported" then): nothing to say.
        d.host_load = Some(load(&["mongos", "sh0"], &[]));
        assert_eq!(partial_server_cpu(&d), None);
        d.host_load = Some(load(&[], &["sh0"]));
        assert_eq!(partial_server_cpu(&d), None);
    }

    #[test]
    fn picks_main_operation_and_counts_errors() {
        let mut records = vec![("READ", 40, Status::Ok); 3];
        records.push(("READ", 50, Status::NotFound));
        records.extend(vec![("UPDATE", 60, Status::Ok); 5]);
        records.push(("UPDATE", 70, Status::Error));
        let s = summarize(&document(&records));
        assert_eq!(s.main_op, "UPDATE");
        assert_eq!(s.errors, 2);
        assert_eq!(s.threads, 16);
        assert!(s.standin);
        assert_eq!(s.server_version.as_deref(), Some("7.0.0-standin"));
        assert_eq!(s.operations, 10);
        assert_eq!(s.throughput, 5.0);
    }

    #[test]
    fn counts_insert_attempts_of_every_status() {
        let mut records = vec![("READ", 40, Status::Ok); 5];
        records.extend(vec![("INSERT", 60, Status::Ok); 7]);
        records.extend(vec![("INSERT", 60, Status::Error); 2]);
        assert_eq!(insert_attempts(&document(&records)), 9);
        assert_eq!(insert_attempts(&document(&[])), 0);
    }
}
