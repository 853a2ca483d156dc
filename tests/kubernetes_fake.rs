//! The `microshard` binary against a **fake Kubernetes API** (`tests/fake_kube/`, Python with
//! aiohttp), reached through a kubeconfig as a cluster would be: client pods of a `compare` run by
//! the fake's kubelet as local processes (attach, log, the barrier and the merge through the API),
//! and `up --backend kubernetes` killed mid-run, then `down --all` and the reaper's Lease rule.
//! The fake models the requests microshard makes and the pod states it waits for; nothing here
//! says how a real API server, scheduler or kubelet behaves (`docs/kubernetes.md`, "Tests").

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::util::{
    Live, bin, cells_under, free_base_port, poll_for, standin_bin_dir, write_topology,
};

/// Every object microshard labels as its own carries this label.
const MANAGED: &str = "app.kubernetes.io/managed-by=microshard";

/// The fake API in a child process on a loopback port, and a kubeconfig whose context `fake`
/// (the current one, namespace `default`) names it. It stops, killing every process its kubelet
/// started, when its stdin closes: on drop, or when this test process dies.
struct FakeKube {
    child: Child,
    address: String,
    dir: tempfile::TempDir,
    /// Its pods are whole servers and clients: one fake at a time, beside no other measuring test.
    _alone: std::sync::MutexGuard<'static, ()>,
}

/// What the fake's kubelet runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Runs {
    /// Nothing: every container fails to start (`StartError`).
    Nothing,
    /// Client pods (`microshard`, the binary under test); StatefulSet pods stay Pending.
    Clients,
    /// Client pods and StatefulSet pods (`mongod`, `mongos`: the stand-in).
    Servers,
}

impl FakeKube {
    /// Starts the fake; `None`, after saying "skipped", where python3 has no aiohttp (or, to run
    /// servers, where a pod cannot have a host name of its own).
    fn start(runs: Runs) -> Option<FakeKube> {
        let probe = Command::new("python3")
            .args(["-c", "import aiohttp"])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            println!(
                "skipped: python3 with the PyPI package aiohttp is not installed (pip install aiohttp; .ci/run installs it)"
            );
            return None;
        }
        if runs == Runs::Servers && !can_name_hosts() {
            println!(
                "skipped: the fake's server pods need root and unshare(1) (a host name per pod)"
            );
            return None;
        }
        let alone = crate::util::one_at_a_time();
        let dir = tempfile::tempdir().expect("temp dir");
        let log = std::fs::File::create(dir.path().join("fake.log")).expect("log file");
        let mut child = server_command(runs, dir.path())
            .env("TMPDIR", dir.path())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("python3 runs");
        let mut first = String::new();
        let stdout = child.stdout.take().expect("stdout");
        std::io::BufReader::new(stdout)
            .read_line(&mut first)
            .expect("the fake's first line");
        let address = first.trim().trim_start_matches("listening on ").to_string();
        let fake = FakeKube {
            child,
            address,
            dir,
            _alone: alone,
        };
        assert!(
            fake.address.starts_with("127.0.0.1:"),
            "the fake did not start: {first:?} {}",
            fake.log()
        );
        std::fs::write(fake.kubeconfig(), fake.kubeconfig_text()).expect("write kubeconfig");
        Some(fake)
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    fn kubeconfig_text(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\n\
             clusters:\n- name: fake\n  cluster:\n    server: http://{}\n\
             users:\n- name: fake\n  user: {{}}\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: default\n",
            self.address
        )
    }

    /// What the fake wrote on stderr (its errors), for a failing assertion's message.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("fake.log")).unwrap_or_default()
    }

    /// One request to the fake, its JSON answer.
    fn call(&self, method: &str, path: &str) -> serde_json::Value {
        let mut s = std::net::TcpStream::connect(&self.address).expect("connect to the fake");
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.address
        )
        .expect("send");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("read");
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {text}"))
    }

    /// Every object (`Kind namespace/name`) whose labels match `selector`, and how many pod
    /// processes still run.
    fn state(&self, selector: &str) -> (Vec<String>, u64) {
        let state = self.call(
            "GET",
            &format!(
                "/_fake/state?labelSelector={}",
                selector.replace('=', "%3D")
            ),
        );
        let objects = state["objects"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o.as_str().map(str::to_string))
            .collect();
        (objects, state["processes"].as_u64().unwrap_or(u64::MAX))
    }

    /// Waits (bounded) until nothing labelled `selector` is left and no pod process runs; what
    /// is left otherwise.
    fn assert_nothing_left(&self, selector: &str, what: &str) {
        self.assert_nothing_left_within(Duration::from_secs(10), selector, what);
    }

    /// [`Self::assert_nothing_left`], allowing `within` for pods to end.
    fn assert_nothing_left_within(&self, within: Duration, selector: &str, what: &str) {
        let left = poll_for(within, || {
            let (objects, processes) = self.state(selector);
            (objects.is_empty() && processes == 0).then_some(())
        });
        assert!(
            left.is_some(),
            "{what}: left in the fake API: {:?}\n{}",
            self.state(selector),
            self.log()
        );
    }
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let ended = poll_for(Duration::from_secs(10), || {
            self.child.try_wait().ok().flatten()
        });
        if ended.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The fake's command line: its images (a container's first word → what runs it) for `runs`,
/// the stand-in's `mongod`/`mongos` links under `dir`.
fn server_command(runs: Runs, dir: &Path) -> Command {
    let mut command = Command::new("python3");
    command.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_kube/server.py"));
    if runs != Runs::Nothing {
        command
            .arg("--command")
            .arg(format!("microshard={}", bin().display()));
    }
    if runs == Runs::Servers {
        let standin = standin_bin_dir(dir);
        for name in ["mongod", "mongos"] {
            let path = standin.join(name);
            command
                .arg("--command")
                .arg(format!("{name}={}", path.display()));
        }
        command.arg("--run-statefulsets");
    }
    command
}

/// Whether the fake's kubelet can give a server pod its own host name and hosts file (`unshare
/// --uts --mount`, as root).
fn can_name_hosts() -> bool {
    let unshare = Command::new("unshare")
        .args(["--uts", "--mount", "true"])
        .output();
    unshare.is_ok_and(|o| o.status.success())
}

/// A `microshard` command reaching the fake through its kubeconfig, with state directory `state`.
fn microshard(fake: &FakeKube, state: &Path) -> Command {
    let mut c = crate::util::microshard(state);
    c.env("KUBECONFIG", fake.kubeconfig())
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("TMPDIR", state)
        .stdin(Stdio::null());
    c
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `compare` of S1 (a load of 500 records) and S2, run phases of `duration`, against a stand-in
/// `mongod` (the process backend) with two client pods of the fake's context; its results go
/// under `tmp/results`.
fn client_pods_compare(fake: &FakeKube, tmp: &Path, duration: &str) -> Command {
    let port = free_base_port(2);
    let topology = write_topology(
        tmp,
        "kpods",
        &format!(
            "name = \"kpods\"\nkind = \"standalone\"\nbase_port = {port}\n\
             client_image = \"fake.registry/microshard:1\"\n\
             clients = [{{ kubernetes = \"fake\", count = 2 }}]\n"
        ),
    );
    let mut compare = microshard(fake, &tmp.join("state"));
    compare
        .args(["compare", "--topologies"])
        .arg(&topology)
        .args(["--scenarios", "S1,S2", "--duration", duration])
        .args("--records 500 --threads 4 --backend process --bin-dir".split_whitespace())
        .arg(standin_bin_dir(tmp))
        .arg("--out")
        .arg(tmp.join("results"))
        .arg("-q");
    compare
}

/// A `compare` of S1 (a load of 500 records) and S2 against a stand-in `mongod` (the process
/// backend) whose clients are two pods of the fake API's context: each phase's Job runs two pods
/// as local processes, started through attach and read through their logs. Each client's result
/// names its pod, its fake node and its image's fake digest; the load's clients count the 500
/// records between them; afterwards no Job, Secret or pod of microshard's is left in the fake.
#[test]
fn fake_api_client_pods_drive_a_compare_and_leave_nothing_labelled() {
    let Some(fake) = FakeKube::start(Runs::Clients) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let results = tmp.path().join("results");
    let out = client_pods_compare(&fake, tmp.path(), "2s")
        .output()
        .expect("compare");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stderr(&out),
        fake.log()
    );
    let cells = cells_under(&results);
    assert_eq!(cells.len(), 2, "{}", stderr(&out));
    for cell in &cells {
        client_pods_ran(&cell["result"]);
    }
    let load = cells.iter().find(|c| c["cell"]["scenario"] == "S1");
    assert_eq!(load.map(|c| &c["result"]["operations"]), Some(&500.into()));
    fake.assert_nothing_left(MANAGED, "after the compare");
}

/// Client pods whose image the fake's nodes cannot pull (`ErrImagePull`): the phase stops,
/// naming the pod and why, and its Job, Secret and pods are deleted all the same.
#[test]
fn fake_api_client_pods_that_cannot_start_stop_the_phase_and_leave_nothing_labelled() {
    let Some(fake) = FakeKube::start(Runs::Nothing) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let out = client_pods_compare(&fake, tmp.path(), "2s")
        .output()
        .expect("compare");
    let said = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("S1 load: client pod kpods-") && said.contains("cannot start: ErrImagePull"),
        "{said}"
    );
    fake.assert_nothing_left(MANAGED, "after pods that could not start");
}

/// The client-pod `compare` of 30 s cells, started and waited for until its run phase's two
/// pods run.
fn run_phase_running(fake: &FakeKube, tmp: &Path) -> Live {
    let compare = Live::spawn(client_pods_compare(fake, tmp, "30s"));
    let running = poll_for(Duration::from_secs(60), || {
        let (objects, processes) = fake.state(MANAGED);
        let run = objects.iter().any(|o| o.contains("-run-clients-"));
        (run && processes == 2).then_some(())
    });
    assert!(
        running.is_some(),
        "{:?}\n{}",
        fake.state(MANAGED),
        fake.log()
    );
    compare
}

/// Ctrl-C (SIGINT) while the run phase's client pods run: the command ends, the finished load's
/// cell is kept, and the run's Job, Secret and pods are deleted (their processes ended by the
/// fake kubelet): nothing labelled is left.
#[test]
fn fake_api_ctrl_c_during_client_pods_deletes_their_job_and_leaves_nothing_labelled() {
    let Some(fake) = FakeKube::start(Runs::Clients) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let compare = run_phase_running(&fake, tmp.path());
    std::thread::sleep(Duration::from_secs(2));
    let sent = compare.signal(libc::SIGINT);
    let (code, said, ended) = compare.finish(Duration::from_secs(60));
    assert_ne!(code, Some(0), "{said}");
    assert!(ended - sent < Duration::from_secs(25), "{said}");
    let cells = cells_under(&tmp.path().join("results"));
    assert_eq!(cells.len(), 1, "the load's cell is kept: {said}");
    fake.assert_nothing_left(MANAGED, "after Ctrl-C");
}

/// A compare killed outright (SIGKILL) while the run phase's client pods run cannot delete them:
/// its Job, Secret and pods stay in the context's namespace. `down --all` finds the run by its
/// state file (its process is gone) and its teardown deletes them by the run's label, then the
/// stand-in server: nothing labelled is left, no pod process runs.
#[test]
fn fake_api_a_compare_killed_mid_phase_leaves_client_pods_that_down_all_deletes() {
    let Some(fake) = FakeKube::start(Runs::Clients) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let compare = run_phase_running(&fake, tmp.path());
    compare.signal(libc::SIGKILL);
    let (_, said, _) = compare.finish(Duration::from_secs(30));
    let (left, _) = fake.state(MANAGED);
    assert!(
        left.iter().any(|o| o.contains("-run-clients-")),
        "a killed CLI leaves its Job: {left:?} {said}"
    );
    let down = microshard(&fake, &tmp.path().join("state"))
        .args(["down", "--all"])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .expect("down --all");
    assert_eq!(down.status.code(), Some(0), "{}", stderr(&down));
    // Their server (a child of the killed compare) may be gone: the pods may stop only at the
    // kubelet's SIGKILL, after their 30 s grace period.
    fake.assert_nothing_left_within(Duration::from_secs(45), MANAGED, "after down --all");
}

/// A cell's result: valid but for its toy size, two clients, each a pod of the fake on a node of
/// its own with the fake image's digest, their operations summing to the cell's.
fn client_pods_ran(result: &serde_json::Value) {
    crate::util::assert_valid_but_for_toy_size(&result["validity"]);
    let clients = result["clients"].as_array().cloned().unwrap_or_default();
    assert_eq!(clients.len(), 2, "{result}");
    let mut nodes = Vec::new();
    for (i, client) in clients.iter().enumerate() {
        let pod = &client["pod"];
        assert_eq!(client["index"], i as u64, "{client}");
        assert!(client["operations"].as_u64().unwrap_or(0) > 0, "{client}");
        assert!(
            pod["pod"]
                .as_str()
                .is_some_and(|p| p.contains("-clients-") && p.contains(&format!("-{i}-"))),
            "{pod}"
        );
        assert!(
            pod["image_digest"]
                .as_str()
                .is_some_and(|d| d.starts_with("fake.registry/microshard@sha256:")),
            "{pod}"
        );
        let node = pod["node"].as_str().unwrap_or_default().to_string();
        assert!(node.starts_with("fake-node-"), "{pod}");
        nodes.push(node);
    }
    nodes.dedup();
    assert_eq!(nodes.len(), 2, "a node each: {nodes:?}");
    let sum: u64 = clients
        .iter()
        .filter_map(|c| c["operations"].as_u64())
        .sum();
    assert_eq!(result["operations"].as_u64(), Some(sum), "{result}");
}

/// `up single --backend kubernetes` against the fake, whose StatefulSet pods stay Pending,
/// killed with SIGKILL while it waits for them: the run's namespace, Lease, Service and
/// StatefulSet are left, as a dead CLI leaves them. Returns the namespace's name.
fn killed_up(fake: &FakeKube, state: &Path) -> String {
    let mut cmd = microshard(fake, state);
    cmd.args([
        "up",
        "single",
        "--backend",
        "kubernetes",
        "--image",
        "mongo:8.0",
        "--timeout",
        "600",
    ]);
    let mut up = Live::spawn(cmd);
    up.wait_for("pods to be Ready", Duration::from_secs(60));
    up.signal(libc::SIGKILL);
    let (code, said, _) = up.finish(Duration::from_secs(10));
    assert_eq!(code, None, "killed: {said}");
    let (left, _) = fake.state(MANAGED);
    let namespace = left
        .iter()
        .find_map(|o| o.strip_prefix("Namespace /"))
        .unwrap_or_else(|| panic!("the run's namespace: {left:?}"))
        .to_string();
    for kind in ["Lease", "Service", "StatefulSet", "Pod"] {
        let prefix = format!("{kind} {namespace}/");
        assert!(
            left.iter().any(|o| o.starts_with(&prefix)),
            "{kind}: {left:?}"
        );
    }
    namespace
}

/// A killed `up`'s run is still recorded in its state file, so `down --all` on that machine
/// deletes its namespace at once, lease held or not: nothing labelled is left in the fake API.
#[test]
fn fake_api_a_killed_up_is_torn_down_by_down_all_from_its_state_file() {
    let Some(fake) = FakeKube::start(Runs::Clients) else {
        return;
    };
    let state = tempfile::tempdir().expect("state");
    let namespace = killed_up(&fake, state.path());
    let out = microshard(&fake, state.path())
        .args(["down", "--all"])
        .output()
        .expect("down --all");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("single"), "{said}{}", stderr(&out));
    fake.assert_nothing_left(MANAGED, &format!("after down --all ({namespace})"));
    crate::util::assert_nothing_left(state.path());
}

/// The reaper's run through the fake API: `down --all --any-owner`, the command the reaper's
/// CronJob runs, from a state directory of its own (another owner, as the reaper's pod is), finds
/// a killed `up`'s run by its labels only; it leaves the namespace while its Lease is held
/// (renewed under a minute ago), and deletes it once the Lease expired (its renewal moved an hour
/// back through the fake), leaving nothing labelled. Docker is pointed nowhere for it, so that
/// `--any-owner` touches no other test's containers on this machine's engine.
#[test]
fn fake_api_a_killed_up_is_reaped_by_down_all_only_once_its_lease_expired() {
    let Some(fake) = FakeKube::start(Runs::Clients) else {
        return;
    };
    let state = tempfile::tempdir().expect("state");
    let namespace = killed_up(&fake, state.path());
    let reaper = tempfile::tempdir().expect("the reaper's state");
    let down_all = || {
        let out = microshard(&fake, reaper.path())
            .args(["down", "--all", "--any-owner"])
            .env(
                "DOCKER_HOST",
                format!("unix://{}/no-docker.sock", reaper.path().display()),
            )
            .output()
            .expect("down --all");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let held = down_all();
    assert!(!held.contains(&namespace), "{held}");
    let (left, _) = fake.state(MANAGED);
    assert!(
        left.contains(&format!("Namespace /{namespace}")),
        "{left:?}"
    );
    let expired = fake.call("POST", "/_fake/expire-leases");
    assert_eq!(expired["expired"], 1);
    let reaped = down_all();
    assert!(
        reaped.contains(&format!("namespace {namespace}")) && reaped.contains("lease expired"),
        "{reaped}"
    );
    fake.assert_nothing_left(MANAGED, "after the reaper's down --all");
}

/// `up microshard-2 --backend kubernetes` against the fake whose kubelet runs the StatefulSets'
/// pods as stand-in servers (each on a loopback address of its own, named as the topology's
/// configurations name it): the run's labelled namespace, its Lease held by the `up` process, the
/// replica sets initiated, both shards added and `ycsb.usertable` sharded through the API's
/// port-forwards; then `down microshard-2` deletes the namespace, the pods' processes end and
/// nothing labelled is left.
#[test]
fn fake_api_up_then_down_of_microshard_2_through_port_forwards_leaves_nothing() {
    let Some(fake) = FakeKube::start(Runs::Servers) else {
        return;
    };
    let state = tempfile::tempdir().expect("state");
    let up = microshard(&fake, state.path())
        .args(["up", "microshard-2", "--backend", "kubernetes"])
        .args(["--image", "mongo:8.0", "--timeout", "60"])
        .output()
        .expect("up");
    let said = stderr(&up);
    assert_eq!(up.status.code(), Some(0), "{said}\n{}", fake.log());
    for step in [
        "addShard sh0/",
        "addShard sh1/",
        "shardCollection ycsb.usertable",
    ] {
        assert!(said.contains(step), "{step}: {said}");
    }
    let (left, processes) = fake.state(MANAGED);
    let namespace = left
        .iter()
        .find_map(|o| o.strip_prefix("Namespace /"))
        .unwrap_or_else(|| panic!("the run's namespace: {left:?}"))
        .to_string();
    assert_eq!(processes, 4, "config server, two shards, mongos: {left:?}");
    let lease = fake.call(
        "GET",
        &format!("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/microshard"),
    );
    let holder = lease["spec"]["holderIdentity"].as_str().unwrap_or_default();
    assert!(holder.contains("/pid-"), "{lease}");
    let down = microshard(&fake, state.path())
        .args(["down", "microshard-2"])
        .output()
        .expect("down");
    assert_eq!(down.status.code(), Some(0), "{}", stderr(&down));
    fake.assert_nothing_left(MANAGED, &format!("after down ({namespace})"));
    crate::util::assert_nothing_left(state.path());
}

/// `compare --backend kubernetes` without client pods is refused before anything is created: its
/// clients would measure through the API server's port-forward, so the figures would be the API
/// server's. One line naming the topology, exit status 2, nothing in the fake.
#[test]
fn fake_api_a_live_compare_without_client_pods_is_refused_and_creates_nothing() {
    let Some(fake) = FakeKube::start(Runs::Servers) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let out = microshard(&fake, &tmp.path().join("state"))
        .args(["compare", "--backend", "kubernetes", "--image", "mongo:8.0"])
        .args(
            "--topologies microshard-2 --scenarios S1 --duration 2s --records 500"
                .split_whitespace(),
        )
        .arg("--out")
        .arg(tmp.path().join("results"))
        .output()
        .expect("compare");
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(
        said.contains("--backend kubernetes measures from inside the cluster"),
        "{said}"
    );
    fake.assert_nothing_left(MANAGED, "after the refusal");
}

/// `compare --backend kubernetes` of `microshard-2` whose clients are two pods of the same
/// context: each phase's Job goes into the run's namespace (never `default`) and its pods dial
/// the `mongos` by its in-cluster name (the fake's hosts file); each client names its pod, node
/// and digest, the load's clients count the 500 records, and nothing labelled is left.
#[test]
fn fake_api_client_pods_in_the_run_s_namespace_drive_a_live_compare_and_leave_nothing() {
    let Some(fake) = FakeKube::start(Runs::Servers) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/microshard-2.toml");
    let body = std::fs::read_to_string(shipped).expect("microshard-2.toml");
    let pods = "client_image = \"fake.registry/microshard:1\"\n\
                clients = [{ kubernetes = \"fake\", count = 2 }]\n";
    let topology = write_topology(tmp.path(), "microshard-2", &format!("{pods}{body}"));
    let results = tmp.path().join("results");
    let mut compare = microshard(&fake, &tmp.path().join("state"))
        .args(["compare", "--backend", "kubernetes", "--image", "mongo:8.0"])
        .arg("--topologies")
        .arg(&topology)
        .args("--scenarios S1,S2 --duration 2s --records 500 --threads 4 -q".split_whitespace())
        .arg("--out")
        .arg(&results)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("compare");
    let mut jobs = std::collections::BTreeSet::new();
    while compare.try_wait().expect("try_wait").is_none() {
        let (objects, _) = fake.state(MANAGED);
        jobs.extend(objects.into_iter().filter(|o| o.starts_with("Job ")));
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = compare.wait_with_output().expect("compare");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stderr(&out),
        fake.log()
    );
    assert!(!jobs.is_empty(), "no Job seen");
    for job in &jobs {
        assert!(job.starts_with("Job microshard-2-"), "{jobs:?}");
    }
    let cells = cells_under(&results);
    assert_eq!(cells.len(), 2, "{}", stderr(&out));
    for cell in &cells {
        client_pods_ran(&cell["result"]);
        // Every server's image as it ran, by digest: the fake's for mongo:8.0.
        let images = cell["server_images"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(images.len(), 4, "every member of microshard-2: {images:?}");
        assert!(
            images
                .values()
                .all(|d| d.as_str().is_some_and(|d| d.contains("@sha256:"))),
            "{images:?}"
        );
    }
    let load = cells.iter().find(|c| c["cell"]["scenario"] == "S1");
    assert_eq!(load.map(|c| &c["result"]["operations"]), Some(&500.into()));
    fake.assert_nothing_left(MANAGED, "after the compare");
}
