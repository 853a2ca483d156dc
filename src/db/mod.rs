//! The MongoDB binding: turns workload operations into driver calls and YCSB statuses.
//!
//! Behaviour follows YCSB's synchronous MongoDB binding (`site.ycsb.db.MongoDbClient`),
//! with these deliberate differences, all documented in `docs/engine.md` ("Binding"):
//! - the last partial insert batch is flushed at the end of the phase (YCSB drops it);
//! - the pool is sized to the thread count unless the URL sets `maxPoolSize` (the pool must never
//!   be what limits a benchmark), and the server-selection timeout is 5 s unless the URL sets one;
//! - `mongodb.threadsAllowedToBlockForConnectionMultiplier` has no Rust-driver equivalent and is ignored;
//!   `mongodb.writeConcern=journaled` adds `journal=true` only (the Rust driver rejects `j=`);
//! - errors carry a class (timeout, not-primary, network, server code) for the report.
//!
//! As in YCSB, `mongodb.writeConcern` has no effect when the URL already has `w=` (YCSB's default
//! URL does): microshard warns when that happens.

mod binding;
pub(crate) mod dial;
mod discover;
pub(crate) mod errors;
pub(crate) mod probe;
mod reach;
pub(crate) mod url;

pub(crate) use binding::authorization_refusal;
pub use binding::{BindingSettings, DbClient, MongoBinding, record_document};
pub use errors::ErrorClass;

use crate::measure::Status;

/// How microshard runs YCSB's binding `name` (a binding name or a `-db` class): `Some(false)`
/// for the MongoDB binding, `Some(true)` for YCSB's asynchronous one (run as the synchronous
/// one), `None` for another database.
pub(crate) fn ycsb_binding_is_async(name: &str) -> Option<bool> {
    const SYNC: &[&str] = &[
        "mongodb",
        "site.ycsb.db.MongoDbClient",
        "com.yahoo.ycsb.db.MongoDbClient",
    ];
    const ASYNC: &[&str] = &[
        "mongodb-async",
        "site.ycsb.db.AsyncMongoDbClient",
        "com.yahoo.ycsb.db.AsyncMongoDbClient",
    ];
    if SYNC.contains(&name) {
        Some(false)
    } else if ASYNC.contains(&name) {
        Some(true)
    } else {
        None
    }
}

/// One returned record: its `_id` and its binary fields (what data-integrity verification needs).
pub(crate) type ReadRecord = (String, Vec<(String, Vec<u8>)>);

/// The outcome of one binding call: the YCSB status and, for `ERROR`, what kind of error it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbOutcome {
    /// The YCSB status the measurement records.
    pub status: Status,
    /// Set for errors, so the report can count timeouts, not-primary, network and server codes.
    pub error_class: Option<ErrorClass>,
}

impl DbOutcome {
    /// Success.
    pub(crate) fn ok() -> DbOutcome {
        DbOutcome::status(Status::Ok)
    }

    /// A status without an error class.
    pub(crate) fn status(status: Status) -> DbOutcome {
        DbOutcome {
            status,
            error_class: None,
        }
    }

    /// An `ERROR` of the given class.
    pub(crate) fn error(class: ErrorClass) -> DbOutcome {
        DbOutcome {
            status: Status::Error,
            error_class: Some(class),
        }
    }
}

/// Why the binding cannot start. Each message is one line naming the property or host.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// `mongodb.url` is malformed.
    #[error(transparent)]
    Url(#[from] url::UrlError),
    /// The driver rejected the connection string.
    #[error("mongodb.url {url} is not usable: {message}")]
    BadUrl {
        /// The URL, redacted.
        url: String,
        /// The driver's reason, redacted.
        message: String,
    },
    /// A binding property does not parse (names the property and its origin).
    #[error(transparent)]
    Property(crate::workload::PropertyError),
    /// A binding property has a bad value.
    #[error("property {property}: {message}")]
    BadProperty {
        /// The property name.
        property: String,
        /// What is wrong.
        message: String,
    },
    /// The server answered but turned the connection away: credentials or TLS (`message` names
    /// what to fix in the connection string).
    #[error("MongoDB at {hosts} refused the connection: {message}")]
    Refused {
        /// The seed list of the URL.
        hosts: String,
        /// The cause and what to fix.
        message: String,
    },
    /// No server answered within the selection timeout.
    #[error(
        "cannot reach MongoDB at {hosts}: {message} (start one with `microshard up single --standin`, or give --uri / -p mongodb.url=… of yours)"
    )]
    Unreachable {
        /// The seed list of the URL.
        hosts: String,
        /// The driver's reason, redacted.
        message: String,
    },
    /// A command microshard sends around the measurement failed.
    #[error("{what}: {message}")]
    Failed {
        /// What was sent.
        what: String,
        /// The driver's reason, redacted.
        message: String,
    },
}
