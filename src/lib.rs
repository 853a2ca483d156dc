//! microshard: YCSB-compatible MongoDB benchmarking, micro-shard topologies and experiments.
//!
//! The modules follow the data flow (see `docs/architecture.md`):
//! `workload` → `runner` → `db` → `measure` for one benchmark run (its report is
//! `measure::export`), and `topology` → `backend` → `cluster` for the servers it runs against;
//! `experiment` drives both, and `report` renders an experiment's results. The engines return
//! typed errors; `anyhow` is for `cli` and `experiment` (`error`). `standin` re-exports the `microshard-standin` crate (the MongoDB-wire-protocol server
//! used where no MongoDB exists, a workspace member of its own) and links the binary as `mongod`/`mongos`.
//!
//! Only what `main.rs`, `tests/` and `benches/` use is `pub`; everything else is `pub(crate)`, and
//! `unreachable_pub` keeps it so (`docs/architecture.md`, "Visibility").

#![warn(missing_docs)]
#![warn(unreachable_pub)]

pub mod backend;
pub mod cli;
pub mod cluster;
pub mod db;
pub(crate) mod error;
pub mod events;
pub(crate) mod exit;
pub mod experiment;
pub mod measure;
pub(crate) mod output;
pub(crate) mod preflight;
pub(crate) mod props;
pub mod redact;
pub mod report;
pub mod runner;
pub(crate) mod signals;
pub mod standin;
pub(crate) mod suggest;
pub mod topology;
pub mod workload;
pub(crate) mod writable;
