//! Creating a run in the cluster (its namespace, its Lease, then its server objects), and what a
//! failed or interrupted bring-up leaves: nothing, its namespace deleted with whatever was
//! created in it, unless `--keep`.

use k8s_openapi::jiff::Timestamp;

use super::error::KubeError;
use super::{apply, held, lease, namespace};
use crate::backend::BackendError;
use crate::topology::Plan;

/// Creates run `plan`'s namespace, its Lease held by `holder` from `now`, and its server
/// objects; returns the namespace. The objects are built first, so a refused plan (an unpinned
/// image) creates nothing; a failure after the namespace exists is for [`abandon`].
pub(crate) async fn provision(
    client: &kube::Client,
    plan: &Plan,
    holder: &str,
    now: Timestamp,
) -> Result<String, BackendError> {
    let labels = namespace::labels(plan);
    let objects = apply::objects(plan, &labels)?;
    let ns = namespace::create(client, plan).await?;
    lease::create(client, &ns, &lease::lease(&labels, holder, now)).await?;
    apply::create_all(client, &ns, &objects).await?;
    Ok(ns)
}

/// After bring-up of `plan` failed with `err`: stops what the run keeps going here and deletes
/// its namespace unless `keep` (then returns it, for the caller to name). A namespace of the
/// run's name that is not labelled as the run's was never created by it, and is left alone.
pub(crate) async fn abandon(
    client: &kube::Client,
    plan: &Plan,
    keep: bool,
    err: BackendError,
) -> (Option<String>, BackendError) {
    held::release(&plan.run_id);
    let ns = namespace::name(&plan.run_id);
    if keep {
        return (Some(ns), err);
    }
    match namespace::delete_if_ours(client, &ns, Some(&plan.run_id)).await {
        Ok(_) | Err(KubeError::NotOurs { .. }) => (None, err),
        Err(also) => (
            None,
            BackendError::Context {
                context: format!("{err}; deleting namespace {ns} after that also failed: {also}"),
                source: Box::new(err),
            },
        ),
    }
}
