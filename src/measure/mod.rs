//! Measurements: per-client HdrHistograms, status counts, YCSB-formatted status lines and exports, the JSON result document.
//!
//! Data flow: each client task records through its own [`ClientRecorder`]; the status task calls
//! [`Measurements::take_interval`] and formats [`statusline::status_line`]; at the end
//! [`Measurements::finish`] gives [`RunMeasurements`] in YCSB's export order, which the
//! [`export`] functions print and [`RunDocument`] stores.

pub mod client_pod;
pub(crate) mod config;
pub(crate) mod export;
pub mod hdr;
pub(crate) mod hdrlog;
pub mod host_load;
pub(crate) mod javafmt;
pub(crate) mod legacy;
mod listeners;
pub(crate) mod order;
pub(crate) mod registry;
pub mod result;
pub mod series;
pub(crate) mod status;
pub(crate) mod statusline;
pub(crate) mod timeline;
pub mod validity;

pub use client_pod::ClientPod;
pub use config::{ConfigError, IntervalMode, MeasurementConfig, MeasurementType};
pub use export::{ExporterKind, Overall};
pub use legacy::BucketHistogram;
pub use registry::{
    ClientRecorder, IntervalSummaries, IntervalSummary, MapKind, Measurements, OpMeasurement,
    RunMeasurements, SummaryStats,
};
pub use result::{
    ClientCpu, ClientEntry, HostFacts, KeySpan, MeasurementResult, PropertyEntry, ResultError,
    RunDocument, Schedule, ServerFacts, StatusCount, ToolInfo,
};
pub(crate) use result::{SCHEMA_VERSION, STANDIN_MARKER, total_memory_bytes};
pub use status::Status;
pub use statusline::{StatusInput, status_line};
pub use timeline::{Outage, StallCount, Timeline, TimelineSecond};
