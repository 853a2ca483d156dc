//! `demo`: the whole compare pipeline on stand-in topologies, whose capacity model (workers ×
//! service time) decides the figures, not this machine's CPU.

use tokio_util::sync::CancellationToken;

use super::checked::Checked;
use super::compare::{MatrixOutcome, NewRun};
use super::live::{DEMO_PORTS, LiveLab, demo_links, free_port_range};
use super::model::CompareCommand;
use super::progress::Progress;
use super::results::ExperimentDir;

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

/// The stand-in's capacity model as every mongod's arguments: `workers` × 10⁶ / `service_time_us`
/// operations per second.
pub(crate) fn capacity_args(service_time_us: u64, workers: u32) -> Vec<String> {
    vec![
        format!("--service-time-us={service_time_us}"),
        format!("--workers={workers}"),
    ]
}

/// The whole compare pipeline on stand-in topologies: `checked` is a `compare` record (named
/// `demo`), run on stand-in links made now, in a free port range unless it names one.
pub(crate) async fn demo(
    checked: Checked<CompareCommand>,
    results_root: &std::path::Path,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<(ExperimentDir, MatrixOutcome)> {
    let bin = demo_links()?;
    let mut command = checked.record().clone();
    command.servers.bin_dir = Some(bin.path().to_path_buf());
    let at = NewRun {
        results_root: results_root.to_path_buf(),
        ..Default::default()
    };
    let checked = checked.with(super::compare::create(&command, &at)?);
    let mut lab = LiveLab::of(&checked);
    lab.base_port = (command.servers.base_port).or_else(|| free_port_range(DEMO_PORTS));
    lab.events = progress.events();
    let mut session = super::lab::Session::new(&mut lab, cancel, progress);
    super::compare::compare_with(&mut session, checked.into_record()).await
}
