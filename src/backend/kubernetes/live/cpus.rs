//! Exclusive CPUs checked, never assumed. A member with a CPU set runs as a Guaranteed pod with
//! as many whole CPUs (`manifests`), but the kubelet gives it CPUs of its own only under the
//! static CPU manager policy; otherwise it runs on the node's shared pool, beside everything
//! else there. So once the pods are Ready, each such pod's allowed CPUs are read from inside it
//! (`Cpus_allowed_list` of its PID 1) and judged: as many as it asked for, none shared with
//! another member on its node. What cannot be shown so is said as the run's caveat ("CPUs not
//! verified: …"), which every cell measured on it carries (`docs/kubernetes.md`).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use tokio::io::AsyncReadExt;

use crate::topology::{Plan, parse_cpuset};

/// How long one pod's read may take.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One pinned member's pod as found: its node and its allowed CPUs (or why they were not read).
#[derive(Debug)]
pub(crate) struct Seen {
    /// The pod.
    pub pod: String,
    /// `spec.nodeName`.
    pub node: String,
    /// How many CPUs its topology gave it.
    pub wanted: usize,
    /// The CPUs its server may run on.
    pub allowed: Result<Vec<usize>, String>,
}

/// The caveat of a run whose members' exclusive CPUs could not be shown; `None` when the plan
/// claims none or every claimed one is shown.
pub(crate) async fn verify(client: &kube::Client, ns: &str, plan: &Plan) -> Option<String> {
    let api = Api::<Pod>::namespaced(client.clone(), ns);
    let mut seen = Vec::new();
    for m in &plan.members {
        let (Some(pod), Some(set)) = (&m.container, &m.cpuset) else {
            continue;
        };
        let wanted = parse_cpuset(set).map_or(0, |c| c.len());
        let node = match api.get(pod).await {
            Ok(p) => p.spec.and_then(|s| s.node_name).unwrap_or_default(),
            Err(e) => crate::backend::docker::one_line(e),
        };
        let allowed = allowed_cpus(&api, pod).await;
        seen.push(Seen {
            pod: pod.clone(),
            node,
            wanted,
            allowed,
        });
    }
    judge(&seen)
}

/// The CPUs `pod`'s server may run on, read from inside its container.
async fn allowed_cpus(api: &Api<Pod>, pod: &str) -> Result<Vec<usize>, String> {
    let read = async {
        // The pod's one container, `mongod` (or `mongos`).
        let params = AttachParams::default().stdin(false).stderr(false);
        let mut attached = (api.exec(pod, ["cat", "/proc/1/status"], &params).await)
            .map_err(crate::backend::docker::one_line)?;
        let mut status = String::new();
        if let Some(mut out) = attached.stdout() {
            out.read_to_string(&mut status)
                .await
                .map_err(|e| e.to_string())?;
        }
        let _ = attached.join().await;
        cpus_allowed(&status)
    };
    match tokio::time::timeout(READ_TIMEOUT, read).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer in {} s", READ_TIMEOUT.as_secs())),
    }
}

/// `Cpus_allowed_list` of a `/proc/PID/status` text.
fn cpus_allowed(status: &str) -> Result<Vec<usize>, String> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or("its /proc/1/status has no Cpus_allowed_list")?;
    parse_cpuset(list.trim())
}

/// The caveat for what was seen, if any: a read that failed, more (or fewer) CPUs than asked
/// (the shared pool), or two members of one node sharing CPUs.
pub(crate) fn judge(seen: &[Seen]) -> Option<String> {
    let mut why = Vec::new();
    let mut by_node: BTreeMap<&str, Vec<(&str, &[usize])>> = BTreeMap::new();
    for s in seen {
        match &s.allowed {
            Err(e) => why.push(format!("{}'s CPUs could not be read ({e})", s.pod)),
            Ok(cpus) if cpus.len() != s.wanted => why.push(format!(
                "{} may run on {} CPUs ({}), not {} of its own: the kubelet of {} does not pin Guaranteed pods (its CPU manager policy is not static)",
                s.pod,
                cpus.len(),
                list(cpus),
                s.wanted,
                s.node
            )),
            Ok(cpus) => by_node.entry(&s.node).or_default().push((&s.pod, cpus)),
        }
    }
    for (node, pods) in &by_node {
        for (i, (a, ca)) in pods.iter().enumerate() {
            for (b, cb) in &pods[i + 1..] {
                let shared: Vec<usize> = ca.iter().filter(|c| cb.contains(c)).copied().collect();
                if !shared.is_empty() {
                    why.push(format!(
                        "{a} and {b} on {node} share CPUs {}",
                        list(&shared)
                    ));
                }
            }
        }
    }
    (!why.is_empty()).then(|| format!("CPUs not verified: {}", why.join("; ")))
}

/// `0,1,2` as `0-2`.
fn list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(match j > i {
            true => format!("{}-{}", cpus[i], cpus[j]),
            false => cpus[i].to_string(),
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(pod: &str, node: &str, wanted: usize, allowed: &str) -> Seen {
        Seen {
            pod: pod.into(),
            node: node.into(),
            wanted,
            allowed: parse_cpuset(allowed),
        }
    }

    #[test]
    fn the_allowed_cpus_are_read_from_proc_status() {
        let status =
            "Name:\tmongod\nCpus_allowed:\t0c\nCpus_allowed_list:\t2-3\nMems_allowed_list:\t0\n";
        assert_eq!(cpus_allowed(status), Ok(vec![2, 3]));
        assert!(cpus_allowed("Name:\tmongod\n").is_err());
    }

    #[test]
    fn pinned_pods_of_their_own_cpus_are_verified() {
        let pinned = [
            seen("sh0-0", "node-a", 2, "2-3"),
            seen("sh1-0", "node-a", 2, "4,5"),
            seen("sh2-0", "node-b", 2, "2-3"),
        ];
        assert_eq!(judge(&pinned), None);
    }

    #[test]
    fn the_shared_pool_an_overlap_or_an_unread_pod_is_not_verified() {
        let pool = judge(&[seen("sh0-0", "node-a", 2, "0-7")]).unwrap_or_default();
        assert_eq!(
            pool,
            "CPUs not verified: sh0-0 may run on 8 CPUs (0-7), not 2 of its own: the kubelet of node-a does not pin Guaranteed pods (its CPU manager policy is not static)"
        );
        let overlap = judge(&[
            seen("sh0-0", "node-a", 2, "2-3"),
            seen("sh1-0", "node-a", 2, "3-4"),
        ]);
        assert_eq!(
            overlap.as_deref(),
            Some("CPUs not verified: sh0-0 and sh1-0 on node-a share CPUs 3")
        );
        let unread = Seen {
            allowed: Err("exec refused".into()),
            ..seen("sh0-0", "node-a", 2, "2-3")
        };
        assert!(
            judge(&[unread])
                .is_some_and(|c| c.contains("sh0-0's CPUs could not be read (exec refused)"))
        );
    }
}
