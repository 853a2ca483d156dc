//! A shard's operations over a cell in which its replica set failed over. Each member counts in
//! `opcounters` only what it served as primary (a secondary counts the writes it applies in
//! `opcountersRepl` instead), so the new primary read from the cell's start to its end covers
//! only the part of the cell after the election, and the old primary only the part before:
//! the shard's figure is their sum over every member of the set.

use serde::{Deserialize, Serialize};

use super::StatusSnapshot;

/// One set's operations summed over its members for a cell in which it failed over.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SetCounts {
    /// The set (the shard's name).
    pub set: String,
    /// The members whose counters were read before and after the cell, and summed.
    pub members: Vec<String>,
    /// Members not read both before and after the cell: the sum would leave their share out,
    /// so [`Self::ops`] is then `None`, never a partial figure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
    /// Data operations (insert, query, update, delete, getmore) served by the set during the
    /// cell, summed over [`Self::members`].
    pub ops: Option<u64>,
    /// Writes the members applied from another member's oplog (`opcountersRepl`), summed:
    /// replication's work, not the client's, so not in [`Self::ops`]; `None` where no member
    /// reports `opcountersRepl` (the stand-in, which does not replicate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repl_applied: Option<u64>,
}

/// One member's readings around the cell: its name, before, after.
pub(crate) type Reading<'a> = (
    &'a str,
    Option<&'a StatusSnapshot>,
    Option<&'a StatusSnapshot>,
);

impl SetCounts {
    /// Sums `readings` (every member of `set`) into the set's figures.
    pub(crate) fn sum(set: &str, readings: &[Reading<'_>]) -> SetCounts {
        let mut out = SetCounts {
            set: set.to_string(),
            ..Default::default()
        };
        let (mut ops, mut applied) = (0u64, None::<u64>);
        for (name, before, after) in readings {
            let (Some(b), Some(a)) = (before, after) else {
                out.unread.push(name.to_string());
                continue;
            };
            out.members.push(name.to_string());
            ops += a.data_ops().saturating_sub(b.data_ops());
            if let (Some(rb), Some(ra)) = (b.repl_applied, a.repl_applied) {
                applied = Some(applied.unwrap_or(0) + ra.saturating_sub(rb));
            }
        }
        out.ops = out.unread.is_empty().then_some(ops);
        out.repl_applied = applied;
        out
    }

    /// What the cell's reader is told: the set failed over, and how its figure was made.
    pub(crate) fn sentence(&self) -> String {
        let summed = format!(
            "{} failed over during the cell: its operations are summed over its members ({}), each of which counted only what it served as primary",
            self.set,
            self.members.join(", ")
        );
        match self.unread.is_empty() {
            true => summed,
            false => format!(
                "{summed}; {} could not be read before and after the cell, so the shard's operations are not reported",
                self.unread.join(", ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(query: u64, update: u64, applied: Option<u64>) -> StatusSnapshot {
        StatusSnapshot {
            query,
            update,
            repl_applied: applied,
            ..Default::default()
        }
    }

    #[test]
    fn a_failed_over_set_counts_what_each_member_served_as_primary() {
        // sh0 served 600 operations before stepping down, then applied 150 writes as a
        // secondary; sh0-1 applied 200 writes as a secondary, then served 400 as primary.
        let (b0, a0) = (counters(1000, 0, Some(0)), counters(1400, 200, Some(150)));
        let (b1, a1) = (counters(0, 0, Some(0)), counters(300, 100, Some(200)));
        let (b2, a2) = (counters(0, 0, Some(0)), counters(0, 0, Some(350)));
        let s = SetCounts::sum(
            "sh0",
            &[
                ("sh0", Some(&b0), Some(&a0)),
                ("sh0-1", Some(&b1), Some(&a1)),
                ("sh0-2", Some(&b2), Some(&a2)),
            ],
        );
        assert_eq!(
            s.ops,
            Some(1000),
            "applied writes are not client operations"
        );
        assert_eq!(s.repl_applied, Some(700));
        assert_eq!(s.members, ["sh0", "sh0-1", "sh0-2"]);
        assert!(
            s.sentence()
                .starts_with("sh0 failed over during the cell: its operations are summed over its members (sh0, sh0-1, sh0-2)"),
            "{}",
            s.sentence()
        );
    }

    #[test]
    fn a_member_not_read_leaves_the_sum_unreported_and_named() {
        let (b, a) = (counters(0, 0, None), counters(500, 0, None));
        let s = SetCounts::sum(
            "sh1",
            &[("sh1", Some(&b), Some(&a)), ("sh1-1", Some(&b), None)],
        );
        assert_eq!(s.ops, None);
        assert_eq!(s.repl_applied, None);
        assert_eq!(s.unread, ["sh1-1"]);
        assert!(s.sentence().contains("; sh1-1 could not be read before and after the cell, so the shard's operations are not reported"));
    }
}
