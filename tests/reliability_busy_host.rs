//! A run measured while other work takes the machine's cores says so: a CPU hog started beside a
//! cell makes it degraded "busy host", naming the share the hog took; the same cell alone does
//! not (README, "Results you can trust"; `microshard.busyhost`).

use crate::util::*;

fn run_validity(root: &Root, uri: &str, name: &str) -> serde_json::Value {
    let json = root.path.join(format!("{name}.json"));
    let out = root.output_line(&format!(
        "run --uri {uri} -p recordcount=200 -p operationcount=0 -p maxexecutiontime=2 --threads 4 --json {}",
        json.display()
    ));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("json");
    assert!(
        doc["host_load"]["cores"].as_u64().unwrap_or(0) >= 1,
        "{}",
        doc["host_load"]
    );
    doc
}

/// A stand-in loaded with 200 records, and its address. A capacity model keeps the server's and
/// client's own CPU small next to a hog's.
fn loaded_server(root: &Root) -> (StandinProcess, String) {
    let server = StandinProcess::start_with(
        &root.path.join("db"),
        &["--service-time-us", "2000", "--workers", "2"],
    );
    let uri = server.uri();
    assert_ok(
        &root.output_line(&format!("load --uri {uri} -p recordcount=200")),
        "load",
    );
    (server, uri)
}

#[test]
fn a_cell_beside_a_cpu_hog_is_degraded_busy_host_with_the_share() {
    let _alone = one_at_a_time();
    let root = Root::new();
    let (_server, uri) = loaded_server(&root);

    // The cell alone is not "busy host". Work this test does not control (the Docker engine
    // still removing what the test before left, the CI runner) can take the cores for a few
    // seconds, and then the verdict is rightly "busy host": the run is tried again, up to five
    // times, and one of them must be quiet.
    let mut tries = Vec::new();
    let quiet = loop {
        let doc = run_validity(&root, &uri, &format!("quiet{}", tries.len()));
        let reasons = doc["validity"]["reasons"].to_string();
        if !reasons.contains("busy host") {
            break doc;
        }
        tries.push(format!("{reasons} {}", doc["host_load"]));
        assert!(tries.len() < 5, "never quiet:\n{}", tries.join("\n"));
        std::thread::sleep(std::time::Duration::from_secs(3));
    };
    // The server member on this machine is found and its CPU recorded.
    assert!(
        quiet["host_load"]["server_cpu_us"].is_object(),
        "{}",
        quiet["host_load"]
    );

    let hog = Hog::start();
    let busy = run_validity(&root, &uri, "busy");
    drop(hog);
    let reasons = busy["validity"]["reasons"].to_string();
    assert_eq!(busy["validity"]["verdict"], "degraded", "{reasons}");
    assert!(
        reasons.contains("busy host: other processes used"),
        "{reasons}"
    );
    let other = busy["host_load"]["other_cores"].as_f64().unwrap_or(0.0);
    assert!(other > 0.5, "{}", busy["host_load"]);
}

/// `microshard.waitquiet` (`--wait-quiet` on experiments): a run started beside a CPU hog waits,
/// says so, and starts once the hog is gone; its result is not "busy host".
#[test]
fn a_run_waits_for_the_hog_to_go_before_it_measures() {
    let _alone = one_at_a_time();
    let root = Root::new();
    let (_server, uri) = loaded_server(&root);
    let hog = Hog::start();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(4));
        drop(hog);
    });
    let started = std::time::Instant::now();
    let json = root.path.join("waited.json");
    let out = root.output_line(&format!(
        "run --uri {uri} -p recordcount=200 -p operationcount=0 -p maxexecutiontime=2 --threads 4 -p microshard.waitquiet=60 --json {}",
        json.display()
    ));
    let _ = stopper.join();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("waiting up to 60 s for a quiet host: other processes use"),
        "{stderr}"
    );
    assert!(stderr.contains("the host is quiet after"), "{stderr}");
    assert!(
        started.elapsed().as_secs_f64() >= 4.0,
        "it waited for the hog"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("json");
    let reasons = doc["validity"]["reasons"].to_string();
    assert!(!reasons.contains("busy host"), "{reasons}");
}

/// A compare measured beside a CPU hog is degraded "busy host"; once the hog is gone,
/// `--resume --remeasure degraded` measures those cells again, keeping the earlier attempts.
#[test]
fn degraded_cells_of_a_busy_host_are_measured_again_on_request() {
    let _alone = one_at_a_time();
    let root = Root::new();
    let port = free_base_port(4);
    let compare = format!(
        "compare --topologies single --scenarios S1,S2 --records 500 --duration 2s -q --base-port {port} {}",
        root.on_process()
    );
    let hog = Hog::start();
    let out = root.output_line(&compare);
    drop(hog);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let dir = run_dir(&root.path.join("results"));
    let busy = |dir: &std::path::Path| {
        current_cells(dir)
            .iter()
            .filter(|c| {
                c["summary"]["validity"]["reasons"]
                    .to_string()
                    .contains("busy host")
            })
            .count()
    };
    assert!(busy(&dir) > 0, "the hog made the cells busy-host: {stderr}");
    let out = root.output_line(&format!(
        "compare --resume {} --remeasure degraded --wait-quiet 60s -q",
        dir.display()
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        dir.join("cells/single/earlier").is_dir(),
        "the earlier attempts are kept"
    );
    assert_eq!(busy(&dir), 0, "measured again on a quiet host: {stderr}");
    assert_nothing_left(&root.path.join("state"));
}
