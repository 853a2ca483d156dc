//! Docker readiness, checked before anything starts (`docs/reliability.md` §1): every engine a
//! topology names answers and has (or can pull) the images it needs; a dry run pulls nothing
//! and says what the run would pull.

use std::collections::BTreeSet;

use crate::backend::{BackendError, Readiness};
use crate::events::{Discard, Event, Events};
use crate::topology::TopologySpec;

/// The Docker engine(s) answer and have (or can pull) every image the topologies use; a dry run
/// only says which it would pull.
pub(crate) async fn images(check: &Readiness<'_>) -> Result<(), BackendError> {
    let (image_flag, pulls, dry_run) = (check.image_flag, check.pulls, check.dry_run);
    let mut wanted: BTreeSet<(Option<String>, String)> = BTreeSet::new();
    for t in check.specs {
        for h in &t.spec.hosts {
            wanted.insert((h.docker.clone(), t.spec.image.clone()));
        }
    }
    let mut engines = std::collections::BTreeMap::new();
    let events = pulls.unwrap_or(&Discard);
    for (endpoint, image) in wanted {
        if !engines.contains_key(&endpoint) {
            let d = super::connect(endpoint.as_deref())
                .await
                .map_err(|e| BackendError::BadInput(format!("--backend docker: {e}")))?;
            engines.insert(endpoint.clone(), d);
        }
        let docker = &engines[&endpoint];
        if dry_run {
            would_pull(docker, endpoint.as_deref(), &image, events).await;
            continue;
        }
        super::ensure_image(docker, endpoint.as_deref(), &image, events)
            .await
            .map_err(|e| match image_flag {
                // The error names the image; say which flag chose it.
                true => BackendError::BadInput(format!("--image: {e}")),
                false => BackendError::BadInput(e.to_string()),
            })?;
    }
    Ok(())
}

/// Every client engine a topology names (`clients`) answers and has the client image (pulled
/// when a registry has it), so no cell starts clients that cannot run.
pub(crate) async fn client_engines_ready(
    culprit: &str,
    spec: &TopologySpec,
    dry_run: bool,
    notes: Option<&dyn Events>,
) -> Result<(), BackendError> {
    for (i, c) in spec.clients.iter().enumerate() {
        let key = format!("{culprit}: clients[{i}].docker = {:?}", c.docker);
        let docker = super::connect(Some(&c.docker))
            .await
            .map_err(|e| BackendError::BadInput(format!("{key}: {e}")))?;
        let (endpoint, image) = (Some(c.docker.as_str()), &spec.client_image);
        if dry_run {
            would_pull(&docker, endpoint, image, notes.unwrap_or(&Discard)).await;
            continue;
        }
        let pulled = super::ensure_image(&docker, endpoint, image, &Discard).await;
        pulled.map_err(|e| {
            BackendError::BadInput(format!(
                "{key}: client_image: {e}; build it on that engine with `DOCKER_HOST={} microshard standin image --tag {image}`",
                c.docker
            ))
        })?;
    }
    Ok(())
}

/// A dry run's note for an image the engine lacks: the real run pulls it (and refuses when no
/// registry has it).
async fn would_pull(
    docker: &bollard::Docker,
    endpoint: Option<&str>,
    image: &str,
    events: &dyn Events,
) {
    if !super::image_present(docker, image).await {
        events.event(Event::Note(format!(
            "microshard: note: image {image} is not on {}; the run would pull it",
            super::endpoint_label(endpoint)
        )));
    }
}
