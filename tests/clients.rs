//! Several client processes for one cell (`--clients N`) and `microshard merge`: the work is split
//! exactly, the results are merged exactly, and a client that dies makes the result invalid
//! without leaving anything behind (`docs/engine.md`, "Several clients").

use crate::util::{
    StandinProcess, bin, free_base_port, processes_referring_to, standin_bin_dir, write_topology,
};

use std::path::Path;
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

    /// One with `records` records a single client loaded, and a temporary directory.
    fn loaded(records: u32) -> (Server, tempfile::TempDir) {
        let server = Server::start();
        let tmp = tempfile::tempdir().expect("tmp");
        let load = microshard(
            tmp.path(),
            &format!("load --uri {} -p recordcount={records}", server.uri),
        );
        let stderr = String::from_utf8_lossy(&load.stderr);
        assert_eq!(load.status.code(), Some(0), "{stderr}");
        (server, tmp)
    }
}

/// Runs `microshard` with `args`, split at white space (no argument here holds any).
fn microshard(tmp: &Path, args: &str) -> Output {
    Command::new(bin())
        .args(args.split_whitespace())
        .env("TMPDIR", tmp)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .expect("run microshard")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read result")).expect("parse")
}

/// Runs `args`, which write their merged result to `path`: it succeeds, and counts `ops`
/// operations, as its clients do together. Returns the run and the result.
fn merged_run(tmp: &Path, args: &str, path: &Path, ops: u64) -> (Output, serde_json::Value) {
    let out = microshard(tmp, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc = json(path);
    assert_eq!(doc["operations"], ops);
    let per_client: u64 = doc["clients"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["operations"].as_u64())
        .sum();
    assert_eq!(per_client, ops);
    (out, doc)
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
    let (out, doc) = merged_run(
        tmp.path(),
        &format!(
            "load --uri {} -p recordcount=3000 --threads 6 --clients 3 --json {}",
            server.uri,
            merged.display()
        ),
        &merged,
        3000,
    );
    assert_eq!(status_count(&doc, "INSERT", "OK"), 3000);
    assert_eq!(doc["clients"].as_array().map(Vec::len), Some(3));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[INSERT], Operations, 3000"), "{stdout}");

    // One client loading the same key range finds every key taken and inserts nothing: the
    // three clients stored exactly the set one client would have.
    let again = tmp.path().join("again.json");
    let keep_going = "-p core_workload_insertion_keep_going_on_error=true";
    let load = format!("load --uri {} -p recordcount=3000 {keep_going}", server.uri);
    let out = microshard(tmp.path(), &format!("{load} --json {}", again.display()));
    assert_eq!(out.status.code(), Some(3));
    let doc = json(&again);
    assert_eq!(status_count(&doc, "INSERT", "OK"), 0);
    assert_eq!(doc["server"]["error_classes"]["server_code_11000"], 3000);
}

#[test]
fn a_run_with_clients_counts_every_clients_operations_and_merge_agrees() {
    let (server, tmp) = Server::loaded(500);
    let merged = tmp.path().join("run.json");
    let mix = "-p insertproportion=0.2 -p readproportion=0.8 -p updateproportion=0";
    let (_, doc) = merged_run(
        tmp.path(),
        &format!(
            "run --uri {} -p recordcount=500 -p operationcount=3000 {mix} --threads 3 --clients 3 --json {}",
            server.uri,
            merged.display()
        ),
        &merged,
        3000,
    );
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
                "target=400",
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
        &format!(
            "merge {} {} --json {}",
            a.display(),
            b.display(),
            m.display()
        ),
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

    // A client run after the others is refused: its window does not overlap theirs.
    let later = tmp.path().join("later.json");
    let mut cl = spawn(&later, "0");
    assert!(cl.wait().expect("later").success());
    let (sequential, la) = (
        microshard(
            tmp.path(),
            &format!("merge {} {}", a.display(), later.display()),
        ),
        json(&later),
    );
    let stderr = String::from_utf8_lossy(&sequential.stderr);
    assert_eq!(sequential.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("later.json and ")
            && stderr.contains("a.json did not run at the same time")
            && stderr.contains("s apart"),
        "{stderr}"
    );
    assert!(la["operations"].as_u64().unwrap_or(0) > 0);

    // Documents of different workloads are refused, naming the property.
    let c = tmp.path().join("c.json");
    let mix = "-p readproportion=0.5 -p updateproportion=0.5";
    let run = format!(
        "run --uri {} -p recordcount=500 -p operationcount=50",
        server.uri
    );
    let other = microshard(tmp.path(), &format!("{run} {mix} --json {}", c.display()));
    assert_eq!(other.status.code(), Some(0));
    let refused = microshard(
        tmp.path(),
        &format!("merge {} {}", a.display(), c.display()),
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("property readproportion=0.5 differs"),
        "{stderr}"
    );
}

#[test]
fn several_clients_print_one_merged_status_line_per_interval() {
    let (server, tmp) = Server::loaded(200);
    let out = microshard(
        tmp.path(),
        &format!(
            "run --uri {} -p recordcount=200 -p operationcount=0 -p maxexecutiontime=3 -p status.interval=1 -s --threads 2 --clients 2",
            server.uri
        ),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // YCSB's status line, once per interval and once at the end, from both clients' counts.
    let merged: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(" operations; ") && l.ends_with("[2 clients merged]"))
        .collect();
    assert!(merged.len() >= 3, "{stderr}");
    let total = |l: &str| -> u64 {
        l.split(" sec: ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let counts: Vec<u64> = merged.iter().map(|l| total(l)).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert!(counts.last().is_some_and(|&n| n > 0), "{stderr}");
    // The last line counts what the merged report counts (every operation but the cleanups).
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reported: u64 = stdout
        .lines()
        .filter(|l| !l.starts_with("[CLEANUP]"))
        .filter_map(|l| l.split_once("], Operations, "))
        .filter_map(|(_, n)| n.trim().parse::<u64>().ok())
        .sum();
    assert_eq!(Some(reported), counts.last().copied(), "{stdout}");
    // The clients' own progress lines are the coordinator's, never shown.
    assert!(!stderr.contains("client progress"), "{stderr}");
    assert!(!stderr.contains("current ops/sec; [READ"), "{stderr}");
}

#[test]
fn a_client_killed_mid_run_makes_the_result_invalid_and_leaves_nothing() {
    let (server, tmp) = Server::loaded(200);
    let merged = tmp.path().join("run.json");
    let run = Command::new(bin())
        .args(["run", "--uri", &server.uri])
        .args("-p recordcount=200 -p operationcount=0 -p maxexecutiontime=6".split_whitespace())
        .args(["--threads", "2", "--clients", "2", "--json"])
        .arg(&merged)
        .env("TMPDIR", tmp.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Wait for the clients (processes whose command line names the coordinator's temp dir).
    let victim = crate::util::poll_for(Duration::from_secs(20), || {
        let clients: Vec<u32> = processes_referring_to(tmp.path())
            .into_iter()
            .filter(|(_, cmd)| cmd.contains("--barrier"))
            .map(|(pid, _)| pid)
            .collect();
        (clients.len() == 2).then(|| clients[1])
    })
    .expect("clients did not start");
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
    crate::util::assert_no_process_left(tmp.path(), Duration::from_secs(10), "after the run");
}

#[test]
fn compare_drives_each_cell_with_several_clients() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bin_dir = standin_bin_dir(tmp.path());
    let port = free_base_port(2);
    let topo = write_topology(
        tmp.path(),
        "one",
        &format!("name = \"one\"\nkind = \"standalone\"\nbase_port = {port}\n"),
    );
    let results = tmp.path().join("results");
    let out = Command::new(bin())
        .args(["compare", "--topologies"])
        .arg(&topo)
        .args("--scenarios S1,S2 --duration 2s --records 500 --threads 4".split_whitespace())
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
    two_cells_of_two_clients(&out, &results);
    assert!(processes_referring_to(tmp.path()).is_empty());
}

/// The cells of a `compare` of S1 (500 records) and S2 that succeeded, checked: two of them, each
/// with two clients, and the load's counting its 500 records.
fn two_cells_of_two_clients(out: &Output, results: &Path) -> Vec<serde_json::Value> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let cells = crate::util::cells_under(results);
    assert_eq!(cells.len(), 2, "{stderr}");
    for c in &cells {
        let clients = c["result"]["clients"].as_array().map(Vec::len);
        assert_eq!(clients, Some(2), "{}", c["cell"]);
    }
    let load = cells
        .iter()
        .find(|c| c["cell"]["scenario"] == "S1")
        .expect("S1");
    assert_eq!(load["result"]["operations"], 500);
    cells
}

/// Waits (bounded) until the load's cell is on disk and client container `client` of the run
/// phase is running; returns its container id.
fn run_phase_client(
    rt: &tokio::runtime::Runtime,
    d: &bollard::Docker,
    owner: &str,
    client: usize,
    results: &Path,
) -> String {
    crate::util::poll_for(Duration::from_secs(120), || {
        let running = rt.block_on(async {
            let mut filters = std::collections::HashMap::new();
            filters.insert(
                "label",
                vec![
                    format!("{}={owner}", microshard::backend::docker::LABEL_OWNER),
                    format!(
                        "{}=client{client}",
                        microshard::backend::docker::LABEL_MEMBER
                    ),
                ],
            );
            d.list_containers(Some(
                bollard::query_parameters::ListContainersOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .unwrap_or_default()
        });
        // The load is over once its cell is on disk: the client now running is the run's.
        let loaded = crate::util::cells_under(results).len() == 1;
        running
            .first()
            .and_then(|c| c.id.clone())
            .filter(|_| loaded)
    })
    .expect("no running S2 client container appeared")
}

/// Two client containers on this machine's Docker engine drive every cell of a `compare` against
/// a stand-in cluster in containers (a topology's `clients`), joined to the cluster's network:
/// each client is listed with its engine and figures, the cell's operations are their sum, and
/// nothing is left. Then a client container killed mid-run makes its cell invalid, naming the
/// client and its engine, and again nothing is left. Skips, saying so, when no engine answers.
#[test]
fn client_containers_drive_a_cell_against_a_cluster_in_containers() {
    use microshard::backend::docker;
    let rt = crate::util::runtime();
    let Some(d) = rt.block_on(crate::util::docker_or_skip()) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let state = tmp.path().join("state");
    let image = format!("microshard-standin:clients-{}", std::process::id());
    let _cleanup = crate::util::DockerOwnerCleanup {
        state: state.clone(),
        image: image.clone(),
    };
    rt.block_on(docker::build_standin_image(&d, &bin(), &image))
        .expect("build the stand-in image");
    let engine =
        std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".to_string());
    let port = free_base_port(2);
    let topo = write_topology(
        tmp.path(),
        "dclients",
        &format!(
            "name = \"dclients\"\nkind = \"standalone\"\nbase_port = {port}\nimage = \"{image}\"\nclient_image = \"{image}\"\nclients = [{{ docker = \"{engine}\", count = 2 }}]\n"
        ),
    );
    let compare = |results: &Path, scenarios: &str, duration: &str| {
        Command::new(bin())
            .args(["compare", "--topologies"])
            .arg(&topo)
            .args(["--scenarios", scenarios, "--duration", duration])
            .args(["--records", "500", "--threads", "4", "--backend", "docker"])
            .args(["--image", &image, "--out"])
            .arg(results)
            .arg("-q")
            .env("TMPDIR", tmp.path())
            .env("MICROSHARD_STATE_DIR", &state)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("compare")
    };
    let owner = docker::owner_id_for(&state);
    let leftovers = || {
        rt.block_on(crate::util::docker_objects_labelled(
            &d,
            docker::LABEL_OWNER,
            &owner,
        ))
    };

    let results = tmp.path().join("results");
    let out = compare(&results, "S1,S2", "2s")
        .wait_with_output()
        .expect("compare");
    for c in &two_cells_of_two_clients(&out, &results) {
        let result = &c["result"];
        let clients = result["clients"].as_array().cloned().unwrap_or_default();
        for (i, client) in clients.iter().enumerate() {
            assert_eq!(client["index"], i as u64);
            assert_eq!(client["host"], engine.as_str(), "{client}");
            assert!(client["operations"].as_u64().unwrap_or(0) > 0, "{client}");
            assert_eq!(client["threads"], 2, "{client}");
        }
        let sum: u64 = clients
            .iter()
            .filter_map(|c| c["operations"].as_u64())
            .sum();
        assert_eq!(result["operations"].as_u64(), Some(sum), "{}", c["cell"]);
        crate::util::assert_valid_but_for_toy_size(&result["validity"]);
    }
    let left = leftovers();
    assert!(left.is_empty(), "left behind: {left:?}");

    // A client container killed mid-run: the cell is invalid, naming the client and its engine.
    let results = tmp.path().join("results-kill");
    let child = compare(&results, "S1,S2", "20s");
    let victim = run_phase_client(&rt, &d, &owner, 1, &results);
    std::thread::sleep(Duration::from_secs(3));
    rt.block_on(
        d.kill_container(
            &victim,
            Some(
                bollard::query_parameters::KillContainerOptionsBuilder::default()
                    .signal("SIGKILL")
                    .build(),
            ),
        ),
    )
    .expect("kill the client container");
    let out = child.wait_with_output().expect("compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let cells = crate::util::cells_under(&results);
    let run = cells
        .iter()
        .find(|c| c["cell"]["scenario"] == "S2")
        .expect("the S2 cell is kept");
    assert_eq!(run["result"]["validity"]["verdict"], "invalid");
    let reasons = run["result"]["validity"]["reasons"].to_string();
    assert!(
        reasons.contains(&format!("client 1 on {engine} was killed")),
        "{reasons}"
    );
    let left = leftovers();
    assert!(left.is_empty(), "left behind: {left:?}");

    // Ctrl-C while client containers run: the command ends, the finished cell is kept, and no
    // container or network is left.
    let results = tmp.path().join("results-int");
    let child = compare(&results, "S1,S2", "30s");
    run_phase_client(&rt, &d, &owner, 0, &results);
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: kill(2) on the command this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let started = Instant::now();
    let out = child.wait_with_output().expect("compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(25), "{stderr}");
    let cells = crate::util::cells_under(&results);
    assert_eq!(cells.len(), 1, "{stderr}");
    assert_eq!(cells[0]["cell"]["scenario"], "S1");
    let left = leftovers();
    assert!(left.is_empty(), "left behind after Ctrl-C: {left:?}");
}
