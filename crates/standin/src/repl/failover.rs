//! `--step-down [SET:]T/D`: a failover as clients and monitors see it. T ms after the set's
//! primary answered its first query on a user database, the primary steps down; for D ms no
//! member is primary (`hello` says `isWritablePrimary: false` and names no `primary`, writes fail
//! with NotWritablePrimary); then the next member of the configuration is primary, with a newer
//! election id.
//!
//! MongoDB: a primary that dies or loses its majority leaves the set without a primary for
//! `electionTimeoutMillis` (10 s) plus up to 15 % (`electionTimeoutOffsetLimitFraction`,
//! `mongodb/mongo:src/mongo/db/repl/repl_settings.idl`), plus the election; a stepped-down
//! primary answers as a secondary. The manual's `hello` output: "`hello.primary`: the address of
//! the current primary member of the replica set", absent while there is none.
//!
//! The trigger is the first query rather than the server's start so that the failover falls in a
//! run phase however long bring-up and load took on a busy machine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mongodb::bson::{Document, doc, oid::ObjectId};

use super::lock;
use super::member::Failover;
use crate::cmderr::{CmdError, CmdResult};
use crate::state::ServerState;

/// Databases whose queries do not start the clock: the cluster's own.
const SYSTEM_DBS: &[&str] = &["admin", "config", "local"];

/// Called by every `find`: the first query on a user database answered by a primary given
/// `--step-down` for its set schedules the failover and tells the other members.
pub(crate) fn note_query(shared: &Arc<ServerState>, db: &str) {
    let (Some(step), Some(set)) = (&shared.cfg.step_down, &shared.cfg.repl_set) else {
        return;
    };
    if SYSTEM_DBS.contains(&db) || !step.applies_to(set) {
        return;
    }
    let Some(mut st) = lock(shared) else { return };
    if st.failover.is_some() || !st.is_primary() {
        return;
    }
    let at = st.hosts.iter().position(|h| *h == st.me).unwrap_or(0);
    let new_primary = st.hosts[(at + 1) % st.hosts.len().max(1)].clone();
    let from = Instant::now() + Duration::from_millis(step.after_ms);
    let failover = Failover {
        from,
        until: from + Duration::from_millis(step.for_ms),
        new_primary,
        election_id: newer_than(st.election_id),
    };
    let others: Vec<String> = st.hosts.iter().filter(|h| **h != st.me).cloned().collect();
    st.failover = Some(failover.clone());
    drop(st);
    for host in others {
        let cmd = told(&failover, &host);
        let peer = shared.peer.clone();
        tokio::spawn(async move { super::initiate::send_internal(&peer, &host, cmd).await });
    }
}

/// An election id after `old`'s: a later timestamp, as a later term's election has.
fn newer_than(old: Option<ObjectId>) -> ObjectId {
    let now = ObjectId::new();
    let Some(old) = old else { return now };
    if now.timestamp() > old.timestamp() {
        return now;
    }
    let secs = old.timestamp().timestamp_millis() / 1000 + 1;
    let mut bytes = now.bytes();
    bytes[..4].copy_from_slice(&(secs as u32).to_be_bytes());
    ObjectId::from_bytes(bytes)
}

/// `_standinReplSetFailover` (stand-in internal) for member `host`: the failover relative to now.
fn told(f: &Failover, host: &str) -> Document {
    let in_ms = |t: Instant| t.saturating_duration_since(Instant::now()).as_millis() as i64;
    doc! {
        "_standinReplSetFailover": 1,
        "stepDownInMs": in_ms(f.from),
        "electedInMs": in_ms(f.until),
        "primary": f.new_primary.clone(),
        "electionId": f.election_id,
        "you": host,
    }
}

/// `_standinReplSetFailover`: another member tells this one of the failover it scheduled.
pub(crate) fn failover(shared: &ServerState, body: &Document) -> CmdResult {
    let ms = |k: &str| Duration::from_millis(body.get_i64(k).unwrap_or(0).max(0) as u64);
    let (Ok(primary), Ok(election_id)) =
        (body.get_str("primary"), body.get_object_id("electionId"))
    else {
        return Err(CmdError::bad_value("primary and electionId expected"));
    };
    let now = Instant::now();
    let mut st = lock(shared).ok_or_else(|| CmdError::poisoned("replication state"))?;
    st.failover = Some(Failover {
        from: now + ms("stepDownInMs"),
        until: now + ms("electedInMs"),
        new_primary: primary.to_string(),
        election_id,
    });
    Ok(doc! {"ok": 1.0})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_election_id_is_newer_even_within_the_same_second() {
        let old = ObjectId::new();
        let new = newer_than(Some(old));
        assert!(new > old, "{new} after {old}");
        assert!(new.timestamp() > old.timestamp());
    }
}
