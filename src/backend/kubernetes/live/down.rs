//! Teardown: one run's namespace deleted with everything in it (kept with `--keep`), and `down
//! --all`'s search: every namespace labelled as microshard's whose Lease expired (a run nobody
//! holds) and whose labels the caller may remove. A namespace without microshard's labels is
//! never deleted.

use std::collections::HashMap;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;

use super::current::{configured, connect_current, connect_recorded};
use super::error::{KubeError, failed};
use super::namespace::{self, Deleted, LABEL_IO_RUN};
use super::{held, lease};
use crate::backend::{BackendError, LabelSearch, Labels, NotSearched, RunningCluster};
use crate::events::{Event, Events};

/// Stops what the run keeps going here, then deletes its namespace unless `keep`. A namespace
/// of its name that is not labelled as the run's was never the run's: said, and left alone.
pub(crate) async fn teardown(
    cluster: &RunningCluster,
    events: &dyn Events,
) -> Result<(), BackendError> {
    held::release(&cluster.run_id);
    let ns = namespace::name(&cluster.run_id);
    let warn = |s: String| events.event(Event::Warning(format!("microshard: {s}")));
    if cluster.keep {
        warn(format!(
            "namespace {ns} kept (--keep); delete it with: kubectl delete namespace {ns}"
        ));
        return Ok(());
    }
    let client = connect_recorded(cluster.kube_context.as_deref()).await?;
    match namespace::delete_if_ours(&client, &ns, Some(&cluster.run_id)).await {
        Ok(_) => Ok(()),
        Err(e @ KubeError::NotOurs { .. }) => {
            warn(e.to_string());
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// `down NAME` when no recorded run is NAME: the namespace NAME, if a cluster is configured, the
/// namespace exists and carries microshard's label (whoever's run it holds; held or not: the
/// user named it); the line to say, `None` when there is no such namespace.
pub(crate) async fn down_named(name: &str) -> Result<Option<String>, BackendError> {
    // No cluster to ask: no such namespace either, and the caller says nothing matched.
    let Ok(client) = connect_current().await else {
        return Ok(None);
    };
    Ok(delete_named(&client, name).await?)
}

/// [`down_named`] with `client`.
pub(crate) async fn delete_named(
    client: &kube::Client,
    name: &str,
) -> Result<Option<String>, KubeError> {
    Ok(match namespace::delete_if_ours(client, name, None).await? {
        Deleted::Now => Some(format!("namespace {name} (kubernetes)")),
        Deleted::Gone => None,
    })
}

/// `down --all`: deletes the namespaces [`reap`] picks, in the cluster of the kubeconfig; none
/// searched when no cluster is configured here at all.
pub(crate) async fn remove_expired(
    keep: &(dyn Fn(&Labels) -> bool + Sync),
) -> Result<Vec<String>, LabelSearch> {
    if !configured() {
        return Ok(Vec::new());
    }
    let client = connect_current().await.map_err(unreachable)?;
    reap(&client, keep, Timestamp::now()).await
}

/// Why the cluster was not searched.
fn unreachable(e: KubeError) -> LabelSearch {
    LabelSearch::Unreachable(NotSearched {
        name: "Kubernetes",
        note: format!("Kubernetes namespaces not searched: {e}"),
    })
}

/// Deletes every namespace labelled as microshard's whose labels pass `keep`, not already being
/// deleted, whose run nobody holds at `now` ([`lease::expired`]); one line each.
pub(crate) async fn reap(
    client: &kube::Client,
    keep: &(dyn Fn(&Labels) -> bool + Sync),
    now: Timestamp,
) -> Result<Vec<String>, LabelSearch> {
    let managed = namespace::list_managed(client).await.map_err(unreachable)?;
    let (mut done, mut errors) = (Vec::new(), Vec::new());
    for ns in managed {
        match reap_one(client, &ns, keep, now).await {
            Ok(Some(line)) => done.push(line),
            Ok(None) => {}
            Err(e) => errors.push(e.to_string()),
        }
    }
    if errors.is_empty() {
        Ok(done)
    } else {
        Err(LabelSearch::Failed(errors.join("; ")))
    }
}

/// Deletes `ns` if [`reap`] should; the line to say when it did.
async fn reap_one(
    client: &kube::Client,
    ns: &Namespace,
    keep: &(dyn Fn(&Labels) -> bool + Sync),
    now: Timestamp,
) -> Result<Option<String>, KubeError> {
    let name = ns.metadata.name.clone().unwrap_or_default();
    let labels: Labels = ns
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect::<HashMap<_, _>>();
    let leaving = ns.metadata.deletion_timestamp.is_some();
    if leaving || namespace::not_ours(ns, None).is_some() || !keep(&labels) {
        return Ok(None);
    }
    let held = Api::<Lease>::namespaced(client.clone(), &name)
        .get_opt(lease::NAME)
        .await
        .map_err(failed(format!(
            "reading Lease {} in namespace {name}",
            lease::NAME
        )))?;
    if !lease::expired(held.as_ref(), ns.metadata.creation_timestamp.as_ref(), now) {
        return Ok(None);
    }
    let run = labels.get(LABEL_IO_RUN).cloned().unwrap_or_default();
    Ok(
        match namespace::delete_if_ours(client, &name, None).await? {
            Deleted::Now => Some(format!(
                "namespace {name} (run {run}, kubernetes, its lease expired)"
            )),
            Deleted::Gone => None,
        },
    )
}
