//! The Kubernetes API calls of client pods: create the Secret and the Job, list the Job's pods,
//! read a finished pod's result, and delete what was created (the Job with its pods, the
//! Secret), whatever happened before. Every call is made through a [`kube::Client`], so the
//! tests drive the exact requests against a mock service, not a cluster.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};

use super::job::LABEL_CLIENTS;
use crate::backend::labels::{LABEL_MEMBER, LABEL_RUN};

/// Why a call about client pods failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PodsError {
    /// The API refused or failed a call.
    #[error("{what}: {}", crate::backend::docker::one_line(source))]
    Api {
        /// What microshard was doing (`creating Job x in namespace y`).
        what: String,
        /// What the API said.
        source: kube::Error,
    },
}

/// `what` failed with `source`.
fn failed(what: impl Into<String>) -> impl FnOnce(kube::Error) -> PodsError {
    let what = what.into();
    move |source| PodsError::Api { what, source }
}

/// Whether the API said the object is not there (a deletion then has nothing to do).
fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// Creates the Secret of the clients' properties, then the Job that runs them.
pub(crate) async fn submit(
    client: &kube::Client,
    ns: &str,
    secret: &Secret,
    job: &Job,
) -> Result<(), PodsError> {
    let name = job.metadata.name.clone().unwrap_or_default();
    let pp = PostParams::default();
    Api::<Secret>::namespaced(client.clone(), ns)
        .create(&pp, secret)
        .await
        .map_err(failed(format!("creating Secret {name} in namespace {ns}")))?;
    Api::<Job>::namespaced(client.clone(), ns)
        .create(&pp, job)
        .await
        .map_err(failed(format!("creating Job {name} in namespace {ns}")))?;
    Ok(())
}

/// The pods of Job `name`, found by the label every client pod carries.
pub(crate) async fn pods(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<Vec<Pod>, PodsError> {
    let lp = ListParams::default().labels(&format!("{LABEL_CLIENTS}={name}"));
    let list = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
        .map_err(failed(format!(
            "listing the pods of Job {name} in namespace {ns}"
        )))?;
    Ok(list.items)
}

/// The nodes of run `run_id`'s server pods in `ns` (labelled with the run and a member), so that
/// a client pod placed beside one is marked; none when it has none there (servers elsewhere).
pub(crate) async fn server_nodes(client: &kube::Client, ns: &str, run_id: &str) -> Vec<String> {
    let lp = ListParams::default().labels(&format!("{LABEL_RUN}={run_id},{LABEL_MEMBER}"));
    let listed = Api::<Pod>::namespaced(client.clone(), ns).list(&lp).await;
    let mut nodes: Vec<String> = (listed.map(|l| l.items).unwrap_or_default().into_iter())
        .filter_map(|p| p.spec?.node_name)
        .collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

/// The result document a finished client pod printed (its stdout carries nothing else; its
/// stderr lines, interleaved in the log, are skipped), `None` when it printed none.
pub(crate) async fn result_text(
    client: &kube::Client,
    ns: &str,
    pod: &str,
) -> Result<Option<String>, PodsError> {
    let lp = LogParams {
        container: Some("client".into()),
        ..LogParams::default()
    };
    let log = Api::<Pod>::namespaced(client.clone(), ns)
        .logs(pod, &lp)
        .await
        .map_err(failed(format!(
            "reading the log of pod {pod} in namespace {ns}"
        )))?;
    Ok(document_in(&log).map(str::to_string))
}

/// The pretty-printed JSON document in `log`: from its first line `{` to its last line that
/// starts with `}`.
pub(crate) fn document_in(log: &str) -> Option<&str> {
    let start = if log.starts_with("{\n") {
        0
    } else {
        log.find("\n{\n")? + 1
    };
    let end = log.rfind("\n}").map(|i| i + 2)?;
    (end > start).then(|| &log[start..end])
}

/// Deletes Job `name` with its pods, then its Secret; what is already gone is no error. Both
/// are attempted whatever the first gives.
pub(crate) async fn remove(client: &kube::Client, ns: &str, name: &str) -> Result<(), PodsError> {
    let dp = DeleteParams::background();
    let job = Api::<Job>::namespaced(client.clone(), ns)
        .delete(name, &dp)
        .await;
    let secret = Api::<Secret>::namespaced(client.clone(), ns)
        .delete(name, &dp)
        .await;
    match (job, secret) {
        (Err(e), _) if !not_found(&e) => {
            Err(failed(format!("deleting Job {name} in namespace {ns}"))(e))
        }
        (_, Err(e)) if !not_found(&e) => Err(failed(format!(
            "deleting Secret {name} in namespace {ns}"
        ))(e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::mock::{Exchange, serve};
    use super::*;

    const NS: &str = "lab";
    const NAME: &str = "r1-run-clients";

    fn objects() -> (Secret, Job) {
        let named = |kind: &str| serde_json::json!({"metadata": {"name": NAME, "namespace": NS}, "kind": kind});
        let secret = serde_json::from_value(named("Secret")).unwrap_or_default();
        let job = serde_json::from_value(named("Job")).unwrap_or_default();
        (secret, job)
    }

    fn echo(kind: &str, api: &str) -> serde_json::Value {
        serde_json::json!({"apiVersion": api, "kind": kind, "metadata": {"name": NAME, "namespace": NS}})
    }

    #[tokio::test]
    async fn mock_api_submit_then_remove_makes_exactly_these_requests() {
        let (client, task) = serve(vec![
            Exchange::ok(
                "POST",
                "/api/v1/namespaces/lab/secrets?",
                echo("Secret", "v1"),
            ),
            Exchange::ok(
                "POST",
                "/apis/batch/v1/namespaces/lab/jobs?",
                echo("Job", "batch/v1"),
            ),
            Exchange::ok(
                "DELETE",
                "/apis/batch/v1/namespaces/lab/jobs/r1-run-clients?",
                echo("Job", "batch/v1"),
            ),
            Exchange::ok(
                "DELETE",
                "/api/v1/namespaces/lab/secrets/r1-run-clients?",
                echo("Secret", "v1"),
            ),
        ]);
        let (secret, job) = objects();
        assert!(submit(&client, NS, &secret, &job).await.is_ok());
        assert!(remove(&client, NS, NAME).await.is_ok());
        let bodies = task.await.unwrap_or_default();
        assert_eq!(bodies[1]["metadata"]["name"], NAME);
        // The Job goes with its pods: never an orphaned client pod left running.
        assert_eq!(bodies[2]["propagationPolicy"], "Background");
        assert_eq!(bodies.len(), 4);
    }

    #[tokio::test]
    async fn mock_api_a_refused_job_is_one_line_naming_it_and_stops_there() {
        let (client, task) = serve(vec![
            Exchange::ok(
                "POST",
                "/api/v1/namespaces/lab/secrets?",
                echo("Secret", "v1"),
            ),
            Exchange::fail(
                "POST",
                "/apis/batch/v1/namespaces/lab/jobs?",
                403,
                "Forbidden",
            ),
        ]);
        let (secret, job) = objects();
        let e = submit(&client, NS, &secret, &job)
            .await
            .err()
            .map(|e| e.to_string());
        let e = e.unwrap_or_default();
        assert!(
            e.starts_with("creating Job r1-run-clients in namespace lab: "),
            "{e}"
        );
        assert!(e.contains("Forbidden") && !e.contains('\n'), "{e}");
        assert_eq!(task.await.map(|b| b.len()).unwrap_or(0), 2);
    }

    #[tokio::test]
    async fn mock_api_removing_what_is_already_gone_is_no_error_but_a_refusal_is() {
        let (client, task) = serve(vec![
            Exchange::fail(
                "DELETE",
                "/apis/batch/v1/namespaces/lab/jobs/r1-run-clients?",
                404,
                "NotFound",
            ),
            Exchange::fail(
                "DELETE",
                "/api/v1/namespaces/lab/secrets/r1-run-clients?",
                404,
                "NotFound",
            ),
            Exchange::fail(
                "DELETE",
                "/apis/batch/v1/namespaces/lab/jobs/r1-run-clients?",
                403,
                "Forbidden",
            ),
            Exchange::ok(
                "DELETE",
                "/api/v1/namespaces/lab/secrets/r1-run-clients?",
                echo("Secret", "v1"),
            ),
        ]);
        assert!(remove(&client, NS, NAME).await.is_ok());
        // A refused Job deletion still deletes the Secret, then says what was refused.
        let e = remove(&client, NS, NAME)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("deleting Job r1-run-clients in namespace lab: "),
            "{e}"
        );
        assert_eq!(task.await.map(|b| b.len()).unwrap_or(0), 4);
    }

    #[tokio::test]
    async fn mock_api_pods_are_found_by_the_client_label_and_results_read_from_logs() {
        let list = serde_json::json!({"apiVersion": "v1", "kind": "PodList", "metadata": {},
            "items": [{"metadata": {"name": "p0"}}, {"metadata": {"name": "p1"}}]});
        let (client, task) = serve(vec![Exchange::ok(
            "GET",
            "/api/v1/namespaces/lab/pods?&labelSelector=microshard.clients%3Dr1-run-clients",
            list,
        )]);
        let names: Vec<String> = pods(&client, NS, NAME)
            .await
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect();
        assert_eq!(names, ["p0", "p1"]);
        assert!(task.await.is_ok());
    }

    #[test]
    fn the_result_document_is_found_among_interleaved_stderr_lines() {
        let log = "microshard: ready\n{\n  \"phase\": \"run\",\n  \"x\": {\n  }\n}microshard: progress 10\n";
        assert_eq!(
            document_in(log),
            Some("{\n  \"phase\": \"run\",\n  \"x\": {\n  }\n}")
        );
        assert_eq!(document_in("{\n}"), Some("{\n}"));
        assert_eq!(document_in("microshard: cannot connect\n"), None);
    }
}
