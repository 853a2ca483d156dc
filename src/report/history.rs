//! How an experiment came to be: whether it stopped before every cell was measured (an
//! interrupted experiment, said so on every format with the command that finishes it) and, for a
//! resumed one, which invocation measured which cells.

use serde::Serialize;

use super::Report;
use crate::experiment::model::{CellFile, CellId, ExperimentConfig};
use crate::measure::validity::{Validity, Verdict};

/// An experiment that stopped (Ctrl-C, a failure) before measuring every cell of its matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unfinished {
    /// Cells measured (a file exists for them).
    pub measured: usize,
    /// Cells the command asks for (scenarios × topologies × repetitions).
    pub planned: usize,
    /// The cells never run, as `S2/single #1`.
    pub missing: Vec<String>,
    /// The command that measures them.
    pub resume: String,
}

impl Unfinished {
    /// One sentence for the top of a report.
    pub(crate) fn sentence(&self) -> String {
        let shown: Vec<&str> = self.missing.iter().take(6).map(String::as_str).collect();
        let more = match self.missing.len().saturating_sub(shown.len()) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        format!(
            "INTERRUPTED: {} of {} cells measured; never run: {}{more}. Finish with `{}`.",
            self.measured,
            self.planned,
            shown.join(", "),
            self.resume
        )
    }
}

/// The cells one invocation measured, when more than one invocation measured into the directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionCells {
    /// 1 for the first invocation, one more per `--resume`.
    pub number: u32,
    /// When it started (RFC 3339, UTC), when recorded.
    pub started: Option<String>,
    /// Whether it was a `--resume`.
    pub resumed: bool,
    /// Its cells, as `S1/single #1`.
    pub cells: Vec<String>,
}

impl SessionCells {
    /// One line under a report: "invocation 2 (--resume, 3 Dec 2026, 08:00 UTC) measured …".
    pub(crate) fn sentence(&self) -> String {
        let mut how = Vec::new();
        if self.resumed {
            how.push("--resume".to_string());
        }
        how.extend(self.started.as_deref().map(super::when::day_and_minute));
        let how = match how.is_empty() {
            true => String::new(),
            false => format!(" ({})", how.join(", ")),
        };
        format!(
            "invocation {}{how} measured {} cell(s): {}",
            self.number,
            self.cells.len(),
            self.cells.join(", ")
        )
    }
}

/// A cell as reports name it: `S2/single #1`.
fn cell_name(config: &ExperimentConfig, id: &CellId) -> String {
    let topology = config.command.topology_name(&id.topology);
    format!("{}/{topology} #{}", id.scenario, id.repeat)
}

/// What the directory holds beyond the cells: the cells of the matrix never run
/// (`ExperimentDir::never_run`) and the command that measures them.
pub(crate) struct Holdings<'a> {
    /// The cells that parse.
    pub cells: &'a [CellFile],
    /// The cells never run.
    pub missing: &'a [CellId],
    /// `microshard compare --resume DIR`.
    pub resume: String,
}

/// The cells each invocation measured, when more than one did.
fn sessions(config: &ExperimentConfig, cells: &[CellFile]) -> Vec<SessionCells> {
    let numbers: std::collections::BTreeSet<u32> = cells.iter().map(|c| c.session).collect();
    if numbers.len() < 2 {
        return Vec::new();
    }
    numbers
        .into_iter()
        .map(|number| {
            let recorded = config.sessions.iter().find(|s| s.number == number);
            let mut ids: Vec<&CellId> = cells
                .iter()
                .filter(|c| c.session == number)
                .map(|c| &c.cell)
                .collect();
            ids.sort_by_key(|id| (id.repeat, order_of(config, id)));
            SessionCells {
                number,
                started: recorded.map(|s| s.started.clone()),
                resumed: recorded.is_some_and(|s| s.resumed),
                cells: ids.into_iter().map(|id| cell_name(config, id)).collect(),
            }
        })
        .collect()
}

/// A cell's place in the matrix (topology, then scenario, in the record's order).
fn order_of(config: &ExperimentConfig, id: &CellId) -> (usize, usize) {
    let cmd = &config.command;
    let at = |list: &[String], x: &str| list.iter().position(|y| y == x).unwrap_or(usize::MAX);
    (
        at(&cmd.topologies, &id.topology),
        at(&cmd.scenarios, &id.scenario),
    )
}

/// The report with its history: interrupted (and which rows miss a repetition that never ran),
/// and which invocation measured each row's cells when the experiment was resumed.
pub(crate) fn with_history(mut report: Report, config: &ExperimentConfig, h: &Holdings) -> Report {
    let missing = h.missing;
    report.sessions = sessions(config, h.cells);
    let resumed = report.sessions.len() > 1;
    let of_row = |row: &super::Row, id: &CellId| {
        id.scenario == row.scenario && config.command.topology_name(&id.topology) == row.topology
    };
    for row in &mut report.rows {
        row.interrupted = missing.iter().any(|id| of_row(row, id));
        if row.interrupted && row.repeats == 0 && row.not_run.is_none() {
            // Never run: its verdict says so in every format, `not run` in the JSON's validity.
            row.verdict = "interrupted".into();
            row.validity = Validity::valid();
            (row.validity).add(
                Verdict::NotRun,
                "interrupted: the experiment stopped before it",
            );
        }
        if resumed {
            let mine = h.cells.iter().filter(|c| of_row(row, &c.cell));
            let sessions: std::collections::BTreeSet<u32> = mine.map(|c| c.session).collect();
            row.sessions = sessions.into_iter().collect();
        }
    }
    if !missing.is_empty() {
        let planned = config.command.repeat as usize
            * config.command.topologies.len()
            * config.command.scenarios.len();
        report.interrupted = Some(Unfinished {
            measured: h.cells.len().min(planned),
            planned,
            missing: missing.iter().map(|id| cell_name(config, id)).collect(),
            resume: h.resume.clone(),
        });
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{cell, config};
    use crate::report::{Format, build_from, render::render};

    fn holdings<'a>(cells: &'a [CellFile], missing: &'a [CellId]) -> Holdings<'a> {
        Holdings {
            cells,
            missing,
            resume: "microshard compare --resume results/x".into(),
        }
    }

    fn id(topology: &str, scenario: &str) -> CellId {
        CellId {
            topology: topology.into(),
            scenario: scenario.into(),
            repeat: 1,
        }
    }

    #[test]
    fn an_interrupted_experiment_says_so_on_every_format() {
        let mut c = config(false);
        c.command.repeat = 1;
        let cells = vec![cell("single", "S1", 1, 1000.0)];
        let missing = [
            id("single", "S2"),
            id("microshard-2", "S1"),
            id("microshard-2", "S2"),
        ];
        let report =
            with_history(build_from(&c, &cells), &c, &holdings(&cells, &missing)).with_found(&[]);
        let i = report
            .interrupted
            .clone()
            .unwrap_or_else(|| panic!("not interrupted"));
        assert_eq!((i.measured, i.planned), (1, 4));
        assert_eq!(i.missing[0], "S2/single #1");
        for format in [Format::Table, Format::Markdown, Format::Html] {
            let text = render(&report, format);
            assert!(
                text.contains("INTERRUPTED: 1 of 4 cells measured"),
                "{format:?}: {text}"
            );
            assert!(
                text.contains("compare --resume results/x"),
                "{format:?}: {text}"
            );
        }
        let json = render(&report, Format::Json);
        assert!(json.contains("\"interrupted\": {"), "{json}");
        let csv = render(&report, Format::Csv);
        assert!(
            csv.lines()
                .next()
                .unwrap_or("")
                .ends_with(",interrupted,sessions"),
            "{csv}"
        );
        // S2 on single never ran: its validity says interrupted, and so does the finding.
        let s2 = csv
            .lines()
            .find(|l| l.contains(",S2,single,"))
            .unwrap_or("");
        assert!(s2.contains(",interrupted,"), "{s2}");
        assert!(
            report
                .found
                .iter()
                .any(|f| f.starts_with("S2: single was never run: the experiment was interrupted")),
            "{:?}",
            report.found
        );
        let table = render(&report, Format::Table);
        assert!(!table.contains("not measured"), "{table}");
    }

    #[test]
    fn a_resumed_experiment_says_which_invocation_measured_which_cells() {
        let mut c = config(false);
        c.command.repeat = 1;
        c.begin_session(false, Default::default());
        c.begin_session(true, Default::default());
        let mut cells = vec![
            cell("single", "S1", 1, 1000.0),
            cell("single", "S2", 1, 1000.0),
            cell("microshard-2", "S1", 1, 1500.0),
            cell("microshard-2", "S2", 1, 1500.0),
        ];
        cells[2].session = 2;
        cells[3].session = 2;
        let report =
            with_history(build_from(&c, &cells), &c, &holdings(&cells, &[])).with_found(&[]);
        assert!(report.interrupted.is_none());
        assert_eq!(report.sessions.len(), 2);
        assert_eq!(
            report.sessions[1].cells,
            ["S1/microshard-2 #1", "S2/microshard-2 #1"]
        );
        for format in [Format::Table, Format::Markdown, Format::Html] {
            let text = render(&report, format);
            assert!(
                text.contains("invocation 1 (") && text.contains("invocation 2 (--resume, "),
                "{format:?}: {text}"
            );
            assert!(
                text.contains("measured 2 cell(s): S1/microshard-2 #1, S2/microshard-2 #1"),
                "{text}"
            );
        }
        let csv = render(&report, Format::Csv);
        let row = csv
            .lines()
            .find(|l| l.contains(",S1,microshard-2,"))
            .unwrap_or("");
        assert!(row.ends_with(",false,2"), "{row}");
        assert!(render(&report, Format::Json).contains("\"sessions\": ["));
    }
}
