//! What the engine says while it works, as typed events.
//!
//! The runner, the client fan-out, the backends, the bring-up, the database binding's error log
//! and the experiments emit [`Event`]s into the [`Events`] sink their caller passes. The CLI's
//! printers write them (`output::Terminal` for a benchmark or a bring-up, `cli::progress` for the
//! bars of an experiment); tests record them ([`Recorder`]). The engine itself never prints
//! (`docs/architecture.md`, "Output").

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One thing the engine says.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// How a run is set up: YCSB's banner, a property warning, a note on the workload. A result
    /// document keeps these, so an experiment's display leaves them out.
    Note(String),
    /// A problem with a run's outputs (a measurement file not written), said even where notes
    /// are not.
    Warning(String),
    /// A live finding that changes what a result means (a member stopped answering, a stall,
    /// a retried insert, a line a client of several said).
    Finding(String),
    /// YCSB's status line; `also_stdout` with `measurementtype=timeseries`, where YCSB prints
    /// it on stdout too.
    Status {
        /// The line, as `measure::status_line` renders it.
        line: String,
        /// Print it on stdout as well.
        also_stdout: bool,
    },
    /// A line of the protocol between a client of several and its coordinator, read back from
    /// the client's stderr by `runner::fanout`.
    Protocol(ClientLine),
    /// A step of bringing a topology up or taking it down.
    BringUp(String),
    /// An image pull started on a Docker engine.
    PullStarted {
        /// The image.
        image: String,
        /// The engine, as `backend::docker` names it.
        endpoint: String,
    },
    /// A line of an image pull's progress.
    Pull {
        /// The image.
        image: String,
        /// The registry's progress line (`<layer> <status>`).
        line: String,
    },
    /// An operation error from the binding's error log: at most one per kind per second, with
    /// how many like it were held back since the last one.
    OpError {
        /// What the messages have in common (operation and error class).
        kind: String,
        /// The message.
        msg: String,
        /// Messages of the same kind held back since the last one said.
        held_back: u64,
    },
    /// A line of an experiment's own account of its course (a cell done, a file written).
    Line(String),
    /// An experiment's phase (bring-up, load, run, teardown) started; `expected` is its length
    /// when known.
    PhaseStarted {
        /// What the phase is (`single: run`).
        label: String,
        /// Its expected length.
        expected: Option<Duration>,
    },
    /// An experiment's phase ended: `outcome` is `None` when it was abandoned.
    PhaseEnded {
        /// The phase's label, as started.
        label: String,
        /// A short outcome (`12,345 ops/s`, `failed: ...`).
        outcome: Option<String>,
    },
}

/// What a client of several tells its coordinator on stderr (`runner::fanout` reads it back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientLine {
    /// Connected, waiting at the start barrier.
    Ready,
    /// Operations done so far, said every second.
    Progress(u64),
}

impl ClientLine {
    const READY: &str = "microshard: client ready, waiting for the start";
    const PROGRESS: &str = "microshard: client progress: ";

    /// The protocol line `line` is, if it is one.
    pub(crate) fn parse(line: &str) -> Option<ClientLine> {
        if line == Self::READY {
            return Some(ClientLine::Ready);
        }
        let ops = line.strip_prefix(Self::PROGRESS)?.trim().parse().ok()?;
        Some(ClientLine::Progress(ops))
    }
}

impl std::fmt::Display for ClientLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientLine::Ready => f.write_str(Self::READY),
            ClientLine::Progress(ops) => write!(f, "{}{ops}", Self::PROGRESS),
        }
    }
}

/// Where events go. Implementations must be cheap: client tasks emit from their hot path.
pub trait Events: Send + Sync + std::fmt::Debug {
    /// Takes one event.
    fn event(&self, event: Event);
}

/// A shared sink, as the engine's tasks hold it.
pub type Sink = Arc<dyn Events>;

/// A sink for what nobody listens to (a client image pulled beside the server image, a
/// bring-up whose steps an experiment does not show).
#[derive(Debug, Default, Clone, Copy)]
pub struct Discard;

impl Events for Discard {
    fn event(&self, _: Event) {}
}

impl Discard {
    /// A shared [`Discard`].
    pub fn sink() -> Sink {
        Arc::new(Discard)
    }
}

/// A sink that keeps every event, for tests to assert what a run or a bring-up said.
#[derive(Debug, Default)]
pub struct Recorder(Mutex<Vec<Event>>);

impl Recorder {
    /// The events so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl Events for Recorder {
    fn event(&self, event: Event) {
        if let Ok(mut e) = self.0.lock() {
            e.push(event);
        }
    }
}
