//! Measurement settings, read from the same properties YCSB reads.

use crate::workload::prop;

/// Which per-operation structure records latencies (`measurementtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MeasurementType {
    /// HdrHistogram, 3 significant digits (YCSB's default since 0.5.0).
    HdrHistogram,
    /// YCSB's legacy 1-ms bucket histogram (`OneMeasurementHistogram`).
    Histogram,
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
        props: &crate::workload::properties::Properties,
    ) -> Result<Self, crate::workload::properties::PropertyError> {
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
            cfg.measurement_type = match t.as_str() {
                "hdrhistogram" => MeasurementType::HdrHistogram,
                "histogram" => MeasurementType::Histogram,
                "hdrhistogram+histogram" | "hdrhistogram+raw" | "timeseries" | "raw" => {
                    return Err(err(
                        prop::MEASUREMENTTYPE.name,
                        &t,
                        "not supported by microshard (use hdrhistogram or histogram)",
                    ));
                }
                _ => {
                    return Err(err(
                        prop::MEASUREMENTTYPE.name,
                        &t,
                        "unknown measurement type (use hdrhistogram or histogram)",
                    ));
                }
            };
        }

        if let Some(p) = lookup(prop::HDRHISTOGRAM_PERCENTILES.name) {
            match parse_percentiles(&p) {
                Some(list) => cfg.percentiles = list,
                None => cfg.warnings.push(format!(
                    "[WARN] Couldn't read hdrhistogram.percentiles value: '{p}', the default of '{DEFAULT_PERCENTILES}' will be used."
                )),
            }
        }

        if let Some(i) = lookup(prop::MEASUREMENT_INTERVAL.name) {
            cfg.interval = match i.as_str() {
                "op" => IntervalMode::Op,
                "intended" => IntervalMode::Intended,
                "both" => IntervalMode::Both,
                _ => {
                    return Err(err(
                        prop::MEASUREMENT_INTERVAL.name,
                        &i,
                        "expected op, intended or both",
                    ));
                }
            };
        }

        cfg.verbose = java_bool(lookup(prop::MEASUREMENT_HISTOGRAM_VERBOSE.name));
        cfg.report_latency_for_each_error = java_bool(lookup(prop::REPORTLATENCYFOREACHERROR.name));
        if let Some(list) = lookup(prop::LATENCYTRACKEDERRORS.name) {
            cfg.latency_tracked_errors = java_split(&list);
        }
        if let Some(b) = lookup(prop::HISTOGRAM_BUCKETS.name) {
            cfg.histogram_buckets = match b.parse::<i32>() {
                Ok(n) if n > 0 => n as usize,
                _ => {
                    return Err(err(
                        prop::HISTOGRAM_BUCKETS.name,
                        &b,
                        "expected a positive integer",
                    ));
                }
            };
        }
        Ok(cfg)
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
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<MeasurementConfig, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        MeasurementConfig::from_lookup(&|k: &str| map.get(k).cloned())
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
        use crate::workload::properties::{Origin, Properties};
        let mut props = Properties::new();
        props.set("hdrhistogram.percentiles", "90,99.9", Origin::Override);
        let c = MeasurementConfig::from_properties(&props).unwrap();
        assert_eq!(c.percentiles, vec![90.0, 99.9]);
        props.set("measurementtype", "raw", Origin::Override);
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
    fn unsupported_type_names_the_property() {
        let e = cfg(&[("measurementtype", "timeseries")]).unwrap_err();
        assert_eq!(e.property, "measurementtype");
        assert!(
            e.to_string()
                .starts_with("property measurementtype=timeseries")
        );
        let e = cfg(&[("measurementtype", "bogus")]).unwrap_err();
        assert_eq!(e.property, "measurementtype");
        let e = cfg(&[("measurement.interval", "sometimes")]).unwrap_err();
        assert_eq!(e.property, "measurement.interval");
    }
}
