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
    /// Reads `--slo`: `p99=10ms`, several comma-separated (all must hold, each percentile
    /// once).
    pub(crate) fn parse_list(text: &str) -> Result<Vec<Bound>, String> {
        let bounds = text
            .split(',')
            .map(|one| Bound::parse(one.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        if bounds.is_empty() {
            return Err(format!("{text:?}: give a bound such as p99=10ms"));
        }
        for (i, b) in bounds.iter().enumerate() {
            if bounds[..i].iter().any(|a| a.quantile == b.quantile) {
                return Err(format!(
                    "{text:?}: {} is bounded twice; give each percentile once",
                    b.name
                ));
            }
        }
        Ok(bounds)
    }

    fn parse(text: &str) -> Result<Bound, String> {
        let bad =
            |why: &str| format!("{text:?}: {why} (expected e.g. p99=10ms, p95=5ms, p99.9=50ms)");
        let (name, limit) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        let percent = percentile(name.trim()).map_err(|why| bad(&why))?;
        let limit = humantime::parse_duration(limit.trim()).map_err(|e| bad(&e.to_string()))?;
        let limit_us = u64::try_from(limit.as_micros()).unwrap_or(u64::MAX);
        if limit_us == 0 {
            return Err(bad("the limit must be at least 1 µs"));
        }
        Ok(Bound {
            name: format!("p{}", name.trim()[1..].trim()),
            quantile: percent / 100.0,
            limit_us,
        })
    }

    /// `p99 ≤ 10 ms`.
    pub(crate) fn shown(&self) -> String {
        format!("{} ≤ {}", self.name, micros(self.limit_us))
    }

    /// `p99 ≤ 10 ms, p99.9 ≤ 50 ms`: bounds as every title and finding names them.
    pub(crate) fn all_shown(bounds: &[Bound]) -> String {
        let shown: Vec<String> = bounds.iter().map(Bound::shown).collect();
        shown.join(", ")
    }
}

/// The percentile a bound names (`p99` → 99), with a hint for the near misses: a capital P,
/// `p100` (the maximum), `p999` for p99.9.
fn percentile(name: &str) -> Result<f64, String> {
    let digits = match name.strip_prefix('p') {
        Some(d) => d,
        None if name.starts_with('P') => {
            return Err(format!(
                "write the percentile with a small p: p{}",
                &name[1..]
            ));
        }
        None => return Err("a percentile such as p99 is expected".into()),
    };
    let p: f64 = digits
        .parse()
        .map_err(|_| format!("{name:?} is not a percentile such as p99 or p99.9"))?;
    if p >= 100.0 && digits.starts_with("99") && !digits.contains('.') {
        return Err(format!("did you mean p99.{}?", &digits[2..]));
    }
    if p >= 100.0 {
        return Err(format!(
            "{name} is the maximum, not a percentile a bound can hold; give e.g. p99.9"
        ));
    }
    if p <= 0.0 {
        return Err("a percentile above p0 is expected".into());
    }
    Ok(p)
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

    /// `5 %`, `0.5 %`: the precision as given.
    pub(crate) fn precision_shown(&self) -> String {
        let p = self.precision * 100.0;
        match p.fract().abs() < 1e-9 {
            true => format!("{p:.0} %"),
            false => format!("{} %", (p * 100.0).round() / 100.0),
        }
    }

    /// `p99 ≤ 10 ms, p99.9 ≤ 50 ms`.
    pub(crate) fn bounds_shown(&self) -> String {
        Bound::all_shown(&self.bounds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_read_percentiles_and_units_and_refuse_the_rest_with_a_hint() {
        let b = Bound::parse_list("p99=10ms, p99.9=1s,p50=500us").expect("bounds");
        assert_eq!(b.len(), 3);
        assert_eq!((b[0].quantile, b[0].limit_us), (0.99, 10_000));
        assert!((b[1].quantile - 0.999).abs() < 1e-12);
        assert_eq!(b[1].limit_us, 1_000_000);
        assert_eq!(b[2].limit_us, 500);
        assert_eq!(b[0].shown(), "p99 ≤ 10.0 ms");
        let refused = |text: &str| Bound::parse_list(text).err().unwrap_or_default();
        for bad in ["p99", "q99=1ms", "p99=fast", "p99=0ms", ""] {
            assert!(!refused(bad).is_empty(), "{bad}");
        }
        assert!(refused("P99=10ms").contains("write the percentile with a small p: p99"));
        assert!(refused("p999=10ms").contains("did you mean p99.9?"));
        assert!(refused("p9999=10ms").contains("did you mean p99.99?"));
        assert!(refused("p100=10ms").contains("p100 is the maximum"));
        assert!(refused("p99=10ms,p99=20ms").contains("p99 is bounded twice"));
    }
}
