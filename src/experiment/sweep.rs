//! `sweep`: load once, run the workload at each thread count on the same data, and find the
//! maximum and the knee (seed 001's throughput-by-threads table, automated).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use super::flags::{ServerFlags, WorkloadFlags};
use super::knee;
use super::lab::{Deployment, Lab, Session};
use super::metrics::Watched;
use super::model::{
    CompareCommand, DEFAULT_SWEEP_THREADS, ExperimentConfig, NotRunPoint, SweepFile, SweepPoint,
};
pub(crate) use super::model::{SweepOutcome, Variant, Vary};
use super::results::ExperimentDir;
use super::scenario;
use crate::error::bad_input;
use crate::props::flag_values::{parse_duration, parse_threads};
use crate::runner::Phase;
use crate::workload::{Origin, Properties, prop};

mod resume;
pub(crate) use resume::{remaining_curves, reopen, resume_with, stored_outcome};

/// What to sweep against.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SweepTarget {
    /// Bring this topology up, sweep, tear it down.
    Topology(String),
    /// A server that already runs.
    Uri(String),
}

impl SweepTarget {
    /// `--topology` or `--uri`, exactly one; the error names `command`.
    pub(crate) fn given(
        command: &str,
        topology: Option<String>,
        uri: Option<String>,
    ) -> anyhow::Result<SweepTarget> {
        match (topology, uri) {
            (Some(t), None) => Ok(SweepTarget::Topology(t)),
            (None, Some(u)) => Ok(SweepTarget::Uri(u)),
            _ => Err(bad_input(format!(
                "{command}: give --topology NAME or --uri URI"
            ))),
        }
    }

    /// Where it runs, as labels and files name it: a topology by the name stored when it loaded
    /// (`name`; else its file stem, never its path), a URI with its password hidden.
    pub(crate) fn shown_as(&self, name: Option<&String>) -> String {
        match self {
            SweepTarget::Topology(t) => {
                (name.cloned()).unwrap_or_else(|| crate::topology::topology_label(t, None))
            }
            SweepTarget::Uri(u) => crate::redact::redact_uri(u),
        }
    }

    /// The topology to bring up, as given (none for a URI).
    pub(crate) fn topologies(&self) -> &[String] {
        match self {
            SweepTarget::Topology(t) => std::slice::from_ref(t),
            SweepTarget::Uri(_) => &[],
        }
    }

    /// Where the sweep runs, as a plan shows it (a URI's password hidden).
    pub(crate) fn shown(&self) -> String {
        match self {
            SweepTarget::Topology(t) => t.clone(),
            SweepTarget::Uri(u) => crate::redact::redact_uri(u),
        }
    }
}

/// What `sweep` is asked to do: the one record of the command. clap parses it,
/// [`SweepCommand::checked`] settles it (creating nothing), and it is stored in its directory
/// (`sweep-request.json`, secrets redacted) so `sweep --resume` measures the same sweep. Fields
/// marked `serde(skip)` are the command line's only.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
#[command(
    mut_arg("backend", |a| a.help("Backend for `--topology`: process, docker or existing")),
    mut_arg("overrides", |a| a.help("Set a workload property (repeatable)")),
    mut_arg("warmup", |a| a.help("Leave the first DURATION of every point out of its measurement (`microshard.warmup`)")),
    mut_arg("clients", |a| a.help("Drive every point with N client processes (`threadcount` split across them)")),
    mut_arg("full", |a| a.help("Use the file's record count instead of the laptop scale")),
)]
pub(crate) struct SweepCommand {
    /// Workload file (or a name in `workloads/`).
    #[arg(short = 'P', value_name = "FILE", required_unless_present = "resume")]
    pub workload: Option<String>,
    /// Finish a sweep cut short (Ctrl-C, a dead member): its stored request is measured again
    /// without the curves and points it has (give --standin/--bin-dir, --base-port, --uri or -p
    /// again to change those).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["topology", "vary"])]
    #[serde(skip)]
    pub resume: Option<PathBuf>,
    /// Thread counts, comma-separated.
    #[arg(long, default_value = DEFAULT_SWEEP_THREADS, value_parser = parse_threads)]
    pub threads: ::std::vec::Vec<u32>,
    /// Bring this topology up for the sweep and tear it down after.
    #[arg(long, conflicts_with = "uri")]
    #[serde(skip)]
    pub topology: Option<String>,
    /// Sweep against a server that already runs.
    #[arg(long)]
    #[serde(skip)]
    pub uri: Option<String>,
    /// `--topology` or `--uri`, settled.
    #[arg(skip = SweepTarget::Topology(String::new()))]
    pub target: SweepTarget,
    /// The servers' backend, binaries, arguments and ports, kept so `--resume` brings the same up.
    #[command(flatten)]
    #[serde(flatten)]
    pub servers: ServerFlags,
    /// Length of each thread count's run.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub duration: Duration,
    /// What every point runs with.
    #[command(flatten)]
    #[serde(flatten)]
    pub workload_flags: WorkloadFlags,
    /// Do not load: the data is already there.
    #[arg(long)]
    pub no_load: bool,
    /// One curve per value of a property, e.g. `readbatchsize=1,10,20` (ids per query).
    #[arg(long = "vary", value_name = "PROPERTY=V1,V2,...", value_parser = Vary::parse)]
    pub vary: Option<Vary>,
    /// Curves per value, to show the spread (the seed measured three).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Where the run directory is created.
    #[arg(long = "out", value_name = "OUT", default_value = "results")]
    pub results_root: PathBuf,
    /// The name the topology is shown by, decided when it loaded ([`SweepTarget::shown_as`]).
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_name: Option<String>,
}

impl SweepCommand {
    /// The record the flags ask for, settled: the target named, `--vary` parsed, `--bin-dir`
    /// made absolute. Each bad flag is one line naming it (exit
    /// status 2); nothing is created (`--standin`'s links are made by the servers check).
    pub(crate) fn checked(mut self) -> anyhow::Result<SweepCommand> {
        self.target = SweepTarget::given("sweep", self.topology.take(), self.uri.take())?;
        self.servers = self.servers.checked()?;
        self.workload_flags = self.workload_flags.checked();
        Ok(self)
    }

    /// The workload file (`-P`, or the stored request's).
    fn workload(&self) -> &str {
        self.workload.as_deref().unwrap_or_default()
    }

    /// Where the sweep runs, as its labels and files name it ([`SweepTarget::shown_as`]).
    fn where_(&self) -> String {
        self.target.shown_as(self.topology_name.as_ref())
    }
}

/// What a sweep resolves before anything starts: the workload at the chosen scale and every
/// curve it will measure (each `--vary` value checked). `sweep` resolves it once, before the
/// servers' check links anything, and hands it to its dry run, [`sweep_with`] or [`resume_with`].
pub(crate) struct Resolved {
    /// The workload file: its name, properties as the experiment record stores them, scale
    /// note and `-p` parsed.
    pub one: scenario::OneWorkload,
    /// Its properties at the chosen scale, with `-p` applied.
    pub base: Properties,
    /// Every curve, in order, with its properties.
    pub variants: Vec<(Variant, Properties)>,
}

impl Resolved {
    /// `-p operationcount=N` keeps count-bounded points (the seed's 10,000 queries per run),
    /// each still bounded by --duration; otherwise every point runs its whole duration.
    pub(crate) fn count_bounded(&self) -> bool {
        self.one
            .overrides
            .iter()
            .any(|(k, _)| k == prop::OPERATIONCOUNT.name)
    }
}

/// Resolves `cfg` (see [`Resolved`]); bad input names the flag.
pub(crate) fn resolve(cfg: &SweepCommand) -> anyhow::Result<Resolved> {
    if cfg.threads.is_empty() || cfg.threads.contains(&0) {
        return Err(bad_input(
            "--threads: give positive thread counts, e.g. 1,2,4,8",
        ));
    }
    let one = cfg.workload_flags.one_workload(
        cfg.workload(),
        "a sweep, whose points would each overwrite the last one's files; measure the point you need with `microshard run`, or use compare",
    )?;
    let base = one.base();
    // Every variant is checked before anything starts.
    let variants = variants(&base, cfg.vary.as_ref(), cfg.repeat)?;
    Ok(Resolved {
        one,
        base,
        variants,
    })
}

/// A sweep measured and stored: its run directory, its curves and the title its charts carry.
/// The caller writes the reports (`report::write_reports`, and `report::sweep::write_vary` for
/// several curves), then ends with [`Swept::interrupted`] when the sweep was cut short.
pub(crate) struct Swept {
    /// The run directory.
    pub dir: ExperimentDir,
    /// Every curve measured.
    pub outcome: SweepOutcome,
    /// "WORKLOAD on TOPOLOGY".
    pub label: String,
    /// Curves planned (values × repetitions).
    pub planned: usize,
}

impl Swept {
    /// The error an interrupted sweep ends with, after its reports are written: how far it got
    /// and the command that finishes it, keeping what was measured.
    pub(crate) fn interrupted(&self) -> anyhow::Error {
        let (curves, threads) = (&self.outcome.curves, self.outcome.threads.len());
        let complete = curves
            .iter()
            .filter(|(_, s)| s.points.len() == threads)
            .count();
        crate::error::interrupted(format!(
            "after {complete} of {} curves; what was measured is stored in {dir}; finish with `microshard sweep --resume {dir}`",
            self.planned,
            dir = self.dir.path().display()
        ))
    }
}

/// Runs a sweep and stores its configuration and curves in a new run directory.
pub(crate) async fn sweep_with<L: Lab>(
    s: &mut Session<'_, L>,
    cfg: &SweepCommand,
    resolved: &Resolved,
) -> anyhow::Result<Swept> {
    let where_ = cfg.where_();
    let mut config = sweep_record(cfg, resolved, &where_);
    config.begin_session(false, Default::default());
    let dir = ExperimentDir::create(&cfg.results_root, &config.command.name)?;
    dir.write_config(&config)?;
    resume::store_request(&dir, cfg)?;
    s.progress
        .line(&format!("microshard: results in {}", dir.path().display()));
    let start = (dir, config, !cfg.no_load);
    run_sweep(s, cfg, resolved, start).await
}

/// Reaches the target, loads (`start`: the sweep's directory and record, new or read back by
/// `--resume`, and whether it loads), measures every curve not stored yet and tears the target
/// down.
async fn run_sweep<L: Lab>(
    s: &mut Session<'_, L>,
    cfg: &SweepCommand,
    resolved: &Resolved,
    (dir, mut config, load): (ExperimentDir, ExperimentConfig, bool),
) -> anyhow::Result<Swept> {
    let progress = s.progress;
    let where_ = cfg.where_();
    let label = format!("{} on {where_}", resolved.one.name);
    progress.line(&format!("microshard: sizes: {}", config.scale_note));
    for w in super::scenario::unread_override_warnings(&cfg.workload_flags.overrides) {
        progress.line(&format!("microshard: warning: {w}"));
    }
    let (deployment, handle) = reach_target(s, &cfg.target, &where_).await?;
    let curves = Curves {
        variants: &resolved.variants,
        vary: cfg.vary.as_ref(),
        repeat: cfg.repeat,
        threads: &cfg.threads,
        secs: cfg.duration.as_secs().max(1),
        count_bounded: resolved.count_bounded(),
        label: &label,
        file_base: &where_,
        file_label: sweep_label,
        keep_partial: true,
    };
    // The data is loaded first (not with `--no-load`, nor when a resume finds it in place).
    let result = async {
        if load {
            let bar = progress.phase(&format!("{where_}: load"), None);
            let m = (s.lab)
                .run(&deployment, &resolved.base, Phase::Load, s.cancel)
                .await?;
            bar.finish(&format!("{:.0} ops/s", m.summary.throughput));
        }
        measure_curves(s, &dir, &deployment, &curves).await
    }
    .await;
    if let Some(h) = handle {
        let bar = progress.phase(&format!("{where_}: teardown"), None);
        let down = s.lab.down(h).await;
        bar.finish(if down.is_ok() { "down" } else { "failed" });
        down?;
    }
    let outcome = SweepOutcome {
        property: cfg.vary.as_ref().map(|v| v.property.clone()),
        threads: cfg.threads.clone(),
        curves: result?,
        topology: None,
    };
    if outcome.curves.iter().any(|(_, c)| c.standin) && !config.standin {
        config.standin = true;
        dir.write_config(&config)?;
    }
    Ok(Swept {
        dir,
        outcome,
        label,
        planned: resolved.variants.len(),
    })
}

/// The configuration record a sweep stores. `report` reads a sweep's directory as a one-cell
/// experiment, so the record has compare's shape.
fn sweep_record(cfg: &SweepCommand, resolved: &Resolved, where_: &str) -> ExperimentConfig {
    let secs = cfg.duration.as_secs().max(1);
    let command = CompareCommand {
        name: format!("sweep-{}", resolved.one.name),
        topologies: vec![where_.to_string()],
        baseline: where_.to_string(),
        scenarios: vec![resolved.one.name.clone()],
        servers: ServerFlags {
            backend: cfg.servers.backend,
            ..Default::default()
        },
        duration_s: Some(secs),
        sweep: true,
        sweep_threads: cfg.threads.clone(),
        sweep_duration_s: Some(secs),
        workload: cfg.workload_flags.clone(),
        ..CompareCommand::default()
    };
    let one = &resolved.one;
    ExperimentConfig::new(command, one.scale_note.clone(), one.props.clone())
}

/// The deployment a sweep runs against: a topology brought up (with the handle that tears it
/// down), or a server that already runs at `--uri` (nothing to tear down).
pub(super) async fn reach_target<L: Lab>(
    s: &mut Session<'_, L>,
    target: &SweepTarget,
    where_: &str,
) -> anyhow::Result<(Deployment, Option<L::Handle>)> {
    Ok(match target {
        SweepTarget::Topology(t) => {
            let bar = s.progress.phase(&format!("{where_}: bring-up"), None);
            let (d, h) = s.lab.up(t, s.cancel).await?;
            bar.finish("up");
            (d, Some(h))
        }
        SweepTarget::Uri(u) => (
            Deployment {
                topology: where_.to_string(),
                entry_uri: u.clone(),
                watched: vec![Watched::new("entry", "entry", u)],
                ..Default::default()
            },
            None,
        ),
    })
}

/// Every curve a sweep measures, in order: each value of the varied property (or the workload
/// as it is) × `repeat`. Each value is checked against `base` here, before anything starts.
pub(crate) fn variants(
    base: &Properties,
    vary: Option<&Vary>,
    repeat: u32,
) -> anyhow::Result<Vec<(Variant, Properties)>> {
    crate::error::flag_at_least("--repeat", u64::from(repeat), 1)?;
    let values: Vec<Option<String>> = match vary {
        Some(v) => v.values.iter().cloned().map(Some).collect(),
        None => vec![None],
    };
    let mut out = Vec::new();
    for value in values {
        let mut p = base.clone();
        if let (Some(vary), Some(value)) = (vary, &value) {
            p.set(
                vary.property.clone(),
                value.clone(),
                Origin::Flag("--vary".into()),
            );
            scenario::check(&format!("--vary {}={value}", vary.property), &p)?;
        }
        for repeat in 1..=repeat {
            out.push((
                Variant {
                    value: value.clone(),
                    repeat,
                },
                p.clone(),
            ));
        }
    }
    Ok(out)
}

/// How a set of curves is measured and stored: by `sweep`, and by `compare --sweep` on each
/// topology (one code path, so both store and label their curves alike).
#[derive(Debug)]
pub(crate) struct Curves<'a> {
    /// The curves, from [`variants`].
    pub variants: &'a [(Variant, Properties)],
    /// The varied property, if any.
    pub vary: Option<&'a Vary>,
    /// Curves per value.
    pub repeat: u32,
    /// Thread counts of every curve.
    pub threads: &'a [u32],
    /// Seconds per point.
    pub secs: u64,
    /// Points end at `operationcount` (still bounded by `secs`) instead of running `secs`.
    pub count_bounded: bool,
    /// What progress lines and sweep files call the curves (`S2 on single`).
    pub label: &'a str,
    /// What sweep files are named after (the topology or the redacted URI).
    pub file_base: &'a str,
    /// How a curve's name becomes its sweep file's label (each command keeps its file names).
    pub file_label: fn(&str) -> String,
    /// Store a curve cut short by Ctrl-C (`sweep`, which is never resumed; a resumed `compare`
    /// must measure it again rather than take it for finished).
    pub keep_partial: bool,
}

/// Measures every curve on a loaded deployment and stores each the moment it exists; a curve
/// already stored with every thread count is taken as stored (`compare --resume`, later
/// repetitions of the matrix).
pub(crate) async fn measure_curves<L: Lab>(
    s: &mut Session<'_, L>,
    dir: &ExperimentDir,
    deployment: &Deployment,
    c: &Curves<'_>,
) -> anyhow::Result<Vec<(Variant, SweepFile)>> {
    let progress = s.progress;
    let mut curves = Vec::new();
    for (variant, props) in c.variants {
        if s.cancel.is_cancelled() {
            break;
        }
        let name = variant_label(c.file_base, c.vary, variant, c.repeat);
        let file = (c.file_label)(&name);
        let stored = dir.read_sweep(&file);
        if let Some(stored) = stored.clone().filter(|f| f.points.len() == c.threads.len()) {
            let knee = stored.knee_threads.map_or("?".into(), |k| k.to_string());
            progress.line(&format!(
                "microshard: {name}: using the stored sweep (knee {knee} threads)"
            ));
            curves.push((variant.clone(), stored));
            continue;
        }
        // `sweep --resume`: a curve Ctrl-C cut short keeps the points it measured.
        let kept = stored
            .filter(|_| c.keep_partial)
            .map_or(Vec::new(), |f| f.points);
        if !kept.is_empty() {
            progress.line(&format!(
                "microshard: {name}: keeping the {} point(s) measured earlier",
                kept.len()
            ));
        }
        let what = variant_label(c.label, c.vary, variant, c.repeat);
        let one = OneCurve {
            props,
            label: &what,
            kept,
        };
        let Some(sweep) = measure_curve(s, deployment, c, one).await? else {
            break;
        };
        dir.write_sweep(&file, &sweep)?;
        let dead = sweep.dead.clone();
        curves.push((variant.clone(), sweep));
        if let Some(reason) = dead {
            not_run_curves(dir, c, curves.len(), &reason, &mut curves)?;
            break;
        }
    }
    Ok(curves)
}

/// One curve to measure: its properties, what it is called and the points kept from an earlier
/// invocation (`sweep --resume`).
struct OneCurve<'a> {
    /// The curve's properties.
    props: &'a Properties,
    /// What progress lines and the sweep file call it.
    label: &'a str,
    /// Points measured earlier, not measured again.
    kept: Vec<SweepPoint>,
}

/// Measures a curve's thread counts that have no kept point and adds the server's memory at
/// its end; `None` when Ctrl-C cut it short and partial curves are not kept.
async fn measure_curve<L: Lab>(
    s: &mut Session<'_, L>,
    deployment: &Deployment,
    c: &Curves<'_>,
    one: OneCurve<'_>,
) -> anyhow::Result<Option<SweepFile>> {
    let threads: Vec<u32> = c
        .threads
        .iter()
        .copied()
        .filter(|t| !one.kept.iter().any(|p| p.threads == *t))
        .collect();
    let (measured, not_run, dead) = sweep_points(s, deployment, c, &one, &threads).await?;
    if s.cancel.is_cancelled() && !c.keep_partial {
        return Ok(None);
    }
    let mut points = one.kept;
    points.extend(measured);
    points.sort_by_key(|p| c.threads.iter().position(|t| *t == p.threads));
    let mut sweep = swept_curve(one.label, c.threads, points, not_run, dead);
    if s.lab.collects_server_metrics() && !s.cancel.is_cancelled() {
        let table = one.props.text(&prop::TABLE);
        sweep.memory = Some(
            super::metrics::memory_at_end(
                &super::facts::memory_members(deployment),
                &deployment.entry_uri,
                (crate::cluster::YCSB_DB, table),
                super::metrics::machine_bytes(&deployment.entry_uri),
            )
            .await,
        );
    }
    Ok(Some(sweep))
}

/// Records every curve after the `done` first as not run (a member died), each as a stored
/// curve with no points, so reports show it and a resume measures it.
fn not_run_curves(
    dir: &ExperimentDir,
    c: &Curves<'_>,
    done: usize,
    reason: &str,
    curves: &mut Vec<(Variant, SweepFile)>,
) -> anyhow::Result<()> {
    for (variant, _) in c.variants.iter().skip(done) {
        let name = variant_label(c.file_base, c.vary, variant, c.repeat);
        let label = variant_label(c.label, c.vary, variant, c.repeat);
        let not_run = c
            .threads
            .iter()
            .map(|&threads| NotRunPoint {
                threads,
                reason: reason.to_string(),
            })
            .collect();
        let sweep = swept_curve(&label, c.threads, Vec::new(), not_run, Some(reason.into()));
        dir.write_sweep(&(c.file_label)(&name), &sweep)?;
        curves.push((variant.clone(), sweep));
    }
    Ok(())
}

/// Reads back the curves [`measure_curves`] stored for `variants` (those that exist), each
/// varying `vary` with `repeat` curves per value, as [`Curves`] names their files.
pub(crate) fn stored_curves(
    dir: &ExperimentDir,
    variants: &[Variant],
    (vary, repeat): (Option<&Vary>, u32),
    file_base: &str,
    file_label: fn(&str) -> String,
) -> Vec<(Variant, SweepFile)> {
    variants
        .iter()
        .filter_map(|v| {
            let file = file_label(&variant_label(file_base, vary, v, repeat));
            Some((v.clone(), dir.read_sweep(&file)?))
        })
        .collect()
}

impl Curves<'_> {
    /// A curve's properties (`base`) for the point at `n` threads.
    fn point_props(&self, base: &Properties, n: u32) -> Properties {
        let mut props = base.clone();
        props.set_value(&prop::THREADCOUNT, n, Origin::Experiment);
        if !self.count_bounded {
            // Bounded by time alone: every point runs its full duration (`operationcount=0`).
            props.set_value(&prop::OPERATIONCOUNT, 0, Origin::Experiment);
        }
        props.set_value(&prop::MAXEXECUTIONTIME, self.secs, Origin::Experiment);
        props
    }
}

/// Runs the curve at each of `threads` for `secs` seconds (or, `count_bounded`, for its
/// `operationcount` within at most `secs`): its points, those not run and why a member died.
async fn sweep_points<L: Lab>(
    s: &mut Session<'_, L>,
    deployment: &Deployment,
    c: &Curves<'_>,
    one: &OneCurve<'_>,
    threads: &[u32],
) -> anyhow::Result<(Vec<SweepPoint>, Vec<NotRunPoint>, Option<String>)> {
    let (cancel, progress) = (s.cancel, s.progress);
    let mut points = Vec::new();
    let mut not_run = Vec::new();
    let mut dead: Option<String> = None;
    for &n in threads {
        if cancel.is_cancelled() {
            break;
        }
        if let Some(reason) = &dead {
            not_run.push(NotRunPoint {
                threads: n,
                reason: reason.clone(),
            });
            continue;
        }
        let bar = progress.phase(
            &format!("{}: sweep {n} threads", one.label),
            Some(Duration::from_secs(c.secs)),
        );
        let props = c.point_props(one.props, n);
        let watch = match s.lab.collects_server_metrics() {
            true => Some(super::crosscheck::PointWatch::begin(&deployment.watched).await),
            false => None,
        };
        let measured = s.lab.run(deployment, &props, Phase::Run, cancel).await;
        if cancel.is_cancelled() {
            bar.finish("interrupted");
            break;
        }
        let mut m = measured.with_context(|| format!("sweep at {n} threads"))?;
        let died = super::lab::dead_member(&m.document, &format!("{n} threads"));
        bar.finish(&match &died {
            Some(_) => "ended early: a member is dead".to_string(),
            None => format!("{:.0} ops/s", m.summary.throughput),
        });
        m.summary.threads = n;
        let crosscheck = match watch {
            Some(w) if died.is_none() => {
                w.end(&m.document, super::crosscheck::upsert(&props)).await
            }
            _ => None,
        };
        points.push(SweepPoint {
            threads: n,
            summary: m.summary,
            crosscheck,
        });
        // The dead point itself is kept (invalid); the points after it are not run.
        dead = died;
    }
    Ok((points, not_run, dead))
}

/// The curve's sweep file from its measured points, with the maximum and the knee found.
fn swept_curve(
    label: &str,
    threads: &[u32],
    points: Vec<SweepPoint>,
    not_run: Vec<NotRunPoint>,
    dead: Option<String>,
) -> SweepFile {
    let k = knee::find(
        &points
            .iter()
            .map(|p| (p.threads, p.summary.throughput))
            .collect::<Vec<_>>(),
        knee::DEFAULT_TOLERANCE,
    );
    SweepFile {
        label: crate::redact::redact_text(label),
        standin: points.iter().any(|p| p.summary.standin),
        points,
        max_threads: k.map(|k| k.max_threads),
        knee_threads: k.map(|k| k.knee_threads),
        tolerance: knee::DEFAULT_TOLERANCE,
        not_run,
        dead,
        planned_threads: threads.to_vec(),
        memory: None,
    }
}

/// `label` with the varied value and the repetition, when there are several curves.
pub(crate) fn variant_label(label: &str, vary: Option<&Vary>, v: &Variant, repeats: u32) -> String {
    let mut out = label.to_string();
    if let (Some(vary), Some(value)) = (vary, &v.value) {
        out.push_str(&format!(" {}={value}", vary.property));
    }
    if repeats > 1 {
        out.push_str(&format!(" #{}", v.repeat));
    }
    out
}

/// A sweep curve's name as a file label: letters, digits and `-`, everything else `_`.
pub(crate) fn sweep_label(where_: &str) -> String {
    super::results::keep_chars(where_, "-")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiment::lab::Measured;
    use crate::experiment::model::CellSummary;
    use tokio_util::sync::CancellationToken;

    /// `microshard sweep ARGS` as clap parses it (not checked).
    pub(crate) fn command(args: &[&str]) -> SweepCommand {
        use clap::FromArgMatches;
        let cli = <SweepCommand as clap::Args>::augment_args(clap::Command::new("sweep"));
        let matches = cli.get_matches_from(std::iter::once("sweep").chain(args.iter().copied()));
        SweepCommand::from_arg_matches(&matches).expect("the test's flags parse")
    }

    /// Throughput grows 100 ops/s per thread up to a ceiling, then falls off slowly.
    pub(crate) struct Curve {
        pub(crate) loads: usize,
        pub(crate) downs: usize,
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
                    ..Default::default()
                },
                (),
            ))
        }
        async fn run(
            &mut self,
            _d: &Deployment,
            props: &Properties,
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
                document: Default::default(),
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
}
