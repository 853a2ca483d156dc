//! Server-side truth per cell: `serverStatus` before and after on the entry point and every shard,
//! each shard's share of operations and documents, and data/index size against the cache.

use mongodb::bson::{Bson, Document, doc};
use serde::{Deserialize, Serialize};

pub mod set_counts;

/// The `serverStatus` counters an experiment compares before and after a cell.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StatusSnapshot {
    /// `opcounters.insert`.
    pub insert: u64,
    /// `opcounters.query`.
    pub query: u64,
    /// `opcounters.update`.
    pub update: u64,
    /// `opcounters.delete`.
    pub delete: u64,
    /// `opcounters.getmore`.
    pub getmore: u64,
    /// `opcounters.command`.
    pub command: u64,
    /// Writes applied from the primary's oplog (`opcountersRepl` insert + update + delete): a
    /// secondary's share of a set's work, never a client's operation (so not in
    /// [`Self::data_ops`]); `None` where the server reports no `opcountersRepl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repl_applied: Option<u64>,
    /// `connections.current`.
    pub connections: u64,
    /// Which process answered: `host` and `uptimeMillis`. A member whose uptime at a cell's end
    /// is below its uptime at the start restarted during the cell ([`MemberMetrics::restart`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// `uptimeMillis`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_ms: Option<u64>,
    /// `connections.available`: how many more the server accepts (0.8 × its soft `nofile` limit
    /// less `current`), so a cell near the cap can be told apart (docs/mongodb-versions.md, R3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_available: Option<u64>,
    /// WiredTiger bytes currently in the cache.
    #[serde(default)]
    pub cache_bytes: Option<u64>,
    /// WiredTiger dirty bytes in the cache.
    #[serde(default)]
    pub dirty_bytes: Option<u64>,
    /// WiredTiger configured cache size.
    #[serde(default)]
    pub cache_max_bytes: Option<u64>,
    /// Pages evicted (modified + unmodified).
    #[serde(default)]
    pub evicted_pages: Option<u64>,
    /// Checkpoints WiredTiger completed (`wiredTiger.transaction["transaction checkpoints"]`):
    /// a write cell's dirty pages are written by the next checkpoint, often in a later cell's
    /// window, so a cell's server CPU reads right only beside how many fell in it; `None` where
    /// the server does not report it (the stand-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<u64>,
    /// `version` as reported.
    #[serde(default)]
    pub version: Option<String>,
    /// Pages evicted by application threads (cache pressure felt by the operations themselves), read under
    /// whichever of [`APP_EVICTION_COUNTERS`] the server has; `None` (never 0) when it has neither
    /// (docs/mongodb-versions.md, R2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_evictions: Option<u64>,
    /// The counter [`Self::app_evictions`] was read from, so figures from before and after the rename are not
    /// compared as one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_eviction_counter: Option<String>,
    /// [`APP_EVICTION_FAILURES`], the companion of the renamed counter (8.0.16+ / 8.2 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_eviction_failures: Option<u64>,
    /// `tcmalloc.usingPerCPUCaches` (8.0+): the server's own word on whether TCMalloc's per-CPU caches are in
    /// effect, which needs rseq (`GLIBC_TUNABLES=glibc.pthread.rseq=0` leaves it to TCMalloc) and a kernel of
    /// 4.18 or later; it says nothing about THP (docs/mongodb-versions.md, R4); absent before 8.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcmalloc_per_cpu_caches: Option<bool>,
    /// `mem.resident`, bytes (the server reports MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resident_bytes: Option<u64>,
    /// The cache figures are the stand-in's own estimate (`wiredTiger.microshardStandin`), not
    /// WiredTiger's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub standin_cache: bool,
}

/// Pages evicted by application threads, oldest name first: `pages evicted by application threads` until
/// MongoDB 8.0.16 / 8.2, `page evict attempts by application threads` after (docs/mongodb-versions.md, R2).
pub(crate) const APP_EVICTION_COUNTERS: &[&str] = &[
    "pages evicted by application threads",
    "page evict attempts by application threads",
];

/// The 8.0.16+ companion of `page evict attempts by application threads`.
pub(crate) const APP_EVICTION_FAILURES: &str = "page evict failures by application threads";

impl StatusSnapshot {
    /// Reads the counters out of a `serverStatus` reply; absent sections stay zero/None.
    pub(crate) fn from_server_status(reply: &Document) -> StatusSnapshot {
        let sub = |k: &str| reply.get_document(k).ok();
        let op = |k: &str| {
            sub("opcounters")
                .and_then(|d| number(d.get(k)))
                .unwrap_or(0)
        };
        let cache = sub("wiredTiger").and_then(|wt| wt.get_document("cache").ok());
        let wt = |k: &str| cache.and_then(|c| number(c.get(k)));
        let evicted = match (wt("modified pages evicted"), wt("unmodified pages evicted")) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        // Application-thread evictions: WiredTiger renamed the counter in MongoDB 8.0.16+ / 8.2.
        let app_eviction = APP_EVICTION_COUNTERS
            .iter()
            .find_map(|k| Some((*k, number(cache?.get(*k))?)));
        StatusSnapshot {
            insert: op("insert"),
            query: op("query"),
            update: op("update"),
            delete: op("delete"),
            getmore: op("getmore"),
            command: op("command"),
            repl_applied: sub("opcountersRepl").map(|r| {
                ["insert", "update", "delete"]
                    .iter()
                    .filter_map(|k| number(r.get(*k)))
                    .sum()
            }),
            connections: sub("connections")
                .and_then(|c| number(c.get("current")))
                .unwrap_or(0),
            connections_available: sub("connections").and_then(|c| number(c.get("available"))),
            host: reply.get_str("host").ok().map(str::to_string),
            uptime_ms: number(reply.get("uptimeMillis")),
            cache_bytes: wt("bytes currently in the cache"),
            dirty_bytes: wt("tracked dirty bytes in the cache"),
            cache_max_bytes: wt("maximum bytes configured"),
            evicted_pages: evicted,
            checkpoints: sub("wiredTiger")
                .and_then(|wt| wt.get_document("transaction").ok())
                .and_then(|t| number(t.get("transaction checkpoints"))),
            version: reply.get_str("version").ok().map(str::to_string),
            app_evictions: app_eviction.map(|(_, n)| n),
            app_eviction_counter: app_eviction.map(|(k, _)| k.to_string()),
            app_eviction_failures: wt(APP_EVICTION_FAILURES),
            tcmalloc_per_cpu_caches: sub("tcmalloc")
                .and_then(|t| t.get_bool("usingPerCPUCaches").ok()),
            resident_bytes: sub("mem")
                .and_then(|m| number(m.get("resident")))
                .map(|mib| mib * 1024 * 1024),
            standin_cache: sub("wiredTiger")
                .and_then(|wt| wt.get_bool("microshardStandin").ok())
                .unwrap_or(false),
        }
    }

    /// Drops the memory figures no real server can have, each with the sentence saying so:
    /// resident memory above `machine_bytes` (the memory of the machine it runs on, when known),
    /// cache in use above twice the cache's configured maximum (WiredTiger lets the cache run a few
    /// percent over its maximum before eviction catches up, so only a gross excess is no real
    /// cache). A wire-compatible server that is not
    /// MongoDB reported a resident memory of 56 TB (issue #31): such a figure is "not reported",
    /// never a number.
    pub(crate) fn drop_implausible(&mut self, machine_bytes: Option<u64>) -> Vec<String> {
        let mut said = Vec::new();
        if let (Some(r), Some(m)) = (self.resident_bytes, machine_bytes.filter(|m| *m > 0))
            && r > m
        {
            said.push(format!(
                "reports a resident memory of {}, above this machine's {}: not used",
                bytes(r),
                bytes(m)
            ));
            self.resident_bytes = None;
        }
        if let (Some(c), Some(max)) = (self.cache_bytes, self.cache_max_bytes)
            && c > max.saturating_mul(2)
        {
            said.push(format!(
                "reports {} in its cache, above twice the cache's maximum of {}: not used",
                bytes(c),
                bytes(max)
            ));
            self.cache_bytes = None;
        }
        said
    }

    /// Data operations counted (insert + query + update + delete + getmore), without commands.
    pub(crate) fn data_ops(&self) -> u64 {
        self.insert + self.query + self.update + self.delete + self.getmore
    }
}

/// Reads any BSON number as a non-negative integer.
fn number(value: Option<&Bson>) -> Option<u64> {
    match value? {
        Bson::Int32(v) => u64::try_from(*v).ok(),
        Bson::Int64(v) => u64::try_from(*v).ok(),
        Bson::Double(v) if *v >= 0.0 && v.is_finite() => Some(*v as u64),
        _ => None,
    }
}

/// One server's counters around a cell.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MemberMetrics {
    /// Member name (`entry`, or the shard name).
    pub name: String,
    /// `entry` (mongos or the single mongod) or `shard`.
    pub role: String,
    /// Counters before the cell.
    pub before: Option<StatusSnapshot>,
    /// Counters after the cell.
    pub after: Option<StatusSnapshot>,
    /// Data operations per second sampled during the cell (seconds since start, ops/s).
    #[serde(default)]
    pub samples: Vec<(f64, f64)>,
    /// A shard whose set failed over during the cell: its operations summed over the set's
    /// members, since each member counted only what it served while it was primary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_counts: Option<set_counts::SetCounts>,
}

impl MemberMetrics {
    /// The shard this member's figures stand for: its set when they were summed over the set
    /// (a failed-over shard's new primary has its own member name), else its name.
    pub(crate) fn shard(&self) -> &str {
        self.set_counts.as_ref().map_or(&self.name, |s| &s.set)
    }

    /// Data operations this member served during the cell; for a shard that failed over, what
    /// its whole set served (`None` when a member of it could not be read).
    pub(crate) fn ops_delta(&self) -> Option<u64> {
        if let Some(set) = &self.set_counts {
            return set.ops;
        }
        let (b, a) = (self.before.as_ref()?, self.after.as_ref()?);
        Some(a.data_ops().saturating_sub(b.data_ops()))
    }

    /// Why this member's cell is invalid if its server restarted during it (a container or pod
    /// restarted by its policy, a crash a supervisor undid): the same host answered both times,
    /// with less uptime at the end than at the start. Its counters began again, and its clients
    /// waited on or failed against a member that was down — too soon back for the probes'
    /// silence bound to see it. (Another host answering, as behind a load balancer, is no restart.)
    pub(crate) fn restart(&self) -> Option<String> {
        let (b, a) = (self.before.as_ref()?, self.after.as_ref()?);
        let (up_b, up_a) = (b.uptime_ms?, a.uptime_ms?);
        if b.host != a.host || up_a >= up_b {
            return None;
        }
        Some(format!(
            "{} ({}) restarted during the cell: up {:.1} s at its end, {:.1} s at its start",
            self.name,
            a.host.as_deref().unwrap_or("its host"),
            up_a as f64 / 1000.0,
            up_b as f64 / 1000.0
        ))
    }
}

/// One shard's share of the collection and of the cell's operations.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ShardShare {
    /// Shard name.
    pub shard: String,
    /// Documents on the shard.
    pub documents: u64,
    /// Data bytes (uncompressed `size`).
    pub data_bytes: u64,
    /// Total index bytes (`totalIndexSize`: on disk, prefix-compressed on WiredTiger, so less
    /// than the index takes in the cache).
    pub index_bytes: u64,
    /// The collection's index bytes in the cache: `indexDetails.<index>.cache["bytes currently
    /// in the cache"]` summed over its indexes; `None` where the server does not report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_cache_bytes: Option<u64>,
    /// Fraction of all documents on this shard.
    pub document_share: f64,
    /// Fraction of all data operations during the cell served by this shard.
    #[serde(default)]
    pub ops_share: Option<f64>,
}

/// Everything measured on the server side for one cell.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerMetrics {
    /// Entry point first, then shards.
    pub members: Vec<MemberMetrics>,
    /// Per-shard collection statistics (one entry for an unsharded deployment).
    pub shards: Vec<ShardShare>,
    /// Configured WiredTiger cache of the smallest member, bytes.
    #[serde(default)]
    pub cache_max_bytes: Option<u64>,
    /// Problems worth telling the reader (indexes beyond cache, imbalance).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Each shard replica set's primary when the cell started (`set → member`): the member
    /// whose counters are the shard's.
    #[serde(default)]
    pub primaries: std::collections::BTreeMap<String, String>,
    /// The balancer and the table's chunks before and after the cell, on a sharded deployment
    /// whose balancer microshard stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balancer: Option<super::balancer::BalancerWatch>,
    /// WiredTiger checkpoints completed during the cell, summed over the members read before
    /// and after it that report them; `None` where none does (the stand-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<u64>,
}

impl ServerMetrics {
    /// Fills the shards' operation shares from member deltas and adds the warnings seed 001 taught:
    /// indexes that do not fit the cache, and a hashed `_id` that did not balance the shards.
    pub(crate) fn finish(&mut self) {
        let shard_ops: Vec<(String, u64)> = self
            .members
            .iter()
            .filter(|m| m.role == "shard")
            .filter_map(|m| Some((m.shard().to_string(), m.ops_delta()?)))
            .collect();
        let total_ops: u64 = shard_ops.iter().map(|(_, o)| o).sum();
        let total_docs: u64 = self.shards.iter().map(|s| s.documents).sum();
        for share in &mut self.shards {
            share.document_share = share.documents as f64 / total_docs.max(1) as f64;
            if total_ops > 0 {
                share.ops_share = shard_ops
                    .iter()
                    .find(|(n, _)| *n == share.shard)
                    .map(|(_, o)| *o as f64 / total_ops as f64);
            }
        }
        if self.cache_max_bytes.is_none() {
            self.cache_max_bytes = self
                .members
                .iter()
                .filter_map(|m| m.after.as_ref()?.cache_max_bytes)
                .min();
        }
        self.checkpoints = (self.members.iter())
            .filter_map(|m| {
                let (b, a) = (m.before.as_ref()?, m.after.as_ref()?);
                Some(a.checkpoints?.saturating_sub(b.checkpoints?))
            })
            .reduce(|a, b| a + b);
        self.warnings.clear();
        self.warnings
            .extend((self.members.iter()).filter_map(|m| Some(m.set_counts.as_ref()?.sentence())));
        if let Some(cache) = self.cache_max_bytes {
            for s in &self.shards {
                if s.index_bytes > cache {
                    self.warnings.push(format!(
                        "{}: indexes ({}) do not fit the WiredTiger cache ({}); reads will wait on disk",
                        s.shard,
                        bytes(s.index_bytes),
                        bytes(cache)
                    ));
                }
            }
        }
        let n = self.shards.len();
        if n > 1 && total_docs > 0 {
            let fair = 1.0 / n as f64;
            for s in &self.shards {
                if (s.document_share - fair).abs() > fair * 0.25 {
                    self.warnings.push(format!(
                        "{} holds {:.0}% of the documents (fair share {:.0}%): the shard key did not balance",
                        s.shard,
                        s.document_share * 100.0,
                        fair * 100.0
                    ));
                }
            }
        }
    }

    /// The server's operation counts are not used (it reported none): the shards' shares of
    /// operations and the sampled ops/s go, rather than stand as zeros.
    pub(crate) fn forget_op_counts(&mut self) {
        for share in &mut self.shards {
            share.ops_share = None;
        }
        for m in &mut self.members {
            m.samples.clear();
        }
    }

    /// The members that restarted during the cell, each as the sentence that makes it invalid.
    pub(crate) fn restarts(&self) -> Vec<String> {
        self.members
            .iter()
            .filter_map(MemberMetrics::restart)
            .collect()
    }

    /// Drops every member's implausible memory figures ([`StatusSnapshot::drop_implausible`])
    /// and says so among the warnings, once per member and sentence.
    pub(crate) fn drop_implausible(&mut self, machine_bytes: Option<u64>) {
        for m in &mut self.members {
            let early = m.before.as_mut().map(|s| s.drop_implausible(machine_bytes));
            let late = m.after.as_mut().map(|s| s.drop_implausible(machine_bytes));
            // The figures at the end, else those at the start: one sentence per member.
            let said = late.filter(|l| !l.is_empty()).or(early).unwrap_or_default();
            self.warnings
                .extend(said.into_iter().map(|said| format!("{} {said}", m.name)));
        }
    }
}

/// Human-readable bytes (binary units).
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    match u {
        0 => format!("{n} B"),
        _ => format!("{v:.1} {}", UNITS[u]),
    }
}

/// A server to watch during a cell.
#[derive(Debug, Clone)]
pub struct Watched {
    /// Member name (`entry` or shard name).
    pub name: String,
    /// `entry` or `shard`.
    pub role: String,
    /// Direct connection string (never printed unredacted).
    pub uri: String,
}

impl Watched {
    pub(crate) fn new(name: &str, role: &str, uri: &str) -> Watched {
        let (name, role, uri) = (name.to_string(), role.to_string(), uri.to_string());
        Watched { name, role, uri }
    }
}

/// Takes a `serverStatus` snapshot of one server; `None` when it does not answer in time.
pub async fn snapshot(uri: &str) -> Option<StatusSnapshot> {
    let reply = server_status(&direct_client(uri).await?, 5).await?;
    Some(StatusSnapshot::from_server_status(&reply))
}

/// `serverStatus` through `client`; `None` unless it answers within `secs` seconds.
async fn server_status(client: &mongodb::Client, secs: u64) -> Option<Document> {
    let admin = client.database("admin");
    let call = admin.run_command(doc! { "serverStatus": 1 });
    tokio::time::timeout(std::time::Duration::from_secs(secs), call)
        .await
        .ok()?
        .ok()
}

async fn direct_client(uri: &str) -> Option<mongodb::Client> {
    let mut options = mongodb::options::ClientOptions::parse(uri).await.ok()?;
    options.server_selection_timeout = Some(std::time::Duration::from_secs(5));
    options.connect_timeout = Some(std::time::Duration::from_secs(5));
    options.app_name = Some("microshard-metrics".to_string());
    mongodb::Client::with_options(options).ok()
}

/// The server's memory at the end of a sweep curve (seed 2: the index must fit in RAM), summed
/// over the members that report each figure; `None` where none does.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MemoryAtEnd {
    /// `mem.resident`, bytes, summed over [`Self::members`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resident_bytes: Option<u64>,
    /// WiredTiger bytes in the cache; `None` where no member has WiredTiger (the stand-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bytes: Option<u64>,
    /// WiredTiger's configured cache, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_max_bytes: Option<u64>,
    /// The collection's index bytes on disk (`$collStats` `totalIndexSize`, all shards):
    /// prefix-compressed on WiredTiger, so less than the index needs in the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_bytes: Option<u64>,
    /// The collection's index bytes in the cache now (`$collStats` `storageStats.indexDetails`,
    /// all shards), where the server reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_cache_bytes: Option<u64>,
    /// The members whose figures were summed (entry points, shard primaries, config servers),
    /// by name; empty in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// Figures left out as implausible, one sentence each (`sh0 reports a resident memory of
    /// 56.0 TiB, above this machine's 16.0 GiB: not used`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<String>,
}

/// Reads [`MemoryAtEnd`] now: `serverStatus` of every member in `watched` and `$collStats` of
/// `db.coll` through the entry point. `machine_bytes` bounds a plausible resident memory (the
/// memory of the machine the servers run on, when known).
pub(crate) async fn memory_at_end(
    watched: &[Watched],
    entry_uri: &str,
    (db, coll): (&str, &str),
    machine_bytes: Option<u64>,
) -> MemoryAtEnd {
    let mut flagged = Vec::new();
    let mut members = Vec::new();
    let mut snapshots = Vec::new();
    for (w, s) in watched.iter().zip(snapshot_all(watched).await) {
        let Some(mut s) = s else { continue };
        flagged.extend(
            (s.drop_implausible(machine_bytes).into_iter())
                .map(|said| format!("{} {said}", w.name)),
        );
        members.push(w.name.clone());
        snapshots.push(s);
    }
    let sum = |f: &dyn Fn(&StatusSnapshot) -> Option<u64>| -> Option<u64> {
        snapshots.iter().filter_map(f).reduce(|a, b| a + b)
    };
    let wired_tiger = |f: fn(&StatusSnapshot) -> Option<u64>| {
        sum(&|s: &StatusSnapshot| if s.standin_cache { None } else { f(s) })
    };
    let shards = shard_shares(entry_uri, db, coll).await;
    MemoryAtEnd {
        resident_bytes: sum(&|s: &StatusSnapshot| s.resident_bytes),
        cache_bytes: wired_tiger(|s| s.cache_bytes),
        cache_max_bytes: wired_tiger(|s| s.cache_max_bytes),
        index_bytes: (!shards.is_empty()).then(|| shards.iter().map(|s| s.index_bytes).sum()),
        index_cache_bytes: shards
            .iter()
            .filter_map(|s| s.index_cache_bytes)
            .reduce(|a, b| a + b),
        members,
        flagged,
    }
}

/// The memory of the machine the servers of `entry_uri` run on, when that is this machine
/// (every host of the URI is loopback); `None` when they run elsewhere and it is not known.
pub(crate) fn machine_bytes(entry_uri: &str) -> Option<u64> {
    crate::topology::uri_is_loopback(entry_uri)
        .then(crate::measure::total_memory_bytes)
        .flatten()
}

/// Snapshots every watched server (concurrently).
pub(crate) async fn snapshot_all(watched: &[Watched]) -> Vec<Option<StatusSnapshot>> {
    futures::future::join_all(watched.iter().map(|w| snapshot(&w.uri))).await
}

/// Per-shard documents, data and index bytes of `db.coll` through the entry point (`$collStats`).
pub async fn shard_shares(entry_uri: &str, db: &str, coll: &str) -> Vec<ShardShare> {
    let Some(client) = direct_client(entry_uri).await else {
        return Vec::new();
    };
    let pipeline = vec![doc! { "$collStats": { "storageStats": {} } }];
    let collection = client.database(db).collection::<Document>(coll);
    let fetch = async {
        use futures::TryStreamExt;
        let cursor = collection.aggregate(pipeline).await.ok()?;
        cursor.try_collect::<Vec<Document>>().await.ok()
    };
    let Ok(Some(docs)) = tokio::time::timeout(std::time::Duration::from_secs(10), fetch).await
    else {
        return Vec::new();
    };
    docs.iter()
        .map(|d| {
            let stats = d.get_document("storageStats").ok();
            let n = |k: &str| stats.and_then(|s| number(s.get(k))).unwrap_or(0);
            ShardShare {
                shard: d.get_str("shard").unwrap_or("(unsharded)").to_string(),
                documents: n("count"),
                data_bytes: n("size"),
                index_bytes: n("totalIndexSize"),
                index_cache_bytes: stats.and_then(index_cache_bytes),
                document_share: 0.0,
                ops_share: None,
            }
        })
        .collect()
}

/// `storageStats.indexDetails`: each index's WiredTiger statistics, whose
/// `cache["bytes currently in the cache"]` is what the index holds in the cache now, summed;
/// `None` when no index reports it (the stand-in, servers without WiredTiger).
fn index_cache_bytes(storage_stats: &Document) -> Option<u64> {
    let details = storage_stats.get_document("indexDetails").ok()?;
    details
        .values()
        .filter_map(|d| {
            let cache = d.as_document()?.get_document("cache").ok()?;
            number(cache.get("bytes currently in the cache"))
        })
        .reduce(|a, b| a + b)
}

/// Samples every watched server's data operations per second while a cell runs (what mongostat
/// beside YCSB showed), optionally printing one line per interval.
pub(crate) struct Sampler {
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<Vec<Vec<(f64, f64)>>>,
}

impl Sampler {
    /// Starts sampling every `every`; `live` prints `name ops/s` per interval through it.
    pub(crate) fn start(
        watched: Vec<Watched>,
        every: std::time::Duration,
        live: Option<super::progress::Progress>,
    ) -> Sampler {
        let stop = tokio_util::sync::CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let mut clients = Vec::new();
            for w in &watched {
                clients.push(direct_client(&w.uri).await);
            }
            let mut samples: Vec<Vec<(f64, f64)>> = vec![Vec::new(); watched.len()];
            let mut last: Vec<Option<(std::time::Instant, u64)>> = vec![None; watched.len()];
            let started = std::time::Instant::now();
            let mut tick = tokio::time::interval(every);
            'sampling: loop {
                tokio::select! {
                    _ = token.cancelled() => break,
                    _ = tick.tick() => {}
                }
                let mut line = Vec::new();
                for (i, client) in clients.iter().enumerate() {
                    let Some(client) = client else { continue };
                    // A member that died holds its call: the stop does not wait for it.
                    let reply = tokio::select! {
                        r = server_status(client, 2) => r,
                        _ = token.cancelled() => break 'sampling,
                    };
                    let Some(reply) = reply else { continue };
                    let now = std::time::Instant::now();
                    let ops = StatusSnapshot::from_server_status(&reply).data_ops();
                    if let Some((t0, ops0)) = last[i] {
                        let dt = now.duration_since(t0).as_secs_f64();
                        if dt > 0.0 {
                            let rate = ops.saturating_sub(ops0) as f64 / dt;
                            samples[i].push((started.elapsed().as_secs_f64(), rate));
                            line.push(format!("{} {:.0}", watched[i].name, rate));
                        }
                    }
                    last[i] = Some((now, ops));
                }
                if let (Some(p), false) = (&live, line.is_empty()) {
                    p.line(&format!("  server ops/s: {}", line.join(", ")));
                }
            }
            samples
        });
        Sampler { stop, task }
    }

    /// Stops sampling and returns each member's `(seconds, ops/s)` samples.
    pub(crate) async fn finish(self) -> Vec<Vec<(f64, f64)>> {
        self.stop.cancel();
        self.task.await.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(insert: i64, query: i32, evicted: i64, cache_max: i64) -> Document {
        doc! {
            "version": "7.0.2",
            "opcounters": { "insert": insert, "query": query, "update": 0_i64, "delete": 0_i32, "getmore": 0_i32, "command": 9_i32 },
            "connections": { "current": 12_i32, "available": 51_188_i32 },
            "wiredTiger": { "transaction": { "transaction checkpoints": evicted * 2 }, "cache": {
                "bytes currently in the cache": 1000_i64,
                "tracked dirty bytes in the cache": 10_i64,
                "maximum bytes configured": cache_max,
                "modified pages evicted": evicted,
                "unmodified pages evicted": 1_i64,
            } },
        }
    }

    #[test]
    fn parses_server_status_counters() {
        let s = StatusSnapshot::from_server_status(&status(5, 7, 3, 1 << 30));
        assert_eq!(s.insert, 5);
        assert_eq!(s.query, 7);
        assert_eq!(s.command, 9);
        assert_eq!(s.connections, 12);
        assert_eq!(s.connections_available, Some(51_188));
        assert_eq!(s.data_ops(), 12);
        assert_eq!(s.evicted_pages, Some(4));
        assert_eq!(s.checkpoints, Some(6));
        assert_eq!(s.cache_max_bytes, Some(1 << 30));
        assert_eq!(s.version.as_deref(), Some("7.0.2"));
    }

    #[test]
    fn a_member_whose_uptime_went_back_on_the_same_host_restarted_during_the_cell() {
        let at = |host: &str, ms: i64| {
            StatusSnapshot::from_server_status(
                &doc! { "host": host, "uptimeMillis": ms, "opcounters": {} },
            )
        };
        let member = |b: StatusSnapshot, a: StatusSnapshot| MemberMetrics {
            name: "sh0".into(),
            role: "shard".into(),
            before: Some(b),
            after: Some(a),
            ..Default::default()
        };
        let restarted = member(at("sh0-0.sh0:27017", 41_000), at("sh0-0.sh0:27017", 3_200));
        assert_eq!(
            restarted.restart().as_deref(),
            Some(
                "sh0 (sh0-0.sh0:27017) restarted during the cell: up 3.2 s at its end, 41.0 s at its start"
            )
        );
        let server = ServerMetrics {
            members: vec![restarted],
            ..Default::default()
        };
        assert_eq!(server.restarts().len(), 1);
        // Up all along; another host behind the same address; a server that reports no uptime.
        assert_eq!(member(at("h:1", 41_000), at("h:1", 51_000)).restart(), None);
        assert_eq!(member(at("h:1", 41_000), at("h:2", 3_000)).restart(), None);
        let silent = StatusSnapshot::from_server_status(&doc! { "opcounters": {} });
        assert_eq!(member(silent.clone(), silent).restart(), None);
    }

    #[test]
    fn resident_memory_is_read_as_mib() {
        // mongod reports `mem.resident` as a whole number of MiB (an Int32), 8.0 as 7.0.
        let reply = doc! { "opcounters": {}, "mem": { "bits": 64_i32, "resident": 1536_i32, "virtual": 4096_i32 } };
        let s = StatusSnapshot::from_server_status(&reply);
        assert_eq!(s.resident_bytes, Some(1536 * 1024 * 1024));
        let absent = StatusSnapshot::from_server_status(&doc! { "opcounters": {} });
        assert_eq!(absent.resident_bytes, None);
    }

    #[test]
    fn stand_in_without_wired_tiger_leaves_cache_unknown() {
        let s = StatusSnapshot::from_server_status(&doc! { "opcounters": { "insert": 3_i32 } });
        assert_eq!(s.insert, 3);
        assert_eq!(s.connections_available, None);
        assert_eq!(s.checkpoints, None);
        assert_eq!(s.cache_bytes, None);
        assert_eq!(s.evicted_pages, None);
    }

    #[test]
    fn eviction_counter_read_under_either_name_and_missing_is_not_zero() {
        let old = doc! {"wiredTiger": {"cache": {"pages evicted by application threads": 7_i64, "bytes currently in the cache": 1_i32}}};
        let s = StatusSnapshot::from_server_status(&old);
        assert_eq!(s.app_evictions, Some(7));
        assert_eq!(
            s.app_eviction_counter.as_deref(),
            Some("pages evicted by application threads")
        );
        assert_eq!(s.app_eviction_failures, None);
        // 8.0.16+ / 8.2: the replacement counter and its companion.
        let new = doc! {"wiredTiger": {"cache": {"page evict attempts by application threads": 9_i64, "page evict failures by application threads": 1_i32}}};
        let s = StatusSnapshot::from_server_status(&new);
        assert_eq!(s.app_evictions, Some(9));
        assert_eq!(
            s.app_eviction_counter.as_deref(),
            Some("page evict attempts by application threads")
        );
        assert_eq!(s.app_eviction_failures, Some(1));
        // Neither: absent (None), never 0, and nothing written to the result.
        let none = doc! {"wiredTiger": {"cache": {"bytes currently in the cache": 1_i32}}};
        let s = StatusSnapshot::from_server_status(&none);
        assert_eq!(
            (s.app_evictions, s.app_eviction_counter.as_deref()),
            (None, None)
        );
        assert_eq!(s.evicted_pages, None);
        let json = serde_json::to_string(&s).unwrap_or_default();
        assert!(!json.contains("app_eviction"), "{json}");
    }

    #[test]
    fn tcmalloc_per_cpu_caches_is_read_where_the_server_reports_it() {
        let s = StatusSnapshot::from_server_status(
            &doc! {"tcmalloc": {"usingPerCPUCaches": true, "generic": {}}},
        );
        assert_eq!(s.tcmalloc_per_cpu_caches, Some(true));
        let s = StatusSnapshot::from_server_status(&status(1, 1, 1, 1));
        assert_eq!(s.tcmalloc_per_cpu_caches, None);
    }

    #[test]
    fn index_bytes_in_cache_are_summed_over_the_indexes_where_reported() {
        let cache = |n: i64| doc! {"cache": {"bytes currently in the cache": n}, "type": "file"};
        let stats = doc! {
            "totalIndexSize": 100_i64,
            "indexDetails": {"_id_": cache(300), "field0_1": cache(50)},
        };
        assert_eq!(index_cache_bytes(&stats), Some(350));
        // The stand-in and servers without WiredTiger give no indexDetails, or no cache in them.
        assert_eq!(index_cache_bytes(&doc! {"totalIndexSize": 100_i64}), None);
        let bare = doc! {"indexDetails": {"_id_": {"type": "file"}}};
        assert_eq!(index_cache_bytes(&bare), None);
    }

    #[test]
    fn implausible_memory_is_dropped_and_said_once_per_member() {
        const GIB: u64 = 1 << 30;
        let mut s = StatusSnapshot {
            resident_bytes: Some(56 << 40),
            cache_bytes: Some(5 * GIB),
            cache_max_bytes: Some(2 * GIB),
            ..StatusSnapshot::default()
        };
        let said = s.drop_implausible(Some(16 * GIB));
        assert_eq!(
            said,
            vec![
                "reports a resident memory of 56.0 TiB, above this machine's 16.0 GiB: not used",
                "reports 5.0 GiB in its cache, above twice the cache's maximum of 2.0 GiB: not used",
            ]
        );
        assert_eq!((s.resident_bytes, s.cache_bytes), (None, None));
        // A cache a few percent over its maximum, as WiredTiger's eviction targets allow, stays.
        let mut over = StatusSnapshot {
            cache_bytes: Some(2 * GIB + GIB / 20),
            cache_max_bytes: Some(2 * GIB),
            ..StatusSnapshot::default()
        };
        assert!(over.drop_implausible(None).is_empty());
        assert_eq!(over.cache_bytes, Some(2 * GIB + GIB / 20));
        // Plausible figures, or no machine to compare with, stay.
        let mut fine = StatusSnapshot {
            resident_bytes: Some(GIB),
            ..StatusSnapshot::default()
        };
        assert!(fine.drop_implausible(Some(16 * GIB)).is_empty());
        let mut far = StatusSnapshot {
            resident_bytes: Some(56 << 40),
            ..StatusSnapshot::default()
        };
        assert!(far.drop_implausible(None).is_empty());
        assert_eq!(far.resident_bytes, Some(56 << 40));
        let huge = || {
            Some(StatusSnapshot {
                resident_bytes: Some(56 << 40),
                ..StatusSnapshot::default()
            })
        };
        let mut m = ServerMetrics {
            members: vec![MemberMetrics {
                name: "entry".into(),
                role: "entry".into(),
                before: huge(),
                after: huge(),
                samples: vec![],
                set_counts: None,
            }],
            ..Default::default()
        };
        m.drop_implausible(Some(16 * GIB));
        assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
        assert!(m.warnings[0].starts_with("entry reports a resident memory of 56.0 TiB"));
        assert!(
            m.members[0]
                .before
                .as_ref()
                .is_some_and(|b| b.resident_bytes.is_none())
        );
    }

    #[test]
    fn shares_and_warnings() {
        let member = |name: &str, before: i64, after: i64| MemberMetrics {
            name: name.into(),
            role: "shard".into(),
            before: Some(StatusSnapshot::from_server_status(&status(
                before, 0, 0, 1000,
            ))),
            after: Some(StatusSnapshot::from_server_status(&status(
                after, 0, 0, 1000,
            ))),
            samples: vec![],
            set_counts: None,
        };
        let mut m = ServerMetrics {
            members: vec![member("s0", 0, 300), member("s1", 100, 200)],
            shards: vec![
                ShardShare {
                    shard: "s0".into(),
                    documents: 900,
                    index_bytes: 5000,
                    ..Default::default()
                },
                ShardShare {
                    shard: "s1".into(),
                    documents: 100,
                    index_bytes: 10,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        m.finish();
        assert_eq!(m.cache_max_bytes, Some(1000));
        assert!((m.shards[0].ops_share.unwrap_or(0.0) - 0.75).abs() < 1e-9);
        assert!((m.shards[0].document_share - 0.9).abs() < 1e-9);
        assert!(
            m.warnings.iter().any(|w| w.contains("s0: indexes")),
            "{:?}",
            m.warnings
        );
        assert!(!m.warnings.iter().any(|w| w.contains("s1: indexes")));
        assert!(m.warnings.iter().any(|w| w.contains("did not balance")));
    }
}
