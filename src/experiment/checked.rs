//! A command's record once the servers check has passed (`preflight::servers`): the record,
//! with each of its topologies as loaded and named in it. Its fields are private and it is made
//! only from what the check returned, so the lab (`experiment::live::LiveLab::of`) brings up
//! only checked topologies, the same ones the dry run shows (`docs/reliability.md` §1,
//! `docs/architecture.md`).

use super::flags::ServerFlags;
use super::model::CompareCommand;
use crate::topology::Loaded;

/// What a lab needs of a record: its servers, its client processes per run, and a place for the
/// names its topologies loaded with.
pub(crate) trait Record {
    /// Backend, binaries, arguments and ports.
    fn servers(&self) -> &ServerFlags;
    /// Client processes driving each run (`--clients`).
    fn clients(&self) -> usize;
    /// Records the name each loaded topology is shown by; a name stored earlier is kept.
    fn name_topologies(&mut self, loaded: &[Loaded]);
}

/// A record and the topologies the servers check loaded for it.
#[derive(Debug)]
pub(crate) struct Checked<C> {
    record: C,
    topologies: Vec<Loaded>,
}

impl<C: Record> Checked<C> {
    /// `record` with `topologies` (what `preflight::servers` returned for it; none for a server
    /// at a URI), each named in it.
    pub(crate) fn new(mut record: C, topologies: Vec<Loaded>) -> Checked<C> {
        record.name_topologies(&topologies);
        Checked { record, topologies }
    }

    /// The same topologies with the record this one led to (a `compare`'s run directory and
    /// stored configuration).
    pub(crate) fn with<D: Record>(self, record: D) -> Checked<D> {
        Checked::new(record, self.topologies)
    }

    pub(crate) fn record(&self) -> &C {
        &self.record
    }

    pub(crate) fn topologies(&self) -> &[Loaded] {
        &self.topologies
    }

    pub(crate) fn into_record(self) -> C {
        self.record
    }
}

impl Record for CompareCommand {
    fn servers(&self) -> &ServerFlags {
        &self.servers
    }
    fn clients(&self) -> usize {
        self.workload.clients()
    }
    fn name_topologies(&mut self, loaded: &[Loaded]) {
        for t in loaded {
            (self.topology_names.entry(t.given.clone())).or_insert_with(|| t.name.clone());
        }
    }
}

/// A `sweep` or `ceiling` record: one topology (none for `--uri`), named once.
macro_rules! one_topology_record {
    ($command:ty) => {
        impl Record for $command {
            fn servers(&self) -> &ServerFlags {
                &self.servers
            }
            fn clients(&self) -> usize {
                self.workload_flags.clients()
            }
            fn name_topologies(&mut self, loaded: &[Loaded]) {
                if self.topology_name.is_none() {
                    self.topology_name = loaded.first().map(|t| t.name.clone());
                }
            }
        }
    };
}
one_topology_record!(super::sweep::SweepCommand);
one_topology_record!(super::ceiling::CeilingCommand);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopologySpec;

    fn loaded(given: &str, name: &str) -> Loaded {
        let mut spec = TopologySpec::shipped("single");
        spec.name = name.into();
        Loaded::new(given, spec)
    }

    #[test]
    fn the_record_names_each_topology_as_it_loaded_and_keeps_a_name_it_stored() {
        let mut cmd = CompareCommand::default();
        (cmd.topology_names).insert("box.toml".into(), "named-earlier".into());
        let topologies = vec![
            loaded("/home/me/big.toml", "big-box"),
            loaded("box.toml", "renamed-since"),
            loaded("single", "single"),
        ];
        let checked = Checked::new(cmd, topologies);
        let names = &checked.record().topology_names;
        assert_eq!(names["/home/me/big.toml"], "big-box", "a file: its name");
        assert_eq!(
            names["box.toml"], "named-earlier",
            "a resumed record keeps its own"
        );
        assert_eq!(names["single"], "single", "a shipped one: as given");
        assert_eq!(checked.topologies().len(), 3);
    }

    #[test]
    fn a_sweep_takes_its_topology_name_once() {
        let mut sweep = crate::experiment::sweep::tests::command(&[
            "--topology",
            "single",
            "-P",
            "workloads/S2",
        ]);
        let named = Checked::new(sweep.clone(), vec![loaded("/x/box.toml", "box")]);
        assert_eq!(named.record().topology_name.as_deref(), Some("box"));
        sweep.topology_name = Some("stored".into());
        let kept = Checked::new(sweep, vec![loaded("/x/box.toml", "box")]);
        assert_eq!(kept.record().topology_name.as_deref(), Some("stored"));
    }
}
