//! mongod's catalog and statistics: `listDatabases`, `listCollections`, `listIndexes`,
//! `dbStats`, `collStats` (and `$collStats`).

use std::collections::VecDeque;
use std::sync::Arc;

use mongodb::bson::{Bson, DateTime, Document, doc};

use super::with_store;
use crate::cmderr::{CmdError, CmdResult, code};
use crate::fields::{Fields, check_db_name, coll_name};
use crate::query::Matcher;
use crate::repl;
use crate::state::{FirstBatch, ServerState, cursor_reply};
use crate::value::{as_i64, truthy};

/// `$collStats`-style statistics of one collection on this server.
pub(crate) fn coll_stats(shared: &ServerState, db: &str, coll: &str) -> Document {
    let (count, size, idx, nidx) = shared
        .store
        .lock()
        .ok()
        .and_then(|s| {
            s.coll(db, coll).map(|c| {
                (
                    c.docs.len() as i64,
                    c.data_bytes as i64,
                    c.index_bytes() as i64,
                    c.indexes.len() as i32,
                )
            })
        })
        .unwrap_or((0, 0, 0, 0));
    let avg = if count > 0 { size / count } else { 0 };
    doc! {
        "ns": format!("{db}.{coll}"),
        "host": shared.me(),
        "localTime": DateTime::now(),
        "storageStats": {
            "size": size,
            "count": count,
            "avgObjSize": avg,
            "storageSize": size,
            "freeStorageSize": 0_i64,
            "nindexes": nidx,
            "totalIndexSize": idx,
            "totalSize": size + idx,
            "indexSizes": {"_id_": idx},
            "scaleFactor": 1,
        },
        "count": count,
    }
}

/// `listDatabases`: every database with its size (`admin`, `config`, `local` always listed).
pub(super) fn list_databases(shared: &Arc<ServerState>, body: &Document) -> CmdResult {
    let name_only = body.get("nameOnly").is_some_and(truthy);
    let mut dbs = Vec::new();
    let mut total = 0i64;
    let store = shared
        .store
        .lock()
        .map_err(|_| CmdError::poisoned("storage lock"))?;
    let mut names: Vec<String> = store.dbs.keys().cloned().collect();
    for n in ["admin", "config", "local"] {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    }
    names.sort();
    for n in names {
        let size: i64 = store
            .dbs
            .get(&n)
            .map(|c| {
                c.values()
                    .map(|c| (c.data_bytes + c.index_bytes()) as i64)
                    .sum()
            })
            .unwrap_or(0)
            + 4096;
        total += size;
        if name_only {
            dbs.push(Bson::Document(doc! {"name": n}));
        } else {
            dbs.push(Bson::Document(
                doc! {"name": n, "sizeOnDisk": size, "empty": false},
            ));
        }
    }
    if name_only {
        return Ok(doc! {"databases": dbs, "ok": 1.0});
    }
    Ok(doc! {"databases": dbs, "totalSize": total, "totalSizeMb": total / (1024 * 1024), "ok": 1.0})
}

/// `listCollections`, filtered as asked.
pub(super) fn list_collections(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    check_db_name(db)?;
    let filter = Fields::new("listCollections", body).opt_doc("filter")?;
    let m = Matcher::new(&filter)?;
    let name_only = body.get("nameOnly").is_some_and(truthy);
    let store = shared
        .store
        .lock()
        .map_err(|_| CmdError::poisoned("storage lock"))?;
    let mut out = VecDeque::new();
    if let Some(colls) = store.dbs.get(db) {
        for (name, c) in colls {
            let info = if name_only {
                doc! {"name": name.clone(), "type": "collection"}
            } else {
                doc! {
                    "name": name.clone(),
                    "type": "collection",
                    "options": c.options.clone(),
                    "info": {"readOnly": false, "uuid": c.uuid.clone()},
                    "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"},
                }
            };
            if m.matches(&info) {
                out.push_back(info);
            }
        }
    }
    drop(store);
    Ok(cursor_reply(
        shared,
        &format!("{db}.$cmd.listCollections"),
        out,
        FirstBatch::default(),
    ))
}

/// `dbStats`: counts and sizes over the database's collections, divided by `scale`.
pub(super) fn db_stats(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    check_db_name(db)?;
    let scale = body
        .get("scale")
        .and_then(as_i64)
        .filter(|s| *s > 0)
        .unwrap_or(1);
    let store = shared
        .store
        .lock()
        .map_err(|_| CmdError::poisoned("storage lock"))?;
    let (mut colls, mut objects, mut data, mut indexes, mut index_size) =
        (0i64, 0i64, 0i64, 0i64, 0i64);
    if let Some(cs) = store.dbs.get(db) {
        for c in cs.values() {
            colls += 1;
            objects += c.docs.len() as i64;
            data += c.data_bytes as i64;
            indexes += c.indexes.len() as i64;
            index_size += c.index_bytes() as i64;
        }
    }
    let avg = if objects > 0 {
        data as f64 / objects as f64
    } else {
        0.0
    };
    Ok(doc! {
        "db": db,
        "collections": colls,
        "views": 0_i64,
        "objects": objects,
        "avgObjSize": avg,
        "dataSize": (data / scale) as f64,
        "storageSize": (data / scale) as f64,
        "indexes": indexes,
        "indexSize": (index_size / scale) as f64,
        "totalSize": ((data + index_size) / scale) as f64,
        "scaleFactor": scale,
        "fsUsedSize": 0.0,
        "fsTotalSize": 0.0,
        "ok": 1.0,
    })
}

/// `listIndexes` (NamespaceNotFound for a collection that does not exist).
pub(super) fn list_indexes(shared: &ServerState, db: &str, body: &Document) -> CmdResult {
    repl::check_readable(shared)?;
    let coll = coll_name("listIndexes", db, body)?;
    let idx = with_store(shared, |s| Ok(s.coll(db, &coll).map(|c| c.indexes.clone())))?;
    let Some(idx) = idx else {
        return Err(CmdError::new(
            code::NAMESPACE_NOT_FOUND,
            format!("ns does not exist: {db}.{coll}"),
        ));
    };
    Ok(cursor_reply(
        shared,
        &format!("{db}.$cmd.listIndexes.{coll}"),
        idx.into(),
        FirstBatch::default(),
    ))
}

/// `collStats`: [`coll_stats`] as a command reply.
pub(super) fn coll_stats_command(shared: &ServerState, db: &str, body: &Document) -> CmdResult {
    let coll = coll_name("collStats", db, body)?;
    let mut s = coll_stats(shared, db, &coll);
    s.insert("ok", 1.0);
    Ok(s)
}
