//! The process backend: local `mongod`/`mongos` binaries, each in its own process group and
//! member directory, pids recorded in the state file.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;

use super::{
    Backend, BackendError, Handle, InFlight, RunningCluster, UpOptions, create_dir, lock,
    record_started, snapshot_write,
};
use crate::cluster::{LaunchError, Launcher};
use crate::events::Events;
use crate::topology::{
    Member, MemberRole, Plan, PlanOptions, TopologyError, TopologySpec, parse_cpuset,
};

mod place;
pub(in crate::backend) mod stop;

pub use stop::pid_alive;

/// The process backend: local `mongod`/`mongos` programs on this machine.
pub(crate) struct ProcessBackend;

impl Backend for ProcessBackend {
    fn plan(&self, spec: &TopologySpec, opts: &PlanOptions) -> Result<Plan, TopologyError> {
        place::plan(spec, opts)
    }

    fn runs_binaries(&self) -> bool {
        true
    }

    fn programs_found(&self, bin_dir: Option<&Path>, sharded: bool) -> Result<(), BackendError> {
        let programs = ["mongod", "mongos"].into_iter();
        for program in programs.take(1 + usize::from(sharded)) {
            crate::topology::find_program(program, bin_dir)
                .map_err(|e| BackendError::BadInput(e.to_string()))?;
        }
        Ok(())
    }

    /// Every member's port: they all listen here.
    fn local_ports(&self, plan: &Plan) -> Vec<u16> {
        plan.members.iter().map(|m| m.port).collect()
    }

    fn launcher<'a>(
        &'a self,
        plan: &'a Plan,
        record: Arc<Mutex<RunningCluster>>,
        _opts: &'a UpOptions,
        _in_flight: InFlight,
    ) -> BoxFuture<'a, Result<Box<dyn Launcher>, BackendError>> {
        Box::pin(async move {
            let launcher = ProcessLauncher::prepare(plan, record).await?;
            Ok(Box::new(launcher) as Box<dyn Launcher>)
        })
    }

    fn teardown<'a>(
        &'a self,
        cluster: &'a RunningCluster,
        stop_timeout: Duration,
        events: &'a dyn Events,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(stop::teardown(cluster, stop_timeout, events))
    }
}

/// Starts and watches local processes for one plan.
pub(crate) struct ProcessLauncher {
    record: Arc<Mutex<RunningCluster>>,
    /// Extra environment per program, `mongod` and `mongos` ([`server_env`]).
    env: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
}

impl ProcessLauncher {
    /// Checks ports and binaries, records versions and creates the run directory; starts nothing.
    pub(crate) async fn prepare(
        plan: &Plan,
        record: Arc<Mutex<RunningCluster>>,
    ) -> Result<ProcessLauncher, BackendError> {
        for m in &plan.members {
            check_port_free(m)?;
        }
        let mut versions = std::collections::BTreeMap::new();
        for m in &plan.members {
            if !versions.contains_key(m.role.program()) {
                let program = m.argv.first().map_or("", String::as_str);
                versions.insert(m.role.program().to_string(), binary_version(program).await?);
            }
        }
        // Flags this binary's version no longer accepts: named now, not as a start-up failure.
        if let Some(v) = versions.get("mongod") {
            for m in plan.members.iter().filter(|m| m.role != MemberRole::Mongos) {
                crate::topology::check_mongod_args(&m.argv, Some(v)).map_err(|e| {
                    BackendError::BadInput(format!("{}: {e}", plan.source.display()))
                })?;
            }
        }
        // mongos links the same allocator as mongod: both get it by their own version.
        let caller = std::env::var("GLIBC_TUNABLES").ok();
        let env: std::collections::BTreeMap<_, _> = versions
            .iter()
            .map(|(program, v)| (program.clone(), server_env(Some(v), caller.as_deref())))
            .collect();
        {
            let mut c = lock(&record);
            c.binary_versions = versions;
            c.created_dirs.push(plan.run_dir.clone());
            for m in c.members.iter_mut() {
                m.env = env.get(m.role.program()).cloned().unwrap_or_default();
            }
        }
        std::fs::create_dir_all(plan.run_dir.join("sockets")).map_err(|e| {
            BackendError::io(
                format!("cannot create run directory {}", plan.run_dir.display()),
                e,
            )
        })?;
        snapshot_write(&record)?;
        Ok(ProcessLauncher { record, env })
    }
}

/// The soft `RLIMIT_NOFILE` members start with (capped at the hard limit): mongod accepts
/// 0.8 × the soft limit in connections, and shells often leave 1024 (docs/mongodb-versions.md, "Limits").
pub const MEMBER_NOFILE: u64 = 64000;

/// Environment a local mongod or mongos gets on top of microshard's: for 8.0+ the
/// `GLIBC_TUNABLES=glibc.pthread.rseq=0` the official 8.0 image sets, without which TCMalloc's
/// per-CPU caches stay off and process and Docker runs measure different allocators
/// (docs/mongodb-versions.md, "8.0"). `version` is the first line of `mongod --version`,
/// `current` the caller's `GLIBC_TUNABLES` (kept, with the tunable appended).
pub(crate) fn server_env(
    version: Option<&str>,
    current: Option<&str>,
) -> std::collections::BTreeMap<String, String> {
    let mut env = std::collections::BTreeMap::new();
    let eight = version
        .and_then(crate::topology::flags::version_of)
        .is_some_and(|v| v >= (8, 0));
    if eight {
        let value = match current {
            Some(c) if c.contains("glibc.pthread.rseq") => c.to_string(),
            Some(c) if !c.is_empty() => format!("{c}:glibc.pthread.rseq=0"),
            _ => "glibc.pthread.rseq=0".to_string(),
        };
        env.insert("GLIBC_TUNABLES".to_string(), value);
    }
    env
}

/// First line of `PROGRAM --version` (the stand-in answers it too).
pub(crate) async fn binary_version(program: &str) -> Result<String, BackendError> {
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new(program)
            .arg("--version")
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .map_err(|_| BackendError::Program(format!("{program} --version did not answer within 20 s")))?
    .map_err(|e| BackendError::io(format!("cannot run {program}"), e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if !out.status.success() || first.is_empty() {
        let err = String::from_utf8_lossy(&out.stderr);
        // MongoDB 5.0+ binaries die with SIGILL on x86-64 CPUs without AVX.
        let hint =
            if std::os::unix::process::ExitStatusExt::signal(&out.status) == Some(libc::SIGILL) {
                " (illegal instruction: MongoDB 5.0+ needs a CPU with AVX)"
            } else {
                ""
            };
        return Err(BackendError::Program(format!(
            "{program} --version failed ({}){hint}: {}",
            out.status,
            err.lines().next().unwrap_or("no output")
        )));
    }
    Ok(first.to_string())
}

fn check_port_free(m: &Member) -> Result<(), BackendError> {
    let ip = match m.member_host.rsplit_once(':') {
        Some(("localhost", _)) | None => "127.0.0.1",
        Some((host, _)) => host,
    };
    match std::net::TcpListener::bind((ip, m.port)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            Err(BackendError::BadInput(format!(
                "port {} (for {}) is already in use on {ip}; stop what listens there or give --base-port PORT (the topology file's base_port)",
                m.port, m.name
            )))
        }
        Err(e) => Err(BackendError::io(
            format!("cannot check port {} for {}", m.port, m.name),
            e,
        )),
    }
}

impl Launcher for ProcessLauncher {
    fn start<'a>(&'a self, member: &'a Member) -> BoxFuture<'a, Result<(), LaunchError>> {
        Box::pin(async move { self.spawn(member).map_err(LaunchError::from) })
    }

    fn exited<'a>(&'a self, member: &'a Member) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let pid = lock(&self.record)
                .members
                .iter()
                .find(|m| m.name == member.name)
                .and_then(|m| m.handle.pid())?;
            if pid_alive(pid, member.port) {
                None
            } else {
                Some(log_tail(member))
            }
        })
    }

    fn admin_address(&self, member: &Member) -> String {
        member.member_host.clone()
    }
}

impl ProcessLauncher {
    /// Starts one member: its directories and output file, its command line, and its process
    /// in its own process group (pinned to its CPUs), recorded in the state file.
    fn spawn(&self, member: &Member) -> Result<(), BackendError> {
        let dir = self.create_dirs(member)?;
        // The member's `stdout.log` in its directory, opened twice: its stdout and its stderr.
        let path = dir.join("stdout.log");
        let failed = |e| BackendError::io(format!("cannot create {}", path.display()), e);
        let out = std::fs::File::create(&path).map_err(failed)?;
        let err = out.try_clone().map_err(failed)?;
        let (program, args) = member.argv.split_first().ok_or_else(|| {
            BackendError::Internal(format!("{} has no command line", member.name))
        })?;
        let cpus = match &member.cpuset {
            Some(c) => Some(
                parse_cpuset(c)
                    .map_err(|e| BackendError::Program(format!("{}: {e}", member.name)))?,
            ),
            None => None,
        };
        let mut cmd = Command::new(program);
        if let Some(env) = self.env.get(member.role.program()) {
            cmd.envs(env);
        }
        cmd.args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        own_group_and_limits(&mut cmd, cpus);
        let child = cmd.spawn().map_err(|e| {
            BackendError::io(format!("cannot start {} ({program})", member.name), e)
        })?;
        let pid = child.id();
        // The Child handle is dropped without waiting: teardown reaps by pid (waitpid), and a
        // detached `up` leaves the process to init.
        drop(child);
        record_started(&self.record, &member.name, |m| {
            m.handle = Handle::Process { pid: Some(pid) };
            m.address = member.member_host.clone();
            m.direct_uri = crate::cluster::direct_uri(&member.member_host);
            m.nofile = soft_nofile(pid);
        })
    }

    /// Creates the member's directory, its data directory and its log's directory; those
    /// outside the member directory are recorded so teardown removes them. Returns the member
    /// directory.
    fn create_dirs<'m>(&self, member: &'m Member) -> Result<&'m Path, BackendError> {
        let dir = member
            .dir
            .as_ref()
            .ok_or_else(|| BackendError::Internal(format!("{} has no directory", member.name)))?;
        create_dir(dir)?;
        if let Some(db) = &member.dbpath {
            if !db.starts_with(dir) {
                lock(&self.record).created_dirs.push(db.clone());
            }
            create_dir(db)?;
        }
        if let Some(log) = &member.log_path {
            if let Some(parent) = log.parent() {
                create_dir(parent)?;
            }
            if !log.starts_with(dir) {
                lock(&self.record).created_dirs.push(log.clone());
            }
        }
        Ok(dir)
    }
}

/// Makes the child, between fork and exec, the leader of its own process group, raises its
/// open-files limit and pins it to `cpus` (when given).
fn own_group_and_limits(cmd: &mut Command, cpus: Option<Vec<usize>>) {
    // SAFETY: only async-signal-safe calls (setpgid, getrlimit/setrlimit, sched_setaffinity)
    // between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // Own process group: a Ctrl-C to microshard's terminal does not reach the servers
            // mid-teardown, and `up` can leave them running after it exits.
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Enough descriptors for the connections a run opens (see MEMBER_NOFILE); the
            // hard limit is the ceiling an unprivileged process may raise its soft limit to.
            let mut lim: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                let want = (MEMBER_NOFILE as libc::rlim_t).min(lim.rlim_max);
                if lim.rlim_cur < want {
                    lim.rlim_cur = want;
                    libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                }
            }
            if let Some(cpus) = &cpus {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                for &c in cpus {
                    libc::CPU_SET(c, &mut set);
                }
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// The soft open-files limit of a running process, from `/proc/<pid>/limits`.
pub(crate) fn soft_nofile(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().find_map(|w| w.parse().ok())
}

/// Last lines of the member's log and of its stdout/stderr, joined with " | ".
pub(crate) fn log_tail(member: &Member) -> String {
    let mut parts = Vec::new();
    if let Some(log) = &member.log_path {
        parts.extend(tail_lines(log, 8));
    }
    if let Some(dir) = &member.dir {
        parts.extend(tail_lines(&dir.join("stdout.log"), 8));
    }
    if parts.is_empty() {
        "(no log output)".into()
    } else {
        parts.join(" | ")
    }
}

fn tail_lines(path: &Path, n: usize) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| {
            let l = l.trim();
            if l.len() > 300 {
                let mut cut = 300;
                while !l.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}…", &l[..cut])
            } else {
                l.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_8_0_mongod_gets_the_image_s_glibc_tunable() {
        let env = server_env(Some("db version v8.0.4"), None);
        assert_eq!(
            env.get("GLIBC_TUNABLES").map(String::as_str),
            Some("glibc.pthread.rseq=0")
        );
        let env = server_env(Some("db version v8.2.1"), Some("glibc.malloc.arena_max=2"));
        assert_eq!(
            env.get("GLIBC_TUNABLES").map(String::as_str),
            Some("glibc.malloc.arena_max=2:glibc.pthread.rseq=0")
        );
        assert!(server_env(Some("db version v7.0.12"), None).is_empty());
        assert!(server_env(Some("db version v7.0.0-standin"), None).is_empty());
        assert!(server_env(None, None).is_empty());
    }
}
