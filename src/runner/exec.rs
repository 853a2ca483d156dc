//! `execute`: one YCSB phase from properties to a result document.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::Phase;
use super::client::{ClientReport, Progress, Shared, progress_totals, run_client};
use super::pacing;
use crate::db::{BindingSettings, ErrorClass, MongoBinding};
use crate::error::{as_bad_input, bad_input};
use crate::measure::{self, MeasurementConfig, Measurements};
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
    /// Also write the result document here (`--json`).
    pub json: Option<PathBuf>,
    /// Use this connection string instead of `mongodb.url` (experiments pass the topology's entry point).
    pub uri: Option<String>,
    /// No warnings or notes on stderr (experiments keep them in the result document instead).
    pub quiet: bool,
}

fn lookup(props: &Properties) -> impl Fn(&str) -> Option<String> + '_ {
    move |k| props.get(k).map(str::to_string)
}

/// A property that must parse; the error names the property and where it was set.
fn parse_prop<T: crate::workload::PropertyValue>(
    props: &Properties,
    key: &str,
    default: T,
) -> anyhow::Result<T> {
    props.parse_or(key, default).map_err(as_bad_input)
}

/// Runs one phase and returns its result document.
///
/// Bad input (properties, URL, an unreachable server) comes back as [`crate::error::BadInput`].
pub async fn execute(
    props: &Properties,
    phase: Phase,
    opts: &ExecuteOptions,
) -> anyhow::Result<measure::ResultDocument> {
    let say = |line: &str| {
        if !opts.quiet {
            eprintln!("{line}");
        }
    };
    for w in props.warnings() {
        say(&format!("warning: {w}"));
    }

    let requested_threads: u64 = parse_prop(props, "threadcount", 1u64)?;
    if requested_threads == 0 {
        return Err(bad_input("property threadcount: must be at least 1"));
    }
    let target: f64 = parse_prop(props, "target", 0i64)? as f64;
    let max_execution_s: u64 = parse_prop(props, "maxexecutiontime", 0u64)?;
    let status_interval_s: u64 = parse_prop(props, "status.interval", 10u64)?;
    let status_enabled = opts.status || parse_prop(props, "status", false)?;
    let label = props.get_or("label", "").to_string();
    let max_error_rate: Option<f64> = match props.get("microshard.maxerrorrate") {
        None => None,
        Some(_) => {
            let r: f64 = parse_prop(props, "microshard.maxerrorrate", 1.0f64)?;
            if !(0.0..=1.0).contains(&r) {
                return Err(bad_input(format!(
                    "property microshard.maxerrorrate={r}: a fraction between 0 and 1 is expected"
                )));
            }
            Some(r)
        }
    };

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
    let server = binding.server_facts().await;
    let standin = server
        .get("standin")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    if standin {
        say("NOTE: measured against the microshard stand-in, not MongoDB");
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

    // maxexecutiontime: stop gracefully (in-flight ops finish, cleanup runs).
    let timer = (max_execution_s > 0).then(|| {
        let stop = stop.clone();
        let done = clients_done.clone();
        let quiet = opts.quiet;
        tokio::spawn(async move {
            if !quiet {
                eprintln!("Maximum execution time specified as: {max_execution_s} secs");
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(max_execution_s)) => {
                    if !quiet {
                        eprintln!("Maximum time elapsed. Requesting stop for the workload.");
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
                            "stopped: {failed} of {ops} operations failed, more than microshard.maxerrorrate={rate}"
                        ));
                    }
                    shared.stop.cancel();
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
        };
        let done = clients_done.clone();
        tokio::spawn(status.run(done))
    });

    let mut reports: Vec<ClientReport> = Vec::with_capacity(threads);
    let mut panicked = 0usize;
    for h in handles {
        match h.await {
            Ok(r) => reports.push(r),
            Err(_) => panicked += 1,
        }
    }
    let elapsed = start.elapsed();
    clients_done.cancel();
    if let Some(t) = timer {
        let _ = t.await;
    }
    if let Some(g) = guard {
        let _ = g.await;
    }
    if let Some(s) = status_task {
        let _ = s.await;
    }
    let cpu = measure::ClientCpu::now().since(&cpu_before);
    if panicked > 0 {
        anyhow::bail!("{panicked} client task(s) failed unexpectedly; results discarded");
    }

    let ended_wall = chrono::Utc::now();
    let ops_done: u64 = reports.iter().map(|r| r.ops_done).sum();
    let mut error_classes: BTreeMap<String, u64> = BTreeMap::new();
    for r in &reports {
        for (class, n) in &r.error_classes {
            *error_classes.entry(ErrorClass::label(*class)).or_insert(0) += n;
        }
    }
    let overall = measure::Overall {
        runtime_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        operations: ops_done,
    };
    let run = measurements.finish();

    if opts.print_report {
        let (exporter, warning) = measure::exporter_for(props.get_or(
            "exporter",
            "site.ycsb.measurements.exporter.TextMeasurementsExporter",
        ));
        if let Some(w) = warning {
            say(&w);
        }
        let text = exporter.render(&run, &overall, &mcfg);
        match props.get("exportfile") {
            Some(path) => std::fs::write(path, text)
                .with_context(|| format!("property exportfile: cannot write {path}"))?,
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

    let stopped_reason = error_stop.lock().ok().and_then(|r| r.clone()).or_else(|| {
        opts.cancel
            .is_cancelled()
            .then(|| "interrupted".to_string())
    });
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
    doc.properties = props
        .resolved()
        .into_iter()
        .map(|p| measure::result::PropertyEntry {
            value: crate::redact::redact_uri(&p.value),
            origin: p.origin.to_string(),
            key: p.key,
        })
        .collect();
    doc.client_cpu = cpu;
    let mut server = server;
    if let Some(obj) = server.as_object_mut() {
        // Errors as the driver classified them (timeouts, not-primary, network, server codes).
        obj.insert(
            "error_classes".into(),
            serde_json::to_value(&error_classes).unwrap_or_default(),
        );
        if standin {
            obj.insert(
                "note".into(),
                "measured against the microshard stand-in, not MongoDB".into(),
            );
        }
        if let Some(reason) = &stopped_reason {
            obj.insert("run_stopped".into(), reason.clone().into());
        }
        obj.insert("threads".into(), threads.into());
    }
    doc.server = server;
    if let Some(path) = &opts.json {
        let text = serde_json::to_string_pretty(&doc)?;
        std::fs::write(path, text)
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    if let Some(reason) = error_stop.lock().ok().and_then(|r| r.clone()) {
        anyhow::bail!("{reason}");
    }
    if let Some(fatal) = reports.iter().find_map(|r| r.fatal.clone()) {
        anyhow::bail!("the run is invalid: {fatal}");
    }
    Ok(doc)
}
