//! Readiness, checked before anything starts (`docs/reliability.md` §1): what the servers need
//! from their backend (an engine with its images, a cluster that answers), and the client
//! engines a topology names, which run beside any backend.

use super::{BackendError, of};
use crate::events::Events;
use crate::topology::{BackendKind, Plan, TopologySpec};

/// What the readiness checks of one command are given.
pub(crate) struct Readiness<'a> {
    /// How messages name a topology (`--topologies`, `topology`).
    pub(crate) label: &'a str,
    /// Every topology as given and as loaded.
    pub(crate) specs: &'a [crate::topology::Loaded],
    /// Every topology's plan (none when its binaries are linked later).
    pub(crate) plans: &'a [(&'a str, &'a TopologySpec, Plan)],
    /// The image was chosen by `--image` (a refusal names the flag).
    pub(crate) image_flag: bool,
    /// Where an image pull says its progress (`None`: nowhere).
    pub(crate) pulls: Option<&'a dyn Events>,
    /// A dry run: nothing is pulled; a note says what the run would pull.
    pub(crate) dry_run: bool,
    /// The command measures on the servers (not `up`): where they can be reached only through
    /// the backend's own tunnel, the clients must run beside them (only Kubernetes's so far).
    #[cfg_attr(not(feature = "kubernetes"), allow(dead_code))]
    pub(crate) measured: bool,
}

/// What the servers need, ready: every client engine a topology names (checked after the
/// plans, which refuse clients that could not reach the cluster), then the backend's own.
pub(crate) async fn ready(kind: BackendKind, check: &Readiness<'_>) -> Result<(), BackendError> {
    for t in check.specs {
        let culprit = format!("{} {}", check.label, t.given);
        super::docker::ready::client_engines_ready(&culprit, &t.spec, check.dry_run, check.pulls)
            .await?;
    }
    of(kind).ready(check).await
}
