//! What an experiment stores: its configuration, one file per cell, thread sweeps.
//!
//! These are the on-disk shapes `report`, `diff` and `--resume` read back, so they only grow
//! (new fields carry `#[serde(default)]`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::flags::{ServerFlags, WorkloadFlags};
use super::metrics::ServerMetrics;
use crate::props::flag_values::{list_item, parse_threads, parse_whole_seconds};

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

/// Seconds each `compare --sweep` point runs unless `--sweep-duration` says otherwise.
pub(crate) const DEFAULT_SWEEP_POINT_S: u64 = 10;

/// `compare`'s default topologies, the first the baseline (`compare`, `demo`).
pub(crate) const DEFAULT_TOPOLOGIES: &str = "single,microshard-2,microshard-4";
/// `compare`'s default scenarios, the first the load phase (`compare`, `demo`).
pub(crate) const DEFAULT_SCENARIOS: &str = "S1,S2,S3,S4,S5";
/// The thread counts a sweep tries unless told (`compare --sweep-threads`, `sweep --threads`).
pub(crate) const DEFAULT_SWEEP_THREADS: &str = "1,2,4,8,16,32,64,128";

/// What `compare` (and `demo`) is asked to do: the one record of the command, like latte's
/// `RunCommand`. clap parses it, [`CompareCommand::checked`] settles what the flags imply
/// (creating nothing), it is stored in `experiment.json` (flattened into [`ExperimentConfig`],
/// so the file keeps its layout), and `--resume` reads it back as its only source
/// (`docs/result-schema.md`). Fields marked `serde(skip)` are the command line's only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct CompareCommand {
    /// Topologies (names in `topologies/` or TOML files), comma-separated; the first is the baseline.
    #[arg(long, value_delimiter = ',', value_parser = list_item, default_value = DEFAULT_TOPOLOGIES)]
    pub topologies: Vec<String>,
    /// Scenarios (names in `workloads/` or files), comma-separated; the first is the load phase.
    #[arg(long, value_delimiter = ',', value_parser = list_item, default_value = DEFAULT_SCENARIOS)]
    pub scenarios: Vec<String>,
    /// Where the servers come from.
    #[command(flatten)]
    #[serde(flatten)]
    pub servers: ServerFlags,
    /// Docker image for every member, instead of each topology's (e.g. microshard-standin:test);
    /// `--resume` reuses the experiment's unless given again.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Bound of each run-phase cell (`maxexecutiontime`).
    #[arg(long = "duration", value_name = "DURATION", default_value = "60s", value_parser = parse_whole_seconds)]
    #[serde(default)]
    pub duration_s: Option<u64>,
    /// What every cell runs with.
    #[command(flatten)]
    #[serde(flatten)]
    pub workload: WorkloadFlags,
    /// Measure every cell N times (spread and significance need 2 or more); with --vary, also
    /// the sweep curves per value.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Client threads for every cell (default: each scenario file's threadcount).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    #[serde(default)]
    pub threads: Option<u32>,
    /// Topology every other one is compared with (default: the first).
    #[arg(long, default_value_t = String::new(), hide_default_value = true)]
    pub baseline: String,
    /// Sweep thread counts on each topology first and measure at its knee.
    #[arg(long)]
    #[serde(default)]
    pub sweep: bool,
    /// Thread counts for `--sweep`.
    #[arg(long, default_value = DEFAULT_SWEEP_THREADS, value_parser = parse_threads)]
    #[serde(default)]
    pub sweep_threads: ::std::vec::Vec<u32>,
    /// Length of each sweep point.
    #[arg(long = "sweep-duration", value_name = "SWEEP_DURATION", default_value = "10s", value_parser = parse_whole_seconds)]
    #[serde(default)]
    pub sweep_duration_s: Option<u64>,
    /// With --sweep: one sweep curve per value of a property on every topology, --repeat times
    /// each (e.g. `readbatchsize=1,10,20`); prints and writes one seed-2 table and chart per
    /// topology (`vary-TOPOLOGY.*`); the cells run at the knee of the first value's curve.
    #[arg(long = "vary", value_name = "PROPERTY=V1,V2,...", requires = "sweep", value_parser = Vary::parse)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vary: Option<Vary>,
    /// Experiment name (the run directory's suffix).
    #[arg(long, default_value = "compare")]
    pub name: String,
    /// Print every server's ops/s while cells run (like mongostat beside YCSB).
    #[arg(short = 's', long = "status")]
    #[serde(default)]
    pub live_server_status: bool,
    /// `--ceiling --slo …`: every cell is a ceiling search, each repetition a whole search
    /// (`docs/ceiling.md`).
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<super::slo::SearchSpec>,
    /// The name each topology is shown by and its cells are filed under (as given → name),
    /// decided when the servers check loaded it (`checked::Record::name_topologies`); never read
    /// from the file again, so a renamed or deleted file changes nothing.
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub topology_names: BTreeMap<String, String>,
}

impl Default for CompareCommand {
    /// `microshard compare` with no flags: S1–S5 on three topologies, 60 s cells, laptop scale.
    fn default() -> CompareCommand {
        use clap::FromArgMatches;
        let matches = <CompareCommand as clap::Args>::augment_args(clap::Command::new("compare"))
            .get_matches_from(["compare"]);
        let parsed = CompareCommand::from_arg_matches(&matches)
            .unwrap_or_else(|e| unreachable!("compare's defaults parse: {e}"));
        parsed
            .checked()
            .unwrap_or_else(|e| unreachable!("compare's defaults check: {e}"))
    }
}

impl CompareCommand {
    /// The record the flags ask for (its search set from `--ceiling` and `--slo`), settled: the
    /// baseline named, `--duration` dropped for a `--ceiling` search (each step's length is
    /// `--step-duration`), the sweep's thread counts only with `--sweep`, `--bin-dir` made
    /// absolute. Each bad flag is one line naming it (exit status 2); nothing is created
    /// (`--standin`'s links are made once every input is checked).
    pub(crate) fn checked(mut self) -> anyhow::Result<CompareCommand> {
        self.topologies.retain(|t| !t.is_empty());
        self.scenarios.retain(|s| !s.is_empty());
        if self.baseline.is_empty() {
            self.baseline = self.topologies.first().cloned().unwrap_or_default();
        }
        if self.ceiling.is_some() {
            self.duration_s = None;
        }
        if !self.sweep {
            self.sweep_threads.clear();
        }
        self.servers = self.servers.checked()?;
        self.workload = self.workload.checked();
        Ok(self)
    }

    /// The name `given` is shown by: the one stored when it loaded, else (an experiment
    /// recorded before names were stored) its file stem or what was given.
    pub(crate) fn topology_name(&self, given: &str) -> String {
        (self.topology_names.get(given).cloned())
            .unwrap_or_else(|| crate::topology::topology_label(given, None))
    }

    /// Seconds each `--sweep` point runs (the default when a record has none).
    pub(crate) fn sweep_point_seconds(&self) -> u64 {
        self.sweep_duration_s.unwrap_or(DEFAULT_SWEEP_POINT_S)
    }

    /// Curves a `--sweep` measures on each topology: one per `--vary` value × `--repeat`, else one.
    pub(crate) fn sweep_curves(&self) -> u64 {
        self.vary
            .as_ref()
            .map_or(1, |v| v.values.len() as u64 * u64::from(self.repeat.max(1)))
    }
}

/// Everything recorded about the experiment before the first measurement: the command as asked
/// and what was found out from it (resolved properties, the machine, the servers).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExperimentConfig {
    /// `microshard.experiment/1`.
    pub schema: String,
    /// When the experiment was created (RFC 3339, UTC).
    pub created: String,
    /// microshard's version.
    pub tool_version: String,
    /// What was asked (its fields sit at the top level of `experiment.json`).
    #[serde(flatten)]
    pub command: CompareCommand,
    /// A sentence saying which sizes were used, shown under every table.
    pub scale_note: String,
    /// The resolved properties of every scenario (after scaling and `-p`).
    pub properties: BTreeMap<String, crate::workload::Properties>,
    /// Facts about the client machine.
    #[serde(default)]
    pub host: crate::measure::HostFacts,
    /// Server versions seen per topology (filled as topologies come up).
    #[serde(default)]
    pub server_versions: BTreeMap<String, String>,
    /// True once any server answered as the stand-in: figures are not MongoDB figures.
    #[serde(default)]
    pub standin: bool,
    /// The share of failed operations above which a cell is invalid (`microshard.maxerrorrate`'s
    /// default, e.g. 0.01); any failure at all degrades it. The name is the schema's, kept.
    #[serde(default = "default_degraded")]
    pub degraded_error_fraction: f64,
    /// The client's own ceiling (ops/s) from the last `calibrate` on this machine, if any.
    #[serde(default)]
    pub client_ceiling: Option<f64>,
    /// Every invocation that measured into this directory: the first, then each `--resume`.
    #[serde(default)]
    pub sessions: Vec<Invocation>,
}

/// One invocation that measured into an experiment directory (`docs/result-schema.md`,
/// "Cells not run").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Invocation {
    /// 1 for the first invocation, one more per resume.
    pub number: u32,
    /// When it started (RFC 3339, UTC).
    pub started: String,
    /// `--resume`.
    pub resumed: bool,
    /// `--resume --remeasure invalid` (`--remeasure-invalid`).
    #[serde(default)]
    pub remeasure_invalid: bool,
    /// `--resume --remeasure degraded`: cells degraded by a busy host measured again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remeasure_degraded: bool,
}

/// What a `--resume` measures again besides the cells never finished: invalid cells, and cells
/// degraded because other work shared the host (README, "Results you can trust").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Remeasure {
    /// Invalid cells.
    pub invalid: bool,
    /// Cells degraded by a busy host.
    pub degraded: bool,
}

impl Remeasure {
    /// Whether `cell` is one of those measured again.
    pub(crate) fn takes(&self, cell: &CellFile) -> bool {
        let v = &cell.summary.validity;
        let busy = v.reasons.iter().any(|r| r.message.starts_with("busy host"));
        match v.verdict {
            crate::measure::validity::Verdict::Invalid => self.invalid,
            crate::measure::validity::Verdict::Degraded => self.degraded && busy,
            crate::measure::validity::Verdict::Valid => false,
            crate::measure::validity::Verdict::NotRun => false,
        }
    }
}

impl ExperimentConfig {
    /// A new experiment's record of `command`, made now on this machine.
    pub(crate) fn new(
        command: CompareCommand,
        scale_note: String,
        properties: BTreeMap<String, crate::workload::Properties>,
    ) -> ExperimentConfig {
        ExperimentConfig {
            schema: CONFIG_SCHEMA.into(),
            created: chrono::Utc::now().to_rfc3339(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            command,
            scale_note,
            properties,
            host: crate::measure::HostFacts::collect(),
            server_versions: BTreeMap::new(),
            standin: false,
            degraded_error_fraction: DEFAULT_DEGRADED_FRACTION,
            client_ceiling: None,
            sessions: Vec::new(),
        }
    }

    /// The session measuring now (1 before any was recorded).
    pub(crate) fn session(&self) -> u32 {
        self.sessions.last().map_or(1, |s| s.number)
    }

    /// Records a new session (the first, or a resume) and returns its number.
    pub(crate) fn begin_session(&mut self, resumed: bool, remeasure: Remeasure) -> u32 {
        let number = self.sessions.last().map_or(1, |s| s.number + 1);
        self.sessions.push(Invocation {
            number,
            started: chrono::Utc::now().to_rfc3339(),
            resumed,
            remeasure_invalid: remeasure.invalid,
            remeasure_degraded: remeasure.degraded,
        });
        number
    }
}

/// A cell that was not measured because its topology had a dead member (`not-run.json`); the
/// next `--resume` measures it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NotRun {
    /// Which cell.
    pub cell: CellId,
    /// Why, in one sentence (`not run: sh0 (localhost:41110) dead since S3 at 3.0 s`).
    pub reason: String,
    /// The session that skipped it.
    pub session: u32,
    /// The word the tables give it when it is not "not run": `no ceiling` for a ceiling search
    /// that ran and found no rate meeting the bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub word: Option<String>,
}

/// The share of failed operations above which a cell is invalid (`microshard.maxerrorrate`'s
/// default), unless the record says otherwise; below it failures degrade the cell.
pub(crate) const DEFAULT_DEGRADED_FRACTION: f64 = 0.01;

fn default_degraded() -> f64 {
    DEFAULT_DEGRADED_FRACTION
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
    /// CPU time (user + system) the server members used over the measured window, in seconds,
    /// summed over the members on this machine (process backend); `None` where no member could
    /// be measured (containers, servers elsewhere: "not reported").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_s: Option<f64>,
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
    pub(crate) fn cpu_us_per_op(&self) -> Option<f64> {
        let cpu = self.client_cpu_s?;
        (self.operations > 0).then(|| cpu * 1e6 / self.operations as f64)
    }

    /// Server CPU microseconds (every member measured, summed) spent per operation.
    pub(crate) fn server_cpu_us_per_op(&self) -> Option<f64> {
        let cpu = self.server_cpu_s?;
        (self.operations > 0).then(|| cpu * 1e6 / self.operations as f64)
    }

    /// Fraction of the client's cores kept busy during the run.
    pub(crate) fn client_cpu_utilisation(&self) -> Option<f64> {
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
    pub result: crate::measure::RunDocument,
    /// Server-side metrics around the cell, when they could be collected.
    #[serde(default)]
    pub server: Option<ServerMetrics>,
    /// Warnings found while measuring (client bottleneck, indexes beyond cache, the client and
    /// the server disagreeing, ...).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The client's operations per type against the server's counters over the cell
    /// (`docs/result-schema.md`, "Client against server"); `None` when the server's counters
    /// were not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crosscheck: Option<super::crosscheck::CrossCheck>,
    /// The topology as it was brought up: every member's command line, cache size, memory limit
    /// and cpuset (credentials redacted). `None` when the lab has no plan (tests, `--uri`).
    #[serde(default)]
    pub topology: Option<crate::topology::Plan>,
    /// `buildInfo.version` per member, as the topology reported them at bring-up.
    #[serde(default)]
    pub server_versions: BTreeMap<String, String>,
    /// Each member's image by digest, where its backend reports it (`--backend kubernetes`:
    /// the pod's `imageID`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_images: BTreeMap<String, String>,
    /// The session that measured it (1 = the first invocation; see [`Invocation`]).
    #[serde(default = "first_session")]
    pub session: u32,
    /// The deployment's default write concern (`getDefaultRWConcern`), or why it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_write_concern: Option<DefaultWriteConcernRecord>,
}

fn first_session() -> u32 {
    1
}

/// One point of a thread sweep.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SweepPoint {
    /// Client threads.
    pub threads: u32,
    /// The measurement at that count.
    pub summary: CellSummary,
    /// The client's operations against the server's counters over the point, when the servers
    /// were watched (`docs/result-schema.md`, "Client against server").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crosscheck: Option<super::crosscheck::CrossCheck>,
}

/// A thread sweep: the curve, its maximum and its knee.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    /// Thread counts not measured because a member was dead, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<NotRunPoint>,
    /// Set when a member died during this curve (or an earlier one): why the rest of its
    /// topology is not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead: Option<String>,
    /// Every thread count the sweep was asked for (an interrupted sweep measured fewer); empty
    /// in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planned_threads: Vec<u32>,
    /// The server's memory when the curve ended (absent when it was not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<super::metrics::MemoryAtEnd>,
}

/// A sweep point that was not measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NotRunPoint {
    /// Client threads.
    pub threads: u32,
    /// Why (`not run: sh0 (localhost:41110) dead since 8 threads at 2.0 s`).
    pub reason: String,
}

/// A property and the values a sweep tries it at (`--vary readbatchsize=1,10,20`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Vary {
    /// The property.
    pub property: String,
    /// Its values, in order.
    pub values: Vec<String>,
}

impl Vary {
    /// Parses `PROPERTY=V1,V2,...` (`--vary`'s value parser: clap names the flag and the value).
    pub(crate) fn parse(text: &str) -> Result<Vary, String> {
        let (property, values) = text
            .split_once('=')
            .filter(|(k, v)| !k.trim().is_empty() && !v.trim().is_empty())
            .ok_or("expected PROPERTY=V1,V2,...")?;
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(String::is_empty) {
            return Err("an empty value".into());
        }
        let property = property.trim();
        if crate::workload::prop::lookup(property).is_none() {
            let hint = crate::workload::properties::near_miss(property)
                .map(|k| format!("did you mean '{k}'? "))
                .unwrap_or_default();
            return Err(format!(
                "'{property}' is not a property microshard reads; {hint}\
                 (varying it would measure the same configuration {} times)",
                values.len()
            ));
        }
        Ok(Vary {
            property: property.to_string(),
            values,
        })
    }
}

/// One curve of a sweep: the varied property's value (if any) and the repetition.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Variant {
    /// The value of the varied property, `None` without `--vary`.
    pub value: Option<String>,
    /// 1-based repetition.
    pub repeat: u32,
}

/// Every curve a sweep measured, in order.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct SweepOutcome {
    /// The varied property, if any.
    pub property: Option<String>,
    /// Thread counts of every curve.
    pub threads: Vec<u32>,
    /// The curves.
    pub curves: Vec<(Variant, SweepFile)>,
    /// The name of the topology the curves ran on, in `compare --sweep --vary` (one outcome per
    /// topology); `None` in `sweep`, whose run directory holds one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
}

impl SweepOutcome {
    /// The varied property's values in the order measured (`[None]` without `--vary`).
    pub(crate) fn values(&self) -> Vec<Option<String>> {
        let mut seen = std::collections::BTreeSet::new();
        let values = self.curves.iter().map(|(v, _)| &v.value);
        values.filter(|v| seen.insert(*v)).cloned().collect()
    }

    /// Repetitions per value.
    pub(crate) fn repeats(&self) -> u32 {
        self.curves.iter().map(|(v, _)| v.repeat).max().unwrap_or(1)
    }

    /// True when the outcome is one plain curve (no `--vary`, one repetition).
    pub(crate) fn is_single(&self) -> bool {
        self.property.is_none() && self.curves.len() <= 1
    }

    /// Every degraded or invalid point and every point not run, one line each saying why (for
    /// the stderr lines and the exit status: `cli::verdicts::verdicts_exit`).
    pub(crate) fn verdict_lines(&self) -> VerdictLines {
        let mut lines = VerdictLines::default();
        for (_, c) in &self.curves {
            for p in &c.points {
                let v = &p.summary.validity;
                let line = format!("{} at {} threads", c.label, p.threads);
                lines.push(v, &format!("{line} is {}: {}", v.verdict, v.summary()));
            }
            for n in &c.not_run {
                lines.invalid.push(format!(
                    "{} at {} threads: {}",
                    c.label, n.threads, n.reason
                ));
            }
        }
        lines
    }
}

/// The default write concern in force on the deployment (`getDefaultRWConcern`), or why it was
/// not read. The experiment's own clients pin `w` in their URI; this is what a client without
/// one would get.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DefaultWriteConcernRecord {
    /// `defaultWriteConcern.w` (`1`, `majority`, a tag); absent when the server sets none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w: Option<String>,
    /// `defaultWriteConcern.j`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<bool>,
    /// `defaultWriteConcern.wtimeout`, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wtimeout_ms: Option<u64>,
    /// `defaultWriteConcernSource`: `implicit` or `global` (5.0+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Why it was not read: a plain standalone has none (MongoDB answers 51300), or the
    /// server's own error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_read: Option<String>,
}

/// Every degraded or invalid stored cell and every cell not run, one line each saying why (for
/// the stderr lines and the exit status: `cli::verdicts::verdicts_exit`).
#[derive(Debug, Default)]
pub(crate) struct VerdictLines {
    /// Invalid cells and cells not run (exit 3).
    pub invalid: Vec<String>,
    /// Degraded cells (a caveat: exit 0 unless `--strict`).
    pub degraded: Vec<String>,
}

impl VerdictLines {
    /// Adds `line` to the lines of its result's verdict (none for a valid one).
    pub(crate) fn push(&mut self, validity: &crate::measure::validity::Validity, line: &str) {
        use crate::measure::validity::Verdict;
        match validity.verdict {
            Verdict::Valid => {}
            Verdict::Degraded => self.degraded.push(line.to_string()),
            Verdict::Invalid | Verdict::NotRun => self.invalid.push(line.to_string()),
        }
    }
}
