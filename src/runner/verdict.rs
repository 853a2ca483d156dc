//! The rules that turn what a run saw into its validity verdict (`docs/result-schema.md`,
//! "Validity"). Pure: every input is a value, so each rule is tested on its own.

use std::collections::BTreeMap;

use crate::measure::timeline::{Outage, StallCount, Timeline, seconds};
use crate::measure::validity::Validity;

/// Client CPU above this share of the cores it may use makes a figure `degraded`.
pub(crate) const CLIENT_SATURATION: f64 = 0.9;

/// Everything the verdict is computed from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Evidence {
    /// `load` or `run`.
    pub load: bool,
    /// Operations completed (every status).
    pub operations: u64,
    /// Operations whose status was not OK.
    pub failed: u64,
    /// Of those, reads, updates or scans that found no record (`NOT_FOUND`).
    pub not_found: u64,
    /// `microshard.maxerrorrate`: a larger failed share makes the result invalid.
    pub max_error_rate: f64,
    /// Share of the clients' time spent waiting on operations that failed.
    pub failed_time_share: f64,
    /// Failures by class (`server_code_11000`, `timeout`, ...).
    pub error_classes: BTreeMap<String, u64>,
    /// Members' outages and stalls.
    pub timeline: Timeline,
    /// Why the run stopped early, if it did (Ctrl-C, a long stall, the error-rate guard, a
    /// client that gave up).
    pub stopped: Vec<String>,
    /// Clients still waiting on the server after the stop's grace period (abandoned).
    pub abandoned_clients: usize,
    /// Client CPU seconds and wall seconds of the run, and cores the client may use.
    pub client_cpu_s: f64,
    /// Wall-clock seconds of the timed window.
    pub wall_s: f64,
    /// CPUs the client may use.
    pub cores: u64,
}

/// `1234567` as `1,234,567`: counts in sentences a person reads (verdict reasons, dry-run plans).
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The two kinds of stall (`docs/result-schema.md`, "Validity"): while every member answered its
/// probe, the server stalled (degraded, a finding kept and counted); with no member probed, a
/// stall cannot be told from a dead server (invalid). A stall while a member was silent is that
/// member's outage, already invalid.
fn stall_findings(e: &Evidence, v: &mut Validity) {
    let ended = " (until the run ended)";
    let until_end = |s: &Outage| if s.ongoing { ended } else { "" };
    if e.timeline.probed.is_empty() {
        for s in &e.timeline.stalls {
            v.invalid(format!(
                "no operation completed for {} from {} into the run{}, and no member was probed, so a stalled server cannot be told from a dead one",
                seconds(s.duration_s),
                seconds(s.from_s),
                until_end(s)
            ));
        }
        return;
    }
    let stalls: Vec<&Outage> = e.timeline.server_stalls().collect();
    for s in &stalls {
        v.degrade(format!(
            "the server stalled: no operation completed for {} from {}{}; every member answered its probe",
            seconds(s.duration_s),
            seconds(s.from_s),
            until_end(s)
        ));
    }
    if !stalls.is_empty() {
        v.server_stalls = Some(StallCount::of(stalls.into_iter()));
    }
}

/// Applies every rule to the evidence.
pub(crate) fn assess(e: &Evidence) -> Validity {
    let mut v = Validity::valid();
    outage_findings(e, &mut v);
    election_findings(e, &mut v);
    stall_findings(e, &mut v);
    let load_into_existing = duplicate_key_finding(e, &mut v);
    for reason in &e.stopped {
        v.invalid(format!("the run {reason}"));
    }
    if e.abandoned_clients > 0 {
        v.invalid(format!(
            "{} client(s) were still waiting on the server after the run's stop and were abandoned",
            e.abandoned_clients
        ));
    }
    if !load_into_existing {
        failure_finding(e, &mut v);
    }
    if e.operations == 0 && e.stopped.is_empty() {
        v.invalid("no operation completed");
    }
    client_saturation_finding(e, &mut v);
    v
}

/// A member that stopped answering makes the run invalid: for how long, or that it never
/// answered again.
fn outage_findings(e: &Evidence, v: &mut Validity) {
    for o in &e.timeline.member_outages {
        let gone = format!("{} stopped answering at {}", o.subject, seconds(o.from_s));
        let lasted = seconds(o.duration_s);
        v.invalid(match o.ongoing {
            true => format!("{gone} and had not answered again {lasted} later, when the run ended"),
            false => format!("{gone} for {lasted}"),
        });
    }
}

/// A set that had no primary (an election) makes the run invalid: the topology changed under it,
/// and its operations waited or failed over to another member (`docs/reliability.md`, "A set
/// that failed over"). A stall at the same time is the election's, not the server's. The
/// config servers' election only degrades it: the data path does not go through them.
fn election_findings(e: &Evidence, v: &mut Validity) {
    for n in &e.timeline.no_primary {
        let (from, lasted) = (seconds(n.from_s), seconds(n.duration_s));
        let span = match n.ongoing {
            true => format!("from {from} until the run ended {lasted} later"),
            false => format!("from {from} for {lasted}"),
        };
        let after = (n.new_primary.as_ref())
            .map(|p| format!("; then {p} was its primary"))
            .unwrap_or_default();
        match n.config_server {
            // Reads and writes on cached routing need no config primary: the cell measured
            // what it meant to, and is only flagged.
            true => v.degrade(format!(
                "{} had no primary {span}: config server election{after} (data path unaffected: mongos routes from its cached routing table)",
                n.set
            )),
            false => v.invalid(format!("{} had no primary {span}: election{after}", n.set)),
        }
    }
}

/// A load whose inserts met duplicate keys went into a collection that already held them:
/// invalid, and the failures are that (true), not an error rate.
fn duplicate_key_finding(e: &Evidence, v: &mut Validity) -> bool {
    let duplicate = e
        .error_classes
        .get("server_code_11000")
        .copied()
        .unwrap_or(0);
    let load_into_existing = e.load && e.failed > 0 && duplicate > 0;
    if load_into_existing {
        v.invalid(format!(
            "{} of {} inserts failed with E11000 duplicate key: the collection already holds these keys — drop the ycsb database first, or use --drop",
            thousands(duplicate),
            thousands(e.operations)
        ));
    }
    load_into_existing
}

/// Failed operations degrade the run, or make it invalid above `microshard.maxerrorrate`.
fn failure_finding(e: &Evidence, v: &mut Validity) {
    if e.operations == 0 || e.failed == 0 {
        return;
    }
    let share = e.failed as f64 / e.operations as f64;
    let text = format!(
        "{} of {} operations failed ({:.2} %); {:.1} % of the clients' time was spent waiting on failures",
        thousands(e.failed),
        thousands(e.operations),
        share * 100.0,
        e.failed_time_share * 100.0
    );
    // Records that are not there: almost always a load of another size or table.
    let text = if !e.load && e.not_found * 2 > e.failed {
        format!(
            "{text}; {} found no record: was the data loaded, with this run's recordcount and table?",
            thousands(e.not_found)
        )
    } else {
        text
    };
    if share > e.max_error_rate {
        v.invalid(format!(
            "{text}, above microshard.maxerrorrate={}",
            e.max_error_rate
        ));
    } else {
        v.degrade(text);
    }
}

/// A client that used nearly all its cores may have measured itself: degraded.
fn client_saturation_finding(e: &Evidence, v: &mut Validity) {
    if e.cores > 0 && e.wall_s > 0.0 {
        let used = e.client_cpu_s / e.wall_s / e.cores as f64;
        if used > CLIENT_SATURATION {
            v.degrade(format!(
                "client CPU {:.0} % of {} cores: this figure may measure the client",
                used * 100.0,
                e.cores
            ));
        }
    }
}

/// An experiment's cell or sweep point measured for less than this is `degraded`: a fraction of a
/// second is dominated by start-up and scheduling noise.
pub(crate) const MIN_CELL_SECONDS: f64 = 1.0;

/// An experiment's cell or point with fewer operations than this is `degraded`, however long.
pub(crate) const MIN_CELL_OPERATIONS: u64 = 300;

/// The `degraded` reason of an experiment measurement too short to mean anything (an ordinary
/// `load`/`run` is as long as its user asked, so this is applied to cells and points only).
pub(crate) fn too_short(runtime_ms: u64, operations: u64) -> Option<String> {
    let secs = runtime_ms as f64 / 1000.0;
    // A cell bounded at exactly the minimum ends a few milliseconds either side of it.
    let short = secs < MIN_CELL_SECONDS * 0.95;
    (operations > 0 && (short || operations < MIN_CELL_OPERATIONS)).then(|| {
        let shown = if secs < 0.1 {
            format!("{secs:.2}")
        } else {
            format!("{secs:.1}")
        };
        // At the rate it ran, how many operations fill the minimum (a load's records, 20 % spare).
        let needed = ((operations as f64 / secs.max(1e-3)) * MIN_CELL_SECONDS * 1.2)
            .max(MIN_CELL_OPERATIONS as f64)
            .ceil() as u64;
        let needed = needed.div_ceil(1000) * 1000;
        format!(
            "measured for only {shown} s ({} operations; a cell needs at least {MIN_CELL_SECONDS:.0} s and \
             {MIN_CELL_OPERATIONS} operations): its figures are mostly noise — at this rate it needs about {} \
             operations (a load: --records {}), or a longer --duration",
            thousands(operations),
            thousands(needed),
            needed
        )
    })
}

/// A cell whose throughput reaches this share of the machine's client ceiling is `degraded`.
pub(crate) const CLIENT_BOUND_SHARE: f64 = 0.9;

/// The `degraded` reason of a cell whose throughput is near the client's own ceiling on this
/// machine (`calibrate`): the figure then measures the client as much as the server.
pub(crate) fn client_bound(throughput: f64, ceiling: Option<f64>) -> Option<String> {
    let ceiling = ceiling.filter(|c| *c > 0.0)?;
    (throughput >= ceiling * CLIENT_BOUND_SHARE).then(|| {
        format!(
            "client-bound: {} ops/s is {:.0} % of this machine's client ceiling ({} ops/s): the figure may measure the client, not the server",
            thousands(throughput.round() as u64),
            throughput / ceiling * 100.0,
            thousands(ceiling.round() as u64)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn near_the_client_ceiling_is_client_bound() {
        let why = client_bound(17_000.0, Some(18_280.0)).unwrap_or_default();
        assert!(
            why.starts_with(
                "client-bound: 17,000 ops/s is 93 % of this machine's client ceiling (18,280 ops/s)"
            ),
            "{why}"
        );
        assert_eq!(client_bound(9_000.0, Some(18_280.0)), None);
        assert_eq!(client_bound(9_000.0, None), None);
    }

    #[test]
    fn a_tenth_of_a_second_is_too_short() {
        let why = too_short(100, 2000).unwrap_or_default();
        assert!(
            why.starts_with("measured for only 0.1 s (2,000 operations"),
            "{why}"
        );
        // 2,000 operations in 0.1 s: 1 s needs 20,000, with a fifth spare (the
        // advice gave no number).
        assert!(
            why.contains("needs about 24,000 operations (a load: --records 24000)"),
            "{why}"
        );
        assert!(too_short(5000, 100).is_some(), "too few operations");
        assert_eq!(too_short(3000, 60_000), None);
        assert_eq!(too_short(990, 60_000), None, "a 1 s bound ends near 1 s");
        assert!(
            too_short(40, 500)
                .unwrap_or_default()
                .contains("only 0.04 s")
        );
        assert_eq!(
            too_short(50, 0),
            None,
            "no operation is its own, invalid, reason"
        );
    }
    use crate::measure::validity::Verdict;

    #[test]
    fn failures_that_found_no_record_ask_whether_the_data_was_loaded() {
        let e = Evidence {
            failed: 200,
            not_found: 200,
            ..healthy()
        };
        let reason = assess(&e).summary();
        assert!(
            reason.contains("200 found no record: was the data loaded"),
            "{reason}"
        );
        let timeouts = Evidence {
            failed: 200,
            not_found: 0,
            ..healthy()
        };
        let reason = assess(&timeouts).summary();
        assert!(!reason.contains("loaded"), "{reason}");
    }

    fn healthy() -> Evidence {
        Evidence {
            operations: 10_000,
            max_error_rate: 0.01,
            wall_s: 10.0,
            client_cpu_s: 2.0,
            cores: 2,
            ..Default::default()
        }
    }

    #[test]
    fn a_clean_run_is_valid() {
        assert!(assess(&healthy()).is_valid());
    }

    #[test]
    fn a_member_that_stopped_answering_is_named_with_when_and_how_long() {
        let mut e = healthy();
        e.timeline.member_outages.push(Outage {
            subject: "sh0 (localhost:41110)".into(),
            from_s: 5.2,
            duration_s: 20.1,
            ongoing: false,
        });
        let v = assess(&e);
        assert_eq!(v.verdict, Verdict::Invalid);
        assert_eq!(
            v.reasons[0].message,
            "sh0 (localhost:41110) stopped answering at 5.2 s for 20.1 s"
        );
    }

    #[test]
    fn errors_degrade_below_the_rate_and_invalidate_above_it() {
        let mut e = healthy();
        e.failed = 50;
        e.failed_time_share = 0.004;
        let v = assess(&e);
        assert_eq!(v.verdict, Verdict::Degraded);
        assert!(
            v.reasons[0]
                .message
                .starts_with("50 of 10,000 operations failed (0.50 %)"),
            "{v:?}"
        );
        e.failed = 200;
        let v = assess(&e);
        assert_eq!(v.verdict, Verdict::Invalid);
        assert!(v.summary().contains("above microshard.maxerrorrate=0.01"));
    }

    #[test]
    fn a_load_into_existing_keys_says_so() {
        let mut e = healthy();
        e.load = true;
        e.operations = 2000;
        e.failed = 2000;
        e.error_classes.insert("server_code_11000".into(), 2000);
        let v = assess(&e);
        assert_eq!(v.verdict, Verdict::Invalid);
        assert_eq!(
            v.reasons[0].message,
            "2,000 of 2,000 inserts failed with E11000 duplicate key: the collection already holds these keys — drop the ycsb database first, or use --drop"
        );
    }

    #[test]
    fn a_saturated_client_degrades() {
        let mut e = healthy();
        e.client_cpu_s = 19.4;
        let v = assess(&e);
        assert_eq!(v.verdict, Verdict::Degraded);
        assert_eq!(
            v.reasons[0].message,
            "client CPU 97 % of 2 cores: this figure may measure the client"
        );
    }

    fn stall(from_s: f64, duration_s: f64) -> Outage {
        Outage {
            subject: "all clients".into(),
            from_s,
            duration_s,
            ongoing: false,
        }
    }

    #[test]
    fn a_stall_while_every_member_answered_is_a_counted_finding() {
        let mut e = healthy();
        e.timeline.probed = vec!["sh0 (localhost:1)".into()];
        e.timeline.stalls = vec![stall(41.2, 3.7), stall(50.0, 1.5)];
        let v = assess(&e);
        assert_eq!(v.verdict, Verdict::Degraded);
        assert_eq!(
            v.reasons[0].message,
            "the server stalled: no operation completed for 3.7 s from 41.2 s; every member answered its probe"
        );
        let count = v.server_stalls.expect("stalls counted");
        assert_eq!((count.count, count.longest_s), (2, 3.7));
        assert!((count.total_s - 5.2).abs() < 1e-9);
    }

    #[test]
    fn a_stall_while_a_member_was_silent_is_that_members_outage() {
        let mut e = healthy();
        e.timeline.probed = vec!["sh0 (localhost:1)".into()];
        e.timeline.stalls = vec![stall(3.0, 4.5)];
        e.timeline.member_outages.push(Outage {
            subject: "sh0 (localhost:1)".into(),
            from_s: 2.8,
            duration_s: 4.0,
            ongoing: false,
        });
        let v = assess(&e);
        assert_eq!(v.verdict, Verdict::Invalid);
        assert_eq!(v.reasons.len(), 1, "{v:?}");
        assert!(v.server_stalls.is_none());
    }

    #[test]
    fn a_set_without_a_primary_is_an_election_not_a_server_stall() {
        let mut e = healthy();
        e.timeline.probed = vec!["sh0 (localhost:1)".into(), "sh0-1 (localhost:2)".into()];
        e.timeline.stalls = vec![stall(12.3, 10.4), stall(40.0, 2.5)];
        e.timeline
            .no_primary
            .push(crate::measure::timeline::NoPrimary {
                set: "sh0".into(),
                from_s: 12.1,
                duration_s: 10.8,
                ongoing: false,
                new_primary: Some("sh0-1 (localhost:2)".into()),
                config_server: false,
            });
        let v = assess(&e);
        assert_eq!(v.verdict, Verdict::Invalid);
        assert_eq!(
            v.reasons[0].message,
            "sh0 had no primary from 12.1 s for 10.8 s: election; then sh0-1 (localhost:2) was its primary"
        );
        // The stall during the election is the election's; the later one, with a primary, is
        // the server's (a checkpoint).
        let stalls = v.server_stalls.expect("the later stall is counted");
        assert_eq!((stalls.count, stalls.longest_s), (1, 2.5));
        assert!(
            v.summary().contains("the server stalled"),
            "{}",
            v.summary()
        );
    }

    #[test]
    fn a_config_server_election_degrades_and_says_the_data_path_went_on() {
        let mut e = healthy();
        e.timeline.probed = vec!["sh0 (localhost:1)".into(), "cfg (localhost:2)".into()];
        e.timeline.stalls = vec![stall(12.3, 2.5)];
        e.timeline
            .no_primary
            .push(crate::measure::timeline::NoPrimary {
                set: "cfg".into(),
                from_s: 12.1,
                duration_s: 1.8,
                ongoing: false,
                new_primary: Some("cfg-1 (localhost:3)".into()),
                config_server: true,
            });
        let v = assess(&e);
        assert_eq!(v.verdict, Verdict::Degraded, "{v:?}");
        assert!(
            v.reasons.iter().any(|r| r.message
                == "cfg had no primary from 12.1 s for 1.8 s: config server election; then cfg-1 (localhost:3) was its primary (data path unaffected: mongos routes from its cached routing table)"),
            "{v:?}"
        );
        // A stall at the same time is not the config servers': the data path stalled.
        let stalls = v.server_stalls.expect("the stall is the server's");
        assert_eq!(stalls.count, 1);
        assert!(e.timeline.data_path_elections().is_empty());
    }

    #[test]
    fn a_stall_nobody_probed_and_abandoned_clients_invalidate() {
        let mut e = healthy();
        e.timeline.stalls.push(stall(3.0, 4.5));
        e.abandoned_clients = 2;
        let v = assess(&e);
        assert_eq!(v.verdict, Verdict::Invalid);
        assert_eq!(v.reasons.len(), 2);
        assert!(
            v.reasons[0]
                .message
                .contains("no operation completed for 4.5 s from 3.0 s")
        );
    }
}
