//! The flags that say what an experiment measures, declared once as clap groups the commands
//! flatten into their arguments (`compare` and `sweep` share [`ServerFlags`] and
//! [`WorkloadFlags`]), and the one record a `compare` command line makes of them
//! ([`CompareCommand::from_flags`]), which every later step reads and `experiment.json` stores.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::compare::ResumeFlags;
use super::model::{CompareCommand, Vary};
use super::slo::{Bound, SearchSpec};
use crate::error::bad_input;
use crate::props::flag_values::{ThreadList, parse_duration, parse_threads, split_list};
use crate::topology::BackendKind;
use crate::workload::prop;

/// Where the servers come from: the backend, their binaries (or the stand-in), their arguments
/// and ports.
#[derive(Debug, Args)]
pub(crate) struct ServerFlags {
    /// Backend bringing the topologies up: process, docker or existing.
    #[arg(long, value_enum, ignore_case = true, default_value = "process")]
    pub backend: BackendKind,
    /// Directory holding `mongod` and `mongos` (process backend).
    #[arg(long, conflicts_with = "standin")]
    pub bin_dir: Option<PathBuf>,
    /// Run every topology on microshard's stand-in server (process backend; no MongoDB needed,
    /// figures labelled as stand-in figures).
    #[arg(long)]
    pub standin: bool,
    /// Extra argument for every mongod (repeatable; e.g. the stand-in's `--service-time-us=500`).
    #[arg(long = "mongod-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub mongod_args: Vec<String>,
    /// First port of every topology (default: the topology file's `base_port`).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub base_port: Option<u16>,
}

impl ServerFlags {
    /// The binaries directory: `--bin-dir` made absolute, or `--standin`'s links (made now).
    pub(crate) fn bin_dir(&self) -> anyhow::Result<Option<PathBuf>> {
        if self.standin {
            Ok(Some(super::live::standin_bin_dir(self.backend)?))
        } else {
            absolute_bin_dir(self.bin_dir.clone())
        }
    }

    /// The binaries directory as [`Self::bin_dir`] names it, `--standin`'s links not made yet:
    /// the servers check makes them once everything else it checks is right
    /// (`preflight::servers`).
    pub(crate) fn bin_dir_to_check(&self) -> anyhow::Result<Option<PathBuf>> {
        if self.standin {
            Ok(Some(super::live::standin_dir(self.backend)?))
        } else {
            absolute_bin_dir(self.bin_dir.clone())
        }
    }
}

/// Makes `--bin-dir` absolute (without touching the file system): members are started from
/// their own directories, where a relative path would name nothing.
pub(crate) fn absolute_bin_dir(dir: Option<PathBuf>) -> anyhow::Result<Option<PathBuf>> {
    dir.map(|d| {
        std::path::absolute(&d).map_err(|e| bad_input(format!("--bin-dir {}: {e}", d.display())))
    })
    .transpose()
}

/// What every measurement runs with: `-p`, the warm-up, the client processes and the scale.
#[derive(Debug, Args)]
pub(crate) struct WorkloadFlags {
    /// Set a workload property for every scenario (repeatable), applied last.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub properties: Vec<String>,
    /// Leave the first DURATION of every cell out of its measurement (`microshard.warmup`,
    /// recorded in each result); the cell then runs warm-up + `--duration`.
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Drive every cell with N client processes (`threadcount` split across them; results
    /// merged exactly).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub clients: u64,
    /// Use the scenario files' full sizes (the seed's 5 million records) instead of the laptop scale.
    #[arg(long)]
    pub full: bool,
    /// Records at laptop scale (not with --full, which uses the scenario files' sizes).
    #[arg(long, default_value_t = super::scenario::LAPTOP_RECORDS,
          value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "full")]
    pub records: u64,
}

impl WorkloadFlags {
    /// `-p` as given, then `--warmup` as `microshard.warmup`.
    pub(crate) fn overrides(&self) -> Vec<String> {
        let mut out = self.properties.clone();
        if let Some(w) = self.warmup {
            out.push(format!("{}={}", prop::WARMUP.name, w.as_secs_f64()));
        }
        out
    }

    /// `--clients` as a count of processes.
    pub(crate) fn clients(&self) -> usize {
        usize::try_from(self.clients).unwrap_or(1)
    }
}

/// How a ceiling search steps (`ceiling`, `compare --ceiling`; README, "Glossary": ceiling,
/// bound).
#[derive(Debug, Args)]
pub(crate) struct SearchFlags {
    /// The latency bound on intended latency, e.g. `p99=10ms`; several comma-separated, all must hold.
    #[arg(long, value_name = "pNN=DURATION,...")]
    pub slo: Option<String>,
    /// Measured length of each step (after `--warmup`).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub step_duration: Duration,
    /// Stop bisecting when the gap between the passing and failing rates is this share, e.g. 5%.
    #[arg(long, default_value = "5%", value_parser = parse_percent)]
    pub precision: f64,
    /// The most client threads a step may use; a rate needing more stops the search ("the client could not offer").
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub max_threads: u32,
}

impl SearchFlags {
    /// The search these flags ask for; `--slo` is needed (one line naming it, exit 2).
    pub(crate) fn spec(&self) -> anyhow::Result<SearchSpec> {
        let slo = self.slo.as_deref().ok_or_else(|| {
            bad_input("--slo: a ceiling search needs a latency bound, e.g. --slo p99=10ms")
        })?;
        let bounds = Bound::parse_list(slo).map_err(|e| bad_input(format!("--slo {e}")))?;
        Ok(SearchSpec {
            bounds,
            step_s: self.step_duration.as_secs().max(1),
            precision: self.precision,
            max_threads: self.max_threads,
        })
    }
}

/// `5%` or `0.05` as a share in (0, 0.5].
fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let share = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("{text:?}: expected a share such as 5% or 0.05"))?;
    if !(share > 0.0 && share <= 0.5) {
        return Err(format!("{text:?}: must be above 0 and at most 50%"));
    }
    Ok(share)
}

/// The flags of `compare` that make its record (the rest say where and how to run it).
#[derive(Debug, Args)]
pub(crate) struct CompareFlags {
    /// Topologies (names in `topologies/` or TOML files), comma-separated; the first is the baseline.
    #[arg(long, default_value = "single,microshard-2,microshard-4")]
    pub topologies: String,
    /// Scenarios (names in `workloads/` or files), comma-separated; the first is the load phase.
    #[arg(long, default_value = "S1,S2,S3,S4,S5")]
    pub scenarios: String,
    #[command(flatten)]
    pub servers: ServerFlags,
    /// Docker image for every member, instead of each topology's (e.g. microshard-standin:test);
    /// `--resume` reuses the experiment's unless given again.
    #[arg(long)]
    pub image: Option<String>,
    /// Bound of each run-phase cell (`maxexecutiontime`).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,
    #[command(flatten)]
    pub workload: WorkloadFlags,
    /// Measure every cell N times (spread and significance need 2 or more); with --vary, also
    /// the sweep curves per value.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Client threads for every cell (default: each scenario file's threadcount).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
    /// Topology every other one is compared with (default: the first).
    #[arg(long)]
    pub baseline: Option<String>,
    /// Sweep thread counts on each topology first and measure at its knee.
    #[arg(long)]
    pub sweep: bool,
    /// Search every cell's ceiling under `--slo` instead of measuring it at one thread count;
    /// `--repeat` confirms each ceiling found that many times.
    #[arg(long, conflicts_with = "sweep")]
    pub ceiling: bool,
    #[command(flatten)]
    pub search: SearchFlags,
    /// Thread counts for `--sweep`.
    #[arg(long, default_value = "1,2,4,8,16,32,64,128", value_parser = parse_threads)]
    pub sweep_threads: ThreadList,
    /// Length of each sweep point.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub sweep_duration: Duration,
    /// With --sweep: one sweep curve per value of a property on every topology, --repeat times
    /// each (e.g. `readbatchsize=1,10,20`); prints and writes one seed-2 table and chart per
    /// topology (`vary-TOPOLOGY.*`); the cells run at the knee of the first value's curve.
    #[arg(long, value_name = "PROPERTY=V1,V2,...", requires = "sweep")]
    pub vary: Option<String>,
    /// Experiment name (the run directory's suffix).
    #[arg(long, default_value = "compare")]
    pub name: String,
    /// Print every server's ops/s while cells run (like mongostat beside YCSB).
    #[arg(short = 's', long = "status")]
    pub status: bool,
}

impl CompareCommand {
    /// The one record a `compare` command line asks for (a new experiment; `--resume` reads its
    /// record from the run directory instead). Flags are checked here, each failure one line
    /// naming the flag (exit status 2); nothing is created.
    pub(crate) fn from_flags(f: &CompareFlags) -> anyhow::Result<CompareCommand> {
        let topologies = split_list(&f.topologies);
        Ok(CompareCommand {
            name: f.name.clone(),
            baseline: f
                .baseline
                .clone()
                .or_else(|| topologies.first().cloned())
                .unwrap_or_default(),
            topologies,
            scenarios: split_list(&f.scenarios),
            repeat: f.repeat,
            backend: f.servers.backend,
            bin_dir: f.servers.bin_dir_to_check()?,
            extra_mongod_args: f.servers.mongod_args.clone(),
            image: f.image.clone(),
            base_port: f.servers.base_port,
            // A search sets each step's length itself (`--step-duration`).
            duration_s: (!f.ceiling).then(|| f.duration.as_secs().max(1)),
            threads: f.threads,
            sweep: f.sweep,
            sweep_threads: if f.sweep {
                f.sweep_threads.0.clone()
            } else {
                Vec::new()
            },
            sweep_duration_s: Some(f.sweep_duration.as_secs().max(1)),
            vary: f.vary.as_deref().map(Vary::parse).transpose()?,
            full: f.workload.full,
            records: (!f.workload.full).then_some(f.workload.records),
            overrides: f.workload.overrides(),
            live_server_status: f.status,
            clients: f.workload.clients(),
            ceiling: match (f.ceiling, &f.search.slo) {
                (true, _) => Some(f.search.spec()?),
                (false, Some(_)) => return Err(bad_input("--slo: only with --ceiling")),
                (false, None) => None,
            },
        })
    }
}

impl CompareFlags {
    /// The flags `--resume` takes again over the stored record.
    pub(crate) fn resume_flags(&self, remeasure_invalid: bool) -> anyhow::Result<ResumeFlags> {
        Ok(ResumeFlags {
            bin_dir: self.servers.bin_dir()?,
            image: self.image.clone(),
            base_port: self.servers.base_port,
            overrides: self.workload.overrides(),
            remeasure_invalid,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_bin_dir_becomes_absolute() {
        let d = absolute_bin_dir(Some(PathBuf::from("bin")))
            .unwrap()
            .unwrap();
        assert!(d.is_absolute() && d.ends_with("bin"), "{}", d.display());
        assert_eq!(absolute_bin_dir(None).unwrap(), None);
    }
}
