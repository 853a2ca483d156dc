//! `compare` end to end: single vs 2 and 4 micro-shards on stand-in servers with the capacity
//! model, through the process backend; the table must show the scaling the model implies.

#[path = "experiment_support.rs"]
mod support;

use support::*;

/// Per stand-in mongod: 2 workers × 10⁶ / 5000 µs = 400 ops/s; 32 client threads keep every
/// shard's workers busy, so N micro-shards should give N× the single node.
const SERVICE_TIME_US: &str = "5000";
const WORKERS: &str = "2";

#[test]
fn compare_scales_with_the_capacity_model() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let state = tmp.path().join("state");
    let results = tmp.path().join("results");
    let bin_dir = standin_bin_dir(tmp.path());
    let port = free_base_port(12);
    let out = microshard(&state)
        .args([
            "compare",
            "--topologies",
            "single,microshard-2,microshard-4",
        ])
        .args(["--scenarios", "S1,S2,S5", "--backend", "process"])
        .arg("--bin-dir")
        .arg(&bin_dir)
        .arg(format!("--mongod-arg=--service-time-us={SERVICE_TIME_US}"))
        .arg(format!("--mongod-arg=--workers={WORKERS}"))
        .args(["--records", "2000", "--duration", "3s", "--threads", "32"])
        .args([
            "--base-port",
            &port.to_string(),
            "--format",
            "markdown",
            "-q",
        ])
        .arg("--out")
        .arg(&results)
        .output()
        .expect("run microshard compare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_nothing_left(&state);

    let dir = run_dir(&results);
    for topo in ["single", "microshard-2", "microshard-4"] {
        for s in ["S1", "S2", "S5"] {
            let cell = dir.join("cells").join(topo).join(format!("{s}-r1.json"));
            let text = std::fs::read_to_string(&cell).unwrap_or_default();
            let v: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", cell.display()));
            assert_eq!(v["summary"]["standin"], true, "{}", cell.display());
        }
    }

    // Markdown: the stand-in marker, then a table whose rows all have the header's width.
    assert!(
        stdout.starts_with("**STAND-IN FIGURES — not MongoDB**"),
        "{stdout}"
    );
    let table: Vec<&str> = stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 2 + 9, "{stdout}");
    let width = table[0].matches(" | ").count();
    assert!(
        table.iter().all(|l| l.matches(" | ").count() == width),
        "{stdout}"
    );

    // CSV: parses, every row marked stand-in, scaling within ±20% of the model.
    let csv = std::fs::read_to_string(dir.join("report.csv")).expect("report.csv");
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 9);
    for r in &rows {
        assert_eq!(r["figures"], "stand-in");
        let ratio: f64 = r["vs_baseline"].parse().expect("ratio parses");
        let expected = match r["topology"].as_str() {
            "single" => 1.0,
            "microshard-2" => 2.0,
            "microshard-4" => 4.0,
            other => panic!("unexpected topology {other}"),
        };
        if expected == 1.0 {
            assert!((ratio - 1.0).abs() < 1e-9, "baseline row {r:?}");
        } else {
            assert!(
                (ratio / expected - 1.0).abs() <= 0.2,
                "{} {}: {ratio:.2}× where the capacity model implies {expected}×\n{csv}",
                r["scenario"],
                r["topology"]
            );
        }
    }
    for f in [
        "report.md",
        "report.json",
        "throughput.svg",
        "latency.svg",
        "experiment.json",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let svg = std::fs::read_to_string(dir.join("throughput.svg")).unwrap_or_default();
    assert!(svg.contains("stand-in"));
}
