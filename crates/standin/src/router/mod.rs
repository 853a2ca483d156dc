//! mongos: sharding metadata kept on the config server (`config.shards`, `config.databases`,
//! `config.collections`, `config.chunks`) and CRUD routed to the shards over real TCP with the
//! official driver — single-key operations to the owning shard, everything else scatter-gathered.

//!
//! One file per command family: `ddl` (shards, sharding, create/drop), `write` (insert, update,
//! delete), `read` (find, count, aggregate, listings, statistics); `metadata` is what the router
//! knows of the cluster, `remote` how it talks to the other servers.

mod ddl;
mod metadata;
mod read;
mod remote;
mod write;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mongodb::Client;
use mongodb::bson::{Binary, Bson, Document, doc};

use crate::cmderr::{CmdError, CmdResult, code, command_not_found};
use crate::fields::without_driver_fields;
use crate::mongod;
use crate::query::Matcher;
use crate::state::{FirstBatch, ServerState, cursor_reply};
use crate::value::cmp_bson;
use remote::{gather, run_on};

/// How long a command waits for the config server before mongos refuses it (133).
const NOT_READY_WAIT: Duration = Duration::from_secs(2);

/// A shard as the router knows it.
#[derive(Debug, Clone)]
struct ShardConn {
    id: String,
    host: String,
    client: Client,
}

/// One chunk: keys from `min` (inclusive) up to the next chunk's `min` live on `shard`.
#[derive(Debug, Clone)]
struct Chunk {
    min: Bson,
    shard: String,
}

/// A sharded collection.
#[derive(Debug, Clone)]
struct CollMeta {
    key: Document,
    field: String,
    hashed: bool,
    unique: bool,
    uuid: Binary,
    chunks: Vec<Chunk>,
}

#[derive(Debug, Default)]
struct RouterState {
    config: Option<Client>,
    shards: Vec<ShardConn>,
    dbs: HashMap<String, String>,
    colls: HashMap<String, CollMeta>,
}

/// The router's state.
#[derive(Debug)]
pub(crate) struct Router {
    config_set: String,
    config_hosts: Vec<String>,
    state: RwLock<RouterState>,
    ready: AtomicBool,
    ddl: tokio::sync::Mutex<()>,
    balancer_rounds: AtomicI64,
    /// Namespaces not known as sharded, with when the config server was last asked about them.
    misses: std::sync::Mutex<HashMap<String, std::time::Instant>>,
    /// How long an operation waits for a shard's primary before it fails with 133 (ms).
    shard_primary_wait_ms: u64,
    /// How it dials shards and config servers (its TLS and credentials).
    peer: crate::peer::Peer,
    /// `--balancer-on-after-ms`: when the balancer comes back on, counted from
    /// [`Router::first_user_command`]; cleared once it has.
    balancer_on_after: std::sync::Mutex<Option<std::time::Duration>>,
    /// When the first data command on a user database arrived.
    first_user_command: std::sync::OnceLock<std::time::Instant>,
}

/// The hash used for hashed shard keys: FNV-1a over the value's BSON encoding, then a 64-bit mixer.
pub(crate) fn shard_hash(v: &Bson) -> i64 {
    let mut bytes = Vec::new();
    let _ = doc! {"": v.clone()}.to_writer(&mut bytes);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    h as i64
}

/// The commands mongos answers, each name listed once: dispatch and the answer given before the config server is
/// reachable both read this table (lower-case spellings are the aliases MongoDB still accepts).
const COMMANDS: &[(&str, Cmd, Unready)] = &[
    ("addShard", Cmd::AddShard, Unready::NotReady),
    ("isdbgrid", Cmd::IsDbGrid, Unready::NotFound),
    ("listShards", Cmd::ListShards, Unready::NotReady),
    ("enableSharding", Cmd::EnableSharding, Unready::NotReady),
    ("enablesharding", Cmd::EnableSharding, Unready::NotFound),
    ("shardCollection", Cmd::ShardCollection, Unready::NotReady),
    ("shardcollection", Cmd::ShardCollection, Unready::NotFound),
    ("balancerStart", Cmd::BalancerStart, Unready::NotReady),
    ("balancerStop", Cmd::BalancerStop, Unready::NotReady),
    ("balancerStatus", Cmd::BalancerStatus, Unready::NotReady),
    (
        "flushRouterConfig",
        Cmd::FlushRouterConfig,
        Unready::NotReady,
    ),
    (
        "flushrouterconfig",
        Cmd::FlushRouterConfig,
        Unready::NotFound,
    ),
    ("getMore", Cmd::GetMore, Unready::CursorTable),
    ("killCursors", Cmd::KillCursors, Unready::CursorTable),
    ("insert", Cmd::Insert, Unready::NotReady),
    ("find", Cmd::Find, Unready::NotReady),
    ("update", Cmd::Update, Unready::NotReady),
    ("delete", Cmd::Delete, Unready::NotReady),
    ("count", Cmd::Count, Unready::NotReady),
    ("aggregate", Cmd::Aggregate, Unready::NotReady),
    ("create", Cmd::Create, Unready::NotReady),
    ("drop", Cmd::Drop, Unready::NotReady),
    ("dropDatabase", Cmd::DropDatabase, Unready::NotReady),
    ("createIndexes", Cmd::CreateIndexes, Unready::NotReady),
    ("listIndexes", Cmd::ListIndexes, Unready::NotReady),
    ("listDatabases", Cmd::ListDatabases, Unready::NotReady),
    ("listCollections", Cmd::ListCollections, Unready::NotReady),
    ("dbStats", Cmd::DbStats, Unready::NotReady),
    ("collStats", Cmd::CollStats, Unready::NotReady),
];

/// A mongos command, so the `match` in [`Router::command`] is checked for exhaustiveness against [`COMMANDS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmd {
    AddShard,
    IsDbGrid,
    ListShards,
    EnableSharding,
    ShardCollection,
    BalancerStart,
    BalancerStop,
    BalancerStatus,
    FlushRouterConfig,
    GetMore,
    KillCursors,
    Insert,
    Find,
    Update,
    Delete,
    Count,
    Aggregate,
    Create,
    Drop,
    DropDatabase,
    CreateIndexes,
    ListIndexes,
    ListDatabases,
    ListCollections,
    DbStats,
    CollStats,
}

impl Cmd {
    /// Data commands act on a database's collections; on `config` they go to the config server.
    fn is_data(self) -> bool {
        !matches!(
            self,
            Cmd::AddShard
                | Cmd::IsDbGrid
                | Cmd::ListShards
                | Cmd::EnableSharding
                | Cmd::ShardCollection
                | Cmd::BalancerStart
                | Cmd::BalancerStop
                | Cmd::BalancerStatus
                | Cmd::FlushRouterConfig
                | Cmd::GetMore
                | Cmd::KillCursors
        )
    }
}

/// What a command answers while the config server is not reachable yet (after the wait real mongos does too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unready {
    /// Answered from this router's own cursor table.
    CursorTable,
    /// FailedToSatisfyReadPreference (133), as mongos gives when it cannot select the config server.
    NotReady,
    /// CommandNotFound (59).
    NotFound,
}

/// The table entry for `name`.
fn lookup(name: &str) -> Option<(Cmd, Unready)> {
    COMMANDS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, cmd, unready)| (*cmd, *unready))
}

/// FailedToSatisfyReadPreference (133): no primary of `set` can be selected.
fn not_ready(set: &str) -> CmdError {
    CmdError::new(
        code::FAILED_TO_SATISFY_READ_PREFERENCE,
        format!(
            "Could not find host matching read preference {{ mode: \"primary\" }} for set {set}"
        ),
    )
}

/// ShardNotFound (70): a database needs a primary shard and there is none.
fn no_shards(db: &str) -> CmdError {
    CmdError::new(
        code::SHARD_NOT_FOUND,
        format!("Database {db} could not be created :: caused by :: No shards found"),
    )
}

/// Where a command goes: the one shard that owns the keys it names, or every shard holding chunks.
enum Target {
    One(ShardConn),
    All(Vec<ShardConn>),
}

impl Target {
    /// The shards to send to, one or all.
    fn into_shards(self) -> Vec<ShardConn> {
        match self {
            Target::One(s) => vec![s],
            Target::All(v) => v,
        }
    }
}

impl Router {
    /// Which shard owns a shard-key value.
    fn owner(meta: &CollMeta, value: &Bson) -> Option<String> {
        let probe = if meta.hashed {
            Bson::Int64(shard_hash(value))
        } else {
            value.clone()
        };
        let idx = meta
            .chunks
            .partition_point(|c| cmp_bson(&c.min, &probe).is_le());
        meta.chunks
            .get(idx.saturating_sub(1))
            .map(|c| c.shard.clone())
    }

    /// Where a filter goes: one shard when it pins the shard key, else every shard holding chunks.
    fn target_filter(&self, ns: &str, db: &str, filter: &Document) -> CmdResult<Target> {
        let st = self
            .state
            .read()
            .map_err(|_| CmdError::poisoned("router state"))?;
        let find = |id: &str| st.shards.iter().find(|s| s.id == id).cloned();
        match st.colls.get(ns) {
            None => {
                let Some(p) = st.dbs.get(db) else {
                    // The database does not exist: nothing to read anywhere; any shard answers "empty".
                    return st
                        .shards
                        .first()
                        .cloned()
                        .map(Target::One)
                        .ok_or_else(|| no_shards(db));
                };
                find(p).map(Target::One).ok_or_else(|| no_shards(db))
            }
            Some(meta) => {
                let pinned = Matcher::new(filter).ok().and_then(|m| {
                    if meta.field == "_id" {
                        m.single_id()
                    } else {
                        Matcher::equality_fields(filter).get(&meta.field).cloned()
                    }
                });
                if let Some(v) = pinned
                    && let Some(s) = Self::owner(meta, &v).and_then(|id| find(&id))
                {
                    return Ok(Target::One(s));
                }
                let mut ids: Vec<&String> = meta.chunks.iter().map(|c| &c.shard).collect();
                ids.sort();
                ids.dedup();
                Ok(Target::All(
                    ids.into_iter().filter_map(|id| find(id)).collect(),
                ))
            }
        }
    }

    /// Dispatches one mongos command.
    pub(crate) async fn command(
        &self,
        shared: &Arc<ServerState>,
        name: &str,
        db: &str,
        body: &Document,
    ) -> CmdResult {
        let entry = lookup(name);
        if !self.wait_ready().await {
            return match entry.map(|(_, unready)| unready) {
                Some(Unready::CursorTable) => cursor_command(shared, name, db, body).await,
                Some(Unready::NotReady) => Err(not_ready(&self.config_set)),
                Some(Unready::NotFound) | None => Err(command_not_found(name)),
            };
        }
        let cmd = entry.map(|(cmd, _)| cmd);
        let data = matches!(name, "insert" | "find" | "update" | "delete" | "getMore");
        if data && !matches!(db, "admin" | "config" | "local") {
            self.first_user_command.get_or_init(std::time::Instant::now);
        }
        self.balancer_back_on_if_due().await;
        if on_config_server(cmd, db) {
            return self.forward_to_config(shared, cmd, name, db, body).await;
        }
        let Some(cmd) = cmd else {
            return Err(command_not_found(name));
        };
        match cmd {
            Cmd::AddShard => self.add_shard(db, body).await,
            Cmd::IsDbGrid => {
                Ok(doc! {"isdbgrid": 1, "hostname": shared.hostname.clone(), "ok": 1.0})
            }
            Cmd::ListShards => self.list_shards().await,
            Cmd::EnableSharding => self.enable_sharding(name, body).await,
            Cmd::ShardCollection => self.shard_collection(body).await,
            Cmd::BalancerStart | Cmd::BalancerStop => {
                self.balancer_switch(cmd == Cmd::BalancerStart).await
            }
            Cmd::BalancerStatus => self.balancer_status().await,
            Cmd::FlushRouterConfig => {
                self.reload().await?;
                Ok(doc! {"flushed": true, "ok": 1.0})
            }
            Cmd::GetMore | Cmd::KillCursors => cursor_command(shared, name, db, body).await,
            Cmd::Insert => self.insert(shared, db, body).await,
            Cmd::Update => {
                self.write_statements(shared, db, body, "update", "updates")
                    .await
            }
            Cmd::Delete => {
                self.write_statements(shared, db, body, "delete", "deletes")
                    .await
            }
            Cmd::Find => self.find(shared, db, body).await,
            Cmd::Count => self.count(shared, db, body).await,
            Cmd::Aggregate => self.aggregate(shared, db, body).await,
            Cmd::Create => self.create(name, db, body).await,
            Cmd::CreateIndexes => self.create_indexes(name, db, body).await,
            Cmd::ListIndexes | Cmd::ListCollections => {
                self.list_on_primary(shared, cmd == Cmd::ListIndexes, name, db, body)
                    .await
            }
            Cmd::Drop => self.drop(name, db, body).await,
            Cmd::DropDatabase => self.drop_database(db).await,
            Cmd::ListDatabases => self.list_databases(body).await,
            Cmd::DbStats => self.db_stats(db, body).await,
            Cmd::CollStats => self.coll_stats(name, db, body).await,
        }
    }

    /// Like real mongos, a command waits a little for the config server (server selection)
    /// before failing with FailedToSatisfyReadPreference: true once it is ready.
    async fn wait_ready(&self) -> bool {
        if !self.ready.load(Ordering::SeqCst) {
            let deadline = std::time::Instant::now() + NOT_READY_WAIT;
            while !self.ready.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        self.ready.load(Ordering::SeqCst)
    }

    /// Sends a command to the config server as it is, draining the cursor of a `find` or `aggregate`.
    async fn forward_to_config(
        &self,
        shared: &ServerState,
        cmd: Option<Cmd>,
        name: &str,
        db: &str,
        body: &Document,
    ) -> CmdResult {
        let c = self.config()?;
        if matches!(cmd, Some(Cmd::Find | Cmd::Aggregate)) {
            let docs = gather(&c, db, without_driver_fields(body)).await?;
            let coll = body.get_str(name).unwrap_or("$cmd");
            return Ok(cursor_reply(
                shared,
                &format!("{db}.{coll}"),
                VecDeque::from(docs),
                FirstBatch::default(),
            ));
        }
        run_on(&c, db, without_driver_fields(body)).await
    }
}

/// The config and admin databases live on the config server: data commands there (and any
/// command the router does not know, on `config`) go to it.
fn on_config_server(cmd: Option<Cmd>, db: &str) -> bool {
    cmd.is_none_or(Cmd::is_data)
        && (db == "config"
            || (db == "admin"
                && matches!(
                    cmd,
                    Some(
                        Cmd::Insert
                            | Cmd::Find
                            | Cmd::Update
                            | Cmd::Delete
                            | Cmd::Count
                            | Cmd::Aggregate
                    )
                )))
}

/// `getMore` and `killCursors`, answered from this router's own cursor table.
async fn cursor_command(
    shared: &Arc<ServerState>,
    name: &str,
    db: &str,
    body: &Document,
) -> CmdResult {
    match name {
        "getMore" => mongod::get_more(shared, db, body).await,
        _ => mongod::kill_cursors(shared, body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_names_are_listed_once() {
        let mut names: Vec<&str> = COMMANDS.iter().map(|(n, _, _)| *n).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
        // Only the lower-case aliases are unknown before the config server answers, and `isdbgrid`.
        let not_found: Vec<&str> = COMMANDS
            .iter()
            .filter(|(_, _, u)| *u == Unready::NotFound)
            .map(|(n, _, _)| *n)
            .collect();
        assert_eq!(
            not_found,
            [
                "isdbgrid",
                "enablesharding",
                "shardcollection",
                "flushrouterconfig"
            ]
        );
        assert_eq!(
            lookup("getMore"),
            Some((Cmd::GetMore, Unready::CursorTable))
        );
        assert_eq!(lookup("serverStatus"), None);
    }

    #[test]
    fn hash_spreads_ycsb_keys_evenly_over_four_ranges() {
        let mut counts = [0usize; 4];
        for i in 0..4000 {
            let h = shard_hash(&Bson::String(format!("user{i}")));
            let bucket = ((h as i128 - i64::MIN as i128) * 4 / (u64::MAX as i128 + 1)) as usize;
            counts[bucket.min(3)] += 1;
        }
        for c in counts {
            assert!((800..1200).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn owner_follows_chunk_ranges() {
        let meta = CollMeta {
            key: doc! {"_id": "hashed"},
            field: "_id".into(),
            hashed: false,
            unique: false,
            uuid: crate::value::new_uuid(),
            chunks: vec![
                Chunk {
                    min: Bson::MinKey,
                    shard: "a".into(),
                },
                Chunk {
                    min: Bson::Int32(10),
                    shard: "b".into(),
                },
            ],
        };
        assert_eq!(Router::owner(&meta, &Bson::Int32(3)).as_deref(), Some("a"));
        assert_eq!(Router::owner(&meta, &Bson::Int32(10)).as_deref(), Some("b"));
        assert_eq!(Router::owner(&meta, &Bson::Int32(99)).as_deref(), Some("b"));
    }
}
