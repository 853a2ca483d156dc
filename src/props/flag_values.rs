//! The values command-line flags take: durations, thread lists, comma-separated lists. Parsed
//! once, here, for clap's `value_parser`, so `load`/`run` (in `runner`) and the experiments read
//! the same syntax and the same bound.

use std::time::Duration;

/// The longest duration any flag accepts. A longer one is surely a typo, and a bound keeps every
/// deadline computed from it from overflowing (`docs/reliability.md` §1).
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);

/// Parses a duration flag: `60s`, `2m`, `1h`, `500ms`, `1h 30m` (humantime's syntax) or a bare
/// number of seconds; positive and at most [`MAX_DURATION`]. Overflowing numbers are refused,
/// never a panic.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let too_long = || format!("{text:?}: longer than 30 days");
    let d = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| too_long())?
    } else {
        humantime::parse_duration(t).map_err(|e| match e {
            humantime::DurationError::NumberOverflow => too_long(),
            e => format!("{text:?}: {e} (expected a duration such as 30s, 2m or 500ms)"),
        })?
    };
    if d.is_zero() {
        return Err(format!("{text:?}: must be positive"));
    }
    if d > MAX_DURATION {
        return Err(too_long());
    }
    Ok(d)
}

/// A duration flag as the seconds a property takes (`microshard.warmup`).
pub(crate) fn parse_seconds(text: &str) -> Result<f64, String> {
    parse_duration(text).map(|d| d.as_secs_f64())
}

/// A duration flag as the whole seconds a record keeps (at least one).
pub(crate) fn parse_whole_seconds(text: &str) -> Result<u64, String> {
    parse_duration(text).map(|d| d.as_secs().max(1))
}

/// Parses a comma-separated list of thread counts, sorted and without duplicates (clap takes
/// it as one value where a field is written `::std::vec::Vec<u32>`).
pub(crate) fn parse_threads(text: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let n: u32 = part
            .parse()
            .map_err(|_| format!("{part:?}: not a thread count"))?;
        if n == 0 {
            return Err("thread counts start at 1".into());
        }
        out.push(n);
    }
    if out.is_empty() {
        return Err("give at least one thread count".into());
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// One item of a comma-separated list (`--topologies`, `--scenarios`), without the spaces
/// around it (the record leaves empty items out).
pub(crate) fn list_item(text: &str) -> Result<String, String> {
    Ok(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("30days"), Ok(MAX_DURATION));
        for too_long in [
            "99999999999999999999s",
            "1000000000h",
            "31d",
            "99999999999999999999",
        ] {
            let e = parse_duration(too_long).err().unwrap_or_default();
            assert!(e.contains("30 days"), "{too_long}: {e}");
        }
    }

    #[test]
    fn thread_lists() {
        assert_eq!(parse_threads("8, 1,4,4"), Ok(vec![1, 4, 8]));
        assert!(parse_threads("1,0").is_err());
        assert!(parse_threads("a").is_err());
    }
}
