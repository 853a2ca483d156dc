//! mongod's `aggregate`: the pipeline subset the tool sends (`$collStats`, `$match`, `$group`,
//! `$count`, `$sort`, `$skip`, `$limit`, `$project`), run in memory; mongos runs the same stages
//! over what the shards return.

use std::collections::VecDeque;
use std::sync::Arc;

use mongodb::bson::{Bson, Document, doc};

use super::catalog::coll_stats;
use super::with_store;
use crate::cmderr::{CmdError, CmdResult, code};
use crate::fields::{Fields, check_db_name};
use crate::query::{Matcher, Projection, Sort, get_path};
use crate::repl;
use crate::state::{FirstBatch, ServerState, cursor_reply};
use crate::store::FindOptions;
use crate::value::{as_i64, cmp_bson, truthy, type_name};

/// `aggregate` on one collection: the first stage read from the store (`$collStats`, or a
/// `$match` through the `_id` index), the rest run in memory.
pub(super) async fn aggregate(shared: &Arc<ServerState>, db: &str, body: &Document) -> CmdResult {
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
            code::INVALID_NAMESPACE,
            "{aggregate: 1} is not supported by the stand-in (only collection aggregations)",
        ));
    };
    let (docs, rest) = pipeline_source(shared, db, &coll, &pipeline)?;
    let docs = run_pipeline(docs, rest)?;
    // mongod counts `aggregate` under `opcounters.command` only (the server counted it already).
    shared.occupy(1).await;
    Ok(cursor_reply(
        shared,
        &format!("{db}.{coll}"),
        VecDeque::from(docs),
        FirstBatch::sized(batch_size),
    ))
}

/// The documents the pipeline starts from, and the stages left to run on them: a first
/// `$collStats` or `$match` stage is answered from the store itself.
fn pipeline_source<'p>(
    shared: &ServerState,
    db: &str,
    coll: &str,
    pipeline: &'p [Document],
) -> CmdResult<(Vec<Document>, &'p [Document])> {
    let Some(first) = pipeline.first() else {
        return Ok((scan(shared, db, coll, &doc! {})?, pipeline));
    };
    if first.contains_key("$collStats") {
        let Some(Bson::Document(spec)) = first.get("$collStats") else {
            return Err(CmdError::new(
                code::COLL_STATS_NOT_AN_OBJECT,
                "$collStats must take a nested object",
            ));
        };
        return Ok((
            vec![coll_stats_stage(shared, db, coll, spec)],
            &pipeline[1..],
        ));
    }
    match first.get("$match") {
        Some(Bson::Document(f)) => Ok((scan(shared, db, coll, f)?, &pipeline[1..])),
        _ => Ok((scan(shared, db, coll, &doc! {})?, pipeline)),
    }
}

/// The documents of `db.coll` matching `filter`, in `_id` order.
fn scan(shared: &ServerState, db: &str, coll: &str, filter: &Document) -> CmdResult<Vec<Document>> {
    let m = Matcher::new(filter)?;
    with_store(shared, |s| Ok(s.find(db, coll, &m, FindOptions::default())))
}

/// The `$collStats` stage's one document, with the sections `spec` asks for.
fn coll_stats_stage(shared: &ServerState, db: &str, coll: &str, spec: &Document) -> Document {
    let mut s = coll_stats(shared, db, coll);
    if !spec.contains_key("count") {
        s.remove("count");
    }
    if !spec.contains_key("storageStats") {
        s.remove("storageStats");
    }
    if spec.contains_key("latencyStats") {
        s.insert("latencyStats", doc! {"reads": {"latency": 0_i64, "ops": 0_i64}, "writes": {"latency": 0_i64, "ops": 0_i64}, "commands": {"latency": 0_i64, "ops": 0_i64}});
    }
    s
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
                code::NOT_ONE_STAGE_FIELD,
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
                let n = as_i64(v).filter(|n| *n > 0).ok_or_else(|| {
                    CmdError::new(code::NON_POSITIVE_LIMIT, "the limit must be positive")
                })?;
                docs.truncate(n as usize);
            }
            ("$skip", v) => {
                let n = as_i64(v).filter(|n| *n >= 0).ok_or_else(|| {
                    CmdError::new(code::NEGATIVE_SKIP, "Argument to $skip cannot be negative")
                })?;
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
                    code::UNKNOWN_STAGE,
                    format!("Unrecognized pipeline stage name: '{other}'"),
                ));
            }
        }
    }
    Ok(docs)
}

/// One output field of a `$group`: `name: {op: arg}`.
struct Accumulator {
    name: String,
    op: String,
    arg: Bson,
}

/// A group being built: its key, and per accumulator the value so far and how many documents fed it.
struct Group {
    key: Bson,
    values: Vec<Bson>,
    counts: Vec<i64>,
}

/// The accumulators of a `$group` specification (every field but `_id`), refused as mongod refuses them.
fn accumulators(spec: &Document) -> CmdResult<Vec<Accumulator>> {
    let mut accs = Vec::new();
    for (k, v) in spec {
        if k == "_id" {
            continue;
        }
        let Bson::Document(a) = v else {
            return Err(CmdError::new(
                code::NOT_AN_ACCUMULATOR,
                format!("The field '{k}' must be an accumulator object"),
            ));
        };
        let Some((op, arg)) = a.iter().next() else {
            return Err(CmdError::new(
                code::NOT_ONE_ACCUMULATOR,
                format!("The field '{k}' must specify one accumulator"),
            ));
        };
        if !["$sum", "$count", "$min", "$max", "$avg", "$first", "$last"].contains(&op.as_str()) {
            return Err(CmdError::new(
                code::UNKNOWN_GROUP_OPERATOR,
                format!("unknown group operator '{op}'"),
            ));
        }
        accs.push(Accumulator {
            name: k.clone(),
            op: op.clone(),
            arg: arg.clone(),
        });
    }
    Ok(accs)
}

/// The next value of accumulator `op` after `v` (`first`: `cur` holds nothing yet).
fn accumulate(op: &str, cur: &Bson, first: bool, v: Bson) -> Bson {
    match op {
        "$sum" | "$count" => {
            let v = if matches!(v, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)) {
                v
            } else {
                Bson::Int32(0)
            };
            if first { v } else { add(cur, &v) }
        }
        "$avg" if !first => add(cur, &v),
        "$min" if !first && !cmp_bson(&v, cur).is_lt() => cur.clone(),
        "$max" if !first && !cmp_bson(&v, cur).is_gt() => cur.clone(),
        "$first" if !first => cur.clone(),
        _ => v,
    }
}

/// The output value of an accumulator: `$avg` divides its sum by its count.
fn finish(op: &str, value: &Bson, count: i64) -> Bson {
    if op == "$avg" {
        let total = match value {
            Bson::Double(x) => *x,
            other => as_i64(other).unwrap_or(0) as f64,
        };
        if count > 0 {
            Bson::Double(total / count as f64)
        } else {
            Bson::Null
        }
    } else if (op == "$sum" || op == "$count") && count == 0 {
        Bson::Int32(0)
    } else {
        value.clone()
    }
}

/// `$group`: one output document per distinct `_id` value, in order of first appearance.
fn group(docs: Vec<Document>, spec: &Document) -> CmdResult<Vec<Document>> {
    let Some(id_expr) = spec.get("_id") else {
        return Err(CmdError::new(
            code::GROUP_WITHOUT_ID,
            "a group specification must include an _id",
        ));
    };
    let accs = accumulators(spec)?;
    let mut groups: Vec<Group> = Vec::new();
    for d in &docs {
        let key = eval(d, id_expr);
        let idx = match groups.iter().position(|g| cmp_bson(&g.key, &key).is_eq()) {
            Some(i) => i,
            None => {
                groups.push(Group {
                    key,
                    values: vec![Bson::Null; accs.len()],
                    counts: vec![0; accs.len()],
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[idx];
        for (j, acc) in accs.iter().enumerate() {
            let v = if acc.op == "$count" {
                Bson::Int32(1)
            } else {
                eval(d, &acc.arg)
            };
            g.values[j] = accumulate(&acc.op, &g.values[j], g.counts[j] == 0, v);
            g.counts[j] += 1;
        }
    }
    Ok(groups
        .into_iter()
        .map(|g| {
            let mut d = doc! {"_id": g.key};
            for (j, acc) in accs.iter().enumerate() {
                d.insert(acc.name.clone(), finish(&acc.op, &g.values[j], g.counts[j]));
            }
            d
        })
        .collect())
}
