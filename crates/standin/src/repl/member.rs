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
}

impl ReplState {
    /// True once initiated and the election delay passed.
    pub(crate) fn is_primary(&self) -> bool {
        self.primary_at.is_some_and(|t| Instant::now() >= t)
    }

    /// The primary another member is, once the election has been decided.
    pub(crate) fn known_primary(&self) -> Option<&str> {
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
