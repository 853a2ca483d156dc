//! A broken topology costs seconds, and a stalling server is a finding (`docs/reliability.md`,
//! "Fail fast" and "Two kinds of trouble"): a shard killed in the middle of a `compare` ends its
//! cell within `microshard.deadseconds`, its topology's later cells are recorded as not run and
//! the next topology is measured whole; `--resume --remeasure-invalid` measures what is missing.
//! The stand-in's `--stall` (operations stop, probes answered) is `degraded`, the same pause as a
//! frozen process (SIGSTOP) is `invalid`. Stand-in members on the process backend.

use crate::util::{Live, Root, StandinProcess};

use std::path::Path;
use std::time::{Duration, Instant};

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) on a stand-in process this test started.
    unsafe {
        libc::kill(pid, sig);
    }
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

/// Every cell file of one topology, by scenario.
fn cells_of(dir: &Path, topology: &str) -> Vec<(String, serde_json::Value)> {
    let Ok(entries) = std::fs::read_dir(dir.join("cells").join(topology)) else {
        return Vec::new();
    };
    let mut out: Vec<(String, serde_json::Value)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let cell = json(&p);
            (
                cell["cell"]["scenario"].as_str().unwrap_or("").to_string(),
                cell,
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn verdict(cell: &serde_json::Value) -> String {
    cell["summary"]["validity"]["verdict"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_dead_shard_skips_its_topology_and_resume_measures_what_is_missing() {
    let _one = crate::util::one_at_a_time();
    let root = Root::new();
    let (sharded, _) = root.topology(true);
    let (single, _) = root.topology(false);
    let results = root.path.join("results");
    let mut cmd = root.cmd();
    cmd.args(["compare", "--topologies", &format!("{sharded},{single}")])
        .args(["--scenarios", "S1,S3,S5,S2", "--duration", "20s"])
        // 600 records at 400 ops/s: a load of 1.5 s, long enough not to be degraded as too short.
        .args(["--threads", "4", "--records", "600", "-p", "target=400"])
        // The machine is shared: a busy host would degrade the cells this test wants valid.
        .args(["-p", "microshard.busyhost=1"])
        .args(["--backend", "process", "--bin-dir", &root.bin_dir()])
        .arg("--out")
        .arg(&results);
    let mut compare = Live::spawn(cmd);
    compare.wait_for("vsharded: S3 run", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(3));
    let (_, address, pid) = root
        .members()
        .into_iter()
        .find(|(n, _, _)| n == "sh0")
        .expect("sh0 runs");
    signal(pid, libc::SIGKILL);
    let fault = Instant::now();
    let skipped = compare.wait_for("later cell(s) not run", Duration::from_secs(30));
    let s3_took = skipped - fault;
    assert!(
        s3_took <= Duration::from_secs(15),
        "S3 ended {s3_took:?} after the fault"
    );
    let (code, stderr, ended) = compare.finish(Duration::from_secs(200));
    assert_eq!(code, Some(3), "{stderr}");
    let took = ended - fault;
    assert!(
        took <= Duration::from_secs(100),
        "compare ended {took:?} after the fault"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("not run") && last.contains("--resume"),
        "{last}"
    );

    let dir = crate::util::run_dir(&results);
    let not_run = json(&dir.join("not-run.json"));
    let skipped: Vec<&str> = not_run
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|n| n["cell"]["scenario"].as_str())
        .collect();
    assert_eq!(skipped, ["S5", "S2"], "{not_run}");
    let reason = not_run[0]["reason"].as_str().unwrap_or("");
    assert!(
        reason.starts_with(&format!("not run: sh0 ({address}) dead since S3 at")),
        "{reason}"
    );
    let sharded_cells = cells_of(&dir, "vsharded");
    let s3 = sharded_cells
        .iter()
        .find(|(s, _)| s == "S3")
        .expect("S3 kept");
    assert_eq!(verdict(&s3.1), "invalid");
    let single_cells = cells_of(&dir, "vsingle");
    assert_eq!(single_cells.len(), 4, "every cell of the standalone");
    for (scenario, cell) in &single_cells {
        assert_eq!(
            verdict(cell),
            "valid",
            "{scenario}: {}",
            cell["summary"]["validity"]
        );
    }
    let table = std::fs::read_to_string(dir.join("report.txt")).expect("report");
    assert!(table.contains("not run"), "{table}");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("page");
    assert!(html.contains("dead since S3"), "the page names why");

    let resume = root
        .cmd()
        .args(["compare", "--resume"])
        .arg(&dir)
        .arg("--remeasure-invalid")
        .output()
        .expect("resume");
    let stderr = String::from_utf8_lossy(&resume.stderr);
    assert_eq!(resume.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("session 2"), "{stderr}");
    let sharded_cells = cells_of(&dir, "vsharded");
    assert_eq!(sharded_cells.len(), 4);
    for (scenario, cell) in &sharded_cells {
        let want = if scenario == "S1" { 1 } else { 2 };
        assert_eq!(
            cell["session"], want,
            "{scenario} measured in session {want}"
        );
        assert_eq!(verdict(cell), "valid", "{scenario}");
    }
    assert_eq!(json(&dir.join("not-run.json")), serde_json::json!([]));
    assert!(
        dir.join("cells/vsharded/earlier/S3-r1.session1.json")
            .is_file()
    );
    root.assert_nothing_left();
}

/// `run` of 8 s against one stand-in `mongod` (loaded with 300 records), stall threshold 1 s.
fn run_against(server: &StandinProcess, root: &Root, strict: bool) -> (Option<i32>, String) {
    let json_path = root.path.join("run.json");
    let mut cmd = root.cmd();
    cmd.args(["run", "--uri", &server.uri(), "--threads", "4", "--json"])
        .arg(&json_path)
        .args(["-p", "recordcount=300", "-p", "operationcount=0"])
        .args([
            "-p",
            "maxexecutiontime=8",
            "-p",
            "microshard.stallseconds=1",
        ]);
    if strict {
        cmd.arg("--strict");
    }
    let out = cmd.output().expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn load(server: &StandinProcess, root: &Root) {
    let out = root.output(&[
        "load",
        "--uri",
        &server.uri(),
        "-p",
        "recordcount=300",
        "--threads",
        "4",
    ]);
    crate::util::assert_ok(&out, "load");
}

#[test]
fn a_stall_while_probes_answer_is_degraded_and_a_frozen_process_invalid() {
    let _one = crate::util::one_at_a_time();
    let root = Root::new();
    let stalling = StandinProcess::start_with(&root.path.join("db1"), &["--stall", "1500/5000"]);
    load(&stalling, &root);
    let (code, stderr) = run_against(&stalling, &root, false);
    assert_eq!(
        code,
        Some(0),
        "a server stall is a caveat, not a failure:\n{stderr}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("degraded") && last.contains("the server stalled"),
        "{last}"
    );
    let doc = json(&root.path.join("run.json"));
    assert_eq!(
        doc["validity"]["verdict"], "degraded",
        "{}",
        doc["validity"]
    );
    let stalls = &doc["validity"]["server_stalls"];
    assert!(stalls["count"].as_u64().is_some_and(|n| n >= 1), "{stalls}");
    assert!(
        stalls["longest_s"].as_f64().is_some_and(|s| s >= 1.0),
        "{stalls}"
    );
    let probed = doc["timeline"]["seconds"].to_string();
    assert!(
        probed.contains("probe_ms"),
        "probe round trips are recorded"
    );
    let (code, stderr) = run_against(&stalling, &root, true);
    assert_eq!(code, Some(3), "--strict:\n{stderr}");
    drop(stalling);

    let frozen = StandinProcess::start(&root.path.join("db2"));
    load(&frozen, &root);
    let pid = frozen.pid();
    let freezer = std::thread::spawn(move || {
        for _ in 0..2 {
            std::thread::sleep(Duration::from_millis(2500));
            signal(pid, libc::SIGSTOP);
            std::thread::sleep(Duration::from_millis(1500));
            signal(pid, libc::SIGCONT);
        }
    });
    let (code, stderr) = run_against(&frozen, &root, false);
    let _ = freezer.join();
    assert_eq!(code, Some(3), "{stderr}");
    let doc = json(&root.path.join("run.json"));
    assert_eq!(doc["validity"]["verdict"], "invalid", "{}", doc["validity"]);
    assert!(
        doc["validity"].to_string().contains("stopped answering"),
        "{}",
        doc["validity"]
    );
}

#[test]
fn a_shard_killed_mid_run_ends_the_run_within_its_bound_and_five_seconds() {
    let _one = crate::util::one_at_a_time();
    let root = Root::new();
    let (_topo, uri) = root.up_and_load(true);
    let (_, _, pid) = root
        .members()
        .into_iter()
        .find(|(n, _, _)| n == "sh0")
        .expect("sh0 runs");
    let mut cmd = root.cmd();
    cmd.args(["run", "--uri", &uri, "--threads", "4"])
        .args(["-p", "recordcount=300", "-p", "operationcount=0"])
        .args(["-p", "maxexecutiontime=8"]);
    let mut run = Live::spawn(cmd);
    let started = run.wait_for("Maximum execution time", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(2));
    signal(pid, libc::SIGKILL);
    let (code, stderr, ended) = run.finish(Duration::from_secs(40));
    assert_eq!(code, Some(3), "{stderr}");
    let took = ended - started;
    assert!(
        took <= Duration::from_secs(13),
        "the 8 s run took {took:?}:\n{stderr}"
    );
    let down = root.output(&["down", "--all"]);
    assert!(down.status.success());
    root.assert_nothing_left();
}
