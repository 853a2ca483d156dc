//! YCSB's periodic status line (`StatusThread.computeStats`), as a pure function.

use chrono::{DateTime, TimeZone};

use super::javafmt::decimal_2;
use super::registry::IntervalSummaries;

/// Everything one status line is computed from.
#[derive(Debug, Clone)]
pub struct StatusInput<'a, Tz: TimeZone> {
    /// `-l` label, glued to the timestamp.
    pub label: &'a str,
    /// Wall-clock time of the line (YCSB prints local time).
    pub now: DateTime<Tz>,
    /// Milliseconds since the run started.
    pub elapsed_ms: u64,
    /// Operations done by all clients so far.
    pub total_ops: u64,
    /// Operations done at the previous line (0 for the first line).
    pub prev_ops: u64,
    /// `elapsed_ms` at the previous line (0 for the first line).
    pub prev_elapsed_ms: u64,
    /// Σ over clients of operations still to do; 0 for unlimited runs (no estimate printed).
    pub todo_ops: u64,
    /// Interval summaries from [`super::Measurements::take_interval`].
    pub summaries: &'a IntervalSummaries,
}

/// The exact status line YCSB prints (without the line terminator; it ends with a space when
/// there is at least one measurement).
pub fn status_line<Tz: TimeZone>(input: &StatusInput<'_, Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    let interval = input.elapsed_ms as f64;
    let throughput = 1000.0 * (input.total_ops as f64 / interval);
    // YCSB divides by the milliseconds since the last line; operations done within the first
    // millisecond would make the current rate ∞ (Java's `DecimalFormat` prints "∞"), which no
    // parser of status lines reads: that interval is at least 1 ms here.
    let since = input
        .elapsed_ms
        .saturating_sub(input.prev_elapsed_ms)
        .max(1) as f64;
    let cur = 1000.0 * ((input.total_ops as f64 - input.prev_ops as f64) / since);
    // Java `(long) Math.ceil(...)`: NaN → 0, ∞ → Long.MAX_VALUE (Rust's `as` saturates the same).
    let est_remaining = (input.todo_ops as f64 / throughput).ceil() as i64;

    let mut msg = format!(
        "{}{} {} sec: {} operations; ",
        input.label,
        input.now.format("%Y-%m-%d %H:%M:%S:%3f"),
        input.elapsed_ms / 1000,
        input.total_ops
    );
    if input.total_ops != 0 {
        msg.push_str(&decimal_2(cur));
        msg.push_str(" current ops/sec; ");
    }
    if input.todo_ops != 0 {
        msg.push_str("est completion in ");
        msg.push_str(&remaining(est_remaining));
    }
    msg.push_str(&input.summaries.text());
    msg
}

/// YCSB's `RemainingFormatter.format(seconds)`, quirks included: minutes only below a day,
/// seconds only when nothing else printed, and `second` vs `seconds` decided by whether the
/// number has one digit.
pub(crate) fn remaining(seconds: i64) -> String {
    let part = |n: i64, unit: &str| match n {
        1 => format!("1 {unit} "),
        _ => format!("{n} {unit}s "),
    };
    let mut out = String::new();
    let days = seconds / 86_400;
    if days > 0 {
        out += &part(days, "day");
    }
    let hours = seconds % 86_400 / 3_600;
    if hours > 0 {
        out += &part(hours, "hour");
    }
    let minutes = seconds % 3_600 / 60;
    if days < 1 && minutes > 0 {
        out += &part(minutes, "minute");
    }
    if out.is_empty() {
        // Under a minute, so nothing was subtracted: the plural is by digit count.
        let unit = if seconds.to_string().len() == 1 {
            "second"
        } else {
            "seconds"
        };
        out = format!("{seconds} {unit} ");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::registry::{IntervalSummary, MapKind, SummaryStats};
    use chrono::Utc;

    fn at(ms: i64) -> DateTime<Utc> {
        // 2020-01-10 16:21:40.213 UTC
        DateTime::from_timestamp_millis(1_578_673_300_213 + ms).unwrap()
    }

    fn line(
        elapsed_ms: u64,
        total: u64,
        prev: (u64, u64),
        todo: u64,
        summaries: &IntervalSummaries,
    ) -> String {
        status_line(&StatusInput {
            label: "",
            now: at(0),
            elapsed_ms,
            total_ops: total,
            prev_ops: prev.0,
            prev_elapsed_ms: prev.1,
            todo_ops: todo,
            summaries,
        })
    }

    fn insert_summary() -> IntervalSummaries {
        IntervalSummaries {
            entries: vec![IntervalSummary {
                name: "INSERT".into(),
                kind: MapKind::Actual,
                stats: SummaryStats::Hdr {
                    count: 15452,
                    max: 120319,
                    min: 1249,
                    mean: 2312.2099,
                    percentiles: [2100, 2625, 7915, 19551, 113855],
                },
            }],
        }
    }

    #[test]
    fn spec_example_line_master_format() {
        let s = insert_summary();
        // 15451 ops in 10 s, 1,000,000 to do: 647.2 s → 10 minutes (seconds dropped).
        assert_eq!(
            line(10_000, 15451, (0, 0), 1_000_000, &s),
            "2020-01-10 16:21:40:213 10 sec: 15451 operations; 1545.1 current ops/sec; est completion in 10 minutes [INSERT: Count=15452, Max=120319, Min=1249, Avg=2312.21, 50=2100, 90=2625, 99=7915, 99.9=19551, 99.99=113855] "
        );
    }

    #[test]
    fn label_unlimited_and_current_rate() {
        let s = IntervalSummaries::default();
        let l = status_line(&StatusInput {
            label: "run1 ",
            now: at(5),
            elapsed_ms: 20_500,
            total_ops: 3000,
            prev_ops: 1000,
            prev_elapsed_ms: 10_000,
            todo_ops: 0,
            summaries: &s,
        });
        assert_eq!(
            l,
            "run1 2020-01-10 16:21:40:218 20 sec: 3000 operations; 190.48 current ops/sec; "
        );
    }

    #[test]
    fn first_line_and_zero_throughput() {
        let s = IntervalSummaries::default();
        // Elapsed 0 ms: NaN estimate prints as 0 seconds.
        assert_eq!(
            line(0, 0, (0, 0), 100, &s),
            "2020-01-10 16:21:40:213 0 sec: 0 operations; est completion in 0 second "
        );
        // No operations after some time: Long.MAX_VALUE seconds.
        assert_eq!(
            line(10_000, 0, (0, 0), 100, &s),
            "2020-01-10 16:21:40:213 10 sec: 0 operations; est completion in 106751991167300 days 15 hours "
        );
        // An operation within the first millisecond: a rate over 1 ms, never "∞".
        let first = line(0, 1, (0, 0), 0, &s);
        assert!(
            first.contains("1 operations; 1000 current ops/sec; "),
            "{first}"
        );
    }

    #[test]
    fn remaining_quirks() {
        assert_eq!(remaining(0), "0 second ");
        assert_eq!(remaining(5), "5 second ");
        assert_eq!(remaining(1), "1 second ");
        assert_eq!(remaining(10), "10 seconds ");
        assert_eq!(remaining(59), "59 seconds ");
        assert_eq!(remaining(60), "1 minute ");
        assert_eq!(remaining(119), "1 minute ");
        assert_eq!(remaining(120), "2 minutes ");
        assert_eq!(remaining(3600), "1 hour ");
        assert_eq!(remaining(3661), "1 hour 1 minute ");
        assert_eq!(remaining(7322), "2 hours 2 minutes ");
        assert_eq!(remaining(86_400), "1 day ");
        assert_eq!(remaining(86_400 + 3600 + 60), "1 day 1 hour ");
        assert_eq!(remaining(3 * 86_400 + 7200 + 59), "3 days 2 hours ");
        assert_eq!(remaining(i64::MAX), "106751991167300 days 15 hours ");
    }

    #[test]
    fn estimate_rounds_up() {
        let s = IntervalSummaries::default();
        // 100 ops/s, 1001 to do: ceil(10.01) = 11 seconds.
        assert_eq!(
            line(10_000, 1000, (900, 9000), 1001, &s),
            "2020-01-10 16:21:40:213 10 sec: 1000 operations; 100 current ops/sec; est completion in 11 seconds "
        );
    }
}
