//! A shard whose primary steps down is an election, not a server stall (`docs/reliability.md`,
//! "A set that failed over"): stand-in shards of three members behind `mongos`,
//! sh0 given `--step-down` (its primary steps down 2 s after its first query, and the set has no
//! primary for 6 s; then member 1 is primary). A `compare` cell through `mongos` ends invalid
//! with the election named after the shard, and its server counters come from the new primary;
//! a plain `run` discovers the shard's members through `mongos` and says the same. The
//! checkpoint-like stall (members answer, a primary stands) staying degraded "the server
//! stalled" is `reliability_failfast::a_stall_while_probes_answer_is_degraded_and_a_frozen_process_invalid`.

use crate::util::{Root, free_base_port};

/// A sharded topology of two 3-member shards; member 0 wins each first election, and sh0's
/// primary steps down 2 s after its first query, for 6 s.
fn failing_over(root: &Root) -> (String, u16) {
    let port = free_base_port(9);
    let text = format!(
        "name = \"velect\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_members = 3\nbase_port = {port}\n\
         mongod_args = [\"--election-winner\", \"0\", \"--election-delay-ms\", \"300\", \"--step-down\", \"sh0:2000/6000\"]\n"
    );
    let file = root.path.join("velect.toml");
    std::fs::write(&file, text).expect("write topology");
    (file.display().to_string(), port)
}

fn json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

/// The reasons of a validity block, as one string.
fn reasons(validity: &serde_json::Value) -> String {
    validity["reasons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["message"].as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn a_shard_that_fails_over_is_an_election_with_counters_from_the_new_primary() {
    let _one = crate::util::one_at_a_time();
    let root = Root::new();
    let (topo, _) = failing_over(&root);
    let results = root.path.join("results");
    let out = root
        .cmd()
        .args(["compare", "--topologies", &topo, "--scenarios", "S1,S2"])
        .args(["--duration", "14s", "--threads", "4", "--records", "600"])
        .args(["-p", "target=400", "-p", "microshard.busyhost=1"])
        .args(["--backend", "process", "--bin-dir", &root.bin_dir()])
        .arg("--out")
        .arg(&results)
        .output()
        .expect("compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sh0 has no primary since"),
        "the watch says so as it happens:\n{stderr}"
    );
    let dir = crate::util::run_dir(&results);
    let cell = json(&dir.join("cells/velect/S2-r1.json"));
    let validity = &cell["summary"]["validity"];
    assert_eq!(validity["verdict"], "invalid", "{validity}");
    let why = reasons(validity);
    assert!(
        why.contains("sh0 had no primary from") && why.contains(": election"),
        "{why}"
    );
    assert!(
        why.contains("then sh0-1 ("),
        "the new primary is named: {why}"
    );
    assert!(
        !why.contains("the server stalled"),
        "an election is not a server stall: {why}"
    );
    let members: Vec<(&str, &str)> = cell["server"]["members"]
        .as_array()
        .expect("server members")
        .iter()
        .filter_map(|m| Some((m["name"].as_str()?, m["role"].as_str()?)))
        .collect();
    assert!(
        members.contains(&("sh0-1", "shard")) && !members.contains(&("sh0", "shard")),
        "the counters after the election come from sh0's new primary: {members:?}"
    );
    let new_primary = cell["server"]["members"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["name"] == "sh0-1")
        .expect("sh0-1");
    assert!(
        new_primary["before"].is_object() && new_primary["after"].is_object(),
        "both readings from the same member: {new_primary}"
    );
    root.assert_nothing_left();
}

#[test]
fn a_run_through_mongos_names_the_shard_that_had_no_primary() {
    let _one = crate::util::one_at_a_time();
    let root = Root::new();
    let (topo, port) = failing_over(&root);
    let up = root.output(&[
        "up",
        &topo,
        "--backend",
        "process",
        "--bin-dir",
        &root.bin_dir(),
    ]);
    crate::util::assert_ok(&up, "up");
    let uri = format!("mongodb://localhost:{port}/ycsb?w=1");
    let load = root.output(&[
        "load",
        "--uri",
        &uri,
        "-p",
        "recordcount=300",
        "--threads",
        "4",
    ]);
    crate::util::assert_ok(&load, "load");
    let json_path = root.path.join("run.json");
    let out = root
        .cmd()
        .args(["run", "--uri", &uri, "--threads", "4", "--json"])
        .arg(&json_path)
        .args(["-p", "recordcount=300", "-p", "operationcount=0"])
        .args(["-p", "maxexecutiontime=12", "-p", "microshard.busyhost=1"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "an invalid run:\n{stderr}");
    let doc = json(&json_path);
    assert_eq!(doc["validity"]["verdict"], "invalid", "{}", doc["validity"]);
    let why = reasons(&doc["validity"]);
    assert!(
        why.contains("sh0 had no primary from") && why.contains(": election"),
        "{why}"
    );
    let spans = &doc["timeline"]["no_primary"];
    assert_eq!(spans[0]["set"], "sh0", "{spans}");
    assert!(
        spans[0]["duration_s"].as_f64().is_some_and(|d| d >= 4.0),
        "{spans}"
    );
    let down = root.output(&["down", "--all"]);
    assert!(down.status.success());
    root.assert_nothing_left();
}
