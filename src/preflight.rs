//! The check a command makes of its whole input before it creates or starts anything
//! (`docs/reliability.md` §1): flags, topologies, server binaries, the backend's engine or
//! cluster, ports, CPU sets, thread counts and every output path.
//!
//! Each failure is one [`crate::error::BadInput`] line naming the culprit (exit status 2). Nothing
//! here leaves anything behind: output paths are proven by creating and removing a probe file,
//! plans are computed but not executed, and the only thing fetched is a Docker image the run
//! needs anyway.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::backend::docker::{check_reference, check_spec_images};
use crate::error::bad_input;
use crate::events::{Discard, Event, Events};
use crate::experiment::model::CompareCommand;
use crate::experiment::model::{CELL_SCHEMA, CONFIG_SCHEMA};
use crate::experiment::results::{CELLS_DIR, CONFIG_FILE, ExperimentDir};
use crate::experiment::scenario;
use crate::props::flag_values::MAX_DURATION;
use crate::topology::{BackendKind, Kind, Plan, PlanOptions, TopologySpec};
use crate::workload::prop;

mod ports;

// ----- output paths ---------------------------------------------------------------------------

/// Creates and removes a probe file in `dir`: the only proof that a write there will work
/// (permissions, read-only mounts, a full or vanished file system all show up here).
fn probe(dir: &Path) -> std::io::Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let path = dir.join(format!(
        ".microshard-probe-{}-{nanos:09}",
        std::process::id()
    ));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)
}

/// `Path::parent` of a bare name is `""`; the directory meant is the current one.
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Proves that files can be created in `dir`, or that `dir` can be created (probing its nearest
/// existing ancestor) when it does not exist yet. `flag` names the culprit in the message.
pub(crate) fn writable_dir(flag: &str, dir: &Path) -> anyhow::Result<()> {
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(bad_input(format!(
                    "{flag} {}: {} is not a directory",
                    dir.display(),
                    at.display()
                )));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) && at != Path::new(".") =>
            {
                at = parent_of(at);
            }
            Err(e) => return Err(bad_input(format!("{flag} {}: {e}", dir.display()))),
        }
    }
    probe(at).map_err(|e| {
        bad_input(format!(
            "{flag} {}: cannot write in {}: {e}",
            dir.display(),
            at.display()
        ))
    })
}

/// Proves that `file` can be written: not a directory, in a directory that exists and takes new
/// files, and writable itself when it already exists (opened for appending, so nothing is lost).
pub(crate) fn writable_file(flag: &str, file: &Path) -> anyhow::Result<()> {
    let culprit = |why: String| bad_input(format!("{flag} {}: {why}", file.display()));
    match std::fs::metadata(file) {
        Ok(m) if m.is_dir() => return Err(culprit("is a directory".into())),
        Ok(_) => {
            return std::fs::OpenOptions::new()
                .append(true)
                .open(file)
                .map(drop)
                .map_err(|e| culprit(format!("cannot write: {e}")));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(culprit(e.to_string())),
    }
    let dir = parent_of(file);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(culprit(format!("{} is not a directory", dir.display()))),
        Err(e) => return Err(culprit(format!("{}: {e}", dir.display()))),
    }
    probe(dir).map_err(|e| culprit(format!("cannot create files in {}: {e}", dir.display())))
}

// ----- results directories --------------------------------------------------------------------

/// Cell files of an experiment that `report` and `--resume` cannot use: unparsable, or written
/// with a schema this version does not know. One line each, naming the file.
pub(crate) fn damaged_cells(dir: &ExperimentDir) -> Vec<String> {
    let mut out = Vec::new();
    let root = dir.path().join(CELLS_DIR);
    let Ok(topologies) = std::fs::read_dir(&root) else {
        return out;
    };
    let mut files: Vec<PathBuf> = topologies
        .flatten()
        .map(|t| t.path())
        .filter(|t| t.is_dir())
        .filter_map(|t| std::fs::read_dir(t).ok())
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .filter(|f| f.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for file in files {
        if let Err(why) = check_cell(&file) {
            out.push(format!("{}: {why}", file.display()));
        }
    }
    out
}

fn check_cell(file: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("not JSON ({e})"))?;
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if schema != CELL_SCHEMA {
        return Err(format!(
            "unknown schema {schema:?} (this microshard reads {CELL_SCHEMA})"
        ));
    }
    serde_json::from_value::<crate::experiment::model::CellFile>(value)
        .map(drop)
        .map_err(|e| format!("not a cell file this microshard can read ({e})"))
}

/// Refuses an experiment whose configuration has a schema this version does not know.
pub(crate) fn known_schema(dir: &ExperimentDir) -> anyhow::Result<()> {
    let path = dir.path().join(CONFIG_FILE);
    let value: serde_json::Value = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("not JSON ({e})")))
        .map_err(|why| bad_input(format!("{}: {why}", path.display())))?;
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if schema != CONFIG_SCHEMA {
        return Err(bad_input(format!(
            "{}: unknown schema {schema:?} (this microshard reads {CONFIG_SCHEMA})",
            path.display()
        )));
    }
    Ok(())
}

/// Everything `compare --resume DIR` needs of its directory: an experiment of a known schema,
/// every existing cell readable (a damaged one would be measured again and overwrite what the
/// user may want to keep), and the directory writable.
pub(crate) fn resumable(path: &Path) -> anyhow::Result<ExperimentDir> {
    let dir = ExperimentDir::open(path)
        .map_err(|e| bad_input(format!("--resume {}: {e}", path.display())))?;
    known_schema(&dir).map_err(|e| bad_input(format!("--resume: {e}")))?;
    if dir.is_sweep() {
        return Err(bad_input(format!(
            "--resume {shown}: this is a sweep, not a compare experiment (nothing was touched); \
             resume it with `microshard sweep --resume {shown}`",
            shown = path.display()
        )));
    }
    let damaged = damaged_cells(&dir);
    if let Some(first) = damaged.first() {
        return Err(bad_input(format!(
            "--resume: {first}{}; move it away to measure that cell again",
            match damaged.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            }
        )));
    }
    writable_dir("--resume", path)?;
    let cells = path.join(CELLS_DIR);
    if cells.exists() {
        writable_dir("--resume", &cells)?;
    }
    Ok(dir)
}

// ----- counts -----------------------------------------------------------------------------------

/// Properties holding seconds that become a timer period: bounded like the duration flags, since
/// a period of `u64::MAX` seconds overflows the clock arithmetic of the status task.
const SECONDS_PROPERTIES: &[&str] = &[prop::STATUS_INTERVAL.name];

/// Refuses a seconds property above 30 days (`status.interval`), naming it and its origin.
pub(crate) fn property_bounds(props: &crate::workload::Properties) -> anyhow::Result<()> {
    let max = MAX_DURATION.as_secs();
    for key in SECONDS_PROPERTIES {
        if let Ok(Some(v)) = props.parse::<u64>(key)
            && v > max
        {
            return Err(crate::error::as_bad_input(
                props.invalid(key, format!("{v} seconds is more than 30 days")),
            ));
        }
    }
    Ok(())
}

/// Resolves every scenario of a new experiment as `compare` will (files, scale, `-p`, `--vary`)
/// and refuses what the runner would only refuse once a topology is up: a thread count of zero,
/// fewer threads than clients on a loaded topology.
fn scenarios(cmd: &CompareCommand, specs: &[(&str, TopologySpec)]) -> anyhow::Result<()> {
    if let Some(t) = cmd.threads {
        crate::error::flag_at_least("--threads", u64::from(t), 1)?;
    }
    let overrides = scenario::parse_overrides(&cmd.workload.overrides)?;
    let mut cmd = cmd.clone();
    cmd.name_topologies(specs.iter().map(|(_, s)| s));
    let (resolved, _) = crate::experiment::compare::resolve(&cmd, None)?;
    // Clients per cell on each topology: its client containers, or `--clients`.
    let clients: Vec<(&str, u64, bool)> = (specs.iter())
        .map(
            |(t, spec)| match spec.clients.iter().map(|c| u64::from(c.count)).sum() {
                0 => (*t, cmd.workload.clients, false),
                n => (*t, n, true),
            },
        )
        .collect();
    for (name, props) in &resolved {
        // A thread count that does not parse is refused just below, naming its origin.
        let threads = props.value(&prop::THREADCOUNT).ok().filter(|n| *n >= 1);
        if let Some(threads) = threads
            && let Some((t, n, containers)) = clients.iter().find(|(_, n, _)| *n > threads)
        {
            let who = match containers {
                true => format!("--topologies {t}: clients: {n} client containers"),
                false => format!("--clients {n}"),
            };
            return Err(bad_input(format!(
                "scenario {name}: {who} but threadcount={threads} (the total, split across clients); give --threads {n} or more"
            )));
        }
        property_bounds(props).map_err(|e| bad_input(format!("scenario {name}: {e}")))?;
        if let Some(t) = props.get(prop::THREADCOUNT.name) {
            let origin = if overrides.iter().any(|(k, _)| k == prop::THREADCOUNT.name) {
                "-p threadcount"
            } else {
                "property threadcount"
            };
            match t.trim().parse::<u64>() {
                Ok(n) if n >= 1 => {}
                _ => {
                    return Err(bad_input(format!(
                        "scenario {name}: {origin}={t}: must be a whole number of at least 1"
                    )));
                }
            }
        }
    }
    // The first scenario is the load phase: each client loads its own part of the keys.
    let load = cmd
        .scenarios
        .first()
        .and_then(|s| resolved.get_key_value(s));
    if let (Some((name, props)), Some(n)) = (load, clients.iter().map(|c| c.1).max()) {
        crate::runner::fanout::slices(props, crate::runner::Phase::Load, n as usize)
            .map_err(|e| bad_input(format!("scenario {name}: {e}")))?;
    }
    Ok(())
}

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
}

/// Checks everything about the servers before anything starts, and returns every topology as
/// loaded: the backend, every topology (loaded and planned as it will be brought up),
/// `--mongod-arg`, the binaries (making `--standin`'s links), CPU sets, ports, and what the
/// backend needs (a Docker engine with the image, or an existing cluster that accepts the
/// credentials).
pub(crate) async fn servers(s: &Servers<'_>) -> anyhow::Result<Vec<TopologySpec>> {
    let label = s.label;
    let kind = s.backend;
    let specs = load_specs(s)?;
    if let Some(cmd) = s.scenarios {
        scenarios(cmd, &specs)?;
    }
    let mut names = BTreeSet::new();
    for (name, spec) in &specs {
        if !names.insert(spec.name.as_str()) {
            return Err(bad_input(format!(
                "{label} {name}: another entry is also the topology named {:?}",
                spec.name
            )));
        }
    }
    crate::experiment::flags::link_if_standin(kind, s.bin_dir)?;

    if kind == BackendKind::Process && !s.binaries_linked_later {
        // Once, not once per topology.
        let sharded = specs.iter().any(|(_, spec)| spec.kind == Kind::Sharded);
        for program in ["mongod", "mongos"] {
            if program == "mongos" && !sharded {
                continue;
            }
            crate::topology::find_program(program, s.bin_dir)
                .map_err(crate::error::as_bad_input)?;
        }
    }

    let mut plans = Vec::new();
    for (name, spec) in &specs {
        check_cpusets(name, spec, kind)?;
        if kind == BackendKind::Process && s.binaries_linked_later {
            continue;
        }
        let mut opts = PlanOptions::new(spec, kind);
        opts.bin_dir = s.bin_dir.map(Path::to_path_buf);
        let plan = Plan::new(spec, &opts).map_err(|e| bad_input(format!("{label} {name}: {e}")))?;
        plans.push((*name, spec, plan));
    }
    // After the plans: a plan refuses clients that could not reach the cluster (N1) before any
    // of their engines is asked.
    for (name, spec) in &specs {
        client_engines_ready(&format!("{label} {name}"), spec, s.dry_run, s.pulls).await?;
    }

    match kind {
        BackendKind::Docker => docker_ready(&specs, s.image.is_some(), s.pulls, s.dry_run).await?,
        BackendKind::Existing => {
            for (name, _, plan) in &plans {
                if let Some(uri) = &plan.uri {
                    cluster_answers(&format!("{label} {name}"), uri).await?;
                }
            }
        }
        BackendKind::Process => {}
    }
    // Last: a port taken now is the most likely to be free again a moment later.
    for (name, _, plan) in &plans {
        ports_free(&format!("{label} {name}"), plan)?;
    }
    Ok(specs.into_iter().map(|(_, spec)| spec).collect())
}

/// The flags about the servers (`--mongod-arg`, `--bin-dir`, `--image`, `--base-port`), then
/// every topology loaded as it will be brought up, none listed twice.
fn load_specs<'a>(s: &Servers<'a>) -> anyhow::Result<Vec<(&'a str, TopologySpec)>> {
    let label = s.label;
    let mut seen = BTreeSet::new();
    for t in s.topologies {
        if !seen.insert(t.as_str()) {
            return Err(bad_input(format!(
                "{label}: {t} is listed twice (its rows would be measured twice)"
            )));
        }
    }
    crate::topology::check_managed_args(s.extra_mongod_args)
        .map_err(|m| bad_input(format!("--mongod-arg: {m}")))?;
    if let Some(dir) = s.bin_dir
        && !dir.is_dir()
        && !s.binaries_linked_later
        && crate::experiment::flags::standin_dir(s.backend)
            .ok()
            .as_deref()
            != Some(dir)
    {
        return Err(bad_input(format!(
            "--bin-dir {}: no such directory",
            dir.display()
        )));
    }
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
        specs.push((name.as_str(), spec));
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

/// True for the local Docker engine (no endpoint, or a unix socket).
fn local_engine(endpoint: Option<&str>) -> bool {
    endpoint.is_none_or(|e| e.starts_with("unix://"))
}

fn is_local_address(address: &str) -> bool {
    address == "localhost"
        || address
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The CPUs this process may run on (its affinity mask), which is what `sched_setaffinity` and
/// Docker's `cpuset_cpus` accept here. `None` when the kernel does not say.
pub(crate) fn cpus_here() -> Option<BTreeSet<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most the size we pass into the set we own.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return None;
    }
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET reads the set initialised above, for indices below its capacity.
    Some(
        (0..max)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect(),
    )
}

/// Renders a CPU set as ranges (`0-3,6`) for messages.
fn cpu_ranges(cpus: &BTreeSet<usize>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut it = cpus.iter().copied().peekable();
    while let Some(start) = it.next() {
        let mut end = start;
        while it.peek() == Some(&(end + 1)) {
            end += 1;
            it.next();
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

/// Refuses CPU sets naming CPUs this machine does not offer, for members that run here (the
/// kernel would refuse them only when the member starts).
pub(crate) fn check_cpusets(
    name: &str,
    spec: &TopologySpec,
    kind: BackendKind,
) -> anyhow::Result<()> {
    if kind == BackendKind::Existing {
        return Ok(());
    }
    let Some(here) = cpus_here() else {
        return Ok(());
    };
    let runs_here = |i: usize| {
        spec.hosts
            .get(i)
            .is_some_and(|h| is_local_address(&h.address) && local_engine(h.docker.as_deref()))
    };
    let mut sets: Vec<(String, &str)> = Vec::new();
    for (i, h) in spec.hosts.iter().enumerate() {
        if runs_here(i) {
            for c in &h.shard_cpusets {
                sets.push((format!("hosts[{i}].shard_cpusets"), c));
            }
        }
    }
    if runs_here(0) {
        if let Some(c) = &spec.config_servers.cpuset {
            sets.push(("config_servers.cpuset".into(), c));
        }
        if let Some(c) = &spec.mongos.cpuset {
            sets.push(("mongos.cpuset".into(), c));
        }
    }
    if let Some(c) = &spec.client_cpuset {
        sets.push(("client_cpuset".into(), c));
    }
    for (key, set) in sets {
        let cpus = crate::topology::parse_cpuset(set)
            .map_err(|m| bad_input(format!("{name}: {key}: {m}")))?;
        if let Some(missing) = cpus.iter().find(|c| !here.contains(c)) {
            return Err(bad_input(format!(
                "{}: {key}: {set:?} names CPU {missing}, which this machine does not offer (CPUs here: {})",
                spec.source.display(),
                cpu_ranges(&here)
            )));
        }
    }
    Ok(())
}

/// Refuses a plan whose ports are taken on this machine, naming the leftover cluster (from the
/// state files) and the command that clears it when microshard itself holds the port. Plans for
/// other machines or an existing cluster have nothing to check here.
pub(crate) fn ports_free(culprit: &str, plan: &Plan) -> anyhow::Result<()> {
    let local = match plan.backend {
        BackendKind::Process => true,
        BackendKind::Docker => plan
            .docker_endpoints
            .iter()
            .all(|e| local_engine(e.as_deref())),
        BackendKind::Existing => false,
    };
    if !local {
        return Ok(());
    }
    for port in plan.local_ports() {
        if std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).is_ok() {
            continue;
        }
        let holder = crate::backend::state::list()
            .into_iter()
            .filter_map(|(_, r)| r.ok())
            .find(|c| {
                c.members.iter().any(|m| {
                    m.port == port
                        || m.address.rsplit_once(':').map(|(_, p)| p) == Some(&port.to_string())
                })
            });
        return Err(bad_input(match holder {
            Some(c) => format!(
                "{culprit}: port {port} is in use by cluster {} (run {}) left running; `microshard down {}` clears it",
                c.name, c.run_id, c.name
            ),
            None => format!(
                "{culprit}: port {port} {}; choose another --base-port",
                ports::why_taken(port)
            ),
        }));
    }
    Ok(())
}

/// The Docker engine(s) answer and have (or can pull) every image the topologies use.
async fn docker_ready(
    specs: &[(&str, TopologySpec)],
    image_flag: bool,
    pulls: Option<&dyn Events>,
    dry_run: bool,
) -> anyhow::Result<()> {
    let mut wanted: BTreeSet<(Option<String>, String)> = BTreeSet::new();
    for (_, spec) in specs {
        for h in &spec.hosts {
            wanted.insert((h.docker.clone(), spec.image.clone()));
        }
    }
    let mut engines = std::collections::BTreeMap::new();
    for (endpoint, image) in wanted {
        let docker = match engines.get(&endpoint) {
            Some(d) => d,
            None => {
                let d = crate::backend::docker::connect(endpoint.as_deref())
                    .await
                    .map_err(|e| bad_input(format!("--backend docker: {e}")))?;
                engines.entry(endpoint.clone()).or_insert(d)
            }
        };
        if dry_run {
            would_pull(
                docker,
                endpoint.as_deref(),
                &image,
                pulls.unwrap_or(&Discard),
            )
            .await;
            continue;
        }
        let events = pulls.unwrap_or(&Discard);
        crate::backend::docker::ensure_image(docker, endpoint.as_deref(), &image, events)
            .await
            .map_err(|e| match image_flag {
                // The error names the image; say which flag chose it.
                true => bad_input(format!("--image: {e}")),
                false => crate::error::as_bad_input(e),
            })?;
    }
    Ok(())
}

/// Every client engine a topology names (`clients`) answers and has the client image (pulled
/// when a registry has it), so no cell starts clients that cannot run.
pub(crate) async fn client_engines_ready(
    culprit: &str,
    spec: &TopologySpec,
    dry_run: bool,
    notes: Option<&dyn Events>,
) -> anyhow::Result<()> {
    for (i, c) in spec.clients.iter().enumerate() {
        let key = format!("{culprit}: clients[{i}].docker = {:?}", c.docker);
        let docker = crate::backend::docker::connect(Some(&c.docker))
            .await
            .map_err(|e| bad_input(format!("{key}: {e}")))?;
        if dry_run {
            would_pull(
                &docker,
                Some(&c.docker),
                &spec.client_image,
                notes.unwrap_or(&Discard),
            )
            .await;
            continue;
        }
        crate::backend::docker::ensure_image(
            &docker,
            Some(&c.docker),
            &spec.client_image,
            &Discard,
        )
            .await
            .map_err(|e| {
                bad_input(format!(
                    "{key}: client_image: {e}; build it on that engine with `DOCKER_HOST={} microshard standin image --tag {}`",
                    c.docker, spec.client_image
                ))
            })?;
    }
    Ok(())
}

/// A dry run's note for an image the engine lacks: the real run pulls it (and refuses when no
/// registry has it).
async fn would_pull(
    docker: &bollard::Docker,
    endpoint: Option<&str>,
    image: &str,
    events: &dyn Events,
) {
    if !crate::backend::docker::image_present(docker, image).await {
        events.event(Event::Note(format!(
            "microshard: note: image {image} is not on {}; the run would pull it",
            crate::backend::docker::endpoint_label(endpoint)
        )));
    }
}

/// An existing cluster (or `--uri` server) answers and accepts the credentials: a `ping` over
/// a connection the driver has authenticated, within a few seconds.
pub(crate) async fn cluster_answers(culprit: &str, uri: &str) -> anyhow::Result<()> {
    let shown = crate::redact::redact_uri(uri);
    let refuse = |why: String| bad_input(format!("{culprit}: {shown}: {why}"));
    let mut opts = mongodb::options::ClientOptions::parse(uri)
        .await
        .map_err(|e| refuse(short(&e)))?;
    opts.server_selection_timeout = Some(Duration::from_secs(5));
    opts.connect_timeout = Some(Duration::from_secs(5));
    opts.app_name = Some("microshard-preflight".into());
    let client = mongodb::Client::with_options(opts).map_err(|e| refuse(short(&e)))?;
    let admin = client.database("admin");
    let ping = admin.run_command(mongodb::bson::doc! {"ping": 1});
    let outcome = tokio::time::timeout(Duration::from_secs(15), ping).await;
    client.shutdown().await;
    match outcome {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(refuse(short(&e))),
        Err(_) => Err(refuse("no answer within 15 s".into())),
    }
}

/// One short line for a driver error: the refusal itself for authentication, the first
/// server's error for an unreachable cluster (`db::errors::describe`).
fn short(e: &mongodb::error::Error) -> String {
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Authentication { message, .. } => {
            format!("the server refuses the credentials ({message})")
        }
        _ => crate::db::errors::describe(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_to_be_created_is_probed_in_its_existing_ancestor() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/c");
        writable_dir("--out", &deep).unwrap();
        assert!(
            !tmp.path().join("a").exists(),
            "the check must create nothing"
        );
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_file_in_the_way_is_refused_naming_the_flag_and_path() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let e = writable_dir("--out", &file.join("results")).unwrap_err();
        assert!(crate::exit::is_bad_input(&e));
        let msg = format!("{e:#}");
        assert!(
            msg.contains("--out") && msg.contains("not a directory"),
            "{msg}"
        );

        let e = writable_file("--json", tmp.path()).unwrap_err();
        assert!(format!("{e:#}").contains("is a directory"), "{e:#}");
        let e = writable_file("--json", &file.join("x.json")).unwrap_err();
        assert!(format!("{e:#}").contains("--json"), "{e:#}");
        writable_file("--json", &file).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "x",
            "an existing file is kept"
        );
        writable_file("--json", &tmp.path().join("new.json")).unwrap();
        assert!(!tmp.path().join("new.json").exists());
    }

    #[test]
    fn a_read_only_file_system_is_refused() {
        // /proc refuses new files even for root.
        let e = writable_file("--json", Path::new("/proc/microshard-result.json")).unwrap_err();
        assert!(format!("{e:#}").contains("/proc"), "{e:#}");
        assert!(writable_dir("--out", Path::new("/proc/microshard-results")).is_err());
    }

    #[test]
    fn cpu_ranges_read_like_cpusets() {
        let set: BTreeSet<usize> = [0, 1, 2, 3, 6, 8, 9].into_iter().collect();
        assert_eq!(cpu_ranges(&set), "0-3,6,8-9");
        let here = cpus_here().unwrap_or_default();
        assert!(!here.is_empty());
    }

    #[test]
    fn cpusets_beyond_this_machine_are_refused_naming_the_key() {
        let Some(here) = cpus_here() else { return };
        let beyond = here.iter().max().copied().unwrap_or(0) + 1;
        let text = format!(
            "name = \"cs\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"localhost\"\nshard_cpusets = [\"{beyond}\"]\n"
        );
        let spec = TopologySpec::parse(&text, Path::new("cs.toml")).unwrap();
        let e = check_cpusets("cs", &spec, BackendKind::Process).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains("cs.toml") && msg.contains("hosts[0].shard_cpusets"),
            "{msg}"
        );
        assert!(check_cpusets("cs", &spec, BackendKind::Existing).is_ok());
        let fine = text.replace(&format!("\"{beyond}\""), &format!("\"{}\"", beyond - 1));
        let spec = TopologySpec::parse(&fine, Path::new("cs.toml")).unwrap();
        check_cpusets("cs", &spec, BackendKind::Process).unwrap();
    }
}
