//! mongod's data commands over the in-memory store: CRUD, cursors, aggregation subset, DDL and stats.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mongodb::bson::{Bson, DateTime, Document, doc};

use super::cmderr::{CmdError, CmdResult, code};
use super::fields::Fields;
use super::query::{Matcher, Projection, Sort, Update, get_path};
use super::repl;
use super::server::{Shared, command_not_found, cursor_reply, take_batch};
use super::store::Store;
use super::value::{as_i64, cmp_bson, truthy, type_name};

/// Checks a database name the way the server does (InvalidNamespace, 73).
pub(crate) fn check_db_name(db: &str) -> CmdResult<()> {
    if db.is_empty() || db.len() >= 64 || db.contains(['/', '\\', '.', ' ', '"', '$', '\0']) {
        return Err(CmdError::new(
            code::INVALID_NAMESPACE,
            format!("Invalid database name: '{db}'"),
        ));
    }
    Ok(())
}

/// Reads the collection name that is the command's first value (InvalidNamespace when it is not a valid one).
pub(crate) fn coll_name(cmd: &str, db: &str, body: &Document) -> CmdResult<String> {
    check_db_name(db)?;
    match body.get(cmd) {
        Some(Bson::String(s))
            if !s.is_empty() && !s.contains(['$', '\0']) && !s.starts_with('.') =>
        {
            Ok(s.clone())
        }
        Some(Bson::String(s)) => Err(CmdError::new(
            code::INVALID_NAMESPACE,
            format!("Invalid namespace specified '{db}.{s}'"),
        )),
        Some(other) => Err(CmdError::new(
            code::INVALID_NAMESPACE,
            format!("collection name has invalid type {}", type_name(other)),
        )),
        None => Err(CmdError::missing(cmd, cmd)),
    }
}

fn ordered(body: &Document) -> bool {
    body.get("ordered").is_none_or(truthy)
}

fn write_error(index: usize, e: &CmdError) -> Bson {
    Bson::Document(doc! {"index": index as i32, "code": e.code, "errmsg": e.msg.clone()})
}

/// Dispatches one mongod command.
pub(crate) async fn command(
    shared: &Arc<Shared>,
    name: &str,
    db: &str,
    body: &Document,
) -> CmdResult {
    match name {
        "insert" => insert(shared, db, body).await,
        "find" => find(shared, db, body).await,
        "getMore" => get_more(shared, db, body).await,
        "killCursors" => kill_cursors(shared, body),
        "update" => update(shared, db, body).await,
        "delete" => delete(shared, db, body).await,
        "count" => count(shared, db, body).await,
        "aggregate" => aggregate(shared, db, body).await,
        "create" => {
            repl::check_writable(shared)?;
            let coll = coll_name(name, db, body)?;
            let mut opts = body.clone();
            for k in [
                "create",
                "$db",
                "lsid",
                "$clusterTime",
                "writeConcern",
                "txnNumber",
                "$readPreference",
                "apiVersion",
            ] {
                opts.remove(k);
            }
            with_store(shared, |s| s.create(db, &coll, opts))?;
            Ok(doc! {"ok": 1.0})
        }
        "drop" => {
            repl::check_writable(shared)?;
            let coll = coll_name(name, db, body)?;
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
        "dropDatabase" => {
            repl::check_writable(shared)?;
            check_db_name(db)?;
            with_store(shared, |s| Ok(s.drop_db(db)))?;
            Ok(doc! {"dropped": db, "ok": 1.0})
        }
        "createIndexes" => create_indexes(shared, db, body),
        "listIndexes" => {
            repl::check_readable(shared)?;
            let coll = coll_name(name, db, body)?;
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
                None,
                false,
            ))
        }
        "listDatabases" => list_databases(shared, body),
        "listCollections" => list_collections(shared, db, body),
        "dbStats" => db_stats(shared, db, body),
        "collStats" => {
            let coll = coll_name(name, db, body)?;
            let mut s = coll_stats(shared, db, &coll);
            s.insert("ok", 1.0);
            Ok(s)
        }
        "replSetInitiate" => {
            if db != "admin" {
                return Err(CmdError::new(
                    13,
                    "replSetInitiate may only be run against the admin database.",
                ));
            }
            repl::initiate(shared, body).await
        }
        "replSetGetStatus" => repl::get_status(shared),
        "_standinReplSetJoin" => repl::join(shared, body),
        "replSetGetConfig" => repl::get_config(shared),
        "flushRouterConfig" => Ok(doc! {"ok": 1.0}),
        _ => Err(command_not_found(name)),
    }
}

fn with_store<T>(shared: &Shared, f: impl FnOnce(&mut Store) -> CmdResult<T>) -> CmdResult<T> {
    let mut s = shared
        .store
        .lock()
        .map_err(|_| CmdError::new(1, "storage lock poisoned"))?;
    f(&mut s)
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

async fn insert(shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
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

struct FindArgs {
    filter: Document,
    projection: Option<Projection>,
    sort: Option<Sort>,
    skip: usize,
    limit: Option<usize>,
    batch_size: Option<usize>,
    single_batch: bool,
}

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

async fn find(shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
    let coll = coll_name("find", db, body)?;
    let a = find_args(body)?;
    repl::check_readable(shared)?;
    let m = Matcher::new(&a.filter)?;
    let docs = with_store(shared, |s| {
        Ok(s.find(
            db,
            &coll,
            &m,
            a.sort.as_ref(),
            a.skip,
            a.limit,
            a.projection.as_ref(),
        ))
    })?;
    shared.counters.query.fetch_add(1, Ordering::Relaxed);
    shared.occupy(1).await;
    let single = a.single_batch || a.limit.is_some_and(|l| a.batch_size.is_none_or(|b| b >= l));
    Ok(cursor_reply(
        shared,
        &format!("{db}.{coll}"),
        VecDeque::from(docs),
        a.batch_size,
        single,
    ))
}

/// `getMore` against the shared cursor table (both roles).
pub(crate) async fn get_more(shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
    let f = Fields::new("getMore", body);
    let id = f.req_long("getMore")?;
    let coll = f.req_str("collection")?;
    let batch = f.opt_count("batchSize")?.filter(|b| *b > 0);
    let ns = format!("{db}.{coll}");
    let (docs, remaining_ns, left) = {
        let mut cursors = shared
            .cursors
            .lock()
            .map_err(|_| CmdError::new(1, "cursor table poisoned"))?;
        let Some(c) = cursors.get_mut(&id) else {
            return Err(CmdError::new(
                code::CURSOR_NOT_FOUND,
                format!("cursor id {id} not found"),
            ));
        };
        if c.ns != ns && !c.ns.starts_with(&format!("{db}.$cmd")) {
            return Err(CmdError::new(
                13,
                format!(
                    "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {}",
                    c.ns
                ),
            ));
        }
        c.last_used = std::time::Instant::now();
        let docs = take_batch(&mut c.docs, batch);
        let left = !c.docs.is_empty();
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
pub(crate) fn kill_cursors(shared: &Shared, body: &Document) -> CmdResult {
    let ids = Fields::new("killCursors", body).req_array("cursors")?;
    let mut killed = Vec::new();
    let mut not_found = Vec::new();
    let mut cursors = shared
        .cursors
        .lock()
        .map_err(|_| CmdError::new(1, "cursor table poisoned"))?;
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

async fn update(shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
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

async fn delete(shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
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

async fn count(shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
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
    shared.counters.query.fetch_add(1, Ordering::Relaxed);
    shared.occupy(1).await;
    Ok(doc! {"n": n as i64, "ok": 1.0})
}

/// `$collStats`-style statistics of one collection on this server.
pub(crate) fn coll_stats(shared: &Shared, db: &str, coll: &str) -> Document {
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

async fn aggregate(shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
    check_db_name(db)?;
    let coll = match body.get("aggregate") {
        Some(Bson::String(s)) => Some(s.clone()),
        Some(v) if as_i64(v) == Some(1) => None,
        Some(other) => {
            return Err(CmdError::new(
                code::INVALID_NAMESPACE,
                format!("collection name has invalid type {}", type_name(other)),
            ));
        }
        None => return Err(CmdError::missing("aggregate", "aggregate")),
    };
    let f = Fields::new("aggregate", body);
    let pipeline = f.doc_array("pipeline")?;
    let cursor_opts = match f.maybe_doc("cursor")? {
        Some(d) => d,
        None if body.get("explain").is_some_and(truthy) => Document::new(),
        None => {
            return Err(CmdError::parse(
                "The 'cursor' option is required, except for aggregate with the explain argument",
            ));
        }
    };
    let batch_size = Fields::new("aggregate", &cursor_opts).opt_count("batchSize")?;
    repl::check_readable(shared)?;
    let Some(coll) = coll else {
        return Err(CmdError::new(
            73,
            "{aggregate: 1} is not supported by the stand-in (only collection aggregations)",
        ));
    };
    let mut stages = pipeline.iter().peekable();
    let mut docs: Vec<Document> = if let Some(first) = stages.peek() {
        if first.contains_key("$collStats") {
            let spec = match first.get("$collStats") {
                Some(Bson::Document(d)) => d.clone(),
                _ => {
                    return Err(CmdError::new(
                        5447000,
                        "$collStats must take a nested object",
                    ));
                }
            };
            stages.next();
            let mut s = coll_stats(shared, db, &coll);
            if !spec.contains_key("count") {
                s.remove("count");
            }
            if !spec.contains_key("storageStats") {
                s.remove("storageStats");
            }
            if spec.contains_key("latencyStats") {
                s.insert("latencyStats", doc! {"reads": {"latency": 0_i64, "ops": 0_i64}, "writes": {"latency": 0_i64, "ops": 0_i64}, "commands": {"latency": 0_i64, "ops": 0_i64}});
            }
            vec![s]
        } else if let Some(Bson::Document(f)) = first.get("$match") {
            let m = Matcher::new(f)?;
            stages.next();
            with_store(shared, |s| Ok(s.find(db, &coll, &m, None, 0, None, None)))?
        } else {
            with_store(shared, |s| {
                Ok(s.find(db, &coll, &Matcher::new(&doc! {})?, None, 0, None, None))
            })?
        }
    } else {
        with_store(shared, |s| {
            Ok(s.find(db, &coll, &Matcher::new(&doc! {})?, None, 0, None, None))
        })?
    };
    let rest: Vec<Document> = stages.cloned().collect();
    docs = run_pipeline(docs, &rest)?;
    shared.counters.query.fetch_add(1, Ordering::Relaxed);
    shared.occupy(1).await;
    Ok(cursor_reply(
        shared,
        &format!("{db}.{coll}"),
        VecDeque::from(docs),
        batch_size,
        false,
    ))
}

fn eval(doc: &Document, expr: &Bson) -> Bson {
    match expr {
        Bson::String(s) if s.starts_with('$') => {
            get_path(doc, &s[1..]).cloned().unwrap_or(Bson::Null)
        }
        Bson::Document(d) if !d.keys().any(|k| k.starts_with('$')) => {
            let mut out = Document::new();
            for (k, v) in d {
                out.insert(k.clone(), eval(doc, v));
            }
            Bson::Document(out)
        }
        other => other.clone(),
    }
}

fn add(a: &Bson, b: &Bson) -> Bson {
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => x
            .checked_add(*y)
            .map(Bson::Int32)
            .unwrap_or(Bson::Int64(i64::from(*x) + i64::from(*y))),
        (Bson::Int32(_) | Bson::Int64(_), Bson::Int32(_) | Bson::Int64(_)) => {
            Bson::Int64(as_i64(a).unwrap_or(0).wrapping_add(as_i64(b).unwrap_or(0)))
        }
        _ => {
            let f = |v: &Bson| match v {
                Bson::Double(d) => Some(*d),
                other => as_i64(other).map(|i| i as f64),
            };
            match (f(a), f(b)) {
                (Some(x), Some(y)) => Bson::Double(x + y),
                (Some(_), None) => a.clone(),
                (None, Some(_)) => b.clone(),
                _ => Bson::Int32(0),
            }
        }
    }
}

/// Runs the supported stages (`$match`, `$group`, `$count`, `$sort`, `$skip`, `$limit`, `$project`) in memory.
pub(crate) fn run_pipeline(
    mut docs: Vec<Document>,
    stages: &[Document],
) -> CmdResult<Vec<Document>> {
    for stage in stages {
        let Some((name, spec)) = stage.iter().next() else {
            return Err(CmdError::new(
                40323,
                "A pipeline stage specification object must contain exactly one field.",
            ));
        };
        match (name.as_str(), spec) {
            ("$match", Bson::Document(f)) => {
                let m = Matcher::new(f)?;
                docs.retain(|d| m.matches(d));
            }
            ("$count", Bson::String(field)) => {
                let n = docs.len() as i32;
                docs = if n == 0 {
                    Vec::new()
                } else {
                    vec![doc! {field.clone(): n}]
                };
            }
            ("$limit", v) => {
                let n = as_i64(v)
                    .filter(|n| *n > 0)
                    .ok_or_else(|| CmdError::new(15958, "the limit must be positive"))?;
                docs.truncate(n as usize);
            }
            ("$skip", v) => {
                let n = as_i64(v)
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| CmdError::new(15956, "Argument to $skip cannot be negative"))?;
                docs = docs.into_iter().skip(n as usize).collect();
            }
            ("$sort", Bson::Document(s)) => {
                if let Some(s) = Sort::new(s)? {
                    docs.sort_by(|a, b| s.compare(a, b));
                }
            }
            ("$project", Bson::Document(p)) => {
                if let Some(p) = Projection::new(p)? {
                    docs = docs.iter().map(|d| p.apply(d)).collect();
                }
            }
            ("$group", Bson::Document(g)) => docs = group(docs, g)?,
            (other, _) if ["$match", "$count", "$sort", "$project", "$group"].contains(&other) => {
                return Err(CmdError::new(
                    code::FAILED_TO_PARSE,
                    format!("the {other} stage specification is malformed"),
                ));
            }
            (other, _) => {
                return Err(CmdError::new(
                    40324,
                    format!("Unrecognized pipeline stage name: '{other}'"),
                ));
            }
        }
    }
    Ok(docs)
}

fn group(docs: Vec<Document>, spec: &Document) -> CmdResult<Vec<Document>> {
    let Some(id_expr) = spec.get("_id") else {
        return Err(CmdError::new(
            15955,
            "a group specification must include an _id",
        ));
    };
    let mut accs: Vec<(String, String, Bson)> = Vec::new();
    for (k, v) in spec {
        if k == "_id" {
            continue;
        }
        let Bson::Document(a) = v else {
            return Err(CmdError::new(
                40234,
                format!("The field '{k}' must be an accumulator object"),
            ));
        };
        let Some((op, arg)) = a.iter().next() else {
            return Err(CmdError::new(
                40238,
                format!("The field '{k}' must specify one accumulator"),
            ));
        };
        if !["$sum", "$count", "$min", "$max", "$avg", "$first", "$last"].contains(&op.as_str()) {
            return Err(CmdError::new(
                15952,
                format!("unknown group operator '{op}'"),
            ));
        }
        accs.push((k.clone(), op.clone(), arg.clone()));
    }
    let mut groups: Vec<(Bson, Vec<Bson>, Vec<i64>)> = Vec::new();
    for d in &docs {
        let key = eval(d, id_expr);
        let idx = match groups
            .iter()
            .position(|(k, _, _)| cmp_bson(k, &key) == std::cmp::Ordering::Equal)
        {
            Some(i) => i,
            None => {
                groups.push((key, vec![Bson::Null; accs.len()], vec![0; accs.len()]));
                groups.len() - 1
            }
        };
        let g = &mut groups[idx];
        for (j, (_, op, arg)) in accs.iter().enumerate() {
            let v = if op == "$count" {
                Bson::Int32(1)
            } else {
                eval(d, arg)
            };
            let cur = &g.1[j];
            let first = g.2[j] == 0;
            let next = match op.as_str() {
                "$sum" | "$count" => {
                    let v = if matches!(v, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)) {
                        v
                    } else {
                        Bson::Int32(0)
                    };
                    if first { v } else { add(cur, &v) }
                }
                "$avg" => {
                    if first {
                        v
                    } else {
                        add(cur, &v)
                    }
                }
                "$min" => {
                    if first || cmp_bson(&v, cur).is_lt() {
                        v
                    } else {
                        cur.clone()
                    }
                }
                "$max" => {
                    if first || cmp_bson(&v, cur).is_gt() {
                        v
                    } else {
                        cur.clone()
                    }
                }
                "$first" => {
                    if first {
                        v
                    } else {
                        cur.clone()
                    }
                }
                _ => v,
            };
            g.1[j] = next;
            g.2[j] += 1;
        }
    }
    Ok(groups
        .into_iter()
        .map(|(k, vals, counts)| {
            let mut d = doc! {"_id": k};
            for (j, (name, op, _)) in accs.iter().enumerate() {
                let v = if op == "$avg" {
                    let total = match &vals[j] {
                        Bson::Double(x) => *x,
                        other => as_i64(other).unwrap_or(0) as f64,
                    };
                    if counts[j] > 0 {
                        Bson::Double(total / counts[j] as f64)
                    } else {
                        Bson::Null
                    }
                } else if (op == "$sum" || op == "$count") && counts[j] == 0 {
                    Bson::Int32(0)
                } else {
                    vals[j].clone()
                };
                d.insert(name.clone(), v);
            }
            d
        })
        .collect())
}

fn create_indexes(shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
    let coll = coll_name("createIndexes", db, body)?;
    let specs = Fields::new("createIndexes", body).doc_array("indexes")?;
    repl::check_writable(shared)?;
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
                        86,
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

fn list_databases(shared: &Arc<Shared>, body: &Document) -> CmdResult {
    let name_only = body.get("nameOnly").is_some_and(truthy);
    let mut dbs = Vec::new();
    let mut total = 0i64;
    let store = shared
        .store
        .lock()
        .map_err(|_| CmdError::new(1, "storage lock poisoned"))?;
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

fn list_collections(shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
    check_db_name(db)?;
    let filter = Fields::new("listCollections", body).opt_doc("filter")?;
    let m = Matcher::new(&filter)?;
    let name_only = body.get("nameOnly").is_some_and(truthy);
    let store = shared
        .store
        .lock()
        .map_err(|_| CmdError::new(1, "storage lock poisoned"))?;
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
        None,
        false,
    ))
}

fn db_stats(shared: &Arc<Shared>, db: &str, body: &Document) -> CmdResult {
    check_db_name(db)?;
    let scale = body
        .get("scale")
        .and_then(as_i64)
        .filter(|s| *s > 0)
        .unwrap_or(1);
    let store = shared
        .store
        .lock()
        .map_err(|_| CmdError::new(1, "storage lock poisoned"))?;
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
