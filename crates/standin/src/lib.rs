//! The stand-in: a small MongoDB-wire-protocol server that plays mongod, replica-set member or mongos.
//!
//! It exists so that microshard's tests, `demo` and `calibrate` run where no MongoDB can be installed.
//! It is its own crate in the workspace and depends on nothing of the microshard tool; the tool
//! re-exports it as `microshard::standin` and is the one that makes its binary answer to the names
//! `mongod`/`mongos`. It is **not**
//! MongoDB and never claims to be: `buildInfo.version` ends in `-standin`, and `hello`, `buildInfo` and
//! `serverStatus` carry `microshardStandin: true` so every figure measured against it gets labelled.
//! Data lives in memory; `--dbpath` only holds the lock file.
//!
//! What it deliberately does differently from MongoDB (so nobody mistakes it for one):
//! - `hello` carries no `topologyVersion`, so drivers monitor it by polling instead of the streaming
//!   (awaitable `hello` + exhaust) protocol, which the stand-in does not implement.
//! - Replica sets do not replicate. `replSetInitiate` first checks that every other member answers,
//!   runs with `--replSet` and is not initiated (NodeNotFound otherwise), as mongod's quorum check
//!   does. A one-member set elects itself after `--primary-delay-ms`, as
//!   MongoDB does at once. In a set of several members the initiating member tells the others the
//!   configuration and the outcome of the first election, which takes `--election-delay-ms`
//!   (default 1–2 s) and is won by `--election-winner N` or a random member other than member 0;
//!   the others answer as SECONDARY with no data. The only later election is `--step-down
//!   [SET:]T/D`'s: T ms after the primary's first query on a user database it steps down, the
//!   set has no primary for D ms (`hello` names none, writes fail with NotWritablePrimary,
//!   labelled `RetryableWriteError` for retryable writes), then the next member is primary.
//! - mongos routes by its own 64-bit hash (not MongoDB's MD5-based one); hashed collections start
//!   with 2 chunks per shard (7.0 behaviour, or `numInitialChunks`); nothing is ever split or migrated.
//!   A command waits up to 2 s for the config server before failing with 133. Shards are
//!   reached as replica sets (one member or several): an operation waits for a shard's primary
//!   up to `defaultFindReplicaSetHostTimeoutMS` (15 s, or `--setParameter`), then fails with 133,
//!   and is sent again (up to 3 times) when a member answers that it is no longer primary: a
//!   read, or a write the client made retryable (`txnNumber`). A write's failure on one shard
//!   fails only that shard's statements: `ok: 1` with a write error each (133 for a shard
//!   without primary), the other shards' statements applied.
//! - The capacity model (`--service-time-us`, `--workers`) charges one service time per document for
//!   inserts, per statement for updates/deletes, and per command for reads (find, getMore, count,
//!   aggregate); see `capacity.rs`.
//! - Cursors follow mongod's rules (a first batch filled to `batchSize` keeps the cursor open even
//!   when nothing follows; `limit`, `singleBatch` and a short batch close it; mongos keeps a full
//!   first batch open, limit or not), but a result is computed whole when the query runs.
//!   mongos drains its shards' cursors at once, so a shard counts the `getMore`s a draining
//!   client would cost it when the `find` arrives, not later. mongod's IDHACK plan (a `find
//!   {_id: v}` knows it is at its end after one document) is not imitated.
//! - Unix-domain sockets exist only when `--unixSocketPrefix` is given.
//! - Security is a flag away and all or nothing: `--tls-cert FILE --tls-key FILE` (or mongod's
//!   `--tlsMode requireTLS --tlsCertificateKeyFile FILE`) requires TLS on every TCP connection
//!   (rustls; client certificates are not asked for), and `--auth-user NAME:PASSWORD` requires
//!   SCRAM-SHA-256 as that user of `admin` before any command but the handshake (`hello`,
//!   `ping`, `buildInfo`, `saslStart`, ...). Members reach each other with the same TLS (trusting
//!   `--tlsCAFile`) as the first user, where real members use the `--keyFile` internal user.
//!   There are no roles: an authenticated user may do everything.
//! - `--stall D/P` makes it stall as a loaded server does (a checkpoint, cache eviction): no data
//!   operation completes for D ms every P ms, while `ping`, `hello` and `serverStatus` are
//!   answered at once.
//! - A member finds itself in a replica-set configuration as mongod does (an address it can bind,
//!   else MongoDB's isSelf slow path: `_isSelf` through the named host and port), but members
//!   other than the initiator take the entry the initiator reached them at.
//! - `getDefaultRWConcern` answers as MongoDB's does per role (51300 on a standalone, 51301 on a
//!   shard member); elsewhere it always reports the implicit 5.0+ default, `w: "majority"`.
//! - `serverStatus` has no `tcmalloc` section (as 7.0 with gperftools) and the pre-8.0.16
//!   eviction counter name.
//!
//! # Serving it
//! - [`run`]`(listener, config, shutdown)` serves on a listener the caller bound until `shutdown`
//!   completes or the `shutdown` command arrives (mini-redis's `server::run`).
//! - [`spawn`]`(config)` binds where the flags say and returns a [`StandinHandle`] at once, for
//!   in-process use (tests, `calibrate`, `demo`).
//! - [`run_foreground`]`(config, shutdown)` is the command-line entry point (logs to stdout).
//!
//! A [`StandinConfig`] comes from the flags real mongod/mongos take ([`StandinConfig::from_args`])
//! or from [`StandinConfig::new`] and its fields.
//!
//! ```no_run
//! # async fn demo() -> Result<(), microshard_standin::StandinError> {
//! use microshard_standin::{Role, StandinConfig};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
//! microshard_standin::run(listener, StandinConfig::new(Role::Mongod), tokio::signal::ctrl_c()).await
//! # }
//! ```
//!
//! # Layout
//! mini-redis's shape: `server` (listener, connections, dispatch) answers the commands every role
//! answers through `common` and hands the rest to `mongod` or `router` (mongos), whose command
//! tables (`COMMANDS`) dispatch to one file per command family (`mongod::{write, read, aggregate,
//! ddl, catalog}`, `router::{ddl, write, read}`); replica-set commands are `repl`'s. They all read
//! `state` (the store, cursors, replica-set state, counters, logs), never `server`. Below them:
//! `store` with `query` and `value`, `wire` (the OP_MSG/OP_QUERY codec), `cmderr` (the error codes,
//! declared once by `codes!`), `fields` (typed reading of command fields, one set of
//! TypeMismatch/missing errors; the driver-added fields), `config` (the flags) and `capacity` (the
//! service-time model). A new command goes into the file of the role and family that answers it
//! (see CONTRIBUTING.md).

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod auth;
mod capacity;
mod cmderr;
mod common;
mod config;
mod fields;
mod mongod;
mod peer;
mod query;
mod repl;
mod router;
mod security_flags;
mod server;
mod state;
mod store;
mod tls;
mod value;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;

pub use config::{MAX_SERVICE_TIME_US, Stall, StandinConfig, StepDown};
pub use security_flags::AuthUser;
pub use tls::TlsFiles;

/// The role the stand-in plays, chosen the way real MongoDB chooses it: by the program name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A `mongod` (standalone, replica-set member, config server or shard server, by its flags).
    Mongod,
    /// A `mongos` router.
    Mongos,
}

/// The version string the stand-in reports: a real-looking version, never a real MongoDB one.
pub const STANDIN_VERSION: &str = "7.0.0-standin";
/// `maxWireVersion` of MongoDB 7.0, the version the stand-in imitates.
pub(crate) const MAX_WIRE_VERSION: i32 = 21;

/// Why a stand-in could not start.
#[derive(Debug, thiserror::Error)]
pub enum StandinError {
    /// A flag is unknown, malformed or not allowed for this role (the user's input).
    #[error("{0}")]
    BadFlag(String),
    /// `--dbpath` does not exist (mongod's NonExistentPath, code 29).
    #[error(
        "NonExistentPath: Data directory {0} not found. Create the missing directory or specify another path using (1) the --dbpath command line option, or (2) by adding the 'storage.dbPath' option in the configuration file."
    )]
    NonExistentPath(String),
    /// Another server holds `mongod.lock` in `--dbpath` (mongod's DBPathInUse, code 98).
    #[error(
        "DBPathInUse: Unable to lock the lock file: {0}/mongod.lock (Resource temporarily unavailable). Another mongod instance is already running on the {0} directory"
    )]
    DbPathInUse(String),
    /// The listening socket could not be opened.
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address tried.
        addr: String,
        /// The OS error.
        reason: String,
    },
    /// Any other I/O failure at start-up (log file, lock file, runtime).
    #[error("{0}")]
    Io(String),
}

impl StandinError {
    /// True when the error is the user's input (exit status 2 at the CLI edge).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            StandinError::BadFlag(_)
                | StandinError::NonExistentPath(_)
                | StandinError::DbPathInUse(_)
        )
    }
}

/// A running stand-in: where it listens and how to stop it.
#[derive(Debug)]
pub struct StandinHandle {
    addr: SocketAddr,
    shared: Arc<state::ServerState>,
    task: tokio::task::JoinHandle<()>,
}

impl StandinHandle {
    /// The first listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port it listens on (useful with `--port 0`).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `host:port` as a replica-set member or shard would be named (`localhost:<port>`).
    pub fn host(&self) -> String {
        format!("localhost:{}", self.addr.port())
    }

    /// A connection string for the official driver (direct connection: no topology discovery).
    pub fn uri(&self) -> String {
        format!(
            "mongodb://127.0.0.1:{}/?directConnection=true",
            self.addr.port()
        )
    }

    /// Stops accepting, closes every connection, releases the lock file and waits for the end.
    pub async fn shutdown(self) {
        self.shared.shutdown.cancel();
        let _ = self.task.await;
    }

    /// Waits until the server stops by itself (the `shutdown` command).
    pub async fn wait(self) {
        let _ = self.task.await;
    }

    /// Waits until the server stops by itself, or until `shutdown` completes and then stops it.
    async fn serve_until(self, shutdown: impl Future) {
        let shared = self.shared.clone();
        tokio::select! {
            _ = shutdown => {
                shared.log("CONTROL", 23377, "Received signal", mongodb::bson::doc!{});
                self.shutdown().await;
            }
            _ = shared.shutdown.cancelled() => {
                self.wait().await;
            }
        }
    }
}

/// Starts a stand-in inside the current tokio runtime and returns once it accepts connections.
pub fn spawn(config: StandinConfig) -> Result<StandinHandle, StandinError> {
    server::spawn(config)
}

/// Serves a stand-in on `listener` until the `shutdown` command or until `shutdown` completes, then
/// stops it gracefully (stops accepting, closes every connection, releases the `--dbpath` lock), like
/// `mini_redis::server::run(listener, shutdown)`.
///
/// The caller owns the socket, so a test binds `127.0.0.1:0` and knows the port before the server
/// starts. `listener` takes the place of `--port`/`--bind_ip` for listening; everything else comes
/// from `config`, including a Unix socket on the listener's port when `--unixSocketPrefix` is given.
/// A `shutdown` that completes is logged the way mongod logs a signal ("Received signal").
pub async fn run(
    listener: tokio::net::TcpListener,
    config: StandinConfig,
    shutdown: impl Future,
) -> Result<(), StandinError> {
    server::spawn_on(config, listener)?
        .serve_until(shutdown)
        .await;
    Ok(())
}

/// Runs a stand-in in the foreground, logging to stdout, until the `shutdown` command or until
/// `shutdown` completes (the CLI entry point: it listens where the flags say, and passes SIGINT/SIGTERM
/// as `shutdown`, logged as "Received signal").
pub async fn run_foreground(
    mut config: StandinConfig,
    shutdown: impl Future,
) -> Result<(), StandinError> {
    config.log_to_stdout = true;
    spawn(config)?.serve_until(shutdown).await;
    Ok(())
}
