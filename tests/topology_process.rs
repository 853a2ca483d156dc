//! End-to-end: the process backend brings up `single`, `microshard-2` and `microshard-4` with the
//! stand-in playing mongod/mongos, the admin sequence matches the spec (from the stand-ins'
//! command logs), data lands on every shard, and `down` leaves no process, port or directory.
//! Also the existing backend against a stand-in mongos, and the error paths.
//!
//! Everything runs in one test function, sequentially: the state directory is set once through
//! the environment before anything else runs, and the machine has two cores.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::util::{
    insert_users, process_plan, standin_bin_dir, up_options, usertable_count, write_topology,
};
use microshard::backend::{self, MemberState, RunningCluster};
use microshard::cluster;
use microshard::experiment::metrics;
use microshard::topology::{BackendKind, MemberRole, Plan, PlanOptions, TopologySpec};
use mongodb::bson::{Document, doc};
use serde_json::Value;

/// The stand-in is written in parallel; until it answers `--version`, say so and skip.
fn standin_ready(bin: &Path) -> bool {
    let out = Command::new(bin.join("mongod"))
        .arg("--version")
        .output()
        .unwrap();
    if out.status.success() {
        return true;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("not implemented") {
        eprintln!(
            "SKIP: the stand-in is not implemented in this build yet ({})",
            err.trim()
        );
        return false;
    }
    panic!("stand-in `mongod --version` failed: {err}");
}

fn base_port(slot: u32) -> u16 {
    // Below the ephemeral range (32768+), spread by pid; distinct per topology within this run.
    (20000 + (std::process::id() % 200) * 40 + slot * 10) as u16
}

/// Command-log lines of one member: `{t, cmd, db, args}`.
fn command_log(plan: &Plan, member: &str) -> Vec<Value> {
    let m = plan.members.iter().find(|m| m.name == member).unwrap();
    let path = m.dir.as_ref().unwrap().join("commands.log");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn find_cmd<'a>(log: &'a [Value], cmd: &str) -> Vec<&'a Value> {
    log.iter().filter(|l| l["cmd"] == cmd).collect()
}

fn is_true(v: &Value) -> bool {
    v == &Value::Bool(true)
}

fn port_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

fn assert_nothing_left(cluster: &RunningCluster) {
    for m in &cluster.members {
        if let Some(pid) = m.handle.pid() {
            assert!(
                !backend::process::pid_alive(pid, m.port),
                "{} (pid {pid}) still runs after down",
                m.name
            );
        }
        assert!(
            port_free(m.port),
            "port {} of {} still taken",
            m.port,
            m.name
        );
    }
    assert!(
        !cluster.plan.run_dir.exists(),
        "run directory {} remains",
        cluster.plan.run_dir.display()
    );
    assert!(!cluster.state_file.exists(), "state file remains");
}

async fn insert_and_count_per_shard(cluster: &RunningCluster) -> Vec<(String, u64)> {
    insert_users(&cluster.entry_uri, 200).await;
    let mut out = Vec::new();
    for m in cluster
        .members
        .iter()
        .filter(|m| m.role == MemberRole::Shard)
    {
        out.push((m.name.clone(), usertable_count(&m.direct_uri).await));
    }
    out
}

async fn sharded_case(root: &Path, bin: &Path, shards: u32, slot: u32) {
    let name = format!("microshard-{shards}");
    let shipped = TopologySpec::load(&name).unwrap();
    assert_eq!(shipped.shards_per_host, shards);
    let path = write_topology(
        root,
        &format!("t-{name}"),
        &format!(
            "name = \"t-{name}\"\nkind = \"sharded\"\nshards_per_host = {shards}\nbase_port = {}\nmongod_args = [\"--command-log\", \"{{dir}}/commands.log\"]\nmongos_args = [\"--command-log\", \"{{dir}}/commands.log\"]\n",
            base_port(slot)
        ),
    );
    let plan = process_plan(&path, root, bin);
    let cluster = backend::up(&plan, &up_options(60, 60)).await.unwrap();
    assert!(cluster.standin, "stand-in servers must be flagged");
    assert!(
        cluster
            .members
            .iter()
            .all(|m| m.state == MemberState::Ready)
    );
    assert!(cluster.state_file.exists());
    assert!(cluster.binary_versions.contains_key("mongod"));
    assert_eq!(
        cluster.chunks.len(),
        shards as usize,
        "chunks: {:?}",
        cluster.chunks
    );

    // The config set was initiated with configsvr: true and its own host.
    let cfg = command_log(&plan, "cfg0");
    let init = find_cmd(&cfg, "replSetInitiate");
    assert_eq!(init.len(), 1, "one replSetInitiate on cfg0");
    let conf = &init[0]["args"]["replSetInitiate"];
    assert_eq!(conf["_id"], "cfg");
    assert!(is_true(&conf["configsvr"]), "{conf}");
    let cfg_port = plan.members.iter().find(|m| m.name == "cfg0").unwrap().port;
    assert_eq!(conf["members"][0]["host"], format!("localhost:{cfg_port}"));
    // Every shard set initiated without configsvr, with its own localhost:port.
    let mut last_initiate = init[0]["t"].as_str().unwrap().to_string();
    for s in plan.members_with(MemberRole::Shard) {
        let log = command_log(&plan, &s.name);
        let init = find_cmd(&log, "replSetInitiate");
        assert_eq!(init.len(), 1, "one replSetInitiate on {}", s.name);
        let conf = &init[0]["args"]["replSetInitiate"];
        assert_eq!(conf["_id"], s.name.as_str());
        assert!(conf.get("configsvr").is_none_or(|v| !is_true(v)), "{conf}");
        assert_eq!(conf["members"][0]["host"], format!("localhost:{}", s.port));
        let t = init[0]["t"].as_str().unwrap().to_string();
        if t > last_initiate {
            last_initiate = t;
        }
    }
    // On mongos: addShard for each shard (rs/host:port with a name), then enableSharding,
    // shardCollection on the hashed _id, balancerStop — in that order, after every initiate.
    let mongos = command_log(&plan, "mongos0");
    let seq: Vec<&Value> = mongos
        .iter()
        .filter(|l| {
            [
                "addShard",
                "enableSharding",
                "shardCollection",
                "balancerStop",
            ]
            .contains(&l["cmd"].as_str().unwrap_or(""))
        })
        .collect();
    let names: Vec<&str> = seq.iter().map(|l| l["cmd"].as_str().unwrap()).collect();
    let mut expected: Vec<&str> = vec!["addShard"; shards as usize];
    expected.extend(["enableSharding", "shardCollection", "balancerStop"]);
    assert_eq!(names, expected);
    assert!(seq[0]["t"].as_str().unwrap() > last_initiate.as_str());
    for (i, s) in plan.members_with(MemberRole::Shard).enumerate() {
        assert_eq!(
            seq[i]["args"]["addShard"],
            format!("{}/localhost:{}", s.name, s.port)
        );
        assert_eq!(seq[i]["args"]["name"], s.name.as_str());
    }
    let sc = &seq[shards as usize + 1]["args"];
    assert_eq!(sc["shardCollection"], "ycsb.usertable");
    assert_eq!(sc["key"]["_id"], "hashed");
    assert_eq!(seq[shards as usize]["args"]["enableSharding"], "ycsb");
    // mongos was pointed at the config set.
    let mongos_argv = plan.members[0].argv.join(" ");
    assert!(mongos_argv.contains(&format!("--configdb cfg/localhost:{cfg_port}")));

    // Data inserted through mongos lands on every shard.
    let counts = insert_and_count_per_shard(&cluster).await;
    assert_eq!(
        counts.iter().map(|(_, n)| n).sum::<u64>(),
        200,
        "{counts:?}"
    );
    assert!(
        counts.iter().all(|(_, n)| *n > 0),
        "a shard got nothing: {counts:?}"
    );

    // Server metrics as experiments read them (experiment::metrics): every member answers serverStatus, and
    // $collStats through mongos gives one share per shard holding the documents just inserted.
    let entry = metrics::snapshot(&cluster.entry_uri).await;
    assert!(entry.is_some(), "the entry point answers serverStatus");
    for m in &cluster.members {
        let snapshot = metrics::snapshot(&m.direct_uri).await;
        assert!(snapshot.is_some(), "{}: no serverStatus", m.name);
    }
    let shares =
        metrics::shard_shares(&cluster.entry_uri, cluster::YCSB_DB, cluster::YCSB_TABLE).await;
    assert_eq!(
        shares.iter().map(|s| s.documents).sum::<u64>(),
        200,
        "{shares:?}"
    );
    assert_eq!(cluster.data_members().count(), shards as usize);

    if shards == 2 {
        // addShard refused: a set name that does not match the member.
        let sh0 = &cluster.members[1];
        let mongos = &cluster.members[0].address;
        let err = cluster::add_shard(
            mongos,
            &format!("wrongset/{}", sh0.member_host),
            "extra",
            Duration::from_secs(10),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, cluster::ClusterError::Command { .. }),
            "addShard with the wrong set name must be refused, got: {err}"
        );
        existing_cases(&cluster, root).await;
    }

    backend::down(&cluster, &microshard::events::Discard)
        .await
        .unwrap();
    assert_nothing_left(&cluster);
}

async fn existing_cases(cluster: &RunningCluster, root: &Path) {
    // The existing backend shards the collection on a running mongos and never shuts it down.
    let path = write_topology(
        root,
        "t-existing",
        &format!(
            "name = \"t-existing\"\nkind = \"sharded\"\nshards_per_host = 1\nuri = \"{}\"\n",
            cluster.entry_uri
        ),
    );
    let spec = TopologySpec::load(path.to_str().unwrap()).unwrap();
    let mut opts = PlanOptions::new(&spec, BackendKind::Existing);
    opts.run_dir = root.join("existing-run");
    let plan = microshard::backend::plan(&spec, &opts).unwrap();
    let found = backend::up(&plan, &up_options(30, 30)).await.unwrap();
    assert!(found.standin);
    assert_eq!(found.chunks.len(), 2, "{:?}", found.chunks);
    let n = usertable_count(&found.entry_uri).await;
    assert_eq!(n, 0, "the existing backend drops ycsb first");
    backend::down(&found, &microshard::events::Discard)
        .await
        .unwrap();
    // Still running: down never touches what it did not start.
    let (role, _) = cluster::detect_role(&cluster.entry_uri).await.unwrap();
    assert_eq!(role, cluster::DetectedRole::Mongos);
}

async fn standalone_case(root: &Path, bin: &Path, slot: u32) {
    let shipped = TopologySpec::load("single").unwrap();
    assert_eq!(shipped.kind, microshard::topology::Kind::Standalone);
    let path = write_topology(
        root,
        "t-single",
        &format!(
            "name = \"t-single\"\nkind = \"standalone\"\nbase_port = {}\nmongod_args = [\"--command-log\", \"{{dir}}/commands.log\"]\n",
            base_port(slot)
        ),
    );
    let plan = process_plan(&path, root, bin);
    let cluster = backend::up(&plan, &up_options(60, 60)).await.unwrap();
    assert!(cluster.entry_uri.contains("directConnection=true"));
    let log = command_log(&plan, "single");
    let init = find_cmd(&log, "replSetInitiate");
    assert_eq!(init.len(), 1);
    assert_eq!(init[0]["args"]["replSetInitiate"]["_id"], "rs0");
    let client = mongodb::Client::with_uri_str(&cluster.entry_uri)
        .await
        .unwrap();
    client
        .database("ycsb")
        .collection::<Document>("usertable")
        .insert_one(doc! {"_id": "user1"})
        .await
        .unwrap();
    backend::down(&cluster, &microshard::events::Discard)
        .await
        .unwrap();
    assert_nothing_left(&cluster);
}

async fn error_cases(root: &Path, bin: &Path, slot: u32) {
    let port = base_port(slot);
    // Port taken: refused before anything starts.
    let holder = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let path = write_topology(
        root,
        "t-taken",
        &format!("name = \"t-taken\"\nkind = \"standalone\"\nbase_port = {port}\n"),
    );
    let plan = process_plan(&path, root, bin);
    let err = format!(
        "{:#}",
        backend::up(&plan, &up_options(10, 10)).await.unwrap_err()
    );
    assert!(
        err.contains(&format!("port {port} (for single) is already in use")),
        "{err}"
    );
    assert!(!backend::state::state_path(&plan.run_id).exists());
    drop(holder);

    // A member that exits at start: its log tail is in the message.
    let path = write_topology(
        root,
        "t-exits",
        &format!(
            "name = \"t-exits\"\nkind = \"standalone\"\nbase_port = {port}\nmongod_args = [\"--noSuchFlag\"]\n"
        ),
    );
    let plan = process_plan(&path, root, bin);
    let err = format!(
        "{:#}",
        backend::up(&plan, &up_options(20, 20)).await.unwrap_err()
    );
    assert!(
        err.contains("single (localhost:") && err.contains("exited during start-up"),
        "{err}"
    );
    assert!(
        err.contains("noSuchFlag"),
        "the log tail names the flag: {err}"
    );
    assert!(
        !plan.run_dir.exists(),
        "run directory removed after a failed start"
    );

    // A primary that never appears, with a short bound.
    let path = write_topology(
        root,
        "t-noprimary",
        &format!(
            "name = \"t-noprimary\"\nkind = \"standalone\"\nbase_port = {port}\nmongod_args = [\"--primary-delay-ms\", \"600000\"]\n"
        ),
    );
    let plan = process_plan(&path, root, bin);
    let err = format!(
        "{:#}",
        backend::up(&plan, &up_options(3, 3)).await.unwrap_err()
    );
    assert!(
        err.contains("a writable primary for replica set rs0 on single (localhost:")
            && err.contains("within 3 s"),
        "{err}"
    );
    assert!(port_free(port), "the member was stopped after the failure");
    assert!(!plan.run_dir.exists());
}

fn cli_cases(root: &Path, bin: &Path, slot: u32) {
    let state = std::env::var("MICROSHARD_STATE_DIR").unwrap();
    // Binary missing: exit status 2, one line naming the flag.
    let empty = root.join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let out = Command::new(crate::util::bin())
        .args(["up", "single", "--backend", "process", "--bin-dir"])
        .arg(&empty)
        .env("MICROSHARD_STATE_DIR", &state)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mongod not found in --bin-dir"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    // Dry run prints the plan and starts nothing; it checks the ports as `up` does, so it gets
    // free ones (whatever else runs on this machine).
    let dry_port = crate::util::free_base_port(12);
    let out = Command::new(crate::util::bin())
        .args([
            "up",
            "microshard-4",
            "--dry-run",
            "--backend",
            "process",
            "--base-port",
            &dry_port.to_string(),
            "--bin-dir",
        ])
        .arg(bin)
        .env("MICROSHARD_STATE_DIR", &state)
        .output()
        .unwrap();
    crate::util::assert_ok(&out, "up --dry-run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("--configdb cfg/localhost:{}", dry_port + 5)),
        "{text}"
    );
    assert!(text.contains("sh3"), "{text}");

    // SIGINT in the middle of bring-up leaves nothing behind.
    let port = base_port(slot);
    let path = write_topology(
        root,
        "t-sigint",
        &format!(
            "name = \"t-sigint\"\nkind = \"sharded\"\nshards_per_host = 2\nbase_port = {port}\nmongod_args = [\"--primary-delay-ms\", \"600000\"]\n"
        ),
    );
    let run_dir = root.join("sigint-run");
    let mut child = Command::new(crate::util::bin())
        .args([
            "up",
            path.to_str().unwrap(),
            "--backend",
            "process",
            "--timeout",
            "120",
            "--bin-dir",
        ])
        .arg(bin)
        .arg("--run-dir")
        .arg(&run_dir)
        .env("MICROSHARD_STATE_DIR", &state)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until all three mongods were started (recorded with pids), bounded.
    let mut pids: Vec<(u32, u16)> = Vec::new();
    for _ in 0..300 {
        std::thread::sleep(Duration::from_millis(100));
        pids = recorded_pids(Path::new(&state), "t-sigint");
        if pids.len() == 3 {
            break;
        }
    }
    assert_eq!(pids.len(), 3, "bring-up did not reach the mongods in time");
    std::thread::sleep(Duration::from_millis(500));
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let mut status = None;
    for _ in 0..600 {
        if let Some(s) = child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some(status) = status else {
        let _ = child.kill();
        panic!("microshard up did not exit within 60 s of SIGINT");
    };
    let mut stderr = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    for (pid, p) in &pids {
        assert!(
            !backend::process::pid_alive(*pid, *p),
            "pid {pid} survived SIGINT; {stderr}"
        );
        assert!(port_free(*p), "port {p} still taken");
    }
    assert!(!run_dir.exists(), "run directory survived SIGINT");
    assert!(
        recorded_pids(Path::new(&state), "t-sigint").is_empty(),
        "state file survived"
    );
}

fn recorded_pids(state: &Path, name: &str) -> Vec<(u32, u16)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(state) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if v["name"] != name {
            continue;
        }
        for m in v["members"].as_array().into_iter().flatten() {
            if let Some(pid) = m["pid"].as_u64() {
                out.push((pid as u32, m["port"].as_u64().unwrap_or(0) as u16));
            }
        }
    }
    out
}

#[test]
fn process_backend_end_to_end() {
    let _env = crate::util::one_at_a_time();
    let root = crate::util::state_root();
    let state = root.path().join("state");
    let bin = standin_bin_dir(root.path());
    if !standin_ready(&bin) {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        standalone_case(root.path(), &bin, 0).await;
        sharded_case(root.path(), &bin, 2, 1).await;
        sharded_case(root.path(), &bin, 4, 2).await;
        error_cases(root.path(), &bin, 3).await;
        // A run nobody tore down is found by `down --all` through its state file.
        let path = write_topology(
            root.path(),
            "t-crash",
            &format!(
                "name = \"t-crash\"\nkind = \"standalone\"\nbase_port = {}\n",
                base_port(3)
            ),
        );
        let plan = process_plan(&path, root.path(), &bin);
        let crashed = backend::up(&plan, &up_options(60, 60)).await.unwrap();
        let done = backend::down_all_where(|n| n == "t-crash", &microshard::events::Discard)
            .await
            .unwrap();
        assert!(done.iter().any(|l| l.contains("t-crash")), "{done:?}");
        assert_nothing_left(&crashed);
    });
    cli_cases(root.path(), &bin, 3);
    crate::util::assert_no_files_in(&state);
}
