//! The per-second timeline of a run: what completed, what failed and which members answered, one
//! entry per second of the timed window. The validity verdict is computed from it (and from the
//! liveness probes' outages), and it is stored in every result document so a reader can see *when*
//! something went wrong, not only that it did (`docs/result-schema.md`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One second of the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineSecond {
    /// Seconds since the timed window started (0 = the first second).
    pub second: u32,
    /// Operations that completed in this second, per operation (`READ`, `UPDATE`, ...), every
    /// status included.
    pub operations: BTreeMap<String, u64>,
    /// Operations that completed in this second with a status other than OK, per operation.
    pub errors: BTreeMap<String, u64>,
    /// Members whose liveness probe answered in this second (`name (host:port)`).
    #[serde(default)]
    pub answered: Vec<String>,
    /// Members that were probed but did not answer in this second.
    #[serde(default)]
    pub silent: Vec<String>,
    /// The slowest answered probe of this second per member, ms (a slow member is not a silent
    /// one: `docs/result-schema.md`, "Validity").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub probe_ms: BTreeMap<String, u32>,
}

/// A span during which something was wrong, in seconds since the timed window started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    /// Who (`sh0 (localhost:41110)`) or what (`all clients`) it concerns.
    pub subject: String,
    /// When it started, seconds into the run.
    pub from_s: f64,
    /// How long it lasted, seconds.
    pub duration_s: f64,
    /// Still going on when the run ended.
    pub ongoing: bool,
}

/// A span in which a replica set (a shard) had no writable primary: an election, told by its
/// members' `hello` answers (`docs/reliability.md`, "A set that failed over").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoPrimary {
    /// The set (`sh0`).
    pub set: String,
    /// When it started, seconds into the run.
    pub from_s: f64,
    /// How long it lasted, seconds.
    pub duration_s: f64,
    /// Still without a primary when the run ended.
    pub ongoing: bool,
    /// The member primary after it (`name (host:port)`), when one was elected in the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_primary: Option<String>,
    /// The config server replica set's: operations on cached routing need no config primary,
    /// so the data path went on (routing refreshes read from any config member).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub config_server: bool,
}

impl NoPrimary {
    /// Whether it overlaps `o`.
    fn overlaps(&self, o: &Outage) -> bool {
        self.from_s < o.from_s + o.duration_s && o.from_s < self.from_s + self.duration_s
    }
}

/// Everything watched while the run went on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// One entry per second of the timed window.
    pub seconds: Vec<TimelineSecond>,
    /// Members probed during the run (`name (host:port)`), in probe order.
    #[serde(default)]
    pub probed: Vec<String>,
    /// Spans in which a member did not answer its probe for at least the stall threshold.
    #[serde(default)]
    pub member_outages: Vec<Outage>,
    /// Spans in which no client completed any operation for at least the stall threshold.
    #[serde(default)]
    pub stalls: Vec<Outage>,
    /// The member whose silence of `microshard.deadseconds` ended the run early, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_member: Option<Outage>,
    /// Spans in which a replica set had no primary (elections).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub no_primary: Vec<NoPrimary>,
}

impl Timeline {
    /// The sets that had no primary on the data path (shards, or the single replica set), by
    /// name, each once: a config server election is left out.
    pub(crate) fn data_path_elections(&self) -> Vec<String> {
        let mut sets: Vec<String> = (self.no_primary.iter())
            .filter(|n| !n.config_server)
            .map(|n| n.set.clone())
            .collect();
        sets.dedup();
        sets
    }

    /// The stalls during which no probed member was silent and every set had a primary: the
    /// server stalled while it kept answering (a finding, not a broken measurement).
    pub(crate) fn server_stalls(&self) -> impl Iterator<Item = &Outage> {
        self.stalls.iter().filter(|s| {
            !self
                .member_outages
                .iter()
                .any(|o| o.from_s < s.from_s + s.duration_s && s.from_s < o.from_s + o.duration_s)
                && !(self.no_primary.iter()).any(|n| !n.config_server && n.overlaps(s))
        })
    }

    /// Adds another timeline of the same window second by second (several clients, one clock).
    pub(crate) fn merge_concurrent(&mut self, other: &Timeline) {
        for s in &other.seconds {
            match self.seconds.iter_mut().find(|m| m.second == s.second) {
                Some(mine) => {
                    for (op, n) in &s.operations {
                        *mine.operations.entry(op.clone()).or_insert(0) += n;
                    }
                    for (op, n) in &s.errors {
                        *mine.errors.entry(op.clone()).or_insert(0) += n;
                    }
                }
                None => self.seconds.push(s.clone()),
            }
        }
        self.seconds.sort_by_key(|s| s.second);
        self.member_outages
            .extend(other.member_outages.iter().cloned());
        self.stalls.extend(other.stalls.iter().cloned());
        if self.dead_member.is_none() {
            self.dead_member = other.dead_member.clone();
        }
        // Every client watches the same sets: one election is kept once.
        for n in &other.no_primary {
            let seen = self.no_primary.iter().any(|m| {
                m.set == n.set
                    && m.from_s < n.from_s + n.duration_s + 1.0
                    && n.from_s < m.from_s + m.duration_s + 1.0
            });
            if !seen {
                self.no_primary.push(n.clone());
            }
        }
        for p in &other.probed {
            if !self.probed.contains(p) {
                self.probed.push(p.clone());
            }
        }
    }
}

/// How often, how long and in all how long the server stalled in one result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StallCount {
    /// Stalls of at least `microshard.stallseconds`.
    pub count: u32,
    /// The longest, seconds.
    pub longest_s: f64,
    /// All of them together, seconds.
    pub total_s: f64,
}

impl StallCount {
    /// Counts these stalls.
    pub(crate) fn of<'a>(stalls: impl Iterator<Item = &'a Outage>) -> StallCount {
        stalls.fold(StallCount::default(), |acc, s| StallCount {
            count: acc.count + 1,
            longest_s: acc.longest_s.max(s.duration_s),
            total_s: acc.total_s + s.duration_s,
        })
    }

    /// Both counts together (repetitions of one cell, several clients).
    pub(crate) fn add(&self, other: &StallCount) -> StallCount {
        StallCount {
            count: self.count + other.count,
            longest_s: self.longest_s.max(other.longest_s),
            total_s: self.total_s + other.total_s,
        }
    }
}

/// Formats seconds as the verdict sentences do (`5.2 s`).
pub(crate) fn seconds(s: f64) -> String {
    format!("{s:.1} s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_timelines_add_per_second() {
        let sec = |second, ops: u64, errs: u64| TimelineSecond {
            second,
            operations: BTreeMap::from([("READ".to_string(), ops)]),
            errors: BTreeMap::from([("READ".to_string(), errs)]),
            ..Default::default()
        };
        let mut a = Timeline {
            seconds: vec![sec(0, 10, 1), sec(1, 20, 0)],
            ..Default::default()
        };
        let b = Timeline {
            seconds: vec![sec(1, 5, 2), sec(2, 7, 0)],
            ..Default::default()
        };
        a.merge_concurrent(&b);
        let totals: Vec<(u64, u64)> = a
            .seconds
            .iter()
            .map(|s| (s.operations.values().sum(), s.errors.values().sum()))
            .collect();
        assert_eq!(totals, vec![(10, 1), (25, 2), (7, 0)]);
    }
}
