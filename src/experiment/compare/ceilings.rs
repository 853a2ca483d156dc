//! `compare --ceiling`: on each topology, the data loaded once, then one ceiling search per
//! scenario (README, "Glossary": ceiling). A search's confirmations are its cell's repetitions
//! (`cells/<topology>/<scenario>-rN.json`), so the table, the ratios and their significance are a
//! compare's; the search itself, every step, is kept in `ceilings/` (`docs/result-schema.md`,
//! "Ceilings"). A search that found no ceiling leaves its cell not run, with the reason.

use tokio_util::sync::CancellationToken;

use super::cell::{cell_props, place_outputs, write_cell};
use super::{MatrixOutcome, TopologyTurn, record_not_run};
use crate::experiment::ceiling::{self, CeilingRecord, Outcome, SearchOn};
use crate::experiment::lab::{Deployment, Lab, dead_member};
use crate::experiment::model::{CellId, ExperimentConfig};
use crate::experiment::progress::Progress;
use crate::runner::Phase;

/// Loads the topology's data, then searches each scenario's ceiling in order; a member found
/// dead during the load ends the turn (`Some(Dead)`).
pub(super) async fn search_topology<L: Lab>(
    lab: &mut L,
    turn: &TopologyTurn<'_>,
    deployment: &Deployment,
    config: &mut ExperimentConfig,
    cancel: &CancellationToken,
    progress: &Progress,
    outcome: &mut MatrixOutcome,
) -> anyhow::Result<Option<String>> {
    let shown = config.command.topology_name(turn.topology);
    let mut props = cell_props(config, &first_of(turn, turn.load_scenario), true, None, 0)?;
    place_outputs(&mut props, None)?;
    let bar = progress.phase(&format!("{shown}: loading the data"), None);
    let loaded = lab.run(deployment, &props, Phase::Load, cancel).await?;
    bar.finish(&format!("{:.0} ops/s", loaded.summary.throughput));
    if let Some(dead) = dead_member(&loaded.document, "the load") {
        return Ok(Some(dead));
    }
    // Keys the searches before this one inserted: later scenarios count them as records.
    let mut inserted = 0;
    for scenario in &config.command.scenarios.clone() {
        if cancel.is_cancelled() {
            outcome.interrupted = true;
            return Ok(None);
        }
        let ids = repeats_of(turn, scenario);
        if ids.iter().all(|id| turn.dir.is_finished(id)) {
            let path = turn.dir.ceiling_path(&first_of(turn, scenario));
            let kept: Option<CeilingRecord> = crate::experiment::results::read_json(&path).ok();
            inserted += kept.map_or(0, |r| r.inserted);
            outcome.skipped.extend(ids);
            continue;
        }
        let one = OneSearch {
            turn,
            deployment,
            scenario,
            ids: &ids,
            inserted,
        };
        let record = search_cell(lab, &one, config, cancel, progress, outcome).await?;
        inserted += record.inserted;
        if outcome.interrupted {
            return Ok(None);
        }
    }
    Ok(None)
}

/// One scenario's search on a topology: where, its cells, and the keys inserted before it.
struct OneSearch<'a> {
    turn: &'a TopologyTurn<'a>,
    deployment: &'a Deployment,
    scenario: &'a str,
    ids: &'a [CellId],
    inserted: u64,
}

/// Searches one scenario's ceiling, keeps the search and writes its confirmations as the cell's
/// repetitions, or records the cell not run with the search's finding; returns the record.
async fn search_cell<L: Lab>(
    lab: &mut L,
    one: &OneSearch<'_>,
    config: &mut ExperimentConfig,
    cancel: &CancellationToken,
    progress: &Progress,
    outcome: &mut MatrixOutcome,
) -> anyhow::Result<CeilingRecord> {
    let Some(spec) = config.command.ceiling.clone() else {
        anyhow::bail!("compare --ceiling: the record holds no search");
    };
    let (turn, scenario) = (one.turn, one.scenario);
    let first = first_of(turn, scenario);
    let mut base = cell_props(config, &first, false, None, one.inserted)?;
    place_outputs(&mut base, None)?;
    let path = turn.dir.ceiling_path(&first);
    let shown = config.command.topology_name(turn.topology);
    let where_ = format!("{shown} {scenario}");
    let on = SearchOn {
        spec: &spec,
        repeat: config.command.repeat,
        base: &base,
        phase: match scenario == turn.load_scenario {
            true => Phase::Load,
            false => Phase::Run,
        },
        deployment: one.deployment,
        steps_dir: path.with_file_name(format!("{}-steps", first.scenario)),
        record_path: path.clone(),
        where_: &where_,
    };
    let mut record = CeilingRecord::new(scenario.into(), shown, &spec, base.clone());
    let searched = ceiling::find(lab, &on, &mut record, cancel, progress).await?;
    record.outcome = Some(searched.outcome.clone());
    crate::experiment::results::write_json_atomic(&path, &record)?;
    match searched.outcome {
        Outcome::Found { .. } => {
            for (id, measured) in one.ids.iter().zip(searched.confirmations) {
                write_cell(turn.dir, config, id, &base, measured, None, one.deployment)?;
                outcome.measured.push(id.clone());
            }
        }
        Outcome::Interrupted { .. } => outcome.interrupted = true,
        _ => {
            let reason = format!("not run: {}", record.finding());
            let not_run = record_not_run(turn.dir, config.session(), one.ids.iter(), &reason)?;
            outcome.not_run.extend(not_run);
        }
    }
    Ok(record)
}

/// The cell ids of one scenario of the turn's topology, one per confirmation.
fn repeats_of(turn: &TopologyTurn<'_>, scenario: &str) -> Vec<CellId> {
    (turn.ids.iter())
        .filter(|id| id.scenario == scenario)
        .cloned()
        .collect()
}

/// The first repetition's id of a scenario: the one its search is kept under.
fn first_of(turn: &TopologyTurn<'_>, scenario: &str) -> CellId {
    CellId {
        topology: turn.topology.to_string(),
        scenario: scenario.to_string(),
        repeat: 1,
    }
}
