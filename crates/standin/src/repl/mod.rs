//! Replica-set membership: initiation with the real validation rules, then an election.
//!
//! As in MongoDB, only a one-member set elects itself at once (after `--primary-delay-ms`). A set
//! of several members holds its first election after `--election-delay-ms` (default 1–2 s), and
//! the winner is `--election-winner N` of the initiating member, or by default a random member
//! other than member 0: in MongoDB randomized election timeouts decide, so a tool that waits for
//! member 0 to become primary hangs some of the time; here it fails every time, where a test sees it.

mod failover;
mod initiate;
pub(crate) mod member;

use std::time::{Duration, Instant};

use mongodb::bson::{Bson, DateTime, Document, doc};

use crate::cmderr::{CmdError, CmdResult, code};
use crate::state::ServerState;
use crate::value::{as_i64, timestamp_now};
pub(crate) use failover::{failover, note_query};
pub(crate) use initiate::initiate;
use member::ReplState;

/// NoReplicationEnabled (76) for `replSetInitiate` and the join on a node without `--replSet`.
fn not_replicating() -> CmdError {
    CmdError::new(
        code::NO_REPLICATION_ENABLED,
        "This node was not started with replication enabled.",
    )
}

fn lock(shared: &ServerState) -> Option<std::sync::MutexGuard<'_, ReplState>> {
    shared.repl.lock().ok()
}

/// Makes `cfg` this member's configuration (`me` among `hosts`), by `replSetInitiate` or by the
/// initiating member telling it; a member that already has one refuses, as mongod does.
fn adopt_config(
    shared: &ServerState,
    cfg: Document,
    me: String,
    hosts: Vec<String>,
) -> Result<std::sync::MutexGuard<'_, ReplState>, CmdError> {
    let mut st = lock(shared).ok_or_else(|| CmdError::poisoned("replication state"))?;
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
pub(crate) fn hello_fields(shared: &ServerState) -> (bool, Document) {
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
        if let Some(e) = st.current_election_id() {
            d.insert("electionId", e);
        }
        let now = DateTime::now();
        let ts = timestamp_now(now);
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

/// Refuses writes unless this node may take them (standalone, or an initiated primary):
/// NotWritablePrimary (10107), labelled `RetryableWriteError` when the write is a retryable one
/// (it carries a `txnNumber`), as mongod 4.4+ labels it (`getErrorLabels`,
/// `mongodb/mongo:src/mongo/db/handle_request_response.cpp`), so a driver retries it once on
/// the new primary.
pub(crate) fn check_writable(shared: &ServerState, body: &Document) -> CmdResult<()> {
    if shared.cfg.repl_set.is_none() {
        return Ok(());
    }
    match lock(shared) {
        Some(st) if st.is_primary() => Ok(()),
        _ => {
            let e = CmdError::new(code::NOT_WRITABLE_PRIMARY, "not primary");
            Err(if body.contains_key("txnNumber") {
                e.labelled("RetryableWriteError")
            } else {
                e
            })
        }
    }
}

/// Refuses reads before the node has a configuration.
pub(crate) fn check_readable(shared: &ServerState) -> CmdResult<()> {
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
fn maps_to_self(shared: &ServerState, host: &str) -> bool {
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

/// `_standinReplSetJoin` (stand-in internal): become a SECONDARY of a set another member initiated.
pub(crate) fn join(shared: &ServerState, body: &Document) -> CmdResult {
    let Some(set) = shared.cfg.repl_set.clone() else {
        return Err(not_replicating());
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
pub(crate) fn get_status(shared: &ServerState) -> CmdResult {
    let Some(set) = &shared.cfg.repl_set else {
        return Err(CmdError::new(
            code::NO_REPLICATION_ENABLED,
            "not running with --replSet",
        ));
    };
    let st = lock(shared).ok_or_else(|| CmdError::poisoned("replication state"))?;
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
    let ts = timestamp_now(now);
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
                if let Some(e) = st.current_election_id() {
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
pub(crate) fn get_config(shared: &ServerState) -> CmdResult {
    if shared.cfg.repl_set.is_none() {
        return Err(CmdError::new(
            code::NO_REPLICATION_ENABLED,
            "not running with --replSet",
        ));
    }
    let st = lock(shared).ok_or_else(|| CmdError::poisoned("replication state"))?;
    match &st.config {
        None => Err(CmdError::new(
            code::NOT_YET_INITIALIZED,
            "no replset config has been received",
        )),
        Some(c) => Ok(doc! {"config": c.clone(), "ok": 1.0}),
    }
}
