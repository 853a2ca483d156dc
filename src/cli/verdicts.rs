//! How a command whose results carry verdicts ends: the last stderr line listing degraded
//! results, and the [`NotValid`] error (exit status 3) naming those invalid or not run.

use crate::error::NotValid;
use crate::measure::validity::{Validity, Verdict};

/// The end of a command whose results carry verdicts (`docs/result-schema.md`, "Exit status"):
/// any invalid result, or a cell not run, is the [`NotValid`] error (exit 3) naming each; a
/// degraded result is a caveat — listed on the last stderr line, exit 0 — unless `strict`.
pub(crate) fn verdicts_exit(
    invalid: Vec<String>,
    degraded: Vec<String>,
    strict: bool,
) -> anyhow::Result<()> {
    if !degraded.is_empty() && !strict {
        crate::output::eprintln(&format!(
            "microshard: {} degraded result(s), usable with their caveat (--strict makes this exit 3): {}",
            degraded.len(),
            degraded.join(" | ")
        ));
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
pub(crate) fn verdict_exit(validity: &Validity, what: &str, strict: bool) -> anyhow::Result<()> {
    let line = format!("{what} is {}: {}", validity.verdict, validity.summary());
    match validity.verdict {
        Verdict::Valid => Ok(()),
        Verdict::Degraded => verdicts_exit(Vec::new(), vec![line], strict),
        Verdict::Invalid => verdicts_exit(vec![line], Vec::new(), strict),
    }
}
