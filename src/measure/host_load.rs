//! How quiet the machine was while a run was measured: the CPU the client and the servers it
//! measured used, the CPU every other process took (and the hypervisor's steal), and the load
//! average, from `/proc` (Linux). A figure measured while other work shared the cores measures
//! that work too, so a busy host degrades the result with the numbers (`docs/result-schema.md`,
//! "Validity"); the servers' CPU per member is what decides, on one box, whether splitting pays.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The machine and the processes that matter, at one instant.
#[derive(Debug, Clone)]
pub struct HostSample {
    at: Instant,
    /// `/proc/stat`'s `cpu` line: busy ticks (all but idle and iowait), steal ticks.
    busy: u64,
    steal: u64,
    /// The client: this process and its descendants (client processes of `--clients`).
    client: u64,
    /// Every other process (neither the client nor a measured server), by pid: its parent and
    /// its ticks, its reaped children's included.
    others: BTreeMap<u32, (u32, u64)>,
    /// Each measured server member found on this machine, by name: its CPU ticks, and its CPU
    /// nanoseconds where the kernel accounts them.
    servers: BTreeMap<String, u64>,
    servers_ns: BTreeMap<String, u64>,
    /// Members on this machine (by address); fewer `servers` found means some run where `/proc`
    /// cannot tell them (a container's own port), and other work cannot be told from theirs.
    local_members: usize,
    /// Every measured member, by name, so those whose CPU was not found are named.
    members: Vec<String>,
    /// Cumulative CPU nanoseconds of members `/proc` cannot find, as their backend read them
    /// (a container's, from its engine), by name.
    elsewhere_ns: BTreeMap<String, u64>,
    load_1m: Option<f64>,
}

/// What the machine did over a measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    /// Logical CPUs of the machine.
    pub cores: u32,
    /// Cores' worth of CPU used by processes other than the client and the servers measured;
    /// `None` when a server on this machine could not be found in `/proc` (a container), so its
    /// CPU cannot be told from other work.
    pub other_cores: Option<f64>,
    /// Cores' worth of CPU the hypervisor took (steal).
    pub steal_cores: f64,
    /// Cores' worth of CPU the client used.
    pub client_cores: f64,
    /// Cores' worth of CPU every process used (the client, the servers and the rest).
    #[serde(default)]
    pub busy_cores: f64,
    /// CPU µs each server member used over the window, by member name: a local process's from
    /// `/proc`, a container's from its engine's stats (absent: members elsewhere, or a server
    /// or container that was not found or not read at both ends).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_cpu_us: BTreeMap<String, u64>,
    /// The measured members whose CPU is not in [`Self::server_cpu_us`] (elsewhere, a container
    /// whose stats could not be read, or no process found listening on their port): a sum over
    /// `server_cpu_us` is then partial, and says so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_cpu_missing: Vec<String>,
    /// The 1-minute load average at the window's start.
    pub load_before: Option<f64>,
    /// The 1-minute load average at the window's end.
    pub load_after: Option<f64>,
}

impl HostLoad {
    /// `busy host: other processes used 0.9 of 2 cores …` when other work (or steal) took more
    /// than `max_share` of the machine's cores.
    pub fn busy(&self, max_share: f64) -> Option<String> {
        let cores = f64::from(self.cores.max(1));
        let limit = max_share * cores;
        let taken = |what: &str, used: f64| {
            (used > limit).then(|| {
                format!(
                    "busy host: {what} {used:.1} of {} cores during this run (more than microshard.busyhost={max_share} of them): the figure measures that work too",
                    self.cores
                )
            })
        };
        self.other_cores
            .and_then(|other| taken("other processes used", other))
            .or_else(|| taken("the hypervisor took (CPU steal)", self.steal_cores))
    }
}

/// Ticks per second of `/proc`'s CPU times.
fn ticks_per_second() -> f64 {
    rustix::param::clock_ticks_per_second() as f64
}

/// The machine's busy and steal ticks from `/proc/stat`.
fn machine_ticks() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal …
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6);
    Some((busy, at(7)))
}

/// One process's parent, CPU ticks (user + system, its waited-for children included) and
/// command line.
struct Proc {
    pid: u32,
    parent: u32,
    ticks: u64,
    argv: Vec<String>,
}

fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The fields after the command name, which may hold spaces and parentheses.
            let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let num = |i: usize| rest.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
            let argv = std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .unwrap_or_default()
                .split('\0')
                .map(str::to_string)
                .collect();
            Some(Proc {
                pid,
                parent: u32::try_from(num(1)).unwrap_or(0),
                ticks: num(11) + num(12) + num(13) + num(14),
                argv,
            })
        })
        .collect()
}

/// A process's CPU time in nanoseconds: the sum over its threads of `/proc/PID/task/TID/schedstat`'s
/// first field (the scheduler's own account, where `/proc/PID/stat` counts 10 ms ticks); `None`
/// where the kernel keeps no such account. Threads that ended since the last sample are lost
/// with their time, which the servers' thread pools make rare.
fn cpu_ns(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = None;
    for t in tasks.flatten() {
        let text = std::fs::read_to_string(t.path().join("schedstat")).ok()?;
        let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
        total = Some(total.unwrap_or(0) + ns);
    }
    total
}

/// The member a process serves, when it is a `mongod`/`mongos` listening on one of `ports`.
fn member_of<'a>(p: &Proc, ports: &'a [(String, String)]) -> Option<&'a str> {
    let program = p.argv.first()?.rsplit('/').next()?;
    let role = match program {
        "mongod" | "mongos" => program,
        // The stand-in started as `microshard standin mongod …`.
        _ if p.argv.get(1).is_some_and(|a| a == "standin") => p.argv.get(2)?.as_str(),
        _ => return None,
    };
    if !matches!(role, "mongod" | "mongos") {
        return None;
    }
    let port = p
        .argv
        .windows(2)
        .find(|w| w[0] == "--port")
        .map(|w| w[1].as_str())?;
    ports
        .iter()
        .find(|(_, p)| p == port)
        .map(|(name, _)| name.as_str())
}

/// Programs that listen on a port for a server elsewhere (a container's published port, a
/// forwarded one): their CPU is not the server's.
const PROXIES: &[&str] = &[
    "docker-proxy",
    "rootlesskit",
    "slirp4netns",
    "gvproxy",
    "vpnkit",
    "kubectl",
    "ssh",
    "socat",
];

/// The local members `member_of` did not recognise (a wrapper script, a renamed binary), found
/// by the process listening on their port; not a proxy, and not this run's own client
/// processes (an in-process stand-in is no server process of its own).
fn by_listener<'a>(
    all: &'a [Proc],
    local: &[(String, String)],
    client_root: u32,
) -> Vec<(String, &'a Proc)> {
    let known = |name: &str| all.iter().any(|p| member_of(p, local) == Some(name));
    let rest: Vec<(&String, u16)> = (local.iter())
        .filter(|(name, _)| !known(name))
        .filter_map(|(name, port)| Some((name, port.parse().ok()?)))
        .collect();
    if rest.is_empty() {
        return Vec::new();
    }
    let ports: Vec<u16> = rest.iter().map(|(_, p)| *p).collect();
    let pids = super::listeners::pids_listening_on(&ports);
    let program = |p: &Proc| {
        p.argv
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
    };
    let ours = |pid: u32| pid == client_root || pid == std::process::id();
    rest.into_iter()
        .filter_map(|(name, port)| {
            let p = all.iter().find(|p| Some(&p.pid) == pids.get(&port))?;
            let proxy = program(p).is_some_and(|n| PROXIES.contains(&n.as_str()));
            (!proxy && !ours(p.pid)).then(|| (name.clone(), p))
        })
        .collect()
}

/// The oldest ancestor of `me` running the same program: a `--clients` coordinator, whose client
/// processes are this run's, not other work.
fn family_root(all: &[Proc], me: u32) -> u32 {
    let exe = |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    let mine = exe(me);
    let mut root = me;
    while let Some(p) = all.iter().find(|p| p.pid == root)
        && p.parent > 1
        && mine.is_some()
        && exe(p.parent) == mine
    {
        root = p.parent;
    }
    root
}

/// Samples the machine now. `members` are the measured servers as `(name, "host:port")`; those
/// on this machine are found by their command line.
pub fn sample(members: &[(String, String)]) -> Option<HostSample> {
    let (busy, steal) = machine_ticks()?;
    let local: Vec<(String, String)> = members
        .iter()
        .filter_map(|(name, address)| {
            let (host, port) = address.rsplit_once(':')?;
            matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1")
                .then(|| (name.clone(), port.to_string()))
        })
        .collect();
    let all = processes();
    let me = std::process::id();
    let mut servers = BTreeMap::new();
    let mut servers_ns = BTreeMap::new();
    let mut server_pids = Vec::new();
    let root = family_root(&all, me);
    let found = (all
        .iter()
        .filter_map(|p| Some((member_of(p, &local)?.to_string(), p))))
    .chain(by_listener(&all, &local, root));
    for (name, p) in found.collect::<Vec<_>>() {
        *servers.entry(name.clone()).or_insert(0) += p.ticks;
        if let Some(ns) = cpu_ns(p.pid) {
            *servers_ns.entry(name).or_insert(0) += ns;
        }
        server_pids.push(p.pid);
    }
    let mut ours = vec![root];
    let mut client = 0;
    let mut others = BTreeMap::new();
    // The microshard processes of this run (a coordinator and its client processes) and their
    // descendants, parents before children (pids grow), servers left out.
    for p in &all {
        if p.pid == root || (ours.contains(&p.parent) && !server_pids.contains(&p.pid)) {
            ours.push(p.pid);
            client += p.ticks;
        } else if !server_pids.contains(&p.pid) {
            others.insert(p.pid, (p.parent, p.ticks));
        }
    }
    let load_1m = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok());
    Some(HostSample {
        at: Instant::now(),
        busy,
        steal,
        client,
        others,
        servers,
        servers_ns,
        local_members: local.len(),
        members: members.iter().map(|(n, _)| n.clone()).collect(),
        elsewhere_ns: BTreeMap::new(),
        load_1m,
    })
}

impl HostSample {
    /// The sample with the cumulative CPU nanoseconds its members' backend read for them
    /// (containers); a member `/proc` found keeps that figure instead, so none is counted twice.
    pub fn with_elsewhere(mut self, cpu_ns: BTreeMap<String, u64>) -> Self {
        self.elsewhere_ns = cpu_ns;
        self
    }
}

/// CPU µs of each measured member read elsewhere both at `a` and at `b` and not found in
/// `/proc` (`local`): a member read only once has no delta, and stays missing; one the cell
/// does not measure (no address to probe) is no part of its sum.
fn elsewhere_us(
    a: &HostSample,
    b: &HostSample,
    local: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    (b.elsewhere_ns.iter())
        .filter(|(n, _)| !local.contains_key(*n) && b.members.contains(*n))
        .filter_map(|(n, after)| {
            let before = a.elsewhere_ns.get(n)?;
            Some((n.clone(), after.saturating_sub(*before) / 1_000))
        })
        .collect()
}

/// Ticks the other processes used between two samples, from each process's own account: the
/// kernel keeps a process's CPU time exactly, while `/proc/stat`'s machine-wide ticks are
/// sampled, and on a virtual machine were off by half a core over a two-second window either
/// way on a quiet host (`docs/result-schema.md`, `host_load.other_cores`). Each process's growth
/// (a new one's whole time), its parent's less the time before `a` of each child that ended
/// (reaped, its whole time moved to the parent's account of its children) — never more than
/// the parent grew, so a child whose time was not moved cannot hide other work.
fn other_ticks(a: &HostSample, b: &HostSample) -> u64 {
    let before = |pid: &u32| a.others.get(pid).map_or(0, |(_, t)| *t);
    let mut grown: BTreeMap<u32, u64> = (b.others.iter())
        .map(|(pid, (_, t))| (*pid, t.saturating_sub(before(pid))))
        .collect();
    for (pid, (parent, t)) in &a.others {
        if !b.others.contains_key(pid)
            && let Some(g) = grown.get_mut(parent)
        {
            *g = g.saturating_sub(*t);
        }
    }
    grown.values().sum()
}

/// What the machine did between two samples.
pub fn between(a: &HostSample, b: &HostSample) -> HostLoad {
    let hz = ticks_per_second();
    let wall = b.at.saturating_duration_since(a.at).as_secs_f64().max(1e-3);
    let cores_of = |ticks: u64| ticks as f64 / hz / wall;
    let servers: BTreeMap<String, u64> = b
        .servers
        .iter()
        .filter_map(|(n, t)| Some((n.clone(), t.saturating_sub(*a.servers.get(n)?))))
        .collect();
    let client = b.client.saturating_sub(a.client);
    let busy = b.busy.saturating_sub(a.busy);
    let elsewhere = elsewhere_us(a, b, &servers);
    let mut server_cpu_us: BTreeMap<String, u64> = (servers.iter())
        .map(|(n, t)| {
            let ns = (b.servers_ns.get(n).zip(a.servers_ns.get(n)))
                .map(|(b, a)| b.saturating_sub(*a) / 1_000);
            (n.clone(), ns.unwrap_or((*t as f64 / hz * 1e6) as u64))
        })
        .collect();
    server_cpu_us.extend(elsewhere);
    HostLoad {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        other_cores: (servers.len() >= a.local_members.max(b.local_members))
            .then(|| cores_of(other_ticks(a, b))),
        steal_cores: cores_of(b.steal.saturating_sub(a.steal)),
        client_cores: cores_of(client),
        busy_cores: cores_of(busy),
        server_cpu_missing: (b.members.iter())
            .filter(|m| !server_cpu_us.contains_key(*m))
            .cloned()
            .collect(),
        server_cpu_us,
        load_before: a.load_1m,
        load_after: b.load_1m,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_host_is_named_with_its_share_and_a_quiet_one_is_not() {
        let load = HostLoad {
            cores: 2,
            other_cores: Some(0.9),
            ..Default::default()
        };
        let why = load.busy(0.25).unwrap_or_default();
        assert!(
            why.starts_with("busy host: other processes used 0.9 of 2 cores"),
            "{why}"
        );
        assert_eq!(load.busy(0.5), None);
        let stolen = HostLoad {
            cores: 4,
            steal_cores: 1.5,
            ..Default::default()
        };
        assert!(stolen.busy(0.25).unwrap_or_default().contains("CPU steal"));
    }

    /// A server under a name `member_of` does not know (a wrapper, a renamed binary): a Python
    /// process listening on a loopback port.
    fn unnamed_server() -> (std::process::Child, u16) {
        use std::io::BufRead;
        let script = "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen()\nprint(s.getsockname()[1],flush=True)\ntime.sleep(60)";
        let mut child = std::process::Command::new("python3")
            .args(["-c", script])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        let out = child.stdout.take().expect("its stdout");
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .expect("its port");
        (child, line.trim().parse().expect("a port"))
    }

    #[test]
    fn a_server_under_another_name_is_found_by_its_port_and_the_rest_are_named() {
        let (mut child, port) = unnamed_server();
        let closed = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let members = [
            ("sh0".to_string(), format!("127.0.0.1:{port}")),
            ("sh1".to_string(), format!("127.0.0.1:{closed}")),
            ("far".to_string(), "10.0.0.9:27017".to_string()),
        ];
        let a = sample(&members).expect("/proc is readable");
        let b = sample(&members).expect("/proc is readable");
        let _ = child.kill();
        let _ = child.wait();
        let load = between(&a, &b);
        assert!(load.server_cpu_us.contains_key("sh0"), "{load:?}");
        assert_eq!(load.server_cpu_missing, ["sh1", "far"], "{load:?}");
    }

    #[test]
    fn a_member_read_elsewhere_at_both_ends_is_summed_and_one_read_once_stays_missing() {
        let members = [
            ("sh0".to_string(), "127.0.0.1:1".to_string()),
            ("sh1".to_string(), "127.0.0.1:2".to_string()),
            ("cfg0".to_string(), "127.0.0.1:3".to_string()),
        ];
        let ns = |pairs: &[(&str, u64)]| pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        let a = sample(&members)
            .expect("/proc is readable")
            .with_elsewhere(ns(&[("sh0", 5_000_000), ("sh1", 1_000), ("x", 0)]));
        let b = sample(&members)
            .expect("/proc is readable")
            .with_elsewhere(ns(&[("sh0", 7_500_000), ("cfg0", 9_000), ("x", 1)]));
        let load = between(&a, &b);
        assert_eq!(load.server_cpu_us.get("sh0"), Some(&2_500), "{load:?}");
        assert!(
            !load.server_cpu_us.contains_key("x"),
            "not measured: {load:?}"
        );
        assert_eq!(load.server_cpu_missing, ["sh1", "cfg0"], "{load:?}");
        // A counter that went backwards (a restarted container) is no negative CPU.
        let c = sample(&members)
            .expect("/proc is readable")
            .with_elsewhere(ns(&[("sh0", 1_000_000)]));
        assert_eq!(between(&b, &c).server_cpu_us.get("sh0"), Some(&0));
    }

    #[test]
    fn other_work_is_each_process_own_time_in_the_window() {
        let at = |others: &[(u32, u32, u64)]| HostSample {
            others: (others.iter())
                .map(|(p, parent, t)| (*p, (*parent, *t)))
                .collect(),
            ..sample(&[]).expect("/proc is readable")
        };
        // 7 grew by 30, 8 is new with 20, 9 ended: its 50 before `a` reappear in its parent
        // 7's reaped-children account, and are no work of this window.
        let a = at(&[(7, 1, 100), (9, 7, 50)]);
        let b = at(&[(7, 1, 100 + 50 + 30), (8, 1, 20)]);
        assert_eq!(other_ticks(&a, &b), 30 + 20);
        assert_eq!(other_ticks(&b, &b), 0);
        // A child whose time its parent never took (not reaped into its account) takes nothing
        // from the rest: 8 still counts its 20.
        let c = at(&[(7, 1, 100), (8, 1, 20)]);
        assert_eq!(other_ticks(&a, &c), 20);
    }

    #[test]
    fn a_busy_loop_of_another_process_tree_is_other_work() {
        let a = sample(&[]).expect("/proc is readable");
        // Started by a shell that exits at once, so the loop is no descendant of this process.
        let started = std::process::Command::new("sh")
            .args([
                "-c",
                "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!",
            ])
            .output()
            .expect("start a busy loop");
        let pid = String::from_utf8_lossy(&started.stdout).trim().to_string();
        std::thread::sleep(std::time::Duration::from_millis(800));
        let b = sample(&[]).expect("/proc is readable");
        let _ = std::process::Command::new("kill").arg(&pid).status();
        let load = between(&a, &b);
        assert!(load.other_cores.unwrap_or(0.0) > 0.3, "{load:?}");
    }

    #[test]
    fn a_sample_finds_the_machine_and_this_process() {
        let a = sample(&[]).expect("/proc is readable");
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 300 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let b = sample(&[]).expect("/proc is readable");
        let load = between(&a, &b);
        assert!(load.client_cores > 0.3, "{load:?} {x}");
        assert!(load.cores >= 1);
        assert!(load.load_after.is_some());
    }
}
