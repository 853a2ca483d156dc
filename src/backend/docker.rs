//! The Docker backend, through the Engine API (`bollard`) only: image pull with progress, one
//! labelled network per cluster and host, one container per member named after its replica-set
//! host, every member published on this machine's loopback (or `publish_address`) and reached
//! there, never at its container IP. Also builds the stand-in test image from scratch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::models::{
    ContainerCreateBody, HostConfig, NetworkCreateRequest, PortBinding, ResourcesUlimits,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, ListContainersOptionsBuilder,
    ListNetworksOptionsBuilder, ListVolumesOptionsBuilder, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveVolumeOptionsBuilder, StopContainerOptionsBuilder,
};
use futures::StreamExt;
use futures::future::BoxFuture;

use super::{
    Backend, BackendError, Handle, InFlight, LabelSearch, Labels, MemberState, NotSearched,
    Readiness, RunningCluster, RunningMember, STOP_ORDER, UpOptions, create_dir, lock,
    record_started, snapshot_write,
};
use crate::cluster::{LaunchError, Launcher};
use crate::events::{Event, Events, Sink};
use crate::topology::{Member, Plan, PlanOptions, TopologyError, TopologySpec};

mod cpu;
mod place;
pub(crate) mod ready;
mod reference;
mod standin_image;

pub use reference::{check_reference, check_spec_images};
pub use standin_image::build_standin_image;

pub(crate) use super::labels::labels;
/// The labels every container, network and volume carries (named here too, where the client
/// containers and the tests look for them).
pub use super::labels::{LABEL_CLUSTER, LABEL_MEMBER, LABEL_OWNER, LABEL_RUN, owner_id_for};
/// The `nofile` limit every member container gets (soft and hard), as MongoDB's packages set.
pub const NOFILE: i64 = 64000;
/// Tag of the locally built stand-in image used by tests and `demo`.
pub const STANDIN_IMAGE: &str = "microshard-standin:test";

/// What can go wrong talking to a Docker engine.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// No engine answers at the endpoint.
    #[error("Docker engine unreachable ({0})")]
    Unreachable(String),
    /// The image is absent and cannot be pulled.
    #[error(
        "image {image} is not present on {endpoint} and cannot be pulled: {cause}; without a registry: `microshard standin image` and --image microshard-standin:latest, or --standin"
    )]
    ImageMissing {
        /// The image.
        image: String,
        /// The endpoint.
        endpoint: String,
        /// Why the pull failed.
        cause: String,
    },
    /// Any other API error, with what we were doing.
    #[error("{0}")]
    Api(String),
}

pub(crate) fn endpoint_label(endpoint: Option<&str>) -> String {
    endpoint
        .map(String::from)
        .or_else(|| std::env::var("DOCKER_HOST").ok())
        .unwrap_or_else(|| "unix:///var/run/docker.sock".into())
}

pub(crate) fn one_line(e: impl std::fmt::Display) -> String {
    e.to_string().replace('\n', " ")
}

/// Connects to `endpoint` (`None` = `DOCKER_HOST` or the local socket), negotiates the API
/// version and pings.
pub async fn connect(endpoint: Option<&str>) -> Result<Docker, DockerError> {
    let label = endpoint_label(endpoint);
    let docker = match endpoint {
        Some(e) => Docker::connect_with_host(e),
        None => Docker::connect_with_local_defaults(),
    }
    .map_err(|e| DockerError::Unreachable(format!("{label}: {}", one_line(e))))?;
    let docker = tokio::time::timeout(Duration::from_secs(10), docker.negotiate_version())
        .await
        .map_err(|_| DockerError::Unreachable(format!("{label}: no answer within 10 s")))?
        .map_err(|e| DockerError::Unreachable(format!("{label}: {}", one_line(e))))?;
    tokio::time::timeout(Duration::from_secs(10), docker.ping())
        .await
        .map_err(|_| DockerError::Unreachable(format!("{label}: no answer within 10 s")))?
        .map_err(|e| DockerError::Unreachable(format!("{label}: {}", one_line(e))))?;
    Ok(docker)
}

/// Creates and starts a container; an engine that refuses to raise `nofile` (rootless
/// Docker, a restricted daemon) gets it without the limit. `Some(NOFILE)` when the limit holds.
async fn create_and_start(
    docker: Docker,
    name: String,
    mut body: ContainerCreateBody,
) -> Result<Option<i64>, DockerError> {
    loop {
        let has_ulimits = body
            .host_config
            .as_ref()
            .is_some_and(|h| h.ulimits.is_some());
        let opts = CreateContainerOptionsBuilder::default().name(&name).build();
        docker
            .create_container(Some(opts), body.clone())
            .await
            .map_err(|e| {
                DockerError::Api(format!("cannot create container {name}: {}", one_line(e)))
            })?;
        let started = docker
            .start_container(
                &name,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
            .await;
        let err = match started {
            Ok(()) => return Ok(has_ulimits.then_some(NOFILE)),
            Err(e) => one_line(e),
        };
        // An engine whose own hard limit is lower (rootless Docker, a restricted
        // daemon) refuses to raise it: run with the engine's limit rather than not
        // at all; the member's record says so (RunningMember.nofile = None).
        if has_ulimits && err.contains("rlimit") {
            remove_container(&docker, &name)
                .await
                .map_err(DockerError::Api)?;
            if let Some(h) = body.host_config.as_mut() {
                h.ulimits = None;
            }
            continue;
        }
        return Err(DockerError::Api(format!(
            "cannot start container {name}: {err}"
        )));
    }
}

/// True when the engine has `image` locally.
pub(crate) async fn image_present(docker: &Docker, image: &str) -> bool {
    docker.inspect_image(image).await.is_ok()
}

/// Makes sure `image` is on the engine: pulls it when missing, saying the pull's progress to
/// `events`.
pub(crate) async fn ensure_image(
    docker: &Docker,
    endpoint: Option<&str>,
    image: &str,
    events: &dyn Events,
) -> Result<(), DockerError> {
    if image_present(docker, image).await {
        return Ok(());
    }
    let (name, tag) = split_image(image);
    let opts = CreateImageOptionsBuilder::default()
        .from_image(name)
        .tag(tag)
        .build();
    let missing = |cause: String| DockerError::ImageMissing {
        image: image.into(),
        endpoint: endpoint_label(endpoint),
        cause,
    };
    let mut stream = docker.create_image(Some(opts), None, None);
    let mut last = String::new();
    let mut announced = false;
    while let Some(item) = stream.next().await {
        let info = item.map_err(|e| missing(one_line(e)))?;
        if let Some(err) = info.error_detail.and_then(|d| d.message) {
            return Err(missing(one_line(err)));
        }
        // Said once the registry answers, so an image that cannot be pulled is one line
        // (the error) and a long pull still shows its progress.
        if !announced {
            announced = true;
            events.event(Event::PullStarted {
                image: image.to_string(),
                endpoint: endpoint_label(endpoint),
            });
        }
        let line = format!(
            "{} {}",
            info.id.unwrap_or_default(),
            info.status.unwrap_or_default()
        );
        if line != last {
            events.event(Event::Pull {
                image: image.to_string(),
                line: line.trim().to_string(),
            });
            last = line;
        }
    }
    match image_present(docker, image).await {
        true => Ok(()),
        false => Err(missing(
            "the pull finished but the image is still absent".into(),
        )),
    }
}

/// `mongo:7.0` → (`mongo`, `7.0`); `host:5000/mongo` → (`host:5000/mongo`, `latest`).
fn split_image(image: &str) -> (&str, &str) {
    match image.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, tag),
        _ => (image, "latest"),
    }
}

/// The Docker backend: one container per member on the engine of its host.
pub(crate) struct DockerBackend;

impl Backend for DockerBackend {
    fn plan(&self, spec: &TopologySpec, opts: &PlanOptions) -> Result<Plan, TopologyError> {
        place::plan(spec, opts)
    }

    fn ready<'a>(&'a self, check: &'a Readiness<'a>) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(ready::images(check))
    }

    /// Each member container's CPU from its engine's one-shot stats: `/proc` here cannot tell
    /// a container's processes (nor see a remote engine's).
    fn member_cpu_ns<'a>(
        &'a self,
        members: &'a [RunningMember],
    ) -> BoxFuture<'a, std::collections::BTreeMap<String, u64>> {
        Box::pin(cpu::members_cpu_ns(members))
    }

    /// Every published port, when every engine is this machine's (single host: every member is
    /// published here).
    fn local_ports(&self, plan: &Plan) -> Vec<u16> {
        let local =
            (plan.docker_endpoints.iter()).all(|e| crate::topology::local_engine(e.as_deref()));
        let published = plan.members.iter().filter_map(|m| m.published.as_deref());
        let ports = published.filter_map(|p| p.rsplit_once(':').and_then(|(_, p)| p.parse().ok()));
        ports.filter(|_| local).collect()
    }

    fn launcher<'a>(
        &'a self,
        plan: &'a Plan,
        record: Arc<Mutex<RunningCluster>>,
        opts: &'a UpOptions,
        in_flight: InFlight,
    ) -> BoxFuture<'a, Result<Box<dyn Launcher>, BackendError>> {
        Box::pin(async move {
            let launcher = DockerLauncher::prepare(plan, record, opts, in_flight).await?;
            Ok(Box::new(launcher) as Box<dyn Launcher>)
        })
    }

    fn teardown<'a>(
        &'a self,
        cluster: &'a RunningCluster,
        stop_timeout: Duration,
        _events: &'a dyn Events,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(teardown(cluster, stop_timeout))
    }

    fn left_elsewhere(&self, plan: &Plan) -> Vec<String> {
        place::remote_dirs(plan)
    }

    fn undeletable_hint(&self) -> &'static str {
        " (files written by the container's mongod, uid 999: remove them as root)"
    }

    /// The local engine's containers, networks and volumes.
    fn remove_labelled<'a>(
        &'a self,
        keep: &'a (dyn Fn(&Labels) -> bool + Sync),
    ) -> BoxFuture<'a, Result<Vec<String>, LabelSearch>> {
        Box::pin(async move {
            remove_labelled_matching(None, None, keep).await.map_err(|e| match e {
                DockerError::Unreachable(why) => LabelSearch::Unreachable(NotSearched {
                    name: "Docker",
                    note: format!("Docker engine unreachable ({why}): its containers, networks and volumes were not searched"),
                }),
                e => LabelSearch::Failed(format!("docker: {e}")),
            })
        })
    }
}

/// Starts and watches the containers of one plan.
pub(crate) struct DockerLauncher {
    /// The run's record, which holds its plan.
    record: Arc<Mutex<RunningCluster>>,
    clients: HashMap<Option<String>, Docker>,
    in_flight: InFlight,
    /// `name:ip` of every host address, for each member's `/etc/hosts` (multi-host plans).
    extra_hosts: Vec<String>,
    /// Where a refused limit is said.
    events: Sink,
}

impl DockerLauncher {
    /// Connects to every endpoint, makes sure the image is there and creates the networks.
    /// Creates and starts go through `in_flight`, so an interrupted bring-up lets them finish.
    pub(crate) async fn prepare(
        plan: &Plan,
        record: Arc<Mutex<RunningCluster>>,
        opts: &UpOptions,
        in_flight: InFlight,
    ) -> Result<DockerLauncher, BackendError> {
        let mut clients = HashMap::new();
        let mut endpoints: Vec<Option<String>> = Vec::new();
        for m in &plan.members {
            if !endpoints.contains(&m.docker_endpoint) {
                endpoints.push(m.docker_endpoint.clone());
            }
        }
        for ep in &endpoints {
            let docker = connect(ep.as_deref()).await?;
            ensure_image(&docker, ep.as_deref(), &plan.image, &*opts.events).await?;
            clients.insert(ep.clone(), docker);
        }
        // Published ports on this machine must be free (single host: every member is published).
        for m in plan.members.iter().filter(|_| !plan.multi_host) {
            if let Some(p) = &m.published
                && let Some((ip, port)) = p.rsplit_once(':')
                && let Ok(port) = port.parse::<u16>()
                && let Err(e) = std::net::TcpListener::bind((ip, port))
                && e.kind() == std::io::ErrorKind::AddrInUse
            {
                return Err(BackendError::BadInput(format!(
                    "port {port} (to publish {}) is already in use on {ip}; give --base-port PORT (the topology file's base_port) or stop what listens there",
                    m.name
                )));
            }
        }
        for ep in &endpoints {
            // Recorded before it exists, so an interrupted create is still cleaned up.
            lock(&record)
                .networks
                .push((ep.clone(), plan.network.clone()));
            snapshot_write(&record)?;
            let docker = clients[ep].clone();
            let req = NetworkCreateRequest {
                name: plan.network.clone(),
                driver: Some("bridge".into()),
                labels: Some(labels(&plan.name, &plan.run_id, None)),
                ..Default::default()
            };
            let failed = format!(
                "cannot create network {} on {}",
                plan.network,
                endpoint_label(ep.as_deref())
            );
            in_flight
                .run(async move { docker.create_network(req).await.map(|_| ()) })
                .await?
                .map_err(|e| DockerError::Api(format!("{failed}: {}", one_line(e))))?;
        }
        for m in &plan.members {
            // A remote engine's bind-mount sources are on its machine: Docker creates them there.
            if let Some(d) = m.dir.as_ref().filter(|_| !place::on_remote_engine(m)) {
                create_dir(d)?;
                lock(&record).created_dirs.push(d.clone());
            }
        }
        Ok(DockerLauncher {
            record,
            clients,
            in_flight,
            extra_hosts: plan_extra_hosts(plan).await,
            events: opts.events.clone(),
        })
    }

    fn client(&self, member: &Member) -> Result<&Docker, BackendError> {
        self.clients
            .get(&member.docker_endpoint)
            .ok_or_else(|| BackendError::Internal(format!("no Docker client for {}", member.name)))
    }

    /// The member's container: its command line, resources (CPU set, memory without swap,
    /// `nofile`), published port, data directory and labels.
    fn container_body(&self, member: &Member) -> ContainerCreateBody {
        let plan = &lock(&self.record).plan;
        let port_key = format!("{}/tcp", member.port);
        let memory = member
            .memory_limit_gb
            .map(|g| (g * 1024.0 * 1024.0 * 1024.0) as i64);
        let mut host = HostConfig {
            network_mode: Some(plan.network.clone()),
            cpuset_cpus: member.cpuset.clone(),
            memory,
            // Without it a limited container may swap as much again, which distorts figures.
            memory_swap: memory,
            // mongod accepts 0.8 × the soft nofile limit in connections; recent engines give
            // containers a soft limit of 1024 (docs/mongodb-versions.md, "Limits").
            ulimits: Some(vec![ResourcesUlimits {
                name: Some("nofile".into()),
                soft: Some(NOFILE),
                hard: Some(NOFILE),
            }]),
            extra_hosts: (!self.extra_hosts.is_empty()).then(|| self.extra_hosts.clone()),
            ..Default::default()
        };
        let mut exposed = None;
        if let Some((ip, port)) = member.published.as_deref().and_then(|p| p.rsplit_once(':')) {
            let binding = PortBinding {
                host_ip: Some(ip.to_string()),
                host_port: Some(port.to_string()),
            };
            host.port_bindings = Some(HashMap::from([(port_key.clone(), Some(vec![binding]))]));
            exposed = Some(vec![port_key.clone()]);
        }
        if let (Some(dir), Some(db)) = (&member.dir, &member.dbpath) {
            host.binds = Some(vec![format!("{}:{}", dir.display(), db.display())]);
        }
        ContainerCreateBody {
            image: Some(plan.image.clone()),
            cmd: Some(member.argv.clone()),
            labels: Some(labels(&plan.name, &plan.run_id, Some(&member.name))),
            exposed_ports: exposed,
            host_config: Some(host),
            ..Default::default()
        }
    }

    async fn run_container(&self, member: &Member) -> Result<(), BackendError> {
        let docker = self.client(member)?;
        let name = member.container.clone().ok_or_else(|| {
            BackendError::Internal(format!("{} has no container name", member.name))
        })?;
        let body = self.container_body(member);
        // Create and start run to completion even if Ctrl-C abandons this bring-up meanwhile:
        // teardown then finds the container (see `InFlight`).
        let create_and_start = create_and_start(docker.clone(), name.clone(), body);
        let nofile = self.in_flight.run(create_and_start).await??;
        if nofile.is_none() {
            self.events.event(Event::Warning(format!(
                "microshard: warning: the Docker engine refused nofile={NOFILE} for {}; it runs with the engine's limit (mongod accepts 0.8 × the soft limit in connections)",
                member.name
            )));
        }
        // Always the published port (or the host address across hosts), never the container's
        // own IP: that is routable from here only with rootful Docker on this Linux machine.
        let address = lock(&self.record).plan.dial_address(member);
        record_started(&self.record, &member.name, |m| {
            m.direct_uri = crate::cluster::direct_uri(&address);
            m.address = address;
            m.nofile = nofile.map(|n| n as u64);
        })
    }
}

/// The hosts' names as this machine resolves them (`name:ip`), which every member of a
/// multi-host plan gets in its `/etc/hosts`; single-host members use container names, which the
/// run's network resolves.
pub(crate) async fn plan_extra_hosts(plan: &Plan) -> Vec<String> {
    if !plan.multi_host {
        return Vec::new();
    }
    let names: Vec<String> = plan
        .members
        .iter()
        .filter_map(|m| m.member_host.rsplit_once(':').map(|(h, _)| h.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        super::extra_hosts::extra_hosts(&refs, super::extra_hosts::resolve_here)
    })
    .await
    .unwrap_or_default()
}

impl Launcher for DockerLauncher {
    fn start<'a>(&'a self, member: &'a Member) -> BoxFuture<'a, Result<(), LaunchError>> {
        Box::pin(async move { self.run_container(member).await.map_err(LaunchError::from) })
    }

    fn exited<'a>(&'a self, member: &'a Member) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let docker = self.client(member).ok()?;
            let name = member.container.as_deref()?;
            let running = match docker.inspect_container(name, None).await {
                Ok(info) => info.state.and_then(|s| s.running).unwrap_or(false),
                Err(_) => false,
            };
            if running {
                None
            } else {
                Some(container_log_tail(docker, name).await)
            }
        })
    }

    fn admin_address(&self, member: &Member) -> String {
        lock(&self.record).plan.dial_address(member)
    }
}

/// Last lines a container wrote to stdout/stderr, joined with " | ".
pub async fn container_log_tail(docker: &Docker, name: &str) -> String {
    let opts = LogsOptionsBuilder::default()
        .stdout(true)
        .stderr(true)
        .tail("12")
        .build();
    let mut stream = docker.logs(name, Some(opts));
    let mut lines = Vec::new();
    while let Some(Ok(chunk)) = stream.next().await {
        let text = chunk.to_string();
        let kept = text.lines().map(str::trim).filter(|l| !l.is_empty());
        lines.extend(kept.map(|l| l.chars().take(300).collect::<String>()));
    }
    if lines.is_empty() {
        "(no log output)".into()
    } else {
        lines.join(" | ")
    }
}

/// Stops (SIGTERM, then SIGKILL after `stop_timeout`) mongos → shards → config, removes the
/// containers with their anonymous volumes, the networks, and anything else labelled with the run.
pub(crate) async fn teardown(
    cluster: &RunningCluster,
    stop_timeout: Duration,
) -> Result<(), BackendError> {
    // Only endpoints where something may exist: a network is created before any container.
    let mut endpoints: Vec<Option<String>> = Vec::new();
    let started = containers(cluster).filter(|(m, _, _)| m.state != MemberState::Planned);
    for ep in started
        .map(|(_, _, ep)| ep)
        .chain(cluster.networks.iter().map(|(ep, _)| ep))
    {
        if !endpoints.contains(ep) {
            endpoints.push(ep.clone());
        }
    }
    let mut clients = HashMap::new();
    let mut errors = Vec::new();
    for ep in &endpoints {
        match connect(ep.as_deref()).await {
            Ok(d) => {
                clients.insert(ep.clone(), d);
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    let t = stop_timeout.as_secs().max(1) as i32;
    for roles in STOP_ORDER {
        let stops = containers(cluster)
            .filter(|(m, _, _)| roles.contains(&m.role))
            .filter_map(|(_, name, ep)| {
                let docker = clients.get(ep)?;
                Some(async move {
                    let opts = StopContainerOptionsBuilder::default().t(t).build();
                    let _ = docker.stop_container(name, Some(opts)).await;
                })
            });
        futures::future::join_all(stops).await;
    }
    for (_, name, ep) in containers(cluster) {
        let Some(docker) = clients.get(ep) else {
            continue;
        };
        if let Err(e) = remove_container(docker, name).await {
            errors.push(e);
        }
    }
    for (ep, net) in &cluster.networks {
        if let Some(docker) = clients.get(ep)
            && let Err(e) = docker.remove_network(net).await
            && !is_not_found(&e)
        {
            errors.push(format!("cannot remove network {net}: {}", one_line(e)));
        }
    }
    for ep in &endpoints {
        if clients.contains_key(ep)
            && let Err(e) =
                remove_labelled_matching(ep.as_deref(), Some(&cluster.run_id), |_| true).await
        {
            errors.push(e.to_string());
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(BackendError::Teardown(errors.join("; ")))
    }
}

/// The members of `cluster` that are containers, each with its name and engine.
fn containers(
    cluster: &RunningCluster,
) -> impl Iterator<Item = (&RunningMember, &str, &Option<String>)> {
    cluster.members.iter().filter_map(|m| match &m.handle {
        Handle::Container {
            container,
            endpoint,
        } => Some((m, container.as_str(), endpoint)),
        Handle::Process { .. } => None,
    })
}

fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

/// True for the engine's 409 "removal of container ... is already in progress": someone else
/// (another `down`, `down --all`) is removing it.
fn is_removal_in_progress(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 409,
            message,
        } if message.contains("already in progress")
    )
}

pub(crate) async fn remove_container(docker: &Docker, name: &str) -> Result<(), String> {
    let opts = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(name, Some(opts)).await {
        Ok(()) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) if is_removal_in_progress(&e) => {
            // Done when it is gone, whoever removes it.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                match docker.inspect_container(name, None).await {
                    Err(e) if is_not_found(&e) => return Ok(()),
                    _ if tokio::time::Instant::now() >= deadline => {
                        return Err(format!(
                            "cannot remove container {name}: another removal has not finished within 30 s"
                        ));
                    }
                    _ => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        }
        Err(e) => Err(format!("cannot remove container {name}: {}", one_line(e))),
    }
}

/// Removes every container (with its anonymous volumes), network and volume labelled by
/// microshard on `endpoint` — all runs, or only `run` — whose labels pass `keep` (`down --all`
/// keeps the caller's own, by [`LABEL_OWNER`]). Returns one line per object removed.
pub async fn remove_labelled_matching(
    endpoint: Option<&str>,
    run: Option<&str>,
    keep: impl Fn(&HashMap<String, String>) -> bool,
) -> Result<Vec<String>, DockerError> {
    let selected = |labels: Option<&HashMap<String, String>>| {
        labels.is_some_and(|l| l.contains_key(LABEL_CLUSTER) && keep(l))
    };
    let docker = connect(endpoint).await?;
    let filter_value = match run {
        Some(r) => format!("{LABEL_RUN}={r}"),
        None => LABEL_CLUSTER.to_string(),
    };
    let mut filters: HashMap<&str, Vec<String>> = HashMap::new();
    filters.insert("label", vec![filter_value]);
    let listing = |what: &str, e| DockerError::Api(format!("cannot list {what}: {}", one_line(e)));
    let (mut removed, mut errors) = (Vec::new(), Vec::new());
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters);
    let containers = docker.list_containers(Some(options.build())).await;
    for c in containers.map_err(|e| listing("containers", e))? {
        if !selected(c.labels.as_ref()) {
            continue;
        }
        let Some(id) = c.id else { continue };
        let name = c
            .names
            .and_then(|n| n.first().cloned())
            .unwrap_or(id.clone());
        match remove_container(&docker, &id).await {
            Ok(()) => removed.push(format!("container {}", name.trim_start_matches('/'))),
            Err(e) => errors.push(e),
        }
    }
    // A network or volume already gone is not an error: someone else removed it.
    let mut settle = |what: &str, name: &str, outcome| match outcome {
        Ok(()) => removed.push(format!("{what} {name}")),
        Err(e) if is_not_found(&e) => {}
        Err(e) => errors.push(format!("cannot remove {what} {name}: {}", one_line(e))),
    };
    let options = ListNetworksOptionsBuilder::default().filters(&filters);
    let networks = docker.list_networks(Some(options.build())).await;
    for n in networks.map_err(|e| listing("networks", e))? {
        if let Some(name) = n.name.filter(|_| selected(n.labels.as_ref())) {
            settle("network", &name, docker.remove_network(&name).await);
        }
    }
    let options = ListVolumesOptionsBuilder::default().filters(&filters);
    let volumes = docker.list_volumes(Some(options.build())).await;
    for v in volumes
        .map_err(|e| listing("volumes", e))?
        .volumes
        .unwrap_or_default()
    {
        if selected(Some(&v.labels)) {
            let opts = RemoveVolumeOptionsBuilder::default().force(true).build();
            settle(
                "volume",
                &v.name,
                docker.remove_volume(&v.name, Some(opts)).await,
            );
        }
    }
    if errors.is_empty() {
        Ok(removed)
    } else {
        Err(DockerError::Api(errors.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_split() {
        assert_eq!(split_image("mongo:7.0"), ("mongo", "7.0"));
        assert_eq!(split_image("mongo"), ("mongo", "latest"));
        assert_eq!(split_image("reg:5000/mongo"), ("reg:5000/mongo", "latest"));
    }
}
