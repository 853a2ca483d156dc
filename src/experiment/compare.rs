//! `compare`: every scenario on every topology, each cell written the moment it finishes,
//! resumable, and torn down on success, error and Ctrl-C.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::knee;
use super::lab::{Deployment, Lab, Measured};
use super::metrics::{self, MemberMetrics, ServerMetrics};
use super::model::{
    CELL_SCHEMA, CONFIG_SCHEMA, CellFile, CellId, ExperimentConfig, SweepFile, SweepPoint,
};
use super::progress::Progress;
use super::results::ExperimentDir;
use super::scenario::{self, PropertyMap, Scaling};
use crate::error::bad_input;
use crate::report;
use crate::runner::Phase;
use crate::workload::prop;

/// Everything `compare` (and `demo`) is asked to do.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// Experiment name (directory suffix).
    pub name: String,
    /// Topology names or files, in table order.
    pub topologies: Vec<String>,
    /// Scenario names or files; the first is the load phase.
    pub scenarios: Vec<String>,
    /// Backend name.
    pub backend: String,
    /// Directory of `mongod`/`mongos`.
    pub bin_dir: Option<PathBuf>,
    /// Extra arguments for every mongod (stand-in capacity model).
    pub extra_mongod_args: Vec<String>,
    /// Docker image for every member instead of each topology's (`--image`).
    pub image: Option<String>,
    /// `-p key=value` overrides, applied last.
    pub overrides: Vec<String>,
    /// Bound of each run-phase cell.
    pub duration: Option<Duration>,
    /// Measurements per cell.
    pub repeat: u32,
    /// Client threads for every cell.
    pub threads: Option<u32>,
    /// Baseline topology (default: the first).
    pub baseline: Option<String>,
    /// Where run directories are created (`results/`).
    pub results_root: PathBuf,
    /// The seed's full sizes instead of the laptop scale.
    pub full: bool,
    /// Records at laptop scale.
    pub records: u64,
    /// An interrupted experiment to finish.
    pub resume: Option<PathBuf>,
    /// Thread counts to sweep per topology (`--sweep`); empty = no sweep.
    pub sweep_threads: Vec<u32>,
    /// Seconds per sweep point.
    pub sweep_duration: Duration,
    /// Where scenario files are looked up first.
    pub workload_dir: Option<PathBuf>,
    /// The client's calibrated ceiling, when known.
    pub client_ceiling: Option<f64>,
    /// Print per-server ops/s while cells run.
    pub live_server_status: bool,
    /// Client processes per cell (`--clients`).
    pub clients: usize,
}

impl CompareConfig {
    /// The defaults of `microshard compare` (laptop scale, 60 s cells, S1–S5 on three topologies).
    pub fn new(results_root: PathBuf) -> CompareConfig {
        CompareConfig {
            name: "compare".into(),
            topologies: vec![
                "single".into(),
                "microshard-2".into(),
                "microshard-4".into(),
            ],
            scenarios: ["S1", "S2", "S3", "S4", "S5"].map(String::from).to_vec(),
            backend: "process".into(),
            bin_dir: None,
            extra_mongod_args: Vec::new(),
            image: None,
            overrides: Vec::new(),
            duration: Some(Duration::from_secs(60)),
            repeat: 1,
            threads: None,
            baseline: None,
            results_root,
            full: false,
            records: scenario::LAPTOP_RECORDS,
            resume: None,
            sweep_threads: Vec::new(),
            sweep_duration: Duration::from_secs(10),
            workload_dir: None,
            client_ceiling: None,
            live_server_status: false,
            clients: 1,
        }
    }
}

/// Creates the run directory and writes the configuration, or reopens one for `--resume`.
pub fn prepare(cfg: &CompareConfig) -> anyhow::Result<(ExperimentDir, ExperimentConfig)> {
    if let Some(path) = &cfg.resume {
        let dir = ExperimentDir::open(path)
            .map_err(|e| bad_input(format!("--resume {}: {e}", path.display())))?;
        let mut config = dir
            .config()
            .map_err(|e| bad_input(format!("--resume {}: {e}", path.display())))?;
        // Secrets were redacted on disk: `-p` given again on resume restores them.
        for (k, v) in scenario::parse_overrides(&cfg.overrides)? {
            for props in config.properties.values_mut() {
                props.insert(k.clone(), v.clone());
            }
        }
        return Ok((dir, config));
    }
    if cfg.topologies.is_empty() {
        return Err(bad_input("--topologies: at least one topology is needed"));
    }
    if cfg.scenarios.is_empty() {
        return Err(bad_input("--scenarios: at least one scenario is needed"));
    }
    if cfg.repeat == 0 {
        return Err(bad_input("--repeat: must be at least 1"));
    }
    let baseline = cfg
        .baseline
        .clone()
        .unwrap_or_else(|| cfg.topologies[0].clone());
    let baseline = check_topology_names(&cfg.topologies, &baseline)?;
    let files = cfg
        .scenarios
        .iter()
        .map(|s| Ok((s.clone(), scenario::locate(s, cfg.workload_dir.as_deref())?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let overrides = scenario::parse_overrides(&cfg.overrides)?;
    let scaling = Scaling {
        full: cfg.full,
        records: cfg.records,
        duration_s: cfg.duration.map(|d| d.as_secs().max(1)),
        threads: cfg.threads,
    };
    let (properties, scale_note) = scenario::resolve(&files, &scaling, &overrides)?;
    let config = ExperimentConfig {
        schema: CONFIG_SCHEMA.into(),
        name: cfg.name.clone(),
        created: chrono::Utc::now().to_rfc3339(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        topologies: cfg.topologies.clone(),
        baseline,
        scenarios: cfg.scenarios.clone(),
        repeat: cfg.repeat,
        backend: cfg.backend.clone(),
        bin_dir: cfg.bin_dir.as_ref().map(|p| p.display().to_string()),
        extra_mongod_args: cfg.extra_mongod_args.clone(),
        image: cfg.image.clone(),
        duration_s: scaling.duration_s,
        threads: cfg.threads,
        sweep: !cfg.sweep_threads.is_empty(),
        sweep_threads: cfg.sweep_threads.clone(),
        sweep_duration_s: Some(cfg.sweep_duration.as_secs().max(1)),
        full: cfg.full,
        scale_note,
        properties,
        host: crate::measure::HostFacts::collect(),
        server_versions: BTreeMap::new(),
        standin: false,
        degraded_error_fraction: 0.01,
        client_ceiling: cfg.client_ceiling,
        live_server_status: cfg.live_server_status,
        clients: cfg.clients,
    };
    let dir = ExperimentDir::create(&cfg.results_root, &cfg.name).with_context(|| {
        format!(
            "creating the run directory under {}",
            cfg.results_root.display()
        )
    })?;
    dir.write_config(&config)?;
    Ok((dir, config))
}

/// What happened to the matrix.
#[derive(Debug, Default)]
pub struct MatrixOutcome {
    /// Cells measured in this invocation.
    pub measured: Vec<CellId>,
    /// Cells skipped because their file already existed.
    pub skipped: Vec<CellId>,
    /// Failures (topology or cell, and why); the experiment can be resumed.
    pub failures: Vec<String>,
    /// Ctrl-C stopped the experiment.
    pub interrupted: bool,
}

/// Runs every unfinished cell of the experiment, writing each as it finishes.
pub async fn run_matrix<L: Lab>(
    lab: &mut L,
    dir: &ExperimentDir,
    config: &mut ExperimentConfig,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<MatrixOutcome> {
    let mut outcome = MatrixOutcome::default();
    let Some(load_scenario) = config.scenarios.first().cloned() else {
        return Ok(outcome);
    };
    'repeats: for repeat in 1..=config.repeat {
        for topology in config.topologies.clone() {
            if cancel.is_cancelled() {
                outcome.interrupted = true;
                break 'repeats;
            }
            let ids: Vec<CellId> = config
                .scenarios
                .iter()
                .map(|s| CellId {
                    topology: topology.clone(),
                    scenario: s.clone(),
                    repeat,
                })
                .collect();
            let pending: Vec<&CellId> = ids.iter().filter(|id| !dir.is_finished(id)).collect();
            if pending.is_empty() {
                outcome.skipped.extend(ids.iter().cloned());
                continue;
            }
            let label = format!("{topology} (repeat {repeat}/{})", config.repeat);
            let bar = progress.phase(&format!("{label}: bring-up"), None);
            let (deployment, handle) = match lab.up(&topology, cancel).await {
                Ok(x) => {
                    bar.finish("up");
                    x
                }
                Err(e) => {
                    bar.finish("failed");
                    if cancel.is_cancelled() {
                        outcome.interrupted = true;
                        break 'repeats;
                    }
                    outcome
                        .failures
                        .push(format!("{topology}: bring-up failed: {e:#}"));
                    continue;
                }
            };
            let result = run_topology(
                lab,
                dir,
                config,
                &deployment,
                &ids,
                &load_scenario,
                cancel,
                progress,
                &mut outcome,
            )
            .await;
            let bar = progress.phase(&format!("{label}: teardown"), None);
            let down = lab.down(handle).await;
            bar.finish(if down.is_ok() { "down" } else { "failed" });
            if let Err(e) = result {
                outcome.failures.push(format!("{topology}: {e:#}"));
            }
            if let Err(e) = down {
                outcome
                    .failures
                    .push(format!("{topology}: teardown failed: {e:#}"));
            }
            if cancel.is_cancelled() {
                outcome.interrupted = true;
                break 'repeats;
            }
        }
    }
    Ok(outcome)
}

#[allow(clippy::too_many_arguments)]
async fn run_topology<L: Lab>(
    lab: &mut L,
    dir: &ExperimentDir,
    config: &mut ExperimentConfig,
    deployment: &Deployment,
    ids: &[CellId],
    load_scenario: &str,
    cancel: &CancellationToken,
    progress: &Progress,
    outcome: &mut MatrixOutcome,
) -> anyhow::Result<()> {
    let topology = &deployment.topology;
    let mut threads_override: Option<u32> = None;
    // Documents inserted by earlier run phases on this data: later scenarios see them as part of
    // the record count, so their inserts take fresh keys (no duplicate-key errors) and their
    // reads cover every document that exists.
    let mut inserted: u64 = 0;
    for id in ids {
        if cancel.is_cancelled() {
            return Ok(());
        }
        let is_load = id.scenario == load_scenario;
        let finished = dir.is_finished(id);
        if finished && !is_load {
            outcome.skipped.push(id.clone());
            continue;
        }
        let mut props = config
            .properties
            .get(&id.scenario)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("{}: no resolved properties", id.scenario))?;
        if let (false, Some(t)) = (is_load, threads_override) {
            props.insert(prop::THREADCOUNT.name.into(), t.to_string());
        }
        if !is_load && inserted > 0 {
            let base: u64 = props
                .get(prop::RECORDCOUNT.name)
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            props.insert(prop::RECORDCOUNT.name.into(), (base + inserted).to_string());
        }
        let phase = if is_load { Phase::Load } else { Phase::Run };
        let what = if is_load && finished {
            format!(
                "{topology}: reloading data ({} kept from the earlier run)",
                id.scenario
            )
        } else {
            format!("{topology}: {} {}", id.scenario, phase_name(phase))
        };
        let expected = if is_load {
            None
        } else {
            config.duration_s.map(Duration::from_secs)
        };
        let watch = lab.collects_server_metrics() && !finished;
        let before = if watch {
            metrics::snapshot_all(&deployment.watched).await
        } else {
            Vec::new()
        };
        let bar = progress.phase(&what, expected);
        let sampler = watch.then(|| {
            metrics::Sampler::start(
                deployment.watched.clone(),
                sample_interval(&props, config.duration_s),
                config.live_server_status.then(|| progress.clone()),
            )
        });
        let measured = lab.run(deployment, &props, phase, cancel).await;
        let samples = match sampler {
            Some(s) => s.finish().await,
            None => Vec::new(),
        };
        if cancel.is_cancelled() {
            // A cell cut short by Ctrl-C is not a measurement: nothing is written for it.
            bar.finish("interrupted, not recorded");
            return Ok(());
        }
        let measured = match measured {
            Ok(m) => m,
            Err(e) => {
                bar.finish("failed");
                return Err(e.context(format!("{} {}", id.scenario, phase_name(phase))));
            }
        };
        bar.finish(&format!("{:.0} ops/s", measured.summary.throughput));
        if !is_load {
            inserted += super::summary::insert_attempts(&measured.document);
        }
        if finished {
            outcome.skipped.push(id.clone());
        } else {
            let server = if watch {
                let after = metrics::snapshot_all(&deployment.watched).await;
                let mut m = server_metrics(deployment, before, after, &props).await;
                for (member, samples) in m.members.iter_mut().zip(samples) {
                    member.samples = samples;
                }
                Some(m)
            } else {
                None
            };
            write_cell(dir, config, id, &props, measured, server, deployment)?;
            outcome.measured.push(id.clone());
        }
        if is_load && !config.sweep_threads.is_empty() {
            threads_override =
                sweep_on_topology(lab, dir, config, deployment, cancel, progress).await?;
        }
    }
    Ok(())
}

/// How often servers are sampled during a cell: `status.interval` (YCSB's, default 10 s), but
/// at least four samples in a short cell.
fn sample_interval(props: &PropertyMap, duration_s: Option<u64>) -> Duration {
    let status: u64 = props
        .get(prop::STATUS_INTERVAL.name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(prop::STATUS_INTERVAL.default);
    let cap = duration_s.map(|d| (d / 4).max(1)).unwrap_or(status);
    Duration::from_secs(status.min(cap).max(1))
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Load => "load",
        Phase::Run => "run",
    }
}

/// Before/after counters, per-shard shares and warnings for one cell.
async fn server_metrics(
    deployment: &Deployment,
    before: Vec<Option<metrics::StatusSnapshot>>,
    after: Vec<Option<metrics::StatusSnapshot>>,
    props: &PropertyMap,
) -> ServerMetrics {
    let members = deployment
        .watched
        .iter()
        .zip(before.into_iter().chain(std::iter::repeat(None)))
        .zip(after.into_iter().chain(std::iter::repeat(None)))
        .map(|((w, b), a)| MemberMetrics {
            name: w.name.clone(),
            role: w.role.clone(),
            before: b,
            after: a,
            samples: Vec::new(),
        })
        .collect();
    let table = props
        .get(prop::TABLE.name)
        .cloned()
        .unwrap_or_else(|| prop::TABLE.default.into());
    let db = props
        .get(prop::MONGODB_URL.name)
        .and_then(|u| database_of(u))
        .unwrap_or_else(|| "ycsb".into());
    let mut m = ServerMetrics {
        members,
        shards: metrics::shard_shares(&deployment.entry_uri, &db, &table).await,
        ..Default::default()
    };
    m.finish();
    m
}

/// The database named in a MongoDB URI's path, if any.
fn database_of(uri: &str) -> Option<String> {
    let rest = uri.split_once("://")?.1;
    let path = rest.split_once('/')?.1;
    let db = path.split('?').next()?;
    (!db.is_empty()).then(|| db.to_string())
}

fn write_cell(
    dir: &ExperimentDir,
    config: &mut ExperimentConfig,
    id: &CellId,
    props: &PropertyMap,
    measured: Measured,
    server: Option<ServerMetrics>,
    deployment: &Deployment,
) -> anyhow::Result<()> {
    let mut summary = measured.summary;
    if summary.threads == 0 {
        summary.threads = props
            .get(prop::THREADCOUNT.name)
            .and_then(|t| t.parse().ok())
            .unwrap_or(1);
    }
    let mut config_changed = false;
    if summary.standin && !config.standin {
        config.standin = true;
        config_changed = true;
    }
    if let Some(v) = summary
        .server_version
        .as_ref()
        .filter(|v| config.server_versions.get(&id.topology) != Some(*v))
    {
        config
            .server_versions
            .insert(id.topology.clone(), v.clone());
        config_changed = true;
    }
    let cell = CellFile {
        schema: CELL_SCHEMA.into(),
        cell: id.clone(),
        finished: chrono::Utc::now().to_rfc3339(),
        summary,
        result: measured.document,
        server,
        warnings: Vec::new(),
        topology: deployment.plan.clone(),
        server_versions: deployment.server_versions.clone(),
    };
    dir.write_cell(&cell)?;
    if config_changed {
        dir.write_config(config)?;
    }
    Ok(())
}

/// Sweeps thread counts on a loaded topology (for `compare --sweep`) and returns the knee.
async fn sweep_on_topology<L: Lab>(
    lab: &mut L,
    dir: &ExperimentDir,
    config: &ExperimentConfig,
    deployment: &Deployment,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Option<u32>> {
    let label = deployment.topology.clone();
    if let Some(stored) = dir.read_sweep(&label) {
        progress.line(&format!(
            "microshard: {label}: using the stored sweep (knee {} threads)",
            stored
                .knee_threads
                .map(|k| k.to_string())
                .unwrap_or_else(|| "?".into())
        ));
        return Ok(stored.knee_threads);
    }
    let Some(run_scenario) = config.scenarios.get(1) else {
        return Ok(None);
    };
    let Some(base) = config.properties.get(run_scenario) else {
        return Ok(None);
    };
    let secs = config.sweep_duration_s.unwrap_or(10);
    let sweep = sweep_points(
        lab,
        deployment,
        base,
        &config.sweep_threads,
        secs,
        false,
        &format!("{run_scenario} on {label}"),
        cancel,
        progress,
    )
    .await?;
    if cancel.is_cancelled() {
        return Ok(None);
    }
    dir.write_sweep(&label, &sweep)?;
    Ok(sweep.knee_threads)
}

/// Runs `base` at each thread count for `secs` seconds (or, `count_bounded`, for its
/// `operationcount` within at most `secs`) and finds the maximum and the knee.
#[allow(clippy::too_many_arguments)]
pub async fn sweep_points<L: Lab>(
    lab: &mut L,
    deployment: &Deployment,
    base: &PropertyMap,
    threads: &[u32],
    secs: u64,
    count_bounded: bool,
    label: &str,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<SweepFile> {
    let mut points = Vec::new();
    for &n in threads {
        if cancel.is_cancelled() {
            break;
        }
        let mut props = base.clone();
        props.insert(prop::THREADCOUNT.name.into(), n.to_string());
        if !count_bounded {
            // Bounded by time alone: every point runs its full duration (`operationcount=0`).
            props.insert(prop::OPERATIONCOUNT.name.into(), "0".into());
        }
        props.insert(prop::MAXEXECUTIONTIME.name.into(), secs.to_string());
        let bar = progress.phase(
            &format!("{label}: sweep {n} threads"),
            Some(Duration::from_secs(secs)),
        );
        let measured = lab.run(deployment, &props, Phase::Run, cancel).await;
        if cancel.is_cancelled() {
            bar.finish("interrupted");
            break;
        }
        let mut m = measured.with_context(|| format!("sweep at {n} threads"))?;
        bar.finish(&format!("{:.0} ops/s", m.summary.throughput));
        m.summary.threads = n;
        points.push(SweepPoint {
            threads: n,
            summary: m.summary,
        });
    }
    let k = knee::find(
        &points
            .iter()
            .map(|p| (p.threads, p.summary.throughput))
            .collect::<Vec<_>>(),
        knee::DEFAULT_TOLERANCE,
    );
    Ok(SweepFile {
        label: crate::redact::redact_text(label),
        standin: points.iter().any(|p| p.summary.standin),
        points,
        max_threads: k.map(|k| k.max_threads),
        knee_threads: k.map(|k| k.knee_threads),
        tolerance: knee::DEFAULT_TOLERANCE,
    })
}

/// Every stored cell whose verdict is not `valid`, with one line saying why (for the last line
/// on stderr and exit status 3).
pub fn cells_not_valid(dir: &ExperimentDir) -> anyhow::Result<Vec<String>> {
    Ok(dir
        .cells()?
        .into_iter()
        .filter(|c| !c.summary.validity.is_valid())
        .map(|c| {
            format!(
                "{} {} #{} is {}: {}",
                c.cell.topology,
                c.cell.scenario,
                c.cell.repeat,
                c.summary.validity.verdict,
                c.summary.validity.summary()
            )
        })
        .collect())
}

/// Reports show topologies by name (`report::topology_label`), so two topologies with one name
/// are refused; `--baseline` may give the name of a topology given as a file. Returns the
/// baseline as given in `--topologies`.
fn check_topology_names(topologies: &[String], baseline: &str) -> anyhow::Result<String> {
    let mut seen: BTreeMap<String, &String> = BTreeMap::new();
    for t in topologies {
        let name = report::topology_label(t, None);
        if let Some(first) = seen.insert(name.clone(), t) {
            return Err(bad_input(format!(
                "--topologies: {first} and {t} are both named {name}; give one of them another name"
            )));
        }
    }
    if topologies.iter().any(|t| t == baseline) {
        return Ok(baseline.to_string());
    }
    seen.get(baseline).map(|t| t.to_string()).ok_or_else(|| {
        bad_input(format!(
            "--baseline {baseline}: not one of --topologies ({})",
            topologies.join(",")
        ))
    })
}

/// Writes the report files (Markdown, CSV, JSON, text, the HTML page) and charts (SVG and PNG)
/// into the run directory; returns the terminal table.
pub fn write_reports(dir: &ExperimentDir) -> anyhow::Result<String> {
    let table = report::write_files(dir)?;
    let sweeps = dir.sweeps();
    if dir.cells()?.is_empty() && !sweeps.is_empty() {
        // A sweep's own run directory: its text reports are the sweep points.
        let text: Vec<String> = sweeps
            .iter()
            .map(|(_, s)| super::sweep::render_sweep(s))
            .collect();
        let text = text.join("\n");
        dir.write_text("report.txt", &text)?;
        dir.write_text("report.md", &format!("```\n{text}```\n"))?;
        let csv: Vec<String> = sweeps
            .iter()
            .map(|(_, s)| super::sweep::sweep_csv(s))
            .collect();
        dir.write_text("report.csv", &csv.join(""))?;
        let all: Vec<&SweepFile> = sweeps.iter().map(|(_, s)| s).collect();
        dir.write_text("report.json", &serde_json::to_string_pretty(&all)?)?;
        return Ok(text);
    }
    Ok(table)
}

/// The whole `compare`: prepare (or resume), measure every unfinished cell, write reports.
pub async fn compare_with<L: Lab>(
    lab: &mut L,
    cfg: &CompareConfig,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<(ExperimentDir, MatrixOutcome)> {
    let (dir, mut config) = prepare(cfg)?;
    if cfg.resume.is_some() {
        progress.line(&format!(
            "microshard: resuming {} (its stored configuration wins over other flags)",
            dir.path().display()
        ));
    } else {
        progress.line(&format!("microshard: results in {}", dir.path().display()));
    }
    progress.line(&format!("microshard: sizes: {}", config.scale_note));
    let outcome = run_matrix(lab, &dir, &mut config, cancel, progress).await?;
    write_reports(&dir)?;
    Ok((dir, outcome))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::model::{CellSummary, Latency};
    use std::collections::HashMap;

    /// A result document with five successful inserts (what `insert_attempts` counts).
    fn five_inserts() -> crate::measure::ResultDocument {
        let m = crate::measure::Measurements::new(crate::measure::MeasurementConfig::default());
        let c = m.client();
        for _ in 0..5 {
            c.record("INSERT", 10, None, crate::measure::Status::Ok);
        }
        let t0 = chrono::Utc::now();
        let overall = crate::measure::Overall {
            runtime_ms: 1,
            operations: 5,
        };
        crate::measure::ResultDocument::new("run", t0, t0, &overall, &m.finish())
            .unwrap_or_default()
    }

    /// A lab whose topologies have a fixed capacity and which records what it was asked.
    #[derive(Default)]
    struct FakeLab {
        capacity: HashMap<String, f64>,
        runs: Vec<(String, String, Phase)>,
        ups: usize,
        downs: usize,
        fail_on: Option<(String, String)>,
        recordcounts: Vec<u64>,
        cancel_after_runs: Option<(usize, CancellationToken)>,
    }

    impl Lab for FakeLab {
        type Handle = String;

        async fn up(
            &mut self,
            topology: &str,
            _cancel: &CancellationToken,
        ) -> anyhow::Result<(Deployment, String)> {
            self.ups += 1;
            Ok((
                Deployment {
                    topology: topology.into(),
                    entry_uri: "mongodb://127.0.0.1:1".into(),
                    watched: vec![],
                    ..Default::default()
                },
                topology.into(),
            ))
        }

        async fn run(
            &mut self,
            d: &Deployment,
            props: &PropertyMap,
            phase: Phase,
            _cancel: &CancellationToken,
        ) -> anyhow::Result<Measured> {
            let scenario = props.get("scenario").cloned().unwrap_or_default();
            self.runs
                .push((d.topology.clone(), scenario.clone(), phase));
            self.recordcounts.push(
                props
                    .get("recordcount")
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(0),
            );
            if let Some((_, token)) = self
                .cancel_after_runs
                .as_ref()
                .filter(|(n, _)| self.runs.len() > *n)
            {
                token.cancel();
            }
            if self.fail_on == Some((d.topology.clone(), scenario)) {
                anyhow::bail!("server went away");
            }
            let threads: f64 = props
                .get("threadcount")
                .and_then(|t| t.parse().ok())
                .unwrap_or(1.0);
            let cap = self.capacity.get(&d.topology).copied().unwrap_or(1000.0);
            let tp = cap.min(threads * 100.0);
            Ok(Measured {
                summary: CellSummary {
                    phase: format!("{phase:?}"),
                    operations: tp as u64,
                    runtime_ms: 1000.0,
                    throughput: tp,
                    main_op: "READ".into(),
                    latency: Latency::default(),
                    standin: true,
                    ..Default::default()
                },
                document: five_inserts(),
            })
        }

        async fn down(&mut self, _handle: String) -> anyhow::Result<()> {
            self.downs += 1;
            Ok(())
        }

        fn collects_server_metrics(&self) -> bool {
            false
        }
    }

    #[test]
    fn one_name_twice_is_refused_and_the_baseline_may_be_named() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = tmp.path().join("single.toml");
        std::fs::write(&file, "name = \"single\"\n").unwrap_or_else(|e| panic!("{e}"));
        let file = file.display().to_string();
        let twice = check_topology_names(&[file.clone(), "single".into()], "single");
        let message = twice
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string());
        assert!(message.contains("both named single"), "{message}");
        let given = check_topology_names(&[file.clone(), "microshard-2".into()], "single");
        assert_eq!(given.ok(), Some(file));
        assert!(check_topology_names(&["single".into()], "nope").is_err());
    }

    fn setup() -> Option<(tempfile::TempDir, CompareConfig)> {
        let tmp = tempfile::tempdir().ok()?;
        let wl = tmp.path().join("workloads");
        std::fs::create_dir_all(&wl).ok()?;
        for s in ["S1", "S2", "S3"] {
            std::fs::write(wl.join(s), format!("recordcount=10\nscenario={s}\n")).ok()?;
        }
        let mut cfg = CompareConfig::new(tmp.path().join("results"));
        cfg.topologies = vec!["single".into(), "microshard-2".into()];
        cfg.scenarios = vec!["S1".into(), "S2".into(), "S3".into()];
        cfg.workload_dir = Some(wl);
        cfg.threads = Some(32);
        cfg.duration = Some(Duration::from_secs(1));
        Some((tmp, cfg))
    }

    fn new_lab() -> FakeLab {
        FakeLab {
            capacity: [
                ("single".to_string(), 1000.0),
                ("microshard-2".to_string(), 2000.0),
            ]
            .into_iter()
            .collect(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn measures_every_cell_and_tears_down() -> anyhow::Result<()> {
        let Some((_tmp, cfg)) = setup() else {
            return Ok(());
        };
        let mut lab = new_lab();
        let cancel = CancellationToken::new();
        let (dir, outcome) = compare_with(&mut lab, &cfg, &cancel, &Progress::quiet()).await?;
        assert_eq!(outcome.measured.len(), 6);
        assert!(outcome.failures.is_empty());
        // Per topology: the load, then S2 on the loaded records, then S3 with the 5 S2 inserted too.
        assert_eq!(
            lab.recordcounts,
            vec![100_000, 100_000, 100_005, 100_000, 100_000, 100_005]
        );
        assert_eq!((lab.ups, lab.downs), (2, 2));
        let rep = report::build(&dir)?;
        let ms = rep
            .rows
            .iter()
            .find(|r| r.scenario == "S2" && r.topology == "microshard-2");
        assert!(
            ms.and_then(|r| r.vs_baseline)
                .is_some_and(|x| (x - 2.0).abs() < 1e-9)
        );
        assert!(rep.standin(), "fake cells are stand-in cells");
        assert!(dir.config()?.standin);
        for f in [
            "report.md",
            "report.csv",
            "report.json",
            "throughput.svg",
            "latency.svg",
        ] {
            assert!(dir.path().join(f).is_file(), "{f}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn resume_skips_finished_cells_but_reloads_data() -> anyhow::Result<()> {
        let Some((_tmp, mut cfg)) = setup() else {
            return Ok(());
        };
        let mut lab = new_lab();
        let cancel = CancellationToken::new();
        lab.cancel_after_runs = Some((1, cancel.clone()));
        let (dir, outcome) = compare_with(&mut lab, &cfg, &cancel, &Progress::quiet()).await?;
        assert!(outcome.interrupted);
        assert_eq!(outcome.measured.len(), 1, "only the load cell was finished");
        assert_eq!(
            (lab.ups, lab.downs),
            (1, 1),
            "interrupted topology torn down"
        );
        let first = CellId {
            topology: "single".into(),
            scenario: "S1".into(),
            repeat: 1,
        };
        let before = std::fs::read(dir.cell_path(&first))?;
        assert!(!dir.is_finished(&CellId {
            scenario: "S2".into(),
            ..first.clone()
        }));

        cfg.resume = Some(dir.path().to_path_buf());
        let mut lab2 = new_lab();
        let cancel = CancellationToken::new();
        let (dir2, outcome) = compare_with(&mut lab2, &cfg, &cancel, &Progress::quiet()).await?;
        assert_eq!(dir2.path(), dir.path());
        assert_eq!(outcome.measured.len(), 5);
        assert!(!outcome.measured.contains(&first));
        assert_eq!(
            std::fs::read(dir.cell_path(&first))?,
            before,
            "first cell untouched"
        );
        // The data is loaded again on the fresh topology, but not recorded as a measurement.
        assert_eq!(
            lab2.runs
                .iter()
                .filter(|r| r.0 == "single" && r.2 == Phase::Load)
                .count(),
            1
        );
        let rep = report::build(&dir)?;
        assert!(rep.rows.iter().all(|r| r.repeats == 1));
        Ok(())
    }

    #[tokio::test]
    async fn a_failing_cell_tears_down_and_the_rest_goes_on() -> anyhow::Result<()> {
        let Some((_tmp, cfg)) = setup() else {
            return Ok(());
        };
        let mut lab = new_lab();
        lab.fail_on = Some(("single".into(), "S2".into()));
        let cancel = CancellationToken::new();
        let (dir, outcome) = compare_with(&mut lab, &cfg, &cancel, &Progress::quiet()).await?;
        assert_eq!((lab.ups, lab.downs), (2, 2));
        assert_eq!(outcome.failures.len(), 1);
        assert!(
            outcome.failures[0].contains("server went away"),
            "{:?}",
            outcome.failures
        );
        assert_eq!(outcome.measured.len(), 4, "S1 single + all microshard-2");
        assert_eq!(dir.cells()?.len(), 4);
        Ok(())
    }

    #[tokio::test]
    async fn sweep_picks_knee_threads_for_cells() -> anyhow::Result<()> {
        let Some((_tmp, mut cfg)) = setup() else {
            return Ok(());
        };
        cfg.sweep_threads = vec![1, 2, 4, 8, 16, 32, 64];
        let mut lab = new_lab();
        let cancel = CancellationToken::new();
        let (dir, _) = compare_with(&mut lab, &cfg, &cancel, &Progress::quiet()).await?;
        // capacity 1000 at 100 ops/s per thread → saturates at 10 threads → knee 16.
        assert_eq!(
            dir.read_sweep("single").and_then(|s| s.knee_threads),
            Some(16)
        );
        assert_eq!(
            dir.read_sweep("microshard-2").and_then(|s| s.knee_threads),
            Some(32)
        );
        let cells = dir.cells()?;
        let s3 = cells
            .iter()
            .find(|c| c.cell.topology == "microshard-2" && c.cell.scenario == "S3");
        assert_eq!(s3.map(|c| c.summary.threads), Some(32));
        assert!(dir.path().join("sweep-single.svg").is_file());
        Ok(())
    }

    #[test]
    fn database_from_uri() {
        assert_eq!(
            database_of("mongodb://h:1/ycsb?w=1").as_deref(),
            Some("ycsb")
        );
        assert_eq!(database_of("mongodb://h:1/"), None);
        assert_eq!(database_of("mongodb://h:1"), None);
    }

    #[test]
    fn bad_baseline_is_bad_input() {
        let Some((_tmp, mut cfg)) = setup() else {
            return;
        };
        cfg.baseline = Some("nope".into());
        let e = prepare(&cfg).err();
        assert!(e.is_some_and(|e| crate::error::is_bad_input(&e)));
    }
}
