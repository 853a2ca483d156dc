//! Command failures as the server reports them: `{ok: 0, errmsg, code, codeName}` with MongoDB's codes.

use mongodb::bson::{Document, doc};

/// A failed command, carrying MongoDB's numeric code so clients branch on it as they would on a real server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CmdError {
    /// MongoDB's error code (error_codes.yml).
    pub code: i32,
    /// The human-readable message.
    pub msg: String,
}

/// The codes the stand-in uses, with their MongoDB names.
pub(crate) mod code {
    pub(crate) const BAD_VALUE: i32 = 2;
    pub(crate) const FAILED_TO_PARSE: i32 = 9;
    pub(crate) const TYPE_MISMATCH: i32 = 14;
    pub(crate) const ILLEGAL_OPERATION: i32 = 20;
    pub(crate) const ALREADY_INITIALIZED: i32 = 23;
    pub(crate) const NAMESPACE_NOT_FOUND: i32 = 26;
    pub(crate) const CURSOR_NOT_FOUND: i32 = 43;
    pub(crate) const NAMESPACE_EXISTS: i32 = 48;
    pub(crate) const COMMAND_NOT_FOUND: i32 = 59;
    pub(crate) const IMMUTABLE_FIELD: i32 = 66;
    pub(crate) const SHARD_NOT_FOUND: i32 = 70;
    pub(crate) const INVALID_OPTIONS: i32 = 72;
    pub(crate) const INVALID_NAMESPACE: i32 = 73;
    pub(crate) const NODE_NOT_FOUND: i32 = 74;
    pub(crate) const NO_REPLICATION_ENABLED: i32 = 76;
    pub(crate) const OPERATION_FAILED: i32 = 96;
    pub(crate) const INVALID_REPLICA_SET_CONFIG: i32 = 93;
    pub(crate) const NOT_YET_INITIALIZED: i32 = 94;
    pub(crate) const SHUTDOWN_IN_PROGRESS: i32 = 91;
    pub(crate) const FAILED_TO_SATISFY_READ_PREFERENCE: i32 = 133;
    pub(crate) const HOST_UNREACHABLE: i32 = 6;
    pub(crate) const DUPLICATE_KEY: i32 = 11000;
    pub(crate) const NOT_WRITABLE_PRIMARY: i32 = 10107;
    pub(crate) const NOT_PRIMARY_NO_SECONDARY_OK: i32 = 13435;
    pub(crate) const NOT_PRIMARY_OR_SECONDARY: i32 = 13436;
    pub(crate) const IDL_FAILED_TO_PARSE: i32 = 40414;
}

/// MongoDB's name for an error code (the `codeName` field).
pub(crate) fn code_name(code: i32) -> &'static str {
    match code {
        1 => "InternalError",
        2 => "BadValue",
        6 => "HostUnreachable",
        9 => "FailedToParse",
        14 => "TypeMismatch",
        20 => "IllegalOperation",
        23 => "AlreadyInitialized",
        26 => "NamespaceNotFound",
        43 => "CursorNotFound",
        48 => "NamespaceExists",
        59 => "CommandNotFound",
        66 => "ImmutableField",
        70 => "ShardNotFound",
        72 => "InvalidOptions",
        73 => "InvalidNamespace",
        74 => "NodeNotFound",
        76 => "NoReplicationEnabled",
        91 => "ShutdownInProgress",
        93 => "InvalidReplicaSetConfig",
        94 => "NotYetInitialized",
        96 => "OperationFailed",
        133 => "FailedToSatisfyReadPreference",
        11000 => "DuplicateKey",
        10107 => "NotWritablePrimary",
        13435 => "NotPrimaryNoSecondaryOk",
        13436 => "NotPrimaryOrSecondary",
        40414 => "Location40414",
        51300 => "Location51300",
        51301 => "Location51301",
        _ => "Location",
    }
}

impl CmdError {
    /// An error with an explicit code.
    pub(crate) fn new(code: i32, msg: impl Into<String>) -> Self {
        CmdError {
            code,
            msg: msg.into(),
        }
    }
    /// BadValue (2).
    pub(crate) fn bad_value(msg: impl Into<String>) -> Self {
        Self::new(code::BAD_VALUE, msg)
    }
    /// FailedToParse (9).
    pub(crate) fn parse(msg: impl Into<String>) -> Self {
        Self::new(code::FAILED_TO_PARSE, msg)
    }
    /// TypeMismatch (14) for a command field of the wrong BSON type, worded like the IDL parser.
    pub(crate) fn wrong_type(cmd: &str, field: &str, got: &str, expected: &str) -> Self {
        Self::new(
            code::TYPE_MISMATCH,
            format!(
                "BSON field '{cmd}.{field}' is the wrong type '{got}', expected type '{expected}'"
            ),
        )
    }
    /// A required command field is missing, worded like the IDL parser.
    pub(crate) fn missing(cmd: &str, field: &str) -> Self {
        Self::new(
            code::IDL_FAILED_TO_PARSE,
            format!("BSON field '{cmd}.{field}' is missing but a required field"),
        )
    }
    /// The reply document for this error.
    pub(crate) fn to_doc(&self) -> Document {
        doc! {
            "ok": 0.0,
            "errmsg": self.msg.clone(),
            "code": self.code,
            "codeName": code_name(self.code),
        }
    }
}

impl std::fmt::Display for CmdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", code_name(self.code), self.code, self.msg)
    }
}

impl std::error::Error for CmdError {}

/// Results of command handlers.
pub(crate) type CmdResult<T = Document> = Result<T, CmdError>;
