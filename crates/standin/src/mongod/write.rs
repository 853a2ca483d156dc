//! mongod's write commands: `insert`, `update`, `delete`, statement by statement with mongod's
//! write errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mongodb::bson::{Bson, Document, doc};

use super::with_store;
use crate::cmderr::{CmdError, CmdResult, code, code_name};
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

/// A write command as every write reads it: its namespace, whether it is ordered, its statements.
struct WriteCommand {
    coll: String,
    ns: String,
    ordered: bool,
    statements: Vec<Document>,
}

impl WriteCommand {
    /// Reads `cmd`'s collection and its statements (`field`), refusing it when this node takes no writes.
    fn read(
        shared: &ServerState,
        cmd: &str,
        field: &str,
        db: &str,
        body: &Document,
    ) -> CmdResult<Self> {
        let coll = coll_name(cmd, db, body)?;
        let statements = Fields::new(cmd, body).doc_array(field)?;
        repl::check_writable(shared, body)?;
        Ok(WriteCommand {
            ns: format!("{db}.{coll}"),
            coll,
            ordered: ordered(body),
            statements,
        })
    }
}

/// The `writeConcernError` of a write that was applied but not replicated within `wtimeout`
/// (`--write-concern-error`; manual, "Write Concern Specification", `writeConcernError`).
fn write_concern_error() -> Document {
    let code = code::WRITE_CONCERN_FAILED;
    doc! {
        "code": code,
        "codeName": code_name(code),
        "errmsg": "waiting for replication timed out",
        "errInfo": {"wtimeout": true},
    }
}

/// Counts and charges the statements attempted, then completes the reply with `writeErrors`
/// (if any), the `writeConcernError` of `--write-concern-error`, and `ok`.
async fn reply(
    shared: &ServerState,
    counter: &AtomicU64,
    attempted: u32,
    mut out: Document,
    errors: Vec<Bson>,
) -> CmdResult {
    counter.fetch_add(u64::from(attempted), Ordering::Relaxed);
    shared.occupy(attempted).await;
    if !errors.is_empty() {
        out.insert("writeErrors", errors);
    }
    if shared.cfg.write_concern_error {
        out.insert("writeConcernError", write_concern_error());
    }
    out.insert("ok", 1.0);
    Ok(out)
}

/// `insert`: each document in turn (an `_id` added when missing).
pub(super) async fn insert(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    let w = WriteCommand::read(shared, "insert", "documents", db, body)?;
    let mut n = 0i32;
    let mut errors = Vec::new();
    let attempted = with_store(shared, |s| {
        let (c, _) = s.coll_mut(db, &w.coll);
        Ok(apply_statements(
            w.statements,
            w.ordered,
            &w.ns,
            &mut errors,
            |_, d| {
                c.insert(d)?;
                n += 1;
                Ok(())
            },
        ))
    })?;
    reply(
        shared,
        &shared.counters.insert,
        attempted,
        doc! {"n": n},
        errors,
    )
    .await
}

/// `update`: each statement in turn, with upserts reported by statement index.
pub(super) async fn update(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    let w = WriteCommand::read(shared, "update", "updates", db, body)?;
    let (mut n, mut modified) = (0i64, 0i64);
    let mut upserted = Vec::new();
    let mut errors = Vec::new();
    let attempted = with_store(shared, |s| {
        Ok(apply_statements(
            &w.statements,
            w.ordered,
            &w.ns,
            &mut errors,
            |i, st| {
                let q = statement_filter(st, "update.updates")?;
                let u = Update::new(
                    st.get("u")
                        .ok_or_else(|| CmdError::missing("update.updates", "u"))?,
                )?;
                let multi = st.get("multi").is_some_and(truthy);
                let upsert = st.get("upsert").is_some_and(truthy);
                let o = s.update(db, &w.coll, &q, &u, multi, upsert)?;
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
    let mut out = doc! {"n": n as i32, "nModified": modified as i32};
    if !upserted.is_empty() {
        out.insert("upserted", upserted);
    }
    reply(shared, &shared.counters.update, attempted, out, errors).await
}

/// The `q` (filter) of one update or delete statement, refused the way mongod refuses it.
fn statement_filter(statement: &Document, context: &str) -> Result<Document, CmdError> {
    Fields::new(context, statement).req_doc("q")
}

/// The `limit` of one delete statement: 0 (all matching) or 1.
fn delete_limit(statement: &Document) -> CmdResult<usize> {
    match statement.get("limit").map(as_i64) {
        Some(Some(0)) => Ok(0),
        Some(Some(1)) => Ok(1),
        None => Err(CmdError::missing("delete.deletes", "limit")),
        _ => Err(CmdError::new(
            code::FAILED_TO_PARSE,
            "The limit field in delete objects must be 0 or 1. Got ".to_string()
                + &statement
                    .get("limit")
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
        )),
    }
}

/// `delete`: each statement in turn.
pub(super) async fn delete(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    let w = WriteCommand::read(shared, "delete", "deletes", db, body)?;
    let mut n = 0i64;
    let mut errors = Vec::new();
    let attempted = with_store(shared, |s| {
        Ok(apply_statements(
            &w.statements,
            w.ordered,
            &w.ns,
            &mut errors,
            |_, st| {
                let q = statement_filter(st, "delete.deletes")?;
                let limit = delete_limit(st)?;
                let m = Matcher::new(&q)?;
                n += match s.dbs.get_mut(db).and_then(|d| d.get_mut(&w.coll)) {
                    Some(c) => c.delete(&m, limit),
                    None => 0,
                } as i64;
                Ok(())
            },
        ))
    })?;
    reply(
        shared,
        &shared.counters.delete,
        attempted,
        doc! {"n": n as i32},
        errors,
    )
    .await
}
