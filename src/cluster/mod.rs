//! Replica-set and sharding administration shared by every backend.
//!
//! The backends start processes or containers; everything said to the servers — readiness,
//! `replSetInitiate`, waiting for a primary, `addShard`, `shardCollection`, the chunk check, the
//! balancer and `shutdown` — lives here, so the three backends behave identically. The server
//! metrics experiments sample live in `experiment::metrics`.

mod assemble;
mod exited;
mod sharding;

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use mongodb::bson::{Bson, Document, doc};
use mongodb::error::ErrorKind;
use mongodb::options::{ClientOptions, WriteConcern};

use crate::topology::Member;

pub(crate) use assemble::assemble;
pub(crate) use sharding::{
    balancer_mode, balancer_stop, chunks_per_shard_of, flush_router_config, shard_table,
    shard_table_on_every_shard,
};

/// The benchmark database and collection every topology is prepared for.
pub const YCSB_DB: &str = "ycsb";
/// `ycsb.usertable`, sharded on `{_id: "hashed"}`.
pub(crate) const YCSB_NS: &str = "ycsb.usertable";
/// YCSB's default `table`.
pub const YCSB_TABLE: &str = "usertable";

/// `ycsb.<table>` for a scenario's `table` property; refuses names MongoDB refuses as collection
/// names, so a bad `table` fails here with its name rather than deep inside `shardCollection`.
pub(crate) fn ycsb_namespace(table: &str) -> Result<String, ClusterError> {
    if table.is_empty()
        || table.contains(['$', '\0'])
        || table.starts_with("system.")
        || table.starts_with('.')
        || table.len() > 200
    {
        return Err(ClusterError::Check(format!(
            "table {table:?} is not a valid MongoDB collection name"
        )));
    }
    Ok(format!("{YCSB_DB}.{table}"))
}

/// Why an admin step failed; every message names the member or host.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A bounded wait ran out.
    #[error("{what} on {host} did not happen within {secs} s{detail}")]
    Timeout {
        /// What we waited for.
        what: String,
        /// The member or host.
        host: String,
        /// The bound.
        secs: u64,
        /// The last error seen, prefixed with ": ", or empty.
        detail: String,
    },
    /// The server answered with an error.
    #[error("{command} on {host} failed: {message}")]
    Command {
        /// Command name.
        command: String,
        /// The member or host.
        host: String,
        /// Server error code, when there is one.
        code: Option<i32>,
        /// The server's message.
        message: String,
    },
    /// The process or container went away.
    #[error("{member} exited during start-up: {line} (its log: {log})")]
    Exited {
        /// The member.
        member: String,
        /// The log line that says why ([`exited::reason`]).
        line: String,
        /// Where its log is.
        log: String,
        /// A flag of the user's that the server refused, when that is the reason.
        user_flag: Option<String>,
    },
    /// A check after a step found the cluster not as it must be.
    #[error("{0}")]
    Check(String),
    /// The backend could not start a member ([`Launcher::start`]); its own error, as it said it.
    #[error(transparent)]
    Start(LaunchError),
    /// `replSetInitiate` was refused; `hint` says what to check (empty when there is nothing to add).
    #[error("{error}{hint}")]
    Initiate {
        /// The refusal.
        error: Box<ClusterError>,
        /// What to add ([`assemble::initiate_hint`]).
        hint: &'static str,
    },
}

/// A backend's own error for a member it could not start (its type is the backend's, which
/// `cluster` does not know).
pub(crate) type LaunchError = Box<dyn std::error::Error + Send + Sync>;

impl ClusterError {
    /// True when the user's input is wrong: a member refused a flag the user gave (`mongod_args`,
    /// `--mongod-arg`). A member's start failure ([`ClusterError::Start`]) is its backend's to say.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ClusterError::Exited { user_flag, .. } => user_flag.is_some(),
            ClusterError::Initiate { error, .. } => error.is_bad_input(),
            _ => false,
        }
    }

    fn command(command: &str, host: &str, err: &mongodb::error::Error) -> ClusterError {
        ClusterError::Command {
            command: command.to_string(),
            host: host.to_string(),
            code: error_code(err),
            message: one_line(&err.to_string()),
        }
    }
}

fn one_line(s: &str) -> String {
    crate::redact::redact_text(&s.replace('\n', " "))
}

/// The server's error code, when the error is a command error.
pub(crate) fn error_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(mongodb::error::WriteFailure::WriteConcernError(w)) => Some(w.code),
        _ => None,
    }
}

fn is_network_like(err: &mongodb::error::Error) -> bool {
    matches!(
        err.kind.as_ref(),
        ErrorKind::Io(_)
            | ErrorKind::ServerSelection { .. }
            | ErrorKind::ConnectionPoolCleared { .. }
    ) || err.contains_label("RetryableWriteError")
}

/// A direct-connection URI for one member (`directConnection=true`: no discovery).
pub(crate) fn direct_uri(host_port: &str) -> String {
    format!("mongodb://{host_port}/?directConnection=true")
}

/// Connects directly to one `host:port` with short, bounded timeouts.
pub async fn connect_direct(host_port: &str) -> Result<mongodb::Client, ClusterError> {
    connect_uri(&direct_uri(host_port), host_port).await
}

async fn connect_uri(uri: &str, label: &str) -> Result<mongodb::Client, ClusterError> {
    let mut opts = ClientOptions::parse(uri)
        .await
        .map_err(|e| ClusterError::command("connect", label, &e))?;
    opts.server_selection_timeout = Some(Duration::from_secs(2));
    opts.connect_timeout = Some(Duration::from_secs(2));
    opts.app_name = Some("microshard-admin".into());
    opts.max_pool_size = Some(2);
    mongodb::Client::with_options(opts).map_err(|e| ClusterError::command("connect", label, &e))
}

async fn run(
    client: &mongodb::Client,
    host: &str,
    cmd: Document,
) -> Result<Document, ClusterError> {
    let name = cmd.keys().next().cloned().unwrap_or_default();
    client
        .database("admin")
        .run_command(cmd)
        .await
        .map_err(|e| ClusterError::command(&name, host, &e))
}

/// What a backend provides so the shared sequence can start members and watch them.
pub(crate) trait Launcher: Send + Sync {
    /// Starts `member` (process or container); returns once it was started, not once it answers.
    fn start<'a>(&'a self, member: &'a Member) -> BoxFuture<'a, Result<(), LaunchError>>;
    /// `Some(last log lines)` once the member has exited, `None` while it runs.
    fn exited<'a>(&'a self, member: &'a Member) -> BoxFuture<'a, Option<String>>;
    /// The `host:port` microshard uses to reach the member directly.
    fn admin_address(&self, member: &Member) -> String;
    /// Where the member's log is read, for an error saying it exited.
    fn log_location(&self, member: &Member) -> String {
        exited::log_location(member)
    }
}

/// Bounds of the assembly sequence.
#[derive(Debug, Clone)]
pub struct AssemblyOptions {
    /// Per member: first successful `ping` (bounded: a member that never answers fails the bring-up).
    pub ready_timeout: Duration,
    /// Per replica set: a writable primary after `replSetInitiate`.
    pub primary_timeout: Duration,
    /// Per shard: `addShard` retries on 133 / network errors.
    pub add_shard_timeout: Duration,
}

impl Default for AssemblyOptions {
    fn default() -> Self {
        AssemblyOptions {
            ready_timeout: Duration::from_secs(90),
            primary_timeout: Duration::from_secs(90),
            add_shard_timeout: Duration::from_secs(90),
        }
    }
}

/// What the assembly learned about each server.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct ServerInfo {
    /// `buildInfo.version`.
    pub version: String,
    /// `buildInfo.microshardStandin` or `hello.microshardStandin`: numbers measured against it are not MongoDB numbers.
    pub standin: bool,
}

/// Asks `buildInfo` (and `hello`) of one server.
pub(crate) async fn server_info(uri_or_host: &str) -> Result<ServerInfo, ClusterError> {
    let (client, host_port) = client_for(uri_or_host).await?;
    let host_port = host_port.as_str();
    let info = run(&client, host_port, doc! {"buildInfo": 1}).await?;
    let version = info.get_str("version").unwrap_or("unknown").to_string();
    let mut standin = info.get_bool("microshardStandin").unwrap_or(false);
    if !standin && let Ok(h) = hello_on(&client, host_port).await {
        standin = h.get_bool("microshardStandin").unwrap_or(false);
    }
    Ok(ServerInfo { version, standin })
}

async fn hello_on(client: &mongodb::Client, host: &str) -> Result<Document, ClusterError> {
    match run(client, host, doc! {"hello": 1}).await {
        Err(ClusterError::Command { code: Some(59), .. }) => {
            // Before 4.4.2: legacy isMaster.
            let mut d = run(client, host, doc! {"isMaster": 1}).await?;
            if let Ok(p) = d.get_bool("ismaster") {
                d.insert("isWritablePrimary", p);
            }
            Ok(d)
        }
        other => other,
    }
}

/// A running server's role, from `hello`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetectedRole {
    /// `msg: "isdbgrid"`.
    Mongos,
    /// Replica-set member that accepts writes.
    Primary {
        /// `setName`.
        set: String,
    },
    /// Replica-set member that does not accept writes.
    Secondary {
        /// `setName`.
        set: String,
    },
    /// Started with `--replSet` but never initiated.
    Uninitiated,
    /// A plain mongod.
    Standalone,
}

/// Classifies a server by its `hello` answer.
pub async fn detect_role(uri_or_host: &str) -> Result<(DetectedRole, Document), ClusterError> {
    let (client, label) = client_for(uri_or_host).await?;
    let h = hello_on(&client, &label).await?;
    Ok((classify(&h), h))
}

fn classify(h: &Document) -> DetectedRole {
    if h.get_str("msg").ok() == Some("isdbgrid") {
        return DetectedRole::Mongos;
    }
    if let Ok(set) = h.get_str("setName") {
        return if h.get_bool("isWritablePrimary").unwrap_or(false) {
            DetectedRole::Primary { set: set.into() }
        } else {
            DetectedRole::Secondary { set: set.into() }
        };
    }
    if h.get_bool("isreplicaset").unwrap_or(false) {
        return DetectedRole::Uninitiated;
    }
    DetectedRole::Standalone
}

/// A client for a full URI (`mongodb://...`) or a bare `host:port` (direct connection).
async fn client_for(uri_or_host: &str) -> Result<(mongodb::Client, String), ClusterError> {
    if uri_or_host.starts_with("mongodb://") || uri_or_host.starts_with("mongodb+srv://") {
        let label = crate::redact::redact_uri(uri_or_host);
        Ok((connect_uri(uri_or_host, &label).await?, label))
    } else {
        Ok((connect_direct(uri_or_host).await?, uri_or_host.to_string()))
    }
}

/// The pause between two polls of a member: short at first (a local member is often ready within
/// milliseconds, and `up` waits on every member in turn), doubling up to `max` so that a slow real
/// server is not polled harder than before.
struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(10);

    fn up_to(max: Duration) -> Self {
        Backoff {
            next: Self::FIRST.min(max),
            max,
        }
    }

    /// The pause to take now; the next one is twice as long, up to `max`.
    fn step(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(self.max);
        now
    }

    async fn pause(&mut self) {
        tokio::time::sleep(self.step()).await;
    }
}

/// Waiting on one member: gives up with the member's log tail as soon as it exits, or with a
/// timeout naming what was awaited and the last answer; pauses with [`Backoff`] in between.
struct MemberWait<'a> {
    launcher: &'a dyn Launcher,
    member: &'a Member,
    host: String,
    start: Instant,
    timeout: Duration,
    backoff: Backoff,
}

impl<'a> MemberWait<'a> {
    fn new(launcher: &'a dyn Launcher, member: &'a Member, timeout: Duration) -> Self {
        MemberWait {
            launcher,
            member,
            host: launcher.admin_address(member),
            start: Instant::now(),
            timeout,
            backoff: Backoff::up_to(Duration::from_millis(250)),
        }
    }

    fn out_of_time(&self) -> bool {
        self.start.elapsed() >= self.timeout
    }

    /// Before the next poll: an error if the member exited or `what` did not happen in time.
    async fn pause_or_give_up(&mut self, what: &str, last: &str) -> Result<(), ClusterError> {
        alive(self.launcher, self.member).await?;
        if self.out_of_time() {
            return Err(ClusterError::Timeout {
                what: what.to_string(),
                host: format!("{} ({})", self.member.name, self.host),
                secs: self.timeout.as_secs(),
                detail: format!(": {last}"),
            });
        }
        self.backoff.pause().await;
        Ok(())
    }
}

/// `Exited` (with the log tail) when `member`'s process or container is gone.
async fn alive(launcher: &dyn Launcher, member: &Member) -> Result<(), ClusterError> {
    let Some(tail) = launcher.exited(member).await else {
        return Ok(());
    };
    let why = exited::reason(&tail);
    Err(ClusterError::Exited {
        member: format!("{} ({})", member.name, launcher.admin_address(member)),
        line: why.line,
        log: launcher.log_location(member),
        user_flag: why.user_flag,
    })
}

/// Polls `{ping: 1}` until the member answers, it exits (→ its log tail) or `timeout` passes.
pub(crate) async fn wait_ready(
    launcher: &dyn Launcher,
    member: &Member,
    timeout: Duration,
) -> Result<(), ClusterError> {
    let mut wait = MemberWait::new(launcher, member, timeout);
    // Wait for the port first: when the driver's first check of a server is refused, it waits its
    // minimum heartbeat interval (500 ms) before the next one, which costs half a second for a
    // member that was listening a few milliseconds after that first check.
    while tokio::net::TcpStream::connect(wait.host.as_str())
        .await
        .is_err()
        && !wait.out_of_time()
    {
        alive(launcher, member).await?;
        wait.backoff.pause().await;
    }
    // On time-out the driver's ping below says what is wrong.
    let host = wait.host.clone();
    let client = connect_direct(&host).await?;
    loop {
        let last = match run(&client, &host, doc! {"ping": 1}).await {
            Ok(_) => return Ok(()),
            Err(e) => e.to_string(),
        };
        wait.pause_or_give_up("first answer to ping", &last).await?;
    }
}

/// `replSetInitiate` with an explicit config (`configsvr: true` for the config set); an already
/// initiated set (code 23) is fine.
pub async fn initiate(
    host: &str,
    set: &str,
    member_hosts: &[String],
    configsvr: bool,
) -> Result<(), ClusterError> {
    let client = connect_direct(host).await?;
    let cmd = initiate_command(set, member_hosts, configsvr);
    match run(&client, host, cmd).await {
        Ok(_) | Err(ClusterError::Command { code: Some(23), .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The `replSetInitiate` document for a set.
pub(crate) fn initiate_command(set: &str, member_hosts: &[String], configsvr: bool) -> Document {
    let members: Vec<Bson> = member_hosts
        .iter()
        .enumerate()
        .map(|(i, h)| Bson::Document(doc! {"_id": i as i32, "host": h}))
        .collect();
    let mut config = doc! {"_id": set, "version": 1};
    if configsvr {
        config.insert("configsvr", true);
    }
    config.insert("members", members);
    doc! {"replSetInitiate": config}
}

/// Polls `hello` on every member of `set` until one of them is its writable primary, and returns
/// that member's name. Only a one-member set elects itself at once; in a larger set the first
/// election takes a few seconds and any member may win it (docs/mongodb-versions.md, "Replica
/// sets"), so waiting on member 0 alone could wait for ever. On time-out the error carries each
/// member's last `hello` and the set's `replSetGetStatus` (member states), or why it failed.
pub(crate) async fn wait_primary(
    launcher: &dyn Launcher,
    members: &[&Member],
    set: &str,
    timeout: Duration,
) -> Result<String, ClusterError> {
    let Some(first) = members.first() else {
        return Err(ClusterError::Check(format!(
            "replica set {set} has no members"
        )));
    };
    let mut wait = MemberWait::new(launcher, first, timeout);
    let mut clients = Vec::with_capacity(members.len());
    for m in members {
        let host = launcher.admin_address(m);
        clients.push((*m, connect_direct(&host).await?, host));
    }
    let what = format!("a writable primary for replica set {set}");
    loop {
        let mut last = Vec::new();
        for (m, client, host) in &clients {
            let answer = match hello_on(client, host).await {
                Ok(h) => {
                    let primary = h.get_bool("isWritablePrimary").unwrap_or(false);
                    let name = h.get_str("setName").ok();
                    if primary && name == Some(set) {
                        return Ok(m.name.clone());
                    }
                    format!(
                        "isWritablePrimary={primary}, setName={}, primary={}",
                        name.unwrap_or("(none)"),
                        h.get_str("primary").unwrap_or("(none)")
                    )
                }
                Err(e) => e.to_string(),
            };
            last.push(format!("{}: {answer}", m.name));
        }
        for (m, _, _) in &clients[1..] {
            alive(launcher, m).await?;
        }
        if wait.out_of_time() {
            let (_, client, host) = &clients[0];
            last.push(format!(
                "replSetGetStatus: {}",
                repl_status_summary(client, host).await
            ));
        }
        wait.pause_or_give_up(&what, &last.join("; ")).await?;
    }
}

/// `replSetGetStatus` in one line: `set`, then `name=STATE` per member (or the error).
async fn repl_status_summary(client: &mongodb::Client, host: &str) -> String {
    match run(client, host, doc! {"replSetGetStatus": 1}).await {
        Ok(d) => summarize_repl_status(&d),
        Err(e) => e.to_string(),
    }
}

/// The one-line form of a `replSetGetStatus` answer used in time-out errors.
pub(crate) fn summarize_repl_status(d: &Document) -> String {
    let members: Vec<String> = d
        .get_array("members")
        .map(|a| {
            a.iter()
                .filter_map(|m| m.as_document())
                .map(|m| {
                    format!(
                        "{}={}",
                        m.get_str("name").unwrap_or("?"),
                        m.get_str("stateStr").unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    format!(
        "set {} [{}]",
        d.get_str("set").unwrap_or("?"),
        members.join(", ")
    )
}

/// `addShard`, retried while the shard has no primary yet (133) or the network blips.
pub async fn add_shard(
    mongos: &str,
    connection: &str,
    name: &str,
    timeout: Duration,
) -> Result<(), ClusterError> {
    let client = connect_direct(mongos).await?;
    let start = Instant::now();
    let mut backoff = Backoff::up_to(Duration::from_millis(500));
    loop {
        let cmd = doc! {"addShard": connection, "name": name};
        let Err(err) = client.database("admin").run_command(cmd).await else {
            return Ok(());
        };
        let retry = matches!(error_code(&err), Some(133 | 202 | 6 | 7)) || is_network_like(&err);
        if !retry {
            return Err(ClusterError::command("addShard", mongos, &err));
        }
        if start.elapsed() >= timeout {
            return Err(ClusterError::Timeout {
                what: format!("addShard {connection}"),
                host: mongos.to_string(),
                secs: timeout.as_secs(),
                detail: format!(": {}", one_line(&err.to_string())),
            });
        }
        backoff.pause().await;
    }
}

/// On a cluster microshard did not start, checks with `connectionStatus {showPrivileges: true}`
/// that the user may do everything the existing backend will do, before it drops anything: a
/// user with only `dbOwner` on `ycsb` would otherwise lose `ycsb` and then fail at `enableSharding`.
pub(crate) async fn check_privileges(uri_or_host: &str, sharded: bool) -> Result<(), ClusterError> {
    let (client, label) = client_for(uri_or_host).await?;
    let status = run(
        &client,
        &label,
        doc! {"connectionStatus": 1, "showPrivileges": true},
    )
    .await?;
    let missing = missing_privileges(&status, sharded);
    if missing.is_empty() {
        return Ok(());
    }
    Err(ClusterError::Check(format!(
        "the user of {label} lacks {} (grant e.g. the dbOwner@ycsb and clusterManager roles); nothing was dropped",
        missing.join(", ")
    )))
}

/// The privileges (`action on resource`) a `connectionStatus` answer does not grant; empty when
/// no user is authenticated (access control off: everything is allowed).
pub(crate) fn missing_privileges(status: &Document, sharded: bool) -> Vec<String> {
    let info = status.get_document("authInfo").ok();
    let users = info
        .and_then(|i| i.get_array("authenticatedUsers").ok())
        .map(|u| u.len())
        .unwrap_or(0);
    if users == 0 {
        return Vec::new();
    }
    let privileges: Vec<&Document> = info
        .and_then(|i| i.get_array("authenticatedUserPrivileges").ok())
        .map(|a| a.iter().filter_map(|p| p.as_document()).collect())
        .unwrap_or_default();
    let grants = |action: &str, db: &str, coll: &str| {
        privileges.iter().any(|p| {
            let acts = p
                .get_array("actions")
                .map(|a| {
                    a.iter()
                        .any(|x| x.as_str() == Some(action) || x.as_str() == Some("anyAction"))
                })
                .unwrap_or(false);
            let Ok(r) = p.get_document("resource") else {
                return false;
            };
            let on = r.get_bool("anyResource").unwrap_or(false)
                || (db == "cluster" && r.get_bool("cluster").unwrap_or(false))
                || (db != "cluster"
                    // `db: ""` is "any normal resource", which leaves out `config` and `local`.
                    && matches!(r.get_str("db"), Ok(d) if d == db || (d.is_empty() && db != "config" && db != "local"))
                    && matches!(r.get_str("collection"), Ok(c) if c == coll || c.is_empty()));
            acts && on
        })
    };
    let mut needed = vec![("dropDatabase", YCSB_DB, "")];
    if sharded {
        needed.push(("enableSharding", YCSB_DB, ""));
        needed.push(("find", "config", "chunks"));
        needed.push(("find", "config", "collections"));
    }
    needed
        .into_iter()
        .filter(|(a, db, coll)| !grants(a, db, coll))
        .map(|(a, db, coll)| {
            if coll.is_empty() {
                format!("{a} on {db}")
            } else {
                format!("{a} on {db}.{coll}")
            }
        })
        .collect()
}

/// The cluster-wide default write concern in force (`getDefaultRWConcern`, 4.4+), with
/// `defaultWriteConcernSource` (`implicit` or `global`). From 5.0 the
/// implicit default is `w: "majority"` where it was `w: 1` on 4.4, so an experiment records it
/// next to the write concern its client asked for (docs/mongodb-versions.md, "Write concern").
pub async fn default_write_concern(uri_or_host: &str) -> Result<DefaultWriteConcern, ClusterError> {
    let (client, label) = client_for(uri_or_host).await?;
    let d = run(&client, &label, doc! {"getDefaultRWConcern": 1}).await?;
    DefaultWriteConcern::from_reply(&d)
        .map_err(|e| ClusterError::Check(format!("getDefaultRWConcern on {label}: {e}")))
}

/// The cluster-wide default write concern, as `getDefaultRWConcern` reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DefaultWriteConcern {
    /// `defaultWriteConcern`: its `w`, `wtimeout` and `j`, each `None` when the server sets none.
    pub write_concern: WriteConcern,
    /// `defaultWriteConcernSource`: `implicit` (the server's built-in default) or `global` (set
    /// with `setDefaultRWConcern`); `None` when the server does not say (before 5.0).
    pub source: Option<String>,
}

impl DefaultWriteConcern {
    /// Reads a `getDefaultRWConcern` reply; an absent `defaultWriteConcern` is the empty one.
    fn from_reply(reply: &Document) -> Result<DefaultWriteConcern, String> {
        let write_concern = match reply.get_document("defaultWriteConcern") {
            Ok(wc) => mongodb::bson::from_document(wc.clone())
                .map_err(|e| format!("unreadable defaultWriteConcern {wc}: {e}"))?,
            Err(_) => WriteConcern::default(),
        };
        Ok(DefaultWriteConcern {
            write_concern,
            source: reply
                .get_str("defaultWriteConcernSource")
                .ok()
                .map(str::to_string),
        })
    }
}

/// Drops the benchmark database (the only thing done to clusters microshard did not start).
pub(crate) async fn drop_ycsb(uri_or_host: &str) -> Result<(), ClusterError> {
    let (client, label) = client_for(uri_or_host).await?;
    client
        .database(YCSB_DB)
        .drop()
        .await
        .map_err(|e| ClusterError::command("dropDatabase", &label, &e))
}

/// `{shutdown: 1, force: true}`; a dropped connection is success.
pub(crate) async fn shutdown(host: &str) -> Result<(), ClusterError> {
    let client = connect_direct(host).await?;
    let outcome = client
        .database("admin")
        .run_command(doc! {"shutdown": 1, "force": true})
        .await;
    let result = match outcome {
        Ok(_) => Ok(()),
        Err(e) if is_network_like(&e) => Ok(()),
        Err(e) if matches!(error_code(&e), Some(11600) | Some(91)) => Ok(()),
        Err(e) => Err(ClusterError::command("shutdown", host, &e)),
    };
    client.shutdown().immediate(true).await;
    result
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::events::Event;

    use super::assemble::initiate_hint;
    use super::sharding::*;
    use super::*;

    /// Starts each member as an in-process stand-in and reaches it at the stand-in's port.
    struct StandinLauncher {
        dir: tempfile::TempDir,
        running: std::sync::Mutex<BTreeMap<String, crate::standin::StandinHandle>>,
    }

    impl Launcher for StandinLauncher {
        fn start<'a>(&'a self, member: &'a Member) -> BoxFuture<'a, Result<(), LaunchError>> {
            Box::pin(async move {
                let mut cfg = crate::standin::StandinConfig::new(crate::standin::Role::Mongod);
                cfg.dbpath = Some(self.dir.path().to_path_buf());
                cfg.quiet = true;
                let handle = crate::standin::spawn(cfg)?;
                if let Ok(mut running) = self.running.lock() {
                    running.insert(member.name.clone(), handle);
                }
                Ok(())
            })
        }

        fn exited<'a>(&'a self, _: &'a Member) -> BoxFuture<'a, Option<String>> {
            Box::pin(async { None })
        }

        fn admin_address(&self, member: &Member) -> String {
            let running = self.running.lock().expect("lock");
            format!("127.0.0.1:{}", running[&member.name].port())
        }
    }

    /// A standalone's bring-up says its one step as an event, and nothing reaches a terminal.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bring_up_says_its_steps_as_events() {
        let spec = crate::topology::TopologySpec::parse(
            "name = \"one\"\nkind = \"standalone\"\nbaseline = \"standalone\"\n",
            std::path::Path::new("one.toml"),
        )
        .expect("spec");
        let opts = crate::topology::PlanOptions::new(&spec, crate::topology::BackendKind::Docker);
        let plan = crate::backend::plan(&spec, &opts).expect("plan");
        let launcher = StandinLauncher {
            dir: tempfile::tempdir().expect("tempdir"),
            running: std::sync::Mutex::default(),
        };
        let recorder = crate::events::Recorder::default();
        let assembly = assemble(&plan, &launcher, &AssemblyOptions::default(), &recorder)
            .await
            .expect("assembled");
        assert!(assembly.servers.values().all(|s| s.standin));
        let member = &plan.members[0];
        assert_eq!(
            recorder.events(),
            vec![Event::BringUp(format!(
                "starting {} ({})",
                member.name, member.role
            ))]
        );
        let running = std::mem::take(&mut *launcher.running.lock().expect("lock"));
        for (_, handle) in running {
            handle.shutdown().await;
        }
    }

    #[test]
    fn backoff_starts_short_doubles_and_stops_at_its_cap() {
        let mut b = Backoff::up_to(Duration::from_millis(250));
        let steps: Vec<u128> = (0..8).map(|_| b.step().as_millis()).collect();
        assert_eq!(steps, [10, 20, 40, 80, 160, 250, 250, 250]);
        let mut tiny = Backoff::up_to(Duration::from_millis(4));
        assert_eq!(tiny.step(), Duration::from_millis(4));
    }

    #[test]
    fn initiate_document_shapes() {
        let d = initiate_command("cfg", &["localhost:27020".into()], true);
        let c = d.get_document("replSetInitiate").unwrap();
        assert_eq!(c.get_str("_id").unwrap(), "cfg");
        assert_eq!(c.get_i32("version").unwrap(), 1);
        assert!(c.get_bool("configsvr").unwrap());
        let m = c.get_array("members").unwrap()[0].as_document().unwrap();
        assert_eq!(m.get_i32("_id").unwrap(), 0);
        assert_eq!(m.get_str("host").unwrap(), "localhost:27020");
        let d = initiate_command("sh0", &["localhost:27018".into()], false);
        assert!(
            d.get_document("replSetInitiate")
                .unwrap()
                .get("configsvr")
                .is_none()
        );
    }

    #[test]
    fn num_initial_chunks_only_where_honoured() {
        let d = shard_namespace_command(YCSB_NS, "7.0.12", Some(8));
        assert_eq!(d.get_i64("numInitialChunks").unwrap(), 8);
        assert_eq!(
            d.get_document("key").unwrap().get_str("_id").unwrap(),
            "hashed"
        );
        assert!(
            shard_namespace_command(YCSB_NS, "7.2.0", Some(8))
                .get("numInitialChunks")
                .is_none()
        );
        assert!(
            shard_namespace_command(YCSB_NS, "8.0.4", Some(8))
                .get("numInitialChunks")
                .is_none()
        );
        assert!(
            shard_namespace_command(YCSB_NS, "4.4.30", None)
                .get("numInitialChunks")
                .is_none()
        );
    }

    #[test]
    fn default_write_concern_reads_w_wtimeout_j_and_source() {
        use mongodb::options::Acknowledgment;
        let reply = doc! {
            "defaultWriteConcern": {"w": "majority", "wtimeout": 0, "j": true},
            "defaultWriteConcernSource": "implicit",
        };
        let wc = DefaultWriteConcern::from_reply(&reply).unwrap();
        assert_eq!(wc.write_concern.w, Some(Acknowledgment::Majority));
        assert_eq!(wc.write_concern.w_timeout, Some(Duration::ZERO));
        assert_eq!(wc.write_concern.journal, Some(true));
        assert_eq!(wc.source.as_deref(), Some("implicit"));
        let numeric = doc! {"defaultWriteConcern": {"w": 1}, "defaultWriteConcernSource": "global"};
        let wc = DefaultWriteConcern::from_reply(&numeric).unwrap();
        assert_eq!(wc.write_concern.w, Some(Acknowledgment::Nodes(1)));
        assert_eq!(wc.write_concern.w_timeout, None);
        // 4.4 without a default set: neither field.
        assert_eq!(
            DefaultWriteConcern::from_reply(&doc! {}).unwrap(),
            DefaultWriteConcern::default()
        );
    }

    #[test]
    fn chunk_filter_follows_the_timestamp_rule() {
        let uuid = Bson::Binary(mongodb::bson::Binary {
            subtype: mongodb::bson::spec::BinarySubtype::Uuid,
            bytes: vec![1; 16],
        });
        let new = doc! {"_id": YCSB_NS, "uuid": uuid.clone(), "timestamp": mongodb::bson::Timestamp{time: 1, increment: 1}};
        assert_eq!(
            namespace_chunk_filter(&new, YCSB_NS),
            doc! {"uuid": uuid.clone()}
        );
        let old = doc! {"_id": YCSB_NS, "uuid": uuid};
        assert_eq!(namespace_chunk_filter(&old, YCSB_NS), doc! {"ns": YCSB_NS});
    }

    #[test]
    fn classify_roles() {
        assert_eq!(
            classify(&doc! {"msg": "isdbgrid", "isWritablePrimary": true}),
            DetectedRole::Mongos
        );
        assert_eq!(
            classify(&doc! {"setName": "sh0", "isWritablePrimary": true}),
            DetectedRole::Primary { set: "sh0".into() }
        );
        assert_eq!(
            classify(&doc! {"isreplicaset": true, "isWritablePrimary": false}),
            DetectedRole::Uninitiated
        );
        assert_eq!(
            classify(&doc! {"isWritablePrimary": true}),
            DetectedRole::Standalone
        );
    }

    #[test]
    fn privileges_are_checked_only_when_a_user_is_authenticated() {
        let open = doc! {"authInfo": {"authenticatedUsers": [], "authenticatedUserPrivileges": []}};
        assert!(missing_privileges(&open, true).is_empty());
        let db_owner = doc! {"authInfo": {
            "authenticatedUsers": [{"user": "u", "db": "admin"}],
            "authenticatedUserPrivileges": [
                {"resource": {"db": "ycsb", "collection": ""}, "actions": ["find", "insert", "update", "remove", "dropDatabase"]},
            ],
        }};
        assert!(missing_privileges(&db_owner, false).is_empty());
        let missing = missing_privileges(&db_owner, true);
        assert_eq!(
            missing,
            [
                "enableSharding on ycsb",
                "find on config.chunks",
                "find on config.collections"
            ]
        );
        let admin = doc! {"authInfo": {
            "authenticatedUsers": [{"user": "root", "db": "admin"}],
            "authenticatedUserPrivileges": [{"resource": {"anyResource": true}, "actions": ["dropDatabase", "enableSharding", "find"]}],
        }};
        assert!(missing_privileges(&admin, true).is_empty());
        // R10: `anyAction` grants every action (the `__system` role).
        let system = doc! {"authInfo": {
            "authenticatedUsers": [{"user": "s", "db": "admin"}],
            "authenticatedUserPrivileges": [{"resource": {"anyResource": true}, "actions": ["anyAction"]}],
        }};
        assert!(missing_privileges(&system, true).is_empty());
        // R10: `{db: ""}` is any normal resource: ycsb yes, config no.
        let normal = doc! {"authInfo": {
            "authenticatedUsers": [{"user": "n", "db": "admin"}],
            "authenticatedUserPrivileges": [{"resource": {"db": "", "collection": ""}, "actions": ["dropDatabase", "enableSharding", "find"]}],
        }};
        assert_eq!(
            missing_privileges(&normal, true),
            ["find on config.chunks", "find on config.collections"]
        );
    }

    #[test]
    fn initiate_refusal_on_several_docker_hosts_explains_hairpin() {
        let spec = crate::topology::TopologySpec::parse(
            "name = \"two\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"10.0.0.1\"\npublish_address = \"0.0.0.0\"\n[[hosts]]\naddress = \"10.0.0.2\"\ndocker = \"tcp://10.0.0.2:2375\"\npublish_address = \"0.0.0.0\"\n",
            std::path::Path::new("t.toml"),
        )
        .unwrap();
        let opts = crate::topology::PlanOptions {
            links_pending: false,
            backend: crate::topology::BackendKind::Docker,
            run_id: "t-1".into(),
            run_dir: "/tmp/ms/t-1".into(),
            bin_dir: None,
            total_memory_gb: Some(9.0),
        };
        let plan = crate::backend::plan(&spec, &opts).unwrap();
        let refusal = ClusterError::Command {
            command: "replSetInitiate".into(),
            host: "10.0.0.2:27019".into(),
            code: Some(93),
            message: "No host described in new configuration with {version: 1, term: 0} for replica set sh1 maps to this node".into(),
        };
        assert!(initiate_hint(&plan, &refusal).contains("hairpin"));
        assert!(initiate_hint(&plan, &refusal).contains("/etc/hosts"));
        let other = ClusterError::Command {
            command: "replSetInitiate".into(),
            host: "h".into(),
            code: Some(23),
            message: "already initialized".into(),
        };
        assert_eq!(initiate_hint(&plan, &other), "");
    }

    #[test]
    fn repl_status_in_one_line() {
        let d = doc! {"set": "cfg", "members": [{"name": "a:1", "stateStr": "SECONDARY"}, {"name": "b:2", "stateStr": "PRIMARY"}]};
        assert_eq!(
            summarize_repl_status(&d),
            "set cfg [a:1=SECONDARY, b:2=PRIMARY]"
        );
    }

    #[test]
    fn table_names_become_ycsb_namespaces() {
        assert_eq!(ycsb_namespace("orders").unwrap(), "ycsb.orders");
        assert!(ycsb_namespace("").is_err());
        assert!(ycsb_namespace("a$b").is_err());
        assert!(ycsb_namespace("system.x").is_err());
        let d = shard_namespace_command("ycsb.orders", "8.0.1", None);
        assert_eq!(d.get_str("shardCollection").unwrap(), "ycsb.orders");
        // R8/N2: a shard owning no chunk of the table is found.
        let chunks = BTreeMap::from([("sh0".to_string(), 2u64), ("sh2".to_string(), 0)]);
        let shards = ["sh0", "sh1", "sh2"].map(String::from);
        assert_eq!(shards_without_chunks(&chunks, &shards), ["sh1", "sh2"]);
    }
}
