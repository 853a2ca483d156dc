//! The live Kubernetes backend (the `kubernetes` cargo feature): `up` creates a namespace per
//! run with a Lease this process renews, the topology's Services and StatefulSets in it, waits
//! for their pods and assembles the cluster through port-forwards; `down` deletes the
//! namespace; `down --all` deletes every microshard namespace whose Lease expired
//! (`docs/kubernetes.md`, "The live backend").

mod apply;
mod cpus;
mod current;
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
pub(crate) use namespace::name as namespace_of;
pub(crate) use up::up;

use current::connect_current;

use crate::backend::BackendError;
use crate::topology::Plan;

/// What refuses a plan before any cluster is asked: objects that do not build (an unpinned
/// image); a measurement without client pods (its traffic would cross the API server's
/// port-forward, measuring the API server); client pods in another cluster than the servers'
/// (they dial the members' in-cluster names, and keep off the server pods' nodes by the pods'
/// labels).
fn buildable(plans: &[&Plan], measured: bool) -> Result<(), BackendError> {
    let current = super::connect::current_context();
    for plan in plans {
        apply::objects(plan, &namespace::labels(plan))?;
        if measured && plan.client_pods.is_none() {
            return Err(BackendError::BadInput(format!(
                "{}: --backend kubernetes measures from inside the cluster: add clients = [{{ kubernetes = {:?}, count = 1 }}] and a client_image the nodes can pull (a microshard image built with the kubernetes feature); measured through the API server's port-forward, a figure would be the API server's",
                plan.source.display(),
                current.as_deref().unwrap_or(super::connect::IN_CLUSTER)
            )));
        }
        if let Some(pods) = &plan.client_pods
            && !same_cluster(&pods.context, current.as_deref())
        {
            return Err(BackendError::BadInput(format!(
                "{}: clients = [{{ kubernetes = {:?} }}] with --backend kubernetes: the client pods run beside the servers, in the cluster of the current kubeconfig context ({}): name that context",
                plan.source.display(),
                pods.context,
                current.as_deref().unwrap_or("none: in a pod, in-cluster")
            )));
        }
    }
    Ok(())
}

/// Whether client pods of `context` run in the cluster the servers are brought up in: the
/// current context's, or this pod's own when there is no kubeconfig.
fn same_cluster(context: &str, current: Option<&str>) -> bool {
    match current {
        Some(c) => context == c,
        None => context == super::connect::IN_CLUSTER,
    }
}

/// Before anything starts: every plan is [`buildable`], and the API server answers.
pub(crate) async fn ready(plans: &[&Plan], measured: bool) -> Result<(), BackendError> {
    buildable(plans, measured)?;
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
    fn unpinned_images_are_refused_before_any_cluster_is_asked() {
        assert!(buildable(&[&plan("image = \"mongo:8.0\"\n")], false).is_ok());
        let e = buildable(&[&plan("image = \"mongo\"\n")], false).err();
        assert!(e.is_some_and(|e| e.is_bad_input() && e.to_string().contains("pinned")));
    }

    #[test]
    fn a_measurement_without_client_pods_is_refused_never_taken_through_the_api_server() {
        let bare = plan("image = \"mongo:8.0\"\n");
        let e = buildable(&[&bare], true).err().map(|e| e.to_string());
        let e = e.unwrap_or_default();
        assert!(
            e.starts_with("s.toml: --backend kubernetes measures from inside the cluster"),
            "{e}"
        );
        assert!(buildable(&[&bare], false).is_ok(), "up only brings it up");
    }

    #[test]
    fn client_pods_run_in_the_cluster_of_the_servers() {
        assert!(same_cluster("lab", Some("lab")));
        assert!(!same_cluster("other", Some("lab")));
        assert!(same_cluster("in-cluster", None));
        assert!(!same_cluster("lab", None));
    }

    #[test]
    fn client_pods_dial_the_members_in_cluster_names_from_the_run_s_namespace() {
        let pods = "kind = \"sharded\"\nshards_per_host = 2\nimage = \"mongo:8.0\"\nclient_image = \"ghcr.io/o/microshard:0.1.0\"\nclients = [{ kubernetes = \"lab\", count = 2 }]\n";
        let toml = format!("name = \"s\"\n{pods}");
        let spec = TopologySpec::parse(&toml, std::path::Path::new("s.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut opts = PlanOptions::new(&spec, BackendKind::Kubernetes);
        opts.run_id = "s-20261207-101500-ab12".into();
        let plan = crate::backend::plan(&spec, &opts).unwrap_or_else(|e| panic!("{e}"));
        let home = crate::backend::of(BackendKind::Kubernetes).client_pods_home(&plan);
        let home = home.unwrap_or_else(|| panic!("no home"));
        assert_eq!(home.namespace, "s-20261207-101500-ab12");
        assert!(
            home.uri.starts_with("mongodb://s-mongos-0.s-mongos:27017"),
            "{}",
            home.uri
        );
    }
}
