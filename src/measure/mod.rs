//! Measurements: per-client HdrHistograms, status counts, YCSB-formatted status lines and exports, the JSON result document.

pub mod status;

pub use status::Status;
