//! An interrupted `compare` keeps what it measured and `--resume` finishes it without measuring
//! the finished cells again; its reports say it was interrupted, then which invocation measured
//! which cells, and a resume of a finished experiment has nothing to do.
//! A sweep cut short resumes the same way, keeping the points it measured (#31).

use std::time::{Duration, Instant};

use crate::util::*;

#[test]
fn interrupted_compare_resumes_without_remeasuring() {
    let Scratch(_tmp, state, results, bin_dir) = Scratch::new();
    let port = free_base_port(12);
    let mut child = microshard(&state)
        .args([
            "compare",
            "--topologies",
            "single,microshard-2",
            "--scenarios",
            "S1,S2",
        ])
        .args([
            "--backend",
            "process",
            "--records",
            "1000",
            "--duration",
            "4s",
        ])
        .args(["--threads", "8", "--base-port", &port.to_string(), "-q"])
        .arg("--bin-dir")
        .arg(&bin_dir)
        .arg("--out")
        .arg(&results)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start compare");

    // Wait (bounded) for the first cell to be written, then interrupt as Ctrl-C would.
    let deadline = Instant::now() + Duration::from_secs(120);
    let first = loop {
        assert!(Instant::now() < deadline, "first cell never appeared");
        let cell = std::fs::read_dir(&results)
            .ok()
            .and_then(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .find(|p| p.is_dir())
            })
            .map(|dir| dir.join("cells/single/S1-r1.json"));
        if let Some(cell) = cell.filter(|c| c.is_file()) {
            break cell;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("compare ended before its first cell: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // SAFETY: plain kill(2) on the pid of a child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().expect("wait compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "an interrupted compare must not report success"
    );
    assert!(stderr.contains("--resume"), "{stderr}");
    assert_nothing_left(&state);
    let dir = run_dir(&results);
    let before = std::fs::read(&first).expect("first cell");
    assert!(
        !dir.join("cells/microshard-2/S2-r1.json").exists(),
        "the experiment was interrupted before its last cell"
    );

    // Every format of its report says it was interrupted, and how to finish (#17).
    for format in ["table", "markdown", "csv", "json", "html"] {
        let out = microshard(&state)
            .args(["report", "--format", format])
            .arg(&dir)
            .output()
            .expect("report");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{format}: {text}");
        let said = match format {
            "csv" => text.lines().skip(1).any(|l| l.contains(",interrupted,")),
            "json" => text.contains("\"interrupted\": {") && text.contains("compare --resume"),
            _ => text.contains("INTERRUPTED: ") && text.contains("compare --resume"),
        };
        assert!(said, "{format}: {text}");
    }

    let out = microshard(&state)
        .arg("compare")
        .arg("--resume")
        .arg(&dir)
        .args(["--format", "csv", "-q"])
        .arg("--base-port")
        .arg(port.to_string())
        .output()
        .expect("resume");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "resume failed\n{stdout}\n{stderr}");
    assert_nothing_left(&state);
    assert_eq!(
        std::fs::read(&first).expect("first cell"),
        before,
        "first cell measured twice"
    );
    let rows = csv_rows(&stdout);
    assert_eq!(rows.len(), 4, "{stdout}");
    assert!(rows.iter().all(|r| r["repeats"] == "1"), "{stdout}");
    for t in ["single", "microshard-2"] {
        for s in ["S1", "S2"] {
            assert!(
                dir.join(format!("cells/{t}/{s}-r1.json")).is_file(),
                "{t} {s}"
            );
        }
    }
    // The report says which invocation measured which cells, and no longer "interrupted".
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        md.contains("invocation 1 (") && md.contains("invocation 2 (--resume, "),
        "{md}"
    );
    assert!(!md.contains("INTERRUPTED"), "{md}");
    for session in ["1", "2"] {
        assert!(rows.iter().any(|r| r["sessions"] == session), "{stdout}");
    }

    // A finished experiment has nothing to resume: said, its table printed, nothing written (#32).
    let record = std::fs::read(dir.join("experiment.json")).expect("record");
    let out = microshard(&state)
        .args(["compare", "--resume"])
        .arg(&dir)
        .output()
        .expect("resume a finished experiment");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("nothing to resume"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("S2"),
        "the table"
    );
    assert_eq!(
        std::fs::read(dir.join("experiment.json")).expect("record"),
        record,
        "no session added"
    );
}

#[test]
fn an_interrupted_sweep_resumes_keeping_the_points_it_measured() {
    let Scratch(_tmp, state, results, bin_dir) = Scratch::new();
    let port = free_base_port(4);
    let sweep = |live: bool| {
        let mut cmd = microshard(&state);
        cmd.args("sweep -P S5 --threads 1,2,4 --topology single".split_whitespace())
            .args("--duration 1s --records 500 --base-port".split_whitespace())
            .arg(port.to_string())
            .arg("--bin-dir")
            .arg(&bin_dir)
            .arg("--out")
            .arg(&results);
        if !live {
            cmd.arg("-q");
        }
        cmd
    };
    // Ctrl-C while the second point runs: the first is kept (#31).
    let mut live = Live::spawn(sweep(true));
    live.wait_for("sweep 2 threads ...", Duration::from_secs(120));
    live.signal(libc::SIGINT);
    let (code, seen, _) = live.finish(Duration::from_secs(60));
    assert_eq!(code, Some(3), "{seen}");
    assert!(
        seen.contains("finish with `microshard sweep --resume "),
        "{seen}"
    );
    assert_nothing_left(&state);
    let dir = run_dir(&results);
    let curve = || -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(dir.join("sweeps/single.json")).expect("curve"),
        )
        .expect("json")
    };
    let first = curve()["points"][0].clone();
    assert_eq!(
        curve()["points"].as_array().map(Vec::len),
        Some(1),
        "{}",
        curve()
    );

    let out = microshard(&state)
        .args(["sweep", "-q", "--resume"])
        .arg(&dir)
        .output()
        .expect("resume");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_nothing_left(&state);
    let threads: Vec<u64> = (curve()["points"].as_array().cloned().unwrap_or_default())
        .iter()
        .filter_map(|p| p["threads"].as_u64())
        .collect();
    assert_eq!(threads, [1, 2, 4]);
    assert_eq!(
        curve()["points"][0],
        first,
        "the first point kept as measured"
    );

    // `report` honours --format on a sweep's directory (#25).
    let md = microshard(&state)
        .args(["report", "--format", "markdown"])
        .arg(&dir)
        .output()
        .expect("report");
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("| threads | ops/s |") && !md.contains("╭"),
        "{md}"
    );

    // Resumed again: nothing to resume, nothing written (#32).
    let record = std::fs::read(dir.join("experiment.json")).expect("record");
    let out = microshard(&state)
        .args(["sweep", "--resume"])
        .arg(&dir)
        .output()
        .expect("resume again");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("nothing to resume"), "{stderr}");
    assert_eq!(
        std::fs::read(dir.join("experiment.json")).expect("record"),
        record
    );
}
