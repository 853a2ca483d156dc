//! Progress per phase (bring-up, load, run, teardown): an `indicatif` bar on a terminal,
//! plain log lines otherwise (CI, pipes), nothing with `quiet`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How progress is shown for a whole experiment.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    mode: Mode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Bars,
    Lines,
    Quiet,
}

impl Progress {
    /// Bars when stderr is a terminal and `CI` is unset, lines otherwise.
    pub(crate) fn auto(quiet: bool) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() && std::env::var_os("CI").is_none() {
            Mode::Bars
        } else {
            Mode::Lines
        };
        Progress { mode }
    }

    /// Prints one line (to stderr), above any bar.
    pub(crate) fn line(&self, message: &str) {
        match self.mode {
            Mode::Quiet => {}
            _ => crate::output::eprintln(message),
        }
    }

    /// Starts a phase; `expected` gives a bar with a known length (the run duration).
    pub(crate) fn phase(&self, label: &str, expected: Option<Duration>) -> PhaseProgress {
        let started = Instant::now();
        let bar = match self.mode {
            Mode::Bars => {
                let bar = match expected {
                    Some(d) => {
                        let bar = ProgressBar::new(d.as_secs().max(1));
                        bar.set_style(
                            ProgressStyle::with_template(
                                "{spinner} {msg:40} [{bar:30}] {pos}/{len}s",
                            )
                            .unwrap_or_else(|_| ProgressStyle::default_bar())
                            .progress_chars("=> "),
                        );
                        bar
                    }
                    None => {
                        let bar = ProgressBar::new_spinner();
                        bar.set_style(
                            ProgressStyle::with_template("{spinner} {msg:40} {elapsed}")
                                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                        );
                        bar
                    }
                };
                bar.set_message(label.to_string());
                bar.enable_steady_tick(Duration::from_millis(200));
                Some(bar)
            }
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
        PhaseProgress {
            label: label.to_string(),
            bar,
            ticker,
            started,
            mode: self.mode,
        }
    }
}

/// One running phase; finish it with an outcome line.
#[derive(Debug)]
pub(crate) struct PhaseProgress {
    label: String,
    bar: Option<ProgressBar>,
    ticker: Option<tokio::task::JoinHandle<()>>,
    started: Instant,
    mode: Mode,
}

impl PhaseProgress {
    /// Ends the phase with a short outcome (`12,345 ops/s`, `failed: ...`).
    pub(crate) fn finish(mut self, outcome: &str) {
        self.end(outcome);
    }

    fn end(&mut self, outcome: &str) {
        if let Some(t) = self.ticker.take() {
            t.abort();
        }
        let secs = self.started.elapsed().as_secs_f64();
        let line = format!("microshard: {}: {outcome} ({secs:.1}s)", self.label);
        match self.bar.take() {
            Some(bar) => bar.finish_with_message(format!("{}: {outcome}", self.label)),
            None if self.mode == Mode::Lines => crate::output::eprintln(&line),
            None => {}
        }
    }
}

impl Drop for PhaseProgress {
    fn drop(&mut self) {
        if self.bar.is_some() || self.ticker.is_some() {
            self.end("stopped");
        }
    }
}
