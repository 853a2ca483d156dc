//! Helpers shared by the reliability tests (a module folder, so it is not a test of its own).
// Each test binary uses only some of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Pids of processes (other than this test) whose command line or working directory mentions `root`.
pub fn processes_referring_to(root: &Path) -> Vec<(u32, String)> {
    let needle = root.to_string_lossy().into_owned();
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        let cwd = std::fs::read_link(e.path().join("cwd"))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Zombies (state Z) hold no port, file or directory; only the living count.
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|st| {
                st.rsplit(')')
                    .next()
                    .map(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(false);
        if !zombie && (cmdline.contains(&needle) || cwd.starts_with(&needle)) {
            out.push((pid, cmdline));
        }
    }
    out
}

/// The first of `count` consecutive free loopback ports. Spread by pid and by call, so tests
/// running at the same time rarely collide; `lowest` keeps test binaries apart.
pub fn free_base_port(lowest: u16, count: u16) -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    for _ in 0..200u32 {
        let attempt = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = lowest
            + (std::process::id()
                .wrapping_mul(7907)
                .wrapping_add(attempt.wrapping_mul(953))
                % 28_000) as u16;
        if (0..count).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
    panic!("no free port range");
}

/// Every Docker container (running or not), network and volume labelled `label=value`.
pub async fn docker_objects_labelled(d: &bollard::Docker, label: &str, value: &str) -> Vec<String> {
    use bollard::query_parameters::{
        ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
    };
    let mut filters = std::collections::HashMap::new();
    filters.insert("label", vec![format!("{label}={value}")]);
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

/// A small multi-threaded runtime for the in-process stand-ins and Docker calls of a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The microshard binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_microshard"))
}

/// A private state dir, TMPDIR and stand-in `mongod`/`mongos`; kills leftovers on drop.
pub struct Root {
    _tmp: tempfile::TempDir,
    /// The root: `state`, `tmp`, `bin` (stand-in links) and `results` below it.
    pub path: PathBuf,
}

impl Root {
    pub fn new() -> Root {
        let tmp = tempfile::tempdir().expect("temp dir");
        let path = tmp.path().to_path_buf();
        for d in ["state", "tmp", "bin", "results"] {
            std::fs::create_dir_all(path.join(d)).expect("mkdir");
        }
        for n in ["mongod", "mongos"] {
            std::os::unix::fs::symlink(bin(), path.join("bin").join(n)).expect("symlink");
        }
        Root { _tmp: tmp, path }
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(bin());
        c.env("MICROSHARD_STATE_DIR", self.path.join("state"))
            .env("TMPDIR", self.path.join("tmp"))
            .env("CI", "1")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null());
        c
    }

    pub fn output(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("run microshard")
    }

    pub fn bin_dir(&self) -> String {
        self.path.join("bin").display().to_string()
    }

    /// A topology file: `sharded` with two shards, or `standalone`.
    pub fn topology(&self, sharded: bool) -> (String, u16) {
        let port = free_base_port(23_000, 6);
        let name = if sharded { "vsharded" } else { "vsingle" };
        let text = if sharded {
            format!(
                "name = \"{name}\"\nkind = \"sharded\"\nshards_per_host = 2\nbase_port = {port}\n"
            )
        } else {
            format!("name = \"{name}\"\nkind = \"standalone\"\nbase_port = {port}\n")
        };
        let file = self.path.join(format!("{name}.toml"));
        std::fs::write(&file, text).expect("write topology");
        (file.display().to_string(), port)
    }

    /// `(name, address, pid)` of every member of the one running cluster.
    pub fn members(&self) -> Vec<(String, String, i32)> {
        let out = self.output(&["status", "--json"]);
        let clusters: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        clusters[0]["members"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| {
                Some((
                    m["name"].as_str()?.to_string(),
                    m["address"].as_str()?.to_string(),
                    m["pid"].as_u64()? as i32,
                ))
            })
            .collect()
    }

    pub fn assert_nothing_left(&self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while !processes_referring_to(&self.path).is_empty() {
            assert!(
                Instant::now() < deadline,
                "processes left: {:?}",
                processes_referring_to(&self.path)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        for (pid, _) in processes_referring_to(&self.path) {
            // SAFETY: kill(2) on a leftover of this test; ESRCH at worst.
            unsafe {
                libc::kill(pid as i32, libc::SIGCONT);
                libc::kill(pid as i32, libc::SIGKILL);
            }
        }
    }
}

/// A stand-in `mongod` child process on a free loopback port with its data in `dbpath`;
/// killed on drop.
pub struct StandinProcess {
    child: std::process::Child,
    /// Its port.
    pub port: u16,
}

impl StandinProcess {
    /// Starts it (port from `lowest` up) and waits until it listens.
    pub fn start(dbpath: &Path, lowest: u16) -> StandinProcess {
        let port = free_base_port(lowest, 1);
        std::fs::create_dir_all(dbpath).expect("dbpath");
        let child = Command::new(bin())
            .args(["standin", "mongod", "--bind_ip", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .arg("--dbpath")
            .arg(dbpath)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start stand-in");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "stand-in did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        StandinProcess { child, port }
    }

    /// `mongodb://127.0.0.1:PORT/ycsb?w=1`.
    pub fn uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}/ycsb?w=1", self.port)
    }
}

impl Drop for StandinProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
