//! The sharding metadata mongos keeps: read from the config server at start-up and on demand
//! (`flushRouterConfig`, a namespace not known as sharded), and the database entries it creates.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use mongodb::Client;
use mongodb::bson::{Bson, DateTime, Document, doc};

use super::remote::{SHARD_PRIMARY_WAIT_MS, client_for, gather, run_on};
use super::{Chunk, CollMeta, Router, RouterState, ShardConn, no_shards, not_ready};
use crate::StandinError;
use crate::cmderr::{CmdError, CmdResult, code};
use crate::config::{StandinConfig, parse_configdb};
use crate::state::ServerState;
use crate::value::{cmp_bson, new_uuid, timestamp_now};

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
            shard_primary_wait_ms: shard_primary_wait_ms(cfg),
            peer: crate::peer::Peer::from_config(cfg),
            balancer_on_after: std::sync::Mutex::new(
                cfg.balancer_on_after_ms.map(Duration::from_millis),
            ),
            first_user_command: std::sync::OnceLock::new(),
        })
    }

    /// Connects to the config server in the background, retrying like real mongos until it has a primary.
    pub(crate) fn start(self: &Arc<Self>, s: Arc<ServerState>) {
        let r = self.clone();
        tokio::spawn(async move {
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
        let client =
            client_for(&self.peer, &self.config_hosts, Some(&self.config_set), 1000).await?;
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

    pub(super) fn config(&self) -> CmdResult<Client> {
        self.state
            .read()
            .ok()
            .and_then(|s| s.config.clone())
            .ok_or_else(|| not_ready(&self.config_set))
    }

    pub(super) async fn config_find(
        &self,
        coll: &str,
        filter: Document,
    ) -> CmdResult<Vec<Document>> {
        let c = self.config()?;
        gather(
            &c,
            "config",
            doc! {"find": coll, "filter": filter, "batchSize": 100_000},
        )
        .await
    }

    pub(super) async fn config_write(&self, cmd: Document) -> CmdResult {
        let c = self.config()?;
        let d = run_on(&c, "config", cmd).await?;
        if let Ok(errs) = d.get_array("writeErrors")
            && let Some(Bson::Document(e)) = errs.first()
        {
            return Err(CmdError::new(
                e.get_i32("code").unwrap_or(code::INTERNAL_ERROR),
                e.get_str("errmsg").unwrap_or_default().to_string(),
            ));
        }
        Ok(d)
    }

    /// Re-reads every piece of metadata from the config server (start-up and `flushRouterConfig`).
    pub(super) async fn reload(&self) -> CmdResult<()> {
        let shards = self.config_find("shards", doc! {}).await?;
        let dbs = self.config_find("databases", doc! {}).await?;
        let colls = self.config_find("collections", doc! {}).await?;
        let conns = shard_conns(&self.peer, &shards, self.shard_primary_wait_ms).await?;
        let mut metas = HashMap::new();
        for c in &colls {
            if let Some((ns, meta)) = self.collection_meta(c).await? {
                metas.insert(ns, meta);
            }
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
            .map_err(|_| CmdError::poisoned("router state"))?;
        st.shards = conns;
        st.dbs = db_map;
        st.colls = metas;
        Ok(())
    }

    /// A `config.collections` entry with its chunks from `config.chunks` (`None`: dropped or malformed).
    async fn collection_meta(&self, c: &Document) -> CmdResult<Option<(String, CollMeta)>> {
        if c.get_bool("dropped").unwrap_or(false) {
            return Ok(None);
        }
        let (Ok(ns), Ok(key)) = (c.get_str("_id"), c.get_document("key")) else {
            return Ok(None);
        };
        let Some(Bson::Binary(uuid)) = c.get("uuid") else {
            return Ok(None);
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
        let meta = CollMeta {
            key: key.clone(),
            field,
            hashed,
            unique: c.get_bool("unique").unwrap_or(false),
            uuid: uuid.clone(),
            chunks,
        };
        Ok(Some((ns.to_string(), meta)))
    }

    pub(super) fn shards(&self) -> Vec<ShardConn> {
        self.state
            .read()
            .map(|s| s.shards.clone())
            .unwrap_or_default()
    }

    pub(super) fn shard(&self, id: &str) -> CmdResult<ShardConn> {
        self.state
            .read()
            .ok()
            .and_then(|s| s.shards.iter().find(|x| x.id == id).cloned())
            .ok_or_else(|| CmdError::new(code::SHARD_NOT_FOUND, format!("Shard {id} not found")))
    }

    pub(super) fn meta(&self, ns: &str) -> Option<CollMeta> {
        self.state
            .read()
            .ok()
            .and_then(|s| s.colls.get(ns).cloned())
    }

    /// Another mongos may have sharded `ns` since the last load: re-read the metadata, at most once a
    /// second per namespace (sharded namespaces, once known, cost nothing).
    pub(super) async fn refresh_if_unknown(&self, ns: &str) {
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
    pub(super) async fn ensure_db(&self, db: &str, wanted: Option<&str>) -> CmdResult<String> {
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
                .map_err(|_| CmdError::poisoned("router state"))?;
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
        let res = self
            .config_write(doc! {"insert": "databases", "documents": [{
                "_id": db, "primary": primary.clone(), "partitioned": false,
                "version": {
                    "uuid": Bson::Binary(new_uuid()),
                    "timestamp": timestamp_now(DateTime::now()),
                    "lastMod": 1,
                },
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
}

/// How long this mongos waits for a shard's primary: `--setParameter
/// defaultFindReplicaSetHostTimeoutMS=N`, as real mongos takes it, else its default.
fn shard_primary_wait_ms(cfg: &StandinConfig) -> u64 {
    cfg.set_parameters
        .iter()
        .rev()
        .find(|(k, _)| k == "defaultFindReplicaSetHostTimeoutMS")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(SHARD_PRIMARY_WAIT_MS)
}

/// A connection to every shard in `config.shards` (`set/host,host` or a single host), each
/// waiting up to `wait_ms` for its primary.
async fn shard_conns(
    peer: &crate::peer::Peer,
    shards: &[Document],
    wait_ms: u64,
) -> CmdResult<Vec<ShardConn>> {
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
        let client = client_for(peer, &hosts, set.as_deref(), wait_ms).await?;
        conns.push(ShardConn {
            id: id.to_string(),
            host: host.to_string(),
            client,
        });
    }
    Ok(conns)
}
