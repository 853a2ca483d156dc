//! The listener, the connections and the dispatch: binds, accepts, reads requests, answers the
//! commands every role answers (`common`) and hands the rest to `mongod` or `router`.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mongodb::bson::{Document, doc};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio_util::sync::CancellationToken;

use crate::capacity::Capacity;
use crate::cmderr::{CmdError, code};
use crate::common::{CommonOutcome, common_command};
use crate::config::StandinConfig;
use crate::repl::member::ReplState;
use crate::router::Router;
use crate::state::{Counters, LogSink, ServerState};
use crate::store::Store;
use crate::wire::{self, Request};
use crate::{Role, STANDIN_VERSION, StandinError, StandinHandle, mongod};

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
    log: LogSink,
    cmdlog: Option<Mutex<File>>,
}

/// Takes the `--dbpath` lock and opens `--logpath` and `--command-log` (before binding, as mongod does).
fn open_files(cfg: &StandinConfig) -> Result<Files, StandinError> {
    let lock = lock_dbpath(cfg)?;
    let log = match &cfg.logpath {
        Some(p) => LogSink::File(Mutex::new(open_append(p, cfg.logappend)?)),
        None if cfg.log_to_stdout => LogSink::Stdout,
        None => LogSink::Off,
    };
    let cmdlog = match &cfg.command_log {
        Some(p) => Some(Mutex::new(open_append(p, true)?)),
        None => None,
    };
    Ok(Files { lock, log, cmdlog })
}

/// Binds where `cfg` says, starts accepting and returns the handle (see [`super::spawn`]).
pub(crate) fn spawn(cfg: StandinConfig) -> Result<StandinHandle, StandinError> {
    let files = open_files(&cfg)?;
    let listeners = bind(&cfg)?;
    start(cfg, files, listeners)
}

/// Starts accepting on a listener the caller bound and returns the handle (see [`super::run`]).
pub(crate) fn spawn_on(
    cfg: StandinConfig,
    listener: tokio::net::TcpListener,
) -> Result<StandinHandle, StandinError> {
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

/// One stand-in as its connections see it: the shared state, the router when it is a mongos,
/// and the TLS acceptor when TLS is required.
struct Server {
    state: Arc<ServerState>,
    router: Option<Arc<Router>>,
    tls: Option<tokio_rustls::TlsAcceptor>,
}

/// The shared state of a server listening on `port`, over the files it opened.
fn new_state(cfg: StandinConfig, port: u16, files: Files) -> ServerState {
    let capacity =
        (cfg.service_time_us > 0).then(|| Capacity::new(cfg.service_time_us, cfg.workers));
    ServerState {
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
        log: files.log,
        hostname: hostname(),
        instance_id: mongodb::bson::oid::ObjectId::new(),
        users: crate::auth::Users::new(&cfg.auth_users),
        peer: crate::peer::Peer::from_config(&cfg),
        _dbpath_lock: files.lock,
        cfg,
    }
}

/// Builds the shared state on open files and bound listeners, and spawns the accept loops.
fn start(
    cfg: StandinConfig,
    files: Files,
    listeners: Vec<tokio::net::TcpListener>,
) -> Result<StandinHandle, StandinError> {
    let first_addr = listeners
        .first()
        .and_then(|l| l.local_addr().ok())
        .ok_or_else(|| StandinError::Io("no listening address".into()))?;
    let port = first_addr.port();
    let tls = cfg.tls.as_ref().map(crate::tls::acceptor).transpose()?;
    let router = match cfg.role {
        Role::Mongos => Some(Arc::new(Router::new(&cfg)?)),
        Role::Mongod => None,
    };
    let shared = Arc::new(new_state(cfg, port, files));
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
    if let Some(r) = &router {
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
        doc! {"port": i64::from(port), "ssl": if tls.is_some() { "on" } else { "off" }},
    );
    let unix = bind_unix(&shared)?;
    let server = Arc::new(Server {
        state: shared.clone(),
        router,
        tls,
    });
    let task = tokio::spawn(serve(server, listeners, unix));
    Ok(StandinHandle {
        addr: first_addr,
        shared,
        task,
    })
}

/// Like mongod, also listens on `<unixSocketPrefix>/mongodb-<port>.sock` (only when a prefix is
/// given, so stand-ins never litter /tmp).
fn bind_unix(
    shared: &ServerState,
) -> Result<Option<(tokio::net::UnixListener, PathBuf)>, StandinError> {
    let no_socket = shared.cfg.argv.iter().any(|a| a == "--nounixsocket");
    let (Some(prefix), false) = (&shared.cfg.unix_socket_prefix, no_socket) else {
        return Ok(None);
    };
    let path = prefix.join(format!("mongodb-{}.sock", shared.port));
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
    Ok(Some((l, path)))
}

/// Accepts on every listener until shutdown, then closes connections, removes the Unix socket
/// and empties the lock file.
async fn serve(
    server: Arc<Server>,
    listeners: Vec<tokio::net::TcpListener>,
    unix: Option<(tokio::net::UnixListener, PathBuf)>,
) {
    let s2 = server.state.clone();
    let mut accepts = Vec::new();
    for l in listeners {
        accepts.push(tokio::spawn(accept_loop(server.clone(), l)));
    }
    let unix_path = match unix {
        Some((l, path)) => {
            accepts.push(tokio::spawn(accept_unix(server.clone(), l)));
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
}

/// Serves one connection in its own task, counted in `serverStatus.connections`.
fn spawn_conn<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    server: &Arc<Server>,
    stream: S,
    id: i64,
) {
    let s = server.clone();
    tokio::spawn(async move {
        s.state.current_conns.fetch_add(1, Ordering::Relaxed);
        s.state.total_conns.fetch_add(1, Ordering::Relaxed);
        serve_conn(&s, stream, id).await;
        s.state.current_conns.fetch_sub(1, Ordering::Relaxed);
    });
}

async fn accept_loop(server: Arc<Server>, listener: tokio::net::TcpListener) {
    let shared = &server.state;
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            res = listener.accept() => {
                let Ok((stream, peer)) = res else { continue };
                let _ = stream.set_nodelay(true);
                let id = shared.next_conn_id.fetch_add(1, Ordering::Relaxed);
                if !shared.cfg.quiet {
                    shared.log("NETWORK", 22943, "Connection accepted", doc! {"remote": peer.to_string(), "connectionId": id});
                }
                match &server.tls {
                    Some(acceptor) => spawn_tls_conn(&server, acceptor.clone(), stream, id),
                    None => spawn_conn(&server, stream, id),
                }
            }
        }
    }
}

/// How long a client has to complete its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Completes the TLS handshake in a task of its own (so a slow or plaintext client holds up no
/// other), then serves the connection; a failed handshake closes it, logged as mongod logs it.
fn spawn_tls_conn(
    server: &Arc<Server>,
    acceptor: tokio_rustls::TlsAcceptor,
    stream: tokio::net::TcpStream,
    id: i64,
) {
    let s = server.clone();
    tokio::spawn(async move {
        let handshake = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream));
        let error = match handshake.await {
            Ok(Ok(tls)) => return spawn_conn(&s, tls, id),
            Ok(Err(e)) => format!("SSLHandshakeFailed: {e}"),
            Err(_) => "SSLHandshakeFailed: no handshake in time".to_string(),
        };
        s.state.log(
            "NETWORK",
            22988,
            "Error receiving request from client. Ending connection from remote",
            doc! {"error": error, "connectionId": id},
        );
    });
}

async fn accept_unix(server: Arc<Server>, listener: tokio::net::UnixListener) {
    let shared = &server.state;
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            res = listener.accept() => {
                let Ok((stream, _)) = res else { continue };
                let id = shared.next_conn_id.fetch_add(1, Ordering::Relaxed);
                spawn_conn(&server, stream, id);
            }
        }
    }
}

/// Reads requests and writes replies until the client leaves or the server shuts down.
async fn serve_conn<S: AsyncRead + AsyncWrite + Unpin>(server: &Server, stream: S, conn_id: i64) {
    let shared = &server.state;
    let (r, mut w) = tokio::io::split(stream);
    let mut r = BufReader::with_capacity(64 * 1024, r);
    let mut reply_id: i32 = 1;
    let mut auth = crate::auth::ConnAuth::default();
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
        let out = dispatch(server, &req, conn_id, &mut auth).await;
        let doc = match out {
            CommonOutcome::Reply(d) => d,
            CommonOutcome::Shutdown => {
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

/// Answers one request: a common command here, the rest by the role. `shutdown` closes the
/// connection without a reply.
async fn dispatch(
    server: &Server,
    req: &Request,
    conn_id: i64,
    auth: &mut crate::auth::ConnAuth,
) -> CommonOutcome {
    let shared = &server.state;
    let body = &req.body;
    let Some(name) = body.keys().next().cloned() else {
        return CommonOutcome::Reply(
            CmdError::new(code::FAILED_TO_PARSE, "Empty command object").to_doc(),
        );
    };
    let db = body
        .get_str("$db")
        .ok()
        .map(str::to_string)
        .or_else(|| req.query_db.clone())
        .unwrap_or_else(|| "admin".to_string());
    shared.log_command(&name, &db, body);
    if shared.shutdown.is_cancelled() {
        return CommonOutcome::Reply(
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
    if let Some(answer) = auth.command(&shared.users, &name, &db, body) {
        return CommonOutcome::Reply(with_ok(answer));
    }
    if let Err(e) = auth.check(&shared.users, &name) {
        return CommonOutcome::Reply(e.to_doc());
    }
    let result = match common_command(shared, &name, &db, body, conn_id).await {
        Some(Ok(CommonOutcome::Reply(d))) => Ok(d),
        Some(Ok(CommonOutcome::Shutdown)) => return CommonOutcome::Shutdown,
        Some(Err(e)) => Err(e),
        None => match shared.cfg.role {
            Role::Mongod => mongod::command(shared, &name, &db, body).await,
            Role::Mongos => match &server.router {
                Some(r) => r.command(shared, &name, &db, body).await,
                None => Err(CmdError::new(
                    code::INTERNAL_ERROR,
                    "router not initialised",
                )),
            },
        },
    };
    CommonOutcome::Reply(with_ok(result))
}

/// The reply to send for a command's result: its error, or its document with `ok: 1`.
fn with_ok(result: Result<Document, CmdError>) -> Document {
    let mut d = match result {
        Ok(d) => d,
        Err(e) => e.to_doc(),
    };
    if !d.contains_key("ok") {
        d.insert("ok", 1.0);
    }
    d
}
