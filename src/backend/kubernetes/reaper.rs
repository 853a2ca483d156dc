//! The reaper inside the cluster: a CronJob that runs `microshard down --all --any-owner` in a
//! pod every few minutes, so a run whose CLI died (its Lease no longer renewed) is deleted
//! even if nobody runs `down --all` by hand. It deletes only what that command deletes: namespaces
//! labelled as microshard's whose Lease expired (`docs/kubernetes.md`, "The reaper").
//! `microshard down --all --emit-reaper IMAGE` prints these manifests, for a cluster admin to
//! apply once: the rights they grant (listing and deleting namespaces) are cluster-wide, which a
//! run should not need.

use serde_json::{Value, json};

use crate::backend::BackendError;

/// The reaper's namespace. Not labelled `app.kubernetes.io/managed-by: microshard`, so that the
/// reaper never counts its own namespace as a run's.
pub const NAMESPACE: &str = "microshard-reaper";
/// Its ServiceAccount, ClusterRole, ClusterRoleBinding and CronJob.
const NAME: &str = "microshard-reaper";
/// How often it runs: a Lease expires 60 s after its last renewal.
const SCHEDULE: &str = "*/5 * * * *";

/// The reaper's manifests, as YAML documents in the order to apply them, running `image` (a
/// microshard image: pinned, as every image microshard puts in a cluster).
pub fn reaper_manifests(image: &str) -> Result<String, BackendError> {
    super::manifests::pinned(image).map_err(|_| {
        BackendError::BadInput(format!(
            "--emit-reaper {image}: the reaper's image must be pinned, a tag other than latest or a digest: a microshard image built with the kubernetes feature (e.g. by `microshard standin image --tag NAME:VERSION`)"
        ))
    })?;
    Ok(super::yaml::documents(&objects(image)))
}

/// The reaper's objects: its namespace, identity, rights and schedule.
fn objects(image: &str) -> Vec<Value> {
    let labels = json!({"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "microshard"});
    let meta = |namespaced: bool| match namespaced {
        true => json!({"name": NAME, "namespace": NAMESPACE, "labels": labels}),
        false => json!({"name": NAME, "labels": labels}),
    };
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": labels}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(true)}),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta(false),
            "rules": [
                {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "delete"]},
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list"]},
            ],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta(false),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
        }),
        cron_job(image, meta(true), &labels),
    ]
}

/// The schedule: one pod at a time, never retried (the next run comes in minutes), the last few
/// kept for `kubectl logs`.
fn cron_job(image: &str, metadata: Value, labels: &Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": metadata,
        "spec": {
            "schedule": SCHEDULE,
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {"spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": 240,
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": NAME,
                        "restartPolicy": "Never",
                        "containers": [{
                            "name": "reaper",
                            "image": image,
                            "command": ["microshard", "down", "--all", "--any-owner"],
                            "resources": {
                                "requests": {"cpu": "10m", "memory": "32Mi"},
                                "limits": {"memory": "128Mi"},
                            },
                        }],
                    },
                },
            }},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reaper_runs_down_all_for_any_owner_with_no_more_rights_than_it_needs() {
        let objects = objects("ghcr.io/o/microshard:0.1.0");
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "Namespace",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "CronJob"
            ]
        );
        let spec = &objects[4]["spec"];
        let pod = &spec["jobTemplate"]["spec"]["template"]["spec"];
        assert_eq!(
            pod["containers"][0]["command"],
            json!(["microshard", "down", "--all", "--any-owner"])
        );
        assert_eq!(pod["serviceAccountName"], NAME);
        assert_eq!(spec["concurrencyPolicy"], "Forbid");
        assert_eq!(spec["jobTemplate"]["spec"]["backoffLimit"], 0);
        // Rights: namespaces and Leases only, nothing that writes other than deleting a namespace.
        let rules = objects[2]["rules"].as_array().cloned().unwrap_or_default();
        let verbs: Vec<&Value> = rules
            .iter()
            .flat_map(|r| r["verbs"].as_array())
            .flatten()
            .collect();
        assert!(
            verbs
                .iter()
                .all(|v| ["get", "list", "delete"].contains(&v.as_str().unwrap_or("")))
        );
        // Never labelled as a run's: `down --all` would reap the reaper.
        for o in &objects {
            assert!(
                o["metadata"]["labels"]
                    .get("app.kubernetes.io/managed-by")
                    .is_none()
            );
        }
    }

    #[test]
    fn an_unpinned_image_is_refused() {
        assert!(reaper_manifests("ghcr.io/o/microshard").is_err());
        assert!(reaper_manifests("ghcr.io/o/microshard:latest").is_err());
        let yaml = reaper_manifests("ghcr.io/o/microshard:0.1.0").unwrap_or_default();
        assert!(
            yaml.contains("schedule: '*/5 * * * *'") || yaml.contains("schedule: \"*/5 * * * *\""),
            "{yaml}"
        );
    }
}
