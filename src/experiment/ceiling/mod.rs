//! `ceiling`: the highest rate a topology sustains for one scenario while its **intended**
//! latency stays within a bound (README, "Glossary": ceiling, bound; `docs/ceiling.md`).
//! Open-loop steps (`target`) after a short closed-loop probe: climb geometrically, halve below a
//! failure, bisect between the highest passing and the lowest failing rate to `--precision`,
//! each step longer than the last once the bracket has closed. A step passes when it achieved
//! ≥ 95 % of the offered rate, every bound held on intended latency (coordinated omission
//! corrected, planned but unsent operations included), its result is not invalid, errors stayed
//! under `microshard.maxerrorrate` and the server did not stall. A failure is tried again before
//! it counts. Threads follow the latency measured (Little's law), more when every thread was
//! busy; the client is named as the limit only on measured evidence. Every step starts from the
//! same data (the keys a step inserted are deleted after it), warms up first, and is kept in the
//! run directory (`ceiling.json`, `steps/`); `--repeat N` repeats the whole search.

mod driver;
pub(crate) mod search;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::flags::{SearchFlags, ServerFlags, WorkloadFlags};
use super::lab::{Lab, Session};
use super::results::{ExperimentDir, write_json_atomic};
use super::scenario::OneWorkload;
use super::sweep::{SweepTarget, reach_target};
pub(crate) use crate::experiment::slo::{Bound, SearchSpec};
use crate::runner::Phase;
pub(crate) use driver::{SearchOn, find};
use search::{Rule, Tally, micros, thousands};

/// The schema of `ceiling.json`.
pub(crate) const CEILING_SCHEMA: &str = "microshard-ceiling/2";

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
    /// `--bin-dir` made absolute. Each bad flag is one line naming
    /// it (exit status 2); nothing is created.
    pub(crate) fn checked(mut self) -> anyhow::Result<CeilingCommand> {
        self.target = SweepTarget::given("ceiling", self.topology.take(), self.uri.take())?;
        self.servers = self.servers.checked()?;
        self.spec = self.search.spec(self.workload_flags.full)?;
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
    /// A trial of a rate the search tried.
    Search,
    /// The rate found, measured again (searches before trials replaced confirmations).
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
    /// Client threads (each with its own connection of the search's one pool).
    pub threads: u32,
    /// Seconds measured (steps lengthen as the bracket narrows).
    #[serde(default)]
    pub step_s: f64,
    /// Operations measured.
    #[serde(default)]
    pub operations: u64,
    /// Intended latency percentiles (µs): p50, p99, p99.9.
    pub intended_us: [u64; 3],
    /// The intended latency at each bound's quantile (µs), in the bounds' order.
    pub at_bounds_us: Vec<u64>,
    /// The actual (service) latency at each bound's quantile (µs): where it is far below the
    /// intended one, the queue was in the client.
    #[serde(default)]
    pub actual_at_bounds_us: Vec<u64>,
    /// Mean actual latency (µs).
    #[serde(default)]
    pub actual_mean_us: f64,
    /// How far the client fell behind its schedule.
    #[serde(default)]
    pub schedule: crate::measure::Schedule,
    /// Cores the client used over the step.
    #[serde(default)]
    pub client_cores: f64,
    /// Cores the servers on this machine used over the step; `None` where none was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cores: Option<f64>,
    /// The step's result verdict (`valid`, `degraded`, `invalid`).
    pub verdict: String,
    /// Why the verdict is degraded or invalid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdict_reasons: Vec<String>,
    /// Why the step did not sustain its rate; `None` when it did (or for the probe).
    pub failed: Option<String>,
    /// The rule it broke.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Rule>,
    /// Whether it counts as a trial of its rate: a step whose threads were all busy is run
    /// again with more, not counted.
    #[serde(default = "yes")]
    pub counted: bool,
}

fn yes() -> bool {
    true
}

fn first_repeat() -> u32 {
    1
}

/// The two rates a search ended between: the highest that passed and the lowest that failed,
/// each with its trials.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Bracket {
    /// The highest offered rate that passed (ops/s).
    pub passed: f64,
    /// Its trials.
    pub passed_tally: Tally,
    /// The lowest offered rate that failed (ops/s); `None` when none failed within the steps.
    pub failed: Option<f64>,
    /// Its trials.
    pub failed_tally: Option<Tally>,
}

impl Bracket {
    /// `1,530 passed (2 of 3 passed) – 1,600 failed (0 of 2 passed)`.
    pub(crate) fn words(&self) -> String {
        let fail = match (self.failed, &self.failed_tally) {
            (Some(f), Some(t)) => format!("{} failed ({})", thousands(f), t.words()),
            _ => "no rate above it failed".into(),
        };
        format!(
            "{} passed ({}) – {fail}",
            thousands(self.passed),
            self.passed_tally.words()
        )
    }
}

/// How the search ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// The ceiling: the highest rate that passed below every failure.
    Found {
        /// Mean achieved rate over its passing trials (ops/s).
        ceiling: f64,
        /// Lowest and highest of those trials.
        low: f64,
        high: f64,
        /// Intended latency at each bound there (µs, the worst passing trial).
        #[serde(default)]
        at_bounds_us: Vec<u64>,
        /// Client threads at it.
        threads: u32,
        /// Why the lowest failing rate failed.
        next_failure: Option<String>,
        /// The rates it ended between.
        #[serde(default)]
        bracket: Option<Bracket>,
        /// What a reader must know before quoting it (a stall, noise).
        #[serde(default)]
        caveats: Vec<String>,
    },
    /// Not even the lowest rate tried met the bound.
    NoRateMetBound {
        /// The lowest rate tried (ops/s).
        lowest: f64,
        /// Why it failed.
        why: String,
    },
    /// The client, measured, was the limit: the server's ceiling lies above what it could offer.
    ClientLimited {
        /// The rate it could not offer.
        rate: f64,
        /// The highest achieved rate that passed before it (a lower bound of the ceiling).
        lower_bound: Option<f64>,
        /// What limited the client, with the measured shortfall.
        why: String,
    },
    /// Ctrl-C: the steps so far are kept.
    Interrupted {
        /// The highest rate that passed (a lower bound of the ceiling).
        lower_bound: Option<f64>,
    },
}

impl Outcome {
    /// What the search established about the ceiling, as a lower and an upper bound (ops/s):
    /// the achieved rate that passed and the offered rate that failed (`None`: unbounded).
    pub(crate) fn bounds(&self) -> Option<(f64, Option<f64>)> {
        match self {
            Outcome::Found {
                ceiling, bracket, ..
            } => Some((*ceiling, bracket.as_ref().and_then(|b| b.failed))),
            Outcome::ClientLimited {
                lower_bound: Some(l),
                ..
            } => Some((*l, None)),
            _ => None,
        }
    }

    /// The word a table gives the outcome: a search that ran is never "not run".
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Outcome::Found { .. } => "found",
            Outcome::NoRateMetBound { .. } => "no ceiling",
            Outcome::ClientLimited { .. } => "client-limited",
            Outcome::Interrupted { .. } => "interrupted",
        }
    }
}

/// `ceiling.json`: the request, every step and how the search ended.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CeilingRecord {
    /// [`CEILING_SCHEMA`].
    pub schema: String,
    /// When the search started (RFC 3339).
    pub created: String,
    /// The workload's name.
    pub workload: String,
    /// The topology's name or the redacted URI.
    pub topology: String,
    /// Which search of `--repeat` this is (1-based).
    #[serde(default = "first_repeat")]
    pub repeat: u32,
    /// `load` (every step inserts fresh keys) or `run` (the scenario's mix).
    #[serde(default)]
    pub phase: String,
    /// The server's address the steps used, credentials redacted.
    #[serde(default)]
    pub uri: String,
    /// The bounds; all must hold.
    pub bounds: Vec<Bound>,
    /// Seconds the first steps measured; later steps lengthen ([`Step::step_s`]).
    pub step_s: f64,
    /// `--precision` as a share.
    pub precision: f64,
    /// The workload's resolved properties (before each step's rate and threads).
    pub properties: crate::workload::Properties,
    /// The client machine.
    pub host: crate::measure::HostFacts,
    /// Measured against microshard's stand-in, not MongoDB.
    pub standin: bool,
    /// Documents the steps inserted and deleted again after each step: every step starts from
    /// the same data.
    #[serde(default)]
    pub removed: u64,
    /// Every step, in order.
    pub steps: Vec<Step>,
    /// How it ended (`None` while it runs).
    pub outcome: Option<Outcome>,
    /// The servers' CPU taken apart over the steps: what the idle topology costs and what each
    /// operation adds; `None` without three measured rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu: Option<CpuFit>,
}

/// The servers' CPU as a line through the steps' (achieved rate, server cores): its intercept,
/// the fixed cost of the topology running, and its slope, the CPU each operation adds. Dividing
/// one step's CPU by its operations would mix the two, favouring the topology measured at the
/// higher rate (`docs/ceiling.md`, "Server CPU").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct CpuFit {
    /// Cores the servers use at no load (the intercept).
    pub fixed_cores: f64,
    /// CPU µs each operation adds (the slope).
    pub per_op_us: f64,
    /// Steps the line was fitted over.
    pub steps: usize,
}

impl CpuFit {
    /// The least-squares line through `(ops/s, cores)`; `None` below three points or two rates.
    pub(crate) fn of(points: &[(f64, f64)]) -> Option<CpuFit> {
        let n = points.len() as f64;
        let (mx, my) = points
            .iter()
            .fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
        let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
        if points.len() < 3 || sxx <= 0.0 {
            return None;
        }
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let slope = sxy / sxx;
        Some(CpuFit {
            fixed_cores: my - slope * mx,
            per_op_us: slope * 1e6,
            steps: points.len(),
        })
    }

    /// `servers: 0.12 cores idle + 85 µs per operation (fitted over 9 steps)`.
    pub(crate) fn words(&self) -> String {
        format!(
            "servers: {:.2} cores idle + {:.0} µs per operation (fitted over {} steps)",
            self.fixed_cores, self.per_op_us, self.steps
        )
    }
}

impl CeilingRecord {
    /// The one-line finding: the ceiling, or why there is none.
    pub(crate) fn finding(&self) -> String {
        let bounds = Bound::all_shown(&self.bounds);
        let (w, t) = (&self.workload, &self.topology);
        match &self.outcome {
            Some(Outcome::Found {
                ceiling,
                at_bounds_us,
                threads,
                bracket,
                caveats,
                ..
            }) => {
                let at = self.at_bounds_words(at_bounds_us);
                let bracket = bracket
                    .as_ref()
                    .map(|b| format!(" (bracket: {})", b.words()))
                    .unwrap_or_default();
                let caveats: String = caveats.iter().map(|c| format!("; {c}")).collect();
                format!(
                    "ceiling: {t} sustains {} {w} ops/s at {bounds}{bracket}: intended {at} there, {threads} threads{caveats}",
                    thousands(*ceiling),
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
                "client-limited: the client could not offer {} ops/s ({why}){}",
                thousands(*rate),
                lower_bound
                    .map(|l| format!(
                        "; {t} sustained {} ops/s at {bounds}, a lower bound of its ceiling",
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

    /// `p99 9.3 ms, p99.9 21.0 ms`: the intended latency at each bound's quantile.
    fn at_bounds_words(&self, at: &[u64]) -> String {
        let parts: Vec<String> = (self.bounds.iter().zip(at))
            .map(|(b, us)| format!("{} {}", b.name, micros(*us)))
            .collect();
        parts.join(", ")
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
            repeat: 1,
            phase: "run".into(),
            bounds: spec.bounds.clone(),
            step_s: spec.step().as_secs_f64(),
            precision: spec.precision,
            properties,
            host: crate::measure::HostFacts::collect(),
            ..Default::default()
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

/// Runs `--repeat` ceiling searches of the workload [`resolve`] found, each kept in the new run
/// directory as it ends (`ceiling.json`, then `ceiling-r2.json`, …); returns the directory and
/// the records (their outcomes set).
pub(crate) async fn ceiling_with<L: Lab>(
    session: &mut Session<'_, L>,
    cfg: &CeilingCommand,
    one: OneWorkload,
) -> anyhow::Result<(ExperimentDir, Vec<CeilingRecord>)> {
    let (cancel, progress) = (session.cancel, session.progress);
    let (base, name, scale_note) = (one.base(), one.name, one.scale_note);
    let where_ = cfg.target.shown_as(cfg.topology_name.as_ref());
    let dir = ExperimentDir::create(&cfg.results_root, &format!("ceiling-{name}"))?;
    progress.line(&format!("microshard: results in {}", dir.path().display()));
    progress.line(&format!("microshard: sizes: {scale_note}"));
    let (deployment, handle) = reach_target(session, &cfg.target, &where_).await?;
    let searched = async {
        if !cfg.no_load {
            let bar = progress.phase(&format!("{where_}: load"), None);
            let m = (session.lab)
                .run(&deployment, &base, Phase::Load, cancel)
                .await?;
            bar.finish(&format!("{:.0} ops/s", m.summary.throughput));
        }
        let mut records = Vec::new();
        for repeat in 1..=cfg.repeat {
            if cancel.is_cancelled() && !records.is_empty() {
                break;
            }
            let (file, steps) = paths_of(repeat);
            let on = SearchOn {
                spec: &cfg.spec,
                base: &base,
                phase: searched_phase(&base),
                deployment: &deployment,
                steps_dir: dir.path().join(steps),
                record_path: dir.path().join(file),
                where_: &shown_repeat(&where_, repeat, cfg.repeat),
            };
            let mut record =
                CeilingRecord::new(name.clone(), where_.clone(), &cfg.spec, base.clone());
            record.repeat = repeat;
            let searched = find(session, &on, &mut record).await?;
            record.outcome = Some(searched.outcome);
            write_json_atomic(&on.record_path, &record)?;
            records.push(record);
        }
        anyhow::Ok(records)
    }
    .await;
    if let Some(h) = handle {
        let bar = progress.phase(&format!("{where_}: teardown"), None);
        let down = session.lab.down(h).await;
        bar.finish(if down.is_ok() { "down" } else { "failed" });
        down?;
    }
    Ok((dir, searched?))
}

/// Where search `repeat` of a standalone `ceiling` is kept: its record and its steps.
fn paths_of(repeat: u32) -> (String, String) {
    match repeat {
        1 => ("ceiling.json".into(), "steps".into()),
        r => (format!("ceiling-r{r}.json"), format!("steps-r{r}")),
    }
}

/// `single (search 2/3)`: the topology as the progress lines name one of several searches.
pub(crate) fn shown_repeat(where_: &str, repeat: u32, of: u32) -> String {
    match of {
        1 => where_.to_string(),
        n => format!("{where_} (search {repeat}/{n})"),
    }
}

/// How a scenario is searched: as a load when every operation of its mix is an insert (its
/// steps insert fresh keys, as YCSB's load does), else with its own mix. A read scenario is
/// never searched as a load (`docs/ceiling.md`, "What is searched").
pub(crate) fn searched_phase(props: &crate::workload::Properties) -> Phase {
    use crate::workload::prop;
    let share = |p: &crate::props::prop::Prop<f64>| props.value(p).unwrap_or(0.0);
    let others = [
        &prop::READPROPORTION,
        &prop::UPDATEPROPORTION,
        &prop::SCANPROPORTION,
        &prop::READMODIFYWRITEPROPORTION,
    ];
    match share(&prop::INSERTPROPORTION) > 0.0 && others.iter().all(|p| share(p) == 0.0) {
        true => Phase::Load,
        false => Phase::Run,
    }
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
