//! mongos's writes: inserts split by owning shard, updates and deletes statement by statement,
//! the shards' replies merged into one.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::future::join_all;
use mongodb::bson::{Bson, Document, doc, oid::ObjectId};

use super::remote::run_write;
use super::{CollMeta, Router, ShardConn, Target};
use crate::cmderr::{CmdError, CmdResult, code};
use crate::fields::{Fields, coll_name, without_driver_fields};
use crate::state::ServerState;
use crate::value::{as_i64, truthy};

/// `documents` with the positions they had in the command, bound for one shard.
struct Batch {
    positions: Vec<usize>,
    docs: Vec<Document>,
}

/// Real mongos adds the `_id` before routing, so every shard sees the same document.
fn add_missing_ids(docs: &mut [Document]) {
    for d in docs {
        if !d.contains_key("_id") {
            let mut with = doc! {"_id": ObjectId::new()};
            with.extend(std::mem::take(d));
            *d = with;
        }
    }
}

/// A shard's failure fails only the statements sent to it, as mongos's batch executor records
/// it (`noteBatchError`): `ok: 1` with a write error per statement, the other shards' statements
/// applied. A shard without a primary within the wait (133) is "failing to target a host"; any
/// other error (a not-primary answer to a write that is not retryable, a network error) is the
/// shard's result being unavailable.
fn shard_failed(r: CmdResult, shard: &str, statements: usize) -> CmdResult {
    let Err(e) = r else { return r };
    let errmsg = match e.code {
        code::FAILED_TO_SATISFY_READ_PREFERENCE => format!(
            "Write results unavailable from failing to target a host in the shard {shard} :: caused by :: {}",
            e.msg
        ),
        _ => format!(
            "Write results unavailable from shard {shard} :: caused by :: {}",
            e.msg
        ),
    };
    let errors: Vec<Bson> = (0..statements)
        .map(|i| Bson::Document(doc! {"index": i as i32, "code": e.code, "errmsg": errmsg.clone()}))
        .collect();
    Ok(doc! {"n": 0, "writeErrors": errors})
}

/// Whether the client made the write retryable (`txnNumber`, which mongos forwards).
fn retryable(body: &Document) -> bool {
    body.contains_key("txnNumber")
}

/// Whether a shard's reply to a write carries write errors.
fn has_write_errors(reply: &Document) -> bool {
    reply.get_array("writeErrors").is_ok_and(|e| !e.is_empty())
}

impl Router {
    /// `insert`: to the primary shard for an unsharded collection, else each document to the shard
    /// owning its key (ordered: contiguous runs in order, stopping at the first error).
    pub(super) async fn insert(
        &self,
        shared: &Arc<ServerState>,
        db: &str,
        body: &Document,
    ) -> CmdResult {
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
        let base = without_driver_fields(body);
        let retry = retryable(body);
        let Some(meta) = self.meta(&ns) else {
            let s = self.shard(&primary)?;
            let positions = (0..docs.len()).collect();
            let (_, r) = send_batch(s, db, &base, Batch { positions, docs }, retry).await;
            shared.occupy(n_docs).await;
            return shard_failed(r, &primary, n_docs as usize).map(|mut d| {
                d.insert("ok", 1.0);
                d
            });
        };
        add_missing_ids(&mut docs);
        let owners = owners(&meta, &docs, &primary);
        let mut total = if ordered {
            self.insert_ordered(db, &base, docs, &owners, retry).await?
        } else {
            self.insert_unordered(db, &base, docs, &owners, retry)
                .await?
        };
        shared.occupy(n_docs).await;
        total.insert("ok", 1.0);
        Ok(total)
    }

    /// Ordered inserts: contiguous runs bound for the same shard, in order, stopping at the first error.
    async fn insert_ordered(
        &self,
        db: &str,
        base: &Document,
        docs: Vec<Document>,
        owners: &[String],
        retry: bool,
    ) -> CmdResult<Document> {
        let mut total = doc! {"n": 0};
        let mut i = 0;
        while i < docs.len() {
            let mut j = i;
            while j < docs.len() && owners[j] == owners[i] {
                j += 1;
            }
            let batch = Batch {
                positions: (i..j).collect(),
                docs: docs[i..j].to_vec(),
            };
            let shard = self.shard(&owners[i])?;
            let (positions, r) = send_batch(shard, db, base, batch, retry).await;
            let part = shard_failed(r, &owners[i], positions.len())?;
            merge_write_reply(&mut total, &part, &positions);
            if has_write_errors(&part) {
                break;
            }
            i = j;
        }
        Ok(total)
    }

    /// Unordered inserts: one batch per shard, all at once.
    async fn insert_unordered(
        &self,
        db: &str,
        base: &Document,
        docs: Vec<Document>,
        owners: &[String],
        retry: bool,
    ) -> CmdResult<Document> {
        let mut groups: HashMap<String, Batch> = HashMap::new();
        for (i, d) in docs.into_iter().enumerate() {
            let g = groups.entry(owners[i].clone()).or_insert_with(|| Batch {
                positions: Vec::new(),
                docs: Vec::new(),
            });
            g.positions.push(i);
            g.docs.push(d);
        }
        let mut futs = Vec::new();
        let mut ids = Vec::new();
        for (id, batch) in groups {
            futs.push(send_batch(self.shard(&id)?, db, base, batch, retry));
            ids.push(id);
        }
        let mut total = doc! {"n": 0};
        for ((positions, r), id) in join_all(futs).await.into_iter().zip(ids) {
            let part = shard_failed(r, &id, positions.len())?;
            merge_write_reply(&mut total, &part, &positions);
        }
        sort_errors(&mut total);
        Ok(total)
    }

    /// Updates and deletes, statement by statement: targeted when the filter pins the shard key.
    pub(super) async fn write_statements(
        &self,
        shared: &Arc<ServerState>,
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
        let base = without_driver_fields(body);
        let retry = retryable(body);
        // Unsharded: the whole batch goes to the primary shard as is.
        if !sharded {
            let Target::One(s) = self.target_filter(&ns, db, &doc! {})? else {
                return Err(CmdError::new(
                    code::INTERNAL_ERROR,
                    "unsharded collection without a primary shard",
                ));
            };
            let r = run_write(&s.client, db, base, retry).await;
            shared.occupy(stmts.len() as u32).await;
            return shard_failed(r, &s.id, stmts.len()).map(|mut d| {
                d.insert("ok", 1.0);
                d
            });
        }
        for (i, st) in stmts.iter().enumerate() {
            let mut one = base.clone();
            one.insert(field, vec![Bson::Document(st.clone())]);
            let part = self.route_statement(&ns, db, cmd, st, one, retry).await?;
            merge_write_reply(&mut total, &part, &[i]);
            if ordered && has_write_errors(&part) {
                break;
            }
        }
        sort_errors(&mut total);
        shared.occupy(stmts.len() as u32).await;
        total.insert("ok", 1.0);
        Ok(total)
    }

    /// One update or delete statement (`one`, the command carrying only it) on a sharded
    /// collection: to the owning shard, else shard by shard until one matches (single-document
    /// statements) or to every shard; an upsert must name the shard key.
    async fn route_statement(
        &self,
        ns: &str,
        db: &str,
        cmd: &str,
        st: &Document,
        one: Document,
        retry: bool,
    ) -> CmdResult<Document> {
        let q = st.get_document("q").cloned().unwrap_or_default();
        let single = if cmd == "update" {
            !st.get("multi").is_some_and(truthy)
        } else {
            st.get("limit").and_then(as_i64) == Some(1)
        };
        let upsert = st.get("upsert").is_some_and(truthy);
        Ok(match self.target_filter(ns, db, &q)? {
            Target::One(s) => shard_failed(run_write(&s.client, db, one, retry).await, &s.id, 1)?,
            Target::All(_) if upsert => {
                let e = doc! {"index": 0, "code": code::SHARD_KEY_NOT_FOUND, "errmsg": format!("Failed to target upsert by query :: could not extract exact shard key from {q}")};
                doc! {"n": 0, "writeErrors": [e]}
            }
            Target::All(shards) if single => {
                let mut part = doc! {"n": 0};
                for s in shards {
                    let r = run_write(&s.client, db, one.clone(), retry).await;
                    let r = shard_failed(r, &s.id, 1)?;
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
                let sends = shards
                    .iter()
                    .map(|s| run_write(&s.client, db, one.clone(), retry));
                for (r, s) in join_all(sends).await.into_iter().zip(&shards) {
                    merge_write_reply(&mut part, &shard_failed(r, &s.id, 1)?, &[0]);
                }
                part
            }
        })
    }
}

/// The shard owning each document's shard-key value (the primary shard when no chunk does).
fn owners(meta: &CollMeta, docs: &[Document], primary: &str) -> Vec<String> {
    docs.iter()
        .map(|d| {
            Router::owner(meta, d.get(&meta.field).unwrap_or(&Bson::Null))
                .unwrap_or_else(|| primary.to_string())
        })
        .collect()
}

/// Sends one batch as an `insert` built on `base`; returns the batch's positions with the reply.
async fn send_batch(
    shard: ShardConn,
    db: &str,
    base: &Document,
    batch: Batch,
    retry: bool,
) -> (Vec<usize>, CmdResult) {
    let mut cmd = base.clone();
    cmd.insert(
        "documents",
        batch
            .docs
            .into_iter()
            .map(Bson::Document)
            .collect::<Vec<_>>(),
    );
    (
        batch.positions,
        run_write(&shard.client, db, cmd, retry).await,
    )
}

/// Adds a shard's reply to a write into the total, mapping its `index`es back to the positions
/// the statements had in the command; a shard's `writeConcernError` is passed on, as mongos does.
fn merge_write_reply(total: &mut Document, part: &Document, index_map: &[usize]) {
    if let Ok(wce) = part.get_document("writeConcernError")
        && !total.contains_key("writeConcernError")
    {
        total.insert("writeConcernError", wce.clone());
    }
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

/// Orders `writeErrors` and `upserted` by statement index (replies from several shards interleave).
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
