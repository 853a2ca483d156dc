//! What a ceiling search is asked: its latency bounds (`--slo p99=10ms`) and how it steps, as
//! `ceiling` and `compare --ceiling` take them and a compare's record keeps them (README,
//! "Glossary": ceiling, bound).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One latency bound: a quantile of the intended latency and its limit (`p99=10ms`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// As given, `p99`, `p99.9`.
    pub name: String,
    /// The quantile, 0.99.
    pub quantile: f64,
    /// The limit in microseconds.
    pub limit_us: u64,
}

impl Bound {
    /// Reads `--slo`: `p99=10ms`, several comma-separated (all must hold).
    pub(crate) fn parse_list(text: &str) -> Result<Vec<Bound>, String> {
        let bounds = text
            .split(',')
            .map(|one| Bound::parse(one.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        if bounds.is_empty() {
            return Err(format!("{text:?}: give a bound such as p99=10ms"));
        }
        Ok(bounds)
    }

    fn parse(text: &str) -> Result<Bound, String> {
        let bad =
            |why: &str| format!("{text:?}: {why} (expected e.g. p99=10ms, p95=5ms, p99.9=50ms)");
        let (name, limit) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        let percent: f64 = name
            .trim()
            .strip_prefix('p')
            .and_then(|p| p.parse().ok())
            .filter(|p: &f64| *p > 0.0 && *p < 100.0)
            .ok_or_else(|| bad("a percentile between p0 and p100 is expected"))?;
        let limit = humantime::parse_duration(limit.trim()).map_err(|e| bad(&e.to_string()))?;
        let limit_us = u64::try_from(limit.as_micros()).unwrap_or(u64::MAX);
        if limit_us == 0 {
            return Err(bad("the limit must be at least 1 µs"));
        }
        Ok(Bound {
            name: name.trim().to_string(),
            quantile: percent / 100.0,
            limit_us,
        })
    }

    /// `p99 ≤ 10 ms`.
    pub(crate) fn shown(&self) -> String {
        format!("{} ≤ {}", self.name, micros(self.limit_us))
    }
}

/// A latency in the unit a reader takes in at a glance: `850 µs`, `12.4 ms`, `1.20 s`.
pub(crate) fn micros(us: u64) -> String {
    match us {
        u if u < 1_000 => format!("{u} µs"),
        u if u < 1_000_000 => format!("{:.1} ms", u as f64 / 1e3),
        u => format!("{:.2} s", u as f64 / 1e6),
    }
}

/// How a search steps and judges, as `ceiling` and `compare --ceiling` are asked (and as a
/// compare's record keeps it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchSpec {
    /// The latency bounds; all must hold.
    pub bounds: Vec<Bound>,
    /// Measured seconds of each step (after warm-up).
    pub step_s: u64,
    /// Stop bisecting when the gap is this share of the passing rate.
    pub precision: f64,
    /// The most client threads a step may use.
    pub max_threads: u32,
}

impl SearchSpec {
    /// Each step's measured length.
    pub(crate) fn step(&self) -> Duration {
        Duration::from_secs(self.step_s.max(1))
    }

    /// `p99 ≤ 10 ms, p99.9 ≤ 50 ms`.
    pub(crate) fn bounds_shown(&self) -> String {
        let shown: Vec<String> = self.bounds.iter().map(Bound::shown).collect();
        shown.join(", ")
    }
}
