//! What stand-in ratios can tell: with a capacity model (`--service-time-us`, `--workers`) each
//! stand-in `mongod` serves a fixed rate, so the figures show the pipeline at work; without one,
//! the stand-ins, the `mongos` hop and the client share this machine's cores, and more processes
//! can only be slower. Every stand-in table, chart and page says which is in force.

/// The stand-in's capacity model as the extra `mongod` arguments set it: `(workers, µs per op)`,
/// read as the stand-in reads them (arguments it would refuse set no model).
pub(crate) fn model(extra_mongod_args: &[String]) -> Option<(u64, u64)> {
    use crate::standin::{Role, StandinConfig};
    let given = StandinConfig::from_args(Role::Mongod, extra_mongod_args).ok()?;
    (given.service_time_us > 0).then_some((given.workers as u64, given.service_time_us))
}

/// Each topology's capacity under the stand-in's model: a mongod's rate times the shards that
/// serve the data (one for a single mongod), from the plan its cells recorded.
pub(crate) fn per_topology(
    extra_mongod_args: &[String],
    cells: &[crate::experiment::model::CellFile],
    shown: impl Fn(&str) -> String,
) -> Vec<(String, f64)> {
    let Some((workers, us)) = model(extra_mongod_args) else {
        return Vec::new();
    };
    let per_mongod = workers as f64 * 1e6 / us as f64;
    let mut out: Vec<(String, f64)> = Vec::new();
    for c in cells {
        let (Some(plan), true) = (&c.topology, c.summary.standin) else {
            continue;
        };
        let name = shown(&c.cell.topology);
        if out.iter().all(|(t, _)| *t != name) {
            let shards = plan.shard_sets().len().max(1);
            out.push((name, per_mongod * shards as f64));
        }
    }
    out
}

/// One sentence saying which capacity model the stand-in figures were measured under.
pub(crate) fn sentence(extra_mongod_args: &[String], cores: u64) -> String {
    match model(extra_mongod_args) {
        Some((workers, us)) => format!(
            "Capacity model: each stand-in mongod serves {:.0} ops/s ({workers} worker(s) × {us} µs per operation) — this shows the pipeline, not MongoDB.",
            workers as f64 * 1e6 / us as f64
        ),
        None => format!(
            "No capacity model: these figures measure how the stand-in, its mongos and the client share this machine's {} — not sharding, and not MongoDB (`demo` and --mongod-arg=--service-time-us=N set one).",
            match cores {
                0 => "cores".to_string(),
                1 => "1 core".to_string(),
                n => format!("{n} cores"),
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_model_is_named_with_its_rate() {
        let args = ["--service-time-us=10000".to_string(), "--workers=2".into()];
        assert_eq!(model(&args), Some((2, 10_000)));
        let s = sentence(&args, 2);
        assert!(
            s.starts_with("Capacity model: each stand-in mongod serves 200 ops/s"),
            "{s}"
        );
        assert_eq!(
            model(&["--service-time-us".to_string(), "500".into()]),
            Some((1, 500))
        );
    }

    #[test]
    fn without_a_model_the_sentence_says_what_ratios_measure() {
        let s = sentence(&[], 2);
        assert!(
            s.starts_with("No capacity model: these figures measure how the stand-in"),
            "{s}"
        );
        assert!(s.contains("2 cores"), "{s}");
    }
}
