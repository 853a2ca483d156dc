//! How mongos talks to the shards and the config server: the official driver, with its errors
//! turned into the errors mongos reports.

use futures::future::join_all;
use mongodb::bson::{Document, doc};
use mongodb::{Client, error::ErrorKind};

use super::ShardConn;
use crate::cmderr::{CmdError, CmdResult, code};

/// How long mongos waits for a shard's primary before it fails an operation with 133:
/// `defaultFindReplicaSetHostTimeoutMS`, 15000 by default
/// (`mongodb/mongo:src/mongo/client/replica_set_monitor_server_parameters.idl`).
pub(super) const SHARD_PRIMARY_WAIT_MS: u64 = 15_000;

/// How often mongos sends a command again after a shard answered that it is not (or no longer)
/// primary: `Shard::kOnErrorNumRetries` (`mongodb/mongo:src/mongo/s/client/shard.h`); each
/// retry selects the primary anew, waiting for an election.
const NOT_PRIMARY_RETRIES: usize = 3;

/// The codes of a member that is not primary (any more): NotWritablePrimary,
/// NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary, PrimarySteppedDown, InterruptedDueToReplStateChange.
const NOT_PRIMARY: &[i32] = &[10107, 13435, 13436, 189, 11602];

/// A driver client for `hosts`: a replica-set connection when `set` is given (one member or
/// several: like mongos's replica set monitor, it waits for the set's primary), else direct.
pub(super) async fn client_for(
    peer: &crate::peer::Peer,
    hosts: &[String],
    set: Option<&str>,
    timeout_ms: u64,
) -> CmdResult<Client> {
    let timeouts = format!("serverSelectionTimeoutMS={timeout_ms}&connectTimeoutMS={timeout_ms}");
    let (opts, hosts) = match set {
        Some(s) => (format!("replicaSet={s}&{timeouts}"), hosts),
        None => (format!("directConnection=true&{timeouts}"), &hosts[..1]),
    };
    let uri = format!("mongodb://{}/?{opts}&maxPoolSize=64", hosts.join(","));
    let mut o = mongodb::options::ClientOptions::parse(uri.as_str())
        .await
        .map_err(|e| {
            CmdError::new(
                code::FAILED_TO_PARSE,
                format!("bad host list {}: {e}", hosts.join(",")),
            )
        })?;
    peer.secure(&mut o);
    Client::with_options(o).map_err(|e| CmdError::new(code::FAILED_TO_PARSE, e.to_string()))
}

/// Converts a driver error from a shard or the config server into the error mongos reports.
fn driver_error(e: mongodb::error::Error) -> CmdError {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => CmdError::new(c.code, c.message.clone()),
        // No primary within the wait: mongos's FailedToSatisfyReadPreference (133).
        ErrorKind::ServerSelection { message, .. } => CmdError::new(
            code::FAILED_TO_SATISFY_READ_PREFERENCE,
            format!(
                "Could not find host matching read preference {{ mode: \"primary\" }}: {message}"
            ),
        ),
        ErrorKind::Io(io) => CmdError::new(code::HOST_UNREACHABLE, io.to_string()),
        _ => CmdError::new(code::OPERATION_FAILED, e.to_string()),
    }
}

/// Runs one command, with the driver's error turned into mongos's. A member that answers it is
/// not primary (an election) gets the command again, up to [`NOT_PRIMARY_RETRIES`] times: the
/// driver has marked it unknown, so the next attempt waits for the set's new primary.
pub(super) async fn run_on(client: &Client, db: &str, cmd: Document) -> CmdResult {
    let mut retries = 0;
    loop {
        let answer = client.database(db).run_command(cmd.clone()).await;
        match answer.map_err(driver_error) {
            Err(e) if NOT_PRIMARY.contains(&e.code) && retries < NOT_PRIMARY_RETRIES => {
                retries += 1;
            }
            other => return other,
        }
    }
}

/// Runs a write, sent again after a not-primary answer only when it is a retryable write (the
/// client gave it a `txnNumber`), as mongos does: a plain write that reached a stepping-down
/// primary may have been applied, so mongos answers its error instead of risking it twice.
pub(super) async fn run_write(
    client: &Client,
    db: &str,
    cmd: Document,
    retryable: bool,
) -> CmdResult {
    if retryable {
        return run_on(client, db, cmd).await;
    }
    client
        .database(db)
        .run_command(cmd)
        .await
        .map_err(driver_error)
}

/// Runs a cursor-returning command and drains the cursor.
pub(super) async fn gather(client: &Client, db: &str, cmd: Document) -> CmdResult<Vec<Document>> {
    let d = run_on(client, db, cmd).await?;
    let cur = d
        .get_document("cursor")
        .map_err(|_| CmdError::new(code::INTERNAL_ERROR, "shard reply without a cursor"))?;
    let mut out: Vec<Document> = cur
        .get_array("firstBatch")
        .map(|a| a.iter().filter_map(|b| b.as_document().cloned()).collect())
        .unwrap_or_default();
    let mut id = cur.get_i64("id").unwrap_or(0);
    let ns = cur.get_str("ns").unwrap_or_default().to_string();
    let coll = ns
        .split_once('.')
        .map(|(_, c)| c.to_string())
        .unwrap_or_default();
    while id != 0 {
        let d = run_on(client, db, doc! {"getMore": id, "collection": coll.clone()}).await?;
        let cur = d
            .get_document("cursor")
            .map_err(|_| CmdError::new(code::INTERNAL_ERROR, "shard reply without a cursor"))?;
        if let Ok(a) = cur.get_array("nextBatch") {
            out.extend(a.iter().filter_map(|b| b.as_document().cloned()));
        }
        id = cur.get_i64("id").unwrap_or(0);
    }
    Ok(out)
}

/// Runs `cmd` on every one of `shards` at once, the answers in `shards`' order; the first
/// error in that order wins, as when the answers are taken one by one.
pub(super) async fn run_on_all(
    shards: &[ShardConn],
    db: &str,
    cmd: &Document,
) -> CmdResult<Vec<Document>> {
    let runs = shards.iter().map(|s| run_on(&s.client, db, cmd.clone()));
    join_all(runs).await.into_iter().collect()
}

/// [`gather`] on every one of `shards` at once, as [`run_on_all`] runs a command.
pub(super) async fn gather_all(
    shards: &[ShardConn],
    db: &str,
    cmd: &Document,
) -> CmdResult<Vec<Vec<Document>>> {
    let runs = shards.iter().map(|s| gather(&s.client, db, cmd.clone()));
    join_all(runs).await.into_iter().collect()
}
