//! Network faults between the client and the server (`docs/reliability.md`, "Network faults"),
//! through a loopback TCP proxy the test controls: a 4 s partition (bytes held, no reset), a
//! partition that never heals, and every connection reset at once. Each run ends within its bound
//! plus 10 s; a partition makes the result invalid naming the member behind the proxy; after a
//! reset every operation's count equals its OK plus failed counts and the verdict agrees with
//! the exit status. For `run` and for a `compare` cell (`--backend existing`).

use crate::util::{FaultProxy, Root, StandinProcess};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// Bytes held for 4 s, then delivered.
    Partition,
    /// Bytes held until the end.
    PermanentPartition,
    /// Every connection reset at once.
    Reset,
}

/// How long the measured run is bounded to.
const BOUND: Duration = Duration::from_secs(10);

/// Applies `fault` 3 s after `started` (on a thread), holding the proxy as the fault says.
fn inject(proxy: &std::sync::Arc<FaultProxy>, fault: Fault) -> std::thread::JoinHandle<()> {
    let proxy = proxy.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(3));
        match fault {
            Fault::Partition => {
                proxy.hold(true);
                std::thread::sleep(Duration::from_secs(4));
                proxy.hold(false);
            }
            Fault::PermanentPartition => proxy.hold(true),
            Fault::Reset => proxy.reset_all(),
        }
    })
}

/// A stand-in loaded with 300 records and a proxy in front of it.
fn server(root: &Root) -> (StandinProcess, std::sync::Arc<FaultProxy>) {
    let server = StandinProcess::start(&root.path.join("db"));
    let load = root.output(&["load", "--uri", &server.uri(), "-p", "recordcount=300"]);
    crate::util::assert_ok(&load, "load");
    let proxy = FaultProxy::start(&format!("127.0.0.1:{}", server.port));
    (server, std::sync::Arc::new(proxy))
}

/// What every fault must show: the bound, and the verdict in the document agreeing with the exit
/// status; a partition is invalid and names the member behind the proxy.
fn check(
    fault: Fault,
    code: Option<i32>,
    took: Duration,
    validity: &serde_json::Value,
    member: &str,
) {
    assert!(
        took < BOUND + Duration::from_secs(10),
        "{fault:?}: took {took:?}"
    );
    let verdict = validity["verdict"].as_str().unwrap_or("");
    let expected = if verdict == "invalid" { 3 } else { 0 };
    assert_eq!(
        code,
        Some(expected),
        "{fault:?}: exit status vs verdict {validity}"
    );
    if fault != Fault::Reset {
        assert_eq!(verdict, "invalid", "{fault:?}: {validity}");
        assert!(
            validity.to_string().contains(member),
            "{fault:?}: names {member}: {validity}"
        );
    }
}

/// Each operation's count is its OK plus its failed operations: `Return=` counts add up to the
/// latencies recorded under `OP` (YCSB records a failure's latency under `OP-FAILED`) plus those
/// under `OP-FAILED`, and the statuses that are not OK are exactly the `OP-FAILED` ones.
fn check_counts(fault: Fault, doc: &serde_json::Value) {
    let measurements = doc["measurements"].as_array().expect("measurements");
    let count_of = |name: &str| {
        measurements
            .iter()
            .find(|m| m["name"] == name)
            .and_then(|m| m["count"].as_u64())
            .unwrap_or(0)
    };
    for m in measurements {
        let name = m["name"].as_str().unwrap_or("");
        let statuses = m["statuses"].as_array().expect("statuses");
        if statuses.is_empty() {
            continue;
        }
        let total: u64 = statuses.iter().filter_map(|s| s["count"].as_u64()).sum();
        let failed: u64 = statuses
            .iter()
            .filter(|s| s["status"] != "OK")
            .filter_map(|s| s["count"].as_u64())
            .sum();
        let failed_recorded = count_of(&format!("{name}-FAILED"));
        assert_eq!(failed_recorded, failed, "{fault:?}: {name}-FAILED");
        assert_eq!(count_of(name) + failed_recorded, total, "{fault:?}: {name}");
    }
}

fn run_case(fault: Fault) {
    let root = Root::new();
    let (_server, proxy) = server(&root);
    let uri = format!("mongodb://127.0.0.1:{}/ycsb?w=1", proxy.port);
    let json = root.path.join("run.json");
    let mut cmd = root.cmd();
    cmd.args(["run", "--uri", &uri, "--threads", "4", "--json"])
        .arg(&json)
        .args(["-p", "recordcount=300", "-p", "operationcount=0"])
        .args(["-p", &format!("maxexecutiontime={}", BOUND.as_secs())]);
    let started = Instant::now();
    let injector = inject(&proxy, fault);
    let out = cmd.output().expect("run");
    let took = started.elapsed();
    let _ = injector.join();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("JSON");
    let member = format!("127.0.0.1:{}", proxy.port);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    check(fault, out.status.code(), took, &doc["validity"], &member);
    check_counts(fault, &doc);
}

fn compare_case(fault: Fault) {
    let root = Root::new();
    let (_server, proxy) = server(&root);
    let topo = root.path.join("proxied.toml");
    std::fs::write(
        &topo,
        format!(
            "name = \"proxied\"\nkind = \"standalone\"\nuri = \"mongodb://127.0.0.1:{}/\"\n",
            proxy.port
        ),
    )
    .expect("topology");
    let results = root.path.join("results");
    let mut cmd = root.cmd();
    cmd.args(["compare", "--backend", "existing", "--topologies"])
        .arg(&topo)
        .args(["--scenarios", "S1,S2", "--records", "300", "--threads", "4"])
        .args(["--duration", &format!("{}s", BOUND.as_secs()), "--out"])
        .arg(&results);
    let mut child = cmd
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("compare");
    // The fault lands in the S2 cell: wait for its start.
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen.iter().any(|l: &String| l.contains("S2 run")) {
        assert!(Instant::now() < deadline, "no S2 cell: {seen:#?}");
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(50)) {
            seen.push(l);
        }
    }
    let started = Instant::now();
    let injector = inject(&proxy, fault);
    // The bound is the cell's: it has ended when its file is written (atomically). The teardown
    // and the experiment's reports and charts come after it and are not part of the bound.
    let cell = cell_file(&crate::util::run_dir(&results), "S2");
    let took = loop {
        if cell.exists() || child.try_wait().ok().flatten().is_some() {
            break started.elapsed();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let status = child.wait().expect("wait");
    let _ = injector.join();
    seen.extend(rx.try_iter());
    let cell: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cell).expect("cell")).expect("JSON");
    let member = format!("127.0.0.1:{}", proxy.port);
    check(
        fault,
        status.code(),
        took,
        &cell["summary"]["validity"],
        &member,
    );
    check_counts(fault, &cell["result"]);
}

fn cell_file(dir: &Path, scenario: &str) -> PathBuf {
    dir.join("cells")
        .join("proxied")
        .join(format!("{scenario}-r1.json"))
}

#[test]
fn run_through_a_four_second_partition_is_invalid() {
    run_case(Fault::Partition);
}

#[test]
fn run_through_a_permanent_partition_ends_in_time_and_is_invalid() {
    run_case(Fault::PermanentPartition);
}

#[test]
fn run_through_a_reset_counts_every_operation() {
    run_case(Fault::Reset);
}

#[test]
fn compare_cell_through_a_four_second_partition_is_invalid() {
    compare_case(Fault::Partition);
}

#[test]
fn compare_cell_through_a_permanent_partition_ends_in_time_and_is_invalid() {
    compare_case(Fault::PermanentPartition);
}

#[test]
fn compare_cell_through_a_reset_counts_every_operation() {
    compare_case(Fault::Reset);
}
