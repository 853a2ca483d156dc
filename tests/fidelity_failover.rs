//! Failovers counted right, and the routing tax taken apart, against stand-ins on the process
//! backend (`docs/mongodb-versions.md`, "Conformance"): a shard whose set fails over during a
//! cell is counted over all its members, each of which counted only what it served as primary,
//! and the reads that then find nothing are explained; a `compare --ceiling` of `single`,
//! `microshard-1u` and `microshard-1` splits the routing tax into the mongos hop and the
//! sharding overhead.

use serde_json::Value;

use crate::util::{Root, free_base_port, one_at_a_time, run_dir};

fn json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

/// The data operations a member's counters moved by over the cell.
fn ops_delta(member: &Value) -> u64 {
    let ops = |s: &Value| {
        ["insert", "query", "update", "delete", "getmore"]
            .iter()
            .map(|k| s[*k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    ops(&member["after"]).saturating_sub(ops(&member["before"]))
}

#[test]
fn a_shard_that_fails_over_is_counted_over_its_members_and_its_lost_reads_explained() {
    let _one = one_at_a_time();
    let root = Root::new();
    let port = free_base_port(9);
    // Two 3-member shards; sh0's primary steps down 2 s after its first query, for 3 s, then
    // sh0-1 is primary. The stand-in does not replicate: sh0-1 holds none of the data, as a
    // new primary after a rollback of unreplicated writes would not.
    let text = format!(
        "name = \"vcount\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_members = 3\nbase_port = {port}\n\
         mongod_args = [\"--election-winner\", \"0\", \"--election-delay-ms\", \"300\", \"--step-down\", \"sh0:2000/3000\"]\n"
    );
    let topo = root.path.join("vcount.toml");
    std::fs::write(&topo, text).expect("write topology");
    let results = root.path.join("results");
    let out = root
        .cmd()
        .args(["compare", "--topologies"])
        .arg(&topo)
        .args([
            "--scenarios",
            "S1,S2",
            "--duration",
            "10s",
            "--threads",
            "4",
        ])
        .args([
            "--records",
            "600",
            "-p",
            "target=400",
            "-p",
            "microshard.busyhost=1",
        ])
        .args([
            "--backend",
            "process",
            "--bin-dir",
            &root.bin_dir(),
            "--out",
        ])
        .arg(&results)
        .output()
        .expect("compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let cell = json(&run_dir(&results).join("cells/vcount/S2-r1.json"));
    let members = cell["server"]["members"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let summed = members
        .iter()
        .find(|m| m["set_counts"].is_object())
        .unwrap_or_else(|| panic!("a shard counted over its set: {members:?}\n{stderr}"));
    let set = &summed["set_counts"];
    assert_eq!(set["set"], "sh0", "{set}");
    let names: Vec<&str> = (set["members"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    for m in ["sh0", "sh0-1", "sh0-2"] {
        assert!(names.contains(&m), "{m} summed: {names:?}");
    }
    let total = set["ops"].as_u64().expect("the set's operations");
    assert!(
        total > ops_delta(summed),
        "the old primary's operations before the election are counted too: {total} vs {}",
        ops_delta(summed)
    );
    let share = (cell["server"]["shards"].as_array().into_iter().flatten())
        .find(|s| s["shard"] == "sh0")
        .expect("sh0's share");
    assert!(share["ops_share"].as_f64().is_some(), "{share}");
    let said = cell["server"]["warnings"].to_string();
    assert!(
        said.contains(
            "sh0 failed over during the cell: its operations are summed over its members"
        ),
        "{said}"
    );
    let warnings = cell["warnings"].to_string();
    assert!(
        warnings
            .contains("found no record after a failover on this topology (sh0 (S2 r1)): with w=1"),
        "{warnings}"
    );
    root.assert_nothing_left();
}

#[test]
fn microshard_1u_splits_the_routing_tax_into_the_hop_and_the_sharding_overhead() {
    let _one = one_at_a_time();
    let root = Root::new();
    let port = free_base_port(16);
    let results = root.path.join("results");
    let out = root
        .cmd()
        .args([
            "compare",
            "--ceiling",
            "--slo",
            "p99=150ms",
            "--precision",
            "10%",
        ])
        .args(["--topologies", "single,microshard-1u,microshard-1"])
        .args([
            "--scenarios",
            "S5",
            "--records",
            "500",
            "--step-duration",
            "1s",
        ])
        .args(["--backend", "process", "--bin-dir", &root.bin_dir()])
        .arg("--mongod-arg=--service-time-us=10000")
        .arg("--mongod-arg=--workers=3")
        .args([
            "-p",
            "microshard.busyhost=1",
            "--base-port",
            &port.to_string(),
        ])
        .arg("--out")
        .arg(&results)
        .output()
        .expect("compare --ceiling");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    crate::util::assert_ok(&out, "compare --ceiling");
    for line in [
        "S5 routing tax (microshard-1 vs single): ",
        "S5 mongos hop (microshard-1u vs single): ",
        "S5 sharding overhead (microshard-1 vs microshard-1u): ",
    ] {
        assert!(all.contains(line), "{line}\n{all}");
    }
    assert!(
        !all.contains("sharding gain (microshard-1u"),
        "microshard-1u is no larger micro-shard topology\n{all}"
    );
    let cell = json(&run_dir(&results).join("cells/microshard-1u/S5-r1.json"));
    assert_eq!(
        cell["topology"]["shard_collection"], false,
        "{}",
        cell["topology"]
    );
    let sharded = json(&run_dir(&results).join("cells/microshard-1/S5-r1.json"));
    assert_eq!(sharded["topology"]["shard_collection"], true);
    root.assert_nothing_left();
}
