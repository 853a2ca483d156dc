//! `sweep`: load once, run the workload at each thread count on the same data, and find the
//! maximum and the knee (seed 001's throughput-by-threads table, automated).

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use anyhow::Context;

use super::compare::write_reports;
use super::knee;
use super::lab::{Deployment, Lab};
use super::metrics::Watched;
use super::model::{
    CONFIG_SCHEMA, CompareCommand, DEFAULT_DEGRADED_FRACTION, ExperimentConfig, NotRunPoint,
    SweepFile, SweepPoint,
};
use super::progress::Progress;
use super::results::ExperimentDir;
use super::scenario::{self, PropertyMap, Scaling};
use crate::error::bad_input;
use crate::runner::Phase;
use crate::workload::prop;

/// What to sweep against.
#[derive(Debug, Clone)]
pub(crate) enum SweepTarget {
    /// Bring this topology up, sweep, tear it down.
    Topology(String),
    /// A server that already runs.
    Uri(String),
}

/// Everything `sweep` is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct SweepConfig {
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
    pub backend: crate::topology::BackendKind,
    /// `--vary PROPERTY=V1,V2,...`: one curve per value (seed 2: ids per query).
    pub vary: Option<Vary>,
    /// Curves per value (`--repeat`), to show the spread.
    pub repeat: u32,
    /// Client processes per point (`--clients`), recorded with the sweep.
    pub clients: usize,
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
    /// Parses `PROPERTY=V1,V2,...`; the error names the flag.
    pub(crate) fn parse(text: &str) -> anyhow::Result<Vary> {
        let (property, values) = text
            .split_once('=')
            .filter(|(k, v)| !k.trim().is_empty() && !v.trim().is_empty())
            .ok_or_else(|| bad_input(format!("--vary {text}: expected PROPERTY=V1,V2,...")))?;
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(String::is_empty) {
            return Err(bad_input(format!("--vary {text}: an empty value")));
        }
        let property = property.trim();
        if crate::workload::prop::lookup(property).is_none() {
            let hint = crate::workload::properties::near_miss(property)
                .map(|k| format!("did you mean '{k}'? "))
                .unwrap_or_default();
            return Err(bad_input(format!(
                "--vary {text}: '{property}' is not a property microshard reads; {hint}\
                 (varying it would measure the same configuration {} times)",
                values.len()
            )));
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
    /// The topology the curves ran on, in `compare --sweep --vary` (one outcome per topology);
    /// `None` in `sweep`, whose run directory holds one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
}

impl SweepOutcome {
    /// The varied property's values in the order measured (`[None]` without `--vary`).
    pub(crate) fn values(&self) -> Vec<Option<String>> {
        let mut values: Vec<Option<String>> = Vec::new();
        for (v, _) in &self.curves {
            if !values.contains(&v.value) {
                values.push(v.value.clone());
            }
        }
        values
    }

    /// Repetitions per value.
    pub(crate) fn repeats(&self) -> u32 {
        self.curves.iter().map(|(v, _)| v.repeat).max().unwrap_or(1)
    }

    /// True when the outcome is one plain curve (no `--vary`, one repetition).
    pub(crate) fn is_single(&self) -> bool {
        self.property.is_none() && self.curves.len() <= 1
    }
}

/// What a sweep resolves before anything starts: the workload's name and properties at the
/// chosen scale, every curve it will measure (each `--vary` value checked) and the scale note.
/// `sweep` and its `--dry-run` both start here.
pub(crate) struct Resolved {
    /// The workload file's name.
    pub name: String,
    /// Its properties at the chosen scale, with `-p` applied.
    pub base: PropertyMap,
    /// Every curve, in order, with its properties.
    pub variants: Vec<(Variant, PropertyMap)>,
    /// What scale the sizes are (`--full`, laptop scale).
    pub scale_note: String,
    /// The `-p` overrides, parsed.
    pub overrides: Vec<(String, String)>,
    /// Every resolved scenario (the one workload), as the experiment record stores them.
    pub props: std::collections::BTreeMap<String, PropertyMap>,
}

/// Resolves `cfg` (see [`Resolved`]); bad input names the flag.
pub(crate) fn resolve(cfg: &SweepConfig) -> anyhow::Result<Resolved> {
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
    // Every variant is checked before anything starts.
    let variants = variants(&base, cfg.vary.as_ref(), cfg.repeat)?;
    Ok(Resolved {
        name,
        base,
        variants,
        scale_note,
        overrides,
        props,
    })
}

/// Runs a sweep and stores it (configuration, sweep file, chart) in a new run directory.
pub(crate) async fn sweep_with<L: Lab>(
    lab: &mut L,
    cfg: &SweepConfig,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<(ExperimentDir, SweepOutcome)> {
    let Resolved {
        name,
        base,
        variants,
        scale_note,
        overrides,
        props,
    } = resolve(cfg)?;
    // A topology is shown (and its files named) by its name, never by the path it was given as.
    let where_ = match &cfg.target {
        SweepTarget::Topology(t) => crate::report::topology_label(t, None),
        SweepTarget::Uri(u) => crate::redact::redact_uri(u),
    };
    let label = format!("{name} on {where_}");
    let secs = cfg.duration.as_secs().max(1);
    // `report` reads a sweep's directory as a one-cell experiment: the record has compare's shape.
    let config = ExperimentConfig {
        schema: CONFIG_SCHEMA.into(),
        created: chrono::Utc::now().to_rfc3339(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command: CompareCommand {
            name: format!("sweep-{name}"),
            topologies: vec![where_.clone()],
            baseline: where_.clone(),
            scenarios: vec![name.clone()],
            repeat: 1,
            backend: cfg.backend,
            bin_dir: None,
            extra_mongod_args: Vec::new(),
            image: None,
            base_port: None,
            duration_s: Some(secs),
            threads: None,
            sweep: true,
            sweep_threads: cfg.threads.clone(),
            sweep_duration_s: Some(secs),
            vary: None,
            full: cfg.full,
            records: (!cfg.full).then_some(cfg.records),
            overrides: cfg.overrides.clone(),
            live_server_status: false,
            clients: cfg.clients,
        },
        scale_note,
        properties: props.clone(),
        host: crate::measure::HostFacts::collect(),
        server_versions: Default::default(),
        standin: false,
        degraded_error_fraction: DEFAULT_DEGRADED_FRACTION,
        client_ceiling: None,
        sessions: Vec::new(),
    };
    let dir = ExperimentDir::create(&cfg.results_root, &config.command.name)?;
    dir.write_config(&config)?;
    progress.line(&format!("microshard: results in {}", dir.path().display()));
    progress.line(&format!("microshard: sizes: {}", config.scale_note));

    let (deployment, handle) = match &cfg.target {
        SweepTarget::Topology(t) => {
            let bar = progress.phase(&format!("{where_}: bring-up"), None);
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
                default_write_concern: None,
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
        // `-p operationcount=N` keeps count-bounded points (the seed's 10,000 queries per run),
        // each still bounded by --duration; otherwise every point runs its whole duration.
        let count_bounded = overrides
            .iter()
            .any(|(k, _)| k == prop::OPERATIONCOUNT.name);
        let curves = Curves {
            variants: &variants,
            vary: cfg.vary.as_ref(),
            repeat: cfg.repeat,
            threads: &cfg.threads,
            secs,
            count_bounded,
            label: &label,
            file_base: &where_,
            file_label: sweep_label,
            keep_partial: true,
        };
        let curves = measure_curves(lab, &dir, &deployment, &curves, cancel, progress).await?;
        anyhow::Ok(curves)
    };
    let result = body.await;
    if let Some(h) = handle {
        let bar = progress.phase(&format!("{where_}: teardown"), None);
        let down = lab.down(h).await;
        bar.finish(if down.is_ok() { "down" } else { "failed" });
        down?;
    }
    let curves = result?;
    let outcome = SweepOutcome {
        property: cfg.vary.as_ref().map(|v| v.property.clone()),
        threads: cfg.threads.clone(),
        curves,
        topology: None,
    };
    if outcome.curves.iter().any(|(_, s)| s.standin) {
        let mut c = config;
        c.standin = true;
        dir.write_config(&c)?;
    }
    write_reports(&dir)?;
    if !outcome.is_single() {
        write_vary(&dir, &outcome, &label, "vary")?;
    }
    if cancel.is_cancelled() {
        anyhow::bail!(
            "interrupted after {} of {} curves; what was measured is stored in {}",
            outcome.curves.len(),
            variants.len(),
            dir.path().display()
        );
    }
    Ok((dir, outcome))
}

/// Every curve a sweep measures, in order: each value of the varied property (or the workload
/// as it is) × `repeat`. Each value is checked against `base` here, before anything starts.
pub(crate) fn variants(
    base: &PropertyMap,
    vary: Option<&Vary>,
    repeat: u32,
) -> anyhow::Result<Vec<(Variant, PropertyMap)>> {
    if repeat == 0 {
        return Err(bad_input("--repeat: must be at least 1"));
    }
    let values: Vec<Option<String>> = match vary {
        Some(v) => v.values.iter().cloned().map(Some).collect(),
        None => vec![None],
    };
    let mut out = Vec::new();
    for value in values {
        let mut p = base.clone();
        if let (Some(vary), Some(value)) = (vary, &value) {
            p.insert(vary.property.clone(), value.clone());
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
    pub variants: &'a [(Variant, PropertyMap)],
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
    lab: &mut L,
    dir: &ExperimentDir,
    deployment: &Deployment,
    c: &Curves<'_>,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Vec<(Variant, SweepFile)>> {
    let mut curves = Vec::new();
    for (variant, props) in c.variants {
        if cancel.is_cancelled() {
            break;
        }
        let name = variant_label(c.file_base, c.vary, variant, c.repeat);
        let file = (c.file_label)(&name);
        if let Some(stored) = dir
            .read_sweep(&file)
            .filter(|s| s.points.len() == c.threads.len())
        {
            progress.line(&format!(
                "microshard: {name}: using the stored sweep (knee {} threads)",
                stored
                    .knee_threads
                    .map(|k| k.to_string())
                    .unwrap_or_else(|| "?".into())
            ));
            curves.push((variant.clone(), stored));
            continue;
        }
        let what = variant_label(c.label, c.vary, variant, c.repeat);
        let sweep = sweep_points(
            lab,
            deployment,
            props,
            c.threads,
            c.secs,
            c.count_bounded,
            &what,
            cancel,
            progress,
        )
        .await?;
        if cancel.is_cancelled() && !c.keep_partial {
            break;
        }
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
        let sweep = SweepFile {
            label: crate::redact::redact_text(&variant_label(c.label, c.vary, variant, c.repeat)),
            points: Vec::new(),
            max_threads: None,
            knee_threads: None,
            tolerance: knee::DEFAULT_TOLERANCE,
            standin: false,
            not_run: c
                .threads
                .iter()
                .map(|&threads| NotRunPoint {
                    threads,
                    reason: reason.to_string(),
                })
                .collect(),
            dead: Some(reason.to_string()),
            planned_threads: c.threads.to_vec(),
        };
        dir.write_sweep(&(c.file_label)(&name), &sweep)?;
        curves.push((variant.clone(), sweep));
    }
    Ok(())
}

/// Reads back the curves [`measure_curves`] stored for `variants` (those that exist).
pub(crate) fn stored_curves(
    dir: &ExperimentDir,
    variants: &[Variant],
    vary: Option<&Vary>,
    repeat: u32,
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

/// Writes an outcome's seed-2 table and chart into the run directory as `{stem}.md`, `.csv`,
/// `.txt`, `.json`, `.svg` and, when a font is found, `.png`.
pub(crate) fn write_vary(
    dir: &ExperimentDir,
    outcome: &SweepOutcome,
    label: &str,
    stem: &str,
) -> anyhow::Result<()> {
    dir.write_text(
        &format!("{stem}.md"),
        &render_vary(outcome, VaryFormat::Markdown),
    )?;
    dir.write_text(
        &format!("{stem}.csv"),
        &render_vary(outcome, VaryFormat::Csv),
    )?;
    dir.write_text(
        &format!("{stem}.txt"),
        &render_vary(outcome, VaryFormat::Table),
    )?;
    dir.write_text(
        &format!("{stem}.json"),
        &serde_json::to_string_pretty(outcome)?,
    )?;
    let chart = vary_chart(outcome, label)?;
    dir.write_text(&format!("{stem}.svg"), &chart.svg)?;
    if let Ok(png) = crate::report::png::svg_to_png(&chart.svg) {
        super::results::write_bytes_atomic(&dir.path().join(format!("{stem}.png")), &png)?;
    }
    Ok(())
}

/// Runs `base` at each thread count for `secs` seconds (or, `count_bounded`, for its
/// `operationcount` within at most `secs`) and finds the maximum and the knee.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn sweep_points<L: Lab>(
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
        let died = super::compare::Dead::of(&m.document, &format!("{n} threads"));
        bar.finish(&match &died {
            Some(_) => "ended early: a member is dead".to_string(),
            None => format!("{:.0} ops/s", m.summary.throughput),
        });
        m.summary.threads = n;
        points.push(SweepPoint {
            threads: n,
            summary: m.summary,
        });
        // The dead point itself is kept (invalid); the points after it are not run.
        dead = died.map(|d| d.reason);
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
        not_run,
        dead,
        planned_threads: threads.to_vec(),
    })
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

/// The seed-2 chart of an outcome: one line per value, min–max over repetitions.
pub(crate) fn vary_chart(
    outcome: &SweepOutcome,
    label: &str,
) -> Result<crate::report::charts::Chart, crate::report::charts::ChartError> {
    let (values, repeats) = (outcome.values(), outcome.repeats());
    let mut notes = Vec::new();
    let series: Vec<crate::report::charts::VarySeries> = values
        .iter()
        .map(|value| {
            let curves: Vec<&SweepFile> = outcome
                .curves
                .iter()
                .filter(|(v, _)| v.value == *value)
                .map(|(_, s)| s)
                .collect();
            let mut not_valid = false;
            let points = outcome
                .threads
                .iter()
                .filter_map(|&t| {
                    let got: Vec<f64> = curves
                        .iter()
                        .filter_map(|c| c.points.iter().find(|p| p.threads == t))
                        .inspect(|p| {
                            if !p.summary.validity.is_valid() {
                                not_valid = true;
                                notes.push(format!(
                                    "{} at {t} threads is {}: {}",
                                    c_label(&outcome.property, value),
                                    p.summary.validity.verdict,
                                    p.summary.validity.summary()
                                ));
                            }
                        })
                        .map(|p| p.summary.throughput)
                        .collect();
                    let mean = crate::report::stats::mean(&got)?;
                    let lo = got.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = got.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    Some((t, lo, mean, hi))
                })
                .collect();
            crate::report::charts::VarySeries {
                label: c_label(&outcome.property, value),
                points,
                not_valid,
            }
        })
        .collect();
    let version = outcome
        .curves
        .iter()
        .flat_map(|(_, s)| s.points.iter())
        .find_map(|p| p.summary.server_version.clone());
    let standin = outcome.curves.iter().any(|(_, s)| s.standin);
    let server = match (&version, standin) {
        (Some(v), true) => format!("stand-in {v}"),
        (Some(v), false) => format!("MongoDB {v}"),
        (None, _) => "server version unknown".to_string(),
    };
    crate::report::charts::vary(
        &format!(
            "Throughput by client threads{}: {label}",
            outcome
                .property
                .as_ref()
                .map(|p| format!(" and {p}"))
                .unwrap_or_default()
        ),
        &series,
        repeats,
        &server,
        standin,
        &notes,
    )
}

fn c_label(property: &Option<String>, value: &Option<String>) -> String {
    match (property, value) {
        (Some(p), Some(v)) => format!("{p}={v}"),
        _ => "throughput".to_string(),
    }
}

/// How the seed-2 table is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VaryFormat {
    /// A terminal table.
    Table,
    /// A Markdown table.
    Markdown,
    /// CSV with a header row.
    Csv,
}

/// The seed-2-shaped table: one row per thread count; for each value of the varied property,
/// one column per repetition and their mean (ops/s).
pub(crate) fn render_vary(outcome: &SweepOutcome, format: VaryFormat) -> String {
    let (values, repeats) = (outcome.values(), outcome.repeats());
    let name = |value: &Option<String>| match (&outcome.property, value) {
        (Some(p), Some(v)) => format!("{p}={v}"),
        _ => "ops/s".to_string(),
    };
    let mut header = vec!["threads".to_string()];
    for value in &values {
        for r in 1..=repeats {
            header.push(format!("{} #{r}", name(value)));
        }
        header.push(format!("{} mean", name(value)));
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    for &t in &outcome.threads {
        let mut row = vec![t.to_string()];
        for value in &values {
            let mut got = Vec::new();
            for r in 1..=repeats {
                let point = outcome
                    .curves
                    .iter()
                    .find(|(v, _)| v.value == *value && v.repeat == r)
                    .and_then(|(_, s)| s.points.iter().find(|p| p.threads == t));
                match point {
                    Some(p) => {
                        got.push(p.summary.throughput);
                        let mark = if p.summary.validity.is_valid() {
                            String::new()
                        } else {
                            format!(" ({})", p.summary.validity.verdict)
                        };
                        row.push(format!("{:.0}{mark}", p.summary.throughput));
                    }
                    None => row.push("—".into()),
                }
            }
            row.push(match crate::report::stats::mean(&got) {
                Some(m) => format!("{m:.0}"),
                None => "—".into(),
            });
        }
        rows.push(row);
    }
    let standin = outcome.curves.iter().any(|(_, s)| s.standin);
    match format {
        VaryFormat::Csv => {
            let mut out = String::new();
            let line = |cells: &[String]| {
                cells
                    .iter()
                    .map(|c| crate::report::csv_field(c))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let mut h = vec!["figures".to_string()];
            h.extend(header.iter().cloned());
            out.push_str(&line(&h));
            out.push('\n');
            for r in &rows {
                let mut cells = vec![if standin { "stand-in" } else { "mongodb" }.to_string()];
                cells.extend(r.iter().cloned());
                out.push_str(&line(&cells));
                out.push('\n');
            }
            out
        }
        VaryFormat::Markdown => {
            let mut out = String::new();
            if standin {
                out.push_str(&format!("**{}**\n\n", crate::report::STANDIN_MARKER));
            }
            if outcome.topology.is_some() {
                // `compare` writes one table per topology: each file says which.
                out.push_str(&format!("{}\n\n", vary_title(outcome)));
            }
            out.push_str(&format!("| {} |\n", header.join(" | ")));
            out.push_str(&format!(
                "|{}\n",
                header.iter().map(|_| "---:|").collect::<String>()
            ));
            for r in &rows {
                out.push_str(&format!("| {} |\n", r.join(" | ")));
            }
            out
        }
        VaryFormat::Table => {
            let mut b = tabled::builder::Builder::new();
            b.push_record(header);
            for r in rows {
                b.push_record(r);
            }
            let mut t = b.build();
            t.with(tabled::settings::Style::rounded());
            let mut out = String::new();
            if standin {
                out.push_str(crate::report::STANDIN_MARKER);
                out.push('\n');
            }
            out.push_str(&format!("{}\n{t}\n", vary_title(outcome)));
            out
        }
    }
}

/// "Throughput (ops/s) by threads and PROPERTY[ on TOPOLOGY]": what a seed-2 table shows.
fn vary_title(outcome: &SweepOutcome) -> String {
    let mut out = "Throughput (ops/s) by threads".to_string();
    if let Some(p) = &outcome.property {
        out.push_str(&format!(" and {p}"));
    }
    if let Some(t) = &outcome.topology {
        out.push_str(&format!(" on {}", crate::report::topology_label(t, None)));
    }
    out
}

/// A sweep curve's name as a file label: letters, digits and `-`, everything else `_`.
pub(crate) fn sweep_label(where_: &str) -> String {
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
pub(crate) fn render_sweep(sweep: &SweepFile) -> String {
    let mut b = tabled::builder::Builder::new();
    b.push_record([
        "threads", "ops/s", "op", "avg µs", "p95 µs", "p99 µs", "errors", "validity", "",
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
            s.validity.verdict.to_string(),
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
    for caveat in super::knee_caveats::caveats(sweep) {
        out.push_str(&caveat);
        out.push('\n');
    }
    for p in sweep
        .points
        .iter()
        .filter(|p| !p.summary.validity.is_valid())
    {
        out.push_str(&format!(
            "validity: {} threads is {}: {}\n",
            p.threads,
            p.summary.validity.verdict,
            p.summary.validity.summary()
        ));
    }
    out
}

/// A sweep as CSV: one row per point, for spreadsheets.
pub(crate) fn sweep_csv(sweep: &SweepFile) -> String {
    let mut out = String::from(
        "figures,label,threads,throughput_ops_s,main_op,avg_us,p95_us,p99_us,p999_us,errors,validity,max,knee\n",
    );
    for p in &sweep.points {
        let s = &p.summary;
        let fields = [
            if sweep.standin { "stand-in" } else { "mongodb" }.to_string(),
            sweep.label.clone(),
            p.threads.to_string(),
            format!("{:.3}", s.throughput),
            s.main_op.clone(),
            format!("{:.3}", s.latency.avg),
            format!("{:.3}", s.latency.p95),
            format!("{:.3}", s.latency.p99),
            format!("{:.3}", s.latency.p999),
            s.errors.to_string(),
            s.validity.verdict.to_string(),
            (Some(p.threads) == sweep.max_threads).to_string(),
            (Some(p.threads) == sweep.knee_threads).to_string(),
        ];
        let line: Vec<String> = fields.iter().map(|f| crate::report::csv_field(f)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
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
                    ..Default::default()
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

    #[tokio::test]
    async fn loads_once_and_finds_knee() -> anyhow::Result<()> {
        let tmp = tempfile::tempdir()?;
        let wl = tmp.path().join("W");
        std::fs::write(&wl, "recordcount=10\n")?;
        let cfg = SweepConfig {
            workload: wl.display().to_string(),
            threads: vec![1, 2, 4, 8, 16, 32, 64, 128],
            target: SweepTarget::Topology("single".into()),
            duration: Duration::from_secs(1),
            overrides: vec![],
            full: false,
            records: 10,
            no_load: false,
            results_root: tmp.path().join("results"),
            backend: crate::topology::BackendKind::Process,
            vary: None,
            repeat: 1,
            clients: 1,
        };
        let mut lab = Curve { loads: 0, downs: 0 };
        let cancel = CancellationToken::new();
        let (dir, outcome) = sweep_with(&mut lab, &cfg, &cancel, &Progress::silent()).await?;
        assert_eq!((lab.loads, lab.downs), (1, 1));
        assert!(outcome.is_single());
        let sweep = &outcome.curves[0].1;
        assert_eq!(sweep.points.len(), 8);
        assert_eq!(sweep.max_threads, Some(16));
        assert_eq!(sweep.knee_threads, Some(16));
        let text = render_sweep(sweep);
        assert!(text.contains("max, knee"), "{text}");
        assert!(dir.path().join("sweep-single.svg").is_file());
        Ok(())
    }

    #[tokio::test]
    async fn vary_and_repeat_give_one_curve_per_value_and_repetition_and_the_seed_table()
    -> anyhow::Result<()> {
        let tmp = tempfile::tempdir()?;
        let wl = tmp.path().join("W");
        std::fs::write(&wl, "recordcount=10\n")?;
        let cfg = SweepConfig {
            workload: wl.display().to_string(),
            threads: vec![1, 5, 10],
            target: SweepTarget::Topology("single".into()),
            duration: Duration::from_secs(1),
            overrides: vec![],
            full: false,
            records: 100,
            no_load: false,
            results_root: tmp.path().join("results"),
            backend: crate::topology::BackendKind::Process,
            vary: Some(Vary::parse("readbatchsize=1,10,20")?),
            repeat: 3,
            clients: 1,
        };
        let mut lab = Curve { loads: 0, downs: 0 };
        let (dir, outcome) = sweep_with(
            &mut lab,
            &cfg,
            &CancellationToken::new(),
            &Progress::silent(),
        )
        .await?;
        assert_eq!(lab.loads, 1, "one load for every curve");
        assert_eq!(outcome.curves.len(), 9);
        let table = render_vary(&outcome, VaryFormat::Csv);
        let header = table.lines().next().unwrap_or_default();
        assert_eq!(header.split(',').count(), 2 + 3 * 4, "{header}");
        assert!(header.contains("readbatchsize=10 #3") && header.contains("readbatchsize=20 mean"));
        assert_eq!(table.lines().count(), 4, "a row per thread count: {table}");
        for f in ["vary.md", "vary.csv", "vary.json", "vary.txt"] {
            assert!(dir.path().join(f).is_file(), "{f}");
        }
        assert_eq!(dir.sweeps().len(), 9, "every curve stored");
        assert!(Vary::parse("readbatchsize").is_err());
        assert!(Vary::parse("readbatchsize=1,,2").is_err());
        let typo = Vary::parse("readbachsize=1,10").unwrap_err().to_string();
        assert!(
            typo.contains("'readbachsize' is not a property")
                && typo.contains("did you mean 'readbatchsize'?"),
            "{typo}"
        );
        assert!(Vary::parse("mycompany.knob=1,2").is_err());
        Ok(())
    }
}
