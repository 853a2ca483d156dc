//! End-to-end: `runner::execute` against a stand-in, asserting what reached the server
//! (its data and its command log) rather than what the runner says about itself.

use std::collections::{BTreeSet, HashMap};

use crate::util::{Server, command_name, on_usertable, workload};
use microshard::experiment::crosscheck::cross_check;
use microshard::experiment::metrics::StatusSnapshot;
use microshard::runner::{ExecuteOptions, Phase, execute};
use microshard::workload::{Properties, build_key_name};
use mongodb::bson::RawBsonRef;
use mongodb::bson::spec::BinarySubtype;

fn props(files: &[&str], overrides: &[String]) -> Properties {
    let mut p = Properties::new();
    for f in files {
        p.load_file(&workload(f)).expect("workload file loads");
    }
    for o in overrides {
        p.apply_override(o).expect("override");
    }
    p
}

fn quiet(uri: &str) -> ExecuteOptions {
    ExecuteOptions {
        uri: Some(uri.to_string()),
        ..ExecuteOptions::default()
    }
}

async fn load(server: &Server, file: &str, records: u64, extra: &[&str]) {
    let mut o = vec![format!("recordcount={records}"), "threadcount=4".into()];
    o.extend(extra.iter().map(|s| s.to_string()));
    let p = props(&[file], &o);
    execute(&p, Phase::Load, &quiet(&server.uri()))
        .await
        .expect("load succeeds");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_s1_writes_ycsb_keys_and_document_shapes() {
    let server = Server::start();
    load(&server, "S1", 300, &[]).await;
    let docs = server.documents().await;
    assert_eq!(docs.len(), 300);

    let expected: BTreeSet<String> = (0..300).map(|k| build_key_name(k, 1, false)).collect();
    assert!(expected.contains("user6284781860667377211"));
    let mut seen = BTreeSet::new();
    let p = props(&["S1"], &[]);
    let fieldcount: usize = p.parse_or("fieldcount", 10usize).unwrap();
    let fieldlength: usize = p.parse_or("fieldlength", 100usize).unwrap();
    for d in &docs {
        let elems: Vec<(&str, RawBsonRef)> = d.iter().map(|e| e.unwrap()).collect();
        assert_eq!(elems[0].0, "_id", "_id comes first");
        let RawBsonRef::String(id) = elems[0].1 else {
            panic!("_id is not a string: {:?}", elems[0].1)
        };
        seen.insert(id.to_string());
        assert_eq!(elems.len(), 1 + fieldcount);
        let mut names = BTreeSet::new();
        for (name, value) in &elems[1..] {
            names.insert(name.to_string());
            match value {
                RawBsonRef::Binary(b) => {
                    assert_eq!(b.subtype, BinarySubtype::Generic);
                    assert_eq!(b.bytes.len(), fieldlength);
                }
                other => panic!("{name} is not binary: {other:?}"),
            }
        }
        let want: BTreeSet<String> = (0..fieldcount).map(|i| format!("field{i}")).collect();
        assert_eq!(names, want);
    }
    assert_eq!(seen, expected, "exactly YCSB's hashed keys 0..recordcount");

    // Without batching every insert is its own command.
    let cmds = server.commands();
    let inserts = on_usertable(&cmds, "insert");
    assert_eq!(inserts.len(), 300);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_load_sends_full_batches_and_flushes_the_tail() {
    let server = Server::start();
    // 4 clients × 25 inserts with batches of 7: three full batches and a tail of 4 per client.
    load(&server, "S1", 100, &["batchsize=7"]).await;
    assert_eq!(
        server.documents().await.len(),
        100,
        "the tail batch reached the server"
    );
    let cmds = server.commands();
    let sizes: Vec<usize> = on_usertable(&cmds, "insert")
        .iter()
        .map(|c| c["documents"].as_array().map_or(0, Vec::len))
        .collect();
    let mut counts: HashMap<usize, usize> = HashMap::new();
    for s in &sizes {
        *counts.entry(*s).or_default() += 1;
    }
    assert_eq!(counts.get(&7), Some(&12), "{sizes:?}");
    assert_eq!(counts.get(&4), Some(&4), "{sizes:?}");
    assert_eq!(sizes.iter().sum::<usize>(), 100);
    let unordered = on_usertable(&cmds, "insert")
        .iter()
        .all(|c| c["ordered"] == serde_json::Value::Bool(false));
    assert!(unordered, "batches are sent unordered");
    server.handle.shutdown().await;
}

/// Counts the commands a run sent, by kind.
fn mix(cmds: &[serde_json::Value]) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for c in cmds {
        let name = command_name(c);
        if c.get(&name).and_then(|v| v.as_str()) == Some("usertable") {
            *out.entry(name).or_default() += 1;
        }
    }
    out
}

async fn run_mix(file: &str, records: u64, ops: u64) -> (HashMap<String, usize>, Server) {
    let server = Server::start();
    load(&server, file, records, &[]).await;
    let before = server.commands().len();
    let p = props(
        &[file],
        &[
            format!("recordcount={records}"),
            format!("operationcount={ops}"),
            "threadcount=4".into(),
        ],
    );
    let doc = execute(&p, Phase::Run, &quiet(&server.uri()))
        .await
        .expect("run succeeds")
        .document;
    let _ = doc;
    let cmds = server.commands();
    (mix(&cmds[before..]), server)
}

fn share(m: &HashMap<String, usize>, name: &str, ops: u64) -> f64 {
    *m.get(name).unwrap_or(&0) as f64 / ops as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_workloads_a_to_f_send_their_operation_mix() {
    // (file, reads, updates, inserts, scans): shares of commands; RMW is a find plus an update.
    let cases: [(&str, f64, f64, f64, f64); 6] = [
        ("workloada", 0.5, 0.5, 0.0, 0.0),
        ("workloadb", 0.95, 0.05, 0.0, 0.0),
        ("workloadc", 1.0, 0.0, 0.0, 0.0),
        ("workloadd", 0.95, 0.0, 0.05, 0.0),
        ("workloade", 0.0, 0.0, 0.05, 0.95),
        ("workloadf", 1.0, 0.5, 0.0, 0.0),
    ];
    let ops = 1000u64;
    for (file, r, u, i, s) in cases {
        let (m, server) = run_mix(file, 200, ops).await;
        // Scans are finds too; reads and scans are told apart by their filter.
        let finds = share(&m, "find", ops);
        let tol = 0.07;
        assert!(
            (finds - (r + s)).abs() <= tol,
            "{file}: find share {finds} vs {}",
            r + s
        );
        assert!((share(&m, "update", ops) - u).abs() <= tol, "{file}: {m:?}");
        assert!((share(&m, "insert", ops) - i).abs() <= tol, "{file}: {m:?}");
        server.handle.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_s2_to_s5_send_their_operation_mix() {
    // S2 update .9/read .1; S3 read .65/insert .25/update .1; S4 read .9/insert+update .1; S5 read 1.
    let ops = 1000u64;
    for (file, reads) in [("S2", 0.1), ("S3", 0.65), ("S4", 0.9), ("S5", 1.0)] {
        let (m, server) = run_mix(file, 200, ops).await;
        let finds = share(&m, "find", ops);
        assert!((finds - reads).abs() <= 0.07, "{file}: {m:?}");
        let writes = share(&m, "update", ops) + share(&m, "insert", ops);
        assert!((writes - (1.0 - reads)).abs() <= 0.07, "{file}: {m:?}");
        server.handle.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_id_reads_use_one_in_query() {
    let server = Server::start();
    load(&server, "workloadc", 200, &[]).await;
    let before = server.commands().len();
    let p = props(
        &["workloadc"],
        &[
            "recordcount=200".into(),
            "operationcount=50".into(),
            "readbatchsize=5".into(),
            "threadcount=2".into(),
        ],
    );
    let doc = execute(&p, Phase::Run, &quiet(&server.uri()))
        .await
        .expect("run")
        .document;
    let _ = doc;
    let cmds = server.commands();
    let finds = on_usertable(&cmds[before..], "find");
    assert_eq!(finds.len(), 50, "one query per multi-id read");
    for f in finds {
        let ids = f["filter"]["_id"]["$in"]
            .as_array()
            .unwrap_or_else(|| panic!("not an $in read: {f}"));
        assert_eq!(ids.len(), 5);
    }
    server.handle.shutdown().await;
}

/// `opcounters.query` and `opcounters.getmore` of `server`.
async fn query_and_getmore(server: &Server) -> (i64, i64) {
    let status = server
        .command(mongodb::bson::doc! {"serverStatus": 1})
        .await;
    let op = status.get_document("opcounters").expect("opcounters");
    (
        op.get_i64("query").expect("query"),
        op.get_i64("getmore").expect("getmore"),
    )
}

/// Seed 2's measurement: a Q20M read of 10 ids is one round trip. The stand-in keeps a cursor
/// open after a full first batch as mongod does, so a read without its `limit` would count a
/// `getMore` each (`crates/standin/tests/cursors.rs`; `docs/mongodb-versions.md`, "Conformance").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q20m_reads_of_ten_ids_cost_one_query_and_no_getmore() {
    let server = Server::start();
    let sizes = ["recordcount=300".to_string(), "threadcount=4".to_string()];
    execute(
        &props(&["Q20M"], &sizes),
        Phase::Load,
        &quiet(&server.uri()),
    )
    .await
    .expect("load");
    let before = query_and_getmore(&server).await;
    let run = [
        "recordcount=300".into(),
        "operationcount=40".into(),
        "readbatchsize=10".into(),
        "threadcount=2".into(),
    ];
    let doc = execute(&props(&["Q20M"], &run), Phase::Run, &quiet(&server.uri()))
        .await
        .expect("run")
        .document;
    assert_eq!(doc.operations, 40);
    let after = query_and_getmore(&server).await;
    assert_eq!(after.0 - before.0, 40, "one query per read");
    assert_eq!(
        after.1 - before.1,
        0,
        "no getMore: the limit closes the cursor"
    );
    // The cross-check agrees with the client: one query per READ, no getMore.
    let check = cross_check(&doc, &counters(before, after), false);
    assert!(check.warnings.is_empty(), "{check:?}");
    // The same 40 reads without `limit`: the stand-in keeps each full first batch's cursor
    // open as mongod does, the driver sends a getMore each, and the cross-check says so.
    let before = query_and_getmore(&server).await;
    unlimited_reads(&server, 40, 10).await;
    let after = query_and_getmore(&server).await;
    let check = cross_check(&doc, &counters(before, after), false);
    assert_eq!(
        check.warnings,
        vec!["the server counted 2.0 round trips (find + getMore) per READ: an extra getMore each"],
        "{check:?}"
    );
    server.handle.shutdown().await;
}

/// The server's counter deltas between two [`query_and_getmore`] readings.
fn counters(before: (i64, i64), after: (i64, i64)) -> StatusSnapshot {
    let d = |a: i64, b: i64| u64::try_from(a - b).unwrap_or(0);
    StatusSnapshot {
        query: d(after.0, before.0),
        getmore: d(after.1, before.1),
        ..StatusSnapshot::default()
    }
}

/// `reads` reads of `n` existing ids each as microshard sent them before it set `limit`:
/// `find {_id: {$in: ids}}` with `batchSize n` and no limit, each drained to its end.
async fn unlimited_reads(server: &Server, reads: usize, n: usize) {
    use futures::TryStreamExt;
    use mongodb::bson::{Bson, Document, doc};
    let client = mongodb::Client::with_uri_str(server.uri())
        .await
        .expect("client");
    let coll = client.database("ycsb").collection::<Document>("usertable");
    let first: Vec<Document> = coll
        .find(doc! {})
        .limit(n as i64)
        .await
        .expect("find")
        .try_collect()
        .await
        .expect("ids");
    let ids: Vec<Bson> = first.iter().filter_map(|d| d.get("_id").cloned()).collect();
    for _ in 0..reads {
        let find = coll
            .find(doc! {"_id": {"$in": ids.clone()}})
            .batch_size(n as u32);
        let got: Vec<Document> = find.await.expect("find").try_collect().await.expect("read");
        assert_eq!(got.len(), n);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_counts_only_inserts_that_succeeded() {
    let server = Server::start();
    load(&server, "S1", 50, &[]).await;
    // The same keys again: every insert is a duplicate, so, as in YCSB, nothing counts.
    let p = props(&["S1"], &["recordcount=50".into(), "threadcount=2".into()]);
    let doc = execute(&p, Phase::Load, &quiet(&server.uri()))
        .await
        .expect("a duplicate load still reports")
        .document;
    assert_eq!(doc.operations, 0, "failed inserts are not operations");
    assert_eq!(doc.throughput, Some(0.0), "never Infinity");
    let first = execute(
        &props(
            &["S1"],
            &[
                "recordcount=100".into(),
                "insertstart=50".into(),
                "insertcount=50".into(),
            ],
        ),
        Phase::Load,
        &quiet(&server.uri()),
    )
    .await
    .expect("a load of new keys")
    .document;
    assert_eq!(first.operations, 50);
}
