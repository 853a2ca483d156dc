//! A newcomer's mistakes cost neither data nor a quarter of an hour: misspelt
//! properties are refused before anything starts, a dry run of the README's `--full` line plans
//! without MongoDB, a sweep's knee says when it cannot be trusted, `compare --resume` leaves a
//! sweep's directory alone, and a cell measured for a fraction of a second says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::util::*;

/// `microshard` with PATH holding only the system's directories: no `mongod` anywhere.
fn without_mongod(state: &Path, args: &[&str]) -> std::process::Output {
    microshard(state)
        .env("PATH", "/usr/bin:/bin")
        .args(args)
        .output()
        .expect("run microshard")
}

#[test]
fn a_misspelt_property_is_refused_naming_it_before_anything_starts() {
    let tmp = tempfile::tempdir().expect("tmp");
    let state = tmp.path().join("state");
    let out = tmp.path().join("results");
    let cases: [&[&str]; 4] = [
        &[
            "load",
            "-P",
            "workloads/S1",
            "-p",
            "recordcout=1000",
            "--uri",
            "mongodb://localhost:1/ycsb",
        ],
        &[
            "sweep",
            "--standin",
            "-P",
            "workloads/S5",
            "--topology",
            "single",
            "--threads",
            "1,2",
            "--records",
            "2000",
            "--duration",
            "1s",
            "--vary",
            "readbachsize=1,10",
        ],
        &[
            "compare",
            "--standin",
            "--topologies",
            "single",
            "--scenarios",
            "S1",
            "-p",
            "recordcout=1000",
        ],
        // Not within two edits, but an abbreviation (it ran zipfian silently).
        &[
            "run",
            "-P",
            "workloads/workloadc",
            "-p",
            "requestdistrib=uniform",
            "--uri",
            "mongodb://localhost:1/ycsb",
        ],
    ];
    for (args, named) in
        cases
            .iter()
            .zip(["recordcout", "readbachsize", "recordcout", "requestdistrib"])
    {
        let mut cmd = microshard(&state);
        cmd.args(*args);
        if !matches!(args[0], "load" | "run") {
            cmd.arg("--out").arg(&out);
        }
        let o = cmd.output().expect("run");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&format!("'{named}'")), "{args:?}: {stderr}");
        assert!(stderr.contains("did you mean"), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?}: nothing is created");
    }
}

#[test]
fn the_readme_full_dry_run_plans_without_mongod_and_names_standin_otherwise() {
    let tmp = tempfile::tempdir().expect("tmp");
    let state = tmp.path().join("state");
    let full = [
        "compare",
        "--full",
        "--topologies",
        "single,microshard-2,microshard-4",
        "--scenarios",
        "S1,S2,S3,S4,S5",
        "--duration",
        "600s",
    ];
    let mut with = full.to_vec();
    with.extend(["--standin", "--dry-run"]);
    let o = without_mongod(&state, &with);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("measuring: at most"));
    let mut without = full.to_vec();
    without.push("--dry-run");
    let o = without_mongod(&state, &without);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let standin = stderr.find("--standin").expect("names --standin");
    let others = stderr.find("--bin-dir").expect("names --bin-dir");
    assert!(standin < others, "--standin first: {stderr}");
    assert!(
        stderr.contains("--backend docker --image microshard-standin:latest"),
        "{stderr}"
    );
    // The README's own --full dry-run lines carry --standin.
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README");
    let dry: Vec<&str> = readme
        .lines()
        .filter(|l| l.contains("--dry-run") && (l.contains("--full") || l.contains("600s")))
        .collect();
    assert!(!dry.is_empty());
    assert!(dry.iter().all(|l| l.contains("--standin")), "{dry:?}");

    // `doctor` names the flag where mongod is missing, and `run --help` no `load`-only flag.
    let o = without_mongod(&state, &["doctor"]);
    let doctor = String::from_utf8_lossy(&o.stdout);
    assert!(doctor.contains("add --standin"), "{doctor}");
    let o = without_mongod(&state, &["run", "--help"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("--drop"));
    let o = without_mongod(&state, &["load", "--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("--drop"));

    // `up` without mongod and without a Docker engine names --standin too.
    let port = free_base_port(1).to_string();
    let o = microshard(&state)
        .env("PATH", "/usr/bin:/bin")
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .args(["up", "single", "--base-port", &port])
        .output()
        .expect("run microshard");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--standin"), "{stderr}");
}

/// Every file under `dir` with its content's hash.
fn hashes(dir: &Path) -> BTreeMap<PathBuf, u64> {
    use std::hash::{Hash, Hasher};
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(&p).expect("read").hash(&mut h);
                out.insert(p, h.finish());
            }
        }
    }
    out
}

#[test]
fn a_rising_sweep_says_so_and_resume_leaves_its_directory_alone() {
    let _alone = one_at_a_time();
    // 4 workers × 10⁶ / 20 000 µs = 200 ops/s; one thread keeps one worker busy: throughput
    // doubles from 1 to 2 threads, so the maximum is the last point tried.
    let Scratch(_tmp, state, results, bin_dir) = Scratch::new();
    let port = free_base_port(4);
    let out = microshard(&state)
        .args("sweep -P S5 --threads 1,2 --topology single".split_whitespace())
        .args(["--duration", "2s", "--records", "500", "--bin-dir"])
        .arg(&bin_dir)
        .arg("--mongod-arg=--service-time-us=20000")
        .arg("--mongod-arg=--workers=4")
        .args(["--base-port", &port.to_string(), "-q", "--out"])
        .arg(&results)
        .output()
        .expect("sweep");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("still rising at 2 threads") && stdout.contains("extend --threads"),
        "{stdout}\n{stderr}"
    );
    // A point of fewer than 300 operations is degraded, saying why.
    let dir = run_dir(&results);
    let sweep: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("sweeps/single.json")).expect("sweep file"),
    )
    .expect("json");
    let first = &sweep["points"][0]["summary"]["validity"];
    assert_eq!(first["verdict"], "degraded", "{first}");
    assert!(first.to_string().contains("measured for only"), "{first}");

    let before = hashes(&dir);
    let resumed = microshard(&state)
        .args(["compare", "--resume"])
        .arg(&dir)
        .args(["--bin-dir"])
        .arg(&bin_dir)
        .output()
        .expect("resume");
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is a sweep, not a compare experiment"),
        "{stderr}"
    );
    assert_eq!(hashes(&dir), before, "every file unchanged");
    assert_nothing_left(&state);
}

#[test]
fn compare_knows_the_client_ceiling_and_marks_a_tenth_of_a_second_cell() {
    let Scratch(_tmp, state, results, _) = Scratch::new();
    let port = free_base_port(4);
    let out = microshard(&state)
        .args([
            "compare",
            "--standin",
            "--topologies",
            "single",
            "--scenarios",
            "S1,S5",
        ])
        .args([
            "--records",
            "299",
            "--duration",
            "1s",
            // Other tests share the machine: a busy host is what this test tolerates.
            "-p",
            "microshard.busyhost=1",
            "--base-port",
            &port.to_string(),
        ])
        .arg("--out")
        .arg(&results)
        .output()
        .expect("compare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Measured before the first cell, without a separate command, and kept for the next run.
    assert!(stderr.contains("client ceiling"), "{stderr}");
    let stored: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(results.join(".calibrate.json")).unwrap_or_default(),
    )
    .expect("the ceiling is stored");
    assert!(
        stored["ops_per_s"].as_f64().unwrap_or(0.0) > 0.0,
        "{stored}"
    );
    // The S1 load of 299 records is too small to mean anything (under 300 operations, and on a
    // quiet machine a fraction of a second): degraded, saying so, however busy the machine is.
    assert!(
        stdout.contains("S1/single #1 is degraded: measured for only"),
        "{stdout}\n{stderr}"
    );
    // The stand-in table says which capacity model is in force, and why significance is blank.
    assert!(
        stdout.contains("No capacity model: these figures measure"),
        "{stdout}"
    );
    assert!(stdout.contains("run with --repeat 2 or more"), "{stdout}");
    assert_nothing_left(&state);
}

#[test]
fn a_port_conflict_in_up_is_bad_input_naming_base_port() {
    let tmp = tempfile::tempdir().expect("tmp");
    let state = tmp.path().join("state");
    let port = free_base_port(2);
    let _holder = std::net::TcpListener::bind(("127.0.0.1", port)).expect("hold the port");
    let o = microshard(&state)
        .args([
            "up",
            "single",
            "--standin",
            "--base-port",
            &port.to_string(),
        ])
        .output()
        .expect("up");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("port {port}")) && stderr.contains("--base-port"),
        "{stderr}"
    );
    // A program listens on it: "another program" is true here, and only here (a port held by a
    // closed connection is said to be one: `ports` unit tests).
    assert!(stderr.contains("in use by another program"), "{stderr}");
    assert_nothing_left(&state);
}

#[test]
fn report_without_a_directory_reads_results_latest() {
    let tmp = tempfile::tempdir().expect("tmp");
    let o = microshard(&tmp.path().join("state"))
        .current_dir(tmp.path())
        .arg("report")
        .output()
        .expect("report");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("results/latest"), "{stderr}");
    assert!(!stderr.contains(":;"), "{stderr}");
}

#[test]
fn load_with_standin_says_how_to_start_a_server() {
    let tmp = tempfile::tempdir().expect("tmp");
    let o = microshard(&tmp.path().join("state"))
        .args(["load", "-P", "workloads/S1", "--standin"])
        .output()
        .expect("load");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("microshard up single --standin"),
        "{stderr}"
    );
}

#[test]
fn a_dry_run_refuses_a_baseline_the_real_run_refuses() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = without_mongod(
        &tmp.path().join("state"),
        &[
            "compare",
            "--standin",
            "--topologies",
            "single,microshard-2",
            "--scenarios",
            "S1,S2",
            "--baseline",
            "microshard-4",
            "--dry-run",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--baseline microshard-4"), "{stderr}");
}

/// `down singel` with `single` running suggests it, and tears nothing down.
#[test]
fn down_with_a_misspelt_name_suggests_the_running_cluster() {
    let tmp = tempfile::tempdir().expect("tmp");
    let state = tmp.path().join("state");
    let port = free_base_port(1).to_string();
    let up = microshard(&state)
        .args(["up", "single", "--standin", "--base-port", &port])
        .output()
        .expect("up");
    assert_eq!(
        up.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    // A second `single` is refused, saying how to keep two.
    let again = microshard(&state)
        .args(["up", "single", "--standin", "--base-port"])
        .arg(free_base_port(1).to_string())
        .output()
        .expect("up again");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("already running") && stderr.contains("another `name =`"),
        "{stderr}"
    );
    let o = microshard(&state)
        .args(["down", "singel"])
        .output()
        .expect("down");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did you mean \"single\"?"), "{stderr}");
    let down = microshard(&state)
        .args(["down", "single"])
        .output()
        .expect("down");
    assert_eq!(
        down.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    assert_nothing_left(&state);
}

#[test]
fn a_run_says_when_recordcount_is_not_what_the_collection_holds_and_unread_names_are_kept_as_unused()
 {
    // A run that forgot recordcount read a hot fifth of the data in silence.
    let tmp = tempfile::tempdir().expect("tmp");
    let server = StandinProcess::start(&tmp.path().join("db"));
    let load = microshard(tmp.path())
        .args([
            "load",
            "-P",
            "workloads/workloadc",
            "-p",
            "recordcount=500",
            "--uri",
        ])
        .arg(server.uri())
        .output()
        .expect("load");
    assert_ok(&load, "load");
    let json = tmp.path().join("run.json");
    let run = microshard(tmp.path())
        .args(["run", "-P", "workloads/workloadc", "-p", "recordcount=100"])
        .args(["-p", "operationcount=50", "-p", "mycompany.tag=x", "--uri"])
        .arg(server.uri())
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run");
    assert_ok(&run, "run");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("holds 500 documents but this run's recordcount=100"),
        "{stderr}"
    );
    assert!(
        stderr.contains("property 'mycompany.tag' (-p) is read by nothing in microshard"),
        "{stderr}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("json");
    let entry = |key: &str| {
        doc["properties"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["key"] == key).cloned())
            .unwrap_or_else(|| panic!("{key} recorded"))
    };
    assert_eq!(entry("mycompany.tag")["unused"], true);
    assert!(entry("recordcount").get("unused").is_none());
}

#[test]
fn compare_keeps_each_cells_ycsb_outputs_beside_it_and_a_sweep_refuses_them_up_front() {
    // Every cell wrote its interval logs over the last one's, and `exportfile`
    // was recorded as applied but never written.
    let root = Root::new();
    let base = free_base_port(4);
    let out = root.output_line(&format!(
        "compare --topologies single --scenarios S1,S2 --records 300 --duration 1s --base-port {base} \
         -p hdrhistogram.fileoutput=true -p hdrhistogram.output.path=hdr/ -p exportfile=export.txt {}",
        root.on_process()
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(3)), "{stderr}");
    assert!(
        stderr.contains("written per cell beside its cell file"),
        "{stderr}"
    );
    let cells = run_dir(&root.path.join("results"))
        .join("cells")
        .join("single");
    for (scenario, op) in [("S1", "INSERT"), ("S2", "READ")] {
        let log = cells
            .join(format!("{scenario}-r1.hdr"))
            .join(format!("{op}.hdr"));
        let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{log:?}: {e}"));
        assert!(text.contains(&format!("#[Logging for: {op}]")), "{text}");
        let export = std::fs::read_to_string(cells.join(format!("{scenario}-r1.export.txt")))
            .expect("the cell's export file");
        assert!(
            export.contains("[OVERALL], Throughput(ops/sec)"),
            "{export}"
        );
        assert!(export.contains(&format!("[{op}], Operations")), "{export}");
    }
    assert!(
        !Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("export.txt")
            .exists()
    );

    let results = root.path.join("sweep-results");
    let sweep = root.output_line(&format!(
        "sweep --standin -P workloads/S5 --topology single --threads 1,2 -p exportfile=x.txt --out {}",
        results.display()
    ));
    let stderr = String::from_utf8_lossy(&sweep.stderr);
    assert_eq!(sweep.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("exportfile: not available in a sweep"),
        "{stderr}"
    );
    assert!(!results.exists(), "nothing is created");
}

#[test]
fn a_target_adds_intended_blocks_only_when_interval_is_not_given_and_says_so() {
    // `-p measurement.interval=op` still printed [Intended-*] blocks, which old
    // parsers that sum every `[X], Operations` line counted twice.
    let tmp = tempfile::tempdir().expect("tmp");
    let server = StandinProcess::start(&tmp.path().join("db"));
    let load = microshard(tmp.path())
        .args(["load", "-p", "recordcount=50", "--uri"])
        .arg(server.uri())
        .output()
        .expect("load");
    assert_ok(&load, "load");
    let run = |extra: &[&str]| {
        let out = microshard(tmp.path())
            .args([
                "run",
                "-p",
                "recordcount=50",
                "-p",
                "operationcount=200",
                "--target",
                "2000",
            ])
            .args(extra)
            .arg("--uri")
            .arg(server.uri())
            .output()
            .expect("run");
        assert_ok(&out, "run");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (stdout, stderr) = run(&["-p", "measurement.interval=op"]);
    assert!(!stdout.contains("[Intended-"), "{stdout}");
    assert!(
        !stderr.contains("intended latency is reported too"),
        "{stderr}"
    );
    let (stdout, stderr) = run(&[]);
    assert!(stdout.contains("[Intended-READ]"), "{stdout}");
    assert!(
        stderr.contains("intended latency is reported too"),
        "{stderr}"
    );
}
