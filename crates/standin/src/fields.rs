//! Reading typed fields of a command document, with the errors mongod's IDL parser gives.
//!
//! [`Fields`] is the one `match body.get(f) { Some(Bson::String(s)) => .., Some(other) => wrong_type, None =>
//! missing }` every handler needs, so a wrongly typed or missing field is refused the same way everywhere:
//! TypeMismatch (14) naming `cmd.field`, the type found and the type expected, or Location40414 naming the
//! missing field.

use mongodb::bson::{Bson, Document};

use super::cmderr::{CmdError, CmdResult, code};
use super::value::{as_i64, type_name};

/// The fields of one command (or of one statement inside it), named `cmd.field` in errors.
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a> {
    cmd: &'a str,
    body: &'a Document,
}

impl<'a> Fields<'a> {
    /// The fields of `body`; errors name them `cmd.field` (`cmd` may be a path such as `update.updates`).
    pub(crate) fn new(cmd: &'a str, body: &'a Document) -> Self {
        Fields { cmd, body }
    }

    fn wrong_type(&self, field: &str, got: &Bson, expected: &str) -> CmdError {
        CmdError::wrong_type(self.cmd, field, type_name(got), expected)
    }

    fn required(&self, field: &str) -> CmdResult<&'a Bson> {
        self.body
            .get(field)
            .ok_or_else(|| CmdError::missing(self.cmd, field))
    }

    /// A required string.
    pub(crate) fn req_str(&self, field: &str) -> CmdResult<String> {
        match self.required(field)? {
            Bson::String(s) => Ok(s.clone()),
            other => Err(self.wrong_type(field, other, "string")),
        }
    }

    /// A required string that may also be spelled `alias` (`shardcollection`); errors name `field`.
    pub(crate) fn req_str_alias(&self, field: &str, alias: &str) -> CmdResult<String> {
        match self.body.get(field).or_else(|| self.body.get(alias)) {
            Some(Bson::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.wrong_type(field, other, "string")),
            None => Err(CmdError::missing(self.cmd, field)),
        }
    }

    /// A required 64-bit integer, exactly (`getMore`'s cursor id is a `long`, not any number).
    pub(crate) fn req_long(&self, field: &str) -> CmdResult<i64> {
        match self.required(field)? {
            Bson::Int64(i) => Ok(*i),
            other => Err(self.wrong_type(field, other, "long")),
        }
    }

    /// A required array.
    pub(crate) fn req_array(&self, field: &str) -> CmdResult<Vec<Bson>> {
        match self.required(field)? {
            Bson::Array(a) => Ok(a.clone()),
            other => Err(self.wrong_type(field, other, "array")),
        }
    }

    /// A required sub-document.
    pub(crate) fn req_doc(&self, field: &str) -> CmdResult<Document> {
        match self.required(field)? {
            Bson::Document(d) => Ok(d.clone()),
            other => Err(self.wrong_type(field, other, "object")),
        }
    }

    /// A sub-document that may be absent (`None`); present with another type (even null) it is refused.
    pub(crate) fn maybe_doc(&self, field: &str) -> CmdResult<Option<Document>> {
        match self.body.get(field) {
            None => Ok(None),
            Some(Bson::Document(d)) => Ok(Some(d.clone())),
            Some(other) => Err(self.wrong_type(field, other, "object")),
        }
    }

    /// An optional sub-document: absent or null reads as empty.
    pub(crate) fn opt_doc(&self, field: &str) -> CmdResult<Document> {
        match self.body.get(field) {
            None | Some(Bson::Null) => Ok(Document::new()),
            Some(Bson::Document(d)) => Ok(d.clone()),
            Some(other) => Err(self.wrong_type(field, other, "object")),
        }
    }

    /// An optional non-negative integer (any numeric type); negative is BadValue, as mongod says it.
    pub(crate) fn opt_count(&self, field: &str) -> CmdResult<Option<usize>> {
        match self.body.get(field) {
            None | Some(Bson::Null) => Ok(None),
            Some(v) => {
                let Some(n) = as_i64(v) else {
                    return Err(self.wrong_type(field, v, "[long, int, decimal, double]"));
                };
                if n < 0 {
                    return Err(CmdError::bad_value(format!(
                        "BSON field '{field}' value must be >= 0, actual value '{n}'"
                    )));
                }
                Ok(Some(n as usize))
            }
        }
    }

    /// A required array of documents (`documents`, `updates`, `deletes`, `pipeline`); a wrong element is named
    /// by its index (`cmd.field.i`).
    pub(crate) fn doc_array(&self, field: &str) -> CmdResult<Vec<Document>> {
        match self.required(field)? {
            Bson::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Bson::Document(d) => Ok(d.clone()),
                    other => Err(self.wrong_type(&format!("{field}.{i}"), other, "object")),
                })
                .collect(),
            other => Err(self.wrong_type(field, other, "array")),
        }
    }
}

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

/// Refuses a command that only the `admin` database takes (Unauthorized, 13, as mongod words it).
pub(crate) fn require_admin(cmd: &str, db: &str) -> CmdResult<()> {
    if db == "admin" {
        return Ok(());
    }
    Err(CmdError::new(
        code::UNAUTHORIZED,
        format!("{cmd} may only be run against the admin database."),
    ))
}

/// The fields a driver adds to commands by itself (database, session, cluster time, read
/// preference, transaction, API version): none of them is part of what the command asks for.
const DRIVER_FIELDS: &[&str] = &[
    "$db",
    "lsid",
    "$clusterTime",
    "txnNumber",
    "$readPreference",
    "autocommit",
    "startTransaction",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
];

/// The command body without the [`DRIVER_FIELDS`], as mongos forwards it to a shard.
pub(crate) fn without_driver_fields(body: &Document) -> Document {
    let mut d = body.clone();
    for k in DRIVER_FIELDS {
        d.remove(k);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmderr::code;
    use mongodb::bson::doc;

    #[test]
    fn wrong_types_and_missing_fields_are_refused_as_mongod_refuses_them() {
        let body = doc! {"getMore": 5i32, "collection": "c", "cursors": "x", "n": -1, "q": [1]};
        let f = Fields::new("getMore", &body);
        let e = f.req_long("getMore").unwrap_err();
        assert_eq!(e.code, code::TYPE_MISMATCH);
        assert_eq!(
            e.msg,
            "BSON field 'getMore.getMore' is the wrong type 'int', expected type 'long'"
        );
        assert_eq!(f.req_str("collection").unwrap(), "c");
        let e = f.req_str("nope").unwrap_err();
        assert_eq!(e.code, code::IDL_FAILED_TO_PARSE);
        assert_eq!(
            e.msg,
            "BSON field 'getMore.nope' is missing but a required field"
        );
        assert_eq!(
            f.req_array("cursors").unwrap_err().code,
            code::TYPE_MISMATCH
        );
        assert_eq!(f.opt_count("n").unwrap_err().code, code::BAD_VALUE);
        assert_eq!(f.opt_count("absent").unwrap(), None);
        assert_eq!(f.opt_doc("absent").unwrap(), Document::new());
        assert_eq!(f.maybe_doc("absent").unwrap(), None);
        let e = f.doc_array("q").unwrap_err();
        assert_eq!(
            e.msg,
            "BSON field 'getMore.q.0' is the wrong type 'int', expected type 'object'"
        );
    }
}
