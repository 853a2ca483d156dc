//! The topology file schema (see `topologies/README.md`), its defaults and its validation.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::TopologyError;

mod hosts;
use hosts::hosts;

mod clients;
pub use clients::ClientPodsSpec;

mod args;
use args::{MANAGED_FLAGS, MONGOS_REFUSES, check_args, check_cpuset_opt};
pub(crate) use args::{check_managed_args, parse_cpuset};

/// Image used when the file names neither `image` nor `version`: a maintained major.
pub(crate) const DEFAULT_IMAGE: &str = "mongo:7.0";
/// Where the entry point listens unless the file says otherwise (27017 like mongod and mongos).
pub(crate) const DEFAULT_BASE_PORT: u16 = 27017;
/// WiredTiger's lower bound for `--wiredTigerCacheSizeGB`.
pub(crate) const MIN_CACHE_GB: f64 = 0.25;
/// Image client containers run unless the file names `client_image`: the tag `microshard
/// standin image` builds by default (the microshard binary, which is also the client).
pub(crate) const DEFAULT_CLIENT_IMAGE: &str = "microshard-standin:latest";
/// Most client containers one engine entry may ask for (the same bound as `--clients`).
pub(crate) const MAX_CLIENTS_PER_ENGINE: u32 = 1024;

/// Whether the topology is one `mongod` or a sharded cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// One `mongod` (the single-node ceiling).
    Standalone,
    /// N shard `mongod`s per host behind `mongos`, with a config-server replica set.
    Sharded,
}

/// How the single-node baseline runs: plain, or as a 1-member replica set so that the oplog and
/// majority write concern cost the same as on the shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Baseline {
    /// A plain `mongod` without `--replSet`.
    Standalone,
    /// A 1-member replica set named `rs0`.
    ReplicaSet,
}

/// One machine that runs members.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct HostSpec {
    /// How clients and other members reach this host (`localhost` for this machine).
    pub address: String,
    /// The line of the file `address` is given on (0 when the file names no host), for
    /// refusals found after loading (a name resolving to loopback here).
    #[serde(skip)]
    pub address_line: usize,
    /// Docker endpoint (`unix:///var/run/docker.sock`, `tcp://h:2375`); `None` = the local default.
    pub docker: Option<String>,
    /// Memory (GB) that all `mongod` caches on this host share; default 50% of (RAM − 1 GB).
    pub memory_budget_gb: Option<f64>,
    /// One CPU set per shard on this host (`"0-1"`, `"2,3"`), or empty.
    pub shard_cpusets: Vec<String>,
    /// One data directory per shard (or one for the standalone), or empty for the run directory.
    pub data_dirs: Vec<PathBuf>,
    /// Directory for the members' logs (the seed puts logs on their own disk); default the member directory.
    pub log_dir: Option<PathBuf>,
    /// Address every member is published on in Docker (microshard dials members there); default 127.0.0.1.
    pub publish_address: Option<String>,
}

/// Client containers on one Docker engine (`clients = [{ docker = "...", count = N }]`): when one
/// client machine is not enough, each cell's clients run there (`docs/engine.md`, "Several
/// clients").
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientHostSpec {
    /// Docker endpoint (`unix:///var/run/docker.sock`, `tcp://loadgen-2:2375`).
    pub docker: String,
    /// How many client containers run there (at least 1).
    pub count: u32,
}

/// The config-server replica set.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConfigServersSpec {
    /// Members of the config replica set (default 1; a single member is fine for testing).
    pub members: u32,
    /// WiredTiger cache of each config server (default 0.25 GB); taken from the first host's budget.
    pub cache_gb: f64,
    /// CPU set for the config servers.
    pub cpuset: Option<String>,
}

/// The routers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MongosSpec {
    /// How many `mongos` (default 1); the entry URI lists them all.
    pub count: u32,
    /// CPU set for the routers.
    pub cpuset: Option<String>,
}

/// A validated topology file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TopologySpec {
    /// The file it came from (for messages).
    pub source: PathBuf,
    /// Topology name (`microshard-4`); names the cluster, its containers and its state file.
    pub name: String,
    /// Standalone or sharded.
    pub kind: Kind,
    /// Standalone only: plain mongod or 1-member replica set.
    pub baseline: Baseline,
    /// Sharded only: shard mongods on every host.
    pub shards_per_host: u32,
    /// Sharded only: members of each shard's replica set (default 1). All members of a shard run
    /// on the shard's host and share its CPU set; any of them may win the first election.
    pub shard_members: u32,
    /// The machines; at least one (default: this machine, `localhost`).
    pub hosts: Vec<HostSpec>,
    /// Config-server replica set (sharded only).
    pub config_servers: ConfigServersSpec,
    /// Routers (sharded only).
    pub mongos: MongosSpec,
    /// Server version wanted (`"7.0"`); picks the Docker image when `image` is absent.
    pub version: Option<String>,
    /// Docker image for every member.
    pub image: String,
    /// Explicit cache per shard mongod (GB); overrides the budget split.
    pub cache_gb: Option<f64>,
    /// Memory limit per container (GB), Docker only.
    pub memory_limit_gb: Option<f64>,
    /// CPU set the benchmark client should run on (recorded for the experiment engine).
    pub client_cpuset: Option<String>,
    /// Extra arguments for every mongod.
    pub mongod_args: Vec<String>,
    /// Extra arguments for every mongos.
    pub mongos_args: Vec<String>,
    /// First port: mongos first, then shards, then config servers.
    pub base_port: u16,
    /// Pass `numInitialChunks = this × shards` to `shardCollection` on servers ≤ 7.1.
    pub initial_chunks_per_shard: Option<u32>,
    /// Leave the balancer running during measured runs (default: stopped).
    pub keep_balancer: bool,
    /// Shard `ycsb.usertable` at bring-up (default). `false` keeps it unsharded on the one shard
    /// behind mongos (`microshard-1u`): beside `single` and `microshard-1` that measures the
    /// mongos hop alone, apart from the shard-key index and the ownership filter.
    pub shard_collection: bool,
    /// Existing backend: connection string of a running mongos or mongod.
    pub uri: Option<String>,
    /// Client containers per Docker engine; empty = the clients run on this machine (or in pods).
    pub clients: Vec<ClientHostSpec>,
    /// Client pods: one Indexed Job in a Kubernetes context (`clients = [{ kubernetes = ... }]`).
    pub client_pods: Option<ClientPodsSpec>,
    /// Image of the client containers (the microshard binary: `microshard standin image`).
    pub client_image: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Spanned<String>,
    kind: Spanned<Kind>,
    baseline: Option<Spanned<Baseline>>,
    shards_per_host: Option<Spanned<u32>>,
    shard_members: Option<Spanned<u32>>,
    #[serde(default)]
    hosts: Vec<Spanned<RawHost>>,
    config_servers: Option<Spanned<RawConfig>>,
    mongos: Option<Spanned<RawMongos>>,
    version: Option<Spanned<String>>,
    image: Option<Spanned<String>>,
    cache_gb: Option<Spanned<f64>>,
    memory_limit_gb: Option<Spanned<f64>>,
    client_cpuset: Option<Spanned<String>>,
    #[serde(default = "empty_spanned")]
    mongod_args: Spanned<Vec<String>>,
    #[serde(default = "empty_spanned")]
    mongos_args: Spanned<Vec<String>>,
    base_port: Option<Spanned<i64>>,
    initial_chunks_per_shard: Option<Spanned<u32>>,
    #[serde(default)]
    keep_balancer: bool,
    shard_collection: Option<Spanned<bool>>,
    uri: Option<Spanned<String>>,
    #[serde(default)]
    clients: Vec<Spanned<RawClients>>,
    client_image: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClients {
    docker: Option<Spanned<String>>,
    kubernetes: Option<Spanned<String>>,
    count: Spanned<i64>,
    node_selector: Option<Spanned<std::collections::BTreeMap<String, String>>>,
    allow_colocated: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    #[serde(default = "default_address")]
    address: Spanned<String>,
    docker: Option<Spanned<String>>,
    memory_budget_gb: Option<Spanned<f64>>,
    #[serde(default = "empty_spanned")]
    shard_cpusets: Spanned<Vec<String>>,
    #[serde(default = "empty_spanned")]
    data_dirs: Spanned<Vec<PathBuf>>,
    log_dir: Option<PathBuf>,
    publish_address: Option<Spanned<String>>,
}

fn empty_spanned<T: Default>() -> Spanned<T> {
    Spanned::new(0..0, T::default())
}

fn default_address() -> Spanned<String> {
    Spanned::new(0..0, "localhost".to_string())
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    members: Option<Spanned<u32>>,
    cache_gb: Option<Spanned<f64>>,
    cpuset: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMongos {
    count: Option<Spanned<u32>>,
    cpuset: Option<Spanned<String>>,
}

struct Ctx<'a> {
    file: String,
    text: &'a str,
}

impl Ctx<'_> {
    fn line(&self, span: &Range<usize>) -> usize {
        if span.start == 0 && span.end == 0 {
            return 0;
        }
        let end = span.start.min(self.text.len());
        self.text[..end].matches('\n').count() + 1
    }

    /// `field`'s value when it lies in `range`; otherwise the error naming the file, line and
    /// key, and the range ([`crate::props::between`]).
    fn within<T: Copy + PartialOrd + std::fmt::Display>(
        &self,
        field: &Spanned<T>,
        key: &str,
        range: std::ops::RangeInclusive<T>,
    ) -> Result<T, TopologyError> {
        let value = *field.get_ref();
        if range.contains(&value) {
            return Ok(value);
        }
        Err(self.err(
            &field.span(),
            key,
            crate::props::between(range.start(), range.end()),
        ))
    }

    fn err(&self, span: &Range<usize>, key: &str, message: impl Into<String>) -> TopologyError {
        TopologyError::Invalid {
            file: self.file.clone(),
            line: self.line(span),
            key: key.to_string(),
            // One line even when it quotes a value holding TOML's "\n" or "\r" escape.
            message: message.into().replace('\n', "\\n").replace('\r', "\\r"),
        }
    }
}

impl TopologySpec {
    /// Loads a topology by bare name (`microshard-4` → `topologies/microshard-4.toml`, looked up
    /// relative to the current directory, then beside the executable's repository) or by path.
    pub fn load(name_or_path: &str) -> Result<TopologySpec, TopologyError> {
        let path = resolve(name_or_path)?;
        let text = std::fs::read_to_string(&path).map_err(|source| TopologyError::Io {
            path: path.clone(),
            source,
        })?;
        Self::parse(&text, &path)
    }

    /// A shipped topology, for other modules' tests (their code receives loaded specs).
    #[cfg(test)]
    pub(crate) fn shipped(name: &str) -> TopologySpec {
        TopologySpec::load(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Parses and validates the text of a topology file; `source` is used in messages only.
    pub fn parse(text: &str, source: &Path) -> Result<TopologySpec, TopologyError> {
        let ctx = Ctx {
            file: source.display().to_string(),
            text,
        };
        let raw: RawSpec = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| ctx.line(&s)).unwrap_or(0);
            let message = short_unknown_field(&e.message().trim().replace('\n', " "));
            match error_key(&e) {
                // A value of the wrong type: name the key as well as the line.
                Some(key) => TopologyError::Invalid {
                    file: ctx.file.clone(),
                    line,
                    key,
                    message,
                },
                None => TopologyError::Syntax {
                    file: ctx.file.clone(),
                    line,
                    message,
                },
            }
        })?;
        build(raw, &ctx, source)
    }

    /// Total `mongod`s the topology runs on host `index` (shards, config servers, the standalone).
    pub(crate) fn mongods_on_host(&self, index: usize) -> u32 {
        match self.kind {
            Kind::Standalone => u32::from(index == 0),
            Kind::Sharded => {
                self.shards_per_host * self.shard_members
                    + if index == 0 {
                        self.config_servers.members
                    } else {
                        0
                    }
            }
        }
    }

    /// Number of ports the plan uses from `base_port` on.
    pub(crate) fn port_count(&self) -> u32 {
        match self.kind {
            Kind::Standalone => 1,
            Kind::Sharded => {
                self.mongos.count
                    + self.shards_per_host * self.shard_members * self.hosts.len() as u32
                    + self.config_servers.members
            }
        }
    }

    /// Moves the topology to the ports from `port` (`--base-port`); refused with the number of
    /// ports it needs when they would run past 65535 (each caller names its flag).
    pub(crate) fn set_base_port(&mut self, port: u16) -> Result<(), u32> {
        let needed = self.port_count().max(1);
        if port == 0 || u32::from(port) + needed - 1 > 65535 {
            return Err(needed);
        }
        self.base_port = port;
        Ok(())
    }
}

/// An unknown key's message without the parser's list of every key (a line too long to read):
/// the key it is closest to instead, and where the keys are documented.
fn short_unknown_field(message: &str) -> String {
    let Some((head, known)) = message.split_once(", expected one of ") else {
        return message.to_string();
    };
    let Some(field) = head
        .strip_prefix("unknown field `")
        .and_then(|f| f.strip_suffix('`'))
    else {
        return message.to_string();
    };
    let keys: Vec<&str> = (known.split(", ")).map(|k| k.trim_matches('`')).collect();
    let hint = match crate::suggest::closest(field, keys, |k| k) {
        Some(k) => format!("did you mean `{k}`? "),
        None => String::new(),
    };
    format!("{head}: {hint}(the keys are in topologies/README.md)")
}

/// The dotted key a schema error is about (`hosts.0.shard_cpusets`), when the parser knows it.
///
/// `toml` keeps the key path private and prints it only when it has no source text to quote, so
/// the error is rendered once without its source and the `in `key`` line is read back.
fn error_key(e: &toml::de::Error) -> Option<String> {
    let mut bare = e.clone();
    bare.set_input(None);
    let text = bare.to_string();
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("in `")?.strip_suffix('`'))
        .filter(|k| !k.is_empty())
        .map(str::to_string)
}

fn build(raw: RawSpec, ctx: &Ctx<'_>, source: &Path) -> Result<TopologySpec, TopologyError> {
    let name = check_name(&raw.name, ctx)?;
    let shape = shape(&raw, ctx)?;
    let shard_collection = shard_collection(&raw, ctx, shape.kind, shape.shards_per_host)?;
    let config_servers = config_servers(raw.config_servers.as_ref(), ctx)?;
    let mongos = mongos(raw.mongos.as_ref(), ctx)?;
    // A standalone's shards_per_host is 1: one data directory and CPU set per host.
    let hosts = hosts(&raw.hosts, ctx, shape.shards_per_host)?;
    let server = server(&raw, ctx)?;
    let base_port = match &raw.base_port {
        Some(p) => ctx.within(p, "base_port", 1..=65535)? as u16,
        None => DEFAULT_BASE_PORT,
    };
    let schemes = ["mongodb://", "mongodb+srv://"];
    let uri = match &raw.uri {
        Some(u) if !schemes.iter().any(|s| u.get_ref().starts_with(s)) => {
            return Err(ctx.err(
                &u.span(),
                "uri",
                "must be a mongodb:// or mongodb+srv:// connection string",
            ));
        }
        Some(u) => Some(u.get_ref().clone()),
        None => None,
    };
    let fleet = clients::clients(&raw.clients, ctx)?;
    let client_image = clients::client_image(&raw, &fleet.docker, fleet.pods.as_ref(), ctx)?;

    let spec = TopologySpec {
        source: source.to_path_buf(),
        name,
        kind: shape.kind,
        baseline: shape.baseline,
        shards_per_host: shape.shards_per_host,
        shard_members: shape.shard_members,
        hosts,
        config_servers,
        mongos,
        version: server.version,
        image: server.image,
        cache_gb: server.cache_gb,
        memory_limit_gb: server.memory_limit_gb,
        client_cpuset: server.client_cpuset,
        mongod_args: raw.mongod_args.get_ref().clone(),
        mongos_args: raw.mongos_args.get_ref().clone(),
        base_port,
        initial_chunks_per_shard: raw.initial_chunks_per_shard.as_ref().map(|c| *c.get_ref()),
        keep_balancer: raw.keep_balancer,
        shard_collection,
        uri,
        clients: fleet.docker,
        client_pods: fleet.pods,
        client_image,
    };
    check_fits(&spec, &raw, ctx)?;
    Ok(spec)
}

/// The topology's name: it names containers and state files.
fn check_name(raw: &Spanned<String>, ctx: &Ctx<'_>) -> Result<String, TopologyError> {
    let name = raw.get_ref().trim().to_string();
    if name.is_empty()
        || name.len() > 40
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        || !name.starts_with(|c: char| c.is_ascii_alphanumeric())
    {
        // Docker refuses container names that do not start with a letter or digit.
        return Err(ctx.err(
            &raw.span(),
            "name",
            "must be 1-40 characters of letters, digits, '-' or '_', starting with a letter or digit (it names containers and state files)",
        ));
    }
    Ok(name)
}

/// What kind of topology, and how many mongods per host.
struct Shape {
    kind: Kind,
    baseline: Baseline,
    shards_per_host: u32,
    shard_members: u32,
}

/// The topology's [`Shape`]: the keys that apply to one kind only are refused on the other.
fn shape(raw: &RawSpec, ctx: &Ctx<'_>) -> Result<Shape, TopologyError> {
    let kind = *raw.kind.get_ref();
    let is_sharded = kind == Kind::Sharded;
    let sharded_only = "applies only to kind = \"sharded\"";
    let baseline = match &raw.baseline {
        Some(b) if is_sharded => {
            return Err(ctx.err(
                &b.span(),
                "baseline",
                "applies only to kind = \"standalone\"",
            ));
        }
        Some(b) => *b.get_ref(),
        None => Baseline::ReplicaSet,
    };
    let shards_per_host = match &raw.shards_per_host {
        Some(s) if !is_sharded && *s.get_ref() != 1 => {
            return Err(ctx.err(
                &s.span(),
                "shards_per_host",
                "a standalone topology has exactly one mongod; use kind = \"sharded\"",
            ));
        }
        Some(s) => ctx.within(s, "shards_per_host", 1..=64)?,
        None if is_sharded => {
            return Err(ctx.err(
                &raw.kind.span(),
                "shards_per_host",
                "is required for kind = \"sharded\"",
            ));
        }
        None => 1,
    };
    let shard_members = match &raw.shard_members {
        Some(s) if !is_sharded => {
            return Err(ctx.err(&s.span(), "shard_members", sharded_only));
        }
        Some(s) => ctx.within(s, "shard_members", 1..=7)?,
        None => 1,
    };
    if !is_sharded {
        if let Some(c) = &raw.config_servers {
            return Err(ctx.err(&c.span(), "config_servers", sharded_only));
        }
        if let Some(m) = &raw.mongos {
            return Err(ctx.err(&m.span(), "mongos", sharded_only));
        }
        if raw.hosts.len() > 1 {
            return Err(ctx.err(
                &raw.hosts[1].span(),
                "hosts",
                "a standalone topology runs on one host",
            ));
        }
    }
    Ok(Shape {
        kind,
        baseline,
        shards_per_host,
        shard_members,
    })
}

/// `shard_collection`, true unless the file says `false`, which only a sharded topology of one
/// shard may: there the unsharded collection lives on that shard as the sharded one would, so
/// the two differ by the shard key alone; with several shards it would leave all but one idle.
fn shard_collection(
    raw: &RawSpec,
    ctx: &Ctx<'_>,
    kind: Kind,
    shards_per_host: u32,
) -> Result<bool, TopologyError> {
    let Some(s) = raw.shard_collection.as_ref().filter(|s| !*s.get_ref()) else {
        return Ok(true);
    };
    let shards = shards_per_host as usize * raw.hosts.len().max(1);
    if kind != Kind::Sharded || shards != 1 {
        return Err(ctx.err(
            &s.span(),
            "shard_collection",
            "= false applies only to kind = \"sharded\" with one shard (shards_per_host = 1, one host): it leaves the collection unsharded on that shard, to measure the mongos hop alone",
        ));
    }
    Ok(false)
}

/// `[config_servers]`, or its defaults.
fn config_servers(
    raw: Option<&Spanned<RawConfig>>,
    ctx: &Ctx<'_>,
) -> Result<ConfigServersSpec, TopologyError> {
    let none = RawConfig::default();
    let c = raw.map_or(&none, Spanned::get_ref);
    Ok(ConfigServersSpec {
        members: match &c.members {
            Some(m) => ctx.within(m, "config_servers.members", 1..=7)?,
            None => 1,
        },
        cache_gb: match &c.cache_gb {
            Some(g) => check_cache(ctx, g, "config_servers.cache_gb")?,
            None => MIN_CACHE_GB,
        },
        cpuset: check_cpuset_opt(ctx, c.cpuset.as_ref(), "config_servers.cpuset")?,
    })
}

/// `[mongos]`, or its defaults.
fn mongos(raw: Option<&Spanned<RawMongos>>, ctx: &Ctx<'_>) -> Result<MongosSpec, TopologyError> {
    let none = RawMongos::default();
    let m = raw.map_or(&none, Spanned::get_ref);
    Ok(MongosSpec {
        count: match &m.count {
            Some(c) => ctx.within(c, "mongos.count", 1..=16)?,
            None => 1,
        },
        cpuset: check_cpuset_opt(ctx, m.cpuset.as_ref(), "mongos.cpuset")?,
    })
}

/// The server itself: version and image, cache and memory, the client's CPU set.
struct Server {
    version: Option<String>,
    image: String,
    cache_gb: Option<f64>,
    memory_limit_gb: Option<f64>,
    client_cpuset: Option<String>,
}

/// The file's [`Server`], with the extra arguments checked against the flags microshard sets
/// and the version chosen.
fn server(raw: &RawSpec, ctx: &Ctx<'_>) -> Result<Server, TopologyError> {
    let version = raw.version.as_ref().map(|v| v.get_ref().trim().to_string());
    if let (Some(v), Some(span)) = (&version, raw.version.as_ref().map(|v| v.span())) {
        let ok = v
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return Err(ctx.err(&span, "version", "must look like \"7.0\" or \"8.0.4\""));
        }
    }
    let image = match (&raw.image, &version) {
        (Some(i), _) if i.get_ref().trim().is_empty() => {
            return Err(ctx.err(&i.span(), "image", "must not be empty"));
        }
        (Some(i), _) => i.get_ref().trim().to_string(),
        (None, Some(v)) => format!("mongo:{v}"),
        (None, None) => DEFAULT_IMAGE.to_string(),
    };
    let cache_gb = raw
        .cache_gb
        .as_ref()
        .map(|g| check_cache(ctx, g, "cache_gb"))
        .transpose()?;
    let memory_limit_gb = match &raw.memory_limit_gb {
        Some(g) if !(g.get_ref().is_finite() && *g.get_ref() >= 0.25) => {
            return Err(ctx.err(
                &g.span(),
                "memory_limit_gb",
                format!("{} GB", crate::props::at_least(0.25)),
            ));
        }
        Some(g) => Some(*g.get_ref()),
        None => None,
    };
    if let (Some(limit), Some(cache)) = (memory_limit_gb, cache_gb)
        && cache >= limit
    {
        let span = raw.cache_gb.as_ref().map(|g| g.span()).unwrap_or(0..0);
        return Err(ctx.err(
            &span,
            "cache_gb",
            format!("{cache} GB cache does not fit in memory_limit_gb = {limit}"),
        ));
    }
    let client_cpuset = check_cpuset_opt(ctx, raw.client_cpuset.as_ref(), "client_cpuset")?;
    check_args(ctx, &raw.mongod_args, "mongod_args", MANAGED_FLAGS)?;
    check_args(ctx, &raw.mongos_args, "mongos_args", MANAGED_FLAGS)?;
    check_args(ctx, &raw.mongos_args, "mongos_args", MONGOS_REFUSES)?;
    // Flags the chosen version no longer has; the default image does not count as a choice
    // (the process backend checks against its binary's version instead).
    let explicit_image = raw.image.as_ref().map(|i| i.get_ref().trim().to_string());
    let chosen =
        super::flags::wanted_version(version.as_deref(), explicit_image.as_deref().unwrap_or(""));
    if let Err(e) = super::flags::check_mongod_args(raw.mongod_args.get_ref(), chosen.as_deref()) {
        return Err(ctx.err(&raw.mongod_args.span(), "mongod_args", e.to_string()));
    }
    Ok(Server {
        version,
        image,
        cache_gb,
        memory_limit_gb,
        client_cpuset,
    })
}

/// What only the whole topology shows: its ports run past 65535, or a host's memory budget
/// cannot hold its mongods' caches (every cache at least 0.25 GB).
fn check_fits(spec: &TopologySpec, raw: &RawSpec, ctx: &Ctx<'_>) -> Result<(), TopologyError> {
    let (count, base) = (spec.port_count(), spec.base_port);
    if u32::from(base) + count - 1 > 65535 {
        let span = raw.base_port.as_ref().map(|p| p.span()).unwrap_or(0..0);
        let message = format!("{count} ports from {base} run past 65535");
        return Err(ctx.err(&span, "base_port", message));
    }
    for (i, h) in spec.hosts.iter().enumerate() {
        if let Some(budget) = h.memory_budget_gb {
            // Every mongod on the host gets its cache (explicit or the 0.25 GB floor).
            let n = spec.mongods_on_host(i);
            let configs = match (spec.kind, i) {
                (Kind::Sharded, 0) => spec.config_servers.members,
                _ => 0,
            };
            let per = spec.cache_gb.unwrap_or(MIN_CACHE_GB);
            let needed =
                per * f64::from(n - configs) + spec.config_servers.cache_gb * f64::from(configs);
            if needed > budget + 1e-9 {
                let span = raw
                    .hosts
                    .get(i)
                    .and_then(|rh| rh.get_ref().memory_budget_gb.as_ref().map(|b| b.span()))
                    .unwrap_or(0..0);
                return Err(ctx.err(
                    &span,
                    &format!("hosts[{i}].memory_budget_gb"),
                    format!(
                        "{budget} GB cannot hold {n} mongod caches (needs at least {needed:.2} GB)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn check_cache(ctx: &Ctx<'_>, g: &Spanned<f64>, key: &str) -> Result<f64, TopologyError> {
    let v = *g.get_ref();
    if !(v.is_finite() && (MIN_CACHE_GB..=10_000.0).contains(&v)) {
        return Err(ctx.err(
            &g.span(),
            key,
            format!(
                "{} GB (WiredTiger's range)",
                crate::props::between(MIN_CACHE_GB, 10_000)
            ),
        ));
    }
    Ok(v)
}

/// This machine's RAM in GB (from /proc/meminfo); `None` when it cannot be read.
pub fn total_memory_gb() -> Option<f64> {
    crate::measure::total_memory_bytes().map(|b| b as f64 / (1024.0 * 1024.0 * 1024.0))
}

fn resolve(name_or_path: &str) -> Result<PathBuf, TopologyError> {
    let direct = PathBuf::from(name_or_path);
    if direct.is_file() {
        return Ok(direct);
    }
    let looks_like_path = name_or_path.contains('/') || name_or_path.ends_with(".toml");
    let file = format!("{name_or_path}.toml"); // looked for only when not a path
    let cwd = std::env::current_dir().ok().map(|d| d.join("topologies"));
    let dirs: Vec<PathBuf> = cwd.into_iter().chain(repo_topologies_dir()).collect();
    if !looks_like_path && let Some(p) = dirs.iter().map(|d| d.join(&file)).find(|p| p.is_file()) {
        return Ok(p);
    }
    let known: Vec<String> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten())
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_suffix(".toml")
                .map(String::from)
        })
        .collect();
    let hint = known
        .iter()
        .map(|k| (strsim::jaro_winkler(k, name_or_path), k))
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!("; did you mean {k:?}?"))
        .unwrap_or_default();
    let searched = if looks_like_path {
        name_or_path.to_string()
    } else {
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(TopologyError::NotFound {
        name: name_or_path.to_string(),
        searched,
        hint,
    })
}

/// `topologies/` of the repository the executable was built in (walks up from the executable).
fn repo_topologies_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let mut dir = exe.parent();
    while let Some(d) = dir {
        let candidate = d.join("topologies");
        if candidate.is_dir() && d.join("Cargo.toml").is_file() {
            return Some(candidate);
        }
        dir = d.parent();
    }
    // Built with CARGO_TARGET_DIR elsewhere: fall back to the source tree recorded at build time.
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("topologies");
    manifest.is_dir().then_some(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TopologySpec, TopologyError> {
        TopologySpec::parse(text, Path::new("t.toml"))
    }

    /// The one line a refused topology file gets.
    fn refusal(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn a_value_of_the_wrong_type_names_its_key_and_line() {
        let e = refusal("name = \"t\"\nkind = \"sharded\"\nshards_per_host = \"two\"\n");
        assert!(e.starts_with("t.toml:3: shards_per_host: "), "{e}");
        let e = refusal(
            "name = \"t\"\nkind = \"sharded\"\nshards_per_host = 1\n[mongos]\ncount = \"x\"\n",
        );
        assert!(e.starts_with("t.toml:5: mongos.count: "), "{e}");
        // A syntax error has no key to name; the line is still there.
        let e = refusal("name = \"t\nkind = \"sharded\"\n");
        assert!(e.starts_with("t.toml:1: "), "{e}");
    }

    /// Docker refuses container names not starting with a letter or digit.
    #[test]
    fn names_start_with_a_letter_or_digit() {
        for bad in ["_lab", "-lab"] {
            let e = refusal(&format!("name = \"{bad}\"\nkind = \"standalone\"\n"));
            assert!(
                e.starts_with("t.toml:1: name: ") && e.contains("starting"),
                "{e}"
            );
        }
        assert!(parse("name = \"0_lab-a\"\nkind = \"standalone\"\n").is_ok());
    }

    #[test]
    fn mongod_arg_flags_follow_the_topology_rule() {
        assert!(check_managed_args(&["--service-time-us=500".into()]).is_ok());
        let e = check_managed_args(&["--port=1".into()]).unwrap_err();
        assert!(e.contains("--port"), "{e}");
        assert!(check_managed_args(&["--replSet".into(), "x".into()]).is_err());
    }

    #[test]
    fn defaults_for_a_minimal_sharded_file() {
        let s = parse("name = \"m4\"\nkind = \"sharded\"\nshards_per_host = 4\n").unwrap();
        assert_eq!(s.hosts.len(), 1);
        assert_eq!(s.hosts[0].address, "localhost");
        assert_eq!(s.config_servers.members, 1);
        assert_eq!(s.mongos.count, 1);
        assert_eq!(s.image, "mongo:7.0");
        assert_eq!(s.base_port, 27017);
        assert_eq!(s.port_count(), 6);
        assert!(!s.keep_balancer);
    }

    #[test]
    fn an_unsharded_collection_is_for_one_shard_behind_mongos_only() {
        let one = "name = \"u\"\nkind = \"sharded\"\nshards_per_host = 1\n";
        assert!(parse(one).unwrap().shard_collection);
        let u = parse(&format!("{one}shard_collection = false\n")).unwrap();
        assert!(!u.shard_collection);
        assert!(TopologySpec::shipped("microshard-1u").shard_collection == u.shard_collection);
        let e = refusal(
            "name = \"u\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_collection = false\n",
        );
        assert!(
            e.starts_with("t.toml:4: shard_collection: = false applies only to kind = \"sharded\" with one shard"),
            "{e}"
        );
        let e = refusal("name = \"u\"\nkind = \"standalone\"\nshard_collection = false\n");
        assert!(e.starts_with("t.toml:3: shard_collection: "), "{e}");
        let two_hosts = format!(
            "{one}shard_collection = false\n[[hosts]]\naddress = \"10.0.0.1\"\n[[hosts]]\naddress = \"10.0.0.2\"\n"
        );
        assert!(refusal(&two_hosts).contains("shard_collection"));
    }

    #[test]
    fn an_unknown_key_is_said_with_its_nearest_key_not_every_key() {
        let e = refusal("name = \"t\"\nkind = \"sharded\"\nshard_per_host = 3\n");
        assert!(
            e.starts_with("t.toml:3: unknown field `shard_per_host`: did you mean `shards_per_host`? (the keys are in topologies/README.md)"),
            "{e}"
        );
        assert!(!e.contains("expected one of"), "{e}");
    }

    #[test]
    fn version_picks_the_image() {
        let s = parse("name = \"x\"\nkind = \"standalone\"\nversion = \"8.0\"\n").unwrap();
        assert_eq!(s.image, "mongo:8.0");
        assert_eq!(s.baseline, Baseline::ReplicaSet);
    }

    #[test]
    fn unknown_key_names_line() {
        let err =
            refusal("name = \"x\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_count = 3\n");
        assert!(err.starts_with("t.toml:4:"), "{err}");
        assert!(err.contains("shard_count"), "{err}");
    }

    #[test]
    fn bad_value_names_file_line_and_key() {
        let err =
            refusal("name = \"x\"\nkind = \"sharded\"\nshards_per_host = 2\nbase_port = 70000\n");
        // The wording of the range is checked end to end by the bad-input catalogue.
        assert!(err.starts_with("t.toml:4: base_port: "), "{err}");
    }

    #[test]
    fn ports_must_fit() {
        let err =
            refusal("name = \"x\"\nkind = \"sharded\"\nshards_per_host = 8\nbase_port = 65530\n");
        assert!(err.contains("run past 65535"), "{err}");
    }

    #[test]
    fn duplicate_hosts_are_refused() {
        let text = "name = \"x\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"a\"\n[[hosts]]\naddress = \"a\"\n";
        let err = refusal(text);
        assert!(err.contains("listed twice"), "{err}");
        assert!(err.starts_with("t.toml:6:"), "{err}");
    }

    #[test]
    fn host_too_small_for_its_shards() {
        let text = "name = \"x\"\nkind = \"sharded\"\nshards_per_host = 8\n[[hosts]]\nmemory_budget_gb = 1.0\n";
        let err = refusal(text);
        assert!(err.contains("hosts[0].memory_budget_gb"), "{err}");
        assert!(err.contains("cannot hold 9 mongod caches"), "{err}");
    }

    #[test]
    fn cpusets_must_match_shards() {
        let text = "name = \"x\"\nkind = \"sharded\"\nshards_per_host = 2\n[[hosts]]\nshard_cpusets = [\"0\"]\n";
        let err = refusal(text);
        assert!(err.contains("shard_cpusets"), "{err}");
        let text = "name = \"x\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\nshard_cpusets = [\"a-b\"]\n";
        assert!(parse(text).is_err());
    }

    #[test]
    fn managed_flags_are_refused() {
        let text = "name = \"x\"\nkind = \"standalone\"\nmongod_args = [\"--port=1\"]\n";
        let err = refusal(text);
        assert!(err.contains("mongod_args: --port"), "{err}");
        let text = "name = \"x\"\nkind = \"sharded\"\nshards_per_host = 1\nmongos_args = [\"--storageEngine\", \"x\"]\n";
        assert!(refusal(text).contains("mongos_args"));
    }

    #[test]
    fn standalone_rejects_sharded_keys() {
        let err = refusal("name = \"x\"\nkind = \"standalone\"\n[mongos]\ncount = 2\n");
        assert!(err.contains("mongos: applies only"), "{err}");
        let err = refusal("name = \"x\"\nkind = \"sharded\"\n");
        assert!(err.contains("shards_per_host: is required"), "{err}");
    }

    #[test]
    fn relative_directories_are_refused() {
        let err =
            refusal("name = \"x\"\nkind = \"standalone\"\n[[hosts]]\ndata_dirs = [\"data/a\"]\n");
        assert!(
            err.contains("hosts[0].data_dirs: \"data/a\" is relative"),
            "{err}"
        );
        let err = refusal("name = \"x\"\nkind = \"standalone\"\n[[hosts]]\nlog_dir = \"logs\"\n");
        assert!(err.contains("hosts[0].log_dir"), "{err}");
        assert!(
            parse("name = \"x\"\nkind = \"standalone\"\n[[hosts]]\ndata_dirs = [\"/srv/a\"]\n")
                .is_ok()
        );
    }

    #[test]
    fn removed_flags_are_refused_for_the_chosen_version() {
        let err = refusal(
            "name = \"x\"\nkind = \"standalone\"\nversion = \"7.0\"\nmongod_args = [\"--nojournal\"]\n",
        );
        assert!(
            err.contains("mongod_args: --nojournal was removed in MongoDB 6.1"),
            "{err}"
        );
        assert!(err.contains("7.0"), "{err}");
        let err = refusal(
            "name = \"x\"\nkind = \"standalone\"\nimage = \"mongo:5.0\"\nmongod_args = [\"--enableMajorityReadConcern\", \"false\"]\n",
        );
        assert!(
            err.contains("--enableMajorityReadConcern false was removed in MongoDB 5.0"),
            "{err}"
        );
        // Allowed where the version still has it, and unchecked when no version was chosen.
        assert!(parse("name = \"x\"\nkind = \"standalone\"\nversion = \"6.0\"\nmongod_args = [\"--nojournal\"]\n").is_ok());
        assert!(
            parse("name = \"x\"\nkind = \"standalone\"\nmongod_args = [\"--nojournal\"]\n").is_ok()
        );
    }

    #[test]
    fn client_engines_are_parsed_and_checked_strictly() {
        let base = "name = \"x\"\nkind = \"standalone\"\n";
        let s = parse(&format!(
            "{base}clients = [{{ docker = \"unix:///var/run/docker.sock\", count = 2 }}, {{ docker = \"tcp://loadgen-2.example:2376\", count = 4 }}]\n"
        ))
        .unwrap();
        assert_eq!(
            s.clients,
            vec![
                ClientHostSpec {
                    docker: "unix:///var/run/docker.sock".into(),
                    count: 2
                },
                ClientHostSpec {
                    docker: "tcp://loadgen-2.example:2376".into(),
                    count: 4
                },
            ]
        );
        assert_eq!(s.client_image, DEFAULT_CLIENT_IMAGE);
        assert!(parse(base).unwrap().clients.is_empty());
        let err = |extra: &str| refusal(&format!("{base}{extra}\n"));
        let e = err("clients = [{ docker = \"tcp://h:2375\", count = 0 }]");
        assert!(e.starts_with("t.toml:3: clients[0].count: "), "{e}");
        let e = err("clients = [{ docker = \"ssh://h\", count = 1 }]");
        assert!(
            e.starts_with("t.toml:3: clients[0].docker: scheme ssh://"),
            "{e}"
        );
        // A value quoted in the refusal keeps it one line (the topology fuzz test found this).
        let e = err("clients = [{ docker = \"u\\nix://h\", count = 1 }]");
        assert!(
            e.starts_with("t.toml:3: clients[0].docker: scheme u\\nix://"),
            "{e}"
        );
        let e = err("clients = [{ docker = \"loadgen-2:2375\", count = 1 }]");
        assert!(e.contains("clients[0].docker"), "{e}");
        let e = err("clients = [{ docker = \"https://h:2376\", count = 1 }]");
        assert!(
            e.contains("clients[0].docker: https:// endpoints are not supported"),
            "{e}"
        );
        let e = err("clients = [{ docker = \"tcp://h:2375\", count = 1, cpus = 2 }]");
        assert!(e.contains("cpus"), "{e}");
        let e = err("clients = [{ docker = \"tcp://h:2375\" }]");
        assert!(e.contains("count"), "{e}");
        let e = err(
            "clients = [{ docker = \"tcp://h:2375\", count = 1 }, { docker = \"tcp://h:2375\", count = 1 }]",
        );
        assert!(
            e.contains("clients[1].docker") && e.contains("listed twice"),
            "{e}"
        );
        let e = err("client_image = \"microshard-standin:test\"");
        assert!(e.contains("client_image: applies only with clients"), "{e}");
        let s = parse(&format!(
            "{base}client_image = \"microshard-standin:test\"\nclients = [{{ docker = \"unix:///run/d.sock\", count = 1 }}]\n"
        ))
        .unwrap();
        assert_eq!(s.client_image, "microshard-standin:test");
    }

    #[test]
    fn a_malformed_kubernetes_clients_entry_is_refused_naming_its_key() {
        let base =
            "name = \"x\"\nkind = \"standalone\"\nclient_image = \"ghcr.io/o/microshard:0.1.0\"\n";
        let err = |extra: &str| refusal(&format!("{base}{extra}\n"));
        let e = err("clients = [{ count = 2 }]");
        assert!(
            e.starts_with("t.toml:4: clients[0]: names neither docker"),
            "{e}"
        );
        let e = err("clients = [{ kubernetes = \"lab\", docker = \"tcp://h:1\", count = 2 }]");
        assert!(
            e.contains("clients[0]: names both docker and kubernetes"),
            "{e}"
        );
        let e = err("clients = [{ kubernetes = \"lab\", count = 0 }]");
        assert!(e.starts_with("t.toml:4: clients[0].count: "), "{e}");
        let e =
            err("clients = [{ docker = \"tcp://h:1\", count = 1, node_selector = { a = \"b\" } }]");
        assert!(
            e.contains("clients[0].node_selector: applies only to a kubernetes"),
            "{e}"
        );
        let e = err("clients = [{ kubernetes = \"a b\", count = 1 }]");
        assert!(e.contains("clients[0].kubernetes: \"a b\" is not"), "{e}");
        let e = err(
            "clients = [{ kubernetes = \"lab\", count = 1, node_selector = { \"a b\" = \"c\" } }]",
        );
        assert!(
            e.contains("clients[0].node_selector: \"a b\" is not a Kubernetes label key"),
            "{e}"
        );
        let e = err("clients = [{ kubernetes = \"lab\", count = 1, cpus = 2 }]");
        assert!(e.contains("cpus"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[cfg(not(feature = "kubernetes"))]
    #[test]
    fn client_pods_are_refused_by_a_build_without_the_kubernetes_feature() {
        let e = refusal(
            "name = \"x\"\nkind = \"standalone\"\nclient_image = \"i:1\"\nclients = [{ kubernetes = \"lab\", count = 2 }]\n",
        );
        assert!(
            e.starts_with("t.toml:4: clients[0].kubernetes: client pods need a microshard built with the kubernetes feature"),
            "{e}"
        );
    }

    #[cfg(feature = "kubernetes")]
    #[test]
    fn client_pods_are_one_entry_with_a_pinned_image() {
        let base = "name = \"x\"\nkind = \"standalone\"\n";
        let s = parse(&format!(
            "{base}client_image = \"ghcr.io/o/microshard:0.1.0\"\nclients = [{{ kubernetes = \"lab\", count = 3, node_selector = {{ \"microshard.io/role\" = \"load\" }} }}]\n"
        ))
        .unwrap();
        let pods = s.client_pods.unwrap();
        assert_eq!((pods.context.as_str(), pods.count), ("lab", 3));
        assert_eq!(
            pods.node_selector
                .get("microshard.io/role")
                .map(String::as_str),
            Some("load")
        );
        assert!(!pods.allow_colocated);
        assert!(s.clients.is_empty());
        let err = |extra: &str| refusal(&format!("{base}{extra}\n"));
        let e = err("clients = [{ kubernetes = \"lab\", count = 2 }]");
        assert!(
            e.contains("client_image: \"microshard-standin:latest\": client pods need"),
            "{e}"
        );
        let e = err("client_image = \"repo/m\"\nclients = [{ kubernetes = \"lab\", count = 2 }]");
        assert!(e.starts_with("t.toml:3: client_image: "), "{e}");
        assert!(parse(&format!("{base}client_image = \"m@sha256:ab\"\nclients = [{{ kubernetes = \"lab\", count = 2, allow_colocated = true }}]\n")).is_ok_and(|s| s.client_pods.is_some_and(|p| p.allow_colocated)));
        let e = err(
            "client_image = \"m:1\"\nclients = [{ kubernetes = \"a\", count = 1 }, { kubernetes = \"b\", count = 1 }]",
        );
        assert!(
            e.contains("clients[1].kubernetes: a second Kubernetes entry"),
            "{e}"
        );
        let e = err(
            "client_image = \"m:1\"\nclients = [{ docker = \"tcp://h:1\", count = 1 }, { kubernetes = \"b\", count = 1 }]",
        );
        assert!(
            e.contains("clients: mixes Docker engines and Kubernetes pods"),
            "{e}"
        );
    }

    #[test]
    fn bad_kind_is_a_syntax_error_with_line() {
        let err = refusal("name = \"x\"\nkind = \"cluster\"\n");
        assert!(err.starts_with("t.toml:2:"), "{err}");
    }

    #[test]
    fn cpuset_parsing() {
        assert_eq!(parse_cpuset("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_cpuset("3-1").is_err());
        assert!(parse_cpuset("").is_err());
    }

    #[test]
    fn shipped_topologies_load() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("topologies");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "toml") {
                let text = std::fs::read_to_string(&p).unwrap();
                TopologySpec::parse(&text, &p).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 6, "expected the shipped topologies, found {n}");
    }

    #[test]
    fn load_by_bare_name_and_suggests() {
        let s = TopologySpec::load("microshard-2").unwrap();
        assert_eq!(s.shards_per_host, 2);
        let err = TopologySpec::load("microshard-22").unwrap_err().to_string();
        assert!(err.contains("did you mean"), "{err}");
    }
}
