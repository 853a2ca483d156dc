//! Listener, connections, dispatch and the commands every role answers (hello, ping, buildInfo, ...).

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mongodb::bson::{Bson, DateTime, Document, doc};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio_util::sync::CancellationToken;

use super::capacity::Capacity;
use super::cmderr::{CmdError, CmdResult, code};
use super::config::StandinConfig;
use super::repl::ReplState;
use super::router::Router;
use super::store::Store;
use super::value::{bson_size, truthy};
use super::wire::{self, Request};
use super::{MAX_WIRE_VERSION, Role, STANDIN_VERSION, StandinError};

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
    /// Last use; idle cursors are reaped after [`CURSOR_TIMEOUT`] like mongod's 10-minute timeout.
    pub last_used: Instant,
}

/// mongod's default `cursorTimeoutMillis` (10 minutes).
pub(crate) const CURSOR_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// State shared by every connection of one stand-in.
#[derive(Debug)]
pub(crate) struct Shared {
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
    pub logfile: Option<Mutex<File>>,
    pub router: Option<Router>,
    pub hostname: String,
    /// This process's `_isSelf` id: how a member finds itself among names it cannot match
    /// to its own addresses (MongoDB's isSelf slow path).
    pub instance_id: mongodb::bson::oid::ObjectId,
    _lock: Option<File>,
}

impl Shared {
    /// Writes one JSON log line in mongod's 4.4+ structured format.
    pub(crate) fn log(&self, component: &str, id: i64, msg: &str, attr: Document) {
        if self.logfile.is_none() && !self.cfg.log_to_stdout {
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
        let json = Bson::Document(line).into_relaxed_extjson().to_string();
        if let Some(f) = &self.logfile {
            append_line(f, json);
        } else {
            println!("{json}");
        }
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

    /// Registers a cursor over the remaining documents and returns its id (0 when nothing remains).
    pub(crate) fn open_cursor(&self, ns: &str, docs: VecDeque<Document>) -> i64 {
        if docs.is_empty() {
            return 0;
        }
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

/// Builds the `{cursor: {firstBatch, id, ns}, ok: 1}` reply, keeping the rest as a cursor.
pub(crate) fn cursor_reply(
    shared: &Shared,
    ns: &str,
    mut docs: VecDeque<Document>,
    batch_size: Option<usize>,
    single_batch: bool,
) -> Document {
    let first = take_batch(&mut docs, Some(batch_size.unwrap_or(101)));
    let id = if single_batch {
        0
    } else {
        shared.open_cursor(ns, docs)
    };
    doc! {"cursor": {"firstBatch": first, "id": id, "ns": ns}, "ok": 1.0}
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc == 0 {
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        if let Ok(s) = std::str::from_utf8(&buf[..end])
            && !s.is_empty()
        {
            return s.to_string();
        }
    }
    "localhost".to_string()
}

fn lock_dbpath(cfg: &StandinConfig) -> Result<Option<File>, StandinError> {
    let Some(dir) = &cfg.dbpath else {
        return Ok(None);
    };
    if !dir.is_dir() {
        return Err(StandinError::NonExistentPath(dir.display().to_string()));
    }
    let path = dir.join("mongod.lock");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| StandinError::Io(format!("{}: {e}", path.display())))?;
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file descriptor we own.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        return Err(StandinError::DbPathInUse(dir.display().to_string()));
    }
    let _ = f.set_len(0);
    let _ = writeln!(f, "{}", std::process::id());
    Ok(Some(f))
}

fn open_append(path: &std::path::Path, append: bool) -> Result<File, StandinError> {
    let mut o = std::fs::OpenOptions::new();
    o.create(true);
    if append {
        o.append(true);
    } else {
        o.write(true).truncate(true);
    }
    o.open(path)
        .map_err(|e| StandinError::Io(format!("cannot open {}: {e}", path.display())))
}

/// What a stand-in holds open besides its sockets: the `--dbpath` lock and its log files.
struct Files {
    lock: Option<File>,
    logfile: Option<Mutex<File>>,
    cmdlog: Option<Mutex<File>>,
}

/// Takes the `--dbpath` lock and opens `--logpath` and `--command-log` (before binding, as mongod does).
fn open_files(cfg: &StandinConfig) -> Result<Files, StandinError> {
    let lock = lock_dbpath(cfg)?;
    let logfile = match &cfg.logpath {
        Some(p) => Some(Mutex::new(open_append(p, cfg.logappend)?)),
        None => None,
    };
    let cmdlog = match &cfg.command_log {
        Some(p) => Some(Mutex::new(open_append(p, true)?)),
        None => None,
    };
    Ok(Files {
        lock,
        logfile,
        cmdlog,
    })
}

/// Binds where `cfg` says, starts accepting and returns the handle (see [`super::spawn`]).
pub(crate) fn spawn(cfg: StandinConfig) -> Result<super::StandinHandle, StandinError> {
    let files = open_files(&cfg)?;
    let listeners = bind(&cfg)?;
    start(cfg, files, listeners)
}

/// Starts accepting on a listener the caller bound and returns the handle (see [`super::run`]).
pub(crate) fn spawn_on(
    cfg: StandinConfig,
    listener: tokio::net::TcpListener,
) -> Result<super::StandinHandle, StandinError> {
    let files = open_files(&cfg)?;
    start(cfg, files, vec![listener])
}

/// Opens the listening sockets `--bind_ip`/`--bind_ip_all` and `--port` ask for (all on one port).
fn bind(cfg: &StandinConfig) -> Result<Vec<tokio::net::TcpListener>, StandinError> {
    let addrs: Vec<String> = if cfg.bind_ip_all {
        vec!["0.0.0.0".to_string()]
    } else {
        cfg.bind_ips.clone()
    };
    let mut listeners = Vec::new();
    let mut port = cfg.port;
    for a in &addrs {
        let sock: SocketAddr = match a.parse::<std::net::IpAddr>() {
            Ok(ip) => SocketAddr::new(ip, port),
            Err(_) => {
                use std::net::ToSocketAddrs;
                (a.as_str(), port)
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut i| i.next())
                    .ok_or_else(|| StandinError::Bind {
                        addr: a.clone(),
                        reason: "cannot resolve address".into(),
                    })?
            }
        };
        let std_l = std::net::TcpListener::bind(sock).map_err(|e| StandinError::Bind {
            addr: sock.to_string(),
            reason: e.to_string(),
        })?;
        std_l
            .set_nonblocking(true)
            .map_err(|e| StandinError::Io(e.to_string()))?;
        if port == 0 {
            port = std_l.local_addr().map(|a| a.port()).unwrap_or(0);
        }
        let l = tokio::net::TcpListener::from_std(std_l).map_err(|e| StandinError::Bind {
            addr: sock.to_string(),
            reason: e.to_string(),
        })?;
        listeners.push(l);
    }
    Ok(listeners)
}

/// Builds the shared state on open files and bound listeners, and spawns the accept loops.
fn start(
    cfg: StandinConfig,
    files: Files,
    listeners: Vec<tokio::net::TcpListener>,
) -> Result<super::StandinHandle, StandinError> {
    let first_addr = listeners
        .first()
        .and_then(|l| l.local_addr().ok())
        .ok_or_else(|| StandinError::Io("no listening address".into()))?;
    let port = first_addr.port();
    let capacity =
        (cfg.service_time_us > 0).then(|| Capacity::new(cfg.service_time_us, cfg.workers));
    let router = match cfg.role {
        Role::Mongos => Some(Router::new(&cfg)?),
        Role::Mongod => None,
    };
    let shared = Arc::new(Shared {
        port,
        store: Mutex::new(Store::default()),
        cursors: Mutex::new(HashMap::new()),
        repl: Mutex::new(ReplState::default()),
        counters: Counters::default(),
        next_conn_id: AtomicI64::new(1),
        current_conns: AtomicI64::new(0),
        total_conns: AtomicI64::new(0),
        started: Instant::now(),
        shutdown: CancellationToken::new(),
        capacity,
        cmdlog: files.cmdlog,
        logfile: files.logfile,
        router,
        hostname: hostname(),
        instance_id: mongodb::bson::oid::ObjectId::new(),
        _lock: files.lock,
        cfg,
    });
    shared.log(
        "CONTROL",
        4615611,
        "MongoDB-wire-protocol stand-in starting (microshard stand-in, not MongoDB)",
        doc! {"pid": std::process::id() as i64, "port": i64::from(port), "version": STANDIN_VERSION},
    );
    shared.log(
        "CONTROL",
        21951,
        "Options set by command line",
        doc! {"options": {"argv": shared.cfg.argv.clone()}},
    );
    if let Some(r) = &shared.router {
        r.start(shared.clone());
    }
    for l in &listeners {
        if let Ok(a) = l.local_addr() {
            shared.log(
                "NETWORK",
                23015,
                "Listening on",
                doc! {"address": a.to_string()},
            );
        }
    }
    shared.log(
        "NETWORK",
        23016,
        "Waiting for connections",
        doc! {"port": i64::from(port), "ssl": "off"},
    );
    // Like mongod, also listen on <unixSocketPrefix>/mongodb-<port>.sock (only when a prefix is given,
    // so stand-ins never litter /tmp).
    let no_socket = shared.cfg.argv.iter().any(|a| a == "--nounixsocket");
    let unix = match (&shared.cfg.unix_socket_prefix, no_socket) {
        (Some(prefix), false) => {
            let path = prefix.join(format!("mongodb-{port}.sock"));
            let _ = std::fs::remove_file(&path);
            let l = tokio::net::UnixListener::bind(&path).map_err(|e| StandinError::Bind {
                addr: path.display().to_string(),
                reason: e.to_string(),
            })?;
            shared.log(
                "NETWORK",
                23015,
                "Listening on",
                doc! {"address": path.display().to_string()},
            );
            Some((l, path))
        }
        _ => None,
    };
    let s2 = shared.clone();
    let task = tokio::spawn(async move {
        let mut accepts = Vec::new();
        for l in listeners {
            let s = s2.clone();
            accepts.push(tokio::spawn(accept_loop(s, l)));
        }
        let unix_path = match unix {
            Some((l, path)) => {
                accepts.push(tokio::spawn(accept_unix(s2.clone(), l)));
                Some(path)
            }
            None => None,
        };
        s2.shutdown.cancelled().await;
        for a in accepts {
            let _ = a.await;
        }
        // Give connection tasks a moment to notice and close their sockets.
        let deadline = Instant::now() + std::time::Duration::from_secs(2);
        while s2.current_conns.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        if let Some(p) = unix_path {
            let _ = std::fs::remove_file(p);
        }
        s2.log("CONTROL", 20565, "Now exiting", doc! {});
        if let Some(dir) = &s2.cfg.dbpath {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(dir.join("mongod.lock"));
        }
    });
    Ok(super::StandinHandle {
        addr: first_addr,
        shared,
        task,
    })
}

async fn accept_loop(shared: Arc<Shared>, listener: tokio::net::TcpListener) {
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            res = listener.accept() => {
                let Ok((stream, peer)) = res else { continue };
                let _ = stream.set_nodelay(true);
                let id = shared.next_conn_id.fetch_add(1, Ordering::Relaxed);
                let s = shared.clone();
                if !s.cfg.quiet {
                    s.log("NETWORK", 22943, "Connection accepted", doc! {"remote": peer.to_string(), "connectionId": id});
                }
                tokio::spawn(async move {
                    s.current_conns.fetch_add(1, Ordering::Relaxed);
                    s.total_conns.fetch_add(1, Ordering::Relaxed);
                    serve_conn(&s, stream, id).await;
                    s.current_conns.fetch_sub(1, Ordering::Relaxed);
                });
            }
        }
    }
}

async fn accept_unix(shared: Arc<Shared>, listener: tokio::net::UnixListener) {
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            res = listener.accept() => {
                let Ok((stream, _)) = res else { continue };
                let id = shared.next_conn_id.fetch_add(1, Ordering::Relaxed);
                let s = shared.clone();
                tokio::spawn(async move {
                    s.current_conns.fetch_add(1, Ordering::Relaxed);
                    s.total_conns.fetch_add(1, Ordering::Relaxed);
                    serve_conn(&s, stream, id).await;
                    s.current_conns.fetch_sub(1, Ordering::Relaxed);
                });
            }
        }
    }
}

/// What to do after a command.
pub(crate) enum Outcome {
    /// Send this reply.
    Reply(Document),
    /// Close the connection without replying (`shutdown`).
    Close,
}

async fn serve_conn<S: AsyncRead + AsyncWrite + Unpin>(
    shared: &Arc<Shared>,
    stream: S,
    conn_id: i64,
) {
    let (r, mut w) = tokio::io::split(stream);
    let mut r = BufReader::with_capacity(64 * 1024, r);
    let mut reply_id: i32 = 1;
    loop {
        let req = tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            req = wire::read_request(&mut r) => req,
        };
        let req: Request = match req {
            Ok(Some(req)) => req,
            Ok(None) => return,
            Err(e) => {
                shared.log(
                    "NETWORK",
                    22988,
                    "Error receiving request from client",
                    doc! {"error": e.to_string(), "connectionId": conn_id},
                );
                return;
            }
        };
        let out = dispatch(shared, &req, conn_id).await;
        let doc = match out {
            Outcome::Reply(d) => d,
            Outcome::Close => {
                shared.shutdown.cancel();
                return;
            }
        };
        if req.more_to_come {
            continue;
        }
        reply_id = reply_id.wrapping_add(1);
        let bytes = wire::encode_reply(&req, reply_id, &doc);
        if wire::write_reply(&mut w, &bytes).await.is_err() {
            return;
        }
    }
}

fn write_cmdlog(shared: &Shared, name: &str, db: &str, body: &Document) {
    let Some(f) = &shared.cmdlog else { return };
    let line = serde_json::json!({
        "t": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "cmd": name,
        "db": db,
        "args": Bson::Document(body.clone()).into_canonical_extjson(),
    });
    append_line(f, line.to_string());
}

/// Appends one line with a single write, so that a reader (a test, `tail -f`, microshard's
/// bring-up reading a member's log) never sees half a line.
fn append_line(f: &Mutex<File>, mut line: String) {
    line.push('\n');
    if let Ok(mut f) = f.lock() {
        let _ = f.write_all(line.as_bytes());
    }
}

async fn dispatch(shared: &Arc<Shared>, req: &Request, conn_id: i64) -> Outcome {
    let body = &req.body;
    let Some(name) = body.keys().next().cloned() else {
        return Outcome::Reply(
            CmdError::new(code::FAILED_TO_PARSE, "Empty command object").to_doc(),
        );
    };
    let db = body
        .get_str("$db")
        .ok()
        .map(str::to_string)
        .or_else(|| req.query_db.clone())
        .unwrap_or_else(|| "admin".to_string());
    write_cmdlog(shared, &name, &db, body);
    if shared.shutdown.is_cancelled() {
        return Outcome::Reply(
            CmdError::new(
                code::SHUTDOWN_IN_PROGRESS,
                "The server is in quiesce mode and will shut down",
            )
            .to_doc(),
        );
    }
    if !matches!(
        name.as_str(),
        "insert" | "find" | "update" | "delete" | "getMore"
    ) {
        shared.counters.command.fetch_add(1, Ordering::Relaxed);
    }
    let result = match common_command(shared, &name, &db, body, conn_id).await {
        Some(Ok(CommonOutcome::Reply(d))) => Ok(d),
        Some(Ok(CommonOutcome::Shutdown)) => return Outcome::Close,
        Some(Err(e)) => Err(e),
        None => match shared.cfg.role {
            Role::Mongod => super::mongod::command(shared, &name, &db, body).await,
            Role::Mongos => match &shared.router {
                Some(r) => r.command(shared, &name, &db, body).await,
                None => Err(CmdError::new(1, "router not initialised")),
            },
        },
    };
    let mut d = match result {
        Ok(d) => d,
        Err(e) => e.to_doc(),
    };
    if !d.contains_key("ok") {
        d.insert("ok", 1.0);
    }
    Outcome::Reply(d)
}

enum CommonOutcome {
    Reply(Document),
    Shutdown,
}

/// The error every role returns for a command it does not know.
pub(crate) fn command_not_found(name: &str) -> CmdError {
    CmdError::new(
        code::COMMAND_NOT_FOUND,
        format!("no such command: '{name}'"),
    )
}

/// `getDefaultRWConcern` as MongoDB answers it (`rwc_defaults_commands.cpp`,
/// `assertNotStandaloneOrShardServer`): refused on a standalone (51300) and on a shard member
/// (51301); mongos, config servers and plain replica sets report the 5.0+ implicit default.
fn default_rw_concern(shared: &Shared) -> CmdResult<Document> {
    if shared.cfg.role == Role::Mongod {
        if shared.cfg.repl_set.is_none() {
            return Err(CmdError::new(
                51300,
                "'getDefaultRWConcern' is not supported on standalone nodes.",
            ));
        }
        if shared.cfg.shardsvr {
            return Err(CmdError::new(
                51301,
                "'getDefaultRWConcern' is not supported on shard nodes.",
            ));
        }
    }
    Ok(
        doc! {"defaultReadConcern": {"level": "local"}, "defaultWriteConcern": {"w": "majority", "wtimeout": 0}, "defaultWriteConcernSource": "implicit", "defaultReadConcernSource": "implicit", "localUpdateWallClockTime": DateTime::now()},
    )
}

async fn common_command(
    shared: &Arc<Shared>,
    name: &str,
    db: &str,
    body: &Document,
    conn_id: i64,
) -> Option<CmdResult<CommonOutcome>> {
    let r = |d: Document| Some(Ok(CommonOutcome::Reply(d)));
    match name {
        "hello" | "isMaster" | "ismaster" => r(hello(shared, name, body, conn_id)),
        "ping" => r(doc! {"ok": 1.0}),
        "_isSelf" => r(doc! {"id": shared.instance_id}),
        "buildInfo" | "buildinfo" => r(build_info()),
        "serverStatus" => r(server_status(shared)),
        "hostInfo" => r(host_info(shared)),
        "getCmdLineOpts" => r(cmd_line_opts(shared)),
        "endSessions" | "killSessions" | "killAllSessions" | "refreshSessions" | "startSession" => {
            if name == "startSession" {
                return r(
                    doc! {"id": {"id": mongodb::bson::Binary{subtype: mongodb::bson::spec::BinarySubtype::Uuid, bytes: rand::random::<[u8;16]>().to_vec()}}, "timeoutMinutes": 30},
                );
            }
            r(doc! {"ok": 1.0})
        }
        "whatsmyuri" => r(doc! {"you": "127.0.0.1"}),
        "saslStart" => Some(sasl_start(body).map(CommonOutcome::Reply)),
        "connectionStatus" => {
            let mut info = doc! {"authenticatedUsers": [], "authenticatedUserRoles": []};
            if body.get("showPrivileges").is_some_and(super::value::truthy) {
                info.insert("authenticatedUserPrivileges", Vec::<Bson>::new());
            }
            r(doc! {"authInfo": info})
        }
        "getParameter" => r(get_parameter(shared, body)),
        "setParameter" => r(doc! {"was": Bson::Null}),
        "getDefaultRWConcern" => Some(default_rw_concern(shared).map(CommonOutcome::Reply)),
        "listCommands" => r(doc! {"commands": {}}),
        "getLog" => r(doc! {"totalLinesWritten": 0, "log": []}),
        "logRotate" => r(doc! {}),
        "shutdown" => {
            if db != "admin" {
                return Some(Err(CmdError::new(
                    13,
                    "shutdown may only be run against the admin database.",
                )));
            }
            let force = body.get("force").is_some_and(truthy);
            shared.log(
                "COMMAND",
                4695400,
                "Terminating via shutdown command",
                doc! {"force": force, "timeoutSecs": 15},
            );
            Some(Ok(CommonOutcome::Shutdown))
        }
        _ => None,
    }
}

/// `saslStart`: the stand-in has no users, so it accepts the PLAIN mechanism (which needs no
/// server-side secret) from anyone, which lets tests drive credentialed URIs through the real
/// driver; SCRAM fails the way a real server without that user does (AuthenticationFailed, 18).
fn sasl_start(body: &Document) -> CmdResult<Document> {
    match body.get_str("mechanism") {
        Ok("PLAIN") => Ok(
            doc! {"conversationId": 1, "done": true, "payload": mongodb::bson::Binary {
                subtype: mongodb::bson::spec::BinarySubtype::Generic,
                bytes: Vec::new(),
            }},
        ),
        _ => Err(CmdError::new(18, "Authentication failed.")),
    }
}

fn get_parameter(shared: &Shared, body: &Document) -> Document {
    let mut out = Document::new();
    if body.contains_key("featureCompatibilityVersion") || body.get_str("getParameter") == Ok("*") {
        out.insert("featureCompatibilityVersion", doc! {"version": "7.0"});
    }
    for (k, v) in &shared.cfg.set_parameters {
        if body.contains_key(k) || body.get_str("getParameter") == Ok("*") {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// `buildInfo`: a 7.0-shaped answer whose version says stand-in.
pub(crate) fn build_info() -> Document {
    doc! {
        "version": STANDIN_VERSION,
        "gitVersion": "microshard-standin",
        "versionArray": [7, 0, 0, -100],
        "bits": 64,
        "debug": false,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "javascriptEngine": "none",
        "storageEngines": ["standin-memory"],
        "modules": [],
        "openssl": {"running": "disabled"},
        "buildEnvironment": {"distmod": "microshard-standin", "target_os": std::env::consts::OS, "target_arch": std::env::consts::ARCH},
        "microshardStandin": true,
        "ok": 1.0,
    }
}

fn hello(shared: &Shared, name: &str, body: &Document, conn_id: i64) -> Document {
    let mut d = Document::new();
    let legacy = name != "hello";
    let mut writable = true;
    let mut extra = Document::new();
    match shared.cfg.role {
        Role::Mongos => {
            extra.insert("msg", "isdbgrid");
        }
        Role::Mongod => {
            if shared.cfg.repl_set.is_some() {
                let (w, e) = super::repl::hello_fields(shared);
                writable = w;
                extra = e;
            }
        }
    }
    if body.get("helloOk").is_some_and(truthy) {
        d.insert("helloOk", true);
    }
    if legacy {
        d.insert("ismaster", writable);
    } else {
        d.insert("isWritablePrimary", writable);
    }
    d.extend(extra);
    d.insert("maxBsonObjectSize", 16 * 1024 * 1024);
    d.insert("maxMessageSizeBytes", 48_000_000);
    d.insert("maxWriteBatchSize", 100_000);
    d.insert("localTime", DateTime::now());
    d.insert("logicalSessionTimeoutMinutes", 30);
    d.insert("connectionId", conn_id);
    d.insert("minWireVersion", 0);
    d.insert("maxWireVersion", MAX_WIRE_VERSION);
    d.insert("readOnly", false);
    d.insert("microshardStandin", true);
    d.insert("ok", 1.0);
    d
}

fn read_statm_mb() -> (i64, i64) {
    let page = 4096i64;
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let mut it = s.split_whitespace().map(|x| x.parse::<i64>().unwrap_or(0));
    let virt = it.next().unwrap_or(0) * page / (1024 * 1024);
    let res = it.next().unwrap_or(0) * page / (1024 * 1024);
    (res, virt)
}

fn mem_total_mb() -> i64 {
    let s = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<i64>().ok())
        .map(|kb| kb / 1024)
        .unwrap_or(0)
}

fn mem_limit_mb() -> i64 {
    let total = mem_total_mb();
    let cg = std::fs::read_to_string("/sys/fs/cgroup/memory.max").unwrap_or_default();
    match cg.trim().parse::<i64>() {
        Ok(b) => (b / (1024 * 1024)).min(total),
        Err(_) => total,
    }
}

fn server_status(shared: &Shared) -> Document {
    let c = &shared.counters;
    let (res, virt) = read_statm_mb();
    let uptime = shared.started.elapsed();
    let mut d = doc! {
        "host": shared.me(),
        "version": STANDIN_VERSION,
        "process": match shared.cfg.role { Role::Mongod => "mongod", Role::Mongos => "mongos" },
        "pid": i64::from(std::process::id()),
        "uptime": uptime.as_secs_f64(),
        "uptimeMillis": uptime.as_millis() as i64,
        "uptimeEstimate": uptime.as_secs() as i64,
        "localTime": DateTime::now(),
        "connections": {
            "current": shared.current_conns.load(Ordering::Relaxed) as i32,
            "available": 838_860 - shared.current_conns.load(Ordering::Relaxed) as i32,
            "totalCreated": shared.total_conns.load(Ordering::Relaxed) as i32,
        },
        "opcounters": {
            "insert": c.insert.load(Ordering::Relaxed) as i64,
            "query": c.query.load(Ordering::Relaxed) as i64,
            "update": c.update.load(Ordering::Relaxed) as i64,
            "delete": c.delete.load(Ordering::Relaxed) as i64,
            "getmore": c.getmore.load(Ordering::Relaxed) as i64,
            "command": c.command.load(Ordering::Relaxed) as i64,
        },
        "mem": {"bits": 64, "resident": res, "virtual": virt, "supported": true},
    };
    if shared.cfg.role == Role::Mongod {
        let data: i64 = shared
            .store
            .lock()
            .map(|s| {
                s.dbs
                    .values()
                    .flat_map(|c| c.values())
                    .map(|c| c.data_bytes as i64)
                    .sum()
            })
            .unwrap_or(0);
        let max = match shared.cfg.wired_tiger_cache_gb {
            Some(gb) => (gb * 1024.0 * 1024.0 * 1024.0) as i64,
            None => ((mem_limit_mb() - 1024) * 1024 * 1024 / 2).max(256 * 1024 * 1024),
        };
        d.insert(
            "wiredTiger",
            doc! {
                "microshardStandin": true,
                "note": "stand-in: no WiredTiger; cache figures are derived from the in-memory data size",
                "cache": {
                    "maximum bytes configured": max,
                    "bytes currently in the cache": data.min(max),
                    "tracked dirty bytes in the cache": 0_i64,
                    "pages read into cache": 0_i64,
                    "pages written from cache": 0_i64,
                    "pages evicted by application threads": 0_i64,
                    "modified pages evicted": 0_i64,
                    "unmodified pages evicted": 0_i64,
                },
                "concurrentTransactions": {
                    "read": {"out": 0, "available": 128, "totalTickets": 128},
                    "write": {"out": 0, "available": 128, "totalTickets": 128},
                },
            },
        );
        if shared.cfg.repl_set.is_some() {
            d.insert("repl", super::repl::hello_fields(shared).1);
        }
    } else if let Some(c) = &shared.cfg.configdb {
        d.insert("sharding", doc! {"configsvrConnectionString": c.clone()});
    }
    let mut standin = doc! {"workers": shared.cfg.workers as i64, "serviceTimeUs": shared.cfg.service_time_us as i64};
    if let Some(ceil) = shared.cfg.ceiling_ops_per_sec() {
        standin.insert("ceilingOpsPerSec", ceil);
    }
    d.insert("standin", standin);
    d.insert("microshardStandin", true);
    d.insert("ok", 1.0);
    d
}

fn host_info(shared: &Shared) -> Document {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as i32)
        .unwrap_or(1);
    doc! {
        "system": {
            "currentTime": DateTime::now(),
            "hostname": shared.me(),
            "cpuAddrSize": 64,
            "memSizeMB": mem_total_mb(),
            "memLimitMB": mem_limit_mb(),
            "numCores": cores,
            "numPhysicalCores": cores,
            "cpuArch": std::env::consts::ARCH,
            "numaEnabled": false,
        },
        "os": {"type": "Linux", "name": "microshard stand-in host", "version": ""},
        "extra": {"microshardStandin": true},
        "ok": 1.0,
    }
}

fn cmd_line_opts(shared: &Shared) -> Document {
    let cfg = &shared.cfg;
    let mut parsed = Document::new();
    let mut net = doc! {"port": i32::from(shared.port)};
    if cfg.bind_ip_all {
        net.insert("bindIpAll", true);
    } else {
        net.insert("bindIp", cfg.bind_ips.join(","));
    }
    if let Some(p) = &cfg.unix_socket_prefix {
        net.insert(
            "unixDomainSocket",
            doc! {"pathPrefix": p.display().to_string()},
        );
    }
    parsed.insert("net", net);
    if cfg.role == Role::Mongod {
        let mut storage = Document::new();
        if let Some(p) = &cfg.dbpath {
            storage.insert("dbPath", p.display().to_string());
        }
        if let Some(gb) = cfg.wired_tiger_cache_gb {
            storage.insert("wiredTiger", doc! {"engineConfig": {"cacheSizeGB": gb}});
        }
        parsed.insert("storage", storage);
    }
    if let Some(rs) = &cfg.repl_set {
        parsed.insert("replication", doc! {"replSet": rs.clone()});
    }
    if cfg.configsvr {
        parsed.insert("sharding", doc! {"clusterRole": "configsvr"});
    } else if cfg.shardsvr {
        parsed.insert("sharding", doc! {"clusterRole": "shardsvr"});
    } else if let Some(c) = &cfg.configdb {
        parsed.insert("sharding", doc! {"configDB": c.clone()});
    }
    if let Some(p) = &cfg.logpath {
        parsed.insert(
            "systemLog",
            doc! {"destination": "file", "path": p.display().to_string(), "logAppend": cfg.logappend, "quiet": cfg.quiet},
        );
    }
    if !cfg.set_parameters.is_empty() {
        let mut sp = Document::new();
        for (k, v) in &cfg.set_parameters {
            sp.insert(k.clone(), v.clone());
        }
        parsed.insert("setParameter", sp);
    }
    doc! {"argv": cfg.argv.clone(), "parsed": parsed, "ok": 1.0}
}
