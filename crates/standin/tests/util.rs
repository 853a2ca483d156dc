//! The one support module of the stand-in's end-to-end tests (`standin.rs` and `capacity.rs` are
//! the two test binaries; `mongod.rs`, `replset.rs` and `sharded.rs` are modules of the first):
//! start members, initiate sets, build a sharded cluster, read error codes.
// Each binary uses only some of these helpers.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use microshard_standin::{self as standin, Role, StandinConfig, StandinHandle};
use mongodb::bson::{Document, doc};
use mongodb::options::FindOptions;
use mongodb::{Client, Collection, error::ErrorKind};

pub fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

pub fn code_of(e: &mongodb::error::Error) -> Option<i32> {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::InsertMany(m) => m
            .write_errors
            .as_ref()
            .and_then(|w| w.first())
            .map(|w| w.code),
        ErrorKind::BulkWrite(b) => b.write_errors.values().next().map(|w| w.code),
        _ => None,
    }
}

pub fn start(role: Role, flags: &str) -> StandinHandle {
    let cfg = StandinConfig::from_args(role, &args(&format!("--port 0 {flags}"))).unwrap();
    standin::spawn(cfg).unwrap()
}

pub async fn direct(h: &StandinHandle) -> Client {
    Client::with_uri_str(h.uri()).await.unwrap()
}

pub async fn admin(c: &Client, cmd: Document) -> Result<Document, mongodb::error::Error> {
    c.database("admin").run_command(cmd).await
}

/// Sends `replSetInitiate` for set `id` through `c`, with `hosts` as members 0, 1, ….
pub async fn initiate(
    c: &Client,
    id: &str,
    hosts: &[String],
) -> Result<Document, mongodb::error::Error> {
    let members: Vec<Document> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| doc! {"_id": i as i32, "host": h})
        .collect();
    admin(c, doc! {"replSetInitiate": {"_id": id, "members": members}}).await
}

/// A client of router `h`, once its config set answers `listShards`.
pub async fn router(h: &StandinHandle) -> Client {
    let client = Client::with_uri_str(format!("mongodb://127.0.0.1:{}/", h.port()))
        .await
        .unwrap();
    wait_until(|| async { admin(&client, doc! {"listShards": 1}).await.is_ok() }).await;
    client
}

/// Adds `shards` (sets `sh0`, `sh1`, …) through router client `c`, then shards
/// `ycsb.usertable` on hashed `_id`.
pub async fn shard_usertable(c: &Client, shards: &[StandinHandle]) {
    for (i, s) in shards.iter().enumerate() {
        let add = doc! {"addShard": format!("sh{i}/{}", s.host()), "name": format!("sh{i}")};
        admin(c, add).await.unwrap();
    }
    admin(c, doc! {"enableSharding": "ycsb"}).await.unwrap();
    let shard = doc! {"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}};
    admin(c, shard).await.unwrap();
}

/// How many documents `ycsb.usertable` holds on `h` itself.
pub async fn usertable_count(h: &StandinHandle) -> u64 {
    let c = direct(h).await;
    let coll = c.database("ycsb").collection::<Document>("usertable");
    coll.count_documents(doc! {}).await.unwrap()
}

/// The `_id`s YCSB's range scan reads from `from` on: sorted, at most `limit`, through `find`.
pub async fn scan_ids(coll: &Collection<Document>, from: &str, limit: i64) -> Vec<String> {
    let opts = FindOptions::builder()
        .sort(doc! {"_id": 1})
        .limit(limit)
        .projection(doc! {"field0": 1})
        .build();
    let cursor = coll.find(doc! {"_id": {"$gte": from}}).with_options(opts);
    let docs: Vec<Document> = cursor.await.unwrap().try_collect().await.unwrap();
    docs.iter()
        .map(|d| d.get_str("_id").unwrap().to_string())
        .collect()
}

/// Starts a one-member replica set and waits until it is primary.
pub async fn one_member_set(name: &str, role_flag: &str, extra: &str) -> StandinHandle {
    let h = start(
        Role::Mongod,
        &format!("{role_flag} --replSet {name} --primary-delay-ms 50 {extra}"),
    );
    let c = direct(&h).await;
    initiate(&c, name, &[h.host()]).await.unwrap();
    wait_until(|| async {
        admin(&c, doc! {"hello": 1})
            .await
            .map(|d| d.get_bool("isWritablePrimary").unwrap_or(false))
            .unwrap_or(false)
    })
    .await;
    h
}

pub async fn wait_until<F, Fut>(mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(15);
    while !f().await {
        assert!(
            Instant::now() < deadline,
            "condition not reached within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A config set, `n` shard sets and a mongos, with `ycsb.usertable` sharded on hashed `_id`.
pub struct Cluster {
    pub config: StandinHandle,
    pub shards: Vec<StandinHandle>,
    pub mongos: StandinHandle,
    pub client: Client,
}

impl Cluster {
    pub async fn start(n: usize, shard_extra: &str, mongos_extra: &str) -> Cluster {
        let config = one_member_set("cfg", "--configsvr", "").await;
        let mut shards = Vec::new();
        for i in 0..n {
            shards.push(one_member_set(&format!("sh{i}"), "--shardsvr", shard_extra).await);
        }
        let mongos = start(
            Role::Mongos,
            &format!("--configdb cfg/{} {mongos_extra}", config.host()),
        );
        let client = Client::with_uri_str(format!(
            "mongodb://127.0.0.1:{}/?maxPoolSize=100",
            mongos.port()
        ))
        .await
        .unwrap();
        wait_until(|| async { admin(&client, doc! {"listShards": 1}).await.is_ok() }).await;
        shard_usertable(&client, &shards).await;
        Cluster {
            config,
            shards,
            mongos,
            client,
        }
    }

    pub async fn shutdown(self) {
        self.mongos.shutdown().await;
        for s in self.shards {
            s.shutdown().await;
        }
        self.config.shutdown().await;
    }
}

#[path = "support/certs.rs"]
mod certs;
#[allow(unused_imports)] // not every test binary makes certificates
pub use certs::Certs;
