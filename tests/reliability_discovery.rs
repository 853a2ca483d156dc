//! The members a run against `--uri` finds and probes, as real deployments present them: a
//! cluster whose members advertise names this machine cannot resolve, as Docker Compose and
//! Kubernetes clusters do (`listShards` names `sh1-0:27018`, a service name inside the cluster's
//! network), is watched through mongos with the member named before the run, instead of the
//! member called dead at 10 s and the run invalid; a server that answers `hello` with
//! CommandNotFound (4.4.0, 4.4.1) is probed with `isMaster`; a server with fewer connections
//! left than the run has threads is said before the run.

use mongodb::bson::doc;

use crate::util::{Root, StandinProcess, assert_valid_but_for_toy_size, runtime};

/// Two one-member shard sets behind a mongos, the second shard's entry in `config.shards`
/// then rewritten to a name that does not resolve (`.invalid` never does): the mongos keeps the
/// connection it made at `addShard`, `listShards` advertises the name.
fn cluster_with_unresolvable_shard(root: &Root) -> (Vec<StandinProcess>, u16) {
    let (servers, port) = crate::util::sharded_standins(root, &[]);
    let cfg_port = servers[3].port;
    runtime().block_on(async {
        let cfg_uri = format!("mongodb://127.0.0.1:{cfg_port}/?directConnection=true");
        let cfg_client = mongodb::Client::with_uri_str(cfg_uri)
            .await
            .expect("client");
        let shards = cfg_client
            .database("config")
            .collection::<mongodb::bson::Document>("shards");
        let renamed = doc! {"$set": {"host": "sh1/sh1-0.invalid:27018"}};
        shards
            .update_one(doc! {"_id": "sh1"}, renamed)
            .await
            .expect("rename");
    });
    (servers, port)
}

/// Loads 300 records at `uri`, then runs S2 on them for 4 s (longer than the 2 s after which a
/// silent member makes a run invalid), which must exit 0: its stderr and result file.
fn load_then_run(root: &Root, uri: &str) -> (String, std::path::PathBuf) {
    let load = root.output(&[
        "load",
        "-P",
        "workloads/S1",
        "-p",
        "recordcount=300",
        "--uri",
        uri,
    ]);
    assert_eq!(load.status.code(), Some(0), "{load:?}");
    let json = root.path.join("run.json");
    let run = root
        .cmd()
        .args(["run", "-P", "workloads/S2", "-p", "recordcount=300"])
        .args([
            "-p",
            "operationcount=0",
            "-p",
            "maxexecutiontime=4",
            "--uri",
            uri,
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    (stderr, json)
}

#[test]
fn an_advertised_name_that_does_not_resolve_is_named_before_the_run_not_called_dead() {
    let root = Root::new();
    let (_servers, port) = cluster_with_unresolvable_shard(&root);
    let uri = format!("mongodb://127.0.0.1:{port}/ycsb?w=1");
    let (stderr, json) = load_then_run(&root, &uri);
    assert!(
        stderr.contains(
            "sh1-0.invalid:27018 (sh1) advertised by listShards does not resolve here; probed through mongos only"
        ),
        "{stderr}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("JSON");
    assert_valid_but_for_toy_size(&doc["validity"]);
    let probed: Vec<String> = doc["timeline"]["probed"]
        .as_array()
        .expect("probed")
        .iter()
        .map(|p| p.as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(probed.len(), 2, "{probed:?}");
    assert!(
        probed[0].starts_with("mongos ") && probed[1].starts_with("sh0 "),
        "{probed:?}"
    );
}

#[test]
fn a_server_without_hello_is_probed_with_is_master() {
    let root = Root::new();
    let server = StandinProcess::start_with(&root.path.join("db"), &["--no-hello"]);
    let uri = server.uri();
    let (stderr, json) = load_then_run(&root, &uri);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("JSON");
    assert_valid_but_for_toy_size(&doc["validity"]);
    assert_eq!(
        doc["timeline"]["member_outages"],
        serde_json::json!([]),
        "{doc}"
    );
    assert_eq!(doc["server"]["role"], "mongod", "{doc}");
    assert!(!stderr.contains("connections available"), "{stderr}");
}

#[test]
fn a_server_with_fewer_connections_left_than_threads_is_said_before_the_run() {
    let root = Root::new();
    let server = StandinProcess::start_with(&root.path.join("db"), &["--maxConns=8"]);
    let uri = server.uri();
    let out = root.output(&[
        "load",
        "-P",
        "workloads/S1",
        "-p",
        "recordcount=100",
        "-p",
        "threadcount=16",
        "--uri",
        &uri,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("fewer than this run's 16 threads"),
        "{stderr}"
    );
    assert!(stderr.contains("net.maxIncomingConnections"), "{stderr}");
}
