//! Measurements: per-client HdrHistograms, status counts, YCSB-formatted status lines and exports, the JSON result document.
//!
//! Data flow: each client task records through its own [`ClientRecorder`]; the status task calls
//! [`Measurements::take_interval`] and formats [`statusline::status_line`]; at the end
//! [`Measurements::finish`] gives [`RunMeasurements`] in YCSB's export order, which the
//! [`export`] functions print and [`ResultDocument`] stores.

pub mod config;
pub mod export;
pub mod hdr;
pub mod javafmt;
pub mod legacy;
pub mod order;
pub mod registry;
pub mod result;
pub mod status;
pub mod statusline;
pub mod timeline;
pub mod validity;

pub use config::{ConfigError, IntervalMode, MeasurementConfig, MeasurementType};
pub use export::{ExporterKind, Overall, exporter_for};
pub use legacy::BucketHistogram;
pub use registry::{
    ClientRecorder, IntervalSummaries, IntervalSummary, MapKind, Measurements, OpMeasurement,
    RunMeasurements, SummaryStats,
};
pub use result::{
    ClientCpu, HostFacts, MeasurementResult, PropertyEntry, ResultDocument, ResultError,
    SCHEMA_VERSION, ServerFacts, StatusCount, ToolInfo, total_memory_bytes,
};
pub use status::Status;
pub use statusline::{StatusInput, status_line};
