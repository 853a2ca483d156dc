//! The bring-up sequence every backend shares: members ready, replica sets initiated, primaries
//! elected, shards added, the collection sharded; each step said as an event.

use std::collections::BTreeMap;

use super::sharding::list_shards;
use super::{
    AssemblyOptions, ClusterError, DetectedRole, Launcher, ServerInfo, YCSB_NS, YCSB_TABLE,
    add_shard, balancer_stop, detect_role, initiate, server_info, shard_table_on_every_shard,
    wait_primary, wait_ready,
};
use crate::events::{Event, Events};
use crate::topology::{Member, MemberRole, Plan};

/// What to add to a `replSetInitiate` refusal that no member "maps to this node"
/// (InvalidReplicaSetConfig, 93) when members on several Docker hosts are named `address:port`:
/// a member decides which entry is itself by connecting to it, which from inside a bridge
/// container reaches its own host's published port only through hairpin NAT or Docker's
/// userland proxy (docs/mongodb-versions.md, "Docker addressing").
pub(crate) fn initiate_hint(plan: &Plan, err: &ClusterError) -> &'static str {
    let refused = matches!(err, ClusterError::Command { code: Some(93), message, .. } if message.contains("maps to this node"));
    if refused && plan.multi_host && plan.runs_image() {
        "; with several Docker hosts each member must resolve and reach its own host's address and published port from inside its container: the address must resolve there (microshard passes each host's address as this machine resolves it; a name this machine cannot resolve is left to the containers' DNS, which does not read the host's /etc/hosts), and hairpin NAT or the userland proxy must be on: check with a container on that host"
    } else {
        ""
    }
}

/// What [`assemble`] found: server versions per member and whether they are stand-ins.
#[derive(Debug, Clone, Default)]
pub(crate) struct Assembly {
    /// `member name → ServerInfo`.
    pub servers: BTreeMap<String, ServerInfo>,
    /// Chunks per shard after `shardCollection` (empty for a standalone).
    pub chunks: BTreeMap<String, u64>,
    /// `replica set → member name` of the member that won its first election.
    pub primaries: BTreeMap<String, String>,
}

/// The whole bring-up sequence (ready, initiate, primaries, addShard, sharding), for any
/// backend; each step is said to `events` ([`Event::BringUp`]).
pub(crate) async fn assemble(
    plan: &Plan,
    launcher: &dyn Launcher,
    opts: &AssemblyOptions,
    events: &dyn Events,
) -> Result<Assembly, ClusterError> {
    let run = Assembler {
        plan,
        launcher,
        opts,
        events,
    };
    let mut assembly = Assembly::default();
    let mongods = run.start_mongods(&mut assembly).await?;
    run.initiate_sets(&mongods, &mut assembly).await?;
    if plan.kind == crate::topology::Kind::Standalone {
        return Ok(assembly);
    }
    let entry = run.start_routers(&mut assembly).await?;
    let mongos = launcher.admin_address(entry);
    let shards = run.add_shards(&mongos).await?;
    let version = assembly
        .servers
        .get(&entry.name)
        .map(|s| s.version.clone())
        .unwrap_or_default();
    if plan.shard_collection {
        assembly.chunks = run.shard_collection(&mongos, &version, &shards).await?;
    } else {
        run.say(format!(
            "{YCSB_NS} left unsharded (shard_collection = false)"
        ));
    }
    if !plan.keep_balancer {
        run.say("balancerStop".into());
        balancer_stop(&mongos).await?;
    }
    Ok(assembly)
}

/// One bring-up in progress: the steps of [`assemble`], in order.
struct Assembler<'a> {
    plan: &'a Plan,
    launcher: &'a dyn Launcher,
    opts: &'a AssemblyOptions,
    events: &'a dyn Events,
}

impl<'a> Assembler<'a> {
    fn say(&self, step: String) {
        self.events.event(Event::BringUp(step));
    }

    /// 2-3: the data-bearing mongods, all started before any is waited for.
    async fn start_mongods(
        &self,
        assembly: &mut Assembly,
    ) -> Result<Vec<&'a Member>, ClusterError> {
        let mongods: Vec<&Member> = self
            .plan
            .start_order()
            .into_iter()
            .filter(|m| m.role != MemberRole::Mongos)
            .collect();
        for m in &mongods {
            self.say(format!("starting {} ({})", m.name, m.role));
            self.launcher.start(m).await.map_err(ClusterError::Start)?;
        }
        for m in &mongods {
            wait_ready(self.launcher, m, self.opts.ready_timeout).await?;
            let info = server_info(&self.launcher.admin_address(m)).await?;
            assembly.servers.insert(m.name.clone(), info);
        }
        Ok(mongods)
    }

    /// 4-5: every replica set initiated, then its primary waited for.
    async fn initiate_sets(
        &self,
        mongods: &[&Member],
        assembly: &mut Assembly,
    ) -> Result<(), ClusterError> {
        let mut sets: BTreeMap<String, Vec<&Member>> = BTreeMap::new();
        for m in mongods {
            if let Some(rs) = &m.replica_set {
                sets.entry(rs.clone()).or_default().push(m);
            }
        }
        for (set, members) in &sets {
            let hosts: Vec<String> = members.iter().map(|m| m.member_host.clone()).collect();
            let configsvr = members.iter().any(|m| m.role == MemberRole::Config);
            self.say(format!("replSetInitiate {set} [{}]", hosts.join(", ")));
            initiate(
                &self.launcher.admin_address(members[0]),
                set,
                &hosts,
                configsvr,
            )
            .await
            .map_err(|e| ClusterError::Initiate {
                hint: initiate_hint(self.plan, &e),
                error: Box::new(e),
            })?;
        }
        for (set, members) in &sets {
            let primary =
                wait_primary(self.launcher, members, set, self.opts.primary_timeout).await?;
            self.say(format!("{set} has a primary: {primary}"));
            assembly.primaries.insert(set.clone(), primary);
        }
        Ok(())
    }

    /// 6: the routers, each checked to be a mongos; returns the entry router.
    async fn start_routers(&self, assembly: &mut Assembly) -> Result<&'a Member, ClusterError> {
        let routers: Vec<&Member> = self.plan.members_with(MemberRole::Mongos).collect();
        for m in &routers {
            self.say(format!("starting {} (mongos)", m.name));
            self.launcher.start(m).await.map_err(ClusterError::Start)?;
        }
        for m in &routers {
            wait_ready(self.launcher, m, self.opts.ready_timeout).await?;
            let address = self.launcher.admin_address(m);
            let (role, _) = detect_role(&address).await?;
            if role != DetectedRole::Mongos {
                return Err(ClusterError::Check(format!(
                    "{} ({address}) answers but is not a mongos (hello says {role:?})",
                    m.name
                )));
            }
            let info = server_info(&address).await?;
            assembly.servers.insert(m.name.clone(), info);
        }
        let Some(entry) = routers.first() else {
            return Err(ClusterError::Check(format!(
                "plan {} has no mongos",
                self.plan.name
            )));
        };
        Ok(entry)
    }

    /// 7: the shards, each named after its replica set with every member in the seed list, and
    /// checked listed; returns them.
    async fn add_shards(
        &self,
        mongos: &str,
    ) -> Result<Vec<(String, Vec<&'a Member>)>, ClusterError> {
        let shards = self.plan.shard_sets();
        for (name, members) in &shards {
            let conn = Plan::shard_connection_string(members);
            self.say(format!("addShard {conn}"));
            add_shard(mongos, &conn, name, self.opts.add_shard_timeout).await?;
        }
        let listed = list_shards(mongos).await?;
        for (name, _) in &shards {
            if !listed.iter().any(|l| l == name) {
                return Err(ClusterError::Check(format!(
                    "listShards on {mongos} does not list shard {name} after addShard (lists: {})",
                    listed.join(", ")
                )));
            }
        }
        Ok(shards)
    }

    /// 8: the collection sharded, and every shard checked to own chunks of it.
    async fn shard_collection(
        &self,
        mongos: &str,
        version: &str,
        shards: &[(String, Vec<&Member>)],
    ) -> Result<BTreeMap<String, u64>, ClusterError> {
        self.say(format!("shardCollection {YCSB_NS} {{_id: \"hashed\"}}"));
        let names: Vec<String> = shards.iter().map(|(n, _)| n.clone()).collect();
        let per_shard = self.plan.initial_chunks_per_shard;
        shard_table_on_every_shard(mongos, YCSB_TABLE, version, per_shard, &names).await
    }
}
