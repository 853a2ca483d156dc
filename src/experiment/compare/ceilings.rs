//! `compare --ceiling`: on each topology's turn (one per repetition, topologies interleaved),
//! the data loaded, then one ceiling search per scenario (README, "Glossary": ceiling;
//! `docs/ceiling.md`). A search's best passing trial is its cell's repetition
//! (`cells/<topology>/<scenario>-rN.json`), so the table is a compare's; the search itself,
//! every step, is kept in `ceilings/` (`docs/result-schema.md`, "Ceilings"). Every search starts
//! from the same documents: the load, and nothing its steps inserted (each step's keys are
//! deleted after it). A search that found no ceiling leaves its cell not run, with the reason.

use super::cell::{Taken, cell_props, place_outputs, write_cell};
use super::{MatrixOutcome, TopologyTurn};
use crate::experiment::ceiling::{self, CeilingRecord, Outcome, SearchOn};
use crate::experiment::lab::{Deployment, Lab, Measured, Session, dead_member};
use crate::experiment::model::{CellId, ExperimentConfig, NotRun};
use crate::runner::Phase;

/// Loads the topology's data, then searches the ceiling of each scenario of this turn not yet
/// measured, in order; a member found dead during the load ends the turn (`Some(Dead)`).
pub(super) async fn search_topology<L: Lab>(
    s: &mut Session<'_, L>,
    turn: &TopologyTurn<'_>,
    deployment: &Deployment,
    config: &mut ExperimentConfig,
    outcome: &mut MatrixOutcome,
) -> anyhow::Result<Option<String>> {
    let shown = config.command.topology_name(turn.topology);
    let load_id = id_of(turn, turn.load_scenario);
    let mut props = cell_props(config, &load_id, true, None, 0)?;
    place_outputs(&mut props, None)?;
    let bar = s
        .progress
        .phase(&format!("{shown}: loading the data"), None);
    let loaded = s.lab.run(deployment, &props, Phase::Load, s.cancel).await?;
    bar.finish(&format!("{:.0} ops/s", loaded.summary.throughput));
    if let Some(dead) = dead_member(&loaded.document, "the load") {
        return Ok(Some(dead));
    }
    for id in turn.ids {
        if s.cancel.is_cancelled() {
            outcome.interrupted = true;
            return Ok(None);
        }
        if turn.dir.is_finished(id) {
            outcome.skipped.push(id.clone());
            continue;
        }
        search_cell(s, (turn, id, deployment), config, outcome).await?;
        if outcome.interrupted {
            return Ok(None);
        }
    }
    Ok(None)
}

/// Searches one cell's ceiling, keeps the search, and writes its best passing trial as the
/// cell (marked when the client was the limit: a lower bound), or records the cell not run
/// with the search's finding.
async fn search_cell<L: Lab>(
    s: &mut Session<'_, L>,
    (turn, id, deployment): (&TopologyTurn<'_>, &CellId, &Deployment),
    config: &mut ExperimentConfig,
    outcome: &mut MatrixOutcome,
) -> anyhow::Result<()> {
    let Some(spec) = config.command.ceiling.clone() else {
        anyhow::bail!("compare --ceiling: the record holds no search");
    };
    let mut base = cell_props(config, id, false, None, 0)?;
    place_outputs(&mut base, None)?;
    let path = turn.dir.ceiling_path(id);
    let shown = config.command.topology_name(turn.topology);
    let of = config.command.repeat;
    let where_ = ceiling::shown_repeat(&format!("{shown} {}", id.scenario), id.repeat, of);
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let on = SearchOn {
        spec: &spec,
        base: &base,
        phase: ceiling::searched_phase(&base),
        deployment,
        steps_dir: path.with_file_name(format!("{}-steps", stem.unwrap_or_default())),
        record_path: path.clone(),
        where_: &where_,
    };
    let mut record = CeilingRecord::new(id.scenario.clone(), shown, &spec, base.clone());
    record.repeat = id.repeat;
    let searched = ceiling::find(s, &on, &mut record).await?;
    record.outcome = Some(searched.outcome.clone());
    crate::experiment::results::write_json_atomic(&path, &record)?;
    let best = match (searched.outcome, searched.best) {
        (Outcome::Interrupted { .. }, _) => {
            outcome.interrupted = true;
            return Ok(());
        }
        (Outcome::Found { .. }, Some(best)) => Ok(best),
        (Outcome::ClientLimited { .. }, Some(best)) => Ok(lower_bound(best, &record.finding())),
        (ended, _) => Err(ended),
    };
    match best {
        Ok(best) => {
            let at = (turn.dir, id, deployment);
            write_cell(at, config, &base, Taken::alone(best))?;
            outcome.measured.push(id.clone());
        }
        Err(ended) => {
            // A search that ran and found no rate meeting the bound is a finding, not a cell
            // left unrun: the tables give it its own word.
            let not_run = NotRun {
                cell: id.clone(),
                reason: format!("not run: {}", record.finding()),
                session: config.session(),
                word: matches!(ended, Outcome::NoRateMetBound { .. }).then(|| ended.word().into()),
            };
            turn.dir.record_not_run(std::slice::from_ref(&not_run))?;
            outcome.not_run.push(not_run);
        }
    }
    Ok(())
}

/// A client-limited search's best trial as its cell: degraded, saying the ceiling lies above.
fn lower_bound(mut best: Measured, finding: &str) -> Measured {
    let why = format!("a lower bound of the ceiling, not the ceiling: {finding}");
    best.degrade(why);
    best
}

/// The cell id of `scenario` in this turn's repetition.
fn id_of(turn: &TopologyTurn<'_>, scenario: &str) -> CellId {
    CellId {
        topology: turn.topology.to_string(),
        scenario: scenario.to_string(),
        repeat: turn.repeat,
    }
}
