//! `find`'s cursor rules as mongod and mongos apply them (`docs/mongodb-versions.md`,
//! "Conformance"): a first batch filled to `batchSize` keeps the cursor open, `limit`,
//! `singleBatch` and running out before `batchSize` close it, and `opcounters` count a `getMore`
//! under `getmore`.

use crate::util::*;
use futures::TryStreamExt;
use microshard_standin::Role;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

/// `opcounters.query` and `opcounters.getmore` of the server `c` is connected to.
async fn reads(c: &Client) -> (i64, i64) {
    let s = admin(c, doc! {"serverStatus": 1}).await.unwrap();
    let op = s.get_document("opcounters").unwrap();
    (op.get_i64("query").unwrap(), op.get_i64("getmore").unwrap())
}

/// Sends `find` on `d.c` with `opts` over `_id`s 0..n and returns `(first batch size, cursor id)`.
async fn find_raw(c: &Client, n: i32, opts: Document) -> (usize, i64) {
    let ids: Vec<Bson> = (0..n).map(Bson::Int32).collect();
    let mut cmd = doc! {"find": "c", "filter": {"_id": {"$in": ids}}};
    cmd.extend(opts);
    let r = c.database("d").run_command(cmd).await.unwrap();
    let cur = r.get_document("cursor").unwrap();
    (
        cur.get_array("firstBatch").unwrap().len(),
        cur.get_i64("id").unwrap(),
    )
}

/// Sends `getMore` for `id` and returns `(next batch size, cursor id)`.
async fn get_more_raw(c: &Client, id: i64, batch: Option<i64>) -> (usize, i64) {
    let mut cmd = doc! {"getMore": id, "collection": "c"};
    if let Some(b) = batch {
        cmd.insert("batchSize", b);
    }
    let r = c.database("d").run_command(cmd).await.unwrap();
    let cur = r.get_document("cursor").unwrap();
    (
        cur.get_array("nextBatch").unwrap().len(),
        cur.get_i64("id").unwrap(),
    )
}

async fn ten_docs(c: &Client) {
    let docs: Vec<Document> = (0..10).map(|i| doc! {"_id": i}).collect();
    c.database("d")
        .collection::<Document>("c")
        .insert_many(docs)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_batch_filled_exactly_keeps_the_cursor_and_costs_one_getmore() {
    let h = start(Role::Mongod, "");
    let c = direct(&h).await;
    ten_docs(&c).await;
    let before = reads(&c).await;
    let (n, id) = find_raw(&c, 10, doc! {"batchSize": 10}).await;
    assert_eq!(n, 10);
    assert_ne!(id, 0, "mongod does not look past a full batch");
    assert_eq!(get_more_raw(&c, id, Some(10)).await, (0, 0));
    let after = reads(&c).await;
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 1));
    h.shutdown().await;
}

#[tokio::test]
async fn limit_single_batch_and_a_short_batch_close_the_cursor() {
    let h = start(Role::Mongod, "");
    let c = direct(&h).await;
    ten_docs(&c).await;
    let before = reads(&c).await;
    assert_eq!(
        find_raw(&c, 10, doc! {"batchSize": 10, "limit": 10}).await,
        (10, 0)
    );
    assert_eq!(find_raw(&c, 10, doc! {"batchSize": 11}).await, (10, 0));
    assert_ne!(find_raw(&c, 10, doc! {"batchSize": 3}).await.1, 0);
    let single = doc! {"batchSize": 3, "singleBatch": true};
    assert_eq!(find_raw(&c, 10, single).await, (3, 0));
    // No batchSize: a first batch of up to 101, and 10 is short of it.
    assert_eq!(find_raw(&c, 10, doc! {}).await, (10, 0));
    // A limit reached in a later batch closes the cursor there.
    let (n, id) = find_raw(&c, 10, doc! {"batchSize": 2, "limit": 4}).await;
    assert!(n == 2 && id != 0);
    assert_eq!(get_more_raw(&c, id, Some(2)).await, (2, 0));
    let after = reads(&c).await;
    assert_eq!((after.0 - before.0, after.1 - before.1), (6, 1));
    h.shutdown().await;
}

/// `n` ids read the way microshard's multi-id read does: through the driver, with `limit(n)`
/// beside `batch_size(n)` or without it; returns the server's `getmore` count for one read.
async fn driver_read_getmores(c: &Client, server: &Client, limit: bool) -> i64 {
    let coll = c.database("d").collection::<Document>("c");
    let ids: Vec<Bson> = (0..10).map(Bson::Int32).collect();
    let find = coll.find(doc! {"_id": {"$in": ids}}).batch_size(10);
    let find = if limit { find.limit(10) } else { find };
    let before = reads(server).await;
    let got: Vec<Document> = find.await.unwrap().try_collect().await.unwrap();
    assert_eq!(got.len(), 10);
    let after = reads(server).await;
    assert_eq!(after.0 - before.0, 1, "one query per read");
    after.1 - before.1
}

#[tokio::test]
async fn a_multi_id_read_with_its_limit_costs_no_getmore() {
    let h = start(Role::Mongod, "");
    let c = direct(&h).await;
    ten_docs(&c).await;
    assert_eq!(driver_read_getmores(&c, &c, true).await, 0);
    assert_eq!(driver_read_getmores(&c, &c, false).await, 1);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongos_keeps_a_full_first_batch_open_and_counts_the_getmore() {
    let cl = Cluster::start(1, "", "").await;
    let c = &cl.client;
    ten_docs(c).await;
    // mongos notices its limit only when asked for one more document past a full batch.
    let (n, id) = find_raw(c, 10, doc! {"batchSize": 10, "limit": 10}).await;
    assert!(n == 10 && id != 0);
    let before = reads(c).await;
    assert_eq!(get_more_raw(c, id, Some(10)).await, (0, 0));
    let after = reads(c).await;
    assert_eq!(after.1 - before.1, 1);
    // The driver sends batchSize n + 1 beside limit n, so a read costs one round trip.
    assert_eq!(driver_read_getmores(c, c, true).await, 0);
    assert_eq!(driver_read_getmores(c, c, false).await, 1);
    cl.shutdown().await;
}

/// `opcounters` of the server `c` is connected to, by name.
async fn opcounters(c: &Client) -> Document {
    let s = admin(c, doc! {"serverStatus": 1}).await.unwrap();
    s.get_document("opcounters").unwrap().clone()
}

fn delta(before: &Document, after: &Document, key: &str) -> i64 {
    after.get_i64(key).unwrap() - before.get_i64(key).unwrap()
}

#[tokio::test]
async fn opcounters_count_as_mongod_counts() {
    let h = start(Role::Mongod, "");
    let c = direct(&h).await;
    let coll = c.database("d").collection::<Document>("c");
    let before = opcounters(&c).await;
    ten_docs(&c).await;
    coll.update_one(doc! {"_id": 1}, doc! {"$set": {"x": 1}})
        .await
        .unwrap();
    coll.delete_one(doc! {"_id": 2}).await.unwrap();
    coll.find_one(doc! {"_id": 3}).await.unwrap();
    // `count` and `aggregate` are commands to mongod, not queries (only `find` is).
    let n = c
        .database("d")
        .run_command(doc! {"count": "c"})
        .await
        .unwrap();
    assert_eq!(
        n.get_i32("n").ok().map(i64::from).or(n.get_i64("n").ok()),
        Some(9)
    );
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 9);
    let after = opcounters(&c).await;
    let got: Vec<i64> = ["insert", "update", "delete", "query", "getmore"]
        .iter()
        .map(|k| delta(&before, &after, k))
        .collect();
    assert_eq!(got, [10, 1, 1, 1, 0]);
    assert!(delta(&before, &after, "command") >= 2);
    h.shutdown().await;
}

/// `--zero-counters`: the work is done, and `serverStatus` counts none of it (a wire-compatible
/// server that is not MongoDB, as microshard must be able to tell: issue #31).
#[tokio::test]
async fn zero_counters_serve_everything_and_count_nothing() {
    let h = start(Role::Mongod, "--zero-counters");
    let c = direct(&h).await;
    ten_docs(&c).await;
    let coll = c.database("d").collection::<Document>("c");
    let ids: Vec<Bson> = (0..10).map(Bson::Int32).collect();
    let find = coll.find(doc! {"_id": {"$in": ids}}).batch_size(10);
    let got: Vec<Document> = find.await.unwrap().try_collect().await.unwrap();
    assert_eq!(got.len(), 10, "a getMore after the full batch, served");
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 10);
    let counted = opcounters(&c).await;
    for k in ["insert", "update", "delete", "query", "getmore", "command"] {
        assert_eq!(counted.get_i64(k).unwrap(), 0, "{k}");
    }
    h.shutdown().await;
}
