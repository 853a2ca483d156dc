//! The one support module of the stand-in's end-to-end tests (`standin.rs` and `capacity.rs` are
//! the two test binaries; `mongod.rs`, `replset.rs` and `sharded.rs` are modules of the first):
//! start members, initiate sets, build a sharded cluster, read error codes.
// Each binary uses only some of these helpers.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use microshard_standin::{self as standin, Role, StandinConfig, StandinHandle};
use mongodb::bson::{Document, doc};
use mongodb::{Client, error::ErrorKind};

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

/// Starts a one-member replica set and waits until it is primary.
pub async fn one_member_set(name: &str, role_flag: &str, extra: &str) -> StandinHandle {
    let h = start(
        Role::Mongod,
        &format!("{role_flag} --replSet {name} --primary-delay-ms 50 {extra}"),
    );
    let c = direct(&h).await;
    admin(
        &c,
        doc! {"replSetInitiate": {"_id": name, "members": [{"_id": 0, "host": h.host()}]}},
    )
    .await
    .unwrap();
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
        for (i, s) in shards.iter().enumerate() {
            admin(
                &client,
                doc! {"addShard": format!("sh{i}/{}", s.host()), "name": format!("sh{i}")},
            )
            .await
            .unwrap();
        }
        admin(&client, doc! {"enableSharding": "ycsb"})
            .await
            .unwrap();
        admin(
            &client,
            doc! {"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}},
        )
        .await
        .unwrap();
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
