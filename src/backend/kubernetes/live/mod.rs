//! The live Kubernetes backend (the `kubernetes` cargo feature): `up` creates a namespace per
//! run with a Lease this process renews, the topology's Services and StatefulSets in it, waits
//! for their pods and assembles the cluster through port-forwards; `down` deletes the
//! namespace; `down --all` deletes every microshard namespace whose Lease expired
//! (`docs/kubernetes.md`, "The live backend").

mod apply;
mod cpus;
mod down;
mod error;
mod forward;
mod held;
mod lease;
mod namespace;
mod pods;
mod provision;
#[cfg(test)]
mod tests;
mod up;

pub(crate) use down::{down_named, remove_expired, teardown};
pub use error::KubeError;
pub(crate) use up::up;

use super::connect::connect_current;

use crate::backend::BackendError;
use crate::topology::Plan;

/// Why client pods are refused with the live backend: not built yet.
pub(crate) const CLIENT_PODS_NOT_BUILT: &str = "clients = [{ kubernetes = ... }] with --backend kubernetes is not built yet: the entry point is this machine's port-forward, which pods cannot dial; apply `up --emit-manifests` yourself and use --backend existing with the mongos's in-cluster address";

/// What refuses a plan before any cluster is asked: objects that do not build (an unpinned
/// image), client pods.
fn buildable(plans: &[&Plan]) -> Result<(), BackendError> {
    for plan in plans {
        apply::objects(plan, &namespace::labels(plan))?;
        if plan.client_pods.is_some() {
            return Err(BackendError::BadInput(format!(
                "{}: {CLIENT_PODS_NOT_BUILT}",
                plan.source.display()
            )));
        }
    }
    Ok(())
}

/// Before anything starts: every plan is [`buildable`], and the API server answers.
pub(crate) async fn ready(plans: &[&Plan]) -> Result<(), BackendError> {
    buildable(plans)?;
    let refuse = |why: String| BackendError::BadInput(format!("--backend kubernetes: {why}"));
    let client = connect_current().await.map_err(|e| {
        refuse(format!(
            "{e}, or print the topology's manifests with --emit-manifests"
        ))
    })?;
    client.apiserver_version().await.map_err(|e| {
        refuse(format!(
            "the Kubernetes cluster does not answer: {}",
            crate::backend::docker::one_line(e)
        ))
    })?;
    Ok(())
}

#[cfg(test)]
mod refusals {
    use super::*;
    use crate::topology::{BackendKind, PlanOptions, TopologySpec};

    fn plan(extra: &str) -> Plan {
        let toml = format!("name = \"s\"\nkind = \"standalone\"\n{extra}");
        let spec = TopologySpec::parse(&toml, std::path::Path::new("s.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
        let opts = PlanOptions::new(&spec, BackendKind::Kubernetes);
        crate::backend::plan(&spec, &opts).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn unpinned_images_and_client_pods_are_refused_before_any_cluster_is_asked() {
        assert!(buildable(&[&plan("image = \"mongo:8.0\"\n")]).is_ok());
        let e = buildable(&[&plan("image = \"mongo\"\n")]).err();
        assert!(e.is_some_and(|e| e.is_bad_input() && e.to_string().contains("pinned")));
        let pods = "client_image = \"ghcr.io/o/microshard:0.1.0\"\nclients = [{ kubernetes = \"lab\", count = 2 }]\n";
        let e = buildable(&[&plan(pods)])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("s.toml: clients = [{ kubernetes"), "{e}");
        assert!(e.contains("not built yet"), "{e}");
    }
}
