//! `demo`: the whole compare pipeline on stand-in topologies, whose capacity model (workers ×
//! service time) decides the figures, not this machine's CPU.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::compare::{MatrixOutcome, NewRun};
use super::live::{DEMO_PORTS, LiveLab, demo_links, free_port_range};
use super::model::CompareCommand;
use super::progress::Progress;
use super::results::ExperimentDir;
use crate::topology::BackendKind;

/// Stand-in service time per operation in `demo`, µs (2 workers → 200 ops/s per mongod, 800 for
/// four shards: below what the client, mongos and shards push on 2 busy cores, so the capacity
/// model, not the CPU, decides).
pub(crate) const DEMO_SERVICE_TIME_US: u64 = 10_000;
/// Stand-in workers per mongod in `demo` (ceiling = workers × 10⁶ / service time per mongod).
pub(crate) const DEMO_WORKERS: u32 = 2;
/// Records loaded per topology in `demo` (a few seconds of load at the capacity model's rate).
pub(crate) const DEMO_RECORDS: u64 = 2000;
/// Client threads in `demo`: enough in flight to saturate four shards' workers.
pub(crate) const DEMO_THREADS: u32 = 64;

/// What `demo` is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct DemoConfig {
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
    /// First port of every topology (`--base-port`); a free range below the ephemeral ports when
    /// `None`.
    pub base_port: Option<u16>,
}

/// The compare record the demo runs (exposed so preflight checks the same thing).
pub(crate) fn demo_command(cfg: &DemoConfig) -> CompareCommand {
    CompareCommand {
        name: "demo".into(),
        baseline: cfg.topologies.first().cloned().unwrap_or_default(),
        topologies: cfg.topologies.clone(),
        scenarios: cfg.scenarios.clone(),
        backend: BackendKind::Process,
        duration_s: Some(cfg.duration.as_secs().max(1)),
        records: Some(cfg.records),
        threads: Some(cfg.threads),
        extra_mongod_args: vec![
            format!("--service-time-us={}", cfg.service_time_us),
            format!("--workers={}", cfg.workers),
        ],
        ..Default::default()
    }
}

/// The whole compare pipeline on stand-in topologies.
pub(crate) async fn demo(
    cfg: &DemoConfig,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<(ExperimentDir, MatrixOutcome)> {
    let bin = demo_links()?;
    let mut command = demo_command(cfg);
    command.bin_dir = Some(bin.path().to_path_buf());
    let mut lab = LiveLab::new(
        BackendKind::Process,
        command.bin_dir.clone(),
        command.extra_mongod_args.clone(),
    );
    lab.base_port = cfg.base_port.or_else(|| free_port_range(DEMO_PORTS));
    lab.events = progress.events();
    progress.line(&format!(
        "microshard demo: stand-in servers (not MongoDB) with a capacity of {} workers × {} µs per operation = {:.0} ops/s per mongod",
        cfg.workers,
        cfg.service_time_us,
        f64::from(cfg.workers) * 1e6 / cfg.service_time_us.max(1) as f64
    ));
    let at = NewRun {
        results_root: cfg.results_root.clone(),
        ..Default::default()
    };
    let prepared = super::compare::create(&command, &at)?;
    super::compare::compare_with(&mut lab, prepared, cancel, progress).await
}
