//! A connected client kept between phases that ask for the same connection: a ceiling search's
//! steps then share one pool, its connections opened once and warm, as a long-running
//! application's are, instead of a new client and pool per step (`docs/ceiling.md`, "Steps").
//! And the deletion of a phase's inserted keys, so the next phase starts from the same data.

use std::sync::Arc;

use crate::db::{BindingSettings, DbError, MongoBinding};
use crate::events::Sink;
use crate::measure::KeySpan;
use crate::runner::RunError;
use crate::workload::{CoreWorkload, Properties};

/// The client last connected (empty until a phase connects).
#[derive(Debug, Clone, Default)]
pub struct Reuse(Arc<tokio::sync::Mutex<Option<MongoBinding>>>);

impl Reuse {
    /// The kept client when it was connected with the same settings, else a new one (kept in
    /// its place).
    pub(crate) async fn connect(
        &self,
        settings: BindingSettings,
        events: Sink,
    ) -> Result<MongoBinding, DbError> {
        let mut kept = self.0.lock().await;
        if let Some(b) = kept.as_ref().filter(|b| same(b.settings(), &settings)) {
            return Ok(b.clone());
        }
        let binding = MongoBinding::connect_with(settings, events).await?;
        *kept = Some(binding.clone());
        Ok(binding)
    }
}

/// The same connection string (pool size included) and the same insert behaviour.
fn same(a: &BindingSettings, b: &BindingSettings) -> bool {
    a.resolved.url == b.resolved.url && a.batch_size == b.batch_size && a.upsert == b.upsert
}

/// Keys deleted per command.
const DELETE_BATCH: usize = 1_000;

/// Deletes the documents of `keys`, named as the workload of `props` names its keys, through
/// `uri` (reusing the kept client); the number deleted.
pub async fn remove_inserted(
    props: &Properties,
    uri: &str,
    keys: KeySpan,
    reuse: &Reuse,
) -> Result<u64, RunError> {
    let workload = CoreWorkload::from_properties(props).map_err(RunError::as_bad_input)?;
    let settings =
        BindingSettings::from_properties(props, 1, Some(uri)).map_err(RunError::as_bad_input)?;
    let binding = reuse
        .connect(settings, crate::events::Discard::sink())
        .await
        .map_err(RunError::Db)?;
    let mut client = binding.client(workload.table());
    let mut deleted = 0;
    let mut batch = Vec::with_capacity(DELETE_BATCH);
    for k in keys.first..keys.end {
        batch.push(workload.key_name(k));
        if batch.len() == DELETE_BATCH || k + 1 == keys.end {
            deleted += client.delete_keys(&batch).await.map_err(RunError::Db)?;
            batch.clear();
        }
    }
    Ok(deleted)
}
