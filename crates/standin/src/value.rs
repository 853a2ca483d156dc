//! BSON values in MongoDB's comparison order, so `_id`s sort and compare the way the server does.

use std::cmp::Ordering;

use mongodb::bson::{Binary, Bson, DateTime, Document, Timestamp, Uuid};

/// The time `now` as a BSON timestamp with increment 1, as op times and the config server's
/// documents carry it.
pub(crate) fn timestamp_now(now: DateTime) -> Timestamp {
    Timestamp {
        time: (now.timestamp_millis() / 1000) as u32,
        increment: 1,
    }
}

/// The rank of a value's type in MongoDB's cross-type order (numbers share one rank).
pub(crate) fn type_rank(v: &Bson) -> u8 {
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
pub(crate) fn cmp_docs(a: &Document, b: &Document) -> Ordering {
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
pub(crate) fn cmp_bson(a: &Bson, b: &Bson) -> Ordering {
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
pub(crate) fn eq_bson(a: &Bson, b: &Bson) -> bool {
    cmp_bson(a, b) == Ordering::Equal
}

/// An `_id` usable as a `BTreeMap` key, ordered like MongoDB orders `_id`s.
#[derive(Debug, Clone)]
pub(crate) struct Key(pub Bson);

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
pub(crate) fn type_name(v: &Bson) -> &'static str {
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
pub(crate) fn as_i64(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) if d.is_finite() => Some(*d as i64),
        _ => None,
    }
}

/// MongoDB truthiness for flag-like arguments (`1`, `true`, `1.0`).
pub(crate) fn truthy(v: &Bson) -> bool {
    match v {
        Bson::Boolean(b) => *b,
        Bson::Int32(i) => *i != 0,
        Bson::Int64(i) => *i != 0,
        Bson::Double(d) => *d != 0.0,
        Bson::Null | Bson::Undefined => false,
        _ => true,
    }
}

/// The size of a document once encoded as BSON, computed without encoding it (the stand-in
/// sizes every stored document; encoding each one to count its bytes was an eighth of a
/// batched insert's cost).
pub(crate) fn bson_size(doc: &Document) -> usize {
    document_size(doc.iter().map(|(k, v)| (k.len(), v)))
}

/// Length prefix + elements + terminating NUL; each element is type byte + key cstring + value.
fn document_size<'a>(elements: impl Iterator<Item = (usize, &'a Bson)>) -> usize {
    4 + elements
        .map(|(key_len, v)| 1 + key_len + 1 + value_size(v))
        .sum::<usize>()
        + 1
}

fn string_size(s: &str) -> usize {
    4 + s.len() + 1
}

fn value_size(v: &Bson) -> usize {
    use mongodb::bson::spec::BinarySubtype;
    match v {
        Bson::Double(_) | Bson::DateTime(_) | Bson::Timestamp(_) | Bson::Int64(_) => 8,
        Bson::Int32(_) => 4,
        Bson::Boolean(_) => 1,
        Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey => 0,
        Bson::ObjectId(_) => 12,
        Bson::Decimal128(_) => 16,
        Bson::String(s) | Bson::JavaScriptCode(s) | Bson::Symbol(s) => string_size(s),
        Bson::Document(d) => bson_size(d),
        Bson::Array(a) => document_size(a.iter().enumerate().map(|(i, v)| (decimal_digits(i), v))),
        Bson::Binary(b) => match b.subtype {
            // The old binary subtype repeats the length inside the payload.
            BinarySubtype::BinaryOld => 4 + 1 + 4 + b.bytes.len(),
            _ => 4 + 1 + b.bytes.len(),
        },
        Bson::RegularExpression(r) => r.pattern.len() + 1 + r.options.len() + 1,
        Bson::JavaScriptCodeWithScope(c) => 4 + string_size(&c.code) + bson_size(&c.scope),
        Bson::DbPointer(_) => {
            // Not constructible with public fields; measure it the slow way.
            let mut buf = Vec::new();
            let mut one = Document::new();
            one.insert("", v.clone());
            if one.to_writer(&mut buf).is_err() {
                return 0;
            }
            buf.len().saturating_sub(4 + 1 + 1 + 1)
        }
    }
}

/// Characters of `i` in decimal (an array element's key).
fn decimal_digits(mut i: usize) -> usize {
    let mut n = 1;
    while i >= 10 {
        i /= 10;
        n += 1;
    }
    n
}

/// A fresh random (version 4) UUID as BSON binary subtype 4: collection and database UUIDs.
pub(crate) fn new_uuid() -> Binary {
    Binary::from(Uuid::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::oid::ObjectId;

    #[test]
    fn bson_size_equals_the_encoded_length_for_every_type() {
        use mongodb::bson::spec::BinarySubtype;
        use mongodb::bson::{Binary, JavaScriptCodeWithScope, Regex, Timestamp, doc};
        let encoded = |d: &Document| {
            let mut buf = Vec::new();
            d.to_writer(&mut buf).unwrap();
            buf.len()
        };
        let big_array: Vec<Bson> = (0..123).map(Bson::Int32).collect();
        let d = doc! {
            "_id": "user1",
            "double": 1.5,
            "int32": 7,
            "int64": 7_i64,
            "bool": true,
            "null": Bson::Null,
            "oid": ObjectId::new(),
            "date": mongodb::bson::DateTime::now(),
            "ts": Timestamp { time: 1, increment: 2 },
            "dec": Bson::Decimal128(mongodb::bson::Decimal128::from_bytes([0; 16])),
            "bin": Binary { subtype: BinarySubtype::Generic, bytes: vec![1; 250] },
            "old": Binary { subtype: BinarySubtype::BinaryOld, bytes: vec![2; 9] },
            "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: vec![3; 16] },
            "re": Regex { pattern: "^a.*".into(), options: "i".into() },
            "code": Bson::JavaScriptCode("return 1".into()),
            "scoped": JavaScriptCodeWithScope { code: "x".into(), scope: doc! {"x": 1} },
            "symbol": Bson::Symbol("s".into()),
            "undefined": Bson::Undefined,
            "min": Bson::MinKey,
            "max": Bson::MaxKey,
            "nested": {"a": {"b": [1, "two", {"c": 3}]}},
            "array": big_array,
            "unicode": "héllo ✓",
        };
        assert_eq!(bson_size(&d), encoded(&d));
        assert_eq!(bson_size(&Document::new()), 5);
    }

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
