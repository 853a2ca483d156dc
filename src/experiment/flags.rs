//! The flags that say what an experiment measures, declared once as clap groups the commands
//! flatten into their records (`compare`'s [`CompareCommand`](super::model::CompareCommand),
//! `sweep` and `ceiling` share [`ServerFlags`] and [`WorkloadFlags`]); the groups a record
//! stores are serde too, so the command line and `experiment.json` are one shape.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::slo::{Bound, SearchSpec};
use crate::error::bad_input;
use crate::props::flag_values::{parse_duration, parse_seconds};
use crate::topology::BackendKind;
use crate::workload::prop;

/// Where the servers come from: the backend, their binaries (or the stand-in), their arguments
/// and ports. Stored in `experiment.json` under the record's names (`extra_mongod_args`).
#[derive(Debug, Clone, Default, PartialEq, Args, Serialize, Deserialize)]
pub struct ServerFlags {
    /// Backend bringing the topologies up: process, docker, existing or kubernetes (a build with the `kubernetes` feature; without it, `up --emit-manifests` prints manifests).
    #[arg(long, value_enum, ignore_case = true, default_value = "process")]
    #[serde(deserialize_with = "backend_any_case")]
    pub backend: BackendKind,
    /// Directory holding `mongod` and `mongos` (process backend).
    #[arg(long, conflicts_with = "standin")]
    #[serde(default)]
    pub bin_dir: Option<PathBuf>,
    /// Run every topology on microshard's stand-in server (process backend; no MongoDB needed,
    /// figures labelled as stand-in figures).
    #[arg(long)]
    #[serde(skip)]
    pub standin: bool,
    /// Extra argument for every mongod (repeatable; e.g. the stand-in's `--service-time-us=500`).
    #[arg(long = "mongod-arg", value_name = "ARG", allow_hyphen_values = true)]
    #[serde(default, rename = "extra_mongod_args")]
    pub mongod_args: Vec<String>,
    /// First port of every topology (default: the topology file's `base_port`).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_port: Option<u16>,
}

impl ServerFlags {
    /// `--bin-dir` made absolute; `--standin` is kept as asked, for
    /// [`ServerFlags::take_standin`].
    pub(crate) fn checked(mut self) -> anyhow::Result<ServerFlags> {
        self.bin_dir = absolute_bin_dir(self.bin_dir)?;
        Ok(self)
    }

    /// `--standin`: the binaries directory the servers start from becomes its links' (kept
    /// under the state directory, so `up --standin` members and `compare --resume` still find
    /// it). A resume makes them now (`link_now`: it checks its stored record, not these flags);
    /// otherwise the servers check makes them ([`link_if_standin`]) once everything it checks is
    /// right, so a bad port range or topology leaves the state directory as it was.
    pub(crate) fn take_standin(&mut self, link_now: bool) -> anyhow::Result<()> {
        if std::mem::take(&mut self.standin) {
            let dir = standin_dir(self.backend)?;
            if link_now {
                make_links(&dir)?;
            }
            self.bin_dir = Some(dir);
        }
        Ok(())
    }
}

/// Where `--standin`'s links go, without making them; the stand-in needs a backend that runs
/// this machine's binaries (the process backend).
pub(crate) fn standin_dir(backend: BackendKind) -> anyhow::Result<PathBuf> {
    if !crate::backend::of(backend).runs_binaries() {
        return Err(bad_input(format!(
            "--standin: the stand-in runs with the process backend, not --backend {backend}"
        )));
    }
    Ok(standin_links_dir())
}

/// The directory of `--standin`'s links, kept under the state directory.
pub(crate) fn standin_links_dir() -> PathBuf {
    crate::backend::state::state_dir().join("standin-bin")
}

/// True when `bin_dir` is `--standin`'s links directory.
pub(crate) fn is_standin_dir(backend: BackendKind, bin_dir: Option<&std::path::Path>) -> bool {
    standin_dir(backend).is_ok_and(|dir| bin_dir == Some(dir.as_path()))
}

/// Makes `--standin`'s links when `bin_dir` is their directory: called by the servers check
/// once every other check has passed.
pub(crate) fn link_if_standin(
    backend: BackendKind,
    bin_dir: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    match is_standin_dir(backend, bin_dir) {
        true => make_links(&standin_dir(backend)?),
        false => Ok(()),
    }
}

/// Links this binary as `mongod` and `mongos` in `dir`.
fn make_links(dir: &std::path::Path) -> anyhow::Result<()> {
    crate::standin::link_binaries(dir).map_err(|e| {
        anyhow::anyhow!(
            "cannot link the stand-in binaries in {}: {e}",
            dir.display()
        )
    })
}

/// Runs written before the backend was typed stored it as typed on the command line
/// (`--backend Docker` is accepted in any case).
fn backend_any_case<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BackendKind, D::Error> {
    use clap::ValueEnum;
    let text = String::deserialize(d)?;
    BackendKind::from_str(&text, true).map_err(|_| {
        serde::de::Error::custom(format!(
            "backend {text:?}: expected process, docker, existing or kubernetes"
        ))
    })
}

/// Makes `--bin-dir` absolute (without touching the file system): members are started from
/// their own directories, where a relative path would name nothing.
pub(crate) fn absolute_bin_dir(dir: Option<PathBuf>) -> anyhow::Result<Option<PathBuf>> {
    dir.map(|d| {
        std::path::absolute(&d).map_err(|e| bad_input(format!("--bin-dir {}: {e}", d.display())))
    })
    .transpose()
}

/// What every measurement runs with: `-p`, the warm-up, the wait for a quiet host, the client
/// processes and the scale. Stored as given (`-p` redacted), but with no `records` at `--full`.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
pub struct WorkloadFlags {
    /// Set a workload property for every scenario (repeatable), applied last.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// Leave the first DURATION of every cell out of its measurement (`microshard.warmup`,
    /// recorded in each result); the cell then runs warm-up + `--duration`.
    #[arg(id = "warmup", long = "warmup", value_name = "DURATION", value_parser = parse_seconds)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<f64>,
    /// Before every cell or step, wait up to TIMEOUT (default 10m) for other processes to leave
    /// the host quiet (`microshard.waitquiet`, within `microshard.busyhost`), so that a shared
    /// box can still give valid results.
    #[arg(id = "wait_quiet", long = "wait-quiet", value_name = "TIMEOUT", num_args = 0..=1,
          default_missing_value = "10m", value_parser = parse_seconds)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_quiet_s: Option<f64>,
    /// Drive every cell with N client processes (`threadcount` split across them; results
    /// merged exactly).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    #[serde(default = "one")]
    pub clients: u64,
    /// Use the scenario files' full sizes (the seed's 5 million records) instead of the laptop scale.
    #[arg(long)]
    pub full: bool,
    /// Records at laptop scale (not with --full, which uses the scenario files' sizes).
    #[arg(long, default_value = "100000",
          value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "full")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
}

fn one() -> u64 {
    1
}

impl Default for WorkloadFlags {
    fn default() -> WorkloadFlags {
        WorkloadFlags {
            overrides: Vec::new(),
            warmup_s: None,
            wait_quiet_s: None,
            clients: 1,
            full: false,
            records: Some(super::scenario::LAPTOP_RECORDS),
        }
    }
}

impl WorkloadFlags {
    /// The flags as a record keeps them: no laptop record count at `--full`.
    pub(crate) fn checked(mut self) -> WorkloadFlags {
        self.records = self.records.filter(|_| !self.full);
        self
    }

    /// The properties these flags set, as `-p` gives them: `-p` as given, then `--warmup` as
    /// `microshard.warmup` and `--wait-quiet` as `microshard.waitquiet` (the runner reads
    /// properties, as YCSB's does).
    pub(crate) fn overrides(&self) -> Vec<String> {
        let typed = [
            (prop::WARMUP.name, self.warmup_s),
            (prop::WAITQUIET.name, self.wait_quiet_s),
        ];
        let typed = typed
            .into_iter()
            .filter_map(|(name, s)| Some(format!("{name}={}", s?)));
        self.overrides.iter().cloned().chain(typed).collect()
    }

    /// Records at laptop scale.
    pub(crate) fn laptop_records(&self) -> u64 {
        self.records.unwrap_or(super::scenario::LAPTOP_RECORDS)
    }

    /// The one workload file `-P` names, at the scale these flags ask for, with `-p` applied;
    /// output files it asks for are refused, `in_what` saying why (bad input names the flag).
    pub(crate) fn one_workload(
        &self,
        workload: &str,
        in_what: &str,
    ) -> anyhow::Result<super::scenario::OneWorkload> {
        let scaling = super::scenario::Scaling {
            full: self.full,
            records: self.laptop_records(),
            duration_s: None,
            threads: None,
        };
        let one = super::scenario::OneWorkload::resolve(workload, &scaling, &self.overrides())?;
        super::scenario::refuse_outputs(&one.props, in_what)?;
        Ok(one)
    }

    /// `--clients` as a count of processes.
    pub(crate) fn clients(&self) -> usize {
        usize::try_from(self.clients).unwrap_or(1)
    }
}

/// How a ceiling search steps (`ceiling`, `compare --ceiling`; README, "Glossary": ceiling,
/// bound).
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct SearchFlags {
    /// The latency bound on intended latency, e.g. `p99=10ms`; several comma-separated, all must hold.
    #[arg(long, value_name = "pNN=DURATION,...")]
    pub slo: Option<String>,
    /// Measured length of the first steps (after the warm-up; bisecting steps grow up to 4×); default 10s, or 65s with --full, so that every step spans one of WiredTiger's 60 s checkpoints.
    #[arg(long, value_parser = parse_duration)]
    pub step_duration: Option<Duration>,
    /// Stop bisecting when the gap between the passing and failing rates is this share, e.g. 5%.
    #[arg(long, default_value = "5%", value_parser = parse_percent)]
    pub precision: f64,
    /// The most client threads (one connection each) a step may use; threads follow the latency measured, more when all were busy; at this cap with all busy, the client is the limit.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_threads: u32,
}

/// A step's length when `--step-duration` is not given.
const STEP_S: u64 = 10;

/// The same with `--full`: a real `mongod` checkpoints every 60 s (WiredTiger's default), and a
/// step that holds one and a step that does not measure different servers; 65 s steps each
/// hold one (`docs/ceiling.md`, "Steps").
const FULL_STEP_S: u64 = 65;

impl SearchFlags {
    /// The search of a command with a `--ceiling` flag: these flags' search when `ceiling` is
    /// set, none otherwise (and then `--slo` is refused: one line naming it, exit 2).
    pub(crate) fn settled(&self, ceiling: bool, full: bool) -> anyhow::Result<Option<SearchSpec>> {
        match (ceiling, &self.slo) {
            (true, _) => self.spec(full).map(Some),
            (false, Some(_)) => Err(bad_input("--slo: only with --ceiling")),
            (false, None) => Ok(None),
        }
    }

    /// The search these flags ask for, at the seed's sizes when `full`; `--slo` is needed (one
    /// line naming it, exit 2).
    pub(crate) fn spec(&self, full: bool) -> anyhow::Result<SearchSpec> {
        let slo = self.slo.as_deref().ok_or_else(|| {
            bad_input("--slo: a ceiling search needs a latency bound, e.g. --slo p99=10ms")
        })?;
        let bounds = Bound::parse_list(slo).map_err(|e| bad_input(format!("--slo {e}")))?;
        Ok(SearchSpec {
            bounds,
            step_s: match (self.step_duration, full) {
                (Some(d), _) => d.as_secs().max(1),
                (None, false) => STEP_S,
                (None, true) => FULL_STEP_S,
            },
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
    if !t.ends_with('%') && share > 0.5 && share <= 50.0 {
        return Err(format!(
            "{text:?}: did you mean {t}%? (a bare number is a share: 0.05 is 5%)"
        ));
    }
    if !(share > 0.0 && share <= 0.5) {
        return Err(format!("{text:?}: must be above 0 and at most 50%"));
    }
    Ok(share)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_laptop_scale_is_the_records_flag_default() {
        let record = crate::experiment::model::CompareCommand::default();
        assert_eq!(
            record.workload.records,
            Some(super::super::scenario::LAPTOP_RECORDS)
        );
        assert_eq!(record.baseline, "single");
        assert_eq!(record.sweep_duration_s, Some(10));
    }

    /// `--warmup` and `--wait-quiet` are typed fields of the record, and properties only where
    /// the runner reads them; an older record's `-p microshard.warmup=…` still applies.
    #[test]
    fn the_warmup_is_a_typed_field_of_the_record() {
        #[derive(clap::Parser)]
        struct Flags {
            #[command(flatten)]
            workload: WorkloadFlags,
        }
        let parsed = <Flags as clap::Parser>::try_parse_from([
            "x",
            "--warmup",
            "2500ms",
            "--wait-quiet",
            "-p",
            "a=1",
        ]);
        let flags = parsed.map(|f| f.workload.checked()).unwrap();
        assert_eq!(
            (flags.warmup_s, flags.wait_quiet_s),
            (Some(2.5), Some(600.0))
        );
        let record = serde_json::to_value(&flags).unwrap();
        assert_eq!(record["warmup_s"], 2.5);
        assert_eq!(record["overrides"], serde_json::json!(["a=1"]));
        assert_eq!(
            flags.overrides(),
            ["a=1", "microshard.warmup=2.5", "microshard.waitquiet=600"]
        );
        let older: WorkloadFlags =
            serde_json::from_str(r#"{"overrides": ["microshard.warmup=3"], "full": false}"#)
                .unwrap();
        assert_eq!(older.overrides(), ["microshard.warmup=3"]);
    }

    #[test]
    fn a_relative_bin_dir_becomes_absolute() {
        let d = absolute_bin_dir(Some(PathBuf::from("bin")))
            .unwrap()
            .unwrap();
        assert!(d.is_absolute() && d.ends_with("bin"), "{}", d.display());
        assert_eq!(absolute_bin_dir(None).unwrap(), None);
    }
}
