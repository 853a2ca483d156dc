//! `execute`: one YCSB phase from properties to a result document.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::Phase;
use super::client::{ClientReport, Progress, Shared, progress_totals, run_client};
use super::pacing;
use super::verdict::{self, Evidence};
use super::watch::{Notify, Watch, WatchSetup};
use crate::db::probe::ProbeTarget;
use crate::db::{BindingSettings, ErrorClass, MongoBinding};
use crate::error::{as_bad_input, bad_input};
use crate::measure::{self, MeasurementConfig, Measurements};
use crate::workload::prop::{self, Prop};
use crate::workload::{CoreWorkload, Properties};

/// How `execute` is run: from the CLI (status lines, report on stdout) or from an experiment (quiet).
#[derive(Debug, Clone, Default)]
pub struct ExecuteOptions {
    /// Cancelled on Ctrl-C (the CLI passes `crate::signals::install()`); stops the clients gracefully.
    pub cancel: CancellationToken,
    /// Print YCSB's status line to stderr (`-s`); the `status` property also turns it on.
    pub status: bool,
    /// Print the final YCSB report (to stdout, or to `exportfile` when set).
    pub print_report: bool,
    /// Use this connection string instead of `mongodb.url` (experiments pass the topology's entry point).
    pub uri: Option<String>,
    /// No warnings or notes on stderr (experiments keep them in the result document instead).
    pub quiet: bool,
    /// Members to probe for liveness while the run goes on (`None`: discovered from the
    /// connection string: its hosts, their replica set, and a mongos's shards).
    pub probe_targets: Option<Vec<ProbeTarget>>,
    /// Where live findings go (a member stopped answering, a stall): stderr when `None`. They
    /// are said even when `quiet`, since they change what the result means.
    pub notify: Option<Notify>,
    /// Drop the benchmark database before a load (`load --drop`).
    pub drop_database: bool,
    /// Lines said before `Loading workload...` (YCSB's `Command line: ...` banner), unless quiet.
    pub banner: Vec<String>,
    /// Wait at a start barrier once connected: say [`super::fanout::BARRIER_READY`] and start
    /// when a line arrives on stdin (a client of `--clients`).
    pub barrier: bool,
}

/// How long clients still waiting on the server get after the run's stop before they are
/// abandoned (and the result declared invalid): a dead or frozen server never holds a run.
const STOP_GRACE: Duration = Duration::from_secs(5);

fn lookup(props: &Properties) -> impl Fn(&str) -> Option<String> + '_ {
    move |k| props.get(k).map(str::to_string)
}

/// A property that must parse; the error names the property and where it was set.
fn parse_prop<T: crate::workload::PropertyValue + Copy>(
    props: &Properties,
    prop: &Prop<T>,
) -> anyhow::Result<T> {
    props.value(prop).map_err(as_bad_input)
}

/// Runs one phase and returns its result document.
///
/// Bad input (properties, URL, an unreachable server) comes back as [`crate::error::BadInput`].
pub async fn execute(
    props: &Properties,
    phase: Phase,
    opts: &ExecuteOptions,
) -> anyhow::Result<measure::ResultDocument> {
    let notify: Notify = match &opts.notify {
        Some(n) => n.clone(),
        None => Notify::stderr(),
    };
    let say = |line: &str| {
        if !opts.quiet {
            notify.say(line);
        }
    };
    for w in props.warnings() {
        say(&format!("warning: {w}"));
    }

    let requested_threads: u64 = parse_prop(props, &prop::THREADCOUNT)?;
    if requested_threads == 0 {
        return Err(bad_input(format!(
            "property {}: must be at least 1",
            prop::THREADCOUNT.name
        )));
    }
    let target: f64 = parse_prop(props, &prop::TARGET)? as f64;
    let max_execution_s: u64 = parse_prop(props, &prop::MAXEXECUTIONTIME)?;
    let status_interval_s: u64 = parse_prop(props, &prop::STATUS_INTERVAL)?;
    let status_enabled = opts.status || parse_prop(props, &prop::STATUS)?;
    let label = props.text(&prop::LABEL).to_string();
    // The error-rate rule always applies to the verdict; set explicitly, it also stops the run.
    let error_rate_limit: f64 = parse_prop(props, &prop::MAXERRORRATE)?;
    if !(0.0..=1.0).contains(&error_rate_limit) {
        return Err(bad_input(format!(
            "property {}={error_rate_limit}: a fraction between 0 and 1 is expected",
            prop::MAXERRORRATE.name
        )));
    }
    let max_error_rate: Option<f64> = props.get(prop::MAXERRORRATE.name).map(|_| error_rate_limit);
    let warmup_s: f64 = parse_prop(props, &prop::WARMUP)?;
    if !(warmup_s.is_finite() && (0.0..=86_400.0).contains(&warmup_s)) {
        return Err(bad_input(format!(
            "property {}={warmup_s}: seconds between 0 and 86400 are expected",
            prop::WARMUP.name
        )));
    }
    let warmup = Duration::from_secs_f64(warmup_s);
    let stall_s: f64 = parse_prop(props, &prop::STALLSECONDS)?;
    if !(stall_s.is_finite() && (0.5..=3600.0).contains(&stall_s)) {
        return Err(bad_input(format!(
            "property {}={stall_s}: seconds between 0.5 and 3600 are expected",
            prop::STALLSECONDS.name
        )));
    }

    let workload = Arc::new(CoreWorkload::from_properties(props).map_err(as_bad_input)?);
    let verify = workload.data_integrity();
    let total_ops = match phase {
        Phase::Load => crate::workload::load_operation_count(props),
        Phase::Run => crate::workload::run_operation_count(props),
    }
    .map_err(as_bad_input)?;
    let threads_usize = usize::try_from(requested_threads).unwrap_or(usize::MAX);
    let (split, split_warning) = crate::workload::split_operations(total_ops, threads_usize);
    if let Some(w) = split_warning {
        say(&w);
    }
    let threads = split.len().max(1);
    super::fdlimit::ensure(threads).map_err(bad_input)?;

    let mut mcfg = MeasurementConfig::from_lookup(&lookup(props)).map_err(as_bad_input)?;
    for w in &mcfg.warnings {
        say(w);
    }
    let tick_ns = pacing::tick_ns(target, threads);
    if tick_ns.is_some() && mcfg.interval == measure::IntervalMode::Op {
        // Unlike YCSB: with a target, intended latency is always recorded (`Intended-OP`), so
        // coordinated omission is visible without having to know about measurement.interval.
        mcfg.interval = measure::IntervalMode::Both;
    }
    let measurements = Measurements::new(mcfg.clone());

    let settings = BindingSettings::from_properties(props, threads, opts.uri.as_deref())
        .map_err(as_bad_input)?;
    for w in &settings.resolved.warnings {
        say(&format!("warning: {w}"));
    }
    let binding = MongoBinding::connect_with(settings)
        .await
        .map_err(as_bad_input)?;
    // YCSB's banner, once everything has been checked and the server answered (so that bad
    // input still gets its one line): the command line, the version, `Loading workload...`,
    // `Starting test.` and the binding's connection line (`docs/engine.md`).
    for line in &opts.banner {
        say(line);
    }
    say("Loading workload...");
    say("Starting test.");
    say(&format!(
        "mongo client connection created with {}",
        crate::redact::redact_uri(&binding.settings().resolved.url)
    ));
    let mut server = binding.server_facts().await;
    let standin = server.standin;
    if standin {
        say("NOTE: measured against the microshard stand-in, not MongoDB");
    }
    if opts.drop_database && phase == Phase::Load {
        binding
            .drop_database()
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        say(&format!(
            "dropped database {} before loading (--drop)",
            binding.settings().resolved.database
        ));
    }
    let probe_targets = match &opts.probe_targets {
        Some(t) => t.clone(),
        None => binding.discover_members().await,
    };
    if opts.barrier {
        notify.say(super::fanout::BARRIER_READY);
        let mut line = String::new();
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
        tokio::select! {
            r = tokio::io::AsyncBufReadExt::read_line(&mut stdin, &mut line) => {
                if !matches!(r, Ok(n) if n > 0) {
                    anyhow::bail!("the coordinator went away before the start");
                }
            }
            _ = opts.cancel.cancelled() => anyhow::bail!("interrupted before the start"),
        }
    }
    let stop = opts.cancel.child_token();
    let shared_table = workload.table().to_string();
    let shared = Arc::new(Shared {
        phase,
        workload,
        binding: binding.clone(),
        measurements: measurements.clone(),
        table: shared_table,
        stop: stop.clone(),
        tick_ns,
        initial_delay: pacing::wants_initial_delay(target, threads),
        verify,
        notify: notify.clone(),
    });

    let cpu_before = measure::ClientCpu::now();
    let started_wall = chrono::Utc::now();
    let start = Instant::now();
    let mut handles = Vec::with_capacity(threads);
    let mut counters = Vec::with_capacity(threads);
    for (i, &n) in split.iter().enumerate() {
        let progress = Arc::new(Progress::default());
        counters.push((progress.clone(), n));
        handles.push(tokio::spawn(run_client(shared.clone(), i, n, progress)));
    }
    let clients_done = CancellationToken::new();
    let abort_handles: Vec<tokio::task::AbortHandle> =
        handles.iter().map(|h| h.abort_handle()).collect();
    // A run throttled below one operation per stall period must not look stalled.
    let stall_after = Duration::from_secs_f64(if target > 0.0 {
        stall_s.max(3.0 / target)
    } else {
        stall_s
    });
    let watch = Watch::start(WatchSetup {
        start,
        stall_after,
        stall_abort_after: (stall_after * 10).max(Duration::from_secs(20)),
        progress: counters.iter().map(|(p, _)| p.clone()).collect(),
        targets: probe_targets,
        stop: stop.clone(),
        notify: notify.clone(),
    });

    // maxexecutiontime: stop gracefully (in-flight ops finish, cleanup runs).
    let timer = (max_execution_s > 0).then(|| {
        let stop = stop.clone();
        let done = clients_done.clone();
        let quiet = opts.quiet;
        let notify = notify.clone();
        tokio::spawn(async move {
            if !quiet {
                notify.say(&format!(
                    "Maximum execution time specified as: {max_execution_s} secs"
                ));
            }
            tokio::select! {
                _ = tokio::time::sleep(warmup + Duration::from_secs(max_execution_s)) => {
                    if !quiet {
                        notify.say("Maximum time elapsed. Requesting stop for the workload.");
                    }
                    stop.cancel();
                }
                _ = done.cancelled() => {}
            }
        })
    });

    // The error-rate guard samples once a second after a minimum number of ops.
    let error_stop: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let guard = max_error_rate.map(|rate| {
        let shared = shared.clone();
        let progress: Vec<Arc<Progress>> = counters.iter().map(|(p, _)| p.clone()).collect();
        let done = clients_done.clone();
        let reason = error_stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = done.cancelled() => return,
                }
                let (ops, failed) = progress_totals(progress.iter().map(|p| &**p));
                if ops >= 100 && failed as f64 > rate * ops as f64 {
                    if let Ok(mut r) = reason.lock() {
                        *r = Some(format!(
                            "stopped: {failed} of {ops} operations failed, more than {}={rate}",
                            prop::MAXERRORRATE.name
                        ));
                    }
                    shared.stop.cancel();
                    return;
                }
            }
        })
    });

    // Warm-up: at its end everything measured so far is forgotten and the timed window starts.
    let warm_end: Arc<std::sync::Mutex<Option<WarmupEnd>>> = Arc::default();
    let warm_task = (!warmup.is_zero()).then(|| {
        let measurements = measurements.clone();
        let progress: Vec<Arc<Progress>> = counters.iter().map(|(p, _)| p.clone()).collect();
        let done = clients_done.clone();
        let slot = warm_end.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(warmup) => {}
                _ = done.cancelled() => return,
            }
            measurements.reset();
            let (ops, failed) = progress_totals(progress.iter().map(|p| &**p));
            if let Ok(mut s) = slot.lock() {
                *s = Some(WarmupEnd {
                    cpu: measure::ClientCpu::now(),
                    at: Instant::now(),
                    wall: chrono::Utc::now(),
                    ops,
                    failed,
                });
            }
        })
    });

    // A client of several (`--barrier`) tells its coordinator how far it is, once a second and
    // once at the end, so the coordinator can print one merged status line (`docs/engine.md`,
    // "Several clients").
    let tick_task = opts.barrier.then(|| {
        let progress: Vec<Arc<Progress>> = counters.iter().map(|(p, _)| p.clone()).collect();
        let done = clients_done.clone();
        let notify = notify.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(super::fanout::TICK_PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let finished = tokio::select! {
                    _ = tick.tick() => false,
                    _ = done.cancelled() => true,
                };
                let (ops, _) = progress_totals(progress.iter().map(|p| &**p));
                notify.say(&super::fanout::tick_line(ops));
                if finished {
                    return;
                }
            }
        })
    });

    let status_task = status_enabled.then(|| {
        let status = super::status::StatusPrinter {
            measurements: measurements.clone(),
            counters: counters.clone(),
            label: label.clone(),
            interval: Duration::from_secs(status_interval_s.max(1)),
            start,
            notify: notify.clone(),
        };
        let done = clients_done.clone();
        tokio::spawn(status.run(done))
    });

    let mut reports: Vec<ClientReport> = Vec::with_capacity(threads);
    let mut panicked = 0usize;
    let mut abandoned = 0usize;
    let joined = futures::future::join_all(handles);
    tokio::pin!(joined);
    let results = tokio::select! {
        r = &mut joined => r,
        _ = async {
            stop.cancelled().await;
            tokio::time::sleep(STOP_GRACE).await;
        } => {
            notify.say(&format!(
                "microshard: clients still waiting on the server {} s after the stop: abandoning them",
                STOP_GRACE.as_secs()
            ));
            for a in &abort_handles {
                a.abort();
            }
            joined.await
        }
    };
    for r in results {
        match r {
            Ok(r) => reports.push(r),
            Err(e) if e.is_cancelled() => abandoned += 1,
            Err(_) => panicked += 1,
        }
    }
    let elapsed = start.elapsed();
    let end = Instant::now();
    clients_done.cancel();
    let watched = watch.finish(end).await;
    if let Some(t) = timer {
        let _ = t.await;
    }
    if let Some(g) = guard {
        let _ = g.await;
    }
    if let Some(s) = status_task {
        let _ = s.await;
    }
    if let Some(t) = tick_task {
        let _ = t.await;
    }
    if let Some(w) = warm_task {
        let _ = w.await;
    }
    // CPU over the same window as the figures: from the warm-up's end when there was one.
    let warm = warm_end.lock().ok().and_then(|w| *w);
    let cpu = measure::ClientCpu::now().since(warm.as_ref().map_or(&cpu_before, |w| &w.cpu));
    if panicked > 0 {
        anyhow::bail!("{panicked} client task(s) failed unexpectedly; results discarded");
    }

    let ended_wall = chrono::Utc::now();
    // The clients' own counters: they include clients that were abandoned mid-operation.
    let (mut ops_done, mut ops_failed) = progress_totals(counters.iter().map(|(p, _)| &**p));
    let mut elapsed = elapsed;
    let mut started_wall = started_wall;
    let mut warmup_unfinished = false;
    match warm {
        Some(w) => {
            ops_done = ops_done.saturating_sub(w.ops);
            ops_failed = ops_failed.saturating_sub(w.failed);
            elapsed = end.saturating_duration_since(w.at);
            started_wall = w.wall;
        }
        None => warmup_unfinished = !warmup.is_zero(),
    }
    let mut error_classes: BTreeMap<String, u64> = BTreeMap::new();
    for r in &reports {
        for (class, n) in &r.error_classes {
            *error_classes.entry(ErrorClass::label(*class)).or_insert(0) += n;
        }
    }
    let overall = measure::Overall {
        runtime_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        operations: match phase {
            Phase::Load => super::client::succeeded_inserts(counters.iter().map(|(p, _)| &**p)),
            Phase::Run => ops_done,
        },
    };
    let run = measurements.finish();

    if opts.print_report {
        let (exporter, warning) = measure::exporter_for(props.text(&prop::EXPORTER));
        if let Some(w) = warning {
            say(&w);
        }
        let text = exporter.render(&run, &overall, &mcfg);
        match props.get(prop::EXPORTFILE.name) {
            Some(path) => std::fs::write(path, text).with_context(|| {
                format!("property {}: cannot write {path}", prop::EXPORTFILE.name)
            })?,
            None => {
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())?;
                if !text.ends_with('\n') {
                    out.write_all(b"\n")?;
                }
                out.flush()?;
            }
        }
    }

    let mut stopped: Vec<String> = Vec::new();
    if warmup_unfinished {
        stopped.push(format!(
            "ended during its {warmup_s} s warm-up: nothing was measured"
        ));
    }
    if let Some(reason) = error_stop.lock().ok().and_then(|r| r.clone()) {
        stopped.push(reason);
    }
    if let Some(reason) = &watched.aborted {
        stopped.push(reason.clone());
    }
    if let Some(fatal) = reports.iter().find_map(|r| r.fatal.clone()) {
        stopped.push(format!("stopped: {fatal}"));
    }
    if reports.iter().any(|r| r.gave_up) {
        stopped.push("stopped: a client gave up after an insert failed beyond its retries".into());
    }
    if opts.cancel.is_cancelled() {
        stopped.push("was interrupted".into());
    }
    let mut doc = measure::ResultDocument::new(
        match phase {
            Phase::Load => "load",
            Phase::Run => "run",
        },
        started_wall,
        ended_wall,
        &overall,
        &run,
    )?;
    doc.properties = recorded_properties(props, opts.uri.as_deref());
    doc.client_cpu = cpu;
    let evidence = Evidence {
        load: phase == Phase::Load,
        operations: ops_done,
        failed: ops_failed,
        max_error_rate: error_rate_limit,
        failed_time_share: failed_time_share(&doc, threads, elapsed),
        error_classes: error_classes.clone(),
        timeline: watched.timeline,
        stopped: stopped.clone(),
        abandoned_clients: abandoned,
        client_cpu_s: cpu.total_us() as f64 / 1e6,
        wall_s: elapsed.as_secs_f64(),
        cores: doc.host.cpu_count,
    };
    doc.validity = verdict::assess(&evidence);
    doc.warmup_s = warmup_s;
    doc.timeline = evidence.timeline;
    server.error_classes = error_classes;
    if standin {
        server.note = Some("measured against the microshard stand-in, not MongoDB".into());
    }
    server.run_stopped = (!stopped.is_empty()).then(|| stopped.join("; "));
    server.threads = Some(threads as u64);
    doc.server = server;
    doc.clients = vec![measure::ClientEntry::of(0, "localhost", &doc)];
    Ok(doc)
}

/// The resolved properties as the result records them: URIs redacted, and `mongodb.url` replaced
/// by the connection string really used when an experiment or `--uri` gave one, so a cell never
/// claims a server it did not talk to.
fn recorded_properties(
    props: &Properties,
    uri: Option<&str>,
) -> Vec<measure::result::PropertyEntry> {
    let mut out: Vec<measure::result::PropertyEntry> = props
        .resolved()
        .into_iter()
        .filter(|p| uri.is_none() || p.key != prop::MONGODB_URL.name)
        .map(|p| measure::result::PropertyEntry {
            value: crate::redact::redact_uri(&p.value),
            origin: p.origin.to_string(),
            key: p.key,
        })
        .collect();
    if let Some(uri) = uri {
        out.push(measure::result::PropertyEntry {
            key: prop::MONGODB_URL.name.into(),
            value: crate::redact::redact_uri(uri),
            origin: "connection string in use (--uri or the topology's entry point)".into(),
        });
    }
    out
}

/// Share of the clients' time spent on operations that failed: the failed measurements'
/// latencies summed, over threads × run time.
fn failed_time_share(doc: &measure::ResultDocument, threads: usize, elapsed: Duration) -> f64 {
    let failed_us: f64 = doc
        .measurements
        .iter()
        .filter(|m| m.name.ends_with("-FAILED") && m.kind == measure::MapKind::Actual)
        .map(|m| m.mean * m.count as f64)
        .sum();
    let budget_us = threads.max(1) as f64 * elapsed.as_secs_f64() * 1e6;
    if budget_us > 0.0 {
        (failed_us / budget_us).min(1.0)
    } else {
        0.0
    }
}

/// The moment the warm-up ended, and the clients' counters then.
#[derive(Debug, Clone, Copy)]
struct WarmupEnd {
    cpu: measure::ClientCpu,
    at: Instant,
    wall: chrono::DateTime<chrono::Utc>,
    ops: u64,
    failed: u64,
}
