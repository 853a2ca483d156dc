//! The properties that bound and watch a run (`Limits`), read and checked before anything connects.

use std::time::Duration;

use super::ExecuteOptions;
use crate::runner::RunError;
use crate::workload::Properties;
use crate::workload::prop::{self, Prop};

pub(super) fn lookup(props: &Properties) -> impl Fn(&str) -> Option<String> + '_ {
    move |k| props.get(k).map(str::to_string)
}

/// A property that must parse; the error names the property and where it was set.
pub(super) fn parse_prop<T: crate::workload::PropertyValue + Copy>(
    props: &Properties,
    prop: &Prop<T>,
) -> Result<T, RunError> {
    props.value(prop).map_err(RunError::as_bad_input)
}

/// The properties that bound and watch a run, read and checked before anything connects.
pub(super) struct Limits {
    pub(super) requested_threads: u64,
    pub(super) target: f64,
    pub(super) max_execution_s: u64,
    pub(super) status_interval_s: u64,
    pub(super) status_enabled: bool,
    pub(super) label: String,
    /// The error-rate rule always applies to the verdict.
    pub(super) error_rate_limit: f64,
    /// Set explicitly, it also stops the run.
    pub(super) max_error_rate: Option<f64>,
    pub(super) warmup_s: f64,
    pub(super) warmup: Duration,
    pub(super) stall_s: f64,
    pub(super) dead_s: f64,
    /// `microshard.busyhost`: the share of the cores other work may take before "busy host".
    pub(super) busy_host: f64,
    /// `microshard.waitquiet`: how long to wait for a quiet host before the run.
    pub(super) wait_quiet: Duration,
}

impl Limits {
    pub(super) fn read(props: &Properties, opts: &ExecuteOptions) -> Result<Limits, RunError> {
        let requested_threads: u64 = props
            .value_in(&prop::THREADCOUNT, 1..)
            .map_err(RunError::as_bad_input)?;
        let target: f64 = parse_prop(props, &prop::TARGET)? as f64;
        let max_execution_s: u64 = parse_prop(props, &prop::MAXEXECUTIONTIME)?;
        let status_interval_s: u64 = parse_prop(props, &prop::STATUS_INTERVAL)?;
        let status_enabled = opts.status_lines || parse_prop(props, &prop::STATUS)?;
        let label = props.text(&prop::LABEL).to_string();
        // The error-rate rule always applies to the verdict; set explicitly, it also stops the run.
        let fraction = "a fraction between 0 and 1 is expected";
        let error_rate_limit = bounded(props, &prop::MAXERRORRATE, 0.0..=1.0, fraction)?;
        let max_error_rate: Option<f64> =
            props.get(prop::MAXERRORRATE.name).map(|_| error_rate_limit);
        let day = "seconds between 0 and 86400 are expected";
        let warmup_s = bounded(props, &prop::WARMUP, 0.0..=86_400.0, day)?;
        let warmup = Duration::from_secs_f64(warmup_s);
        let stall = "seconds between 0.5 and 3600 are expected";
        let stall_s = bounded(props, &prop::STALLSECONDS, 0.5..=3600.0, stall)?;
        let dead = format!(
            "seconds between {}={stall_s} and 86400 are expected",
            prop::STALLSECONDS.name
        );
        let dead_s = bounded(props, &prop::DEADSECONDS, stall_s..=86_400.0, &dead)?;
        let share = "a share of the cores between 0 and 1 is expected";
        let busy_host = bounded(props, &prop::BUSYHOST, 0.0..=1.0, share)?;
        let wait_quiet_s = bounded(props, &prop::WAITQUIET, 0.0..=86_400.0, day)?;
        Ok(Limits {
            wait_quiet: Duration::from_secs_f64(wait_quiet_s),
            requested_threads,
            target,
            max_execution_s,
            status_interval_s,
            status_enabled,
            label,
            error_rate_limit,
            max_error_rate,
            warmup_s,
            warmup,
            stall_s,
            dead_s,
            busy_host,
        })
    }
}

/// A property that must lie in `range` (a NaN or an infinity never does); the error names it
/// and says what is `expected`.
fn bounded(
    props: &Properties,
    prop: &Prop<f64>,
    range: std::ops::RangeInclusive<f64>,
    expected: &str,
) -> Result<f64, RunError> {
    let value = parse_prop(props, prop)?;
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(RunError::bad_input(format!(
            "property {}={value}: {expected}",
            prop.name
        )))
    }
}
