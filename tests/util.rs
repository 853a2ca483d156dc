//! The one support module of the integration tests (`tests/integration.rs` and
//! `tests/serial.rs` are the two test binaries; every other file under `tests/` is a module of
//! one of them): the binary under test, free ports, private state directories, stand-in servers in
//! a child process or in this process, and the checks that nothing was left behind.
// Each binary uses only some of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use microshard::experiment::model::{
    CellFile, CellId, CellSummary, CompareCommand, ExperimentConfig, Latency, SweepPoint,
};
use microshard::measure::RunDocument;
use microshard::standin::{Role, StandinConfig, StandinHandle};
use mongodb::bson::{Document, RawDocumentBuf, doc};

/// The microshard binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_microshard"))
}

/// Held by every test of `tests/serial.rs` for its whole run, so they run one at a time: some
/// point this process's `MICROSHARD_STATE_DIR` at their own directory (the library reads it from
/// the environment, which belongs to the whole process); others measure a scaling that needs the
/// machine to themselves.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The first of `count` consecutive free loopback ports, between 20000 and 32000 (below the usual
/// ephemeral range) and clear of 27000–27099, where `tests/readme.rs` runs MongoDB's usual ports.
/// Spread by pid and by call, so tests running at the same time in this process rarely collide.
pub fn free_base_port(count: u16) -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    for _ in 0..500u32 {
        let attempt = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = 20_000
            + (std::process::id()
                .wrapping_mul(7907)
                .wrapping_add(attempt.wrapping_mul(953))
                % 12_000) as u16;
        let end = base + count;
        if end > 27_000 && base < 27_100 {
            continue;
        }
        if (0..count).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
    panic!("no free port range");
}

// ----- processes, private roots, stand-ins in a child process ---------------------------------

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

/// Polls `poll` every 50 ms until it gives a value, for at most `limit`; `None` if it never did.
pub fn poll_for<T>(limit: Duration, mut poll: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = poll() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Asserts that within `limit` (a torn-down process may take a moment to be reaped) no process
/// refers to `root` any more; `what` says when, in the failure message.
pub fn assert_no_process_left(root: &Path, limit: Duration, what: &str) {
    if poll_for(limit, || {
        processes_referring_to(root).is_empty().then_some(())
    })
    .is_none()
    {
        panic!("{what}: processes left: {:?}", processes_referring_to(root));
    }
}

/// Asserts that `out` is a success; the failure message shows `what` ran and all it said.
pub fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The entries of `dir` (none for a missing directory), in no particular order.
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Every Docker container (running or not), network and volume labelled `label=value`.
/// The Docker engine this machine answers with, or `None` after saying the test skips: the
/// Docker tests run wherever an engine answers and say so where none does.
pub async fn docker_or_skip() -> Option<bollard::Docker> {
    match microshard::backend::docker::connect(None).await {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("SKIP: no Docker engine answers here: {e}");
            None
        }
    }
}

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

/// Whatever happens, nothing a Docker test made outlives it: every object labelled with the owner
/// of its state directory is removed, then its image.
pub struct DockerOwnerCleanup {
    /// The test's `MICROSHARD_STATE_DIR` (its owner label derives from it).
    pub state: PathBuf,
    /// The stand-in image the test built.
    pub image: String,
}

impl Drop for DockerOwnerCleanup {
    fn drop(&mut self) {
        use microshard::backend::docker;
        let owner = docker::owner_id_for(&self.state);
        runtime().block_on(async {
            let _ = docker::remove_labelled_matching(None, None, |l| {
                l.get(docker::LABEL_OWNER) == Some(&owner)
            })
            .await;
            if let Ok(d) = docker::connect(None).await {
                let opts = bollard::query_parameters::RemoveImageOptionsBuilder::default()
                    .force(true)
                    .build();
                let _ = d.remove_image(&self.image, Some(opts), None).await;
            }
        });
    }
}

/// A small multi-threaded runtime for the in-process stand-ins and Docker calls of a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
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

    /// [`Root::output`] of a command line split at white space (no argument in it holds any).
    pub fn output_line(&self, line: &str) -> Output {
        self.cmd()
            .args(line.split_whitespace())
            .output()
            .expect("run microshard")
    }

    /// Where an experiment of this root runs and writes: `--backend process --bin-dir BIN --out
    /// RESULTS`.
    pub fn on_process(&self) -> String {
        let results = self.path.join("results");
        let bin = self.bin_dir();
        format!(
            "--backend process --bin-dir {bin} --out {}",
            results.display()
        )
    }

    pub fn bin_dir(&self) -> String {
        self.path.join("bin").display().to_string()
    }

    /// A topology file: `sharded` with two shards, or `standalone`.
    pub fn topology(&self, sharded: bool) -> (String, u16) {
        let port = free_base_port(6);
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

    /// Brings a stand-in topology (sharded or standalone) up on the process backend and loads
    /// 300 records into it; returns the topology file and the entry URI.
    pub fn up_and_load(&self, sharded: bool) -> (String, String) {
        let (topo, port) = self.topology(sharded);
        let bin_dir = self.bin_dir();
        let up = self.output(&["up", &topo, "--backend", "process", "--bin-dir", &bin_dir]);
        assert!(
            up.status.success(),
            "up: {}",
            String::from_utf8_lossy(&up.stderr)
        );
        let uri = format!("mongodb://localhost:{port}/ycsb?w=1");
        let load = self.output(&[
            "load",
            "--uri",
            &uri,
            "-p",
            "recordcount=300",
            "--threads",
            "4",
        ]);
        assert!(
            load.status.success(),
            "load: {}",
            String::from_utf8_lossy(&load.stderr)
        );
        (topo, uri)
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
        assert_no_process_left(&self.path, Duration::from_secs(15), "at the end");
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
    /// Starts it and waits until it listens.
    pub fn start(dbpath: &Path) -> StandinProcess {
        StandinProcess::start_with(dbpath, &[])
    }

    /// [`StandinProcess::start`] with extra stand-in flags (`--stall 1500/5000`).
    pub fn start_with(dbpath: &Path, extra: &[&str]) -> StandinProcess {
        std::fs::create_dir_all(dbpath).expect("dbpath");
        let dbpath = format!("--dbpath={}", dbpath.display());
        let flags: Vec<&str> = std::iter::once(dbpath.as_str())
            .chain(extra.iter().copied())
            .collect();
        StandinProcess::start_role("mongod", &flags)
    }

    /// A stand-in `role` (`mongod` or `mongos`) with `flags` on a free loopback port.
    pub fn start_role(role: &str, flags: &[&str]) -> StandinProcess {
        let port = free_base_port(1);
        let child = Command::new(bin())
            .args(["standin", role, "--bind_ip", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start stand-in");
        poll_for(Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        })
        .expect("stand-in did not listen");
        StandinProcess { child, port }
    }

    /// `mongodb://127.0.0.1:PORT/ycsb?w=1`.
    pub fn uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}/ycsb?w=1", self.port)
    }

    /// Its process id (to freeze it with SIGSTOP).
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for StandinProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ----- a stand-in in this process, with its command log -------------------------------------------

/// A quiet stand-in `mongod` on a free loopback port with its data in `dbpath`, served by `rt`
/// (the test's own runtime) for as long as the handle lives.
pub fn standin_in(rt: &tokio::runtime::Runtime, dbpath: &Path) -> StandinHandle {
    let mut cfg = StandinConfig::new(Role::Mongod);
    cfg.dbpath = Some(dbpath.to_path_buf());
    cfg.quiet = true;
    let _guard = rt.enter();
    microshard::standin::spawn(cfg).expect("stand-in starts")
}

/// A stand-in `mongod` on a free loopback port, logging every command it receives.
pub struct Server {
    pub handle: StandinHandle,
    pub dir: tempfile::TempDir,
}

impl Server {
    /// Starts a stand-in inside the current runtime.
    pub fn start() -> Server {
        Server::start_with(|_| {})
    }

    /// [`Server::start`] with stand-in options set by `options` (`write_concern_error`).
    pub fn start_with(options: impl FnOnce(&mut StandinConfig)) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cfg = StandinConfig::new(Role::Mongod);
        cfg.dbpath = Some(dir.path().to_path_buf());
        cfg.command_log = Some(dir.path().join("commands.jsonl"));
        cfg.quiet = true;
        options(&mut cfg);
        let handle = microshard::standin::spawn(cfg).expect("stand-in starts");
        Server { handle, dir }
    }

    /// The connection string (database `ycsb`).
    pub fn uri(&self) -> String {
        format!(
            "mongodb://127.0.0.1:{}/ycsb?directConnection=true",
            self.handle.port()
        )
    }

    /// The command-log file.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("commands.jsonl")
    }

    /// Every logged command, parsed.
    pub fn commands(&self) -> Vec<serde_json::Value> {
        read_log(&self.log_path())
    }

    /// Every document of `ycsb.usertable`, raw, in `_id` order.
    pub async fn documents(&self) -> Vec<RawDocumentBuf> {
        let client = mongodb::Client::with_uri_str(self.uri())
            .await
            .expect("client");
        let coll = client
            .database("ycsb")
            .collection::<RawDocumentBuf>("usertable");
        let mut cursor = coll
            .find(doc! {})
            .sort(doc! {"_id": 1})
            .await
            .expect("find");
        let mut out = Vec::new();
        while cursor.advance().await.expect("cursor") {
            out.push(cursor.current().to_raw_document_buf());
        }
        out
    }

    /// Runs an admin command directly (e.g. to count documents).
    pub async fn command(&self, cmd: Document) -> Document {
        let client = mongodb::Client::with_uri_str(self.uri())
            .await
            .expect("client");
        client
            .database("ycsb")
            .run_command(cmd)
            .await
            .expect("command")
    }
}

/// Parses the stand-in's JSON-lines command log (`{"t", "cmd", "db", "args"}`) into the command
/// bodies (canonical extended JSON, document sequences folded in).
pub fn read_log(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("args").cloned())
        .collect()
}

/// The command name of a logged command (its first key).
pub fn command_name(cmd: &serde_json::Value) -> String {
    cmd.as_object()
        .and_then(|o| o.keys().next().cloned())
        .unwrap_or_default()
}

/// Commands addressed to `usertable` by name (`insert`, `find`, `update`, `delete`).
pub fn on_usertable<'a>(cmds: &'a [serde_json::Value], name: &str) -> Vec<&'a serde_json::Value> {
    cmds.iter()
        .filter(|c| c.get(name).and_then(|v| v.as_str()) == Some("usertable"))
        .collect()
}

/// Absolute path of a shipped workload file.
pub fn workload(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join(name)
}

// ----- experiments --------------------------------------------------------------------------------

/// A directory with `mongod`/`mongos` symlinks to the microshard binary (the stand-in).
pub fn standin_bin_dir(root: &Path) -> PathBuf {
    let dir = root.join("bin");
    std::fs::create_dir_all(&dir).ok();
    for name in ["mongod", "mongos"] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        let _ = std::os::unix::fs::symlink(bin(), &link);
    }
    dir
}

/// A `microshard` command with a private state directory and the workloads of this checkout.
pub fn microshard(state_dir: &Path) -> Command {
    let mut c = Command::new(bin());
    c.env("MICROSHARD_STATE_DIR", state_dir)
        .env("CI", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// The single run directory created under `results` (not the `latest` link to it).
pub fn run_dir(results: &Path) -> PathBuf {
    let mut dirs = entries(results);
    dirs.retain(|p| p.is_dir() && !p.is_symlink());
    assert_eq!(
        dirs.len(),
        1,
        "expected one run directory in {}: {dirs:?}",
        results.display()
    );
    dirs[0].clone()
}

/// Parses report.csv into header-keyed rows (the report's CSV never quotes these fields).
pub fn csv_rows(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "CSV row width: {l}");
            header
                .iter()
                .cloned()
                .zip(fields.iter().map(|f| f.to_string()))
                .collect()
        })
        .collect()
}

/// Asserts that nothing microshard started is still recorded as running.
pub fn assert_nothing_left(state_dir: &Path) {
    let mut left = entries(state_dir);
    left.retain(|p| p.extension().is_some_and(|e| e == "json"));
    assert!(left.is_empty(), "state files left behind: {left:?}");
}

// ----- a TCP proxy that can cut the network between a client and a server -------------------------

/// A loopback TCP proxy in front of one server, able to hold every byte (a partition: no reset,
/// nothing delivered) and to reset every connection at once (`docs/reliability.md`).
pub struct FaultProxy {
    /// The port clients connect to.
    pub port: u16,
    mode: std::sync::Arc<std::sync::atomic::AtomicU8>,
    streams: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

const PASS: u8 = 0;
const HOLD: u8 = 1;

impl FaultProxy {
    /// Starts forwarding `127.0.0.1:<port>` to `upstream` (`127.0.0.1:27017`).
    pub fn start(upstream: &str) -> FaultProxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = listener.local_addr().expect("addr").port();
        let mode = std::sync::Arc::new(std::sync::atomic::AtomicU8::new(PASS));
        let streams: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>> =
            Default::default();
        let (m, st, up) = (mode.clone(), streams.clone(), upstream.to_string());
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let Ok(server) = std::net::TcpStream::connect(&up) else {
                    continue;
                };
                if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
                    st.lock().expect("streams").extend([c, s]);
                }
                let (c2, s2) = match (client.try_clone(), server.try_clone()) {
                    (Ok(c), Ok(s)) => (c, s),
                    _ => continue,
                };
                pump(client, s2, m.clone());
                pump(server, c2, m.clone());
            }
        });
        FaultProxy {
            port,
            mode,
            streams,
        }
    }

    /// Holds every byte from now on (a partition), or lets them through again.
    pub fn hold(&self, held: bool) {
        let mode = if held { HOLD } else { PASS };
        self.mode.store(mode, std::sync::atomic::Ordering::SeqCst);
    }

    /// Resets every connection open now (RST, as a dropped NAT entry or a restarted router does).
    pub fn reset_all(&self) {
        use std::os::fd::AsRawFd;
        let mut streams = self.streams.lock().expect("streams");
        for s in streams.drain(..) {
            let linger = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: setsockopt on a socket this proxy owns, with a correctly sized struct.
            unsafe {
                libc::setsockopt(
                    s.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
            }
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Copies `from` → `to` on a thread, holding what it read while the proxy holds.
fn pump(
    mut from: std::net::TcpStream,
    mut to: std::net::TcpStream,
    mode: std::sync::Arc<std::sync::atomic::AtomicU8>,
) {
    use std::io::{Read, Write};
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            while mode.load(std::sync::atomic::Ordering::SeqCst) == HOLD {
                std::thread::sleep(Duration::from_millis(10));
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
}

/// Whether a progress line says a cell (or sweep point) finished: it ends in its throughput. The
/// client ceiling `compare` measures before its first cell is not a cell.
pub fn is_cell_done_line(line: &str) -> bool {
    let ceiling = line.contains("calibrate:") || line.contains("client ceiling");
    !ceiling && (line.ends_with(" ops/s") || line.contains(" ops/s ("))
}

/// A toy-size cell's verdict: valid, or degraded only for what toy sizes on a busy machine bring —
/// a load over in a fraction of a second ("measured for only …") or a cell near the client
/// ceiling `compare` measured first ("client-bound: …"). Anything else fails.
pub fn assert_valid_but_for_toy_size(validity: &serde_json::Value) {
    let reasons = validity["reasons"].as_array().cloned().unwrap_or_default();
    assert!(
        reasons
            .iter()
            .all(|r| r["message"].as_str().is_some_and(|m| {
                // Tests share the machine with other tests: a busy host is what they tolerate.
                m.starts_with("measured for only")
                    || m.starts_with("client-bound:")
                    || m.contains("busy host:")
            })),
        "{validity}"
    );
}

// ----- a child watched line by line ---------------------------------------------------------------

/// A `microshard` child whose stderr lines arrive on a channel as they are written, so a test
/// can act at a line (inject a fault, send a signal) and time what follows; killed on drop.
pub struct Live {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Live {
    pub fn spawn(mut cmd: Command) -> Live {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn microshard");
        let (tx, lines) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in
                std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Live {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits until a stderr line contains `needle`; returns when it came.
    pub fn wait_for(&mut self, needle: &str, limit: Duration) -> Instant {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            match self.lines.recv_timeout(Duration::from_millis(50)) {
                Ok(line) => {
                    let hit = line.contains(needle);
                    self.seen.push(line);
                    if hit {
                        return Instant::now();
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("ended before a line with {needle:?}: {:#?}", self.seen)
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
        panic!("no line with {needle:?} within {limit:?}: {:#?}", self.seen);
    }

    /// How many of the stderr lines seen so far say a cell finished.
    pub fn cells_done(&self) -> usize {
        self.seen.iter().filter(|l| is_cell_done_line(l)).count()
    }

    /// Sends `signal` to it; returns when.
    pub fn signal(&self, signal: i32) -> Instant {
        // SAFETY: kill(2) on our own child, which has not been waited for yet.
        let rc = unsafe { libc::kill(self.child.id() as i32, signal) };
        assert_eq!(rc, 0, "kill({signal})");
        Instant::now()
    }

    /// Waits for the exit (bounded); returns the code, all of stderr and when it ended.
    pub fn finish(mut self, limit: Duration) -> (Option<i32>, String, Instant) {
        let status = poll_for(limit, || self.child.try_wait().expect("try_wait"))
            .unwrap_or_else(|| panic!("did not end within {limit:?}: {:#?}", self.seen));
        let ended = Instant::now();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(300)) {
            self.seen.push(line);
        }
        (status.code(), self.seen.join("\n"), ended)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The property tests' configuration: `default_cases` unless `PROPTEST_CASES` says otherwise, and
/// no failure files written into the source tree.
pub fn proptest_config(default_cases: u32) -> proptest::test_runner::Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..Default::default()
    }
}

/// Every file under `dir` (symbolic links not followed), in no particular order.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| !e.file_type().is_dir())
        .map(walkdir::DirEntry::into_path)
        .collect()
}

/// The cell files of a run directory (`cells/<topology>/*.json`): its current cells, not the
/// earlier attempts that `--remeasure` keeps under `cells/<topology>/earlier/`.
fn cell_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir.join("cells"))
        .min_depth(2)
        .max_depth(2)
        .into_iter()
        .flatten()
        .map(walkdir::DirEntry::into_path)
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}

/// Checks that every cell file of a run directory parses as a JSON object (an interrupted run
/// never leaves half a file); returns how many there are.
pub fn assert_cells_parse(dir: &Path) -> usize {
    let files = cell_files(dir);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
        assert!(v.is_object(), "{}: {text}", file.display());
    }
    files.len()
}

/// The current cells of a run directory, parsed.
pub fn current_cells(dir: &Path) -> Vec<serde_json::Value> {
    (cell_files(dir).iter())
        .filter_map(|p| serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok())
        .collect()
}

/// Every cell under `dir` (each JSON file holding a `cell`), parsed.
pub fn cells_under(dir: &Path) -> Vec<serde_json::Value> {
    files_under(dir)
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok())
        .filter(|v: &serde_json::Value| v["cell"].is_object())
        .collect()
}

// ----- clusters brought up by this process (the topology tests of `serial.rs`) -------------------

/// Writes a topology file `<name>.toml` into `dir`; returns its path.
pub fn write_topology(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, body).expect("write topology");
    path
}

/// The plan of the topology file `path` on the process backend, with the stand-ins of `bin` and
/// its run directory under `root/runs`.
pub fn process_plan(path: &Path, root: &Path, bin: &Path) -> microshard::topology::Plan {
    use microshard::topology::{BackendKind, PlanOptions, TopologySpec};
    let spec = TopologySpec::load(path.to_str().expect("utf-8 path")).expect("topology loads");
    let run_id = microshard::topology::new_run_id(&spec.name);
    let opts = PlanOptions {
        links_pending: false,
        backend: BackendKind::Process,
        run_dir: root.join("runs").join(&run_id),
        run_id,
        bin_dir: Some(bin.to_path_buf()),
        total_memory_gb: Some(9.0),
    };
    microshard::backend::plan(&spec, &opts).expect("plan")
}

/// What `backend::up` may wait: `wait` seconds for members to answer and shards to join,
/// `primary` for each set's primary; 10 s to stop.
pub fn up_options(wait: u64, primary: u64) -> microshard::backend::UpOptions {
    let wait = Duration::from_secs(wait);
    microshard::backend::UpOptions {
        assembly: microshard::cluster::AssemblyOptions {
            ready_timeout: wait,
            primary_timeout: Duration::from_secs(primary),
            add_shard_timeout: wait,
        },
        stop_timeout: Duration::from_secs(10),
        ..Default::default()
    }
}

/// How many documents `ycsb.usertable` holds on the server at `uri`.
pub async fn usertable_count(uri: &str) -> u64 {
    let client = mongodb::Client::with_uri_str(uri).await.expect("client");
    client
        .database("ycsb")
        .collection::<Document>("usertable")
        .count_documents(doc! {})
        .await
        .expect("count")
}

/// Inserts `user0` … `user<n-1>` into `ycsb.usertable` through `uri`.
pub async fn insert_users(uri: &str, n: usize) {
    let client = mongodb::Client::with_uri_str(uri).await.expect("client");
    let docs: Vec<Document> = (0..n)
        .map(|i| doc! {"_id": format!("user{i}"), "field0": "x"})
        .collect();
    let coll = client.database("ycsb").collection::<Document>("usertable");
    coll.insert_many(docs).await.expect("insert");
}

/// Runs `ip` with `args`, quietly; whether it succeeded.
pub fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A temporary root whose `state` directory is made this process's `MICROSHARD_STATE_DIR`, for a
/// test of `serial.rs` that drives the library in process (it holds `one_at_a_time` first).
pub fn state_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("temp dir");
    // SAFETY: the tests of `serial.rs` run one at a time, and set it before their runtime or any
    // other thread of theirs starts.
    unsafe {
        std::env::set_var("MICROSHARD_STATE_DIR", root.path().join("state"));
    }
    root
}

/// Asserts that `dir` holds no file (a missing directory holds none).
pub fn assert_no_files_in(dir: &Path) {
    let left = entries(dir);
    assert!(left.is_empty(), "files left in {}: {left:?}", dir.display());
}

/// A private temporary directory for experiment commands and, below it, their state directory,
/// results directory and `bin` (the stand-in as `mongod` and `mongos`), in that order:
/// `let Scratch(tmp, state, results, bin_dir) = Scratch::new();`.
pub struct Scratch(pub tempfile::TempDir, pub PathBuf, pub PathBuf, pub PathBuf);

impl Scratch {
    pub fn new() -> Scratch {
        let tmp = tempfile::tempdir().expect("temp dir");
        let (state, results) = (tmp.path().join("state"), tmp.path().join("results"));
        let bin_dir = standin_bin_dir(tmp.path());
        Scratch(tmp, state, results, bin_dir)
    }
}

// ----- report fixtures ----------------------------------------------------------------------------

/// A run's result document holding one READ of each latency in `latencies_us`.
pub fn read_document(latencies_us: impl IntoIterator<Item = u64>) -> RunDocument {
    use microshard::measure::{MeasurementConfig, Measurements, Overall, Status};
    let m = Measurements::new(MeasurementConfig::default());
    let client = m.client();
    for us in latencies_us {
        client.record("READ", us, None, Status::Ok);
    }
    let t0 = chrono::Utc::now();
    let overall = Overall {
        runtime_ms: 1000,
        operations: 1,
    };
    RunDocument::new("run", t0, t0, &overall, &m.finish()).expect("a document")
}

/// The record of an experiment that ran `command` at laptop scale, with nothing found out about
/// the machine or the servers.
pub fn experiment_config(command: CompareCommand, standin: bool) -> ExperimentConfig {
    ExperimentConfig {
        schema: microshard::experiment::model::CONFIG_SCHEMA.into(),
        created: "2026-01-01T00:00:00Z".into(),
        tool_version: "0.1.0".into(),
        command,
        scale_note: "100000 records (laptop scale)".into(),
        properties: Default::default(),
        host: Default::default(),
        server_versions: Default::default(),
        standin,
        degraded_error_fraction: 0.01,
        client_ceiling: None,
        sessions: Vec::new(),
    }
}

/// A sweep point of the stand-in: `tp` READs per second at `threads` client threads.
pub fn sweep_point(threads: u32, tp: f64) -> SweepPoint {
    SweepPoint {
        crosscheck: None,
        threads,
        summary: CellSummary {
            throughput: tp,
            threads,
            main_op: "READ".into(),
            standin: true,
            ..Default::default()
        },
    }
}

/// A valid cell of the stand-in: `tp` READs per second for `seconds` at 16 threads, with
/// `latency`, finished at ten past midnight on 1 January 2026.
pub fn standin_cell(
    (topology, scenario, repeat): (&str, &str, u32),
    tp: f64,
    seconds: f64,
    latency: Latency,
) -> CellFile {
    CellFile {
        schema: microshard::experiment::model::CELL_SCHEMA.into(),
        cell: CellId {
            topology: topology.into(),
            scenario: scenario.into(),
            repeat,
        },
        finished: "2026-01-01T00:10:00Z".into(),
        summary: CellSummary {
            phase: "run".into(),
            threads: 16,
            operations: (tp * seconds) as u64,
            runtime_ms: seconds * 1000.0,
            throughput: tp,
            main_op: "READ".into(),
            latency,
            standin: true,
            server_version: Some("7.0.14-standin".into()),
            validity: microshard::measure::validity::Validity::valid(),
            ..Default::default()
        },
        result: read_document([100]),
        server: None,
        warnings: vec![],
        crosscheck: None,
        topology: None,
        server_versions: Default::default(),
        server_images: Default::default(),
        session: 1,
        default_write_concern: None,
    }
}

// ----- TLS certificates made at test time ---------------------------------------------------------

#[path = "../crates/standin/tests/support/certs.rs"]
mod certs;
#[allow(unused_imports)] // the serial binary makes no certificates
pub use certs::Certs;

// ----- a sharded cluster of stand-in processes ------------------------------------------------------

/// A config server and two one-member shard sets (`sh0`, `sh1`) behind a mongos given
/// `mongos_flags`, initiated and added as an operator would: the processes (mongos, sh0, sh1,
/// config server, in that order) and the mongos's port.
pub fn sharded_standins(root: &Root, mongos_flags: &[&str]) -> (Vec<StandinProcess>, u16) {
    let set = |name: &str, role: &str| {
        let flags = [format!("--replSet={name}"), role.to_string()];
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        StandinProcess::start_with(&root.path.join(name), &flags)
    };
    let (cfg, sh0, sh1) = (
        set("cfg", "--configsvr"),
        set("sh0", "--shardsvr"),
        set("sh1", "--shardsvr"),
    );
    let configdb = format!("--configdb=cfg/127.0.0.1:{}", cfg.port);
    let flags: Vec<&str> = std::iter::once(configdb.as_str())
        .chain(mongos_flags.iter().copied())
        .collect();
    let mongos = StandinProcess::start_role("mongos", &flags);
    runtime().block_on(async {
        for (name, p) in [("cfg", &cfg), ("sh0", &sh0), ("sh1", &sh1)] {
            let uri = format!("mongodb://127.0.0.1:{}/?directConnection=true", p.port);
            let c = mongodb::Client::with_uri_str(uri).await.expect("client");
            let host = format!("127.0.0.1:{}", p.port);
            let mut config = doc! {"_id": name, "members": [{"_id": 0, "host": host}]};
            if name == "cfg" {
                config.insert("configsvr", true);
            }
            let admin = c.database("admin");
            admin
                .run_command(doc! {"replSetInitiate": config})
                .await
                .expect("initiate");
            wait_for_primary(&admin).await;
        }
        let uri = format!("mongodb://127.0.0.1:{}/", mongos.port);
        let c = mongodb::Client::with_uri_str(uri).await.expect("client");
        let admin = c.database("admin");
        for _ in 0..300 {
            if admin.run_command(doc! {"listShards": 1}).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for (name, p) in [("sh0", &sh0), ("sh1", &sh1)] {
            let add = doc! {"addShard": format!("{name}/127.0.0.1:{}", p.port), "name": name};
            admin.run_command(add).await.expect("addShard");
        }
    });
    let port = mongos.port;
    (vec![mongos, sh0, sh1, cfg], port)
}

async fn wait_for_primary(admin: &mongodb::Database) {
    for _ in 0..300 {
        let h = admin.run_command(doc! {"hello": 1}).await;
        if h.is_ok_and(|h| h.get_bool("isWritablePrimary").unwrap_or(false)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no primary within 15 s");
}

// ----- other work on the machine (the busy-host tests) --------------------------------------------

/// Busy loops, killed on drop: CPU that other processes take while a run measures.
pub struct Hog(Vec<std::process::Child>);

impl Hog {
    /// A busy loop on every core: the host is busy and the measurement shares it.
    pub fn start() -> Hog {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Hog((0..cores).map(|_| busy_loop(false)).collect())
    }

    /// One busy loop at the lowest priority: it takes only CPU the run leaves idle, so the run
    /// measures as it would alone while other work is always seen on the host.
    pub fn niced() -> Hog {
        Hog(vec![busy_loop(true)])
    }
}

/// `sh -c 'while :; do :; done'`, under `nice -n 19` when `niced`.
fn busy_loop(niced: bool) -> std::process::Child {
    let mut cmd = Command::new(if niced { "nice" } else { "sh" });
    if niced {
        cmd.args(["-n", "19", "sh"]);
    }
    cmd.args(["-c", "while :; do :; done"])
        .stdout(Stdio::null())
        .spawn()
        .expect("start a busy loop")
}

impl Drop for Hog {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
