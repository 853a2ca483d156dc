//! Before a `load` or `run` of millions of operations starts, one line says how many, where the
//! number comes from and roughly how long it takes: a forgotten `-p recordcount=` (S1 loads
//! 5,000,000 documents) must not cost a quarter of an hour in silence. And a run whose
//! `recordcount` is not what the collection holds says so before it starts.

use crate::runner::{Phase, RunError};
use crate::workload::{Properties, prop};

/// From this many operations on, the phase is announced.
const ANNOUNCE_FROM: u64 = 1_000_000;

/// Rates the estimate brackets (ops/s): a slow and a fast single-machine MongoDB.
const RATES: (f64, f64) = (10_000.0, 50_000.0);

fn minutes(secs: f64) -> String {
    match secs {
        s if s < 90.0 => format!("{s:.0} s"),
        s if s < 5400.0 => format!("{:.0} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

/// The announcement for `phase` with `props`, if it is a large one.
pub(crate) fn notice(phase: Phase, props: &Properties) -> Option<String> {
    let (key, count, what) = match phase {
        Phase::Load => {
            let key = match props.contains(prop::INSERTCOUNT.name) {
                true => prop::INSERTCOUNT.name,
                false => prop::RECORDCOUNT.name,
            };
            (
                key,
                crate::workload::load_operation_count(props).ok()?,
                "insert",
            )
        }
        Phase::Run => (
            prop::OPERATIONCOUNT.name,
            crate::workload::run_operation_count(props).ok()?,
            "run",
        ),
    };
    if count < ANNOUNCE_FROM {
        return None;
    }
    let bound = props
        .parse::<u64>(prop::MAXEXECUTIONTIME.name)
        .ok()
        .flatten()
        .filter(|s| *s > 0);
    let (slow, fast) = (count as f64 / RATES.0, count as f64 / RATES.1);
    let time = match bound {
        Some(b) if (b as f64) < slow => {
            format!("at most {} (maxexecutiontime={b})", minutes(b as f64))
        }
        _ => format!(
            "about {}–{} at {:.0}–{:.0} ops/s",
            minutes(fast),
            minutes(slow),
            RATES.0,
            RATES.1
        ),
    };
    Some(format!(
        "microshard: about to {what} {} {} ({key}={count} from {}): {time}; give -p {key}=N for a smaller one",
        crate::runner::verdict::thousands(count),
        if phase == Phase::Load {
            "documents"
        } else {
            "operations"
        },
        props.origin_or_default(key)
    ))
}

/// A run whose `recordcount` is not what the collection holds reads a part of the data, or
/// keys that are not there: the warning that says so, with both numbers.
pub(crate) async fn records_mismatch(
    props: &Properties,
    binding: &crate::db::MongoBinding,
) -> Result<Option<String>, RunError> {
    let records = props
        .value(&prop::RECORDCOUNT)
        .map_err(RunError::as_bad_input)?;
    let records = u64::try_from(records).unwrap_or(0);
    let table = props.get(prop::TABLE.name).unwrap_or(prop::TABLE.default);
    let Some(held) = binding.document_count(table).await else {
        return Ok(None);
    };
    let consequence = match held.cmp(&records) {
        std::cmp::Ordering::Equal => return Ok(None),
        std::cmp::Ordering::Greater => "it reads and updates only that many of them",
        std::cmp::Ordering::Less => "operations on the keys not loaded will find no record",
    };
    Ok(Some(format!(
        "warning: the collection {table} holds {held} documents but this run's {}={records}: {consequence} (give -p {}={held} to match the data)",
        prop::RECORDCOUNT.name,
        prop::RECORDCOUNT.name
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_five_million_document_load_is_announced_with_its_origin() {
        let mut p = Properties::new();
        p.apply_override("recordcount=5000000").ok();
        let n = notice(Phase::Load, &p).unwrap_or_default();
        assert!(
            n.starts_with(
                "microshard: about to insert 5,000,000 documents (recordcount=5000000 from -p)"
            ),
            "{n}"
        );
        assert!(n.contains("about 2 min–8 min"), "{n}");
        p.apply_override("recordcount=10000").ok();
        assert_eq!(notice(Phase::Load, &p), None);
    }

    #[test]
    fn a_bounded_run_says_its_bound() {
        let mut p = Properties::new();
        p.apply_override("operationcount=100000000").ok();
        p.apply_override("maxexecutiontime=600").ok();
        let n = notice(Phase::Run, &p).unwrap_or_default();
        assert!(n.contains("at most 10 min (maxexecutiontime=600)"), "{n}");
    }
}
