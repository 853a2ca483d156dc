//! The namespace of one run: named from the run id, labelled as microshard's, created before
//! anything else of the run and deleted with everything in it. A namespace is deleted only when
//! it carries microshard's labels (and, for one run, that run's id): microshard never deletes a
//! namespace it did not create.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams, Preconditions};

use super::error::{KubeError, failed, not_found};
use crate::backend::labels::{LABEL_CLUSTER, LABEL_OWNER, LABEL_RUN, owner_id};
use crate::topology::Plan;

/// The label Kubernetes tools read for who manages an object.
pub(crate) const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Its value on everything microshard creates.
pub(crate) const MANAGER: &str = "microshard";
/// The label naming the run on the namespace and every object in it.
pub(crate) const LABEL_IO_RUN: &str = "microshard.io/run";

/// The namespace of run `run_id`: the run id as a DNS label (lower case, `_` as `-`). A run id
/// is at most 61 characters (a name of 40, a time stamp and a salt), within the 63 allowed.
pub(crate) fn name(run_id: &str) -> String {
    let label: String = run_id
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .take(63)
        .collect();
    label.trim_matches('-').to_string()
}

/// The labels of the run's namespace and of every object in it: who manages it, the run, the
/// topology and who made it (`down --all` removes only its owner's unless `--any-owner`).
pub(crate) fn labels(plan: &Plan) -> BTreeMap<String, String> {
    [
        (LABEL_MANAGED_BY, MANAGER.to_string()),
        (LABEL_IO_RUN, plan.run_id.clone()),
        (LABEL_RUN, plan.run_id.clone()),
        (LABEL_CLUSTER, plan.name.clone()),
        (LABEL_OWNER, owner_id()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Creates the run's namespace. One that already exists is refused, never adopted: it may be
/// someone else's.
pub(crate) async fn create(client: &kube::Client, plan: &Plan) -> Result<String, KubeError> {
    let ns = name(&plan.run_id);
    let object = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.clone()),
            labels: Some(labels(plan)),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &object)
        .await
        .map_err(failed(format!("creating namespace {ns}")))?;
    Ok(ns)
}

/// Why microshard must not delete `ns` as run `run`'s (any run's when `None`), if it must not.
pub(crate) fn not_ours(ns: &Namespace, run: Option<&str>) -> Option<String> {
    let labels = ns.metadata.labels.clone().unwrap_or_default();
    if labels.get(LABEL_MANAGED_BY).map(String::as_str) != Some(MANAGER) {
        return Some(format!("it has no label {LABEL_MANAGED_BY}={MANAGER}"));
    }
    match (run, labels.get(LABEL_IO_RUN)) {
        (Some(want), Some(got)) if want == got => None,
        (Some(want), got) => Some(format!(
            "its label {LABEL_IO_RUN} is {}, not {want}",
            got.map_or("missing".to_string(), |g| format!("{g:?}"))
        )),
        (None, _) => None,
    }
}

/// What a deletion found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Deleted {
    /// Deleted now (Kubernetes removes what it holds in the background).
    Now,
    /// Already gone.
    Gone,
}

/// Deletes namespace `ns` of run `run` (any run's when `None`) with everything in it, only if
/// it carries microshard's labels; the deletion names the namespace's uid as a precondition, so
/// a namespace recreated meanwhile by someone else is not the one deleted.
pub(crate) async fn delete_if_ours(
    client: &kube::Client,
    ns: &str,
    run: Option<&str>,
) -> Result<Deleted, KubeError> {
    let api = Api::<Namespace>::all(client.clone());
    let Some(found) = api
        .get_opt(ns)
        .await
        .map_err(failed(format!("reading namespace {ns}")))?
    else {
        return Ok(Deleted::Gone);
    };
    if let Some(why) = not_ours(&found, run) {
        return Err(KubeError::NotOurs {
            namespace: ns.to_string(),
            why,
        });
    }
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: found.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match api.delete(ns, &dp).await {
        Ok(_) => Ok(Deleted::Now),
        Err(e) if not_found(&e) => Ok(Deleted::Gone),
        Err(e) => Err(failed(format!("deleting namespace {ns}"))(e)),
    }
}

/// Every namespace labelled as microshard's, whoever's run it holds.
pub(crate) async fn list_managed(client: &kube::Client) -> Result<Vec<Namespace>, KubeError> {
    let lp = ListParams::default().labels(&format!("{LABEL_MANAGED_BY}={MANAGER}"));
    let list = Api::<Namespace>::all(client.clone())
        .list(&lp)
        .await
        .map_err(failed("listing microshard's namespaces"))?;
    Ok(list.items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_id_names_its_namespace_as_a_dns_label() {
        assert_eq!(
            name("microshard-2-20261207-060000-ab12"),
            "microshard-2-20261207-060000-ab12"
        );
        assert_eq!(
            name("My_Topo-20261207-060000-ab12"),
            "my-topo-20261207-060000-ab12"
        );
        let longest = format!("{}-20261207-060000-ab12", "a".repeat(40));
        assert_eq!(name(&longest).len(), 61);
        assert_eq!(name(&"b".repeat(80)).len(), 63);
    }

    #[test]
    fn only_a_namespace_with_microshard_s_labels_is_ours() {
        let ns = |labels: &[(&str, &str)]| Namespace {
            metadata: ObjectMeta {
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let run = ns(&[(LABEL_MANAGED_BY, MANAGER), (LABEL_IO_RUN, "r1")]);
        assert_eq!(not_ours(&run, Some("r1")), None);
        assert_eq!(not_ours(&run, None), None);
        assert!(not_ours(&run, Some("r2")).is_some_and(|w| w.contains("not r2")));
        let helm = ns(&[(LABEL_MANAGED_BY, "Helm"), (LABEL_IO_RUN, "r1")]);
        assert!(not_ours(&helm, Some("r1")).is_some());
        assert!(not_ours(&helm, None).is_some());
        assert!(not_ours(&Namespace::default(), None).is_some());
        let unnamed_run = ns(&[(LABEL_MANAGED_BY, MANAGER)]);
        assert!(not_ours(&unnamed_run, Some("r1")).is_some_and(|w| w.contains("missing")));
    }
}
