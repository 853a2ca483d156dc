//! The labels on everything microshard makes outside its own process (containers, networks,
//! volumes; Kubernetes objects): the topology, the run, the member and who made it, so
//! `microshard down --all` finds what a run left behind, and only its owner's.

use std::collections::HashMap;
use std::path::Path;

/// Label naming the topology on every object microshard makes.
pub const LABEL_CLUSTER: &str = "microshard.cluster";
/// Label naming the run on every object microshard makes.
pub const LABEL_RUN: &str = "microshard.run";
/// Label naming the member on every object that runs one.
pub const LABEL_MEMBER: &str = "microshard.member";
/// Label naming who made an object ([`owner_id`]): `down --all` removes only the caller's own
/// leftovers unless asked for every owner's (`--any-owner`).
pub const LABEL_OWNER: &str = "microshard.owner";

/// Who makes the objects of this process: the user id and a hash of the state directory. Two
/// users of one engine, or one user with two state directories (tests), never share an owner, so
/// neither's `down --all` removes the other's running experiment.
pub(crate) fn owner_id() -> String {
    owner_id_for(&super::state::state_dir())
}

/// The owner id of this user with state directory `state_dir` (see [`owner_id`]).
pub fn owner_id_for(state_dir: &Path) -> String {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    // FNV-1a: stable across Rust versions and machines (std's hasher is not).
    let hash = state_dir
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    format!("uid{uid}-{hash:016x}")
}

/// The labels of an object of run `run` of topology `cluster` (and of `member`, when it runs
/// one), made by this process's owner.
pub(crate) fn labels(cluster: &str, run: &str, member: Option<&str>) -> HashMap<String, String> {
    let owner = owner_id();
    let labels = [
        (LABEL_CLUSTER, cluster),
        (LABEL_RUN, run),
        (LABEL_OWNER, &owner),
    ];
    labels
        .into_iter()
        .chain(member.map(|m| (LABEL_MEMBER, m)))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
