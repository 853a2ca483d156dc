//! The live [`Lab`]: real topologies through `topology`/`backend`, real runs through `runner`;
//! plus `calibrate` (an in-process stand-in) and `demo` (stand-in topologies, capacity model).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::compare::{CompareConfig, MatrixOutcome};
use super::lab::{Deployment, Lab, Measured};
use super::progress::Progress;
use super::results::{ExperimentDir, read_json, write_json_atomic};
use super::scenario::PropertyMap;
use crate::runner::Phase;

/// Stand-in service time per operation in `demo`, µs.
pub const DEMO_SERVICE_TIME_US: u64 = 2000;
/// Stand-in workers per mongod in `demo` (ceiling = workers × 10⁶ / service time per mongod).
pub const DEMO_WORKERS: u32 = 2;
/// Client threads in `demo`: enough in flight to saturate four shards' workers.
pub const DEMO_THREADS: u32 = 32;

/// File (under the results root) holding the last `calibrate` figure on this machine.
pub const CALIBRATE_FILE: &str = ".calibrate.json";

/// The live lab: brings topologies up with a backend and runs phases with the runner.
#[derive(Debug)]
pub struct LiveLab {
    backend: String,
    bin_dir: Option<PathBuf>,
    extra_mongod_args: Vec<String>,
    /// First port of every topology brought up (`None` = the topology file's).
    pub base_port: Option<u16>,
}

impl LiveLab {
    /// A lab for `backend` (`process`, `docker`, `existing`).
    pub fn new(
        backend: &str,
        bin_dir: Option<PathBuf>,
        extra_mongod_args: Vec<String>,
    ) -> anyhow::Result<LiveLab> {
        Ok(LiveLab {
            backend: backend.to_string(),
            bin_dir,
            extra_mongod_args,
            base_port: None,
        })
    }
}

/// Handle of a running topology.
#[derive(Debug)]
pub struct LiveHandle;

impl Lab for LiveLab {
    type Handle = LiveHandle;

    async fn up(
        &mut self,
        topology: &str,
        _cancel: &CancellationToken,
    ) -> anyhow::Result<(Deployment, LiveHandle)> {
        let _ = (
            &self.backend,
            &self.bin_dir,
            &self.extra_mongod_args,
            self.base_port,
        );
        anyhow::bail!(
            "cannot bring up {topology}: the topology/backend modules are not merged into this build yet"
        )
    }

    async fn run(
        &mut self,
        deployment: &Deployment,
        properties: &PropertyMap,
        phase: Phase,
        cancel: &CancellationToken,
    ) -> anyhow::Result<Measured> {
        run_phase(&deployment.entry_uri, properties, phase, cancel).await
    }

    async fn down(&mut self, _handle: LiveHandle) -> anyhow::Result<()> {
        Ok(())
    }
}

/// A base port with `count` consecutive free loopback ports, probed from a pseudo-random start
/// (bounded attempts), so that demos and tests do not collide with servers already running.
pub fn free_port_range(count: u16) -> Option<u16> {
    let seed = u32::from(std::process::id() as u16)
        ^ (chrono::Utc::now().timestamp_subsec_micros() & 0xffff);
    for attempt in 0..200u32 {
        let base = 20_000 + ((seed.wrapping_mul(7919).wrapping_add(attempt * 977)) % 30_000) as u16;
        let free = (0..count).all(|i| {
            std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, base + i)).is_ok()
        });
        if free {
            return Some(base);
        }
    }
    None
}

/// Runs one phase with the runner against `uri` and summarises its result document.
pub async fn run_phase(
    _uri: &str,
    _properties: &PropertyMap,
    _phase: Phase,
    _cancel: &CancellationToken,
) -> anyhow::Result<Measured> {
    anyhow::bail!("cannot run a phase: the runner module is not merged into this build yet")
}

/// What `calibrate` is asked to do.
#[derive(Debug, Clone)]
pub struct CalibrateConfig {
    /// Workload (default S2).
    pub workload: String,
    /// Length of the measured run.
    pub duration: Duration,
    /// Client threads.
    pub threads: u32,
    /// Records loaded first.
    pub records: u64,
    /// `-p` overrides.
    pub overrides: Vec<String>,
    /// Where the figure is stored.
    pub results_root: PathBuf,
}

/// The client's ceiling on this machine, as stored for later experiments.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    /// When measured (RFC 3339).
    pub measured: String,
    /// Operations per second the client reached against a stand-in with no service time.
    pub ops_per_s: f64,
    /// Client CPU µs per operation.
    pub cpu_us_per_op: Option<f64>,
    /// Workload used.
    pub workload: String,
    /// Client threads.
    pub threads: u32,
    /// Logical CPUs of the machine.
    pub cpus: usize,
}

impl Calibration {
    /// The figure, labelled as a client ceiling measured against the stand-in.
    pub fn render(&self) -> String {
        format!(
            "{}\nClient ceiling on this machine (measured against the in-process stand-in with no service time):\n  {:.0} ops/s, {} client CPU µs per operation ({} threads, {} CPUs, workload {})\nThis is the most this client can drive here; it says nothing about MongoDB.",
            crate::report::STANDIN_MARKER,
            self.ops_per_s,
            self.cpu_us_per_op
                .map(|c| format!("{c:.1}"))
                .unwrap_or_else(|| "?".into()),
            self.threads,
            self.cpus,
            self.workload
        )
    }
}

/// The last calibrated client ceiling stored under `results_root`, if any.
pub fn stored_ceiling(results_root: &Path) -> Option<f64> {
    read_json::<Calibration>(&results_root.join(CALIBRATE_FILE))
        .ok()
        .map(|c| c.ops_per_s)
}

/// Stores a calibration for later experiments.
pub fn store_calibration(results_root: &Path, c: &Calibration) -> anyhow::Result<()> {
    write_json_atomic(&results_root.join(CALIBRATE_FILE), c)?;
    Ok(())
}

/// Measures the client's own ceiling against an in-process stand-in.
pub async fn calibrate(
    _cfg: &CalibrateConfig,
    _cancel: &CancellationToken,
    _progress: &Progress,
) -> anyhow::Result<Calibration> {
    anyhow::bail!("calibrate needs the stand-in and runner modules, not merged into this build yet")
}

/// What `demo` is asked to do.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// Where the run directory is created.
    pub results_root: PathBuf,
    /// Length of each run cell.
    pub duration: Duration,
    /// Records per topology.
    pub records: u64,
    /// Stand-in service time, µs.
    pub service_time_us: u64,
    /// Stand-in workers per mongod.
    pub workers: u32,
    /// Client threads.
    pub threads: u32,
    /// Topologies.
    pub topologies: Vec<String>,
    /// Scenarios.
    pub scenarios: Vec<String>,
}

/// The compare configuration the demo runs (exposed so tests run the same thing).
pub fn demo_compare_config(cfg: &DemoConfig) -> CompareConfig {
    let mut c = CompareConfig::new(cfg.results_root.clone());
    c.name = "demo".into();
    c.topologies = cfg.topologies.clone();
    c.scenarios = cfg.scenarios.clone();
    c.backend = "process".into();
    c.duration = Some(cfg.duration);
    c.records = cfg.records;
    c.threads = Some(cfg.threads);
    c.extra_mongod_args = vec![
        format!("--service-time-us={}", cfg.service_time_us),
        format!("--workers={}", cfg.workers),
    ];
    c
}

/// The whole compare pipeline on stand-in topologies.
pub async fn demo(
    _cfg: &DemoConfig,
    _cancel: &CancellationToken,
    _progress: &Progress,
) -> anyhow::Result<(ExperimentDir, MatrixOutcome)> {
    anyhow::bail!(
        "demo needs the stand-in, backend and runner modules, not merged into this build yet"
    )
}
