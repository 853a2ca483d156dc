//! Experiments: compare, sweep, calibrate and demo, with results that are never lost.
//!
//! The bookkeeping (run directory, resume, teardown, reports) is written against the
//! [`lab::Lab`] seam; [`live`] plugs in the real topology, backend and runner modules.

pub mod compare;
pub mod dry_run;
pub mod knee;
pub mod lab;
pub mod live;
pub mod metrics;
pub mod model;
pub mod progress;
pub mod results;
pub mod scenario;
pub mod summary;
pub mod sweep;

pub use compare::compare_with;
pub use results::ExperimentDir;
