//! Whether this machine reaches the members a deployment advertises (`hello.hosts` of a replica
//! set, the shard strings of `listShards`): on Docker Compose and Kubernetes clusters those names
//! resolve only inside the cluster's network, and probing them would call every member silent
//! and every run invalid. A member not reached before the run is named, with why, and left out
//! of the probes: the entry point's probe and the stall rule still watch the run
//! (`docs/mongodb-versions.md`, "Advertised names").

use std::time::Duration;

use mongodb::Database;
use mongodb::bson::{Document, doc};
use mongodb::options::ClientOptions;

use super::dial::Dial;

/// How long an advertised member has to answer before the run.
const PATIENCE: Duration = Duration::from_secs(3);

/// Why `address` cannot be probed from here, or `None` when it answers `hello` (or `isMaster`)
/// dialled as `dial` says.
pub(crate) async fn unreached(address: &str, dial: &Dial) -> Option<String> {
    if tokio::net::lookup_host(address).await.is_err() {
        return Some("does not resolve here".into());
    }
    let answer = tokio::time::timeout(PATIENCE + Duration::from_secs(1), ask(address, dial)).await;
    match answer {
        Ok(Ok(())) => None,
        Ok(Err(why)) => Some(format!("does not answer from here ({why})")),
        Err(_) => Some(format!(
            "does not answer from here (nothing within {} s)",
            PATIENCE.as_secs()
        )),
    }
}

async fn ask(address: &str, dial: &Dial) -> Result<(), String> {
    let mut options = ClientOptions::parse(dial.member_uri(address))
        .await
        .map_err(|e| super::errors::describe(&e))?;
    options.server_selection_timeout = Some(PATIENCE);
    options.connect_timeout = Some(PATIENCE);
    options.app_name = Some("microshard-probe".into());
    let client = mongodb::Client::with_options(options).map_err(|e| super::errors::describe(&e))?;
    let outcome = hello(&client.database("admin")).await;
    client.shutdown().immediate(true).await;
    outcome.map(|_| ()).map_err(|e| super::errors::describe(&e))
}

/// `hello`, or `isMaster` from a server that answers it CommandNotFound (4.4.0, 4.4.1), with
/// `isWritablePrimary` set from its `ismaster`.
pub(crate) async fn hello(admin: &Database) -> mongodb::error::Result<Document> {
    match admin.run_command(doc! {"hello": 1}).await {
        Err(e) if super::errors::command_code(&e) == Some(59) => {
            let mut d = admin.run_command(doc! {"isMaster": 1}).await?;
            if let Ok(p) = d.get_bool("ismaster") {
                d.insert("isWritablePrimary", p);
            }
            Ok(d)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_name_that_does_not_resolve_is_said_so_at_once() {
        // `.invalid` is reserved never to resolve (RFC 2606).
        let why = unreached("sh1-0.invalid:27018", &Dial::default()).await;
        assert_eq!(why.as_deref(), Some("does not resolve here"));
        // A port nobody listens on resolves but does not answer.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let why = unreached(&format!("127.0.0.1:{port}"), &Dial::default()).await;
        assert!(why.unwrap().starts_with("does not answer from here"));
    }
}
