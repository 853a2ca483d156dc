//! Experiments: compare, sweep, calibrate and demo, with results that are never lost.

pub mod knee;
pub mod metrics;
pub mod model;
pub mod results;
