//! The sequence of checks a command makes of its whole input before it creates or starts
//! anything (`docs/reliability.md` §1): flags, topologies (each loaded here, once), server
//! binaries, then the checks their owners keep — a compare's scenarios (`experiment::compare`),
//! CPU sets (`topology`), Docker engines and images, the existing cluster and ports (`backend`);
//! output paths are the `writable` module's.
//!
//! Each failure is one [`crate::error::BadInput`] line naming the culprit (exit status 2). Nothing
//! here leaves anything behind: plans are computed but not executed, and the only thing fetched
//! is a Docker image the run needs anyway.

use std::collections::BTreeSet;
use std::path::Path;

use crate::backend::docker::{check_reference, check_spec_images};
use crate::error::bad_input;
use crate::events::Events;
use crate::experiment::model::CompareCommand;
use crate::topology::{BackendKind, Kind, Loaded, PlanOptions, TopologySpec};

// ----- servers ----------------------------------------------------------------------------------

/// The servers a command will bring up (or use), as given on its command line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Servers<'a> {
    /// How messages name a topology: `--topologies` (compare, demo), `--topology` (sweep),
    /// `topology` (up).
    pub label: &'a str,
    /// `--backend`.
    pub backend: BackendKind,
    /// Topology names or files.
    pub topologies: &'a [String],
    /// `--bin-dir`.
    pub bin_dir: Option<&'a Path>,
    /// `--mongod-arg`s.
    pub extra_mongod_args: &'a [String],
    /// `--image`.
    pub image: Option<&'a str>,
    /// `--base-port`.
    pub base_port: Option<u16>,
    /// `demo`: the stand-in binaries are linked and the ports chosen when it starts, so neither
    /// is checked here.
    pub binaries_linked_later: bool,
    /// Where a Docker image pull says its progress (`None`: nowhere, `--quiet`).
    pub pulls: Option<&'a dyn Events>,
    /// A dry run: every check is made, but an image the engine lacks is not pulled (the run
    /// would pull it; a note says so).
    pub dry_run: bool,
    /// A new `compare`'s record: its scenarios are checked against the loaded topologies
    /// (`None` for other commands and resumes).
    pub scenarios: Option<&'a CompareCommand>,
    /// The command measures on these servers (`compare`, `sweep`, `ceiling`, `rerun`), so its
    /// clients must reach them as they are measured; `up` only brings them up.
    pub measured: bool,
}

impl<'a> Servers<'a> {
    /// The servers of a `--servers` flag set (`sweep`, `ceiling`, `compare`, `rerun`): backend,
    /// binaries, arguments and ports as given, naming topologies by `label`.
    pub(crate) fn of(
        label: &'a str,
        flags: &'a crate::experiment::flags::ServerFlags,
        topologies: &'a [String],
        pulls: Option<&'a dyn Events>,
    ) -> Servers<'a> {
        Servers {
            label,
            backend: flags.backend,
            topologies,
            bin_dir: flags.bin_dir.as_deref(),
            extra_mongod_args: &flags.mongod_args,
            base_port: flags.base_port,
            pulls,
            measured: true,
            ..Default::default()
        }
    }

    /// The servers of a compare's record (`compare`, `rerun`, `demo`), its scenarios checked
    /// against the topologies it loads.
    pub(crate) fn of_compare(command: &'a CompareCommand, pulls: Option<&'a dyn Events>) -> Self {
        Servers {
            image: command.image.as_deref(),
            scenarios: Some(command),
            ..Servers::of("--topologies", &command.servers, &command.topologies, pulls)
        }
    }

    /// The servers of `demo`: stand-ins on local processes, whose links and ports are made when
    /// it starts.
    pub(crate) fn of_demo(command: &'a CompareCommand, pulls: Option<&'a dyn Events>) -> Self {
        Servers {
            backend: BackendKind::Process,
            base_port: None,
            ..Servers::of_compare(command, pulls).linked_later(true)
        }
    }

    /// A dry run (`--dry-run`) when `yes`: every check is made, but no image is pulled.
    pub(crate) fn dry_run(self, yes: bool) -> Self {
        Servers {
            dry_run: yes,
            ..self
        }
    }

    /// When `yes`, the stand-in binaries are linked when the run starts (`demo`, or the resume
    /// of one): no `--bin-dir` is checked here.
    pub(crate) fn linked_later(self, yes: bool) -> Self {
        Servers {
            binaries_linked_later: yes,
            bin_dir: self.bin_dir.filter(|_| !yes),
            ..self
        }
    }

    /// A resumed experiment's scenarios were checked when it was created: not again here.
    pub(crate) fn resumed(self, yes: bool) -> Self {
        Servers {
            scenarios: self.scenarios.filter(|_| !yes),
            ..self
        }
    }
}

/// Checks everything about the servers before anything starts, and returns every topology as
/// loaded ([`Loaded`]): the backend, every topology (loaded and planned as it will be brought up),
/// `--mongod-arg`, the binaries, CPU sets, ports, and what the backend needs (a Docker engine
/// with the image, or an existing cluster that accepts the credentials); last, `--standin`'s
/// links, so a refusal leaves the state directory as it was.
pub(crate) async fn servers(s: &Servers<'_>) -> anyhow::Result<Vec<Loaded>> {
    let label = s.label;
    let kind = s.backend;
    let backend = crate::backend::of(kind);
    let specs = load_specs(s)?;
    // `--standin`'s links are made last, once everything else has passed: until then the
    // programs are taken as there (they are this binary).
    let links_pending = crate::experiment::flags::is_standin_dir(kind, s.bin_dir);
    if let Some(dir) = s.bin_dir
        && !dir.is_dir()
        && !s.binaries_linked_later
        && !links_pending
    {
        let shown = dir.display();
        return Err(bad_input(format!("--bin-dir {shown}: no such directory")));
    }
    if let Some(cmd) = s.scenarios {
        crate::experiment::compare::check_scenarios(cmd, &specs)?;
    }
    let mut names = BTreeSet::new();
    if let Some(t) = specs.iter().find(|t| !names.insert(t.spec.name.as_str())) {
        let (given, named) = (&t.given, &t.spec.name);
        return Err(bad_input(format!(
            "{label} {given}: another entry is also the topology named {named:?}"
        )));
    }
    // Planning finds the programs too; first, once, not once per topology.
    let linked_later = backend.runs_binaries() && s.binaries_linked_later;
    if !linked_later && !links_pending {
        let sharded = specs.iter().any(|t| t.spec.kind == Kind::Sharded);
        backend.programs_found(s.bin_dir, sharded)?;
    }
    let mut plans = Vec::new();
    for Loaded { given, spec, .. } in &specs {
        let name = given.as_str();
        if backend.starts_servers() {
            crate::topology::check_cpusets(name, spec).map_err(bad_input)?;
        }
        if linked_later {
            continue;
        }
        let mut opts = PlanOptions::new(spec, kind);
        opts.bin_dir = s.bin_dir.map(Path::to_path_buf);
        opts.links_pending = links_pending;
        let plan = backend
            .plan(spec, &opts)
            .map_err(|e| bad_input(format!("{label} {name}: {e}")))?;
        plans.push((name, spec, plan));
    }
    let readiness = crate::backend::Readiness {
        label,
        specs: &specs,
        plans: &plans,
        image_flag: s.image.is_some(),
        pulls: s.pulls,
        dry_run: s.dry_run,
        measured: s.measured,
    };
    crate::backend::ready(kind, &readiness).await?;
    // Last: a port taken now is the most likely to be free again a moment later.
    for (name, _, plan) in &plans {
        crate::backend::ports::ports_free(&format!("{label} {name}"), plan)?;
    }
    if links_pending {
        crate::experiment::flags::link_if_standin(kind, s.bin_dir)?;
    }
    Ok(specs)
}

/// The flags about the servers (`--mongod-arg`, `--bin-dir`, `--image`, `--base-port`), then
/// every topology loaded as it will be brought up, none listed twice.
fn load_specs(s: &Servers<'_>) -> anyhow::Result<Vec<Loaded>> {
    let label = s.label;
    let mut seen = BTreeSet::new();
    if let Some(t) = s.topologies.iter().find(|t| !seen.insert(t.as_str())) {
        return Err(bad_input(format!(
            "{label}: {t} is listed twice (its rows would be measured twice)"
        )));
    }
    crate::topology::check_managed_args(s.extra_mongod_args)
        .map_err(|m| bad_input(format!("--mongod-arg: {m}")))?;
    if s.image.is_some_and(|i| i.trim().is_empty()) {
        return Err(bad_input("--image: must not be empty"));
    }
    if let Some(image) = s.image {
        check_reference(image).map_err(|e| bad_input(format!("--image {image}: {e}")))?;
    }

    let mut specs = Vec::new();
    for name in s.topologies {
        let mut spec = topology(name, s.base_port, s.image).map_err(|unfit| match unfit {
            Unfit::Ports { needed, .. } => bad_input(format!(
                "--base-port {}: {label} {name} needs {needed} port(s) from there, past 65535",
                s.base_port.unwrap_or_default()
            )),
            Unfit::Load(e) | Unfit::Image(e) => bad_input(format!("{label} {name}: {e}")),
        })?;
        spec.mongod_args.extend(s.extra_mongod_args.iter().cloned());
        specs.push(Loaded::new(name, spec));
    }
    Ok(specs)
}

/// What keeps a topology from running as asked; each command words it with its own culprit.
pub(crate) enum Unfit {
    /// The file does not load.
    Load(String),
    /// `--base-port` runs the ports of the topology `name` past 65535: it needs this many.
    Ports { name: String, needed: u32 },
    /// An image reference is invalid.
    Image(String),
}

/// Loads a topology as it will run: `--base-port` and `--image` in place of the file's (whose
/// own `base_port` was checked as it loaded), its image references checked. The one place a
/// topology file is read outside `topology`: every command runs the spec returned.
pub(crate) fn topology(
    given: &str,
    base_port: Option<u16>,
    image: Option<&str>,
) -> Result<TopologySpec, Unfit> {
    let mut spec = TopologySpec::load(given).map_err(|e| Unfit::Load(e.to_string()))?;
    if let Some(port) = base_port {
        let name = spec.name.clone();
        spec.set_base_port(port)
            .map_err(|needed| Unfit::Ports { name, needed })?;
    }
    if let Some(image) = image {
        spec.image = image.to_string();
    }
    check_spec_images(&spec).map_err(Unfit::Image)?;
    Ok(spec)
}
