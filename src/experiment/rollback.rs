//! Reads that find no record after a failover. Without `w:"majority"`, a primary that fails
//! after acknowledging a write it had not yet replicated takes the write with it: the set rolls
//! it back when the old primary rejoins (MongoDB manual, "Rollbacks During Replica Set
//! Failover"), and every later read of that key on the same data finds nothing. A cell showing
//! NOT_FOUND after a failover on its topology says why, rather than leaving the reader to
//! suspect the load.

use crate::experiment::model::CellId;
use crate::measure::RunDocument;

/// The data-path failovers seen so far on one deployment, in the order of its cells.
#[derive(Debug, Default)]
pub(crate) struct Failovers(Vec<String>);

impl Failovers {
    /// Notes the data-path elections of the cell `id` just measured (`document`).
    pub(crate) fn note(&mut self, id: &CellId, document: &RunDocument) {
        for set in document.timeline.data_path_elections() {
            self.0
                .push(format!("{set} ({} r{})", id.scenario, id.repeat));
        }
    }

    /// The caveat of a cell whose operations found no record after one of these failovers,
    /// when its write concern let acknowledged writes be rolled back; `None` otherwise.
    pub(crate) fn not_found_caveat(&self, document: &RunDocument) -> Option<String> {
        let missing = document.not_found();
        let majority =
            (document.server.write_concern.as_deref()).is_some_and(|w| w.contains("majority"));
        if missing == 0 || self.0.is_empty() || majority {
            return None;
        }
        let write_concern = document.server.write_concern.as_deref().unwrap_or("w=1");
        Some(format!(
            "{} operations found no record after a failover on this topology ({}): with {write_concern}, a primary that fails can take writes it acknowledged but had not replicated, which the set then rolls back, so those keys are gone; w=majority rules it out",
            crate::runner::verdict::thousands(missing),
            self.0.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::timeline::NoPrimary;

    fn cell(scenario: &str) -> CellId {
        CellId {
            topology: "t".into(),
            scenario: scenario.into(),
            repeat: 1,
        }
    }

    fn elected(set: &str, config_server: bool) -> NoPrimary {
        NoPrimary {
            set: set.into(),
            from_s: 3.0,
            duration_s: 2.0,
            ongoing: false,
            new_primary: None,
            config_server,
        }
    }

    /// A run document with `not_found` reads that found no record, under `write_concern`.
    fn reads(not_found: u64, write_concern: &str) -> RunDocument {
        let m = crate::measure::Measurements::new(crate::measure::MeasurementConfig::default());
        let c = m.client();
        for i in 0..10 {
            let status = match i < not_found {
                true => crate::measure::Status::NotFound,
                false => crate::measure::Status::Ok,
            };
            c.record("READ", 100, None, status);
        }
        let t0 = chrono::Utc::now();
        let overall = crate::measure::Overall {
            runtime_ms: 1000,
            operations: 10,
        };
        let mut d = RunDocument::new("run", t0, t0, &overall, &m.finish())
            .unwrap_or_else(|e| panic!("{e}"));
        d.server.write_concern = Some(write_concern.into());
        d
    }

    #[test]
    fn not_found_after_a_shard_failover_is_explained_under_w1_only() {
        let mut failovers = Failovers::default();
        let mut earlier = reads(0, "w=1");
        earlier.timeline.no_primary = vec![elected("sh0", false), elected("cfg", true)];
        failovers.note(&cell("S2"), &earlier);
        let said = failovers.not_found_caveat(&reads(3, "w=1"));
        assert_eq!(
            said.as_deref(),
            Some(
                "3 operations found no record after a failover on this topology (sh0 (S2 r1)): with w=1, a primary that fails can take writes it acknowledged but had not replicated, which the set then rolls back, so those keys are gone; w=majority rules it out"
            )
        );
        assert_eq!(failovers.not_found_caveat(&reads(0, "w=1")), None);
        assert_eq!(failovers.not_found_caveat(&reads(3, "w=majority")), None);
    }

    #[test]
    fn a_config_server_election_explains_nothing() {
        let mut failovers = Failovers::default();
        let mut cfg = reads(0, "w=1");
        cfg.timeline.no_primary = vec![elected("cfg", true)];
        failovers.note(&cell("S1"), &cfg);
        assert_eq!(failovers.not_found_caveat(&reads(3, "w=1")), None);
    }
}
