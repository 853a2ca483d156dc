//! Client pods (a topology's `clients = [{ kubernetes = "CONTEXT", count = N }]`): a phase's
//! clients as one Indexed Job in a Kubernetes cluster, for clusters whose entry point resolves
//! only inside it. The split, the barrier and the merge stay `runner::fanout`'s; this module
//! builds the Job ([`job`]), calls the API ([`api`]) and reads each pod's placement ([`pods`])
//! (`docs/kubernetes.md`, "Client pods").

pub(crate) mod api;
pub(crate) mod job;
pub(crate) mod launch;
/// Shared with the live backend's tests (`backend::kubernetes`).
#[cfg(test)]
pub(crate) mod mock;
pub(crate) mod pods;

pub(crate) use crate::backend::kubernetes::connect::connect;
