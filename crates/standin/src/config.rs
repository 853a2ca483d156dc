//! The stand-in's command line: the flags real mongod/mongos take, plus a few stand-in-only ones.

use std::path::PathBuf;
use std::str::FromStr;

use super::Role;

use super::StandinError;
use crate::security_flags::{AuthUser, SecurityGiven, redact_argv};
use crate::tls::TlsFiles;

/// The longest stand-in service time per operation (10 s): the capacity model's bound.
pub const MAX_SERVICE_TIME_US: u64 = 10_000_000;

/// Everything a stand-in needs to start, parsed from mongod/mongos-style flags.
#[derive(Debug, Clone)]
pub struct StandinConfig {
    /// mongod or mongos.
    pub role: Role,
    /// TCP port; 0 picks a free one (stand-in extension, handy for in-process tests).
    pub port: u16,
    /// Addresses to listen on (`--bind_ip`, comma-separated); loopback by default.
    pub bind_ips: Vec<String>,
    /// `--bind_ip_all`: listen on every interface.
    pub bind_ip_all: bool,
    /// `--dbpath`: must exist; holds `mongod.lock` (data itself stays in memory).
    pub dbpath: Option<PathBuf>,
    /// `--logpath`: JSON log lines like mongod 4.4+.
    pub logpath: Option<PathBuf>,
    /// `--logappend`.
    pub logappend: bool,
    /// `--replSet`: the replica-set name this node may be initiated with.
    pub repl_set: Option<String>,
    /// `--configsvr`.
    pub configsvr: bool,
    /// `--shardsvr`.
    pub shardsvr: bool,
    /// `--configdb rs/host:port,...` (mongos).
    pub configdb: Option<String>,
    /// `--wiredTigerCacheSizeGB` (recorded and reported in serverStatus; nothing is cached).
    pub wired_tiger_cache_gb: Option<f64>,
    /// `--unixSocketPrefix`: also listen on `<dir>/mongodb-<port>.sock` (no socket without it).
    pub unix_socket_prefix: Option<PathBuf>,
    /// `--setParameter name=value` pairs (recorded).
    pub set_parameters: Vec<(String, String)>,
    /// `--quiet`: fewer log lines.
    pub quiet: bool,
    /// Stand-in only: `--service-time-us T`, each CRUD operation occupies a slot for T µs (0 = off).
    pub service_time_us: u64,
    /// Stand-in only: `--workers W`, the number of slots of the capacity model.
    pub workers: usize,
    /// Stand-in only: `--command-log FILE`, one canonical-extended-JSON line per command received.
    pub command_log: Option<PathBuf>,
    /// Stand-in only: `--primary-delay-ms MS`, how long an initiated single-member set takes to elect itself.
    pub primary_delay_ms: u64,
    /// Stand-in only: `--election-winner N`, which member (index in the configuration's `members`)
    /// wins the first election of a set of several members. `None`: a random member other than
    /// member 0, so that a tool that assumes member 0 becomes primary fails every time, as it
    /// would against MongoDB some of the time (docs/mongodb-versions.md, "Replica sets").
    pub election_winner: Option<usize>,
    /// Stand-in only: `--election-delay-ms MS`, how long the first election of a set of several
    /// members takes. `None`: between 1 and 2 s, drawn per election (MongoDB's randomized
    /// election timeout makes it take about that long).
    pub election_delay_ms: Option<u64>,
    /// Stand-in only: `--stall D/P` (milliseconds), no data operation completes for D ms every P ms
    /// while `ping`, `hello` and `serverStatus` are answered at once: a server stalling under
    /// load (a checkpoint, cache eviction) as it looks from outside (`docs/reliability.md`).
    pub stall: Option<Stall>,
    /// Stand-in only: `--write-concern-error`, every write is applied and then answered with a
    /// `writeConcernError` (64, WriteConcernFailed, `errInfo.wtimeout`), as a replica set that
    /// missed `w` within `wtimeout` answers, so tests see that a client counts it as a failure
    /// (`docs/mongodb-versions.md`, "Conformance").
    pub write_concern_error: bool,
    /// Stand-in only: `--step-down [SET:]T/D` (milliseconds): T ms after the set's primary
    /// answers its first query on a user database (so it falls in a run, however long bring-up
    /// and load took), the primary steps down and the set has no primary for D ms; then another
    /// member is primary. A failover as it looks from outside (`docs/reliability.md`).
    pub step_down: Option<StepDown>,
    /// Stand-in only: `--zero-counters`, `serverStatus` reports every `opcounters` field as 0
    /// whatever was served, as a wire-compatible server that is not MongoDB answered a user
    /// (issue #31), so tests see that microshard says its figures are not used.
    pub zero_counters: bool,
    /// Stand-in only: `--resident-mib MIB`, `serverStatus.mem.resident` reports MIB instead of
    /// this process's resident memory, so tests can show a figure no machine has (the 56 TB a
    /// wire-compatible server that is not MongoDB reported, issue #31).
    pub resident_mib: Option<u32>,
    /// TLS required on every connection (`--tls-cert`/`--tls-key`, or `--tlsMode requireTLS
    /// --tlsCertificateKeyFile`); `None`: plaintext.
    pub tls: Option<TlsFiles>,
    /// Stand-in only: `--auth-user NAME:PASSWORD` (repeatable), the users of `admin`; any user
    /// makes authentication (SCRAM-SHA-256) required, and the first is the one the stand-in
    /// authenticates as to its peers.
    pub auth_users: Vec<AuthUser>,
    /// Stand-in only: `--balancer-on-after-ms MS` (mongos): MS ms after the first data command on
    /// a user database, the balancer is switched back on, as a Kubernetes operator re-enables a
    /// balancer someone stopped (Percona's, unless `spec.sharding.balancer.enabled: false`), so
    /// tests see that a cell during which it came back is degraded.
    pub balancer_on_after_ms: Option<u64>,
    /// `--maxConns N`: the connections `serverStatus.connections` counts as the most it takes
    /// (`available` = N − current), as mongod reports it; 838,860 without it, mongod's figure
    /// on a machine with a high open-file limit. Connections beyond it are not refused.
    pub max_conns: u32,
    /// Stand-in only: `--no-hello`, `hello` is answered CommandNotFound (59) and `isMaster` no
    /// longer offers it (`helloOk`), as MongoDB 4.4.0 and 4.4.1 answer, so tests see that
    /// microshard falls back to `isMaster` (`docs/mongodb-versions.md`, 4.4).
    pub no_hello: bool,
    /// The flags as given (`getCmdLineOpts.argv`), passwords replaced by `<password>`.
    pub argv: Vec<String>,
    /// Log to stdout when there is no `--logpath` (the CLI sets this; in-process servers stay quiet).
    pub log_to_stdout: bool,
}

/// Flags that take a value, by role (`true` = mongod, mongos).
const VALUE_FLAGS: &[(&str, bool, bool)] = &[
    ("port", true, true),
    ("bind_ip", true, true),
    ("dbpath", true, false),
    ("logpath", true, true),
    ("replSet", true, false),
    ("configdb", false, true),
    ("wiredTigerCacheSizeGB", true, false),
    ("unixSocketPrefix", true, true),
    ("setParameter", true, true),
    ("storageEngine", true, false),
    ("oplogSize", true, false),
    ("maxConns", true, true),
    ("keyFile", true, true),
    ("pidfilepath", true, true),
    ("timeZoneInfo", true, true),
    ("clusterAuthMode", true, true),
    ("wiredTigerJournalCompressor", true, false),
    ("wiredTigerCollectionBlockCompressor", true, false),
    ("wiredTigerIndexPrefixCompression", true, false),
    ("slowms", true, true),
    ("slowOpSampleRate", true, true),
    ("profile", true, false),
    ("tlsMode", true, true),
    ("networkMessageCompressors", true, true),
    ("filePermissions", true, true),
    ("syncdelay", true, false),
    ("enableMajorityReadConcern", true, false),
    ("localThreshold", false, true),
    ("service-time-us", true, true),
    ("workers", true, true),
    ("command-log", true, true),
    ("primary-delay-ms", true, true),
    ("election-winner", true, false),
    ("election-delay-ms", true, false),
    ("stall", true, true),
    ("step-down", true, false),
    ("resident-mib", true, true),
    ("balancer-on-after-ms", false, true),
    ("tls-cert", true, true),
    ("tls-key", true, true),
    ("tlsCertificateKeyFile", true, true),
    ("tlsCAFile", true, true),
    ("auth-user", true, true),
];

/// Flags without a value, by role.
const SWITCHES: &[(&str, bool, bool)] = &[
    ("bind_ip_all", true, true),
    ("logappend", true, true),
    ("configsvr", true, false),
    ("shardsvr", true, false),
    ("fork", true, true),
    ("quiet", true, true),
    ("nounixsocket", true, true),
    ("ipv6", true, true),
    ("noauth", true, false),
    ("auth", true, false),
    ("directoryperdb", true, false),
    ("noscripting", true, true),
    ("notablescan", true, false),
    ("wiredTigerDirectoryForIndexes", true, false),
    ("verbose", true, true),
    ("write-concern-error", true, false),
    ("zero-counters", true, true),
    ("no-hello", true, true),
];

/// Parses the value of `--{name}`, refusing one that does not parse or that `ok` rejects
/// with `--{name}: '{value}' {what}`.
fn number<T: FromStr>(
    name: &str,
    value: &str,
    ok: impl Fn(&T) -> bool,
    what: &str,
) -> Result<T, StandinError> {
    value
        .parse()
        .ok()
        .filter(|v| ok(v))
        .ok_or_else(|| bad(format!("--{name}: '{value}' {what}")))
}

fn bad(msg: impl Into<String>) -> StandinError {
    StandinError::BadFlag(msg.into())
}

/// What the flags said that is settled only once all are read.
#[derive(Default)]
struct Given {
    port: Option<u16>,
    bind_ip: Option<String>,
    workers: bool,
    security: SecurityGiven,
}

/// The program name the role answers to.
fn program(role: Role) -> &'static str {
    match role {
        Role::Mongod => "mongod",
        Role::Mongos => "mongos",
    }
}

/// `--name[=value]` as name and inline value; `None` for `-v`, `-vv`, ... (verbosity).
fn split_flag<'a>(
    prog: &str,
    arg: &'a str,
) -> Result<Option<(&'a str, Option<String>)>, StandinError> {
    if arg.starts_with('-')
        && !arg.starts_with("--")
        && arg.chars().skip(1).all(|c| c == 'v')
        && arg.len() > 1
    {
        return Ok(None);
    }
    let Some(flag) = arg.strip_prefix("--") else {
        return Err(bad(format!(
            "{prog}: unexpected argument '{arg}': positional options are not supported (try '{prog} --help')"
        )));
    };
    Ok(Some(match flag.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (flag, None),
    }))
}

/// Whether `role` takes flag `name` from `table` (`None`: the table does not list it).
fn allowed(table: &[(&str, bool, bool)], name: &str, role: Role) -> Option<bool> {
    table
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, d, s)| match role {
            Role::Mongod => *d,
            Role::Mongos => *s,
        })
}

/// A flag the other binary takes, refused the way this one refuses it.
fn not_for_role(prog: &str, name: &str) -> StandinError {
    bad(format!(
        "Error parsing command line: unrecognised option '--{name}' ({prog} does not take it)"
    ))
}

/// `--wiredTigerCacheSizeGB`: a number between 0.25 and 10000, as mongod bounds it.
fn cache_size_gb(value: &str) -> Result<f64, StandinError> {
    let gb: f64 = number("wiredTigerCacheSizeGB", value, |_| true, "is not a number")?;
    if !(0.25..=10000.0).contains(&gb) {
        return Err(bad(format!(
            "--wiredTigerCacheSizeGB: Bad value {value}: must be between 0.25 and 10000"
        )));
    }
    Ok(gb)
}

impl StandinConfig {
    /// A configuration with every flag at its default for `role` (port 0 = any free port).
    pub fn new(role: Role) -> StandinConfig {
        StandinConfig {
            role,
            port: 0,
            bind_ips: vec!["127.0.0.1".to_string()],
            bind_ip_all: false,
            dbpath: None,
            logpath: None,
            logappend: false,
            repl_set: None,
            configsvr: false,
            shardsvr: false,
            configdb: None,
            wired_tiger_cache_gb: None,
            unix_socket_prefix: None,
            set_parameters: Vec::new(),
            quiet: false,
            service_time_us: 0,
            workers: 1,
            command_log: None,
            primary_delay_ms: 200,
            election_winner: None,
            election_delay_ms: None,
            stall: None,
            write_concern_error: false,
            step_down: None,
            zero_counters: false,
            resident_mib: None,
            tls: None,
            auth_users: Vec::new(),
            no_hello: false,
            max_conns: 838_860,
            balancer_on_after_ms: None,
            argv: Vec::new(),
            log_to_stdout: false,
        }
    }

    /// Parses mongod/mongos flags (`--port 27017` or `--port=27017`), refusing what the real binary refuses.
    pub fn from_args(role: Role, args: &[String]) -> Result<StandinConfig, StandinError> {
        let prog = program(role);
        let mut cfg = StandinConfig::new(role);
        let argv: Vec<String> = std::iter::once(prog.to_string())
            .chain(args.iter().cloned())
            .collect();
        cfg.argv = redact_argv(&argv);
        let mut given = Given::default();
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            i += 1;
            let Some((name, inline)) = split_flag(prog, arg)? else {
                continue; // -v, -vv, ...: verbosity, accepted
            };
            if let Some(ok) = allowed(SWITCHES, name, role) {
                if !ok {
                    return Err(not_for_role(prog, name));
                }
                if inline.is_some() && name != "verbose" {
                    return Err(bad(format!(
                        "Error parsing command line: option '--{name}' does not take any arguments"
                    )));
                }
                cfg.set_switch(prog, name)?;
                continue;
            }
            let Some(ok) = allowed(VALUE_FLAGS, name, role) else {
                return Err(bad(format!(
                    "Error parsing command line: unrecognised option '--{name}' (try '{prog} --help' for more information)"
                )));
            };
            if !ok {
                return Err(not_for_role(prog, name));
            }
            let value = match inline {
                Some(v) => v,
                None => {
                    let Some(v) = args.get(i) else {
                        return Err(bad(format!(
                            "Error parsing command line: the required argument for option '--{name}' is missing"
                        )));
                    };
                    i += 1;
                    v.clone()
                }
            };
            cfg.set_value(name, value, &mut given)?;
        }
        cfg.check_combination(&given)?;
        cfg.finish(given)?;
        Ok(cfg)
    }

    /// Records a flag without a value.
    fn set_switch(&mut self, prog: &str, name: &str) -> Result<(), StandinError> {
        match name {
            "bind_ip_all" => self.bind_ip_all = true,
            "logappend" => self.logappend = true,
            "configsvr" => self.configsvr = true,
            "shardsvr" => self.shardsvr = true,
            "quiet" => self.quiet = true,
            "write-concern-error" => self.write_concern_error = true,
            "zero-counters" => self.zero_counters = true,
            "no-hello" => self.no_hello = true,
            "fork" => {
                return Err(bad(format!(
                    "--fork: the microshard stand-in never forks; run {prog} in the foreground (microshard keeps the process handle itself)"
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// Records a flag with its value; flags the stand-in does not act on are only kept in `argv`.
    fn set_value(
        &mut self,
        name: &str,
        value: String,
        given: &mut Given,
    ) -> Result<(), StandinError> {
        if given.security.take(name, &value)? {
            return Ok(());
        }
        match name {
            "port" => {
                let what = "is not a valid port number (0-65535)";
                given.port = Some(number(name, &value, |_| true, what)?);
            }
            "bind_ip" => given.bind_ip = Some(value),
            "dbpath" => self.dbpath = Some(PathBuf::from(value)),
            "logpath" => self.logpath = Some(PathBuf::from(value)),
            "replSet" => {
                let set = value.split('/').next().unwrap_or_default().to_string();
                if set.is_empty() {
                    return Err(bad("--replSet: the replica set name must not be empty"));
                }
                self.repl_set = Some(set);
            }
            "configdb" => self.configdb = Some(value),
            "wiredTigerCacheSizeGB" => self.wired_tiger_cache_gb = Some(cache_size_gb(&value)?),
            "unixSocketPrefix" => self.unix_socket_prefix = Some(PathBuf::from(value)),
            "setParameter" => {
                let Some((k, v)) = value.split_once('=') else {
                    return Err(bad(format!(
                        "--setParameter: '{value}' must be of the form name=value"
                    )));
                };
                self.set_parameters.push((k.to_string(), v.to_string()));
            }
            "command-log" => self.command_log = Some(PathBuf::from(value)),
            "stall" => self.stall = Some(Stall::parse(&value)?),
            "step-down" => self.step_down = Some(StepDown::parse(&value)?),
            _ => self.set_standin_value(name, &value, given)?,
        }
        Ok(())
    }

    /// Records one of the stand-in's own numeric flags (the capacity model, elections).
    fn set_standin_value(
        &mut self,
        name: &str,
        value: &str,
        given: &mut Given,
    ) -> Result<(), StandinError> {
        let ms = "is not a whole number of milliseconds";
        match name {
            "service-time-us" => {
                // At most 10 s per operation: beyond that no run ends and no Ctrl-C is
                // answered in reasonable time, which is a typo, not a capacity model.
                let what =
                    format!("is not a whole number of microseconds up to {MAX_SERVICE_TIME_US}");
                self.service_time_us = number(name, value, |t| *t <= MAX_SERVICE_TIME_US, &what)?;
            }
            "workers" => {
                let what = "must be a positive whole number";
                self.workers = number(name, value, |w| *w > 0, what)?;
                given.workers = true;
            }
            "primary-delay-ms" => self.primary_delay_ms = number(name, value, |_| true, ms)?,
            "election-winner" => {
                let what = "is not a member index (0, 1, ...)";
                self.election_winner = Some(number(name, value, |_| true, what)?);
            }
            "resident-mib" => {
                let what = "is not a whole number of MiB";
                self.resident_mib = Some(number(name, value, |_| true, what)?);
            }
            "maxConns" => {
                let what = "is not a positive whole number";
                self.max_conns = number(name, value, |n| *n > 0, what)?;
            }
            "balancer-on-after-ms" => {
                self.balancer_on_after_ms = Some(number(name, value, |_| true, ms)?);
            }
            "election-delay-ms" => {
                self.election_delay_ms = Some(number(name, value, |_| true, ms)?)
            }
            _ => {} // accepted and recorded in argv
        }
        Ok(())
    }

    /// Refuses flags that only make sense together, or not at all together, as the real binaries do.
    fn check_combination(&self, given: &Given) -> Result<(), StandinError> {
        if given.workers && self.service_time_us == 0 {
            return Err(bad(
                "--workers needs --service-time-us (the capacity model is off without a service time)",
            ));
        }
        if self.configsvr && self.shardsvr {
            return Err(bad("--configsvr and --shardsvr cannot both be given"));
        }
        if self.shardsvr && self.repl_set.is_none() {
            return Err(bad(
                "Cannot start a shardsvr as a standalone server. Please use the option --replSet to start the node as a replica set.",
            ));
        }
        if self.configsvr && self.repl_set.is_none() {
            return Err(bad(
                "Cannot start a configsvr as a standalone server. Please use the option --replSet to start the node as a replica set.",
            ));
        }
        if self.role == Role::Mongos {
            match &self.configdb {
                None => {
                    return Err(bad(
                        "mongos: --configdb rs/host:port[,host:port] is required",
                    ));
                }
                Some(c) => {
                    parse_configdb(c)?;
                }
            }
        }
        Ok(())
    }

    /// The port (by cluster role when not given) and the addresses to listen on.
    fn finish(&mut self, given: Given) -> Result<(), StandinError> {
        self.tls = given.security.settle()?;
        self.auth_users = given.security.users;
        self.port = given.port.unwrap_or(if self.shardsvr {
            27018
        } else if self.configsvr {
            27019
        } else {
            27017
        });
        if let Some(b) = given.bind_ip {
            self.bind_ips = b
                .split(',')
                .map(|s| s.trim())
                .filter(|s| !s.is_empty())
                .map(|s| {
                    if s == "localhost" {
                        "127.0.0.1".to_string()
                    } else {
                        s.to_string()
                    }
                })
                .collect();
            if self.bind_ips.is_empty() {
                return Err(bad("--bind_ip: no address given"));
            }
        }
        Ok(())
    }

    /// The capacity model's ceiling in operations per second, when it is on.
    pub fn ceiling_ops_per_sec(&self) -> Option<f64> {
        (self.service_time_us > 0).then(|| self.workers as f64 * 1e6 / self.service_time_us as f64)
    }
}

/// A periodic stall of data operations: for `for_ms` at the start of every `every_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// How long each stall lasts, ms.
    pub for_ms: u64,
    /// One stall starts every this many ms (counted from the server's start).
    pub every_ms: u64,
}

impl Stall {
    /// `D/P` in milliseconds, `0 < D < P`.
    fn parse(value: &str) -> Result<Stall, StandinError> {
        let parsed = value
            .split_once('/')
            .and_then(|(d, p)| Some((d.parse().ok()?, p.parse().ok()?)))
            .filter(|&(d, p): &(u64, u64)| d > 0 && d < p);
        let (for_ms, every_ms) = parsed.ok_or_else(|| {
            bad(format!(
                "--stall: '{value}' must be D/P in milliseconds with 0 < D < P (a stall of D ms every P ms)"
            ))
        })?;
        Ok(Stall { for_ms, every_ms })
    }

    /// How long an operation arriving `since_start` after the server started must wait for
    /// the current stall to end (zero outside a stall).
    pub(crate) fn wait_at(&self, since_start: std::time::Duration) -> std::time::Duration {
        let into = since_start.as_millis() as u64 % self.every_ms;
        std::time::Duration::from_millis(self.for_ms.saturating_sub(into))
    }
}

/// A failover of a replica set (`--step-down [SET:]T/D`): its primary steps down `after_ms`
/// after it answered its first query on a user database, and the set has no primary for
/// `for_ms`; then the next member in the configuration is primary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepDown {
    /// The set it applies to (`None`: the set of whichever node is given the flag), so one
    /// `mongod_args` for every member of a topology can pick one shard.
    pub set: Option<String>,
    /// From the primary's first query to the step-down, ms.
    pub after_ms: u64,
    /// How long the set has no primary, ms.
    pub for_ms: u64,
}

impl StepDown {
    /// `[SET:]T/D` in milliseconds, `D > 0`.
    fn parse(value: &str) -> Result<StepDown, StandinError> {
        let (set, times) = match value.split_once(':') {
            Some((s, t)) => (Some(s.to_string()).filter(|s| !s.is_empty()), t),
            None => (None, value),
        };
        let parsed = times
            .split_once('/')
            .and_then(|(t, d)| Some((t.parse().ok()?, d.parse().ok()?)))
            .filter(|&(_, d): &(u64, u64)| d > 0);
        let (after_ms, for_ms) = parsed.ok_or_else(|| {
            bad(format!(
                "--step-down: '{value}' must be [SET:]T/D in milliseconds with D > 0 (the primary steps down T ms after its first query, for D ms)"
            ))
        })?;
        Ok(StepDown {
            set,
            after_ms,
            for_ms,
        })
    }

    /// Whether it applies to replica set `set`.
    pub(crate) fn applies_to(&self, set: &str) -> bool {
        self.set.as_deref().is_none_or(|s| s == set)
    }
}

/// Splits `rs/host:port,host:port` into the set name and hosts; real mongos requires the set name.
pub(crate) fn parse_configdb(s: &str) -> Result<(String, Vec<String>), StandinError> {
    let Some((set, hosts)) = s.split_once('/') else {
        return Err(bad(format!(
            "--configdb '{s}': config servers must be a replica set: use <setName>/<host:port>[,<host:port>]"
        )));
    };
    let hosts: Vec<String> = hosts
        .split(',')
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .collect();
    if set.is_empty() || hosts.is_empty() {
        return Err(bad(format!(
            "--configdb '{s}': expected <setName>/<host:port>[,<host:port>]"
        )));
    }
    Ok((set.to_string(), hosts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn default_ports_follow_cluster_role() {
        let c = StandinConfig::from_args(Role::Mongod, &[]).unwrap();
        assert_eq!(c.port, 27017);
        let c = StandinConfig::from_args(Role::Mongod, &args("--shardsvr --replSet sh0")).unwrap();
        assert_eq!(c.port, 27018);
        let c = StandinConfig::from_args(Role::Mongod, &args("--configsvr --replSet cfg")).unwrap();
        assert_eq!(c.port, 27019);
        let c =
            StandinConfig::from_args(Role::Mongos, &args("--configdb cfg/localhost:1")).unwrap();
        assert_eq!(c.port, 27017);
    }

    #[test]
    fn refusals_like_the_real_binaries() {
        for (role, line) in [
            (Role::Mongod, "--shardsvr"),
            (Role::Mongod, "--fork"),
            (Role::Mongod, "--bogus 1"),
            (Role::Mongod, "--configdb cfg/h:1"),
            (Role::Mongos, "--configdb cfg/h:1 --wiredTigerCacheSizeGB 1"),
            (Role::Mongos, "--port 1"),
            (Role::Mongos, "--configdb h:1"),
            (Role::Mongod, "--port"),
            (Role::Mongod, "--wiredTigerCacheSizeGB 0.1"),
        ] {
            assert!(
                StandinConfig::from_args(role, &args(line)).is_err(),
                "{line} accepted"
            );
        }
    }

    #[test]
    fn records_values_and_standin_flags() {
        let c = StandinConfig::from_args(
            Role::Mongod,
            &args("--port=4000 --bind_ip localhost,127.0.0.2 --setParameter a=b --quiet --service-time-us 250 --workers 4 -vv"),
        )
        .unwrap();
        assert_eq!(c.port, 4000);
        assert_eq!(c.bind_ips, vec!["127.0.0.1", "127.0.0.2"]);
        assert_eq!(c.set_parameters, vec![("a".to_string(), "b".to_string())]);
        assert_eq!(c.ceiling_ops_per_sec(), Some(16000.0));
        assert_eq!(c.argv[0], "mongod");
    }

    #[test]
    fn step_down_names_its_set_or_takes_any() {
        let c = StandinConfig::from_args(
            Role::Mongod,
            &args("--shardsvr --replSet sh0 --step-down sh0:8000/10000"),
        )
        .unwrap();
        let s = c.step_down.unwrap();
        assert_eq!((s.after_ms, s.for_ms), (8000, 10000));
        assert!(s.applies_to("sh0") && !s.applies_to("cfg"));
        let c = StandinConfig::from_args(Role::Mongod, &args("--step-down 0/500")).unwrap();
        assert!(c.step_down.unwrap().applies_to("rs0"));
        for bad in ["sh0:1/0", "1000", "a/b", "sh0:"] {
            let line = format!("--step-down {bad}");
            assert!(
                StandinConfig::from_args(Role::Mongod, &args(&line)).is_err(),
                "{bad} accepted"
            );
        }
        assert!(
            StandinConfig::from_args(Role::Mongos, &args("--configdb cfg/h:1 --step-down 1/1"))
                .is_err()
        );
    }
}
