//! Two behaviours that need real Docker engines: client containers on an engine other
//! than the cluster's, and host names that exist only in the control machine's
//! `/etc/hosts`. The second engine is a `dockerd` this test starts with its own socket,
//! data-root, exec-root, pidfile and a bridge of its own, and stops again; the `/etc/hosts` entry lives in
//! a private mount namespace (`unshare -m`) of the microshard process. Each test prints why and
//! skips where the machine cannot run it (not root, no engine, no `dockerd`), never silently.

use crate::util::{bin, ip, write_topology};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use microshard::backend::docker;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// This machine's first global IPv4 address that is not a Docker bridge's: routable from its
/// containers (through the published port) and from a host-network container of any engine.
fn routable_ip() -> Option<String> {
    let out = Command::new("ip")
        .args(["-4", "-o", "addr", "show", "scope", "global"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let dev = it.nth(1)?;
        let addr = it.nth(1)?;
        (!dev.starts_with("docker") && !dev.starts_with("br-"))
            .then(|| addr.split('/').next().unwrap_or(addr).to_string())
    })
}

/// A second Docker engine on this machine, stopped (by its pid) and removed on drop. It gets a
/// bridge of its own: with `--bridge=none` dockerd deletes the host's `docker0`, which belongs to
/// the main engine.
struct SecondEngine {
    dir: tempfile::TempDir,
    child: Child,
    endpoint: String,
    bridge: String,
}

impl SecondEngine {
    /// Starts it; `Err(why)` when it does not answer within 60 s.
    fn start() -> Result<SecondEngine, String> {
        let dir = tempfile::Builder::new()
            .prefix("msd2")
            .tempdir_in("/tmp")
            .map_err(|e| e.to_string())?;
        let d = dir.path();
        std::fs::write(d.join("daemon.json"), "{}").map_err(|e| e.to_string())?;
        let log = std::fs::File::create(d.join("log")).map_err(|e| e.to_string())?;
        let endpoint = format!("unix://{}", d.join("d.sock").display());
        let tag = std::process::id() % 100_000;
        let bridge = format!("msd2b{tag}");
        let net = format!("10.237.{}.1/24", tag % 250);
        if !(ip(&["link", "add", &bridge, "type", "bridge"])
            && ip(&["addr", "add", &net, "dev", &bridge])
            && ip(&["link", "set", &bridge, "up"]))
        {
            ip(&["link", "del", &bridge]);
            return Err(format!("cannot make bridge {bridge}"));
        }
        let spawned = Command::new("dockerd")
            .arg("--config-file")
            .arg(d.join("daemon.json"))
            .args(["--host", &endpoint])
            .arg("--data-root")
            .arg(d.join("data"))
            .arg("--exec-root")
            .arg(d.join("exec"))
            .arg("--pidfile")
            .arg(d.join("pid"))
            .arg(format!("--bridge={bridge}"))
            .args(["--iptables=false", "--ip-masq=false"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) => {
                ip(&["link", "del", &bridge]);
                return Err(format!("cannot run dockerd: {e}"));
            }
        };
        let mut engine = SecondEngine {
            dir,
            child,
            endpoint,
            bridge,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let rt = crate::util::runtime();
        while Instant::now() < deadline {
            if let Ok(Some(status)) = engine.child.try_wait() {
                return Err(format!("dockerd exited ({status}): {}", engine.log_tail()));
            }
            if rt.block_on(docker::connect(Some(&engine.endpoint))).is_ok() {
                return Ok(engine);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Err(format!(
            "dockerd did not answer in 60 s: {}",
            engine.log_tail()
        ))
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(3)..].join(" | ")
    }
}

impl Drop for SecondEngine {
    fn drop(&mut self) {
        // SAFETY: signalling the dockerd this test started, by its own pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && !matches!(self.child.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(200));
        }
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // What the engine left mounted below its directories (its netns file), deepest first,
        // so the directory can go.
        let root = self.dir.path().display().to_string();
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut points: Vec<&str> = mounts
            .lines()
            .filter_map(|l| l.split_whitespace().nth(4))
            .filter(|p| p.starts_with(&root))
            .collect();
        ip(&["link", "del", &self.bridge]);
        points.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for p in points {
            if let Ok(c) = std::ffi::CString::new(p) {
                // SAFETY: a NUL-terminated path; MNT_DETACH only detaches the mount.
                unsafe {
                    libc::umount2(c.as_ptr(), libc::MNT_DETACH);
                }
            }
        }
    }
}

/// The main engine with the stand-in image built, or why not.
fn main_engine(tag: &str) -> Result<bollard::Docker, String> {
    if !is_root() {
        return Err("not root".into());
    }
    let rt = crate::util::runtime();
    let d = rt
        .block_on(docker::connect(None))
        .map_err(|e| format!("no Docker engine answers here ({e})"))?;
    rt.block_on(docker::build_standin_image(&d, &bin(), tag))
        .map_err(|e| format!("cannot build the stand-in image: {e:#}"))?;
    Ok(d)
}

fn compare(state: &Path, topology: &Path, image: &str, out: &Path, prefix: &[&str]) -> Output {
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(bin());
            c
        }
        None => Command::new(bin()),
    };
    cmd.args(["compare", "--topologies"])
        .arg(topology)
        .args("--scenarios S1,S2 --duration 2s --records 200 --threads 2".split_whitespace())
        .args(["--backend", "docker", "--image", image, "--out"])
        .arg(out)
        .arg("-q")
        .env("MICROSHARD_STATE_DIR", state)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .expect("run microshard")
}

/// What both tests need: this binary to themselves, a private state directory, the stand-in image
/// `tag` on the main engine (removed with everything labelled for that state directory when it
/// drops) and this machine's routable address; `None`, having said why `test` skips, without.
struct Lab {
    // Declared first, so the cleanup runs before the directory goes and the lock is let go.
    _cleanup: crate::util::DockerOwnerCleanup,
    tmp: tempfile::TempDir,
    state: std::path::PathBuf,
    image: String,
    ip: String,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Lab {
    fn start(test: &str, tag: &str) -> Option<Lab> {
        let _one = crate::util::one_at_a_time();
        let image = format!("microshard-standin:{tag}-{}", std::process::id());
        let tmp = tempfile::tempdir().expect("tmp");
        let state = tmp.path().join("state");
        let _cleanup = crate::util::DockerOwnerCleanup {
            state: state.clone(),
            image: image.clone(),
        };
        if let Err(why) = main_engine(&image) {
            eprintln!("SKIP {test}: {why}");
            return None;
        }
        let Some(ip) = routable_ip() else {
            eprintln!("SKIP {test}: this machine has no global IPv4 address");
            return None;
        };
        Some(Lab {
            _cleanup,
            tmp,
            state,
            image,
            ip,
            _one,
        })
    }
}

/// N1: a single-host cluster with clients on a second engine is refused before anything starts,
/// naming `hosts[0].address` and `publish_address`; given a routable host address, the same
/// clients on the second engine reach it and drive every cell.
#[test]
fn clients_on_a_second_engine_reach_the_cluster_or_are_refused() {
    let Some(lab) = Lab::start("clients_on_a_second_engine", "fid") else {
        return;
    };
    let (tmp, state, image, ip) = (&lab.tmp, &lab.state, &lab.image, &lab.ip);
    let second = match SecondEngine::start() {
        Ok(e) => e,
        Err(why) => {
            eprintln!("SKIP clients_on_a_second_engine: a second dockerd cannot start here: {why}");
            return;
        }
    };
    let rt = crate::util::runtime();
    let d2 = rt
        .block_on(docker::connect(Some(&second.endpoint)))
        .expect("second engine");
    // A new engine has no images: the client image is built there too.
    rt.block_on(docker::build_standin_image(&d2, &bin(), image))
        .expect("stand-in image on the second engine");
    let port = crate::util::free_base_port(2);
    let clients = format!(
        "client_image = \"{image}\"\nclients = [{{ docker = \"{}\", count = 2 }}]\n",
        second.endpoint
    );

    // Loopback entry: refused, nothing started.
    let local = write_topology(
        tmp.path(),
        "far-local",
        &format!("name = \"farlocal\"\nkind = \"standalone\"\nbase_port = {port}\n{clients}"),
    );
    let out = compare(state, &local, image, &tmp.path().join("r1"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for part in [
        "clients[0].docker",
        "hosts[0].address",
        "publish_address",
        "127.0.0.1",
    ] {
        assert!(stderr.contains(part), "{part:?}: {stderr}");
    }
    let owner = docker::owner_id_for(state);
    let d = rt.block_on(docker::connect(None)).expect("engine");
    let left = rt.block_on(crate::util::docker_objects_labelled(
        &d,
        docker::LABEL_OWNER,
        &owner,
    ));
    assert!(left.is_empty(), "a refused plan started {left:?}");

    // A routable host address: the clients on the second engine reach the cluster.
    let routable = write_topology(
        tmp.path(),
        "far-routable",
        &format!(
            "name = \"farroute\"\nkind = \"standalone\"\nbase_port = {port}\n{clients}[[hosts]]\naddress = \"{ip}\"\npublish_address = \"{ip}\"\n"
        ),
    );
    let results = tmp.path().join("r2");
    let out = compare(state, &routable, image, &results, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let cells = crate::util::cells_under(&results);
    assert_eq!(cells.len(), 2, "{stderr}");
    for c in &cells {
        let clients = c["result"]["clients"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(clients.len(), 2, "{}", c["cell"]);
        for client in &clients {
            assert_eq!(client["host"], second.endpoint.as_str(), "{client}");
            assert!(client["operations"].as_u64().unwrap_or(0) > 0, "{client}");
        }
        crate::util::assert_valid_but_for_toy_size(&c["result"]["validity"]);
    }
    let left = rt.block_on(crate::util::docker_objects_labelled(
        &d2,
        docker::LABEL_OWNER,
        &owner,
    ));
    assert!(left.is_empty(), "left on the second engine: {left:?}");
}

/// N3: a topology whose host name exists only in the control machine's `/etc/hosts` (here a
/// private mount namespace's) comes up: every member container gets the name in its own
/// `/etc/hosts`, which Docker's DNS would not give it.
#[test]
fn host_names_only_in_etc_hosts_resolve_inside_the_members() {
    let Some(lab) = Lab::start("host_names_only_in_etc_hosts", "fidh") else {
        return;
    };
    let (tmp, state, image, ip) = (&lab.tmp, &lab.state, &lab.image, &lab.ip);
    let unshare_works = Command::new("unshare")
        .args(["-m", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !unshare_works {
        eprintln!("SKIP host_names_only_in_etc_hosts: `unshare -m` does not work here");
        return;
    }
    let name = format!("msfid{}.lab.test", std::process::id());
    let hosts = tmp.path().join("hosts");
    let mut text = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    text.push_str(&format!("\n{ip} {name}\n"));
    std::fs::write(&hosts, text).expect("hosts file");
    let port = crate::util::free_base_port(4);
    let topology = write_topology(
        tmp.path(),
        "named",
        &format!(
            "name = \"named\"\nkind = \"sharded\"\nshards_per_host = 1\nbase_port = {port}\n[[hosts]]\naddress = \"{name}\"\npublish_address = \"{ip}\"\n"
        ),
    );
    let results = tmp.path().join("r");
    // microshard runs with the name in its /etc/hosts only; the engine and its DNS never see it.
    let mount = format!(
        "mount --bind {} /etc/hosts && exec \"$0\" \"$@\"",
        hosts.display()
    );
    let out = compare(
        state,
        &topology,
        image,
        &results,
        &["unshare", "-m", "sh", "-c", &mount],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let cells = crate::util::cells_under(&results);
    assert_eq!(cells.len(), 2, "{stderr}");
    let plan = &cells[0]["topology"];
    let members = plan["members"].as_array().cloned().unwrap_or_default();
    assert!(
        members.iter().all(|m| m["member_host"]
            .as_str()
            .is_some_and(|h| h.starts_with(&name))),
        "members are named by the host name: {plan}"
    );
    assert!(
        std::fs::read_to_string("/etc/hosts").is_ok_and(|t| !t.contains(&name)),
        "the test's name leaked into this machine's /etc/hosts"
    );
}
