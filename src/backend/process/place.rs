//! Where the process backend puts a plan's members: this machine only, each a local program
//! with its own directory, data path, log and (when the path fits) unix socket.

use std::path::PathBuf;

use crate::topology::{
    Kind, Layout, MAX_UNIX_SOCKET_PATH, Member, MemberRole, Placement, Plan, PlanOptions, Seat,
    TopologyError, TopologySpec, engine_label, find_program, is_local,
};

/// The process backend's plan of `spec`: every member a local program, refused when a host is
/// not this machine.
pub(crate) fn plan(spec: &TopologySpec, opts: &PlanOptions) -> Result<Plan, TopologyError> {
    if spec.hosts.len() > 1 || spec.hosts.iter().any(|h| !is_local(&h.address)) {
        return Err(TopologyError::Plan(format!(
            "{}: the process backend runs on this machine only; hosts other than localhost need --backend docker",
            spec.source.display()
        )));
    }
    let mut notes = Vec::new();
    if spec.memory_limit_gb.is_some() {
        notes.push(
            "memory_limit_gb applies to containers only; the process backend ignores it".into(),
        );
    }
    let placement = Local {
        spec,
        opts,
        programs: Programs::find(spec.kind, opts)?,
    };
    let layout = Layout {
        multi_host: false,
        memory_limit_gb: None,
        notes,
        machine_ram: true,
        placement: &placement,
    };
    let plan = Plan::new(spec, opts, layout)?;
    // Local processes: this machine's own engine shares its network with them.
    let fix = "use --backend docker with a routable hosts[0].address and hosts[0].publish_address";
    crate::topology::check_clients_reach(spec, &plan, Some(&engine_label(None)), fix)?;
    Ok(plan)
}

/// The programs members run: `mongod`, and `mongos` for a sharded topology.
struct Programs {
    mongod: PathBuf,
    mongos: Option<PathBuf>,
}

impl Programs {
    /// Found in `--bin-dir` or on PATH (`--standin`'s links, made once every check has passed,
    /// are taken as there).
    fn find(kind: Kind, opts: &PlanOptions) -> Result<Programs, TopologyError> {
        let find = |name: &str| match (&opts.bin_dir, opts.links_pending) {
            (Some(dir), true) => Ok(dir.join(name)),
            (dir, _) => find_program(name, dir.as_deref()),
        };
        let mongod = find("mongod")?;
        let mongos = match kind {
            Kind::Sharded => Some(find("mongos")?),
            Kind::Standalone => None,
        };
        Ok(Programs { mongod, mongos })
    }
}

/// Members as local processes of one plan.
struct Local<'a> {
    spec: &'a TopologySpec,
    opts: &'a PlanOptions,
    programs: Programs,
}

impl Placement for Local<'_> {
    /// A local process: its directory, data path, log and program.
    fn place(&self, m: &mut Member, seat: &Seat) {
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
        let program = match (is_mongos, &self.programs.mongos) {
            (false, _) => self.programs.mongod.clone(),
            (true, Some(p)) => p.clone(),
            (true, None) => PathBuf::from(seat.role.program()),
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
}
