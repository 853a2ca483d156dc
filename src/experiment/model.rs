//! What an experiment stores: its configuration, one file per cell, thread sweeps.
//!
//! These are the on-disk shapes `report`, `diff` and `--resume` read back, so they only grow
//! (new fields carry `#[serde(default)]`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::metrics::ServerMetrics;

/// Schema tag written into every cell file.
pub const CELL_SCHEMA: &str = "microshard.cell/2";
/// Schema tag written into the experiment configuration.
pub const CONFIG_SCHEMA: &str = "microshard.experiment/1";

/// One measurement of the experiment matrix: a scenario on a topology, the n-th time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CellId {
    /// Topology name (`single`, `microshard-2`, ...).
    pub topology: String,
    /// Scenario name (`S1` ... `S5`).
    pub scenario: String,
    /// 1-based repetition number.
    pub repeat: u32,
}

/// Everything recorded about the experiment before the first measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExperimentConfig {
    /// `microshard.experiment/1`.
    pub schema: String,
    /// Experiment name (also the directory suffix).
    pub name: String,
    /// When the experiment was created (RFC 3339, UTC).
    pub created: String,
    /// microshard's version.
    pub tool_version: String,
    /// Topologies, in table order.
    pub topologies: Vec<String>,
    /// The topology every other one is compared with.
    pub baseline: String,
    /// Scenarios in order; the first is the load phase.
    pub scenarios: Vec<String>,
    /// Measurements per cell.
    pub repeat: u32,
    /// Backend used to bring topologies up (`process`, `docker`, `existing`).
    pub backend: String,
    /// Directory of the server binaries, when one was given.
    #[serde(default)]
    pub bin_dir: Option<String>,
    /// Extra arguments given to every mongod (the stand-in's capacity model in `demo`).
    #[serde(default)]
    pub extra_mongod_args: Vec<String>,
    /// Docker image given with `--image` for every member, kept so `--resume` brings the same
    /// servers up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Run-phase bound per cell, in seconds (`maxexecutiontime`).
    #[serde(default)]
    pub duration_s: Option<u64>,
    /// Client threads, when fixed on the command line.
    #[serde(default)]
    pub threads: Option<u32>,
    /// Whether each topology's thread count comes from a sweep.
    #[serde(default)]
    pub sweep: bool,
    /// Thread counts a sweep tries.
    #[serde(default)]
    pub sweep_threads: Vec<u32>,
    /// Seconds per sweep point.
    #[serde(default)]
    pub sweep_duration_s: Option<u64>,
    /// Whether the seed's full sizes were used (otherwise the laptop scale).
    pub full: bool,
    /// A sentence saying which sizes were used, shown under every table.
    pub scale_note: String,
    /// The resolved properties of every scenario (after scaling and `-p`).
    pub properties: BTreeMap<String, BTreeMap<String, String>>,
    /// Facts about the client machine.
    #[serde(default)]
    pub host: crate::measure::HostFacts,
    /// Server versions seen per topology (filled as topologies come up).
    #[serde(default)]
    pub server_versions: BTreeMap<String, String>,
    /// True once any server answered as the stand-in: figures are not MongoDB figures.
    #[serde(default)]
    pub standin: bool,
    /// Errors per operation above which a cell is marked degraded (fraction, e.g. 0.01).
    #[serde(default = "default_degraded")]
    pub degraded_error_fraction: f64,
    /// The client's own ceiling (ops/s) from the last `calibrate` on this machine, if any.
    #[serde(default)]
    pub client_ceiling: Option<f64>,
    /// Print per-server ops/s while cells run (`compare -s`).
    #[serde(default)]
    pub live_server_status: bool,
    /// Client processes per cell (`--clients`), kept so `--resume` drives cells the same way.
    #[serde(default = "one")]
    pub clients: usize,
}

fn one() -> usize {
    1
}

fn default_degraded() -> f64 {
    0.01
}

/// The figures a report needs from one measurement, extracted when the cell is written so
/// that reports never depend on the full result document's layout.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CellSummary {
    /// `load` or `run`.
    pub phase: String,
    /// Client threads used.
    pub threads: u32,
    /// Operations completed (all statuses).
    pub operations: u64,
    /// Wall-clock run time in milliseconds.
    pub runtime_ms: f64,
    /// Operations per second over the whole run.
    pub throughput: f64,
    /// The operation the latency columns describe (the most frequent one).
    pub main_op: String,
    /// Latency of the main operation, microseconds.
    pub latency: Latency,
    /// Operations that did not return OK (all operations).
    pub errors: u64,
    /// Client CPU time (user + system) in seconds, when measured.
    #[serde(default)]
    pub client_cpu_s: Option<f64>,
    /// Logical CPUs of the client machine.
    #[serde(default)]
    pub client_cores: Option<u32>,
    /// The server identified itself as the stand-in.
    pub standin: bool,
    /// Server version string as reported.
    #[serde(default)]
    pub server_version: Option<String>,
    /// The write concern in force (`w=1`, or `server default`).
    #[serde(default)]
    pub write_concern: Option<String>,
    /// Whether the figures can be trusted (the runner's verdict; `compare` may add findings).
    #[serde(default)]
    pub validity: crate::measure::validity::Validity,
}

/// Latency figures of one operation, microseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    /// Average.
    pub avg: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

impl CellSummary {
    /// Client CPU microseconds spent per operation.
    pub fn cpu_us_per_op(&self) -> Option<f64> {
        let cpu = self.client_cpu_s?;
        (self.operations > 0).then(|| cpu * 1e6 / self.operations as f64)
    }

    /// Fraction of the client's cores kept busy during the run.
    pub fn client_cpu_utilisation(&self) -> Option<f64> {
        let cpu = self.client_cpu_s?;
        let cores = f64::from(self.client_cores?.max(1));
        (self.runtime_ms > 0.0).then(|| cpu / (self.runtime_ms / 1000.0) / cores)
    }
}

/// One cell's file: identity, summary, the full result document and server metrics.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellFile {
    /// [`CELL_SCHEMA`].
    pub schema: String,
    /// Which cell.
    pub cell: CellId,
    /// When it finished (RFC 3339, UTC).
    pub finished: String,
    /// Figures used by reports.
    pub summary: CellSummary,
    /// The runner's full result document (histograms included), as written by `--json`.
    pub result: crate::measure::ResultDocument,
    /// Server-side metrics around the cell, when they could be collected.
    #[serde(default)]
    pub server: Option<ServerMetrics>,
    /// Warnings found while measuring (client bottleneck, indexes beyond cache, ...).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The topology as it was brought up: every member's command line, cache size, memory limit
    /// and cpuset (credentials redacted). `None` when the lab has no plan (tests, `--uri`).
    #[serde(default)]
    pub topology: Option<crate::topology::Plan>,
    /// `buildInfo.version` per member, as the topology reported them at bring-up.
    #[serde(default)]
    pub server_versions: BTreeMap<String, String>,
}

/// One point of a thread sweep.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SweepPoint {
    /// Client threads.
    pub threads: u32,
    /// The measurement at that count.
    pub summary: CellSummary,
}

/// A thread sweep: the curve, its maximum and its knee.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepFile {
    /// What was swept (scenario and topology or URI, redacted).
    pub label: String,
    /// Points in thread order.
    pub points: Vec<SweepPoint>,
    /// Thread count with the highest throughput.
    pub max_threads: Option<u32>,
    /// Smallest thread count within the knee tolerance of the maximum.
    pub knee_threads: Option<u32>,
    /// The tolerance used (0.05 = within 5%).
    pub tolerance: f64,
    /// Measured against the stand-in.
    pub standin: bool,
}
