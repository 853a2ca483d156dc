//! Where a client pod ran (`clients = [{ kubernetes = ... }]`): its node, the digest of the image
//! it ran and its CPU limit, recorded in the result so two runs' clients can be compared and a
//! client that shared a server's node is never hidden.

/// One client pod's placement, as the Kubernetes API reported it when the pod ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientPod {
    /// The pod's name.
    pub pod: String,
    /// The node it ran on (`spec.nodeName`).
    pub node: String,
    /// The image it ran, by digest (`status.containerStatuses[].imageID`).
    pub image_digest: String,
    /// Its container's CPU limit (`resources.limits.cpu`), `None` when unlimited.
    pub cpu_limit: Option<String>,
    /// Whether it shared its node with a server pod of the run (only ever when the topology
    /// allows it: `allow_colocated = true`).
    pub colocated: bool,
}
