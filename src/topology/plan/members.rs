//! How each member of a plan is made: its seat (set, host, slot), ports, directories, container name and command line (`MemberCtx::{standalone, sharded, member}`).

use std::path::PathBuf;

use super::{
    BackendKind, MAX_UNIX_SOCKET_PATH, Member, MemberRole, PlanOptions, Ports, Programs, Sizing,
    container_name, expand, floor2, format_gb,
};
use crate::topology::spec::{Baseline, HostSpec, MIN_CACHE_GB, TopologySpec};

/// Where one shard's replica set sits: its name, its host and its slot on that host (which
/// CPU set and data directory it takes), and each member's cache.
pub(super) struct ShardSeats<'a> {
    pub(super) set: &'a str,
    pub(super) host_index: usize,
    pub(super) host: &'a HostSpec,
    /// The shard's place among its host's shards.
    pub(super) slot: usize,
    pub(super) cache_gb: f64,
}

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
    /// ports are given mongos first, then shards host by host, then config servers.
    pub(super) fn sharded(&self, sizing: &Sizing, config_set: &str) -> Vec<Member> {
        let spec = self.spec;
        let mut ports = Ports::from(spec.base_port);
        let mongos_ports: Vec<u16> = (0..spec.mongos.count).map(|_| ports.take()).collect();
        let mut shards = Vec::new();
        let mut shard_sets = 0usize;
        for (h, host) in spec.hosts.iter().enumerate() {
            let per = self.shard_cache_gb(sizing, h, host);
            for s in 0..spec.shards_per_host as usize {
                let set = format!("sh{shard_sets}");
                shard_sets += 1;
                let seats = ShardSeats {
                    set: &set,
                    host_index: h,
                    host,
                    slot: s,
                    cache_gb: per,
                };
                shards.extend(self.shard_members(&seats, &mut ports));
            }
        }
        let configs = self.config_servers(config_set, &mut ports);
        let configdb = format!(
            "{config_set}/{}",
            configs
                .iter()
                .map(|c| c.member_host.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
        let mut members = self.routers(mongos_ports, &configdb);
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

    /// The members of one shard's replica set, each on the next port.
    pub(super) fn shard_members(&self, seats: &ShardSeats<'_>, ports: &mut Ports) -> Vec<Member> {
        (0..self.spec.shard_members)
            .map(|k| {
                // Member 0 keeps the set's name, so one-member shards read as before.
                let name = if k == 0 {
                    seats.set.to_string()
                } else {
                    format!("{}-{k}", seats.set)
                };
                self.member(Seat {
                    name,
                    role: MemberRole::Shard,
                    host_index: seats.host_index,
                    replica_set: Some(seats.set.to_string()),
                    port: ports.take(),
                    cache_gb: Some(seats.cache_gb),
                    cpuset: seats.host.shard_cpusets.get(seats.slot).cloned(),
                    data_dir: seats.host.data_dirs.get(seats.slot).cloned(),
                })
            })
            .collect()
    }

    /// The config servers' replica set, on the first host, each on the next port.
    pub(super) fn config_servers(&self, config_set: &str, ports: &mut Ports) -> Vec<Member> {
        let spec = self.spec;
        (0..spec.config_servers.members)
            .map(|i| {
                self.member(Seat {
                    name: format!("cfg{i}"),
                    role: MemberRole::Config,
                    host_index: 0,
                    replica_set: Some(config_set.to_string()),
                    port: ports.take(),
                    cache_gb: Some(spec.config_servers.cache_gb),
                    cpuset: spec.config_servers.cpuset.clone(),
                    data_dir: None,
                })
            })
            .collect()
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
                m.argv.push("--configdb".into());
                m.argv.push(configdb.to_string());
                let extra: Vec<String> = spec.mongos_args.iter().map(|a| expand(a, &m)).collect();
                m.argv.extend(extra);
                m
            })
            .collect()
    }

    /// One member: where it listens and is reached, its directories or container, and its
    /// command line for the backend.
    pub(super) fn member(&self, seat: Seat) -> Member {
        let is_mongos = seat.role == MemberRole::Mongos;
        let mut m = Member {
            name: seat.name.clone(),
            role: seat.role,
            host_index: seat.host_index,
            replica_set: seat.replica_set.clone(),
            port: seat.port,
            member_host: String::new(),
            published: None,
            dir: None,
            dbpath: None,
            log_path: None,
            container: None,
            docker_endpoint: None,
            argv: Vec::new(),
            cache_gb: if is_mongos { None } else { seat.cache_gb },
            cpuset: seat.cpuset.clone(),
            memory_limit_gb: None,
        };
        match self.opts.backend {
            BackendKind::Process | BackendKind::Existing => self.as_process(&mut m, &seat),
            BackendKind::Docker => self.in_container(&mut m, &seat),
        }
        if !is_mongos {
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
            None => dir.join(format!(
                "{}.log",
                if is_mongos { "mongos" } else { "mongod" }
            )),
        };
        m.member_host = format!("{}:{port}", host.address);
        let bind = if host.address == "localhost" {
            "127.0.0.1"
        } else {
            host.address.as_str()
        };
        m.published = Some(format!("{}:{port}", host.address));
        let program = self
            .programs
            .map(|p| {
                if is_mongos {
                    p.mongos.clone().unwrap_or_else(|| "mongos".into())
                } else {
                    p.mongod.clone()
                }
            })
            .unwrap_or_else(|| PathBuf::from(if is_mongos { "mongos" } else { "mongod" }));
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
            m.argv.push("--unixSocketPrefix".into());
            m.argv.push(sockets.display().to_string());
        } else {
            m.argv.push("--nounixsocket".into());
        }
        if !is_mongos {
            m.argv.push("--dbpath".into());
            m.argv.push(dbpath.display().to_string());
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
        let bind = host
            .publish_address
            .clone()
            .unwrap_or_else(|| "127.0.0.1".into());
        m.published = Some(format!("{bind}:{port}"));
        m.argv = vec![
            if is_mongos { "mongos" } else { "mongod" }.into(),
            "--port".into(),
            port.to_string(),
            "--bind_ip_all".into(),
        ];
        if !is_mongos {
            // Explicit, so a --configsvr member does not fall back to /data/configdb.
            m.argv.push("--dbpath".into());
            m.argv.push("/data/db".into());
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
            m.argv.push("--replSet".into());
            m.argv.push(rs);
        }
        if let Some(g) = m.cache_gb {
            m.argv.push("--wiredTigerCacheSizeGB".into());
            m.argv.push(format_gb(g));
        }
        let extra: Vec<String> = self.spec.mongod_args.iter().map(|a| expand(a, m)).collect();
        m.argv.extend(extra);
    }
}
