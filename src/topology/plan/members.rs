//! How each member of a plan is made: its seat (set, host, slot), ports, cache and server flags
//! (`MemberCtx::{standalone, sharded, member}`); where it runs is its backend's [`Placement`].

use std::path::PathBuf;

use super::{Member, MemberRole, Placement, Sizing, expand, floor2, format_gb};
use crate::topology::spec::{Baseline, HostSpec, MIN_CACHE_GB, TopologySpec};

/// Where one member sits in the topology: what [`MemberCtx::member`] makes a member of, and
/// what a [`Placement`] places.
pub(crate) struct Seat {
    /// The member's name (`sh0`, `sh0-1`, `cfg0`, `mongos0`, `single`).
    pub(crate) name: String,
    /// What it does.
    pub(crate) role: MemberRole,
    /// Index into the topology's hosts.
    pub(crate) host_index: usize,
    /// Its replica set, if any.
    pub(crate) replica_set: Option<String>,
    /// The port it listens on.
    pub(crate) port: u16,
    /// Its WiredTiger cache (GB), mongod only.
    pub(crate) cache_gb: Option<f64>,
    /// The CPU set it is pinned to.
    pub(crate) cpuset: Option<String>,
    /// The host's data directory for it (`data_dirs`), if one is given.
    pub(crate) data_dir: Option<PathBuf>,
}

/// What every member of one plan shares: the topology and how its backend places a member.
pub(super) struct MemberCtx<'a> {
    pub(super) spec: &'a TopologySpec,
    pub(super) placement: &'a dyn Placement,
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

    /// One member: its seat, placed by the backend (where it listens and is reached, its
    /// directories or container, the start of its command line), then its server flags.
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
        self.placement.place(&mut m, &seat);
        if seat.role != MemberRole::Mongos {
            self.server_flags(&mut m);
        }
        m
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
