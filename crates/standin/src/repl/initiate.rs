//! `replSetInitiate`: the configuration checked with mongod's rules, the quorum check, this
//! node found among the members, then the first election and the other members told.

use crate::peer::Peer;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mongodb::bson::{Bson, Document, doc};

use super::{adopt_config, is_localhost, lock, maps_to_self, not_replicating};
use crate::cmderr::{CmdError, CmdResult, code};
use crate::config::StandinConfig;
use crate::state::ServerState;
use crate::value::{as_i64, truthy, type_name};

/// Who wins a set's first election and after how long: a one-member set elects itself after
/// `--primary-delay-ms`; a larger set takes `--election-delay-ms` (default 1–2 s) and is won by
/// `--election-winner` or a random member other than member 0.
fn first_election(cfg: &StandinConfig, members: usize) -> Result<(usize, Duration), CmdError> {
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

/// MongoDB's isSelf slow path: `host` is this node when a connection to it reaches a server
/// whose `_isSelf` id is this one's (a name or address bound elsewhere, such as a Docker host's
/// published port reached from inside the container).
async fn is_self_slow(shared: &ServerState, host: &str) -> bool {
    let answer = ask_member(&shared.peer, host, doc! {"_isSelf": 1}).await;
    answer.is_ok_and(|d| d.get_object_id("id").ok() == Some(shared.instance_id))
}

fn split_host(host: &str) -> &str {
    host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host)
}

/// `replSetInitiate`.
pub(crate) async fn initiate(shared: &Arc<ServerState>, body: &Document) -> CmdResult {
    let Some(set) = shared.cfg.repl_set.clone() else {
        return Err(not_replicating());
    };
    refuse_if_initiated(shared)?;
    let mut cfg = proposed_config(shared, &set, body)?;
    check_set_name(&cfg, &set)?;
    if !cfg.contains_key("version") {
        cfg.insert("version", 1);
    }
    let members = member_list(&cfg)?;
    check_config_server(shared, &mut cfg)?;
    let (hosts, me) = member_hosts(shared, &members)?;
    check_localhost_mix(&hosts)?;
    let me = find_self(shared, &set, &cfg, &hosts, me).await?;
    let (winner, delay) = first_election(&shared.cfg, hosts.len())?;
    quorum_check(&shared.peer, &set, &me, &hosts).await?;
    refuse_if_initiated(shared)?;
    let winner_host = hosts[winner].clone();
    elect_and_tell(shared, cfg, me, hosts, winner_host, delay)
}

/// AlreadyInitialized (23) once the node has a configuration.
fn refuse_if_initiated(shared: &ServerState) -> CmdResult<()> {
    if lock(shared).is_some_and(|s| s.config.is_some()) {
        return Err(CmdError::new(
            code::ALREADY_INITIALIZED,
            "already initialized",
        ));
    }
    Ok(())
}

/// The configuration given, or mongod's default (this node alone) when there is none.
fn proposed_config(shared: &ServerState, set: &str, body: &Document) -> CmdResult<Document> {
    match body.get("replSetInitiate") {
        Some(Bson::Document(d)) if !d.is_empty() => Ok(d.clone()),
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
            Ok(
                doc! {"_id": set, "version": 1, "members": [{"_id": 0, "host": format!("{h}:{}", shared.port)}]},
            )
        }
        Some(other) => Err(CmdError::wrong_type(
            "replSetInitiate",
            "replSetInitiate",
            type_name(other),
            "object",
        )),
    }
}

/// The configuration's `_id` must be the `--replSet` name.
fn check_set_name(cfg: &Document, set: &str) -> CmdResult<()> {
    let id = match cfg.get("_id") {
        Some(Bson::String(s)) => s,
        Some(_) => {
            return Err(CmdError::new(
                code::TYPE_MISMATCH,
                "replica set configuration _id must be a string",
            ));
        }
        None => {
            return Err(invalid_config("Missing expected field \"_id\""));
        }
    };
    if id != set {
        return Err(invalid_config(format!(
            "Attempting to initiate a replica set with name {id}, but command line reports {set}; rejecting"
        )));
    }
    Ok(())
}

/// InvalidReplicaSetConfig (93).
fn invalid_config(msg: impl Into<String>) -> CmdError {
    CmdError::new(code::INVALID_REPLICA_SET_CONFIG, msg)
}

/// The `members` array: present, an array, not empty.
fn member_list(cfg: &Document) -> CmdResult<Vec<Bson>> {
    match cfg.get("members") {
        Some(Bson::Array(m)) if !m.is_empty() => Ok(m.clone()),
        Some(Bson::Array(_)) => Err(invalid_config(
            "Replica set configuration must contain at least one member",
        )),
        Some(other) => Err(CmdError::new(
            code::TYPE_MISMATCH,
            format!(
                "Expected \"members\" field in replica set configuration to have type array, but found {}",
                type_name(other)
            ),
        )),
        None => Err(invalid_config("Missing expected field \"members\"")),
    }
}

/// `configsvr: true` in the configuration if and only if the node runs with `--configsvr`.
fn check_config_server(shared: &ServerState, cfg: &mut Document) -> CmdResult<()> {
    let configsvr = match cfg.get("configsvr") {
        Some(v) => truthy(v),
        None => shared.cfg.configsvr,
    };
    if configsvr && !shared.cfg.configsvr {
        return Err(invalid_config(
            "Nodes being used for config servers must be started with the --configsvr flag",
        ));
    }
    if !configsvr && shared.cfg.configsvr {
        return Err(invalid_config(
            "Config servers must have configsvr:true in their config",
        ));
    }
    if shared.cfg.configsvr {
        cfg.insert("configsvr", true);
    }
    Ok(())
}

/// Every member's `host:port` (unique `_id`s and hosts), and the first that names this node
/// by an address it can bind.
fn member_hosts(
    shared: &ServerState,
    members: &[Bson],
) -> CmdResult<(Vec<String>, Option<String>)> {
    let mut hosts: Vec<String> = Vec::new();
    let mut ids: Vec<i64> = Vec::new();
    let mut me: Option<String> = None;
    for (i, m) in members.iter().enumerate() {
        let (mid, host, arbiter) = member_entry(i, m)?;
        if let Some(j) = ids.iter().position(|x| *x == mid) {
            return Err(invalid_config(format!(
                "Found two member configurations with same _id field, members.{j}._id == members.{i}._id == {mid}"
            )));
        }
        if let Some(j) = hosts.iter().position(|x| x.eq_ignore_ascii_case(&host)) {
            return Err(invalid_config(format!(
                "Found two member configurations with same host field, members.{j}.host == members.{i}.host == {host}"
            )));
        }
        if shared.cfg.configsvr && arbiter {
            return Err(invalid_config(
                "Arbiters are not allowed in replica set configurations being used for config servers",
            ));
        }
        if me.is_none() && maps_to_self(shared, &host) {
            me = Some(host.clone());
        }
        ids.push(mid);
        hosts.push(host);
    }
    Ok((hosts, me))
}

/// `members.{i}`: its `_id`, its host with the default port added, whether it is an arbiter.
fn member_entry(i: usize, m: &Bson) -> CmdResult<(i64, String, bool)> {
    let Bson::Document(m) = m else {
        return Err(CmdError::new(
            code::TYPE_MISMATCH,
            format!("Expected type object for members.{i}"),
        ));
    };
    let Some(mid) = m.get("_id").and_then(as_i64) else {
        return Err(invalid_config(format!(
            "Missing or non-numeric field \"_id\" in members.{i}"
        )));
    };
    let Ok(host) = m.get_str("host") else {
        return Err(invalid_config(format!(
            "Missing expected field \"host\" in members.{i}"
        )));
    };
    let host = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:27017")
    };
    Ok((mid, host, m.get("arbiterOnly").is_some_and(truthy)))
}

/// Either every host is a localhost name or none is, as mongod requires.
fn check_localhost_mix(hosts: &[String]) -> CmdResult<()> {
    let local = hosts.iter().filter(|h| is_localhost(split_host(h))).count();
    if local != 0 && local != hosts.len() {
        return Err(invalid_config(format!(
            "Either all host names in a replica set configuration must be localhost references, or none must be; found {local} out of {}",
            hosts.len()
        )));
    }
    Ok(())
}

/// The member that is this node: `found` by address, else by MongoDB's isSelf slow path.
async fn find_self(
    shared: &ServerState,
    set: &str,
    cfg: &Document,
    hosts: &[String],
    found: Option<String>,
) -> CmdResult<String> {
    if let Some(me) = found {
        return Ok(me);
    }
    for h in hosts {
        if is_self_slow(shared, h).await {
            return Ok(h.clone());
        }
    }
    Err(invalid_config(format!(
        "No host described in new configuration with {{version: {}, term: 0}} for replica set {set} maps to this node",
        cfg.get("version").cloned().unwrap_or(Bson::Int32(1))
    )))
}

/// Adopts the configuration, schedules the first election (won by `winner_host` after `delay`)
/// and tells the other members both.
fn elect_and_tell(
    shared: &Arc<ServerState>,
    cfg: Document,
    me: String,
    hosts: Vec<String>,
    winner_host: String,
    delay: Duration,
) -> CmdResult {
    let mut st = adopt_config(shared, cfg, me, hosts)?;
    let election_at = Instant::now() + delay;
    if st.me == winner_host {
        st.win_after(delay);
    } else {
        st.primary_host = Some(winner_host.clone());
        st.election_at = Some(election_at);
    }
    let others: Vec<String> = st.hosts.iter().filter(|h| **h != st.me).cloned().collect();
    let join = Join {
        config: st.config.clone().unwrap_or_default(),
        initiator: st.me.clone(),
        winner: winner_host,
        election_at,
    };
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
        let join = join.clone();
        let sh = shared.clone();
        tokio::spawn(async move {
            if tell_member(&sh.peer, &host, join).await
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
async fn quorum_check(peer: &Peer, set: &str, me: &str, hosts: &[String]) -> Result<(), CmdError> {
    let others: Vec<&String> = hosts.iter().filter(|h| h.as_str() != me).collect();
    let checks = others.iter().map(|h| async move {
        let outcome = ask_member(peer, h, doc! {"hello": 1}).await;
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

/// Runs `cmd` once on member `host` (waiting up to 2 s for it); its answer, or why there is none.
async fn ask_member(peer: &Peer, host: &str, cmd: Document) -> Result<Document, String> {
    let uri = format!(
        "mongodb://{host}/?directConnection=true&serverSelectionTimeoutMS=2000&connectTimeoutMS=2000"
    );
    let client = peer.client(&uri).await.map_err(|e| e.to_string())?;
    let answer = client
        .database("admin")
        .run_command(cmd)
        .await
        .map_err(|e| format!("HostUnreachable: {}", e.to_string().replace('\n', " ")));
    client.shutdown().immediate(true).await;
    answer
}

/// What the initiating member tells the others.
#[derive(Clone)]
struct Join {
    config: Document,
    initiator: String,
    winner: String,
    election_at: Instant,
}

async fn tell_member(peer: &Peer, host: &str, join: Join) -> bool {
    let uri = format!("mongodb://{host}/?directConnection=true&serverSelectionTimeoutMS=2000");
    let Ok(client) = peer.client(&uri).await else {
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

/// Sends a stand-in internal command to member `host`, retrying while it cannot be reached
/// (for up to about 5 s); whether it accepted it.
pub(super) async fn send_internal(peer: &Peer, host: &str, cmd: Document) -> bool {
    let uri = format!("mongodb://{host}/?directConnection=true&serverSelectionTimeoutMS=1000");
    let Ok(client) = peer.client(&uri).await else {
        return false;
    };
    for _ in 0..10 {
        match client.database("admin").run_command(cmd.clone()).await {
            Ok(_) => return true,
            Err(e) if matches!(e.kind.as_ref(), mongodb::error::ErrorKind::Command(_)) => {
                return false;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    false
}
