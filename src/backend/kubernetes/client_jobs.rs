//! Client pods left by a run whose CLI died mid-phase (killed outright, the machine lost): the
//! phase's Job, its pods and its Secret stay in the context's namespace, waiting on the start
//! barrier until the Job's deadline. Every run is recorded in a state file before it starts, so
//! its teardown — by `down TOPOLOGY` or `down --all`, which finds the run whose process is gone —
//! deletes what carries its run label there too (`docs/kubernetes.md`, "Client pods").

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams};

use super::connect::connect;
use crate::backend::labels::LABEL_RUN;
use crate::topology::Plan;

/// Deletes the client Jobs (with their pods) and Secrets of `plan`'s run in its client pods'
/// context; `None` when it has none there or they are gone, else what could not be done, said
/// as a warning by the caller (the servers' teardown stands).
pub(crate) async fn remove(plan: &Plan) -> Option<String> {
    let pods = plan.client_pods.as_ref()?;
    let client = match connect(&pods.context).await {
        Ok(c) => c,
        Err(e) => {
            return Some(format!(
                "client pods of run {} not searched: {e}",
                plan.run_id
            ));
        }
    };
    remove_with(&client, &plan.run_id, &pods.context).await
}

/// [`remove`] with `client`, in its default namespace.
async fn remove_with(client: &kube::Client, run_id: &str, context: &str) -> Option<String> {
    let ns = client.default_namespace().to_string();
    let lp = ListParams::default().labels(&format!("{LABEL_RUN}={run_id}"));
    let dp = DeleteParams::background();
    let jobs = Api::<Job>::namespaced(client.clone(), &ns)
        .delete_collection(&dp, &lp)
        .await;
    let secrets = Api::<Secret>::namespaced(client.clone(), &ns)
        .delete_collection(&dp, &lp)
        .await;
    let failed = [("Jobs", jobs.err()), ("Secrets", secrets.err())]
        .into_iter()
        .filter_map(|(what, e)| Some(format!("{what}: {}", crate::backend::docker::one_line(e?))))
        .collect::<Vec<_>>();
    (!failed.is_empty()).then(|| {
        format!(
            "client pods of run {run_id} in namespace {ns} (context {context}) not deleted: {}",
            failed.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::fanout::kubernetes::mock::{Exchange, serve};

    fn list(kind: &str) -> serde_json::Value {
        serde_json::json!({"kind": kind, "apiVersion": "v1", "metadata": {}, "items": []})
    }

    #[tokio::test]
    async fn mock_api_a_dead_run_s_client_jobs_and_secrets_are_deleted_by_its_run_label() {
        let selector = "labelSelector=microshard.run%3Dr1";
        let (client, task) = serve(vec![
            Exchange::ok(
                "DELETE",
                format!("/apis/batch/v1/namespaces/default/jobs?&{selector}"),
                list("JobList"),
            ),
            Exchange::ok(
                "DELETE",
                format!("/api/v1/namespaces/default/secrets?&{selector}"),
                list("SecretList"),
            ),
        ]);
        assert_eq!(remove_with(&client, "r1", "lab").await, None);
        let bodies = task.await.unwrap_or_default();
        // The Jobs go with their pods.
        assert_eq!(bodies[0]["propagationPolicy"], "Background");
    }

    #[tokio::test]
    async fn mock_api_a_refused_deletion_is_said_not_fatal() {
        let (client, task) = serve(vec![
            Exchange::fail(
                "DELETE",
                "/apis/batch/v1/namespaces/default/jobs?&labelSelector=microshard.run%3Dr1",
                403,
                "Forbidden",
            ),
            Exchange::ok(
                "DELETE",
                "/api/v1/namespaces/default/secrets?&labelSelector=microshard.run%3Dr1",
                list("SecretList"),
            ),
        ]);
        let said = remove_with(&client, "r1", "lab").await.unwrap_or_default();
        assert!(
            said.starts_with(
                "client pods of run r1 in namespace default (context lab) not deleted: Jobs:"
            ),
            "{said}"
        );
        let _ = task.await;
    }
}
