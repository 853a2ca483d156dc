//! mongos: sharding metadata kept on the config server (`config.shards`, `config.databases`,
//! `config.collections`, `config.chunks`) and CRUD routed to the shards over real TCP with the
//! official driver — single-key operations to the owning shard, everything else scatter-gathered.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::future::join_all;
use mongodb::bson::{
    Binary, Bson, DateTime, Document, Timestamp, doc, oid::ObjectId, spec::BinarySubtype,
};
use mongodb::{Client, error::ErrorKind};

use super::StandinError;
use super::cmderr::{CmdError, CmdResult, code};
use super::config::{StandinConfig, parse_configdb};
use super::fields::Fields;
use super::mongod::{self, check_db_name, coll_name, run_pipeline};
use super::query::{Matcher, Sort};
use super::server::{Shared, command_not_found, cursor_reply};
use super::value::{as_i64, cmp_bson, truthy};

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

async fn client_for(hosts: &[String], set: Option<&str>, timeout_ms: u64) -> CmdResult<Client> {
    let opts = match (hosts.len(), set) {
        (1, _) | (_, None) => format!(
            "directConnection=true&serverSelectionTimeoutMS={timeout_ms}&connectTimeoutMS={timeout_ms}"
        ),
        (_, Some(s)) => format!(
            "replicaSet={s}&serverSelectionTimeoutMS={timeout_ms}&connectTimeoutMS={timeout_ms}"
        ),
    };
    let hosts = if set.is_none() || hosts.len() == 1 {
        &hosts[..1]
    } else {
        hosts
    };
    let uri = format!("mongodb://{}/?{opts}&maxPoolSize=64", hosts.join(","));
    let o = mongodb::options::ClientOptions::parse(uri.as_str())
        .await
        .map_err(|e| {
            CmdError::new(
                code::FAILED_TO_PARSE,
                format!("bad host list {}: {e}", hosts.join(",")),
            )
        })?;
    Client::with_options(o).map_err(|e| CmdError::new(code::FAILED_TO_PARSE, e.to_string()))
}

/// Converts a driver error from a shard or the config server into the error mongos reports.
fn conv(e: mongodb::error::Error) -> CmdError {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => CmdError::new(c.code, c.message.clone()),
        ErrorKind::ServerSelection { message, .. } => {
            CmdError::new(code::HOST_UNREACHABLE, message.clone())
        }
        ErrorKind::Io(io) => CmdError::new(code::HOST_UNREACHABLE, io.to_string()),
        _ => CmdError::new(code::OPERATION_FAILED, e.to_string()),
    }
}

/// The command body without the fields the driver adds itself (`$db`, `lsid`, ...).
fn clean(body: &Document) -> Document {
    let mut d = body.clone();
    for k in [
        "$db",
        "lsid",
        "$clusterTime",
        "txnNumber",
        "$readPreference",
        "autocommit",
        "startTransaction",
        "apiVersion",
        "apiStrict",
        "apiDeprecationErrors",
    ] {
        d.remove(k);
    }
    d
}

async fn run_on(client: &Client, db: &str, cmd: Document) -> CmdResult {
    client.database(db).run_command(cmd).await.map_err(conv)
}

/// Runs a cursor-returning command and drains the cursor.
async fn gather(client: &Client, db: &str, cmd: Document) -> CmdResult<Vec<Document>> {
    let d = run_on(client, db, cmd).await?;
    let cur = d
        .get_document("cursor")
        .map_err(|_| CmdError::new(1, "shard reply without a cursor"))?;
    let mut out: Vec<Document> = cur
        .get_array("firstBatch")
        .map(|a| a.iter().filter_map(|b| b.as_document().cloned()).collect())
        .unwrap_or_default();
    let mut id = cur.get_i64("id").unwrap_or(0);
    let ns = cur.get_str("ns").unwrap_or_default().to_string();
    let coll = ns
        .split_once('.')
        .map(|(_, c)| c.to_string())
        .unwrap_or_default();
    while id != 0 {
        let d = run_on(client, db, doc! {"getMore": id, "collection": coll.clone()}).await?;
        let cur = d
            .get_document("cursor")
            .map_err(|_| CmdError::new(1, "shard reply without a cursor"))?;
        if let Ok(a) = cur.get_array("nextBatch") {
            out.extend(a.iter().filter_map(|b| b.as_document().cloned()));
        }
        id = cur.get_i64("id").unwrap_or(0);
    }
    Ok(out)
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
    ("getMore", Cmd::GetMore, Unready::Local),
    ("killCursors", Cmd::KillCursors, Unready::Local),
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
    Local,
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

fn not_ready(set: &str) -> CmdError {
    CmdError::new(
        code::FAILED_TO_SATISFY_READ_PREFERENCE,
        format!(
            "Could not find host matching read preference {{ mode: \"primary\" }} for set {set}"
        ),
    )
}

fn no_shards(db: &str) -> CmdError {
    CmdError::new(
        code::SHARD_NOT_FOUND,
        format!("Database {db} could not be created :: caused by :: No shards found"),
    )
}

fn merge_write_reply(total: &mut Document, part: &Document, index_map: &[usize]) {
    let n =
        part.get("n").and_then(as_i64).unwrap_or(0) + total.get("n").and_then(as_i64).unwrap_or(0);
    total.insert("n", n as i32);
    if part.contains_key("nModified") || total.contains_key("nModified") {
        let m = part.get("nModified").and_then(as_i64).unwrap_or(0)
            + total.get("nModified").and_then(as_i64).unwrap_or(0);
        total.insert("nModified", m as i32);
    }
    for field in ["writeErrors", "upserted"] {
        if let Ok(items) = part.get_array(field) {
            let mut acc = total.get_array(field).cloned().unwrap_or_default();
            for it in items {
                if let Bson::Document(mut e) = it.clone() {
                    if let Some(i) = e.get("index").and_then(as_i64) {
                        let orig = index_map.get(i as usize).copied().unwrap_or(i as usize);
                        e.insert("index", orig as i32);
                    }
                    acc.push(Bson::Document(e));
                }
            }
            total.insert(field, acc);
        }
    }
}

fn sort_errors(d: &mut Document) {
    for field in ["writeErrors", "upserted"] {
        if let Ok(items) = d.get_array_mut(field) {
            items.sort_by_key(|e| {
                e.as_document()
                    .and_then(|e| e.get("index"))
                    .and_then(as_i64)
                    .unwrap_or(0)
            });
        }
    }
}

enum Target {
    One(ShardConn),
    All(Vec<ShardConn>),
}

impl Router {
    /// Prepares a router for `--configdb`.
    pub(crate) fn new(cfg: &StandinConfig) -> Result<Router, StandinError> {
        let (set, hosts) = parse_configdb(cfg.configdb.as_deref().unwrap_or_default())?;
        Ok(Router {
            config_set: set,
            config_hosts: hosts,
            state: RwLock::new(RouterState::default()),
            ready: AtomicBool::new(false),
            ddl: tokio::sync::Mutex::new(()),
            balancer_rounds: AtomicI64::new(0),
            misses: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// Connects to the config server in the background, retrying like real mongos until it has a primary.
    pub(crate) fn start(&self, shared: Arc<Shared>) {
        let s = shared.clone();
        tokio::spawn(async move {
            let Some(r) = &s.router else { return };
            let mut warned = false;
            loop {
                if s.shutdown.is_cancelled() {
                    return;
                }
                match r.connect_config().await {
                    Ok(()) => {
                        s.log("SHARDING", 22727, "Sharding state initialized from the config server", doc! {"configServer": format!("{}/{}", r.config_set, r.config_hosts.join(","))});
                        return;
                    }
                    Err(e) => {
                        if !warned {
                            s.log("SHARDING", 22856, "Error initializing sharding state, sleeping for 2 seconds and trying again", doc! {"error": e.to_string()});
                            warned = true;
                        }
                    }
                }
                tokio::select! {
                    _ = s.shutdown.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                }
            }
        });
    }

    async fn connect_config(&self) -> CmdResult<()> {
        let client = client_for(&self.config_hosts, Some(&self.config_set), 1000).await?;
        let hello = run_on(&client, "admin", doc! {"hello": 1}).await?;
        if hello.get_str("setName").ok() != Some(self.config_set.as_str())
            || !hello.get_bool("isWritablePrimary").unwrap_or(false)
        {
            return Err(not_ready(&self.config_set));
        }
        if let Ok(mut st) = self.state.write() {
            st.config = Some(client);
        }
        self.reload().await?;
        self.ready.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn config(&self) -> CmdResult<Client> {
        self.state
            .read()
            .ok()
            .and_then(|s| s.config.clone())
            .ok_or_else(|| not_ready(&self.config_set))
    }

    async fn config_find(&self, coll: &str, filter: Document) -> CmdResult<Vec<Document>> {
        let c = self.config()?;
        gather(
            &c,
            "config",
            doc! {"find": coll, "filter": filter, "batchSize": 100_000},
        )
        .await
    }

    async fn config_write(&self, cmd: Document) -> CmdResult {
        let c = self.config()?;
        let d = run_on(&c, "config", cmd).await?;
        if let Ok(errs) = d.get_array("writeErrors")
            && let Some(Bson::Document(e)) = errs.first()
        {
            return Err(CmdError::new(
                e.get_i32("code").unwrap_or(1),
                e.get_str("errmsg").unwrap_or_default().to_string(),
            ));
        }
        Ok(d)
    }

    /// Re-reads every piece of metadata from the config server (start-up and `flushRouterConfig`).
    async fn reload(&self) -> CmdResult<()> {
        let shards = self.config_find("shards", doc! {}).await?;
        let dbs = self.config_find("databases", doc! {}).await?;
        let colls = self.config_find("collections", doc! {}).await?;
        let mut conns = Vec::new();
        for s in shards {
            let (Ok(id), Ok(host)) = (s.get_str("_id"), s.get_str("host")) else {
                continue;
            };
            let (set, hosts) = match host.split_once('/') {
                Some((set, h)) => (
                    Some(set.to_string()),
                    h.split(',').map(String::from).collect::<Vec<_>>(),
                ),
                None => (None, vec![host.to_string()]),
            };
            let client = client_for(&hosts, set.as_deref(), 5000).await?;
            conns.push(ShardConn {
                id: id.to_string(),
                host: host.to_string(),
                client,
            });
        }
        let mut metas = HashMap::new();
        for c in colls {
            if c.get_bool("dropped").unwrap_or(false) {
                continue;
            }
            let (Ok(ns), Ok(key)) = (c.get_str("_id"), c.get_document("key")) else {
                continue;
            };
            let uuid = match c.get("uuid") {
                Some(Bson::Binary(b)) => b.clone(),
                _ => continue,
            };
            let mut chunks: Vec<Chunk> = self
                .config_find("chunks", doc! {"uuid": Bson::Binary(uuid.clone())})
                .await?
                .into_iter()
                .filter_map(|ch| {
                    let min = ch.get_document("min").ok()?.iter().next()?.1.clone();
                    Some(Chunk {
                        min,
                        shard: ch.get_str("shard").ok()?.to_string(),
                    })
                })
                .collect();
            chunks.sort_by(|a, b| cmp_bson(&a.min, &b.min));
            let (field, hashed) = key
                .iter()
                .next()
                .map(|(k, v)| (k.clone(), v.as_str() == Some("hashed")))
                .unwrap_or_else(|| ("_id".to_string(), false));
            metas.insert(
                ns.to_string(),
                CollMeta {
                    key: key.clone(),
                    field,
                    hashed,
                    unique: c.get_bool("unique").unwrap_or(false),
                    uuid,
                    chunks,
                },
            );
        }
        let mut db_map = HashMap::new();
        for d in dbs {
            if let (Ok(id), Ok(p)) = (d.get_str("_id"), d.get_str("primary")) {
                db_map.insert(id.to_string(), p.to_string());
            }
        }
        let mut st = self
            .state
            .write()
            .map_err(|_| CmdError::new(1, "router state poisoned"))?;
        st.shards = conns;
        st.dbs = db_map;
        st.colls = metas;
        Ok(())
    }

    fn shards(&self) -> Vec<ShardConn> {
        self.state
            .read()
            .map(|s| s.shards.clone())
            .unwrap_or_default()
    }

    fn shard(&self, id: &str) -> CmdResult<ShardConn> {
        self.state
            .read()
            .ok()
            .and_then(|s| s.shards.iter().find(|x| x.id == id).cloned())
            .ok_or_else(|| CmdError::new(code::SHARD_NOT_FOUND, format!("Shard {id} not found")))
    }

    fn meta(&self, ns: &str) -> Option<CollMeta> {
        self.state
            .read()
            .ok()
            .and_then(|s| s.colls.get(ns).cloned())
    }

    /// Another mongos may have sharded `ns` since the last load: re-read the metadata, at most once a
    /// second per namespace (sharded namespaces, once known, cost nothing).
    async fn refresh_if_unknown(&self, ns: &str) {
        if self.meta(ns).is_some() {
            return;
        }
        let due = match self.misses.lock() {
            Ok(mut m) => match m.get(ns) {
                Some(t) if t.elapsed() < Duration::from_secs(1) => false,
                _ => {
                    m.insert(ns.to_string(), std::time::Instant::now());
                    true
                }
            },
            Err(_) => false,
        };
        if due {
            let _ = self.reload().await;
        }
    }

    /// The primary shard of `db`, creating the database entry (on the least-loaded shard) when missing.
    async fn ensure_db(&self, db: &str, wanted: Option<&str>) -> CmdResult<String> {
        if let Some(p) = self.state.read().ok().and_then(|s| s.dbs.get(db).cloned()) {
            return Ok(p);
        }
        let _g = self.ddl.lock().await;
        // Another mongos may have created it (or added shards) meanwhile.
        let _ = self.reload().await;
        let (existing, shards, counts) = {
            let st = self
                .state
                .read()
                .map_err(|_| CmdError::new(1, "router state poisoned"))?;
            let mut counts: HashMap<String, usize> = HashMap::new();
            for p in st.dbs.values() {
                *counts.entry(p.clone()).or_default() += 1;
            }
            (st.dbs.get(db).cloned(), st.shards.clone(), counts)
        };
        if let Some(p) = existing {
            return Ok(p);
        }
        if shards.is_empty() {
            return Err(no_shards(db));
        }
        let primary = match wanted {
            Some(w) => shards
                .iter()
                .find(|s| s.id == w)
                .map(|s| s.id.clone())
                .ok_or_else(|| {
                    CmdError::new(code::SHARD_NOT_FOUND, format!("Shard {w} not found"))
                })?,
            None => shards
                .iter()
                .min_by_key(|s| counts.get(&s.id).copied().unwrap_or(0))
                .map(|s| s.id.clone())
                .ok_or_else(|| no_shards(db))?,
        };
        let now = DateTime::now();
        let res = self.config_write(doc! {"insert": "databases", "documents": [{
            "_id": db, "primary": primary.clone(), "partitioned": false,
            "version": {"uuid": Bson::Binary(new_uuid()), "timestamp": Timestamp{time: (now.timestamp_millis()/1000) as u32, increment: 1}, "lastMod": 1},
        }]})
        .await;
        let primary = match res {
            Ok(_) => primary,
            // Another mongos created it first: take its choice from the config server.
            Err(e) if e.code == code::DUPLICATE_KEY => self
                .config_find("databases", doc! {"_id": db})
                .await?
                .first()
                .and_then(|d| d.get_str("primary").ok().map(str::to_string))
                .ok_or(e)?,
            Err(e) => return Err(e),
        };
        if let Ok(mut st) = self.state.write() {
            st.dbs.insert(db.to_string(), primary.clone());
        }
        Ok(primary)
    }

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
            .map_err(|_| CmdError::new(1, "router state poisoned"))?;
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
        shared: &Arc<Shared>,
        name: &str,
        db: &str,
        body: &Document,
    ) -> CmdResult {
        if !self.ready.load(Ordering::SeqCst) {
            // Like real mongos, a command waits a little for the config server (server selection)
            // before failing with FailedToSatisfyReadPreference.
            let deadline = std::time::Instant::now() + NOT_READY_WAIT;
            while !self.ready.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let cmd = lookup(name);
        if !self.ready.load(Ordering::SeqCst) {
            return match cmd.map(|(_, unready)| unready) {
                Some(Unready::Local) => self.local(shared, name, db, body).await,
                Some(Unready::NotReady) => Err(not_ready(&self.config_set)),
                Some(Unready::NotFound) | None => Err(command_not_found(name)),
            };
        }
        let cmd = cmd.map(|(cmd, _)| cmd);
        // The config and admin databases live on the config server: data commands there (and any command the
        // router does not know, on `config`) go to it.
        if cmd.is_none_or(Cmd::is_data)
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
        {
            let c = self.config()?;
            if matches!(cmd, Some(Cmd::Find | Cmd::Aggregate)) {
                let docs = gather(&c, db, clean(body)).await?;
                let coll = body.get_str(name).unwrap_or("$cmd");
                return Ok(cursor_reply(
                    shared,
                    &format!("{db}.{coll}"),
                    VecDeque::from(docs),
                    None,
                    false,
                ));
            }
            return run_on(&c, db, clean(body)).await;
        }
        let Some(cmd) = cmd else {
            return Err(command_not_found(name));
        };
        match cmd {
            Cmd::AddShard => self.add_shard(shared, db, body).await,
            Cmd::IsDbGrid => {
                Ok(doc! {"isdbgrid": 1, "hostname": shared.hostname.clone(), "ok": 1.0})
            }
            Cmd::ListShards => self.list_shards().await,
            Cmd::EnableSharding => {
                // `name` is the body's first key, so only its type can be wrong.
                let target = Fields::new(name, body).req_str(name)?;
                check_db_name(&target)?;
                self.ensure_db(&target, body.get_str("primaryShard").ok())
                    .await?;
                Ok(doc! {"ok": 1.0})
            }
            Cmd::ShardCollection => self.shard_collection(body).await,
            Cmd::BalancerStart | Cmd::BalancerStop => {
                let on = cmd == Cmd::BalancerStart;
                self.config_write(doc! {"update": "settings", "updates": [{"q": {"_id": "balancer"}, "u": {"$set": {"mode": if on {"full"} else {"off"}, "stopped": !on}}, "upsert": true}]}).await?;
                Ok(doc! {"ok": 1.0})
            }
            Cmd::BalancerStatus => {
                let s = self
                    .config_find("settings", doc! {"_id": "balancer"})
                    .await?;
                let mode = s
                    .first()
                    .and_then(|d| d.get_str("mode").ok())
                    .unwrap_or("full")
                    .to_string();
                let rounds = self
                    .balancer_rounds
                    .fetch_add(i64::from(mode == "full"), Ordering::Relaxed);
                Ok(
                    doc! {"mode": mode, "inBalancerRound": false, "numBalancerRounds": rounds, "ok": 1.0},
                )
            }
            Cmd::FlushRouterConfig => {
                self.reload().await?;
                Ok(doc! {"flushed": true, "ok": 1.0})
            }
            Cmd::GetMore | Cmd::KillCursors => self.local(shared, name, db, body).await,
            Cmd::Insert => self.insert(shared, db, body).await,
            Cmd::Update => self.update(shared, db, body).await,
            Cmd::Delete => self.delete(shared, db, body).await,
            Cmd::Find => self.find(shared, db, body).await,
            Cmd::Count => self.count(shared, db, body).await,
            Cmd::Aggregate => self.aggregate(shared, db, body).await,
            Cmd::Create => {
                let coll = coll_name(name, db, body)?;
                let _ = coll;
                let p = self.ensure_db(db, None).await?;
                run_on(&self.shard(&p)?.client, db, clean(body)).await
            }
            Cmd::CreateIndexes => {
                let coll = coll_name(name, db, body)?;
                let p = self.ensure_db(db, None).await?;
                let targets = match self.meta(&format!("{db}.{coll}")) {
                    Some(_) => self.shards(),
                    None => vec![self.shard(&p)?],
                };
                let mut last = doc! {};
                for r in join_all(targets.iter().map(|s| run_on(&s.client, db, clean(body)))).await
                {
                    last = r?;
                }
                Ok(last)
            }
            Cmd::ListIndexes | Cmd::ListCollections => {
                check_db_name(db)?;
                let p = self.state.read().ok().and_then(|s| s.dbs.get(db).cloned());
                let docs = match p {
                    Some(p) => gather(&self.shard(&p)?.client, db, clean(body)).await?,
                    None if cmd == Cmd::ListIndexes => {
                        return Err(CmdError::new(
                            code::NAMESPACE_NOT_FOUND,
                            format!(
                                "ns does not exist: {db}.{}",
                                body.get_str(name).unwrap_or_default()
                            ),
                        ));
                    }
                    None => Vec::new(),
                };
                Ok(cursor_reply(
                    shared,
                    &format!("{db}.$cmd.{name}"),
                    VecDeque::from(docs),
                    None,
                    false,
                ))
            }
            Cmd::Drop => {
                let coll = coll_name(name, db, body)?;
                let ns = format!("{db}.{coll}");
                for r in join_all(
                    self.shards()
                        .iter()
                        .map(|s| run_on(&s.client, db, clean(body))),
                )
                .await
                {
                    r?;
                }
                if let Some(meta) = self.meta(&ns) {
                    self.config_write(doc! {"delete": "chunks", "deletes": [{"q": {"uuid": Bson::Binary(meta.uuid)}, "limit": 0}]}).await?;
                    self.config_write(doc! {"delete": "collections", "deletes": [{"q": {"_id": ns.clone()}, "limit": 0}]}).await?;
                    if let Ok(mut st) = self.state.write() {
                        st.colls.remove(&ns);
                    }
                }
                Ok(doc! {"ns": ns, "ok": 1.0})
            }
            Cmd::DropDatabase => {
                check_db_name(db)?;
                for r in join_all(
                    self.shards()
                        .iter()
                        .map(|s| run_on(&s.client, db, doc! {"dropDatabase": 1})),
                )
                .await
                {
                    r?;
                }
                let prefix = format!("{db}.");
                let metas: Vec<(String, CollMeta)> = self
                    .state
                    .read()
                    .map(|s| {
                        s.colls
                            .iter()
                            .filter(|(k, _)| k.starts_with(&prefix))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                for (ns, m) in &metas {
                    self.config_write(doc! {"delete": "chunks", "deletes": [{"q": {"uuid": Bson::Binary(m.uuid.clone())}, "limit": 0}]}).await?;
                    self.config_write(doc! {"delete": "collections", "deletes": [{"q": {"_id": ns.clone()}, "limit": 0}]}).await?;
                }
                self.config_write(
                    doc! {"delete": "databases", "deletes": [{"q": {"_id": db}, "limit": 0}]},
                )
                .await?;
                if let Ok(mut st) = self.state.write() {
                    st.dbs.remove(db);
                    st.colls.retain(|k, _| !k.starts_with(&prefix));
                }
                Ok(doc! {"dropped": db, "ok": 1.0})
            }
            Cmd::ListDatabases => self.list_databases(body).await,
            Cmd::DbStats => self.db_stats(db, body).await,
            Cmd::CollStats => {
                let coll = coll_name(name, db, body)?;
                let per = self.coll_stats_per_shard(db, &coll).await?;
                let (mut count, mut size, mut idx) = (0i64, 0i64, 0i64);
                let mut shards = Document::new();
                for d in &per {
                    let s = d.get_document("storageStats").cloned().unwrap_or_default();
                    count += s.get("count").and_then(as_i64).unwrap_or(0);
                    size += s.get("size").and_then(as_i64).unwrap_or(0);
                    idx += s.get("totalIndexSize").and_then(as_i64).unwrap_or(0);
                    shards.insert(d.get_str("shard").unwrap_or_default(), s);
                }
                Ok(
                    doc! {"sharded": self.meta(&format!("{db}.{coll}")).is_some(), "ns": format!("{db}.{coll}"), "count": count, "size": size, "totalIndexSize": idx, "shards": shards, "ok": 1.0},
                )
            }
        }
    }

    async fn local(
        &self,
        shared: &Arc<Shared>,
        name: &str,
        db: &str,
        body: &Document,
    ) -> CmdResult {
        match name {
            "getMore" => mongod::get_more(shared, db, body).await,
            _ => mongod::kill_cursors(shared, body),
        }
    }

    async fn add_shard(&self, _shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
        if db != "admin" {
            return Err(CmdError::new(
                13,
                "addShard may only be run against the admin database.",
            ));
        }
        let spec = Fields::new("addShard", body).req_str("addShard")?;
        let name = body.get_str("name").ok().map(str::to_string);
        let (set, hosts): (Option<String>, Vec<String>) = match spec.split_once('/') {
            Some((s, h)) => (
                Some(s.to_string()),
                h.split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect(),
            ),
            None => (
                None,
                spec.split(',').map(|x| x.trim().to_string()).collect(),
            ),
        };
        if hosts.is_empty() {
            return Err(CmdError::new(
                code::FAILED_TO_PARSE,
                format!("Invalid connection string {spec}"),
            ));
        }
        // Ask the seed hosts who they are; like mongos's replica-set monitor, prefer the one
        // that is primary (any member may have won the election), else the first that answered.
        let mut hello: Option<Document> = None;
        let mut last_err = None;
        for h in &hosts {
            match client_for(std::slice::from_ref(h), None, 2000).await {
                Ok(c) => match run_on(&c, "admin", doc! {"hello": 1}).await {
                    Ok(d) => {
                        let primary = d.get_bool("isWritablePrimary").unwrap_or(false);
                        if hello.is_none() || primary {
                            hello = Some(d);
                        }
                        if primary {
                            break;
                        }
                    }
                    Err(e) => last_err = Some(e),
                },
                Err(e) => last_err = Some(e),
            }
        }
        let Some(hello) = hello else {
            return match set {
                Some(s) => Err(not_ready(&s)),
                None => Err(last_err.unwrap_or_else(|| {
                    CmdError::new(code::HOST_UNREACHABLE, format!("cannot reach {spec}"))
                })),
            };
        };
        if hello.get_str("msg") == Ok("isdbgrid") {
            return Err(CmdError::new(
                code::OPERATION_FAILED,
                format!("can't add a mongos process as a shard: {spec}"),
            ));
        }
        let actual_set = hello.get_str("setName").ok().map(str::to_string);
        let set = match (set, actual_set) {
            (None, None) => {
                return Err(CmdError::new(
                    code::OPERATION_FAILED,
                    format!(
                        "Cannot add {spec} as a shard since it is not a replica set member: shards must be replica sets"
                    ),
                ));
            }
            (None, Some(actual)) => {
                return Err(CmdError::new(
                    code::OPERATION_FAILED,
                    format!(
                        "in seed list {spec}, host {} is part of set {actual}; use replica set url format <setname>/<server1>,<server2>, ...",
                        hosts[0]
                    ),
                ));
            }
            (Some(s), None) => return Err(not_ready(&s)),
            (Some(s), Some(actual)) if s != actual => {
                return Err(CmdError::new(
                    code::OPERATION_FAILED,
                    format!(
                        "the provided connection string ({spec}) does not match the actual set name {actual}"
                    ),
                ));
            }
            (Some(s), Some(_)) => s,
        };
        if !hello.get_bool("isWritablePrimary").unwrap_or(false) {
            return Err(not_ready(&set));
        }
        let _g = self.ddl.lock().await;
        let existing = self.config_find("shards", doc! {}).await?;
        let shard_name = name.clone().unwrap_or_else(|| set.clone());
        for s in &existing {
            let id = s.get_str("_id").unwrap_or_default();
            let host = s.get_str("host").unwrap_or_default();
            let (eset, ehosts) = host.split_once('/').unwrap_or(("", host));
            if eset == set {
                let overlap = ehosts.split(',').any(|h| hosts.iter().any(|x| x == h));
                if overlap && name.as_deref().is_none_or(|n| n == id) {
                    return Ok(doc! {"shardAdded": id, "ok": 1.0});
                }
                if overlap {
                    return Err(CmdError::new(
                        code::ILLEGAL_OPERATION,
                        format!("A shard already exists containing the replica set '{set}'"),
                    ));
                }
                return Err(CmdError::new(
                    code::ILLEGAL_OPERATION,
                    format!("A shard named {id} containing the replica set '{set}' already exists"),
                ));
            }
            if id == shard_name {
                return Err(CmdError::new(
                    code::ILLEGAL_OPERATION,
                    format!("A shard named {id} already exists"),
                ));
            }
        }
        let all_hosts = match hello.get_array("hosts") {
            Ok(h) => h
                .iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect::<Vec<_>>()
                .join(","),
            Err(_) => hosts.join(","),
        };
        let now = DateTime::now();
        let host = format!("{set}/{all_hosts}");
        self.config_write(doc! {"insert": "shards", "documents": [{"_id": shard_name.clone(), "host": host.clone(), "state": 1, "topologyTime": Timestamp{time: (now.timestamp_millis()/1000) as u32, increment: 1}}]}).await?;
        let hlist: Vec<String> = all_hosts.split(',').map(String::from).collect();
        let client = client_for(&hlist, Some(&set), 5000).await?;
        if let Ok(mut st) = self.state.write() {
            st.shards.push(ShardConn {
                id: shard_name.clone(),
                host,
                client,
            });
        }
        Ok(doc! {"shardAdded": shard_name, "ok": 1.0})
    }

    async fn list_shards(&self) -> CmdResult {
        let shards = self.config_find("shards", doc! {}).await?;
        Ok(doc! {"shards": shards, "ok": 1.0})
    }

    async fn shard_collection(&self, body: &Document) -> CmdResult {
        let f = Fields::new("shardCollection", body);
        let ns = f.req_str_alias("shardCollection", "shardcollection")?;
        let Some((db, coll)) = ns
            .split_once('.')
            .filter(|(d, c)| !d.is_empty() && !c.is_empty())
        else {
            return Err(CmdError::new(
                code::INVALID_NAMESPACE,
                format!("Invalid namespace specified '{ns}'"),
            ));
        };
        check_db_name(db)?;
        if db == "config" || db == "admin" || db == "local" {
            return Err(CmdError::new(
                code::ILLEGAL_OPERATION,
                format!("can't shard {db} database"),
            ));
        }
        let key = f.req_doc("key")?;
        if key.is_empty() {
            return Err(CmdError::new(
                code::INVALID_OPTIONS,
                "cannot have empty shard key",
            ));
        }
        let mut hashed_fields = 0;
        for (k, v) in &key {
            match v {
                Bson::String(s) if s == "hashed" => hashed_fields += 1,
                v if as_i64(v) == Some(1) => {}
                other => {
                    return Err(CmdError::bad_value(format!(
                        "Unsupported shard key pattern {{ {k}: {other} }}. Pattern must either be a single hashed field, or a list of ascending fields"
                    )));
                }
            }
        }
        if hashed_fields > 1 {
            return Err(CmdError::bad_value(
                "Shard key pattern can have at most one hashed field",
            ));
        }
        let hashed = hashed_fields == 1;
        let unique = body.get("unique").is_some_and(truthy);
        if hashed && unique {
            return Err(CmdError::new(
                code::INVALID_OPTIONS,
                "Hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.",
            ));
        }
        let num_initial = match body.get("numInitialChunks") {
            None | Some(Bson::Null) => None,
            Some(v) => match as_i64(v) {
                Some(n) if n >= 0 => Some(n as usize),
                _ => {
                    return Err(CmdError::bad_value(
                        "numInitialChunks must be a non-negative number",
                    ));
                }
            },
        };
        if num_initial.is_some_and(|n| n > 0) && !hashed {
            return Err(CmdError::new(
                code::INVALID_OPTIONS,
                "numInitialChunks is only supported when the collection is empty and has a hashed field in the shard key pattern",
            ));
        }
        self.refresh_if_unknown(&ns).await;
        if let Some(existing) = self.meta(&ns) {
            if existing.key == key && existing.unique == unique {
                return Ok(doc! {"collectionsharded": ns, "ok": 1.0});
            }
            return Err(CmdError::new(
                code::ALREADY_INITIALIZED,
                format!(
                    "sharding already enabled for collection {ns} with options {{ shardKey: {}, unique: {} }}",
                    existing.key, existing.unique
                ),
            ));
        }
        let primary = self.ensure_db(db, None).await?;
        let _g = self.ddl.lock().await;
        let shards = self.shards();
        if shards.is_empty() {
            return Err(no_shards(db));
        }
        if num_initial.is_some_and(|n| n > 8192 * shards.len()) {
            return Err(CmdError::bad_value(format!(
                "numInitialChunks cannot be more than either: 8192 * number of shards; or 1000000000; got {}",
                num_initial.unwrap_or(0)
            )));
        }
        let primary_conn = self.shard(&primary)?;
        let existing_count = run_on(&primary_conn.client, db, doc! {"count": coll})
            .await?
            .get("n")
            .and_then(as_i64)
            .unwrap_or(0);
        let field = key
            .keys()
            .next()
            .cloned()
            .unwrap_or_else(|| "_id".to_string());
        // Chunk boundaries: hashed and empty → spread over every shard; otherwise one chunk on the primary.
        let mut chunks: Vec<Chunk> = Vec::new();
        if hashed && existing_count == 0 {
            let n = num_initial
                .filter(|n| *n > 0)
                .unwrap_or(2 * shards.len())
                .max(shards.len());
            let step = (u64::MAX / n as u64) as i128;
            for i in 0..n {
                let min = if i == 0 {
                    Bson::MinKey
                } else {
                    Bson::Int64((i64::MIN as i128 + step * i as i128) as i64)
                };
                let shard = shards[i * shards.len() / n].id.clone();
                chunks.push(Chunk { min, shard });
            }
        } else {
            chunks.push(Chunk {
                min: Bson::MinKey,
                shard: primary.clone(),
            });
        }
        // Supporting index on every shard that owns chunks.
        let index_name = key
            .iter()
            .map(|(k, v)| {
                format!(
                    "{k}_{}",
                    v.as_str()
                        .map(String::from)
                        .unwrap_or_else(|| v.to_string())
                )
            })
            .collect::<Vec<_>>()
            .join("_");
        let mut owners: Vec<String> = chunks.iter().map(|c| c.shard.clone()).collect();
        owners.sort();
        owners.dedup();
        for id in &owners {
            let s = self.shard(id)?;
            if key != doc! {"_id": 1} {
                run_on(&s.client, db, doc! {"createIndexes": coll, "indexes": [{"key": key.clone(), "name": index_name.clone()}]}).await?;
            } else {
                let _ = run_on(&s.client, db, doc! {"create": coll}).await;
            }
        }
        let uuid = new_uuid();
        let now = DateTime::now();
        let ts = Timestamp {
            time: (now.timestamp_millis() / 1000) as u32,
            increment: 1,
        };
        let epoch = ObjectId::new();
        self.config_write(doc! {"insert": "collections", "documents": [{
            "_id": ns.clone(), "lastmodEpoch": epoch, "lastmod": now, "timestamp": ts,
            "uuid": Bson::Binary(uuid.clone()), "key": key.clone(), "unique": unique, "noBalance": false,
        }]})
        .await?;
        let mut chunk_docs = Vec::new();
        for (i, c) in chunks.iter().enumerate() {
            let max = chunks
                .get(i + 1)
                .map(|n| n.min.clone())
                .unwrap_or(Bson::MaxKey);
            chunk_docs.push(Bson::Document(doc! {
                "_id": ObjectId::new(),
                "uuid": Bson::Binary(uuid.clone()),
                "min": {field.clone(): c.min.clone()},
                "max": {field.clone(): max},
                "shard": c.shard.clone(),
                "lastmod": Timestamp { time: 1, increment: i as u32 },
                "onCurrentShardSince": ts,
                "history": [{"validAfter": ts, "shard": c.shard.clone()}],
            }));
        }
        self.config_write(doc! {"insert": "chunks", "documents": chunk_docs})
            .await?;
        if let Ok(mut st) = self.state.write() {
            st.colls.insert(
                ns.clone(),
                CollMeta {
                    key,
                    field,
                    hashed,
                    unique,
                    uuid: uuid.clone(),
                    chunks,
                },
            );
        }
        Ok(doc! {"collectionsharded": ns, "collectionUUID": Bson::Binary(uuid), "ok": 1.0})
    }

    async fn insert(&self, shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
        let coll = coll_name("insert", db, body)?;
        let mut docs = Fields::new("insert", body).doc_array("documents")?;
        self.refresh_if_unknown(&format!("{db}.{coll}")).await;
        let ordered = body.get("ordered").is_none_or(truthy);
        let primary = self.ensure_db(db, None).await?;
        let n_docs = docs.len() as u32;
        shared
            .counters
            .insert
            .fetch_add(docs.len() as u64, Ordering::Relaxed);
        let ns = format!("{db}.{coll}");
        let base = clean(body);
        let send = |shard: ShardConn, idx: Vec<usize>, ds: Vec<Document>| {
            let mut cmd = base.clone();
            cmd.insert(
                "documents",
                ds.into_iter().map(Bson::Document).collect::<Vec<_>>(),
            );
            async move { (idx, run_on(&shard.client, db, cmd).await) }
        };
        let Some(meta) = self.meta(&ns) else {
            let s = self.shard(&primary)?;
            let mut cmd = base.clone();
            cmd.insert(
                "documents",
                docs.into_iter().map(Bson::Document).collect::<Vec<_>>(),
            );
            let r = run_on(&s.client, db, cmd).await;
            shared.occupy(n_docs).await;
            return r;
        };
        // Real mongos adds the _id before routing, so every shard sees the same document.
        for d in &mut docs {
            if !d.contains_key("_id") {
                let mut with = doc! {"_id": ObjectId::new()};
                with.extend(std::mem::take(d));
                *d = with;
            }
        }
        let owners: Vec<String> = docs
            .iter()
            .map(|d| {
                Self::owner(&meta, d.get(&meta.field).unwrap_or(&Bson::Null))
                    .unwrap_or_else(|| primary.clone())
            })
            .collect();
        let mut total = doc! {"n": 0};
        if ordered {
            // Contiguous runs to the same shard, in order, stopping at the first error.
            let mut i = 0;
            while i < docs.len() {
                let mut j = i;
                while j < docs.len() && owners[j] == owners[i] {
                    j += 1;
                }
                let s = self.shard(&owners[i])?;
                let (idx, r) = send(s, (i..j).collect(), docs[i..j].to_vec()).await;
                let part = r?;
                merge_write_reply(&mut total, &part, &idx);
                if part.get_array("writeErrors").is_ok_and(|e| !e.is_empty()) {
                    break;
                }
                i = j;
            }
        } else {
            let mut groups: HashMap<String, (Vec<usize>, Vec<Document>)> = HashMap::new();
            for (i, d) in docs.into_iter().enumerate() {
                let g = groups.entry(owners[i].clone()).or_default();
                g.0.push(i);
                g.1.push(d);
            }
            let mut futs = Vec::new();
            for (id, (idx, ds)) in groups {
                futs.push(send(self.shard(&id)?, idx, ds));
            }
            for (idx, r) in join_all(futs).await {
                merge_write_reply(&mut total, &r?, &idx);
            }
            sort_errors(&mut total);
        }
        shared.occupy(n_docs).await;
        total.insert("ok", 1.0);
        Ok(total)
    }

    async fn update(&self, shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
        self.write_statements(shared, db, body, "update", "updates")
            .await
    }

    async fn delete(&self, shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
        self.write_statements(shared, db, body, "delete", "deletes")
            .await
    }

    /// Updates and deletes, statement by statement: targeted when the filter pins the shard key.
    async fn write_statements(
        &self,
        shared: &Arc<Shared>,
        db: &str,
        body: &Document,
        cmd: &str,
        field: &str,
    ) -> CmdResult {
        let coll = coll_name(cmd, db, body)?;
        let stmts = Fields::new(cmd, body).doc_array(field)?;
        self.refresh_if_unknown(&format!("{db}.{coll}")).await;
        let ordered = body.get("ordered").is_none_or(truthy);
        self.ensure_db(db, None).await?;
        let counter = if cmd == "update" {
            &shared.counters.update
        } else {
            &shared.counters.delete
        };
        counter.fetch_add(stmts.len() as u64, Ordering::Relaxed);
        let ns = format!("{db}.{coll}");
        let sharded = self.meta(&ns).is_some();
        let mut total = if cmd == "update" {
            doc! {"n": 0, "nModified": 0}
        } else {
            doc! {"n": 0}
        };
        let base = clean(body);
        // Unsharded: the whole batch goes to the primary shard as is.
        if !sharded {
            let Target::One(s) = self.target_filter(&ns, db, &doc! {})? else {
                return Err(CmdError::new(
                    1,
                    "unsharded collection without a primary shard",
                ));
            };
            let r = run_on(&s.client, db, base).await;
            shared.occupy(stmts.len() as u32).await;
            return r;
        }
        for (i, st) in stmts.iter().enumerate() {
            let q = st.get_document("q").cloned().unwrap_or_default();
            let single = if cmd == "update" {
                !st.get("multi").is_some_and(truthy)
            } else {
                st.get("limit").and_then(as_i64) == Some(1)
            };
            let upsert = st.get("upsert").is_some_and(truthy);
            let mut one = base.clone();
            one.insert(field, vec![Bson::Document(st.clone())]);
            let part = match self.target_filter(&ns, db, &q)? {
                Target::One(s) => run_on(&s.client, db, one).await?,
                Target::All(_) if upsert => {
                    let e = doc! {"index": 0, "code": 61, "errmsg": format!("Failed to target upsert by query :: could not extract exact shard key from {q}")};
                    doc! {"n": 0, "writeErrors": [e]}
                }
                Target::All(shards) if single => {
                    let mut part = doc! {"n": 0};
                    for s in shards {
                        let r = run_on(&s.client, db, one.clone()).await?;
                        let hit = r.get("n").and_then(as_i64).unwrap_or(0) > 0
                            || r.contains_key("writeErrors");
                        part = r;
                        if hit {
                            break;
                        }
                    }
                    part
                }
                Target::All(shards) => {
                    let mut part = doc! {"n": 0};
                    for r in
                        join_all(shards.iter().map(|s| run_on(&s.client, db, one.clone()))).await
                    {
                        merge_write_reply(&mut part, &r?, &[0]);
                    }
                    part
                }
            };
            merge_write_reply(&mut total, &part, &[i]);
            if ordered && part.get_array("writeErrors").is_ok_and(|e| !e.is_empty()) {
                break;
            }
        }
        sort_errors(&mut total);
        shared.occupy(stmts.len() as u32).await;
        total.insert("ok", 1.0);
        Ok(total)
    }

    async fn find(&self, shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
        let coll = coll_name("find", db, body)?;
        let f = Fields::new("find", body);
        let filter = f.opt_doc("filter")?;
        self.refresh_if_unknown(&format!("{db}.{coll}")).await;
        Matcher::new(&filter)?;
        let sort = Sort::new(&f.opt_doc("sort")?)?;
        let skip = f.opt_count("skip")?.unwrap_or(0);
        let limit = f.opt_count("limit")?.filter(|l| *l > 0);
        let batch_size = f.opt_count("batchSize")?;
        let single_batch = body.get("singleBatch").is_some_and(truthy);
        shared.counters.query.fetch_add(1, Ordering::Relaxed);
        let ns = format!("{db}.{coll}");
        let mut cmd = clean(body);
        for k in ["skip", "limit", "batchSize", "singleBatch"] {
            cmd.remove(k);
        }
        if let Some(l) = limit {
            cmd.insert("limit", (l + skip) as i64);
        }
        cmd.insert(
            "batchSize",
            limit.map(|l| (l + skip) as i64).unwrap_or(100_000),
        );
        let docs = match self.target_filter(&ns, db, &filter)? {
            Target::One(s) => gather(&s.client, db, cmd).await?,
            Target::All(shards) => {
                let mut all = Vec::new();
                for r in join_all(shards.iter().map(|s| gather(&s.client, db, cmd.clone()))).await {
                    all.extend(r?);
                }
                if let Some(s) = &sort {
                    all.sort_by(|a, b| s.compare(a, b));
                }
                all
            }
        };
        let docs: VecDeque<Document> = docs
            .into_iter()
            .skip(skip)
            .take(limit.unwrap_or(usize::MAX))
            .collect();
        shared.occupy(1).await;
        let single = single_batch || limit.is_some_and(|l| batch_size.is_none_or(|b| b >= l));
        Ok(cursor_reply(shared, &ns, docs, batch_size, single))
    }

    async fn count(&self, shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
        let coll = coll_name("count", db, body)?;
        let f = Fields::new("count", body);
        let q = f.opt_doc("query")?;
        self.refresh_if_unknown(&format!("{db}.{coll}")).await;
        let skip = f.opt_count("skip")?.unwrap_or(0);
        let limit = f.opt_count("limit")?.filter(|l| *l > 0);
        let ns = format!("{db}.{coll}");
        let mut cmd = clean(body);
        cmd.remove("skip");
        cmd.remove("limit");
        let shards = match self.target_filter(&ns, db, &q)? {
            Target::One(s) => vec![s],
            Target::All(v) => v,
        };
        let mut n = 0i64;
        for r in join_all(shards.iter().map(|s| run_on(&s.client, db, cmd.clone()))).await {
            n += r?.get("n").and_then(as_i64).unwrap_or(0);
        }
        let n = (n - skip as i64).max(0);
        let n = limit.map_or(n, |l| n.min(l as i64));
        shared.occupy(1).await;
        Ok(doc! {"n": n, "ok": 1.0})
    }

    async fn coll_stats_per_shard(&self, db: &str, coll: &str) -> CmdResult<Vec<Document>> {
        let ns = format!("{db}.{coll}");
        let shards = match self.target_filter(&ns, db, &doc! {})? {
            Target::One(s) => vec![s],
            Target::All(v) => v,
        };
        let cmd = doc! {"aggregate": coll, "pipeline": [{"$collStats": {"storageStats": {}, "count": {}}}], "cursor": {}};
        let mut out = Vec::new();
        for (s, r) in shards
            .iter()
            .zip(join_all(shards.iter().map(|s| gather(&s.client, db, cmd.clone()))).await)
        {
            for mut d in r? {
                d.insert("shard", s.id.clone());
                out.push(d);
            }
        }
        Ok(out)
    }

    async fn aggregate(&self, shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
        check_db_name(db)?;
        let Some(Bson::String(coll)) = body.get("aggregate") else {
            return Err(CmdError::new(
                code::INVALID_NAMESPACE,
                "{aggregate: 1} is not supported through the stand-in mongos",
            ));
        };
        let coll = coll.clone();
        let pipeline = Fields::new("aggregate", body).doc_array("pipeline")?;
        let batch_size = match body.get("cursor") {
            Some(Bson::Document(c)) => Fields::new("aggregate", c).opt_count("batchSize")?,
            _ => None,
        };
        shared.counters.query.fetch_add(1, Ordering::Relaxed);
        let ns = format!("{db}.{coll}");
        self.refresh_if_unknown(&ns).await;
        let first = pipeline.first();
        if let Some(spec) = first.and_then(|f| f.get_document("$collStats").ok()) {
            let shards = match self.target_filter(&ns, db, &doc! {})? {
                Target::One(s) => vec![s],
                Target::All(v) => v,
            };
            let cmd = doc! {"aggregate": coll.clone(), "pipeline": [{"$collStats": spec.clone()}], "cursor": {}};
            let mut docs = Vec::new();
            for (s, r) in shards
                .iter()
                .zip(join_all(shards.iter().map(|s| gather(&s.client, db, cmd.clone()))).await)
            {
                for mut d in r? {
                    d.insert("shard", s.id.clone());
                    docs.push(d);
                }
            }
            let docs = run_pipeline(docs, &pipeline[1..])?;
            return Ok(cursor_reply(
                shared,
                &ns,
                VecDeque::from(docs),
                batch_size,
                false,
            ));
        }
        let (filter, rest) = match first.and_then(|f| f.get_document("$match").ok()) {
            Some(m) => (m.clone(), &pipeline[1..]),
            None => (Document::new(), &pipeline[..]),
        };
        Matcher::new(&filter)?;
        let shards = match self.target_filter(&ns, db, &filter)? {
            Target::One(s) => vec![s],
            Target::All(v) => v,
        };
        let cmd = doc! {"find": coll.clone(), "filter": filter, "batchSize": 100_000};
        let mut docs = Vec::new();
        for r in join_all(shards.iter().map(|s| gather(&s.client, db, cmd.clone()))).await {
            docs.extend(r?);
        }
        let docs = run_pipeline(docs, rest)?;
        shared.occupy(1).await;
        Ok(cursor_reply(
            shared,
            &ns,
            VecDeque::from(docs),
            batch_size,
            false,
        ))
    }

    async fn list_databases(&self, body: &Document) -> CmdResult {
        let name_only = body.get("nameOnly").is_some_and(truthy);
        let mut sizes: HashMap<String, i64> = HashMap::new();
        for r in join_all(
            self.shards()
                .iter()
                .map(|s| run_on(&s.client, "admin", doc! {"listDatabases": 1})),
        )
        .await
        {
            for d in r?.get_array("databases").cloned().unwrap_or_default() {
                if let Bson::Document(d) = d {
                    let name = d.get_str("name").unwrap_or_default().to_string();
                    if ["admin", "config", "local"].contains(&name.as_str()) {
                        continue;
                    }
                    *sizes.entry(name).or_default() +=
                        d.get("sizeOnDisk").and_then(as_i64).unwrap_or(0);
                }
            }
        }
        sizes.entry("admin".into()).or_insert(4096);
        sizes.entry("config".into()).or_insert(4096);
        let mut names: Vec<(String, i64)> = sizes.into_iter().collect();
        names.sort();
        let total: i64 = names.iter().map(|(_, s)| s).sum();
        let dbs: Vec<Bson> = names
            .into_iter()
            .map(|(n, s)| {
                Bson::Document(if name_only {
                    doc! {"name": n}
                } else {
                    doc! {"name": n, "sizeOnDisk": s, "empty": false}
                })
            })
            .collect();
        if name_only {
            return Ok(doc! {"databases": dbs, "ok": 1.0});
        }
        Ok(
            doc! {"databases": dbs, "totalSize": total, "totalSizeMb": total / (1024 * 1024), "ok": 1.0},
        )
    }

    async fn db_stats(&self, db: &str, body: &Document) -> CmdResult {
        check_db_name(db)?;
        let shards = self.shards();
        let mut cmd = clean(body);
        cmd.insert("dbStats", 1);
        let mut raw = Document::new();
        let mut sums: HashMap<&str, f64> = HashMap::new();
        let fields = [
            "collections",
            "views",
            "objects",
            "dataSize",
            "storageSize",
            "indexes",
            "indexSize",
            "totalSize",
        ];
        for (s, r) in shards
            .iter()
            .zip(join_all(shards.iter().map(|s| run_on(&s.client, db, cmd.clone()))).await)
        {
            let d = r?;
            for f in fields {
                *sums.entry(f).or_default() += d
                    .get(f)
                    .map(|v| match v {
                        Bson::Double(x) => *x,
                        other => as_i64(other).unwrap_or(0) as f64,
                    })
                    .unwrap_or(0.0);
            }
            raw.insert(s.host.clone(), d);
        }
        let objects = sums.get("objects").copied().unwrap_or(0.0);
        let data = sums.get("dataSize").copied().unwrap_or(0.0);
        let mut out = doc! {"raw": raw, "db": db};
        for f in fields {
            let v = sums.get(f).copied().unwrap_or(0.0);
            if ["collections", "views", "objects", "indexes"].contains(&f) {
                out.insert(f, v as i64);
            } else {
                out.insert(f, v);
            }
        }
        out.insert(
            "avgObjSize",
            if objects > 0.0 { data / objects } else { 0.0 },
        );
        out.insert("scaleFactor", 1);
        out.insert("ok", 1.0);
        Ok(out)
    }
}

fn new_uuid() -> Binary {
    let mut bytes: [u8; 16] = rand::random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    Binary {
        subtype: BinarySubtype::Uuid,
        bytes: bytes.to_vec(),
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
        assert_eq!(lookup("getMore"), Some((Cmd::GetMore, Unready::Local)));
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
            uuid: new_uuid(),
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
