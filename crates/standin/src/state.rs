//! What every connection of one stand-in shares: the store, the cursor table, the replica-set
//! state, the counters, the log files. Role modules read it; only `server` builds it.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::time::Instant;

use mongodb::bson::{Bson, Document, doc};
use tokio_util::sync::CancellationToken;

use super::capacity::Capacity;
use super::config::StandinConfig;
use super::repl::member::ReplState;
use super::store::Store;
use super::value::bson_size;

/// Operation counters (`serverStatus.opcounters`).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub insert: AtomicU64,
    pub query: AtomicU64,
    pub update: AtomicU64,
    pub delete: AtomicU64,
    pub getmore: AtomicU64,
    pub command: AtomicU64,
}

/// A server-side cursor: the rest of a materialised result set.
#[derive(Debug)]
pub(crate) struct Cursor {
    pub ns: String,
    pub docs: VecDeque<Document>,
    /// When the plan behind it ends by itself (its limit).
    pub end: PlanEnd,
    /// Last use; idle cursors are reaped after [`CURSOR_TIMEOUT`] like mongod's 10-minute timeout.
    pub last_used: Instant,
}

/// mongod's default `cursorTimeoutMillis` (10 minutes).
pub(crate) const CURSOR_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Where the mongod-style log lines go: `--logpath`, stdout (the CLI), or nowhere (in-process servers).
#[derive(Debug)]
pub(crate) enum LogSink {
    /// No log (an in-process server without `--logpath`).
    Off,
    /// Standard output; a closed stdout (`microshard standin … | head -1`) drops the lines.
    Stdout,
    /// `--logpath`.
    File(Mutex<File>),
}

impl LogSink {
    /// Writes one line; a failed write (a closed pipe, a full disk) is dropped, never a panic.
    fn write_line(&self, line: String) {
        match self {
            LogSink::Off => {}
            LogSink::Stdout => write_line_to(&mut std::io::stdout().lock(), line),
            LogSink::File(f) => append_line(f, line),
        }
    }
}

/// Writes `line` and a newline with a single write, ignoring errors (see [`LogSink::write_line`]).
fn write_line_to(w: &mut impl Write, mut line: String) {
    line.push('\n');
    let _ = w.write_all(line.as_bytes());
    let _ = w.flush();
}

/// Appends one line with a single write, so that a reader (a test, `tail -f`, microshard's
/// bring-up reading a member's log) never sees half a line.
fn append_line(f: &Mutex<File>, line: String) {
    if let Ok(mut f) = f.lock() {
        write_line_to(&mut *f, line);
    }
}

/// State shared by every connection of one stand-in.
#[derive(Debug)]
pub(crate) struct ServerState {
    pub cfg: StandinConfig,
    pub port: u16,
    pub store: Mutex<Store>,
    pub cursors: Mutex<HashMap<i64, Cursor>>,
    pub repl: Mutex<ReplState>,
    pub counters: Counters,
    pub next_conn_id: AtomicI64,
    pub current_conns: AtomicI64,
    pub total_conns: AtomicI64,
    pub started: Instant,
    pub shutdown: CancellationToken,
    pub capacity: Option<Capacity>,
    pub cmdlog: Option<Mutex<File>>,
    pub log: LogSink,
    pub hostname: String,
    /// This process's `_isSelf` id: how a member finds itself among names it cannot match
    /// to its own addresses (MongoDB's isSelf slow path).
    pub instance_id: mongodb::bson::oid::ObjectId,
    /// The users connections must authenticate as (none: no authentication).
    pub users: crate::auth::Users,
    /// How this server dials its peers (TLS, credentials).
    pub peer: crate::peer::Peer,
    /// The `--dbpath` lock, held for the server's life.
    pub _dbpath_lock: Option<File>,
}

impl ServerState {
    /// Writes one JSON log line in mongod's 4.4+ structured format.
    pub(crate) fn log(&self, component: &str, id: i64, msg: &str, attr: Document) {
        if matches!(self.log, LogSink::Off) {
            return;
        }
        let line = doc! {
            "t": {"$date": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3f+00:00").to_string()},
            "s": "I",
            "c": component,
            "id": id,
            "ctx": "listener",
            "msg": msg,
            "attr": attr,
        };
        self.log
            .write_line(Bson::Document(line).into_relaxed_extjson().to_string());
    }

    /// Writes one `--command-log` line: the command as received, in canonical extended JSON.
    pub(crate) fn log_command(&self, name: &str, db: &str, body: &Document) {
        let Some(f) = &self.cmdlog else { return };
        let line = serde_json::json!({
            "t": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            "cmd": name,
            "db": db,
            "args": Bson::Document(body.clone()).into_canonical_extjson(),
        });
        append_line(f, line.to_string());
    }

    /// Charges the capacity model for `ops` operations (no-op when it is off), after waiting out
    /// a `--stall` in progress: every data operation passes here, the probes' commands do not.
    pub(crate) async fn occupy(&self, ops: u32) {
        if let Some(stall) = &self.cfg.stall {
            let wait = stall.wait_at(self.started.elapsed());
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
        if let Some(c) = &self.capacity {
            c.occupy(ops).await;
        }
    }

    /// Registers a cursor over the remaining documents (none, when the last batch was full) and
    /// returns its id.
    pub(crate) fn open_cursor(&self, ns: &str, docs: VecDeque<Document>, end: PlanEnd) -> i64 {
        let mut id: i64 = rand::random::<i64>() & i64::MAX;
        if id == 0 {
            id = 1;
        }
        if let Ok(mut c) = self.cursors.lock() {
            let now = Instant::now();
            c.retain(|_, cur| now.duration_since(cur.last_used) < CURSOR_TIMEOUT);
            c.insert(
                id,
                Cursor {
                    ns: ns.to_string(),
                    docs,
                    end,
                    last_used: now,
                },
            );
        }
        id
    }

    /// `host:port` as this server names itself.
    pub(crate) fn me(&self) -> String {
        format!("{}:{}", self.hostname, self.port)
    }
}

/// Takes one batch off the front: up to `n` documents and at most ~16 MiB.
pub(crate) fn take_batch(docs: &mut VecDeque<Document>, n: Option<usize>) -> Vec<Bson> {
    let limit = n.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while out.len() < limit {
        let Some(d) = docs.front() else { break };
        let sz = bson_size(d);
        if !out.is_empty() && bytes + sz > 16 * 1024 * 1024 - 16 * 1024 {
            break;
        }
        bytes += sz;
        if let Some(d) = docs.pop_front() {
            out.push(Bson::Document(d));
        }
    }
    out
}

/// mongod's first batch when `find` or `aggregate` names no `batchSize`
/// (`query_request_helper::kDefaultBatchSize`).
pub(crate) const DEFAULT_FIRST_BATCH: usize = 101;

/// What ends the plan behind a cursor by itself, besides running out of documents: its `limit`.
///
/// mongod keeps a cursor while its plan is not at EOF (`shouldSaveCursor`, `!exec->isEOF()`,
/// `src/mongo/db/query/find.cpp`). A plan learns that it ran out of documents only when asked for
/// one more, which the batch loop never does once the batch holds `batchSize` documents
/// (`FindCommon::enoughForFirstBatch`, `src/mongo/db/commands/find_cmd.cpp`); a `limit` stage knows
/// it is done as soon as it returned `limit` documents. mongos's merger is asked for nothing past a
/// full batch either, and notices its own limit only on the next call (`cluster_find.cpp`), so a
/// router's cursor has no `PlanEnd` limit (`docs/mongodb-versions.md`, "Conformance").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PlanEnd {
    /// Documents still to return before the limit stage is at EOF (`None`: no limit).
    pub limit_left: Option<usize>,
}

impl PlanEnd {
    /// The plan of a command with this `limit` (`None` or 0: none).
    pub(crate) fn limit(limit: Option<usize>) -> Self {
        PlanEnd {
            limit_left: limit.filter(|l| *l > 0),
        }
    }

    /// The same plan once `taken` more documents were returned.
    pub(crate) fn after(self, taken: usize) -> Self {
        PlanEnd {
            limit_left: self.limit_left.map(|l| l.saturating_sub(taken)),
        }
    }

    /// Whether the cursor lives on after a batch of `taken` documents, `asked` being the batch
    /// size (`None`: no count bound) and `remaining` what the plan still holds: closed at the
    /// limit, open while documents remain, and open when the batch was filled exactly, because
    /// the plan was not asked whether anything follows.
    pub(crate) fn stays_open(self, asked: Option<usize>, taken: usize, remaining: usize) -> bool {
        if self.limit_left == Some(0) {
            return false;
        }
        remaining > 0 || asked == Some(taken)
    }
}

/// How a cursor-returning command cuts its first batch and whether its cursor lives on.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FirstBatch {
    /// The command's `batchSize`; `None` is [`DEFAULT_FIRST_BATCH`].
    pub batch_size: Option<usize>,
    /// `singleBatch`: the cursor is closed after the first batch whatever remains.
    pub single_batch: bool,
    /// What ends the plan by itself.
    pub end: PlanEnd,
}

impl FirstBatch {
    /// A first batch of `batch_size` documents over a plan with no limit.
    pub(crate) fn sized(batch_size: Option<usize>) -> Self {
        FirstBatch {
            batch_size,
            ..FirstBatch::default()
        }
    }
}

/// Builds the `{cursor: {firstBatch, id, ns}, ok: 1}` reply, keeping the rest as a cursor when
/// mongod would keep one ([`PlanEnd::stays_open`]).
pub(crate) fn cursor_reply(
    state: &ServerState,
    ns: &str,
    mut docs: VecDeque<Document>,
    first: FirstBatch,
) -> Document {
    let asked = first.batch_size.unwrap_or(DEFAULT_FIRST_BATCH);
    let batch = take_batch(&mut docs, Some(asked));
    let end = first.end.after(batch.len());
    let id = if !first.single_batch && end.stays_open(Some(asked), batch.len(), docs.len()) {
        state.open_cursor(ns, docs, end)
    } else {
        0
    };
    doc! {"cursor": {"firstBatch": batch, "id": id, "ns": ns}, "ok": 1.0}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_batch_keeps_the_cursor_unless_the_limit_was_reached() {
        let no_limit = PlanEnd::limit(None);
        // Filled to batchSize exactly: mongod did not look past it.
        assert!(no_limit.stays_open(Some(10), 10, 0));
        // Ran out before batchSize: the plan said EOF.
        assert!(!no_limit.stays_open(Some(11), 10, 0));
        assert!(!no_limit.stays_open(None, 10, 0));
        // Documents left: open.
        assert!(no_limit.stays_open(Some(2), 2, 8));
        // A limit stage at its limit is at EOF, full batch or not.
        assert!(
            !PlanEnd::limit(Some(10))
                .after(10)
                .stays_open(Some(10), 10, 0)
        );
        assert!(PlanEnd::limit(Some(10)).after(4).stays_open(Some(4), 4, 0));
        assert_eq!(PlanEnd::limit(Some(0)), no_limit);
    }

    #[test]
    fn a_closed_pipe_drops_log_lines_without_a_panic() {
        let (reader, mut writer) = std::io::pipe().expect("pipe");
        drop(reader);
        write_line_to(&mut writer, "{\"msg\": \"lost\"}".to_string());
        write_line_to(&mut writer, "{\"msg\": \"lost too\"}".to_string());
    }

    #[test]
    fn a_line_is_written_whole_with_its_newline() {
        let mut out = Vec::new();
        write_line_to(&mut out, "{\"a\": 1}".to_string());
        assert_eq!(out, b"{\"a\": 1}\n");
    }
}
