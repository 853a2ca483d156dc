//! Starting one phase's client pods and speaking the start-barrier protocol with them: the
//! Secret and the Indexed Job are created, every pod is waited for until it runs, each pod's
//! stdin is attached (the barrier's `go`) and its log followed (the ready and progress lines,
//! then the result document). What stays the same for every kind of client (the split, the
//! barrier, the merged status line, the merge) is `runner::fanout`'s.

use std::time::Duration;

use futures::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, DeleteParams, LogParams};

use super::{api, job, pods};
use crate::runner::RunError;
use crate::runner::fanout::{Client, ClientHandle, ClientSignal, Launch};
use crate::topology::{ClientPodsSpec, Plan};

/// How long the pods get to be scheduled, pull their image and start, all of them.
const START_TIMEOUT: Duration = Duration::from_secs(300);
/// How often the pods' states are read while waiting for them.
const POLL: Duration = Duration::from_secs(1);
/// How long the Job may run beyond the run's own bound (the barrier, the grace to stop).
const DEADLINE_MARGIN: Duration = Duration::from_secs(900);
/// The Job's bound when the run has none (`maxexecutiontime` unset): a day.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(86_400);
/// Where a client pod writes YCSB's report, so that its stdout carries only the result.
const REPORT_FILE: &str = "/tmp/report.txt";

/// The client pods of every phase of a cell: in which context, with what image, for whom.
#[derive(Debug, Clone)]
pub struct KubernetesClients {
    /// The context, count and placement.
    pub(crate) pods: ClientPodsSpec,
    /// The client image.
    pub(crate) image: String,
    /// The topology's name.
    pub(crate) cluster: String,
    /// The run id of the cluster.
    pub(crate) run_id: String,
    /// The entry point as the pods dial it.
    pub(crate) uri: String,
    /// The namespace of their Job: the run's when the servers are its pods, else (`None`) the
    /// context's default.
    pub(crate) namespace: Option<String>,
}

/// The Job of one phase once created: what removes it.
pub(crate) struct Submitted {
    client: kube::Client,
    namespace: String,
    name: String,
}

/// One client pod: what signals it and reads its result.
pub(crate) struct PodHandle {
    client: kube::Client,
    namespace: String,
    pod: String,
}

impl KubernetesClients {
    /// The client pods `plan` asks for (`None` when it has none), dialling `entry_uri` — or,
    /// when the servers are pods of the run, the members' in-cluster names from the run's
    /// namespace.
    pub(crate) fn for_plan(plan: &Plan, entry_uri: &str) -> Option<KubernetesClients> {
        let home = crate::backend::of(plan.backend).client_pods_home(plan);
        Some(KubernetesClients {
            pods: plan.client_pods.clone()?,
            image: plan.client_image.clone(),
            cluster: plan.name.clone(),
            run_id: plan.run_id.clone(),
            uri: home
                .as_ref()
                .map_or(entry_uri.to_string(), |h| h.uri.clone()),
            namespace: home.map(|h| h.namespace),
        })
    }

    /// How many clients in all.
    pub(crate) fn count(&self) -> usize {
        self.pods.count as usize
    }

    /// Creates the Secret and the Job (`submitted` is set as soon as they exist, so the caller
    /// deletes them whatever happens next), waits for every pod to run, and pushes one client
    /// per pod with its stdin attached and its log followed.
    pub(crate) async fn start(
        &self,
        launch: &Launch<'_>,
        running: &mut Vec<Client>,
        submitted: &mut Option<Submitted>,
    ) -> Result<(), RunError> {
        let failed = |e: &dyn std::fmt::Display| RunError::Clients(format!("client pods: {e}"));
        let client = super::connect(&self.pods.context)
            .await
            .map_err(|e| failed(&e))?;
        let namespace =
            (self.namespace.clone()).unwrap_or_else(|| client.default_namespace().to_string());
        let input = self.input(launch, &namespace);
        let texts = self.properties(launch)?;
        *submitted = Some(Submitted {
            client: client.clone(),
            namespace: namespace.clone(),
            name: input.name.clone(),
        });
        api::submit(
            &client,
            &namespace,
            &job::secret(&input, &texts),
            &job::job(&input),
        )
        .await
        .map_err(|e| failed(&e))?;
        let pods = self
            .wait_running(&client, &namespace, &input.name, launch)
            .await?;
        for (index, pod) in pods.into_iter().enumerate() {
            running.push(attach(&client, &namespace, index, pod, launch).await?);
        }
        Ok(())
    }

    /// What the Job is built from, for `launch`'s phase in `namespace`.
    fn input<'a>(&'a self, launch: &Launch<'_>, namespace: &'a str) -> job::JobInput<'a> {
        let bound = launch
            .props
            .value(&crate::workload::prop::MAXEXECUTIONTIME)
            .unwrap_or(0u64);
        job::JobInput {
            name: job::job_name(&self.run_id, launch.phase, rand::random()),
            namespace,
            cluster: &self.cluster,
            run_id: &self.run_id,
            owner: OWNER.get_or_init(crate::backend::labels::owner_id),
            image: &self.image,
            phase: launch.phase,
            pods: &self.pods,
            deadline: match bound {
                0 => DEFAULT_DEADLINE,
                s => Duration::from_secs(s) + DEADLINE_MARGIN,
            },
        }
    }

    /// Every client's properties: its slice, the entry as pods dial it, the report to a file.
    fn properties(&self, launch: &Launch<'_>) -> Result<Vec<Vec<u8>>, RunError> {
        let extra = [
            ("mongodb.url".to_string(), self.uri.clone()),
            (
                crate::workload::prop::EXPORTFILE.name.to_string(),
                REPORT_FILE.to_string(),
            ),
        ];
        launch
            .slices
            .iter()
            .map(|s| crate::runner::fanout::properties_text(launch.props, s, &extra))
            .collect()
    }

    /// Waits until every pod of the Job runs, in index order; a pod that cannot start (an image
    /// it cannot pull, no node that fits) stops the wait, naming it and why.
    async fn wait_running(
        &self,
        client: &kube::Client,
        namespace: &str,
        name: &str,
        launch: &Launch<'_>,
    ) -> Result<Vec<pods::PodState>, RunError> {
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        let servers = api::server_nodes(client, namespace, &self.run_id).await;
        loop {
            let listed = api::pods(client, namespace, name)
                .await
                .map_err(|e| RunError::Clients(format!("client pods: {e}")))?;
            let mut states: Vec<pods::PodState> = listed
                .iter()
                .filter_map(|p| pods::state(p, &servers))
                .collect();
            states.sort_by_key(|s| s.index);
            if let Some(s) = states
                .iter()
                .find(|s| s.stuck.is_some() || s.exit.is_some())
            {
                return Err(RunError::Clients(format!(
                    "client pod {} (client {}) {} before the start barrier",
                    s.placement.pod,
                    s.index,
                    s.stuck
                        .as_deref()
                        .map_or("exited".to_string(), |r| format!("cannot start: {r}"))
                )));
            }
            let up = running_pods(&listed);
            if states.len() == self.count() && up == self.count() {
                return Ok(states);
            }
            if launch.opts.cancel.is_cancelled() {
                return Err(
                    crate::error::Interrupted("before the client pods started".into()).into(),
                );
            }
            if tokio::time::Instant::now() > deadline {
                return Err(RunError::Clients(format!(
                    "client pods: {up} of {} running after {} s",
                    self.count(),
                    START_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Who makes the objects of this process, computed once.
static OWNER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// How many of `listed` are running.
fn running_pods(listed: &[Pod]) -> usize {
    listed
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .count()
}

/// Attaches to pod `state`'s stdin, follows its log (its lines go to `client_line`) and watches
/// it end; the client it is.
async fn attach(
    client: &kube::Client,
    namespace: &str,
    index: usize,
    state: pods::PodState,
    launch: &Launch<'_>,
) -> Result<Client, RunError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pod = state.placement.pod.clone();
    let failed = |what: &str, e: kube::Error| {
        RunError::Clients(format!(
            "client pod {pod} (client {index}): {what}: {}",
            crate::backend::docker::one_line(e)
        ))
    };
    let ap = AttachParams::default()
        .stdin(true)
        .stdout(false)
        .stderr(false);
    let mut attached = api
        .attach(&pod, &ap)
        .await
        .map_err(|e| failed("cannot attach", e))?;
    let stdin = attached
        .stdin()
        .ok_or_else(|| RunError::Internal(format!("client pod {pod}: no stdin")))?;
    let lp = LogParams {
        container: Some("client".into()),
        follow: true,
        ..LogParams::default()
    };
    let log = api
        .log_stream(&pod, &lp)
        .await
        .map_err(|e| failed("cannot follow its log", e))?;
    let (tx, sink, host) = (
        launch.signals.clone(),
        launch.sink.clone(),
        state.placement.node.clone(),
    );
    tokio::spawn(async move {
        let _keep = attached;
        let mut lines = log.lines();
        while let Ok(Some(line)) = lines.try_next().await {
            crate::runner::fanout::client_line(index, &host, &line, &tx, &sink);
        }
    });
    let (tx, api2, name) = (launch.signals.clone(), api.clone(), pod.clone());
    tokio::spawn(async move {
        let code = exit_code(&api2, &name).await;
        let _ = tx.send(ClientSignal::Exited(index, code));
    });
    Ok(Client {
        index,
        host: format!("node {} (pod {pod})", state.placement.node),
        stdin: Some(tokio::sync::Mutex::new(Box::pin(stdin))),
        placement: Some(state.placement.clone()),
        handle: ClientHandle::Pod(PodHandle {
            client: client.clone(),
            namespace: namespace.to_string(),
            pod,
        }),
    })
}

/// Waits for the pod's client container to end: its exit status, `None` when the pod is gone
/// or a signal ended it.
async fn exit_code(api: &Api<Pod>, name: &str) -> Option<i64> {
    loop {
        let pod = api.get_opt(name).await.ok()??;
        if let Some(code) = pods::state(&pod, &[]).and_then(|s| s.exit) {
            return (code < 128).then_some(i64::from(code));
        }
        tokio::time::sleep(POLL).await;
    }
}

impl PodHandle {
    /// Asks the client to stop (SIGTERM through the pod's deletion, after `grace` the kubelet
    /// kills it); its result is lost with the pod, so the merged result says it failed.
    pub(crate) async fn stop(&self, grace: u32) {
        let dp = DeleteParams {
            grace_period_seconds: Some(grace),
            ..DeleteParams::default()
        };
        let _ = Api::<Pod>::namespaced(self.client.clone(), &self.namespace)
            .delete(&self.pod, &dp)
            .await;
    }

    /// The result document the pod printed, if it printed one.
    pub(crate) async fn result_text(&self) -> Option<String> {
        api::result_text(&self.client, &self.namespace, &self.pod)
            .await
            .ok()?
    }
}

impl Submitted {
    /// Deletes the Job with its pods and the Secret.
    pub(crate) async fn remove(&self) -> Result<(), String> {
        api::remove(&self.client, &self.namespace, &self.name)
            .await
            .map_err(|e| e.to_string())
    }
}
