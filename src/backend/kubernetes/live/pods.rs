//! Waiting for the run's pods: every member's pod Ready (its server process runs; the manifests
//! have no readiness probe, so Ready means started, and the assembly then waits for answers), or
//! a pod that cannot start named with why.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};

use super::error::{KubeError, failed};
use crate::backend::labels::LABEL_RUN;

/// How often the pods' states are read while waiting.
const POLL: Duration = Duration::from_secs(1);

/// Waiting reasons that do not pass by themselves: the pod will not start without a fix.
const STUCK: [&str; 5] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
];

/// Whether `pod` is Ready.
fn ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Why `pod` cannot start (a [`STUCK`] reason with its message), if it cannot.
fn stuck(pod: &Pod) -> Option<String> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    statuses.iter().find_map(|c| {
        let waiting = c.state.as_ref()?.waiting.as_ref()?;
        let reason = waiting.reason.as_deref()?;
        STUCK.contains(&reason).then(|| match &waiting.message {
            Some(m) => format!("{reason}: {}", m.replace('\n', " ")),
            None => reason.to_string(),
        })
    })
}

/// Why `pod` waits (its scheduling condition, when not scheduled), for a time-out's message.
fn waiting_for(pod: &Pod) -> String {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    let unscheduled = conditions.and_then(|cs| {
        cs.iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
    });
    match unscheduled {
        Some(c) => format!(
            "not scheduled: {}",
            c.message.clone().or(c.reason.clone()).unwrap_or_default()
        ),
        None => "not Ready".into(),
    }
}

/// The last log lines of `pod`'s previous container when it has exited at least once (its
/// StatefulSet restarts it, so a server that refuses to start shows as restarts), else `None`.
pub(crate) async fn crashed(client: &kube::Client, ns: &str, pod: &str) -> Option<String> {
    let api = Api::<Pod>::namespaced(client.clone(), ns);
    let found = api.get_opt(pod).await.ok().flatten()?;
    let statuses = found.status?.container_statuses?;
    let last = statuses
        .iter()
        .find_map(|c| c.last_state.as_ref()?.terminated.clone())?;
    let lp = LogParams {
        previous: true,
        tail_lines: Some(LOG_TAIL),
        ..LogParams::default()
    };
    let tail = api.logs(pod, &lp).await.unwrap_or_default();
    let why = last.reason.unwrap_or_default();
    Some(format!(
        "{tail}\n(pod {pod} exited with code {}: {why})",
        last.exit_code
    ))
}

/// Each pod's image as its node resolved it (`status.containerStatuses[].imageID`: the
/// registry digest), by pod name, for the pods of `names` in `ns`: a tag names what a registry
/// served that day, the digest what ran.
pub(crate) async fn image_ids(
    client: &kube::Client,
    ns: &str,
    names: &[String],
) -> BTreeMap<String, String> {
    let api = Api::<Pod>::namespaced(client.clone(), ns);
    let mut out = BTreeMap::new();
    for name in names {
        let Ok(pod) = api.get(name).await else {
            continue;
        };
        let id = (pod.status.and_then(|s| s.container_statuses))
            .and_then(|c| c.into_iter().next())
            .map(|c| c.image_id)
            .filter(|id| !id.is_empty());
        if let Some(id) = id {
            out.insert(name.clone(), id);
        }
    }
    out
}

/// How many log lines of a crashed member are read.
const LOG_TAIL: i64 = 40;

/// Waits until each pod of `names` in `ns` (found by run `run`'s label) is Ready: the first that
/// cannot start stops the wait naming it; after `timeout`, the ones not Ready are named.
pub(crate) async fn wait_ready(
    client: &kube::Client,
    ns: &str,
    run: &str,
    names: &[String],
    timeout: Duration,
) -> Result<(), KubeError> {
    let api = Api::<Pod>::namespaced(client.clone(), ns);
    let lp = ListParams::default().labels(&format!("{LABEL_RUN}={run}"));
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let pods = api
            .list(&lp)
            .await
            .map_err(failed(format!("listing the pods of namespace {ns}")))?
            .items;
        let named = |n: &String| pods.iter().find(|p| p.metadata.name.as_ref() == Some(n));
        if let Some((pod, why)) = names
            .iter()
            .find_map(|n| named(n).and_then(stuck).map(|w| (n, w)))
        {
            return Err(KubeError::Pods(format!(
                "pod {pod} in namespace {ns} cannot start: {why}"
            )));
        }
        let late: Vec<String> = names
            .iter()
            .filter(|n| !named(n).is_some_and(ready))
            .map(|n| match named(n) {
                Some(p) => format!("{n} ({})", waiting_for(p)),
                None => format!("{n} (not created yet)"),
            })
            .collect();
        if late.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(KubeError::Pods(format!(
                "{} of {} pods in namespace {ns} not Ready after {} s: {}",
                late.len(),
                names.len(),
                timeout.as_secs(),
                late.join(", ")
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(
            serde_json::json!({"metadata": {"name": "k-sh0-0"}, "status": status}),
        )
        .unwrap_or_default()
    }

    #[test]
    fn ready_stuck_and_unscheduled_pods_are_told_apart() {
        let ok = pod(serde_json::json!({"conditions": [{"type": "Ready", "status": "True"}]}));
        assert!(ready(&ok) && stuck(&ok).is_none());
        let pulling = pod(
            serde_json::json!({"containerStatuses": [{"name": "mongod", "image": "mongo:8.0", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling\nimage"}}}]}),
        );
        assert!(!ready(&pulling));
        assert_eq!(
            stuck(&pulling).as_deref(),
            Some("ImagePullBackOff: Back-off pulling image")
        );
        let creating = pod(
            serde_json::json!({"containerStatuses": [{"name": "mongod", "image": "mongo:8.0", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
        );
        assert_eq!(stuck(&creating), None, "passes by itself");
        let pending = pod(
            serde_json::json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available"}]}),
        );
        assert_eq!(
            waiting_for(&pending),
            "not scheduled: 0/3 nodes are available"
        );
        assert_eq!(waiting_for(&creating), "not Ready");
    }
}
