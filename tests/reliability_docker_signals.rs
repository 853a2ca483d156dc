//! Interruptions of a Docker bring-up: `microshard up <sharded topology> --backend docker` with the
//! stand-in image (built here from scratch, under a tag of this test's own), SIGINT as the first
//! container is being created, SIGINT as the second shard's is, and SIGTERM once every mongod
//! container runs. Afterwards: the command failed promptly, no container, network or volume
//! labelled with the topology is left (before any `down`), no state file and no file under
//! `TMPDIR` either, and a `down --all` limited to this topology finds nothing to do. Runs whenever
//! a Docker engine answers; skips, saying why, only when none does.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use microshard::backend::{self, docker};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_microshard"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Whatever happens, nothing this test made outlives it: the command is killed, every Docker
/// object labelled with one of its topologies is removed, then its image.
struct Cleanup {
    child: Option<Child>,
    clusters: Vec<String>,
    image: Option<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
        let rt = runtime();
        rt.block_on(async {
            let clusters = self.clusters.clone();
            let _ = docker::remove_labelled_where(None, None, |c| clusters.iter().any(|n| n == c))
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

/// Every container (running or not), network and volume whose `microshard.cluster` label is `name`.
async fn labelled_objects(d: &bollard::Docker, name: &str) -> Vec<String> {
    use bollard::query_parameters::{
        ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
    };
    let mut filters = std::collections::HashMap::new();
    filters.insert("label", vec![format!("{}={name}", docker::LABEL_CLUSTER)]);
    let mut out = Vec::new();
    for c in d
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .expect("list containers")
    {
        out.push(format!("container {:?} ({:?})", c.names, c.state));
    }
    for n in d
        .list_networks(Some(
            ListNetworksOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .expect("list networks")
    {
        out.push(format!("network {:?}", n.name));
    }
    for v in d
        .list_volumes(Some(
            ListVolumesOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .expect("list volumes")
        .volumes
        .unwrap_or_default()
    {
        out.push(format!("volume {}", v.name));
    }
    out
}

fn free_base_port(count: u16) -> u16 {
    for attempt in 0..200u32 {
        let base = 23_000
            + (std::process::id()
                .wrapping_mul(7919)
                .wrapping_add(attempt.wrapping_mul(977))
                % 20_000) as u16;
        if (0..count).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
    panic!("no free port range");
}

fn list(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Every file (not directory) under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for p in list(&d) {
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// `up` of a two-shard topology on Docker, interrupted by `signal` once stderr shows `marker`;
/// `before_signal` runs between the two. Returns (exit status, stderr and stdout, time from the
/// signal to the exit).
fn interrupt_up(
    cleanup: &mut Cleanup,
    root: &Path,
    topology: &Path,
    image: &str,
    marker: &str,
    signal: i32,
    before_signal: impl FnOnce(),
) -> (std::process::ExitStatus, String, Duration) {
    let child = Command::new(bin())
        .arg("up")
        .arg(topology)
        .args(["--backend", "docker", "--image", image, "--timeout", "60"])
        .env("MICROSHARD_STATE_DIR", root.join("state"))
        .env("TMPDIR", root.join("tmp"))
        .env("CI", "1")
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn microshard up");
    cleanup.child = Some(child);
    let child = cleanup.child.as_mut().expect("child");
    let (tx, rx) = mpsc::channel::<String>();
    let stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let hit = line.contains(marker);
                seen.push(line);
                if hit {
                    break;
                }
            }
            Err(_) => panic!(
                "no {marker:?} on stderr within 120 s (or up ended first):\n{}",
                seen.join("\n")
            ),
        }
    }
    before_signal();
    // SAFETY: kill(2) on our own child, which has not been waited for yet.
    let rc = unsafe { libc::kill(child.id() as i32, signal) };
    assert_eq!(rc, 0, "kill({signal})");
    let signalled = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(120),
            "up still running 120 s after signal {signal}:\n{}",
            seen.join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = signalled.elapsed();
    cleanup.child = None;
    reader.join().expect("stderr reader");
    seen.extend(rx.try_iter());
    let stdout = out_reader.join().expect("stdout reader");
    (status, format!("{}\n{stdout}", seen.join("\n")), elapsed)
}

#[test]
fn signals_during_a_docker_bring_up_leave_nothing_behind() {
    let rt = runtime();
    let d = match rt.block_on(docker::connect(None)) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("SKIP: no Docker engine answers here: {e}");
            return;
        }
    };
    let root_tmp = tempfile::tempdir().expect("temp dir");
    let root = root_tmp.path();
    for dir in ["state", "tmp"] {
        std::fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    // SAFETY: set before any other thread of this test reads the environment; only this test
    // runs in this binary. `down_all_where` below reads the state directory from it.
    unsafe {
        std::env::set_var("MICROSHARD_STATE_DIR", root.join("state"));
    }
    let pid = std::process::id();
    // An image of this test's own: another test (or worktree) rebuilding microshard-standin:test
    // with another binary cannot change what this one runs.
    let image = format!("microshard-standin:signals-{pid}");
    let mut cleanup = Cleanup {
        child: None,
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
        let (status, output, elapsed) = interrupt_up(
            &mut cleanup,
            root,
            &topology,
            &image,
            marker,
            signal,
            before,
        );
        assert!(!status.success(), "{what}: up succeeded:\n{output}");
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
        let state = list(&root.join("state"));
        assert!(
            state.is_empty(),
            "{what}: state files left: {state:?}: {}\n{output}",
            state
                .first()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .unwrap_or_default()
        );
        let tmp = files_under(&root.join("tmp"));
        assert!(tmp.is_empty(), "{what}: files left under TMPDIR: {tmp:?}");
        // `microshard down --all`, limited to this topology (the real one would also remove
        // every other microshard object on this engine): nothing is left for it to do.
        let done = rt
            .block_on(backend::down_all_where(|c| c == name))
            .expect("down --all");
        assert!(done.is_empty(), "{what}: down --all still found: {done:?}");
        assert!(rt.block_on(labelled_objects(&d, &name)).is_empty());
    }
    drop(cleanup);
}
