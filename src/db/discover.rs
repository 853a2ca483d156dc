//! The members a run's liveness probes watch when the caller knows no topology (`--uri`, the
//! existing backend): the seed hosts of the connection string (named after the role they answer
//! with), every member of a replica set they belong to (`hello.hosts`), and for a mongos every
//! shard member from `listShards`. The advertised names are checked from here before the run
//! (`db::reach`): one this machine cannot reach is named and left out, never called dead.

use mongodb::Database;
use mongodb::bson::{Document, doc};

use super::dial::Dial;
use super::probe::ProbeTarget;

/// The members to probe, and a line for each advertised one left out.
#[derive(Debug, Default)]
pub(crate) struct Discovered {
    /// The members to probe.
    pub targets: Vec<ProbeTarget>,
    /// "sh1-0:27018 advertised by listShards does not resolve here; probed through mongos only".
    pub notes: Vec<String>,
}

/// A line when the entry point has fewer connections left (`serverStatus.connections.available`)
/// than `threads`, each of which holds one while its operation runs: mongod and mongos take at
/// most `net.maxIncomingConnections`, and in practice about 80 % of their open-file limit, so
/// a server under a `nofile` of 1024 takes about 819, and the rest of the threads' operations
/// wait or fail. `None` when there are enough, or the server does not say.
pub(crate) async fn connections_notice(admin: &Database, threads: usize) -> Option<String> {
    let status = admin.run_command(doc! {"serverStatus": 1}).await.ok()?;
    let available = status.get_document("connections").ok()?.get("available")?;
    let available = match available {
        mongodb::bson::Bson::Int32(n) => i64::from(*n),
        mongodb::bson::Bson::Int64(n) => *n,
        mongodb::bson::Bson::Double(n) => *n as i64,
        _ => return None,
    };
    (available < threads as i64).then(|| {
        format!(
            "the server has {available} connections available (serverStatus.connections.available), fewer than this run's {threads} threads: the rest wait for one or fail; raise its net.maxIncomingConnections or open-file limit (ulimit -n), or run fewer threads"
        )
    })
}

/// A member another one advertised, and who advertised it.
struct Advertised {
    target: ProbeTarget,
    by: &'static str,
}

/// The probe targets of the deployment behind `admin` (reached through `seeds`, the connection
/// string's hosts), each advertised member checked from here as `dial` says.
pub(crate) async fn members(admin: &Database, seeds: &str, dial: &Dial) -> Discovered {
    let hello = super::reach::hello(admin).await.ok();
    let is_mongos = hello
        .as_ref()
        .is_some_and(|h| h.get_str("msg").ok() == Some("isdbgrid"));
    let mut targets = seed_targets(seeds, hello.as_ref(), is_mongos);
    let mut advertised = Vec::new();
    if let Some(h) = &hello
        && !is_mongos
    {
        advertised = set_members(h);
    }
    if is_mongos && let Ok(reply) = admin.run_command(doc! {"listShards": 1}).await {
        advertised = shard_members(&reply);
    }
    advertised.retain(|a| !targets.iter().any(|t| t.address == a.target.address));
    let checks = advertised
        .iter()
        .map(|a| super::reach::unreached(&a.target.address, dial));
    let verdicts = futures::future::join_all(checks).await;
    let through = if is_mongos { "mongos" } else { "the seed" };
    let mut notes = Vec::new();
    for (a, why) in advertised.into_iter().zip(verdicts) {
        match why {
            None => targets.push(a.target),
            Some(why) => notes.push(format!(
                "{} ({}) advertised by {} {why}; probed through {through} only",
                a.target.address, a.target.name, a.by
            )),
        }
    }
    Discovered { targets, notes }
}

/// The connection string's own hosts, named after the role they answer with.
fn seed_targets(seeds: &str, hello: Option<&Document>, is_mongos: bool) -> Vec<ProbeTarget> {
    let seeds: Vec<&str> = seeds.split(',').filter(|h| !h.is_empty()).collect();
    let role = if is_mongos { "mongos" } else { "mongod" };
    let set = hello
        .and_then(|h| h.get_str("setName").ok())
        .map(String::from);
    let mut out: Vec<ProbeTarget> = Vec::new();
    for (i, host) in seeds.iter().enumerate() {
        let name = if seeds.len() > 1 {
            format!("{role}{i}")
        } else {
            role.to_string()
        };
        if !out.iter().any(|t| t.address == *host) {
            let (address, set) = (host.to_string(), set.clone());
            out.push(ProbeTarget {
                name,
                address,
                set,
                config_server: false,
            });
        }
    }
    out
}

/// The members of the set a `hello` names (`hello.hosts`).
fn set_members(h: &Document) -> Vec<Advertised> {
    let (Ok(set), Ok(hosts)) = (h.get_str("setName"), h.get_array("hosts")) else {
        return Vec::new();
    };
    let hosts = hosts.iter().filter_map(|b| b.as_str()).enumerate();
    hosts
        .map(|(i, host)| Advertised {
            target: ProbeTarget {
                name: format!("{set}[{i}]"),
                address: host.to_string(),
                set: Some(set.to_string()),
                config_server: false,
            },
            by: "hello.hosts",
        })
        .collect()
}

/// Every shard member `listShards` names (`set/host,host` or a single host).
fn shard_members(reply: &Document) -> Vec<Advertised> {
    let mut out = Vec::new();
    let Ok(shards) = reply.get_array("shards") else {
        return out;
    };
    for shard in shards.iter().filter_map(|s| s.as_document()) {
        let id = shard.get_str("_id").unwrap_or("shard");
        let hosts = shard.get_str("host").unwrap_or("");
        let hosts = hosts.split_once('/').map(|(_, h)| h).unwrap_or(hosts);
        let list: Vec<&str> = hosts.split(',').filter(|h| !h.is_empty()).collect();
        for (i, host) in list.iter().enumerate() {
            let name = if list.len() > 1 {
                format!("{id}[{i}]")
            } else {
                id.to_string()
            };
            // The shard's name stands for its set: the reasons name the shard.
            let (address, set) = (host.to_string(), Some(id.to_string()));
            if !out.iter().any(|a: &Advertised| a.target.address == address) {
                let target = ProbeTarget {
                    name,
                    address,
                    set,
                    config_server: false,
                };
                out.push(Advertised {
                    target,
                    by: "listShards",
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_shards_and_hello_hosts_name_their_members() {
        let reply = doc! {"shards": [
            {"_id": "sh0", "host": "sh0/a:1,b:2"},
            {"_id": "sh1", "host": "c:3"},
        ]};
        let got: Vec<(String, String, &str)> = shard_members(&reply)
            .into_iter()
            .map(|a| (a.target.name, a.target.address, a.by))
            .collect();
        assert_eq!(
            got,
            [
                ("sh0[0]".into(), "a:1".into(), "listShards"),
                ("sh0[1]".into(), "b:2".into(), "listShards"),
                ("sh1".into(), "c:3".into(), "listShards"),
            ]
        );
        let hello = doc! {"setName": "rs0", "hosts": ["a:1", "b:2"]};
        let members = set_members(&hello);
        assert_eq!(members[1].target.name, "rs0[1]");
        assert_eq!(members[1].target.set.as_deref(), Some("rs0"));
    }
}
