//! An experiment's progress on the terminal: an `indicatif` bar per phase (bring-up, load, run,
//! teardown) on a terminal, plain log lines otherwise (CI, pipes), nothing with `--quiet` but
//! operation errors. It is the sink of the experiment's events: the runs' notes (kept in the
//! result documents) and the bring-up's steps (summed up by the phase) are left out.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::events::{Event, Events};
use crate::experiment::progress::Progress;
use crate::output::Terminal;

/// How progress is shown for a whole experiment.
#[derive(Debug)]
pub(crate) struct ProgressDisplay {
    mode: Mode,
    /// The phases started and not yet ended.
    running: Mutex<Vec<RunningPhase>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Bars,
    Lines,
    Quiet,
}

/// One phase on the display.
#[derive(Debug)]
struct RunningPhase {
    label: String,
    bar: Option<ProgressBar>,
    ticker: Option<tokio::task::JoinHandle<()>>,
    started: Instant,
}

impl ProgressDisplay {
    /// Bars when stderr is a terminal and `CI` is unset, lines otherwise; the experiment's
    /// account ([`Progress`]) says its events here.
    pub(crate) fn auto(quiet: bool) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() && std::env::var_os("CI").is_none() {
            Mode::Bars
        } else {
            Mode::Lines
        };
        Progress::new(Arc::new(ProgressDisplay {
            mode,
            running: Mutex::default(),
        }))
    }

    fn start(&self, label: String, expected: Option<Duration>) {
        let started = Instant::now();
        let bar = match self.mode {
            Mode::Bars => Some(bar(&label, expected)),
            Mode::Lines => {
                crate::output::eprintln(&format!("microshard: {label} ..."));
                None
            }
            Mode::Quiet => None,
        };
        let ticker = match (&bar, expected) {
            (Some(bar), Some(_)) => {
                let bar = bar.clone();
                tokio::runtime::Handle::try_current().ok().map(|h| {
                    h.spawn(async move {
                        let mut tick = tokio::time::interval(Duration::from_secs(1));
                        loop {
                            tick.tick().await;
                            if bar.is_finished() {
                                break;
                            }
                            bar.set_position(
                                started.elapsed().as_secs().min(bar.length().unwrap_or(0)),
                            );
                        }
                    })
                })
            }
            _ => None,
        };
        if let Ok(mut running) = self.running.lock() {
            running.push(RunningPhase {
                label,
                bar,
                ticker,
                started,
            });
        }
    }

    /// Ends the phase `label` with `outcome`; an abandoned phase (`None`) ends its bar as
    /// `stopped` and says nothing in lines.
    fn end(&self, label: &str, outcome: Option<String>) {
        let phase = self.running.lock().ok().and_then(|mut running| {
            let at = running.iter().rposition(|p| p.label == label)?;
            Some(running.remove(at))
        });
        let Some(mut phase) = phase else {
            return;
        };
        if let Some(t) = phase.ticker.take() {
            t.abort();
        }
        match (phase.bar.take(), outcome) {
            (Some(bar), outcome) => {
                let outcome = outcome.as_deref().unwrap_or("stopped");
                bar.finish_with_message(format!("{label}: {outcome}"))
            }
            (None, Some(outcome)) if self.mode == Mode::Lines => {
                let secs = phase.started.elapsed().as_secs_f64();
                crate::output::eprintln(&format!("microshard: {label}: {outcome} ({secs:.1}s)"))
            }
            (None, _) => {}
        }
    }
}

/// A bar with a known length (`expected`), or a spinner.
fn bar(label: &str, expected: Option<Duration>) -> ProgressBar {
    let (bar, style) = match expected {
        Some(d) => (
            ProgressBar::new(d.as_secs().max(1)),
            ProgressStyle::with_template("{spinner} {msg:40} [{bar:30}] {pos}/{len}s")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        ),
        None => (
            ProgressBar::new_spinner(),
            ProgressStyle::with_template("{spinner} {msg:40} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    bar.set_style(style);
    bar.set_message(label.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

impl Events for ProgressDisplay {
    fn event(&self, event: Event) {
        match event {
            // Operation errors are said even with `--quiet`, as a benchmark says them.
            Event::OpError { .. } => Terminal.event(event),
            _ if self.mode == Mode::Quiet => {}
            Event::PhaseStarted { label, expected } => self.start(label, expected),
            Event::PhaseEnded { label, outcome } => self.end(&label, outcome),
            // The result documents keep the notes; the phase sums the bring-up up.
            Event::Note(_) | Event::BringUp(_) | Event::PullStarted { .. } | Event::Pull { .. } => {
            }
            _ => Terminal.event(event),
        }
    }
}
