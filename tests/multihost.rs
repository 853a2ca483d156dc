//! A topology spread over several hosts, with one host cut off mid-run (`docs/reliability.md`,
//! guarantee 6a). The hosts are this test's own network namespaces (`ip netns add`, a veth pair
//! each, addresses of the test's own choosing inside them); the shards' stand-ins run inside them,
//! the config server and mongos on this host, and microshard assembles the cluster through its
//! admin functions and measures it through the `existing` backend, its client outside the
//! namespaces. Cutting one host's link (`ip link set … down`) while the run cell goes on must give
//! exit 3 and a verdict naming the member on that host. Skipped, with a message, where network
//! namespaces cannot be made (not root, no `ip`).

use crate::util::free_base_port;
use crate::util::{bin, ip};

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One test host: a network namespace joined to this one by a veth pair.
struct Host {
    ns: String,
    outer_if: String,
    inner_if: String,
    address: String,
}

impl Host {
    /// `index` picks the /30; `tag` keeps concurrent runs apart.
    fn create(index: u8, tag: u32) -> Option<Host> {
        let ns = format!("msh{tag}{index}");
        let outer = format!("msv{tag}{index}o");
        let inner = format!("msv{tag}{index}i");
        let net = format!("10.231.{}.{}", tag % 200, index * 4);
        let base = net.rsplit_once('.').map(|(a, _)| a.to_string())?;
        let outer_ip = format!("{base}.{}", index * 4 + 1);
        let inner_ip = format!("{base}.{}", index * 4 + 2);
        let ok = ip(&["netns", "add", &ns])
            && ip(&[
                "link", "add", &outer, "type", "veth", "peer", "name", &inner,
            ])
            && ip(&["link", "set", &inner, "netns", &ns])
            && ip(&["addr", "add", &format!("{outer_ip}/30"), "dev", &outer])
            && ip(&["link", "set", &outer, "up"])
            && ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{inner_ip}/30"),
                "dev",
                &inner,
            ])
            && ip(&["-n", &ns, "link", "set", &inner, "up"])
            && ip(&["-n", &ns, "link", "set", "lo", "up"])
            && ip(&["-n", &ns, "route", "add", "default", "via", &outer_ip]);
        let host = Host {
            ns,
            outer_if: outer,
            inner_if: inner,
            address: inner_ip,
        };
        if ok { Some(host) } else { None }
    }

    fn cut_off(&self) {
        assert!(
            ip(&["-n", &self.ns, "link", "set", &self.inner_if, "down"]),
            "cannot cut {} off",
            self.ns
        );
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // The namespace goes once its processes are gone; the veth pair is removed at once.
        ip(&["link", "del", &self.outer_if]);
        ip(&["netns", "del", &self.ns]);
    }
}

/// Processes this test started; killed on drop.
#[derive(Default)]
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn standin(ns: Option<&str>, args: &[String], dbpath: Option<&std::path::Path>) -> Child {
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).arg(bin());
            c
        }
        None => Command::new(bin()),
    };
    cmd.arg("standin").args(args);
    if let Some(d) = dbpath {
        cmd.arg("--dbpath").arg(d);
    }
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a stand-in")
}

fn wait_listening(addr: &str) {
    crate::util::poll_for(Duration::from_secs(20), || {
        std::net::TcpStream::connect(addr).ok()
    })
    .unwrap_or_else(|| panic!("{addr} did not listen"));
}

async fn wait_writable(host: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(c) = microshard::cluster::connect_direct(host).await
            && let Ok(h) = c
                .database("admin")
                .run_command(mongodb::bson::doc! {"hello": 1})
                .await
            && h.get_bool("isWritablePrimary").unwrap_or(false)
        {
            return;
        }
        assert!(Instant::now() < deadline, "{host} never became primary");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_host_cut_off_mid_run_is_named_in_the_verdict() {
    let tag = std::process::id() % 10_000;
    let (Some(a), Some(b)) = (Host::create(0, tag), Host::create(1, tag)) else {
        eprintln!(
            "skipped: cannot make network namespaces here (needs root and iproute2's `ip netns`)"
        );
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = |n: &str| {
        let d = tmp.path().join(n);
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    };
    let port = free_base_port(4);
    let (cfg_port, mongos_port, shard_port) = (port, port + 1, port + 2);
    let mut procs = Procs::default();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    procs.0.push(standin(
        None,
        &s(&[
            "mongod",
            "--configsvr",
            "--replSet",
            "cfg",
            "--bind_ip",
            "127.0.0.1",
            "--port",
            &cfg_port.to_string(),
        ]),
        Some(&dir("cfg")),
    ));
    let shards = [("sh0", &a), ("sh1", &b)];
    for (name, host) in shards {
        procs.0.push(standin(
            Some(&host.ns),
            &s(&[
                "mongod",
                "--shardsvr",
                "--replSet",
                name,
                "--bind_ip",
                &host.address,
                "--port",
                &shard_port.to_string(),
            ]),
            Some(&dir(name)),
        ));
    }
    let cfg_host = format!("127.0.0.1:{cfg_port}");
    wait_listening(&cfg_host);
    for (_, host) in shards {
        wait_listening(&format!("{}:{shard_port}", host.address));
    }
    // microshard's own admin steps assemble the cluster across the hosts.
    let rt = crate::util::runtime();
    rt.block_on(async {
        microshard::cluster::initiate(&cfg_host, "cfg", std::slice::from_ref(&cfg_host), true)
            .await
            .expect("initiate cfg");
        wait_writable(&cfg_host).await;
        for (name, host) in shards {
            let member = format!("{}:{shard_port}", host.address);
            microshard::cluster::initiate(&member, name, std::slice::from_ref(&member), false)
                .await
                .expect("initiate shard");
            wait_writable(&member).await;
        }
    });
    procs.0.push(standin(
        None,
        &s(&[
            "mongos",
            "--configdb",
            &format!("cfg/{cfg_host}"),
            "--bind_ip",
            "127.0.0.1",
            "--port",
            &mongos_port.to_string(),
        ]),
        None,
    ));
    let mongos = format!("127.0.0.1:{mongos_port}");
    wait_listening(&mongos);
    rt.block_on(async {
        for (name, host) in shards {
            let member = format!("{}:{shard_port}", host.address);
            microshard::cluster::add_shard(
                &mongos,
                &format!("{name}/{member}"),
                name,
                Duration::from_secs(30),
            )
            .await
            .expect("addShard");
        }
    });

    let topo = tmp.path().join("netns.toml");
    std::fs::write(
        &topo,
        format!("name = \"netns\"\nkind = \"sharded\"\nshards_per_host = 2\nuri = \"mongodb://{mongos}/\"\n"),
    )
    .expect("topology");
    let results = tmp.path().join("results");
    let mut compare = Command::new(bin())
        .args(["compare", "--backend", "existing", "--topologies"])
        .arg(&topo)
        .args([
            "--scenarios",
            "S1,S2",
            "--records",
            "300",
            "--threads",
            "4",
            "--duration",
            "6s",
            "--out",
        ])
        .arg(&results)
        .env("MICROSHARD_STATE_DIR", tmp.path().join("state"))
        .env("TMPDIR", tmp.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("compare");
    let (tx, rx) = mpsc::channel();
    let stderr = compare.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen.iter().any(|l| l.contains("S2 run")) {
        assert!(
            Instant::now() < deadline,
            "the run cell never started: {seen:#?}"
        );
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            seen.push(l);
        }
        if compare.try_wait().ok().flatten().is_some() {
            std::thread::sleep(Duration::from_millis(300));
            seen.extend(rx.try_iter());
            panic!("compare ended before its run cell: {seen:#?}");
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    b.cut_off();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = compare.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "compare did not end: {seen:#?}");
        while let Ok(l) = rx.try_recv() {
            seen.push(l);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    while let Ok(l) = rx.recv_timeout(Duration::from_millis(300)) {
        seen.push(l);
    }
    let text = seen.join("\n");
    let victim = format!("sh1 ({}:{shard_port})", b.address);
    assert_eq!(status.code(), Some(3), "{text}");
    assert!(
        text.contains(&format!("{victim} stopped answering at")),
        "no live line naming {victim}:\n{text}"
    );
    assert!(
        text.lines().last().is_some_and(|l| l.contains(&victim)),
        "{text}"
    );
    drop(procs);
    drop(rt);
    crate::util::assert_no_process_left(tmp.path(), Duration::from_secs(10), "at the end");
}
