//! The existing backend: a cluster someone else runs. It is never initiated, reconfigured or
//! shut down; microshard only drops the `ycsb` database and, on a mongos, shards the collection.

use std::collections::BTreeMap;

use futures::future::BoxFuture;

use super::{Backend, BackendError, Readiness, RunningCluster, UpOptions, state};
use crate::cluster::{self, DetectedRole};
use crate::topology::{Kind, Plan, PlanOptions, TopologyError, TopologySpec};

/// The existing backend: a cluster that already runs, at the topology's `uri`.
pub(crate) struct ExistingBackend;

impl Backend for ExistingBackend {
    /// No members of microshard's own: the topology's `uri`.
    fn plan(&self, spec: &TopologySpec, opts: &PlanOptions) -> Result<Plan, TopologyError> {
        let Some(uri) = &spec.uri else {
            return Err(TopologyError::Plan(format!(
                "{}: the existing backend needs `uri = \"mongodb://...\"` in the topology file",
                spec.source.display()
            )));
        };
        let plan = Plan::attached(spec, opts, uri);
        let fix = "give the uri an address they reach";
        crate::topology::check_clients_reach(spec, &plan, None, fix)?;
        Ok(plan)
    }

    fn starts_servers(&self) -> bool {
        false
    }

    /// The cluster answers `ping` with the credentials.
    fn ready<'a>(&'a self, check: &'a Readiness<'a>) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            for (name, _, plan) in check.plans {
                if let Some(uri) = &plan.uri {
                    cluster_answers(&format!("{} {name}", check.label), uri).await?;
                }
            }
            Ok(())
        })
    }

    fn up<'a>(
        &'a self,
        plan: &'a Plan,
        opts: &'a UpOptions,
    ) -> BoxFuture<'a, Result<RunningCluster, BackendError>> {
        Box::pin(up(plan, opts))
    }
}

/// Detects the role of the server behind the plan's URI and prepares `ycsb` on it.
async fn up(plan: &Plan, opts: &UpOptions) -> Result<RunningCluster, BackendError> {
    let uri = plan.uri.clone().ok_or_else(|| {
        BackendError::Existing(format!(
            "{}: the existing backend needs `uri`",
            plan.source.display()
        ))
    })?;
    let shown = crate::redact::redact_uri(&uri);
    let (role, _) = cluster::detect_role(&uri).await.map_err(|e| {
        let hint = if uri.contains("directConnection") {
            ""
        } else {
            "; if the URI names one replica-set member whose advertised host names do not resolve from here, add ?directConnection=true"
        };
        BackendError::Existing(format!("{e}{hint}"))
    })?;
    check_role(&role, plan, &shown)?;
    let info = cluster::server_info(&uri).await?;
    cluster::check_privileges(&uri, role == DetectedRole::Mongos).await?;
    cluster::drop_ycsb(&uri).await?;
    let mut chunks = BTreeMap::new();
    if role == DetectedRole::Mongos {
        if crate::topology::flags::version_of(&info.version).is_some_and(|v| v < (5, 0)) {
            // Only this mongos is known; other routers of a 4.4 cluster need the same.
            cluster::flush_router_config(&uri).await?;
        }
        if plan.shard_collection {
            cluster::shard_table(&uri, cluster::YCSB_TABLE, &info.version, None).await?;
            chunks = cluster::chunks_per_shard_of(&uri, cluster::YCSB_TABLE).await?;
        }
        if !plan.keep_balancer {
            cluster::balancer_stop(&uri).await?;
        }
    }
    // The existing backend's plan has no members.
    let mut cluster = RunningCluster::from_plan(plan, opts.keep);
    cluster.entry_uri = uri;
    cluster.standin = info.standin;
    cluster.servers.insert("entry".to_string(), info);
    cluster.chunks = chunks;
    state::write(&cluster)?;
    Ok(cluster)
}

/// Refuses a server the existing backend cannot use as the topology says: one never initiated, a
/// secondary, or another kind than the topology's.
fn check_role(role: &DetectedRole, plan: &Plan, shown: &str) -> Result<(), BackendError> {
    let why = match (role, plan.kind) {
        (DetectedRole::Uninitiated, _) => format!(
            "{shown} is a replica-set member that was never initiated; microshard does not initiate, reconfigure or shut down servers it did not start"
        ),
        (DetectedRole::Secondary { set }, _) => format!(
            "{shown} is a secondary of replica set {set}; point uri at the primary (or the whole set)"
        ),
        (DetectedRole::Mongos, Kind::Standalone) => format!(
            "{}: kind = \"standalone\" but {shown} is a mongos; set kind = \"sharded\"",
            plan.source.display()
        ),
        (DetectedRole::Primary { .. } | DetectedRole::Standalone, Kind::Sharded) => format!(
            "{}: kind = \"sharded\" but {shown} is a mongod; set kind = \"standalone\" or point uri at a mongos",
            plan.source.display()
        ),
        _ => return Ok(()),
    };
    Err(BackendError::Existing(why))
}

/// An existing cluster (or `--uri` server) answers and accepts the credentials: a `ping` over
/// a connection the driver has authenticated, within a few seconds.
pub(crate) async fn cluster_answers(culprit: &str, uri: &str) -> Result<(), BackendError> {
    let shown = crate::redact::redact_uri(uri);
    let refuse = |why: String| BackendError::BadInput(format!("{culprit}: {shown}: {why}"));
    let mut opts = mongodb::options::ClientOptions::parse(uri)
        .await
        .map_err(|e| refuse(short(&e, false)))?;
    let tls = matches!(opts.tls, Some(mongodb::options::Tls::Enabled(_)));
    opts.server_selection_timeout = Some(std::time::Duration::from_secs(5));
    opts.connect_timeout = Some(std::time::Duration::from_secs(5));
    opts.app_name = Some("microshard-preflight".into());
    let client = mongodb::Client::with_options(opts).map_err(|e| refuse(short(&e, tls)))?;
    let admin = client.database("admin");
    let ping = admin.run_command(mongodb::bson::doc! {"ping": 1});
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(15), ping).await;
    // `ping` needs no credentials: a server that wants some is found out before any work.
    let database = client.database(&crate::db::url::database_from_url(uri));
    let unauthorized = match &outcome {
        Ok(Ok(_)) => crate::db::authorization_refusal(&database, tls).await,
        _ => None,
    };
    client.shutdown().await;
    match outcome {
        Ok(Ok(_)) => unauthorized.map_or(Ok(()), |why| Err(refuse(why))),
        Ok(Err(e)) => Err(refuse(short(&e, tls))),
        Err(_) => Err(refuse("no answer within 15 s".into())),
    }
}

/// One short line for a driver error: what to fix when the server turned the connection away
/// (credentials, TLS: `db::errors::refusal`), else the first server's error for an unreachable
/// cluster (`db::errors::describe`). `tls`: the connection string asked for TLS.
fn short(e: &mongodb::error::Error, tls: bool) -> String {
    crate::db::errors::refusal(e, tls).unwrap_or_else(|| crate::db::errors::describe(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{BackendKind, PlanOptions, TopologySpec};

    fn plan_for(uri: &str) -> Plan {
        let spec = TopologySpec::parse(
            &format!("name = \"e\"\nkind = \"standalone\"\nuri = \"{uri}\"\n"),
            std::path::Path::new("e.toml"),
        )
        .unwrap();
        let opts = PlanOptions {
            links_pending: false,
            backend: BackendKind::Existing,
            run_id: "e-1".into(),
            run_dir: "/tmp/ms/e-1".into(),
            bin_dir: None,
            total_memory_gb: Some(9.0),
        };
        ExistingBackend.plan(&spec, &opts).unwrap()
    }

    /// A server that cannot be selected: the error suggests `directConnection=true`, unless the
    /// URI has it already.
    #[tokio::test]
    async fn unreachable_server_suggests_a_direct_connection() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let err = up(
            &plan_for(&format!("mongodb://127.0.0.1:{port}/")),
            &UpOptions::default(),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("add ?directConnection=true"), "{err}");
        let err = up(
            &plan_for(&format!(
                "mongodb://127.0.0.1:{port}/?directConnection=true"
            )),
            &UpOptions::default(),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(!err.contains("add ?directConnection"), "{err}");
    }
}
