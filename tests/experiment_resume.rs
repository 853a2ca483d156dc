//! An interrupted `compare` keeps what it measured and `--resume` finishes it without measuring
//! the finished cells again.

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
}
