//! `compare`: every scenario on every topology, each cell written the moment it finishes,
//! resumable, and torn down on success, error and Ctrl-C.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;

use super::lab::{Deployment, Lab, Session};
use super::model::{
    CellFile, CellId, CompareCommand, ExperimentConfig, NotRun, Remeasure, VerdictLines,
};
use super::progress::Progress;
use super::results::ExperimentDir;
use super::scenario::{self, Scaling};
use super::sweep::{self, SweepOutcome};
use crate::error::bad_input;
use crate::workload::prop::THREADCOUNT;

mod ceilings;
mod cell;
use cell::{Cell, CellEnd, cell_props, measure_cell, place_outputs, write_cell};

/// Where a new experiment is created, and what this machine adds to its record.
#[derive(Debug, Clone, Default)]
pub(crate) struct NewRun {
    /// Where run directories are created (`results/`).
    pub results_root: PathBuf,
    /// Where scenario files are looked up first (tests).
    pub workload_dir: Option<PathBuf>,
    /// The client's calibrated ceiling, when known.
    pub client_ceiling: Option<f64>,
}

/// An experiment ready to measure: its run directory and its record, new or read back.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The run directory.
    pub dir: ExperimentDir,
    /// The record; `config.command` is what the lab and the matrix follow.
    pub config: ExperimentConfig,
    /// Read back by `--resume` rather than created.
    pub resumed: bool,
    /// What `--resume --remeasure` measures again.
    pub remeasure: Remeasure,
}

impl super::checked::Record for Prepared {
    fn servers(&self) -> &super::flags::ServerFlags {
        &self.config.command.servers
    }
    fn clients(&self) -> usize {
        self.config.command.workload.clients()
    }
    fn name_topologies(&mut self, loaded: &[crate::topology::Loaded]) {
        self.config.command.name_topologies(loaded)
    }
}

impl Prepared {
    /// A resumed `demo` whose temporary stand-in links are gone: the lab links them again.
    pub(crate) fn relinks_standin(&self) -> bool {
        self.resumed
            && self.config.command.name == "demo"
            && (self.config.command.servers.bin_dir)
                .as_ref()
                .is_some_and(|d| !d.is_dir())
    }
}

/// Refuses a command with nothing to measure.
fn check_shape(cmd: &CompareCommand) -> anyhow::Result<()> {
    if cmd.topologies.is_empty() {
        return Err(bad_input("--topologies: at least one topology is needed"));
    }
    if cmd.scenarios.is_empty() {
        return Err(bad_input("--scenarios: at least one scenario is needed"));
    }
    crate::error::flag_at_least("--repeat", u64::from(cmd.repeat), 1)
}

/// Resolves every scenario of a command as its cells will run them (files, scale, `-p`) and
/// checks each `--vary` value against the swept scenario and the topology names and baseline
/// (so a dry run refuses what the real run refuses); nothing is created.
pub(crate) fn resolve(
    cmd: &CompareCommand,
    workload_dir: Option<&std::path::Path>,
) -> anyhow::Result<(BTreeMap<String, crate::workload::Properties>, String)> {
    check_shape(cmd)?;
    check_topology_names(cmd)?;
    let files = cmd
        .scenarios
        .iter()
        .map(|s| {
            let path = scenario::locate(s, workload_dir)
                .map_err(|e| bad_input(format!("--scenarios: {e}")))?;
            Ok((s.clone(), path))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let overrides = scenario::parse_overrides(&cmd.workload.overrides())?;
    let scaling = Scaling {
        full: cmd.workload.full,
        records: cmd.workload.records.unwrap_or(scenario::LAPTOP_RECORDS),
        duration_s: cmd.duration_s,
        threads: cmd.threads,
    };
    let (properties, scale_note) = scenario::resolve(&files, &scaling, &overrides)?;
    if let (Some(vary), Some(swept)) = (
        cmd.vary.as_ref().filter(|_| cmd.sweep),
        cmd.scenarios.get(1).and_then(|s| properties.get(s)),
    ) {
        super::sweep::variants(swept, Some(vary), 1)?;
    }
    Ok((properties, scale_note))
}

/// Creates the run directory and writes the record of a new experiment.
pub(crate) fn create(cmd: &CompareCommand, at: &NewRun) -> anyhow::Result<Prepared> {
    let (properties, scale_note) = resolve(cmd, at.workload_dir.as_deref())?;
    let mut cmd = cmd.clone();
    cmd.baseline = check_topology_names(&cmd)?;
    let config = ExperimentConfig {
        client_ceiling: at.client_ceiling,
        ..ExperimentConfig::new(cmd, scale_note, properties)
    };
    let dir = ExperimentDir::create(&at.results_root, &config.command.name).with_context(|| {
        format!(
            "creating the run directory under {}",
            at.results_root.display()
        )
    })?;
    dir.write_config(&config)?;
    Ok(Prepared {
        dir,
        config,
        resumed: false,
        remeasure: Remeasure::default(),
    })
}

/// Reopens an interrupted experiment: its stored record decides everything but the flags
/// `--resume` takes again from `given` (`docs/reliability.md`): binaries that moved (`--bin-dir`,
/// or `--standin`'s links made by the caller), another image, other ports, and `-p` to restore
/// secrets redacted on disk; they are recorded for the next resume once measuring starts
/// ([`compare_with`]). A binaries
/// directory that is gone is refused here, before anything starts, except for a `demo`, whose
/// temporary stand-in links are made again ([`Prepared::relinks_standin`]).
pub(crate) fn resume(
    path: &std::path::Path,
    given: &CompareCommand,
    remeasure: Remeasure,
) -> anyhow::Result<Prepared> {
    let refuse =
        |e: super::results::ResultsError| bad_input(format!("--resume {}: {e}", path.display()));
    let dir = ExperimentDir::open(path).map_err(refuse)?;
    let mut config = dir.config().map_err(refuse)?;
    let cmd = &mut config.command;
    cmd.servers.bin_dir = (given.servers.bin_dir.clone()).or(cmd.servers.bin_dir.take());
    cmd.image = given.image.clone().or(cmd.image.take());
    cmd.servers.base_port = given.servers.base_port.or(cmd.servers.base_port);
    if let (Some(gone), false) = (
        cmd.servers.bin_dir.as_ref().filter(|d| !d.is_dir()),
        cmd.name == "demo",
    ) {
        return Err(bad_input(format!(
            "--resume: the experiment's binaries directory {} is gone; give --bin-dir",
            gone.display()
        )));
    }
    // Secrets were redacted on disk: `-p` given again on resume restores them.
    for (k, v) in scenario::parse_overrides(&given.workload.overrides())? {
        for props in config.properties.values_mut() {
            props.set(k.clone(), v.clone(), crate::workload::Origin::Override);
        }
    }
    Ok(Prepared {
        dir,
        config,
        resumed: true,
        remeasure,
    })
}

/// What happened to the matrix.
#[derive(Debug, Default)]
pub(crate) struct MatrixOutcome {
    /// Cells measured in this invocation.
    pub measured: Vec<CellId>,
    /// Cells skipped because their file already existed.
    pub skipped: Vec<CellId>,
    /// Failures (topology or cell, and why); the experiment can be resumed.
    pub failures: Vec<String>,
    /// Cells not run because their topology had a dead member.
    pub not_run: Vec<NotRun>,
    /// Ctrl-C stopped the experiment.
    pub interrupted: bool,
    /// A failure was the user's input (a member refused a flag the user gave): exit 2.
    pub bad_input: bool,
    /// `--sweep --vary`: each topology's seed-2 table, as stored.
    pub varied: Vec<SweepOutcome>,
}

/// Runs every unfinished cell of the experiment, writing each as it finishes.
pub(crate) async fn run_matrix<L: Lab>(
    s: &mut Session<'_, L>,
    dir: &ExperimentDir,
    config: &mut ExperimentConfig,
) -> anyhow::Result<MatrixOutcome> {
    let mut outcome = MatrixOutcome::default();
    let Some(load_scenario) = config.command.scenarios.first().cloned() else {
        return Ok(outcome);
    };
    // Topologies take turns, one repetition at a time (A B A B), so drift lands in the spread
    // of every topology alike, not in their ratio; a ceiling search runs whole in each turn.
    'repeats: for repeat in 1..=config.command.repeat {
        for topology in config.command.topologies.clone() {
            if s.cancel.is_cancelled() {
                outcome.interrupted = true;
                break 'repeats;
            }
            let ids = cells_of(config, &topology, repeat);
            if ids.iter().all(|id| dir.is_finished(id)) {
                outcome.skipped.extend(ids.iter().cloned());
                continue;
            }
            let turn = TopologyTurn {
                dir,
                topology: &topology,
                repeat,
                ids: &ids,
                load_scenario: &load_scenario,
            };
            run_turn(s, &turn, config, &mut outcome).await?;
            if outcome.interrupted {
                break 'repeats;
            }
        }
    }
    Ok(outcome)
}

/// The cells of `topology` in repetition `repeat`: one per scenario, in the record's order.
fn cells_of(config: &ExperimentConfig, topology: &str, repeat: u32) -> Vec<CellId> {
    (config.command.scenarios.iter())
        .map(|s| CellId {
            topology: topology.to_string(),
            scenario: s.clone(),
            repeat,
        })
        .collect()
}

/// One topology's turn in the matrix: which topology and repetition, its cells, where they are
/// stored and which scenario loads the data.
struct TopologyTurn<'a> {
    /// The run directory.
    dir: &'a ExperimentDir,
    /// The topology as the record names it.
    topology: &'a str,
    /// Which repetition of the matrix.
    repeat: u32,
    /// Its cells, in order (the load scenario's first).
    ids: &'a [CellId],
    /// The scenario whose load phase fills the data.
    load_scenario: &'a str,
}

/// Brings the turn's topology up, measures its cells, records those a dead member leaves
/// unrun and tears it down. Failures land in `outcome` (the experiment can be resumed); Ctrl-C
/// sets `outcome.interrupted`.
async fn run_turn<L: Lab>(
    s: &mut Session<'_, L>,
    turn: &TopologyTurn<'_>,
    config: &mut ExperimentConfig,
    outcome: &mut MatrixOutcome,
) -> anyhow::Result<()> {
    let (cancel, progress) = (s.cancel, s.progress);
    // Shown by its name, never by the path it was given as (`docs/architecture.md`).
    let shown = config.command.topology_name(turn.topology);
    let label = format!("{shown} (repeat {}/{})", turn.repeat, config.command.repeat);
    let bar = progress.phase(&format!("{label}: bring-up"), None);
    let up = s.lab.up(turn.topology, cancel).await;
    bar.finish(if up.is_ok() { "up" } else { "failed" });
    let (deployment, handle) = match up {
        Ok(x) => x,
        Err(e) => {
            if cancel.is_cancelled() {
                outcome.interrupted = true;
                return Ok(());
            }
            outcome.bad_input |= crate::exit::is_bad_input(&e);
            outcome
                .failures
                .push(format!("{shown}: bring-up failed: {e:#}"));
            return Ok(());
        }
    };
    let result = match config.command.ceiling {
        Some(_) => ceilings::search_topology(s, turn, &deployment, config, outcome).await,
        None => run_topology(s, turn, &deployment, config, outcome).await,
    };
    let result = match result {
        Ok(Some(dead)) => {
            let rest = turn.ids.iter().filter(|id| !turn.dir.is_finished(id));
            let skipped: Vec<NotRun> = rest
                .map(|id| NotRun {
                    cell: id.clone(),
                    reason: dead.clone(),
                    session: config.session(),
                    word: None,
                })
                .collect();
            turn.dir.record_not_run(&skipped)?;
            progress.line(&format!(
                "microshard: {shown}: {} later cell(s) not run ({}); tearing it down",
                skipped.len(),
                dead
            ));
            outcome.not_run.extend(skipped);
            Ok(())
        }
        other => other.map(|_| ()),
    };
    let bar = progress.phase(&format!("{label}: teardown"), None);
    let down = s.lab.down(handle).await;
    bar.finish(if down.is_ok() { "down" } else { "failed" });
    if let Err(e) = result {
        outcome.failures.push(format!("{shown}: {e:#}"));
    }
    if let Err(e) = down {
        outcome
            .failures
            .push(format!("{shown}: teardown failed: {e:#}"));
    }
    if cancel.is_cancelled() {
        outcome.interrupted = true;
    }
    Ok(())
}

/// Measures a topology's cells in order; a member found dead ends them (`Some(Dead)`).
async fn run_topology<L: Lab>(
    s: &mut Session<'_, L>,
    turn: &TopologyTurn<'_>,
    deployment: &Deployment,
    config: &mut ExperimentConfig,
    outcome: &mut MatrixOutcome,
) -> anyhow::Result<Option<String>> {
    let mut threads_override: Option<u32> = None;
    // Documents inserted by earlier run phases on this data: later scenarios see them as part of
    // the record count, so their inserts take fresh keys (no duplicate-key errors) and their
    // reads cover every document that exists.
    let mut inserted: u64 = 0;
    // Failovers so far on this data: a later cell's NOT_FOUND reads may be their rollbacks.
    let mut failovers = super::rollback::Failovers::default();
    for id in turn.ids {
        if s.cancel.is_cancelled() {
            return Ok(None);
        }
        let is_load = id.scenario == turn.load_scenario;
        let finished = turn.dir.is_finished(id);
        if finished && !is_load {
            outcome.skipped.push(id.clone());
            continue;
        }
        let mut props = cell_props(config, id, is_load, threads_override, inserted)?;
        let cell_file = turn.dir.cell_path(id);
        place_outputs(&mut props, (!finished).then_some(cell_file.as_path()))?;
        let cell = Cell {
            id,
            is_load,
            finished,
            props,
        };
        let (mut taken, dead) = match measure_cell(s, deployment, config, &cell).await? {
            CellEnd::Measured(m) => (m, None),
            CellEnd::Dead(m, member) => (m, Some(member)),
            CellEnd::Cancelled => return Ok(None),
        };
        let document = &taken.measured.document;
        if !is_load {
            inserted += super::summary::insert_attempts(document);
        }
        failovers.note(id, document);
        if finished {
            outcome.skipped.push(id.clone());
        } else {
            taken.caveats.extend(failovers.not_found_caveat(document));
            write_cell((turn.dir, id, deployment), config, &cell.props, taken)?;
            outcome.measured.push(id.clone());
        }
        if dead.is_some() {
            return Ok(dead);
        }
        if is_load && !config.command.sweep_threads.is_empty() {
            match sweep_on_topology(s, turn.dir, config, deployment).await? {
                SweepEnd::Knee(knee) => threads_override = knee,
                SweepEnd::Dead(member) => return Ok(Some(member)),
            }
        }
    }
    Ok(None)
}

/// How a topology's sweep ended: the knee its cells run at (none when it found none or Ctrl-C
/// cut it short), or the member found dead.
enum SweepEnd {
    Knee(Option<u32>),
    Dead(String),
}

/// Sweeps thread counts on a loaded topology (for `compare --sweep`) and returns the knee the
/// cells run at. With `--vary`, one curve per value × `--repeat` (the seed-2 table of this
/// topology, written by `report::write_reports`); the cells run at the knee of the first value's first
/// curve (`docs/architecture.md`, module `experiment`).
async fn sweep_on_topology<L: Lab>(
    s: &mut Session<'_, L>,
    dir: &ExperimentDir,
    config: &ExperimentConfig,
    deployment: &Deployment,
) -> anyhow::Result<SweepEnd> {
    let cmd = &config.command;
    let topology = &deployment.topology;
    let scenario = |s: &String| Some((s.clone(), config.properties.get(s)?.clone()));
    let run = cmd.scenarios.get(1).and_then(scenario);
    let Some((run_scenario, mut base)) = run else {
        return Ok(SweepEnd::Knee(None));
    };
    // The cells write the YCSB outputs asked for; the points of the sweep before them do not.
    place_outputs(&mut base, None)?;
    let base = &base;
    let repeat = if cmd.vary.is_some() { cmd.repeat } else { 1 };
    let variants = sweep::variants(base, cmd.vary.as_ref(), repeat)?;
    let curves = sweep::Curves {
        variants: &variants,
        vary: cmd.vary.as_ref(),
        repeat,
        threads: &cmd.sweep_threads,
        secs: cmd.sweep_point_seconds(),
        count_bounded: false,
        label: &format!("{run_scenario} on {topology}"),
        file_base: topology,
        file_label: str::to_owned,
        keep_partial: false,
    };
    let measured = sweep::measure_curves(s, dir, deployment, &curves).await?;
    if let Some(reason) = measured.iter().find_map(|(_, c)| c.dead.as_deref()) {
        return Ok(SweepEnd::Dead(reason.to_string()));
    }
    if s.cancel.is_cancelled() {
        return Ok(SweepEnd::Knee(None));
    }
    Ok(SweepEnd::Knee(
        measured.first().and_then(|(_, c)| c.knee_threads),
    ))
}

/// The seed-2 outcome of every topology of a `compare --sweep --vary`, from its stored curves
/// (empty otherwise): one table and chart per topology, as a sweep draws them.
pub(crate) fn vary_outcomes(dir: &ExperimentDir, config: &ExperimentConfig) -> Vec<SweepOutcome> {
    let cmd = &config.command;
    let Some(vary) = cmd.vary.as_ref().filter(|_| cmd.sweep) else {
        return Vec::new();
    };
    let variants: Vec<sweep::Variant> = vary
        .values
        .iter()
        .flat_map(|value| {
            (1..=cmd.repeat).map(|repeat| sweep::Variant {
                value: Some(value.clone()),
                repeat,
            })
        })
        .collect();
    cmd.topologies
        .iter()
        .map(|t| SweepOutcome {
            property: Some(vary.property.clone()),
            threads: cmd.sweep_threads.clone(),
            curves: sweep::stored_curves(
                dir,
                &variants,
                (Some(vary), cmd.repeat),
                t,
                str::to_owned,
            ),
            topology: Some(cmd.topology_name(t)),
        })
        .filter(|o| !o.curves.is_empty())
        .collect()
}

/// The file stem of a topology's seed-2 table and chart in `compare --sweep --vary`, from the
/// name it is shown by.
pub(crate) fn vary_stem(name: &str) -> String {
    format!("vary-{}", sweep::sweep_label(name))
}

impl MatrixOutcome {
    /// How a measured experiment ends: an error when it was interrupted or a failure stopped
    /// cells (bad input when a member refused a flag the user gave), each saying how to finish
    /// with `--resume`; else its cells' [`VerdictLines`], with a line for the cells not run.
    pub(crate) fn verdicts(&self, dir: &ExperimentDir) -> anyhow::Result<VerdictLines> {
        let resume = format!("microshard compare --resume {}", dir.path().display());
        if self.interrupted {
            return Err(crate::error::interrupted(format!(
                "{} cell(s) measured this time; finish with `{resume}`",
                self.measured.len()
            )));
        }
        if !self.failures.is_empty() {
            let message = format!(
                "{} failure(s): {}; finish with `{resume}`",
                self.failures.len(),
                self.failures.join("; ")
            );
            return Err(match self.bad_input {
                true => bad_input(message),
                false => anyhow::anyhow!(message),
            });
        }
        let mut verdicts = verdict_lines(dir)?;
        if !self.not_run.is_empty() {
            verdicts
                .invalid
                .push(format!("measure the cells not run with `{resume}`"));
        }
        Ok(verdicts)
    }
}

/// The [`VerdictLines`] of an experiment directory.
pub(crate) fn verdict_lines(dir: &ExperimentDir) -> anyhow::Result<VerdictLines> {
    let mut lines = VerdictLines::default();
    let cmd = dir.config()?.command;
    let name = |id: &CellId| {
        let topology = cmd.topology_name(&id.topology);
        format!("{topology} {} #{}", id.scenario, id.repeat)
    };
    for c in dir.cells()? {
        let v = &c.summary.validity;
        let line = format!("{} is {}: {}", name(&c.cell), v.verdict, v.summary());
        lines.push(v, &line);
    }
    for n in dir.not_run() {
        lines
            .invalid
            .push(format!("{} {}", name(&n.cell), n.reason));
    }
    Ok(lines)
}

/// Reports show topologies by name (`CompareCommand::topology_name`), so two topologies with one
/// name are refused; `--baseline` may give the name of a topology given as a file. Returns the
/// baseline as given in `--topologies`.
fn check_topology_names(cmd: &CompareCommand) -> anyhow::Result<String> {
    let (topologies, baseline) = (&cmd.topologies, &cmd.baseline);
    let mut seen: BTreeMap<String, &String> = BTreeMap::new();
    for t in topologies {
        let name = cmd.topology_name(t);
        // (One listed twice was refused by the servers check, which runs first.)
        if let Some(first) = seen.insert(name.clone(), t) {
            return Err(bad_input(format!(
                "--topologies: {first} and {t} are both named {name}; give one of them another name"
            )));
        }
    }
    if topologies.contains(baseline) {
        return Ok(baseline.to_string());
    }
    seen.get(baseline.as_str())
        .map(|t| t.to_string())
        .ok_or_else(|| {
            bad_input(format!(
                "--baseline {baseline}: not one of --topologies ({})",
                topologies.join(",")
            ))
        })
}

/// `--remeasure`: every invalid cell's file (and, asked, every cell degraded by a busy host)
/// moves to `earlier/` beside it, so the cell is measured again while the earlier attempt is kept.
fn set_aside(dir: &ExperimentDir, remeasure: Remeasure, progress: &Progress) -> anyhow::Result<()> {
    let again: Vec<CellFile> = (dir.cells()?.into_iter())
        .filter(|c| remeasure.takes(c))
        .collect();
    for cell in &again {
        dir.set_aside(cell)?;
    }
    if !again.is_empty() {
        progress.line(&format!(
            "microshard: measuring {} cell(s) again (--remeasure); the earlier attempts are kept under cells/<topology>/earlier/",
            again.len()
        ));
    }
    Ok(())
}

/// The whole `compare` on a prepared experiment ([`create`] or [`resume`]): measure every
/// unfinished cell; the caller writes the reports (`report::write_reports`).
pub(crate) async fn compare_with<L: Lab>(
    s: &mut Session<'_, L>,
    prepared: Prepared,
) -> anyhow::Result<(ExperimentDir, MatrixOutcome)> {
    let progress = s.progress;
    let Prepared {
        dir,
        mut config,
        resumed,
        remeasure,
    } = prepared;
    // Older records list no session: their cells were all measured in the first.
    if resumed && config.sessions.is_empty() {
        config.begin_session(false, Remeasure::default());
    }
    let session = config.begin_session(resumed, remeasure);
    // The flags given again are part of the record from now on, and so is this session.
    dir.write_config(&config)?;
    if resumed {
        progress.line(&format!(
            "microshard: resuming {} as session {session} (its stored configuration wins over other flags)",
            dir.path().display()
        ));
    } else {
        progress.line(&format!("microshard: results in {}", dir.path().display()));
    }
    set_aside(&dir, remeasure, progress)?;
    progress.line(&format!("microshard: sizes: {}", config.scale_note));
    for w in super::scenario::unread_override_warnings(&config.command.workload.overrides) {
        progress.line(&format!("microshard: warning: {w}"));
    }
    if let Some(line) = super::scenario::outputs_note(&config.properties) {
        progress.line(&format!("microshard: {line}"));
    }
    let mut outcome = run_matrix(s, &dir, &mut config).await?;
    outcome.varied = vary_outcomes(&dir, &config);
    Ok((dir, outcome))
}

/// Resolves every scenario of a new experiment as it will run (files, scale, `-p`, `--vary`),
/// called by the servers check once the topologies are loaded, and refuses what the runner would only refuse once a topology is up: a thread count of zero,
/// fewer threads than clients on a loaded topology.
pub(crate) fn check_scenarios(
    cmd: &CompareCommand,
    specs: &[crate::topology::Loaded],
) -> anyhow::Result<()> {
    if let Some(t) = cmd.threads {
        crate::error::flag_at_least("--threads", u64::from(t), 1)?;
    }
    let overrides = super::scenario::parse_overrides(&cmd.workload.overrides())?;
    let mut cmd = cmd.clone();
    super::checked::Record::name_topologies(&mut cmd, specs);
    let (resolved, _) = resolve(&cmd, None)?;
    // Clients per cell on each topology: its client containers, or `--clients`.
    let clients: Vec<(&str, u64, bool)> = (specs.iter())
        .map(
            |t| match t.spec.clients.iter().map(|c| u64::from(c.count)).sum() {
                0 => (t.given.as_str(), cmd.workload.clients, false),
                n => (t.given.as_str(), n, true),
            },
        )
        .collect();
    for (name, props) in &resolved {
        // A thread count that does not parse is refused just below, naming its origin.
        let threads = props.value(&THREADCOUNT).ok().filter(|n| *n >= 1);
        if let Some(threads) = threads
            && let Some((t, n, containers)) = clients.iter().find(|(_, n, _)| *n > threads)
        {
            let who = match containers {
                true => format!("--topologies {t}: clients: {n} client containers"),
                false => format!("--clients {n}"),
            };
            return Err(bad_input(format!(
                "scenario {name}: {who} but threadcount={threads} (the total, split across clients); give --threads {n} or more"
            )));
        }
        props
            .periods_bounded()
            .map_err(|e| bad_input(format!("scenario {name}: {e}")))?;
        if let Some(t) = props.get(THREADCOUNT.name)
            && !t.trim().parse::<u64>().is_ok_and(|n| n >= 1)
        {
            let origin = match overrides.iter().any(|(k, _)| k == THREADCOUNT.name) {
                true => "-p threadcount",
                false => "property threadcount",
            };
            return Err(bad_input(format!(
                "scenario {name}: {origin}={t}: must be a whole number of at least 1"
            )));
        }
    }
    // The first scenario is the load phase: each client loads its own part of the keys.
    let load = cmd
        .scenarios
        .first()
        .and_then(|s| resolved.get_key_value(s));
    if let (Some((name, props)), Some(n)) = (load, clients.iter().map(|c| c.1).max()) {
        crate::runner::fanout::slices(props, crate::runner::Phase::Load, n as usize)
            .map_err(|e| bad_input(format!("scenario {name}: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiment::lab::Measured;
    use crate::experiment::model::{CellSummary, Latency};
    use crate::runner::Phase;
    use std::collections::HashMap;
    use tokio_util::sync::CancellationToken;

    /// A result document with five successful inserts (what `insert_attempts` counts).
    fn five_inserts() -> crate::measure::RunDocument {
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
        crate::measure::RunDocument::new("run", t0, t0, &overall, &m.finish()).unwrap_or_default()
    }

    /// A lab whose topologies have a fixed capacity and which records what it was asked.
    #[derive(Default)]
    pub(crate) struct FakeLab {
        pub(crate) capacity: HashMap<String, f64>,
        pub(crate) runs: Vec<(String, String, Phase)>,
        pub(crate) ups: usize,
        pub(crate) downs: usize,
        pub(crate) fail_on: Option<(String, String)>,
        /// `(topology, scenario)` whose run ends with a dead member (once).
        pub(crate) dead_on: Option<(String, String)>,
        pub(crate) recordcounts: Vec<u64>,
        pub(crate) cancel_after_runs: Option<(usize, CancellationToken)>,
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
            props: &crate::workload::Properties,
            phase: Phase,
            _cancel: &CancellationToken,
        ) -> anyhow::Result<Measured> {
            let scenario = props.get("scenario").unwrap_or_default().to_string();
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
            if self.fail_on == Some((d.topology.clone(), scenario.clone())) {
                anyhow::bail!("server went away");
            }
            let threads: f64 = props
                .get("threadcount")
                .and_then(|t| t.parse().ok())
                .unwrap_or(1.0);
            let cap = self.capacity.get(&d.topology).copied().unwrap_or(1000.0);
            let tp = cap.min(threads * 100.0);
            let mut document = five_inserts();
            let mut validity = crate::measure::validity::Validity::valid();
            if self.dead_on.as_ref() == Some(&(d.topology.clone(), scenario)) {
                self.dead_on = None;
                let dead = crate::measure::timeline::Outage {
                    subject: "sh0 (localhost:41110)".into(),
                    from_s: 3.0,
                    duration_s: 10.0,
                    ongoing: true,
                };
                validity.invalid("sh0 (localhost:41110) stopped answering at 3.0 s");
                document.timeline.dead_member = Some(dead);
            }
            Ok(Measured {
                summary: CellSummary {
                    phase: format!("{phase:?}"),
                    operations: tp as u64,
                    runtime_ms: 1000.0,
                    throughput: tp,
                    main_op: "READ".into(),
                    latency: Latency::default(),
                    standin: true,
                    validity,
                    ..Default::default()
                },
                document,
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
        let file = "/gone/my-file.toml".to_string();
        let check = |topologies: [&str; 2], baseline: &str| {
            let mut cmd = CompareCommand {
                topologies: topologies.map(String::from).to_vec(),
                baseline: baseline.into(),
                ..CompareCommand::default()
            };
            // The name stored when it loaded: the file is not read.
            cmd.topology_names.insert(file.clone(), "single".into());
            check_topology_names(&cmd)
        };
        let twice = check([&file, "single"], "single");
        let message = twice
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string());
        assert!(message.contains("both named single"), "{message}");
        assert_eq!(
            check([&file, "microshard-2"], "single").ok(),
            Some(file.clone())
        );
        assert!(check(["single", "microshard-2"], "nope").is_err());
    }

    pub(crate) fn setup() -> Option<(tempfile::TempDir, CompareCommand, NewRun)> {
        let tmp = tempfile::tempdir().ok()?;
        let wl = tmp.path().join("workloads");
        std::fs::create_dir_all(&wl).ok()?;
        for s in ["S1", "S2", "S3"] {
            std::fs::write(wl.join(s), format!("recordcount=10\nscenario={s}\n")).ok()?;
        }
        let cmd = CompareCommand {
            topologies: vec!["single".into(), "microshard-2".into()],
            scenarios: vec!["S1".into(), "S2".into(), "S3".into()],
            threads: Some(32),
            duration_s: Some(1),
            ..Default::default()
        };
        let at = NewRun {
            results_root: tmp.path().join("results"),
            workload_dir: Some(wl),
            client_ceiling: None,
        };
        Some((tmp, cmd, at))
    }

    /// [`compare_with`] on a fake lab, showing nothing.
    async fn run_silently(
        lab: &mut FakeLab,
        prepared: Prepared,
        cancel: &CancellationToken,
    ) -> anyhow::Result<(ExperimentDir, MatrixOutcome)> {
        compare_with(
            &mut Session::new(lab, cancel, &Progress::silent()),
            prepared,
        )
        .await
    }

    pub(crate) fn cancel_never() -> CancellationToken {
        CancellationToken::new()
    }

    pub(crate) fn new_lab() -> FakeLab {
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
    async fn a_failing_cell_tears_down_and_the_rest_goes_on() -> anyhow::Result<()> {
        let Some((_tmp, cmd, at)) = setup() else {
            return Ok(());
        };
        let mut lab = new_lab();
        lab.fail_on = Some(("single".into(), "S2".into()));
        let cancel = CancellationToken::new();
        let (dir, outcome) = run_silently(&mut lab, create(&cmd, &at)?, &cancel).await?;
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

    #[test]
    fn bad_baseline_is_bad_input() {
        let Some((_tmp, mut cmd, at)) = setup() else {
            return;
        };
        cmd.baseline = "nope".into();
        let e = create(&cmd, &at).err();
        assert!(e.is_some_and(|e| crate::exit::is_bad_input(&e)));
        assert!(!at.results_root.exists(), "nothing created for bad input");
    }

    #[tokio::test]
    async fn the_record_round_trips_and_resume_follows_it_without_the_flags_again()
    -> anyhow::Result<()> {
        let Some((_tmp, mut cmd, at)) = setup() else {
            return Ok(());
        };
        cmd.servers.base_port = Some(23_456);
        cmd.image = Some("microshard-standin:test".into());
        cmd.workload.clients = 2;
        cmd.servers.mongod_args = vec!["--workers=2".into()];
        cmd.workload.overrides = vec!["mongodb.url=mongodb://u:secret@h:1/ycsb".into()];
        let prepared = create(&cmd, &at)?;
        // Through JSON and back: the same record.
        let text = serde_json::to_string(&prepared.config)?;
        let back: ExperimentConfig = serde_json::from_str(&text)?;
        assert_eq!(back.command, prepared.config.command);
        // On disk, the secret in `-p` is redacted; everything else is as asked.
        let stored = prepared.dir.config()?;
        assert!(!serde_json::to_string(&stored)?.contains("secret"));
        assert_eq!(stored.command.servers.base_port, Some(23_456));
        assert_eq!(stored.command.baseline, "single");

        // Interrupted after the first cell, resumed with no flag given again.
        let mut lab = new_lab();
        let cancel = CancellationToken::new();
        lab.cancel_after_runs = Some((1, cancel.clone()));
        let (dir, _) = run_silently(&mut lab, prepared, &cancel).await?;
        let resumed = resume(dir.path(), &CompareCommand::default(), Default::default())?;
        assert!(resumed.resumed);
        let mut expected = stored.command.clone();
        assert_eq!(resumed.config.command, expected);
        // A flag given again wins, and is recorded for the next resume.
        let mut again = CompareCommand::default();
        again.servers.base_port = Some(24_000);
        let resumed = resume(dir.path(), &again, Default::default())?;
        expected.servers.base_port = Some(24_000);
        assert_eq!(resumed.config.command, expected);
        assert_eq!(
            dir.config()?.command.servers.base_port,
            Some(23_456),
            "not before it runs"
        );
        let (_, outcome) = run_silently(&mut new_lab(), resumed, &cancel_never()).await?;
        assert_eq!(outcome.measured.len(), 5, "the rest, once");
        assert_eq!(dir.config()?.command, expected);
        Ok(())
    }

    #[test]
    fn a_record_written_before_the_command_was_typed_still_reads() -> anyhow::Result<()> {
        // `experiment.json` as this version wrote it before the record: no `base_port`, `vary`,
        // `records` or `overrides`, and the backend as typed.
        let text = r#"{"schema":"microshard.experiment/1","name":"compare",
            "created":"2026-11-30T00:00:00Z","tool_version":"0.1.0",
            "topologies":["single"],"baseline":"single","scenarios":["S1","S2"],"repeat":1,
            "backend":"Process","bin_dir":"/opt/mongo/bin","extra_mongod_args":[],
            "duration_s":4,"threads":8,"sweep":false,"sweep_threads":[],"sweep_duration_s":10,
            "full":false,"scale_note":"1000 records","properties":{},
            "server_versions":{},"standin":true,"degraded_error_fraction":0.01,
            "client_ceiling":null,"live_server_status":false,"clients":1}"#;
        let c: ExperimentConfig = serde_json::from_str(text)?;
        assert_eq!(
            c.command.servers.backend,
            crate::topology::BackendKind::Process
        );
        assert_eq!(
            c.command.servers.bin_dir,
            Some(PathBuf::from("/opt/mongo/bin"))
        );
        assert_eq!(
            (c.command.servers.base_port, c.command.workload.records),
            (None, None)
        );
        assert_eq!(c.command.threads, Some(8));
        Ok(())
    }
}
