//! `demo` and `calibrate` from the command line: stand-in figures, labelled as such, written under the results root.

use crate::util::*;

#[test]
fn demo_runs_the_pipeline_on_standins_and_labels_it() {
    let Scratch(_tmp, state, results, _) = Scratch::new();
    let out = microshard(&state)
        .args([
            "demo",
            "--topologies",
            "single,microshard-2",
            "--scenarios",
            "S1,S2",
        ])
        .args([
            "--records",
            "300",
            "--duration",
            "1s",
            "--threads",
            "8",
            "-q",
        ])
        .arg("--out")
        .arg(&results)
        .output()
        .expect("run demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed\n{stdout}\n{stderr}");
    assert_nothing_left(&state);
    assert!(
        stdout.starts_with("STAND-IN FIGURES — not MongoDB"),
        "{stdout}"
    );
    let dir = run_dir(&results);
    assert!(
        dir.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with("-demo")),
        "{}",
        dir.display()
    );
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("experiment.json")).unwrap_or_default(),
    )
    .expect("experiment.json parses");
    assert_eq!(config["standin"], true);
    assert!(
        config["extra_mongod_args"].as_array().is_some_and(|a| a
            .iter()
            .any(|x| x.as_str().is_some_and(|s| s.contains("service-time-us")))),
        "{config}"
    );
    for f in ["report.md", "report.csv", "throughput.svg"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        assert!(
            text.contains("stand-in") || text.contains("STAND-IN"),
            "{f} not labelled"
        );
    }
}

#[test]
fn calibrate_stores_a_labelled_client_ceiling() {
    let Scratch(_tmp, state, results, _) = Scratch::new();
    let out = microshard(&state)
        .args([
            "calibrate",
            "--duration",
            "1s",
            "--records",
            "200",
            "--threads",
            "4",
            "-q",
            "-p",
            "microshard.busyhost=1",
        ])
        .arg("--out")
        .arg(&results)
        .output()
        .expect("run calibrate");
    let stdout = String::from_utf8_lossy(&out.stdout);
    crate::util::assert_ok(&out, "calibrate");
    assert!(
        stdout.contains("STAND-IN") && stdout.contains("Client ceiling"),
        "{stdout}"
    );
    let stored: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(results.join(".calibrate.json")).unwrap_or_default(),
    )
    .expect("calibration stored");
    assert!(
        stored["ops_per_s"].as_f64().is_some_and(|x| x > 0.0),
        "{stored}"
    );
}

/// A ceiling measured while other work takes the cores is too low (every later cell near it
/// would be called client-bound), so it is neither stored nor used.
#[test]
fn a_client_ceiling_measured_on_a_busy_host_is_not_stored() {
    let Scratch(_tmp, state, results, _) = Scratch::new();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    let out = microshard(&state)
        .args(["calibrate", "--duration", "2s", "--records", "200", "-q"])
        .args(["--threads", "4", "-p", "microshard.busyhost=0.05"])
        .arg("--out")
        .arg(&results)
        .output()
        .expect("run calibrate");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinner.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("busy host: other processes used") && stderr.contains("not stored"),
        "{stderr}"
    );
    assert!(!results.join(".calibrate.json").exists());
}
