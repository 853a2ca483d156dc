//! End-to-end: the MongoDB binding's status mapping and the runner's stop conditions, against a stand-in.

use std::sync::Arc;

use crate::util::{Server, on_usertable};
use microshard::db::{BindingSettings, MongoBinding};
use microshard::measure::Status;
use microshard::runner::{ExecuteOptions, Phase, execute};
use microshard::workload::{FieldValue, Properties};

fn fv(name: &str, bytes: &[u8]) -> FieldValue {
    FieldValue {
        name: Arc::from(name),
        bytes: bytes.to_vec(),
    }
}

async fn binding(server: &Server, extra: &[(&str, &str)]) -> MongoBinding {
    let mut props = Properties::new();
    props
        .apply_override(&format!("mongodb.url={}", server.uri()))
        .unwrap();
    for (k, v) in extra {
        props.apply_override(&format!("{k}={v}")).unwrap();
    }
    let settings = BindingSettings::from_properties(&props, 2, None).expect("settings");
    MongoBinding::connect_with(settings, microshard::events::Discard::sink())
        .await
        .expect("connects")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_follow_ycsb_sync_binding() {
    let server = Server::start();
    let b = binding(&server, &[]).await;
    let mut c = b.client("usertable");
    let keys = [
        "user1".to_string(),
        "user2".to_string(),
        "user3".to_string(),
    ];
    for k in &keys[..2] {
        let o = c
            .insert(k, &[fv("field0", b"aaa"), fv("field1", b"bbb")])
            .await;
        assert_eq!(o.status, Status::Ok);
    }
    // Duplicate _id: ERROR with the server's code as the class.
    let dup = c.insert("user1", &[fv("field0", b"x")]).await;
    assert_eq!(dup.status, Status::Error);
    assert_eq!(
        dup.error_class.map(|e| e.label()),
        Some("server_code_11000".to_string())
    );

    let mut out = Vec::new();
    let o = c
        .read(&keys[..1], &Some(vec![Arc::from("field1")]), Some(&mut out))
        .await;
    assert_eq!(o.status, Status::Ok);
    assert_eq!(
        out,
        vec![(
            "user1".to_string(),
            vec![("field1".to_string(), b"bbb".to_vec())]
        )]
    );
    assert_eq!(
        c.read(&keys[2..], &None, None).await.status,
        Status::NotFound
    );
    // Multi-id: NOT_FOUND when fewer documents come back, OK when all do.
    assert_eq!(c.read(&keys, &None, None).await.status, Status::NotFound);
    assert_eq!(c.read(&keys[..2], &None, None).await.status, Status::Ok);

    assert_eq!(
        c.update("user2", &[fv("field0", b"new")]).await.status,
        Status::Ok
    );
    assert_eq!(
        c.update("user9", &[fv("field0", b"new")]).await.status,
        Status::NotFound
    );

    let mut rows = Vec::new();
    assert_eq!(
        c.scan("user0", 10, &None, Some(&mut rows)).await.status,
        Status::Ok
    );
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].1[0], ("field0".to_string(), b"new".to_vec()));
    // Nothing at or after the start key: ERROR, as YCSB's synchronous binding says.
    assert_eq!(c.scan("user9", 10, &None, None).await.status, Status::Error);

    assert_eq!(c.delete("user1").await.status, Status::Ok);
    assert_eq!(c.delete("user1").await.status, Status::NotFound);

    let cmds = server.commands();
    let scans: Vec<_> = on_usertable(&cmds, "find")
        .into_iter()
        .filter(|f| f["filter"]["_id"].get("$gte").is_some())
        .collect();
    assert_eq!(scans.len(), 2);
    assert_eq!(
        scans[0]["sort"]["_id"],
        serde_json::json!({"$numberInt": "1"})
    );
    assert!(scans[0].get("limit").is_some(), "{}", scans[0]);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upsert_inserts_replace_and_batch() {
    let server = Server::start();
    let b = binding(&server, &[("mongodb.upsert", "true")]).await;
    let mut c = b.client("usertable");
    assert_eq!(
        c.insert("user1", &[fv("field0", b"a")]).await.status,
        Status::Ok
    );
    assert_eq!(
        c.insert("user1", &[fv("field0", b"b")]).await.status,
        Status::Ok
    );
    let docs = server.documents().await;
    assert_eq!(docs.len(), 1, "the second insert replaced the first");

    let b = binding(&server, &[("mongodb.upsert", "true"), ("batchsize", "2")]).await;
    let mut c = b.client("usertable");
    assert_eq!(
        c.insert("user1", &[fv("field0", b"c")]).await.status,
        Status::BatchedOk
    );
    assert_eq!(
        c.insert("user2", &[fv("field0", b"d")]).await.status,
        Status::Ok
    );
    assert_eq!(
        c.insert("user3", &[fv("field0", b"e")]).await.status,
        Status::BatchedOk
    );
    assert_eq!(c.pending_inserts(), 1);
    assert_eq!(c.cleanup().await.status, Status::Ok);
    assert_eq!(server.documents().await.len(), 3);
    server.handle.shutdown().await;
}

/// A batched upsert whose reply carries a `writeConcernError` (the stand-in's
/// `--write-concern-error`: the writes applied, the write concern missed) fails its batch, as the
/// driver's own write paths and Java YCSB's `bulkWrite` do (`docs/mongodb-versions.md`, "Conformance").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_concern_error_fails_a_batched_upsert() {
    let server = Server::start_with(|cfg| cfg.write_concern_error = true);
    let batched = ["mongodb.upsert=true", "batchsize=10", "threadcount=1"];
    let doc = execute(&run_props(&server, &batched), Phase::Load, &quiet())
        .await
        .expect("the load reports")
        .document;
    // The first batch of 10 fails; a load thread stops at its first failed insert, as YCSB's does.
    let insert = doc.measurement("INSERT").expect("INSERT measured");
    let count = |status| {
        let found = insert.statuses.iter().find(|s| s.status == status);
        found.map_or(0, |s| s.count)
    };
    assert_eq!(
        (count(Status::Error), count(Status::Ok)),
        (1, 0),
        "{:?}",
        insert.statuses
    );
    assert_eq!(
        doc.server.error_classes.get("server_code_64"),
        Some(&1),
        "{:?}",
        doc.server.error_classes
    );
    assert_eq!(
        server.documents().await.len(),
        10,
        "the write itself applied"
    );
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_and_url_come_from_threads_and_legacy_properties() {
    let server = Server::start();
    let b = binding(&server, &[("mongodb.readPreference", "primary_preferred")]).await;
    let url = &b.settings().resolved.url;
    assert!(url.contains("maxPoolSize=2"), "{url}");
    assert!(url.contains("readPreference=primaryPreferred"), "{url}");
    let facts = b.server_facts().await;
    assert!(facts.standin);
    assert_eq!(facts.role.as_deref(), Some("mongod"));
    server.handle.shutdown().await;
}

fn run_props(server: &Server, extra: &[&str]) -> Properties {
    let mut p = Properties::new();
    for kv in [
        format!("mongodb.url={}", server.uri()),
        "recordcount=50".to_string(),
        "threadcount=2".to_string(),
    ] {
        p.apply_override(&kv).unwrap();
    }
    for kv in extra {
        p.apply_override(kv).unwrap();
    }
    p
}

fn quiet() -> ExecuteOptions {
    ExecuteOptions {
        ..ExecuteOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlimited_run_stops_at_maxexecutiontime() {
    let server = Server::start();
    execute(&run_props(&server, &[]), Phase::Load, &quiet())
        .await
        .expect("load");
    let p = run_props(&server, &["operationcount=0", "maxexecutiontime=1"]);
    let doc = execute(&p, Phase::Run, &quiet())
        .await
        .expect("run")
        .document;
    assert!(doc.operations > 0);
    assert!(doc.runtime_ms >= 1000, "{}", doc.runtime_ms);
    assert!(
        doc.runtime_ms < 30_000,
        "stopped, not hung: {}",
        doc.runtime_ms
    );
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_paces_clients_and_records_intended_latency() {
    let server = Server::start();
    execute(&run_props(&server, &[]), Phase::Load, &quiet())
        .await
        .expect("load");
    // 40 ops at 100 ops/s over 2 clients: the schedule alone takes ~0.4 s.
    let p = run_props(&server, &["operationcount=40", "target=100"]);
    let doc = execute(&p, Phase::Run, &quiet())
        .await
        .expect("run")
        .document;
    assert_eq!(doc.operations, 40);
    assert!(doc.runtime_ms >= 350, "paced: {} ms", doc.runtime_ms);
    assert!(
        doc.measurement("Intended-READ").is_some(),
        "intended latency recorded with a target: {:?}",
        doc.measurements.iter().map(|m| &m.name).collect::<Vec<_>>()
    );
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_error_rate_stops_a_failing_run() {
    let server = Server::start();
    // Nothing loaded: every scan finds nothing, which is ERROR.
    let p = run_props(
        &server,
        &[
            "operationcount=0",
            "maxexecutiontime=60",
            "readproportion=0",
            "updateproportion=0",
            "scanproportion=1",
            "microshard.maxerrorrate=0.5",
        ],
    );
    let started = std::time::Instant::now();
    let doc = execute(&p, Phase::Run, &quiet())
        .await
        .expect("a result")
        .document;
    assert_eq!(
        doc.validity.verdict,
        microshard::measure::validity::Verdict::Invalid
    );
    assert!(
        doc.validity.summary().contains("microshard.maxerrorrate"),
        "{:?}",
        doc.validity
    );
    assert!(
        doc.server
            .run_stopped
            .as_deref()
            .is_some_and(|r| r.contains("microshard.maxerrorrate")),
        "{:?}",
        doc.server
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(50));
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dataintegrity_verifies_every_read() {
    let server = Server::start();
    let integrity = ["dataintegrity=true", "fieldlength=40"];
    execute(&run_props(&server, &integrity), Phase::Load, &quiet())
        .await
        .expect("load");
    let mut extra = vec![
        "operationcount=60",
        "readproportion=1",
        "updateproportion=0",
    ];
    extra.extend(integrity);
    let doc = execute(&run_props(&server, &extra), Phase::Run, &quiet())
        .await
        .expect("run")
        .document;
    let verify = doc.measurement("VERIFY").expect("VERIFY measured");
    assert_eq!(verify.count, 60);
    let ok = verify
        .statuses
        .iter()
        .find(|s| s.status == Status::Ok)
        .map(|s| s.count);
    assert_eq!(ok, Some(60), "{:?}", verify.statuses);

    // Corrupt every record: verification must now fail.
    server
        .command(mongodb::bson::doc! {
            "update": "usertable",
            "updates": [{
                "q": {},
                "u": {"$set": {"field0": mongodb::bson::Binary {
                    subtype: mongodb::bson::spec::BinarySubtype::Generic,
                    bytes: b"corrupted".to_vec(),
                }}},
                "multi": true,
            }],
        })
        .await;
    let doc = execute(&run_props(&server, &extra), Phase::Run, &quiet())
        .await
        .expect("run")
        .document;
    let verify = doc.measurement("VERIFY").expect("VERIFY measured");
    assert!(
        verify.statuses.iter().any(|s| s.status != Status::Ok),
        "{:?}",
        verify.statuses
    );
    server.handle.shutdown().await;
}
