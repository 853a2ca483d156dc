//! Times in words for pages: "1 Dec 2026, 18:42 UTC; cells 18:42:37–18:43:27, 50 s" instead of
//! RFC 3339 with nanoseconds. A time that does not parse is shown as stored.

use chrono::{DateTime, Utc};

fn parse(stored: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(stored)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// "1 Dec 2026, 18:42 UTC".
pub(crate) fn day_and_minute(stored: &str) -> String {
    match parse(stored) {
        Some(t) => t.format("%-d %b %Y, %H:%M UTC").to_string(),
        None => stored.to_string(),
    }
}

/// A length in words: "50 s", "12 min", "3 h 5 min".
pub(crate) fn length(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", (s + 30) / 60),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// When an experiment was made and when its cells finished: "1 Dec 2026, 18:42 UTC; cells
/// 18:42:37–18:43:27, 50 s" (the cells' date is said when it is not the creation's).
pub(crate) fn experiment_times(created: &str, finished: &[&str]) -> String {
    let mut out = day_and_minute(created);
    let times: Vec<DateTime<Utc>> = finished.iter().filter_map(|f| parse(f)).collect();
    let (Some(first), Some(last)) = (times.iter().min(), times.iter().max()) else {
        return out;
    };
    // A time on the day already said is its clock alone.
    let at = |t: &DateTime<Utc>, day_said: bool| match day_said {
        true => t.format("%H:%M:%S").to_string(),
        false => t.format("%-d %b %Y %H:%M:%S").to_string(),
    };
    let same_day = parse(created).is_some_and(|c| c.date_naive() == first.date_naive());
    let from = at(first, same_day);
    let to = at(last, last.date_naive() == first.date_naive());
    let span = length(last.timestamp() - first.timestamp());
    if times.len() == 1 {
        out.push_str(&format!("; cell finished {from}"));
    } else {
        out.push_str(&format!("; cells {from}–{to}, {span}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_words() {
        assert_eq!(
            experiment_times(
                "2026-12-01T18:42:27.593224432+00:00",
                &["2026-12-01T18:43:27.1+00:00", "2026-12-01T18:42:37.9+00:00"]
            ),
            "1 Dec 2026, 18:42 UTC; cells 18:42:37–18:43:27, 50 s"
        );
        assert_eq!(
            experiment_times(
                "2026-12-01T23:59:00Z",
                &["2026-12-02T00:01:00Z", "2026-12-02T01:01:00Z"]
            ),
            "1 Dec 2026, 23:59 UTC; cells 2 Dec 2026 00:01:00–01:01:00, 60 min"
        );
        assert_eq!(day_and_minute("yesterday"), "yesterday");
        assert_eq!(length(3 * 3600 + 5 * 60), "3 h 5 min");
    }
}
