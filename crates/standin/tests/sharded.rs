//! The stand-in as mongos over shard stand-ins: metadata on the config server, real routing, refusals.

use crate::util::*;
use futures::TryStreamExt;
use microshard_standin::Role;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};
use std::time::{Duration, Instant};

async fn per_shard_counts(c: &Cluster) -> Vec<u64> {
    let mut out = Vec::new();
    for s in &c.shards {
        out.push(usertable_count(s).await);
    }
    out
}

async fn spread_and_route(n: usize) {
    let c = Cluster::start(n, "", "").await;
    let coll = c
        .client
        .database("ycsb")
        .collection::<Document>("usertable");
    let docs: Vec<Document> = (0..400)
        .map(|i| doc! {"_id": format!("user{i:04}"), "field0": i})
        .collect();
    coll.insert_many(docs).await.unwrap();
    for i in 400..440 {
        coll.insert_one(doc! {"_id": format!("user{i:04}"), "field0": i})
            .await
            .unwrap();
    }
    let counts = per_shard_counts(&c).await;
    assert_eq!(counts.iter().sum::<u64>(), 440, "{counts:?}");
    for k in &counts {
        assert!(*k > 440 / (n as u64) / 2, "uneven spread {counts:?}");
    }

    // Chunks per shard, counted the way the harness does.
    let cfg = direct(&c.config).await;
    let meta = cfg
        .database("config")
        .collection::<Document>("collections")
        .find_one(doc! {"_id": "ycsb.usertable"})
        .await
        .unwrap()
        .unwrap();
    assert!(meta.get("timestamp").is_some());
    let uuid = meta.get("uuid").unwrap().clone();
    let groups: Vec<Document> = c
        .client
        .database("config")
        .collection::<Document>("chunks")
        .aggregate(vec![
            doc! {"$match": {"uuid": uuid}},
            doc! {"$group": {"_id": "$shard", "n": {"$sum": 1}}},
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(groups.len(), n);
    assert!(
        groups.iter().all(|g| g.get_i32("n").unwrap() == 2),
        "{groups:?}"
    );

    // $collStats through mongos: one document per shard, counts matching the shards' own.
    let stats: Vec<Document> = coll
        .aggregate(vec![doc! {"$collStats": {"storageStats": {}}}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(stats.len(), n);
    let total: i64 = stats
        .iter()
        .map(|s| {
            s.get_document("storageStats")
                .unwrap()
                .get_i64("count")
                .unwrap()
        })
        .sum();
    assert_eq!(total, 440);
    assert!(
        stats
            .iter()
            .all(|s| s.get_str("shard").is_ok() && s.get_str("host").is_ok())
    );

    // Point read, range scan merged across shards, update, delete.
    let d = coll
        .find_one(doc! {"_id": "user0123"})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.get_i32("field0").unwrap(), 123);
    let ids = scan_ids(&coll, "user0100", 5).await;
    assert_eq!(
        ids,
        vec!["user0100", "user0101", "user0102", "user0103", "user0104"]
    );
    let all: Vec<Document> = coll
        .find(doc! {})
        .batch_size(50)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 440);
    let r = coll
        .update_one(doc! {"_id": "user0007"}, doc! {"$set": {"field0": -1}})
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    let r = coll
        .update_many(doc! {"field0": {"$lt": 5}}, doc! {"$set": {"small": true}})
        .await
        .unwrap();
    assert_eq!(r.modified_count, 6);
    let r = coll.delete_one(doc! {"_id": "user0008"}).await.unwrap();
    assert_eq!(r.deleted_count, 1);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 439);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_spread_and_route() {
    spread_and_route(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_shards_spread_and_route() {
    spread_and_route(4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharding_refusals_carry_real_codes() {
    // mongos before its config set has a primary: ping works, sharding commands are refused.
    let cfg = start(
        Role::Mongod,
        "--configsvr --replSet cfg --primary-delay-ms 50",
    );
    let mongos = start(Role::Mongos, &format!("--configdb cfg/{}", cfg.host()));
    let client = Client::with_uri_str(format!("mongodb://127.0.0.1:{}/", mongos.port()))
        .await
        .unwrap();
    admin(&client, doc! {"ping": 1}).await.unwrap();
    let hello = admin(&client, doc! {"hello": 1}).await.unwrap();
    assert_eq!(hello.get_str("msg").unwrap(), "isdbgrid");
    let e = admin(&client, doc! {"listShards": 1}).await.unwrap_err();
    assert_eq!(code_of(&e), Some(133));
    let cc = direct(&cfg).await;
    initiate(&cc, "cfg", &[cfg.host()]).await.unwrap();
    wait_until(|| async { admin(&client, doc! {"listShards": 1}).await.is_ok() }).await;

    // Writes before any shard exists.
    let e = client
        .database("ycsb")
        .collection::<Document>("t")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(70));

    // addShard before the shard set has a primary; with a plain standalone; then properly, twice; then conflicting.
    let sh = start(
        Role::Mongod,
        "--shardsvr --replSet sh0 --primary-delay-ms 50",
    );
    let e = admin(&client, doc! {"addShard": format!("sh0/{}", sh.host())})
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(133));
    let standalone = start(Role::Mongod, "");
    let e = admin(&client, doc! {"addShard": standalone.host()})
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(96));
    let shc = direct(&sh).await;
    initiate(&shc, "sh0", &[sh.host()]).await.unwrap();
    wait_until(|| async {
        admin(&client, doc! {"addShard": format!("sh0/{}", sh.host())})
            .await
            .is_ok()
    })
    .await;
    let again = admin(&client, doc! {"addShard": format!("sh0/{}", sh.host())})
        .await
        .unwrap();
    assert_eq!(again.get_str("shardAdded").unwrap(), "sh0");
    let e = admin(
        &client,
        doc! {"addShard": format!("sh0/{}", sh.host()), "name": "other"},
    )
    .await
    .unwrap_err();
    assert_eq!(code_of(&e), Some(20));
    let shards = admin(&client, doc! {"listShards": 1}).await.unwrap();
    assert_eq!(shards.get_array("shards").unwrap().len(), 1);

    // shardCollection: unique+hashed refused; same options idempotent; different → AlreadyInitialized.
    let e = admin(
        &client,
        doc! {"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}, "unique": true},
    )
    .await
    .unwrap_err();
    assert_eq!(code_of(&e), Some(72));
    admin(
        &client,
        doc! {"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}, "numInitialChunks": 4},
    )
    .await
    .unwrap();
    admin(
        &client,
        doc! {"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    let e = admin(
        &client,
        doc! {"shardCollection": "ycsb.usertable", "key": {"_id": 1}},
    )
    .await
    .unwrap_err();
    assert_eq!(code_of(&e), Some(23));
    let e = admin(
        &client,
        doc! {"shardCollection": "nodot", "key": {"_id": 1}},
    )
    .await
    .unwrap_err();
    assert_eq!(code_of(&e), Some(73));

    // Balancer switches are recorded on the config server.
    admin(&client, doc! {"balancerStop": 1}).await.unwrap();
    let st = admin(&client, doc! {"balancerStatus": 1}).await.unwrap();
    assert_eq!(st.get_str("mode").unwrap(), "off");
    admin(&client, doc! {"balancerStart": 1}).await.unwrap();
    let st = admin(&client, doc! {"balancerStatus": 1}).await.unwrap();
    assert_eq!(st.get_str("mode").unwrap(), "full");

    // A fresh mongos picks the metadata up from the config server.
    let m2 = start(Role::Mongos, &format!("--configdb cfg/{}", cfg.host()));
    let c2 = router(&m2).await;
    let coll = c2.database("ycsb").collection::<Document>("usertable");
    coll.insert_one(doc! {"_id": "k"}).await.unwrap();
    assert_eq!(
        client
            .database("ycsb")
            .collection::<Document>("usertable")
            .find_one(doc! {"_id": "k"})
            .await
            .unwrap()
            .unwrap()
            .get("_id"),
        Some(&Bson::String("k".into()))
    );
    for h in [m2, mongos, sh, standalone, cfg] {
        h.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_mongos_routes_by_metadata_written_by_the_first() {
    let cfg = one_member_set("cfg", "--configsvr", "").await;
    let sh: Vec<_> = vec![
        one_member_set("sh0", "--shardsvr", "").await,
        one_member_set("sh1", "--shardsvr", "").await,
    ];
    let a = start(Role::Mongos, &format!("--configdb cfg/{}", cfg.host()));
    let b = start(Role::Mongos, &format!("--configdb cfg/{}", cfg.host()));
    let (ca, cb) = (router(&a).await, router(&b).await);
    shard_usertable(&ca, &sh).await;
    let coll = cb.database("ycsb").collection::<Document>("usertable");
    let docs: Vec<Document> = (0..100).map(|i| doc! {"_id": format!("user{i}")}).collect();
    coll.insert_many(docs).ordered(false).await.unwrap();
    for s in &sh {
        let n = usertable_count(s).await;
        assert!(n > 20, "shard {} got {n} of 100", s.host());
    }
    for h in [a, b] {
        h.shutdown().await;
    }
    for h in sh {
        h.shutdown().await;
    }
    cfg.shutdown().await;
}

/// `getDefaultRWConcern` as MongoDB answers it per role (rwc_defaults_commands.cpp): 51300 on a
/// standalone, 51301 on a shard member, the implicit default on mongos, the config set and a
/// plain replica set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_rw_concern_is_refused_where_mongodb_refuses_it() {
    let standalone = start(Role::Mongod, "");
    let e = admin(&direct(&standalone).await, doc! {"getDefaultRWConcern": 1})
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(51300), "{e}");
    assert!(
        e.to_string().contains("not supported on standalone nodes"),
        "{e}"
    );
    standalone.shutdown().await;

    let rs0 = one_member_set("rs0", "", "").await;
    let d = admin(&direct(&rs0).await, doc! {"getDefaultRWConcern": 1})
        .await
        .unwrap();
    assert_eq!(
        d.get_document("defaultWriteConcern").unwrap().get_str("w"),
        Ok("majority")
    );
    assert_eq!(d.get_str("defaultWriteConcernSource"), Ok("implicit"));
    rs0.shutdown().await;

    let c = Cluster::start(1, "", "").await;
    let e = admin(&direct(&c.shards[0]).await, doc! {"getDefaultRWConcern": 1})
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(51301), "{e}");
    assert!(
        e.to_string().contains("not supported on shard nodes"),
        "{e}"
    );
    for client in [c.client.clone(), direct(&c.config).await] {
        let d = admin(&client, doc! {"getDefaultRWConcern": 1})
            .await
            .unwrap();
        assert!(d.get_document("defaultWriteConcern").is_ok(), "{d}");
    }
    c.shutdown().await;
}

/// While a shard has no primary (`--step-down`), mongos holds an operation for
/// `defaultFindReplicaSetHostTimeoutMS` and then answers FailedToSatisfyReadPreference (133), as
/// real mongos does: for a write, `ok: 1` with the code as the statement's write error; once the
/// set has a primary again the same write goes through. A write that is not retryable (no
/// `txnNumber`) is not sent again after the stepped-down primary's NotWritablePrimary: that
/// answer is its write error at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongos_holds_operations_while_a_shard_has_no_primary_then_answers_133() {
    let c = Cluster::start(
        1,
        "--step-down 200/2500",
        "--setParameter defaultFindReplicaSetHostTimeoutMS=800",
    )
    .await;
    let db = c.client.database("ycsb");
    let coll = db.collection::<Document>("usertable");
    // The shard's first query starts its clock.
    coll.find_one(doc! {}).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let plain = doc! {"insert": "usertable", "documents": [{"_id": "user0"}]};
    let reply = db.run_command(plain).await.unwrap();
    let first = reply.get_array("writeErrors").unwrap()[0].clone();
    let first = first.as_document().unwrap();
    assert_eq!(first.get_i32("code"), Ok(10107), "{reply}");
    // The driver's insert is a retryable write: mongos waits for a primary, then gives up.
    let asked = Instant::now();
    let e = coll.insert_one(doc! {"_id": "user1"}).await.unwrap_err();
    assert_eq!(code_of(&e), Some(133), "{e}");
    assert!(
        e.to_string()
            .contains("Write results unavailable from failing to target a host in the shard sh0"),
        "{e}"
    );
    assert!(
        asked.elapsed() >= Duration::from_millis(700),
        "held {:?}",
        asked.elapsed()
    );
    wait_until(|| async { coll.insert_one(doc! {"_id": "user1"}).await.is_ok() }).await;
    c.shutdown().await;
}

/// An unordered insert over two shards, one of them without a primary: mongos inserts the other
/// shard's documents and answers `ok: 1` with a write error (133) for each statement of the
/// shard it could not target, as real mongos's batch executor does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_without_primary_fails_only_its_own_statements() {
    let c = Cluster::start(
        2,
        "--step-down sh0:200/3000",
        "--setParameter defaultFindReplicaSetHostTimeoutMS=500",
    )
    .await;
    let coll = c
        .client
        .database("ycsb")
        .collection::<Document>("usertable");
    coll.find_one(doc! {}).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let docs: Vec<Document> = (0..40).map(|i| doc! {"_id": format!("user{i}")}).collect();
    let e = coll.insert_many(docs).ordered(false).await.unwrap_err();
    let mongodb::error::ErrorKind::InsertMany(m) = e.kind.as_ref() else {
        panic!("{e}");
    };
    let errors = m.write_errors.clone().unwrap_or_default();
    let inserted = 40 - errors.len();
    assert!(!errors.is_empty() && inserted > 0, "{e}");
    assert!(errors.iter().all(|w| w.code == 133), "{e}");
    assert_eq!(usertable_count(&c.shards[1]).await, inserted as u64);
    c.shutdown().await;
}
