//! Measuring one cell of the matrix: its properties, the run with the server watched beside it, its server metrics, and its file written the moment it exists.

use crate::experiment::balancer::{self, BalancerLook, BalancerWatch};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use crate::experiment::crosscheck;
use crate::experiment::facts;
use crate::experiment::lab::{Deployment, Lab, Measured, Session, dead_member};
use crate::experiment::metrics::set_counts::{Reading, SetCounts};
use crate::experiment::metrics::{self, MemberMetrics, ServerMetrics};
use crate::experiment::model::{CELL_SCHEMA, CellFile, CellId, ExperimentConfig};
use crate::experiment::progress::Progress;
use crate::experiment::results::ExperimentDir;
use crate::runner::Phase;
use crate::workload::{Origin, Properties, prop};

/// One cell about to be measured: which, whether it is the load, whether it is already
/// stored (a load measured again only to refill the data), and its properties.
pub(super) struct Cell<'a> {
    /// The cell.
    pub(super) id: &'a CellId,
    /// The load scenario's cell.
    pub(super) is_load: bool,
    /// Already stored: measured only to reload the data, not written again.
    pub(super) finished: bool,
    /// Its properties, as run.
    pub(super) props: Properties,
}

impl Cell<'_> {
    /// The phase the cell runs.
    pub(super) fn phase(&self) -> Phase {
        if self.is_load {
            Phase::Load
        } else {
            Phase::Run
        }
    }

    /// What its progress line says.
    pub(super) fn caption(&self, topology: &str) -> String {
        if self.is_load && self.finished {
            format!(
                "{topology}: reloading data ({} kept from the earlier run)",
                self.id.scenario
            )
        } else {
            format!("{topology}: {} {}", self.id.scenario, self.phase().name())
        }
    }
}

/// A cell's properties: its scenario's, at the knee's thread count once a sweep found one, and
/// with the documents earlier run phases inserted counted in the record count.
pub(super) fn cell_props(
    config: &ExperimentConfig,
    id: &CellId,
    is_load: bool,
    threads_override: Option<u32>,
    inserted: u64,
) -> anyhow::Result<Properties> {
    let mut props = config
        .properties
        .get(&id.scenario)
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("{}: no resolved properties", id.scenario))?;
    if let (false, Some(t)) = (is_load, threads_override) {
        props.set_value(&prop::THREADCOUNT, t, Origin::Experiment);
    }
    if !is_load && inserted > 0 {
        let base = props.value(&prop::RECORDCOUNT).unwrap_or(0);
        props.set_value(
            &prop::RECORDCOUNT,
            base + inserted as i64,
            Origin::Experiment,
        );
    }
    Ok(props)
}

/// Points the YCSB outputs a `-p` asks for (interval logs, raw data points, `exportfile`) at
/// the cell's own files beside its cell file, so no cell overwrites another's
/// (README, "Results you can trust"). The interval logs' directory is made here.
/// Without a cell file (a load run again only to refill the data, a `--sweep` point) it writes
/// none of them.
pub(super) fn place_outputs(
    props: &mut Properties,
    cell_file: Option<&Path>,
) -> anyhow::Result<()> {
    let Some(cell_file) = cell_file else {
        props.set_value(&prop::HDRHISTOGRAM_FILEOUTPUT, false, Origin::Experiment);
        props.remove(prop::MEASUREMENT_RAW_OUTPUT_FILE.name);
        props.remove(prop::EXPORTFILE.name);
        return Ok(());
    };
    let hdr = props
        .get(prop::HDRHISTOGRAM_FILEOUTPUT.name)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let raw = props.contains(prop::MEASUREMENT_RAW_OUTPUT_FILE.name);
    let export = props.get(prop::EXPORTFILE.name).map(|asked| {
        let ext = Path::new(asked).extension();
        ext.map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default()
    });
    if !hdr && !raw && export.is_none() {
        return Ok(());
    }
    let stem = cell_file.with_extension("");
    let beside = |suffix: &str| format!("{}{suffix}", stem.display());
    let dir = match hdr {
        true => beside(".hdr/"),
        false => stem
            .parent()
            .map_or(String::new(), |p| p.display().to_string()),
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create {dir} for the cell's outputs: {e}"))?;
    let mut set = |key: &str, value: String| props.set(key, value, Origin::Experiment);
    if hdr {
        set(prop::HDRHISTOGRAM_OUTPUT_PATH.name, dir);
    }
    if raw {
        set(prop::MEASUREMENT_RAW_OUTPUT_FILE.name, beside(".raw.txt"));
    }
    if let Some(ext) = export {
        set(prop::EXPORTFILE.name, beside(&format!(".export{ext}")));
    }
    Ok(())
}

/// What the client ceiling says of a cell's throughput.
enum CeilingCheck {
    /// Well below it, or no ceiling known.
    Clear,
    /// Near it: the figure may measure the client (degraded).
    Bound(String),
    /// Above it: the ceiling was stale, and is raised to the cell's rate.
    Stale(String),
}

/// A cell near the client ceiling is client-bound; one above it shows the ceiling stale, not a
/// client-bound server: the cell is not degraded for it, the ceiling is raised to the rate the
/// client just reached, and the cell says so.
fn client_ceiling_check(throughput: f64, config: &mut ExperimentConfig) -> CeilingCheck {
    let Some(ceiling) = config.client_ceiling.filter(|c| *c > 0.0) else {
        return CeilingCheck::Clear;
    };
    if throughput > ceiling {
        config.client_ceiling = Some(throughput);
        let n = |x: f64| crate::runner::verdict::thousands(x.round() as u64);
        return CeilingCheck::Stale(format!(
            "the client ceiling measured before ({} ops/s) was stale: this cell reached {} ops/s, so the client can drive at least that; later cells are judged against it",
            n(ceiling),
            n(throughput)
        ));
    }
    match crate::runner::verdict::client_bound(throughput, Some(ceiling)) {
        Some(why) => CeilingCheck::Bound(why),
        None => CeilingCheck::Clear,
    }
}

/// Writes the cell's `exportfile` (placed by [`place_outputs`]): YCSB's report of its result
/// with the exporter the scenario names, as `microshard run` writes it.
fn write_export(props: &Properties, document: &crate::measure::RunDocument) -> anyhow::Result<()> {
    let Some(path) = props.get(prop::EXPORTFILE.name) else {
        return Ok(());
    };
    let (text, _) = document.ycsb_report(props)?;
    std::fs::write(path, text).map_err(|e| {
        anyhow::anyhow!(
            "property {}: cannot write {path}: {e}",
            prop::EXPORTFILE.name
        )
    })
}

/// How one cell ended.
pub(super) enum CellEnd {
    /// Measured to its end.
    Measured(Taken),
    /// Measured, but a member was found dead (named): the cell is recorded, invalid, and its
    /// topology's later cells are not run.
    Dead(Taken, String),
    /// Ctrl-C cut it short: nothing is recorded for it.
    Cancelled,
}

/// Runs one cell, watching the servers when the lab collects their metrics and the cell is not
/// stored yet.
pub(super) async fn measure_cell<L: Lab>(
    s: &mut Session<'_, L>,
    deployment: &Deployment,
    config: &ExperimentConfig,
    cell: &Cell<'_>,
) -> anyhow::Result<CellEnd> {
    let topology = &deployment.topology;
    let phase = cell.phase();
    let expected = match cell.is_load {
        true => None,
        false => config.command.duration_s.map(Duration::from_secs),
    };
    let mut watch = match s.lab.collects_server_metrics() && !cell.finished {
        true => Some(CellWatch::begin(deployment, &cell.props).await),
        false => None,
    };
    let bar = s.progress.phase(&cell.caption(topology), expected);
    if let Some(w) = &mut watch {
        w.start_sampler(&cell.props, config, s.progress);
    }
    let measured = s.lab.run(deployment, &cell.props, phase, s.cancel).await;
    let samples = match watch.as_mut().and_then(|w| w.sampler.take()) {
        Some(sampler) => sampler.finish().await,
        None => Vec::new(),
    };
    if s.cancel.is_cancelled() {
        // A cell cut short by Ctrl-C is not a measurement: nothing is written for it.
        bar.finish("interrupted, not recorded");
        return Ok(CellEnd::Cancelled);
    }
    let measured = match measured {
        Ok(m) => m,
        Err(e) => {
            bar.finish("failed");
            return Err(e.context(format!("{} {}", cell.id.scenario, phase.name())));
        }
    };
    let dead = dead_member(&measured.document, &cell.id.scenario);
    bar.finish(&match &dead {
        Some(_) => "ended early: a member is dead".to_string(),
        None => format!("{:.0} ops/s", measured.summary.throughput),
    });
    // A member silent at the end (dead, partitioned) would hold every metrics call until its
    // time-out: such a cell is invalid anyway, and its server metrics are left out
    // (`docs/reliability.md`, "Fail fast").
    let outages = &measured.document.timeline.member_outages;
    let silent_at_end = outages.iter().any(|o| o.ongoing);
    let server = match watch {
        Some(w) if !silent_at_end => {
            let elected = measured.document.timeline.data_path_elections();
            Some(w.end(deployment, samples, &cell.props, &elected).await)
        }
        _ => None,
    };
    let cell = Taken {
        measured,
        server,
        caveats: Vec::new(),
    };
    Ok(match dead {
        Some(member) => CellEnd::Dead(cell, member),
        None => CellEnd::Measured(cell),
    })
}

/// The servers watched over one cell: each shard at its primary of now (an election may have
/// moved it), their counters before the cell, and the sampler running during it.
pub(super) struct CellWatch {
    /// The members watched.
    pub(super) watched: Vec<metrics::Watched>,
    /// Each shard's primary at the cell's start.
    pub(super) primaries: BTreeMap<String, String>,
    /// Their counters before the cell.
    pub(super) before: Vec<Option<metrics::StatusSnapshot>>,
    /// The other shard members (secondaries) with their counters before the cell: a shard
    /// that fails over during the cell is read at its new primary.
    pub(super) standby: Vec<(metrics::Watched, Option<metrics::StatusSnapshot>)>,
    /// Samples their counters while the cell runs.
    pub(super) sampler: Option<metrics::Sampler>,
    /// The balancer and the table's chunks before the cell, where they are watched.
    pub(super) balancer: Option<BalancerLook>,
}

/// Whether the cell's balancer and chunks are watched: on a sharded deployment whose balancer
/// microshard stopped (`keep_balancer` unset).
fn balancer_watched(deployment: &Deployment) -> bool {
    deployment
        .plan
        .as_ref()
        .is_some_and(|p| p.kind == crate::topology::Kind::Sharded && !p.keep_balancer)
}

impl CellWatch {
    /// Finds who to watch and reads their counters before the cell.
    pub(super) async fn begin(deployment: &Deployment, props: &Properties) -> Self {
        let (watched, primaries) = facts::at_cell_start(deployment).await;
        let standby = facts::standby_members(deployment, &watched);
        let table = props.text(&prop::TABLE);
        let balancer = async {
            match balancer_watched(deployment) {
                true => Some(balancer::look(&deployment.entry_uri, table).await),
                false => None,
            }
        };
        let (before, standby_before, balancer) = futures::join!(
            metrics::snapshot_all(&watched),
            metrics::snapshot_all(&standby),
            balancer
        );
        Self {
            watched,
            primaries,
            before,
            standby: standby.into_iter().zip(standby_before).collect(),
            sampler: None,
            balancer,
        }
    }

    /// The members to read after the cell (`now`: each shard at its primary of now), with their
    /// counters before it: a primary an election moved to a member read before the cell as a
    /// secondary is read against that member's counters of then.
    fn followed(
        &mut self,
        now: Vec<metrics::Watched>,
    ) -> (Vec<metrics::Watched>, Vec<Option<metrics::StatusSnapshot>>) {
        let before = std::mem::take(&mut self.before);
        let standby = &self.standby;
        (self.watched.iter().zip(before).zip(now))
            .map(|((then, b), current)| {
                let moved = (standby.iter())
                    .find(|(w, _)| w.name == current.name && current.name != then.name);
                match moved {
                    Some((w, standby_before)) => (w.clone(), standby_before.clone()),
                    None => (then.clone(), b),
                }
            })
            .unzip()
    }

    /// The shard sets that failed over during the cell: those the cell's probes saw without a
    /// primary (`elected`), and those whose primary now is another member than at its start.
    fn failed_over(&self, elected: &[String], now: &BTreeMap<String, String>) -> BTreeSet<String> {
        let moved = (now.iter())
            .filter(|(set, p)| self.primaries.get(*set).is_some_and(|then| then != *p))
            .map(|(set, _)| set.clone());
        let known = |s: &String| self.primaries.contains_key(s) || now.contains_key(s);
        elected
            .iter()
            .filter(|s| known(s))
            .cloned()
            .chain(moved)
            .collect()
    }

    /// Each of `sets` summed over its members ([`SetCounts`]): every member's counters read
    /// at the cell's start (as the watched primary or a standby) and again now.
    async fn set_counts(
        &self,
        deployment: &Deployment,
        sets: &BTreeSet<String>,
    ) -> BTreeMap<String, SetCounts> {
        let Some(plan) = deployment.plan.as_ref().filter(|_| !sets.is_empty()) else {
            return BTreeMap::new();
        };
        let known = (self.watched.iter().zip(self.before.iter().cloned()))
            .chain(self.standby.iter().map(|(w, b)| (w, b.clone())));
        let mut members: Vec<(String, &metrics::Watched, Option<metrics::StatusSnapshot>)> =
            Vec::new();
        for (w, before) in known {
            if let Some(set) = plan.set_of(&w.name).filter(|s| sets.contains(*s)).cloned()
                && !members.iter().any(|(_, m, _)| m.name == w.name)
            {
                members.push((set, w, before));
            }
        }
        let now: Vec<metrics::Watched> = members.iter().map(|(_, w, _)| (*w).clone()).collect();
        let after = metrics::snapshot_all(&now).await;
        let mut out = BTreeMap::new();
        for set in sets {
            let readings: Vec<Reading<'_>> = (members.iter().zip(&after))
                .filter(|((s, _, _), _)| s == set)
                .map(|((_, w, b), a)| (w.name.as_str(), b.as_ref(), a.as_ref()))
                .collect();
            out.insert(set.clone(), SetCounts::sum(set, &readings));
        }
        out
    }

    /// Starts sampling the watched members while the cell runs.
    pub(super) fn start_sampler(
        &mut self,
        props: &Properties,
        config: &ExperimentConfig,
        progress: &Progress,
    ) {
        self.sampler = Some(metrics::Sampler::start(
            self.watched.clone(),
            sample_interval(props, config.command.duration_s),
            config.command.live_server_status.then(|| progress.clone()),
        ));
    }

    /// Reads the counters after the cell and puts the cell's server metrics together; a shard
    /// whose set failed over (`elected`: the sets the cell's probes saw without a primary) is
    /// counted over all its members.
    pub(super) async fn end(
        mut self,
        deployment: &Deployment,
        samples: Vec<Vec<(f64, f64)>>,
        props: &Properties,
        elected: &[String],
    ) -> ServerMetrics {
        let (now, primaries_now) = facts::at_cell_start(deployment).await;
        let sets = self.failed_over(elected, &primaries_now);
        let counts = self.set_counts(deployment, &sets).await;
        let (watched, before) = self.followed(now);
        let after = metrics::snapshot_all(&watched).await;
        let set_of = |name: &str| counts.get(deployment.plan.as_ref()?.set_of(name)?).cloned();
        let members = watched
            .iter()
            .zip(before.into_iter().chain(std::iter::repeat(None)))
            .zip(after.into_iter().chain(std::iter::repeat(None)))
            .zip(samples.into_iter().chain(std::iter::repeat_with(Vec::new)))
            .map(|(((w, b), a), samples)| MemberMetrics {
                name: w.name.clone(),
                role: w.role.clone(),
                set_counts: (w.role == "shard").then(|| set_of(&w.name)).flatten(),
                before: b,
                after: a,
                samples,
            })
            .collect();
        let table = props.text(&prop::TABLE);
        let balancer = match self.balancer.take() {
            Some(before) => Some(BalancerWatch {
                before,
                after: balancer::look(&deployment.entry_uri, table).await,
            }),
            None => None,
        };
        // The run always writes to the entry URI's database, `ycsb`, whatever the scenario's own
        // `mongodb.url` says.
        let mut m = ServerMetrics {
            members,
            shards: metrics::shard_shares(&deployment.entry_uri, crate::cluster::YCSB_DB, table)
                .await,
            primaries: self.primaries,
            balancer,
            ..Default::default()
        };
        m.finish();
        m
    }
}

/// How often servers are sampled during a cell: `status.interval` (YCSB's, default 10 s), but
/// at least four samples in a short cell.
pub(super) fn sample_interval(props: &Properties, duration_s: Option<u64>) -> Duration {
    let status = props
        .value(&prop::STATUS_INTERVAL)
        .unwrap_or(prop::STATUS_INTERVAL.default);
    let cap = duration_s.map(|d| (d / 4).max(1)).unwrap_or(status);
    Duration::from_secs(status.min(cap).max(1))
}

/// The cell's client against its server ([`crosscheck::check_cell`]): the check, and its
/// disagreements as the cell's first warnings.
fn cross_check(
    server: Option<&mut ServerMetrics>,
    document: &crate::measure::RunDocument,
    props: &Properties,
    deployment: &Deployment,
) -> (Option<crosscheck::CrossCheck>, Vec<String>) {
    let upsert = crosscheck::upsert(props);
    let machine = metrics::machine_bytes(&deployment.entry_uri);
    let check = server.and_then(|s| crosscheck::check_cell(s, document, upsert, machine));
    let warnings = check.iter().flat_map(|c| c.warnings.clone()).collect();
    (check, warnings)
}

/// A cell as measured, to be written: the run, the servers' metrics over it (when watched),
/// and the caveats its topology's earlier cells give it.
pub(super) struct Taken {
    /// The run.
    pub(super) measured: Measured,
    /// The servers' metrics over the cell.
    pub(super) server: Option<ServerMetrics>,
    /// Sentences the cell's warnings start with (NOT_FOUND reads after an earlier failover).
    pub(super) caveats: Vec<String>,
}

impl Taken {
    /// A run with no server metrics and no caveats (a ceiling search's best step).
    pub(super) fn alone(measured: Measured) -> Taken {
        Taken {
            measured,
            server: None,
            caveats: Vec::new(),
        }
    }
}

/// What the servers' own figures say of the cell: a server that restarted during it makes it
/// invalid; chunks that moved, or a balancer back on, degraded.
fn judge_servers(server: &ServerMetrics, measured: &mut Measured) {
    for why in server.restarts() {
        measured.invalid(why);
    }
    if let Some(why) = server.balancer.as_ref().and_then(balancer::degraded) {
        measured.degrade(why);
    }
}

/// Writes a measured cell: its summary and document with the verdicts the experiment adds
/// (balancer, client ceiling), the cross-check, and the config changes it taught.
pub(super) fn write_cell(
    (dir, id, deployment): (&ExperimentDir, &CellId, &Deployment),
    config: &mut ExperimentConfig,
    props: &Properties,
    taken: Taken,
) -> anyhow::Result<()> {
    let Taken {
        mut measured,
        mut server,
        caveats,
    } = taken;
    let (crosscheck, checked) = cross_check(server.as_mut(), &measured.document, props, deployment);
    let mut warnings = caveats;
    warnings.extend(checked);
    warnings.extend(super::super::summary::partial_server_cpu(
        &measured.document,
    ));
    if let Some(server) = &server {
        judge_servers(server, &mut measured);
    }
    let mut config_changed = false;
    match client_ceiling_check(measured.summary.throughput, config) {
        CeilingCheck::Clear => {}
        CeilingCheck::Bound(why) => measured.degrade(why),
        CeilingCheck::Stale(why) => {
            warnings.push(why);
            config_changed = true;
        }
    }
    let Measured {
        mut summary,
        document,
    } = measured;
    if summary.threads == 0 {
        summary.threads = (props.value(&prop::THREADCOUNT).ok())
            .and_then(|t| u32::try_from(t).ok())
            .unwrap_or(1);
    }
    if summary.standin && !config.standin {
        config.standin = true;
        config_changed = true;
    }
    if let Some(v) = summary
        .server_version
        .as_ref()
        .filter(|v| config.server_versions.get(&id.topology) != Some(*v))
    {
        config
            .server_versions
            .insert(id.topology.clone(), v.clone());
        config_changed = true;
    }
    let cell = CellFile {
        schema: CELL_SCHEMA.into(),
        cell: id.clone(),
        finished: chrono::Utc::now().to_rfc3339(),
        summary,
        result: document,
        server,
        warnings,
        crosscheck,
        topology: deployment.plan.clone(),
        server_versions: deployment.server_versions.clone(),
        server_images: deployment.server_images.clone(),
        session: config.session(),
        default_write_concern: deployment.default_write_concern.clone(),
    };
    write_export(props, &cell.result)?;
    dir.write_cell(&cell)?;
    dir.clear_not_run(id)?;
    if config_changed {
        dir.write_config(config)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_above_the_client_ceiling_raises_it_and_one_near_it_is_client_bound() {
        let mut config = crate::report::tests::config(true);
        config.client_ceiling = Some(10_000.0);
        assert!(matches!(
            client_ceiling_check(5_000.0, &mut config),
            CeilingCheck::Clear
        ));
        assert!(matches!(
            client_ceiling_check(9_500.0, &mut config),
            CeilingCheck::Bound(_)
        ));
        match client_ceiling_check(12_000.0, &mut config) {
            CeilingCheck::Stale(why) => assert!(
                why.starts_with("the client ceiling measured before (10,000 ops/s) was stale: this cell reached 12,000 ops/s"),
                "{why}"
            ),
            _ => panic!("a cell above the ceiling shows it stale"),
        }
        assert_eq!(config.client_ceiling, Some(12_000.0));
        // Later cells are judged against the raised ceiling: 11,000 is 92 % of it.
        assert!(matches!(
            client_ceiling_check(11_000.0, &mut config),
            CeilingCheck::Bound(_)
        ));
    }
}
