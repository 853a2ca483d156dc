//! mongod's write commands: `insert`, `update`, `delete`, statement by statement with mongod's
//! write errors.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mongodb::bson::{Bson, Document, doc};

use super::with_store;
use crate::cmderr::{CmdError, CmdResult, code};
use crate::fields::{Fields, coll_name};
use crate::query::{Matcher, Update};
use crate::repl;
use crate::state::ServerState;
use crate::value::{as_i64, truthy};

fn ordered(body: &Document) -> bool {
    body.get("ordered").is_none_or(truthy)
}

fn write_error(index: usize, e: &CmdError) -> Bson {
    Bson::Document(doc! {"index": index as i32, "code": e.code, "errmsg": e.msg.clone()})
}

/// Applies each statement of a write command in order, as mongod does: a failure becomes a
/// write error (with `{ns}` filled in) and, when the command is ordered, stops the rest.
/// Returns how many statements were attempted (what the capacity model charges).
fn apply_statements<T>(
    statements: impl IntoIterator<Item = T>,
    ordered: bool,
    ns: &str,
    errors: &mut Vec<Bson>,
    mut apply: impl FnMut(usize, T) -> Result<(), CmdError>,
) -> u32 {
    let mut attempted = 0u32;
    for (i, statement) in statements.into_iter().enumerate() {
        attempted += 1;
        if let Err(mut e) = apply(i, statement) {
            e.msg = e.msg.replace("{ns}", ns);
            errors.push(write_error(i, &e));
            if ordered {
                break;
            }
        }
    }
    attempted
}

pub(super) async fn insert(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    let coll = coll_name("insert", db, body)?;
    let docs = Fields::new("insert", body).doc_array("documents")?;
    repl::check_writable(shared)?;
    let ordered = ordered(body);
    let ns = format!("{db}.{coll}");
    let mut n = 0i32;
    let mut errors = Vec::new();
    let attempted = with_store(shared, |s| {
        let (c, _) = s.coll_mut(db, &coll);
        Ok(apply_statements(docs, ordered, &ns, &mut errors, |_, d| {
            c.insert(d)?;
            n += 1;
            Ok(())
        }))
    })?;
    shared
        .counters
        .insert
        .fetch_add(attempted as u64, Ordering::Relaxed);
    shared.occupy(attempted).await;
    let mut out = doc! {"n": n};
    if !errors.is_empty() {
        out.insert("writeErrors", errors);
    }
    out.insert("ok", 1.0);
    Ok(out)
}

pub(super) async fn update(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    let coll = coll_name("update", db, body)?;
    let stmts = Fields::new("update", body).doc_array("updates")?;
    repl::check_writable(shared)?;
    let ordered = ordered(body);
    let ns = format!("{db}.{coll}");
    let (mut n, mut modified) = (0i64, 0i64);
    let mut upserted = Vec::new();
    let mut errors = Vec::new();
    let attempted = with_store(shared, |s| {
        Ok(apply_statements(
            &stmts,
            ordered,
            &ns,
            &mut errors,
            |i, st| {
                let q = statement_filter(st, "update.updates")?;
                let u = Update::new(
                    st.get("u")
                        .ok_or_else(|| CmdError::missing("update.updates", "u"))?,
                )?;
                let multi = st.get("multi").is_some_and(truthy);
                let upsert = st.get("upsert").is_some_and(truthy);
                let o = s.update(db, &coll, &q, &u, multi, upsert)?;
                n += o.matched as i64;
                modified += o.modified as i64;
                if let Some(id) = o.upserted {
                    n += 1;
                    upserted.push(Bson::Document(doc! {"index": i as i32, "_id": id}));
                }
                Ok(())
            },
        ))
    })?;
    shared
        .counters
        .update
        .fetch_add(attempted as u64, Ordering::Relaxed);
    shared.occupy(attempted).await;
    let mut out = doc! {"n": n as i32, "nModified": modified as i32};
    if !upserted.is_empty() {
        out.insert("upserted", upserted);
    }
    if !errors.is_empty() {
        out.insert("writeErrors", errors);
    }
    out.insert("ok", 1.0);
    Ok(out)
}

/// The `q` (filter) of one update or delete statement, refused the way mongod refuses it.
fn statement_filter(statement: &Document, context: &str) -> Result<Document, CmdError> {
    Fields::new(context, statement).req_doc("q")
}

pub(super) async fn delete(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    let coll = coll_name("delete", db, body)?;
    let stmts = Fields::new("delete", body).doc_array("deletes")?;
    repl::check_writable(shared)?;
    let ordered = ordered(body);
    let ns = format!("{db}.{coll}");
    let mut n = 0i64;
    let mut errors = Vec::new();
    let attempted = with_store(shared, |s| {
        Ok(apply_statements(
            &stmts,
            ordered,
            &ns,
            &mut errors,
            |_, st| {
                let q = statement_filter(st, "delete.deletes")?;
                let limit = match st.get("limit").map(as_i64) {
                    Some(Some(0)) => 0,
                    Some(Some(1)) => 1,
                    None => return Err(CmdError::missing("delete.deletes", "limit")),
                    _ => {
                        return Err(CmdError::new(
                            code::FAILED_TO_PARSE,
                            "The limit field in delete objects must be 0 or 1. Got ".to_string()
                                + &st.get("limit").map(|v| v.to_string()).unwrap_or_default(),
                        ));
                    }
                };
                let m = Matcher::new(&q)?;
                n += match s.dbs.get_mut(db).and_then(|d| d.get_mut(&coll)) {
                    Some(c) => c.delete(&m, limit),
                    None => 0,
                } as i64;
                Ok(())
            },
        ))
    })?;
    shared
        .counters
        .delete
        .fetch_add(attempted as u64, Ordering::Relaxed);
    shared.occupy(attempted).await;
    let mut out = doc! {"n": n as i32};
    if !errors.is_empty() {
        out.insert("writeErrors", errors);
    }
    out.insert("ok", 1.0);
    Ok(out)
}
