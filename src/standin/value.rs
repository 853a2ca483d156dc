//! BSON values in MongoDB's comparison order, so `_id`s sort and compare the way the server does.

use std::cmp::Ordering;

use mongodb::bson::{Bson, Document};

/// The rank of a value's type in MongoDB's cross-type order (numbers share one rank).
pub fn type_rank(v: &Bson) -> u8 {
    match v {
        Bson::MinKey => 1,
        Bson::Null | Bson::Undefined => 2,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 3,
        Bson::String(_) | Bson::Symbol(_) => 4,
        Bson::Document(_) => 5,
        Bson::Array(_) => 6,
        Bson::Binary(_) => 7,
        Bson::ObjectId(_) => 8,
        Bson::Boolean(_) => 9,
        Bson::DateTime(_) => 10,
        Bson::Timestamp(_) => 11,
        Bson::RegularExpression(_) => 12,
        Bson::DbPointer(_) => 13,
        Bson::JavaScriptCode(_) | Bson::JavaScriptCodeWithScope(_) => 14,
        Bson::MaxKey => 15,
    }
}

fn as_f64(v: &Bson) -> f64 {
    match v {
        Bson::Int32(i) => f64::from(*i),
        // Precision loss above 2^53 only matters when comparing with a double.
        Bson::Int64(i) => *i as f64,
        Bson::Double(d) => *d,
        _ => f64::NAN,
    }
}

fn cmp_numbers(a: &Bson, b: &Bson) -> Ordering {
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => x.cmp(y),
        (Bson::Int64(x), Bson::Int64(y)) => x.cmp(y),
        (Bson::Int32(x), Bson::Int64(y)) => i64::from(*x).cmp(y),
        (Bson::Int64(x), Bson::Int32(y)) => x.cmp(&i64::from(*y)),
        _ => {
            let (x, y) = (as_f64(a), as_f64(b));
            // MongoDB orders NaN below every other number.
            match (x.is_nan(), y.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                _ => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            }
        }
    }
}

/// Compares two documents field by field (name, then value), as MongoDB does.
pub fn cmp_docs(a: &Document, b: &Document) -> Ordering {
    let mut ia = a.iter();
    let mut ib = b.iter();
    loop {
        match (ia.next(), ib.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some((ka, va)), Some((kb, vb))) => {
                let o = type_rank(va)
                    .cmp(&type_rank(vb))
                    .then_with(|| ka.cmp(kb))
                    .then_with(|| cmp_bson(va, vb));
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
    }
}

/// Total order over BSON values following MongoDB's comparison rules.
pub fn cmp_bson(a: &Bson, b: &Bson) -> Ordering {
    let (ra, rb) = (type_rank(a), type_rank(b));
    if ra != rb {
        return ra.cmp(&rb);
    }
    match (a, b) {
        _ if ra == 3 => cmp_numbers(a, b),
        (Bson::String(x) | Bson::Symbol(x), Bson::String(y) | Bson::Symbol(y)) => x.cmp(y),
        (Bson::Document(x), Bson::Document(y)) => cmp_docs(x, y),
        (Bson::Array(x), Bson::Array(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                let o = cmp_bson(p, q);
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Bson::Binary(x), Bson::Binary(y)) => x
            .bytes
            .len()
            .cmp(&y.bytes.len())
            .then_with(|| u8::from(x.subtype).cmp(&u8::from(y.subtype)))
            .then_with(|| x.bytes.cmp(&y.bytes)),
        (Bson::ObjectId(x), Bson::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
        (Bson::DateTime(x), Bson::DateTime(y)) => x.cmp(y),
        (Bson::Timestamp(x), Bson::Timestamp(y)) => {
            (x.time, x.increment).cmp(&(y.time, y.increment))
        }
        (Bson::RegularExpression(x), Bson::RegularExpression(y)) => x
            .pattern
            .cmp(&y.pattern)
            .then_with(|| x.options.cmp(&y.options)),
        _ => Ordering::Equal,
    }
}

/// Equality in MongoDB's sense (`1 == 1.0`).
pub fn eq_bson(a: &Bson, b: &Bson) -> bool {
    cmp_bson(a, b) == Ordering::Equal
}

/// An `_id` usable as a `BTreeMap` key, ordered like MongoDB orders `_id`s.
#[derive(Debug, Clone)]
pub struct Key(pub Bson);

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        cmp_bson(&self.0, &other.0) == Ordering::Equal
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_bson(&self.0, &other.0)
    }
}

/// The BSON type name MongoDB uses in error messages.
pub fn type_name(v: &Bson) -> &'static str {
    match v {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::Undefined => "undefined",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::DbPointer(_) => "dbPointer",
        Bson::JavaScriptCode(_) => "javascript",
        Bson::Symbol(_) => "symbol",
        Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        Bson::Int32(_) => "int",
        Bson::Timestamp(_) => "timestamp",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
    }
}

/// Reads a numeric value as i64 (doubles truncated), `None` for non-numbers.
pub fn as_i64(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) if d.is_finite() => Some(*d as i64),
        _ => None,
    }
}

/// MongoDB truthiness for flag-like arguments (`1`, `true`, `1.0`).
pub fn truthy(v: &Bson) -> bool {
    match v {
        Bson::Boolean(b) => *b,
        Bson::Int32(i) => *i != 0,
        Bson::Int64(i) => *i != 0,
        Bson::Double(d) => *d != 0.0,
        Bson::Null | Bson::Undefined => false,
        _ => true,
    }
}

/// The size of a document once encoded as BSON.
pub fn bson_size(doc: &Document) -> usize {
    let mut buf = Vec::new();
    if doc.to_writer(&mut buf).is_err() {
        return 0;
    }
    buf.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::oid::ObjectId;

    #[test]
    fn cross_type_order_follows_mongodb() {
        let mut v = [
            Key(Bson::Boolean(false)),
            Key(Bson::String("a".into())),
            Key(Bson::ObjectId(ObjectId::new())),
            Key(Bson::Int32(5)),
            Key(Bson::Null),
        ];
        v.sort();
        let ranks: Vec<u8> = v.iter().map(|k| type_rank(&k.0)).collect();
        assert_eq!(ranks, vec![2, 3, 4, 8, 9]);
    }

    #[test]
    fn numbers_compare_across_types() {
        assert!(eq_bson(&Bson::Int32(1), &Bson::Double(1.0)));
        assert!(eq_bson(&Bson::Int64(7), &Bson::Int32(7)));
        assert_eq!(
            cmp_bson(&Bson::Int32(2), &Bson::Double(2.5)),
            Ordering::Less
        );
    }

    #[test]
    fn strings_sort_bytewise() {
        assert_eq!(
            cmp_bson(
                &Bson::String("user10".into()),
                &Bson::String("user9".into())
            ),
            Ordering::Less
        );
    }
}
