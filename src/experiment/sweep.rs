//! `sweep`: load once, run the workload at each thread count on the same data, and find the
//! maximum and the knee (seed 001's throughput-by-threads table, automated).

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::compare::{sweep_points, write_reports};
use super::host::Host;
use super::lab::{Deployment, Lab};
use super::metrics::Watched;
use super::model::{CONFIG_SCHEMA, ExperimentConfig, SweepFile};
use super::progress::Progress;
use super::results::ExperimentDir;
use super::scenario::{self, Scaling};
use crate::error::bad_input;
use crate::runner::Phase;

/// Default thread counts (powers of two, as far as seed 001 went and beyond).
pub const DEFAULT_THREADS: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

/// What to sweep against.
#[derive(Debug, Clone)]
pub enum SweepTarget {
    /// Bring this topology up, sweep, tear it down.
    Topology(String),
    /// A server that already runs.
    Uri(String),
}

/// Everything `sweep` is asked to do.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// Workload file (`-P`).
    pub workload: String,
    /// Thread counts, ascending.
    pub threads: Vec<u32>,
    /// Where to run.
    pub target: SweepTarget,
    /// Seconds per thread count.
    pub duration: Duration,
    /// `-p` overrides.
    pub overrides: Vec<String>,
    /// Use the file's record count instead of the laptop scale.
    pub full: bool,
    /// Records at laptop scale.
    pub records: u64,
    /// Skip the load (the data is already there).
    pub no_load: bool,
    /// Where the run directory is created.
    pub results_root: PathBuf,
    /// Backend, for the configuration record.
    pub backend: String,
}

/// Runs a sweep and stores it (configuration, sweep file, chart) in a new run directory.
pub async fn sweep_with<L: Lab>(
    lab: &mut L,
    cfg: &SweepConfig,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<(ExperimentDir, SweepFile)> {
    if cfg.threads.is_empty() || cfg.threads.contains(&0) {
        return Err(bad_input(
            "--threads: give positive thread counts, e.g. 1,2,4,8",
        ));
    }
    let path = scenario::locate(&cfg.workload, None)
        .map_err(|e| bad_input(format!("-P {}: {e}", cfg.workload)))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| cfg.workload.clone());
    let overrides = scenario::parse_overrides(&cfg.overrides)?;
    let scaling = Scaling {
        full: cfg.full,
        records: cfg.records,
        duration_s: None,
        threads: None,
    };
    let (props, scale_note) = scenario::resolve(&[(name.clone(), path)], &scaling, &overrides)?;
    let base = props.get(&name).cloned().unwrap_or_default();
    let where_ = match &cfg.target {
        SweepTarget::Topology(t) => t.clone(),
        SweepTarget::Uri(u) => crate::redact::redact_uri(u),
    };
    let label = format!("{name} on {where_}");
    let config = ExperimentConfig {
        schema: CONFIG_SCHEMA.into(),
        name: format!("sweep-{name}"),
        created: chrono::Utc::now().to_rfc3339(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        topologies: vec![where_.clone()],
        baseline: where_.clone(),
        scenarios: vec![name.clone()],
        repeat: 1,
        backend: cfg.backend.clone(),
        bin_dir: None,
        extra_mongod_args: Vec::new(),
        image: None,
        duration_s: Some(cfg.duration.as_secs().max(1)),
        threads: None,
        sweep: true,
        sweep_threads: cfg.threads.clone(),
        sweep_duration_s: Some(cfg.duration.as_secs().max(1)),
        full: cfg.full,
        scale_note,
        properties: props.clone(),
        host: serde_json::to_value(Host::collect()).unwrap_or(serde_json::Value::Null),
        server_versions: Default::default(),
        standin: false,
        degraded_error_fraction: 0.01,
        client_ceiling: None,
        live_server_status: false,
    };
    let dir = ExperimentDir::create(&cfg.results_root, &config.name)?;
    dir.write_config(&config)?;
    progress.line(&format!("microshard: results in {}", dir.path().display()));
    progress.line(&format!("microshard: sizes: {}", config.scale_note));

    let (deployment, handle) = match &cfg.target {
        SweepTarget::Topology(t) => {
            let bar = progress.phase(&format!("{t}: bring-up"), None);
            let (d, h) = lab.up(t, cancel).await?;
            bar.finish("up");
            (d, Some(h))
        }
        SweepTarget::Uri(u) => (
            Deployment {
                topology: where_.clone(),
                entry_uri: u.clone(),
                watched: vec![Watched {
                    name: "entry".into(),
                    role: "entry".into(),
                    uri: u.clone(),
                }],
                members: Vec::new(),
                plan: None,
                server_versions: Default::default(),
            },
            None,
        ),
    };
    let body = async {
        if !cfg.no_load {
            let bar = progress.phase(&format!("{where_}: load"), None);
            let m = lab.run(&deployment, &base, Phase::Load, cancel).await?;
            bar.finish(&format!("{:.0} ops/s", m.summary.throughput));
        }
        let secs = cfg.duration.as_secs().max(1);
        sweep_points(
            lab,
            &deployment,
            &base,
            &cfg.threads,
            secs,
            &label,
            cancel,
            progress,
        )
        .await
    };
    let result = body.await;
    if let Some(h) = handle {
        let bar = progress.phase(&format!("{where_}: teardown"), None);
        let down = lab.down(h).await;
        bar.finish(if down.is_ok() { "down" } else { "failed" });
        down?;
    }
    let sweep = result?;
    dir.write_sweep(&sweep_label(&where_), &sweep)?;
    if sweep.standin {
        let mut c = config;
        c.standin = true;
        dir.write_config(&c)?;
    }
    write_reports(&dir)?;
    if cancel.is_cancelled() {
        anyhow::bail!(
            "interrupted after {} of {} thread counts; partial sweep stored in {}",
            sweep.points.len(),
            cfg.threads.len(),
            dir.path().display()
        );
    }
    Ok((dir, sweep))
}

fn sweep_label(where_: &str) -> String {
    where_
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A sweep as a terminal table: threads, throughput, latency, and the maximum and knee marked.
pub fn render_sweep(sweep: &SweepFile) -> String {
    let mut b = tabled::builder::Builder::new();
    b.push_record([
        "threads", "ops/s", "op", "avg µs", "p95 µs", "p99 µs", "errors", "",
    ]);
    for p in &sweep.points {
        let mut mark = Vec::new();
        if Some(p.threads) == sweep.max_threads {
            mark.push("max");
        }
        if Some(p.threads) == sweep.knee_threads {
            mark.push("knee");
        }
        let s = &p.summary;
        b.push_record([
            p.threads.to_string(),
            format!("{:.0}", s.throughput),
            s.main_op.clone(),
            format!("{:.0}", s.latency.avg),
            format!("{:.0}", s.latency.p95),
            format!("{:.0}", s.latency.p99),
            s.errors.to_string(),
            mark.join(", "),
        ]);
    }
    let mut t = b.build();
    t.with(tabled::settings::Style::rounded());
    let mut out = String::new();
    if sweep.standin {
        out.push_str(crate::report::STANDIN_MARKER);
        out.push('\n');
    }
    out.push_str(&format!("Thread sweep: {}\n{t}\n", sweep.label));
    match (sweep.max_threads, sweep.knee_threads) {
        (Some(m), Some(k)) => out.push_str(&format!(
            "Maximum at {m} threads; knee (smallest count within {:.0}% of the maximum) at {k} threads.\n",
            sweep.tolerance * 100.0
        )),
        _ => out.push_str("No usable points: no maximum or knee.\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::lab::Measured;
    use crate::experiment::model::CellSummary;
    use crate::experiment::scenario::PropertyMap;

    /// Throughput grows 100 ops/s per thread up to a ceiling, then falls off slowly.
    struct Curve {
        loads: usize,
        downs: usize,
    }

    impl Lab for Curve {
        type Handle = ();
        async fn up(
            &mut self,
            t: &str,
            _c: &CancellationToken,
        ) -> anyhow::Result<(Deployment, ())> {
            Ok((
                Deployment {
                    topology: t.into(),
                    entry_uri: String::new(),
                    watched: vec![],
                    members: vec![],
                    plan: None,
                    server_versions: Default::default(),
                },
                (),
            ))
        }
        async fn run(
            &mut self,
            _d: &Deployment,
            props: &PropertyMap,
            phase: Phase,
            _c: &CancellationToken,
        ) -> anyhow::Result<Measured> {
            if phase == Phase::Load {
                self.loads += 1;
            }
            let n: f64 = props
                .get("threadcount")
                .and_then(|t| t.parse().ok())
                .unwrap_or(1.0);
            let tp = if n <= 12.0 {
                n * 100.0
            } else {
                1200.0 - (n - 12.0) * 2.0
            };
            Ok(Measured {
                summary: CellSummary {
                    throughput: tp,
                    ..Default::default()
                },
                document: crate::report::tests::document("READ", 1),
            })
        }
        async fn down(&mut self, _h: ()) -> anyhow::Result<()> {
            self.downs += 1;
            Ok(())
        }
        fn collects_server_metrics(&self) -> bool {
            false
        }
    }

    #[tokio::test]
    async fn loads_once_and_finds_knee() -> anyhow::Result<()> {
        let tmp = tempfile::tempdir()?;
        let wl = tmp.path().join("W");
        std::fs::write(&wl, "recordcount=10\n")?;
        let cfg = SweepConfig {
            workload: wl.display().to_string(),
            threads: DEFAULT_THREADS.to_vec(),
            target: SweepTarget::Topology("single".into()),
            duration: Duration::from_secs(1),
            overrides: vec![],
            full: false,
            records: 10,
            no_load: false,
            results_root: tmp.path().join("results"),
            backend: "process".into(),
        };
        let mut lab = Curve { loads: 0, downs: 0 };
        let cancel = CancellationToken::new();
        let (dir, sweep) = sweep_with(&mut lab, &cfg, &cancel, &Progress::quiet()).await?;
        assert_eq!((lab.loads, lab.downs), (1, 1));
        assert_eq!(sweep.points.len(), 8);
        assert_eq!(sweep.max_threads, Some(16));
        assert_eq!(sweep.knee_threads, Some(16));
        let text = render_sweep(&sweep);
        assert!(text.contains("max, knee"), "{text}");
        assert!(dir.path().join("sweep-single.svg").is_file());
        Ok(())
    }
}
