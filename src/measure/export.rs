//! YCSB's final exporters, line for line.
//!
//! Not printed: the JVM garbage-collector lines (`[TOTAL_GCS_*]`, `[TOTAL_GC_TIME*]`) and the
//! `measurement.trackjvm` lines: there is no JVM here, and inventing numbers would mislead.

use hdrhistogram::Histogram;

use super::config::MeasurementConfig;
use super::javafmt::{java_double, percentile_label};
use super::legacy::BucketHistogram;
use super::registry::{OpMeasurement, RunMeasurements};
use super::series::{RawLog, TimeSeries};
use super::{Status, hdr, javafmt};

/// The `[OVERALL]` numbers of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overall {
    /// Wall-clock run time in ms (YCSB includes client init and cleanup).
    pub runtime_ms: u64,
    /// Operations done by all clients.
    pub operations: u64,
}

impl Overall {
    /// YCSB's `1000.0 * ops / runtime` (`Infinity` or `NaN` when the runtime is 0).
    pub(crate) fn throughput(&self) -> f64 {
        1000.0 * (self.operations as f64) / (self.runtime_ms as f64)
    }
}

/// One export value: Java `int`/`long` or `double`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    /// Printed as a plain integer.
    Long(i64),
    /// Printed with `Double.toString`.
    Double(f64),
}

/// One `[metric], measurement, value` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    /// `OVERALL`, `READ`, ...
    pub metric: String,
    /// `RunTime(ms)`, `Operations`, `Return=OK`, ...
    pub measurement: String,
    /// The number.
    pub value: Value,
}

fn line(metric: &str, measurement: impl Into<String>, value: Value) -> Line {
    Line {
        metric: metric.to_string(),
        measurement: measurement.into(),
        value,
    }
}

fn as_long(v: u64) -> Value {
    Value::Long(i64::try_from(v).unwrap_or(i64::MAX))
}

/// The lines every exporter prints, in YCSB's order.
pub(crate) fn lines(
    run: &RunMeasurements,
    overall: &Overall,
    config: &MeasurementConfig,
) -> Vec<Line> {
    let mut out = vec![
        line("OVERALL", "RunTime(ms)", as_long(overall.runtime_ms)),
        line(
            "OVERALL",
            "Throughput(ops/sec)",
            Value::Double(overall.throughput()),
        ),
    ];
    for m in &run.measurements {
        measurement_block(&mut out, m, config);
    }
    out
}

/// One measurement's block(s), by what it holds: a combined type (`TwoInOneMeasurement`) prints
/// its `HdrOP` block with the status lines, then its `BucketOP` / `RawOP` block without them.
fn measurement_block(out: &mut Vec<Line>, m: &OpMeasurement, config: &MeasurementConfig) {
    let combined = config.measurement_type.is_combined();
    let (name, h, statuses) = (m.name.as_str(), &m.histogram, &m.statuses[..]);
    match (&m.buckets, &m.series, &m.raw) {
        (_, Some(s), _) => series_block(out, name, s, statuses),
        (Some(b), _, _) if combined => {
            hdr_block(out, &format!("Hdr{name}"), h, statuses, config);
            legacy_block(out, &format!("Bucket{name}"), b, &[], config);
        }
        (_, _, Some(r)) if combined => {
            hdr_block(out, &format!("Hdr{name}"), h, statuses, config);
            raw_block(out, &format!("Raw{name}"), r, &[], config);
        }
        (Some(b), _, _) => legacy_block(out, name, b, statuses, config),
        (_, _, Some(r)) => raw_block(out, name, r, statuses, config),
        _ => hdr_block(out, name, h, statuses, config),
    }
}

/// The `Return=` lines of `statuses` (empty for a combined type's second block).
fn status_lines(out: &mut Vec<Line>, name: &str, statuses: &[(Status, u64)]) {
    for (status, count) in statuses {
        out.push(line(
            name,
            format!("Return={}", status.name()),
            as_long(*count),
        ));
    }
}

/// `OneMeasurementTimeSeries`: exact totals, the status lines, then one line per time unit.
fn series_block(out: &mut Vec<Line>, name: &str, s: &TimeSeries, statuses: &[(Status, u64)]) {
    out.push(line(name, "Operations", as_long(s.operations)));
    let avg = s.total_latency as f64 / s.operations as f64;
    out.push(line(name, "AverageLatency(us)", Value::Double(avg)));
    out.push(line(name, "MinLatency(us)", Value::Long(s.min)));
    out.push(line(name, "MaxLatency(us)", Value::Long(s.max)));
    status_lines(out, name, statuses);
    for u in &s.units {
        out.push(line(
            name,
            u.start_ms.to_string(),
            Value::Double(u.average()),
        ));
    }
}

/// `OneMeasurementRaw`'s export lines (its data points are written by [`raw_data`]).
fn raw_block(
    out: &mut Vec<Line>,
    name: &str,
    r: &RawLog,
    statuses: &[(Status, u64)],
    config: &MeasurementConfig,
) {
    let n = r.points.len() as u64;
    out.push(line(name, "Total Operations", as_long(n)));
    if n > 0 && !config.raw_no_summary {
        out.push(line(
            name,
            "Below is a summary of latency in microseconds:",
            Value::Long(-1),
        ));
        let avg = r.total_latency as f64 / n as f64;
        out.push(line(name, "Average", Value::Double(avg)));
        for (label, v) in r.summary() {
            out.push(line(name, label, Value::Long(v)));
        }
    }
    status_lines(out, name, statuses);
}

/// The raw data blocks of the run (`raw`, `hdrhistogram+raw`), in export order: what YCSB writes
/// to `measurement.raw.output_file`, or to stdout when none is set.
pub(crate) fn raw_data(run: &RunMeasurements, config: &MeasurementConfig) -> String {
    let prefix = if config.measurement_type.is_combined() {
        "Raw"
    } else {
        ""
    };
    run.measurements
        .iter()
        .filter_map(|m| {
            m.raw
                .as_ref()
                .map(|r| r.data_block(&format!("{prefix}{}", m.name)))
        })
        .collect()
}

fn hdr_block(
    out: &mut Vec<Line>,
    name: &str,
    h: &Histogram<u64>,
    statuses: &[(Status, u64)],
    config: &MeasurementConfig,
) {
    out.push(line(name, "Operations", as_long(h.len())));
    out.push(line(
        name,
        "AverageLatency(us)",
        Value::Double(hdr::mean(h)),
    ));
    out.push(line(name, "MinLatency(us)", as_long(hdr::min(h))));
    out.push(line(name, "MaxLatency(us)", as_long(hdr::max(h))));
    for &p in &config.percentiles {
        out.push(line(
            name,
            format!("{}PercentileLatency(us)", percentile_label(p)),
            as_long(hdr::percentile(h, p)),
        ));
    }
    status_lines(out, name, statuses);
    if config.verbose {
        for (value, count) in hdr::recorded_buckets(h) {
            out.push(line(name, value.to_string(), Value::Double(count as f64)));
        }
    }
}

fn legacy_block(
    out: &mut Vec<Line>,
    name: &str,
    b: &BucketHistogram,
    statuses: &[(Status, u64)],
    config: &MeasurementConfig,
) {
    out.push(line(name, "Operations", as_long(b.operations)));
    out.push(line(name, "AverageLatency(us)", Value::Double(b.mean())));
    out.push(line(
        name,
        "LatencyVariance(us)",
        Value::Double(b.variance()),
    ));
    out.push(line(name, "MinLatency(us)", Value::Long(b.min)));
    out.push(line(name, "MaxLatency(us)", Value::Long(b.max)));
    for (label, v) in b.percentile_lines() {
        out.push(line(name, label, Value::Long(v)));
    }
    status_lines(out, name, statuses);
    if config.verbose {
        for (i, &c) in b.buckets.iter().enumerate() {
            out.push(line(name, i.to_string(), as_long(c)));
        }
        out.push(line(
            name,
            format!(">{}", b.buckets.len()),
            as_long(b.overflow),
        ));
    }
}

fn text_value(v: Value) -> String {
    match v {
        Value::Long(n) => n.to_string(),
        Value::Double(d) => java_double(d),
    }
}

/// `TextMeasurementsExporter`: `[METRIC], measurement, value` lines, each ending in `\n`.
pub(crate) fn text(run: &RunMeasurements, overall: &Overall, config: &MeasurementConfig) -> String {
    let mut out = String::new();
    for l in lines(run, overall, config) {
        let (metric, name, value) = (l.metric, l.measurement, text_value(l.value));
        out += &format!("[{metric}], {name}, {value}\n");
    }
    out
}

/// Jackson's string escaping (quotes, backslash, control characters).
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Jackson 1.9 number output: doubles via `Double.toString`, NaN/Infinity quoted.
fn json_value(v: Value) -> String {
    match v {
        Value::Long(n) => n.to_string(),
        Value::Double(d) if !d.is_finite() => json_string(&javafmt::java_double(d)),
        Value::Double(d) => java_double(d),
    }
}

/// One object as Jackson's `DefaultPrettyPrinter` writes it at nesting level 0.
fn json_object(l: &Line) -> String {
    format!(
        "{{\n  \"metric\" : {},\n  \"measurement\" : {},\n  \"value\" : {}\n}}",
        json_string(&l.metric),
        json_string(&l.measurement),
        json_value(l.value)
    )
}

/// `JSONMeasurementsExporter`: pretty-printed root objects separated by one space, no final
/// newline (not a valid JSON document as a whole, exactly as YCSB writes it).
pub(crate) fn json(run: &RunMeasurements, overall: &Overall, config: &MeasurementConfig) -> String {
    lines(run, overall, config)
        .iter()
        .map(json_object)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `JSONArrayMeasurementsExporter`: `[ {...}, {...} ]`, no final newline.
pub(crate) fn json_array(
    run: &RunMeasurements,
    overall: &Overall,
    config: &MeasurementConfig,
) -> String {
    let objects: Vec<String> = lines(run, overall, config)
        .iter()
        .map(json_object)
        .collect();
    if objects.is_empty() {
        return "[ ]".to_string();
    }
    format!("[ {} ]", objects.join(", "))
}

/// Which exporter the `exporter` property selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExporterKind {
    /// `TextMeasurementsExporter`.
    Text,
    /// `JSONMeasurementsExporter`.
    Json,
    /// `JSONArrayMeasurementsExporter`.
    JsonArray,
}

impl ExporterKind {
    /// Renders the run with this exporter.
    pub fn render(
        self,
        run: &RunMeasurements,
        overall: &Overall,
        config: &MeasurementConfig,
    ) -> String {
        match self {
            ExporterKind::Text => text(run, overall, config),
            ExporterKind::Json => json(run, overall, config),
            ExporterKind::JsonArray => json_array(run, overall, config),
        }
    }

    /// The exporter the `exporter` property names (`site.ycsb...` or `com.yahoo.ycsb...` class
    /// names). An unknown class falls back to text with the warning YCSB would print (the caller
    /// prints it).
    pub(crate) fn for_class(class_name: &str) -> (ExporterKind, Option<String>) {
        let simple = class_name
            .strip_prefix("site.ycsb.measurements.exporter.")
            .or_else(|| class_name.strip_prefix("com.yahoo.ycsb.measurements.exporter."));
        match simple {
            Some("TextMeasurementsExporter") => (ExporterKind::Text, None),
            Some("JSONMeasurementsExporter") => (ExporterKind::Json, None),
            Some("JSONArrayMeasurementsExporter") => (ExporterKind::JsonArray, None),
            _ => (
                ExporterKind::Text,
                Some(format!(
                    "Could not find exporter {class_name}, will use default text reporter."
                )),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Measurements, Status};

    #[test]
    fn exporter_names() {
        assert_eq!(
            ExporterKind::for_class(
                "site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter"
            ),
            (ExporterKind::JsonArray, None)
        );
        assert_eq!(
            ExporterKind::for_class(
                "com.yahoo.ycsb.measurements.exporter.JSONMeasurementsExporter"
            ),
            (ExporterKind::Json, None)
        );
        assert_eq!(
            ExporterKind::for_class("site.ycsb.measurements.exporter.TextMeasurementsExporter").0,
            ExporterKind::Text
        );
        let (kind, warning) = ExporterKind::for_class("org.example.Csv");
        assert_eq!(kind, ExporterKind::Text);
        assert!(warning.unwrap().contains("org.example.Csv"));
    }

    /// The spec's full example: READ (12 latencies, one NOT_FOUND failure), CLEANUP, UPDATE.
    fn spec_run() -> RunMeasurements {
        let m = Measurements::new(MeasurementConfig::default());
        let c = m.client();
        for v in [
            120, 250, 250, 999, 1500, 2047, 2048, 2049, 3001, 4097, 10000, 123456,
        ] {
            c.record("READ", v, None, Status::Ok);
        }
        c.record("READ", 777, None, Status::NotFound);
        for i in 1..=100 {
            c.record("UPDATE", i * 100, None, Status::Ok);
        }
        c.record_without_status("CLEANUP", 3, None);
        m.finish()
    }

    const SPEC_OVERALL: Overall = Overall {
        runtime_ms: 1849,
        operations: 113,
    };

    /// The text export's lines after `[OVERALL]` of one client recording `records` (operation,
    /// latency, intended latency, status) under `cfg`.
    fn body(cfg: &MeasurementConfig, records: &[(&str, u64, Option<u64>, Status)]) -> Vec<String> {
        let m = Measurements::new(cfg.clone());
        let c = m.client();
        for &(op, us, intended, status) in records {
            c.record(op, us, intended, status);
        }
        let out = text(&m.finish(), &SPEC_OVERALL, cfg);
        out.lines().skip(2).map(str::to_string).collect()
    }

    #[test]
    fn text_matches_spec_example() {
        let out = text(&spec_run(), &SPEC_OVERALL, &MeasurementConfig::default());
        let expected = "\
[OVERALL], RunTime(ms), 1849
[OVERALL], Throughput(ops/sec), 61.11411573823688
[READ], Operations, 12
[READ], AverageLatency(us), 12487.916666666666
[READ], MinLatency(us), 120
[READ], MaxLatency(us), 123519
[READ], 50thPercentileLatency(us), 2047
[READ], 95thPercentileLatency(us), 123519
[READ], 99thPercentileLatency(us), 123519
[READ], Return=OK, 12
[READ], Return=NOT_FOUND, 1
[CLEANUP], Operations, 1
[CLEANUP], AverageLatency(us), 3.0
[CLEANUP], MinLatency(us), 3
[CLEANUP], MaxLatency(us), 3
[CLEANUP], 50thPercentileLatency(us), 3
[CLEANUP], 95thPercentileLatency(us), 3
[CLEANUP], 99thPercentileLatency(us), 3
[READ-FAILED], Operations, 1
[READ-FAILED], AverageLatency(us), 777.0
[READ-FAILED], MinLatency(us), 777
[READ-FAILED], MaxLatency(us), 777
[READ-FAILED], 50thPercentileLatency(us), 777
[READ-FAILED], 95thPercentileLatency(us), 777
[READ-FAILED], 99thPercentileLatency(us), 777
[UPDATE], Operations, 100
[UPDATE], AverageLatency(us), 5051.42
[UPDATE], MinLatency(us), 100
[UPDATE], MaxLatency(us), 10007
[UPDATE], 50thPercentileLatency(us), 5003
[UPDATE], 95thPercentileLatency(us), 9503
[UPDATE], 99thPercentileLatency(us), 9903
[UPDATE], Return=OK, 100
";
        assert_eq!(out, expected);
    }

    #[test]
    fn json_shapes() {
        let m = Measurements::new(MeasurementConfig::default());
        let run = m.finish();
        let overall = Overall {
            runtime_ms: 0,
            operations: 0,
        };
        let cfg = MeasurementConfig::default();
        let expected_objects = "{\n  \"metric\" : \"OVERALL\",\n  \"measurement\" : \"RunTime(ms)\",\n  \"value\" : 0\n} {\n  \"metric\" : \"OVERALL\",\n  \"measurement\" : \"Throughput(ops/sec)\",\n  \"value\" : \"NaN\"\n}";
        assert_eq!(json(&run, &overall, &cfg), expected_objects);
        let expected_array = "[ {\n  \"metric\" : \"OVERALL\",\n  \"measurement\" : \"RunTime(ms)\",\n  \"value\" : 0\n}, {\n  \"metric\" : \"OVERALL\",\n  \"measurement\" : \"Throughput(ops/sec)\",\n  \"value\" : \"NaN\"\n} ]";
        assert_eq!(json_array(&run, &overall, &cfg), expected_array);
    }

    #[test]
    fn json_array_parses_and_matches_text() {
        let run = spec_run();
        let cfg = MeasurementConfig::default();
        let arr: serde_json::Value =
            serde_json::from_str(&json_array(&run, &SPEC_OVERALL, &cfg)).unwrap();
        let arr = arr.as_array().unwrap();
        assert_eq!(arr.len(), lines(&run, &SPEC_OVERALL, &cfg).len());
        assert_eq!(arr[1]["value"].as_f64(), Some(61.11411573823688));
        assert_eq!(arr[3]["measurement"], "AverageLatency(us)");
        // The plain exporter's objects are the same, separated by single spaces.
        let plain = json(&run, &SPEC_OVERALL, &cfg);
        assert!(plain.contains("\n} {\n"));
        assert!(!plain.ends_with('\n'));
    }

    #[test]
    fn verbose_and_percentile_labels() {
        let cfg = MeasurementConfig {
            verbose: true,
            percentiles: vec![99.9, 1.0],
            ..MeasurementConfig::default()
        };
        let m = Measurements::new(cfg.clone());
        let c = m.client();
        c.record("READ", 3, None, Status::Ok);
        c.record("READ", 3, None, Status::Ok);
        c.record("READ", 5000, None, Status::Ok);
        let out = text(&m.finish(), &SPEC_OVERALL, &cfg);
        assert!(out.contains("[READ], 99.9PercentileLatency(us), 5003\n"));
        assert!(out.contains("[READ], 1stPercentileLatency(us), 3\n"));
        assert!(out.ends_with("[READ], Return=OK, 3\n[READ], 3, 2.0\n[READ], 5003, 1.0\n"));
    }

    #[test]
    fn legacy_histogram_block() {
        let cfg = MeasurementConfig {
            measurement_type: crate::measure::config::MeasurementType::Histogram,
            ..MeasurementConfig::default()
        };
        let records = [
            ("READ", 1500, None, Status::Ok),
            ("READ", 2500, None, Status::Ok),
        ];
        assert_eq!(
            body(&cfg, &records),
            vec![
                "[READ], Operations, 2",
                "[READ], AverageLatency(us), 2000.0",
                "[READ], LatencyVariance(us), 250000.0",
                "[READ], MinLatency(us), 1500",
                "[READ], MaxLatency(us), 2500",
                "[READ], 95thPercentileLatency(us), 2000",
                "[READ], 99thPercentileLatency(us), 2000",
                "[READ], Return=OK, 2",
            ]
        );
    }

    #[test]
    fn only_failures_give_an_empty_plain_block() {
        let cfg = MeasurementConfig::default();
        let block = body(&cfg, &[("UPDATE", 1234, None, Status::Error)]);
        // UPDATE-FAILED (bin 0) comes before UPDATE (bin 10); UPDATE only carries the status.
        assert_eq!(
            block,
            vec![
                "[UPDATE-FAILED], Operations, 1",
                "[UPDATE-FAILED], AverageLatency(us), 1234.0",
                "[UPDATE-FAILED], MinLatency(us), 1234",
                "[UPDATE-FAILED], MaxLatency(us), 1234",
                "[UPDATE-FAILED], 50thPercentileLatency(us), 1234",
                "[UPDATE-FAILED], 95thPercentileLatency(us), 1234",
                "[UPDATE-FAILED], 99thPercentileLatency(us), 1234",
                "[UPDATE], Operations, 0",
                "[UPDATE], AverageLatency(us), 0.0",
                "[UPDATE], MinLatency(us), 0",
                "[UPDATE], MaxLatency(us), 0",
                "[UPDATE], 50thPercentileLatency(us), 0",
                "[UPDATE], 95thPercentileLatency(us), 0",
                "[UPDATE], 99thPercentileLatency(us), 0",
                "[UPDATE], Return=ERROR, 1",
            ]
        );
    }

    #[test]
    fn intended_map_follows_the_actual_map() {
        let cfg = MeasurementConfig {
            interval: crate::measure::IntervalMode::Both,
            ..MeasurementConfig::default()
        };
        let records = [
            ("UPDATE", 10, Some(20), Status::Ok),
            ("READ", 10, Some(30), Status::Ok),
        ];
        let block = body(&cfg, &records);
        let metrics: Vec<&str> = block
            .iter()
            .filter(|l| l.contains("Operations"))
            .map(|l| l.split(',').next().unwrap_or(""))
            .collect();
        // Both maps are keyed by the plain name, so each is in READ, UPDATE order.
        assert_eq!(
            metrics,
            ["[READ]", "[UPDATE]", "[Intended-READ]", "[Intended-UPDATE]"]
        );
        assert!(block.contains(&"[Intended-READ], MaxLatency(us), 30".to_string()));
    }

    /// The spec's READ latencies (§6.2) under the other types: timeseries (one unit, exact
    /// totals), raw (`(int)(n*q)` indices), and the combined types' two blocks.
    #[test]
    fn other_types_print_ycsbs_blocks() {
        let values = [
            120, 250, 250, 999, 1500, 2047, 2048, 2049, 3001, 4097, 10000, 123456,
        ];
        let run_of = |t: crate::measure::MeasurementType| {
            let cfg = MeasurementConfig {
                measurement_type: t,
                timeseries_granularity_ms: 3_600_000,
                ..MeasurementConfig::default()
            };
            let m = Measurements::new(cfg.clone());
            let c = m.client();
            for v in values {
                c.record("READ", v, None, Status::Ok);
            }
            assert_eq!(
                m.take_interval().text(),
                match t {
                    crate::measure::MeasurementType::Raw =>
                        "READ count: 12, average latency(us): 12484.75 ",
                    crate::measure::MeasurementType::HdrHistogramAndRaw =>
                        "[HdrREAD: Count=12, Max=123519, Min=120, Avg=12487.92, 50=2047, 90=10007, 99=123519, 99.9=123519, 99.99=123519]\nRawREAD count: 12, average latency(us): 12484.75 ",
                    crate::measure::MeasurementType::HdrHistogramAndHistogram =>
                        "[HdrREAD: Count=12, Max=123519, Min=120, Avg=12487.92, 50=2047, 90=10007, 99=123519, 99.9=123519, 99.99=123519]\n[BucketREAD AverageLatency(us)=12484.75] ",
                    _ => "[READ AverageLatency(us)=12484.75] ",
                }
            );
            let body = text(&m.finish(), &SPEC_OVERALL, &cfg);
            body.lines().skip(2).map(str::to_string).collect::<Vec<_>>()
        };
        use crate::measure::MeasurementType as T;
        assert_eq!(
            run_of(T::TimeSeries),
            [
                "[READ], Operations, 12",
                "[READ], AverageLatency(us), 12484.75",
                "[READ], MinLatency(us), 120",
                "[READ], MaxLatency(us), 123456",
                "[READ], Return=OK, 12",
                "[READ], 0, 12484.75",
            ]
        );
        assert_eq!(
            run_of(T::Raw),
            [
                "[READ], Total Operations, 12",
                "[READ], Below is a summary of latency in microseconds:, -1",
                "[READ], Average, 12484.75",
                "[READ], Min, 120",
                "[READ], Max, 123456",
                "[READ], p1, 120",
                "[READ], p5, 120",
                "[READ], p50, 2048",
                "[READ], p90, 10000",
                "[READ], p95, 123456",
                "[READ], p99, 123456",
                "[READ], p99.9, 123456",
                "[READ], p99.99, 123456",
                "[READ], Return=OK, 12",
            ]
        );
        let both = run_of(T::HdrHistogramAndRaw);
        assert_eq!(both[0], "[HdrREAD], Operations, 12");
        assert!(both.contains(&"[HdrREAD], Return=OK, 12".to_string()));
        assert!(both.contains(&"[RawREAD], Total Operations, 12".to_string()));
        assert!(
            both.last()
                .is_some_and(|l| l.starts_with("[RawREAD], p99.99")),
            "{both:?}"
        );
        let buckets = run_of(T::HdrHistogramAndHistogram);
        assert!(buckets.contains(&"[BucketREAD], 95thPercentileLatency(us), 123000".to_string()));
        assert_eq!(buckets.iter().filter(|l| l.contains("Return=")).count(), 1);
    }
}
