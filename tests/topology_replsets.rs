//! End-to-end on the process backend with the stand-in: a 3-member config server and 3-member
//! shards whose first elections member 0 does not win (as can happen with MongoDB), behind two
//! routers listed in the entry URI; data written through the entry lands on both shards. Also a
//! set that never elects: the time-out names every member's last answer and the set's
//! `replSetGetStatus`. And the members' descriptor limit is raised before they start.
//!
//! One test function, sequential: the state directory is set once through the environment
//! before anything else runs, and the machine has two cores.

use std::path::{Path, PathBuf};

use crate::util::{
    insert_users, process_plan, standin_bin_dir, up_options, usertable_count, write_topology,
};
use microshard::backend::{self, MemberState};
use microshard::topology::{MemberRole, Plan};

fn base_port(slot: u32) -> u16 {
    // 12000-19999: below topology_process's ports (20000+) and the ephemeral range; three
    // slots of 20 per process, spread by pid.
    (12000 + (std::process::id() % 130) * 60 + slot * 20) as u16
}

fn plan_for(root: &Path, bin: &Path, name: &str, body: &str) -> Plan {
    process_plan(&write_topology(root, name, body), root, bin)
}

/// `(soft, hard)` open-files limit of a running process.
fn nofile(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let nums: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (nums[0], nums[1])
}

async fn member_0_loses_every_election(root: &Path, bin: &Path) {
    let plan = plan_for(
        root,
        bin,
        "t-rs3",
        &format!(
            "name = \"t-rs3\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_members = 3\nbase_port = {}\nmongod_args = [\"--election-winner\", \"1\", \"--election-delay-ms\", \"300\"]\n[config_servers]\nmembers = 3\n[mongos]\ncount = 2\n",
            base_port(0)
        ),
    );
    let cluster = backend::up(&plan, &up_options(60, 60)).await.unwrap();
    assert!(cluster.standin);
    assert!(
        cluster
            .members
            .iter()
            .all(|m| m.state == MemberState::Ready)
    );
    // Member 1 of every set won; the assembly waited for it rather than for member 0.
    let primaries: Vec<(&str, &str)> = cluster
        .primaries
        .iter()
        .map(|(s, m)| (s.as_str(), m.as_str()))
        .collect();
    assert_eq!(
        primaries,
        [("cfg", "cfg1"), ("sh0", "sh0-1"), ("sh1", "sh1-1")],
        "{:?}",
        cluster.primaries
    );
    assert_eq!(
        cluster.chunks.keys().collect::<Vec<_>>(),
        ["sh0", "sh1"],
        "{:?}",
        cluster.chunks
    );
    // Both routers are in the entry URI.
    let routers: Vec<String> = plan
        .members_with(MemberRole::Mongos)
        .map(|m| m.member_host.clone())
        .collect();
    assert_eq!(routers.len(), 2);
    assert_eq!(
        cluster.entry_uri,
        format!("mongodb://{}/", routers.join(","))
    );
    // The entry works: data written through it lands on both shards' primaries.
    insert_users(&cluster.entry_uri, 200).await;
    assert_eq!(usertable_count(&cluster.entry_uri).await, 200);
    let primaries: Vec<&str> = cluster.data_primaries().map(|m| m.name.as_str()).collect();
    assert_eq!(primaries, ["sh0-1", "sh1-1"]);
    assert_eq!(cluster.data_members().count(), 6);
    // The cluster-wide default write concern is readable for the experiment to record.
    let wc = microshard::cluster::default_write_concern(&cluster.entry_uri)
        .await
        .unwrap();
    assert!(wc.source.is_some(), "{wc:?}");
    let mut per_shard = Vec::new();
    for primary in primaries {
        let m = cluster.members.iter().find(|m| m.name == primary).unwrap();
        per_shard.push(usertable_count(&m.direct_uri).await);
    }
    assert_eq!(per_shard.iter().sum::<u64>(), 200, "{per_shard:?}");
    assert!(per_shard.iter().all(|n| *n > 0), "{per_shard:?}");
    // Every member was started with enough descriptors for its connections.
    for m in &cluster.members {
        let (soft, hard) = nofile(m.handle.pid().unwrap());
        assert!(
            soft >= backend::process::MEMBER_NOFILE.min(hard),
            "{}: soft nofile {soft} (hard {hard})",
            m.name
        );
    }
    backend::down(&cluster, &microshard::events::Discard)
        .await
        .unwrap();
    assert!(!cluster.plan.run_dir.exists());
    assert!(!cluster.state_file.exists());
}

async fn a_set_that_never_elects_times_out_with_its_status(root: &Path, bin: &Path) {
    let plan = plan_for(
        root,
        bin,
        "t-noelect",
        &format!(
            "name = \"t-noelect\"\nkind = \"sharded\"\nshards_per_host = 1\nbase_port = {}\nmongod_args = [\"--election-delay-ms\", \"600000\"]\n[config_servers]\nmembers = 2\n",
            base_port(1)
        ),
    );
    let err = backend::up(&plan, &up_options(60, 3)).await.unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("a writable primary for replica set cfg"),
        "{msg}"
    );
    // Each member's last hello, then the set's replSetGetStatus.
    assert!(msg.contains("cfg0: isWritablePrimary=false"), "{msg}");
    assert!(msg.contains("cfg1: isWritablePrimary=false"), "{msg}");
    let cfg0 = plan.members.iter().find(|m| m.name == "cfg0").unwrap();
    assert!(
        msg.contains(&format!(
            "replSetGetStatus: set cfg [{}=SECONDARY",
            cfg0.member_host
        )),
        "{msg}"
    );
    // The failed bring-up left nothing behind.
    assert!(!plan.run_dir.exists());
}

/// `microshard compare` on a topology of 3-member sets whose member 0 loses every election: the
/// experiment brings it up, loads and runs through the entry, and writes its cell.
fn compare_runs_on_sets_member_0_does_not_lead(root: &Path, bin: &Path) {
    let topo = root.join("t-rs3cmp.toml");
    std::fs::write(
        &topo,
        "name = \"t-rs3cmp\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_members = 3\n[config_servers]\nmembers = 3\n",
    )
    .unwrap();
    let state = root.join("state-cli");
    let results = root.join("results");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_microshard"))
        .env("MICROSHARD_STATE_DIR", &state)
        .env("CI", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("compare")
        .arg("--topologies")
        .arg(&topo)
        .args(["--scenarios", "S1", "--backend", "process"])
        .arg("--bin-dir")
        .arg(bin)
        .arg("--mongod-arg=--election-winner=1")
        .arg("--mongod-arg=--election-delay-ms=300")
        .args(["--records", "200", "--duration", "1s", "--threads", "4"])
        .args(["--base-port", &base_port(2).to_string(), "-q"])
        .arg("--out")
        .arg(&results)
        .output()
        .unwrap();
    crate::util::assert_ok(&out, "compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let files = crate::util::files_under(&results);
    let cells: Vec<&PathBuf> = files
        .iter()
        .filter(|p| p.to_string_lossy().contains("/cells/") && p.ends_with("S1-r1.json"))
        .collect();
    assert_eq!(cells.len(), 1, "{files:?}\n{stderr}");
    let cell: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cells[0]).unwrap()).unwrap();
    assert_eq!(cell["summary"]["standin"], true, "{cell}");
    let throughput = cell["summary"]["throughput"].as_f64().unwrap_or(0.0);
    assert!(
        throughput > 0.0,
        "no operations went through the entry: {cell}"
    );
    crate::util::assert_no_files_in(&state);
}

#[test]
fn replica_sets_of_several_members_on_the_process_backend() {
    let _env = crate::util::one_at_a_time();
    let root = crate::util::state_root();
    let state = root.path().join("state");
    let bin = standin_bin_dir(root.path());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        member_0_loses_every_election(root.path(), &bin).await;
        a_set_that_never_elects_times_out_with_its_status(root.path(), &bin).await;
    });
    compare_runs_on_sets_member_0_does_not_lead(root.path(), &bin);
    crate::util::assert_no_files_in(&state);
}
