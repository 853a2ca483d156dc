//! `microshard rerun DIR` measures an experiment again from its own record into a new run
//! directory and says whether it reproduced: on unchanged stand-ins, every valid cell lands within
//! its spread; with the stand-in's capacity changed in the record, it names the cells that moved.
//! Bad input is refused before anything starts.

use std::path::Path;

use crate::util::*;

/// Per stand-in mongod: 2 workers × 10⁶ / 20 000 µs = 100 ops/s, below what a loaded machine
/// pushes, so the capacity model decides the figures; 5 s per cell and 600 records give every
/// cell the 300 operations a valid cell needs.
const SERVICE_TIME_US: &str = "20000";
/// The changed capacity: four times the operations per second.
const FASTER_US: &str = "5000";

fn rerun(state: &Path, dir: &Path, out: &Path) -> std::process::Output {
    microshard(state)
        .arg("rerun")
        .arg(dir)
        .arg("--out")
        .arg(out)
        .arg("-q")
        .output()
        .expect("run microshard rerun")
}

/// The last line of stdout (the verdict), and the whole of it.
fn verdict(out: &std::process::Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let last = stdout
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .to_string();
    (last, stdout)
}

/// How many cells the "not compared" line of a rerun's output names.
fn not_compared(stdout: &str) -> usize {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("not compared (only cells valid in both runs are): "))
        .map_or(0, |names| names.split(", ").count())
}

/// Each current cell's verdict reasons in a run directory: what a failure shows.
fn reasons(dir: &Path) -> Vec<String> {
    current_cells(dir)
        .iter()
        .map(|c| format!("{}: {}", c["cell"], c["summary"]["validity"]))
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in crate::util::files_under(from) {
        let target = to.join(entry.strip_prefix(from).expect("inside"));
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("mkdir");
        std::fs::copy(&entry, &target).expect("copy");
    }
}

#[test]
fn rerun_reproduces_and_names_the_cells_a_changed_capacity_moves() {
    let Scratch(tmp, state, results, bin_dir) = Scratch::new();
    let port = free_base_port(4);
    let out = microshard(&state)
        .args(["compare", "--topologies", "single", "--scenarios", "S1,S2"])
        .args(["--backend", "process", "--repeat", "2"])
        .arg("--bin-dir")
        .arg(&bin_dir)
        .arg(format!("--mongod-arg=--service-time-us={SERVICE_TIME_US}"))
        .arg("--mongod-arg=--workers=2")
        .args(["--records", "600", "--duration", "5s", "--threads", "16"])
        // Other tests share the machine: a busy host is what this test tolerates.
        .args(["-p", "microshard.busyhost=1"])
        .args(["--base-port", &port.to_string(), "-q", "--out"])
        .arg(&results)
        .output()
        .expect("run compare");
    crate::util::assert_ok(&out, "compare");
    let original = run_dir(&results);

    // Measured again from the record alone: the diff, then the verdict line.
    let again = tmp.path().join("again");
    let out = rerun(&state, &original, &again);
    let (last, stdout) = verdict(&out);
    crate::util::assert_ok(&out, "rerun");
    assert!(stdout.contains("B/A"), "the diff is printed:\n{stdout}");
    let new_dir = run_dir(&again);
    // A cell degraded in either run (a stall on a machine shared with other tests) is named as
    // not compared; every other cell must reproduce.
    let compared = 2 - not_compared(&stdout);
    assert!(
        compared >= 1
            && last == format!("reproduced: all {compared} valid cells within their spread"),
        "{stdout}\nwhy cells were left out: {:?} {:?}",
        reasons(&original),
        reasons(&new_dir)
    );
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(new_dir.join("experiment.json")).expect("record"),
    )
    .expect("parses");
    assert_eq!(record["repeat"], 2, "the original's command: {record}");
    assert_eq!(
        record["extra_mongod_args"][0],
        format!("--service-time-us={SERVICE_TIME_US}"),
        "{record}"
    );
    assert_nothing_left(&state);

    // The same record with four times the capacity: the load (S1, bound by the capacity alone)
    // moves, and the line names it; S2 moves too where the machine keeps up.
    let faster = tmp.path().join("faster/run");
    copy_dir(&original, &faster);
    let path = faster.join("experiment.json");
    let text = std::fs::read_to_string(&path).expect("record");
    let changed = text.replace(
        &format!("--service-time-us={SERVICE_TIME_US}"),
        &format!("--service-time-us={FASTER_US}"),
    );
    assert_ne!(text, changed, "the record holds the capacity");
    std::fs::write(&path, changed).expect("record written");
    let out = rerun(&state, &faster, &tmp.path().join("faster-again"));
    let (last, stdout) = verdict(&out);
    crate::util::assert_ok(&out, "rerun");
    let compared = 2 - not_compared(&stdout);
    assert!(
        last.starts_with("not reproduced: ")
            && last.contains(&format!(
                " of {compared} valid cells moved beyond their spread: "
            ))
            && last.contains("S1 on single"),
        "{stdout}\nwhy cells were left out: {:?}",
        reasons(&run_dir(&tmp.path().join("faster-again")))
    );
    assert_nothing_left(&state);
}

#[test]
fn rerun_refuses_what_is_not_a_compare_experiment() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let state = tmp.path().join("state");
    let out = rerun(&state, tmp.path(), &tmp.path().join("out"));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("rerun "), "{stderr}");
    assert!(!tmp.path().join("out").exists(), "nothing started");

    // A sweep's run directory: its record says so.
    let sweep = tmp.path().join("sweep");
    std::fs::create_dir_all(sweep.join("sweeps")).expect("mkdir");
    std::fs::write(
        sweep.join("experiment.json"),
        r#"{"schema":"microshard.experiment/1","name":"sweep-S5",
            "created":"2026-11-30T00:00:00Z","tool_version":"0.1.0",
            "topologies":["single"],"baseline":"single","scenarios":["S5"],"repeat":1,
            "backend":"process","extra_mongod_args":[],
            "duration_s":4,"threads":8,"sweep":true,"sweep_threads":[1,2],"sweep_duration_s":10,
            "full":false,"scale_note":"1000 records","properties":{},
            "server_versions":{},"standin":true,"degraded_error_fraction":0.01,
            "client_ceiling":null,"live_server_status":false,"clients":1}"#,
    )
    .expect("record");
    std::fs::write(sweep.join("sweeps").join("single.json"), "{}").expect("a sweep");
    let out = rerun(&state, &sweep, &tmp.path().join("out"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is a sweep"), "{stderr}");
    assert!(!tmp.path().join("out").exists(), "nothing started");
}
