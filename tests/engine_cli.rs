//! End-to-end: the `microshard load|run|ycsb` command lines, their output shapes and their input errors.

use std::process::Output;

use crate::util::{Server, workload};
use assert_cmd::Command;

fn microshard(args: &[&str]) -> Output {
    Command::cargo_bin("microshard")
        .expect("binary built")
        .args(args)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("binary runs")
}

async fn microshard_async(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        microshard(&refs)
    })
    .await
    .expect("join")
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_prints_ycsb_status_lines_and_report() {
    let server = Server::start();
    let s1 = workload("S1");
    let out = microshard_async(s(&[
        "load",
        "-P",
        s1.to_str().unwrap(),
        "-p",
        "recordcount=1000",
        "-s",
        "--threads",
        "4",
        "--uri",
        &server.uri(),
    ]))
    .await;
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");

    let status = regex_lite(
        r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}:\d{3} \d+ sec: \d+ operations; (\d+(\.\d+)? current ops/sec; )?(est completion in .*)?(\[[A-Z-]+: Count=\d+, Max=\d+, Min=\d+, Avg=[\d.]+, 50=\d+, 90=\d+, 99=\d+, 99\.9=\d+, 99\.99=\d+\] )*$",
    );
    let status_lines: Vec<&str> = stderr.lines().filter(|l| l.contains(" sec: ")).collect();
    assert!(status_lines.len() >= 2, "start and end lines: {stderr}");
    for l in &status_lines {
        assert!(status.is_match(l), "status line shape: {l:?}");
    }
    // YCSB's first line, taken before its clients start, always says 0 operations.
    assert!(
        status_lines[0].contains(" 0 sec: 0 operations;"),
        "{stderr}"
    );
    let last = status_lines.last().unwrap();
    assert!(last.contains(" 1000 operations;"), "{last}");
    assert!(last.contains("[INSERT: Count="), "{last}");
    assert!(
        stderr.contains("NOTE: measured against the microshard stand-in, not MongoDB"),
        "{stderr}"
    );

    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        regex_lite(r"^\[OVERALL\], RunTime\(ms\), \d+$").is_match(lines[0]),
        "{stdout}"
    );
    assert!(
        regex_lite(r"^\[OVERALL\], Throughput\(ops/sec\), \d+(\.\d+)?(E\d+)?$").is_match(lines[1]),
        "{stdout}"
    );
    assert!(stdout.contains("[INSERT], Operations, 1000\n"), "{stdout}");
    assert!(stdout.contains("[INSERT], Return=OK, 1000\n"), "{stdout}");
    assert!(stdout.contains("[CLEANUP], Operations, 4\n"), "{stdout}");
    let block = regex_lite(
        r"^\[(INSERT|CLEANUP)\], (Operations|AverageLatency\(us\)|MinLatency\(us\)|MaxLatency\(us\)|\d+thPercentileLatency\(us\)|Return=OK), [\d.E]+$",
    );
    for l in &lines[2..] {
        assert!(block.is_match(l), "report line shape: {l:?}");
    }
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_command_line_runs_and_writes_json() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let wa = workload("workloada");
    let url = format!("mongodb.url={}", server.uri());
    let out = microshard_async(s(&[
        "ycsb",
        "load",
        "mongodb",
        "-P",
        wa.to_str().unwrap(),
        "-p",
        "recordcount=100",
        "-p",
        &url,
        "-threads",
        "2",
    ]))
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = microshard_async(s(&[
        "run",
        "-P",
        wa.to_str().unwrap(),
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=200",
        "--uri",
        &server.uri(),
        "--json",
        json.to_str().unwrap(),
    ]))
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).unwrap();
    let flat = doc.to_string();
    assert!(
        flat.contains("standin"),
        "the document says stand-in: {flat}"
    );
    server.handle.shutdown().await;
}

/// Runs the binary and checks: exit status 2, one stderr line naming `culprit`.
fn assert_bad_input(args: &[&str], culprit: &str) {
    let out = microshard(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    let error_lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("microshard: error:"))
        .collect();
    assert_eq!(error_lines.len(), 1, "{args:?}: {stderr}");
    assert!(
        error_lines[0].contains(culprit),
        "{args:?}: expected {culprit:?} in {stderr}"
    );
}

#[test]
fn bad_input_exits_two_naming_the_culprit() {
    let s1 = workload("S1");
    let s1 = s1.to_str().unwrap();
    let dead = "mongodb://127.0.0.1:9/ycsb";
    assert_bad_input(&["load", "-P", "/nonexistent/S9", "--uri", dead], "S9");
    assert_bad_input(
        &["load", "-P", s1, "-p", "recordcount=ten", "--uri", dead],
        "recordcount",
    );
    assert_bad_input(
        &[
            "run",
            "-P",
            s1,
            "-p",
            "requestdistribution=zipfan",
            "--uri",
            dead,
        ],
        "zipfan",
    );
    assert_bad_input(
        &[
            "run",
            "-P",
            s1,
            "-p",
            "readproportion=0",
            "-p",
            "updateproportion=0",
            "-p",
            "insertproportion=0",
            "-p",
            "scanproportion=0",
            "-p",
            "readmodifywriteproportion=0",
            "--uri",
            dead,
        ],
        "proportion",
    );
    assert_bad_input(
        &[
            "load",
            "-P",
            s1,
            "-p",
            "recordcount=100",
            "-p",
            "insertstart=50",
            "-p",
            "insertcount=60",
            "--uri",
            dead,
        ],
        "insertcount",
    );
    assert_bad_input(
        &["load", "-P", s1, "--uri", "localhost:27017"],
        "mongodb.url",
    );
    assert_bad_input(
        &["ycsb", "load", "cassandra-cql", "-P", s1],
        "cassandra-cql",
    );
}

#[test]
fn unreachable_server_fails_fast_with_exit_two() {
    // Nothing listens on port 9 of loopback: connection refused until the selection timeout.
    let s1 = workload("S1");
    let started = std::time::Instant::now();
    assert_bad_input(
        &[
            "load",
            "-P",
            s1.to_str().unwrap(),
            "-p",
            "recordcount=10",
            "--uri",
            "mongodb://127.0.0.1:9/ycsb?serverSelectionTimeoutMS=1500",
        ],
        "127.0.0.1:9",
    );
    // Bounded by the selection timeout, not the driver's 30 s default (a sanity bound, not a speed test).
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
}

/// Compiles a line-shape pattern.
fn regex_lite(pattern: &str) -> regex::Regex {
    regex::Regex::new(pattern).expect("valid pattern")
}
