//! A run that went wrong never looks like a valid result (`docs/reliability.md`, "Results that
//! went wrong say so"). Stand-in topologies on the process backend; in the middle of a `run` and
//! of a `compare` cell a shard member, the mongos or a single mongod is frozen (SIGSTOP) or
//! killed (SIGKILL). Each case must end with exit status 3 within the cell's bound plus a few
//! seconds, the result must say `invalid` naming the member and its address, a line on stderr
//! must have said so while it happened, and nothing may be left running.

use crate::util::{Live, Root, StandinProcess, free_base_port};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
enum Victim {
    Shard,
    Mongos,
    Single,
}

impl Victim {
    /// The member's name in the topology plan (`compare` probes by plan names).
    fn plan_name(self) -> &'static str {
        match self {
            Victim::Shard => "sh0",
            Victim::Mongos => "mongos0",
            Victim::Single => "single",
        }
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) on a stand-in member this test brought up.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Finds the victim's `(label, pid)`: `name (host:port)` as the verdict names it.
fn victim(root: &Root, v: Victim, via_run: bool) -> (String, i32) {
    let members = root.members();
    let (name, address, pid) = members
        .iter()
        .find(|(n, _, _)| n == v.plan_name())
        .cloned()
        .unwrap_or_else(|| panic!("no member {} in {members:?}", v.plan_name()));
    // `run` knows no plan: it names what it discovered (the URI's mongos / mongod, the
    // shards from listShards); `compare` uses the plan's names.
    let shown = match (via_run, v) {
        (true, Victim::Mongos) => "mongos".to_string(),
        (true, Victim::Single) => "mongod".to_string(),
        _ => name,
    };
    (format!("{shown} ({address})"), pid)
}

/// `run` (CLI) with a member frozen or killed 2 s into a 6 s run.
fn run_case(v: Victim, sig: i32) {
    let root = Root::new();
    let (_topo, uri) = root.up_and_load(!matches!(v, Victim::Single));
    let (label, pid) = victim(&root, v, true);

    let json = root.path.join("run.json");
    let mut cmd = root.cmd();
    cmd.args(["run", "--uri", &uri, "--threads", "4", "--json"])
        .arg(&json)
        .args(["-p", "recordcount=300", "-p", "operationcount=0"])
        .args(["-p", "maxexecutiontime=6", "-p", "readproportion=0.5"])
        .args(["-p", "updateproportion=0.5"]);
    let started = Instant::now();
    let mut run = Live::spawn(cmd);
    run.wait_for("Maximum execution time", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(2));
    signal(pid, sig);
    let (code, stderr, _) = run.finish(Duration::from_secs(40));
    // 6 s run + 5 s grace for clients stuck on the dead member + probing and start-up slack.
    assert_said_and_not_valid(v, code, &stderr, &label, started, Duration::from_secs(20));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result written"))
            .expect("result parses");
    assert_eq!(doc["validity"]["verdict"], "invalid", "{}", doc["validity"]);
    let reasons = doc["validity"]["reasons"].to_string();
    assert!(reasons.contains(&label), "{v:?}: {reasons}");
    assert!(
        doc["timeline"]["seconds"]
            .as_array()
            .is_some_and(|s| s.len() >= 6),
        "{v:?}: the timeline covers the run: {}",
        doc["timeline"]
    );
    assert!(
        doc["timeline"]["member_outages"]
            .to_string()
            .contains(&label),
        "{}",
        doc["timeline"]["member_outages"]
    );

    let down = root.output(&["down", "--all"]);
    crate::util::assert_ok(&down, "down");
    root.assert_nothing_left();
}

/// What every fault case must show: exit 3 within `bound` of `started`, a live stderr line naming
/// the member when it stopped answering, and a last line saying which result is invalid and why.
fn assert_said_and_not_valid(
    v: Victim,
    code: Option<i32>,
    stderr: &str,
    label: &str,
    started: Instant,
    bound: Duration,
) {
    let took = started.elapsed();
    assert_eq!(code, Some(3), "{v:?}: exit status; stderr:\n{stderr}");
    assert!(took < bound, "{v:?}: took {took:?}");
    assert!(
        stderr.contains(&format!("{label} stopped answering at")),
        "{v:?}: no live line naming {label}:\n{stderr}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("invalid") && last.contains(label),
        "{v:?}: the last line must say which result and why: {last}"
    );
}

/// `compare` with a member frozen or killed 2 s into the run cell (S2).
fn compare_case(v: Victim, sig: i32) {
    let root = Root::new();
    let (topo, _port) = root.topology(!matches!(v, Victim::Single));
    let mut cmd = root.cmd();
    cmd.args(["compare", "--topologies", &topo, "--scenarios", "S1,S2"])
        .args(["--duration", "6s", "--threads", "4", "--records", "300"])
        .args(root.on_process().split_whitespace());
    let started = Instant::now();
    let mut compare = Live::spawn(cmd);
    compare.wait_for("S2 run", Duration::from_secs(60));
    let (label, pid) = victim(&root, v, false);
    std::thread::sleep(Duration::from_secs(2));
    signal(pid, sig);
    let (code, stderr, _) = compare.finish(Duration::from_secs(60));
    assert_said_and_not_valid(v, code, &stderr, &label, started, Duration::from_secs(45));
    let cell = find_cell(&root.path.join("results"), "S2").expect("the S2 cell file is kept");
    let cell: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cell).expect("read cell")).expect("parse");
    assert_eq!(cell["summary"]["validity"]["verdict"], "invalid");
    assert!(cell["summary"]["validity"].to_string().contains(&label));
    // The write concern in force is recorded per cell, for single and sharded topologies alike.
    assert_eq!(cell["result"]["server"]["write_concern"], "w=1");
    assert_eq!(cell["summary"]["write_concern"], "w=1");
    root.assert_nothing_left();
}

/// The cell file of `scenario` anywhere under `dir`.
fn find_cell(dir: &Path, scenario: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            if let Some(found) = find_cell(&p, scenario) {
                return Some(found);
            }
        } else if p.extension().is_some_and(|x| x == "json")
            && std::fs::read_to_string(&p).is_ok_and(|t| {
                t.contains("\"cell\"") && t.contains(&format!("\"scenario\": \"{scenario}\""))
            })
        {
            return Some(p);
        }
    }
    None
}

#[test]
fn run_with_a_frozen_shard_is_invalid() {
    run_case(Victim::Shard, libc::SIGSTOP);
}

#[test]
fn run_with_a_killed_shard_is_invalid() {
    run_case(Victim::Shard, libc::SIGKILL);
}

#[test]
fn run_with_a_frozen_mongos_is_invalid() {
    run_case(Victim::Mongos, libc::SIGSTOP);
}

#[test]
fn run_with_a_killed_mongos_is_invalid() {
    run_case(Victim::Mongos, libc::SIGKILL);
}

#[test]
fn run_with_a_frozen_single_mongod_is_invalid() {
    run_case(Victim::Single, libc::SIGSTOP);
}

#[test]
fn run_with_a_killed_single_mongod_is_invalid() {
    run_case(Victim::Single, libc::SIGKILL);
}

#[test]
fn compare_with_a_frozen_shard_is_invalid() {
    compare_case(Victim::Shard, libc::SIGSTOP);
}

#[test]
fn compare_with_a_killed_shard_is_invalid() {
    compare_case(Victim::Shard, libc::SIGKILL);
}

#[test]
fn compare_with_a_frozen_mongos_is_invalid() {
    compare_case(Victim::Mongos, libc::SIGSTOP);
}

#[test]
fn compare_with_a_killed_mongos_is_invalid() {
    compare_case(Victim::Mongos, libc::SIGKILL);
}

#[test]
fn compare_with_a_frozen_single_mongod_is_invalid() {
    compare_case(Victim::Single, libc::SIGSTOP);
}

#[test]
fn compare_with_a_killed_single_mongod_is_invalid() {
    compare_case(Victim::Single, libc::SIGKILL);
}

#[test]
fn a_load_into_existing_keys_exits_3_and_says_why_and_drop_fixes_it() {
    let root = Root::new();
    let server = StandinProcess::start(&root.path.join("db"));
    let uri = server.uri();
    let load = |extra: &[&str]| {
        let mut args = vec![
            "load",
            "--uri",
            uri.as_str(),
            "-p",
            "recordcount=200",
            "--threads",
            "2",
        ];
        args.extend_from_slice(extra);
        root.output(&args)
    };
    let first = load(&[]);
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let json = root.path.join("again.json");
    let json_s = json.display().to_string();
    let again = load(&["--json", &json_s]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(3), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("failed with E11000 duplicate key")
            && last.contains("drop the ycsb database first, or use --drop"),
        "{last}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("json");
    assert_eq!(doc["validity"]["verdict"], "invalid");
    let dropped = load(&["--drop"]);
    assert_eq!(
        dropped.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&dropped.stderr)
    );
}

#[test]
fn every_unacknowledged_write_concern_is_refused_before_connecting() {
    let root = Root::new();
    // Port 1 on loopback: nothing listens, so a connection attempt would fail differently.
    for (args, culprit) in [
        (
            vec!["-p", "mongodb.writeConcern=unacknowledged"],
            "mongodb.writeConcern=unacknowledged",
        ),
        (
            vec!["-p", "mongodb.writeConcern=errors_ignored"],
            "mongodb.writeConcern=errors_ignored",
        ),
        (
            vec!["-p", "mongodb.writeConcern=NORMAL"],
            "mongodb.writeConcern=NORMAL",
        ),
        (
            vec!["-p", "mongodb.url=mongodb://127.0.0.1:1/ycsb?w=0"],
            "w=0",
        ),
    ] {
        for phase in ["load", "run"] {
            let mut all = vec![phase];
            all.extend(args.iter().copied());
            if !args[1].starts_with("mongodb.url") {
                all.extend(["--uri", "mongodb://127.0.0.1:1/ycsb"]);
            }
            let started = Instant::now();
            let out = root.output(&all);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{all:?}: {stderr}");
            assert_eq!(stderr.trim().lines().count(), 1, "{all:?}: {stderr}");
            assert!(
                stderr.contains(culprit)
                    && stderr.contains("Rust driver does not send unacknowledged writes"),
                "{all:?}: {stderr}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(3),
                "{all:?} tried to connect"
            );
        }
    }
}

#[test]
fn compare_loads_exactly_the_records_asked_for_and_cells_record_the_real_port() {
    let root = Root::new();
    let (topo, port) = root.topology(false);
    let out = root.output_line(&format!(
        "compare --topologies {topo} --scenarios S1,S2 --duration 2s --threads 2 -p recordcount=200 {} -q",
        root.on_process()
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(3)), "{stderr}");
    let load = find_cell(&root.path.join("results"), "S1").expect("S1 cell");
    let load: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(load).expect("read")).expect("parse");
    let inserts_ok: u64 = load["result"]["measurements"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["name"] == "INSERT")
        .flat_map(|m| m["statuses"].as_array().cloned().unwrap_or_default())
        .filter(|s| s["status"] == "OK")
        .filter_map(|s| s["count"].as_u64())
        .sum();
    assert_eq!(inserts_ok, 200, "{}", load["result"]["measurements"]);
    assert_eq!(load["result"]["operations"], 200);
    let run = find_cell(&root.path.join("results"), "S2").expect("S2 cell");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run).expect("read")).expect("parse");
    let props = run["result"]["properties"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let value = |k: &str| {
        props
            .iter()
            .find(|p| p["key"] == k)
            .and_then(|p| p["value"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(value("recordcount"), "200");
    let url = value("mongodb.url");
    assert!(
        url.contains(&format!(":{port}")),
        "cell records {url}, not port {port}"
    );
    assert!(!url.contains("27017"), "{url}");
    assert!(
        run["result"]["server"]["client_url"]
            .as_str()
            .is_some_and(|u| u.contains(&format!(":{port}"))),
        "{}",
        run["result"]["server"]
    );
    assert_eq!(run["result"]["server"]["write_concern"], "w=1");
    assert!(
        run["topology"]["members"]
            .as_array()
            .is_some_and(|m| !m.is_empty())
    );
    root.assert_nothing_left();
}

#[test]
fn sweep_points_run_for_their_whole_duration() {
    let root = Root::new();
    let (topo, _port) = root.topology(false);
    let out = root.output_line(&format!(
        "sweep -P workloads/workloadc --topology {topo} --threads 1,2 --duration 3s --records 100 {} -q",
        root.on_process()
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(3)), "{stderr}");
    let mut sweeps = Vec::new();
    collect_json(&root.path.join("results"), &mut sweeps);
    let sweep = sweeps
        .iter()
        .find(|v| v["points"].is_array())
        .unwrap_or_else(|| panic!("no sweep file: {stderr}"));
    let points = sweep["points"].as_array().cloned().unwrap_or_default();
    assert_eq!(points.len(), 2);
    for p in &points {
        let ms = p["summary"]["runtime_ms"].as_f64().unwrap_or(0.0);
        assert!(ms >= 3000.0, "a 3 s point ran {ms} ms");
    }
    let report = std::fs::read_to_string(sweeps_dir(&root.path.join("results")).join("report.md"))
        .expect("report.md");
    assert!(!report.contains("not measured"), "{report}");
    assert!(report.contains("Thread sweep"), "{report}");
    root.assert_nothing_left();
}

fn collect_json(dir: &Path, out: &mut Vec<serde_json::Value>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            collect_json(&p, out);
        } else if p.extension().is_some_and(|x| x == "json")
            && let Some(v) = std::fs::read_to_string(&p)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
        {
            out.push(v);
        }
    }
}

/// The one run directory under `results`.
fn sweeps_dir(results: &Path) -> PathBuf {
    std::fs::read_dir(results)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap_or_else(|| results.to_path_buf())
}

#[test]
fn warmup_is_left_out_of_the_measurement_and_recorded() {
    let root = Root::new();
    let server = StandinProcess::start(&root.path.join("db"));
    let uri = server.uri();
    let load = root.output(&["load", "--uri", &uri, "-p", "recordcount=100"]);
    assert_eq!(
        load.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&load.stderr)
    );
    let json = root.path.join("warm.json");
    let started = Instant::now();
    let run = root.output_line(&format!(
        "run --uri {uri} -p recordcount=100 -p operationcount=0 -p maxexecutiontime=1 --warmup 2s --json {}",
        json.display()
    ));
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "warm-up + 1 s bound"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("json");
    assert_eq!(doc["warmup_s"], 2.0);
    let runtime = doc["runtime_ms"].as_u64().unwrap_or(0);
    assert!(
        (900..2000).contains(&runtime),
        "only the measured second counts: {runtime} ms"
    );
}

#[test]
fn seed_two_in_one_command_prints_its_table_and_draws_its_chart() {
    let root = Root::new();
    let results = root.path.join("results").display().to_string();
    let base = free_base_port(2);
    let out = root.output_line(&format!(
        "sweep -P workloads/Q20M --topology single --base-port {base} --vary readbatchsize=1,10,20 --wide --threads 1,5,10 --repeat 3 --duration 1s --records 200 --standin --out {results} -q"
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(matches!(out.status.code(), Some(0) | Some(3)), "{stderr}");
    assert!(stdout.contains("STAND-IN FIGURES"), "{stdout}");
    // The seed's shape (`--wide`): rows are thread counts; columns each value × repetition, then
    // the mean.
    for col in [
        "readbatchsize=1 #1",
        "readbatchsize=10 #3",
        "readbatchsize=20 mean",
    ] {
        assert!(stdout.contains(col), "{col} missing:\n{stdout}");
    }
    // The seed table, then the server's memory per value (the stand-in reports no cache).
    let (seed_table, memory) = stdout
        .split_once("Server memory when each value's last curve ended")
        .unwrap_or_else(|| panic!("a memory table:\n{stdout}"));
    let rows: Vec<&str> = seed_table
        .lines()
        .filter(|l| l.starts_with("│ 1 ") || l.starts_with("│ 5 ") || l.starts_with("│ 10 "))
        .collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert_eq!(
        memory
            .lines()
            .filter(|l| l.contains("not reported (stand-in: no WiredTiger)"))
            .count(),
        3,
        "a row per value:\n{stdout}"
    );
    // The index on disk is labelled as such, beside what it holds in the cache (the stand-in
    // has no cache), and each row names the members it summed.
    for header in [
        "index (on disk, compressed)",
        "index in cache",
        "members summed",
    ] {
        assert!(memory.contains(header), "{header} missing:\n{memory}");
    }
    assert_eq!(
        memory.lines().filter(|l| l.contains("│ entry ")).count(),
        3,
        "{memory}"
    );
    let dir = sweeps_dir(&root.path.join("results"));
    // Every point cross-checks the client against the server: one query per multi-id READ and
    // no getMore (the reads carry their limit), so no point says they disagree.
    let mut checked = 0;
    for f in std::fs::read_dir(dir.join("sweeps"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let text = std::fs::read_to_string(f.path()).unwrap_or_default();
        let Ok(sweep) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        for p in sweep["points"].as_array().cloned().unwrap_or_default() {
            let check = &p["crosscheck"];
            assert_eq!(check["server_counts_used"], true, "{check}");
            assert!(check.get("warnings").is_none(), "{check}");
            let getmore = check["rows"]
                .as_array()
                .and_then(|r| r.iter().find(|r| r["counter"] == "getmore").cloned());
            assert_eq!(
                getmore.map(|g| g["server"].clone()),
                Some(0.into()),
                "{check}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 27, "3 values x 3 repetitions x 3 thread counts");
    assert!(!stdout.contains("Client and server disagree"), "{stdout}");
    for f in ["vary.md", "vary.csv", "vary.json", "vary.svg"] {
        assert!(dir.join(f).is_file(), "{f} not written");
    }
    let svg = std::fs::read_to_string(dir.join("vary.svg")).expect("svg");
    for value in [
        "readbatchsize=1",
        "readbatchsize=10",
        "readbatchsize=20",
        "min–max of 3",
    ] {
        assert!(svg.contains(value), "chart lacks {value}");
    }
    root.assert_nothing_left();
}

/// A run that ends before its warm-up does has no window of its own: its figures are those of
/// the warm-up, and the verdict says so beside them (invalid, exit 3).
#[test]
fn a_run_that_ends_during_its_warmup_is_invalid_and_says_whose_figures_they_are() {
    let root = Root::new();
    let server = StandinProcess::start(&root.path.join("db"));
    let json = root.path.join("warm.json");
    let load = root.output_line(&format!(
        "load --uri {} -p recordcount=200 --warmup 30s --json {}",
        server.uri(),
        json.display()
    ));
    assert_eq!(
        load.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&load.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("json");
    assert_eq!(doc["validity"]["verdict"], "invalid", "{doc}");
    let reasons = doc["validity"]["reasons"].to_string();
    assert!(
        reasons.contains(
            "ended during its 30 s warm-up: no operation came after it, so its figures are the warm-up's own"
        ),
        "{reasons}"
    );
}
