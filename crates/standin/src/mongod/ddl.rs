//! mongod's DDL: `create`, `drop`, `dropDatabase`, `createIndexes`.

use std::sync::Arc;

use mongodb::bson::{Bson, Document, doc};

use super::with_store;
use crate::cmderr::{CmdError, CmdResult, code};
use crate::fields::{Fields, check_db_name, coll_name, without_driver_fields};
use crate::repl;
use crate::state::ServerState;

/// `createIndexes`: records each new specification (IndexKeySpecsConflict for a name reused with another key).
pub(super) fn create_indexes(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    let coll = coll_name("createIndexes", db, body)?;
    let specs = Fields::new("createIndexes", body).doc_array("indexes")?;
    repl::check_writable(shared, body)?;
    with_store(shared, |s| {
        let (c, created) = s.coll_mut(db, &coll);
        let before = c.indexes.len() as i32;
        for spec in specs {
            let key = match spec.get("key") {
                Some(Bson::Document(k)) if !k.is_empty() => k.clone(),
                _ => {
                    return Err(CmdError::new(
                        code::FAILED_TO_PARSE,
                        "The 'key' field is a required property of an index specification",
                    ));
                }
            };
            let Ok(name) = spec.get_str("name") else {
                return Err(CmdError::new(
                    code::FAILED_TO_PARSE,
                    "The 'name' field is a required property of an index specification",
                ));
            };
            match c.indexes.iter().find(|i| i.get_str("name") == Ok(name)) {
                Some(existing) if existing.get_document("key").ok() != Some(&key) => {
                    return Err(CmdError::new(
                        code::INDEX_KEY_SPECS_CONFLICT,
                        format!(
                            "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: {spec}, existing index: {existing}"
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    let mut rec = doc! {"v": 2};
                    rec.extend(spec.clone());
                    c.indexes.push(rec);
                }
            }
        }
        let after = c.indexes.len() as i32;
        let mut out = doc! {"numIndexesBefore": before, "numIndexesAfter": after, "createdCollectionAutomatically": created};
        if before == after {
            out.insert("note", "all indexes already exist");
        }
        out.insert("ok", 1.0);
        Ok(out)
    })
}

/// `create`: an explicit collection with the options given (NamespaceExists when present).
pub(super) fn create(shared: &ServerState, db: &str, body: &Document) -> CmdResult {
    repl::check_writable(shared, body)?;
    let coll = coll_name("create", db, body)?;
    let mut opts = without_driver_fields(body);
    opts.remove("create");
    opts.remove("writeConcern");
    with_store(shared, |s| s.create(db, &coll, opts))?;
    Ok(doc! {"ok": 1.0})
}

/// `drop`: `nIndexesWas` when the collection existed.
pub(super) fn drop(shared: &ServerState, db: &str, body: &Document) -> CmdResult {
    repl::check_writable(shared, body)?;
    let coll = coll_name("drop", db, body)?;
    let n = with_store(shared, |s| {
        let n = s.coll(db, &coll).map(|c| c.indexes.len() as i32);
        s.drop_coll(db, &coll);
        Ok(n)
    })?;
    Ok(match n {
        Some(n) => doc! {"nIndexesWas": n, "ns": format!("{db}.{coll}"), "ok": 1.0},
        None => doc! {"ok": 1.0},
    })
}

/// `dropDatabase`.
pub(super) fn drop_database(shared: &ServerState, db: &str) -> CmdResult {
    repl::check_writable(shared, &Document::new())?;
    check_db_name(db)?;
    with_store(shared, |s| Ok(s.drop_db(db)))?;
    Ok(doc! {"dropped": db, "ok": 1.0})
}
