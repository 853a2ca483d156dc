//! Error conventions shared by every command.
//!
//! Modules return typed errors (`thiserror`); the CLI edge turns them into `anyhow::Error`.
//! An error caused by the user's input (a file, a property, a flag, a host) is wrapped in
//! [`BadInput`] so that `main` exits with status 2; every other failure exits with status 1.
//! Errors are printed on one line (`{:#}`), so messages must not contain newlines.

use std::fmt;

/// Marks an error as the user's input being wrong (exit status 2).
///
/// The message names the culprit: `file:line`, the property, the flag or the host.
#[derive(Debug)]
pub(crate) struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Builds an `anyhow::Error` that `main` reports with exit status 2.
pub(crate) fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}

/// Refuses `value` given for `flag` when it is below `low`: bad input (exit 2) on one line naming
/// the flag and the value, in the wording every lower bound shares ([`crate::props::at_least`]).
pub(crate) fn flag_at_least(flag: &str, value: u64, low: u64) -> anyhow::Result<()> {
    if value < low {
        return Err(bad_input(format!(
            "{flag} {value}: {}",
            crate::props::at_least(low)
        )));
    }
    Ok(())
}

/// Wraps any typed error as bad input, keeping its message.
pub(crate) fn as_bad_input<E: fmt::Display>(err: E) -> anyhow::Error {
    bad_input(err.to_string())
}

/// Marks a command that finished but one of whose results is invalid or was not run, or degraded
/// under `--strict` (exit status 3): the figures were written, with their verdict, but must not be published as
/// normal results. The message says which result and why.
#[derive(Debug)]
pub(crate) struct NotValid(pub String);

impl fmt::Display for NotValid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotValid {}

/// Ctrl-C ended the command: whatever was measured is kept, but the run is not a complete
/// measurement (exit status 3, README "Results you can trust"). The message says what was kept
/// and how to finish.
#[derive(Debug)]
pub(crate) struct Interrupted(pub String);

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interrupted: {}", self.0)
    }
}

impl std::error::Error for Interrupted {}

/// Builds the [`Interrupted`] error (exit 3): `what` says what was kept.
pub(crate) fn interrupted(what: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Interrupted(what.into()))
}

/// The end of a command whose results carry verdicts (`docs/result-schema.md`, "Exit status"):
/// any invalid result, or a cell not run, is the [`NotValid`] error (exit 3) naming each; a
/// degraded result is a caveat, exit 0, unless `strict`: one is said on the last stderr line;
/// several each get their own `microshard: degraded:` line above a last line that counts them
/// (a vary sweep's 27 on one line were 8 KB: NEWCOMER-2 #34).
pub(crate) fn verdicts_exit(
    invalid: Vec<String>,
    degraded: Vec<String>,
    strict: bool,
) -> anyhow::Result<()> {
    const CAVEAT: &str = "usable with their caveat (--strict makes this exit 3)";
    match degraded.as_slice() {
        _ if strict => {}
        [] => {}
        [one] => crate::output::eprintln(&format!(
            "microshard: 1 degraded result(s), {CAVEAT}: {one}"
        )),
        several => {
            for d in several {
                let d = d.replacen(" is degraded: ", ": ", 1);
                crate::output::eprintln(&format!("microshard: degraded: {d}"));
            }
            crate::output::eprintln(&format!(
                "microshard: {} degraded result(s), {CAVEAT}: each on a 'microshard: degraded:' line above",
                several.len()
            ));
        }
    }
    let (failing, what): (Vec<String>, &str) = if strict && !degraded.is_empty() {
        (
            invalid.into_iter().chain(degraded).collect(),
            "invalid, not run or degraded (--strict)",
        )
    } else {
        (invalid, "invalid or not run")
    };
    if failing.is_empty() {
        return Ok(());
    }
    Err(anyhow::Error::new(NotValid(format!(
        "{} result(s) {what}: {}",
        failing.len(),
        failing.join(" | ")
    ))))
}

/// [`verdicts_exit`] for one result named `what`.
pub(crate) fn verdict_exit(
    validity: &crate::measure::validity::Validity,
    what: &str,
    strict: bool,
) -> anyhow::Result<()> {
    let line = format!("{what} is {}: {}", validity.verdict, validity.summary());
    match validity.verdict {
        crate::measure::validity::Verdict::Valid => Ok(()),
        crate::measure::validity::Verdict::Degraded => {
            verdicts_exit(Vec::new(), vec![line], strict)
        }
        crate::measure::validity::Verdict::Invalid => verdicts_exit(vec![line], Vec::new(), strict),
    }
}

/// True when the error (or anything it wraps) is the user's fault.
pub(crate) fn is_bad_input(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| cause.is::<BadInput>())
}

/// The exit status for an error: 2 for bad input, 3 for a finished run whose result is not
/// valid or a run cut short by Ctrl-C, 1 for everything else.
pub(crate) fn exit_status(err: &anyhow::Error) -> u8 {
    if is_bad_input(err) {
        2
    } else if err
        .chain()
        .any(|cause| cause.is::<NotValid>() || cause.is::<Interrupted>())
    {
        3
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_survives_context() {
        let err = bad_input("workloads/S9: no such file").context("loading properties");
        assert_eq!(exit_status(&err), 2);
        assert_eq!(
            format!("{err:#}"),
            "loading properties: workloads/S9: no such file"
        );
    }

    #[test]
    fn an_interrupted_run_exits_three_and_says_so() {
        let err = interrupted("2 cell(s) measured").context("compare");
        assert_eq!(exit_status(&err), 3);
        assert_eq!(
            format!("{err:#}"),
            "compare: interrupted: 2 cell(s) measured"
        );
    }

    #[test]
    fn other_errors_exit_one() {
        let err = anyhow::anyhow!("server went away");
        assert_eq!(exit_status(&err), 1);
    }
}
