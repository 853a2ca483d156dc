//! `ceiling` against stand-ins with a known capacity (2 workers × 1,000 µs = 2,000 ops/s per
//! `mongod`): it finds the ceiling where the model puts it, more behind `mongos` with two
//! shards, "no rate met the bound" when the bound is below the service time, and stops with "the
//! client could not offer" when the client's threads are capped (README, "Glossary": ceiling).

use std::process::Output;

use crate::util::*;

/// Runs `ceiling -P S5` on a stand-in topology with the capacity model; returns the output and
/// the `ceiling.json` it wrote.
fn ceiling(topology: &str, extra: &str) -> (Output, serde_json::Value) {
    let Scratch(_tmp, state, results, bin_dir) = Scratch::new();
    let port = free_base_port(8);
    let out = microshard(&state)
        .args([
            "ceiling",
            "-P",
            "S5",
            "--topology",
            topology,
            "--records",
            "1000",
        ])
        .args(["--step-duration", "3s", "--backend", "process", "--bin-dir"])
        .arg(&bin_dir)
        .arg("--mongod-arg=--service-time-us=1000")
        .arg("--mongod-arg=--workers=2")
        .args(["--base-port", &port.to_string(), "-q", "--out"])
        .arg(&results)
        .args(extra.split_whitespace())
        .output()
        .expect("run ceiling");
    assert_nothing_left(&state);
    let record = std::fs::read_to_string(run_dir(&results).join("ceiling.json"))
        .map(|t| serde_json::from_str(&t).expect("ceiling.json parses"))
        .unwrap_or_else(|e| {
            panic!(
                "ceiling.json: {e}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    (out, record)
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_ceiling_is_where_the_capacity_model_puts_it_and_higher_with_two_shards() {
    let _alone = one_at_a_time();
    let (out, single) = ceiling("single", "--slo p99=50ms");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(single["outcome"]["kind"], "found", "{all}");
    let found = single["outcome"]["ceiling"].as_f64().unwrap_or(0.0);
    assert!(
        (1_700.0..=2_050.0).contains(&found),
        "single: {found}\n{all}"
    );
    // Every step is printed and kept, and the first failing one says why.
    let steps = single["steps"].as_array().expect("steps");
    assert!(steps.len() >= 4, "{all}");
    assert!(
        all.contains("Ceiling search: S5 on single at p99 ≤ 50.0 ms"),
        "{all}"
    );
    let failed = steps
        .iter()
        .find_map(|s| s["failed"].as_str())
        .expect("a failing step");
    assert!(all.contains(failed), "{all}");
    assert!(all.contains("ceiling: single sustains"), "{all}");

    let (out, sharded) = ceiling("microshard-2", "--slo p99=50ms");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let two = sharded["outcome"]["ceiling"].as_f64().unwrap_or(0.0);
    assert!(two > found, "microshard-2 {two} ≤ single {found}\n{all}");
}

#[test]
fn a_bound_below_the_service_time_is_met_by_no_rate_and_a_capped_client_is_said() {
    let _alone = one_at_a_time();
    let (out, none) = ceiling("single", "--slo p99=500us");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(none["outcome"]["kind"], "no_rate_met_bound", "{all}");
    assert!(
        none["outcome"]["lowest"].as_f64().unwrap_or(0.0) >= 1.0,
        "{all}"
    );
    assert!(
        all.contains("no ceiling: no rate met p99 ≤ 500 µs on single"),
        "{all}"
    );
    assert!(!all.contains("sustains"), "{all}");

    // One thread cannot offer half the probe's rate when each operation takes 1 ms or more.
    let (out, capped) = ceiling("single", "--slo p99=50ms --max-threads 1");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert_eq!(capped["outcome"]["kind"], "client_limited", "{all}");
    assert!(all.contains("the client could not offer"), "{all}");
    assert!(!all.contains("ceiling: single sustains"), "{all}");
}

#[test]
fn bad_bounds_are_refused_naming_the_flag_before_anything_starts() {
    let Scratch(_tmp, state, results, _bin) = Scratch::new();
    for slo in ["p99", "p99=soon", "q99=1ms"] {
        let out = microshard(&state)
            .args([
                "ceiling",
                "-P",
                "S5",
                "--topology",
                "single",
                "--standin",
                "--slo",
                slo,
            ])
            .arg("--out")
            .arg(&results)
            .output()
            .expect("run ceiling");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{slo}: {stderr}");
        assert!(stderr.contains("--slo"), "{slo}: {stderr}");
        assert!(!results.exists(), "{slo}: nothing is created");
    }
}

/// `compare --ceiling`: a search per cell on single, microshard-1 and microshard-2 under the
/// capacity model, S1's steps inserting fresh keys; the ceilings' table, the ratio taken apart,
/// one chart per scenario and the found paragraph in every format; `rerun` says whether it
/// reproduced.
#[test]
fn compare_ceiling_writes_the_table_the_ratio_taken_apart_and_the_charts() {
    let _alone = one_at_a_time();
    let Scratch(tmp, state, results, bin_dir) = Scratch::new();
    let port = free_base_port(12);
    let out = microshard(&state)
        .args(["compare", "--ceiling", "--slo", "p99=50ms"])
        .args(["--topologies", "single,microshard-1,microshard-2"])
        .args(["--scenarios", "S1,S5", "--repeat", "2", "--records", "1000"])
        .args(["--step-duration", "1s", "--backend", "process", "--bin-dir"])
        .arg(&bin_dir)
        .arg("--mongod-arg=--service-time-us=1000")
        .arg("--mongod-arg=--workers=2")
        .args(["-p", "microshard.busyhost=1"])
        .args(["--base-port", &port.to_string(), "-q", "--out"])
        .arg(&results)
        .output()
        .expect("run compare --ceiling");
    let all = text(&out);
    assert_ok(&out, "compare --ceiling");
    assert_nothing_left(&state);
    let dir = run_dir(&results);
    assert!(all.contains("Ceilings at p99 ≤ 50.0 ms"), "{all}");
    for part in [
        "S5 routing tax (microshard-1 vs single)",
        "S5 sharding gain (microshard-2 vs microshard-1)",
        "S5 net (microshard-2 vs single)",
    ] {
        assert!(all.contains(part), "{part}\n{all}");
    }
    assert!(
        all.contains("S5 at p99 ≤ 50.0 ms: single sustains"),
        "{all}"
    );
    // Every search and its steps are kept; S1's steps inserted fresh keys S5 then counted.
    for t in ["single", "microshard-1", "microshard-2"] {
        for s in ["S1", "S5"] {
            let record: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join(format!("ceilings/{t}/{s}.json")))
                    .unwrap_or_else(|e| panic!("{t} {s}: {e}\n{all}")),
            )
            .expect("parses");
            assert_eq!(record["outcome"]["kind"], "found", "{t} {s}\n{all}");
            assert!(
                dir.join(format!("ceilings/{t}/{s}-steps/01.json"))
                    .is_file()
            );
            if s == "S1" {
                assert!(record["inserted"].as_u64().unwrap_or(0) > 0, "{record}");
            }
        }
        assert!(dir.join(format!("cells/{t}/S5-r2.json")).is_file(), "{t}");
    }
    // Server CPU: every member of microshard-2 measured, summed into the cell's figure, and
    // per operation in the report beside the client's.
    let cell: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("cells/microshard-2/S5-r1.json")).expect("cell"),
    )
    .expect("parses");
    let members = cell["result"]["host_load"]["server_cpu_us"]
        .as_object()
        .expect("each member's CPU");
    assert!(members.len() >= 4, "mongos, 2 shards, config: {members:?}");
    let summed: u64 = members.values().filter_map(|v| v.as_u64()).sum();
    let server_s = cell["summary"]["server_cpu_s"].as_f64().unwrap_or(0.0);
    assert!(server_s > 0.0, "{cell}");
    assert!(
        (server_s - summed as f64 / 1e6).abs() < 1e-6,
        "{server_s} vs {summed}"
    );
    let csv = std::fs::read_to_string(dir.join("report.csv")).expect("csv");
    let column = csv
        .lines()
        .next()
        .and_then(|h| h.split(',').position(|c| c == "server_cpu_us_per_op"))
        .expect("a server CPU column");
    for line in csv.lines().skip(1) {
        let per_op: f64 = line
            .split(',')
            .nth(column)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        assert!(per_op > 0.0, "{line}");
    }
    assert!(
        all.contains("CPU: the client and the servers shared this machine's"),
        "{all}"
    );
    let single_s5 = ceiling_of(&dir, "single", "S5");
    let two_s5 = ceiling_of(&dir, "microshard-2", "S5");
    assert!(
        (1_700.0..=2_050.0).contains(&single_s5) && two_s5 > single_s5,
        "single {single_s5}, microshard-2 {two_s5}\n{all}"
    );
    for (file, needle) in [
        ("report.md", "#### Ceilings at p99"),
        ("report.csv", "ceiling_intended_p99_us"),
        ("report.json", "\"decomposed\""),
        ("report.html", "id=\"chart-ceiling-S5\""),
        ("report.txt", "routing tax"),
    ] {
        let text = std::fs::read_to_string(dir.join(file)).expect(file);
        assert!(text.contains(needle), "{file}: {needle}");
        assert!(
            text.contains("S5 at p99 ≤ 50.0 ms") || file == "report.csv",
            "{file}"
        );
    }
    assert!(dir.join("ceiling-S5.svg").is_file() && dir.join("ceiling-S1.svg").is_file());

    let again = tmp.path().join("again");
    let out = microshard(&state)
        .arg("rerun")
        .arg(&dir)
        .arg("--out")
        .arg(&again)
        .arg("-q")
        .output()
        .expect("run rerun");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("reproduced: ") || stdout.contains("not reproduced: "),
        "{}",
        text(&out)
    );
    assert!(run_dir(&again).join("ceilings/single/S5.json").is_file());
    assert_nothing_left(&state);
}

/// The ceiling found for `topology` and `scenario` in a compare's run directory.
fn ceiling_of(dir: &std::path::Path, topology: &str, scenario: &str) -> f64 {
    let path = dir.join(format!("ceilings/{topology}/{scenario}.json"));
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("record")).expect("parses");
    record["outcome"]["ceiling"].as_f64().unwrap_or(0.0)
}
