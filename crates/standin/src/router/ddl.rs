//! mongos's sharding and DDL commands: `addShard`, `listShards`, `enableSharding`,
//! `shardCollection`, the balancer switches, `create`, `createIndexes`, `drop`, `dropDatabase`.

use std::sync::atomic::Ordering;

use mongodb::bson::{Binary, Bson, DateTime, Document, Timestamp, doc, oid::ObjectId};

use super::remote::{client_for, run_on, run_on_all};
use super::{Chunk, CollMeta, Router, ShardConn, no_shards, not_ready};
use crate::cmderr::{CmdError, CmdResult, code};
use crate::fields::{Fields, check_db_name, coll_name, require_admin, without_driver_fields};
use crate::value::{as_i64, new_uuid, timestamp_now, truthy};

/// What `shardCollection` asks for, checked as mongos checks it.
struct ShardRequest {
    ns: String,
    db: String,
    coll: String,
    key: Document,
    hashed: bool,
    unique: bool,
    num_initial: Option<usize>,
}

impl ShardRequest {
    fn parse(body: &Document) -> CmdResult<ShardRequest> {
        let f = Fields::new("shardCollection", body);
        let ns = f.req_str_alias("shardCollection", "shardcollection")?;
        let (db, coll) = shardable_namespace(&ns)?;
        let key = f.req_doc("key")?;
        let hashed = key_is_hashed(&key)?;
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
        Ok(ShardRequest {
            ns,
            db,
            coll,
            key,
            hashed,
            unique,
            num_initial,
        })
    }

    /// The shard key's first field (the one chunks are split on).
    fn field(&self) -> String {
        self.key
            .keys()
            .next()
            .cloned()
            .unwrap_or_else(|| "_id".to_string())
    }

    /// The supporting index's name, as mongod names an index (`field_1`, `field_hashed`).
    fn index_name(&self) -> String {
        self.key
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
            .join("_")
    }
}

/// `db.coll` split, refusing an invalid namespace and the databases that cannot be sharded.
fn shardable_namespace(ns: &str) -> CmdResult<(String, String)> {
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
    Ok((db.to_string(), coll.to_string()))
}

/// Whether a shard key pattern is hashed: one hashed field, or ascending fields only.
fn key_is_hashed(key: &Document) -> CmdResult<bool> {
    if key.is_empty() {
        return Err(CmdError::new(
            code::INVALID_OPTIONS,
            "cannot have empty shard key",
        ));
    }
    let mut hashed_fields = 0;
    for (k, v) in key {
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
    Ok(hashed_fields == 1)
}

/// Chunk boundaries: a hashed, empty collection is spread over every shard (2 chunks per shard,
/// or `numInitialChunks`); otherwise one chunk on the primary shard.
fn initial_chunks(
    req: &ShardRequest,
    existing_count: i64,
    shards: &[ShardConn],
    primary: &str,
) -> Vec<Chunk> {
    if !(req.hashed && existing_count == 0) {
        return vec![Chunk {
            min: Bson::MinKey,
            shard: primary.to_string(),
        }];
    }
    let n = req
        .num_initial
        .filter(|n| *n > 0)
        .unwrap_or(2 * shards.len())
        .max(shards.len());
    let step = (u64::MAX / n as u64) as i128;
    (0..n)
        .map(|i| {
            let min = if i == 0 {
                Bson::MinKey
            } else {
                Bson::Int64((i64::MIN as i128 + step * i as i128) as i64)
            };
            let shard = shards[i * shards.len() / n].id.clone();
            Chunk { min, shard }
        })
        .collect()
}

/// Splits an `addShard` connection string (`set/host,host` or `host,host`) into set and hosts.
fn seed_list(spec: &str) -> CmdResult<(Option<String>, Vec<String>)> {
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
    Ok((set, hosts))
}

/// Asks the seed hosts who they are; like mongos's replica-set monitor, prefers the one that is
/// primary (any member may have won the election), else the first that answered.
async fn seed_hello(
    peer: &crate::peer::Peer,
    spec: &str,
    set: Option<&str>,
    hosts: &[String],
) -> CmdResult<Document> {
    let mut hello: Option<Document> = None;
    let mut last_err = None;
    for h in hosts {
        match client_for(peer, std::slice::from_ref(h), None, 2000).await {
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
    hello.ok_or_else(|| match set {
        Some(s) => not_ready(s),
        None => last_err.unwrap_or_else(|| {
            CmdError::new(code::HOST_UNREACHABLE, format!("cannot reach {spec}"))
        }),
    })
}

/// The replica set a new shard is: its `hello` must be a primary of the set the seed list names.
fn shard_set(
    spec: &str,
    set: Option<String>,
    hosts: &[String],
    hello: &Document,
) -> CmdResult<String> {
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
    Ok(set)
}

/// The shard already registered for this set (`Some(id)`: adding it again is a no-op), or
/// IllegalOperation when the set or the name is taken otherwise.
fn already_added(
    existing: &[Document],
    set: &str,
    hosts: &[String],
    name: Option<&str>,
    shard_name: &str,
) -> CmdResult<Option<String>> {
    for s in existing {
        let id = s.get_str("_id").unwrap_or_default();
        let host = s.get_str("host").unwrap_or_default();
        let (eset, ehosts) = host.split_once('/').unwrap_or(("", host));
        if eset == set {
            let overlap = ehosts.split(',').any(|h| hosts.iter().any(|x| x == h));
            if overlap && name.is_none_or(|n| n == id) {
                return Ok(Some(id.to_string()));
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
    Ok(None)
}

impl Router {
    /// `addShard`: a replica set whose primary answers, recorded in `config.shards`.
    pub(super) async fn add_shard(&self, db: &str, body: &Document) -> CmdResult {
        require_admin("addShard", db)?;
        let spec = Fields::new("addShard", body).req_str("addShard")?;
        let name = body.get_str("name").ok().map(str::to_string);
        let (set, hosts) = seed_list(&spec)?;
        let hello = seed_hello(&self.peer, &spec, set.as_deref(), &hosts).await?;
        let set = shard_set(&spec, set, &hosts, &hello)?;
        let _g = self.ddl.lock().await;
        let existing = self.config_find("shards", doc! {}).await?;
        let shard_name = name.clone().unwrap_or_else(|| set.clone());
        if let Some(id) = already_added(&existing, &set, &hosts, name.as_deref(), &shard_name)? {
            return Ok(doc! {"shardAdded": id, "ok": 1.0});
        }
        let all_hosts = match hello.get_array("hosts") {
            Ok(h) => h
                .iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect::<Vec<_>>()
                .join(","),
            Err(_) => hosts.join(","),
        };
        let host = format!("{set}/{all_hosts}");
        self.config_write(doc! {"insert": "shards", "documents": [{"_id": shard_name.clone(), "host": host.clone(), "state": 1, "topologyTime": timestamp_now(DateTime::now())}]}).await?;
        let hlist: Vec<String> = all_hosts.split(',').map(String::from).collect();
        let client = client_for(&self.peer, &hlist, Some(&set), self.shard_primary_wait_ms).await?;
        if let Ok(mut st) = self.state.write() {
            st.shards.push(ShardConn {
                id: shard_name.clone(),
                host,
                client,
            });
        }
        Ok(doc! {"shardAdded": shard_name, "ok": 1.0})
    }

    /// `listShards`: `config.shards` as it is.
    pub(super) async fn list_shards(&self) -> CmdResult {
        let shards = self.config_find("shards", doc! {}).await?;
        Ok(doc! {"shards": shards, "ok": 1.0})
    }

    /// `enableSharding`: makes sure the database has a primary shard (`primaryShard` if given).
    pub(super) async fn enable_sharding(&self, name: &str, body: &Document) -> CmdResult {
        // `name` is the body's first key, so only its type can be wrong.
        let target = Fields::new(name, body).req_str(name)?;
        check_db_name(&target)?;
        self.ensure_db(&target, body.get_str("primaryShard").ok())
            .await?;
        Ok(doc! {"ok": 1.0})
    }

    /// `balancerStart`/`balancerStop`: the mode in `config.settings` (nothing ever migrates).
    pub(super) async fn balancer_switch(&self, on: bool) -> CmdResult {
        self.config_write(doc! {"update": "settings", "updates": [{"q": {"_id": "balancer"}, "u": {"$set": {"mode": if on {"full"} else {"off"}, "stopped": !on}}, "upsert": true}]}).await?;
        Ok(doc! {"ok": 1.0})
    }

    /// `--balancer-on-after-ms`: switches the balancer back on once its time has come (checked at
    /// every command, so the next one, a `balancerStatus` included, sees it on), once.
    pub(super) async fn balancer_back_on_if_due(&self) {
        let Some(first) = self.first_user_command.get() else {
            return;
        };
        let due = match self.balancer_on_after.lock() {
            Ok(mut after) => match *after {
                Some(d) if first.elapsed() >= d => after.take().is_some(),
                _ => false,
            },
            Err(_) => false,
        };
        if due {
            let _ = self.balancer_switch(true).await;
        }
    }

    /// `balancerStatus`: the mode, with a round counted per call while it is on.
    pub(super) async fn balancer_status(&self) -> CmdResult {
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
        Ok(doc! {"mode": mode, "inBalancerRound": false, "numBalancerRounds": rounds, "ok": 1.0})
    }

    /// `shardCollection`: chunks laid out, the supporting index on every owning shard, the
    /// collection and its chunks recorded on the config server.
    pub(super) async fn shard_collection(&self, body: &Document) -> CmdResult {
        let req = ShardRequest::parse(body)?;
        let ns = req.ns.clone();
        self.refresh_if_unknown(&ns).await;
        if let Some(existing) = self.meta(&ns) {
            if existing.key == req.key && existing.unique == req.unique {
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
        let primary = self.ensure_db(&req.db, None).await?;
        let _g = self.ddl.lock().await;
        let shards = self.shards();
        if shards.is_empty() {
            return Err(no_shards(&req.db));
        }
        if req.num_initial.is_some_and(|n| n > 8192 * shards.len()) {
            return Err(CmdError::bad_value(format!(
                "numInitialChunks cannot be more than either: 8192 * number of shards; or 1000000000; got {}",
                req.num_initial.unwrap_or(0)
            )));
        }
        let primary_conn = self.shard(&primary)?;
        let existing_count = run_on(
            &primary_conn.client,
            &req.db,
            doc! {"count": req.coll.as_str()},
        )
        .await?
        .get("n")
        .and_then(as_i64)
        .unwrap_or(0);
        let chunks = initial_chunks(&req, existing_count, &shards, &primary);
        self.create_supporting_index(&req, &chunks).await?;
        let uuid = self.record_sharded(&req, &chunks).await?;
        if let Ok(mut st) = self.state.write() {
            st.colls.insert(
                ns.clone(),
                CollMeta {
                    field: req.field(),
                    key: req.key,
                    hashed: req.hashed,
                    unique: req.unique,
                    uuid: uuid.clone(),
                    chunks,
                },
            );
        }
        Ok(doc! {"collectionsharded": ns, "collectionUUID": Bson::Binary(uuid), "ok": 1.0})
    }

    /// The shard key's index on every shard that owns chunks (for `{_id: 1}`, the collection).
    async fn create_supporting_index(&self, req: &ShardRequest, chunks: &[Chunk]) -> CmdResult<()> {
        let index_name = req.index_name();
        let mut owners: Vec<String> = chunks.iter().map(|c| c.shard.clone()).collect();
        owners.sort();
        owners.dedup();
        for id in &owners {
            let s = self.shard(id)?;
            if req.key != doc! {"_id": 1} {
                run_on(&s.client, &req.db, doc! {"createIndexes": req.coll.as_str(), "indexes": [{"key": req.key.clone(), "name": index_name.clone()}]}).await?;
            } else {
                let _ = run_on(&s.client, &req.db, doc! {"create": req.coll.as_str()}).await;
            }
        }
        Ok(())
    }

    /// Writes the collection to `config.collections` and its chunks to `config.chunks`; returns its UUID.
    async fn record_sharded(&self, req: &ShardRequest, chunks: &[Chunk]) -> CmdResult<Binary> {
        let uuid = new_uuid();
        let now = DateTime::now();
        let ts = timestamp_now(now);
        let epoch = ObjectId::new();
        self.config_write(doc! {"insert": "collections", "documents": [{
            "_id": req.ns.clone(), "lastmodEpoch": epoch, "lastmod": now, "timestamp": ts,
            "uuid": Bson::Binary(uuid.clone()), "key": req.key.clone(), "unique": req.unique, "noBalance": false,
        }]})
        .await?;
        let field = req.field();
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
        Ok(uuid)
    }

    /// `create`: on the database's primary shard.
    pub(super) async fn create(&self, name: &str, db: &str, body: &Document) -> CmdResult {
        coll_name(name, db, body)?;
        let p = self.ensure_db(db, None).await?;
        run_on(&self.shard(&p)?.client, db, without_driver_fields(body)).await
    }

    /// `createIndexes`: on every shard for a sharded collection, else on the primary shard.
    pub(super) async fn create_indexes(&self, name: &str, db: &str, body: &Document) -> CmdResult {
        let coll = coll_name(name, db, body)?;
        let p = self.ensure_db(db, None).await?;
        let targets = match self.meta(&format!("{db}.{coll}")) {
            Some(_) => self.shards(),
            None => vec![self.shard(&p)?],
        };
        let cmd = without_driver_fields(body);
        let mut answers = run_on_all(&targets, db, &cmd).await?;
        Ok(answers.pop().unwrap_or_default())
    }

    /// `drop`: on every shard, then the collection's metadata.
    pub(super) async fn drop(&self, name: &str, db: &str, body: &Document) -> CmdResult {
        let coll = coll_name(name, db, body)?;
        let ns = format!("{db}.{coll}");
        let cmd = without_driver_fields(body);
        run_on_all(&self.shards(), db, &cmd).await?;
        if let Some(meta) = self.meta(&ns) {
            self.forget_collection(&ns, &meta).await?;
            if let Ok(mut st) = self.state.write() {
                st.colls.remove(&ns);
            }
        }
        Ok(doc! {"ns": ns, "ok": 1.0})
    }

    /// Deletes a sharded collection's chunks and entry from the config server.
    async fn forget_collection(&self, ns: &str, meta: &CollMeta) -> CmdResult<()> {
        self.config_write(doc! {"delete": "chunks", "deletes": [{"q": {"uuid": Bson::Binary(meta.uuid.clone())}, "limit": 0}]}).await?;
        self.config_write(
            doc! {"delete": "collections", "deletes": [{"q": {"_id": ns}, "limit": 0}]},
        )
        .await?;
        Ok(())
    }

    /// `dropDatabase`: on every shard, then the database's collections and entry.
    pub(super) async fn drop_database(&self, db: &str) -> CmdResult {
        check_db_name(db)?;
        run_on_all(&self.shards(), db, &doc! {"dropDatabase": 1}).await?;
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
            self.forget_collection(ns, m).await?;
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
}
