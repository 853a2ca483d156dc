//! YCSB's operation statuses, as the binding reports them and the report counts them (`Return=...`).

use std::fmt;

/// The outcome of one database call, with YCSB's names.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    /// The operation succeeded.
    Ok,
    /// An insert was buffered for a batch (counts as success).
    BatchedOk,
    /// The key (or one of the keys) did not exist.
    NotFound,
    /// The server or the driver failed the operation.
    Error,
    /// Data-integrity verification found different bytes.
    UnexpectedState,
    /// The binding does not implement the operation.
    NotImplemented,
    /// The request was malformed.
    BadRequest,
    /// The server refused for lack of rights.
    Forbidden,
    /// The server was unavailable (timeouts, no primary).
    ServiceUnavailable,
}

impl Status {
    /// YCSB's status name, as printed in `Return=<NAME>` lines.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::BatchedOk => "BATCHED_OK",
            Status::NotFound => "NOT_FOUND",
            Status::Error => "ERROR",
            Status::UnexpectedState => "UNEXPECTED_STATE",
            Status::NotImplemented => "NOT_IMPLEMENTED",
            Status::BadRequest => "BAD_REQUEST",
            Status::Forbidden => "FORBIDDEN",
            Status::ServiceUnavailable => "SERVICE_UNAVAILABLE",
        }
    }

    /// Only OK and BATCHED_OK count as success (YCSB's `isOk`).
    pub(crate) fn is_ok(self) -> bool {
        matches!(self, Status::Ok | Status::BatchedOk)
    }

    /// Every status, in a fixed order (the index order of [`Status::index`]).
    pub(crate) const ALL: [Status; 9] = [
        Status::Ok,
        Status::BatchedOk,
        Status::NotFound,
        Status::Error,
        Status::UnexpectedState,
        Status::NotImplemented,
        Status::BadRequest,
        Status::Forbidden,
        Status::ServiceUnavailable,
    ];

    /// A dense index (0..9, declaration order) so per-status counters can live in a plain array.
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
