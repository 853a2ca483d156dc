//! `compare` end to end: single vs 2 and 4 micro-shards on stand-in servers with the capacity
//! model, through the process backend; the table must show the scaling the model implies.

use crate::util::*;

/// Per stand-in mongod: 2 workers × 10⁶ / 20 000 µs = 100 ops/s (at most 400 ops/s for four
/// shards: far below what a loaded 2-core machine pushes through mongos, so the capacity model,
/// not the CPU, decides); 64 client threads keep every shard's workers busy, so N micro-shards
/// should give N× the single node. 1200 records keep the load phase's drain tail (fixed work per
/// thread) small next to its length.
const SERVICE_TIME_US: &str = "20000";
const WORKERS: &str = "2";

#[test]
fn compare_scales_with_the_capacity_model() {
    let _alone = one_at_a_time();
    let Scratch(_tmp, state, results, bin_dir) = Scratch::new();
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
        .args(["--records", "1200", "--duration", "5s", "--threads", "64"])
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
    crate::util::assert_ok(&out, "compare");
    let stdout = String::from_utf8_lossy(&out.stdout);
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
    // Two tables (the comparison, then its latency detail), each a row per cell.
    let (comparison, detail) = stdout
        .split_once("#### Latency detail")
        .unwrap_or_else(|| panic!("a latency detail table:\n{stdout}"));
    for part in [comparison, detail] {
        let table: Vec<&str> = part.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(table.len(), 2 + 9, "{stdout}");
        let width = table[0].matches(" | ").count();
        assert!(
            table.iter().all(|l| l.matches(" | ").count() == width),
            "{stdout}"
        );
    }

    // CSV: parses, every row marked stand-in, scaling within ±20% of the model. With uniform
    // keys every shard serves its share of the documents, so the busiest shard caps the cluster:
    // the model implies min(N, 1 / largest document share) × the single node (N× when hashed
    // `_id` balances perfectly; a few % less with 1200 documents in a handful of chunks).
    let csv = std::fs::read_to_string(dir.join("report.csv")).expect("report.csv");
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 9);
    for r in &rows {
        assert_eq!(r["figures"], "stand-in");
        let ratio: f64 = r["vs_baseline"].parse().expect("ratio parses");
        let topology = r["topology"].as_str();
        if topology == "single" {
            assert!((ratio - 1.0).abs() < 1e-9, "baseline row {r:?}");
            continue;
        }
        let shards: f64 = match topology {
            "microshard-2" => 2.0,
            "microshard-4" => 4.0,
            other => panic!("unexpected topology {other}"),
        };
        let cell = dir.join(format!("cells/{topology}/{}-r1.json", r["scenario"]));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&cell).unwrap_or_default())
                .expect("cell parses");
        let shares: Vec<f64> = v["server"]["shards"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s["document_share"].as_f64())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            shares.len() as f64,
            shards,
            "per-shard statistics in {}",
            cell.display()
        );
        let busiest = shares.iter().copied().fold(0.0, f64::max);
        let implied = shards.min(1.0 / busiest);
        assert!(
            implied > shards * 0.8,
            "hashed _id left one shard with {busiest:.2} of the documents"
        );
        assert!(
            (ratio / implied - 1.0).abs() <= 0.2,
            "{} {topology}: {ratio:.2}× where the capacity model implies {implied:.2}×\n{csv}",
            r["scenario"]
        );
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
