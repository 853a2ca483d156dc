//! The one place the command line writes to stdout and stderr.
//!
//! A command's output is often piped into `head`, `grep -m1` or a pager that stops reading
//! early. Rust's `print!` panics when stdout is a closed pipe; every write here instead returns
//! the `io::Error`, and [`is_broken_pipe`] lets `main` treat that as a normal end (exit 0), as
//! `docs/reliability.md` §1 promises. Messages on stderr never fail a command: when stderr itself
//! is gone there is nobody left to tell.
//!
//! The command line hands every rendered report, table, plan and status to this module. What the
//! engine says while it works arrives as [`Event`]s: [`Terminal`] writes them as lines (a
//! benchmark, a bring-up), `cli::progress` draws an experiment's as bars.

use std::io::{self, Write};

use crate::events::{Event, Events};

/// The terminal printer: each event as the line the user has always seen, on stderr (and a
/// status line on stdout too when YCSB prints it there).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Terminal;

impl Terminal {
    /// A shared [`Terminal`].
    pub(crate) fn sink() -> crate::events::Sink {
        std::sync::Arc::new(Terminal)
    }
}

impl Events for Terminal {
    fn event(&self, event: Event) {
        match event {
            Event::Note(line) | Event::Warning(line) | Event::Finding(line) | Event::Line(line) => {
                eprintln(&line)
            }
            Event::Protocol(line) => eprintln(&line.to_string()),
            Event::Status { line, also_stdout } => {
                eprintln(&line);
                if also_stdout {
                    let _ = println(&line);
                }
            }
            Event::BringUp(step) => eprintln(&format!("microshard: {step}")),
            Event::PullStarted { image, endpoint } => {
                eprintln(&format!("microshard: pulling {image} on {endpoint}"))
            }
            Event::Pull { line, .. } => eprintln(&format!("microshard:   {line}")),
            Event::OpError { msg, held_back, .. } if held_back > 0 => {
                eprintln(&format!("{msg} (and {held_back} more like it)"))
            }
            Event::OpError { msg, .. } => eprintln(&msg),
            Event::PhaseStarted { label, .. } => eprintln(&format!("microshard: {label} ...")),
            Event::PhaseEnded {
                label,
                outcome: Some(outcome),
            } => eprintln(&format!("microshard: {label}: {outcome}")),
            Event::PhaseEnded { outcome: None, .. } => {}
        }
    }
}

/// Writes `text` to stdout as is (no newline added) and flushes it.
pub(crate) fn print(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes `text` and a newline to stdout and flushes it.
pub(crate) fn println(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Writes one line to stderr; a closed or full stderr is ignored rather than a reason to fail.
pub(crate) fn eprintln(text: &str) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.write_all(b"\n");
    let _ = err.flush();
}

/// True when the error (or anything it wraps) is a write to a closed pipe: the reader went away,
/// which ends the program normally rather than as a failure.
pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn a_broken_pipe_is_found_under_context() {
        let err = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe))
            .context("writing the report");
        assert!(is_broken_pipe(&err));
        let r: anyhow::Result<()> = Err(io::Error::from(io::ErrorKind::BrokenPipe).into());
        assert!(is_broken_pipe(&r.context("outer").unwrap_err()));
    }

    #[test]
    fn other_errors_are_not_a_broken_pipe() {
        let err = anyhow::Error::new(io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(!is_broken_pipe(&err));
        assert!(!is_broken_pipe(&anyhow::anyhow!("broken pipe")));
    }
}
