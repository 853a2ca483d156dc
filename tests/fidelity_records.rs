//! What docs/mongodb-versions.md and docs/result-schema.md say a cell holds is in a real cell
//! file, for a sharded and a standalone stand-in topology;
//! and a member that refuses a flag the user gave says so in its own words, exit 2.

use crate::util::Root;

/// The fields every watched server's snapshot carries on the stand-in (7.0: no `tcmalloc`
/// section, the pre-8.0.16 eviction counter on mongods).
fn check_snapshot(topology: &str, member: &serde_json::Value, snapshot: &serde_json::Value) {
    let at = format!("{topology}: {} {snapshot}", member["name"]);
    assert!(snapshot["connections"].is_u64(), "{at}");
    assert!(
        snapshot["connections_available"].as_u64().unwrap_or(0) > 0,
        "connections.available is sampled: {at}"
    );
    // 8.0+ only; absent, never false, on a server that does not report it.
    assert!(snapshot.get("tcmalloc_per_cpu_caches").is_none(), "{at}");
    let mongos = topology == "vsharded" && member["role"] == "entry";
    if mongos {
        assert!(snapshot.get("app_eviction_counter").is_none(), "{at}");
    } else {
        assert_eq!(
            snapshot["app_eviction_counter"], "pages evicted by application threads",
            "{at}"
        );
        assert!(snapshot["app_evictions"].is_u64(), "{at}");
    }
}

#[test]
fn cells_hold_every_field_the_docs_say_they_hold() {
    let root = Root::new();
    let (sharded, _) = root.topology(true);
    let (single, _) = root.topology(false);
    // A plain mongod (no `--replSet`): the one deployment without a default write concern.
    let plain = root.path.join("vplain.toml");
    std::fs::write(
        &plain,
        format!(
            "name = \"vplain\"\nkind = \"standalone\"\nbaseline = \"standalone\"\nbase_port = {}\n",
            crate::util::free_base_port(1)
        ),
    )
    .expect("topology");
    let results = root.path.join("results");
    let out = root.output(&[
        "compare",
        "--topologies",
        &format!("{single},{sharded},{}", plain.display()),
        "--scenarios",
        "S1,S2",
        "--duration",
        "1s",
        "--records",
        "200",
        "--threads",
        "2",
        "--standin",
        "--out",
        &results.display().to_string(),
        "-q",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(3)), "{stderr}");
    let cells = crate::util::cells_under(&results);
    assert_eq!(cells.len(), 6, "{stderr}");
    for c in &cells {
        let topology = c["cell"]["topology"].as_str().unwrap_or_default();
        let topology = ["vsharded", "vplain", "vsingle"]
            .into_iter()
            .find(|t| topology.contains(t))
            .unwrap_or_default();
        let at = format!("{topology} {}", c["cell"]["scenario"]);
        // The plan it was brought up from (caches, limits, memory) and the versions.
        assert!(c["topology"]["memory"].is_array(), "{at}");
        assert!(
            c["server_versions"]
                .as_object()
                .is_some_and(|v| !v.is_empty()),
            "{at}"
        );
        // The write concern the client had (pinned) and the server's default (R1).
        assert_eq!(c["summary"]["write_concern"], "w=1", "{at}");
        assert_eq!(c["result"]["server"]["write_concern"], "w=1", "{at}");
        let dwc = &c["default_write_concern"];
        if topology != "vplain" {
            // mongos and rs0 have one (the stand-in answers as 5.0+ does: implicit majority).
            assert_eq!(dwc["w"], "majority", "{at}: {dwc}");
            assert_eq!(dwc["source"], "implicit", "{at}: {dwc}");
        } else {
            assert!(
                dwc["not_read"]
                    .as_str()
                    .is_some_and(|r| r.contains("51300")),
                "{at}: {dwc}"
            );
        }
        // Server metrics: every watched server's snapshots, the primaries at the cell's start.
        let server = &c["server"];
        let members = server["members"].as_array().cloned().unwrap_or_default();
        assert!(!members.is_empty(), "{at}: {server}");
        for m in &members {
            for when in ["before", "after"] {
                check_snapshot(topology, m, &m[when]);
            }
        }
        let primaries = server["primaries"].as_object().cloned().unwrap_or_default();
        if topology == "vsharded" {
            assert_eq!(primaries.len(), 2, "{at}: {server}");
            for (set, member) in &primaries {
                assert!(
                    members
                        .iter()
                        .any(|m| m["role"] == "shard" && m["name"] == *member),
                    "{at}: primary {member} of {set} is the watched shard member"
                );
            }
            // Shard shares read ycsb.usertable (N6): both shards hold documents after the load.
            let shards = server["shards"].as_array().cloned().unwrap_or_default();
            assert_eq!(shards.len(), 2, "{at}: {server}");
        } else {
            assert!(primaries.is_empty(), "{at}: {server}");
        }
    }
}

/// `compare --standin --mongod-arg=--bogus`: the member's own line, its log file, exit 2.
#[test]
fn a_member_refusing_a_flag_the_user_gave_is_quoted_and_bad_input() {
    let root = Root::new();
    let (single, _) = root.topology(false);
    let out = root.output(&[
        "compare",
        "--standin",
        "--topologies",
        &single,
        "--scenarios",
        "S1",
        "--records",
        "50",
        "--mongod-arg=--bogus",
        "--out",
        &root.path.join("results").display().to_string(),
        "-q",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for part in [
        "exited during start-up",
        "Error parsing command line: unrecognised option '--bogus'",
        "stdout.log",
        "--bogus comes from the topology's mongod_args or --mongod-arg",
    ] {
        assert!(stderr.contains(part), "{part:?} missing: {stderr}");
    }
    root.assert_nothing_left();
}

/// Issue #31: a server that speaks the protocol and counts nothing (the stand-in's
/// `--zero-counters`, as a wire-compatible server that is not MongoDB answered) is not taken at
/// its word: each cell records the client against the server and says the server's figures are
/// not used, and so does the report; a server that counts (the next run) agrees, ratio 1.
#[test]
fn a_server_that_counts_nothing_is_said_so_in_the_cells_and_the_report() {
    let root = Root::new();
    let (single, _) = root.topology(false);
    let run = |results: &std::path::Path, extra: &[&str]| {
        let results = results.display().to_string();
        let mut args = vec![
            "compare",
            "--out",
            &results,
            "--standin",
            "--topologies",
            &single,
            "--scenarios",
            "S1,S2",
            "--duration",
            "1s",
            "--records",
            "300",
            "--threads",
            "2",
            "-p",
            "microshard.busyhost=1",
            "-q",
        ];
        args.extend(extra);
        let out = root.output(&args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(matches!(out.status.code(), Some(0) | Some(3)), "{stderr}");
        stderr
    };
    let said = "the server reports no operation counts: its figures are not used";
    let zero = root.path.join("zero");
    // 60,000,000 MiB: 57 TiB of resident memory, more than any machine this test runs on.
    let stderr = run(
        &zero,
        &[
            "--mongod-arg=--zero-counters",
            "--mongod-arg=--resident-mib=60000000",
        ],
    );
    let cells = crate::util::cells_under(&zero);
    assert_eq!(cells.len(), 2, "{stderr}");
    for c in &cells {
        let at = format!("{}", c["cell"]["scenario"]);
        assert_eq!(c["crosscheck"]["server_counts_used"], false, "{at}: {c}");
        assert!(
            c["warnings"]
                .as_array()
                .is_some_and(|w| w.iter().any(|w| w == said)),
            "{at}: {}",
            c["warnings"]
        );
    }
    let report =
        std::fs::read_to_string(crate::util::run_dir(&zero).join("report.md")).expect("report.md");
    assert!(report.contains(said), "{report}");
    let implausible = "reports a resident memory of 57.2 TiB, above this machine's";
    assert!(report.contains(implausible), "{report}");
    for c in &cells {
        for m in c["server"]["members"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            assert!(m["after"].get("resident_bytes").is_none(), "{m}");
        }
    }

    let counted = root.path.join("counted");
    let stderr = run(&counted, &[]);
    for c in crate::util::cells_under(&counted) {
        let check = &c["crosscheck"];
        assert_eq!(check["server_counts_used"], true, "{stderr}\n{check}");
        assert!(check.get("warnings").is_none(), "{check}");
        let rows = check["rows"].as_array().cloned().unwrap_or_default();
        let main = match c["summary"]["phase"].as_str() {
            Some("load") => "insert",
            _ => "update",
        };
        let row = rows
            .iter()
            .find(|r| r["counter"] == main)
            .unwrap_or_else(|| panic!("no {main} row: {check}"));
        let ratio = row["ratio"].as_f64().unwrap_or(0.0);
        assert!((ratio - 1.0).abs() <= 0.1, "{check}");
    }
}
