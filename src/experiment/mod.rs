//! Experiments: compare, sweep, calibrate and demo, with results that are never lost.
//!
//! The bookkeeping (run directory, resume, teardown, reports) is written against the
//! [`lab::Lab`] seam; [`live`] plugs in the real topology, backend and runner modules.

pub mod balancer;
pub(crate) mod calibrate;
pub(crate) mod ceiling;
pub(crate) mod checked;
pub(crate) mod client_ceiling_server;
pub(crate) mod compare;
pub mod crosscheck;
pub(crate) mod demo;
pub(crate) mod dry_run;
pub mod facts;
pub mod flags;
pub(crate) mod knee;
pub(crate) mod knee_caveats;
pub(crate) mod lab;
pub(crate) mod live;
pub mod metrics;
pub mod model;
pub(crate) mod progress;
pub mod results;
pub(crate) mod rollback;
pub(crate) mod scenario;
pub(crate) mod slo;
pub(crate) mod summary;
pub(crate) mod sweep;
