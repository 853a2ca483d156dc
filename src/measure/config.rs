//! Measurement settings, read from the same properties YCSB reads.

use crate::props::prop;

/// Which per-operation structure records latencies (`measurementtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MeasurementType {
    /// HdrHistogram, 3 significant digits (YCSB's default since 0.5.0).
    HdrHistogram,
    /// YCSB's legacy 1-ms bucket histogram (`OneMeasurementHistogram`).
    Histogram,
    /// Both, as `HdrOP` then `BucketOP` (`TwoInOneMeasurement`).
    #[serde(rename = "hdrhistogram+histogram")]
    HdrHistogramAndHistogram,
    /// HdrHistogram plus every latency, as `HdrOP` then `RawOP`.
    #[serde(rename = "hdrhistogram+raw")]
    HdrHistogramAndRaw,
    /// Average latency per `timeseries.granularity` ms (`OneMeasurementTimeSeries`).
    TimeSeries,
    /// Every latency with its time (`OneMeasurementRaw`).
    Raw,
}

impl MeasurementType {
    /// YCSB's name for the type (`measurementtype`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            MeasurementType::HdrHistogram => "hdrhistogram",
            MeasurementType::Histogram => "histogram",
            MeasurementType::HdrHistogramAndHistogram => "hdrhistogram+histogram",
            MeasurementType::HdrHistogramAndRaw => "hdrhistogram+raw",
            MeasurementType::TimeSeries => "timeseries",
            MeasurementType::Raw => "raw",
        }
    }

    fn parse(s: &str) -> Option<MeasurementType> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }

    const ALL: [MeasurementType; 6] = [
        MeasurementType::HdrHistogram,
        MeasurementType::Histogram,
        MeasurementType::HdrHistogramAndHistogram,
        MeasurementType::HdrHistogramAndRaw,
        MeasurementType::TimeSeries,
        MeasurementType::Raw,
    ];

    /// Whether the HdrHistogram summary and export (and its interval logs) are part of this type.
    pub(crate) fn has_hdr(self) -> bool {
        matches!(
            self,
            MeasurementType::HdrHistogram
                | MeasurementType::HdrHistogramAndHistogram
                | MeasurementType::HdrHistogramAndRaw
        )
    }

    /// Whether the legacy 1-ms buckets are kept.
    pub(crate) fn has_buckets(self) -> bool {
        matches!(
            self,
            MeasurementType::Histogram | MeasurementType::HdrHistogramAndHistogram
        )
    }

    /// Whether every latency is kept with its time.
    pub(crate) fn has_raw(self) -> bool {
        matches!(
            self,
            MeasurementType::Raw | MeasurementType::HdrHistogramAndRaw
        )
    }

    /// Whether two measurements are printed per operation (`HdrOP` and `BucketOP`/`RawOP`).
    pub(crate) fn is_combined(self) -> bool {
        matches!(
            self,
            MeasurementType::HdrHistogramAndHistogram | MeasurementType::HdrHistogramAndRaw
        )
    }
}

/// Which latency is recorded (`measurement.interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IntervalMode {
    /// Actual latency only (default).
    Op,
    /// Latency from the intended (throttled) start, under the plain op name.
    Intended,
    /// Both: actual under `OP`, intended under `Intended-OP`.
    Both,
}

impl IntervalMode {
    /// Whether actual latencies are recorded.
    pub(crate) fn records_actual(self) -> bool {
        !matches!(self, IntervalMode::Intended)
    }

    /// Whether intended latencies are recorded.
    pub(crate) fn records_intended(self) -> bool {
        !matches!(self, IntervalMode::Op)
    }
}

/// YCSB's default `hdrhistogram.percentiles` on current master.
pub(crate) const DEFAULT_PERCENTILES: &str = prop::HDRHISTOGRAM_PERCENTILES.default;

/// The measurement settings of one run.
///
/// Build it with [`MeasurementConfig::from_lookup`] (any property source) or
/// [`MeasurementConfig::default`] plus field updates (tests, callers without properties).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MeasurementConfig {
    /// `measurementtype`.
    pub measurement_type: MeasurementType,
    /// `hdrhistogram.percentiles`, in list order (export lines follow it).
    pub percentiles: Vec<f64>,
    /// `measurement.interval`.
    pub interval: IntervalMode,
    /// `measurement.histogram.verbose`: dump every bucket in the export.
    pub verbose: bool,
    /// `reportlatencyforeacherror`: failed latencies under `OP-<STATUS>` instead of `OP-FAILED`.
    pub report_latency_for_each_error: bool,
    /// `latencytrackederrors`: status names whose latencies go under `OP-<STATUS>`.
    pub latency_tracked_errors: Vec<String>,
    /// `histogram.buckets`: number of 1-ms buckets of the `histogram` type.
    pub histogram_buckets: usize,
    /// `timeseries.granularity`: milliseconds per point of the `timeseries` type.
    pub timeseries_granularity_ms: u64,
    /// `measurement.raw.output_file`: where the raw type writes its points (`None`: stdout).
    pub raw_output_file: Option<std::path::PathBuf>,
    /// `measurement.raw.no_summary`: the raw type exports only its count and status lines.
    pub raw_no_summary: bool,
    /// `hdrhistogram.fileoutput` with `hdrhistogram.output.path`: the prefix of the interval
    /// logs (`<prefix><OP>.hdr`), `None` when no logs are written.
    pub hdr_log_prefix: Option<String>,
    /// Warnings YCSB would print to stderr while reading these settings (the caller prints them).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl Default for MeasurementConfig {
    fn default() -> Self {
        MeasurementConfig {
            measurement_type: MeasurementType::HdrHistogram,
            percentiles: vec![50.0, 95.0, 99.0],
            interval: IntervalMode::Op,
            verbose: false,
            report_latency_for_each_error: false,
            latency_tracked_errors: Vec::new(),
            histogram_buckets: prop::HISTOGRAM_BUCKETS.default,
            timeseries_granularity_ms: prop::TIMESERIES_GRANULARITY.default,
            raw_output_file: None,
            raw_no_summary: false,
            hdr_log_prefix: None,
            warnings: Vec::new(),
        }
    }
}

/// A measurement property with a value we cannot use.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("property {property}={value}: {reason}")]
pub struct ConfigError {
    /// The property name.
    pub property: String,
    /// The value given.
    pub value: String,
    /// Why it is refused.
    pub reason: String,
}

impl MeasurementConfig {
    /// Reads the settings from the run's properties; a bad value becomes a `PropertyError`
    /// naming the property and where it was set (`file:line`, `-p`).
    pub(crate) fn from_properties(
        props: &crate::props::properties::Properties,
    ) -> Result<Self, crate::props::properties::PropertyError> {
        Self::from_lookup(&|key: &str| props.get(key).map(str::to_string))
            .map_err(|e| props.invalid(&e.property, format!("{}: {}", e.value, e.reason)))
    }

    /// Reads the settings through `lookup(key) -> value`, so any property source can be used.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut cfg = MeasurementConfig::default();
        let err = |property: &str, value: &str, reason: &str| ConfigError {
            property: property.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        };

        if let Some(t) = lookup(prop::MEASUREMENTTYPE.name) {
            let known = "unknown measurement type (hdrhistogram, histogram, hdrhistogram+histogram, hdrhistogram+raw, timeseries or raw)";
            let unknown = || err(prop::MEASUREMENTTYPE.name, &t, known);
            cfg.measurement_type = MeasurementType::parse(&t).ok_or_else(unknown)?;
        }
        if let Some(p) = lookup(prop::HDRHISTOGRAM_PERCENTILES.name) {
            match parse_percentiles(&p) {
                Some(list) => cfg.percentiles = list,
                None => cfg.warnings.push(format!(
                    "[WARN] Couldn't read hdrhistogram.percentiles value: '{p}', the default of '{DEFAULT_PERCENTILES}' will be used."
                )),
            }
        }

        let name = prop::MEASUREMENT_INTERVAL.name;
        if let Some(i) = lookup(name) {
            cfg.interval = match i.as_str() {
                "op" => IntervalMode::Op,
                "intended" => IntervalMode::Intended,
                "both" => IntervalMode::Both,
                _ => return Err(err(name, &i, "expected op, intended or both")),
            };
        }

        cfg.verbose = java_bool(lookup(prop::MEASUREMENT_HISTOGRAM_VERBOSE.name));
        cfg.report_latency_for_each_error = java_bool(lookup(prop::REPORTLATENCYFOREACHERROR.name));
        if let Some(list) = lookup(prop::LATENCYTRACKEDERRORS.name) {
            cfg.latency_tracked_errors = java_split(&list);
        }
        let buckets = positive_int(lookup, prop::HISTOGRAM_BUCKETS.name, "a positive integer")?;
        if let Some(n) = buckets {
            cfg.histogram_buckets = n as usize;
        }
        cfg.read_outputs(lookup)?;
        Ok(cfg)
    }

    /// The settings of the timeseries, raw and interval-log outputs.
    fn read_outputs(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        // A granularity of 0 would divide by zero in YCSB.
        let ms = "a positive number of milliseconds";
        if let Some(n) = positive_int(lookup, prop::TIMESERIES_GRANULARITY.name, ms)? {
            self.timeseries_granularity_ms = u64::from(n);
        }
        self.raw_output_file = lookup(prop::MEASUREMENT_RAW_OUTPUT_FILE.name)
            .filter(|f| !f.is_empty())
            .map(std::path::PathBuf::from);
        self.raw_no_summary = java_bool(lookup(prop::MEASUREMENT_RAW_NO_SUMMARY.name));
        if java_bool(lookup(prop::HDRHISTOGRAM_FILEOUTPUT.name)) {
            let prefix = lookup(prop::HDRHISTOGRAM_OUTPUT_PATH.name).unwrap_or_default();
            self.hdr_log_prefix = Some(prefix);
        }
        self.note_unused(lookup);
        Ok(())
    }

    /// YCSB reads these only for some measurement types; set for another type, they are
    /// accepted with a warning instead of being ignored silently.
    fn note_unused(&mut self, lookup: &dyn Fn(&str) -> Option<String>) {
        let t = self.measurement_type;
        let unused = [
            (
                prop::HDRHISTOGRAM_FILEOUTPUT.name,
                !t.has_hdr() && self.hdr_log_prefix.is_some(),
            ),
            (
                prop::TIMESERIES_GRANULARITY.name,
                t != MeasurementType::TimeSeries,
            ),
            (prop::MEASUREMENT_RAW_OUTPUT_FILE.name, !t.has_raw()),
            (prop::MEASUREMENT_RAW_NO_SUMMARY.name, !t.has_raw()),
        ];
        for (name, off) in unused {
            if off && lookup(name).is_some() {
                self.warnings.push(format!(
                    "warning: property {name} has no effect with measurementtype={}",
                    t.name()
                ));
            }
        }
        if !t.has_hdr() {
            self.hdr_log_prefix = None;
        }
    }

    /// The measurement name a non-OK latency is recorded under.
    pub(crate) fn failed_suffix(&self, status: super::Status) -> &'static str {
        if self.report_latency_for_each_error
            || self
                .latency_tracked_errors
                .iter()
                .any(|e| e == status.name())
        {
            status.name()
        } else {
            "FAILED"
        }
    }
}

/// A property YCSB reads with `Integer.parseInt` and that must be positive (`what`: the
/// expected value, for the error); `None` when unset.
fn positive_int(
    lookup: &dyn Fn(&str) -> Option<String>,
    name: &str,
    what: &str,
) -> Result<Option<u32>, ConfigError> {
    let Some(v) = lookup(name) else {
        return Ok(None);
    };
    match v.parse::<i32>() {
        Ok(n) if n > 0 => Ok(Some(n.unsigned_abs())),
        _ => Err(ConfigError {
            property: name.to_string(),
            value: v,
            reason: format!("expected {what}"),
        }),
    }
}

/// Java `Boolean.parseBoolean`: only a case-insensitive `true` is true.
fn java_bool(v: Option<String>) -> bool {
    v.is_some_and(|s| s.eq_ignore_ascii_case("true"))
}

/// Java `String.split(",")`: trailing empty strings are dropped.
fn java_split(s: &str) -> Vec<String> {
    let mut parts: Vec<String> = s.split(',').map(str::to_string).collect();
    while parts.len() > 1 && parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

/// YCSB's percentile list: comma separated doubles (`Double.parseDouble` trims whitespace).
fn parse_percentiles(s: &str) -> Option<Vec<f64>> {
    java_split(s)
        .iter()
        .map(|p| {
            let t = p.trim();
            let t = t.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(t);
            t.parse::<f64>().ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::props::properties::Properties;

    fn cfg(pairs: &[(&str, &str)]) -> Result<MeasurementConfig, ConfigError> {
        MeasurementConfig::from_lookup(&Properties::lookup_of(pairs))
    }

    #[test]
    fn defaults() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c, MeasurementConfig::default());
        assert_eq!(c.percentiles, vec![50.0, 95.0, 99.0]);
        assert_eq!(c.interval, IntervalMode::Op);
    }

    #[test]
    fn reads_every_setting() {
        let c = cfg(&[
            ("measurementtype", "histogram"),
            ("hdrhistogram.percentiles", "90, 99.9,99.99"),
            ("measurement.interval", "both"),
            ("measurement.histogram.verbose", "TRUE"),
            ("reportlatencyforeacherror", "yes"),
            ("latencytrackederrors", "NOT_FOUND,ERROR"),
            ("histogram.buckets", "20"),
        ])
        .unwrap();
        assert_eq!(c.measurement_type, MeasurementType::Histogram);
        assert_eq!(c.percentiles, vec![90.0, 99.9, 99.99]);
        assert_eq!(c.interval, IntervalMode::Both);
        assert!(c.verbose);
        assert!(!c.report_latency_for_each_error, "only 'true' is true");
        assert_eq!(c.latency_tracked_errors, vec!["NOT_FOUND", "ERROR"]);
        assert_eq!(c.histogram_buckets, 20);
        assert_eq!(c.failed_suffix(super::super::Status::NotFound), "NOT_FOUND");
        assert_eq!(c.failed_suffix(super::super::Status::Forbidden), "FAILED");
    }

    #[test]
    fn from_properties_names_the_origin() {
        use crate::props::properties::{Origin, Properties};
        let mut props = Properties::new();
        props.set("hdrhistogram.percentiles", "90,99.9", Origin::Override);
        let c = MeasurementConfig::from_properties(&props).unwrap();
        assert_eq!(c.percentiles, vec![90.0, 99.9]);
        props.set("measurementtype", "hdr", Origin::Override);
        let msg = MeasurementConfig::from_properties(&props)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("measurementtype"), "{msg}");
        assert!(msg.starts_with("-p"), "{msg}");
    }

    #[test]
    fn bad_percentiles_warn_and_default() {
        let c = cfg(&[("hdrhistogram.percentiles", "50,abc")]).unwrap();
        assert_eq!(c.percentiles, vec![50.0, 95.0, 99.0]);
        assert_eq!(
            c.warnings,
            vec![
                "[WARN] Couldn't read hdrhistogram.percentiles value: '50,abc', the default of '50,95,99' will be used."
            ]
        );
    }

    #[test]
    fn every_ycsb_type_and_its_outputs() {
        for t in [
            "hdrhistogram+histogram",
            "hdrhistogram+raw",
            "timeseries",
            "raw",
        ] {
            let c = cfg(&[("measurementtype", t)]).unwrap();
            assert_eq!(c.measurement_type.name(), t);
        }
        let c = cfg(&[
            ("measurementtype", "raw"),
            ("measurement.raw.output_file", "/tmp/x.raw"),
            ("measurement.raw.no_summary", "true"),
            ("hdrhistogram.fileoutput", "true"),
        ])
        .unwrap();
        assert_eq!(
            c.raw_output_file.as_deref(),
            Some(std::path::Path::new("/tmp/x.raw"))
        );
        assert!(c.raw_no_summary);
        assert_eq!(c.hdr_log_prefix, None, "raw writes no interval logs");
        assert_eq!(
            c.warnings,
            ["warning: property hdrhistogram.fileoutput has no effect with measurementtype=raw"]
        );
        let c = cfg(&[
            ("hdrhistogram.fileoutput", "true"),
            ("hdrhistogram.output.path", "out/"),
        ])
        .unwrap();
        assert_eq!(c.hdr_log_prefix.as_deref(), Some("out/"));
        let c = cfg(&[
            ("measurementtype", "timeseries"),
            ("timeseries.granularity", "250"),
        ])
        .unwrap();
        assert_eq!((c.timeseries_granularity_ms, c.warnings.len()), (250, 0));
        let e = cfg(&[("timeseries.granularity", "0")]).unwrap_err();
        assert_eq!(e.property, "timeseries.granularity");
    }

    #[test]
    fn unsupported_type_names_the_property() {
        let e = cfg(&[("measurementtype", "bogus")]).unwrap_err();
        assert!(e.to_string().starts_with("property measurementtype=bogus"));
        assert_eq!(e.property, "measurementtype");
        let e = cfg(&[("measurement.interval", "sometimes")]).unwrap_err();
        assert_eq!(e.property, "measurement.interval");
    }
}
