//! mongos's reads: `find`, `count`, `aggregate` (targeted or scatter-gathered), and the
//! listings and statistics summed over the shards.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mongodb::bson::{Bson, Document, doc};

use super::remote::{gather, gather_all, run_on_all};
use super::{Router, Target};
use crate::cmderr::{CmdError, CmdResult, code};
use crate::fields::{Fields, check_db_name, coll_name, without_driver_fields};
use crate::mongod::run_pipeline;
use crate::query::{Matcher, Sort};
use crate::state::{FirstBatch, PlanEnd, ServerState, cursor_reply};
use crate::value::{as_i64, truthy};

impl Router {
    /// `find`: targeted or scatter-gathered; the router applies sort, skip and limit to the union.
    /// Its cursor follows mongos's rule ([`PlanEnd`]: open after a full first batch, limit or
    /// not); the shards' cursors are drained at once, so a shard counts the `getMore`s the
    /// client's draining would have cost it (`docs/mongodb-versions.md`, "Conformance").
    pub(super) async fn find(
        &self,
        shared: &Arc<ServerState>,
        db: &str,
        body: &Document,
    ) -> CmdResult {
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
        let cmd = shard_find(body, skip, limit, batch_size);
        let docs = match self.target_filter(&ns, db, &filter)? {
            Target::One(s) => gather(&s.client, db, cmd).await?,
            Target::All(shards) => {
                let mut all = gather_all(&shards, db, &cmd).await?.concat();
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
        let first = FirstBatch {
            batch_size,
            single_batch,
            end: PlanEnd::default(),
        };
        Ok(cursor_reply(shared, &ns, docs, first))
    }

    /// `count`: the shards' counts summed, then skip and limit.
    pub(super) async fn count(
        &self,
        shared: &Arc<ServerState>,
        db: &str,
        body: &Document,
    ) -> CmdResult {
        let coll = coll_name("count", db, body)?;
        let f = Fields::new("count", body);
        let q = f.opt_doc("query")?;
        self.refresh_if_unknown(&format!("{db}.{coll}")).await;
        let skip = f.opt_count("skip")?.unwrap_or(0);
        let limit = f.opt_count("limit")?.filter(|l| *l > 0);
        let ns = format!("{db}.{coll}");
        let mut cmd = without_driver_fields(body);
        cmd.remove("skip");
        cmd.remove("limit");
        let shards = self.target_filter(&ns, db, &q)?.into_shards();
        let answers = run_on_all(&shards, db, &cmd).await?;
        let n: i64 = answers
            .iter()
            .map(|r| r.get("n").and_then(as_i64).unwrap_or(0))
            .sum();
        let n = (n - skip as i64).max(0);
        let n = limit.map_or(n, |l| n.min(l as i64));
        shared.occupy(1).await;
        Ok(doc! {"n": n, "ok": 1.0})
    }

    /// `$collStats` with `spec` on every shard holding the collection, each answer tagged with its shard.
    async fn coll_stats_per_shard(
        &self,
        db: &str,
        coll: &str,
        spec: Document,
    ) -> CmdResult<Vec<Document>> {
        let ns = format!("{db}.{coll}");
        let shards = self.target_filter(&ns, db, &doc! {})?.into_shards();
        let cmd = doc! {"aggregate": coll, "pipeline": [{"$collStats": spec}], "cursor": {}};
        let mut out = Vec::new();
        for (s, r) in shards.iter().zip(gather_all(&shards, db, &cmd).await?) {
            for mut d in r {
                d.insert("shard", s.id.clone());
                out.push(d);
            }
        }
        Ok(out)
    }

    /// `collStats`: count and sizes summed over the shards, each shard's storage statistics under `shards`.
    pub(super) async fn coll_stats(&self, name: &str, db: &str, body: &Document) -> CmdResult {
        let coll = coll_name(name, db, body)?;
        let spec = doc! {"storageStats": {}, "count": {}};
        let per = self.coll_stats_per_shard(db, &coll, spec).await?;
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

    /// `listIndexes` and `listCollections`: answered by the database's primary shard.
    pub(super) async fn list_on_primary(
        &self,
        shared: &ServerState,
        indexes: bool,
        name: &str,
        db: &str,
        body: &Document,
    ) -> CmdResult {
        check_db_name(db)?;
        let p = self.state.read().ok().and_then(|s| s.dbs.get(db).cloned());
        let docs = match p {
            Some(p) => gather(&self.shard(&p)?.client, db, without_driver_fields(body)).await?,
            None if indexes => {
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
            FirstBatch::default(),
        ))
    }

    /// `aggregate`: the first `$match` (or `$collStats`) sent to the shards, the rest run here.
    pub(super) async fn aggregate(
        &self,
        shared: &Arc<ServerState>,
        db: &str,
        body: &Document,
    ) -> CmdResult {
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
        // mongos counts `aggregate` under `opcounters.command` only (the server counted it).
        let ns = format!("{db}.{coll}");
        self.refresh_if_unknown(&ns).await;
        let first = pipeline.first();
        if let Some(spec) = first.and_then(|f| f.get_document("$collStats").ok()) {
            let docs = self.coll_stats_per_shard(db, &coll, spec.clone()).await?;
            let docs = run_pipeline(docs, &pipeline[1..])?;
            return Ok(cursor_reply(
                shared,
                &ns,
                VecDeque::from(docs),
                FirstBatch::sized(batch_size),
            ));
        }
        let (filter, rest) = match first.and_then(|f| f.get_document("$match").ok()) {
            Some(m) => (m.clone(), &pipeline[1..]),
            None => (Document::new(), &pipeline[..]),
        };
        Matcher::new(&filter)?;
        let shards = self.target_filter(&ns, db, &filter)?.into_shards();
        // The shards run the `$match` as an aggregate, as mongos sends them (counted as commands).
        let cmd = doc! {"aggregate": coll.clone(), "pipeline": [{"$match": filter}], "cursor": {"batchSize": 100_000}};
        let docs = run_pipeline(gather_all(&shards, db, &cmd).await?.concat(), rest)?;
        shared.occupy(1).await;
        Ok(cursor_reply(
            shared,
            &ns,
            VecDeque::from(docs),
            FirstBatch::sized(batch_size),
        ))
    }

    /// `listDatabases`: sizes summed over the shards.
    pub(super) async fn list_databases(&self, body: &Document) -> CmdResult {
        let name_only = body.get("nameOnly").is_some_and(truthy);
        let mut sizes: HashMap<String, i64> = HashMap::new();
        for r in run_on_all(&self.shards(), "admin", &doc! {"listDatabases": 1}).await? {
            for d in r.get_array("databases").cloned().unwrap_or_default() {
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

    /// `dbStats`: figures summed over the shards, each shard's own answer under `raw`.
    pub(super) async fn db_stats(&self, db: &str, body: &Document) -> CmdResult {
        check_db_name(db)?;
        let shards = self.shards();
        let mut cmd = without_driver_fields(body);
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
        for (s, d) in shards.iter().zip(run_on_all(&shards, db, &cmd).await?) {
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

/// The `find` a shard gets for a client's `find`, as mongos rewrites it
/// (`transformQueryForShards`, `cluster_find.cpp`): no skip, and `limit` and `batchSize` each
/// grown by the skip, since the router skips over the union.
fn shard_find(
    body: &Document,
    skip: usize,
    limit: Option<usize>,
    batch_size: Option<usize>,
) -> Document {
    let mut cmd = without_driver_fields(body);
    for k in ["skip", "limit", "batchSize", "singleBatch"] {
        cmd.remove(k);
    }
    if let Some(l) = limit {
        cmd.insert("limit", (l + skip) as i64);
    }
    if let Some(b) = batch_size {
        cmd.insert("batchSize", (b + skip) as i64);
    }
    cmd
}
