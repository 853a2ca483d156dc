//! Facts about a deployment that its cells record because a figure means little without them:
//! the server's default write concern (read once per deployment, where the server has one) and
//! which member is each shard's primary when a cell starts (a later election moves the writes,
//! and per-shard counters must follow them). docs/mongodb-versions.md, R1 and N10.

use std::collections::BTreeMap;
use std::time::Duration;

use super::lab::Deployment;
use super::metrics::Watched;
use super::model::DefaultWriteConcernRecord;
use crate::topology::{Kind, MemberRole, Plan};

/// Why a plain standalone has no default write concern to read.
pub(crate) const STANDALONE_NO_DEFAULT: &str = "a standalone mongod has no cluster-wide default write concern (getDefaultRWConcern fails there with code 51300); its implicit default is w:1";

/// Reads the default write concern once for a deployment: on its mongos or `rs0`, skipped with
/// the reason for a plain standalone (and recorded as the server's error where it refuses, as
/// a shard member does with 51301).
pub(crate) async fn default_write_concern(
    plan: Option<&Plan>,
    entry_uri: &str,
) -> DefaultWriteConcernRecord {
    let standalone = plan.is_some_and(|p| {
        p.kind == Kind::Standalone
            && p.entry()
                .is_some_and(|e| e.role == MemberRole::Standalone && e.replica_set.is_none())
    });
    if standalone {
        return DefaultWriteConcernRecord {
            not_read: Some(STANDALONE_NO_DEFAULT.into()),
            ..Default::default()
        };
    }
    match crate::cluster::default_write_concern(entry_uri).await {
        Ok(d) => {
            let wc = d.write_concern;
            DefaultWriteConcernRecord {
                w: wc.w.map(|w| match w {
                    mongodb::options::Acknowledgment::Nodes(n) => n.to_string(),
                    mongodb::options::Acknowledgment::Majority => "majority".into(),
                    mongodb::options::Acknowledgment::Custom(s) => s,
                    other => format!("{other:?}"),
                }),
                journal: wc.journal,
                wtimeout_ms: wc.w_timeout.map(|t| t.as_millis() as u64),
                source: d.source,
                not_read: None,
            }
        }
        Err(e) => DefaultWriteConcernRecord {
            not_read: Some(format!("getDefaultRWConcern: {e}")),
            ..Default::default()
        },
    }
}

/// Each shard set's writable primary now (`set → member`), asked of every member with `hello`;
/// a set none of whose members says it is primary is left out.
pub(crate) async fn shard_primaries(plan: Option<&Plan>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(plan) = plan else { return out };
    for (set, members) in plan.shard_sets() {
        for m in members {
            let address = plan.dial_address(m);
            let ask = crate::cluster::detect_role(&address);
            if let Ok(Ok((crate::cluster::DetectedRole::Primary { .. }, _))) =
                tokio::time::timeout(Duration::from_secs(5), ask).await
            {
                out.insert(set.clone(), m.name.clone());
                break;
            }
        }
    }
    out
}

/// The servers to watch for a cell: the deployment's, with each shard's entry moved to the
/// member `primaries` names when another member has become its primary.
pub(crate) fn watched_now(
    deployment: &Deployment,
    primaries: &BTreeMap<String, String>,
) -> Vec<Watched> {
    let Some(plan) = deployment.plan.as_ref() else {
        return deployment.watched.clone();
    };
    deployment
        .watched
        .iter()
        .map(|w| {
            let set = plan
                .members
                .iter()
                .find(|m| m.name == w.name && m.role == MemberRole::Shard)
                .and_then(|m| m.replica_set.as_ref());
            let now = set
                .and_then(|s| primaries.get(s))
                .filter(|p| **p != w.name)
                .and_then(|p| plan.members.iter().find(|m| m.name == *p));
            now.map_or_else(|| w.clone(), |m| watched(plan, m, &w.role))
        })
        .collect()
}

/// The shard members a cell does not watch at its start (the secondaries). Their counters are
/// read before the cell too, so a shard that fails over during it is read at its new primary
/// from the start to the end of the cell, never as one member's counters
/// before and another's after.
pub(crate) fn standby_members(deployment: &Deployment, watched: &[Watched]) -> Vec<Watched> {
    let Some(plan) = deployment.plan.as_ref() else {
        return Vec::new();
    };
    plan.members_with(MemberRole::Shard)
        .filter(|m| !watched.iter().any(|w| w.name == m.name))
        .map(|m| self::watched(plan, m, "shard"))
        .collect()
}

/// A member of `plan` watched directly, in `role`.
fn watched(plan: &Plan, m: &crate::topology::Member, role: &str) -> Watched {
    let uri = crate::cluster::direct_uri(&plan.dial_address(m));
    Watched::new(&m.name, role, &uri)
}

/// The servers whose memory a curve's end sums: the watched ones (entry points, each shard's
/// primary) and every config server, which hold memory as much as the rest.
pub(crate) fn memory_members(deployment: &Deployment) -> Vec<Watched> {
    let mut members = deployment.watched.clone();
    let Some(plan) = deployment.plan.as_ref() else {
        return members;
    };
    members.extend(
        (plan.members.iter())
            .filter(|m| m.role == MemberRole::Config)
            .map(|m| watched(plan, m, "config")),
    );
    members
}

/// What a cell starts with: the servers to watch and each shard's primary.
pub(crate) async fn at_cell_start(
    deployment: &Deployment,
) -> (Vec<Watched>, BTreeMap<String, String>) {
    let primaries = shard_primaries(deployment.plan.as_ref()).await;
    (watched_now(deployment, &primaries), primaries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let spec = crate::topology::TopologySpec::parse(
            "name = \"p\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_members = 3\n",
            std::path::Path::new("t.toml"),
        )
        .unwrap();
        let mut opts =
            crate::topology::PlanOptions::new(&spec, crate::topology::BackendKind::Docker);
        opts.run_id = "p-1".into();
        opts.total_memory_gb = Some(9.0);
        crate::backend::plan(&spec, &opts).unwrap()
    }

    #[test]
    fn a_new_primary_moves_the_watched_shard() {
        let plan = plan();
        let sets = plan.shard_sets();
        let (set0, members0) = &sets[0];
        let first = members0[0].name.clone();
        let second = members0[1].name.clone();
        let d = Deployment {
            watched: vec![
                Watched {
                    name: "entry".into(),
                    role: "entry".into(),
                    uri: "mongodb://x/".into(),
                },
                Watched {
                    name: first.clone(),
                    role: "shard".into(),
                    uri: "old".into(),
                },
            ],
            plan: Some(plan.clone()),
            ..Default::default()
        };
        let same = watched_now(&d, &BTreeMap::from([(set0.clone(), first.clone())]));
        assert_eq!(same[1].uri, "old");
        let moved = watched_now(&d, &BTreeMap::from([(set0.clone(), second.clone())]));
        assert_eq!(moved[0].name, "entry");
        assert_eq!(moved[1].name, second);
        assert!(
            moved[1].uri.contains("directConnection=true"),
            "{}",
            moved[1].uri
        );
    }

    #[test]
    fn memory_is_summed_over_the_watched_members_and_every_config_server() {
        let plan = plan();
        let entry = Watched {
            name: "entry".into(),
            role: "entry".into(),
            uri: "mongodb://x/".into(),
        };
        let d = Deployment {
            watched: vec![entry.clone()],
            plan: Some(plan.clone()),
            ..Default::default()
        };
        let members = memory_members(&d);
        let configs: Vec<&str> = (plan.members.iter())
            .filter(|m| m.role == MemberRole::Config)
            .map(|m| m.name.as_str())
            .collect();
        assert!(!configs.is_empty());
        let names: Vec<&str> = members.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names[0], "entry");
        assert_eq!(&names[1..], &configs[..]);
        assert!(
            members[1..]
                .iter()
                .all(|w| w.role == "config" && w.uri.contains("directConnection=true"))
        );
        // Without a plan (a URI), the watched members alone.
        let bare = Deployment {
            watched: vec![entry],
            ..Default::default()
        };
        assert_eq!(memory_members(&bare).len(), 1);
    }
}
