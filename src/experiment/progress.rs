//! An experiment's account of its course: its own lines and its phases (bring-up, load, run,
//! teardown), said as events ([`Event::Line`], [`Event::PhaseStarted`], [`Event::PhaseEnded`]) to
//! the sink the CLI passes, which draws them as bars or lines (`cli::progress`).

use std::time::Duration;

use crate::events::{Event, Sink};

/// Where an experiment says how it is getting on.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    events: Sink,
}

impl Progress {
    /// An account said to `events`.
    pub(crate) fn new(events: Sink) -> Progress {
        Progress { events }
    }

    /// An account nobody hears (tests).
    #[cfg(test)]
    pub(crate) fn silent() -> Progress {
        Progress::new(crate::events::Discard::sink())
    }

    /// The sink, for the engines the experiment drives (runs, bring-ups).
    pub(crate) fn events(&self) -> Sink {
        self.events.clone()
    }

    /// Says one line.
    pub(crate) fn line(&self, message: &str) {
        self.events.event(Event::Line(message.to_string()));
    }

    /// Starts a phase; `expected` is its length when known (the run duration).
    pub(crate) fn phase(&self, label: &str, expected: Option<Duration>) -> PhaseProgress {
        self.events.event(Event::PhaseStarted {
            label: label.to_string(),
            expected,
        });
        PhaseProgress {
            label: label.to_string(),
            events: self.events.clone(),
            outcome: None,
        }
    }
}

/// One running phase; finish it with an outcome, or drop it to abandon it (no outcome). It
/// ends when dropped.
#[derive(Debug)]
pub(crate) struct PhaseProgress {
    label: String,
    events: Sink,
    outcome: Option<String>,
}

impl PhaseProgress {
    /// Ends the phase with a short outcome (`12,345 ops/s`, `failed: ...`).
    pub(crate) fn finish(mut self, outcome: &str) {
        self.outcome = Some(outcome.to_string());
    }
}

impl Drop for PhaseProgress {
    fn drop(&mut self) {
        self.events.event(Event::PhaseEnded {
            label: std::mem::take(&mut self.label),
            outcome: self.outcome.take(),
        });
    }
}
