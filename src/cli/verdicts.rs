//! How a command whose results carry verdicts ends: the stderr lines listing degraded
//! results, and the [`NotValid`] error (exit status 3) naming those invalid or not run.

use crate::error::NotValid;
use crate::experiment::model::VerdictLines;
use crate::measure::validity::Validity;

/// The end of a command whose results carry verdicts (`docs/result-schema.md`, "Exit status"):
/// any invalid result, or a cell not run, is the [`NotValid`] error (exit 3) naming each; a
/// degraded result is a caveat, exit 0, unless `strict`: one is said on the last stderr line;
/// several each get their own `microshard: degraded:` line above a last line that counts them
/// (a vary sweep's 27 on one line were 8 KB).
pub(crate) fn verdicts_exit(lines: VerdictLines, strict: bool) -> anyhow::Result<()> {
    let VerdictLines { invalid, degraded } = lines;
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
pub(crate) fn verdict_exit(validity: &Validity, what: &str, strict: bool) -> anyhow::Result<()> {
    let mut lines = VerdictLines::default();
    lines.push(
        validity,
        &format!("{what} is {}: {}", validity.verdict, validity.summary()),
    );
    verdicts_exit(lines, strict)
}
