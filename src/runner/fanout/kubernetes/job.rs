//! The objects that run one phase's client pods: a Secret holding every client's properties
//! (its key slice and the connection string, which may carry a password) and one Indexed Job
//! whose pod `i` reads `client-i.properties`, the slice `--clients` gives client `i`. Built as
//! typed Kubernetes objects, a pure function of [`JobInput`], so the spec is tested without a
//! cluster (`docs/kubernetes.md`, "Client pods").

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodAffinityTerm,
    PodAntiAffinity, PodSpec, PodTemplateSpec, Secret, SecretVolumeSource, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

use crate::backend::labels::{LABEL_CLUSTER, LABEL_MEMBER, LABEL_OWNER, LABEL_RUN};
use crate::runner::Phase;
use crate::topology::ClientPodsSpec;

/// Where a client pod finds the properties files (the Secret, mounted read-only).
pub(crate) const PROPERTIES_DIR: &str = "/etc/microshard";
/// The variable holding a pod's completion index, taken from the annotation the Job controller
/// sets: named by microshard, so the argument that expands it does not depend on the controller
/// also injecting `JOB_COMPLETION_INDEX`.
pub(crate) const INDEX_VAR: &str = "MICROSHARD_CLIENT_INDEX";
/// The annotation holding a pod's completion index.
pub(crate) const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// Label marking client pods (server pods carry [`LABEL_MEMBER`] instead).
pub(crate) const LABEL_CLIENTS: &str = "microshard.clients";
/// Label naming who manages an object, as Kubernetes tools read it.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "microshard");

/// What the client pods of one phase are: where, what, and whose.
#[derive(Debug, Clone)]
pub(crate) struct JobInput<'a> {
    /// The Job's name (also the Secret's, and the value of [`LABEL_CLIENTS`]).
    pub name: String,
    /// The namespace both objects go in.
    pub namespace: &'a str,
    /// The topology's name.
    pub cluster: &'a str,
    /// The run id of the cluster the clients measure.
    pub run_id: &'a str,
    /// Who makes the objects (`down --all` removes only its own).
    pub owner: &'a str,
    /// The client image (pinned: the topology refuses `:latest`).
    pub image: &'a str,
    /// The phase the clients run.
    pub phase: Phase,
    /// How many pods, where, and whether they may share the servers' nodes.
    pub pods: &'a ClientPodsSpec,
    /// How long the Job may run in all before Kubernetes stops it.
    pub deadline: Duration,
}

/// The Job's name for `run_id`'s `phase`: a DNS label short enough for the pods' host names
/// (`<job>-<index>`, 63 characters at most), lower case. `salt` tells apart two phases of one
/// run (every scenario's run phase on one cluster), whose Jobs may briefly coexist while the
/// previous one is being deleted.
pub(crate) fn job_name(run_id: &str, phase: Phase, salt: u16) -> String {
    let clean: String = run_id
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '-',
        })
        .collect();
    let suffix = format!("-{}-clients-{salt:04x}", phase.name());
    let head: String = clean.chars().take(52 - suffix.len()).collect();
    format!("{}{suffix}", head.trim_matches('-'))
}

/// The labels on both objects and on every client pod.
pub(crate) fn labels(input: &JobInput<'_>) -> BTreeMap<String, String> {
    [
        (LABEL_CLUSTER, input.cluster),
        (LABEL_RUN, input.run_id),
        (LABEL_OWNER, input.owner),
        (LABEL_CLIENTS, input.name.as_str()),
        MANAGED_BY,
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The metadata of both objects.
fn meta(input: &JobInput<'_>) -> ObjectMeta {
    ObjectMeta {
        name: Some(input.name.clone()),
        namespace: Some(input.namespace.to_string()),
        labels: Some(labels(input)),
        ..ObjectMeta::default()
    }
}

/// The Secret of every client's properties file, `client-I.properties` for client `I`.
pub(crate) fn secret(input: &JobInput<'_>, properties: &[Vec<u8>]) -> Secret {
    let files = properties
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let name = format!("client-{i}.properties");
            (name, String::from_utf8_lossy(text).into_owned())
        })
        .collect();
    Secret {
        metadata: meta(input),
        string_data: Some(files),
        ..Secret::default()
    }
}

/// The Indexed Job: every pod started at once (`parallelism = completions`), none retried
/// (`backoffLimit: 0`, `restartPolicy: Never`: a retried client would measure twice), the whole
/// Job stopped by Kubernetes after `deadline` even when microshard is gone.
pub(crate) fn job(input: &JobInput<'_>) -> Job {
    let n = i32::try_from(input.pods.count).unwrap_or(i32::MAX);
    Job {
        metadata: meta(input),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(n),
            parallelism: Some(n),
            backoff_limit: Some(0),
            active_deadline_seconds: Some(
                i64::try_from(input.deadline.as_secs()).unwrap_or(i64::MAX),
            ),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(input)),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod(input)),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    }
}

/// One client pod: the client image running `microshard load|run` on its slice at the barrier.
fn pod(input: &JobInput<'_>) -> PodSpec {
    let selector = (!input.pods.node_selector.is_empty()).then(|| input.pods.node_selector.clone());
    PodSpec {
        restart_policy: Some("Never".into()),
        node_selector: selector,
        affinity: (!input.pods.allow_colocated).then(|| away_from_servers(input.run_id)),
        containers: vec![container(input)],
        volumes: Some(vec![Volume {
            name: "properties".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(input.name.clone()),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        }]),
        ..PodSpec::default()
    }
}

/// The client container. Its stdin carries the barrier's `go`; its stdout carries nothing but
/// the result document (the report goes to a file: `exportfile` is set per client).
fn container(input: &JobInput<'_>) -> Container {
    let props = format!("{PROPERTIES_DIR}/client-$({INDEX_VAR}).properties");
    Container {
        name: "client".into(),
        image: Some(input.image.to_string()),
        command: Some(
            [
                "microshard",
                input.phase.name(),
                "-P",
                &props,
                "--json",
                "/dev/stdout",
                "--barrier",
            ]
            .map(String::from)
            .to_vec(),
        ),
        env: Some(vec![EnvVar {
            name: INDEX_VAR.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.annotations['{INDEX_ANNOTATION}']"),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }]),
        stdin: Some(true),
        stdin_once: Some(true),
        volume_mounts: Some(vec![VolumeMount {
            name: "properties".into(),
            mount_path: PROPERTIES_DIR.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    }
}

/// A required anti-affinity to every server pod of the run (they carry [`LABEL_MEMBER`]), per
/// node: a client on a server's node would take that server's CPUs and flatter nothing but
/// the client.
fn away_from_servers(run_id: &str) -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                topology_key: "kubernetes.io/hostname".into(),
                label_selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([(
                        LABEL_RUN.to_string(),
                        run_id.to_string(),
                    )])),
                    match_expressions: Some(vec![LabelSelectorRequirement {
                        key: LABEL_MEMBER.into(),
                        operator: "Exists".into(),
                        values: None,
                    }]),
                }),
                ..PodAffinityTerm::default()
            }]),
            ..PodAntiAffinity::default()
        }),
        ..Affinity::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::fanout::{properties_text, slices};
    use crate::workload::Properties;

    fn spec(count: u32, allow_colocated: bool) -> ClientPodsSpec {
        ClientPodsSpec {
            context: "lab".into(),
            count,
            node_selector: BTreeMap::from([("microshard.io/role".into(), "load".into())]),
            allow_colocated,
        }
    }

    fn input(pods: &ClientPodsSpec) -> JobInput<'_> {
        JobInput {
            name: job_name("microshard-2-1a2b", Phase::Run, 0xbeef),
            namespace: "microshard-1a2b",
            cluster: "microshard-2",
            run_id: "microshard-2-1a2b",
            owner: "uid1000-0123456789abcdef",
            image: "ghcr.io/o/microshard:0.1.0",
            phase: Phase::Run,
            pods,
            deadline: Duration::from_secs(3600),
        }
    }

    #[test]
    fn the_client_job_is_indexed_started_at_once_never_retried_and_bounded() {
        let pods = spec(4, false);
        let job = job(&input(&pods));
        let s = job.spec.clone().unwrap_or_default();
        assert_eq!(s.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((s.completions, s.parallelism), (Some(4), Some(4)));
        assert_eq!(s.backoff_limit, Some(0));
        assert_eq!(s.active_deadline_seconds, Some(3600));
        let pod = s.template.spec.unwrap_or_default();
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        assert_eq!(
            pod.node_selector
                .unwrap_or_default()
                .get("microshard.io/role")
                .map(String::as_str),
            Some("load")
        );
        let labels = s
            .template
            .metadata
            .and_then(|m| m.labels)
            .unwrap_or_default();
        assert_eq!(
            labels.get(LABEL_RUN).map(String::as_str),
            Some("microshard-2-1a2b")
        );
        assert!(
            !labels.contains_key(LABEL_MEMBER),
            "a client pod is no server: {labels:?}"
        );
        assert_eq!(job.metadata.labels, Some(labels));
    }

    #[test]
    fn client_pods_keep_off_the_runs_server_nodes_unless_allowed() {
        let pods = spec(2, false);
        let job = job(&input(&pods));
        let pod = job.spec.and_then(|s| s.template.spec).unwrap_or_default();
        let terms = pod
            .affinity
            .and_then(|a| a.pod_anti_affinity)
            .and_then(|a| a.required_during_scheduling_ignored_during_execution)
            .unwrap_or_default();
        assert_eq!(terms.len(), 1);
        assert_eq!(terms[0].topology_key, "kubernetes.io/hostname");
        let selector = terms[0].label_selector.clone().unwrap_or_default();
        assert_eq!(
            selector
                .match_labels
                .unwrap_or_default()
                .get(LABEL_RUN)
                .map(String::as_str),
            Some("microshard-2-1a2b")
        );
        let exprs = selector.match_expressions.unwrap_or_default();
        assert_eq!(
            (exprs[0].key.as_str(), exprs[0].operator.as_str()),
            (LABEL_MEMBER, "Exists")
        );
        let allowed = spec(2, true);
        let pod = super::job(&input(&allowed))
            .spec
            .and_then(|s| s.template.spec)
            .unwrap_or_default();
        assert!(pod.affinity.is_none());
    }

    #[test]
    fn pod_i_reads_the_slice_clients_gives_client_i() {
        let props = Properties::from_pairs([
            ("recordcount", "1000"),
            ("operationcount", "10"),
            ("threadcount", "3"),
        ]);
        let slices = slices(&props, Phase::Load, 3).unwrap_or_default();
        let texts: Vec<Vec<u8>> = slices
            .iter()
            .filter_map(|s| properties_text(&props, s, &[]).ok())
            .collect();
        let pods = spec(3, false);
        let input = input(&pods);
        let files = secret(&input, &texts).string_data.unwrap_or_default();
        let keys: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "client-0.properties",
                "client-1.properties",
                "client-2.properties"
            ]
        );
        assert!(
            files["client-1.properties"].contains("insertstart=334"),
            "{files:?}"
        );
        let c = &job(&input)
            .spec
            .and_then(|s| s.template.spec)
            .unwrap_or_default()
            .containers[0];
        let argv = c.command.clone().unwrap_or_default().join(" ");
        assert_eq!(
            argv,
            "microshard run -P /etc/microshard/client-$(MICROSHARD_CLIENT_INDEX).properties --json /dev/stdout --barrier"
        );
        let env = &c.env.clone().unwrap_or_default()[0];
        let field = env.value_from.as_ref().and_then(|v| v.field_ref.as_ref());
        assert_eq!(
            field.map(|f| f.field_path.as_str()),
            Some("metadata.annotations['batch.kubernetes.io/job-completion-index']")
        );
        assert_eq!((c.stdin, c.stdin_once), (Some(true), Some(true)));
    }

    #[test]
    fn job_names_are_dns_labels_whatever_the_run_id() {
        let long = "My_Topology.With-A-Very-Long-Name-That-Goes-On-And-On-2026";
        for run in ["microshard-2-1a2b", long] {
            let name = job_name(run, Phase::Load, 0x0a1f);
            assert!(name.len() <= 52, "{name}");
            assert!(name.ends_with("-load-clients-0a1f"), "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name}"
            );
            assert!(!name.starts_with('-'), "{name}");
        }
    }

    #[test]
    fn the_client_job_matches_its_golden_file() {
        let pods = spec(2, false);
        let text = serde_json::to_string_pretty(&job(&input(&pods))).unwrap_or_default() + "\n";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/manifests/client-job.json");
        if std::env::var_os("MICROSHARD_UPDATE_GOLDEN").is_some() {
            let _ = std::fs::write(&path, &text);
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            text, want,
            "regenerate with MICROSHARD_UPDATE_GOLDEN=1 if the change is meant"
        );
    }
}
