//! Where the Docker backend puts a plan's members: one container per member, on the engine of
//! its host, published on this machine's loopback (or `publish_address`); hosts on other
//! machines (or a remote engine) make a multi-host plan, whose members reach each other at host
//! address and published port.

use std::path::PathBuf;

use crate::topology::{
    HostSpec, Layout, Member, MemberRole, Placement, Plan, PlanOptions, Seat, TopologyError,
    TopologySpec, container_name, engine_label, is_local, is_loopback_host,
};

/// The Docker backend's plan of `spec`: where its hosts are (with what follows from that), the
/// image against the topology, then one container per member.
pub(crate) fn plan(spec: &TopologySpec, opts: &PlanOptions) -> Result<Plan, TopologyError> {
    let multi_host = hosts(spec)?;
    let mut notes = Vec::new();
    check_image(spec, multi_host, &mut notes)?;
    let placement = InContainers {
        spec,
        opts,
        multi_host,
    };
    let layout = Layout {
        multi_host,
        memory_limit_gb: spec.memory_limit_gb,
        notes,
        machine_ram: true,
        placement: &placement,
    };
    let plan = Plan::new(spec, opts, layout)?;
    let entry = plan.entry().filter(|_| !plan.multi_host);
    let own_engine = entry.map(|m| engine_label(m.docker_endpoint.as_deref()));
    let fix = "set a routable hosts[0].address and hosts[0].publish_address (e.g. \"0.0.0.0\"), or use the cluster's engine";
    crate::topology::check_clients_reach(spec, &plan, own_engine.as_deref(), fix)?;
    Ok(plan)
}

/// A Docker endpoint on another machine (`tcp://`, `http://` to anything but this machine's
/// loopback): its containers' addresses and published ports belong to that machine, so it is
/// planned as a multi-host topology.
fn is_remote_endpoint(endpoint: Option<&str>) -> bool {
    endpoint.is_some_and(|e| {
        let authority = e
            .split_once("://")
            .map_or(e, |(_, rest)| rest)
            .split('/')
            .next()
            .unwrap_or_default();
        let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        !e.starts_with("unix://") && !is_loopback_host(host)
    })
}

/// The endpoint a host's containers run on, when it is on another machine: the host's `docker`
/// key, or else `DOCKER_HOST` (which the engine client falls back to), named for messages.
fn remote_endpoint(docker: Option<&str>, docker_host: Option<&str>) -> Option<String> {
    match docker {
        Some(d) => is_remote_endpoint(Some(d)).then(|| d.to_string()),
        None => is_remote_endpoint(docker_host)
            .then(|| format!("DOCKER_HOST ({})", docker_host.unwrap_or_default())),
    }
}

/// Whether `m` runs on a Docker engine on another machine: its bind-mount directories are
/// that machine's, which Docker creates there and microshard cannot create or remove here.
pub(crate) fn on_remote_engine(m: &Member) -> bool {
    let docker_host = std::env::var("DOCKER_HOST").ok();
    m.container.is_some()
        && remote_endpoint(m.docker_endpoint.as_deref(), docker_host.as_deref()).is_some()
}

/// Whether the plan spans machines, and the refusals that follow from where its hosts are: a
/// Docker engine elsewhere needs its machine's address and a publish address.
fn hosts(spec: &TopologySpec) -> Result<bool, TopologyError> {
    let docker_host = std::env::var("DOCKER_HOST").ok();
    let remote = |h: &HostSpec| remote_endpoint(h.docker.as_deref(), docker_host.as_deref());
    let multi_host = spec.hosts.len() > 1
        || spec.hosts.iter().any(|h| !is_local(&h.address))
        || spec.hosts.iter().any(|h| remote(h).is_some());
    let refuse = |why: String| TopologyError::Plan(format!("{}: {why}", spec.source.display()));
    if let Some((i, endpoint)) = spec
        .hosts
        .iter()
        .enumerate()
        .filter(|(_, h)| is_local(&h.address))
        .find_map(|(i, h)| remote(h).map(|e| (i, e)))
    {
        let key = if spec.hosts[i].docker.is_some() {
            format!("hosts[{i}].docker")
        } else {
            endpoint
        };
        return Err(refuse(format!(
            "{key} is an engine on another machine; set hosts[{i}].address to that machine's address and hosts[{i}].publish_address (its members are reached through ports published there)"
        )));
    }
    if !multi_host {
        return Ok(false);
    }
    if spec.hosts.iter().any(|h| is_local(&h.address)) {
        return Err(refuse(
            "with several Docker hosts every host needs an address the others can reach (not localhost)".into(),
        ));
    }
    crate::topology::resolve::check_no_loopback_names(
        spec,
        crate::topology::resolve::resolve_here,
    )?;
    // Members on other hosts reach each other through published ports, which means
    // publishing beyond loopback: microshard does that only when the file says so.
    if let Some(i) = spec.hosts.iter().position(|h| h.publish_address.is_none()) {
        return Err(refuse(format!(
            "hosts[{i}].publish_address: a multi-host Docker topology publishes every member's port; say on which address (e.g. \"0.0.0.0\" or the host's IP)"
        )));
    }
    Ok(true)
}

/// The Docker image's version against the topology: flags it no longer has, its end of life,
/// and a CPU it cannot run on (the process backend checks its binary's version when it starts;
/// the file's own `version`/`image` were checked when it loaded).
fn check_image(
    spec: &TopologySpec,
    multi_host: bool,
    notes: &mut Vec<String>,
) -> Result<(), TopologyError> {
    use crate::topology::flags;
    let version = flags::wanted_version(spec.version.as_deref(), &spec.image);
    flags::check_mongod_args(&spec.mongod_args, version.as_deref())
        .map_err(|e| TopologyError::Plan(format!("{}: mongod_args: {e}", spec.source.display())))?;
    notes.extend(flags::end_of_life(version.as_deref()));
    // The members' CPU is this machine's only on a local engine with every member here.
    let local_engine = std::env::var("DOCKER_HOST")
        .map(|h| h.is_empty() || h.starts_with("unix://"))
        .unwrap_or(true);
    if local_engine && !multi_host {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        if let Some(why) = flags::missing_avx(version.as_deref(), std::env::consts::ARCH, &cpuinfo)
        {
            return Err(TopologyError::Plan(format!(
                "{}: {why}",
                spec.source.display()
            )));
        }
    }
    Ok(())
}

/// Members as containers of one plan.
struct InContainers<'a> {
    spec: &'a TopologySpec,
    opts: &'a PlanOptions,
    multi_host: bool,
}

impl Placement for InContainers<'_> {
    /// A container: its name, how the others and microshard reach it, and its engine.
    fn place(&self, m: &mut Member, seat: &Seat) {
        let host = &self.spec.hosts[seat.host_index];
        let is_mongos = seat.role == MemberRole::Mongos;
        let (run_id, port) = (&self.opts.run_id, seat.port);
        let container = container_name(run_id, &seat.name);
        m.member_host = if self.multi_host {
            format!("{}:{port}", host.address)
        } else {
            // Other members reach it by container name on the run's network; microshard
            // itself reaches every member through its published port, because container
            // addresses are routable from the host only with rootful Docker on Linux
            // (not Docker Desktop, not rootless).
            format!("{container}:{port}")
        };
        let bind = host.publish_address.as_deref().unwrap_or("127.0.0.1");
        m.published = Some(format!("{bind}:{port}"));
        m.argv = vec![
            seat.role.program().into(),
            "--port".into(),
            port.to_string(),
            "--bind_ip_all".into(),
        ];
        if !is_mongos {
            // Explicit, so a --configsvr member does not fall back to /data/configdb.
            m.argv.extend(["--dbpath".into(), "/data/db".into()]);
            m.dbpath = Some(PathBuf::from("/data/db"));
        }
        m.container = Some(container);
        m.docker_endpoint = host.docker.clone();
        m.memory_limit_gb = self.spec.memory_limit_gb;
        // A data directory given for a shard is bind-mounted as its /data/db.
        m.dir = seat
            .data_dir
            .as_ref()
            .map(|d| d.join(format!("{run_id}-{}", seat.name)));
    }
}

/// The data directories of members on engines on other machines, which Docker created there and
/// microshard cannot remove from here: one line each, naming the engine.
pub(crate) fn remote_dirs(plan: &Plan) -> Vec<String> {
    plan.members
        .iter()
        .filter(|m| on_remote_engine(m))
        .filter_map(|m| {
            let dir = m.dir.as_ref()?;
            let engine = m
                .docker_endpoint
                .clone()
                .unwrap_or_else(|| super::endpoint_label(None));
            Some(format!(
                "{} stays on the machine of {engine} (Docker created it there for {}; remove it there)",
                dir.display(),
                m.name
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::BackendKind;
    use std::path::Path;

    /// A remote engine's data directories are that machine's; named, not removed.
    #[test]
    fn remote_engines_data_directories_are_named_not_made_here() {
        let spec = TopologySpec::parse(
            "name = \"r\"\nkind = \"standalone\"\n[[hosts]]\naddress = \"10.1.2.3\"\ndocker = \"tcp://10.1.2.3:2375\"\npublish_address = \"0.0.0.0\"\ndata_dirs = [\"/srv/ms\"]\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let opts = crate::topology::PlanOptions {
            links_pending: false,
            backend: BackendKind::Docker,
            run_id: "r-1".into(),
            run_dir: PathBuf::from("/tmp/ms/r-1"),
            bin_dir: None,
            total_memory_gb: Some(9.0),
        };
        let p = plan(&spec, &opts).unwrap();
        assert!(on_remote_engine(&p.members[0]));
        let lines = remote_dirs(&p);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("/srv/ms") && lines[0].contains("tcp://10.1.2.3:2375"),
            "{lines:?}"
        );
        let local = TopologySpec::parse(
            "name = \"l\"\nkind = \"standalone\"\n[[hosts]]\ndata_dirs = [\"/srv/ms\"]\n",
            Path::new("t.toml"),
        )
        .unwrap();
        if std::env::var("DOCKER_HOST").is_err() {
            assert!(remote_dirs(&plan(&local, &opts).unwrap()).is_empty());
        }
    }

    #[test]
    fn docker_host_pointing_elsewhere_counts_as_another_machine() {
        assert_eq!(
            remote_endpoint(None, Some("tcp://10.1.2.3:2375")).as_deref(),
            Some("DOCKER_HOST (tcp://10.1.2.3:2375)")
        );
        assert_eq!(
            remote_endpoint(None, Some("unix:///run/user/1000/docker.sock")),
            None
        );
        assert_eq!(remote_endpoint(None, None), None);
        // The host's own key wins over DOCKER_HOST.
        assert_eq!(
            remote_endpoint(Some("unix:///var/run/docker.sock"), Some("tcp://x:2375")),
            None
        );
        assert_eq!(
            remote_endpoint(Some("tcp://b:2375"), None).as_deref(),
            Some("tcp://b:2375")
        );
    }
}
