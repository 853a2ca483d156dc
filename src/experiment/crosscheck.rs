//! Do the client and the server agree? Each cell compares the operations the client completed,
//! per type, with what the entry point's `opcounters` counted over the same cell, and says so
//! when they differ: a real `mongod` that keeps a cursor open counts a `getMore` per multi-id
//! read the stand-in never counted, and a wire-compatible server that is not
//! MongoDB may count nothing at all, in which case its figures are not used (issue #31).

use serde::{Deserialize, Serialize};

use super::metrics::{ServerMetrics, StatusSnapshot, Watched, snapshot_all};
use crate::measure::RunDocument;
use crate::workload::prop;

/// How far the server's count per client operation may stray from 1 (10 %) before the cell says
/// so: retries, a failed operation that never reached the server and the probes' own traffic
/// stay well inside it, a second round trip per read does not.
pub const TOLERANCE: f64 = 0.10;

/// Fewer client operations of a type than this are recorded but not judged: a handful of
/// operations against a counter that also moves for other reasons proves nothing.
pub const MIN_OPERATIONS: u64 = 20;

/// One client operation type against the server counter(s) that count it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OpCheck {
    /// The client's operation(s): `READ` (with `SCAN` when the mix has scans), `UPDATE`,
    /// `INSERT`, `DELETE`.
    pub operation: String,
    /// The server's `opcounters` field compared (`query`, `getmore`, `update`, ...).
    pub counter: String,
    /// Operations the client completed (every status).
    pub client: u64,
    /// What the server's counter moved by over the cell, summed over the entry points.
    pub server: u64,
    /// `server / client`; 1.0 when they agree (0.0 expected for `getmore`); `None` when the
    /// client did none.
    pub ratio: Option<f64>,
}

/// The cell's cross-check: every row, the tolerance used and what disagreed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CrossCheck {
    /// [`TOLERANCE`] when the cell was checked.
    pub tolerance: f64,
    /// One row per operation type the client did or the server counted.
    pub rows: Vec<OpCheck>,
    /// `false` when the server reported no operation counts while the client completed
    /// operations: its figures (shard shares, ops/s) are not used.
    pub server_counts_used: bool,
    /// The disagreements, one sentence each (also among the cell's server warnings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Operations the client completed per type, every status counted (a NOT_FOUND read reached
/// the server as much as an OK one): the largest status total over the type's measurements.
pub(crate) fn client_count(doc: &RunDocument, operation: &str) -> u64 {
    doc.measurements
        .iter()
        .filter(|m| m.name == operation)
        .map(|m| match m.statuses.iter().map(|s| s.count).sum::<u64>() {
            0 => m.count,
            n => n,
        })
        .max()
        .unwrap_or(0)
}

/// The counter deltas of the entry points over the cell (`after − before`, summed).
pub(crate) fn entry_delta<'a>(
    pairs: impl Iterator<Item = (&'a StatusSnapshot, &'a StatusSnapshot)>,
) -> StatusSnapshot {
    let mut d = StatusSnapshot::default();
    for (b, a) in pairs {
        d.insert += a.insert.saturating_sub(b.insert);
        d.query += a.query.saturating_sub(b.query);
        d.update += a.update.saturating_sub(b.update);
        d.delete += a.delete.saturating_sub(b.delete);
        d.getmore += a.getmore.saturating_sub(b.getmore);
    }
    d
}

/// Compares `doc`'s operations with the server's counter deltas `server`. `upsert`: inserts
/// went out as upserts (`mongodb.upsert`), which the server counts as updates.
pub fn cross_check(doc: &RunDocument, server: &StatusSnapshot, upsert: bool) -> CrossCheck {
    let n = |op: &str| client_count(doc, op);
    let (reads, scans, inserts) = (n("READ"), n("SCAN"), n("INSERT"));
    let read_name = if scans > 0 { "READ+SCAN" } else { "READ" };
    let (updates, inserts) = match upsert {
        true => (n("UPDATE") + inserts, 0),
        false => (n("UPDATE"), inserts),
    };
    let rows: Vec<OpCheck> = [
        (read_name, "query", reads + scans, server.query),
        (read_name, "getmore", reads + scans, server.getmore),
        ("UPDATE", "update", updates, server.update),
        ("INSERT", "insert", inserts, server.insert),
        ("DELETE", "delete", n("DELETE"), server.delete),
    ]
    .into_iter()
    .filter(|(_, _, client, server)| *client > 0 || *server > 0)
    .map(|(op, counter, client, server)| OpCheck {
        operation: op.into(),
        counter: counter.into(),
        client,
        server,
        ratio: (client > 0).then(|| server as f64 / client as f64),
    })
    .collect();
    let client_total: u64 = rows
        .iter()
        .filter(|r| r.counter != "getmore")
        .map(|r| r.client)
        .sum();
    let counted = server.data_ops() > 0 || client_total < MIN_OPERATIONS;
    let warnings = match counted {
        false => vec!["the server reports no operation counts: its figures are not used".into()],
        true => rows
            .iter()
            .filter_map(|r| disagreement(r, doc.warmup_s > 0.0))
            .collect(),
    };
    CrossCheck {
        tolerance: TOLERANCE,
        rows,
        server_counts_used: counted,
        warnings,
    }
}

/// A measured cell's server metrics against its client: implausible memory figures dropped
/// (flagged among the server's warnings), the operation counts compared and, when the server
/// counted nothing, its operation figures left out. `None` when no entry point answered both
/// before and after the cell.
pub(crate) fn check_cell(
    server: &mut ServerMetrics,
    doc: &RunDocument,
    upsert: bool,
    machine_bytes: Option<u64>,
) -> Option<CrossCheck> {
    server.drop_implausible(machine_bytes);
    let entries: Vec<(&StatusSnapshot, &StatusSnapshot)> = (server.members.iter())
        .filter(|m| m.role == "entry")
        .filter_map(|m| Some((m.before.as_ref()?, m.after.as_ref()?)))
        .collect();
    if entries.is_empty() {
        return None;
    }
    let check = cross_check(doc, &entry_delta(entries.into_iter()), upsert);
    if !check.server_counts_used {
        server.forget_op_counts();
    }
    Some(check)
}

/// Whether inserts go out as upserts (`mongodb.upsert`), which the server counts as updates.
pub(crate) fn upsert(props: &crate::workload::Properties) -> bool {
    props.value(&prop::MONGODB_UPSERT).unwrap_or(false)
}

/// The entry points' counters before a sweep point, to cross-check the point with once it ran.
pub(crate) struct PointWatch {
    /// The entry points (the single mongod, or every mongos).
    entries: Vec<Watched>,
    /// Their counters before the point.
    before: Vec<Option<StatusSnapshot>>,
}

impl PointWatch {
    /// Reads the entry points' counters now.
    pub(crate) async fn begin(watched: &[Watched]) -> PointWatch {
        let entries: Vec<Watched> = (watched.iter())
            .filter(|w| w.role == "entry")
            .cloned()
            .collect();
        let before = snapshot_all(&entries).await;
        PointWatch { entries, before }
    }

    /// Reads them again and compares the point's client with them; `None` when no entry point
    /// answered both times.
    pub(crate) async fn end(self, doc: &RunDocument, upsert: bool) -> Option<CrossCheck> {
        let after = snapshot_all(&self.entries).await;
        let pairs: Vec<(&StatusSnapshot, &StatusSnapshot)> = (self.before.iter().zip(&after))
            .filter_map(|(b, a)| Some((b.as_ref()?, a.as_ref()?)))
            .collect();
        (!pairs.is_empty()).then(|| cross_check(doc, &entry_delta(pairs.into_iter()), upsert))
    }
}

/// The sentence for a row beyond [`TOLERANCE`], if it is. With a warm-up the server also
/// counted the operations left out of the measurement, so only a shortfall is judged there.
fn disagreement(row: &OpCheck, warmup: bool) -> Option<String> {
    let ratio = row.ratio.filter(|_| row.client >= MIN_OPERATIONS)?;
    let op = &row.operation;
    if row.counter == "getmore" {
        return (ratio > TOLERANCE).then(|| match ratio >= 1.0 - TOLERANCE {
            true if ratio <= 1.0 + TOLERANCE => format!(
                "the server counted {:.1} round trips (find + getMore) per {op}: an extra getMore each",
                1.0 + ratio
            ),
            _ => format!(
                "the server counted {ratio:.2} getMores per {op}: results come back in more than one batch"
            ),
        });
    }
    let low = ratio < 1.0 - TOLERANCE;
    let high = ratio > 1.0 + TOLERANCE && !warmup;
    (low || high).then(|| {
        format!(
            "the server counted {ratio:.2} {} per {op} ({} against {} the client completed; tolerance ±{:.0} %)",
            plural(&row.counter),
            row.server,
            row.client,
            TOLERANCE * 100.0
        )
    })
}

/// `opcounters` field names as words (`query` → `queries`).
fn plural(counter: &str) -> String {
    match counter {
        "query" => "queries".into(),
        c => format!("{c}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::result::{MeasurementResult, StatusCount};
    use crate::measure::{MapKind, Status};

    fn measurement(name: &str, ok: u64, not_found: u64) -> MeasurementResult {
        MeasurementResult {
            name: name.into(),
            kind: MapKind::Actual,
            count: ok + not_found,
            min: 1,
            max: 1,
            mean: 1.0,
            p50: 1,
            p90: 1,
            p95: 1,
            p99: 1,
            p99_9: 1,
            p99_99: 1,
            statuses: vec![
                StatusCount {
                    status: Status::Ok,
                    count: ok,
                },
                StatusCount {
                    status: Status::NotFound,
                    count: not_found,
                },
            ],
            histogram: String::new(),
        }
    }

    fn doc(ops: &[(&str, u64)]) -> RunDocument {
        RunDocument {
            measurements: ops.iter().map(|(n, c)| measurement(n, *c, 0)).collect(),
            ..RunDocument::default()
        }
    }

    fn counters(query: u64, getmore: u64, update: u64, insert: u64) -> StatusSnapshot {
        StatusSnapshot {
            query,
            getmore,
            update,
            insert,
            ..StatusSnapshot::default()
        }
    }

    #[test]
    fn agreeing_counts_give_ratios_of_one_and_no_warning() {
        let mut d = doc(&[("READ", 900), ("UPDATE", 100)]);
        d.measurements[0].statuses[1].count = 20; // NOT_FOUND reads reached the server too
        let c = cross_check(&d, &counters(925, 0, 101, 0), false);
        assert!(c.server_counts_used);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let read = &c.rows[0];
        assert_eq!((read.client, read.server), (920, 925));
        assert!((read.ratio.unwrap_or(0.0) - 925.0 / 920.0).abs() < 1e-9);
        assert_eq!(c.rows[1].counter, "getmore");
        assert_eq!(c.rows[1].ratio, Some(0.0));
    }

    #[test]
    fn a_getmore_per_read_is_said_as_an_extra_round_trip() {
        // 40 multi-id reads without `limit` on mongod: 40 queries and 40 empty getMores.
        let c = cross_check(&doc(&[("READ", 10)]), &counters(10, 10, 0, 0), false);
        assert!(c.warnings.is_empty(), "10 reads are below the minimum");
        let c = cross_check(&doc(&[("READ", 400)]), &counters(400, 400, 0, 0), false);
        assert_eq!(
            c.warnings,
            vec![
                "the server counted 2.0 round trips (find + getMore) per READ: an extra getMore each"
            ]
        );
        let c = cross_check(&doc(&[("READ", 400)]), &counters(400, 120, 0, 0), false);
        assert!(c.warnings[0].contains("0.30 getMores per READ"), "{c:?}");
    }

    #[test]
    fn zero_counters_are_not_used_and_say_so() {
        let c = cross_check(
            &doc(&[("READ", 5000), ("UPDATE", 700)]),
            &counters(0, 0, 0, 0),
            false,
        );
        assert!(!c.server_counts_used);
        assert_eq!(
            c.warnings,
            vec!["the server reports no operation counts: its figures are not used"]
        );
    }

    #[test]
    fn shortfalls_and_excesses_are_judged_and_a_warmup_excuses_only_excess() {
        let d = doc(&[("INSERT", 1000)]);
        let short = cross_check(&d, &counters(0, 0, 0, 500), false);
        assert!(
            short.warnings[0].starts_with("the server counted 0.50 inserts per INSERT"),
            "{short:?}"
        );
        let more = cross_check(&d, &counters(0, 0, 0, 1500), false);
        assert_eq!(more.warnings.len(), 1, "{more:?}");
        let mut warm = d.clone();
        warm.warmup_s = 2.0;
        assert!(
            cross_check(&warm, &counters(0, 0, 0, 1500), false)
                .warnings
                .is_empty()
        );
        // Upserts are updates on the server.
        let up = cross_check(&d, &counters(0, 0, 1000, 0), true);
        assert!(up.warnings.is_empty(), "{up:?}");
        assert_eq!(up.rows[0].operation, "UPDATE");
    }

    #[test]
    fn entry_deltas_sum_every_router() {
        let b = counters(10, 1, 5, 0);
        let a = counters(30, 1, 9, 4);
        let d = entry_delta([(&b, &a), (&b, &a)].into_iter());
        assert_eq!((d.query, d.getmore, d.update, d.insert), (40, 0, 8, 8));
    }
}
