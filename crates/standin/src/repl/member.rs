//! This node's replica-set membership, the data the replica-set commands read and change
//! (held in the server's shared state).

use std::time::{Duration, Instant};

use mongodb::bson::{DateTime, Document, oid::ObjectId};

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
    /// A failover scheduled by `--step-down` (every member of the set is told the same one).
    pub failover: Option<Failover>,
}

/// A failover (`--step-down`): from `from` the set has no primary; from `until` `new_primary` is.
#[derive(Debug, Clone)]
pub(crate) struct Failover {
    /// When the primary steps down.
    pub from: Instant,
    /// When the next election is decided.
    pub until: Instant,
    /// The member that wins it.
    pub new_primary: String,
    /// Its election id: newer than the first election's, as a new term's is, so drivers take
    /// the new primary's word over a stale one's (server discovery and monitoring spec).
    pub election_id: ObjectId,
}

/// Where a failover stands at one moment.
enum Phase<'a> {
    /// Not begun (or none scheduled): the first election holds.
    Before,
    /// The set has no primary.
    During,
    /// This member is primary.
    After(&'a Failover),
}

impl ReplState {
    fn phase(&self) -> Phase<'_> {
        let now = Instant::now();
        match &self.failover {
            Some(f) if now >= f.until => Phase::After(f),
            Some(f) if now >= f.from => Phase::During,
            _ => Phase::Before,
        }
    }

    /// True once initiated and the election delay passed (and not during or after a failover
    /// that another member won).
    pub(crate) fn is_primary(&self) -> bool {
        match self.phase() {
            Phase::Before => self.primary_at.is_some_and(|t| Instant::now() >= t),
            Phase::During => false,
            Phase::After(f) => f.new_primary == self.me,
        }
    }

    /// The election id of this member's current term as primary.
    pub(crate) fn current_election_id(&self) -> Option<ObjectId> {
        match self.phase() {
            Phase::After(f) => Some(f.election_id),
            _ => self.election_id,
        }
    }

    /// The primary another member is, once the election has been decided (none while a
    /// failover's election goes on).
    pub(crate) fn known_primary(&self) -> Option<&str> {
        match self.phase() {
            Phase::During => return None,
            Phase::After(f) => return Some(f.new_primary.as_str()),
            Phase::Before => {}
        }
        match (&self.primary_host, self.election_at) {
            (Some(p), Some(t)) if Instant::now() >= t => Some(p.as_str()),
            (Some(p), None) => Some(p.as_str()),
            _ => None,
        }
    }

    /// This member wins the election `after` from now: it becomes PRIMARY then.
    pub(crate) fn win_after(&mut self, after: Duration) {
        self.primary_at = Some(Instant::now() + after);
        self.election_id = Some(ObjectId::new());
        self.election_date = Some(DateTime::from_millis(
            DateTime::now().timestamp_millis() + after.as_millis() as i64,
        ));
    }
}
