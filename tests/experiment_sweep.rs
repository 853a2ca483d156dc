//! `sweep` against a stand-in with a known ceiling finds the knee where the capacity model puts it;
//! `--vary` gives the seed's table; `--dry-run` says the plan and starts nothing.

use crate::util::*;

#[test]
fn sweep_finds_the_capacity_knee() {
    let _alone = one_at_a_time();
    // 4 workers × 10⁶ / 50 000 µs = 80 ops/s; one client thread keeps at most one worker busy,
    // so throughput climbs until 4 threads and is flat after: the knee is 4 threads. The long
    // service time keeps the client's own per-operation cost (large on a busy 2-core machine
    // running debug code) small next to it.
    let Scratch(_tmp, state, results, bin_dir) = Scratch::new();
    let port = free_base_port(4);
    let out = microshard(&state)
        .args("sweep -P S5 --threads 1,2,4,8,16 --topology single".split_whitespace())
        .args("--backend process --duration 2s --records 500".split_whitespace())
        .arg("--bin-dir")
        .arg(&bin_dir)
        .arg("--mongod-arg=--service-time-us=50000")
        .arg("--mongod-arg=--workers=4")
        .args(["--base-port", &port.to_string(), "-q", "--out"])
        .arg(&results)
        .output()
        .expect("run sweep");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sweep failed\n{stdout}\n{stderr}");
    assert_nothing_left(&state);
    assert!(stdout.contains("STAND-IN FIGURES"), "{stdout}");
    let dir = run_dir(&results);
    let text = std::fs::read_to_string(dir.join("sweeps/single.json")).expect("sweep file");
    let v: serde_json::Value = serde_json::from_str(&text).expect("sweep parses");
    let knee = v["knee_threads"].as_u64().expect("a knee");
    let steps = [1u64, 2, 4, 8, 16];
    let pos = steps
        .iter()
        .position(|&s| s == knee)
        .expect("knee is a swept count");
    let model = steps.iter().position(|&s| s == 4).unwrap_or(2);
    assert!(
        pos.abs_diff(model) <= 1,
        "knee at {knee} threads, the model puts it at 4\n{stdout}"
    );
    let max: f64 = v["points"]
        .as_array()
        .map(|p| {
            p.iter()
                .filter_map(|x| x["summary"]["throughput"].as_f64())
                .fold(0.0, f64::max)
        })
        .unwrap_or(0.0);
    assert!(
        max > 80.0 * 0.8 && max < 80.0 * 1.2,
        "ceiling {max:.0} ops/s, model 80\n{stdout}"
    );
    assert!(dir.join("sweep-single.svg").is_file());
    // The latency beside it, with the sizes the throughput chart names too.
    let latency = std::fs::read_to_string(dir.join("sweep-single-latency.svg")).unwrap_or_default();
    assert!(latency.contains("Latency by client threads"), "{latency}");
    assert!(latency.contains("Data: "), "{latency}");
}

/// `compare --sweep --vary`: the seed-2 measurement on every topology after its load, one table
/// and chart per topology, with the sweep code `sweep --vary` uses.
#[test]
fn compare_sweep_vary_writes_one_seed_table_per_topology() {
    let _alone = one_at_a_time();
    let Scratch(_tmp, state, results, _) = Scratch::new();
    // The other test of this binary probes the same process-seeded range: use its upper part.
    let port = free_base_port(40) + 20;
    let out = microshard(&state)
        .args([
            "compare",
            "--standin",
            "--topologies",
            "single,microshard-2",
        ])
        .args(["--scenarios", "S1,S2", "--sweep", "--sweep-threads", "1,2"])
        .args([
            "--sweep-duration",
            "1s",
            "--vary",
            "readbatchsize=1,5",
            "--wide",
        ])
        .args(["--duration", "1s", "--records", "200", "--threads", "2"])
        .args(["--base-port", &port.to_string(), "-q", "--out"])
        .arg(&results)
        .output()
        .expect("run compare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0) | Some(3)),
        "compare failed\n{stdout}\n{stderr}"
    );
    assert_nothing_left(&state);
    // The comparison first, then each topology's table (`--wide`): rows are thread counts,
    // columns each value × repetition and their mean.
    assert!(stdout.contains("Experiment "), "{stdout}");
    for t in ["single", "microshard-2"] {
        assert!(
            stdout.contains(&format!(
                "Throughput (ops/s) by threads and readbatchsize on {t}"
            )),
            "{t} table missing\n{stdout}"
        );
    }
    for col in ["readbatchsize=1 #1", "readbatchsize=5 mean"] {
        assert!(stdout.contains(col), "{col} missing\n{stdout}");
    }
    let dir = run_dir(&results);
    for t in ["single", "microshard-2"] {
        for ext in ["md", "csv", "json", "txt", "svg"] {
            assert!(
                dir.join(format!("vary-{t}.{ext}")).is_file(),
                "vary-{t}.{ext}"
            );
        }
        let csv = std::fs::read_to_string(dir.join(format!("vary-{t}.csv"))).expect("csv");
        let header = csv.lines().next().unwrap_or_default();
        // figures, threads, then per value: each repetition and its validity, and the mean.
        assert_eq!(header.split(',').count(), 2 + 2 * 3, "{header}");
        assert!(header.contains("readbatchsize=1 #1 validity"), "{header}");
        assert_eq!(csv.lines().count(), 1 + 2, "a row per thread count: {csv}");
        // The cells after the sweep ran at a swept thread count (the first value's knee).
        let cell = std::fs::read_to_string(dir.join(format!("cells/{t}/S2-r1.json"))).expect("S2");
        let v: serde_json::Value = serde_json::from_str(&cell).expect("cell parses");
        let threads = v["summary"]["threads"].as_u64().unwrap_or(0);
        assert!(threads == 1 || threads == 2, "{t}: S2 at {threads} threads");
    }
    let sweeps = std::fs::read_dir(dir.join("sweeps")).map_or(0, |d| d.count());
    assert_eq!(sweeps, 4, "a curve per value on each topology");
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("experiment.json")).expect("experiment.json"),
    )
    .expect("record parses");
    assert_eq!(record["vary"]["property"], "readbatchsize", "{record}");
}

/// `--vary` means nothing to `compare` without `--sweep`: refused before anything starts.
#[test]
fn compare_vary_without_sweep_is_bad_input() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = microshard(&tmp.path().join("state"))
        .args(["compare", "--vary", "readbatchsize=1,10", "--out"])
        .arg(tmp.path().join("results"))
        .output()
        .expect("run compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--sweep"), "{stderr}");
    assert!(!tmp.path().join("results").exists(), "nothing created");
}

/// `--dry-run` checks the input, prints the plan and creates nothing: no run directory, no
/// process, no state file. Bad input is still refused with exit 2.
#[test]
fn dry_runs_print_the_plan_and_create_nothing() {
    let _alone = one_at_a_time();
    let Scratch(tmp, state, results, _) = Scratch::new();
    let compare = microshard(&state)
        .args([
            "compare",
            "--standin",
            "--topologies",
            "single,microshard-2",
        ])
        .args([
            "--scenarios",
            "S1,S2",
            "--records",
            "2000",
            "--duration",
            "5s",
        ])
        .arg("--dry-run")
        .arg("--out")
        .arg(&results)
        .output()
        .expect("run compare --dry-run");
    let stdout = String::from_utf8_lossy(&compare.stdout);
    crate::util::assert_ok(&compare, "compare --dry-run");
    assert!(
        stdout.starts_with("dry run: every input was checked"),
        "{stdout}"
    );
    assert!(stdout.contains("= 4, on the process backend"), "{stdout}");
    assert!(
        stdout.contains("scenario S1: load 2,000 records"),
        "{stdout}"
    );
    assert!(
        stdout.contains("at most 10 s of run phases (5 s per topology)"),
        "{stdout}"
    );

    let sweep = microshard(&state)
        .args(["sweep", "--standin", "-P", "Q20M", "--topology", "single"])
        .args([
            "--vary",
            "readbatchsize=1,10",
            "--threads",
            "1,5",
            "--repeat",
            "3",
        ])
        .args(["--records", "2000", "--duration", "3s", "--dry-run"])
        .arg("--out")
        .arg(&results)
        .output()
        .expect("run sweep --dry-run");
    let stdout = String::from_utf8_lossy(&sweep.stdout);
    assert!(sweep.status.success(), "{stdout}");
    assert!(
        stdout.contains("6 curve(s) × 2 thread count(s) (1, 5) = 12 point(s)"),
        "{stdout}"
    );
    assert!(stdout.contains("measuring: at most 36 s"), "{stdout}");

    assert!(!results.exists(), "a dry run created {}", results.display());
    assert_nothing_left(&state);
    assert!(crate::util::processes_referring_to(tmp.path()).is_empty());

    let bad = microshard(&state)
        .args(["compare", "--standin", "--scenarios", "S1,S9", "--dry-run"])
        .output()
        .expect("run compare --dry-run");
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}
