//! How each member of a plan is made: its seat (set, host, slot), ports, directories, container name and command line (`MemberCtx::{standalone, sharded, member}`).

use std::path::PathBuf;

use super::{
    BackendKind, MAX_UNIX_SOCKET_PATH, Member, MemberRole, PlanOptions, Programs, Sizing,
    container_name, expand, floor2, format_gb,
};
use crate::topology::spec::{Baseline, HostSpec, MIN_CACHE_GB, TopologySpec};

/// Where one member sits in the topology: what [`MemberCtx::member`] makes a member of.
pub(super) struct Seat {
    pub(super) name: String,
    pub(super) role: MemberRole,
    pub(super) host_index: usize,
    pub(super) replica_set: Option<String>,
    pub(super) port: u16,
    pub(super) cache_gb: Option<f64>,
    pub(super) cpuset: Option<String>,
    pub(super) data_dir: Option<PathBuf>,
}

/// What every member of one plan shares: the topology, the options and where the binaries are.
pub(super) struct MemberCtx<'a> {
    pub(super) spec: &'a TopologySpec,
    pub(super) opts: &'a PlanOptions,
    pub(super) multi_host: bool,
    pub(super) programs: Option<&'a Programs>,
}

impl MemberCtx<'_> {
    /// The single mongod of a standalone topology.
    pub(super) fn standalone(&self, sizing: &Sizing) -> Member {
        let spec = self.spec;
        let host = &spec.hosts[0];
        let cache = spec
            .cache_gb
            .unwrap_or_else(|| sizing.capped(floor2(sizing.budget(host)).max(MIN_CACHE_GB)));
        self.member(Seat {
            name: "single".into(),
            role: MemberRole::Standalone,
            host_index: 0,
            replica_set: (spec.baseline == Baseline::ReplicaSet).then(|| "rs0".to_string()),
            port: spec.base_port,
            cache_gb: Some(cache),
            cpuset: host.shard_cpusets.first().cloned(),
            data_dir: host.data_dirs.first().cloned(),
        })
    }

    /// The members of a sharded topology, in plan order (mongos, shards, config servers); the
    /// ports are given mongos first, then shards host by host (each set's members on the next
    /// ports), then config servers.
    pub(super) fn sharded(&self, sizing: &Sizing, config_set: &str) -> Vec<Member> {
        let spec = self.spec;
        // Counted in u32: the last port may be 65535.
        let mut ports = (u32::from(spec.base_port)..).map(|p| p as u16);
        let mongos_ports: Vec<u16> = ports.by_ref().take(spec.mongos.count as usize).collect();
        let mut shards = Vec::new();
        for (h, host) in spec.hosts.iter().enumerate() {
            let cache_gb = Some(self.shard_cache_gb(sizing, h, host));
            for slot in 0..spec.shards_per_host as usize {
                let set = format!("sh{}", h * spec.shards_per_host as usize + slot);
                let set_ports = ports.by_ref().take(spec.shard_members as usize);
                for (k, port) in set_ports.enumerate() {
                    // Member 0 keeps the set's name, so one-member shards read as before.
                    let name = if k == 0 {
                        set.clone()
                    } else {
                        format!("{set}-{k}")
                    };
                    shards.push(self.member(Seat {
                        name,
                        role: MemberRole::Shard,
                        host_index: h,
                        replica_set: Some(set.clone()),
                        port,
                        cache_gb,
                        cpuset: host.shard_cpusets.get(slot).cloned(),
                        data_dir: host.data_dirs.get(slot).cloned(),
                    }));
                }
            }
        }
        let configs: Vec<Member> = (0..spec.config_servers.members)
            .zip(ports)
            .map(|(i, port)| {
                self.member(Seat {
                    name: format!("cfg{i}"),
                    role: MemberRole::Config,
                    host_index: 0,
                    replica_set: Some(config_set.to_string()),
                    port,
                    cache_gb: Some(spec.config_servers.cache_gb),
                    cpuset: spec.config_servers.cpuset.clone(),
                    data_dir: None,
                })
            })
            .collect();
        let hosts: Vec<&str> = configs.iter().map(|c| c.member_host.as_str()).collect();
        let mut members = self.routers(mongos_ports, &format!("{config_set}/{}", hosts.join(",")));
        members.extend(shards);
        members.extend(configs);
        members
    }

    /// The cache of each shard mongod on host `h`: the spec's, or the host's budget (less the
    /// config servers' share on the first host) split over its mongods.
    pub(super) fn shard_cache_gb(&self, sizing: &Sizing, h: usize, host: &HostSpec) -> f64 {
        let spec = self.spec;
        let cfg_share = if h == 0 {
            spec.config_servers.cache_gb * f64::from(spec.config_servers.members)
        } else {
            0.0
        };
        let mongods = f64::from(spec.shards_per_host * spec.shard_members);
        spec.cache_gb.unwrap_or_else(|| {
            sizing.capped(floor2((sizing.budget(host) - cfg_share) / mongods).max(MIN_CACHE_GB))
        })
    }

    /// The routers, one per port, each pointed at the config servers (`--configdb`).
    pub(super) fn routers(&self, ports: Vec<u16>, configdb: &str) -> Vec<Member> {
        let spec = self.spec;
        ports
            .into_iter()
            .enumerate()
            .map(|(i, port)| {
                let mut m = self.member(Seat {
                    name: format!("mongos{i}"),
                    role: MemberRole::Mongos,
                    host_index: 0,
                    replica_set: None,
                    port,
                    cache_gb: None,
                    cpuset: spec.mongos.cpuset.clone(),
                    data_dir: None,
                });
                m.argv.extend(["--configdb".into(), configdb.to_string()]);
                let extra: Vec<String> = spec.mongos_args.iter().map(|a| expand(a, &m)).collect();
                m.argv.extend(extra);
                m
            })
            .collect()
    }

    /// One member: where it listens and is reached, its directories or container, and its
    /// command line for the backend.
    pub(super) fn member(&self, seat: Seat) -> Member {
        let mut m = Member {
            name: seat.name.clone(),
            role: seat.role,
            host_index: seat.host_index,
            replica_set: seat.replica_set.clone(),
            port: seat.port,
            cache_gb: seat.cache_gb,
            cpuset: seat.cpuset.clone(),
            ..Member::default()
        };
        match self.opts.backend {
            BackendKind::Process | BackendKind::Existing => self.as_process(&mut m, &seat),
            BackendKind::Docker => self.in_container(&mut m, &seat),
        }
        if seat.role != MemberRole::Mongos {
            self.server_flags(&mut m);
        }
        m
    }

    /// A local process: its directory, data path, log and program.
    pub(super) fn as_process(&self, m: &mut Member, seat: &Seat) {
        let host = &self.spec.hosts[seat.host_index];
        let is_mongos = seat.role == MemberRole::Mongos;
        let (run_id, name, port) = (&self.opts.run_id, &seat.name, seat.port);
        let dir = self.opts.run_dir.join(name);
        let dbpath = match &seat.data_dir {
            Some(d) => d.join(format!("{run_id}-{name}")),
            None => dir.join("db"),
        };
        let log = match &host.log_dir {
            Some(d) => d.join(format!("{run_id}-{name}.log")),
            None => dir.join(format!("{}.log", seat.role.program())),
        };
        m.member_host = format!("{}:{port}", host.address);
        let bind = if host.address == "localhost" {
            "127.0.0.1"
        } else {
            host.address.as_str()
        };
        m.published = Some(format!("{}:{port}", host.address));
        let program = match (self.programs, is_mongos) {
            (Some(p), false) => p.mongod.clone(),
            (
                Some(Programs {
                    mongos: Some(p), ..
                }),
                true,
            ) => p.clone(),
            _ => PathBuf::from(seat.role.program()),
        };
        m.argv = vec![
            program.display().to_string(),
            "--port".into(),
            port.to_string(),
            "--bind_ip".into(),
            bind.into(),
            "--logpath".into(),
            log.display().to_string(),
        ];
        // mongod listens on `<prefix>/mongodb-<port>.sock`; a path longer than the
        // kernel's limit (a long TMPDIR) makes it fail to start, so then no socket at all:
        // microshard and its clients use TCP only.
        let sockets = self.opts.run_dir.join("sockets");
        let socket = sockets.join(format!("mongodb-{port}.sock"));
        if socket.as_os_str().len() <= MAX_UNIX_SOCKET_PATH {
            m.argv
                .extend(["--unixSocketPrefix".into(), sockets.display().to_string()]);
        } else {
            m.argv.push("--nounixsocket".into());
        }
        if !is_mongos {
            m.argv
                .extend(["--dbpath".into(), dbpath.display().to_string()]);
            m.dbpath = Some(dbpath);
        }
        m.dir = Some(dir);
        m.log_path = Some(log);
    }

    /// A container: its name, how the others and microshard reach it, and its engine.
    pub(super) fn in_container(&self, m: &mut Member, seat: &Seat) {
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

    /// A mongod's role, replica set, cache and the topology's own `mongod_args`.
    pub(super) fn server_flags(&self, m: &mut Member) {
        match m.role {
            MemberRole::Config => m.argv.push("--configsvr".into()),
            MemberRole::Shard => m.argv.push("--shardsvr".into()),
            _ => {}
        }
        if let Some(rs) = m.replica_set.clone() {
            m.argv.extend(["--replSet".into(), rs]);
        }
        if let Some(g) = m.cache_gb {
            m.argv
                .extend(["--wiredTigerCacheSizeGB".into(), format_gb(g)]);
        }
        let extra: Vec<String> = self.spec.mongod_args.iter().map(|a| expand(a, m)).collect();
        m.argv.extend(extra);
    }
}
