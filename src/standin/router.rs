//! mongos: sharding metadata on the config server and CRUD routed to the shards.

use std::sync::Arc;

use mongodb::bson::Document;

use super::StandinError;
use super::cmderr::{CmdError, CmdResult};
use super::config::StandinConfig;
use super::server::Shared;

/// The router's state.
#[derive(Debug)]
pub struct Router {}

impl Router {
    /// Prepares a router for `--configdb`.
    pub fn new(_cfg: &StandinConfig) -> Result<Router, StandinError> {
        Ok(Router {})
    }

    /// Starts connecting to the config server in the background.
    pub fn start(&self, _shared: Arc<Shared>) {}

    /// Dispatches one mongos command.
    pub async fn command(
        &self,
        _shared: &Arc<Shared>,
        name: &str,
        _db: &str,
        _body: &Document,
    ) -> CmdResult {
        Err(CmdError::new(59, format!("no such command: '{name}'")))
    }
}
