//! How mongos talks to the shards and the config server: the official driver, with its errors
//! turned into the errors mongos reports.

use mongodb::bson::{Document, doc};
use mongodb::{Client, error::ErrorKind};

use crate::cmderr::{CmdError, CmdResult, code};

/// A driver client for `hosts`: a replica-set connection when `set` is given and there are several, else direct.
pub(super) async fn client_for(
    hosts: &[String],
    set: Option<&str>,
    timeout_ms: u64,
) -> CmdResult<Client> {
    let opts = match (hosts.len(), set) {
        (1, _) | (_, None) => format!(
            "directConnection=true&serverSelectionTimeoutMS={timeout_ms}&connectTimeoutMS={timeout_ms}"
        ),
        (_, Some(s)) => format!(
            "replicaSet={s}&serverSelectionTimeoutMS={timeout_ms}&connectTimeoutMS={timeout_ms}"
        ),
    };
    let hosts = if set.is_none() || hosts.len() == 1 {
        &hosts[..1]
    } else {
        hosts
    };
    let uri = format!("mongodb://{}/?{opts}&maxPoolSize=64", hosts.join(","));
    let o = mongodb::options::ClientOptions::parse(uri.as_str())
        .await
        .map_err(|e| {
            CmdError::new(
                code::FAILED_TO_PARSE,
                format!("bad host list {}: {e}", hosts.join(",")),
            )
        })?;
    Client::with_options(o).map_err(|e| CmdError::new(code::FAILED_TO_PARSE, e.to_string()))
}

/// Converts a driver error from a shard or the config server into the error mongos reports.
fn driver_error(e: mongodb::error::Error) -> CmdError {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => CmdError::new(c.code, c.message.clone()),
        ErrorKind::ServerSelection { message, .. } => {
            CmdError::new(code::HOST_UNREACHABLE, message.clone())
        }
        ErrorKind::Io(io) => CmdError::new(code::HOST_UNREACHABLE, io.to_string()),
        _ => CmdError::new(code::OPERATION_FAILED, e.to_string()),
    }
}

/// Runs one command, with the driver's error turned into mongos's.
pub(super) async fn run_on(client: &Client, db: &str, cmd: Document) -> CmdResult {
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
