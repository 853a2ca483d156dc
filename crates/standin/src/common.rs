//! The commands every role answers the same way (`hello`, `ping`, `buildInfo`, `serverStatus`,
//! `hostInfo`, `getCmdLineOpts`, sessions, authentication, parameters, `shutdown`), before a
//! command reaches `mongod` or `router`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mongodb::bson::{Bson, DateTime, Document, doc};

use crate::cmderr::{CmdError, CmdResult, code};
use crate::fields::require_admin;
use crate::repl;
use crate::state::ServerState;
use crate::value::truthy;
use crate::{MAX_WIRE_VERSION, Role, STANDIN_VERSION};

/// What a common command asks of the connection.
pub(crate) enum CommonOutcome {
    /// Send this reply.
    Reply(Document),
    /// Stop the server (`shutdown`).
    Shutdown,
}

/// `getDefaultRWConcern` as MongoDB answers it (`rwc_defaults_commands.cpp`,
/// `assertNotStandaloneOrShardServer`): refused on a standalone (51300) and on a shard member
/// (51301); mongos, config servers and plain replica sets report the 5.0+ implicit default.
fn default_rw_concern(shared: &ServerState) -> CmdResult<Document> {
    if shared.cfg.role == Role::Mongod {
        if shared.cfg.repl_set.is_none() {
            return Err(CmdError::new(
                code::NOT_ON_STANDALONE,
                "'getDefaultRWConcern' is not supported on standalone nodes.",
            ));
        }
        if shared.cfg.shardsvr {
            return Err(CmdError::new(
                code::NOT_ON_SHARD_MEMBER,
                "'getDefaultRWConcern' is not supported on shard nodes.",
            ));
        }
    }
    Ok(
        doc! {"defaultReadConcern": {"level": "local"}, "defaultWriteConcern": {"w": "majority", "wtimeout": 0}, "defaultWriteConcernSource": "implicit", "defaultReadConcernSource": "implicit", "localUpdateWallClockTime": DateTime::now()},
    )
}

/// Answers `name` when every role answers it the same way; `None` hands it to the role.
pub(crate) async fn common_command(
    shared: &Arc<ServerState>,
    name: &str,
    db: &str,
    body: &Document,
    conn_id: i64,
) -> Option<CmdResult<CommonOutcome>> {
    let r = |d: Document| Some(Ok(CommonOutcome::Reply(d)));
    match name {
        "hello" if shared.cfg.no_hello => Some(Err(CmdError::new(
            code::COMMAND_NOT_FOUND,
            "no such command: 'hello'",
        ))),
        "hello" | "isMaster" | "ismaster" => r(hello(shared, name, body, conn_id)),
        "ping" => r(doc! {"ok": 1.0}),
        "_isSelf" => r(doc! {"id": shared.instance_id}),
        "buildInfo" | "buildinfo" => r(build_info()),
        "serverStatus" => r(server_status(shared)),
        "hostInfo" => r(host_info(shared)),
        "getCmdLineOpts" => r(cmd_line_opts(shared)),
        "endSessions" | "killSessions" | "killAllSessions" | "refreshSessions" | "startSession" => {
            if name == "startSession" {
                return r(
                    doc! {"id": {"id": mongodb::bson::Binary{subtype: mongodb::bson::spec::BinarySubtype::Uuid, bytes: rand::random::<[u8;16]>().to_vec()}}, "timeoutMinutes": 30},
                );
            }
            r(doc! {"ok": 1.0})
        }
        "whatsmyuri" => r(doc! {"you": "127.0.0.1"}),
        "saslStart" => Some(sasl_start(body).map(CommonOutcome::Reply)),
        "connectionStatus" => {
            let mut info = doc! {"authenticatedUsers": [], "authenticatedUserRoles": []};
            if body.get("showPrivileges").is_some_and(truthy) {
                info.insert("authenticatedUserPrivileges", Vec::<Bson>::new());
            }
            r(doc! {"authInfo": info})
        }
        "getParameter" => r(get_parameter(shared, body)),
        "setParameter" => r(doc! {"was": Bson::Null}),
        "getDefaultRWConcern" => Some(default_rw_concern(shared).map(CommonOutcome::Reply)),
        "listCommands" => r(doc! {"commands": {}}),
        "getLog" => r(doc! {"totalLinesWritten": 0, "log": []}),
        "logRotate" => r(doc! {}),
        "shutdown" => {
            if let Err(e) = require_admin(name, db) {
                return Some(Err(e));
            }
            let force = body.get("force").is_some_and(truthy);
            shared.log(
                "COMMAND",
                4695400,
                "Terminating via shutdown command",
                doc! {"force": force, "timeoutSecs": 15},
            );
            Some(Ok(CommonOutcome::Shutdown))
        }
        _ => None,
    }
}

/// `saslStart`: the stand-in has no users, so it accepts the PLAIN mechanism (which needs no
/// server-side secret) from anyone, which lets tests drive credentialed URIs through the real
/// driver; SCRAM fails the way a real server without that user does (AuthenticationFailed, 18).
fn sasl_start(body: &Document) -> CmdResult<Document> {
    match body.get_str("mechanism") {
        Ok("PLAIN") => Ok(
            doc! {"conversationId": 1, "done": true, "payload": mongodb::bson::Binary {
                subtype: mongodb::bson::spec::BinarySubtype::Generic,
                bytes: Vec::new(),
            }},
        ),
        _ => Err(CmdError::new(
            code::AUTHENTICATION_FAILED,
            "Authentication failed.",
        )),
    }
}

fn get_parameter(shared: &ServerState, body: &Document) -> Document {
    let mut out = Document::new();
    if body.contains_key("featureCompatibilityVersion") || body.get_str("getParameter") == Ok("*") {
        out.insert("featureCompatibilityVersion", doc! {"version": "7.0"});
    }
    for (k, v) in &shared.cfg.set_parameters {
        if body.contains_key(k) || body.get_str("getParameter") == Ok("*") {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// `buildInfo`: a 7.0-shaped answer whose version says stand-in.
fn build_info() -> Document {
    doc! {
        "version": STANDIN_VERSION,
        "gitVersion": "microshard-standin",
        "versionArray": [7, 0, 0, -100],
        "bits": 64,
        "debug": false,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "javascriptEngine": "none",
        "storageEngines": ["standin-memory"],
        "modules": [],
        "openssl": {"running": "disabled"},
        "buildEnvironment": {"distmod": "microshard-standin", "target_os": std::env::consts::OS, "target_arch": std::env::consts::ARCH},
        "microshardStandin": true,
        "ok": 1.0,
    }
}

fn hello(shared: &ServerState, name: &str, body: &Document, conn_id: i64) -> Document {
    let mut d = Document::new();
    let legacy = name != "hello";
    let mut writable = true;
    let mut extra = Document::new();
    match shared.cfg.role {
        Role::Mongos => {
            extra.insert("msg", "isdbgrid");
        }
        Role::Mongod => {
            if shared.cfg.repl_set.is_some() {
                let (w, e) = repl::hello_fields(shared);
                writable = w;
                extra = e;
            }
        }
    }
    if body.get("helloOk").is_some_and(truthy) && !shared.cfg.no_hello {
        d.insert("helloOk", true);
    }
    if legacy {
        d.insert("ismaster", writable);
    } else {
        d.insert("isWritablePrimary", writable);
    }
    d.extend(extra);
    // The mechanisms of the user the driver names ("admin.alice"), so it picks SCRAM-SHA-256.
    if let Ok(user) = body.get_str("saslSupportedMechs")
        && let Some(("admin", name)) = user.split_once('.')
        && shared.users.knows(name)
    {
        d.insert("saslSupportedMechs", vec![crate::auth::MECHANISM]);
    }
    d.insert("maxBsonObjectSize", 16 * 1024 * 1024);
    d.insert("maxMessageSizeBytes", 48_000_000);
    d.insert("maxWriteBatchSize", 100_000);
    d.insert("localTime", DateTime::now());
    d.insert("logicalSessionTimeoutMinutes", 30);
    d.insert("connectionId", conn_id);
    d.insert("minWireVersion", 0);
    d.insert("maxWireVersion", MAX_WIRE_VERSION);
    d.insert("readOnly", false);
    d.insert("microshardStandin", true);
    d.insert("ok", 1.0);
    d
}

/// This process's resident and virtual size in MiB, the unit of mongod's `mem.resident` and
/// `mem.virtual` (manual, serverStatus `mem`), read in kB from `/proc/self/status` so the
/// page size does not matter.
fn process_mem_mib() -> (i64, i64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mib = |key: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<i64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    (mib("VmRSS:"), mib("VmSize:"))
}

fn mem_total_mb() -> i64 {
    let s = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<i64>().ok())
        .map(|kb| kb / 1024)
        .unwrap_or(0)
}

fn mem_limit_mb() -> i64 {
    let total = mem_total_mb();
    let cg = std::fs::read_to_string("/sys/fs/cgroup/memory.max").unwrap_or_default();
    match cg.trim().parse::<i64>() {
        Ok(b) => (b / (1024 * 1024)).min(total),
        Err(_) => total,
    }
}

/// `serverStatus.wiredTiger` on a mongod: no WiredTiger here, so the cache figures are derived
/// from the in-memory data size and the configured (or default) cache size.
fn wired_tiger_section(shared: &ServerState) -> Document {
    let data: i64 = shared
        .store
        .lock()
        .map(|s| {
            s.dbs
                .values()
                .flat_map(|c| c.values())
                .map(|c| c.data_bytes as i64)
                .sum()
        })
        .unwrap_or(0);
    let max = match shared.cfg.wired_tiger_cache_gb {
        Some(gb) => (gb * 1024.0 * 1024.0 * 1024.0) as i64,
        None => ((mem_limit_mb() - 1024) * 1024 * 1024 / 2).max(256 * 1024 * 1024),
    };
    doc! {
        "microshardStandin": true,
        "note": "stand-in: no WiredTiger; cache figures are derived from the in-memory data size",
        "cache": {
            "maximum bytes configured": max,
            "bytes currently in the cache": data.min(max),
            "tracked dirty bytes in the cache": 0_i64,
            "pages read into cache": 0_i64,
            "pages written from cache": 0_i64,
            "pages evicted by application threads": 0_i64,
            "modified pages evicted": 0_i64,
            "unmodified pages evicted": 0_i64,
        },
        "concurrentTransactions": {
            "read": {"out": 0, "available": 128, "totalTickets": 128},
            "write": {"out": 0, "available": 128, "totalTickets": 128},
        },
    }
}

/// `serverStatus.opcounters`; all zero with `--zero-counters`.
fn opcounters(shared: &ServerState) -> Document {
    let c = &shared.counters;
    let n = |a: &std::sync::atomic::AtomicU64| match shared.cfg.zero_counters {
        true => 0_i64,
        false => a.load(Ordering::Relaxed) as i64,
    };
    doc! {
        "insert": n(&c.insert),
        "query": n(&c.query),
        "update": n(&c.update),
        "delete": n(&c.delete),
        "getmore": n(&c.getmore),
        "command": n(&c.command),
    }
}

fn server_status(shared: &ServerState) -> Document {
    let (res, virt) = process_mem_mib();
    let res = shared.cfg.resident_mib.map_or(res, i64::from);
    let uptime = shared.started.elapsed();
    let mut d = doc! {
        "host": shared.me(),
        "version": STANDIN_VERSION,
        "process": match shared.cfg.role { Role::Mongod => "mongod", Role::Mongos => "mongos" },
        "pid": i64::from(std::process::id()),
        "uptime": uptime.as_secs_f64(),
        "uptimeMillis": uptime.as_millis() as i64,
        "uptimeEstimate": uptime.as_secs() as i64,
        "localTime": DateTime::now(),
        "connections": {
            "current": shared.current_conns.load(Ordering::Relaxed) as i32,
            "available": (i64::from(shared.cfg.max_conns) - shared.current_conns.load(Ordering::Relaxed)).max(0) as i32,
            "totalCreated": shared.total_conns.load(Ordering::Relaxed) as i32,
        },
        "opcounters": opcounters(shared),
        "mem": {"bits": 64, "resident": res as i32, "virtual": virt as i32, "supported": true},
    };
    if shared.cfg.role == Role::Mongod {
        d.insert("wiredTiger", wired_tiger_section(shared));
        if shared.cfg.repl_set.is_some() {
            d.insert("repl", repl::hello_fields(shared).1);
        }
    } else if let Some(c) = &shared.cfg.configdb {
        d.insert("sharding", doc! {"configsvrConnectionString": c.clone()});
    }
    let mut standin = doc! {"workers": shared.cfg.workers as i64, "serviceTimeUs": shared.cfg.service_time_us as i64};
    if let Some(ceil) = shared.cfg.ceiling_ops_per_sec() {
        standin.insert("ceilingOpsPerSec", ceil);
    }
    d.insert("standin", standin);
    d.insert("microshardStandin", true);
    d.insert("ok", 1.0);
    d
}

fn host_info(shared: &ServerState) -> Document {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as i32)
        .unwrap_or(1);
    doc! {
        "system": {
            "currentTime": DateTime::now(),
            "hostname": shared.me(),
            "cpuAddrSize": 64,
            "memSizeMB": mem_total_mb(),
            "memLimitMB": mem_limit_mb(),
            "numCores": cores,
            "numPhysicalCores": cores,
            "cpuArch": std::env::consts::ARCH,
            "numaEnabled": false,
        },
        "os": {"type": "Linux", "name": "microshard stand-in host", "version": ""},
        "extra": {"microshardStandin": true},
        "ok": 1.0,
    }
}

fn cmd_line_opts(shared: &ServerState) -> Document {
    let cfg = &shared.cfg;
    let mut parsed = Document::new();
    let mut net = doc! {"port": i32::from(shared.port)};
    if cfg.bind_ip_all {
        net.insert("bindIpAll", true);
    } else {
        net.insert("bindIp", cfg.bind_ips.join(","));
    }
    if let Some(p) = &cfg.unix_socket_prefix {
        net.insert(
            "unixDomainSocket",
            doc! {"pathPrefix": p.display().to_string()},
        );
    }
    parsed.insert("net", net);
    if cfg.role == Role::Mongod {
        let mut storage = Document::new();
        if let Some(p) = &cfg.dbpath {
            storage.insert("dbPath", p.display().to_string());
        }
        if let Some(gb) = cfg.wired_tiger_cache_gb {
            storage.insert("wiredTiger", doc! {"engineConfig": {"cacheSizeGB": gb}});
        }
        parsed.insert("storage", storage);
    }
    if let Some(rs) = &cfg.repl_set {
        parsed.insert("replication", doc! {"replSet": rs.clone()});
    }
    if cfg.configsvr {
        parsed.insert("sharding", doc! {"clusterRole": "configsvr"});
    } else if cfg.shardsvr {
        parsed.insert("sharding", doc! {"clusterRole": "shardsvr"});
    } else if let Some(c) = &cfg.configdb {
        parsed.insert("sharding", doc! {"configDB": c.clone()});
    }
    if let Some(p) = &cfg.logpath {
        parsed.insert(
            "systemLog",
            doc! {"destination": "file", "path": p.display().to_string(), "logAppend": cfg.logappend, "quiet": cfg.quiet},
        );
    }
    if !cfg.set_parameters.is_empty() {
        let mut sp = Document::new();
        for (k, v) in &cfg.set_parameters {
            sp.insert(k.clone(), v.clone());
        }
        parsed.insert("setParameter", sp);
    }
    doc! {"argv": cfg.argv.clone(), "parsed": parsed, "ok": 1.0}
}
