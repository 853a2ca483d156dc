//! `calibrate`: the client's own ceiling on this machine, measured once per results directory
//! against an in-process stand-in and stored for later experiments.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::live::run_phase;
use super::progress::Progress;
use super::results::{read_json, write_json_atomic};
use crate::runner::Phase;
use crate::workload::{Origin, prop};

/// The client threads S1–S5 run with (`threadcount` in `workloads/`), at which `compare`
/// measures the client ceiling unless `--threads` says otherwise.
pub(crate) const SCENARIO_THREADS: u32 = 32;

/// File (under the results root) holding the last `calibrate` figure on this machine.
pub(crate) const CALIBRATE_FILE: &str = ".calibrate.json";

/// What `calibrate` is asked to do: its command line, and what `compare` asks of it when no
/// figure is stored ([`machine_ceiling`]).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CalibrateCommand {
    /// Workload file (default: S2, scaled down).
    #[arg(short = 'P', value_name = "FILE", default_value = "S2")]
    pub workload: String,
    /// Length of the measured run.
    #[arg(long, default_value = "10s", value_parser = crate::props::flag_values::parse_duration)]
    pub duration: Duration,
    /// Client threads.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: u32,
    /// Records loaded before the run.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub records: u64,
    /// Set a workload property (repeatable).
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Where the figure is stored for later experiments' client-bottleneck warnings.
    #[arg(long = "out", value_name = "OUT", default_value = "results")]
    pub results_root: PathBuf,
}

/// The client's ceiling on this machine, as stored for later experiments.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Calibration {
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
    pub(crate) fn render(&self) -> String {
        format!(
            "{}\nClient ceiling on this machine (measured against a stand-in mongod process with no service time):\n  {:.0} ops/s, {} client CPU µs per operation ({} threads, {} CPUs, workload {})\nThis is the most this client can drive here; it says nothing about MongoDB.",
            crate::measure::STANDIN_MARKER,
            self.ops_per_s,
            self.cpu_us_per_op.map_or("?".into(), |c| format!("{c:.1}")),
            self.threads,
            self.cpus,
            self.workload
        )
    }
}

/// The client's ceiling on this machine for an experiment about to start, at the thread count
/// its cells run with: the one stored under `results_root` (by `calibrate` or an earlier
/// experiment) when it was measured on a machine with as many CPUs at that thread count, else
/// measured now (three seconds of S2 against a stand-in process, long enough to be stable),
/// and stored there. `None` when it could not be measured (said on stderr). A cell that beats it
/// later shows it stale and raises it (`compare::cell::write_cell`). Of the experiment's `-p`
/// overrides only `microshard.busyhost` applies: how busy a host it tolerates.
pub(crate) async fn machine_ceiling(
    results_root: &Path,
    threads: u32,
    overrides: &[String],
    cancel: &CancellationToken,
    progress: &Progress,
) -> Option<f64> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Ok(c) = read_json::<Calibration>(&results_root.join(CALIBRATE_FILE))
        && c.cpus == cpus
        && c.threads == threads
    {
        return Some(c.ops_per_s);
    }
    let cfg = CalibrateCommand {
        workload: "S2".into(),
        duration: Duration::from_secs(3),
        threads,
        records: 2_000,
        overrides: overrides
            .iter()
            .filter(|o| {
                o.split_once('=')
                    .is_some_and(|(k, _)| k.trim() == prop::BUSYHOST.name)
            })
            .cloned()
            .collect(),
        results_root: results_root.to_path_buf(),
    };
    progress.line(&format!("microshard: measuring this machine's client ceiling at {threads} threads first (about 4 s, once per results directory and thread count)"));
    match calibrate(&cfg, cancel, progress).await {
        Ok(c) => {
            progress.line(&format!(
                "microshard: client ceiling {:.0} ops/s (cells near it are marked client-bound)",
                c.ops_per_s
            ));
            Some(c.ops_per_s)
        }
        Err(e) => {
            progress.line(&format!(
                "microshard: warning: the client ceiling could not be measured ({e}); cells are not checked for it"
            ));
            None
        }
    }
}

/// Measures the client's own ceiling against an in-process stand-in.
pub(crate) async fn calibrate(
    cfg: &CalibrateCommand,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Calibration> {
    let scaling = super::scenario::Scaling {
        full: false,
        records: cfg.records,
        duration_s: None,
        threads: Some(cfg.threads),
    };
    let one = super::scenario::OneWorkload::resolve(&cfg.workload, &scaling, &cfg.overrides)?;
    let base = one.base();
    let server = super::client_ceiling_server::start().await?;
    let uri = server.uri.clone();
    let outcome = async {
        let mut load = base.clone();
        load.set(
            prop::INSERTCOUNT.name,
            cfg.records.to_string(),
            Origin::Experiment,
        );
        let mut run = base.clone();
        let secs = cfg.duration.as_secs().max(1);
        run.set_value(&prop::MAXEXECUTIONTIME, secs, Origin::Experiment);
        run.set_value(&prop::OPERATIONCOUNT, 1_000_000_000u64, Origin::Experiment);
        // One phase with one local client, its bar finished with the throughput.
        let measure = async |props, phase, name, length| {
            let bar = progress.phase(name, length);
            let events = Some(progress.events());
            let opts = crate::runner::ExecuteOptions {
                cancel: cancel.clone(),
                uri: Some(uri.clone()),
                events,
                ..Default::default()
            };
            let m = run_phase(props, phase, opts).await?;
            bar.finish(&format!("{:.0} ops/s", m.summary.throughput));
            anyhow::Ok(m)
        };
        measure(&load, Phase::Load, "calibrate: load", None).await?;
        measure(&run, Phase::Run, "calibrate: run", Some(cfg.duration)).await
    }
    .await;
    server.stop().await;
    let m = outcome?;
    if cancel.is_cancelled() {
        return Err(crate::error::interrupted("calibration not stored"));
    }
    // A ceiling measured while other work took the cores is too low, and every later cell near
    // it would be called client-bound: it is neither stored nor used.
    let busy = base.value(&prop::BUSYHOST)?;
    if let Some(why) = m.document.host_load.as_ref().and_then(|h| h.busy(busy)) {
        anyhow::bail!("{why}; a ceiling so measured is too low, so it is not stored");
    }
    let c = Calibration {
        measured: chrono::Utc::now().to_rfc3339(),
        ops_per_s: m.summary.throughput,
        cpu_us_per_op: m.summary.cpu_us_per_op(),
        workload: one.name,
        threads: cfg.threads,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    // Stored for later experiments.
    write_json_atomic(&cfg.results_root.join(CALIBRATE_FILE), &c)?;
    Ok(c)
}
