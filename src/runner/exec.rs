//! `execute`: one YCSB phase from properties to a result document: in this process (a
//! [`PhaseRun`]: prepare, connect, run the clients, report), or with several client processes or
//! containers (`fanout`), their results merged.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::Phase;
use super::client::{ClientProgress, ClientReport, RunShared, Totals, run_client};
use super::fanout::ClientLauncher;
use super::pacing;
use super::verdict::{self, Evidence};
use super::watch::{Watch, WatchSetup};
use crate::db::probe::ProbeTarget;
use crate::db::{BindingSettings, ErrorClass, MongoBinding};
use crate::events::{ClientLine, Discard, Event, Sink};
use crate::measure::{self, MeasurementConfig, Measurements};
use crate::runner::RunError;
use crate::workload::prop;
use crate::workload::{CoreWorkload, Properties};
use limits::{Limits, lookup, parse_prop};
use tasks::{WarmupEnd, spawn_error_guard, spawn_ticks, spawn_timer, spawn_warmup_end};

mod limits;
mod tasks;

/// How `execute` is run, and where what it says goes (the CLI's printer, an experiment's
/// progress display, a test's recorder).
#[derive(Debug, Clone, Default)]
pub struct ExecuteOptions {
    /// Cancelled on Ctrl-C (the CLI passes `crate::signals::install()`); stops the clients gracefully.
    pub cancel: CancellationToken,
    /// Take YCSB's status line every interval and emit it ([`Event::Status`]) (`-s`); the
    /// `status` property also turns it on.
    pub status_lines: bool,
    /// Use this connection string instead of `mongodb.url` (experiments pass the topology's entry point).
    pub uri: Option<String>,
    /// Members to probe for liveness while the run goes on (`None`: discovered from the
    /// connection string: its hosts, their replica set, and a mongos's shards). Several
    /// clients each discover and probe on their own.
    pub probe_targets: Option<Vec<ProbeTarget>>,
    /// The members whose CPU their backend reads (containers), added to the servers' CPU
    /// that `/proc` finds; the default reads none.
    pub member_cpu: crate::backend::MemberCpu,
    /// Where the run's events go; `None` discards them.
    pub events: Option<Sink>,
    /// Drop the benchmark database before a load (`load --drop`).
    pub drop_database: bool,
    /// Notes said before `Loading workload...` (YCSB's `Command line: ...` banner).
    pub banner: Vec<String>,
    /// Wait at a start barrier once connected: say [`ClientLine::Ready`] and start
    /// when a line arrives on stdin (a client of `--clients`).
    pub barrier: bool,
    /// Where the clients run: in this process (the default), or in several client processes
    /// or containers whose results are merged (`--clients`, a topology's `clients`).
    pub clients: ClientLauncher,
    /// Keep the client this phase connects for the next phase with the same connection, and use
    /// one kept by an earlier phase (in this process only).
    pub reuse: Option<super::Reuse>,
}

/// How long clients still waiting on the server get after the run's stop before they are
/// abandoned (and the result declared invalid): a dead or frozen server never holds a run.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// The grace after a member was declared dead (`microshard.deadseconds`): clients not waiting on
/// it finish their operation, the others are abandoned.
const DEAD_GRACE: Duration = Duration::from_secs(1);

/// What [`execute`] returns: the result document and, for a phase run in this process, what
/// YCSB's report is rendered from (the caller picks the exporter and writes it: the engine never
/// prints).
#[derive(Debug)]
pub struct Executed {
    /// The phase's result document.
    pub document: measure::RunDocument,
    /// `None` when several clients ran: their merged document is what the report is made of.
    pub report: Option<YcsbReport>,
}

/// What YCSB's report of a phase run in this process is rendered from.
#[derive(Debug)]
pub struct YcsbReport {
    /// The run's measurements.
    pub run: measure::RunMeasurements,
    /// Run time and operation count, as YCSB's `[OVERALL]` section gives them.
    pub overall: measure::Overall,
    /// How the run was measured.
    pub config: MeasurementConfig,
    /// The raw data points, when `measurementtype` asks for them and no file takes them
    /// (YCSB prints them on stdout before the report).
    pub raw_data: Option<String>,
}

/// Runs one phase: in this process, or with the several clients `opts.clients` starts, their
/// results merged. The callers never choose.
///
/// Bad input (properties, URL, an unreachable server) comes back as [`RunError::BadInput`].
pub async fn execute(
    props: &Properties,
    phase: Phase,
    opts: &ExecuteOptions,
) -> Result<Executed, RunError> {
    if opts.clients.several() {
        let document = super::fanout::execute(props, phase, opts).await?;
        return Ok(Executed {
            document,
            report: None,
        });
    }
    let run = PhaseRun::prepare(props, phase, opts)?;
    let (binding, server, probe_targets) = run.connect().await?;
    let shared = run.shared(binding)?;
    let ran = run.run_clients(&shared, probe_targets).await?;
    run.report(server, ran)
}

/// One phase in this process: what it was asked, and what it knows before it connects (its
/// limits, the workload, the operations per client, how it is measured and its pace).
struct PhaseRun<'a> {
    props: &'a Properties,
    phase: Phase,
    opts: &'a ExecuteOptions,
    events: Sink,
    limits: Limits,
    workload: Arc<CoreWorkload>,
    /// Operations per client.
    split: Vec<u64>,
    threads: usize,
    mcfg: MeasurementConfig,
    tick_ns: Option<u64>,
    measurements: Arc<Measurements>,
}

/// The clients' run once joined: their reports and counters, the timed window, what the tasks
/// beside them saw and the client's CPU over the window.
struct Ran {
    joined: Joined,
    counters: Counters,
    window: Window,
    watched: super::watch::WatchReport,
    /// The error-rate guard's reason, when it stopped the run.
    error_stop: Option<String>,
    cpu: measure::ClientCpu,
    /// How quiet the machine was over the window.
    host: Option<measure::host_load::HostLoad>,
}

impl<'a> PhaseRun<'a> {
    /// Says the properties' warnings and notes, reads the limits, builds the workload, splits the
    /// operations over the clients and proves the measurement files writable, before anything
    /// connects.
    fn prepare(
        props: &'a Properties,
        phase: Phase,
        opts: &'a ExecuteOptions,
    ) -> Result<PhaseRun<'a>, RunError> {
        let events: Sink = opts.events.clone().unwrap_or_else(Discard::sink);
        let say = |line: &str| events.event(Event::Note(line.to_string()));
        for w in props.warnings() {
            say(&format!("warning: {w}"));
        }
        for note in crate::workload::java_only::notes(props, phase == Phase::Load)
            .map_err(RunError::bad_input)?
        {
            say(&note);
        }
        let limits = Limits::read(props, opts)?;
        let workload =
            Arc::new(CoreWorkload::from_properties(props).map_err(RunError::as_bad_input)?);
        let total_ops = match phase {
            Phase::Load => crate::workload::load_operation_count(props),
            Phase::Run => crate::workload::run_operation_count(props),
        }
        .map_err(RunError::as_bad_input)?;
        let threads_usize = usize::try_from(limits.requested_threads).unwrap_or(usize::MAX);
        let (split, split_warning) = crate::workload::split_operations(total_ops, threads_usize);
        if let Some(w) = split_warning {
            say(&w);
        }
        let threads = split.len().max(1);
        super::fdlimit::ensure(threads).map_err(RunError::bad_input)?;
        let tick_ns = pacing::tick_ns(limits.target, threads);
        let mcfg = measurement_config(props, tick_ns.is_some(), &say)?;
        Ok(PhaseRun {
            props,
            phase,
            opts,
            limits,
            workload,
            split,
            threads,
            measurements: Measurements::new(mcfg.clone()),
            mcfg,
            tick_ns,
            events,
        })
    }

    /// What every client shares, once connected.
    fn shared(&self, binding: MongoBinding) -> Result<Arc<RunShared>, RunError> {
        Ok(Arc::new(RunShared {
            phase: self.phase,
            table: self.workload.table().to_string(),
            verify: self.workload.fields.dataintegrity,
            workload: self.workload.clone(),
            binding,
            measurements: self.measurements.clone(),
            stop: self.opts.cancel.child_token(),
            tick_ns: self.tick_ns,
            spin_sleep: parse_prop(self.props, &prop::SPIN_SLEEP)?,
            initial_delay: pacing::wants_initial_delay(self.limits.target, self.threads),
            time_bound: (self.limits.max_execution_s > 0)
                .then(|| self.limits.warmup + Duration::from_secs(self.limits.max_execution_s)),
            events: self.events.clone(),
        }))
    }

    /// Starts the clients and the tasks beside them, and joins them: the clients end by
    /// themselves, or are stopped; those still blocked on the server after the grace period are
    /// abandoned.
    async fn run_clients(
        &self,
        shared: &Arc<RunShared>,
        probe_targets: Vec<ProbeTarget>,
    ) -> Result<Ran, RunError> {
        let members = members(&probe_targets);
        let quiet = (self.limits.wait_quiet, self.limits.busy_host);
        super::quiet::wait_for_quiet(quiet, &members, &shared.stop, &self.events).await;
        let host_before = sample_host(&members, &self.opts.member_cpu).await;
        let cpu_before = measure::ClientCpu::now();
        let started_wall = chrono::Utc::now();
        let start = Instant::now();
        let (handles, counters) = spawn_clients(shared, &self.split);
        let probes = (probe_targets, shared.binding.dial().clone());
        let beside = Beside::start(self, &shared.stop, &counters, probes, start);
        let joined = join_clients(handles, &shared.stop, &beside.abandon, &self.events).await;
        let elapsed = start.elapsed();
        let end = Instant::now();
        let (watched, warm, error_stop) = beside.finish(end).await;
        // CPU over the same window as the figures: from the warm-up's end when there was one.
        let cpu = measure::ClientCpu::now().since(warm.as_ref().map_or(&cpu_before, |w| &w.cpu));
        let host_start = warm
            .as_ref()
            .and_then(|w| w.host.as_ref())
            .or(host_before.as_ref());
        let host_end = sample_host(&members, &self.opts.member_cpu).await;
        let host = host_start
            .zip(host_end)
            .map(|(a, b)| measure::host_load::between(a, &b));
        if joined.panicked > 0 {
            return Err(RunError::Clients(format!(
                "{} client task(s) failed unexpectedly; results discarded",
                joined.panicked
            )));
        }
        let window = Window::of(&counters, warm, &self.limits, end, elapsed, started_wall);
        Ok(Ran {
            joined,
            counters,
            window,
            watched,
            error_stop,
            cpu,
            host,
        })
    }

    /// Finishes the measurements (and their files), says why the run stopped early and judges
    /// the result document.
    fn report(self, server: measure::ServerFacts, ran: Ran) -> Result<Executed, RunError> {
        let ended_wall = chrono::Utc::now();
        let overall = ran.window.overall(self.phase);
        let run = self.measurements.finish();
        let (problems, raw_data) = super::outputs::finish(&run, &self.mcfg);
        for problem in problems {
            self.events
                .event(Event::Warning(format!("warning: {problem}")));
        }
        let mut document = measure::RunDocument::new(
            self.phase.name(),
            ran.window.started_wall,
            ended_wall,
            &overall,
            &run,
        )?;
        self.judge(&mut document, server, ran);
        Ok(Executed {
            document,
            report: Some(YcsbReport {
                run,
                overall,
                config: self.mcfg,
                raw_data,
            }),
        })
    }

    /// Completes the result document: the properties, the verdict (`runner::verdict`), why the
    /// run stopped early, and the server's facts.
    fn judge(&self, doc: &mut measure::RunDocument, mut server: measure::ServerFacts, ran: Ran) {
        let stopped = ran.stop_reasons(&self.limits, self.opts.cancel.is_cancelled());
        doc.properties = recorded_properties(self.props, self.opts.uri.as_deref());
        doc.client_cpu = ran.cpu;
        let error_classes = error_classes(&ran.counters);
        let evidence = Evidence {
            load: self.phase == Phase::Load,
            operations: ran.window.totals.done,
            failed: ran.window.totals.failed,
            not_found: doc.not_found(),
            max_error_rate: self.limits.error_rate_limit,
            failed_time_share: failed_time_share(doc, self.threads, ran.window.elapsed),
            error_classes: error_classes.clone(),
            timeline: ran.watched.timeline,
            stopped: stopped.clone(),
            abandoned_clients: ran.joined.abandoned,
            client_cpu_s: ran.cpu.total_us() as f64 / 1e6,
            wall_s: ran.window.elapsed.as_secs_f64(),
            cores: doc.host.cpu_count,
        };
        doc.validity = verdict::assess(&evidence);
        if let Some(why) = ran
            .host
            .as_ref()
            .and_then(|h| h.busy(self.limits.busy_host))
        {
            doc.validity.degrade(why);
        }
        doc.host_load = ran.host;
        doc.schedule = self.tick_ns.map(|_| measure::Schedule {
            late: ran.window.totals.late,
            unsent: (ran.counters.iter())
                .map(|(p, _)| p.unsent.load(Ordering::Relaxed))
                .sum(),
        });
        doc.inserted_keys = self.workload.inserted_keys(self.phase == Phase::Load);
        doc.warmup_s = self.limits.warmup_s;
        doc.timeline = evidence.timeline;
        server.error_classes = error_classes;
        if server.standin {
            server.note = Some("measured against the microshard stand-in, not MongoDB".into());
        }
        server.run_stopped = (!stopped.is_empty()).then(|| stopped.join("; "));
        server.threads = Some(self.threads as u64);
        doc.server = server;
        doc.clients = vec![measure::ClientEntry::of(0, "localhost", doc)];
    }

    /// Connects the binding, says YCSB's banner, records the server's facts, drops the database
    /// for `load --drop`, finds the members to probe and, for a client of several, waits at the
    /// start barrier.
    async fn connect(
        &self,
    ) -> Result<(MongoBinding, measure::ServerFacts, Vec<ProbeTarget>), RunError> {
        let (props, opts) = (self.props, self.opts);
        let say = |line: &str| self.events.event(Event::Note(line.to_string()));
        let settings = BindingSettings::from_properties(props, self.threads, opts.uri.as_deref())
            .map_err(RunError::as_bad_input)?;
        for w in &settings.resolved.warnings {
            say(&format!("warning: {w}"));
        }
        let binding = match &opts.reuse {
            Some(reuse) => reuse.connect(settings, self.events.clone()).await,
            None => MongoBinding::connect_with(settings, self.events.clone()).await,
        }
        .map_err(RunError::as_bad_input)?;
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
        let server = binding.server_facts().await;
        if server.standin {
            say("NOTE: measured against the microshard stand-in, not MongoDB");
        }
        if opts.drop_database && self.phase == Phase::Load {
            binding.drop_database().await.map_err(RunError::Db)?;
            say(&format!(
                "dropped database {} before loading (--drop)",
                binding.settings().resolved.database
            ));
        }
        if self.phase == Phase::Run
            && !opts.barrier
            && let Some(line) = super::size_notice::records_mismatch(props, &binding).await?
        {
            say(&line);
        }
        let probe_targets = match &opts.probe_targets {
            Some(t) => t.clone(),
            None => {
                let found = binding.discover_members().await;
                for note in &found.notes {
                    say(&format!("warning: {note}"));
                }
                found.targets
            }
        };
        if let Some(line) = binding.connections_notice(self.threads).await {
            say(&format!("warning: {line}"));
        }
        if opts.barrier {
            self.wait_at_barrier().await?;
        }
        Ok((binding, server, probe_targets))
    }

    /// A client of several: says it is ready and starts when a line arrives on stdin.
    async fn wait_at_barrier(&self) -> Result<(), RunError> {
        self.events.event(Event::Protocol(ClientLine::Ready));
        let mut line = String::new();
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
        tokio::select! {
            r = tokio::io::AsyncBufReadExt::read_line(&mut stdin, &mut line) => {
                if !matches!(r, Ok(n) if n > 0) {
                    return Err(RunError::Clients(
                        "the coordinator went away before the start".into(),
                    ));
                }
            }
            _ = self.opts.cancel.cancelled() => return Err(crate::error::Interrupted("before the start".into()).into()),
        }
        Ok(())
    }

    /// The watch's settings: the members to probe, when a run counts as stalled (a run throttled
    /// below one operation per stall period must not look stalled) and when a member is dead.
    fn watch_setup(
        &self,
        start: Instant,
        counters: &Counters,
        (targets, dial): (Vec<ProbeTarget>, crate::db::dial::Dial),
        stop: &CancellationToken,
        abandon: &CancellationToken,
    ) -> WatchSetup {
        let l = &self.limits;
        let stall_after = Duration::from_secs_f64(if l.target > 0.0 {
            l.stall_s.max(3.0 / l.target)
        } else {
            l.stall_s
        });
        WatchSetup {
            start,
            stall_after,
            stall_abort_after: (stall_after * 10).max(Duration::from_secs(20)),
            dead_after: Duration::from_secs_f64(l.dead_s),
            progress: progress_of(counters),
            targets,
            dial,
            stop: stop.clone(),
            abandon: abandon.clone(),
            events: self.events.clone(),
        }
    }

    /// The status line's printer (`-s`, `status.interval`).
    fn status_printer(&self, counters: &Counters, start: Instant) -> super::status::StatusPrinter {
        let l = &self.limits;
        super::status::StatusPrinter {
            measurements: self.measurements.clone(),
            counters: counters.to_vec(),
            label: l.label.clone(),
            interval: Duration::from_secs(l.status_interval_s.max(1)),
            start,
            events: self.events.clone(),
            // A client of several only snapshots its intervals (for its interval logs): the
            // coordinator prints the merged line.
            print: !self.opts.barrier,
            // YCSB also prints the status line on stdout with measurementtype=timeseries.
            stdout: self.mcfg.measurement_type == measure::MeasurementType::TimeSeries,
        }
    }
}

/// How the run is measured, as the properties say, with its warnings said. Unlike YCSB: with a
/// target and no `measurement.interval` given, intended latency is recorded too (`Intended-OP`),
/// so coordinated omission is visible; said once, and an explicit `op` keeps YCSB's output
/// (`docs/engine.md`, "Runner"). The measurement files are proven writable before anything is
/// started.
fn measurement_config(
    props: &Properties,
    paced: bool,
    say: &dyn Fn(&str),
) -> Result<MeasurementConfig, RunError> {
    let mut mcfg =
        MeasurementConfig::from_lookup(&lookup(props)).map_err(RunError::as_bad_input)?;
    for w in &mcfg.warnings {
        say(w);
    }
    if paced
        && mcfg.interval == measure::IntervalMode::Op
        && props.get(prop::MEASUREMENT_INTERVAL.name).is_none()
    {
        mcfg.interval = measure::IntervalMode::Both;
        say(&format!(
            "note: with a target, intended latency is reported too ([Intended-OP] blocks, {}=both); give -p {}=op for YCSB's output alone",
            prop::MEASUREMENT_INTERVAL.name,
            prop::MEASUREMENT_INTERVAL.name
        ));
    }
    super::outputs::check(&mcfg)?;
    if let Some(note) = super::outputs::raw_notice(&mcfg) {
        say(&note);
    }
    Ok(mcfg)
}

/// The probed members as (name, address), for the host's load samples.
/// The machine now, with the CPU of the members its backend reads (containers) read first:
/// the start and end of a window sample both the same way, so their deltas line up.
async fn sample_host(
    members: &[(String, String)],
    member_cpu: &crate::backend::MemberCpu,
) -> Option<measure::host_load::HostSample> {
    let elsewhere = member_cpu.read().await;
    measure::host_load::sample(members).map(|s| s.with_elsewhere(elsewhere))
}

fn members(targets: &[ProbeTarget]) -> Vec<(String, String)> {
    targets
        .iter()
        .map(|t| (t.name.clone(), t.address.clone()))
        .collect()
}

/// The tasks beside the clients: the watch, the `maxexecutiontime` timer, the error-rate guard,
/// the warm-up's end, a client of several's ticks and the status line.
struct Beside {
    watch: Watch,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The error-rate guard, whose output is its reason when it stopped the run.
    error_guard: Option<tokio::task::JoinHandle<Option<String>>>,
    /// The warm-up's end, whose output is where the timed window starts.
    warm_end: Option<tokio::task::JoinHandle<Option<WarmupEnd>>>,
    /// Cancelled once the clients are joined: the tasks end.
    clients_done: CancellationToken,
    /// Cancelled when a member is dead: clients still waiting on it are abandoned at once.
    abandon: CancellationToken,
}

impl Beside {
    /// Once the clients are joined (at `end`): the watch's log, where the warm-up ended, and the
    /// error-rate guard's reason, when it stopped the run.
    async fn finish(
        self,
        end: Instant,
    ) -> (super::watch::WatchReport, Option<WarmupEnd>, Option<String>) {
        self.clients_done.cancel();
        let watched = self.watch.finish(end).await;
        for task in self.tasks {
            let _ = task.await;
        }
        let error_stop = match self.error_guard {
            Some(task) => task.await.ok().flatten(),
            None => None,
        };
        let warm = match self.warm_end {
            Some(task) => task.await.ok().flatten(),
            None => None,
        };
        (watched, warm, error_stop)
    }

    /// Starts the watch and the tasks beside the clients of `run`.
    fn start(
        run: &PhaseRun<'_>,
        stop: &CancellationToken,
        counters: &Counters,
        (probe_targets, dial): (Vec<ProbeTarget>, crate::db::dial::Dial),
        start: Instant,
    ) -> Beside {
        let (l, events) = (&run.limits, &run.events);
        let members = members(&probe_targets);
        let (clients_done, abandon) = (CancellationToken::new(), CancellationToken::new());
        let probes = (probe_targets, dial);
        let watch = Watch::start(run.watch_setup(start, counters, probes, stop, &abandon));
        let mut tasks = Vec::new();
        // maxexecutiontime: stop gracefully (in-flight ops finish, cleanup runs).
        if l.max_execution_s > 0 {
            tasks.push(spawn_timer(
                l.warmup + Duration::from_secs(l.max_execution_s),
                l.max_execution_s,
                stop,
                &clients_done,
                events.clone(),
            ));
        }
        // The error-rate guard samples once a second after a minimum number of ops.
        let error_guard = l
            .max_error_rate
            .map(|rate| spawn_error_guard(rate, stop, progress_of(counters), &clients_done));
        // Warm-up: at its end everything measured so far is forgotten and the timed window starts.
        let warm_end = (!l.warmup.is_zero()).then(|| {
            let progress = progress_of(counters);
            spawn_warmup_end(
                l.warmup,
                &run.measurements,
                progress,
                &clients_done,
                (members, run.opts.member_cpu.clone()),
            )
        });
        // A client of several (`--barrier`) tells its coordinator how far it is, once a second
        // and once at the end, so the coordinator can print one merged status line
        // (`docs/engine.md`, "Several clients").
        if run.opts.barrier {
            tasks.push(spawn_ticks(progress_of(counters), &clients_done, events));
        }
        if l.status_enabled {
            let status = run.status_printer(counters, start);
            tasks.push(tokio::spawn(status.run(clients_done.clone())));
        }
        Beside {
            watch,
            tasks,
            error_guard,
            warm_end,
            clients_done,
            abandon,
        }
    }
}

/// The timed window of a joined run: from the warm-up's end when there was one, else from the
/// start; the counts are the clients' own (they include clients abandoned mid-operation).
struct Window {
    /// The counts inside the window.
    totals: Totals,
    elapsed: Duration,
    started_wall: chrono::DateTime<chrono::Utc>,
    /// A warm-up was asked for and the run ended inside it.
    warmup_unfinished: bool,
}

impl Window {
    /// Run time and operation count as YCSB's `[OVERALL]` gives them: a load counts the
    /// inserts that succeeded.
    fn overall(&self, phase: Phase) -> measure::Overall {
        measure::Overall {
            runtime_ms: u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            operations: match phase {
                Phase::Load => self.totals.inserted,
                Phase::Run => self.totals.done,
            },
        }
    }

    fn of(
        counters: &[(Arc<ClientProgress>, u64)],
        warm: Option<WarmupEnd>,
        limits: &Limits,
        end: Instant,
        elapsed: Duration,
        started_wall: chrono::DateTime<chrono::Utc>,
    ) -> Window {
        let totals = Totals::of(counters.iter().map(|(p, _)| &**p));
        match warm {
            Some(w) => Window {
                totals: totals.since(w.totals),
                elapsed: end.saturating_duration_since(w.at),
                started_wall: w.wall,
                warmup_unfinished: false,
            },
            None => Window {
                totals,
                elapsed,
                started_wall,
                warmup_unfinished: !limits.warmup.is_zero(),
            },
        }
    }
}

/// Every client's progress counter, with its operation count (0 = unlimited).
type Counters = Vec<(Arc<ClientProgress>, u64)>;

/// One client task per slice of the operations, each with its progress counter.
fn spawn_clients(
    shared: &Arc<RunShared>,
    split: &[u64],
) -> (Vec<tokio::task::JoinHandle<ClientReport>>, Counters) {
    let mut handles = Vec::with_capacity(split.len());
    let mut counters = Vec::with_capacity(split.len());
    for (i, &n) in split.iter().enumerate() {
        let progress = Arc::new(ClientProgress::default());
        counters.push((progress.clone(), n));
        handles.push(tokio::spawn(run_client(shared.clone(), i, n, progress)));
    }
    (handles, counters)
}

/// Failed operations per error class, over every client.
fn error_classes(counters: &Counters) -> BTreeMap<String, u64> {
    let mut classes: BTreeMap<String, u64> = BTreeMap::new();
    for (progress, _) in counters {
        let Ok(counted) = progress.error_classes.lock() else {
            continue;
        };
        for (class, n) in counted.iter() {
            *classes.entry(ErrorClass::label(*class)).or_insert(0) += n;
        }
    }
    classes
}

/// How the client tasks ended.
struct Joined {
    /// The reports of the clients that finished.
    reports: Vec<ClientReport>,
    /// Client tasks that panicked (the run's figures are then discarded).
    panicked: usize,
    /// Clients abandoned while blocked on the server after the stop.
    abandoned: usize,
}

/// Waits for every client; once `stop` is cancelled, clients still waiting on the server after
/// [`STOP_GRACE`] are abandoned (and said so): a dead or frozen server never holds a run.
async fn join_clients(
    handles: Vec<tokio::task::JoinHandle<ClientReport>>,
    stop: &CancellationToken,
    abandon: &CancellationToken,
    events: &Sink,
) -> Joined {
    let abort_handles: Vec<tokio::task::AbortHandle> =
        handles.iter().map(|h| h.abort_handle()).collect();
    let joined = futures::future::join_all(handles);
    tokio::pin!(joined);
    let results = tokio::select! {
        r = &mut joined => r,
        grace = async {
            stop.cancelled().await;
            // A dead member will not answer: waiting the whole grace only delays the next cell.
            tokio::select! {
                _ = tokio::time::sleep(STOP_GRACE) => STOP_GRACE,
                _ = abandon.cancelled() => {
                    tokio::time::sleep(DEAD_GRACE).await;
                    DEAD_GRACE
                }
            }
        } => {
            events.event(Event::Finding(format!(
                "microshard: clients still waiting on the server {} s after the stop: abandoning them",
                grace.as_secs()
            )));
            for a in &abort_handles {
                a.abort();
            }
            joined.await
        }
    };
    let mut out = Joined {
        reports: Vec::with_capacity(results.len()),
        panicked: 0,
        abandoned: 0,
    };
    for r in results {
        match r {
            Ok(r) => out.reports.push(r),
            Err(e) if e.is_cancelled() => out.abandoned += 1,
            Err(_) => out.panicked += 1,
        }
    }
    out
}

/// Every client's progress counter.
fn progress_of(counters: &[(Arc<ClientProgress>, u64)]) -> Vec<Arc<ClientProgress>> {
    counters.iter().map(|(p, _)| p.clone()).collect()
}

impl Ran {
    /// One sentence per reason the run stopped before its end (the verdict and the server facts
    /// record them).
    fn stop_reasons(&self, limits: &Limits, interrupted: bool) -> Vec<String> {
        let mut stopped: Vec<String> = Vec::new();
        if self.window.warmup_unfinished {
            stopped.push(format!(
                "ended during its {} s warm-up: no operation came after it, so its figures are the warm-up's own",
                limits.warmup_s
            ));
        }
        stopped.extend(self.error_stop.clone());
        stopped.extend(self.watched.aborted.clone());
        let reports = &self.joined.reports;
        if let Some(fatal) = reports.iter().find_map(|r| r.fatal.clone()) {
            stopped.push(format!("stopped: {fatal}"));
        }
        if reports.iter().any(|r| r.gave_up) {
            stopped
                .push("stopped: a client gave up after an insert failed beyond its retries".into());
        }
        if interrupted {
            stopped.push("was interrupted".into());
        }
        stopped
    }
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
            unused: Properties::is_unused(&p.key),
            key: p.key,
        })
        .collect();
    if let Some(uri) = uri {
        out.push(measure::result::PropertyEntry {
            key: prop::MONGODB_URL.name.into(),
            value: crate::redact::redact_uri(uri),
            origin: "connection string in use (--uri or the topology's entry point)".into(),
            unused: false,
        });
    }
    out
}

/// Share of the clients' time spent on operations that failed: the failed measurements'
/// latencies summed, over threads × run time.
fn failed_time_share(doc: &measure::RunDocument, threads: usize, elapsed: Duration) -> f64 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Recorder;

    /// A load against an in-process stand-in says YCSB's banner and notes, its status lines
    /// and nothing else: no terminal, only the events.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_says_its_banner_notes_and_status_lines_as_events() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cfg = crate::standin::StandinConfig::new(crate::standin::Role::Mongod);
        cfg.dbpath = Some(dir.path().to_path_buf());
        cfg.quiet = true;
        let server = crate::standin::spawn(cfg).expect("stand-in starts");
        let mut props = Properties::new();
        for kv in [
            format!(
                "mongodb.url=mongodb://127.0.0.1:{}/ycsb?directConnection=true",
                server.port()
            ),
            "recordcount=20".into(),
            "threadcount=2".into(),
        ] {
            props.apply_override(&kv).expect("property");
        }
        let recorder = Arc::new(Recorder::default());
        let opts = ExecuteOptions {
            status_lines: true,
            events: Some(recorder.clone()),
            banner: vec!["Command line: load".into()],
            ..Default::default()
        };
        let doc = execute(&props, Phase::Load, &opts)
            .await
            .expect("load")
            .document;
        assert_eq!(doc.operations, 20);
        let events = recorder.events();
        let notes: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::Note(l) => Some(l.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            notes[..3],
            [
                "Command line: load",
                "Loading workload...",
                "Starting test."
            ],
            "{events:?}"
        );
        assert!(
            notes[3].starts_with("mongo client connection created with mongodb://127.0.0.1:"),
            "{events:?}"
        );
        assert_eq!(
            notes[4], "NOTE: measured against the microshard stand-in, not MongoDB",
            "{events:?}"
        );
        // One status line at the start and one at the end, on stderr only.
        let status: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e, Event::Status { .. }))
            .collect();
        assert!(status.len() >= 2, "{events:?}");
        assert!(
            status.iter().all(|e| matches!(
                e,
                Event::Status {
                    also_stdout: false,
                    ..
                }
            )),
            "{events:?}"
        );
        assert!(
            !events.iter().any(|e| matches!(
                e,
                Event::Warning(_) | Event::Finding(_) | Event::OpError { .. }
            )),
            "{events:?}"
        );
        server.shutdown().await;
    }
}
