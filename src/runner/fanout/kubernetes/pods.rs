//! What the API says about one client pod: its completion index, where it ran, what it ran, and
//! how it ended. Read from the pod objects, so it is tested on recorded pod documents.

use k8s_openapi::api::core::v1::Pod;

use super::job::INDEX_ANNOTATION;
use crate::measure::ClientPod;

/// A client pod as the coordinator tracks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodState {
    /// Its completion index: the client (and slice) it runs.
    pub index: usize,
    /// Where it runs and what.
    pub placement: ClientPod,
    /// How its client container ended: `Some(code)` once terminated.
    pub exit: Option<i32>,
    /// Why it could not run (`ErrImagePull`, `Unschedulable`, ...), when it cannot.
    pub stuck: Option<String>,
}

/// The state of `pod`, or `None` for a pod that is not one of the Job's clients (no index).
pub(crate) fn state(pod: &Pod, server_nodes: &[String]) -> Option<PodState> {
    let meta = &pod.metadata;
    let index = meta
        .annotations
        .as_ref()?
        .get(INDEX_ANNOTATION)?
        .parse()
        .ok()?;
    let spec = pod.spec.as_ref();
    let node = spec.and_then(|s| s.node_name.clone()).unwrap_or_default();
    let cpu_limit = spec
        .and_then(|s| s.containers.first())
        .and_then(|c| c.resources.as_ref()?.limits.as_ref()?.get("cpu").cloned())
        .map(|q| q.0);
    let status = pod.status.as_ref();
    let container = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first());
    let exit = container
        .and_then(|c| c.state.as_ref()?.terminated.as_ref())
        .map(|t| t.exit_code);
    let waiting = container
        .and_then(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone())
        .filter(|r| r != "ContainerCreating" && r != "PodInitializing");
    let unschedulable = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        })
        .map(|c| c.reason.clone().unwrap_or_else(|| "Unschedulable".into()));
    Some(PodState {
        index,
        placement: ClientPod {
            pod: meta.name.clone().unwrap_or_default(),
            colocated: !node.is_empty() && server_nodes.contains(&node),
            node,
            image_digest: container.map(|c| c.image_id.clone()).unwrap_or_default(),
            cpu_limit,
        },
        exit,
        stuck: waiting.or(unschedulable),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod document as the API returns it for client 1 of a Job, once it ran.
    const RAN: &str = r#"{
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "r-run-clients-1-x7k2p",
                     "annotations": {"batch.kubernetes.io/job-completion-index": "1"}},
        "spec": {"nodeName": "load-2",
                 "containers": [{"name": "client", "image": "ghcr.io/o/microshard:0.1.0",
                                 "resources": {"limits": {"cpu": "2"}}}]},
        "status": {"containerStatuses": [{"name": "client", "ready": false, "restartCount": 0,
                   "image": "ghcr.io/o/microshard:0.1.0",
                   "imageID": "ghcr.io/o/microshard@sha256:0f1e",
                   "state": {"terminated": {"exitCode": 0}}}]}
    }"#;

    fn pod(text: &str) -> Pod {
        serde_json::from_str(text).unwrap_or_default()
    }

    #[test]
    fn a_pod_that_ran_gives_its_index_node_digest_limit_and_exit() {
        let s = state(&pod(RAN), &["db-1".into()]);
        let want = PodState {
            index: 1,
            placement: ClientPod {
                pod: "r-run-clients-1-x7k2p".into(),
                node: "load-2".into(),
                image_digest: "ghcr.io/o/microshard@sha256:0f1e".into(),
                cpu_limit: Some("2".into()),
                colocated: false,
            },
            exit: Some(0),
            stuck: None,
        };
        assert_eq!(s, Some(want));
    }

    #[test]
    fn a_pod_on_a_server_node_is_marked_colocated() {
        let s = state(&pod(RAN), &["load-2".into()]);
        assert!(s.is_some_and(|s| s.placement.colocated));
    }

    #[test]
    fn a_pod_that_cannot_start_says_why() {
        let pulling = RAN.replace(
            r#""state": {"terminated": {"exitCode": 0}}"#,
            r#""state": {"waiting": {"reason": "ErrImagePull"}}"#,
        );
        let s = state(&pod(&pulling), &[]);
        assert_eq!(
            s.as_ref().and_then(|s| s.stuck.as_deref()),
            Some("ErrImagePull")
        );
        assert_eq!(s.and_then(|s| s.exit), None);
        let unindexed = RAN.replace("batch.kubernetes.io/job-completion-index", "other");
        assert_eq!(state(&pod(&unindexed), &[]), None);
    }
}
