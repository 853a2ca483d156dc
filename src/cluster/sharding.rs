//! Sharding the benchmark collection and reading where its chunks are: `listShards`,
//! `shardCollection` (hashed `_id`), the chunk check, `flushRouterConfig` and the balancer.

use std::collections::BTreeMap;

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};

use super::{ClusterError, YCSB_DB, client_for, connect_direct, run, ycsb_namespace};
use crate::topology::flags::version_of;

/// Shard names (`_id`) from `listShards`.
pub(crate) async fn list_shards(mongos: &str) -> Result<Vec<String>, ClusterError> {
    let client = connect_direct(mongos).await?;
    let d = run(&client, mongos, doc! {"listShards": 1}).await?;
    let shards = d.get_array("shards").map_err(|_| {
        ClusterError::Check(format!("listShards on {mongos} returned no `shards` array"))
    })?;
    Ok(shards
        .iter()
        .filter_map(|s| s.as_document())
        .filter_map(|s| s.get_str("_id").ok().map(String::from))
        .collect())
}

/// The `shardCollection` document for namespace `ns` (hashed `_id`, plus `numInitialChunks` only where it is honoured: ≤ 7.1).
pub(crate) fn shard_namespace_command(
    ns: &str,
    version: &str,
    initial_chunks: Option<u32>,
) -> Document {
    let mut cmd = doc! {"shardCollection": ns, "key": {"_id": "hashed"}};
    if let (Some(n), Some(v)) = (initial_chunks, version_of(version))
        && v <= (7, 1)
        && n > 0
    {
        cmd.insert("numInitialChunks", n as i64);
    }
    cmd
}

/// `enableSharding ycsb` + `shardCollection ycsb.<table> {_id: "hashed"}`: a scenario whose
/// `table` is not `usertable` must have that collection sharded, or all of it lives on the
/// database's primary shard and a sharded run measures one shard (docs/mongodb-versions.md).
pub(crate) async fn shard_table(
    mongos_uri_or_host: &str,
    table: &str,
    version: &str,
    initial_chunks: Option<u32>,
) -> Result<(), ClusterError> {
    let ns = ycsb_namespace(table)?;
    let (client, label) = client_for(mongos_uri_or_host).await?;
    // enableSharding is required ≤ 5.0 and harmless later.
    run(&client, &label, doc! {"enableSharding": YCSB_DB}).await?;
    let cmd = shard_namespace_command(&ns, version, initial_chunks);
    run(&client, &label, cmd).await.map(|_| ())
}

/// Shards `ycsb.<table>` as bring-up shards `usertable`: `per_shard` chunks for each of
/// `shards` (MongoDB's `numInitialChunks` is the total), then refuses a shard that owns none,
/// which a run would silently leave out. Returns the chunks per shard.
pub(crate) async fn shard_table_on_every_shard(
    mongos_uri_or_host: &str,
    table: &str,
    version: &str,
    per_shard: Option<u32>,
    shards: &[String],
) -> Result<BTreeMap<String, u64>, ClusterError> {
    let total = per_shard.map(|n| n.saturating_mul(shards.len() as u32));
    shard_table(mongos_uri_or_host, table, version, total).await?;
    let chunks = chunks_per_shard_of(mongos_uri_or_host, table).await?;
    let empty = shards_without_chunks(&chunks, shards);
    if !empty.is_empty() {
        return Err(ClusterError::Check(format!(
            "after shardCollection, shard(s) {} own no chunk of {YCSB_DB}.{table} (chunks: {chunks:?})",
            empty.join(", ")
        )));
    }
    Ok(chunks)
}

/// The shards of `shards` that own no chunk in `chunks`.
pub(super) fn shards_without_chunks<'a>(
    chunks: &BTreeMap<String, u64>,
    shards: &'a [String],
) -> Vec<&'a str> {
    shards
        .iter()
        .map(String::as_str)
        .filter(|n| chunks.get(*n).copied().unwrap_or(0) == 0)
        .collect()
}

/// `flushRouterConfig` for `ycsb`: needed on 4.4 mongos after a sharded collection was dropped
/// and is created again (SERVER-17397); not needed from 5.0.
pub(crate) async fn flush_router_config(mongos_uri_or_host: &str) -> Result<(), ClusterError> {
    let (client, label) = client_for(mongos_uri_or_host).await?;
    run(&client, &label, doc! {"flushRouterConfig": YCSB_DB})
        .await
        .map(|_| ())
}

/// Chunks of `ycsb.<table>` per shard, read from `config.chunks` by `uuid` (5.0+, when the
/// `config.collections` entry has a `timestamp`) or by `ns` (before).
pub(crate) async fn chunks_per_shard_of(
    mongos_uri_or_host: &str,
    table: &str,
) -> Result<BTreeMap<String, u64>, ClusterError> {
    let ns = ycsb_namespace(table)?;
    let (client, label) = client_for(mongos_uri_or_host).await?;
    let config = client.database("config");
    let coll = config
        .collection::<Document>("collections")
        .find_one(doc! {"_id": &ns})
        .await
        .map_err(|e| ClusterError::command("find config.collections", &label, &e))?
        .ok_or_else(|| {
            ClusterError::Check(format!("{ns} is not in config.collections on {label}"))
        })?;
    let filter = namespace_chunk_filter(&coll, &ns);
    let mut cursor = config
        .collection::<Document>("chunks")
        .aggregate(vec![
            doc! {"$match": filter},
            doc! {"$group": {"_id": "$shard", "n": {"$sum": 1}}},
        ])
        .await
        .map_err(|e| ClusterError::command("aggregate config.chunks", &label, &e))?;
    let mut out = BTreeMap::new();
    while let Some(d) = cursor
        .try_next()
        .await
        .map_err(|e| ClusterError::command("aggregate config.chunks", &label, &e))?
    {
        let shard = d.get_str("_id").unwrap_or("?").to_string();
        let n = match d.get("n") {
            Some(Bson::Int32(n)) => *n as u64,
            Some(Bson::Int64(n)) => *n as u64,
            Some(Bson::Double(n)) => *n as u64,
            _ => 0,
        };
        out.insert(shard, n);
    }
    Ok(out)
}

pub(super) fn namespace_chunk_filter(coll: &Document, ns: &str) -> Document {
    match (coll.get("timestamp"), coll.get("uuid")) {
        (Some(_), Some(uuid)) => doc! {"uuid": uuid.clone()},
        _ => doc! {"ns": ns},
    }
}

/// The balancer's mode on a mongos (`balancerStatus.mode`: `full` or `off`).
pub(crate) async fn balancer_mode(mongos_uri_or_host: &str) -> Result<String, ClusterError> {
    let (client, label) = client_for(mongos_uri_or_host).await?;
    let status = run(&client, &label, doc! {"balancerStatus": 1}).await?;
    Ok(status.get_str("mode").unwrap_or("unknown").to_string())
}

/// Stops the balancer so no migrations disturb a measured run.
pub(crate) async fn balancer_stop(mongos_uri_or_host: &str) -> Result<(), ClusterError> {
    let (client, label) = client_for(mongos_uri_or_host).await?;
    run(&client, &label, doc! {"balancerStop": 1})
        .await
        .map(|_| ())
}
