//! The run's server objects (the manifests' headless Services and StatefulSets, without the
//! admin Job: the backend runs the admin steps itself), labelled as the run's and created in its
//! namespace in start order.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use serde_json::Value;

use super::error::{KubeError, failed};
use crate::backend::BackendError;
use crate::topology::Plan;

/// The server objects of `plan`, each (and each pod template) carrying `labels` besides the
/// manifests' own.
pub(crate) fn objects(
    plan: &Plan,
    labels: &BTreeMap<String, String>,
) -> Result<Vec<Value>, BackendError> {
    let mut objects = super::super::manifests::servers(plan)?;
    for o in &mut objects {
        add_labels(&mut o["metadata"]["labels"], labels);
        if let Some(template) = o.pointer_mut("/spec/template/metadata/labels") {
            add_labels(template, labels);
        }
    }
    Ok(objects)
}

/// `labels` added to the label map `to`.
fn add_labels(to: &mut Value, labels: &BTreeMap<String, String>) {
    if let Value::Object(map) = to {
        for (k, v) in labels {
            map.insert(k.clone(), Value::from(v.as_str()));
        }
    }
}

/// Creates `objects` in namespace `ns`, in order; the first refusal stops it.
pub(crate) async fn create_all(
    client: &kube::Client,
    ns: &str,
    objects: &[Value],
) -> Result<(), KubeError> {
    let pp = PostParams::default();
    for o in objects {
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        let kind = o["kind"].as_str().unwrap_or_default();
        let what = format!("creating {kind} {name} in namespace {ns}");
        match kind {
            "Service" => {
                let typed: Service = typed(o, &what)?;
                Api::<Service>::namespaced(client.clone(), ns)
                    .create(&pp, &typed)
                    .await
                    .map_err(failed(what))?;
            }
            "StatefulSet" => {
                let typed: StatefulSet = typed(o, &what)?;
                Api::<StatefulSet>::namespaced(client.clone(), ns)
                    .create(&pp, &typed)
                    .await
                    .map_err(failed(what))?;
            }
            other => {
                return Err(KubeError::Internal(format!(
                    "{what}: the live backend creates no {other}"
                )));
            }
        }
    }
    Ok(())
}

/// `o` as the typed object the API takes.
fn typed<K: serde::de::DeserializeOwned>(o: &Value, what: &str) -> Result<K, KubeError> {
    serde_json::from_value(o.clone())
        .map_err(|e| KubeError::Internal(format!("{what}: the manifest does not read back: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{BackendKind, PlanOptions, TopologySpec};

    fn plan(image: &str) -> Plan {
        let toml = format!("name = \"s\"\nkind = \"standalone\"\nimage = \"{image}\"\n");
        let spec = TopologySpec::parse(&toml, std::path::Path::new("s.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut opts = PlanOptions::new(&spec, BackendKind::Kubernetes);
        opts.run_id = "s-1".into();
        crate::backend::plan(&spec, &opts).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn objects_and_their_pods_carry_the_run_s_labels_and_selectors_stay_the_manifests() {
        let labels: BTreeMap<String, String> =
            [("microshard.io/run".to_string(), "s-1".to_string())].into();
        let objects = objects(&plan("mongo:8.0"), &labels).unwrap_or_default();
        assert_eq!(objects.len(), 2, "a Service and a StatefulSet, no Job");
        for o in &objects {
            assert_eq!(o["metadata"]["labels"]["microshard.io/run"], "s-1", "{o}");
            assert_eq!(o["metadata"]["labels"]["microshard.run"], "s-1", "{o}");
        }
        let set = &objects[1];
        assert_eq!(
            set["spec"]["template"]["metadata"]["labels"]["microshard.io/run"],
            "s-1"
        );
        assert!(
            set["spec"]["selector"]["matchLabels"]
                .get("microshard.io/run")
                .is_none()
        );
        assert!(typed::<StatefulSet>(set, "x").is_ok());
        assert!(typed::<Service>(&objects[0], "x").is_ok());
    }

    #[test]
    fn an_unpinned_image_builds_no_object() {
        let e = objects(&plan("mongo:latest"), &BTreeMap::new())
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("pinned")));
    }
}
