//! Interruptions on Docker, with the stand-in image (built here from scratch, under a tag of each
//! test's own).
//!
//! `microshard up <sharded topology> --backend docker`: SIGINT as the first container is being
//! created, SIGINT as the second shard's is, and SIGTERM once every mongod container runs.
//! Afterwards: the command failed promptly, no container, network or volume labelled with the
//! topology is left (before any `down`), no state file and no file under `TMPDIR` either, and a
//! `down --all` limited to this topology finds nothing to do.
//!
//! `microshard compare --backend docker` of two `rsig-` topologies (a standalone, two shards):
//! SIGINT during a bring-up and during a load, SIGTERM during a run and during a teardown, SIGKILL
//! mid-run. Afterwards (for SIGKILL, after a `down --all` limited to these topologies): no labelled
//! object, state file or temporary file is left, every cell finished before the signal is on disk
//! and parses, and `compare --resume DIR` completes the experiment.
//!
//! `microshard up` with no mongod on PATH and no `--backend`: it picks Docker and says so.
//!
//! Runs whenever a Docker engine answers; skips, saying why, only when none does.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use microshard::backend::{self, docker};

use crate::util::{Live, bin, entries, free_base_port};

/// Whatever happens, nothing this test made outlives it: every Docker object labelled with one of
/// its topologies is removed, then its image.
struct Cleanup {
    clusters: Vec<String>,
    image: Option<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let rt = crate::util::runtime();
        rt.block_on(async {
            let clusters = self.clusters.clone();
            let _ = docker::remove_labelled_matching(None, None, |l| {
                l.get(docker::LABEL_CLUSTER)
                    .is_some_and(|c| clusters.iter().any(|n| n == c))
            })
            .await;
            if let (Some(image), Ok(d)) = (&self.image, docker::connect(None).await) {
                let opts = bollard::query_parameters::RemoveImageOptionsBuilder::default()
                    .force(true)
                    .build();
                let _ = d.remove_image(image, Some(opts), None).await;
            }
        });
    }
}

/// What an interrupted command left: its exit code, its stderr, the time from the signal to the
/// exit, and how many cells it reported finished before the signal.
struct Interrupted {
    code: Option<i32>,
    output: String,
    elapsed: Duration,
    finished_cells: usize,
}

/// Starts `cmd` (killed if the test fails first), waits (bounded) for a stderr line containing
/// `marker`, runs `before_signal`, sends `signal` and waits (bounded) for the exit.
fn interrupt(cmd: Command, marker: &str, signal: i32, before_signal: impl FnOnce()) -> Interrupted {
    let mut live = Live::spawn(cmd);
    live.wait_for(marker, Duration::from_secs(120));
    let finished_cells = live.cells_done();
    before_signal();
    let signalled = live.signal(signal);
    let (code, output, ended) = live.finish(Duration::from_secs(120));
    Interrupted {
        code,
        output,
        elapsed: ended - signalled,
        finished_cells,
    }
}

/// `up` of a two-shard topology on Docker, interrupted by `signal` once stderr shows `marker`;
/// `before_signal` runs between the two.
fn interrupt_up(
    root: &Path,
    topology: &Path,
    image: &str,
    marker: &str,
    signal: i32,
    before_signal: impl FnOnce(),
) -> Interrupted {
    let mut cmd = microshard(root);
    cmd.arg("up")
        .arg(topology)
        .args(["--backend", "docker", "--image", image, "--timeout", "60"]);
    interrupt(cmd, marker, signal, before_signal)
}

/// No mongod on PATH and no `--backend`: `up` brings the topology up on Docker and says so,
/// naming `--standin`; then `down` removes it.
fn up_picks_docker_and_says_so(cleanup: &mut Cleanup, root: &Path, image: &str) {
    let name = format!("rsig-{}-default", std::process::id());
    cleanup.clusters.push(name.clone());
    let topology = root.join("default.toml");
    let toml = format!(
        "name = \"{name}\"\nkind = \"standalone\"\nbase_port = {}\n",
        free_base_port(2)
    );
    std::fs::write(&topology, toml).expect("write topology");
    let up = microshard(root)
        .arg("up")
        .arg(&topology)
        .args(["--image", image, "--timeout", "60"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("up runs");
    crate::util::assert_ok(&up, "up on Docker by default");
    let said = String::from_utf8_lossy(&up.stderr);
    let note = format!(
        "microshard: note: no mongod on PATH: bringing {name} up on Docker (image {image}); add --standin"
    );
    assert!(
        said.contains(&note),
        "no word that Docker was picked:\n{said}"
    );
    let down = microshard(root)
        .args(["down", &name])
        .output()
        .expect("down runs");
    crate::util::assert_ok(&down, "down");
}

/// `microshard` with its state and temporary files under `root`.
fn microshard(root: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.env("MICROSHARD_STATE_DIR", root.join("state"))
        .env("TMPDIR", root.join("tmp"))
        .env("CI", "1")
        .current_dir(root)
        .stdin(Stdio::null());
    cmd
}

/// A temporary root with `state/` and `tmp/`, made this process's state directory
/// (`down_all_where` reads it from the environment).
fn lab_root() -> tempfile::TempDir {
    let root = crate::util::state_root();
    for dir in ["state", "tmp"] {
        std::fs::create_dir_all(root.path().join(dir)).expect("mkdir");
    }
    root
}

#[test]
fn signals_during_a_docker_bring_up_leave_nothing_behind() {
    let _env = crate::util::one_at_a_time();
    let rt = crate::util::runtime();
    let Some(d) = rt.block_on(crate::util::docker_or_skip()) else {
        return;
    };
    let root_tmp = lab_root();
    let root = root_tmp.path();
    let pid = std::process::id();
    // An image of this test's own: another test (or worktree) rebuilding microshard-standin:test
    // with another binary cannot change what this one runs.
    let image = format!("microshard-standin:signals-{pid}");
    let mut cleanup = Cleanup {
        clusters: Vec::new(),
        image: Some(image.clone()),
    };
    rt.block_on(docker::build_standin_image(&d, &bin(), &image))
        .expect("stand-in image builds");

    // (case, signal, marker on stderr, containers that must exist when the signal is sent):
    // SIGINT the moment the first container is about to be created (its create may be in flight
    // when the signal comes, so nothing is checked first), SIGINT while the second shard's is
    // (the config server's already exists), SIGTERM once every mongod container runs and the
    // replica sets are being initiated.
    let cases = [
        ("sigint-first", libc::SIGINT, "microshard: starting cfg0", 0),
        ("sigint-sh1", libc::SIGINT, "microshard: starting sh1", 1),
        ("sigterm", libc::SIGTERM, "microshard: replSetInitiate ", 3),
    ];
    for (what, signal, marker, existing) in cases {
        // Not `t-d...`: tests/backend_docker.rs sweeps those names.
        let name = format!("rsig-{pid}-{what}");
        cleanup.clusters.push(name.clone());
        let topology = root.join(format!("{what}.toml"));
        std::fs::write(
            &topology,
            format!(
                "name = \"{name}\"\nkind = \"sharded\"\nshards_per_host = 2\nbase_port = {}\n",
                free_base_port(8)
            ),
        )
        .expect("write topology");
        let before = || {
            if existing > 0 {
                let now = rt.block_on(labelled_objects(&d, &name));
                let containers = now.iter().filter(|o| o.starts_with("container")).count();
                assert!(
                    containers >= existing && now.iter().any(|o| o.starts_with("network")),
                    "{what}: expected a network and {existing}+ containers before the signal: {now:?}"
                );
            }
        };
        let Interrupted {
            code,
            output,
            elapsed,
            ..
        } = interrupt_up(root, &topology, &image, marker, signal, before);
        assert_ne!(code, Some(0), "{what}: up succeeded:\n{output}");
        assert!(
            output.contains("interrupted"),
            "{what}: no word of the interruption:\n{output}"
        );
        // An aborted bring-up gives its members 2 s to stop (a container signalled before its
        // server set a handler ignores SIGTERM), one role after the other.
        assert!(
            elapsed < Duration::from_secs(20),
            "{what}: up took {elapsed:?} to exit after the signal:\n{output}"
        );
        let left = rt.block_on(labelled_objects(&d, &name));
        assert!(
            left.is_empty(),
            "{what}: left behind by the interrupted up: {left:?}\n{output}"
        );
        // A create that was in flight when the signal came must not surface afterwards.
        std::thread::sleep(Duration::from_secs(2));
        let left = rt.block_on(labelled_objects(&d, &name));
        assert!(
            left.is_empty(),
            "{what}: appeared after the interrupted up: {left:?}\n{output}"
        );
        let state = entries(&root.join("state"));
        assert!(
            state.is_empty(),
            "{what}: state files left: {state:?}: {}\n{output}",
            state
                .first()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .unwrap_or_default()
        );
        let tmp = crate::util::files_under(&root.join("tmp"));
        assert!(tmp.is_empty(), "{what}: files left under TMPDIR: {tmp:?}");
        // `microshard down --all`, limited to this topology (the real one would also remove
        // every other microshard object on this engine): nothing is left for it to do.
        let done = rt
            .block_on(backend::down_all_where(
                |c| c == name,
                &microshard::events::Discard,
            ))
            .expect("down --all");
        assert!(done.is_empty(), "{what}: down --all still found: {done:?}");
        assert!(rt.block_on(labelled_objects(&d, &name)).is_empty());
    }
    up_picks_docker_and_says_so(&mut cleanup, root, &image);
    drop(cleanup);
}

/// A Docker `compare` of two tiny topologies (a standalone, then two shards) on a stand-in image
/// of its own, under a temporary root that is also the process's state directory.
struct CompareLab {
    root: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    d: bollard::Docker,
    _cleanup: Cleanup,
    /// Topology files, in the order compared.
    files: [PathBuf; 2],
    /// Their names (the `microshard.cluster` label).
    names: [String; 2],
    /// The stand-in image's tag, given with `--image`.
    image: String,
}

impl CompareLab {
    /// `None` (after saying why) when no Docker engine answers.
    fn new(what: &str) -> Option<CompareLab> {
        let rt = crate::util::runtime();
        let d = rt.block_on(crate::util::docker_or_skip())?;
        let root = lab_root();
        let pid = std::process::id();
        let image = format!("microshard-standin:rsig-{what}-{pid}");
        // Names start with `rsig-`: other tests sweep other prefixes, and this one touches no other.
        let names = [
            format!("rsig-{pid}-{what}-single"),
            format!("rsig-{pid}-{what}-sharded"),
        ];
        let cleanup = Cleanup {
            clusters: names.to_vec(),
            image: Some(image.clone()),
        };
        rt.block_on(docker::build_standin_image(&d, &bin(), &image))
            .expect("stand-in image builds");
        let files = [
            root.path().join("rsig-single.toml"),
            root.path().join("rsig-sharded.toml"),
        ];
        std::fs::write(
            &files[0],
            format!(
                "name = \"{}\"\nkind = \"standalone\"\nbase_port = {}\n",
                names[0],
                free_base_port(4)
            ),
        )
        .expect("write topology");
        std::fs::write(
            &files[1],
            format!(
                "name = \"{}\"\nkind = \"sharded\"\nshards_per_host = 2\nbase_port = {}\n",
                names[1],
                free_base_port(8)
            ),
        )
        .expect("write topology");
        Some(CompareLab {
            root,
            rt,
            d,
            _cleanup: cleanup,
            files,
            names,
            image,
        })
    }

    fn path(&self, i: usize) -> String {
        self.files[i].display().to_string()
    }

    fn results(&self) -> PathBuf {
        self.root.path().join("results")
    }

    fn compare(&self) -> Command {
        let mut cmd = microshard(self.root.path());
        cmd.args(["compare", "--backend", "docker", "--image", &self.image])
            .arg("--topologies")
            .arg(format!("{},{}", self.path(0), self.path(1)))
            .args(["--scenarios", "S1,S2", "--duration", "2s"])
            .args(["--records", "300", "--threads", "2", "--format", "csv"])
            .arg("--out")
            .arg(self.results());
        cmd
    }

    fn run_dir(&self) -> Option<PathBuf> {
        entries(&self.results()).into_iter().find(|p| p.is_dir())
    }

    /// Every Docker object labelled with one of this lab's topologies.
    fn objects(&self) -> Vec<String> {
        let mut out = Vec::new();
        for n in &self.names {
            out.extend(self.rt.block_on(labelled_objects(&self.d, n)));
        }
        out
    }

    /// No labelled object (now, and 2 s later: nothing in flight surfaces), no state file, no
    /// file under `TMPDIR`, and a `down --all` limited to this lab's topologies finds nothing.
    fn assert_clean(&self, what: &str, output: &str) {
        let left = self.objects();
        assert!(left.is_empty(), "{what}: left behind: {left:?}\n{output}");
        std::thread::sleep(Duration::from_secs(2));
        let left = self.objects();
        assert!(
            left.is_empty(),
            "{what}: appeared later: {left:?}\n{output}"
        );
        let state = entries(&self.root.path().join("state"));
        assert!(
            state.is_empty(),
            "{what}: state files left: {state:?}\n{output}"
        );
        let tmp = crate::util::files_under(&self.root.path().join("tmp"));
        assert!(tmp.is_empty(), "{what}: files left under TMPDIR: {tmp:?}");
        let done = self.down_all();
        assert!(done.is_empty(), "{what}: down --all still found: {done:?}");
    }

    /// `microshard down --all`, limited to this lab's topologies (the real one would also remove
    /// every other microshard object on this engine, other tests' included).
    fn down_all(&self) -> Vec<String> {
        let names = self.names.clone();
        self.rt
            .block_on(backend::down_all_where(
                |c| names.iter().any(|n| n == c),
                &microshard::events::Discard,
            ))
            .expect("down --all")
    }

    /// `compare --resume DIR` (no `--image`: the experiment recorded it; the topology files name
    /// none, and their default image is not on this engine) finishes the experiment: all four
    /// cells on disk and readable, and nothing left behind.
    fn resume(&self, dir: &Path) {
        let config = std::fs::read_to_string(dir.join("experiment.json")).unwrap_or_default();
        let config: serde_json::Value = serde_json::from_str(&config).expect("experiment.json");
        assert_eq!(
            config["image"].as_str(),
            Some(self.image.as_str()),
            "{config}"
        );
        let out = microshard(self.root.path())
            .args(["compare", "--resume"])
            .arg(dir)
            .args(["--format", "csv", "-q"])
            .output()
            .expect("resume");
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "resume failed:\n{text}");
        assert_eq!(
            crate::util::assert_cells_parse(dir),
            4,
            "resume measured every cell:\n{text}"
        );
        for i in 0..2 {
            // Reports label a topology given as a file by its `name`, not by the path.
            let rows = text
                .lines()
                .filter(|l| l.contains(&format!(",{},", self.names[i])))
                .count();
            assert_eq!(
                rows,
                2,
                "the report has both cells of {} ({}):\n{text}",
                self.names[i],
                self.path(i)
            );
        }
        self.assert_clean("after --resume", &text);
    }
}

/// A Docker compare interrupted by SIGINT or SIGTERM at `marker` (built from the lab): it exits
/// promptly saying how to resume, leaves nothing, keeps every cell finished before the signal,
/// and `--resume` completes it.
fn docker_compare_case(what: &str, marker: impl Fn(&CompareLab) -> String, signal: i32) {
    let Some(lab) = CompareLab::new(what) else {
        return;
    };
    let run = interrupt(lab.compare(), &marker(&lab), signal, || {});
    let output = &run.output;
    assert_ne!(run.code, Some(0), "{what}: compare succeeded:\n{output}");
    assert!(
        output.contains("--resume"),
        "{what}: no word of how to resume:\n{output}"
    );
    assert!(!output.contains("panicked"), "{what}:\n{output}");
    assert!(
        run.elapsed < Duration::from_secs(30),
        "{what}: compare took {:?} to exit after the signal:\n{output}",
        run.elapsed
    );
    lab.assert_clean(what, output);
    let dir = lab.run_dir().expect("run directory exists");
    let on_disk = crate::util::assert_cells_parse(&dir);
    assert!(
        on_disk >= run.finished_cells,
        "{what}: {} cell(s) finished before the signal, {on_disk} on disk:\n{output}",
        run.finished_cells
    );
    assert!(
        on_disk < 4,
        "{what}: the signal came too late to interrupt anything:\n{output}"
    );
    lab.resume(&dir);
}

#[test]
fn sigint_during_docker_compare_bring_up() {
    let _env = crate::util::one_at_a_time();
    docker_compare_case(
        "upint",
        |l| format!("{} (repeat 1/1): bring-up ...", l.names[1]),
        libc::SIGINT,
    );
}

#[test]
fn sigint_during_docker_compare_load() {
    let _env = crate::util::one_at_a_time();
    docker_compare_case(
        "loadint",
        |l| format!("{}: S1 load ...", l.names[1]),
        libc::SIGINT,
    );
}

#[test]
fn sigterm_during_docker_compare_run() {
    let _env = crate::util::one_at_a_time();
    docker_compare_case(
        "runterm",
        |l| format!("{}: S2 run ...", l.names[0]),
        libc::SIGTERM,
    );
}

#[test]
fn sigterm_during_docker_compare_teardown() {
    let _env = crate::util::one_at_a_time();
    docker_compare_case(
        "downterm",
        |l| format!("{} (repeat 1/1): teardown ...", l.names[0]),
        libc::SIGTERM,
    );
}

/// SIGKILL cannot be caught: the containers, network and state file outlive microshard until
/// `down --all` (limited here to this lab's topologies) removes them; then `--resume` finishes.
#[test]
fn sigkill_mid_docker_compare_run_then_down_all_and_resume() {
    let _env = crate::util::one_at_a_time();
    let Some(lab) = CompareLab::new("kill") else {
        return;
    };
    let marker = format!("{}: S2 run ...", lab.names[1]);
    let run = interrupt(lab.compare(), &marker, libc::SIGKILL, || {
        std::thread::sleep(Duration::from_millis(500))
    });
    let output = &run.output;
    let left = lab.objects();
    assert!(
        left.iter().any(|o| o.starts_with("container"))
            && left.iter().any(|o| o.starts_with("network")),
        "nothing outlived the SIGKILLed compare; the test proves nothing: {left:?}\n{output}"
    );
    assert!(
        !entries(&lab.root.path().join("state")).is_empty(),
        "no state file for `down --all` to find:\n{output}"
    );
    let done = lab.down_all();
    assert!(
        done.iter().any(|l| l.contains(&lab.names[1])),
        "down --all did not find the killed run: {done:?}"
    );
    lab.assert_clean("SIGKILL then down --all", output);
    let dir = lab.run_dir().expect("run directory exists");
    let on_disk = crate::util::assert_cells_parse(&dir);
    assert!(
        on_disk >= run.finished_cells && on_disk >= 3,
        "{} cell(s) finished before SIGKILL, {on_disk} on disk:\n{output}",
        run.finished_cells
    );
    lab.resume(&dir);
}

/// Every container (running or not), network and volume of the topology `name`.
async fn labelled_objects(d: &bollard::Docker, name: &str) -> Vec<String> {
    crate::util::docker_objects_labelled(d, docker::LABEL_CLUSTER, name).await
}
