//! mongod's read commands: `find`, `getMore`, `killCursors` (the cursor table, which mongos
//! answers from too) and `count`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mongodb::bson::{Bson, Document, doc};

use super::with_store;
use crate::cmderr::{CmdError, CmdResult, code};
use crate::fields::{Fields, coll_name};
use crate::query::{Matcher, Projection, Sort};
use crate::repl;
use crate::state::{FirstBatch, PlanEnd, ServerState, cursor_reply, take_batch};
use crate::store::FindOptions;
use crate::value::{as_i64, truthy};

struct FindArgs {
    filter: Document,
    projection: Option<Projection>,
    sort: Option<Sort>,
    skip: usize,
    limit: Option<usize>,
    batch_size: Option<usize>,
    single_batch: bool,
}

/// `find`'s options, refused as mongod refuses them.
fn find_args(body: &Document) -> CmdResult<FindArgs> {
    let f = Fields::new("find", body);
    let filter = f.opt_doc("filter")?;
    let projection = Projection::new(&f.opt_doc("projection")?)?;
    let sort = Sort::new(&f.opt_doc("sort")?)?;
    let skip = f.opt_count("skip")?.unwrap_or(0);
    let limit = f.opt_count("limit")?.filter(|l| *l > 0);
    let batch_size = f.opt_count("batchSize")?;
    let single_batch = body.get("singleBatch").is_some_and(truthy);
    Ok(FindArgs {
        filter,
        projection,
        sort,
        skip,
        limit,
        batch_size,
        single_batch,
    })
}

/// `find`: the whole result read under the store lock, then served in batches from a cursor.
pub(super) async fn find(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    let coll = coll_name("find", db, body)?;
    let a = find_args(body)?;
    repl::check_readable(shared)?;
    repl::note_query(shared, db);
    let m = Matcher::new(&a.filter)?;
    let docs = with_store(shared, |s| {
        let opts = FindOptions {
            sort: a.sort.as_ref(),
            skip: a.skip,
            limit: a.limit,
            projection: a.projection.as_ref(),
        };
        Ok(s.find(db, &coll, &m, opts))
    })?;
    shared.counters.query.fetch_add(1, Ordering::Relaxed);
    shared.occupy(1).await;
    let first = FirstBatch {
        batch_size: a.batch_size,
        single_batch: a.single_batch,
        end: PlanEnd::limit(a.limit),
    };
    Ok(cursor_reply(
        shared,
        &format!("{db}.{coll}"),
        VecDeque::from(docs),
        first,
    ))
}

/// `getMore` against the shared cursor table (both roles): a batch of `batchSize` (or all that is
/// left), and the cursor kept by the same rule as the first batch's ([`PlanEnd::stays_open`]).
pub(crate) async fn get_more(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    let f = Fields::new("getMore", body);
    let id = f.req_long("getMore")?;
    let coll = f.req_str("collection")?;
    let batch = f.opt_count("batchSize")?.filter(|b| *b > 0);
    let ns = format!("{db}.{coll}");
    let (docs, remaining_ns, left) = {
        let mut cursors = shared
            .cursors
            .lock()
            .map_err(|_| CmdError::poisoned("cursor table"))?;
        let Some(c) = cursors.get_mut(&id) else {
            return Err(CmdError::new(
                code::CURSOR_NOT_FOUND,
                format!("cursor id {id} not found"),
            ));
        };
        if c.ns != ns && !c.ns.starts_with(&format!("{db}.$cmd")) {
            return Err(CmdError::new(
                code::UNAUTHORIZED,
                format!(
                    "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {}",
                    c.ns
                ),
            ));
        }
        c.last_used = std::time::Instant::now();
        let docs = take_batch(&mut c.docs, batch);
        c.end = c.end.after(docs.len());
        let left = c.end.stays_open(batch, docs.len(), c.docs.len());
        let cns = c.ns.clone();
        if !left {
            cursors.remove(&id);
        }
        (docs, cns, left)
    };
    shared.counters.getmore.fetch_add(1, Ordering::Relaxed);
    shared.occupy(1).await;
    Ok(
        doc! {"cursor": {"nextBatch": docs, "id": if left { id } else { 0 }, "ns": remaining_ns}, "ok": 1.0},
    )
}

/// `killCursors` (both roles).
pub(crate) fn kill_cursors(shared: &ServerState, body: &Document) -> CmdResult {
    let ids = Fields::new("killCursors", body).req_array("cursors")?;
    let mut killed = Vec::new();
    let mut not_found = Vec::new();
    let mut cursors = shared
        .cursors
        .lock()
        .map_err(|_| CmdError::poisoned("cursor table"))?;
    for v in ids {
        let Some(id) = as_i64(&v) else { continue };
        if cursors.remove(&id).is_some() {
            killed.push(Bson::Int64(id));
        } else {
            not_found.push(Bson::Int64(id));
        }
    }
    Ok(
        doc! {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [], "cursorsUnknown": [], "ok": 1.0},
    )
}

/// `count`: matching documents, after skip and limit.
pub(super) async fn count(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
    let coll = coll_name("count", db, body)?;
    let f = Fields::new("count", body);
    let q = f.opt_doc("query")?;
    let skip = f.opt_count("skip")?.unwrap_or(0);
    let limit = f.opt_count("limit")?.filter(|l| *l > 0);
    repl::check_readable(shared)?;
    let m = Matcher::new(&q)?;
    let n = with_store(shared, |s| {
        Ok(match s.coll(db, &coll) {
            None => 0,
            Some(c) if q.is_empty() => c.docs.len(),
            Some(c) => c.matching(&m).count(),
        })
    })?;
    let n = n.saturating_sub(skip);
    let n = limit.map_or(n, |l| n.min(l));
    // mongod counts `count` under `opcounters.command` only (the server counted it already).
    shared.occupy(1).await;
    Ok(doc! {"n": n as i64, "ok": 1.0})
}
