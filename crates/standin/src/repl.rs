//! Replica-set membership: initiation with the real validation rules, then an election.
//!
//! As in MongoDB, only a one-member set elects itself at once (after `--primary-delay-ms`). A set
//! of several members holds its first election after `--election-delay-ms` (default 1–2 s), and
//! the winner is `--election-winner N` of the initiating member, or by default a random member
//! other than member 0: in MongoDB randomized election timeouts decide, so a tool that waits for
//! member 0 to become primary hangs some of the time; here it fails every time, where a test sees it.

use std::time::{Duration, Instant};

use mongodb::bson::{Bson, DateTime, Document, Timestamp, doc, oid::ObjectId};

use super::cmderr::{CmdError, CmdResult, code};
use super::server::Shared;
use super::value::{as_i64, truthy};

/// This node's replica-set state.
#[derive(Debug, Default)]
pub(crate) struct ReplState {
    /// The accepted configuration (`None` before `replSetInitiate`).
    pub config: Option<Document>,
    /// When the node becomes PRIMARY (after `--primary-delay-ms`).
    pub primary_at: Option<Instant>,
    /// The member host that maps to this node.
    pub me: String,
    /// All member hosts.
    pub hosts: Vec<String>,
    /// Election id reported while primary.
    pub election_id: Option<ObjectId>,
    /// When the election "happened" (wall clock).
    pub election_date: Option<DateTime>,
    /// On a member that did not win the election: the member that did (the primary once
    /// `election_at` has passed).
    pub primary_host: Option<String>,
    /// When the set's first election is decided (members that did not win report no primary before).
    pub election_at: Option<Instant>,
    /// On the primary: members that accepted the configuration (they answer as SECONDARY).
    pub joined: Vec<String>,
}

impl ReplState {
    /// True once initiated and the election delay passed.
    pub(crate) fn is_primary(&self) -> bool {
        self.primary_at.is_some_and(|t| Instant::now() >= t)
    }

    /// The primary another member is, once the election has been decided.
    fn known_primary(&self) -> Option<&str> {
        match (&self.primary_host, self.election_at) {
            (Some(p), Some(t)) if Instant::now() >= t => Some(p.as_str()),
            (Some(p), None) => Some(p.as_str()),
            _ => None,
        }
    }

    /// This member wins the election `after` from now: it becomes PRIMARY then.
    fn win_after(&mut self, after: Duration) {
        self.primary_at = Some(Instant::now() + after);
        self.election_id = Some(ObjectId::new());
        self.election_date = Some(DateTime::from_millis(
            DateTime::now().timestamp_millis() + after.as_millis() as i64,
        ));
    }
}

/// Who wins a set's first election and after how long: a one-member set elects itself after
/// `--primary-delay-ms`; a larger set takes `--election-delay-ms` (default 1–2 s) and is won by
/// `--election-winner` or a random member other than member 0.
fn first_election(
    cfg: &super::config::StandinConfig,
    members: usize,
) -> Result<(usize, Duration), CmdError> {
    if members <= 1 {
        return Ok((0, Duration::from_millis(cfg.primary_delay_ms)));
    }
    let delay = cfg
        .election_delay_ms
        .unwrap_or_else(|| rand::random_range(1000..=2000));
    let winner = match cfg.election_winner {
        Some(w) if w < members => w,
        Some(w) => {
            return Err(CmdError::bad_value(format!(
                "--election-winner {w}, but the configuration has {members} members"
            )));
        }
        None => rand::random_range(1..members),
    };
    Ok((winner, Duration::from_millis(delay)))
}

fn lock(shared: &Shared) -> Option<std::sync::MutexGuard<'_, ReplState>> {
    shared.repl.lock().ok()
}

/// Makes `cfg` this member's configuration (`me` among `hosts`), by `replSetInitiate` or by the
/// initiating member telling it; a member that already has one refuses, as mongod does.
fn adopt_config(
    shared: &Shared,
    cfg: Document,
    me: String,
    hosts: Vec<String>,
) -> Result<std::sync::MutexGuard<'_, ReplState>, CmdError> {
    let mut st = lock(shared).ok_or_else(|| CmdError::new(1, "replication state poisoned"))?;
    if st.config.is_some() {
        return Err(CmdError::new(
            code::ALREADY_INITIALIZED,
            "already initialized",
        ));
    }
    st.config = Some(cfg);
    st.me = me;
    st.hosts = hosts;
    Ok(st)
}

/// `(writable, fields)` for hello (and `serverStatus.repl`) on a `--replSet` node.
pub(crate) fn hello_fields(shared: &Shared) -> (bool, Document) {
    let Some(st) = lock(shared) else {
        return (false, doc! {});
    };
    let Some(cfg) = &st.config else {
        return (
            false,
            doc! {
                "secondary": false,
                "isreplicaset": true,
                "info": "Does not have a valid replica set config",
            },
        );
    };
    let primary = st.is_primary();
    let mut d = doc! {
        "hosts": st.hosts.clone(),
        "setName": cfg.get_str("_id").unwrap_or_default(),
        "setVersion": as_i64(cfg.get("version").unwrap_or(&Bson::Int32(1))).unwrap_or(1) as i32,
        "secondary": !primary,
    };
    if primary {
        d.insert("primary", st.me.clone());
    } else if let Some(p) = st.known_primary() {
        d.insert("primary", p.to_string());
    }
    d.insert("me", st.me.clone());
    if primary {
        if let Some(e) = st.election_id {
            d.insert("electionId", e);
        }
        let now = DateTime::now();
        let ts = Timestamp {
            time: (now.timestamp_millis() / 1000) as u32,
            increment: 1,
        };
        d.insert(
            "lastWrite",
            doc! {
                "opTime": {"ts": ts, "t": 1_i64},
                "lastWriteDate": now,
                "majorityOpTime": {"ts": ts, "t": 1_i64},
                "majorityWriteDate": now,
            },
        );
    }
    if shared.cfg.configsvr {
        d.insert("configsvr", 2);
    }
    (primary, d)
}

/// Refuses writes unless this node may take them (standalone, or an initiated primary).
pub(crate) fn check_writable(shared: &Shared) -> CmdResult<()> {
    if shared.cfg.repl_set.is_none() {
        return Ok(());
    }
    match lock(shared) {
        Some(st) if st.is_primary() => Ok(()),
        _ => Err(CmdError::new(code::NOT_WRITABLE_PRIMARY, "not primary")),
    }
}

/// Refuses reads before the node has a configuration.
pub(crate) fn check_readable(shared: &Shared) -> CmdResult<()> {
    if shared.cfg.repl_set.is_none() {
        return Ok(());
    }
    match lock(shared) {
        Some(st) if st.is_primary() => Ok(()),
        Some(st) if st.config.is_some() => Err(CmdError::new(
            code::NOT_PRIMARY_NO_SECONDARY_OK,
            "not primary and secondaryOk=false",
        )),
        _ => Err(CmdError::new(
            code::NOT_PRIMARY_OR_SECONDARY,
            "node is not in primary or recovering state",
        )),
    }
}

fn is_localhost(host: &str) -> bool {
    host == "localhost" || host.starts_with("127.") || host == "::1" || host == "[::1]"
}

/// Whether `host:port` names this node: loopback names, the machine's hostname, or any name that
/// resolves to an address of this machine (a container name inside a Docker network).
fn maps_to_self(shared: &Shared, host: &str) -> bool {
    let Some((h, p)) = host.rsplit_once(':') else {
        return false;
    };
    if p.parse::<u16>().ok() != Some(shared.port) {
        return false;
    }
    let h = h.trim_start_matches('[').trim_end_matches(']');
    if is_localhost(h) || h == shared.hostname {
        return true;
    }
    use std::net::ToSocketAddrs;
    let Ok(addrs) = (h, 0u16).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|a| std::net::UdpSocket::bind((a.ip(), 0)).is_ok())
}

/// MongoDB's isSelf slow path: `host` is this node when a connection to it reaches a server
/// whose `_isSelf` id is this one's (a name or address bound elsewhere, such as a Docker host's
/// published port reached from inside the container).
async fn is_self_slow(shared: &Shared, host: &str) -> bool {
    let uri = format!(
        "mongodb://{host}/?directConnection=true&serverSelectionTimeoutMS=2000&connectTimeoutMS=2000"
    );
    let Ok(client) = mongodb::Client::with_uri_str(uri).await else {
        return false;
    };
    let answer = client
        .database("admin")
        .run_command(doc! {"_isSelf": 1})
        .await;
    client.shutdown().immediate(true).await;
    answer.is_ok_and(|d| d.get_object_id("id").ok() == Some(shared.instance_id))
}

fn split_host(host: &str) -> &str {
    host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host)
}

/// `replSetInitiate`.
pub(crate) async fn initiate(shared: &std::sync::Arc<Shared>, body: &Document) -> CmdResult {
    let Some(set) = shared.cfg.repl_set.clone() else {
        return Err(CmdError::new(
            code::NO_REPLICATION_ENABLED,
            "This node was not started with replication enabled.",
        ));
    };
    if lock(shared).is_some_and(|s| s.config.is_some()) {
        return Err(CmdError::new(
            code::ALREADY_INITIALIZED,
            "already initialized",
        ));
    }
    let mut cfg = match body.get("replSetInitiate") {
        Some(Bson::Document(d)) if !d.is_empty() => d.clone(),
        Some(Bson::Document(_))
        | Some(Bson::Null)
        | None
        | Some(Bson::Int32(_))
        | Some(Bson::Int64(_))
        | Some(Bson::Double(_))
        | Some(Bson::Boolean(_)) => {
            let h = if shared.cfg.bind_ip_all {
                shared.hostname.clone()
            } else {
                "localhost".to_string()
            };
            doc! {"_id": set.clone(), "version": 1, "members": [{"_id": 0, "host": format!("{h}:{}", shared.port)}]}
        }
        Some(other) => {
            return Err(CmdError::wrong_type(
                "replSetInitiate",
                "replSetInitiate",
                super::value::type_name(other),
                "object",
            ));
        }
    };
    let id = match cfg.get("_id") {
        Some(Bson::String(s)) => s.clone(),
        Some(_) => {
            return Err(CmdError::new(
                code::TYPE_MISMATCH,
                "replica set configuration _id must be a string",
            ));
        }
        None => {
            return Err(CmdError::new(
                code::INVALID_REPLICA_SET_CONFIG,
                "Missing expected field \"_id\"",
            ));
        }
    };
    if id != set {
        return Err(CmdError::new(
            code::INVALID_REPLICA_SET_CONFIG,
            format!(
                "Attempting to initiate a replica set with name {id}, but command line reports {set}; rejecting"
            ),
        ));
    }
    if !cfg.contains_key("version") {
        cfg.insert("version", 1);
    }
    let members = match cfg.get("members") {
        Some(Bson::Array(m)) if !m.is_empty() => m.clone(),
        Some(Bson::Array(_)) => {
            return Err(CmdError::new(
                code::INVALID_REPLICA_SET_CONFIG,
                "Replica set configuration must contain at least one member",
            ));
        }
        Some(other) => {
            return Err(CmdError::new(
                code::TYPE_MISMATCH,
                format!(
                    "Expected \"members\" field in replica set configuration to have type array, but found {}",
                    super::value::type_name(other)
                ),
            ));
        }
        None => {
            return Err(CmdError::new(
                code::INVALID_REPLICA_SET_CONFIG,
                "Missing expected field \"members\"",
            ));
        }
    };
    let configsvr = match cfg.get("configsvr") {
        Some(v) => truthy(v),
        None => shared.cfg.configsvr,
    };
    if configsvr && !shared.cfg.configsvr {
        return Err(CmdError::new(
            code::INVALID_REPLICA_SET_CONFIG,
            "Nodes being used for config servers must be started with the --configsvr flag",
        ));
    }
    if !configsvr && shared.cfg.configsvr {
        return Err(CmdError::new(
            code::INVALID_REPLICA_SET_CONFIG,
            "Config servers must have configsvr:true in their config",
        ));
    }
    if shared.cfg.configsvr {
        cfg.insert("configsvr", true);
    }
    let mut hosts: Vec<String> = Vec::new();
    let mut ids: Vec<i64> = Vec::new();
    let mut me: Option<String> = None;
    for (i, m) in members.iter().enumerate() {
        let Bson::Document(m) = m else {
            return Err(CmdError::new(
                code::TYPE_MISMATCH,
                format!("Expected type object for members.{i}"),
            ));
        };
        let Some(mid) = m.get("_id").and_then(as_i64) else {
            return Err(CmdError::new(
                code::INVALID_REPLICA_SET_CONFIG,
                format!("Missing or non-numeric field \"_id\" in members.{i}"),
            ));
        };
        let Ok(host) = m.get_str("host") else {
            return Err(CmdError::new(
                code::INVALID_REPLICA_SET_CONFIG,
                format!("Missing expected field \"host\" in members.{i}"),
            ));
        };
        let host = if host.contains(':') {
            host.to_string()
        } else {
            format!("{host}:27017")
        };
        if let Some(j) = ids.iter().position(|x| *x == mid) {
            return Err(CmdError::new(
                code::INVALID_REPLICA_SET_CONFIG,
                format!(
                    "Found two member configurations with same _id field, members.{j}._id == members.{i}._id == {mid}"
                ),
            ));
        }
        if let Some(j) = hosts.iter().position(|x| x.eq_ignore_ascii_case(&host)) {
            return Err(CmdError::new(
                code::INVALID_REPLICA_SET_CONFIG,
                format!(
                    "Found two member configurations with same host field, members.{j}.host == members.{i}.host == {host}"
                ),
            ));
        }
        if shared.cfg.configsvr && m.get("arbiterOnly").is_some_and(truthy) {
            return Err(CmdError::new(
                code::INVALID_REPLICA_SET_CONFIG,
                "Arbiters are not allowed in replica set configurations being used for config servers",
            ));
        }
        if me.is_none() && maps_to_self(shared, &host) {
            me = Some(host.clone());
        }
        ids.push(mid);
        hosts.push(host);
    }
    let local = hosts.iter().filter(|h| is_localhost(split_host(h))).count();
    if local != 0 && local != hosts.len() {
        return Err(CmdError::new(
            code::INVALID_REPLICA_SET_CONFIG,
            format!(
                "Either all host names in a replica set configuration must be localhost references, or none must be; found {local} out of {}",
                hosts.len()
            ),
        ));
    }
    if me.is_none() {
        for h in &hosts {
            if is_self_slow(shared, h).await {
                me = Some(h.clone());
                break;
            }
        }
    }
    let Some(me) = me else {
        return Err(CmdError::new(
            code::INVALID_REPLICA_SET_CONFIG,
            format!(
                "No host described in new configuration with {{version: {}, term: 0}} for replica set {set} maps to this node",
                cfg.get("version").cloned().unwrap_or(Bson::Int32(1))
            ),
        ));
    };
    let (winner, delay) = first_election(&shared.cfg, hosts.len())?;
    quorum_check(&set, &me, &hosts).await?;
    if lock(shared).is_some_and(|s| s.config.is_some()) {
        return Err(CmdError::new(
            code::ALREADY_INITIALIZED,
            "already initialized",
        ));
    }
    let winner_host = hosts[winner].clone();
    let mut st = adopt_config(shared, cfg, me, hosts)?;
    let election_at = Instant::now() + delay;
    if st.me == winner_host {
        st.win_after(delay);
    } else {
        st.primary_host = Some(winner_host.clone());
        st.election_at = Some(election_at);
    }
    let (others, me, config) = (
        st.hosts
            .iter()
            .filter(|h| **h != st.me)
            .cloned()
            .collect::<Vec<_>>(),
        st.me.clone(),
        st.config.clone().unwrap_or_default(),
    );
    drop(st);
    shared.log(
        "REPL",
        21356,
        "replSetInitiate admin command received from client",
        doc! {},
    );
    // Real members learn the config through heartbeats and then hold an election; the stand-in
    // tells them the configuration and the election's outcome directly, so they answer as
    // SECONDARY (they hold no replicated data), and the winner becomes PRIMARY at `election_at`.
    for host in others {
        let join = Join {
            config: config.clone(),
            initiator: me.clone(),
            winner: winner_host.clone(),
            election_at,
        };
        let sh = shared.clone();
        tokio::spawn(async move {
            if tell_member(&host, join).await
                && let Some(mut st) = lock(&sh)
            {
                st.joined.push(host);
            }
        });
    }
    Ok(doc! {"ok": 1.0})
}

/// `replSetInitiate`'s quorum check, as mongod does it before accepting a configuration: every
/// other member must answer, be a `--replSet` member of this set and not be initiated yet;
/// otherwise NodeNotFound (74). So the stand-in refuses an initiate sent before all members run,
/// as MongoDB does.
async fn quorum_check(set: &str, me: &str, hosts: &[String]) -> Result<(), CmdError> {
    let others: Vec<&String> = hosts.iter().filter(|h| h.as_str() != me).collect();
    let checks = others.iter().map(|h| async move {
        let outcome = member_hello(h).await;
        let problem = match outcome {
            Err(e) => Some(e),
            Ok(d) if d.get_str("msg") == Ok("isdbgrid") => Some("it is a mongos".to_string()),
            Ok(d)
                if !d.get_bool("isreplicaset").unwrap_or(false)
                    && d.get_str("setName").is_err() =>
            {
                Some("it was not started with --replSet".to_string())
            }
            Ok(d) => match d.get_str("setName") {
                Ok(other) if other != set => Some(format!("it is a member of replica set {other}")),
                Ok(_) => Some("it already has a replica set configuration".to_string()),
                Err(_) => None,
            },
        };
        problem.map(|p| format!("{h} failed with {p}"))
    });
    let failures: Vec<String> = futures::future::join_all(checks)
        .await
        .into_iter()
        .flatten()
        .collect();
    if failures.is_empty() {
        return Ok(());
    }
    Err(CmdError::new(
        code::NODE_NOT_FOUND,
        format!(
            "replSetInitiate quorum check failed because not all proposed set members responded affirmatively: {}",
            failures.join(", ")
        ),
    ))
}

async fn member_hello(host: &str) -> Result<Document, String> {
    let uri = format!(
        "mongodb://{host}/?directConnection=true&serverSelectionTimeoutMS=2000&connectTimeoutMS=2000"
    );
    let client = mongodb::Client::with_uri_str(uri)
        .await
        .map_err(|e| e.to_string())?;
    let answer = client
        .database("admin")
        .run_command(doc! {"hello": 1})
        .await
        .map_err(|e| format!("HostUnreachable: {}", e.to_string().replace('\n', " ")));
    client.shutdown().immediate(true).await;
    answer
}

/// What the initiating member tells the others.
struct Join {
    config: Document,
    initiator: String,
    winner: String,
    election_at: Instant,
}

async fn tell_member(host: &str, join: Join) -> bool {
    let uri = format!("mongodb://{host}/?directConnection=true&serverSelectionTimeoutMS=2000");
    let Ok(client) = mongodb::Client::with_uri_str(uri).await else {
        return false;
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let in_ms = join
            .election_at
            .saturating_duration_since(Instant::now())
            .as_millis() as i64;
        let cmd = doc! {
            "_standinReplSetJoin": join.config.clone(),
            "initiator": join.initiator.clone(),
            "primary": join.winner.clone(),
            "electionInMs": in_ms,
            "you": host,
        };
        match client.database("admin").run_command(cmd).await {
            Ok(_) => return true,
            Err(e) if matches!(e.kind.as_ref(), mongodb::error::ErrorKind::Command(_)) => {
                return false;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    false
}

/// `_standinReplSetJoin` (stand-in internal): become a SECONDARY of a set another member initiated.
pub(crate) fn join(shared: &Shared, body: &Document) -> CmdResult {
    let Some(set) = shared.cfg.repl_set.clone() else {
        return Err(CmdError::new(
            code::NO_REPLICATION_ENABLED,
            "This node was not started with replication enabled.",
        ));
    };
    let cfg = body
        .get_document("_standinReplSetJoin")
        .map_err(|_| CmdError::bad_value("config document expected"))?
        .clone();
    if cfg.get_str("_id") != Ok(set.as_str()) {
        return Err(CmdError::new(
            code::INVALID_REPLICA_SET_CONFIG,
            format!(
                "config is for set {}, this node is in set {set}",
                cfg.get_str("_id").unwrap_or("?")
            ),
        ));
    }
    let hosts: Vec<String> = cfg
        .get_array("members")
        .map(|m| {
            m.iter()
                .filter_map(|x| x.as_document()?.get_str("host").ok().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    // The initiator says which entry it reached this node at (its isSelf slow path).
    let you = body
        .get_str("you")
        .ok()
        .filter(|y| hosts.iter().any(|h| h == y))
        .map(String::from);
    let Some(me) = hosts
        .iter()
        .find(|h| maps_to_self(shared, h))
        .cloned()
        .or(you)
    else {
        return Err(CmdError::new(
            code::INVALID_REPLICA_SET_CONFIG,
            "no member of the configuration maps to this node",
        ));
    };
    let winner = body.get_str("primary").ok().map(String::from);
    let after = Duration::from_millis(body.get_i64("electionInMs").unwrap_or(0).max(0) as u64);
    let mut st = adopt_config(shared, cfg, me, hosts)?;
    if let Ok(initiator) = body.get_str("initiator") {
        st.joined.push(initiator.to_string());
    }
    if winner.as_deref() == Some(st.me.as_str()) {
        st.win_after(after);
    } else {
        st.primary_host = winner;
        st.election_at = Some(Instant::now() + after);
    }
    Ok(doc! {"ok": 1.0})
}

/// `replSetGetStatus`.
pub(crate) fn get_status(shared: &Shared) -> CmdResult {
    let Some(set) = &shared.cfg.repl_set else {
        return Err(CmdError::new(
            code::NO_REPLICATION_ENABLED,
            "not running with --replSet",
        ));
    };
    let st = lock(shared).ok_or_else(|| CmdError::new(1, "replication state poisoned"))?;
    if st.config.is_none() {
        return Err(CmdError::new(
            code::NOT_YET_INITIALIZED,
            "no replset config has been received",
        ));
    }
    let primary = st.is_primary();
    let (state, state_str) = if primary {
        (1, "PRIMARY")
    } else {
        (2, "SECONDARY")
    };
    let now = DateTime::now();
    let ts = Timestamp {
        time: (now.timestamp_millis() / 1000) as u32,
        increment: 1,
    };
    let mut members = Vec::new();
    for (i, h) in st.hosts.iter().enumerate() {
        let is_me = *h == st.me;
        let (st_n, st_s, health) = if is_me {
            (state, state_str, 1.0)
        } else if st.known_primary() == Some(h.as_str()) {
            (1, "PRIMARY", 1.0)
        } else if st.joined.contains(h) {
            (2, "SECONDARY", 1.0)
        } else {
            (8, "(not reachable/healthy)", 0.0)
        };
        let mut m = doc! {
            "_id": i as i32,
            "name": h.clone(),
            "health": health,
            "state": st_n,
            "stateStr": st_s,
            "uptime": shared.started.elapsed().as_secs() as i64,
            "optime": {"ts": ts, "t": 1_i64},
            "optimeDate": now,
        };
        if is_me {
            m.insert("self", true);
            if primary {
                if let Some(e) = st.election_id {
                    m.insert("electionId", e);
                }
                if let Some(d) = st.election_date {
                    m.insert("electionDate", d);
                }
            }
        }
        members.push(Bson::Document(m));
    }
    Ok(doc! {
        "set": set.clone(),
        "date": now,
        "myState": state,
        "term": 1_i64,
        "heartbeatIntervalMillis": 2000_i64,
        "members": members,
        "ok": 1.0,
    })
}

/// `replSetGetConfig`.
pub(crate) fn get_config(shared: &Shared) -> CmdResult {
    if shared.cfg.repl_set.is_none() {
        return Err(CmdError::new(
            code::NO_REPLICATION_ENABLED,
            "not running with --replSet",
        ));
    }
    let st = lock(shared).ok_or_else(|| CmdError::new(1, "replication state poisoned"))?;
    match &st.config {
        None => Err(CmdError::new(
            code::NOT_YET_INITIALIZED,
            "no replset config has been received",
        )),
        Some(c) => Ok(doc! {"config": c.clone(), "ok": 1.0}),
    }
}
