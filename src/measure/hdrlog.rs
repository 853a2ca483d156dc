//! YCSB's `hdrhistogram.fileoutput`: one HdrHistogram interval log per measurement,
//! `<hdrhistogram.output.path><NAME>.hdr`, one interval histogram per status interval and one at
//! the end, written with the `hdrhistogram` crate's interval-log writer so HdrHistogram's own log
//! tools (HistogramLogAnalyzer, `hdr-plot`, the Java and Python `HistogramLogReader`) read them.
//!
//! Layout as YCSB's `HistogramLogWriter` writes it: `#[Logging for: NAME]`, the format version,
//! `StartTime` and `BaseTime` (the measurement's first operation), the CSV legend, then one
//! `start,length,max,histogram` line per interval (timestamps in seconds since `BaseTime`, the max
//! divided by 1,000,000 as Java's writer does).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{
    IntervalLogHistogram, IntervalLogIterator, IntervalLogWriterBuilder, LogEntry,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};

/// Java's `HistogramLogWriter` divides each interval's maximum by this (µs → s).
const MAX_VALUE_DIVISOR: f64 = 1_000_000.0;
/// The CSV header line Java's `outputLegend()` writes.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// The file of the measurement `name` under `prefix` (`prefix` is glued on, as YCSB does).
pub(crate) fn log_path(prefix: &str, name: &str) -> PathBuf {
    PathBuf::from(format!("{prefix}{name}.hdr"))
}

/// Proves that files can be created under `prefix` (creates and removes a probe file), so a run
/// never ends by losing its logs. The error says why, for a line naming the property.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), String> {
    let probe = log_path(prefix, &format!(".microshard-probe-{}", std::process::id()));
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe);
    opened.map_err(|e| format!("cannot write {}: {e}", log_path(prefix, "READ").display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// One open log: its file, its base time and where the next interval starts.
struct Log {
    file: BufWriter<File>,
    base: SystemTime,
    last: SystemTime,
}

/// The interval logs of one run, by measurement name.
pub(crate) struct HdrLogs {
    prefix: String,
    logs: Vec<(String, Log)>,
    serializer: V2DeflateSerializer,
    problems: Vec<String>,
    closed: bool,
}

fn seconds_since(t: SystemTime, base: SystemTime) -> Duration {
    t.duration_since(base).unwrap_or_default()
}

impl HdrLogs {
    /// Logs under `prefix`; nothing is created before the first interval of a measurement.
    pub(crate) fn new(prefix: String) -> HdrLogs {
        HdrLogs {
            prefix,
            logs: Vec::new(),
            serializer: V2DeflateSerializer::new(),
            problems: Vec::new(),
            closed: false,
        }
    }

    fn open(&mut self, name: &str, started: SystemTime) -> Option<usize> {
        let path = log_path(&self.prefix, name);
        let opened = File::create(&path).and_then(|f| {
            let mut file = BufWriter::new(f);
            header(&mut file, name, started)?;
            Ok(file)
        });
        match opened {
            Ok(file) => {
                let log = Log {
                    file,
                    base: started,
                    last: started,
                };
                self.logs.push((name.to_string(), log));
                Some(self.logs.len() - 1)
            }
            Err(e) => {
                self.problem(name, e);
                None
            }
        }
    }

    /// Notes that the log of measurement `name` could not be written.
    fn problem(&mut self, name: &str, e: impl std::fmt::Display) {
        let path = log_path(&self.prefix, name);
        self.problems
            .push(format!("cannot write {}: {e}", path.display()));
    }

    /// Appends the interval `[previous interval's end, now]` of measurement `name` (first
    /// operation at `started`), opening its log the first time.
    pub(crate) fn interval(
        &mut self,
        name: &str,
        started: SystemTime,
        h: &Histogram<u64>,
        now: SystemTime,
    ) {
        if self.closed {
            return;
        }
        let found = self.logs.iter().position(|(n, _)| n == name);
        let Some(idx) = found.or_else(|| self.open(name, started)) else {
            return;
        };
        let log = &mut self.logs[idx].1;
        let start = seconds_since(log.last, log.base);
        let length = seconds_since(now, log.last);
        log.last = now;
        if let Err(e) = write_interval(&mut log.file, &mut self.serializer, h, start, length) {
            self.problem(name, e);
        }
    }

    /// Flushes and closes every log (later intervals are not written); returns what went wrong.
    pub(crate) fn close(&mut self) -> Vec<String> {
        self.closed = true;
        for (name, log) in std::mem::take(&mut self.logs) {
            if let Err(e) = log
                .file
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|f| f.sync_all())
            {
                self.problem(&name, e);
            }
        }
        std::mem::take(&mut self.problems)
    }

    /// Forgets every log (the end of a warm-up): the next interval starts each file afresh.
    pub(crate) fn restart(&mut self) {
        self.logs.clear();
    }
}

/// The header YCSB writes when it creates a measurement's log.
fn header(file: &mut BufWriter<File>, name: &str, started: SystemTime) -> std::io::Result<()> {
    let mut serializer = V2DeflateSerializer::new();
    IntervalLogWriterBuilder::new()
        .add_comment(&format!("[Logging for: {name}]"))
        .add_comment("[Histogram log format version 1.3]")
        .with_start_time(started)
        .with_base_time(started)
        .begin_log_with(file, &mut serializer)?;
    writeln!(file, "{LEGEND}")
}

/// One interval line. The crate's writer announces a max-value divisor other than 1 with a
/// `#[MaxValueDivisor: …]` comment before every line it writes from a fresh writer; the header
/// already says how the maximum is scaled, so only the interval line itself is kept.
fn write_interval(
    file: &mut BufWriter<File>,
    serializer: &mut V2DeflateSerializer,
    h: &Histogram<u64>,
    start: Duration,
    length: Duration,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    {
        let mut w = IntervalLogWriterBuilder::new()
            .with_max_value_divisor(MAX_VALUE_DIVISOR)
            .begin_log_with(&mut buf, serializer)?;
        w.write_histogram(h, start, length, None)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    let line = match buf.iter().position(|&b| b == b'\n') {
        Some(nl) if buf.starts_with(b"#") => &buf[nl + 1..],
        _ => &buf[..],
    };
    file.write_all(line)
}

/// One interval read back from a log: its absolute start, its length, its histogram.
pub(crate) struct ReadInterval {
    /// Start, as time since the epoch (`BaseTime` + the line's timestamp).
    pub start: Duration,
    /// Interval length.
    pub length: Duration,
    /// The interval's latencies.
    pub histogram: Histogram<u64>,
}

/// Reads an interval log written by [`HdrLogs`] (or by YCSB) with the crate's log reader.
pub(crate) fn read_log(bytes: &[u8]) -> Result<(Duration, Vec<ReadInterval>), String> {
    let mut base: Option<Duration> = None;
    let mut start_time: Option<Duration> = None;
    let mut out = Vec::new();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(bytes) {
        match entry.map_err(|e| format!("not an interval log: {e:?}"))? {
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::StartTime(t) => start_time = Some(t),
            LogEntry::Interval(ilh) => out.push(decode(&mut de, &ilh, base)?),
        }
    }
    Ok((start_time.or(base).unwrap_or_default(), out))
}

fn decode(
    de: &mut Deserializer,
    ilh: &IntervalLogHistogram<'_>,
    base: Option<Duration>,
) -> Result<ReadInterval, String> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(ilh.encoded_histogram())
        .map_err(|e| format!("bad histogram encoding: {e}"))?;
    let mut histogram: Histogram<u64> = de
        .deserialize(&mut std::io::Cursor::new(raw))
        .map_err(|e| format!("bad histogram: {e:?}"))?;
    histogram.auto(true);
    Ok(ReadInterval {
        start: base.unwrap_or_default() + ilh.start_timestamp(),
        length: ilh.duration(),
        histogram,
    })
}

/// The logs of several clients of one run merged into `prefix`: for every measurement any client
/// logged, interval `k` is the sum of every client's interval `k` (clients start together at the
/// barrier and snapshot at the same status interval). Returns what could not be read or written.
pub(crate) fn merge_logs(client_prefixes: &[String], prefix: &str) -> Vec<String> {
    let mut problems = Vec::new();
    // Each name once, in sorted order.
    let all = client_prefixes.iter().flat_map(|p| logged_names(p));
    let names: std::collections::BTreeSet<String> = all.collect();
    let mut out = HdrLogs::new(prefix.to_string());
    for name in &names {
        let mut logs = Vec::new();
        for p in client_prefixes {
            let path = log_path(p, name);
            match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| read_log(&b))
            {
                Ok(log) => logs.push(log),
                Err(e) if path.exists() => problems.push(format!("{}: {e}", path.display())),
                Err(_) => {}
            }
        }
        merge_one(&mut out, name, &logs);
    }
    problems.extend(out.close());
    problems
}

fn merge_one(out: &mut HdrLogs, name: &str, logs: &[(Duration, Vec<ReadInterval>)]) {
    let Some(started) = logs.iter().map(|(s, _)| *s).min() else {
        return;
    };
    let epoch = SystemTime::UNIX_EPOCH;
    let count = logs.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let mut last_end = started;
    for k in 0..count {
        let mut sum = super::hdr::new_histogram();
        let mut end = last_end;
        for (_, intervals) in logs {
            if let Some(i) = intervals.get(k) {
                let _ = sum.add(&i.histogram);
                end = end.max(i.start + i.length);
            }
        }
        // The merged interval runs from the previous merged end to the latest client's end.
        out.interval(name, epoch + started, &sum, epoch + end);
        last_end = end;
    }
}

/// Measurement names with a log under `prefix` (`<prefix><NAME>.hdr`).
fn logged_names(prefix: &str) -> Vec<String> {
    let path = PathBuf::from(prefix);
    let (dir, stem) = if prefix.ends_with('/') || prefix.is_empty() {
        (path.clone(), String::new())
    } else {
        let dir = path.parent().map(PathBuf::from).unwrap_or_default();
        let stem = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        (dir, stem)
    };
    let dir = if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let name = file.strip_prefix(&stem)?.strip_suffix(".hdr")?.to_string();
            (!name.is_empty() && !name.starts_with('.')).then_some(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = super::super::hdr::new_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn a_log_reads_back_with_the_crates_reader() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = format!("{}/", dir.path().display());
        check_prefix(&prefix).unwrap();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        let mut logs = HdrLogs::new(prefix.clone());
        logs.interval(
            "READ",
            t0,
            &hist(&[100, 200, 300]),
            t0 + Duration::from_secs(10),
        );
        logs.interval(
            "READ",
            t0,
            &hist(&[5000]),
            t0 + Duration::from_millis(12_500),
        );
        assert!(logs.close().is_empty());
        let text = std::fs::read_to_string(log_path(&prefix, "READ")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "#[Logging for: READ]");
        assert_eq!(lines[1], "#[Histogram log format version 1.3]");
        assert_eq!(
            lines[2],
            "#[StartTime: 1700000000.250 (seconds since epoch)]"
        );
        assert_eq!(
            lines[3],
            "#[BaseTime: 1700000000.250 (seconds since epoch)]"
        );
        assert_eq!(lines[4], LEGEND);
        assert!(
            lines[5].starts_with("0.000,10.000,0.000,HISTF"),
            "{}",
            lines[5]
        );
        assert!(
            lines[6].starts_with("10.000,2.500,0.005,HISTF"),
            "{}",
            lines[6]
        );
        assert_eq!(lines.len(), 7);
        let (start, intervals) = read_log(text.as_bytes()).unwrap();
        assert_eq!(start, Duration::from_millis(1_700_000_000_250));
        let counts: Vec<u64> = intervals.iter().map(|i| i.histogram.len()).collect();
        assert_eq!(counts, [3, 1]);
        assert_eq!(intervals[1].start, Duration::from_millis(1_700_000_010_250));
    }

    #[test]
    fn client_logs_merge_interval_by_interval() {
        let dir = tempfile::tempdir().unwrap();
        let p = |s: &str| format!("{}/{s}", dir.path().display());
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for (client, values) in [("a-", [1u64, 2]), ("b-", [30, 40])] {
            let mut logs = HdrLogs::new(p(client));
            logs.interval("READ", t0, &hist(&values), t0 + Duration::from_secs(10));
            logs.interval(
                "READ",
                t0,
                &hist(&values[..1]),
                t0 + Duration::from_secs(20),
            );
            assert!(logs.close().is_empty());
        }
        let mut only_b = HdrLogs::new(p("b-"));
        only_b.interval("UPDATE", t0, &hist(&[7]), t0 + Duration::from_secs(20));
        only_b.close();
        assert!(merge_logs(&[p("a-"), p("b-")], &p("all-")).is_empty());
        let read = std::fs::read(log_path(&p("all-"), "READ")).unwrap();
        let (_, intervals) = read_log(&read).unwrap();
        let counts: Vec<u64> = intervals.iter().map(|i| i.histogram.len()).collect();
        assert_eq!(counts, [4, 2]);
        assert_eq!(super::super::hdr::max(&intervals[0].histogram), 40);
        let update = std::fs::read(log_path(&p("all-"), "UPDATE")).unwrap();
        assert_eq!(read_log(&update).unwrap().1.len(), 1);
    }

    #[test]
    fn an_unwritable_prefix_is_refused() {
        let e = check_prefix("/nonexistent-dir-for-microshard/").unwrap_err();
        assert!(
            e.contains("/nonexistent-dir-for-microshard/READ.hdr"),
            "{e}"
        );
    }
}
