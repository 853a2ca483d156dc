//! Faults during a run: `microshard-2` on stand-ins (process backend), a workload through mongos,
//! one shard killed mid-run. The run must keep going to its end, count the failures by class in
//! the result document, and `down` must still clean everything. Also: `microshard.maxerrorrate`
//! stops a run that produces only errors, with a clear message.

use crate::util::{Root, bin, free_base_port};

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

struct ChildGuard(Option<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait_with_timeout(child: &mut ChildGuard, limit: Duration) -> Output {
    crate::util::poll_for(limit, || child.0.as_mut()?.try_wait().ok().flatten())
        .unwrap_or_else(|| panic!("the run did not end within {limit:?}"));
    child
        .0
        .take()
        .expect("child")
        .wait_with_output()
        .expect("collect output")
}

#[test]
fn killing_a_shard_mid_run_is_counted_and_teardown_still_cleans() {
    let root = Root::new();
    let port = free_base_port(6);
    let topo = root.path.join("fault.toml");
    std::fs::write(
        &topo,
        // mongos holds an operation for a shard with no primary up to
        // defaultFindReplicaSetHostTimeoutMS (15 s) before it fails: 2 s here, so the operations
        // routed to the dead shard fail within the run.
        format!(
            "name = \"fault\"\nkind = \"sharded\"\nshards_per_host = 2\nbase_port = {port}\nmongos_args = [\"--setParameter\", \"defaultFindReplicaSetHostTimeoutMS=2000\"]\n"
        ),
    )
    .expect("write topology");
    let bin_dir = root.bin_dir();
    let up = root.output_line(&format!(
        "up {} --backend process --bin-dir {bin_dir} --timeout 60",
        topo.display()
    ));
    crate::util::assert_ok(&up, "up");
    let status = root.output(&["status", "--json"]);
    let clusters: serde_json::Value =
        serde_json::from_slice(&status.stdout).expect("status --json parses");
    let cluster = &clusters[0];
    let entry = cluster["entry_uri"]
        .as_str()
        .expect("entry uri")
        .to_string();
    let shard_pid = cluster["members"]
        .as_array()
        .expect("members")
        .iter()
        .filter(|m| m["role"] == "shard")
        .find_map(|m| m["pid"].as_u64())
        .expect("a shard with a pid") as i32;

    let load = root.output_line(&format!(
        "load --uri {entry} -p recordcount=400 --threads 4"
    ));
    crate::util::assert_ok(&load, "load");

    let json = root.path.join("run.json");
    let run = root
        .cmd()
        .args(["run", "--uri", entry.as_str(), "--threads", "4", "--json"])
        .arg(&json)
        .args("-p recordcount=400 -p operationcount=100000000".split_whitespace())
        // Long enough for the mongos's 2 s wait for the dead shard's primary to end in errors:
        // every operation routed there waits that long before it fails.
        .args(["-p", "maxexecutiontime=12"])
        .args("-p readproportion=0.5 -p updateproportion=0.5".split_whitespace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start run");
    let mut run = ChildGuard(Some(run));
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: kill(2) on a stand-in shard this test brought up.
    unsafe {
        libc::kill(shard_pid, libc::SIGKILL);
    }
    let out = wait_with_timeout(&mut run, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no result document ({e}); stderr:\n{stderr}"));
    let doc: serde_json::Value = serde_json::from_str(&text).expect("result parses");
    // The run went on to maxexecutiontime instead of aborting at the first error.
    let runtime_ms = doc["runtime_ms"]
        .as_u64()
        .or_else(|| doc["overall"]["runtime_ms"].as_u64())
        .unwrap_or(0);
    assert!(
        runtime_ms >= 5_000,
        "the run stopped after {runtime_ms} ms; stderr:\n{stderr}"
    );
    let classes = doc["server"]["error_classes"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let errors: u64 = classes.values().filter_map(|v| v.as_u64()).sum();
    assert!(
        errors > 0,
        "a shard died mid-run but no error is counted by class: {}",
        doc["server"]
    );
    let ok: u64 = doc["measurements"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["statuses"].as_array().cloned().unwrap_or_default())
        .filter(|s| s["status"] == "OK")
        .filter_map(|s| s["count"].as_u64())
        .sum();
    assert!(ok > 0, "no operation succeeded: {text}");

    let down = root.output(&["down", "fault"]);
    crate::util::assert_ok(&down, "down after a dead shard");
    crate::util::assert_no_process_left(&root.path, Duration::from_secs(10), "after down");
    let state = crate::util::entries(&root.path.join("state"));
    assert!(state.is_empty(), "state files left: {state:?}");
    let run_dirs = crate::util::entries(&root.path.join("tmp/microshard"));
    assert!(run_dirs.is_empty(), "run directories left: {run_dirs:?}");
    for p in port..port + 6 {
        assert!(
            std::net::TcpListener::bind(("127.0.0.1", p)).is_ok(),
            "port {p} still taken after down"
        );
    }
}

/// Reads of keys that were never loaded all return NOT_FOUND: with `microshard.maxerrorrate`
/// the run stops early and says why, instead of measuring failures for the whole duration.
#[test]
fn a_run_of_only_errors_stops_at_the_max_error_rate() {
    let rt = crate::util::runtime();
    let data = tempfile::tempdir().expect("temp dir");
    let server = crate::util::standin_in(&rt, data.path());
    let uri = format!(
        "mongodb://127.0.0.1:{}/ycsb?w=1&directConnection=true",
        server.port()
    );
    let json = data.path().join("run.json");
    let started = Instant::now();
    let run = Command::new(bin())
        .args(["run", "--uri", &uri, "--threads", "2", "--json"])
        .arg(&json)
        .args(
            "-p recordcount=1000 -p operationcount=100000000 -p maxexecutiontime=60"
                .split_whitespace(),
        )
        .args("-p readproportion=1 -p updateproportion=0 --max-error-rate 0.5".split_whitespace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start run");
    let mut run = ChildGuard(Some(run));
    let out = wait_with_timeout(&mut run, Duration::from_secs(90));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "the run was not stopped by the error rate"
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "a run stopped for errors finished but is not valid: {stderr}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("microshard.maxerrorrate") && last.contains("failed"),
        "the last stderr line does not explain the stop: {stderr}"
    );
    // What was measured is still written, with the reason.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result written"))
            .expect("result parses");
    assert!(
        doc["server"]["run_stopped"]
            .as_str()
            .is_some_and(|r| r.contains("maxerrorrate")),
        "{}",
        doc["server"]
    );
    rt.block_on(server.shutdown());
}
