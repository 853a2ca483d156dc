//! Classifying driver errors for the report, and keeping error messages on stderr readable
//! under load (at most one line per distinct message per second).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::events::{Event, Sink};

use mongodb::error::{ErrorKind, WriteFailure};

/// What kind of failure an `ERROR` was, so a report can tell a timeout storm from duplicate keys.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case", tag = "class", content = "code")]
pub enum ErrorClass {
    /// No server could be selected in time (unreachable, no primary for writes).
    ServerSelection,
    /// A network or server time limit expired.
    Timeout,
    /// The server is not (or no longer) the primary, or is recovering.
    NotPrimary,
    /// A connection failed or was closed.
    Network,
    /// The server refused the operation with this error code (11000 duplicate key, ...).
    ServerCode(i32),
    /// Anything else (driver-side errors: serialization, invalid arguments, ...).
    Other,
}

impl ErrorClass {
    /// A short stable label for tables and JSON maps (`timeout`, `server_code_11000`, ...).
    pub fn label(self) -> String {
        match self {
            ErrorClass::ServerSelection => "server_selection".into(),
            ErrorClass::Timeout => "timeout".into(),
            ErrorClass::NotPrimary => "not_primary".into(),
            ErrorClass::Network => "network".into(),
            ErrorClass::ServerCode(code) => format!("server_code_{code}"),
            ErrorClass::Other => "other".into(),
        }
    }
}

/// Server codes meaning "not writable primary" or "node is recovering" (SDAM spec lists).
const NOT_PRIMARY_CODES: &[i32] = &[10107, 13435, 10058, 11600, 11602, 13436, 189, 91];
/// FailedToSatisfyReadPreference: mongos found no primary (or no eligible member) of a shard
/// within `defaultFindReplicaSetHostTimeoutMS` (15 s), the server side of a client's server
/// selection time-out (`docs/mongodb-versions.md`, "Conformance").
const FAILED_TO_SATISFY_READ_PREFERENCE: i32 = 133;
/// Server codes meaning a time limit expired (MaxTimeMSExpired, NetworkInterfaceExceededTimeLimit, ...).
const TIMEOUT_CODES: &[i32] = &[50, 89, 202, 262];

/// The class of a server error code (a command's, a write error's or a write-concern error's).
pub(crate) fn classify_code(code: i32) -> ErrorClass {
    if code == FAILED_TO_SATISFY_READ_PREFERENCE {
        ErrorClass::ServerSelection
    } else if NOT_PRIMARY_CODES.contains(&code) {
        ErrorClass::NotPrimary
    } else if TIMEOUT_CODES.contains(&code) {
        ErrorClass::Timeout
    } else {
        ErrorClass::ServerCode(code)
    }
}

/// Maps a driver error to its class.
pub(crate) fn classify(err: &mongodb::error::Error) -> ErrorClass {
    match err.kind.as_ref() {
        ErrorKind::ServerSelection { .. } => ErrorClass::ServerSelection,
        ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => ErrorClass::Timeout,
        ErrorKind::Io(_) | ErrorKind::ConnectionPoolCleared { .. } => ErrorClass::Network,
        ErrorKind::Command(c) => classify_code(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => classify_code(w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => classify_code(w.code),
        ErrorKind::InsertMany(m) => {
            if let Some(first) = m.write_errors.as_ref().and_then(|v| v.first()) {
                classify_code(first.code)
            } else if let Some(wc) = &m.write_concern_error {
                classify_code(wc.code)
            } else {
                ErrorClass::Other
            }
        }
        _ => ErrorClass::Other,
    }
}

/// The server's error code, when the error is a command's.
pub(crate) fn command_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        _ => None,
    }
}

/// Why a server turned microshard's connection away, in one sentence that names what to fix in
/// the connection string, when it was the credentials or TLS rather than silence: a wrong
/// password, user or `authSource` (AuthenticationFailed), no credentials where they are
/// required or a user without rights on the database (Unauthorized), a certificate the client does not trust (a wrong `tlsCAFile`), or a
/// server that hangs up on a plaintext handshake (it requires TLS). `tls` says whether the
/// connection string asked for TLS. `None` for anything else.
pub(crate) fn refusal(err: &mongodb::error::Error, tls: bool) -> Option<String> {
    let text = match err.kind.as_ref() {
        ErrorKind::ServerSelection { message, .. } => message.clone(),
        _ => err.to_string(),
    };
    let auth = matches!(err.kind.as_ref(), ErrorKind::Authentication { .. })
        || command_code(err) == Some(18);
    let why = if auth {
        "authentication failed: check the user name, the password and authSource in the connection string".to_string()
    } else if command_code(err) == Some(13) {
        "the server refuses this connection the benchmark database (Unauthorized): it requires authentication, so give USER:PASSWORD@ (and authSource) in the connection string, or grant the user readWrite on the database".to_string()
    } else if let Some(at) = text.find("invalid peer certificate") {
        let what = text[at..].split([',', '\n']).next().unwrap_or_default();
        format!(
            "TLS: the server's certificate is not trusted ({what}): check tlsCAFile (the CA that signed it), or tlsAllowInvalidHostnames when only its name differs"
        )
    } else if !tls && (text.contains("unexpected end of file") || text.contains("reset by peer")) {
        "the server hung up on the handshake, as a server that requires TLS does: add tls=true (and tlsCAFile) to the connection string".to_string()
    } else {
        return None;
    };
    Some(why)
}

/// A one-line, credential-free description of a driver error.
pub(crate) fn describe(err: &mongodb::error::Error) -> String {
    let text = match err.kind.as_ref() {
        // The driver's text dumps the whole topology; keep the first server's error.
        ErrorKind::ServerSelection { message, .. } => {
            let first = match message.split_once("Error: Kind: ") {
                Some((_, rest)) => rest.split(", labels").next().unwrap_or(rest),
                None => message,
            };
            format!("no server selected within the server-selection timeout: {first}")
        }
        // The default Display of bulk errors is a multi-line debug dump; keep the first error.
        ErrorKind::InsertMany(m) => match m.write_errors.as_ref().and_then(|v| v.first()) {
            Some(first) => format!(
                "insert_many: {} write error(s), first: code {}: {}",
                m.write_errors.as_ref().map_or(0, Vec::len),
                first.code,
                first.message
            ),
            None => format!("insert_many: {err}"),
        },
        _ => err.to_string(),
    };
    crate::redact::redact_text(&text.replace(['\n', '\r'], " "))
}

/// Says at most one message per kind of failure per second ([`Event::OpError`]), so a failing
/// server cannot flood stderr (and the printing cannot slow the clients down). The kind is what
/// the messages have in common (operation and error class): messages themselves differ by key.
pub(crate) struct ErrorLog {
    last: Mutex<HashMap<String, (Instant, u64)>>,
    events: Sink,
}

/// Beyond this many distinct kinds the memory is cleared (bounded memory under random messages).
const MAX_REMEMBERED: usize = 1024;

impl ErrorLog {
    /// A log saying its messages to `events`.
    pub(crate) fn new(events: Sink) -> ErrorLog {
        ErrorLog {
            last: Mutex::default(),
            events,
        }
    }

    /// Says `message` unless a message of the same `kind` was said less than a second ago; the
    /// next one said carries how many were held back meanwhile.
    pub(crate) fn report(&self, kind: &str, message: &str) {
        if let Some(held_back) = self.should_print(kind, Instant::now()) {
            self.events.event(Event::OpError {
                kind: kind.to_string(),
                msg: message.to_string(),
                held_back,
            });
        }
    }

    /// `Some(number held back since the last print)` when a message of `kind` may be printed now.
    fn should_print(&self, kind: &str, now: Instant) -> Option<u64> {
        let Ok(mut last) = self.last.lock() else {
            return Some(0);
        };
        match last.get_mut(kind) {
            Some((at, held)) if now.duration_since(*at) < Duration::from_secs(1) => {
                *held += 1;
                None
            }
            Some((at, held)) => {
                *at = now;
                Some(std::mem::take(held))
            }
            None => {
                if last.len() >= MAX_REMEMBERED {
                    last.clear();
                }
                last.insert(kind.to_string(), (now, 0));
                Some(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_classified() {
        assert_eq!(classify_code(10107), ErrorClass::NotPrimary);
        assert_eq!(classify_code(50), ErrorClass::Timeout);
        assert_eq!(classify_code(11000), ErrorClass::ServerCode(11000));
        assert_eq!(ErrorClass::ServerCode(11000).label(), "server_code_11000");
    }

    #[test]
    fn mongos_finding_no_primary_is_server_selection() {
        assert_eq!(classify_code(133), ErrorClass::ServerSelection);
        assert_eq!(classify_code(133).label(), "server_selection");
    }

    #[test]
    fn driver_errors_are_classified() {
        let io = mongodb::error::Error::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        ));
        assert_eq!(classify(&io), ErrorClass::Network);
        let to =
            mongodb::error::Error::from(std::io::Error::new(std::io::ErrorKind::TimedOut, "slow"));
        assert_eq!(classify(&to), ErrorClass::Timeout);
    }

    #[test]
    fn same_message_is_rate_limited() {
        let log = ErrorLog::new(crate::events::Discard::sink());
        let t0 = Instant::now();
        assert_eq!(log.should_print("a", t0), Some(0));
        assert_eq!(log.should_print("a", t0 + Duration::from_millis(500)), None);
        assert_eq!(log.should_print("a", t0 + Duration::from_millis(600)), None);
        assert_eq!(
            log.should_print("b", t0 + Duration::from_millis(500)),
            Some(0)
        );
        assert_eq!(
            log.should_print("a", t0 + Duration::from_millis(1001)),
            Some(2)
        );
    }

    #[test]
    fn the_log_says_an_error_as_an_event_and_holds_back_its_repeats() {
        let recorder = std::sync::Arc::new(crate::events::Recorder::default());
        let log = ErrorLog::new(recorder.clone());
        log.report("READ network", "READ: connection reset");
        log.report("READ network", "READ: connection reset again");
        assert_eq!(
            recorder.events(),
            vec![Event::OpError {
                kind: "READ network".into(),
                msg: "READ: connection reset".into(),
                held_back: 0,
            }]
        );
    }
}
