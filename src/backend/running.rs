//! What a backend records of a cluster it brought up (or found): its members, how each runs,
//! what the assembly learned. Serialized as the state file ([`super::state`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cluster::ServerInfo;
use crate::topology::{BackendKind, Kind, MemberRole, Plan};

/// How far a member got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemberState {
    /// In the plan, not started (or its start was interrupted).
    #[default]
    Planned,
    /// Process spawned / container started.
    Started,
    /// Answered and took its part in the cluster.
    Ready,
    /// Not running any more.
    Stopped,
}

impl std::fmt::Display for MemberState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MemberState::Planned => "planned",
            MemberState::Started => "started",
            MemberState::Ready => "ready",
            MemberState::Stopped => "stopped",
        })
    }
}

/// What runs a member, as its backend started it: what teardown stops and `status` shows.
///
/// Stored flattened into the member's record (`"pid": 123`, or `"container": …, "endpoint":
/// …`), the keys state files have always had.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Handle {
    /// A container (Docker backend), named before it exists so an interrupted create is still
    /// found.
    Container {
        /// Its name.
        container: String,
        /// Its engine (`None` = the local default).
        endpoint: Option<String>,
    },
    /// A local process (process backend): its id once started.
    Process {
        /// Process id, once spawned.
        pid: Option<u32>,
    },
}

impl Default for Handle {
    fn default() -> Self {
        Handle::Process { pid: None }
    }
}

impl Handle {
    /// The process id of a started local process.
    pub fn pid(&self) -> Option<u32> {
        match self {
            Handle::Process { pid } => *pid,
            Handle::Container { .. } => None,
        }
    }

    /// The container's name.
    pub fn container(&self) -> Option<&str> {
        match self {
            Handle::Container { container, .. } => Some(container),
            Handle::Process { .. } => None,
        }
    }

    /// Where `status` says it runs: its container, or its process id once started.
    fn place(&self) -> Option<String> {
        match self {
            Handle::Container { container, .. } => Some(container.clone()),
            Handle::Process { pid } => pid.map(|p| p.to_string()),
        }
    }
}

/// One member of a running cluster.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunningMember {
    /// Plan name (`sh0`).
    pub name: String,
    /// MemberRole in the cluster.
    pub role: MemberRole,
    /// `host:port` as members see each other.
    pub member_host: String,
    /// `host:port` microshard reaches it at: the published port in Docker ([`Plan::dial_address`]).
    pub address: String,
    /// Direct-connection URI for per-member statistics.
    pub direct_uri: String,
    /// Current state.
    pub state: MemberState,
    /// What runs it: a process or a container.
    #[serde(flatten)]
    pub handle: Handle,
    /// Port it listens on.
    pub port: u16,
    /// The exact command line it runs.
    pub argv: Vec<String>,
    /// Environment variables microshard set for it (`GLIBC_TUNABLES` for local 8.0+ mongod).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// WiredTiger cache (GB) it was given (mongod only), recorded with results.
    #[serde(default)]
    pub cache_gb: Option<f64>,
    /// Container memory limit (GB), when there is one.
    #[serde(default)]
    pub memory_limit_gb: Option<f64>,
    /// The soft open-files limit it started with, when microshard set or read it (`None`:
    /// unknown, e.g. an engine that refused to raise it); it caps connections at 0.8 × this.
    #[serde(default)]
    pub nofile: Option<u64>,
}

/// A cluster that `up` started (or found, for `existing`): what experiments connect to and what
/// `down` tears down. Serialized as the state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunningCluster {
    /// Topology name.
    pub name: String,
    /// Run id (labels, container names, state file name).
    pub run_id: String,
    /// Backend that runs it.
    pub backend: BackendKind,
    /// Standalone or sharded.
    pub kind: Kind,
    /// Where clients connect (mongos or the standalone). May hold credentials (existing): print
    /// [`RunningCluster::entry_uri_redacted`] instead.
    pub entry_uri: String,
    /// Every member.
    pub members: Vec<RunningMember>,
    /// `member → buildInfo.version / stand-in flag`.
    pub servers: BTreeMap<String, ServerInfo>,
    /// True when any server is the microshard stand-in: figures measured against it are not MongoDB figures.
    pub standin: bool,
    /// `mongod --version` / `mongos --version` first lines (process backend).
    pub binary_versions: BTreeMap<String, String>,
    /// Chunks of ycsb.usertable per shard after sharding.
    pub chunks: BTreeMap<String, u64>,
    /// `replica set → member` that won its first election (any member of a larger set may).
    #[serde(default)]
    pub primaries: BTreeMap<String, String>,
    /// Docker networks created: `(endpoint, name)`.
    pub networks: Vec<(Option<String>, String)>,
    /// Directories created that `down` removes unless `keep`.
    pub created_dirs: Vec<PathBuf>,
    /// Keep directories at teardown.
    pub keep: bool,
    /// The plan it was made from.
    pub plan: Plan,
    /// This cluster's state file.
    pub state_file: PathBuf,
    /// The microshard process that started it.
    pub owner_pid: u32,
    /// When it was started (UTC, RFC 3339).
    pub started_at: String,
    /// The kubeconfig context its objects were made in (`--backend kubernetes`), so that `down`
    /// reaches that cluster whatever the current context is then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_context: Option<String>,
    /// What every figure measured on it must say (exclusive CPUs the backend could not show,
    /// `docs/kubernetes.md`): each cell is degraded with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
    /// Each member's image as it ran, by digest, where the backend reports it (a pod's
    /// `imageID`), recorded with every result measured on it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub images: BTreeMap<String, String>,
}

impl RunningCluster {
    /// The entry URI with any password masked, for printing and storing.
    pub(crate) fn entry_uri_redacted(&self) -> String {
        crate::redact::redact_uri(&self.entry_uri)
    }

    /// The members that hold data: the shards, or the standalone.
    pub fn data_members(&self) -> impl Iterator<Item = &RunningMember> {
        self.members
            .iter()
            .filter(|m| matches!(m.role, MemberRole::Shard | MemberRole::Standalone))
    }

    /// The members that take writes: each shard set's elected primary (or its only member), or
    /// the standalone — where per-shard server metrics belong, since secondaries of a stand-in
    /// or of a lagging set do not show the load.
    pub fn data_primaries(&self) -> impl Iterator<Item = &RunningMember> {
        self.data_members().filter(|m| {
            match self
                .plan
                .set_of(&m.name)
                .and_then(|s| self.primaries.get(s))
            {
                Some(primary) => *primary == m.name,
                None => true,
            }
        })
    }

    /// A new record for `plan`, all members planned.
    pub(crate) fn from_plan(plan: &Plan, keep: bool) -> RunningCluster {
        let members = plan
            .members
            .iter()
            .map(|m| RunningMember {
                name: m.name.clone(),
                role: m.role,
                member_host: m.member_host.clone(),
                address: plan.dial_address(m),
                port: m.port,
                handle: match &m.container {
                    Some(container) => Handle::Container {
                        container: container.clone(),
                        endpoint: m.docker_endpoint.clone(),
                    },
                    None => Handle::Process { pid: None },
                },
                argv: m.argv.clone(),
                cache_gb: m.cache_gb,
                memory_limit_gb: m.memory_limit_gb,
                ..RunningMember::default() // planned: not started, no pid yet
            })
            .collect();
        RunningCluster {
            name: plan.name.clone(),
            run_id: plan.run_id.clone(),
            backend: plan.backend,
            kind: plan.kind,
            entry_uri: String::new(),
            members,
            servers: BTreeMap::new(),
            standin: false,
            binary_versions: BTreeMap::new(),
            chunks: BTreeMap::new(),
            primaries: BTreeMap::new(),
            networks: Vec::new(),
            created_dirs: Vec::new(),
            keep,
            plan: plan.clone(),
            state_file: super::state::state_path(&plan.run_id),
            owner_pid: std::process::id(),
            started_at: chrono::Utc::now().to_rfc3339(),
            kube_context: None,
            caveats: Vec::new(),
            images: BTreeMap::new(),
        }
    }

    /// The member table `up` and `status` print.
    pub(crate) fn render(&self) -> String {
        #[derive(tabled::Tabled)]
        struct MemberRow {
            role: String,
            name: String,
            #[tabled(rename = "host:port")]
            host: String,
            state: String,
            version: String,
            #[tabled(rename = "pid / container")]
            place: String,
        }
        let rows: Vec<MemberRow> = self
            .members
            .iter()
            .map(|m| MemberRow {
                role: m.role.to_string(),
                name: m.name.clone(),
                host: m.member_host.clone(),
                state: m.state.to_string(),
                version: self
                    .servers
                    .get(&m.name)
                    .map(|s| s.version.clone())
                    .unwrap_or_else(|| "-".into()),
                place: m.handle.place().unwrap_or_else(|| "-".into()),
            })
            .collect();
        let mut out = format!(
            "{} ({}, {}, run {})\nconnect: {}\n",
            self.name,
            match self.kind {
                Kind::Standalone => "standalone",
                Kind::Sharded => "sharded",
            },
            self.backend,
            self.run_id,
            self.entry_uri_redacted()
        );
        if !rows.is_empty() {
            let mut t = tabled::Table::new(rows);
            t.with(tabled::settings::Style::psql());
            out.push_str(&t.to_string());
            out.push('\n');
        }
        if self.standin {
            out.push_str("note: these servers are the microshard stand-in, not MongoDB; figures measured against them are stand-in figures\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// State files written before the handle was one enum carried all three keys: they read
    /// back as the handle they describe, and a handle is written back under the same keys.
    #[test]
    fn handles_read_old_state_files_and_keep_their_keys() {
        let member = |extra: &str| {
            let text = format!(
                r#"{{"name": "sh0", "role": "shard", "member_host": "h:1", "address": "h:1", "direct_uri": "", "state": "started", "port": 1, "argv": [], {extra}}}"#
            );
            serde_json::from_str::<RunningMember>(&text).unwrap()
        };
        let process = member(r#""pid": 42, "container": null, "endpoint": null"#);
        assert_eq!(process.handle, Handle::Process { pid: Some(42) });
        let planned = member(r#""pid": null, "container": null, "endpoint": null"#);
        assert_eq!(planned.handle, Handle::Process { pid: None });
        let container = member(r#""pid": null, "container": "r-sh0", "endpoint": "tcp://e:2375""#);
        assert_eq!(
            container.handle,
            Handle::Container {
                container: "r-sh0".into(),
                endpoint: Some("tcp://e:2375".into())
            }
        );
        let written = serde_json::to_value(&process).unwrap();
        assert_eq!(written["pid"], 42);
        assert!(written.get("container").is_none(), "{written}");
        let written = serde_json::to_value(&container).unwrap();
        assert_eq!(written["container"], "r-sh0");
        assert!(written.get("pid").is_none(), "{written}");
        assert_eq!(process.handle.place().as_deref(), Some("42"));
        assert_eq!(planned.handle.place(), None);
        assert_eq!(container.handle.container(), Some("r-sh0"));
    }
}
