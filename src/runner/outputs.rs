//! The measurement files a phase writes besides its result: the interval logs
//! (`hdrhistogram.fileoutput`) and the raw data points (`measurementtype=raw`). Their paths are
//! proven before the run starts, and their data is written once the run has finished.

use std::io::Write;

use crate::measure::{MeasurementConfig, RunMeasurements};
use crate::runner::RunError;
use crate::workload::prop;

/// Refuses, with one line naming the property, an interval-log prefix or raw output file that
/// cannot be written; nothing is created.
pub(crate) fn check(config: &MeasurementConfig) -> Result<(), RunError> {
    if let Some(prefix) = &config.hdr_log_prefix {
        crate::measure::hdrlog::check_prefix(prefix).map_err(|why| {
            RunError::bad_input(format!(
                "property {}={prefix}: {why}",
                prop::HDRHISTOGRAM_OUTPUT_PATH.name
            ))
        })?;
    }
    if let (true, Some(file)) = (config.measurement_type.has_raw(), &config.raw_output_file) {
        // YCSB appends to the file; opening it for appending creates nothing new when it exists.
        let existed = file.exists();
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(file)
            .map_err(|e| {
                RunError::bad_input(format!(
                    "property {}={}: cannot write: {e}",
                    prop::MEASUREMENT_RAW_OUTPUT_FILE.name,
                    file.display()
                ))
            })?;
        if !existed {
            let _ = std::fs::remove_file(file);
        }
    }
    Ok(())
}

/// YCSB's note on where the raw data points go (`OneMeasurementRaw`'s constructor).
pub(crate) fn raw_notice(config: &MeasurementConfig) -> Option<String> {
    config
        .measurement_type
        .has_raw()
        .then(|| match &config.raw_output_file {
            Some(f) => format!(
                "Raw data measurement: will output to result file: {}",
                f.display()
            ),
            None => "Raw data measurement: will output to stdout.".to_string(),
        })
}

/// Writes the raw data points (appended to `measurement.raw.output_file`, as YCSB does) and
/// returns the lines to say about files that could not be written, and the raw data points when
/// no file takes them (the CLI prints them on stdout ahead of the report).
pub(crate) fn finish(
    run: &RunMeasurements,
    config: &MeasurementConfig,
) -> (Vec<String>, Option<String>) {
    let mut problems = run.log_problems.clone();
    if !config.measurement_type.has_raw() {
        return (problems, None);
    }
    let data = crate::measure::export::raw_data(run, config);
    match &config.raw_output_file {
        Some(file) => {
            let written = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(file)
                .and_then(|mut f| f.write_all(data.as_bytes()));
            if let Err(e) = written {
                problems.push(format!(
                    "property {}: cannot write {}: {e}",
                    prop::MEASUREMENT_RAW_OUTPUT_FILE.name,
                    file.display()
                ));
            }
        }
        None => return (problems, Some(data)),
    }
    (problems, None)
}

/// The interval logs of a run with several clients: each client writes its own under
/// `<prefix>client-<i>/`, which stay there; the coordinator writes their per-interval sums under
/// `<prefix>` once every client has finished.
pub(crate) struct ClientLogs {
    prefix: String,
    clients: Vec<String>,
}

/// Prepares the client slices (their property overrides) of a run with several clients: refuses the measurement types whose
/// data the merged report cannot carry, and points each client's interval logs into its own
/// directory (taking a snapshot every status interval when the status line is on, as one client
/// would). `None` when no interval logs are asked for.
pub(crate) fn for_clients(
    props: &crate::workload::Properties,
    overrides: Vec<&mut Vec<(String, String)>>,
    status_on: bool,
    in_containers: bool,
) -> Result<Option<ClientLogs>, RunError> {
    let config = MeasurementConfig::from_properties(props).map_err(RunError::as_bad_input)?;
    let t = config.measurement_type;
    if t.is_combined() || t.has_raw() || t == crate::measure::MeasurementType::TimeSeries {
        return Err(RunError::bad_input(format!(
            "property {}={}: not available with several clients (the merged report is built from their histograms)",
            prop::MEASUREMENTTYPE.name,
            t.name()
        )));
    }
    let Some(prefix) = config.hdr_log_prefix.clone() else {
        return Ok(None);
    };
    check(&config)?;
    if in_containers {
        return Err(RunError::bad_input(format!(
            "property {}: not available with client containers (their files stay in the containers)",
            prop::HDRHISTOGRAM_FILEOUTPUT.name
        )));
    }
    let mut clients = Vec::with_capacity(overrides.len());
    for (i, over) in overrides.into_iter().enumerate() {
        let dir = format!("{prefix}client-{i}/");
        std::fs::create_dir_all(&dir).map_err(|e| {
            RunError::bad_input(format!(
                "property {}={prefix}: cannot create {dir}: {e}",
                prop::HDRHISTOGRAM_OUTPUT_PATH.name
            ))
        })?;
        over.push((prop::HDRHISTOGRAM_OUTPUT_PATH.name.into(), dir.clone()));
        if status_on {
            over.push((prop::STATUS.name.into(), "true".into()));
        }
        clients.push(dir);
    }
    Ok(Some(ClientLogs { prefix, clients }))
}

impl ClientLogs {
    /// Writes the merged logs; returns the lines to say about logs that could not be read or written.
    pub(crate) fn merge(&self) -> Vec<String> {
        crate::measure::hdrlog::merge_logs(&self.clients, &self.prefix)
    }
}
