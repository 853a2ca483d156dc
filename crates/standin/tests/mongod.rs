//! The stand-in as a plain mongod, driven by the official `mongodb` driver.

use crate::util::*;
use futures::TryStreamExt;
use microshard_standin::{self as standin, Role, StandinConfig};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

/// A plain stand-in mongod with `extra` flags, and a client connected to it.
async fn mongod(extra: &str) -> (standin::StandinHandle, Client) {
    let h = start(Role::Mongod, extra);
    let client = direct(&h).await;
    (h, client)
}

#[tokio::test]
async fn crud_round_trip() {
    let (h, client) = mongod("").await;
    let coll = client.database("ycsb").collection::<Document>("usertable");
    for i in 0..10 {
        coll.insert_one(doc! {"_id": format!("user{i:02}"), "field0": format!("v{i}")})
            .await
            .unwrap();
    }
    let got = coll
        .find_one(doc! {"_id": "user03"})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.get_str("field0").unwrap(), "v3");

    let r = coll
        .update_one(doc! {"_id": "user03"}, doc! {"$set": {"field0": "new"}})
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    let got = coll
        .find_one(doc! {"_id": "user03"})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.get_str("field0").unwrap(), "new");

    let r = coll
        .update_one(doc! {"_id": "user99"}, doc! {"$set": {"field0": "up"}})
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(r.upserted_id, Some(Bson::String("user99".into())));

    // Scan: YCSB's range read, sorted by _id, limited, with a projection.
    let ids = scan_ids(&coll, "user05", 3).await;
    assert_eq!(ids, vec!["user05", "user06", "user07"]);

    let r = coll.delete_one(doc! {"_id": "user00"}).await.unwrap();
    assert_eq!(r.deleted_count, 1);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 10);
    let r = coll
        .delete_many(doc! {"_id": {"$in": ["user01", "user02", "nope"]}})
        .await
        .unwrap();
    assert_eq!(r.deleted_count, 2);
    assert_eq!(coll.estimated_document_count().await.unwrap(), 8);

    // Write concerns are carried without error, as a standalone does for w:1/majority/j.
    let wc = mongodb::options::WriteConcern::builder()
        .w(mongodb::options::Acknowledgment::Majority)
        .journal(true)
        .build();
    coll.insert_one(doc! {"_id": "wc"})
        .write_concern(wc)
        .await
        .unwrap();
    coll.delete_one(doc! {"_id": "wc"}).await.unwrap();

    let dup = coll.insert_one(doc! {"_id": "user05"}).await.unwrap_err();
    assert_eq!(code_of(&dup), Some(11000));
    h.shutdown().await;
}

#[tokio::test]
async fn cursors_span_several_batches() {
    let (h, client) = mongod("").await;
    let coll = client.database("d").collection::<Document>("c");
    let docs: Vec<Document> = (0..1000).map(|i| doc! {"_id": i, "x": i % 7}).collect();
    let r = coll.insert_many(docs).await.unwrap();
    assert_eq!(r.inserted_ids.len(), 1000);
    let all: Vec<Document> = coll
        .find(doc! {})
        .batch_size(64)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 1000);
    assert!(
        all.windows(2)
            .all(|w| w[0].get_i32("_id").unwrap() < w[1].get_i32("_id").unwrap())
    );
    let status = client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    let getmores = status
        .get_document("opcounters")
        .unwrap()
        .get_i64("getmore")
        .unwrap();
    assert!(getmores >= 15, "expected many getMores, got {getmores}");
    h.shutdown().await;
}

#[tokio::test]
async fn unordered_insert_continues_after_duplicate() {
    let (h, client) = mongod("").await;
    let coll = client.database("d").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 2}).await.unwrap();
    let docs = vec![doc! {"_id": 1}, doc! {"_id": 2}, doc! {"_id": 3}];
    let e = coll
        .insert_many(docs.clone())
        .ordered(false)
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(11000));
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 3);
    coll.drop().await.unwrap();
    coll.insert_one(doc! {"_id": 2}).await.unwrap();
    let e = coll.insert_many(docs).await.unwrap_err();
    assert_eq!(code_of(&e), Some(11000));
    // Ordered: stops at the duplicate, so _id 3 is not inserted.
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 2);
    h.shutdown().await;
}

#[tokio::test]
async fn hello_and_build_info_say_standin() {
    let (h, client) = mongod("").await;
    let admin = client.database("admin");
    let hello = admin.run_command(doc! {"hello": 1}).await.unwrap();
    assert!(hello.get_bool("isWritablePrimary").unwrap());
    assert!(hello.get_bool("microshardStandin").unwrap());
    assert_eq!(hello.get_i32("maxWireVersion").unwrap(), 21);
    let bi = admin.run_command(doc! {"buildInfo": 1}).await.unwrap();
    assert!(bi.get_str("version").unwrap().ends_with("-standin"));
    assert!(bi.get_bool("microshardStandin").unwrap());
    let opts = admin.run_command(doc! {"getCmdLineOpts": 1}).await.unwrap();
    let argv = opts.get_array("argv").unwrap();
    assert_eq!(argv[0], Bson::String("mongod".into()));
    h.shutdown().await;
}

#[tokio::test]
async fn refusals_carry_real_codes() {
    let (h, client) = mongod("").await;
    let db = client.database("d");
    for (cmd, want) in [
        (doc! {"frobnicate": 1}, 59),
        (doc! {"find": "c", "filter": 5}, 14),
        (doc! {"find": "c", "filter": {"a": {"$nope": 1}}}, 2),
        (doc! {"insert": 5, "documents": []}, 73),
        (doc! {"insert": "c", "documents": 5}, 14),
        (
            doc! {"update": "c", "updates": [{"q": {}, "u": {"$bogus": {"a": 1}}}]},
            9,
        ),
        (doc! {"replSetInitiate": {}}, 76),
        (doc! {"replSetGetStatus": 1}, 76),
        (doc! {"getMore": 12345_i64, "collection": "c"}, 43),
        (doc! {"find": "c", "limit": -1}, 2),
    ] {
        let admin = matches!(
            cmd.keys().next().map(String::as_str),
            Some("replSetInitiate" | "replSetGetStatus")
        );
        let target = if admin {
            client.database("admin")
        } else {
            db.clone()
        };
        let res = target.run_command(cmd.clone()).await;
        let code = match res {
            Ok(d) => d
                .get_array("writeErrors")
                .ok()
                .and_then(|w| w.first())
                .and_then(|e| e.as_document())
                .and_then(|e| e.get_i32("code").ok()),
            Err(e) => code_of(&e),
        };
        assert_eq!(code, Some(want), "{cmd}");
    }
    db.collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    let e = db.run_command(doc! {"create": "c"}).await.unwrap_err();
    assert_eq!(code_of(&e), Some(48));
    h.shutdown().await;
}

#[tokio::test]
async fn dbpath_is_checked_and_locked() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let cfg = StandinConfig::from_args(
        Role::Mongod,
        &args(&format!("--port 0 --dbpath {}", missing.display())),
    )
    .unwrap();
    let err = standin::spawn(cfg).unwrap_err();
    assert!(err.to_string().contains("NonExistentPath"), "{err}");
    let cfg = StandinConfig::from_args(
        Role::Mongod,
        &args(&format!("--port 0 --dbpath {}", dir.path().display())),
    )
    .unwrap();
    let first = standin::spawn(cfg.clone()).unwrap();
    let err = standin::spawn(cfg.clone()).unwrap_err();
    assert!(err.to_string().contains("DBPathInUse"), "{err}");
    first.shutdown().await;
    // Released on shutdown.
    let again = standin::spawn(cfg).unwrap();
    again.shutdown().await;
}

#[tokio::test]
async fn log_and_command_log_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mongod.log");
    let cmds = dir.path().join("cmds.jsonl");
    let (h, client) = mongod(&format!(
        "--logpath {} --command-log {}",
        log.display(),
        cmds.display()
    ))
    .await;
    let port = h.port();
    client
        .database("d")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": "a"})
        .await
        .unwrap();
    h.shutdown().await;
    let text = std::fs::read_to_string(&log).unwrap();
    let waiting = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["id"] == 23016)
        .expect("Waiting for connections line");
    assert_eq!(waiting["msg"], "Waiting for connections");
    assert_eq!(waiting["attr"]["port"], port);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&cmds)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let insert = lines
        .iter()
        .find(|v| v["cmd"] == "insert")
        .expect("insert logged");
    assert_eq!(insert["db"], "d");
    assert_eq!(insert["args"]["documents"][0]["_id"], "a");
}

#[tokio::test]
async fn shutdown_command_stops_the_server() {
    let (h, client) = mongod("").await;
    let _ = client
        .database("admin")
        .run_command(doc! {"shutdown": 1, "force": true})
        .await;
    tokio::time::timeout(std::time::Duration::from_secs(10), h.wait())
        .await
        .expect("server stopped");
}

#[tokio::test]
async fn run_serves_the_callers_listener_until_shutdown_completes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StandinConfig::from_args(
        Role::Mongod,
        &args(&format!("--dbpath {}", dir.path().display())),
    )
    .unwrap();
    // The caller binds, so it knows the port before the server starts (cfg says 27017: unused).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(standin::run(listener, cfg.clone(), stopped));
    let client = Client::with_uri_str(format!("mongodb://127.0.0.1:{port}/?directConnection=true"))
        .await
        .unwrap();
    let hello = client
        .database("admin")
        .run_command(doc! {"hello": 1})
        .await
        .unwrap();
    assert!(hello.get_bool("microshardStandin").unwrap());
    let opts = client
        .database("admin")
        .run_command(doc! {"getCmdLineOpts": 1})
        .await
        .unwrap();
    assert_eq!(
        opts.get_document("parsed")
            .unwrap()
            .get_document("net")
            .unwrap()
            .get_i32("port")
            .unwrap(),
        i32::from(port),
        "it names itself by the listener's port"
    );
    // Holding the --dbpath lock while it runs.
    let err = standin::spawn(cfg.clone()).unwrap_err();
    assert!(err.to_string().contains("DBPathInUse"), "{err}");
    stop.send(()).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), server)
        .await
        .expect("run returned")
        .unwrap()
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err(),
        "the listener is closed"
    );
    // The lock is released once run returns.
    let mut again = cfg;
    again.port = 0;
    standin::spawn(again).unwrap().shutdown().await;
}

#[tokio::test]
async fn run_returns_on_the_shutdown_command_and_refuses_bad_config() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let cfg = StandinConfig::new(Role::Mongod);
    let server = tokio::spawn(standin::run(listener, cfg, std::future::pending::<()>()));
    let client = Client::with_uri_str(format!("mongodb://127.0.0.1:{port}/?directConnection=true"))
        .await
        .unwrap();
    let _ = client
        .database("admin")
        .run_command(doc! {"shutdown": 1, "force": true})
        .await;
    tokio::time::timeout(std::time::Duration::from_secs(10), server)
        .await
        .expect("run returned")
        .unwrap()
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let cfg = StandinConfig::from_args(
        Role::Mongod,
        &args(&format!("--dbpath {}", missing.display())),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = standin::run(listener, cfg, std::future::pending::<()>())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("NonExistentPath"), "{err}");
}

#[tokio::test]
async fn unix_socket_under_the_given_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let (h, _) = mongod(&format!("--unixSocketPrefix {}", dir.path().display())).await;
    let sock = dir.path().join(format!("mongodb-{}.sock", h.port()));
    assert!(sock.exists());
    let encoded = sock.display().to_string().replace('/', "%2F");
    let client = Client::with_uri_str(format!("mongodb://{encoded}/?directConnection=true"))
        .await
        .unwrap();
    let pong = client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    assert_eq!(pong.get_f64("ok").unwrap(), 1.0);
    h.shutdown().await;
    assert!(!sock.exists(), "socket file removed on shutdown");
}

/// This process's resident size in kB (the in-process stand-in shares it).
fn own_rss_kb() -> i64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn server_status_reports_resident_memory_in_mib_as_mongod_does() {
    let (h, client) = mongod("").await;
    let before = own_rss_kb();
    let s = admin(&client, doc! {"serverStatus": 1}).await.unwrap();
    let after = own_rss_kb();
    let mem = s.get_document("mem").unwrap();
    // mongod's `mem.resident` and `mem.virtual` are Int32 MiB (manual, serverStatus `mem`).
    let resident = i64::from(mem.get_i32("resident").unwrap());
    assert!(mem.get_i32("virtual").unwrap() > 0);
    let (low, high) = (before.min(after) / 1024, before.max(after) / 1024);
    assert!(
        (low * 3 / 4..=high * 4 / 3 + 1).contains(&resident),
        "resident {resident} MiB, this process {before}..{after} kB"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn write_concern_error_answers_applied_writes_with_wtimeout() {
    let (h, client) = mongod("--write-concern-error").await;
    let db = client.database("d");
    let reply = db
        .run_command(doc! {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").unwrap(), 2);
    let wce = reply.get_document("writeConcernError").unwrap();
    assert_eq!(wce.get_i32("code").unwrap(), 64);
    assert_eq!(wce.get_str("codeName").unwrap(), "WriteConcernFailed");
    assert!(
        wce.get_document("errInfo")
            .unwrap()
            .get_bool("wtimeout")
            .unwrap()
    );
    // The driver's own write paths turn it into an error; the write itself stays applied.
    let e = db
        .collection::<Document>("c")
        .update_one(doc! {"_id": 1}, doc! {"$set": {"x": 1}})
        .await
        .unwrap_err();
    assert!(
        matches!(
            e.kind.as_ref(),
            mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteConcernError(w)) if w.code == 64
        ),
        "{e}"
    );
    let got = db
        .collection::<Document>("c")
        .find_one(doc! {"_id": 1})
        .await
        .unwrap();
    assert_eq!(got.unwrap().get_i32("x").unwrap(), 1);
    h.shutdown().await;
}
