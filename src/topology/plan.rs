//! The plan: every member of a topology, fully resolved, before anything starts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::TopologyError;
use super::spec::{Kind, MIN_CACHE_GB, TopologySpec, total_memory_gb};

mod members;
use members::MemberCtx;
pub(crate) use members::Seat;

/// Which backend executes a plan: recorded in the plan, the state file and the results. What
/// each backend does is its module's in `backend/` (`backend::Backend`), chosen by `backend::of`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// Local `mongod`/`mongos` processes (the default `--backend`).
    #[default]
    Process,
    /// Containers through the Docker Engine API.
    Docker,
    /// A cluster that already runs (the topology's `uri`).
    Existing,
    /// Pods on a Kubernetes cluster: its manifests (`up --emit-manifests`), or a namespace per
    /// run brought up live (the `kubernetes` feature).
    Kubernetes,
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use clap::ValueEnum;
        let name = self.to_possible_value().map(|v| v.get_name().to_string());
        f.write_str(&name.unwrap_or_default())
    }
}

/// What a member does in the cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemberRole {
    /// The single-node baseline.
    #[default]
    Standalone,
    /// A config-server replica-set member.
    Config,
    /// A shard replica-set member.
    Shard,
    /// A router.
    Mongos,
}

impl MemberRole {
    /// The program a member of this role runs: `mongos` for routers, `mongod` for the rest.
    pub(crate) fn program(self) -> &'static str {
        match self {
            MemberRole::Mongos => "mongos",
            _ => "mongod",
        }
    }
}

impl std::fmt::Display for MemberRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MemberRole::Standalone => "standalone",
            MemberRole::Config => "config",
            MemberRole::Shard => "shard",
            MemberRole::Mongos => "mongos",
        })
    }
}

/// Inputs to [`Plan::new`] that do not come from the topology file.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// The backend that will execute the plan.
    pub backend: BackendKind,
    /// Unique id of this run; names containers, labels and the state file.
    pub run_id: String,
    /// Directory for member directories, logs and sockets (process backend).
    pub run_dir: PathBuf,
    /// Where `mongod`/`mongos` live (process backend); `None` = search PATH.
    pub bin_dir: Option<PathBuf>,
    /// `bin_dir` is `--standin`'s, whose links are made once every check has passed: the
    /// programs are taken as there, not looked for.
    pub links_pending: bool,
    /// Override of this machine's RAM in GB (tests); `None` = read /proc/meminfo.
    pub total_memory_gb: Option<f64>,
}

impl PlanOptions {
    /// Options with a fresh run id for `spec` and the run directory under the system temp dir.
    pub fn new(spec: &TopologySpec, backend: BackendKind) -> PlanOptions {
        let run_id = new_run_id(&spec.name);
        PlanOptions {
            backend,
            run_dir: std::env::temp_dir().join("microshard").join(&run_id),
            run_id,
            bin_dir: None,
            links_pending: false,
            total_memory_gb: None,
        }
    }
}

/// A run id: the topology name, a UTC timestamp and a few random hex digits.
pub fn new_run_id(name: &str) -> String {
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
    let salt: u16 = rand::random();
    format!("{name}-{stamp}-{salt:04x}")
}

/// One process or container of the cluster, fully resolved.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Member {
    /// Short unique name (`mongos0`, `sh2`, `cfg0`, `single`).
    pub name: String,
    /// What it does.
    pub role: MemberRole,
    /// Index into the topology's hosts.
    pub host_index: usize,
    /// Replica set it belongs to (`sh2`, `cfg`, `rs0`), if any.
    pub replica_set: Option<String>,
    /// Port it listens on (inside its container for Docker).
    pub port: u16,
    /// `host:port` as the other members see it (replica-set configs, `addShard`, `--configdb`).
    pub member_host: String,
    /// `host:port` a client on this machine uses, when reachable from here without Docker's help.
    pub published: Option<String>,
    /// Member directory (process backend): holds `db/`, the log and the child's stdout.
    pub dir: Option<PathBuf>,
    /// Database path (process backend: a host path; Docker: inside the container).
    pub dbpath: Option<PathBuf>,
    /// Log file (process backend only; containers log to stdout).
    pub log_path: Option<PathBuf>,
    /// Container name (Docker backend).
    pub container: Option<String>,
    /// Docker endpoint of the host (Docker backend; `None` = local default).
    pub docker_endpoint: Option<String>,
    /// The exact command line; argv[0] is the program (a path for the process backend).
    pub argv: Vec<String>,
    /// WiredTiger cache (GB), mongod only.
    pub cache_gb: Option<f64>,
    /// CPU set the member is pinned to.
    pub cpuset: Option<String>,
    /// Container memory limit (GB).
    pub memory_limit_gb: Option<f64>,
    /// The Kubernetes node it is placed on (`kubernetes.io/hostname`); `None`: any node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// Every member and every name, computed before anything starts; the backends execute only this.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Plan {
    /// Topology name.
    pub name: String,
    /// The topology file.
    pub source: PathBuf,
    /// Standalone or sharded.
    pub kind: Kind,
    /// The backend that executes it.
    pub backend: BackendKind,
    /// Unique id of the run (labels, container names, state file).
    pub run_id: String,
    /// Run directory (process backend: member directories; always: sockets).
    pub run_dir: PathBuf,
    /// Every member, in port order (mongos, shards, config servers).
    pub members: Vec<Member>,
    /// Docker image (Docker backend).
    pub image: String,
    /// Docker network per host (Docker backend).
    pub network: String,
    /// Members on several machines (or on a remote Docker engine): they reach each other, and
    /// microshard reaches them, at host address and published port.
    #[serde(default)]
    pub multi_host: bool,
    /// Config replica-set name.
    pub config_set: String,
    /// Whether the balancer stays on during measured runs.
    pub keep_balancer: bool,
    /// Whether bring-up shards `ycsb.usertable` (`false`: left unsharded behind mongos, the
    /// topology's `shard_collection = false`); plans written before it was recorded sharded it.
    #[serde(default = "sharded_by_default")]
    pub shard_collection: bool,
    /// Chunks per shard to request on servers that honour `numInitialChunks`.
    pub initial_chunks_per_shard: Option<u32>,
    /// CPU set for the benchmark client.
    pub client_cpuset: Option<String>,
    /// Client containers per Docker engine (`clients` in the topology file); empty = the
    /// clients run on this machine.
    #[serde(default)]
    pub clients: Vec<super::spec::ClientHostSpec>,
    /// Client pods (`clients = [{ kubernetes = ... }]`): the phase's clients as one Indexed Job.
    #[serde(default)]
    pub client_pods: Option<super::spec::ClientPodsSpec>,
    /// Image of the client containers.
    #[serde(default)]
    pub client_image: String,
    /// Existing backend: the connection string (not redacted: needed to connect; never print it raw).
    pub uri: Option<String>,
    /// Things the user should know (memory limits ignored by the process backend, ...).
    pub notes: Vec<String>,
    /// Docker hosts (endpoint per host index), for teardown.
    pub docker_endpoints: Vec<Option<String>>,
    /// Per host: the cache budget, where it came from, the container limit and what the members'
    /// caches add up to — stored with results so a figure can be read against its memory.
    #[serde(default)]
    pub memory: Vec<HostMemory>,
}

/// How memory was shared out on one host: recorded in the plan (and so in the state file and in
/// results) because a cache figure means little without the limit it had to fit in.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct HostMemory {
    /// Index into the topology's hosts.
    pub host_index: usize,
    /// Memory (GB) the mongod caches on this host share.
    pub budget_gb: f64,
    /// Where the budget came from: `memory_budget_gb`, `host RAM` or `unknown RAM`.
    pub budget_source: String,
    /// Container memory limit (GB) of each member (Docker with `memory_limit_gb`).
    pub memory_limit_gb: Option<f64>,
    /// Largest cache (GB) a member may have inside that limit: 50 % of (limit − 1 GB), at least 0.25.
    pub cache_cap_gb: Option<f64>,
    /// What the caches of the mongods on this host add up to (GB).
    pub total_cache_gb: f64,
}

/// The default of [`Plan::shard_collection`] in plans that do not record it: they sharded it.
fn sharded_by_default() -> bool {
    true
}

/// Formats a cache size the way it is passed on the command line.
pub(crate) fn format_gb(gb: f64) -> String {
    let s = format!("{gb:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

pub(crate) fn floor2(x: f64) -> f64 {
    (x * 100.0).floor() / 100.0
}

/// Whether a host address names this machine.
pub(crate) fn is_local(address: &str) -> bool {
    address == "localhost" || address.starts_with("127.") || address == "::1"
}

/// DNS allows at most 63 octets per label (RFC 1035 §2.3.4) and glibc's resolver refuses longer
/// ones before it asks, so container names used as host names must fit.
pub(crate) const MAX_DNS_LABEL: usize = 63;

/// The container name of `member` in run `run_id`: `{run_id}-{member}` when that fits in one DNS
/// label, else the topology-name part of the run id is cut and replaced by a short hash of it,
/// which keeps the name unique per run and readable (`<name prefix>-<hash>-<stamp>-<salt>-sh0`).
pub(crate) fn container_name(run_id: &str, member: &str) -> String {
    let full = format!("{run_id}-{member}");
    if full.len() <= MAX_DNS_LABEL {
        return full;
    }
    // run_id = name-YYYYMMDD-HHMMSS-xxxx: keep the stamp and salt, shorten the name.
    let tail_len = "-YYYYMMDD-HHMMSS-xxxx".len();
    let (name, tail) =
        if run_id.len() > tail_len && run_id.is_char_boundary(run_id.len() - tail_len) {
            run_id.split_at(run_id.len() - tail_len)
        } else {
            (run_id, "")
        };
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let fixed = format!("-{hash:08x}{tail}-{member}");
    let mut keep = MAX_DNS_LABEL.saturating_sub(fixed.len()).min(name.len());
    while !name.is_char_boundary(keep) {
        keep -= 1;
    }
    let prefix = name[..keep].trim_end_matches(['-', '_']);
    format!("{prefix}{fixed}")
}

/// A host name (or `host:port`) whose labels all fit DNS: the error names the longest label.
fn check_dns_name(host_port: &str, what: &str) -> Result<(), TopologyError> {
    let host = host_port.rsplit_once(':').map_or(host_port, |(h, _)| h);
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    match host
        .split('.')
        .find(|l| l.len() > MAX_DNS_LABEL || l.is_empty())
    {
        Some("") => Err(TopologyError::Plan(format!(
            "{what}: host name {host:?} has an empty label"
        ))),
        Some(l) => Err(TopologyError::Plan(format!(
            "{what}: host name label {l:?} is {} characters; DNS allows {MAX_DNS_LABEL} (shorten the topology name or the host address)",
            l.len()
        ))),
        None => Ok(()),
    }
}

/// Longest unix socket path the kernel accepts (`sun_path` is 108 bytes with its final NUL).
pub(crate) const MAX_UNIX_SOCKET_PATH: usize = 107;

/// The largest WiredTiger cache (GB) a member may have inside a container limited to `limit_gb`:
/// mongod's own default rule applied to the container (50 % of (limit − 1 GB), at least 0.25 GB),
/// because the cache is only part of what mongod uses (connections, allocator, index builds) and
/// a container over its limit is killed (docs/mongodb-versions.md, "Memory").
pub(crate) fn cache_cap_for_limit(limit_gb: f64) -> f64 {
    floor2(0.5 * (limit_gb - 1.0)).max(MIN_CACHE_GB)
}

/// Where a plan's members run, which the backend that executes the plan decides (each
/// backend's own, in `backend/`): a member's addresses, its directories or container, and the
/// start of its command line.
pub(crate) trait Placement {
    /// Fills in where member `m` (its seat already copied in: name, role, host, set, port,
    /// cache, CPUs) listens and is reached, its directories or container, and its command line
    /// up to the server's own flags.
    fn place(&self, m: &mut Member, seat: &Seat);
}

/// What a backend settled about a topology before its members are placed.
pub(crate) struct Layout<'a> {
    /// Members on several machines: they reach each other, and microshard reaches them, at host
    /// address and port.
    pub(crate) multi_host: bool,
    /// The container memory limit (GB) each member's cache must fit in; `None`: no limit.
    pub(crate) memory_limit_gb: Option<f64>,
    /// What the backend had to say so far (a setting it ignores, an image near its end of life).
    pub(crate) notes: Vec<String>,
    /// Whether this machine's RAM sizes the caches of hosts without `memory_budget_gb` (not
    /// for members on machines whose RAM is unknown here: then a 1 GB budget, said in a note).
    pub(crate) machine_ram: bool,
    /// How each member is placed.
    pub(crate) placement: &'a dyn Placement,
}

impl Plan {
    /// Every member of `spec` as `layout` places it: roles, ports, names, caches, command lines
    /// (the backends call it: `backend::plan`).
    pub(crate) fn new(
        spec: &TopologySpec,
        opts: &PlanOptions,
        layout: Layout<'_>,
    ) -> Result<Plan, TopologyError> {
        let mut plan = Plan::empty(spec, opts);
        plan.multi_host = layout.multi_host;
        plan.notes = layout.notes;
        let notes = &mut plan.notes;
        let ram = (opts.total_memory_gb.or_else(total_memory_gb)).filter(|_| layout.machine_ram);
        let sizing = Sizing::of(spec, ram, layout.memory_limit_gb, notes)?;
        notes.extend(failover_notes(spec));
        if spec.hosts.iter().any(|h| h.memory_budget_gb.is_none()) {
            if !layout.machine_ram {
                notes.push("hosts without memory_budget_gb have a 1 GB cache budget: their machines' RAM is unknown here".into());
            } else if layout.multi_host {
                notes.push(
                    "hosts without memory_budget_gb are sized from this machine's RAM".into(),
                );
            }
        }
        let ctx = MemberCtx {
            spec,
            placement: layout.placement,
        };
        plan.members = match spec.kind {
            Kind::Standalone => vec![ctx.standalone(&sizing)],
            Kind::Sharded => ctx.sharded(&sizing, &plan.config_set),
        };
        plan.memory = sizing.host_memory(spec, &plan.members, &mut plan.notes);
        for m in &plan.members {
            check_dns_name(
                &m.member_host,
                &format!("{} of topology {}", m.name, spec.name),
            )?;
            if let Some(c) = &m.container {
                check_dns_name(c, &format!("container of {}", m.name))?;
            }
        }
        Ok(plan)
    }

    /// The plan of a cluster that already runs at `uri`: no members of microshard's own.
    pub(crate) fn attached(spec: &TopologySpec, opts: &PlanOptions, uri: &str) -> Plan {
        let mut plan = Plan::empty(spec, opts);
        plan.uri = Some(uri.to_string());
        plan
    }

    /// The plan's settings from `spec` and `opts`, no member placed yet.
    fn empty(spec: &TopologySpec, opts: &PlanOptions) -> Plan {
        Plan {
            name: spec.name.clone(),
            source: spec.source.clone(),
            kind: spec.kind,
            backend: opts.backend,
            run_id: opts.run_id.clone(),
            run_dir: opts.run_dir.clone(),
            members: Vec::new(),
            image: spec.image.clone(),
            network: format!("{}-net", opts.run_id),
            multi_host: false,
            config_set: "cfg".into(),
            keep_balancer: spec.keep_balancer,
            shard_collection: spec.shard_collection,
            initial_chunks_per_shard: spec.initial_chunks_per_shard,
            client_cpuset: spec.client_cpuset.clone(),
            clients: spec.clients.clone(),
            client_pods: spec.client_pods.clone(),
            client_image: spec.client_image.clone(),
            uri: None,
            notes: Vec::new(),
            docker_endpoints: spec.hosts.iter().map(|h| h.docker.clone()).collect(),
            memory: Vec::new(),
        }
    }

    /// The member clients connect to: the first mongos, or the standalone.
    pub(crate) fn entry(&self) -> Option<&Member> {
        self.members
            .iter()
            .find(|m| matches!(m.role, MemberRole::Mongos | MemberRole::Standalone))
    }

    /// The replica set of the member named `name`, if it is in one.
    pub(crate) fn set_of(&self, name: &str) -> Option<&String> {
        self.members
            .iter()
            .find(|m| m.name == name)?
            .replica_set
            .as_ref()
    }

    /// The `host:port` microshard itself dials for `m` (admin commands, probes, metrics, the
    /// entry URI): for a container of a single-host plan the published port on this machine's
    /// loopback (a `0.0.0.0` publish is dialled at 127.0.0.1), else its member host (the host
    /// address across hosts, the address of a local process).
    pub(crate) fn dial_address(&self, m: &Member) -> String {
        if m.container.is_none() || self.multi_host {
            return m.member_host.clone();
        }
        match m.published.as_deref().and_then(|p| p.rsplit_once(':')) {
            Some(("0.0.0.0", port)) => format!("127.0.0.1:{port}"),
            Some(("::" | "[::]", port)) => format!("[::1]:{port}"),
            Some((ip, port)) if ip.contains(':') && !ip.starts_with('[') => {
                format!("[{ip}]:{port}")
            }
            Some((ip, port)) => format!("{ip}:{port}"),
            None => m.member_host.clone(),
        }
    }

    /// Whether the members run from [`Plan::image`] (containers), which is then part of what the
    /// plan says.
    pub(crate) fn runs_image(&self) -> bool {
        !self.image.is_empty() && self.members.iter().any(|m| m.container.is_some())
    }

    /// Members with role `role`, in plan order.
    pub fn members_with(&self, role: MemberRole) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(move |m| m.role == role)
    }

    /// The `addShard` string of a shard replica set: `sh0/host:port[,host:port...]`, every member listed.
    pub(crate) fn shard_connection_string(members: &[&Member]) -> String {
        let set = members
            .first()
            .map(|m| m.replica_set.as_deref().unwrap_or(&m.name))
            .unwrap_or_default();
        let hosts: Vec<&str> = members.iter().map(|m| m.member_host.as_str()).collect();
        format!("{set}/{}", hosts.join(","))
    }

    /// Shard replica sets in plan order: `(set name, its members)`.
    pub(crate) fn shard_sets(&self) -> Vec<(String, Vec<&Member>)> {
        let mut out: Vec<(String, Vec<&Member>)> = Vec::new();
        for m in self.members_with(MemberRole::Shard) {
            let set = m.replica_set.clone().unwrap_or_else(|| m.name.clone());
            match out.iter_mut().find(|(s, _)| *s == set) {
                Some((_, v)) => v.push(m),
                None => out.push((set, vec![m])),
            }
        }
        out
    }

    /// A plan's members in words: `1 mongod` or `2 shards × 1 member, 1 config server, 1 mongos`,
    /// with the WiredTiger cache of each data-bearing mongod when the plan set one — not for the
    /// stand-in, which keeps its data in memory and has no cache to size (its capacity model is
    /// said on its own line).
    pub(crate) fn size_in_words(&self, standin: bool) -> String {
        let count = |role: MemberRole| self.members_with(role).count();
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        let standalone = count(MemberRole::Standalone);
        if standalone > 0 {
            // The seed's baseline was a plain mongod; microshard's runs as a 1-member replica set
            // unless the topology says `baseline = "standalone"`: the words say which (#20).
            let as_set =
                (self.members_with(MemberRole::Standalone)).any(|m| m.replica_set.is_some());
            parts.push(format!(
                "{}{}",
                plural(standalone, "mongod", "mongods"),
                match as_set {
                    true => " (a 1-member replica set)",
                    false => " (plain, no replica set)",
                }
            ));
        }
        let shard_members = count(MemberRole::Shard);
        if shard_members > 0 {
            let shards = self.shard_sets().len().max(1);
            parts.push(format!(
                "{} × {}",
                plural(shards, "shard", "shards"),
                plural(shard_members / shards, "member", "members")
            ));
        }
        let config = count(MemberRole::Config);
        if config > 0 {
            parts.push(plural(config, "config server", "config servers"));
        }
        let mongos = count(MemberRole::Mongos);
        if mongos > 0 {
            parts.push(format!("{mongos} mongos"));
        }
        let caches: Vec<f64> = self
            .members
            .iter()
            .filter(|m| matches!(m.role, MemberRole::Standalone | MemberRole::Shard))
            .filter_map(|m| m.cache_gb)
            .collect();
        if let Some(first) = caches.first().filter(|_| !standin)
            && caches.iter().all(|c| (c - first).abs() < 1e-9)
        {
            parts.push(format!("cache {} GB each", format_gb(*first)));
        }
        parts.join(", ")
    }

    /// The table and command lines `up --dry-run` prints.
    pub fn render(&self) -> String {
        use tabled::settings::Style;
        let rows: Vec<PlanRow> = self.members.iter().map(PlanRow::of).collect();
        let mut out = String::new();
        self.render_heading(&mut out);
        if !rows.is_empty() {
            let mut table = tabled::Table::new(rows);
            table.with(Style::psql());
            let _ = writeln!(out, "{table}");
            let _ = writeln!(out, "command lines (start order):");
            for m in self.start_order() {
                let _ = writeln!(out, "  {}", shell_join(&m.argv));
            }
        }
        if let Some(c) = &self.client_cpuset {
            let _ = writeln!(out, "client CPU set: {c}");
        }
        self.render_memory(&mut out);
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        out
    }

    /// The plan's first lines: the topology, its backend and run, the existing cluster's URI
    /// (redacted) or the Docker image and network.
    fn render_heading(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "topology {} ({}), backend {}, run {}",
            self.name,
            match self.kind {
                Kind::Standalone => "standalone",
                Kind::Sharded => "sharded",
            },
            self.backend,
            self.run_id
        );
        if let Some(uri) = &self.uri {
            let _ = writeln!(out, "existing cluster: {}", crate::redact::redact_uri(uri));
        }
        if self.runs_image() {
            let _ = writeln!(out, "image {}, network {}", self.image, self.network);
        }
    }

    /// One line per host: the caches it holds against its memory budget, and the container
    /// limit when there is one.
    fn render_memory(&self, out: &mut String) {
        for h in &self.memory {
            let limit = match (h.memory_limit_gb, h.cache_cap_gb) {
                (Some(l), Some(c)) => format!(
                    ", container limit {} GB (cache at most {} GB)",
                    format_gb(l),
                    format_gb(c)
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "memory hosts[{}]: caches {} GB of a {} GB budget ({}){limit}",
                h.host_index,
                format_gb(h.total_cache_gb),
                format_gb(h.budget_gb),
                h.budget_source
            );
        }
    }

    /// Members in the order they start: config servers, shards (or the standalone), then routers.
    pub(crate) fn start_order(&self) -> Vec<&Member> {
        let mut v: Vec<&Member> = self.members_with(MemberRole::Config).collect();
        v.extend(self.members_with(MemberRole::Shard));
        v.extend(self.members_with(MemberRole::Standalone));
        v.extend(self.members_with(MemberRole::Mongos));
        v
    }
}

/// Quotes argv for display so it can be pasted into a shell.
pub(crate) fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Finds `name` in `bin_dir` (when given) or on PATH; the error says where it looked.
pub(crate) fn find_program(name: &str, bin_dir: Option<&Path>) -> Result<PathBuf, TopologyError> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if let Some(dir) = bin_dir {
        let p = dir.join(name);
        return if executable(&p) {
            Ok(p)
        } else {
            Err(TopologyError::Plan(format!(
                "{name} not found in --bin-dir {} (run `microshard doctor`)",
                dir.display()
            )))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(p) = std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| executable(p))
    {
        return Ok(p);
    }
    Err(TopologyError::Plan(format!(
        "no {name} on PATH: add --standin to use microshard's stand-in server (its figures are not MongoDB's), or pass --bin-dir DIR, or use --backend docker --image microshard-standin:latest (after `microshard standin image`; run `microshard doctor`)"
    )))
}

/// Expands `{name}`, `{port}` and `{dir}` in an extra argument, so per-member files (a key file,
/// a diagnostic log) can be named in `mongod_args`/`mongos_args`. `{dir}` is the member directory
/// for processes and `/data/db` inside a container.
fn expand(arg: &str, m: &Member) -> String {
    let dir = match (&m.container, &m.dir) {
        (Some(_), _) => "/data/db".to_string(),
        (None, Some(d)) => d.display().to_string(),
        (None, None) => String::new(),
    };
    arg.replace("{name}", &m.name)
        .replace("{port}", &m.port.to_string())
        .replace("{dir}", &dir)
}

/// How the caches are sized: each host's budget (its `memory_budget_gb`, else half this
/// machine's RAM less 1 GB), and inside a container the cap its memory limit sets.
struct Sizing {
    default_budget: Option<f64>,
    /// The container memory limit (`memory_limit_gb`, where members run in containers).
    limit: Option<f64>,
    /// The largest cache that leaves mongod room within `limit`.
    cap: Option<f64>,
}

impl Sizing {
    fn of(
        spec: &TopologySpec,
        ram: Option<f64>,
        limit: Option<f64>,
        notes: &mut Vec<String>,
    ) -> Result<Sizing, TopologyError> {
        let default_budget = ram.map(|r| (0.5 * (r - 1.0)).max(MIN_CACHE_GB));
        // Inside a container the cache must fit the container's limit, not the host's RAM.
        let cap = limit.map(cache_cap_for_limit);
        if let (Some(limit), Some(cap)) = (limit, cap) {
            let config = (spec.kind == Kind::Sharded).then_some(spec.config_servers.cache_gb);
            for (key, gb) in [
                ("cache_gb", spec.cache_gb),
                ("config_servers.cache_gb", config),
            ] {
                if let Some(gb) = gb
                    && gb > cap + 1e-9
                {
                    return Err(TopologyError::Plan(format!(
                        "{}: {key} = {gb} GB does not fit in memory_limit_gb = {limit}: at most {} GB of cache (50 % of the limit minus 1 GB, at least 0.25) leaves mongod room for connections and its allocator",
                        spec.source.display(),
                        format_gb(cap)
                    )));
                }
            }
            if 0.5 * (limit - 1.0) < MIN_CACHE_GB {
                notes.push(format!(
                    "warning: memory_limit_gb = {limit} leaves less than the 0.25 GB minimum cache; every mongod gets 0.25 GB and may be killed for exceeding its limit"
                ));
            }
        }
        Ok(Sizing {
            default_budget,
            limit,
            cap,
        })
    }

    /// `gb` within the container's cap.
    fn capped(&self, gb: f64) -> f64 {
        self.cap.map_or(gb, |c| gb.min(c))
    }

    /// A host's memory budget.
    fn budget(&self, host: &super::HostSpec) -> f64 {
        host.memory_budget_gb.or(self.default_budget).unwrap_or(1.0)
    }

    /// Each host's budget against the caches planned on it, with a warning where they do not fit.
    fn host_memory(
        &self,
        spec: &TopologySpec,
        members: &[Member],
        notes: &mut Vec<String>,
    ) -> Vec<HostMemory> {
        let mut memory = Vec::new();
        for (h, host) in spec.hosts.iter().enumerate() {
            let (budget_gb, budget_source) = match (host.memory_budget_gb, self.default_budget) {
                (Some(b), _) => (b, "memory_budget_gb"),
                (None, Some(b)) => (b, "host RAM"),
                (None, None) => (1.0, "unknown RAM"),
            };
            let total: f64 = members
                .iter()
                .filter(|m| m.host_index == h)
                .filter_map(|m| m.cache_gb)
                .sum();
            let total_cache_gb = (total * 100.0).round() / 100.0;
            if total_cache_gb > budget_gb + 1e-9 {
                notes.push(format!(
                    "warning: on hosts[{h}] the mongod caches add up to {} GB, over the {} GB budget ({budget_source}): every cache is at least 0.25 GB",
                    format_gb(total_cache_gb),
                    format_gb(budget_gb)
                ));
            }
            memory.push(HostMemory {
                host_index: h,
                budget_gb,
                budget_source: budget_source.to_string(),
                memory_limit_gb: self.limit,
                cache_cap_gb: self.cap,
                total_cache_gb,
            });
        }
        memory
    }
}

/// One member's row in the table `up --dry-run` prints (a dash for what it has not).
#[derive(tabled::Tabled)]
struct PlanRow {
    role: String,
    name: String,
    #[tabled(rename = "replica set")]
    replica_set: String,
    #[tabled(rename = "member host")]
    member_host: String,
    published: String,
    #[tabled(rename = "cache GB")]
    cache: String,
    cpus: String,
    #[tabled(rename = "dir / container")]
    place: String,
}

impl PlanRow {
    /// The row of member `m`.
    fn of(m: &Member) -> PlanRow {
        PlanRow {
            role: m.role.to_string(),
            name: m.name.clone(),
            replica_set: m.replica_set.clone().unwrap_or_else(|| "-".into()),
            member_host: m.member_host.clone(),
            published: m.published.clone().unwrap_or_else(|| "-".into()),
            cache: m.cache_gb.map(format_gb).unwrap_or_else(|| "-".into()),
            cpus: m.cpuset.clone().unwrap_or_else(|| "-".into()),
            place: m
                .container
                .clone()
                .or_else(|| m.dir.as_ref().map(|d| d.display().to_string()))
                .unwrap_or_else(|| "-".into()),
        }
    }
}

/// What shard replica sets of `shard_members` members mean for a failover, said at plan time:
/// two members cannot elect a primary when one fails (a majority of 2 is 2), and with `w=1`,
/// which experiments pin unless the scenario or URI sets `w`, a failover after a crash can roll
/// back writes the client was told succeeded, which later cells then read as NOT_FOUND
/// (`docs/mongodb-versions.md`, "Replica sets"); and the servers' CPU then holds the
/// secondaries' replication, which the 1-member baseline does not do.
fn failover_notes(spec: &TopologySpec) -> Vec<String> {
    let n = spec.shard_members;
    let mut notes = Vec::new();
    if spec.kind != Kind::Sharded || n < 2 {
        return notes;
    }
    if n == 2 {
        notes.push(
            "shard_members = 2: a shard cannot elect a new primary when one of its two members fails (a majority of 2 is 2), so no failover is possible; use 3 members for one"
                .into(),
        );
    }
    notes.push(format!(
        "shard_members = {n} with w=1 (pinned unless the scenario's mongodb.writeConcern or the URI sets w): a failover after a crash can roll back writes the client was told succeeded, and later cells read those keys as NOT_FOUND; w=majority rules it out"
    ));
    notes.push(format!(
        "shard_members = {n}: the servers' CPU per operation includes the secondaries' replication (applying every write again), which a 1-member single has none of"
    ));
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan the backend `o` names makes (placement is the backend's).
    fn plan_of(s: &TopologySpec, o: &PlanOptions) -> Result<Plan, TopologyError> {
        crate::backend::plan(s, o)
    }

    #[test]
    fn shard_sets_that_cannot_fail_over_or_may_roll_back_are_said_at_plan_time() {
        let notes = |members: u32| {
            let text = format!(
                "name = \"r\"\nkind = \"sharded\"\nshards_per_host = 1\nshard_members = {members}\n"
            );
            failover_notes(&spec(&text)).join("\n")
        };
        assert_eq!(notes(1), "");
        let two = notes(2);
        assert!(two.contains("no failover is possible"), "{two}");
        assert!(two.contains("roll back"), "{two}");
        let three = notes(3);
        assert!(!three.contains("no failover"), "{three}");
        assert!(three.starts_with("shard_members = 3 with w=1"), "{three}");
        assert!(
            three.contains("CPU per operation includes the secondaries' replication"),
            "{three}"
        );
    }

    fn spec(text: &str) -> TopologySpec {
        TopologySpec::parse(text, Path::new("t.toml")).unwrap()
    }

    fn opts(backend: BackendKind) -> PlanOptions {
        PlanOptions {
            links_pending: false,
            backend,
            run_id: "t-1".into(),
            run_dir: PathBuf::from("/tmp/ms/t-1"),
            bin_dir: Some(PathBuf::from("/bin")),
            total_memory_gb: Some(17.0),
        }
    }

    /// Process-backend options whose binaries directory holds executable `mongod` and `mongos`
    /// (kept alive by the returned directory).
    fn process_opts() -> (PlanOptions, tempfile::TempDir) {
        let bin = fake_bin();
        let mut o = opts(BackendKind::Process);
        o.bin_dir = Some(bin.path().to_path_buf());
        (o, bin)
    }

    /// Each member's name and port, in plan order.
    fn names(p: &Plan) -> Vec<(&str, u16)> {
        p.members
            .iter()
            .map(|m| (m.name.as_str(), m.port))
            .collect()
    }

    fn fake_bin() -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        for n in ["mongod", "mongos"] {
            let p = d.path().join(n);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        d
    }

    #[test]
    fn sharded_process_plan_ports_names_and_argv() {
        let (o, bin) = process_opts();
        let s = spec("name = \"m2\"\nkind = \"sharded\"\nshards_per_host = 2\nbase_port = 30000\n");
        let p = plan_of(&s, &o).unwrap();
        assert_eq!(
            names(&p),
            vec![
                ("mongos0", 30000),
                ("sh0", 30001),
                ("sh1", 30002),
                ("cfg0", 30003)
            ]
        );
        let sh1 = &p.members[2];
        assert_eq!(sh1.member_host, "localhost:30002");
        assert_eq!(Plan::shard_connection_string(&[sh1]), "sh1/localhost:30002");
        // Budget 0.5 × (17 − 1) = 8 GB; the config server takes 0.25, two shards share the rest.
        assert_eq!(sh1.cache_gb, Some(3.87));
        let argv = sh1.argv.join(" ");
        assert!(
            argv.starts_with(&format!(
                "{}/mongod --port 30002 --bind_ip 127.0.0.1",
                bin.path().display()
            )),
            "{argv}"
        );
        assert!(
            argv.contains("--shardsvr --replSet sh1 --wiredTigerCacheSizeGB 3.87"),
            "{argv}"
        );
        assert!(
            argv.contains("--unixSocketPrefix /tmp/ms/t-1/sockets"),
            "{argv}"
        );
        assert!(argv.contains("--dbpath /tmp/ms/t-1/sh1/db"), "{argv}");
        let cfg = p.members[3].argv.join(" ");
        assert!(
            cfg.contains("--configsvr --replSet cfg --wiredTigerCacheSizeGB 0.25"),
            "{cfg}"
        );
        let mongos = p.members[0].argv.join(" ");
        assert!(
            mongos.ends_with("--configdb cfg/localhost:30003"),
            "{mongos}"
        );
        assert!(!mongos.contains("wiredTiger"), "{mongos}");
        assert_eq!(p.entry().unwrap().name, "mongos0");
        let order: Vec<&str> = p.start_order().iter().map(|m| m.name.as_str()).collect();
        assert_eq!(order, vec!["cfg0", "sh0", "sh1", "mongos0"]);
        assert_eq!(
            crate::backend::of(p.backend).local_ports(&p),
            vec![30000, 30001, 30002, 30003]
        );
    }

    #[test]
    fn standalone_gets_the_whole_budget_and_rs0() {
        let (o, _bin) = process_opts();
        let s = spec("name = \"single\"\nkind = \"standalone\"\n");
        let p = plan_of(&s, &o).unwrap();
        assert_eq!(p.members.len(), 1);
        let m = &p.members[0];
        assert_eq!(m.cache_gb, Some(8.0));
        assert!(
            m.argv
                .join(" ")
                .contains("--replSet rs0 --wiredTigerCacheSizeGB 8")
        );
        let s = spec("name = \"single\"\nkind = \"standalone\"\nbaseline = \"standalone\"\n");
        let p = plan_of(&s, &o).unwrap();
        assert!(!p.members[0].argv.contains(&"--replSet".to_string()));
    }

    #[test]
    fn docker_plan_uses_container_names_and_publishes_every_member() {
        let s = spec(
            "name = \"m2\"\nkind = \"sharded\"\nshards_per_host = 2\nmongod_args = [\"--setParameter\", \"x=1\"]\n",
        );
        let p = plan_of(&s, &opts(BackendKind::Docker)).unwrap();
        let sh0 = p.members.iter().find(|m| m.name == "sh0").unwrap();
        assert_eq!(sh0.container.as_deref(), Some("t-1-sh0"));
        assert_eq!(sh0.member_host, "t-1-sh0:27018");
        // Reached from here through its published port, never at its container IP.
        assert_eq!(sh0.published.as_deref(), Some("127.0.0.1:27018"));
        assert_eq!(p.dial_address(sh0), "127.0.0.1:27018");
        assert_eq!(
            sh0.argv.join(" "),
            "mongod --port 27018 --bind_ip_all --dbpath /data/db --shardsvr --replSet sh0 --wiredTigerCacheSizeGB 3.87 --setParameter x=1"
        );
        let mongos = p.entry().unwrap();
        assert_eq!(mongos.published.as_deref(), Some("127.0.0.1:27017"));
        assert_eq!(
            mongos.argv.join(" "),
            "mongos --port 27017 --bind_ip_all --configdb cfg/t-1-cfg0:27020"
        );
        assert_eq!(
            crate::backend::of(p.backend).local_ports(&p),
            vec![27017, 27018, 27019, 27020]
        );
        assert!(p.render().contains("t-1-cfg0"));
        assert!(!p.multi_host);
    }

    #[test]
    fn multi_host_docker_uses_host_addresses() {
        let s = spec(
            "name = \"two\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"a.example\"\npublish_address = \"0.0.0.0\"\n[[hosts]]\naddress = \"b.example\"\ndocker = \"tcp://b.example:2375\"\npublish_address = \"0.0.0.0\"\n",
        );
        let unpublished = spec(
            "name = \"two\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"a.example\"\n[[hosts]]\naddress = \"b.example\"\ndocker = \"tcp://b.example:2375\"\n",
        );
        let refusal = plan_of(&unpublished, &opts(BackendKind::Docker))
            .unwrap_err()
            .to_string();
        assert!(refusal.contains("hosts[0].publish_address"), "{refusal}");
        let p = plan_of(&s, &opts(BackendKind::Docker)).unwrap();
        let sh1 = p.members.iter().find(|m| m.name == "sh1").unwrap();
        assert_eq!(sh1.member_host, "b.example:27019");
        assert_eq!(sh1.docker_endpoint.as_deref(), Some("tcp://b.example:2375"));
        assert_eq!(sh1.published.as_deref(), Some("0.0.0.0:27019"));
        let err = plan_of(&s, &opts(BackendKind::Process))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("process backend runs on this machine only"),
            "{err}"
        );
    }

    #[test]
    fn missing_binary_is_a_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let s = spec("name = \"single\"\nkind = \"standalone\"\n");
        let mut o = opts(BackendKind::Process);
        o.bin_dir = Some(d.path().to_path_buf());
        let err = plan_of(&s, &o).unwrap_err().to_string();
        assert!(err.starts_with("mongod not found in --bin-dir"), "{err}");
    }

    #[test]
    fn existing_needs_a_uri() {
        let s = spec("name = \"e\"\nkind = \"sharded\"\nshards_per_host = 1\n");
        assert!(plan_of(&s, &opts(BackendKind::Existing)).is_err());
        let s = spec(
            "name = \"e\"\nkind = \"sharded\"\nshards_per_host = 1\nuri = \"mongodb://u:pw@localhost:27017\"\n",
        );
        let p = plan_of(&s, &opts(BackendKind::Existing)).unwrap();
        assert!(p.members.is_empty());
        assert!(!p.render().contains("pw"));
    }

    #[test]
    fn extra_args_expand_per_member() {
        let (o, _bin) = process_opts();
        let s = spec(
            "name = \"m\"\nkind = \"sharded\"\nshards_per_host = 1\nmongod_args = [\"--command-log\", \"{dir}/{name}-{port}.log\"]\nmongos_args = [\"--command-log={dir}/cmd.log\"]\n",
        );
        let p = plan_of(&s, &o).unwrap();
        let sh0 = p.members.iter().find(|m| m.name == "sh0").unwrap();
        assert!(
            sh0.argv.ends_with(&[
                "--command-log".to_string(),
                "/tmp/ms/t-1/sh0/sh0-27018.log".to_string()
            ]),
            "{:?}",
            sh0.argv
        );
        assert!(
            p.members[0]
                .argv
                .last()
                .unwrap()
                .ends_with("/tmp/ms/t-1/mongos0/cmd.log")
        );
    }

    #[test]
    fn long_topology_names_still_give_dns_labels() {
        // 40 characters: the longest name a topology file may have.
        let name = "a-very-long-topology-name-for-dns-labels";
        assert_eq!(name.len(), 40);
        let s = spec(&format!(
            "name = \"{name}\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_members = 3\n[config_servers]\nmembers = 3\n"
        ));
        let mut o = opts(BackendKind::Docker);
        o.run_id = new_run_id(name);
        let p = plan_of(&s, &o).unwrap();
        let mut seen = std::collections::HashSet::new();
        for m in &p.members {
            let c = m.container.as_deref().unwrap();
            assert!(c.len() <= MAX_DNS_LABEL, "{c} is {} long", c.len());
            assert!(c.ends_with(&format!("-{}", m.name)), "{c}");
            assert!(c.starts_with("a-very-long"), "{c}");
            assert!(seen.insert(c.to_string()), "{c} twice");
            let host = m.member_host.rsplit_once(':').unwrap().0;
            assert_eq!(host, c);
        }
        // Two runs of the same long name still get different containers.
        let other = container_name(&new_run_id(name).replace("-20", "-19"), "sh0");
        assert_ne!(
            other,
            p.members
                .iter()
                .find(|m| m.name == "sh0")
                .unwrap()
                .container
                .clone()
                .unwrap()
        );
        // A short name is left alone.
        assert_eq!(
            container_name("single-20250101-000000-abcd", "single"),
            "single-20250101-000000-abcd-single"
        );
        // A host address with a label DNS cannot carry is refused at plan time.
        let label = "h".repeat(64);
        let s = spec(&format!(
            "name = \"two\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"{label}.example\"\npublish_address = \"0.0.0.0\"\n[[hosts]]\naddress = \"b.example\"\ndocker = \"tcp://b.example:2375\"\npublish_address = \"0.0.0.0\"\n"
        ));
        let err = plan_of(&s, &opts(BackendKind::Docker))
            .unwrap_err()
            .to_string();
        assert!(err.contains("DNS allows 63"), "{err}");
    }

    #[test]
    fn container_memory_limit_below_host_ram_sizes_the_cache() {
        // 64 GB host, 4 GB containers: the cache comes from the limit, not from host RAM.
        let s = spec("name = \"single\"\nkind = \"standalone\"\nmemory_limit_gb = 4\n");
        let mut o = opts(BackendKind::Docker);
        o.total_memory_gb = Some(64.0);
        let p = plan_of(&s, &o).unwrap();
        let m = &p.members[0];
        assert_eq!(m.cache_gb, Some(1.5), "50 % of (4 − 1) GB");
        assert_eq!(m.memory_limit_gb, Some(4.0));
        assert!(m.argv.join(" ").contains("--wiredTigerCacheSizeGB 1.5"));
        assert_eq!(p.memory[0].cache_cap_gb, Some(1.5));
        assert_eq!(p.memory[0].budget_source, "host RAM");
        assert_eq!(p.memory[0].total_cache_gb, 1.5);
        // Recorded in the serialised plan, so results can store it.
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["memory"][0]["memory_limit_gb"], 4.0);
        assert_eq!(json["members"][0]["cache_gb"], 1.5);
        // Sharded: every shard capped, the config server keeps 0.25.
        let s =
            spec("name = \"m\"\nkind = \"sharded\"\nshards_per_host = 2\nmemory_limit_gb = 2\n");
        let p = plan_of(&s, &o).unwrap();
        for m in p.members_with(MemberRole::Shard) {
            assert_eq!(m.cache_gb, Some(0.5), "{}", m.name);
        }
        // The process backend has no container: host RAM as before.
        let bin = fake_bin();
        let mut po = o.clone();
        po.backend = BackendKind::Process;
        po.bin_dir = Some(bin.path().to_path_buf());
        let s = spec("name = \"single\"\nkind = \"standalone\"\nmemory_limit_gb = 4\n");
        assert_eq!(plan_of(&s, &po).unwrap().members[0].cache_gb, Some(31.5));
    }

    #[test]
    fn cache_above_the_container_limit_is_refused_and_the_floor_warns() {
        let s =
            spec("name = \"single\"\nkind = \"standalone\"\nmemory_limit_gb = 4\ncache_gb = 2\n");
        let err = plan_of(&s, &opts(BackendKind::Docker))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cache_gb = 2 GB does not fit in memory_limit_gb = 4"),
            "{err}"
        );
        assert!(err.contains("at most 1.5 GB"), "{err}");
        // 1 GB containers leave no room above the 0.25 GB minimum: allowed, with a warning.
        let s = spec("name = \"single\"\nkind = \"standalone\"\nmemory_limit_gb = 1\n");
        let p = plan_of(&s, &opts(BackendKind::Docker)).unwrap();
        assert_eq!(p.members[0].cache_gb, Some(0.25));
        assert!(
            p.notes
                .iter()
                .any(|n| n.starts_with("warning: memory_limit_gb = 1")),
            "{:?}",
            p.notes
        );
        // The 0.25 GB floor pushing the caches over a small host budget is a warning.
        let (mut o, _bin) = process_opts();
        o.total_memory_gb = Some(2.0);
        let s = spec("name = \"m\"\nkind = \"sharded\"\nshards_per_host = 4\n");
        let p = plan_of(&s, &o).unwrap();
        assert_eq!(p.memory[0].total_cache_gb, 1.25);
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("add up to 1.25 GB, over the 0.5 GB budget")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn shards_of_several_members() {
        let (o, _bin) = process_opts();
        let s = spec(
            "name = \"rs\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_members = 3\nbase_port = 30000\n[config_servers]\nmembers = 3\n[mongos]\ncount = 2\n",
        );
        let p = plan_of(&s, &o).unwrap();
        assert_eq!(
            names(&p),
            vec![
                ("mongos0", 30000),
                ("mongos1", 30001),
                ("sh0", 30002),
                ("sh0-1", 30003),
                ("sh0-2", 30004),
                ("sh1", 30005),
                ("sh1-1", 30006),
                ("sh1-2", 30007),
                ("cfg0", 30008),
                ("cfg1", 30009),
                ("cfg2", 30010),
            ]
        );
        let sets = p.shard_sets();
        assert_eq!(sets.len(), 2);
        assert_eq!(
            Plan::shard_connection_string(&sets[1].1),
            "sh1/localhost:30005,localhost:30006,localhost:30007"
        );
        assert!(
            p.members
                .iter()
                .filter(|m| m.role == MemberRole::Shard)
                .all(|m| {
                    let a = m.argv.join(" ");
                    a.contains(&format!("--replSet {}", m.replica_set.as_deref().unwrap()))
                })
        );
        // Budget 8 GB − 3 × 0.25 for config servers, over 6 shard mongods.
        assert_eq!(p.members[2].cache_gb, Some(1.2));
        assert!(
            p.members[0]
                .argv
                .join(" ")
                .ends_with("--configdb cfg/localhost:30008,localhost:30009,localhost:30010")
        );
        let err = TopologySpec::parse(
            "name = \"x\"\nkind = \"standalone\"\nshard_members = 3\n",
            Path::new("t.toml"),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "t.toml:3: shard_members: applies only to kind = \"sharded\""
        );
    }

    fn s_without_flags(s: &TopologySpec) -> TopologySpec {
        let mut s = s.clone();
        s.mongod_args.clear();
        s
    }

    #[test]
    fn removed_flags_are_refused_for_the_docker_image() {
        // The default image (mongo:7.0) has no --nojournal; a --image override is checked too.
        let s = spec("name = \"single\"\nkind = \"standalone\"\nmongod_args = [\"--nojournal\"]\n");
        let err = plan_of(&s, &opts(BackendKind::Docker))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("mongod_args: --nojournal was removed in MongoDB 6.1"),
            "{err}"
        );
        let mut old = s.clone();
        old.image = "mongo:6.0".into();
        assert!(plan_of(&old, &opts(BackendKind::Docker)).is_ok());
        let p = plan_of(&old, &opts(BackendKind::Docker)).unwrap();
        assert!(
            p.render()
                .contains("memory hosts[0]: caches 8 GB of a 8 GB budget (host RAM)"),
            "{}",
            p.render()
        );
        // 6.0's official image is end of life: the plan says so; 7.0's is not.
        assert!(
            p.render().contains("MongoDB 6.0 is end of life"),
            "{}",
            p.render()
        );
        let current = plan_of(&s_without_flags(&s), &opts(BackendKind::Docker)).unwrap();
        assert!(
            !current.render().contains("end of life"),
            "{}",
            current.render()
        );
    }

    #[test]
    fn unix_sockets_stay_under_the_kernel_limit() {
        let (mut o, _bin) = process_opts();
        let s = spec("name = \"single\"\nkind = \"standalone\"\n");
        let argv = plan_of(&s, &o).unwrap().members[0].argv.join(" ");
        assert!(
            argv.contains("--unixSocketPrefix /tmp/ms/t-1/sockets"),
            "{argv}"
        );
        // A long TMPDIR: no socket rather than a mongod that cannot start.
        o.run_dir = PathBuf::from(format!("/tmp/{}/microshard/t-1", "d".repeat(80)));
        let argv = plan_of(&s, &o).unwrap().members[0].argv.join(" ");
        assert!(argv.contains("--nounixsocket"), "{argv}");
        assert!(!argv.contains("--unixSocketPrefix"), "{argv}");
    }

    #[test]
    fn a_remote_docker_engine_is_planned_as_another_host() {
        let local = spec(
            "name = \"r\"\nkind = \"standalone\"\n[[hosts]]\naddress = \"localhost\"\ndocker = \"tcp://10.1.2.3:2375\"\n",
        );
        let err = plan_of(&local, &opts(BackendKind::Docker))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("hosts[0].docker is an engine on another machine"),
            "{err}"
        );
        let remote = spec(
            "name = \"r\"\nkind = \"standalone\"\n[[hosts]]\naddress = \"10.1.2.3\"\ndocker = \"tcp://10.1.2.3:2375\"\npublish_address = \"0.0.0.0\"\n",
        );
        let p = plan_of(&remote, &opts(BackendKind::Docker)).unwrap();
        assert!(p.multi_host);
        assert_eq!(p.members[0].member_host, "10.1.2.3:27017");
        assert_eq!(p.dial_address(&p.members[0]), "10.1.2.3:27017");
    }

    #[test]
    fn a_tcp_engine_on_this_machine_s_loopback_is_local() {
        let s = spec(
            "name = \"r\"\nkind = \"standalone\"\n[[hosts]]\naddress = \"localhost\"\ndocker = \"tcp://127.0.0.1:2375\"\n",
        );
        let p = plan_of(&s, &opts(BackendKind::Docker)).unwrap();
        assert!(!p.multi_host);
        assert_eq!(p.dial_address(&p.members[0]), "127.0.0.1:27017");
    }

    /// Clients on another engine would dial a loopback entry address.
    #[test]
    fn clients_on_another_engine_need_a_routable_cluster() {
        let clients = "clients = [{ docker = \"unix:///var/run/docker.sock\", count = 1 }, { docker = \"tcp://loadgen-2.example:2375\", count = 1 }]\n";
        let local = spec(&format!("name = \"c\"\nkind = \"standalone\"\n{clients}"));
        let bin = fake_bin();
        for backend in [BackendKind::Docker, BackendKind::Process] {
            let mut o = opts(backend);
            o.bin_dir = Some(bin.path().to_path_buf());
            let err = plan_of(&local, &o).unwrap_err().to_string();
            assert!(
                err.contains("clients[1].docker = \"tcp://loadgen-2.example:2375\"")
                    && (err.contains("127.0.0.1") || err.contains("localhost"))
                    && err.contains("hosts[0].address")
                    && err.contains("publish_address"),
                "{backend:?}: {err}"
            );
        }
        // A 0.0.0.0 publish is still dialled at 127.0.0.1: refused as well.
        let any = spec(&format!(
            "name = \"c\"\nkind = \"standalone\"\n{clients}[[hosts]]\naddress = \"localhost\"\npublish_address = \"0.0.0.0\"\n"
        ));
        assert!(plan_of(&any, &opts(BackendKind::Docker)).is_err());
        // A routable host address: every client dials it.
        let routable = spec(&format!(
            "name = \"c\"\nkind = \"standalone\"\n{clients}[[hosts]]\naddress = \"192.0.2.7\"\npublish_address = \"0.0.0.0\"\n"
        ));
        let p = plan_of(&routable, &opts(BackendKind::Docker)).unwrap();
        assert_eq!(p.dial_address(&p.members[0]), "192.0.2.7:27017");
        // Clients only on the cluster's own engine join its network: fine on loopback.
        let own = spec(
            "name = \"c\"\nkind = \"standalone\"\nclients = [{ docker = \"unix:///var/run/docker.sock\", count = 2 }]\n",
        );
        if std::env::var("DOCKER_HOST").is_err() {
            assert!(plan_of(&own, &opts(BackendKind::Docker)).is_ok());
        }
        // An existing cluster: the URI's hosts decide.
        let existing = |uri: &str| {
            spec(&format!(
                "name = \"c\"\nkind = \"standalone\"\nuri = \"{uri}\"\n{clients}"
            ))
        };
        let err = plan_of(
            &existing("mongodb://localhost:27017/"),
            &opts(BackendKind::Existing),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("clients[0].docker") && err.contains("uri"),
            "{err}"
        );
        assert!(
            plan_of(
                &existing("mongodb://db1.example:27017/"),
                &opts(BackendKind::Existing)
            )
            .is_ok()
        );
    }

    #[test]
    fn gb_formatting() {
        assert_eq!(format_gb(1.0), "1");
        assert_eq!(format_gb(0.25), "0.25");
        assert_eq!(format_gb(3.5), "3.5");
    }

    #[test]
    fn a_plan_says_its_size_in_words() {
        let spec = crate::topology::TopologySpec::shipped("microshard-2");
        let mut opts =
            crate::topology::PlanOptions::new(&spec, crate::topology::BackendKind::Docker);
        opts.total_memory_gb = Some(16.0);
        let plan = crate::backend::plan(&spec, &opts).unwrap_or_else(|e| panic!("{e}"));
        let words = plan.size_in_words(false);
        assert!(
            words.starts_with("2 shards × 1 member, 1 config server, 1 mongos, cache "),
            "{words}"
        );
        // The stand-in has no cache to size: its words do not claim one.
        assert_eq!(
            plan.size_in_words(true),
            "2 shards × 1 member, 1 config server, 1 mongos"
        );
        // The baseline says whether it is a replica set.
        let spec = crate::topology::TopologySpec::shipped("single");
        let opts = crate::topology::PlanOptions::new(&spec, crate::topology::BackendKind::Docker);
        let plan = crate::backend::plan(&spec, &opts).unwrap_or_else(|e| panic!("{e}"));
        let words = plan.size_in_words(false);
        assert!(
            words.starts_with("1 mongod (a 1-member replica set)"),
            "{words}"
        );
    }
}
