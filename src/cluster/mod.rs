//! Replica-set and sharding administration shared by every backend (spec §8).
//!
//! The backends start processes or containers; everything said to the servers — readiness,
//! `replSetInitiate`, waiting for a primary, `addShard`, `shardCollection`, the chunk check, the
//! balancer, `shutdown` and the metrics the experiments sample — lives here, so the three
//! backends behave identically.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use futures::future::BoxFuture;
use mongodb::bson::{Bson, Document, doc};
use mongodb::error::ErrorKind;
use mongodb::options::ClientOptions;

use crate::topology::{Member, Plan, Role};

/// The benchmark database and collection every topology is prepared for.
pub const YCSB_DB: &str = "ycsb";
/// `ycsb.usertable`, sharded on `{_id: "hashed"}`.
pub const YCSB_NS: &str = "ycsb.usertable";

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
    #[error("{member} exited during start-up; last log lines: {tail}")]
    Exited {
        /// The member.
        member: String,
        /// Last lines of its log, joined with " | ".
        tail: String,
    },
    /// A check after a step found the cluster not as it must be.
    #[error("{0}")]
    Check(String),
}

impl ClusterError {
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
pub fn error_code(err: &mongodb::error::Error) -> Option<i32> {
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

/// A direct-connection URI for one member (`directConnection=true`: no discovery, spec §2.1).
pub fn direct_uri(host_port: &str) -> String {
    format!("mongodb://{host_port}/?directConnection=true")
}

/// Connects directly to one `host:port` with short, bounded timeouts.
pub async fn connect_direct(host_port: &str) -> Result<mongodb::Client, ClusterError> {
    connect_uri(&direct_uri(host_port), host_port).await
}

async fn connect_uri(uri: &str, label: &str) -> Result<mongodb::Client, ClusterError> {
    let mut opts = ClientOptions::parse(uri)
        .await
        .map_err(|e| ClusterError::Command {
            command: "connect".into(),
            host: label.to_string(),
            code: None,
            message: one_line(&e.to_string()),
        })?;
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
pub trait Launcher: Send + Sync {
    /// Starts `member` (process or container); returns once it was started, not once it answers.
    fn start<'a>(&'a self, member: &'a Member) -> BoxFuture<'a, anyhow::Result<()>>;
    /// `Some(last log lines)` once the member has exited, `None` while it runs.
    fn exited<'a>(&'a self, member: &'a Member) -> BoxFuture<'a, Option<String>>;
    /// The `host:port` microshard uses to reach the member directly.
    fn admin_address(&self, member: &Member) -> String;
}

/// Bounds and switches of the assembly sequence.
#[derive(Debug, Clone)]
pub struct AssemblyOptions {
    /// Per member: first successful `ping` (spec §3: 60-120 s ceiling).
    pub ready_timeout: Duration,
    /// Per replica set: a writable primary after `replSetInitiate`.
    pub primary_timeout: Duration,
    /// Per shard: `addShard` retries on 133 / network errors.
    pub add_shard_timeout: Duration,
    /// Print each step to stderr.
    pub progress: bool,
}

impl Default for AssemblyOptions {
    fn default() -> Self {
        AssemblyOptions {
            ready_timeout: Duration::from_secs(90),
            primary_timeout: Duration::from_secs(90),
            add_shard_timeout: Duration::from_secs(90),
            progress: false,
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
pub async fn server_info(uri_or_host: &str) -> Result<ServerInfo, ClusterError> {
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
            // Before 4.4.2: legacy isMaster (spec §2.1).
            let mut d = run(client, host, doc! {"isMaster": 1}).await?;
            if let Ok(p) = d.get_bool("ismaster") {
                d.insert("isWritablePrimary", p);
            }
            Ok(d)
        }
        other => other,
    }
}

/// A running server's role, from `hello` (spec §2.1).
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

    /// `Exited` (with the log tail) when the member's process or container is gone.
    async fn alive(&self) -> Result<(), ClusterError> {
        match self.launcher.exited(self.member).await {
            Some(tail) => Err(ClusterError::Exited {
                member: format!("{} ({})", self.member.name, self.host),
                tail,
            }),
            None => Ok(()),
        }
    }

    /// Before the next poll: an error if the member exited or `what` did not happen in time.
    async fn pause_or_give_up(&mut self, what: &str, last: &str) -> Result<(), ClusterError> {
        self.alive().await?;
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

/// Polls `{ping: 1}` until the member answers, it exits (→ its log tail) or `timeout` passes.
pub async fn wait_ready(
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
        wait.alive().await?;
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
/// initiated set (code 23) is fine (spec §2.2).
pub async fn initiate(
    host: &str,
    set: &str,
    member_hosts: &[String],
    configsvr: bool,
) -> Result<(), ClusterError> {
    let client = connect_direct(host).await?;
    let cmd = initiate_command(set, member_hosts, configsvr);
    match run(&client, host, cmd).await {
        Ok(_) => Ok(()),
        Err(ClusterError::Command { code: Some(23), .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The `replSetInitiate` document for a set.
pub fn initiate_command(set: &str, member_hosts: &[String], configsvr: bool) -> Document {
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

/// Polls `hello` until the member is a writable primary of `set` (spec §2.3).
pub async fn wait_primary(
    launcher: &dyn Launcher,
    member: &Member,
    set: &str,
    timeout: Duration,
) -> Result<(), ClusterError> {
    let mut wait = MemberWait::new(launcher, member, timeout);
    let host = wait.host.clone();
    let client = connect_direct(&host).await?;
    let what = format!("a writable primary for replica set {set}");
    loop {
        let last = match hello_on(&client, &host).await {
            Ok(h) => {
                let primary = h.get_bool("isWritablePrimary").unwrap_or(false);
                let name = h.get_str("setName").ok();
                if primary && name == Some(set) {
                    return Ok(());
                }
                format!(
                    "isWritablePrimary={primary}, setName={}",
                    name.unwrap_or("(none)")
                )
            }
            Err(e) => e.to_string(),
        };
        wait.pause_or_give_up(&what, &last).await?;
    }
}

/// `addShard`, retried while the shard has no primary yet (133) or the network blips (spec §2.4).
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
        let outcome = client.database("admin").run_command(cmd).await;
        let err = match outcome {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let retry = matches!(error_code(&err), Some(133) | Some(202) | Some(6) | Some(7))
            || is_network_like(&err);
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

/// Shard names (`_id`) from `listShards`.
pub async fn list_shards(mongos: &str) -> Result<Vec<String>, ClusterError> {
    let client = connect_direct(mongos).await?;
    let d = run(&client, mongos, doc! {"listShards": 1}).await?;
    let shards = d.get_array("shards").map_err(|_| {
        ClusterError::Check(format!("listShards on {mongos} returned no `shards` array"))
    })?;
    Ok(shards
        .iter()
        .filter_map(|s| s.as_document())
        .filter_map(|s| s.get_str("_id").ok().map(String::from))
        .collect())
}

/// Parses `major.minor` from a version string (`7.0.12`, `8.0.0-rc1`, `7.0.0-standin`).
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The `shardCollection` document: hashed `_id`, plus `numInitialChunks` only where it is honoured (≤ 7.1).
pub fn shard_collection_command(version: &str, initial_chunks: Option<u32>) -> Document {
    let mut cmd = doc! {"shardCollection": YCSB_NS, "key": {"_id": "hashed"}};
    if let (Some(n), Some(v)) = (initial_chunks, major_minor(version))
        && v <= (7, 1)
        && n > 0
    {
        cmd.insert("numInitialChunks", n as i64);
    }
    cmd
}

/// Drops `ycsb`, then `enableSharding` + `shardCollection ycsb.usertable {_id: "hashed"}`.
pub async fn shard_ycsb(
    mongos_uri_or_host: &str,
    version: &str,
    initial_chunks: Option<u32>,
) -> Result<(), ClusterError> {
    let (client, label) = client_for(mongos_uri_or_host).await?;
    // enableSharding is required ≤ 5.0 and harmless later (spec §2.5).
    run(&client, &label, doc! {"enableSharding": YCSB_DB}).await?;
    let cmd = shard_collection_command(version, initial_chunks);
    match run(&client, &label, cmd).await {
        Ok(_) => Ok(()),
        // Already sharded the same way: success; anything else is reported.
        Err(e) => Err(e),
    }
}

/// Drops the benchmark database (the only thing done to clusters microshard did not start).
pub async fn drop_ycsb(uri_or_host: &str) -> Result<(), ClusterError> {
    let (client, label) = client_for(uri_or_host).await?;
    client
        .database(YCSB_DB)
        .drop()
        .await
        .map_err(|e| ClusterError::command("dropDatabase", &label, &e))
}

/// `flushRouterConfig` for `ycsb`: needed on 4.4 mongos after a sharded collection was dropped
/// and is created again (SERVER-17397, spec §2.10); not needed from 5.0.
pub async fn flush_router_config(mongos_uri_or_host: &str) -> Result<(), ClusterError> {
    let (client, label) = client_for(mongos_uri_or_host).await?;
    run(&client, &label, doc! {"flushRouterConfig": YCSB_DB})
        .await
        .map(|_| ())
}

/// Chunks of `ycsb.usertable` per shard, read from `config.chunks` by `uuid` (5.0+, when the
/// `config.collections` entry has a `timestamp`) or by `ns` (before) — spec §2.9.
pub async fn chunks_per_shard(
    mongos_uri_or_host: &str,
) -> Result<BTreeMap<String, u64>, ClusterError> {
    let (client, label) = client_for(mongos_uri_or_host).await?;
    let config = client.database("config");
    let coll = config
        .collection::<Document>("collections")
        .find_one(doc! {"_id": YCSB_NS})
        .await
        .map_err(|e| ClusterError::command("find config.collections", &label, &e))?
        .ok_or_else(|| {
            ClusterError::Check(format!("{YCSB_NS} is not in config.collections on {label}"))
        })?;
    let filter = chunk_filter(&coll);
    let mut cursor = config
        .collection::<Document>("chunks")
        .aggregate(vec![
            doc! {"$match": filter},
            doc! {"$group": {"_id": "$shard", "n": {"$sum": 1}}},
        ])
        .await
        .map_err(|e| ClusterError::command("aggregate config.chunks", &label, &e))?;
    let mut out = BTreeMap::new();
    while let Some(d) = cursor
        .try_next()
        .await
        .map_err(|e| ClusterError::command("aggregate config.chunks", &label, &e))?
    {
        let shard = d.get_str("_id").unwrap_or("?").to_string();
        let n = match d.get("n") {
            Some(Bson::Int32(n)) => *n as u64,
            Some(Bson::Int64(n)) => *n as u64,
            Some(Bson::Double(n)) => *n as u64,
            _ => 0,
        };
        out.insert(shard, n);
    }
    Ok(out)
}

/// The `config.chunks` filter for a `config.collections` entry (uuid when it has a timestamp).
pub fn chunk_filter(coll: &Document) -> Document {
    match (coll.get("timestamp"), coll.get("uuid")) {
        (Some(_), Some(uuid)) => doc! {"uuid": uuid.clone()},
        _ => doc! {"ns": YCSB_NS},
    }
}

/// Stops the balancer so no migrations disturb a measured run (spec §2.7).
pub async fn balancer_stop(mongos_uri_or_host: &str) -> Result<(), ClusterError> {
    let (client, label) = client_for(mongos_uri_or_host).await?;
    run(&client, &label, doc! {"balancerStop": 1})
        .await
        .map(|_| ())
}

/// `{shutdown: 1, force: true}`; a dropped connection is success (spec §8.11).
pub async fn shutdown(host: &str) -> Result<(), ClusterError> {
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

/// The serverStatus subset experiments sample: opcounters, connections, WiredTiger cache
/// (bytes, dirty, evictions), memory; plus host, version and the stand-in flag.
pub async fn server_metrics(uri_or_host: &str) -> Result<serde_json::Value, ClusterError> {
    let (client, label) = client_for(uri_or_host).await?;
    let status = run(
        &client,
        &label,
        doc! {"serverStatus": 1, "repl": 0, "metrics": 0, "locks": 0},
    )
    .await?;
    Ok(metrics_subset(&status))
}

/// Picks the fields [`server_metrics`] reports out of a serverStatus document.
pub fn metrics_subset(status: &Document) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for key in [
        "host",
        "version",
        "process",
        "uptime",
        "opcounters",
        "connections",
        "mem",
        "microshardStandin",
    ] {
        if let Some(v) = status.get(key) {
            out.insert(key.to_string(), v.clone().into_relaxed_extjson());
        }
    }
    if let Ok(cache) = status
        .get_document("wiredTiger")
        .and_then(|w| w.get_document("cache"))
    {
        let mut c = serde_json::Map::new();
        for key in [
            "maximum bytes configured",
            "bytes currently in the cache",
            "tracked dirty bytes in the cache",
            "pages read into cache",
            "pages written from cache",
            "pages evicted by application threads",
            "modified pages evicted",
            "unmodified pages evicted",
        ] {
            if let Some(v) = cache.get(key) {
                c.insert(key.to_string(), v.clone().into_relaxed_extjson());
            }
        }
        out.insert("wiredTiger.cache".into(), serde_json::Value::Object(c));
    }
    serde_json::Value::Object(out)
}

/// `$collStats` of `ycsb.usertable` through mongos: one document per shard (`shard`, `host`,
/// `storageStats`), spec §4.
pub async fn collection_stats(
    mongos_uri_or_host: &str,
) -> Result<Vec<serde_json::Value>, ClusterError> {
    let (client, label) = client_for(mongos_uri_or_host).await?;
    let coll = client.database(YCSB_DB).collection::<Document>("usertable");
    let mut cursor = coll
        .aggregate(vec![doc! {"$collStats": {"storageStats": {}, "count": {}}}])
        .await
        .map_err(|e| ClusterError::command("$collStats", &label, &e))?;
    let mut out = Vec::new();
    while let Some(d) = cursor
        .try_next()
        .await
        .map_err(|e| ClusterError::command("$collStats", &label, &e))?
    {
        out.push(Bson::Document(d).into_relaxed_extjson());
    }
    Ok(out)
}

/// What [`assemble`] found: server versions per member and whether they are stand-ins.
#[derive(Debug, Clone, Default)]
pub struct Assembly {
    /// `member name → ServerInfo`.
    pub servers: BTreeMap<String, ServerInfo>,
    /// Chunks per shard after `shardCollection` (empty for a standalone).
    pub chunks: BTreeMap<String, u64>,
}

/// The whole bring-up sequence of spec §8, steps 2–8, for any backend.
pub async fn assemble(
    plan: &Plan,
    launcher: &dyn Launcher,
    opts: &AssemblyOptions,
) -> anyhow::Result<Assembly> {
    let say = |s: String| {
        if opts.progress {
            crate::output::eprintln(&format!("microshard: {s}"));
        }
    };
    let mut assembly = Assembly::default();
    // 2-3: data-bearing mongods first, all started before any is waited for.
    let mongods: Vec<&Member> = plan
        .start_order()
        .into_iter()
        .filter(|m| m.role != Role::Mongos)
        .collect();
    for m in &mongods {
        say(format!("starting {} ({})", m.name, m.role));
        launcher.start(m).await?;
    }
    for m in &mongods {
        wait_ready(launcher, m, opts.ready_timeout).await?;
        let info = server_info(&launcher.admin_address(m)).await?;
        assembly.servers.insert(m.name.clone(), info);
    }
    // 4-5: initiate every replica set, then wait for its primary.
    let mut sets: BTreeMap<String, Vec<&Member>> = BTreeMap::new();
    for m in &mongods {
        if let Some(rs) = &m.replica_set {
            sets.entry(rs.clone()).or_default().push(m);
        }
    }
    for (set, members) in &sets {
        let hosts: Vec<String> = members.iter().map(|m| m.member_host.clone()).collect();
        let configsvr = members.iter().any(|m| m.role == Role::Config);
        say(format!("replSetInitiate {set} [{}]", hosts.join(", ")));
        initiate(&launcher.admin_address(members[0]), set, &hosts, configsvr).await?;
    }
    for (set, members) in &sets {
        wait_primary(launcher, members[0], set, opts.primary_timeout).await?;
        say(format!("{set} has a primary"));
    }
    if plan.kind == crate::topology::Kind::Standalone {
        return Ok(assembly);
    }
    // 6: routers.
    let routers: Vec<&Member> = plan.members_with(Role::Mongos).collect();
    for m in &routers {
        say(format!("starting {} (mongos)", m.name));
        launcher.start(m).await?;
    }
    for m in &routers {
        wait_ready(launcher, m, opts.ready_timeout).await?;
        let address = launcher.admin_address(m);
        let (role, _) = detect_role(&address).await?;
        if role != DetectedRole::Mongos {
            return Err(ClusterError::Check(format!(
                "{} ({address}) answers but is not a mongos (hello says {role:?})",
                m.name
            ))
            .into());
        }
        let info = server_info(&address).await?;
        assembly.servers.insert(m.name.clone(), info);
    }
    let Some(entry) = routers.first() else {
        anyhow::bail!("plan {} has no mongos", plan.name);
    };
    let mongos = launcher.admin_address(entry);
    // 7: shards.
    let shards: Vec<&Member> = plan.members_with(Role::Shard).collect();
    for s in &shards {
        let conn = Plan::shard_connection_string(s);
        let name = s.replica_set.clone().unwrap_or_else(|| s.name.clone());
        say(format!("addShard {conn}"));
        add_shard(&mongos, &conn, &name, opts.add_shard_timeout).await?;
    }
    let listed = list_shards(&mongos).await?;
    for s in &shards {
        let name = s.replica_set.as_deref().unwrap_or(&s.name);
        if !listed.iter().any(|l| l == name) {
            return Err(ClusterError::Check(format!(
                "listShards on {mongos} does not list shard {name} after addShard (lists: {})",
                listed.join(", ")
            ))
            .into());
        }
    }
    // 8: shard the collection, check every shard owns chunks, stop the balancer.
    let version = assembly
        .servers
        .get(&entry.name)
        .map(|s| s.version.clone())
        .unwrap_or_default();
    say(format!("shardCollection {YCSB_NS} {{_id: \"hashed\"}}"));
    shard_ycsb(
        &mongos,
        &version,
        plan.initial_chunks_per_shard
            .map(|n| n * shards.len() as u32),
    )
    .await?;
    let chunks = chunks_per_shard(&mongos).await?;
    let empty: Vec<&str> = shards
        .iter()
        .map(|s| s.replica_set.as_deref().unwrap_or(&s.name))
        .filter(|n| chunks.get(*n).copied().unwrap_or(0) == 0)
        .collect();
    if !empty.is_empty() {
        return Err(ClusterError::Check(format!(
            "after shardCollection, shard(s) {} own no chunk of {YCSB_NS} (chunks: {chunks:?})",
            empty.join(", ")
        ))
        .into());
    }
    assembly.chunks = chunks;
    if !plan.keep_balancer {
        say("balancerStop".into());
        balancer_stop(&mongos).await?;
    }
    Ok(assembly)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let d = shard_collection_command("7.0.12", Some(8));
        assert_eq!(d.get_i64("numInitialChunks").unwrap(), 8);
        assert_eq!(
            d.get_document("key").unwrap().get_str("_id").unwrap(),
            "hashed"
        );
        assert!(
            shard_collection_command("7.2.0", Some(8))
                .get("numInitialChunks")
                .is_none()
        );
        assert!(
            shard_collection_command("8.0.4", Some(8))
                .get("numInitialChunks")
                .is_none()
        );
        assert!(
            shard_collection_command("4.4.30", None)
                .get("numInitialChunks")
                .is_none()
        );
        assert_eq!(major_minor("7.0.0-standin"), Some((7, 0)));
    }

    #[test]
    fn chunk_filter_follows_the_timestamp_rule() {
        let uuid = Bson::Binary(mongodb::bson::Binary {
            subtype: mongodb::bson::spec::BinarySubtype::Uuid,
            bytes: vec![1; 16],
        });
        let new = doc! {"_id": YCSB_NS, "uuid": uuid.clone(), "timestamp": mongodb::bson::Timestamp{time: 1, increment: 1}};
        assert_eq!(chunk_filter(&new), doc! {"uuid": uuid.clone()});
        let old = doc! {"_id": YCSB_NS, "uuid": uuid};
        assert_eq!(chunk_filter(&old), doc! {"ns": YCSB_NS});
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
    fn metrics_subset_picks_cache_fields() {
        let s = doc! {"host": "h", "opcounters": {"insert": 3}, "wiredTiger": {"cache": {"bytes currently in the cache": 10, "other": 1}}, "locks": {}};
        let v = metrics_subset(&s);
        assert_eq!(v["opcounters"]["insert"], 3);
        assert_eq!(v["wiredTiger.cache"]["bytes currently in the cache"], 10);
        assert!(v.get("locks").is_none());
    }
}
