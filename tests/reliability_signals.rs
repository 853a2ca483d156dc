//! Interruptions: SIGINT/SIGTERM to `microshard compare` (process backend, stand-in binaries) at
//! each phase — bring-up, load, run, teardown — chosen by watching its progress lines on stderr,
//! and SIGKILL mid-run followed by `microshard down --all`. Afterwards: no stand-in process left,
//! no member/temporary directory left under `TMPDIR`, no state file left, every cell finished before the
//! signal is on disk and parses, and `compare --resume DIR` completes.

use crate::util::{Live, Root, assert_ok, entries, free_base_port, processes_referring_to};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A private root (killing whatever is left of it on drop) and the ports its topologies use.
struct Lab {
    root: Root,
    port: u16,
}

impl Lab {
    fn new() -> Lab {
        Lab {
            root: Root::new(),
            port: free_base_port(8),
        }
    }

    fn compare(&self, topologies: &str) -> Command {
        let mut c = self.root.cmd();
        c.args([
            "compare",
            "--topologies",
            topologies,
            "--scenarios",
            "S1,S2",
        ])
        .args(["--backend", "process", "--records", "300"])
        .args(["--duration", "3s", "--threads", "4"])
        .args(["--base-port", &self.port.to_string(), "--format", "csv"])
        .args(["--bin-dir", &self.root.bin_dir()])
        .arg("--out")
        .arg(self.root.path.join("results"));
        c
    }

    fn run_dir(&self) -> Option<PathBuf> {
        entries(&self.root.path.join("results"))
            .into_iter()
            .find(|p| p.is_dir())
    }

    /// Nothing left: processes, member directories under TMPDIR, state files.
    fn assert_clean(&self, what: &str) {
        // Teardown is done when the command returns; allow the kernel a moment to reap.
        crate::util::assert_no_process_left(&self.root.path, Duration::from_secs(10), what);
        let tmp_left = entries(&self.root.path.join("tmp"));
        let microshard_tmp: Vec<_> = tmp_left
            .iter()
            .filter(|p| {
                std::fs::read_dir(p)
                    .map(|mut rd| rd.next().is_some())
                    .unwrap_or(true)
            })
            .collect();
        assert!(
            microshard_tmp.is_empty(),
            "{what}: temporary directories left: {microshard_tmp:?}"
        );
        let state_left = entries(&self.root.path.join("state"));
        assert!(
            state_left.is_empty(),
            "{what}: state files left: {state_left:?}"
        );
    }
}

/// Starts `cmd`, waits (bounded) for a stderr line containing `marker`, sends `signal`, waits for
/// the exit (bounded). Returns stderr and the number of cells reported finished before the signal.
fn interrupt_at(cmd: Command, marker: &str, signal: i32) -> (String, usize) {
    let mut compare = Live::spawn(cmd);
    compare.wait_for(marker, Duration::from_secs(180));
    let finished_cells = compare.cells_done();
    compare.signal(signal);
    let (code, seen, _) = compare.finish(Duration::from_secs(120));
    if signal != libc::SIGKILL {
        // An interrupted run is not a complete measurement: exit 3, as the README's table says
        // (it was 1, "could not run").
        assert_eq!(code, Some(3), "an interrupted compare:\n{seen}");
        assert!(
            seen.contains("--resume"),
            "the interrupted compare does not say how to resume:\n{seen}"
        );
        assert!(!seen.contains("panicked"), "{seen}");
    }
    (seen, finished_cells)
}

fn resume(lab: &Lab, dir: &Path) {
    let out = lab
        .root
        .cmd()
        .args(["compare", "--resume"])
        .arg(dir)
        .args([
            "--format",
            "csv",
            "-q",
            "--base-port",
            &lab.port.to_string(),
        ])
        .output()
        .expect("resume");
    assert_ok(&out, "resume");
    assert_eq!(
        crate::util::assert_cells_parse(dir),
        2,
        "resume measured every cell"
    );
    lab.assert_clean("after resume");
}

fn signal_case(topologies: &str, marker: &str, signal: i32, then_resume: bool) {
    let lab = Lab::new();
    let (stderr, finished) = interrupt_at(lab.compare(topologies), marker, signal);
    lab.assert_clean(&format!("signal {signal} at {marker:?}"));
    let Some(dir) = lab.run_dir() else {
        assert_eq!(
            finished, 0,
            "cells finished but no run directory:\n{stderr}"
        );
        return;
    };
    let on_disk = crate::util::assert_cells_parse(&dir);
    assert!(
        on_disk >= finished,
        "{finished} cell(s) finished before the signal, {on_disk} on disk:\n{stderr}"
    );
    if then_resume {
        resume(&lab, &dir);
    }
}

#[test]
fn sigint_during_bring_up() {
    signal_case(
        "microshard-2",
        "microshard-2 (repeat 1/1): bring-up ...",
        libc::SIGINT,
        false,
    );
}

#[test]
fn sigterm_during_load() {
    signal_case("single", "single: S1 load ...", libc::SIGTERM, false);
}

#[test]
fn sigint_during_run_then_resume() {
    signal_case("single", "single: S2 run ...", libc::SIGINT, true);
}

#[test]
fn sigterm_during_teardown() {
    signal_case(
        "single",
        "single (repeat 1/1): teardown ...",
        libc::SIGTERM,
        false,
    );
}

/// SIGKILL cannot be caught: the stand-ins outlive microshard until `down --all` finds them
/// through the state files; then `--resume` finishes the experiment.
#[test]
fn sigkill_mid_run_then_down_all_and_resume() {
    let lab = Lab::new();
    let (stderr, finished) =
        interrupt_at(lab.compare("single"), "single: S2 run ...", libc::SIGKILL);
    // SIGKILL leaves the stand-ins running: that is what `down --all` is for.
    assert!(
        !processes_referring_to(&lab.root.path).is_empty(),
        "no stand-in outlived the SIGKILLed compare; the test proves nothing:\n{stderr}"
    );
    // `down --all` also removes every microshard-labelled Docker object on the engine, other
    // tests' and other users' included; this lab made none, so it is kept away from the engine.
    let out = lab
        .root
        .cmd()
        .args(["down", "--all"])
        .env(
            "DOCKER_HOST",
            "unix:///nonexistent/microshard-test/docker.sock",
        )
        .output()
        .expect("down --all");
    assert_ok(&out, "down --all");
    lab.assert_clean("SIGKILL then down --all");
    let dir = lab.run_dir().expect("run directory exists");
    let on_disk = crate::util::assert_cells_parse(&dir);
    assert!(on_disk >= finished, "{stderr}");
    resume(&lab, &dir);
}
