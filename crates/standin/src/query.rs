//! The query language subset the stand-in understands: filters, projections, sorts and updates.

use std::cmp::Ordering;
use std::ops::Bound;

use mongodb::bson::{Bson, Document};

use super::cmderr::{CmdError, CmdResult, code};
use super::value::{Key, cmp_bson, eq_bson, truthy, type_name, type_rank};

/// One comparison inside a field predicate.
#[derive(Debug, Clone)]
enum Op {
    Eq(Bson),
    Ne(Bson),
    Gt(Bson),
    Gte(Bson),
    Lt(Bson),
    Lte(Bson),
    In(Vec<Bson>),
    Nin(Vec<Bson>),
    Exists(bool),
}

#[derive(Debug, Clone)]
enum Pred {
    And(Vec<Pred>),
    Or(Vec<Pred>),
    Nor(Vec<Pred>),
    Field(String, Vec<Op>),
}

/// A parsed filter document, checked once and then applied to many documents.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    pred: Pred,
}

/// Which `_id`s a filter can possibly match, so lookups use the ordered index instead of a scan.
// Plans are built once per query, so the size of the `Range` variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub(crate) enum IdPlan {
    /// Any document may match.
    All,
    /// Only these `_id`s (from equality or `$in`).
    Points(Vec<Key>),
    /// `_id` within these bounds.
    Range(Bound<Key>, Bound<Key>),
}

fn parse_ops(field: &str, v: &Bson) -> CmdResult<Vec<Op>> {
    if let Bson::Document(d) = v
        && d.keys().next().is_some_and(|k| k.starts_with('$'))
    {
        let mut ops = Vec::new();
        for (k, val) in d {
            let op = match k.as_str() {
                "$eq" => Op::Eq(val.clone()),
                "$ne" => Op::Ne(val.clone()),
                "$gt" => Op::Gt(val.clone()),
                "$gte" => Op::Gte(val.clone()),
                "$lt" => Op::Lt(val.clone()),
                "$lte" => Op::Lte(val.clone()),
                "$in" | "$nin" => {
                    let Bson::Array(a) = val else {
                        return Err(CmdError::bad_value(format!("{k} needs an array")));
                    };
                    if k == "$in" {
                        Op::In(a.clone())
                    } else {
                        Op::Nin(a.clone())
                    }
                }
                "$exists" => Op::Exists(truthy(val)),
                other if other.starts_with('$') => {
                    return Err(CmdError::bad_value(format!("unknown operator: {other}")));
                }
                other => {
                    return Err(CmdError::bad_value(format!(
                        "unknown operator: {other} in filter on field '{field}'"
                    )));
                }
            };
            ops.push(op);
        }
        return Ok(ops);
    }
    Ok(vec![Op::Eq(v.clone())])
}

fn parse_pred(filter: &Document) -> CmdResult<Pred> {
    let mut parts = Vec::new();
    for (k, v) in filter {
        match k.as_str() {
            "$and" | "$or" | "$nor" => {
                let Bson::Array(items) = v else {
                    return Err(CmdError::bad_value(format!("{k} must be an array")));
                };
                if items.is_empty() {
                    return Err(CmdError::bad_value(
                        "$and/$or/$nor must be a nonempty array",
                    ));
                }
                let mut subs = Vec::new();
                for item in items {
                    let Bson::Document(d) = item else {
                        return Err(CmdError::bad_value(format!(
                            "{k} argument's entries must be objects"
                        )));
                    };
                    subs.push(parse_pred(d)?);
                }
                parts.push(match k.as_str() {
                    "$and" => Pred::And(subs),
                    "$or" => Pred::Or(subs),
                    _ => Pred::Nor(subs),
                });
            }
            "$comment" => {}
            other if other.starts_with('$') => {
                return Err(CmdError::bad_value(format!(
                    "unknown top level operator: {other}. If you have a field name that starts with a '$' symbol, consider using $getField or $setField."
                )));
            }
            field => parts.push(Pred::Field(field.to_string(), parse_ops(field, v)?)),
        }
    }
    Ok(Pred::And(parts))
}

/// Looks up a dotted path (`a.b.c`) in a document.
pub(crate) fn get_path<'a>(doc: &'a Document, path: &str) -> Option<&'a Bson> {
    let mut parts = path.split('.');
    let first = parts.next()?;
    let mut cur = doc.get(first)?;
    for p in parts {
        cur = match cur {
            Bson::Document(d) => d.get(p)?,
            Bson::Array(a) => a.get(p.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn value_eq(field: Option<&Bson>, target: &Bson) -> bool {
    match field {
        None => matches!(target, Bson::Null),
        Some(v) => {
            if eq_bson(v, target) {
                return true;
            }
            if let Bson::Array(items) = v {
                return items.iter().any(|i| eq_bson(i, target));
            }
            false
        }
    }
}

fn value_cmp(field: Option<&Bson>, target: &Bson, want: fn(Ordering) -> bool) -> bool {
    let check = |v: &Bson| type_rank(v) == type_rank(target) && want(cmp_bson(v, target));
    match field {
        None => false,
        Some(Bson::Array(items)) => items.iter().any(check),
        Some(v) => check(v),
    }
}

fn op_matches(field: Option<&Bson>, op: &Op) -> bool {
    match op {
        Op::Eq(t) => value_eq(field, t),
        Op::Ne(t) => !value_eq(field, t),
        Op::Gt(t) => value_cmp(field, t, |o| o == Ordering::Greater),
        Op::Gte(t) => value_cmp(field, t, |o| o != Ordering::Less),
        Op::Lt(t) => value_cmp(field, t, |o| o == Ordering::Less),
        Op::Lte(t) => value_cmp(field, t, |o| o != Ordering::Greater),
        Op::In(ts) => ts.iter().any(|t| value_eq(field, t)),
        Op::Nin(ts) => !ts.iter().any(|t| value_eq(field, t)),
        Op::Exists(e) => field.is_some() == *e,
    }
}

fn pred_matches(doc: &Document, p: &Pred) -> bool {
    match p {
        Pred::And(ps) => ps.iter().all(|q| pred_matches(doc, q)),
        Pred::Or(ps) => ps.iter().any(|q| pred_matches(doc, q)),
        Pred::Nor(ps) => !ps.iter().any(|q| pred_matches(doc, q)),
        Pred::Field(path, ops) => {
            let v = get_path(doc, path);
            ops.iter().all(|op| op_matches(v, op))
        }
    }
}

fn tighten_lower(cur: &mut Bound<Key>, new: Bound<Key>) {
    let replace = match (&*cur, &new) {
        (Bound::Unbounded, _) => true,
        (_, Bound::Unbounded) => false,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b)) => b > a,
        (Bound::Included(a), Bound::Excluded(b)) => b >= a,
        (Bound::Excluded(a), Bound::Excluded(b)) => b > a,
    };
    if replace {
        *cur = new;
    }
}

fn tighten_upper(cur: &mut Bound<Key>, new: Bound<Key>) {
    let replace = match (&*cur, &new) {
        (Bound::Unbounded, _) => true,
        (_, Bound::Unbounded) => false,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b)) => b < a,
        (Bound::Included(a), Bound::Excluded(b)) => b <= a,
        (Bound::Excluded(a), Bound::Excluded(b)) => b < a,
    };
    if replace {
        *cur = new;
    }
}

impl Matcher {
    /// Parses a filter; unknown operators fail with BadValue (2) like the server.
    pub(crate) fn new(filter: &Document) -> CmdResult<Matcher> {
        Ok(Matcher {
            pred: parse_pred(filter)?,
        })
    }

    /// True when the document satisfies the filter.
    pub(crate) fn matches(&self, doc: &Document) -> bool {
        pred_matches(doc, &self.pred)
    }

    /// The `_id` values or range the filter restricts to, from its top-level `_id` conditions.
    pub(crate) fn id_plan(&self) -> IdPlan {
        let Pred::And(parts) = &self.pred else {
            return IdPlan::All;
        };
        let mut lower = Bound::Unbounded;
        let mut upper = Bound::Unbounded;
        let mut ranged = false;
        for p in parts {
            let Pred::Field(f, ops) = p else { continue };
            if f != "_id" {
                continue;
            }
            for op in ops {
                match op {
                    Op::Eq(v) if !matches!(v, Bson::Array(_) | Bson::Null) => {
                        return IdPlan::Points(vec![Key(v.clone())]);
                    }
                    Op::In(vs) if !vs.iter().any(|v| matches!(v, Bson::Array(_) | Bson::Null)) => {
                        let mut keys: Vec<Key> = vs.iter().cloned().map(Key).collect();
                        keys.sort();
                        keys.dedup();
                        return IdPlan::Points(keys);
                    }
                    Op::Gt(v) => {
                        tighten_lower(&mut lower, Bound::Excluded(Key(v.clone())));
                        ranged = true;
                    }
                    Op::Gte(v) => {
                        tighten_lower(&mut lower, Bound::Included(Key(v.clone())));
                        ranged = true;
                    }
                    Op::Lt(v) => {
                        tighten_upper(&mut upper, Bound::Excluded(Key(v.clone())));
                        ranged = true;
                    }
                    Op::Lte(v) => {
                        tighten_upper(&mut upper, Bound::Included(Key(v.clone())));
                        ranged = true;
                    }
                    _ => {}
                }
            }
        }
        if !ranged {
            return IdPlan::All;
        }
        // An empty or inverted range would make BTreeMap::range panic; treat it as "nothing".
        let empty = match (&lower, &upper) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
            _ => false,
        };
        if empty {
            return IdPlan::Points(Vec::new());
        }
        IdPlan::Range(lower, upper)
    }

    /// The single `_id` value the filter pins, when it pins exactly one by equality.
    pub(crate) fn single_id(&self) -> Option<Bson> {
        match self.id_plan() {
            IdPlan::Points(mut v) if v.len() == 1 => v.pop().map(|k| k.0),
            _ => None,
        }
    }

    /// The plain equality conditions (`field: value`) of the filter: what an upsert inserts.
    pub(crate) fn equality_fields(filter: &Document) -> Document {
        let mut out = Document::new();
        for (k, v) in filter {
            if k.starts_with('$') {
                continue;
            }
            match v {
                Bson::Document(d) if d.keys().next().is_some_and(|x| x.starts_with('$')) => {
                    if let Some(eq) = d.get("$eq") {
                        out.insert(k.clone(), eq.clone());
                    }
                }
                other => {
                    if !k.contains('.') {
                        out.insert(k.clone(), other.clone());
                    }
                }
            }
        }
        out
    }
}

/// A parsed projection: inclusion or exclusion of top-level fields.
#[derive(Debug, Clone)]
pub(crate) struct Projection {
    include: bool,
    fields: Vec<String>,
    keep_id: bool,
}

impl Projection {
    /// Parses `{a: 1, b: 1}` or `{a: 0}`; mixing the two (other than `_id`) fails like the server.
    pub(crate) fn new(spec: &Document) -> CmdResult<Option<Projection>> {
        if spec.is_empty() {
            return Ok(None);
        }
        let mut include: Option<bool> = None;
        let mut fields = Vec::new();
        let mut keep_id = true;
        for (k, v) in spec {
            let on = match v {
                Bson::Boolean(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) => truthy(v),
                other => {
                    return Err(CmdError::bad_value(format!(
                        "Unsupported projection option: {k}: {other}"
                    )));
                }
            };
            if k == "_id" {
                keep_id = on;
                continue;
            }
            match include {
                None => include = Some(on),
                Some(prev) if prev != on => {
                    let msg = if prev {
                        format!("Cannot do exclusion on field {k} in inclusion projection")
                    } else {
                        format!("Cannot do inclusion on field {k} in exclusion projection")
                    };
                    return Err(CmdError::new(code::MIXED_PROJECTION, msg));
                }
                _ => {}
            }
            fields.push(k.clone());
        }
        Ok(Some(Projection {
            include: include.unwrap_or(false),
            fields,
            keep_id,
        }))
    }

    /// Applies the projection to one document.
    pub(crate) fn apply(&self, doc: &Document) -> Document {
        let mut out = Document::new();
        for (k, v) in doc {
            let keep = if k == "_id" {
                self.keep_id
            } else {
                let listed = self.fields.iter().any(|f| f == k);
                if self.include { listed } else { !listed }
            };
            if keep {
                out.insert(k.clone(), v.clone());
            }
        }
        out
    }
}

/// A parsed sort specification.
#[derive(Debug, Clone)]
pub(crate) struct Sort(pub Vec<(String, bool)>);

impl Sort {
    /// Parses `{field: 1|-1, ...}`; other values fail with BadValue (2).
    pub(crate) fn new(spec: &Document) -> CmdResult<Option<Sort>> {
        if spec.is_empty() {
            return Ok(None);
        }
        let mut keys = Vec::new();
        for (k, v) in spec {
            let dir = match super::value::as_i64(v) {
                Some(1) => true,
                Some(-1) => false,
                _ => {
                    return Err(CmdError::bad_value(
                        "$sort key ordering must be 1 (for ascending) or -1 (for descending)",
                    ));
                }
            };
            keys.push((k.clone(), dir));
        }
        Ok(Some(Sort(keys)))
    }

    /// True for `{_id: 1}`, which is already the storage order.
    pub(crate) fn is_id_ascending(&self) -> bool {
        self.0.len() == 1 && self.0[0].0 == "_id" && self.0[0].1
    }

    /// True for `{_id: -1}`.
    pub(crate) fn is_id_descending(&self) -> bool {
        self.0.len() == 1 && self.0[0].0 == "_id" && !self.0[0].1
    }

    /// Compares two documents under this sort.
    pub(crate) fn compare(&self, a: &Document, b: &Document) -> Ordering {
        for (field, asc) in &self.0 {
            let va = get_path(a, field).unwrap_or(&Bson::Null);
            let vb = get_path(b, field).unwrap_or(&Bson::Null);
            let o = cmp_bson(va, vb);
            let o = if *asc { o } else { o.reverse() };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }
}

/// An update: operator form (`$set`, `$unset`, `$inc`, `$setOnInsert`) or a replacement document.
#[derive(Debug, Clone)]
pub(crate) enum Update {
    /// Modifiers by operator.
    Modifiers(Vec<(String, Document)>),
    /// A whole new document (its `_id` is kept from the old one).
    Replacement(Document),
}

impl Update {
    /// Parses the `u` field of an update statement.
    pub(crate) fn new(u: &Bson) -> CmdResult<Update> {
        let d = match u {
            Bson::Document(d) => d,
            Bson::Array(_) => {
                return Err(CmdError::bad_value(
                    "pipeline-style updates are not supported by the stand-in",
                ));
            }
            other => {
                return Err(CmdError::wrong_type(
                    "update.updates",
                    "u",
                    type_name(other),
                    "[array, object]",
                ));
            }
        };
        let first_is_op = d.keys().next().is_some_and(|k| k.starts_with('$'));
        if !first_is_op {
            if let Some(k) = d.keys().find(|k| k.starts_with('$')) {
                return Err(CmdError::bad_value(format!(
                    "The dollar ($) prefixed field '{k}' in '{k}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith."
                )));
            }
            return Ok(Update::Replacement(d.clone()));
        }
        let mut mods = Vec::new();
        for (k, v) in d {
            match k.as_str() {
                "$set" | "$unset" | "$inc" | "$setOnInsert" => {}
                other => {
                    return Err(CmdError::parse(format!(
                        "Unknown modifier: {other}. Expected a valid update modifier or pipeline-style update specified as an array"
                    )));
                }
            }
            let Bson::Document(fields) = v else {
                return Err(CmdError::parse(format!(
                    "Modifiers operate on fields but we found type {} instead. For example: {{$mod: {{<field>: ...}}}} not {{{k}: {v}}}",
                    type_name(v)
                )));
            };
            if fields.contains_key("_id") && k != "$setOnInsert" {
                return Err(CmdError::new(
                    code::IMMUTABLE_FIELD,
                    "Performing an update on the path '_id' would modify the immutable field '_id'",
                ));
            }
            mods.push((k.clone(), fields.clone()));
        }
        if mods.is_empty() {
            return Err(CmdError::parse(
                "'update' is empty. You must specify a field like so: {$set: {<field>: ...}}",
            ));
        }
        Ok(Update::Modifiers(mods))
    }

    /// Applies the update in place; `inserting` enables `$setOnInsert`. Returns whether anything changed.
    pub(crate) fn apply(&self, doc: &mut Document, inserting: bool) -> CmdResult<bool> {
        let before = doc.clone();
        match self {
            Update::Replacement(r) => {
                if let (Some(old), Some(new)) = (before.get("_id"), r.get("_id"))
                    && !eq_bson(old, new)
                {
                    return Err(CmdError::new(
                        code::IMMUTABLE_FIELD,
                        "After applying the update, the (immutable) field '_id' was found to have been altered",
                    ));
                }
                let mut next = Document::new();
                if let Some(id) = before.get("_id") {
                    next.insert("_id", id.clone());
                }
                for (k, v) in r {
                    if k != "_id" {
                        next.insert(k.clone(), v.clone());
                    } else if !next.contains_key("_id") {
                        next.insert("_id", v.clone());
                    }
                }
                *doc = next;
            }
            Update::Modifiers(mods) => {
                for (op, fields) in mods {
                    for (path, v) in fields {
                        match op.as_str() {
                            "$set" => set_path(doc, path, v.clone())?,
                            "$setOnInsert" if inserting => set_path(doc, path, v.clone())?,
                            "$unset" => unset_path(doc, path),
                            "$inc" => {
                                let cur = get_path(doc, path).cloned().unwrap_or(Bson::Int32(0));
                                let sum = add_numbers(&cur, v).ok_or_else(|| {
                                    CmdError::new(
                                        code::TYPE_MISMATCH,
                                        format!("Cannot apply $inc to a value of non-numeric type. {{_id: ...}} has the field '{path}' of non-numeric type {}", type_name(&cur)),
                                    )
                                })?;
                                set_path(doc, path, sum)?;
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        Ok(*doc != before)
    }
}

fn add_numbers(a: &Bson, b: &Bson) -> Option<Bson> {
    Some(match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => match x.checked_add(*y) {
            Some(s) => Bson::Int32(s),
            None => Bson::Int64(i64::from(*x) + i64::from(*y)),
        },
        (Bson::Int32(_) | Bson::Int64(_), Bson::Int32(_) | Bson::Int64(_)) => {
            Bson::Int64(super::value::as_i64(a)?.wrapping_add(super::value::as_i64(b)?))
        }
        (Bson::Double(x), _) => Bson::Double(
            x + super::value::as_i64(b).map(|i| i as f64).or(match b {
                Bson::Double(d) => Some(*d),
                _ => None,
            })?,
        ),
        (_, Bson::Double(y)) => Bson::Double(super::value::as_i64(a)? as f64 + y),
        _ => return None,
    })
}

fn set_path(doc: &mut Document, path: &str, v: Bson) -> CmdResult<()> {
    match path.split_once('.') {
        None => {
            doc.insert(path.to_string(), v);
            Ok(())
        }
        Some((head, rest)) => {
            if !doc.contains_key(head) {
                doc.insert(head.to_string(), Document::new());
            }
            match doc.get_mut(head) {
                Some(Bson::Document(inner)) => set_path(inner, rest, v),
                Some(other) => Err(CmdError::new(
                    code::PATH_NOT_VIABLE,
                    format!("Cannot create field '{rest}' in element {{{head}: {other}}}"),
                )),
                None => Ok(()),
            }
        }
    }
}

fn unset_path(doc: &mut Document, path: &str) {
    match path.split_once('.') {
        None => {
            doc.remove(path);
        }
        Some((head, rest)) => {
            if let Some(Bson::Document(inner)) = doc.get_mut(head) {
                unset_path(inner, rest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn id_range_plan_from_gte_and_lt() {
        let m = Matcher::new(&doc! {"_id": {"$gte": "user1", "$lt": "user5"}}).unwrap();
        match m.id_plan() {
            IdPlan::Range(Bound::Included(a), Bound::Excluded(b)) => {
                assert_eq!(a.0, Bson::String("user1".into()));
                assert_eq!(b.0, Bson::String("user5".into()));
            }
            other => panic!("unexpected plan {other:?}"),
        }
        assert!(m.matches(&doc! {"_id": "user2"}));
        assert!(!m.matches(&doc! {"_id": "user5"}));
        assert!(!m.matches(&doc! {"_id": 3}));
    }

    #[test]
    fn unknown_operator_is_bad_value() {
        let e = Matcher::new(&doc! {"a": {"$foo": 1}}).unwrap_err();
        assert_eq!(e.code, 2);
    }

    #[test]
    fn in_and_equality_on_other_fields() {
        let m = Matcher::new(&doc! {"shard": {"$in": ["a", "b"]}, "n": 2}).unwrap();
        assert!(m.matches(&doc! {"shard": "b", "n": 2.0}));
        assert!(!m.matches(&doc! {"shard": "c", "n": 2}));
    }

    #[test]
    fn inverted_range_matches_nothing_without_panicking() {
        let m = Matcher::new(&doc! {"_id": {"$gt": 5, "$lt": 1}}).unwrap();
        assert!(matches!(m.id_plan(), IdPlan::Points(v) if v.is_empty()));
    }

    #[test]
    fn projection_inclusion_and_exclusion() {
        let d = doc! {"_id": 1, "a": 1, "b": 2};
        let p = Projection::new(&doc! {"a": 1}).unwrap().unwrap();
        assert_eq!(p.apply(&d), doc! {"_id": 1, "a": 1});
        let p = Projection::new(&doc! {"a": 0, "_id": 0}).unwrap().unwrap();
        assert_eq!(p.apply(&d), doc! {"b": 2});
        assert!(Projection::new(&doc! {"a": 1, "b": 0}).is_err());
    }

    #[test]
    fn updates_set_inc_replace() {
        let mut d = doc! {"_id": "k", "a": 1};
        let u = Update::new(&Bson::Document(doc! {"$set": {"b.c": 2}, "$inc": {"a": 2}})).unwrap();
        assert!(u.apply(&mut d, false).unwrap());
        assert_eq!(d, doc! {"_id": "k", "a": 3, "b": {"c": 2}});
        let r = Update::new(&Bson::Document(doc! {"z": 1})).unwrap();
        r.apply(&mut d, false).unwrap();
        assert_eq!(d, doc! {"_id": "k", "z": 1});
        assert_eq!(
            Update::new(&Bson::Document(doc! {"$bogus": {"a": 1}}))
                .unwrap_err()
                .code,
            9
        );
    }
}
