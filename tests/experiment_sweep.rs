//! `sweep` against a stand-in with a known ceiling finds the knee where the capacity model puts it.

use crate::util::*;

#[test]
fn sweep_finds_the_capacity_knee() {
    // 4 workers × 10⁶ / 50 000 µs = 80 ops/s; one client thread keeps at most one worker busy,
    // so throughput climbs until 4 threads and is flat after: the knee is 4 threads. The long
    // service time keeps the client's own per-operation cost (large on a busy 2-core machine
    // running debug code) small next to it.
    let tmp = tempfile::tempdir().expect("temp dir");
    let state = tmp.path().join("state");
    let results = tmp.path().join("results");
    let bin_dir = standin_bin_dir(tmp.path());
    let port = free_base_port(4);
    let out = microshard(&state)
        .args([
            "sweep",
            "-P",
            "S5",
            "--threads",
            "1,2,4,8,16",
            "--topology",
            "single",
        ])
        .args([
            "--backend",
            "process",
            "--duration",
            "2s",
            "--records",
            "500",
        ])
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
}
