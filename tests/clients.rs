//! Several client processes for one cell (`--clients N`) and `microshard merge`: the work is split
//! exactly, the results are merged exactly, and a client that dies makes the result invalid
//! without leaving anything behind (`docs/engine.md`, "Several clients").

use crate::util::{StandinProcess, bin, free_base_port, processes_referring_to};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A stand-in `mongod` with its data in a directory of its own.
struct Server {
    // Declared first, so it stops before its directory goes.
    _process: StandinProcess,
    _dir: tempfile::TempDir,
    uri: String,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let process = StandinProcess::start(dir.path());
        Server {
            uri: process.uri(),
            _dir: dir,
            _process: process,
        }
    }
}

fn microshard(tmp: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env("TMPDIR", tmp)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .expect("run microshard")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read result")).expect("parse")
}

fn status_count(doc: &serde_json::Value, op: &str, status: &str) -> u64 {
    doc["measurements"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["name"] == op)
        .flat_map(|m| m["statuses"].as_array().cloned().unwrap_or_default())
        .filter(|s| s["status"] == status)
        .filter_map(|s| s["count"].as_u64())
        .sum()
}

#[test]
fn three_clients_load_exactly_the_keys_one_client_would() {
    let server = Server::start();
    let tmp = tempfile::tempdir().expect("tmp");
    let merged = tmp.path().join("merged.json");
    let out = microshard(
        tmp.path(),
        &[
            "load",
            "--uri",
            &server.uri,
            "-p",
            "recordcount=3000",
            "--threads",
            "6",
            "--clients",
            "3",
            "--json",
            &merged.display().to_string(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc = json(&merged);
    assert_eq!(doc["operations"], 3000);
    assert_eq!(status_count(&doc, "INSERT", "OK"), 3000);
    let clients = doc["clients"].as_array().cloned().unwrap_or_default();
    assert_eq!(clients.len(), 3);
    let per_client: u64 = clients
        .iter()
        .filter_map(|c| c["operations"].as_u64())
        .sum();
    assert_eq!(per_client, 3000);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[INSERT], Operations, 3000"), "{stdout}");

    // One client loading the same key range finds every key taken and inserts nothing: the
    // three clients stored exactly the set one client would have.
    let again = tmp.path().join("again.json");
    let out = microshard(
        tmp.path(),
        &[
            "load",
            "--uri",
            &server.uri,
            "-p",
            "recordcount=3000",
            "-p",
            "core_workload_insertion_keep_going_on_error=true",
            "--json",
            &again.display().to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    let doc = json(&again);
    assert_eq!(status_count(&doc, "INSERT", "OK"), 0);
    assert_eq!(doc["server"]["error_classes"]["server_code_11000"], 3000);
}

#[test]
fn a_run_with_clients_counts_every_clients_operations_and_merge_agrees() {
    let server = Server::start();
    let tmp = tempfile::tempdir().expect("tmp");
    let load = microshard(
        tmp.path(),
        &["load", "--uri", &server.uri, "-p", "recordcount=500"],
    );
    assert_eq!(
        load.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&load.stderr)
    );
    let merged = tmp.path().join("run.json");
    let out = microshard(
        tmp.path(),
        &[
            "run",
            "--uri",
            &server.uri,
            "-p",
            "recordcount=500",
            "-p",
            "operationcount=3000",
            "-p",
            "insertproportion=0.2",
            "-p",
            "readproportion=0.8",
            "-p",
            "updateproportion=0",
            "--threads",
            "3",
            "--clients",
            "3",
            "--json",
            &merged.display().to_string(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc = json(&merged);
    assert_eq!(doc["operations"], 3000);
    let sum: u64 = doc["clients"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["operations"].as_u64())
        .sum();
    assert_eq!(sum, 3000);
    // Run-phase inserts of the three clients never collided.
    assert_eq!(
        status_count(&doc, "INSERT", "ERROR"),
        0,
        "{}",
        doc["server"]
    );

    // Two clients started by hand, merged: the same numbers as adding their histograms.
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    let spawn = |path: &Path, offset: &str| {
        Command::new(bin())
            .args(["run", "--uri", &server.uri, "-p", "recordcount=500", "-p"])
            .args([
                "operationcount=400",
                "-p",
                "microshard.insertstride=2",
                "-p",
            ])
            .arg(format!("microshard.insertoffset={offset}"))
            .arg("--json")
            .arg(path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn client")
    };
    let (mut ca, mut cb) = (spawn(&a, "0"), spawn(&b, "1"));
    assert!(ca.wait().expect("a").success() && cb.wait().expect("b").success());
    let m = tmp.path().join("m.json");
    let out = microshard(
        tmp.path(),
        &[
            "merge",
            &a.display().to_string(),
            &b.display().to_string(),
            "--json",
            &m.display().to_string(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("[OVERALL], RunTime(ms)"));
    let (da, db, dm) = (json(&a), json(&b), json(&m));
    assert_eq!(
        dm["operations"],
        da["operations"].as_u64().unwrap_or(0) + db["operations"].as_u64().unwrap_or(0)
    );
    let read = |d: &serde_json::Value| {
        d["measurements"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["name"] == "READ")
            .cloned()
            .unwrap_or_default()
    };
    let decode = |d: &serde_json::Value| {
        microshard::measure::result::decode_histogram(
            "READ",
            read(d)["histogram"].as_str().unwrap_or(""),
        )
        .expect("histogram")
    };
    let mut both = decode(&da);
    both.add(decode(&db)).expect("add");
    for (field, p) in [("p50", 50.0), ("p95", 95.0), ("p99", 99.0), ("p99_9", 99.9)] {
        assert_eq!(
            read(&dm)[field].as_u64(),
            Some(microshard::measure::hdr::percentile(&both, p)),
            "{field}"
        );
    }

    // Documents of different workloads are refused, naming the property.
    let c = tmp.path().join("c.json");
    let other = microshard(
        tmp.path(),
        &[
            "run",
            "--uri",
            &server.uri,
            "-p",
            "recordcount=500",
            "-p",
            "operationcount=50",
            "-p",
            "readproportion=0.5",
            "-p",
            "updateproportion=0.5",
            "--json",
            &c.display().to_string(),
        ],
    );
    assert_eq!(other.status.code(), Some(0));
    let refused = microshard(
        tmp.path(),
        &["merge", &a.display().to_string(), &c.display().to_string()],
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("property readproportion=0.5 differs"),
        "{stderr}"
    );
}

#[test]
fn a_client_killed_mid_run_makes_the_result_invalid_and_leaves_nothing() {
    let server = Server::start();
    let tmp = tempfile::tempdir().expect("tmp");
    let load = microshard(
        tmp.path(),
        &["load", "--uri", &server.uri, "-p", "recordcount=200"],
    );
    assert_eq!(load.status.code(), Some(0));
    let merged = tmp.path().join("run.json");
    let run = Command::new(bin())
        .args([
            "run",
            "--uri",
            &server.uri,
            "-p",
            "recordcount=200",
            "-p",
            "operationcount=0",
        ])
        .args([
            "-p",
            "maxexecutiontime=6",
            "--threads",
            "2",
            "--clients",
            "2",
            "--json",
        ])
        .arg(&merged)
        .env("TMPDIR", tmp.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Wait for the clients (processes whose command line names the coordinator's temp dir).
    let deadline = Instant::now() + Duration::from_secs(20);
    let victim = loop {
        let clients: Vec<u32> = processes_referring_to(tmp.path())
            .into_iter()
            .filter(|(_, cmd)| cmd.contains("--barrier"))
            .map(|(pid, _)| pid)
            .collect();
        if clients.len() == 2 {
            break clients[1];
        }
        assert!(Instant::now() < deadline, "clients did not start");
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: kill(2) on a client process this test's command started.
    unsafe {
        libc::kill(victim as i32, libc::SIGKILL);
    }
    let out = run.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("was killed"), "{stderr}");
    let doc = json(&merged);
    assert_eq!(doc["validity"]["verdict"], "invalid");
    assert!(doc["validity"].to_string().contains("was killed"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_referring_to(tmp.path()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "left: {:?}",
            processes_referring_to(tmp.path())
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn compare_drives_each_cell_with_several_clients() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bin_dir = tmp.path().join("bin");
    std::fs::create_dir_all(&bin_dir).expect("bin");
    for n in ["mongod", "mongos"] {
        std::os::unix::fs::symlink(bin(), bin_dir.join(n)).expect("symlink");
    }
    let port = free_base_port(2);
    let topo = tmp.path().join("one.toml");
    std::fs::write(
        &topo,
        format!("name = \"one\"\nkind = \"standalone\"\nbase_port = {port}\n"),
    )
    .expect("topology");
    let results = tmp.path().join("results");
    let out = Command::new(bin())
        .args(["compare", "--topologies"])
        .arg(&topo)
        .args([
            "--scenarios",
            "S1,S2",
            "--duration",
            "2s",
            "--records",
            "500",
            "--threads",
            "4",
        ])
        .args(["--clients", "2", "--backend", "process", "--bin-dir"])
        .arg(&bin_dir)
        .arg("--out")
        .arg(&results)
        .arg("-q")
        .env("TMPDIR", tmp.path())
        .env("MICROSHARD_STATE_DIR", tmp.path().join("state"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .expect("compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let mut cells = Vec::new();
    for e in walk(&results) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(
            &std::fs::read_to_string(&e).unwrap_or_default(),
        ) && v["cell"].is_object()
        {
            cells.push(v);
        }
    }
    assert_eq!(cells.len(), 2, "{stderr}");
    for c in &cells {
        assert_eq!(
            c["result"]["clients"].as_array().map(Vec::len),
            Some(2),
            "{}",
            c["cell"]
        );
    }
    let load = cells
        .iter()
        .find(|c| c["cell"]["scenario"] == "S1")
        .expect("S1");
    assert_eq!(load["result"]["operations"], 500);
    assert!(processes_referring_to(tmp.path()).is_empty());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out
}
