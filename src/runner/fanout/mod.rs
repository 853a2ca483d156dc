//! Several client processes for one phase (`--clients N`): when one client machine or process is
//! not enough, N ordinary `microshard load|run` processes each take a slice of the work, start
//! together at a barrier, and their result documents are merged exactly — histograms added, never
//! percentiles averaged (`docs/engine.md`, "Several clients"). The same split, barrier, merged
//! status line and merge drive client containers on Docker engines (a topology's `clients`):
//! [`ClientLauncher`] says which, `fanout::docker` starts the containers.
//!
//! The work is split as YCSB documents for several clients: a load gives each client a disjoint
//! `insertstart`/`insertcount` slice so the union is exactly the data set; a run splits
//! `operationcount` and `threadcount`; run-phase inserts are spread with
//! `microshard.insertstride`/`insertoffset` so clients never insert the same key.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rustix::process::{Pid, Signal};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::runner::{ExecuteOptions, Phase};

pub(crate) mod docker;
#[cfg(feature = "kubernetes")]
pub(crate) mod kubernetes;
pub(crate) mod merge_input;
use crate::events::{ClientLine, Event};
use crate::measure::{ClientEntry, RunDocument};
use crate::runner::RunError;
use crate::workload::core::split_evenly as split;
use crate::workload::{Properties, prop};

/// How long every client gets to connect and reach the start barrier.
const BARRIER_TIMEOUT: Duration = Duration::from_secs(60);

/// One client's slice of the work: the properties it overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slice {
    /// Property overrides for this client.
    pub overrides: Vec<(String, String)>,
}

/// Each client of a load inserts its own part of the key range: a client left without a key
/// would refuse its empty range inside its own process, after the others started. Refused up
/// front instead.
fn check_keys_per_client(keys: u64, clients: u64) -> Result<(), RunError> {
    if clients > 1 && keys < clients {
        return Err(RunError::bad_input(format!(
            "--clients {clients}: more clients than keys to load ({keys}: insertcount, else recordcount - insertstart, split across clients)"
        )));
    }
    Ok(())
}

/// The slices of `clients` clients for a phase with these properties.
pub(crate) fn slices(
    props: &Properties,
    phase: Phase,
    clients: usize,
) -> Result<Vec<Slice>, RunError> {
    let n = clients as u64;
    let threads: u64 = props
        .value(&prop::THREADCOUNT)
        .map_err(RunError::as_bad_input)?;
    crate::error::BadInput::unless_at_least("--clients", n, 1)?;
    if n > threads {
        return Err(RunError::bad_input(format!(
            "--clients {n}: more clients than threads (threadcount={threads} is the total, split across clients)"
        )));
    }
    let target: i64 = props.value(&prop::TARGET).map_err(RunError::as_bad_input)?;
    // Under a `target`, the clients together offer the rate asked for, not N times it: each
    // takes its share as it takes its threads (`docs/engine.md`, "Several clients").
    let rates = (target > 0).then(|| split(target as u64, n));
    let mut out: Vec<Slice> = split(threads, n)
        .iter()
        .enumerate()
        .map(|(i, t)| {
            // The coordinator waits for a quiet host before the start, not each client.
            let mut overrides = vec![
                (prop::THREADCOUNT.name.into(), t.to_string()),
                (prop::WAITQUIET.name.into(), "0".into()),
            ];
            if let Some(rates) = &rates {
                overrides.push((prop::TARGET.name.into(), rates[i].to_string()));
            }
            Slice { overrides }
        })
        .collect();
    match phase {
        Phase::Load => {
            let start: u64 = props
                .parse_or(prop::INSERTSTART.name, prop::INSERTSTART.default as u64)
                .map_err(RunError::as_bad_input)?;
            let count =
                crate::workload::load_operation_count(props).map_err(RunError::as_bad_input)?;
            check_keys_per_client(count, n)?;
            let mut next = start;
            for (slice, c) in out.iter_mut().zip(split(count, n)) {
                slice.overrides.extend([
                    (prop::INSERTSTART.name.into(), next.to_string()),
                    (prop::INSERTCOUNT.name.into(), c.to_string()),
                ]);
                next += c;
            }
        }
        Phase::Run => {
            let ops =
                crate::workload::run_operation_count(props).map_err(RunError::as_bad_input)?;
            let ops_split = if ops == 0 {
                vec![0; out.len()]
            } else {
                split(ops, n)
            };
            for (i, (slice, o)) in out.iter_mut().zip(ops_split).enumerate() {
                slice.overrides.extend([
                    (prop::OPERATIONCOUNT.name.into(), o.to_string()),
                    (prop::INSERTSTRIDE.name.into(), n.to_string()),
                    (prop::INSERTOFFSET.name.into(), i.to_string()),
                ]);
            }
        }
    }
    Ok(out)
}

/// Where the clients of one phase run: the seam between what is the same for every client (the
/// split, the barrier, the merged status line, the merge) and what starts, signals and reads back
/// one client.
#[derive(Debug, Clone)]
pub enum ClientLauncher {
    /// `count` child processes of this binary on this machine (`--clients N`).
    Local {
        /// How many.
        count: usize,
    },
    /// Containers of the client image on Docker engines (a topology's `clients`).
    Docker(docker::DockerClients),
    /// Pods of one Indexed Job in a Kubernetes cluster (`clients = [{ kubernetes = ... }]`).
    #[cfg(feature = "kubernetes")]
    Kubernetes(kubernetes::launch::KubernetesClients),
}

impl Default for ClientLauncher {
    /// One client, in this process.
    fn default() -> ClientLauncher {
        ClientLauncher::Local { count: 1 }
    }
}

impl ClientLauncher {
    /// How many clients the phase runs.
    pub(crate) fn count(&self) -> usize {
        match self {
            ClientLauncher::Local { count } => *count,
            ClientLauncher::Docker(d) => d.count(),
            #[cfg(feature = "kubernetes")]
            ClientLauncher::Kubernetes(k) => k.count(),
        }
    }

    /// Whether the phase runs in client processes or containers (else in this process).
    pub(crate) fn several(&self) -> bool {
        !matches!(self, ClientLauncher::Local { count: 0 | 1 })
    }
}

/// What a client's reader and waiter tasks tell the coordinator.
#[derive(Debug)]
pub(crate) enum ClientSignal {
    /// Connected and waiting at the barrier.
    Ready(usize),
    /// Operations done so far.
    Tick(usize, u64),
    /// Gone: its exit status (`None` = killed by a signal or unknown).
    Exited(usize, Option<i64>),
}

/// How one client runs: a child process, or a container on some engine.
pub(crate) enum ClientHandle {
    /// A child process of this binary; its result document is `json`.
    Process {
        /// Its pid, for SIGTERM/SIGKILL (never signalled once it has exited).
        pid: Option<u32>,
        /// Where it writes its result document.
        json: PathBuf,
    },
    /// A container (see `fanout::docker`).
    Container(docker::Running),
    /// A client pod (see `fanout::kubernetes`).
    #[cfg(feature = "kubernetes")]
    Pod(kubernetes::launch::PodHandle),
}

/// The stdin of a client process or container.
pub(crate) type ClientStdin = std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>;

/// One started client.
pub(crate) struct Client {
    /// Its index (0-based), which is also its slice.
    pub index: usize,
    /// Where it runs: this machine's name, or the Docker engine.
    pub host: String,
    /// Its stdin: one line starts it (in a mutex only so that `&Client` may cross an await).
    pub stdin: Option<tokio::sync::Mutex<ClientStdin>>,
    /// How to signal it and read its result.
    pub handle: ClientHandle,
    /// Where it ran, when it is a client pod (recorded in its result entry).
    pub placement: Option<crate::measure::ClientPod>,
}

impl Client {
    /// Asks it to stop (it finishes its in-flight operations and writes its result), or with
    /// `now` stops it at once.
    async fn stop(&self, now: bool) {
        let (sig, name) = match now {
            true => (Signal::KILL, "SIGKILL"),
            false => (Signal::TERM, "SIGTERM"),
        };
        match &self.handle {
            ClientHandle::Process { pid, .. } => signal(*pid, sig),
            ClientHandle::Container(c) => c.signal(name).await,
            #[cfg(feature = "kubernetes")]
            ClientHandle::Pod(p) => {
                p.stop(if now { 0 } else { STOP_GRACE.as_secs() as u32 })
                    .await
            }
        }
    }

    /// Its result document, if it wrote one.
    async fn result(&self) -> Option<RunDocument> {
        let text = match &self.handle {
            ClientHandle::Process { json, .. } => std::fs::read_to_string(json).ok()?,
            ClientHandle::Container(c) => c.result_text().await?,
            #[cfg(feature = "kubernetes")]
            ClientHandle::Pod(p) => p.result_text().await?,
        };
        serde_json::from_str(&text).ok()
    }
}

/// Handles one line a client wrote on stderr: the barrier and progress lines become events, its
/// findings and errors are said with its name; the banner and report are not repeated.
pub(crate) fn client_line(
    index: usize,
    host: &str,
    line: &str,
    events: &tokio::sync::mpsc::UnboundedSender<ClientSignal>,
    sink: &crate::events::Sink,
) {
    if let Some(said) = ClientLine::parse(line) {
        let _ = events.send(match said {
            ClientLine::Ready => ClientSignal::Ready(index),
            ClientLine::Progress(ops) => ClientSignal::Tick(index, ops),
        });
    } else if line.starts_with("microshard:") || line.starts_with("warning") {
        sink.event(Event::Finding(format!("client {index} on {host}: {line}")));
    }
}

pub(crate) fn properties_text(
    props: &Properties,
    slice: &Slice,
    extra: &[(String, String)],
) -> Result<Vec<u8>, RunError> {
    let mut map: std::collections::HashMap<String, String> = props
        .iter()
        .filter(|(k, _, _)| ![prop::EXPORTFILE.name, prop::STATUS.name].contains(k))
        .map(|(k, v, _)| (k.to_string(), v.to_string()))
        .collect();
    for (k, v) in slice.overrides.iter().chain(extra) {
        map.insert(k.clone(), v.clone());
    }
    let mut out = Vec::new();
    java_properties::write(&mut out, &map)
        .map_err(|e| RunError::Clients(format!("cannot write a client's properties: {e}")))?;
    Ok(out)
}

/// Runs the phase with the clients `opts.clients` starts and returns the merged result:
/// everything it started is stopped and removed whatever happens.
pub(crate) async fn execute(
    props: &Properties,
    phase: Phase,
    opts: &ExecuteOptions,
) -> Result<RunDocument, RunError> {
    let launcher = &opts.clients;
    let mut slices = slices(props, phase, launcher.count())?;
    let in_containers = !matches!(launcher, ClientLauncher::Local { .. });
    let logs = crate::runner::outputs::for_clients(
        props,
        slices.iter_mut().map(|s| &mut s.overrides).collect(),
        status_on(props, opts),
        in_containers,
    )?;
    // The clients' own notes are not shown (only their warnings are), so the coordinator says them.
    let notes = crate::workload::java_only::notes(props, phase == Phase::Load)
        .map_err(RunError::bad_input)?;
    let dir = tempfile::Builder::new()
        .prefix("microshard-clients-")
        .tempdir()
        .map_err(|e| RunError::io("cannot create a directory for the clients' results", e))?;
    let sink = opts
        .events
        .clone()
        .unwrap_or_else(crate::events::Discard::sink);
    if opts.drop_database && phase == Phase::Load {
        drop_database(props, opts, &sink).await?;
    }
    for note in &notes {
        sink.event(Event::Note(note.clone()));
    }
    let (events, rx) = tokio::sync::mpsc::unbounded_channel::<ClientSignal>();
    let mut running: Vec<Client> = Vec::new();
    let launch = Launch {
        props,
        phase,
        opts,
        slices: &slices,
        signals: &events,
        sink: &sink,
    };
    #[cfg(feature = "kubernetes")]
    let mut submitted = None;
    let started = match launcher {
        ClientLauncher::Local { .. } => start_local(&launch, dir.path(), &mut running).await,
        ClientLauncher::Docker(d) => d.start(&launch, &mut running).await,
        #[cfg(feature = "kubernetes")]
        ClientLauncher::Kubernetes(k) => k.start(&launch, &mut running, &mut submitted).await,
    };
    drop(events);
    let mut fleet = Fleet::new(running, rx);
    let outcome = match started {
        Ok(()) => fleet.drive(props, &slices, opts, &sink).await,
        Err(e) => {
            fleet.stop_remaining().await;
            Err(e)
        }
    };
    // Containers and the pods' Job are removed whatever happened (processes are gone once they
    // exited).
    #[allow(unused_mut)]
    let mut cleanup = remove_containers(&fleet.running).await;
    #[cfg(feature = "kubernetes")]
    if let Some(Err(e)) =
        futures::future::OptionFuture::from(submitted.as_ref().map(|s| s.remove())).await
    {
        cleanup.push(e);
    }
    if let (Ok(_), Some(logs)) = (&outcome, &logs) {
        for problem in logs.merge() {
            sink.event(Event::Warning(format!("warning: {problem}")));
        }
    }
    with_cleanup(outcome, cleanup)
}

/// The phase's outcome with what its clean-up could not remove: an error either way when
/// something was left behind.
fn with_cleanup(
    outcome: Result<RunDocument, RunError>,
    cleanup: Vec<String>,
) -> Result<RunDocument, RunError> {
    match outcome {
        Ok(doc) if cleanup.is_empty() => Ok(doc),
        Ok(_) => Err(RunError::Clients(cleanup.join("; "))),
        Err(e) if cleanup.is_empty() => Err(e),
        Err(e) => Err(RunError::Context {
            context: cleanup.join("; "),
            source: Box::new(e),
        }),
    }
}

/// `load --drop` with several clients: the coordinator drops the benchmark database once,
/// before any client starts.
async fn drop_database(
    props: &Properties,
    opts: &ExecuteOptions,
    sink: &crate::events::Sink,
) -> Result<(), RunError> {
    let settings = crate::db::BindingSettings::from_properties(props, 1, opts.uri.as_deref())
        .map_err(RunError::as_bad_input)?;
    let binding = crate::db::MongoBinding::connect_with(settings, sink.clone())
        .await
        .map_err(RunError::as_bad_input)?;
    binding.drop_database().await?;
    Ok(())
}

/// Removes every client container; returns why each removal that failed did.
async fn remove_containers(running: &[Client]) -> Vec<String> {
    let mut cleanup = Vec::new();
    for c in running {
        if let ClientHandle::Container(r) = &c.handle
            && let Err(e) = r.remove().await
        {
            cleanup.push(e);
        }
    }
    cleanup
}

/// What starting the clients of one phase needs, whichever launcher starts them.
pub(crate) struct Launch<'a> {
    pub props: &'a Properties,
    pub phase: Phase,
    pub opts: &'a ExecuteOptions,
    pub slices: &'a [Slice],
    /// Where each client's ready, progress and exit signals go.
    pub signals: &'a tokio::sync::mpsc::UnboundedSender<ClientSignal>,
    /// Where what the clients say goes.
    pub sink: &'a crate::events::Sink,
}

/// Starts one child process of this binary per slice, its properties in a file under `dir`.
async fn start_local(
    launch: &Launch<'_>,
    dir: &Path,
    running: &mut Vec<Client>,
) -> Result<(), RunError> {
    let (props, opts, sink, events) = (launch.props, launch.opts, launch.sink, launch.signals);
    let exe = std::env::current_exe()
        .map_err(|e| RunError::io("cannot find the microshard binary", e))?;
    let host = hostname();
    for (index, slice) in launch.slices.iter().enumerate() {
        if opts.cancel.is_cancelled() {
            return Err(crate::error::Interrupted("before the clients started".into()).into());
        }
        let file = dir.join(format!("client-{index}.properties"));
        std::fs::write(&file, properties_text(props, slice, &[])?)
            .map_err(|e| RunError::io(format!("cannot write {}", file.display()), e))?;
        let json = dir.join(format!("client-{index}.json"));
        let mut cmd = Command::new(&exe);
        cmd.arg(launch.phase.name())
            .arg("-P")
            .arg(&file)
            .arg("--json")
            .arg(&json)
            .arg("--barrier")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(uri) = &opts.uri {
            cmd.arg("--uri").arg(uri);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| RunError::io(format!("cannot start client {index}"), e))?;
        if let Some(stderr) = child.stderr.take() {
            let (tx, sink, host) = (events.clone(), sink.clone(), host.clone());
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    client_line(index, &host, &line, &tx, &sink);
                }
            });
        }
        let stdin = child
            .stdin
            .take()
            .map(|s| tokio::sync::Mutex::new(Box::pin(s) as ClientStdin));
        let pid = child.id();
        let tx = events.clone();
        tokio::spawn(async move {
            let code = child.wait().await.ok().and_then(|s| s.code());
            let _ = tx.send(ClientSignal::Exited(index, code.map(i64::from)));
        });
        running.push(Client {
            index,
            host: host.clone(),
            stdin,
            handle: ClientHandle::Process { pid, json },
            placement: None,
        });
    }
    Ok(())
}

/// Whether an exit status is a finished client (0, or 3: finished with an invalid result).
fn finished_normally(code: Option<i64>) -> bool {
    matches!(code, Some(0) | Some(3))
}

fn describe_exit(code: Option<i64>) -> String {
    match code {
        Some(c) => format!("failed (exit status {c})"),
        None => "was killed".to_string(),
    }
}

/// The started clients of one phase: which of them have exited, and what they signal.
struct Fleet {
    running: Vec<Client>,
    /// Each client's exit status once it is gone (`Some(None)`: killed, or never started).
    exited: Vec<Option<Option<i64>>>,
    rx: tokio::sync::mpsc::UnboundedReceiver<ClientSignal>,
}

impl Fleet {
    /// The clients `running`; one without stdin was never started (a container that failed
    /// before its start) and counts as gone.
    fn new(running: Vec<Client>, rx: tokio::sync::mpsc::UnboundedReceiver<ClientSignal>) -> Fleet {
        let exited = running
            .iter()
            .map(|c| c.stdin.is_none().then_some(None))
            .collect();
        Fleet {
            running,
            exited,
            rx,
        }
    }

    /// The barrier, the run and the merge, once every client is started.
    async fn drive(
        &mut self,
        props: &Properties,
        slices: &[Slice],
        opts: &ExecuteOptions,
        sink: &crate::events::Sink,
    ) -> Result<RunDocument, RunError> {
        self.start_barrier(opts).await?;
        // The host is waited for once, here, with every client ready: not by each client.
        let quiet = (
            Duration::from_secs_f64(props.value(&prop::WAITQUIET).unwrap_or(0.0).max(0.0)),
            props
                .value(&prop::BUSYHOST)
                .unwrap_or(prop::BUSYHOST.default),
        );
        let members: Vec<(String, String)> = (opts.probe_targets.iter().flatten())
            .map(|t| (t.name.clone(), t.address.clone()))
            .collect();
        crate::runner::quiet::wait_for_quiet(quiet, &members, &opts.cancel, sink).await;
        self.release().await;
        sink.event(Event::Finding(format!(
            "microshard: {} clients started together",
            self.running.len()
        )));
        // The merged status line (`-s` or `status=true`), from each client's progress lines.
        let status = status_on(props, opts).then(|| MergedStatus::new(props, slices));
        let failures = self.wait_all(opts, sink, status).await;
        self.merge_results(failures, opts).await
    }

    /// The start barrier: every client connected (said it is ready), or none starts: the first
    /// that exits or misses the deadline stops them all.
    async fn start_barrier(&mut self, opts: &ExecuteOptions) -> Result<(), RunError> {
        let mut ready = vec![false; self.running.len()];
        let deadline = tokio::time::Instant::now() + BARRIER_TIMEOUT;
        let mut early_exit: Option<usize> = None;
        while ready.iter().any(|r| !r) && early_exit.is_none() {
            tokio::select! {
                got = self.rx.recv() => match got {
                    Some(ClientSignal::Ready(i)) => ready[i] = true,
                    Some(ClientSignal::Exited(i, code)) => {
                        self.exited[i] = Some(code);
                        early_exit = Some(i);
                    }
                    Some(ClientSignal::Tick(..)) => {}
                    None => break,
                },
                _ = tokio::time::sleep_until(deadline) => break,
                _ = opts.cancel.cancelled() => break,
            }
        }
        if let Some(missing) = early_exit.or_else(|| ready.iter().position(|r| !r)) {
            let why = match &self.exited[missing] {
                Some(code) => format!(
                    "{} before the start barrier (it could not connect or was stopped)",
                    describe_exit(*code)
                ),
                None if opts.cancel.is_cancelled() => {
                    "had not reached the start barrier when the run was interrupted".to_string()
                }
                None => format!(
                    "did not reach the start barrier within {} s (it could not connect)",
                    BARRIER_TIMEOUT.as_secs()
                ),
            };
            let host = self.running[missing].host.clone();
            self.stop_remaining().await;
            return Err(RunError::Clients(format!(
                "client {missing} on {host} {why}; every client was stopped"
            )));
        }
        Ok(())
    }

    /// Starts every client waiting at the barrier: one line on its stdin.
    async fn release(&mut self) {
        for c in self.running.iter_mut() {
            if let Some(stdin) = c.stdin.as_mut().map(tokio::sync::Mutex::get_mut) {
                let _ = stdin.write_all(b"go\n").await;
                let _ = stdin.flush().await;
            }
        }
    }

    /// Waits for every client, saying the merged status line when there is one; the first one
    /// that fails stops the others. Returns the failures.
    async fn wait_all(
        &mut self,
        opts: &ExecuteOptions,
        sink: &crate::events::Sink,
        mut status: Option<MergedStatus>,
    ) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + BARRIER_TIMEOUT;
        let mut next_status =
            tokio::time::Instant::now() + status.as_ref().map_or(Duration::ZERO, |s| s.interval);
        let mut failures: Vec<String> = Vec::new();
        let mut stopping: Option<tokio::time::Instant> = None;
        while self.exited.iter().any(Option::is_none) {
            let kill_at = stopping.map(|t| t + STOP_GRACE);
            tokio::select! {
                got = self.rx.recv() => match got {
                    Some(ClientSignal::Exited(i, code)) => {
                        self.exited[i] = Some(code);
                        // Once clients are being stopped, their exits are the coordinator's doing.
                        if !finished_normally(code) && stopping.is_none() {
                            failures.push(format!("client {i} on {} {}", self.running[i].host, describe_exit(code)));
                            stopping = Some(tokio::time::Instant::now());
                            self.signal_remaining(false).await;
                        }
                    }
                    Some(ClientSignal::Tick(i, ops)) => if let Some(s) = status.as_mut() { s.tick(i, ops) },
                    Some(ClientSignal::Ready(_)) => {}
                    // Every sender is gone: nothing more will be heard.
                    None => break,
                },
                _ = tokio::time::sleep_until(next_status), if status.is_some() => {
                    if let Some(s) = status.as_mut() {
                        sink.event(Event::Status { line: s.line(), also_stdout: false });
                        next_status += s.interval;
                    }
                }
                _ = opts.cancel.cancelled(), if stopping.is_none() => {
                    stopping = Some(tokio::time::Instant::now());
                    self.signal_remaining(false).await;
                }
                _ = tokio::time::sleep_until(kill_at.unwrap_or(deadline)), if kill_at.is_some() => {
                    self.signal_remaining(true).await;
                    stopping = Some(tokio::time::Instant::now() + Duration::from_secs(3600));
                }
            }
        }
        if let Some(s) = status.as_mut() {
            sink.event(Event::Status {
                line: s.line(),
                also_stdout: false,
            });
        }
        failures
    }

    /// Reads every client's result document back and merges them; a client that failed, or
    /// wrote nothing, makes the merged result invalid.
    async fn merge_results(
        &self,
        mut failures: Vec<String>,
        opts: &ExecuteOptions,
    ) -> Result<RunDocument, RunError> {
        let mut docs: Vec<(usize, RunDocument)> = Vec::new();
        let mut hosts: Vec<(String, Option<crate::measure::ClientPod>)> = Vec::new();
        for c in self.running.iter() {
            match c.result().await {
                Some(d) => {
                    docs.push((c.index, d));
                    hosts.push((c.host.clone(), c.placement.clone()));
                }
                None if self.exited[c.index].is_some_and(finished_normally) => failures.push(
                    format!("client {} on {} wrote no result document", c.index, c.host),
                ),
                None => {}
            }
        }
        if docs.is_empty() {
            let failed = format!("no client finished: {}", failures.join("; "));
            return Err(RunError::Clients(failed));
        }
        let mut merged = merge_clients(docs)?;
        // Where each client ran: this machine, the Docker engine of its container, or its pod's node.
        for (entry, (host, pod)) in merged.clients.iter_mut().zip(hosts) {
            entry.host = host;
            entry.pod = pod;
        }
        for f in &failures {
            merged.validity.invalid(f.clone());
        }
        if opts.cancel.is_cancelled() {
            merged.validity.invalid("the run was interrupted");
        }
        Ok(merged)
    }

    /// The clients still running.
    fn remaining(&self) -> impl Iterator<Item = &Client> {
        self.running
            .iter()
            .zip(&self.exited)
            .filter(|(_, e)| e.is_none())
            .map(|(c, _)| c)
    }

    /// Asks every client still running to stop, or with `now` stops them at once.
    async fn signal_remaining(&self, now: bool) {
        for c in self.remaining() {
            c.stop(now).await;
        }
    }

    /// Stops every client that has not exited (SIGTERM, SIGKILL after a grace) and waits for them.
    async fn stop_remaining(&mut self) {
        self.signal_remaining(false).await;
        let mut killed = false;
        let mut deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.exited.iter().any(Option::is_none) {
            tokio::select! {
                got = self.rx.recv() => match got {
                    Some(ClientSignal::Exited(i, code)) => self.exited[i] = Some(code),
                    Some(_) => {}
                    None => return,
                },
                _ = tokio::time::sleep_until(deadline) => {
                    if killed {
                        return;
                    }
                    self.signal_remaining(true).await;
                    killed = true;
                    deadline = tokio::time::Instant::now() + Duration::from_secs(10);
                }
            }
        }
    }
}

/// Whether the clients' status lines are on: `-s`, or `status=true`.
fn status_on(props: &Properties, opts: &ExecuteOptions) -> bool {
    opts.status_lines || props.value(&prop::STATUS).unwrap_or(false)
}

/// How long stopped clients get to finish their in-flight operations and write their results
/// before they are killed.
const STOP_GRACE: Duration = Duration::from_secs(15);

/// The coordinator's merged status line: every client's last progress report added up.
struct MergedStatus {
    label: String,
    /// Between two lines (`status.interval`).
    interval: Duration,
    start: std::time::Instant,
    ops: Vec<u64>,
    todo: u64,
    prev_ops: u64,
    prev_ms: u64,
}

impl MergedStatus {
    fn new(props: &Properties, slices: &[Slice]) -> MergedStatus {
        // Operations to do in all (0 = time-bounded: no estimate), as YCSB's status thread sums them.
        let todo = slices
            .iter()
            .map(|s| {
                s.overrides
                    .iter()
                    .find(|(k, _)| k == prop::OPERATIONCOUNT.name || k == prop::INSERTCOUNT.name)
                    .and_then(|(_, v)| v.parse::<u64>().ok())
                    .unwrap_or(0)
            })
            .sum();
        MergedStatus {
            label: props.text(&prop::LABEL).to_string(),
            interval: Duration::from_secs(props.value(&prop::STATUS_INTERVAL).unwrap_or(10).max(1)),
            start: std::time::Instant::now(),
            ops: vec![0; slices.len()],
            todo,
            prev_ops: 0,
            prev_ms: 0,
        }
    }

    fn tick(&mut self, index: usize, ops: u64) {
        if let Some(o) = self.ops.get_mut(index) {
            *o = (*o).max(ops);
        }
    }

    fn line(&mut self) -> String {
        let total: u64 = self.ops.iter().sum();
        let elapsed_ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let summaries = crate::measure::IntervalSummaries::default();
        let line = crate::measure::status_line(&crate::measure::StatusInput {
            label: &self.label,
            now: chrono::Local::now(),
            elapsed_ms,
            total_ops: total,
            prev_ops: self.prev_ops,
            prev_elapsed_ms: self.prev_ms,
            todo_ops: self.todo.saturating_sub(total),
            summaries: &summaries,
        });
        self.prev_ops = total;
        self.prev_ms = elapsed_ms;
        format!("{line}[{} clients merged]", self.ops.len())
    }
}

/// Merges the documents of clients that ran at the same time into one: histograms and counts
/// added, timelines added second by second, verdicts folded (each reason naming its client), and
/// a `clients` entry per client.
pub(crate) fn merge_clients(docs: Vec<(usize, RunDocument)>) -> Result<RunDocument, RunError> {
    let host = hostname();
    let entries: Vec<ClientEntry> = docs
        .iter()
        .map(|(i, d)| ClientEntry::of(*i, &host, d))
        .collect();
    let mut prefixed: Vec<RunDocument> = Vec::with_capacity(docs.len());
    for (i, mut d) in docs {
        for r in &mut d.validity.reasons {
            r.message = format!("client {i}: {}", r.message);
        }
        prefixed.push(d);
    }
    let mut merged = RunDocument::merge_clients(&prefixed)?;
    merged.clients = entries;
    Ok(merged)
}

/// Properties each client of one run may set differently (its slice, its connection).
const PER_CLIENT: &[&str] = &[
    prop::THREADCOUNT.name,
    prop::TARGET.name,
    prop::WAITQUIET.name,
    prop::INSERTSTART.name,
    prop::INSERTCOUNT.name,
    prop::OPERATIONCOUNT.name,
    prop::MONGODB_URL.name,
    prop::LABEL.name,
    prop::EXPORTFILE.name,
    prop::STATUS.name,
    prop::INSERTSTRIDE.name,
    prop::INSERTOFFSET.name,
];

/// Refuses documents that are not parts of one run: another phase, or a workload property
/// (anything but a client's slice) that differs, naming the file and the property.
pub(crate) fn check_mergeable(docs: &[(String, RunDocument)]) -> Result<(), String> {
    let Some((first_name, first)) = docs.first() else {
        return Err("nothing to merge".into());
    };
    let value = |d: &RunDocument, key: &str| {
        d.properties
            .iter()
            .find(|p| p.key == key)
            .map(|p| p.value.clone())
    };
    for (name, d) in docs.iter().skip(1) {
        if d.phase != first.phase {
            return Err(format!(
                "{name}: phase {} differs from {first_name} ({})",
                d.phase, first.phase
            ));
        }
        let keys: std::collections::BTreeSet<&str> = first
            .properties
            .iter()
            .chain(d.properties.iter())
            .map(|p| p.key.as_str())
            .filter(|k| !PER_CLIENT.contains(k))
            .collect();
        for key in keys {
            let (a, b) = (value(first, key), value(d, key));
            if a != b {
                return Err(format!(
                    "{name}: property {key}={} differs from {first_name} ({})",
                    b.unwrap_or_else(|| "(unset)".into()),
                    a.unwrap_or_else(|| "(unset)".into())
                ));
            }
        }
    }
    Ok(())
}

/// Signals a client process this coordinator started and has not seen exit.
fn signal(pid: Option<u32>, sig: Signal) {
    if let Some(pid) = pid.and_then(|p| Pid::from_raw(i32::try_from(p).ok()?)) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Properties {
        Properties::from_pairs(pairs.iter().copied())
    }

    fn get<'a>(s: &'a Slice, key: &str) -> &'a str {
        s.overrides
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }

    #[test]
    fn a_load_is_split_into_disjoint_slices_covering_every_key() {
        let p = props(&[("recordcount", "3001"), ("threadcount", "8")]);
        let s = slices(&p, Phase::Load, 3).unwrap_or_default();
        let ranges: Vec<(u64, u64)> = s
            .iter()
            .map(|s| {
                (
                    get(s, "insertstart").parse().unwrap_or(0),
                    get(s, "insertcount").parse().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(ranges, vec![(0, 1001), (1001, 1000), (2001, 1000)]);
        let threads: Vec<&str> = s.iter().map(|s| get(s, "threadcount")).collect();
        assert_eq!(threads, vec!["3", "3", "2"]);
    }

    #[test]
    fn a_target_rate_is_shared_so_the_clients_offer_it_together() {
        let p = props(&[
            ("recordcount", "100"),
            ("threadcount", "5"),
            ("target", "1001"),
        ]);
        let s = slices(&p, Phase::Run, 2).unwrap_or_default();
        let rates: Vec<&str> = s.iter().map(|s| get(s, "target")).collect();
        assert_eq!(rates, vec!["501", "500"]);
        let unthrottled = props(&[("recordcount", "100"), ("threadcount", "4")]);
        let s = slices(&unthrottled, Phase::Load, 2).unwrap_or_default();
        assert!(s.iter().all(|s| get(s, "target").is_empty()));
    }

    #[test]
    fn a_load_with_more_clients_than_keys_is_refused() {
        let p = props(&[("recordcount", "2"), ("threadcount", "3")]);
        let e = slices(&p, Phase::Load, 3).err().map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("--clients 3: more clients than keys to load (2")),
            "{e:?}"
        );
        assert!(slices(&p, Phase::Load, 2).is_ok());
    }

    #[test]
    fn a_run_splits_operations_and_spreads_inserts() {
        let p = props(&[
            ("recordcount", "100"),
            ("operationcount", "10"),
            ("threadcount", "3"),
        ]);
        let s = slices(&p, Phase::Run, 3).unwrap_or_default();
        let ops: Vec<&str> = s.iter().map(|s| get(s, "operationcount")).collect();
        assert_eq!(ops, vec!["4", "3", "3"]);
        let offsets: Vec<&str> = s
            .iter()
            .map(|s| get(s, "microshard.insertoffset"))
            .collect();
        assert_eq!(offsets, vec!["0", "1", "2"]);
        assert!(s.iter().all(|s| get(s, "microshard.insertstride") == "3"));
    }

    #[test]
    fn a_clients_stderr_lines_become_events_or_named_findings() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let recorder = std::sync::Arc::new(crate::events::Recorder::default());
        let sink: crate::events::Sink = recorder.clone();
        for line in [
            &ClientLine::Ready.to_string(),
            &ClientLine::Progress(42).to_string(),
            "microshard: member sh0 stopped answering",
            "[OVERALL], Operations, 10",
        ] {
            client_line(1, "tcp://lg:2375", line, &tx, &sink);
        }
        drop(tx);
        let mut events = Vec::new();
        while let Ok(e) = rx.try_recv() {
            events.push(format!("{e:?}"));
        }
        assert_eq!(events, vec!["Ready(1)", "Tick(1, 42)"]);
        assert_eq!(
            recorder.events(),
            vec![Event::Finding(
                "client 1 on tcp://lg:2375: microshard: member sh0 stopped answering".into()
            )]
        );
    }

    #[test]
    fn the_merged_status_line_adds_every_clients_last_count() {
        let p = props(&[("operationcount", "100"), ("threadcount", "2")]);
        let s = slices(&p, Phase::Run, 2).unwrap_or_default();
        let mut status = MergedStatus::new(&p, &s);
        status.tick(0, 10);
        status.tick(1, 5);
        status.tick(1, 30);
        // A late, smaller count never takes a client back.
        status.tick(0, 7);
        let line = status.line();
        assert!(line.contains(" sec: 40 operations; "), "{line}");
        assert!(line.contains("est completion in "), "{line}");
        assert!(line.ends_with("[2 clients merged]"), "{line}");
    }

    #[test]
    fn more_clients_than_threads_is_bad_input() {
        let p = props(&[("threadcount", "2")]);
        let e = slices(&p, Phase::Run, 3).err();
        assert!(e.is_some_and(|e| e.is_bad_input()));
    }
}
