//! Every throughput is the operations completed in the measured window over that window, for each
//! option that shapes the window (`--warmup` on a load and a run, `--clients`, `-target`,
//! `compare --repeat`): throughput × runtime = operations, and operations = what the histograms
//! counted in the same window, each within 1 % (`docs/result-schema.md`, "runtime_ms").
//!
//! The stand-in runs a capacity model (2 workers × 1 ms per operation = 2,000 ops/s), so each
//! phase lasts long enough for a warm-up to leave out a real share of its operations.

use std::path::Path;

use serde_json::Value;

use crate::util::{Root, StandinProcess, assert_ok, cells_under, free_base_port};

const CAPACITY: [&str; 4] = ["--service-time-us", "1000", "--workers", "2"];

/// Operations the window's latency histograms counted: the client's own operations, not the
/// intended-latency copies and not the cleanup.
fn histogram_operations(doc: &Value) -> u64 {
    doc["measurements"]
        .as_array()
        .expect("measurements")
        .iter()
        .filter(|m| m["kind"] == "actual" && m["name"] != "CLEANUP")
        .map(|m| m["count"].as_u64().unwrap_or(0))
        .sum()
}

fn within_one_percent(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.01 * a.max(b).max(1.0)
}

/// The document's figure is its own window's: throughput × runtime = operations = the histograms'.
fn assert_window(doc: &Value, what: &str) {
    let ops = doc["operations"].as_u64().expect("operations") as f64;
    let runtime_s = doc["runtime_ms"].as_u64().expect("runtime_ms") as f64 / 1000.0;
    let throughput = doc["throughput"].as_f64().expect("throughput");
    assert!(ops > 0.0, "{what}: nothing measured: {doc}");
    assert!(
        within_one_percent(throughput * runtime_s, ops),
        "{what}: {throughput} ops/s × {runtime_s} s ≠ {ops} operations"
    );
    let counted = histogram_operations(doc) as f64;
    assert!(
        within_one_percent(counted, ops),
        "{what}: the histograms counted {counted} operations in the window, the figure {ops}"
    );
}

fn result(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("result file")).expect("json")
}

/// Runs one engine command line (after `--uri URI`) with `--json`, exit 0, and returns its result.
fn phase(root: &Root, uri: &str, args: &str, name: &str) -> Value {
    let json = root.path.join(format!("{name}.json"));
    let out = root.output_line(&format!("{args} --uri {uri} --json {}", json.display()));
    assert_ok(&out, name);
    result(&json)
}

#[test]
fn a_load_with_a_warmup_counts_only_the_inserts_after_it() {
    let root = Root::new();
    let server = StandinProcess::start_with(&root.path.join("db"), &CAPACITY);
    let doc = phase(
        &root,
        &server.uri(),
        "load -p recordcount=3000 --threads 8 --warmup 500ms",
        "load",
    );
    assert_window(&doc, "load --warmup");
    // About a third of the 1.5 s load falls in the warm-up and is left out of the figure.
    let ops = doc["operations"].as_u64().unwrap_or(0);
    assert!(
        ops < 2_700,
        "the warm-up's inserts are not in the figure: {ops}"
    );
    let throughput = doc["throughput"].as_f64().unwrap_or(0.0);
    assert!(
        throughput < 2_300.0,
        "a 2,000 ops/s server measured at {throughput} ops/s"
    );
}

#[test]
fn a_run_with_a_warmup_and_a_target_counts_its_own_window() {
    let root = Root::new();
    let server = StandinProcess::start_with(&root.path.join("db"), &CAPACITY);
    let uri = server.uri();
    phase(&root, &uri, "load -p recordcount=500 --threads 8", "load");
    let warm = phase(
        &root,
        &uri,
        "run -p recordcount=500 -p operationcount=3000 --threads 8 --warmup 500ms",
        "warm",
    );
    assert_window(&warm, "run --warmup");
    let paced = phase(
        &root,
        &uri,
        "run -p recordcount=500 -p operationcount=1500 --threads 8 --target 1000 -p measurement.interval=both",
        "paced",
    );
    assert_window(&paced, "run -target");
}

#[test]
fn several_clients_with_a_warmup_count_the_common_window() {
    let root = Root::new();
    let server = StandinProcess::start_with(&root.path.join("db"), &CAPACITY);
    let doc = phase(
        &root,
        &server.uri(),
        "load -p recordcount=3000 --threads 8 --clients 2 --warmup 500ms",
        "clients",
    );
    assert_window(&doc, "load --clients 2 --warmup");
}

#[test]
fn every_cell_of_a_repeated_compare_with_a_warmup_counts_its_window() {
    let root = Root::new();
    let base = free_base_port(4);
    let out = root.output_line(&format!(
        "compare --mongod-arg=--service-time-us=1000 --mongod-arg=--workers=2 \
         --topologies single --scenarios S1,S5 --records 3000 --duration 1s --warmup 500ms \
         --repeat 2 --base-port {base} -q {}",
        root.on_process()
    ));
    assert!(
        matches!(out.status.code(), Some(0) | Some(3)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cells = cells_under(&root.path.join("results"));
    assert_eq!(cells.len(), 4, "S1 and S5, twice each");
    for cell in &cells {
        let what = cell["cell"].to_string();
        assert_window(&cell["result"], &what);
    }
}
