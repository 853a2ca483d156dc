//! The members whose CPU their backend reads itself (containers, through their engine) because
//! `/proc` on this machine cannot find them: what a cell's server CPU sums next to the local
//! members found by pid and port (`measure::host_load`).

use std::collections::BTreeMap;

use super::{RunningCluster, RunningMember, of};
use crate::topology::BackendKind;

/// A running cluster's members and the backend that reads their CPU; the default reads none
/// (a cell measured against a URI, a fake lab).
#[derive(Debug, Clone, Default)]
pub struct MemberCpu {
    backend: Option<BackendKind>,
    members: Vec<RunningMember>,
}

impl MemberCpu {
    /// The members of `cluster`, read by its backend.
    pub fn of(cluster: &RunningCluster) -> Self {
        MemberCpu {
            backend: Some(cluster.backend),
            members: cluster.members.clone(),
        }
    }

    /// Each member's cumulative CPU nanoseconds now, by name, for those its backend could
    /// read; a member absent here is left to `/proc`, or named as missing.
    pub async fn read(&self) -> BTreeMap<String, u64> {
        match self.backend {
            Some(kind) if !self.members.is_empty() => of(kind).member_cpu_ns(&self.members).await,
            _ => BTreeMap::new(),
        }
    }
}
