//! Elections as the liveness probes see them: every probe is a `hello`, whose
//! `isWritablePrimary` says whether the member is its set's primary. A set none of whose members
//! says so had no primary: an election (a primary stepped down, died or lost its majority), which
//! MongoDB ends within about 12 s (`electionTimeoutMillis` 10 s plus up to 15 %) while `mongos`
//! holds the set's operations for up to 15 s (`defaultFindReplicaSetHostTimeoutMS`). From outside
//! it looks like a stall, but the topology changed under the run: its own reason, and invalid
//! (`docs/reliability.md`, "A set that failed over").

use std::collections::BTreeMap;
use std::time::Instant;

use crate::db::probe::{ProbeLog, ProbeResult, ProbeTarget};

/// A span in which one replica set had no writable primary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoPrimarySpan {
    /// The set (shard) name.
    pub set: String,
    /// When the probe that first found no primary was sent.
    pub from: Instant,
    /// When the probe that found the next primary was sent (`None`: none by the end).
    pub until: Option<Instant>,
    /// The member (index into the probed targets) primary after it.
    pub after: Option<usize>,
}

/// Every span without a primary, per set, in the order they began.
pub(crate) fn no_primary_spans(targets: &[ProbeTarget], log: &ProbeLog) -> Vec<NoPrimarySpan> {
    let mut sets: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, t) in targets.iter().enumerate() {
        if let Some(set) = &t.set {
            sets.entry(set.as_str()).or_default().push(i);
        }
    }
    let mut out: Vec<NoPrimarySpan> = sets
        .into_iter()
        .flat_map(|(set, members)| spans_of(set, &members, log))
        .collect();
    out.sort_by_key(|s| s.from);
    out
}

/// One set's spans: its members' answers in the order they came, each member counted at its
/// latest answer. A member that stops answering keeps its last word (a silent primary is an
/// outage, not an election), and the set counts as without a primary only once every member
/// has answered or a primary was seen.
fn spans_of(set: &str, members: &[usize], log: &ProbeLog) -> Vec<NoPrimarySpan> {
    let mut answers: Vec<&ProbeResult> = log
        .results
        .iter()
        .filter(|r| r.answered && members.contains(&r.member))
        .collect();
    answers.sort_by_key(|r| r.done);
    let mut latest: BTreeMap<usize, bool> = BTreeMap::new();
    let mut seen_primary = false;
    let mut open: Option<NoPrimarySpan> = None;
    let mut out = Vec::new();
    for r in answers {
        latest.insert(r.member, r.writable);
        if r.writable {
            seen_primary = true;
            if let Some(mut s) = open.take() {
                s.until = Some(r.sent);
                s.after = Some(r.member);
                out.push(s);
            }
            continue;
        }
        let known = seen_primary || latest.len() == members.len();
        if known && open.is_none() && !latest.values().any(|w| *w) {
            open = Some(NoPrimarySpan {
                set: set.to_string(),
                from: r.sent,
                until: None,
                after: None,
            });
        }
    }
    out.extend(open);
    out
}

/// What a dead member's set did: failed over to another primary after `since` (when the member
/// fell silent), kept its primary, or was left without one. `None` for a member of no set, or
/// of a set of one.
pub(crate) fn dead_member_note(
    targets: &[ProbeTarget],
    log: &ProbeLog,
    dead: usize,
    since: Instant,
) -> Option<String> {
    let set = targets.get(dead)?.set.as_deref()?;
    let others: Vec<usize> = (0..targets.len())
        .filter(|&i| i != dead && targets[i].set.as_deref() == Some(set))
        .collect();
    if others.is_empty() {
        return None;
    }
    // A member's latest answer said it is primary (and, for the others, one sent since the
    // dead member fell silent).
    let is_primary_now = |m: usize| {
        log.results
            .iter()
            .filter(|r| r.answered && r.member == m)
            .max_by_key(|r| r.done)
            .is_some_and(|r| r.writable && (m == dead || r.sent >= since))
    };
    let was_primary = is_primary_now(dead);
    let now_primary = others.iter().copied().find(|&o| is_primary_now(o));
    Some(match (now_primary, was_primary) {
        (Some(p), true) => format!(
            "it was {set}'s primary, and {set} failed over: {} became primary",
            targets[p].label()
        ),
        (Some(p), false) => format!("{set} has its primary {}", targets[p].label()),
        (None, true) => format!(
            "it was {set}'s primary and no other member had become primary yet (MongoDB elects one within about 12 s)"
        ),
        (None, false) => format!("{set} had no primary"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn target(name: &str, set: Option<&str>) -> ProbeTarget {
        ProbeTarget {
            name: name.into(),
            address: format!("localhost:{}", 1000 + name.len()),
            set: set.map(String::from),
            config_server: false,
        }
    }

    /// Member `member` answered a probe sent `at_ms` after `t0`, writable or not (`None`: silent).
    fn hello(member: usize, t0: Instant, at_ms: u64, writable: Option<bool>) -> ProbeResult {
        let sent = t0 + Duration::from_millis(at_ms);
        ProbeResult {
            member,
            sent,
            done: sent + Duration::from_millis(5),
            answered: writable.is_some(),
            writable: writable == Some(true),
        }
    }

    fn three_members() -> Vec<ProbeTarget> {
        vec![
            target("mongos0", None),
            target("sh0", Some("sh0")),
            target("sh0-1", Some("sh0")),
            target("sh0-2", Some("sh0")),
        ]
    }

    fn log(results: Vec<ProbeResult>) -> ProbeLog {
        ProbeLog {
            results,
            pending: vec![None; 4],
        }
    }

    /// Every second from 0 to 9 s: mongos writable; sh0 primary until 3 s, no primary from 3 s
    /// to 7 s, then sh0-2 primary.
    fn failover(t0: Instant) -> Vec<ProbeResult> {
        let mut out = Vec::new();
        for s in 0..10u64 {
            let at = s * 1000;
            out.push(hello(0, t0, at, Some(true)));
            out.push(hello(1, t0, at, Some(s < 3)));
            out.push(hello(2, t0, at + 10, Some(false)));
            out.push(hello(3, t0, at + 20, Some(s >= 7)));
        }
        out
    }

    #[test]
    fn a_set_whose_members_all_say_not_primary_had_an_election() {
        let t0 = Instant::now();
        let spans = no_primary_spans(&three_members(), &log(failover(t0)));
        assert_eq!(spans.len(), 1, "{spans:?}");
        let s = &spans[0];
        assert_eq!(s.set, "sh0");
        assert_eq!(s.from, t0 + Duration::from_millis(3000));
        assert_eq!(s.until, Some(t0 + Duration::from_millis(7020)));
        assert_eq!(s.after, Some(3));
    }

    #[test]
    fn a_silent_primary_or_a_slow_set_is_no_election() {
        let t0 = Instant::now();
        // sh0 (the primary) stops answering at 3 s: its last word stands.
        let silent: Vec<ProbeResult> = failover(t0)
            .into_iter()
            .filter(|r| !(r.member == 1 && r.sent >= t0 + Duration::from_secs(3)))
            .filter(|r| r.member != 3 || r.sent < t0 + Duration::from_secs(7))
            .collect();
        assert!(no_primary_spans(&three_members(), &log(silent)).is_empty());
        // Before every member has answered once, secondaries alone say nothing.
        let early = vec![hello(2, t0, 0, Some(false)), hello(1, t0, 100, Some(true))];
        assert!(no_primary_spans(&three_members(), &log(early)).is_empty());
    }

    /// `results` with `member` silent from `since`.
    fn silent_from(results: Vec<ProbeResult>, member: usize, since: Instant) -> ProbeLog {
        log(results
            .into_iter()
            .filter(|r| r.member != member || r.sent < since)
            .collect())
    }

    #[test]
    fn a_dead_member_says_whether_its_set_failed_over() {
        let t0 = Instant::now();
        let targets = three_members();
        let since = t0 + Duration::from_secs(3);
        let l = silent_from(failover(t0), 1, since);
        let note = dead_member_note(&targets, &l, 1, since).unwrap_or_default();
        assert_eq!(
            note,
            "it was sh0's primary, and sh0 failed over: sh0-2 (localhost:1005) became primary"
        );
        let before_the_election: Vec<ProbeResult> = failover(t0)
            .into_iter()
            .filter(|r| r.sent < t0 + Duration::from_secs(5))
            .collect();
        let early = silent_from(before_the_election, 1, since);
        let note = dead_member_note(&targets, &early, 1, since).unwrap_or_default();
        assert!(
            note.contains("no other member had become primary"),
            "{note}"
        );
        let secondary = silent_from(failover(t0), 2, since);
        let note = dead_member_note(&targets, &secondary, 2, since).unwrap_or_default();
        assert_eq!(note, "sh0 has its primary sh0-2 (localhost:1005)");
        assert_eq!(dead_member_note(&targets, &l, 0, since), None);
    }
}
