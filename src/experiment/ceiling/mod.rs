//! `ceiling`: the highest rate a topology sustains for one scenario while its **intended**
//! latency stays within a bound (README, "Glossary": ceiling, bound). Open-loop steps (`target`)
//! after a short closed-loop saturation probe: climb geometrically, bisect between the last
//! passing and the first failing rate to `--precision`, then confirm the rate found. A step
//! passes when it achieved ≥ 95 % of the offered rate, every bound held on intended latency
//! (coordinated omission corrected), its result is not invalid, errors stayed under
//! `microshard.maxerrorrate` and the server did not stall. When the client cannot be given
//! enough threads for a rate, the search stops there and says so: never a server ceiling that
//! is the client's. Every step is kept in the run directory (`ceiling.json`, `steps/`).

mod driver;
pub(crate) mod search;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::flags::{SearchFlags, ServerFlags, WorkloadFlags};
use super::lab::Lab;
use super::progress::Progress;
use super::results::{ExperimentDir, write_json_atomic};
use super::scenario::OneWorkload;
use super::sweep::{SweepTarget, reach_target};
pub(crate) use crate::experiment::slo::{Bound, SearchSpec};
use crate::runner::Phase;
pub(crate) use driver::{SearchOn, find};
use search::{micros, thousands};

/// The schema of `ceiling.json`.
pub(crate) const CEILING_SCHEMA: &str = "microshard-ceiling/1";

/// What `ceiling` is asked to do: the one record of the command. clap parses it,
/// [`CeilingCommand::checked`] settles it (creating nothing) and the search runs from it.
#[derive(Debug, Clone, clap::Args)]
#[command(
    mut_arg("backend", |a| a.help("Backend for `--topology`: process, docker or existing")),
    mut_arg("overrides", |a| a.help("Set a workload property (repeatable)")),
    mut_arg("warmup", |a| a.help("Leave the first DURATION of every step out of its measurement (`microshard.warmup`)")),
    mut_arg("clients", |a| a.help("Drive every step with N client processes (`threadcount` split across them)")),
    mut_arg("full", |a| a.help("Use the file's record count instead of the laptop scale")),
)]
pub(crate) struct CeilingCommand {
    /// Workload file (or a name in `workloads/`).
    #[arg(short = 'P', value_name = "FILE")]
    pub workload: String,
    /// Bring this topology up for the search and tear it down after.
    #[arg(long, conflicts_with = "uri")]
    pub topology: Option<String>,
    /// Search against a server that already runs.
    #[arg(long)]
    pub uri: Option<String>,
    /// `--topology` or `--uri`, settled.
    #[arg(skip = SweepTarget::Topology(String::new()))]
    pub target: SweepTarget,
    /// How the search steps.
    #[command(flatten)]
    pub search: SearchFlags,
    /// `search` settled: how the search steps and judges.
    #[arg(skip)]
    pub spec: SearchSpec,
    /// Where the servers come from.
    #[command(flatten)]
    pub servers: ServerFlags,
    /// What every step runs with.
    #[command(flatten)]
    pub workload_flags: WorkloadFlags,
    /// Confirmations of the rate found (its spread).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// Do not load: the data is already there.
    #[arg(long)]
    pub no_load: bool,
    /// Where the run directory is created.
    #[arg(long = "out", value_name = "OUT", default_value = "results")]
    pub results_root: PathBuf,
    /// The name the topology is shown by, decided when it loaded ([`SweepTarget::shown_as`]).
    #[arg(skip)]
    pub topology_name: Option<String>,
}

impl CeilingCommand {
    /// The record the flags ask for, settled: the target named, `--slo` and the steps parsed,
    /// `--warmup` folded into `-p`, `--bin-dir` made absolute. Each bad flag is one line naming
    /// it (exit status 2); nothing is created.
    pub(crate) fn checked(mut self) -> anyhow::Result<CeilingCommand> {
        self.target = SweepTarget::given("ceiling", self.topology.take(), self.uri.take())?;
        self.servers = self.servers.checked()?;
        self.spec = self.search.spec()?;
        self.workload_flags = self.workload_flags.checked();
        Ok(self)
    }
}

/// What a step was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StepKind {
    /// Closed loop at the scenario's threads: where the search starts.
    Probe,
    /// A rate the search tried.
    Search,
    /// The rate found, measured again.
    Confirm,
}

/// One step, as kept in `ceiling.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Step {
    /// What it was for.
    pub kind: StepKind,
    /// Offered rate (ops/s); `None` for the closed-loop probe.
    pub offered: Option<f64>,
    /// Achieved rate (ops/s).
    pub achieved: f64,
    /// Client threads.
    pub threads: u32,
    /// Intended latency percentiles (µs): p50, p99, p99.9.
    pub intended_us: [u64; 3],
    /// The intended latency at each bound's quantile (µs), in the bounds' order.
    pub at_bounds_us: Vec<u64>,
    /// The step's result verdict (`valid`, `degraded`, `invalid`).
    pub verdict: String,
    /// Why the step did not sustain its rate; `None` when it did (or for the probe).
    pub failed: Option<String>,
}

/// How the search ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// The ceiling: the rate that passed, with its confirmations' achieved rates.
    Found {
        /// Mean achieved rate over the confirmations (ops/s).
        ceiling: f64,
        /// Lowest and highest confirmation.
        low: f64,
        high: f64,
        /// Intended p99 at it (µs, the worst confirmation).
        p99_us: u64,
        /// Client threads at it.
        threads: u32,
        /// Why the lowest failing rate failed.
        next_failure: Option<String>,
    },
    /// Not even the lowest rate tried met the bound.
    NoRateMetBound {
        /// The lowest rate tried (ops/s).
        lowest: f64,
        /// Why it failed.
        why: String,
    },
    /// The client could not offer a rate: no server ceiling was measured past it.
    ClientLimited {
        /// The rate it could not offer.
        rate: f64,
        /// The highest rate that passed before it (a lower bound of the ceiling).
        lower_bound: Option<f64>,
        /// What limited the client.
        why: String,
    },
    /// Ctrl-C: the steps so far are kept.
    Interrupted {
        /// The highest rate that passed (a lower bound of the ceiling).
        lower_bound: Option<f64>,
    },
}

/// `ceiling.json`: the request, every step and how the search ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CeilingRecord {
    /// [`CEILING_SCHEMA`].
    pub schema: String,
    /// When the search started (RFC 3339).
    pub created: String,
    /// The workload's name.
    pub workload: String,
    /// The topology's name or the redacted URI.
    pub topology: String,
    /// The bounds; all must hold.
    pub bounds: Vec<Bound>,
    /// Seconds each step measured.
    pub step_s: f64,
    /// `--precision` as a share.
    pub precision: f64,
    /// The workload's resolved properties (before each step's rate and threads).
    pub properties: crate::workload::Properties,
    /// The client machine.
    pub host: crate::measure::HostFacts,
    /// Measured against microshard's stand-in, not MongoDB.
    pub standin: bool,
    /// Keys the steps inserted after the data (a load's steps insert fresh keys; a run's
    /// inserts count too): later steps and scenarios see them as records.
    #[serde(default)]
    pub inserted: u64,
    /// Every step, in order.
    pub steps: Vec<Step>,
    /// How it ended (`None` while it runs).
    pub outcome: Option<Outcome>,
}

impl CeilingRecord {
    /// The one-line finding: the ceiling, or why there is none.
    pub(crate) fn finding(&self) -> String {
        let bounds: Vec<String> = self.bounds.iter().map(Bound::shown).collect();
        let bounds = bounds.join(", ");
        let (w, t) = (&self.workload, &self.topology);
        match &self.outcome {
            Some(Outcome::Found {
                ceiling,
                low,
                high,
                p99_us,
                threads,
                next_failure,
            }) => {
                let spread = match (self.repeat(), low < high) {
                    (n, true) if n > 1 => format!(
                        " ({} – {} over {n} confirmations)",
                        thousands(*low),
                        thousands(*high)
                    ),
                    _ => String::new(),
                };
                let next = next_failure
                    .as_ref()
                    .map(|f| format!("; the next step failed: {f}"))
                    .unwrap_or_default();
                format!(
                    "ceiling: {t} sustains {} {w} ops/s at {bounds}{spread}: intended p99 {} there, {threads} threads{next}",
                    thousands(*ceiling),
                    micros(*p99_us)
                )
            }
            Some(Outcome::NoRateMetBound { lowest, why }) => format!(
                "no ceiling: no rate met {bounds} on {t}; the lowest tried, {} ops/s, failed: {why}",
                thousands(*lowest)
            ),
            Some(Outcome::ClientLimited {
                rate,
                lower_bound,
                why,
            }) => format!(
                "no server ceiling measured: the client could not offer {} ops/s ({why}){}",
                thousands(*rate),
                lower_bound
                    .map(|l| format!(
                        "; {t} sustained {} ops/s at {bounds}, a lower bound",
                        thousands(l)
                    ))
                    .unwrap_or_default()
            ),
            Some(Outcome::Interrupted { lower_bound }) => format!(
                "interrupted: the search did not finish{}",
                lower_bound
                    .map(|l| format!("; {t} sustained {} ops/s at {bounds} so far", thousands(l)))
                    .unwrap_or_default()
            ),
            None => "the search has not ended".into(),
        }
    }

    fn repeat(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.kind == StepKind::Confirm)
            .count()
    }

    /// The record of a search about to start.
    pub(crate) fn new(
        workload: String,
        topology: String,
        spec: &SearchSpec,
        properties: crate::workload::Properties,
    ) -> CeilingRecord {
        CeilingRecord {
            schema: CEILING_SCHEMA.into(),
            created: chrono::Utc::now().to_rfc3339(),
            workload,
            topology,
            bounds: spec.bounds.clone(),
            step_s: spec.step().as_secs_f64(),
            precision: spec.precision,
            properties,
            host: crate::measure::HostFacts::collect(),
            standin: false,
            inserted: 0,
            steps: Vec::new(),
            outcome: None,
        }
    }
}

/// The workload at the chosen scale, with `-p` applied; bad input names the flag.
pub(crate) fn resolve(cfg: &CeilingCommand) -> anyhow::Result<OneWorkload> {
    cfg.workload_flags.one_workload(
        &cfg.workload,
        "a ceiling search, whose steps would each overwrite the last one's files",
    )
}

/// Runs a ceiling search of the workload [`resolve`] found and keeps it in a new run
/// directory; returns the directory and the record (its outcome set).
pub(crate) async fn ceiling_with<L: Lab>(
    lab: &mut L,
    cfg: &CeilingCommand,
    one: OneWorkload,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<(ExperimentDir, CeilingRecord)> {
    let (base, name, scale_note) = (one.base(), one.name, one.scale_note);
    let where_ = cfg.target.shown_as(cfg.topology_name.as_ref());
    let dir = ExperimentDir::create(&cfg.results_root, &format!("ceiling-{name}"))?;
    let mut record = CeilingRecord::new(name, where_.clone(), &cfg.spec, base.clone());
    write_json_atomic(&dir.path().join("ceiling.json"), &record)?;
    progress.line(&format!("microshard: results in {}", dir.path().display()));
    progress.line(&format!("microshard: sizes: {scale_note}"));
    let (deployment, handle) = reach_target(lab, &cfg.target, &where_, cancel, progress).await?;
    let on = SearchOn {
        spec: &cfg.spec,
        repeat: cfg.repeat,
        base: &base,
        phase: Phase::Run,
        deployment: &deployment,
        steps_dir: dir.path().join("steps"),
        record_path: dir.path().join("ceiling.json"),
        where_: &where_,
    };
    // The data is loaded first, unless `--no-load`.
    let searched = async {
        if !cfg.no_load {
            let bar = progress.phase(&format!("{where_}: load"), None);
            let m = lab.run(&deployment, &base, Phase::Load, cancel).await?;
            bar.finish(&format!("{:.0} ops/s", m.summary.throughput));
        }
        find(lab, &on, &mut record, cancel, progress).await
    }
    .await;
    if let Some(h) = handle {
        let bar = progress.phase(&format!("{where_}: teardown"), None);
        let down = lab.down(h).await;
        bar.finish(if down.is_ok() { "down" } else { "failed" });
        down?;
    }
    record.outcome = Some(searched?.outcome);
    write_json_atomic(&on.record_path, &record)?;
    Ok((dir, record))
}

/// Every ceiling search a `compare --ceiling` kept in `dir` that parses, by topology then
/// scenario (`docs/result-schema.md`, "Ceilings in a compare").
pub(crate) fn stored(dir: &ExperimentDir) -> Vec<CeilingRecord> {
    let root = dir.path().join(super::results::CEILINGS_DIR);
    let files = super::results::json_files_by_topology(&root);
    files
        .iter()
        .filter_map(|f| super::results::read_json(f).ok())
        .collect()
}
