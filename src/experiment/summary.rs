//! Extracts the figures reports need from a runner result document (its JSON form), so that
//! reports read a small stable summary and the full document is kept beside it untouched.

use serde_json::Value;

use super::model::{CellSummary, Latency};

fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k)?.as_f64()
}

fn u(v: &Value, k: &str) -> Option<u64> {
    v.get(k)?.as_u64()
}

/// True for the measurements that carry an operation's actual latencies and statuses.
fn is_operation(m: &Value) -> bool {
    let name = m.get("name").and_then(Value::as_str).unwrap_or("");
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or("actual");
    kind == "actual"
        && !name.is_empty()
        && !name.ends_with("-FAILED")
        && !name.starts_with("Intended-")
        && !name.eq_ignore_ascii_case("CLEANUP")
}

/// Builds the summary of a result document; fields it lacks stay at their defaults.
pub fn summarize(doc: &Value) -> CellSummary {
    let empty = Vec::new();
    let measurements = doc
        .get("measurements")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let ops: Vec<&Value> = measurements.iter().filter(|m| is_operation(m)).collect();
    let main = ops
        .iter()
        .max_by_key(|m| u(m, "count").unwrap_or(0))
        .copied();
    let errors: u64 = ops
        .iter()
        .flat_map(|m| {
            m.get("statuses")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter(|s| {
            !matches!(
                s.get("status").and_then(Value::as_str),
                Some("OK") | Some("BATCHED_OK")
            )
        })
        .filter_map(|s| u(&s, "count"))
        .sum();
    let latency = main
        .map(|m| Latency {
            avg: f(m, "mean").unwrap_or(0.0),
            min: f(m, "min").unwrap_or(0.0),
            max: f(m, "max").unwrap_or(0.0),
            p50: f(m, "p50").unwrap_or(0.0),
            p95: f(m, "p95").unwrap_or(0.0),
            p99: f(m, "p99").unwrap_or(0.0),
            p999: f(m, "p99_9").unwrap_or(0.0),
        })
        .unwrap_or_default();
    let cpu = doc.get("client_cpu").and_then(|c| {
        let user = u(c, "user_us")?;
        let sys = u(c, "system_us").unwrap_or(0);
        Some((user + sys) as f64 / 1e6)
    });
    let server = doc.get("server").cloned().unwrap_or(Value::Null);
    CellSummary {
        phase: doc
            .get("phase")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        threads: u(&server, "threads")
            .and_then(|t| u32::try_from(t).ok())
            .unwrap_or(0),
        operations: u(doc, "operations").unwrap_or(0),
        runtime_ms: f(doc, "runtime_ms").unwrap_or(0.0),
        throughput: f(doc, "throughput").unwrap_or(0.0),
        main_op: main
            .and_then(|m| m.get("name").and_then(Value::as_str))
            .unwrap_or("")
            .to_string(),
        latency,
        errors,
        client_cpu_s: cpu,
        client_cores: doc
            .get("host")
            .and_then(|h| u(h, "cpu_count"))
            .and_then(|n| u32::try_from(n).ok()),
        standin: server
            .get("standin")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        server_version: server
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

/// How many inserts a run attempted (every status counts: each one consumed a key number), so
/// the next scenario on the same data knows how many documents exist.
pub fn insert_attempts(doc: &Value) -> u64 {
    let empty = Vec::new();
    let measurements = doc
        .get("measurements")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let by_status: u64 = measurements
        .iter()
        .filter(|m| m.get("name").and_then(Value::as_str) == Some("INSERT"))
        .filter(|m| m.get("kind").and_then(Value::as_str).unwrap_or("actual") == "actual")
        .flat_map(|m| {
            m.get("statuses")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|s| u(&s, "count"))
        .sum();
    let by_latency: u64 = measurements
        .iter()
        .filter(|m| {
            let name = m.get("name").and_then(Value::as_str).unwrap_or("");
            name == "INSERT" || name.starts_with("INSERT-")
        })
        .filter(|m| m.get("kind").and_then(Value::as_str).unwrap_or("actual") == "actual")
        .filter_map(|m| u(m, "count"))
        .sum();
    by_status.max(by_latency)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_main_operation_and_counts_errors() {
        let doc = serde_json::json!({
            "phase": "run",
            "runtime_ms": 2000,
            "operations": 1000,
            "throughput": 500.0,
            "host": {"cpu_count": 2},
            "client_cpu": {"user_us": 300000, "system_us": 100000},
            "server": {"standin": true, "version": "7.0.0-standin", "threads": 16},
            "measurements": [
                {"name": "READ", "kind": "actual", "count": 100, "mean": 50.5, "min": 1, "max": 900,
                 "p50": 40, "p95": 80, "p99": 120, "p99_9": 800,
                 "statuses": [{"status": "OK", "count": 98}, {"status": "NOT_FOUND", "count": 2}]},
                {"name": "UPDATE", "kind": "actual", "count": 900, "mean": 70.0, "min": 2, "max": 1000,
                 "p50": 60, "p95": 100, "p99": 150, "p99_9": 950,
                 "statuses": [{"status": "OK", "count": 897}, {"status": "ERROR", "count": 3}]},
                {"name": "UPDATE-FAILED", "kind": "actual", "count": 3, "mean": 5.0,
                 "statuses": []},
                {"name": "Intended-UPDATE", "kind": "intended", "count": 9000, "mean": 1.0,
                 "statuses": [{"status": "ERROR", "count": 3}]}
            ]
        });
        let s = summarize(&doc);
        assert_eq!(s.main_op, "UPDATE");
        assert_eq!(s.errors, 5);
        assert_eq!(s.threads, 16);
        assert!(s.standin);
        assert_eq!(s.server_version.as_deref(), Some("7.0.0-standin"));
        assert_eq!(s.latency.p999, 950.0);
        assert_eq!(s.throughput, 500.0);
        assert_eq!(s.client_cpu_s, Some(0.4));
        assert_eq!(s.cpu_us_per_op(), Some(400.0));
        assert_eq!(s.client_cpu_utilisation(), Some(0.1));
    }

    #[test]
    fn counts_insert_attempts_of_every_status() {
        let doc = serde_json::json!({"measurements": [
            {"name": "READ", "kind": "actual", "count": 50, "statuses": [{"status": "OK", "count": 50}]},
            {"name": "INSERT", "kind": "actual", "count": 7,
             "statuses": [{"status": "OK", "count": 7}, {"status": "ERROR", "count": 2}]},
            {"name": "INSERT-FAILED", "kind": "actual", "count": 2, "statuses": []},
            {"name": "Intended-INSERT", "kind": "intended", "count": 9, "statuses": []}
        ]});
        assert_eq!(insert_attempts(&doc), 9);
        assert_eq!(insert_attempts(&serde_json::json!({})), 0);
    }

    #[test]
    fn empty_document_gives_defaults() {
        let s = summarize(&serde_json::json!({}));
        assert_eq!(s, CellSummary::default());
    }
}
