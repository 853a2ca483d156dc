//! Interruptions: SIGINT/SIGTERM to `microshard compare` (process backend, stand-in binaries) at
//! each phase — bring-up, load, run, teardown — chosen by watching its progress lines on stderr,
//! and SIGKILL mid-run followed by `microshard down --all`. Afterwards: no stand-in process left,
//! no member/temporary directory left under `TMPDIR`, no state file left, every cell finished before the
//! signal is on disk and parses, and `compare --resume DIR` completes.

use crate::util::bin;
use crate::util::{free_base_port, processes_referring_to};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Kills the child on drop, so a failing assertion never leaves `compare` running.
struct Guard {
    child: Option<Child>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

struct Lab {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    bin_dir: PathBuf,
    results: PathBuf,
    port: u16,
}

impl Lab {
    fn new() -> Lab {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().to_path_buf();
        for d in ["state", "tmp", "results", "bin"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        let bin_dir = root.join("bin");
        for n in ["mongod", "mongos"] {
            std::os::unix::fs::symlink(bin(), bin_dir.join(n)).expect("symlink");
        }
        Lab {
            root: root.clone(),
            bin_dir,
            results: root.join("results"),
            port: free_base_port(8),
            _tmp: tmp,
        }
    }

    fn command(&self) -> Command {
        let mut c = Command::new(bin());
        c.env("MICROSHARD_STATE_DIR", self.root.join("state"))
            .env("TMPDIR", self.root.join("tmp"))
            .env("CI", "1")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null());
        c
    }

    fn compare(&self, topologies: &str) -> Command {
        let mut c = self.command();
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
        .arg("--bin-dir")
        .arg(&self.bin_dir)
        .arg("--out")
        .arg(&self.results);
        c
    }

    fn run_dir(&self) -> Option<PathBuf> {
        std::fs::read_dir(&self.results)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.is_dir())
    }

    /// Nothing left: processes, member directories under TMPDIR, state files.
    fn assert_clean(&self, what: &str) {
        // Teardown is done when the command returns; allow the kernel a moment to reap.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = processes_referring_to(&self.root);
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: processes left: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let tmp_left = list(&self.root.join("tmp"));
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
        let state_left = list(&self.root.join("state"));
        assert!(
            state_left.is_empty(),
            "{what}: state files left: {state_left:?}"
        );
    }
}

/// Whatever happens, nothing this lab started outlives the test.
impl Drop for Lab {
    fn drop(&mut self) {
        for (pid, _) in processes_referring_to(&self.root) {
            // SAFETY: kill(2) on a leftover of this test; ESRCH at worst.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
        }
    }
}

fn list(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Starts `cmd`, waits (bounded) for a stderr line containing `marker`, sends `signal`, waits for
/// the exit (bounded). Returns stderr and the number of cells reported finished before the signal.
fn interrupt_at(mut cmd: Command, marker: &str, signal: i32) -> (String, usize) {
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start compare");
    let mut guard = Guard { child: Some(child) };
    let stderr = guard
        .child
        .as_mut()
        .and_then(|c| c.stderr.take())
        .expect("stderr piped");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let mut finished_cells = 0usize;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let line = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(l) => l,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                assert!(
                    Instant::now() < deadline,
                    "never saw {marker:?}; stderr so far:\n{seen}"
                );
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("compare ended before {marker:?}:\n{seen}")
            }
        };
        seen.push_str(&line);
        seen.push('\n');
        if crate::util::is_cell_done_line(&line) {
            finished_cells += 1;
        }
        if line.contains(marker) {
            break;
        }
    }
    let pid = guard.child.as_ref().map(|c| c.id()).expect("child");
    // SAFETY: kill(2) on the pid of the child this test started and has not reaped.
    unsafe {
        libc::kill(pid as i32, signal);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = guard
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
        {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "compare did not stop within 120 s of signal {signal}:\n{seen}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = reader.join();
    while let Ok(l) = rx.try_recv() {
        seen.push_str(&l);
        seen.push('\n');
    }
    guard.child = None;
    if signal != libc::SIGKILL {
        assert!(
            !status.success(),
            "an interrupted compare reported success:\n{seen}"
        );
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
        .command()
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
    assert!(
        out.status.success(),
        "resume failed\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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
        !processes_referring_to(&lab.root).is_empty(),
        "no stand-in outlived the SIGKILLed compare; the test proves nothing:\n{stderr}"
    );
    // `down --all` also removes every microshard-labelled Docker object on the engine, other
    // tests' and other users' included; this lab made none, so it is kept away from the engine.
    let out = lab
        .command()
        .args(["down", "--all"])
        .env(
            "DOCKER_HOST",
            "unix:///nonexistent/microshard-test/docker.sock",
        )
        .output()
        .expect("down --all");
    assert!(
        out.status.success(),
        "down --all failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    lab.assert_clean("SIGKILL then down --all");
    let dir = lab.run_dir().expect("run directory exists");
    let on_disk = crate::util::assert_cells_parse(&dir);
    assert!(on_disk >= finished, "{stderr}");
    resume(&lab, &dir);
}
