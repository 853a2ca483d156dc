//! Client containers for a phase (a topology's `clients = [{ docker = ..., count = N }]`): when
//! one client machine is not enough, each client is an ordinary `microshard load|run` in a
//! container of the client image (the microshard binary, `microshard standin image`) on a Docker
//! engine. The split, the barrier and the merge are `runner::fanout`'s; this module starts,
//! signals, reads back and removes the containers (`docs/engine.md`, "Several clients").

use std::time::Duration;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder,
    DownloadFromContainerOptionsBuilder, KillContainerOptionsBuilder,
    UploadToContainerOptionsBuilder,
};
use futures::StreamExt;

use super::{Client, ClientHandle, ClientSignal, Launch};
use crate::backend::docker::{endpoint_label, labels, one_line};
use crate::runner::{Phase, RunError};
use crate::topology::ClientHostSpec;

/// Where a client container finds its properties (uploaded before it starts).
const PROPERTIES_DIR: &str = "/tmp";
/// The properties file's name in [`PROPERTIES_DIR`].
const PROPERTIES_FILE: &str = "client.properties";
/// Where a client container writes its result document (copied out once it has exited).
const RESULT_PATH: &str = "/tmp/result.json";
/// The largest result document read back from a container.
const MAX_RESULT_BYTES: usize = 256 << 20;

/// The cluster's own Docker network, which clients on the cluster's engine join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClusterNetwork {
    /// The engine the network is on (as [`endpoint_label`] names it).
    pub endpoint: String,
    /// The network's name.
    pub name: String,
    /// The entry point as containers on that network reach it (container names, inner ports).
    pub uri: String,
}

/// The client containers of every phase of a cell: where, with what image, labelled for whom.
#[derive(Debug, Clone)]
pub struct DockerClients {
    /// Engines and how many clients each runs, in client-index order.
    pub(crate) engines: Vec<ClientHostSpec>,
    /// The client image.
    pub(crate) image: String,
    /// The topology's name (the cluster label `down --all` selects by).
    pub(crate) cluster: String,
    /// The run id of the cluster (the run label, so the cluster's teardown finds leftovers too).
    pub(crate) run_id: String,
    /// The cluster's network, when it is on a Docker engine: clients on that engine join it.
    pub(crate) network: Option<ClusterNetwork>,
    /// The entry point as microshard dials it: clients on any other engine use the host's
    /// network and connect there.
    pub(crate) uri: String,
}

/// One client container that was created (and maybe started).
pub(crate) struct Running {
    docker: Docker,
    name: String,
}

impl DockerClients {
    /// The client containers `plan` asks for (`None` when its clients run on this machine),
    /// reaching the cluster at `entry_uri` (as microshard dials it) or, on the cluster's own
    /// engine, over the cluster's network.
    pub(crate) fn for_plan(plan: &crate::topology::Plan, entry_uri: &str) -> Option<DockerClients> {
        if plan.clients.is_empty() {
            return None;
        }
        Some(DockerClients {
            engines: plan.clients.clone(),
            image: plan.client_image.clone(),
            cluster: plan.name.clone(),
            run_id: plan.run_id.clone(),
            network: cluster_network(plan),
            uri: entry_uri.to_string(),
        })
    }

    /// How many clients in all.
    pub(crate) fn count(&self) -> usize {
        self.engines.iter().map(|e| e.count as usize).sum()
    }

    /// The engine of client `index`.
    fn engine_of(&self, index: usize) -> Option<&str> {
        let mut first = 0usize;
        for e in &self.engines {
            let end = first + e.count as usize;
            if index < end {
                return Some(&e.docker);
            }
            first = end;
        }
        None
    }

    /// Starts one container per slice; each is pushed on `running` as soon as it exists, so the
    /// caller removes it whatever happens next.
    pub(crate) async fn start(
        &self,
        launch: &Launch<'_>,
        running: &mut Vec<Client>,
    ) -> Result<(), RunError> {
        let mut engines: Vec<(String, Docker)> = Vec::new();
        let salt: u16 = rand::random();
        for (index, slice) in launch.slices.iter().enumerate() {
            if launch.opts.cancel.is_cancelled() {
                return Err(crate::error::Interrupted("before the clients started".into()).into());
            }
            let endpoint = self
                .engine_of(index)
                .ok_or_else(|| RunError::Internal(format!("no engine for client {index}")))?
                .to_string();
            let docker = match engines.iter().find(|(e, _)| *e == endpoint) {
                Some((_, d)) => d.clone(),
                None => {
                    let d = crate::backend::docker::connect(Some(&endpoint))
                        .await
                        .map_err(|e| RunError::Clients(format!("client {index}: {e}")))?;
                    engines.push((endpoint.clone(), d.clone()));
                    d
                }
            };
            let (network_mode, uri) = match &self.network {
                Some(n) if n.endpoint == endpoint_label(Some(&endpoint)) => {
                    (n.name.clone(), n.uri.clone())
                }
                _ => ("host".to_string(), self.uri.clone()),
            };
            let member = format!("client{index}");
            let one = OneClient {
                index,
                name: format!("{}-{member}-{salt:04x}", self.run_id),
                endpoint,
                docker,
            };
            self.create(&one, &member, launch.phase, network_mode)
                .await?;
            running.push(Client {
                index,
                host: one.endpoint.clone(),
                stdin: None,
                handle: ClientHandle::Container(Running {
                    docker: one.docker.clone(),
                    name: one.name.clone(),
                }),
                placement: None,
            });
            // The properties (with the connection string as the container sees the cluster) go
            // in as a file, never on the command line, which `docker inspect` shows.
            let text =
                super::properties_text(launch.props, slice, &[("mongodb.url".to_string(), uri)])?;
            one.upload(&text).await?;
            let input = one.attach(launch).await?;
            one.start(launch.signals).await?;
            if let Some(c) = running.last_mut() {
                c.stdin = Some(tokio::sync::Mutex::new(input));
            }
        }
        Ok(())
    }

    /// Creates the client's container (it runs `microshard <phase>` at the start barrier).
    async fn create(
        &self,
        one: &OneClient,
        member: &str,
        phase: Phase,
        network_mode: String,
    ) -> Result<(), RunError> {
        let body = ContainerCreateBody {
            image: Some(self.image.clone()),
            cmd: Some(vec![
                "microshard".into(),
                phase.name().into(),
                "-P".into(),
                format!("{PROPERTIES_DIR}/{PROPERTIES_FILE}"),
                "--json".into(),
                RESULT_PATH.into(),
                "--barrier".into(),
            ]),
            labels: Some(labels(&self.cluster, &self.run_id, Some(member))),
            attach_stdin: Some(true),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            open_stdin: Some(true),
            stdin_once: Some(false),
            tty: Some(false),
            host_config: Some(HostConfig {
                network_mode: Some(network_mode),
                ..Default::default()
            }),
            ..Default::default()
        };
        let opts_create = CreateContainerOptionsBuilder::default()
            .name(&one.name)
            .build();
        one.docker
            .create_container(Some(opts_create), body)
            .await
            .map_err(|e| {
                RunError::Clients(format!(
                    "client {} on {}: cannot create container {} from {}: {}",
                    one.index,
                    one.endpoint,
                    one.name,
                    self.image,
                    one_line(e)
                ))
            })?;
        Ok(())
    }
}

/// One client container being started.
struct OneClient {
    index: usize,
    name: String,
    endpoint: String,
    docker: Docker,
}

impl OneClient {
    /// "client I on ENGINE: what: why".
    fn failed(&self, what: &str, e: impl std::fmt::Display) -> RunError {
        RunError::Clients(format!(
            "client {} on {}: {what}: {}",
            self.index,
            self.endpoint,
            one_line(e)
        ))
    }

    /// Copies the client's properties file into its container.
    async fn upload(&self, text: &[u8]) -> Result<(), RunError> {
        let tar = properties_tar(text)?;
        let upload = UploadToContainerOptionsBuilder::default()
            .path(PROPERTIES_DIR)
            .build();
        self.docker
            .upload_to_container(&self.name, Some(upload), bollard::body_full(tar.into()))
            .await
            .map_err(|e| self.failed(&format!("cannot copy its properties into {}", self.name), e))
    }

    /// Attaches to the container: its stderr lines go to [`super::client_line`]; its stdin is
    /// returned (the start barrier's `go`).
    async fn attach(
        &self,
        launch: &Launch<'_>,
    ) -> Result<std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>, RunError> {
        let attach = AttachContainerOptionsBuilder::default()
            .stdin(true)
            .stdout(true)
            .stderr(true)
            .stream(true)
            .build();
        let attached = self
            .docker
            .attach_container(&self.name, Some(attach))
            .await
            .map_err(|e| self.failed(&format!("cannot attach to {}", self.name), e))?;
        let (tx, sink, host) = (
            launch.signals.clone(),
            launch.sink.clone(),
            self.endpoint.clone(),
        );
        let index = self.index;
        let mut output = attached.output;
        tokio::spawn(async move {
            let mut pending: Vec<u8> = Vec::new();
            while let Some(Ok(chunk)) = output.next().await {
                let bollard::container::LogOutput::StdErr { message } = chunk else {
                    continue;
                };
                pending.extend_from_slice(&message);
                while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    let line = String::from_utf8_lossy(&line);
                    super::client_line(
                        index,
                        &host,
                        line.trim_end_matches(['\r', '\n']),
                        &tx,
                        &sink,
                    );
                }
            }
        });
        Ok(attached.input)
    }

    /// Starts the container, and signals its exit when it comes.
    async fn start(
        &self,
        signals: &tokio::sync::mpsc::UnboundedSender<ClientSignal>,
    ) -> Result<(), RunError> {
        self.docker
            .start_container(
                &self.name,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
            .await
            .map_err(|e| self.failed(&format!("cannot start container {}", self.name), e))?;
        let (tx, docker, name, index) = (
            signals.clone(),
            self.docker.clone(),
            self.name.clone(),
            self.index,
        );
        tokio::spawn(async move {
            let code = exit_code(&docker, &name).await;
            let _ = tx.send(ClientSignal::Exited(index, code));
        });
        Ok(())
    }
}

/// The network of a single-engine Docker cluster and its entry point as seen on it: every
/// router by container name (or the standalone, directly), at the ports inside the containers.
fn cluster_network(plan: &crate::topology::Plan) -> Option<ClusterNetwork> {
    use crate::topology::MemberRole;
    if plan.backend != crate::topology::BackendKind::Docker || plan.multi_host {
        return None;
    }
    let entry = plan.entry()?;
    let uri = if entry.role == MemberRole::Mongos {
        let routers: Vec<&str> = plan
            .members_with(MemberRole::Mongos)
            .map(|m| m.member_host.as_str())
            .collect();
        format!("mongodb://{}/", routers.join(","))
    } else if entry.replica_set.is_some() {
        format!("mongodb://{}/?directConnection=true", entry.member_host)
    } else {
        format!("mongodb://{}/", entry.member_host)
    };
    Some(ClusterNetwork {
        endpoint: endpoint_label(entry.docker_endpoint.as_deref()),
        name: plan.network.clone(),
        uri,
    })
}

/// Waits for the container to stop; its exit status, or `None` when a signal killed it (128 + n)
/// or the engine cannot say.
async fn exit_code(docker: &Docker, name: &str) -> Option<i64> {
    let mut wait = docker.wait_container(
        name,
        None::<bollard::query_parameters::WaitContainerOptions>,
    );
    let code = match wait.next().await {
        Some(Ok(r)) => r.status_code,
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
        _ => return None,
    };
    (code < 128).then_some(code)
}

/// A tar archive holding the client's properties file, for the engine's archive upload.
fn properties_tar(text: &[u8]) -> Result<Vec<u8>, RunError> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(text.len() as u64);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    builder
        .append_data(&mut h, PROPERTIES_FILE, text)
        .map_err(|e| RunError::io("packing a client's properties", e))?;
    builder
        .into_inner()
        .map_err(|e| RunError::io("packing a client's properties", e))
}

impl Running {
    /// Sends `signal` to the client (its microshard process is the container's PID 1 and
    /// handles SIGTERM as Ctrl-C); a container that already stopped is left alone.
    pub(crate) async fn signal(&self, signal: &str) {
        let opts = KillContainerOptionsBuilder::default()
            .signal(signal)
            .build();
        let _ = self.docker.kill_container(&self.name, Some(opts)).await;
    }

    /// The result document the client wrote, copied out of the stopped container.
    pub(crate) async fn result_text(&self) -> Option<String> {
        let opts = DownloadFromContainerOptionsBuilder::default()
            .path(RESULT_PATH)
            .build();
        let mut stream = self.docker.download_from_container(&self.name, Some(opts));
        let mut tar_bytes = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.ok()?;
                if tar_bytes.len() + chunk.len() > MAX_RESULT_BYTES + 4096 {
                    return None;
                }
                tar_bytes.extend_from_slice(&chunk);
            }
            Some(())
        })
        .await;
        if !matches!(read, Ok(Some(()))) {
            return None;
        }
        let mut archive = tar::Archive::new(&tar_bytes[..]);
        let mut entry = archive.entries().ok()?.next()?.ok()?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut entry, &mut text).ok()?;
        Some(text)
    }

    /// Removes the container (and its anonymous volumes), whatever state it is in.
    pub(crate) async fn remove(&self) -> Result<(), String> {
        crate::backend::docker::remove_container(&self.docker, &self.name).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_numbered_engine_by_engine() {
        let d = DockerClients {
            engines: vec![
                ClientHostSpec {
                    docker: "unix:///a.sock".into(),
                    count: 2,
                },
                ClientHostSpec {
                    docker: "tcp://b:2375".into(),
                    count: 1,
                },
            ],
            image: "i".into(),
            cluster: "c".into(),
            run_id: "r".into(),
            network: None,
            uri: "mongodb://h:1/".into(),
        };
        assert_eq!(d.count(), 3);
        let engines: Vec<Option<&str>> = (0..4).map(|i| d.engine_of(i)).collect();
        assert_eq!(
            engines,
            vec![
                Some("unix:///a.sock"),
                Some("unix:///a.sock"),
                Some("tcp://b:2375"),
                None
            ]
        );
    }

    #[test]
    fn the_properties_travel_as_a_one_file_archive() {
        let tar = properties_tar(b"a=1\n").unwrap_or_default();
        let mut archive = tar::Archive::new(&tar[..]);
        let names: Vec<String> = archive
            .entries()
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.path().ok().map(|p| p.display().to_string()))
            .collect();
        assert_eq!(names, vec![PROPERTIES_FILE.to_string()]);
    }
}
