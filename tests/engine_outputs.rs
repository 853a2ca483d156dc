//! End-to-end: YCSB's other measurement outputs — HdrHistogram interval logs
//! (`hdrhistogram.fileoutput`), `timeseries`, `raw` and the combined types — and the notes for
//! properties that have no effect here (`docs/engine.md`, "Measurement outputs").

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

use crate::util::{StandinProcess, bin, workload};

/// Runs `phase` (`load` or `run`) of workloada with `args`, split at white space (no argument
/// here holds any).
fn workloada(tmp: &Path, phase: &str, args: &str) -> Output {
    Command::new(bin())
        .args([phase, "-P"])
        .arg(workload("workloada"))
        .args(args.split_whitespace())
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .output()
        .expect("run microshard")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A stand-in loaded with 200 records of workloada.
fn loaded(tmp: &Path) -> StandinProcess {
    let server = StandinProcess::start(tmp);
    let out = workloada(
        tmp,
        "load",
        &format!("-p recordcount=200 --uri {}", server.uri()),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    server
}

/// The run phase's usual arguments: 2000 operations on 200 records, two threads.
const RUN: &str = "-p recordcount=200 -p operationcount=2000 --threads 2";

/// Runs workloada (2000 operations) with extra `-p` pairs; returns the output.
fn run(tmp: &Path, server: &StandinProcess, extra: &[&str]) -> Output {
    let mut args = format!("{RUN} --uri {}", server.uri());
    for e in extra {
        args += &format!(" -p {e}");
    }
    workloada(tmp, "run", &args)
}

/// `[OP], measurement, value` lines of a text report, by (op, measurement).
fn report(stdout: &str) -> HashMap<(String, String), String> {
    stdout
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix('[')?;
            let (op, rest) = rest.split_once("], ")?;
            let (m, v) = rest.rsplit_once(", ")?;
            Some(((op.to_string(), m.to_string()), v.to_string()))
        })
        .collect()
}

fn operations(r: &HashMap<(String, String), String>, op: &str) -> u64 {
    r[&(op.to_string(), "Operations".to_string())]
        .parse()
        .expect("Operations is a number")
}

/// The total count of every interval of a log, read with the `hdrhistogram` crate's reader.
fn crate_total(path: &Path) -> (u64, usize) {
    use base64::Engine;
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut de = Deserializer::new();
    let mut total = 0;
    let mut intervals = 0;
    for entry in IntervalLogIterator::new(&bytes) {
        if let LogEntry::Interval(i) = entry.expect("a valid interval log") {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(i.encoded_histogram())
                .expect("base64");
            let h: Histogram<u64> = de
                .deserialize(&mut std::io::Cursor::new(raw))
                .expect("a histogram");
            total += h.len();
            intervals += 1;
        }
    }
    (total, intervals)
}

/// The total count of a log read with the PyPI `hdrhistogram` package's `HistogramLogReader`;
/// `None` (with the reason printed) when python or the package is missing.
fn python_total(path: &Path) -> Option<u64> {
    let script = r#"
import sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600000000, 3))
total = 0
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    total += h.get_total_count()
print(total)
"#;
    let probe = Command::new("python3")
        .args(["-c", "import hdrh.log"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        _ => {
            println!(
                "SKIP python check: python3 with the PyPI package hdrhistogram is not installed (pip install hdrhistogram; .ci/run installs it)"
            );
            return None;
        }
    }
    let out = Command::new("python3")
        .args(["-c", script, path.to_str().unwrap()])
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "python reader: {}", text(&out.stderr));
    Some(text(&out.stdout).trim().parse().expect("a count"))
}

#[test]
fn hdr_file_output_writes_interval_logs_every_reader_reads() {
    let tmp = tempfile::tempdir().expect("tmp");
    let server = loaded(tmp.path());
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let prefix = format!("{}/", logs.display());
    let path = format!("hdrhistogram.output.path={prefix}");
    let out = run(
        tmp.path(),
        &server,
        &[
            "hdrhistogram.fileoutput=true",
            &path,
            "status=true",
            "status.interval=1",
        ],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = report(&stdout);
    for op in ["READ", "UPDATE"] {
        let file = logs.join(format!("{op}.hdr"));
        let (total, intervals) = crate_total(&file);
        assert_eq!(total, operations(&r, op), "{op}: crate reader");
        assert!(intervals >= 1, "{op}");
        let head = std::fs::read_to_string(&file).unwrap();
        assert!(
            head.starts_with(&format!("#[Logging for: {op}]\n")),
            "{head}"
        );
        assert!(
            head.contains("\n\"StartTimestamp\",\"Interval_Length\""),
            "{head}"
        );
        if let Some(py) = python_total(&file) {
            assert_eq!(py, operations(&r, op), "{op}: python reader");
        }
    }
    assert!(logs.join("CLEANUP.hdr").exists());
}

#[test]
fn hdr_logs_of_several_clients_are_merged_per_interval() {
    let tmp = tempfile::tempdir().expect("tmp");
    let server = loaded(tmp.path());
    let prefix = format!("{}/run-", tmp.path().display());
    let path = format!("hdrhistogram.output.path={prefix}");
    let uri = server.uri();
    let out = workloada(
        tmp.path(),
        "run",
        &format!("{RUN} --clients 2 --uri {uri} -p hdrhistogram.fileoutput=true -p {path}"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = report(&text(&out.stdout));
    for op in ["READ", "UPDATE"] {
        let merged = crate_total(Path::new(&format!("{prefix}{op}.hdr"))).0;
        assert_eq!(merged, operations(&r, op), "{op}");
        let a = crate_total(Path::new(&format!("{prefix}client-0/{op}.hdr"))).0;
        let b = crate_total(Path::new(&format!("{prefix}client-1/{op}.hdr"))).0;
        assert_eq!(a + b, merged, "{op}: each client's own log stays");
    }
    let raw = workloada(
        tmp.path(),
        "run",
        &format!("--threads 2 --clients 2 --uri {uri} -p measurementtype=raw"),
    );
    assert_eq!(raw.status.code(), Some(2));
    assert!(
        text(&raw.stderr).contains("measurementtype=raw"),
        "{}",
        text(&raw.stderr)
    );
}

#[test]
fn an_unwritable_log_path_is_refused_before_the_run() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = workloada(
        tmp.path(),
        "run",
        "--uri mongodb://127.0.0.1:1/ycsb -p hdrhistogram.fileoutput=true -p hdrhistogram.output.path=/nonexistent-microshard/",
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = stderr.lines().last().unwrap_or_default();
    assert!(
        line.contains("hdrhistogram.output.path=/nonexistent-microshard/"),
        "{stderr}"
    );
}

#[test]
fn timeseries_prints_averages_per_unit_and_status_on_stdout() {
    let tmp = tempfile::tempdir().expect("tmp");
    let server = loaded(tmp.path());
    let out = run(
        tmp.path(),
        &server,
        &[
            "measurementtype=timeseries",
            "timeseries.granularity=50",
            "status=true",
        ],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = report(&stdout);
    let ops = operations(&r, "READ");
    assert!(ops > 0);
    for m in [
        "AverageLatency(us)",
        "MinLatency(us)",
        "MaxLatency(us)",
        "Return=OK",
    ] {
        assert!(r.contains_key(&("READ".into(), m.into())), "{m}: {stdout}");
    }
    let unit = regex::Regex::new(r"^\[READ\], (\d+), \d+(\.\d+)?(E\d+)?$").unwrap();
    let units: Vec<u64> = stdout
        .lines()
        .filter_map(|l| unit.captures(l).map(|c| c[1].parse().unwrap()))
        .collect();
    assert_eq!(units.first(), Some(&0), "{stdout}");
    assert!(units.iter().all(|u| u % 50 == 0) && units.windows(2).all(|w| w[0] < w[1]));
    // YCSB prints the status line on stdout too with this type.
    assert!(
        stdout
            .lines()
            .any(|l| l.contains(" sec: ") && l.contains("[READ AverageLatency(us)=")),
        "{stdout}"
    );
}

#[test]
fn raw_writes_every_point_and_the_summary() {
    let tmp = tempfile::tempdir().expect("tmp");
    let server = loaded(tmp.path());
    let file = tmp.path().join("raw.txt");
    let to = format!("measurement.raw.output_file={}", file.display());
    let out = run(tmp.path(), &server, &["measurementtype=raw", &to]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = report(&stdout);
    let key = |op: &str, m: &str| (op.to_string(), m.to_string());
    let total: usize = r[&key("READ", "Total Operations")].parse().unwrap();
    assert_eq!(
        r[&key("READ", "Below is a summary of latency in microseconds:")],
        "-1"
    );
    for m in [
        "Average",
        "Min",
        "Max",
        "p1",
        "p5",
        "p50",
        "p90",
        "p95",
        "p99",
        "p99.9",
        "p99.99",
        "Return=OK",
    ] {
        assert!(r.contains_key(&key("READ", m)), "{m}: {stdout}");
    }
    let data = std::fs::read_to_string(&file).unwrap();
    assert!(
        data.contains("READ latency raw data: op, timestamp(ms), latency(us)\n"),
        "{data}"
    );
    let row = regex::Regex::new(r"^READ,\d{13},\d+$").unwrap();
    assert_eq!(data.lines().filter(|l| row.is_match(l)).count(), total);
    assert!(text(&out.stderr).contains("Raw data measurement: will output to result file: "));

    let out = run(
        tmp.path(),
        &server,
        &["measurementtype=raw", "measurement.raw.no_summary=true"],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("READ latency raw data: op, timestamp(ms), latency(us)\n"));
    let r = report(&stdout);
    assert!(r.contains_key(&key("READ", "Total Operations")));
    assert!(!r.contains_key(&key("READ", "Average")), "{stdout}");
}

#[test]
fn combined_types_print_both_blocks() {
    let tmp = tempfile::tempdir().expect("tmp");
    let server = loaded(tmp.path());
    let out = run(
        tmp.path(),
        &server,
        &["measurementtype=hdrhistogram+histogram"],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = report(&stdout);
    let key = |op: &str, m: &str| (op.to_string(), m.to_string());
    assert_eq!(operations(&r, "HdrREAD"), operations(&r, "BucketREAD"));
    assert!(r.contains_key(&key("HdrREAD", "99thPercentileLatency(us)")));
    assert!(r.contains_key(&key("BucketREAD", "LatencyVariance(us)")));
    assert!(r.contains_key(&key("HdrREAD", "Return=OK")));
    assert!(
        !r.contains_key(&key("BucketREAD", "Return=OK")),
        "statuses only on the Hdr block"
    );

    let out = run(
        tmp.path(),
        &server,
        &[
            "measurementtype=hdrhistogram+raw",
            "measurement.trackjvm=true",
        ],
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = report(&stdout);
    let raw_total: u64 = r[&key("RawREAD", "Total Operations")].parse().unwrap();
    assert_eq!(operations(&r, "HdrREAD"), raw_total);
    assert!(stdout.contains("RawREAD latency raw data: op, timestamp(ms), latency(us)\n"));
    assert!(
        stderr.contains("note: property measurement.trackjvm=true has no effect here: "),
        "{stderr}"
    );
}
