//! The operations a workload asks the database binding to perform.
//!
//! This is the seam between `workload` (which decides what to do) and `db` (which does it):
//! the binding never draws random numbers, and the workload never talks to a server.

use std::sync::Arc;

/// One field of a record: its name (`field0`, ...) and its value bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldValue {
    /// Field name, shared between operations to avoid an allocation per field.
    pub name: Arc<str>,
    /// Value bytes (YCSB's random printable bytes, or the data-integrity string).
    pub bytes: Vec<u8>,
}

/// Which fields a read or scan returns: `None` means all fields (YCSB passes `null`).
pub(crate) type FieldSelection = Option<Vec<Arc<str>>>;

/// One database operation, in YCSB CoreWorkload terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// Insert a whole record. `keynum` is kept so run-phase inserts can be acknowledged.
    Insert {
        /// Key number before hashing (for the acknowledged counter).
        keynum: i64,
        /// The record key (`user...`).
        key: String,
        /// Every field of the record, in YCSB's HashMap order.
        values: Vec<FieldValue>,
        /// True for run-phase inserts, which must be acknowledged after the call, even if it failed.
        acknowledge: bool,
    },
    /// Read one record, or `keys.len()` records with one `$in` query (`readbatchsize`).
    Read {
        /// The keys to read; one unless `readbatchsize` > 1 (then all distinct).
        keys: Vec<String>,
        /// Fields to return.
        fields: FieldSelection,
    },
    /// Update some fields of one record (`$set`).
    Update {
        /// The record key.
        key: String,
        /// The fields to set: all of them with `writeallfields`, else one.
        values: Vec<FieldValue>,
    },
    /// Read `count` records in key order starting at `start_key`.
    Scan {
        /// The first key (inclusive).
        start_key: String,
        /// How many records at most.
        count: u64,
        /// Fields to return.
        fields: FieldSelection,
    },
    /// Read a record, then update it; timed as one `READ-MODIFY-WRITE` as well as a READ and an UPDATE.
    ReadModifyWrite {
        /// The record key.
        key: String,
        /// Fields the read returns.
        read_fields: FieldSelection,
        /// Fields the update sets.
        values: Vec<FieldValue>,
    },
}

impl Operation {
    /// The measurement name YCSB records this operation under.
    #[cfg(test)]
    pub(crate) fn measurement_name(&self) -> &'static str {
        match self {
            Operation::Insert { .. } => "INSERT",
            Operation::Read { .. } => "READ",
            Operation::Update { .. } => "UPDATE",
            Operation::Scan { .. } => "SCAN",
            Operation::ReadModifyWrite { .. } => "READ-MODIFY-WRITE",
        }
    }
}
