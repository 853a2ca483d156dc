//! Command failures as the server reports them: `{ok: 0, errmsg, code, codeName}` with MongoDB's codes.

use mongodb::bson::{Document, doc};

/// A failed command, carrying MongoDB's numeric code so clients branch on it as they would on a real server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CmdError {
    /// MongoDB's error code (error_codes.yml).
    pub code: i32,
    /// The human-readable message.
    pub msg: String,
    /// `errorLabels` of the reply (`RetryableWriteError`, ...).
    pub labels: Vec<&'static str>,
}

/// Declares the error codes once: each line gives the constant in [`code`], its number and
/// MongoDB's `codeName` (error_codes.yml; `LocationNNNNN` for codes raised by assertion id), and
/// [`code_name`] is generated from the same lines.
macro_rules! codes {
    ($($name:ident = $number:literal => $code_name:literal,)*) => {
        /// The codes the stand-in uses, with their MongoDB names.
        pub(crate) mod code {
            $(pub(crate) const $name: i32 = $number;)*
        }

        /// MongoDB's name for an error code (the `codeName` field).
        pub(crate) fn code_name(code: i32) -> &'static str {
            match code {
                $($number => $code_name,)*
                _ => "Location",
            }
        }
    };
}

codes! {
    INTERNAL_ERROR = 1 => "InternalError",
    BAD_VALUE = 2 => "BadValue",
    HOST_UNREACHABLE = 6 => "HostUnreachable",
    FAILED_TO_PARSE = 9 => "FailedToParse",
    UNAUTHORIZED = 13 => "Unauthorized",
    TYPE_MISMATCH = 14 => "TypeMismatch",
    AUTHENTICATION_FAILED = 18 => "AuthenticationFailed",
    ILLEGAL_OPERATION = 20 => "IllegalOperation",
    ALREADY_INITIALIZED = 23 => "AlreadyInitialized",
    NAMESPACE_NOT_FOUND = 26 => "NamespaceNotFound",
    PATH_NOT_VIABLE = 28 => "PathNotViable",
    CURSOR_NOT_FOUND = 43 => "CursorNotFound",
    NAMESPACE_EXISTS = 48 => "NamespaceExists",
    WRITE_CONCERN_FAILED = 64 => "WriteConcernFailed",
    INVALID_ID_FIELD = 53 => "InvalidIdField",
    COMMAND_NOT_FOUND = 59 => "CommandNotFound",
    SHARD_KEY_NOT_FOUND = 61 => "ShardKeyNotFound",
    IMMUTABLE_FIELD = 66 => "ImmutableField",
    SHARD_NOT_FOUND = 70 => "ShardNotFound",
    INVALID_OPTIONS = 72 => "InvalidOptions",
    INVALID_NAMESPACE = 73 => "InvalidNamespace",
    NODE_NOT_FOUND = 74 => "NodeNotFound",
    NO_REPLICATION_ENABLED = 76 => "NoReplicationEnabled",
    INDEX_KEY_SPECS_CONFLICT = 86 => "IndexKeySpecsConflict",
    SHUTDOWN_IN_PROGRESS = 91 => "ShutdownInProgress",
    INVALID_REPLICA_SET_CONFIG = 93 => "InvalidReplicaSetConfig",
    NOT_YET_INITIALIZED = 94 => "NotYetInitialized",
    OPERATION_FAILED = 96 => "OperationFailed",
    FAILED_TO_SATISFY_READ_PREFERENCE = 133 => "FailedToSatisfyReadPreference",
    BSON_OBJECT_TOO_LARGE = 10334 => "BSONObjectTooLarge",
    DUPLICATE_KEY = 11000 => "DuplicateKey",
    NOT_WRITABLE_PRIMARY = 10107 => "NotWritablePrimary",
    NOT_PRIMARY_NO_SECONDARY_OK = 13435 => "NotPrimaryNoSecondaryOk",
    NOT_PRIMARY_OR_SECONDARY = 13436 => "NotPrimaryOrSecondary",
    UNKNOWN_GROUP_OPERATOR = 15952 => "Location15952",
    GROUP_WITHOUT_ID = 15955 => "Location15955",
    NEGATIVE_SKIP = 15956 => "Location15956",
    NON_POSITIVE_LIMIT = 15958 => "Location15958",
    MIXED_PROJECTION = 31254 => "Location31254",
    NOT_AN_ACCUMULATOR = 40234 => "Location40234",
    NOT_ONE_ACCUMULATOR = 40238 => "Location40238",
    NOT_ONE_STAGE_FIELD = 40323 => "Location40323",
    UNKNOWN_STAGE = 40324 => "Location40324",
    IDL_FAILED_TO_PARSE = 40414 => "Location40414",
    NOT_ON_STANDALONE = 51300 => "Location51300",
    NOT_ON_SHARD_MEMBER = 51301 => "Location51301",
    COLL_STATS_NOT_AN_OBJECT = 5447000 => "Location5447000",
}

impl CmdError {
    /// An error with an explicit code.
    pub(crate) fn new(code: i32, msg: impl Into<String>) -> Self {
        CmdError {
            code,
            msg: msg.into(),
            labels: Vec::new(),
        }
    }
    /// The same error carrying `label` in its reply's `errorLabels`.
    pub(crate) fn labelled(mut self, label: &'static str) -> Self {
        self.labels.push(label);
        self
    }
    /// BadValue (2).
    pub(crate) fn bad_value(msg: impl Into<String>) -> Self {
        Self::new(code::BAD_VALUE, msg)
    }
    /// FailedToParse (9).
    pub(crate) fn parse(msg: impl Into<String>) -> Self {
        Self::new(code::FAILED_TO_PARSE, msg)
    }
    /// InternalError (1) for a lock a panicking thread left poisoned.
    pub(crate) fn poisoned(what: &str) -> Self {
        Self::new(code::INTERNAL_ERROR, format!("{what} poisoned"))
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
        let mut d = doc! {
            "ok": 0.0,
            "errmsg": self.msg.clone(),
            "code": self.code,
            "codeName": code_name(self.code),
        };
        if !self.labels.is_empty() {
            d.insert("errorLabels", self.labels.clone());
        }
        d
    }
}

impl std::fmt::Display for CmdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", code_name(self.code), self.code, self.msg)
    }
}

impl std::error::Error for CmdError {}

/// The error every role returns for a command it does not know.
pub(crate) fn command_not_found(name: &str) -> CmdError {
    CmdError::new(
        code::COMMAND_NOT_FOUND,
        format!("no such command: '{name}'"),
    )
}

/// Results of command handlers.
pub(crate) type CmdResult<T = Document> = Result<T, CmdError>;
