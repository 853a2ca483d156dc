//! Helpers shared by the engine end-to-end tests: a stand-in per test, its command log, its data.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use microshard::standin::{Role, StandinConfig, StandinHandle};
use mongodb::bson::{Document, RawDocumentBuf, doc};

/// A stand-in `mongod` on a free loopback port, logging every command it receives.
pub struct Server {
    pub handle: StandinHandle,
    pub dir: tempfile::TempDir,
}

impl Server {
    /// Starts a stand-in inside the current runtime.
    pub fn start() -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cfg = StandinConfig::new(Role::Mongod);
        cfg.dbpath = Some(dir.path().to_path_buf());
        cfg.command_log = Some(dir.path().join("commands.jsonl"));
        cfg.quiet = true;
        let handle = microshard::standin::spawn(cfg).expect("stand-in starts");
        Server { handle, dir }
    }

    /// The connection string (database `ycsb`).
    pub fn uri(&self) -> String {
        format!(
            "mongodb://127.0.0.1:{}/ycsb?directConnection=true",
            self.handle.port()
        )
    }

    /// The command-log file.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("commands.jsonl")
    }

    /// Every logged command, parsed.
    pub fn commands(&self) -> Vec<serde_json::Value> {
        read_log(&self.log_path())
    }

    /// Every document of `ycsb.usertable`, raw, in `_id` order.
    pub async fn documents(&self) -> Vec<RawDocumentBuf> {
        let client = mongodb::Client::with_uri_str(self.uri())
            .await
            .expect("client");
        let coll = client
            .database("ycsb")
            .collection::<RawDocumentBuf>("usertable");
        let mut cursor = coll
            .find(doc! {})
            .sort(doc! {"_id": 1})
            .await
            .expect("find");
        let mut out = Vec::new();
        while cursor.advance().await.expect("cursor") {
            out.push(cursor.current().to_raw_document_buf());
        }
        out
    }

    /// Runs an admin command directly (e.g. to count documents).
    pub async fn command(&self, cmd: Document) -> Document {
        let client = mongodb::Client::with_uri_str(self.uri())
            .await
            .expect("client");
        client
            .database("ycsb")
            .run_command(cmd)
            .await
            .expect("command")
    }
}

/// Parses the stand-in's JSON-lines command log (`{"t", "cmd", "db", "args"}`) into the command
/// bodies (canonical extended JSON, document sequences folded in).
pub fn read_log(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("args").cloned())
        .collect()
}

/// The command name of a logged command (its first key).
pub fn command_name(cmd: &serde_json::Value) -> String {
    cmd.as_object()
        .and_then(|o| o.keys().next().cloned())
        .unwrap_or_default()
}

/// Commands addressed to `usertable` by name (`insert`, `find`, `update`, `delete`).
pub fn on_usertable<'a>(cmds: &'a [serde_json::Value], name: &str) -> Vec<&'a serde_json::Value> {
    cmds.iter()
        .filter(|c| c.get(name).and_then(|v| v.as_str()) == Some("usertable"))
        .collect()
}

/// Absolute path of a shipped workload file.
pub fn workload(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join(name)
}
