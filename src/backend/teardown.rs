//! Teardown: one cluster ([`down`]), whatever its backend started, then its directories and its
//! state file; and `down --all`, every recorded cluster and every labelled object left behind.

use std::time::Duration;

use super::{Backend, BackendError, RunningCluster, labels, state};
use crate::events::{Event, Events};

/// The labels of an object microshard made, as a backend lists them.
pub(crate) type Labels = std::collections::HashMap<String, String>;

/// Tears the cluster down: `shutdown` mongos → shards → config, SIGTERM/SIGKILL (or container
/// stop/remove) as fallback, networks and anonymous volumes removed, directories removed unless
/// `keep`, state file removed. Never touches a cluster it did not start (existing). What it must
/// say (a member that did not go quietly, directories left on another machine) goes to `events`.
pub async fn down(cluster: &RunningCluster, events: &dyn Events) -> Result<(), BackendError> {
    down_with(cluster, Duration::from_secs(15), events).await
}

pub(crate) async fn down_with(
    cluster: &RunningCluster,
    stop_timeout: Duration,
    events: &dyn Events,
) -> Result<(), BackendError> {
    let backend = super::of(cluster.backend);
    // Client pods outside the run's own namespace outlive a CLI that died mid-phase: they go
    // first, as clients stop before their servers.
    #[cfg(feature = "kubernetes")]
    if backend.client_pods_home(&cluster.plan).is_none()
        && let Some(why) = super::kubernetes::client_jobs::remove(&cluster.plan).await
    {
        events.event(Event::Warning(format!("microshard: {why}")));
    }
    let result = backend.teardown(cluster, stop_timeout, events).await;
    if result.is_ok() {
        // Nothing runs any more: the state file goes even when a directory stays, and the
        // directories that could not be removed are the error.
        let left = remove_dirs(cluster, backend);
        if !cluster.keep {
            for line in backend.left_elsewhere(&cluster.plan) {
                events.event(Event::Warning(format!("microshard: {line}")));
            }
        }
        state::remove(&cluster.state_file);
        if !left.is_empty() {
            return Err(BackendError::Teardown(format!(
                "{} stopped, but could not remove {}",
                cluster.name,
                left.join("; ")
            )));
        }
    }
    result
}

/// Removes the directories the run created (unless `keep`); returns one line per directory
/// that could not be removed, with the reason — never swallowed: a container's entrypoint hands
/// bind-mounted data directories to uid 999, which the user running microshard may not delete.
fn remove_dirs(cluster: &RunningCluster, backend: &dyn Backend) -> Vec<String> {
    if cluster.keep {
        return Vec::new();
    }
    let mut left = Vec::new();
    for d in &cluster.created_dirs {
        // Log files outside the member directory are recorded here too.
        let removed = match std::fs::symlink_metadata(d) {
            Ok(meta) if !meta.is_dir() => std::fs::remove_file(d),
            _ => std::fs::remove_dir_all(d),
        };
        if let Err(e) = removed
            && e.kind() != std::io::ErrorKind::NotFound
        {
            let hint = match e.kind() {
                std::io::ErrorKind::PermissionDenied => backend.undeletable_hint(),
                _ => "",
            };
            left.push(format!("{}: {e}{hint}", d.display()));
        }
    }
    left
}

/// What `down --all` did: one line per cluster or object torn down, and the backends whose
/// labelled objects were not searched (so "nothing to tear down" is never said without knowing).
#[derive(Debug, Default)]
pub struct DownAll {
    /// One line per cluster (state file) or labelled object removed.
    pub done: Vec<String>,
    /// The backends that could not be searched.
    pub not_searched: Vec<NotSearched>,
}

/// A backend whose labelled objects `down --all` could not search.
#[derive(Debug)]
pub struct NotSearched {
    /// The backend's name in words (`Docker`).
    pub name: &'static str,
    /// Why, and what was not searched, one line.
    pub note: String,
}

/// Why a backend's search for labelled objects came back without them.
#[derive(Debug)]
pub(crate) enum LabelSearch {
    /// Where they live does not answer: a note for the user, not an error.
    Unreachable(NotSearched),
    /// Found, but not all removed: one line.
    Failed(String),
}

/// Tears down every run recorded in this user's state directory and every object labelled
/// with this user's owner id ([`labels::owner_id`]); with `any_owner`, every
/// microshard-labelled object, whoever made it.
pub(crate) async fn down_all(
    any_owner: bool,
    events: &dyn Events,
) -> Result<DownAll, BackendError> {
    let owner = labels::owner_id();
    let mine = |l: &Labels| any_owner || l.get(labels::LABEL_OWNER) == Some(&owner);
    down_matching(|_| true, &mine, events).await
}

/// Every state file and every microshard-labelled object (any owner) whose topology name
/// passes `keep`; tests use it so they never touch another run on the same engine.
pub async fn down_all_where(
    keep: impl Fn(&str) -> bool + Sync,
    events: &dyn Events,
) -> Result<Vec<String>, BackendError> {
    let labelled = |l: &Labels| l.get(labels::LABEL_CLUSTER).is_some_and(|c| keep(c));
    Ok(down_matching(&keep, &labelled, events).await?.done)
}

/// Tears down the clusters recorded in the state directory whose name passes `keep`, then
/// every backend's microshard objects whose labels pass `labelled`: one line per cluster or
/// object, and the backends that could not be searched.
async fn down_matching(
    keep: impl Fn(&str) -> bool,
    labelled: &(dyn Fn(&Labels) -> bool + Sync),
    events: &dyn Events,
) -> Result<DownAll, BackendError> {
    let mut all = DownAll::default();
    let mut errors = Vec::new();
    for (path, rec) in state::list() {
        match rec {
            Ok(c) if !keep(&c.name) => {}
            Ok(c) => match down(&c, events).await {
                Ok(()) => all
                    .done
                    .push(format!("{} (run {}, {})", c.name, c.run_id, c.backend)),
                Err(e) => errors.push(format!("{}: {e:#}", c.run_id)),
            },
            Err(e) => errors.push(format!("{}: {e:#}", path.display())),
        }
    }
    for backend in super::ALL {
        match super::of(backend).remove_labelled(labelled).await {
            Ok(removed) => all.done.extend(removed),
            Err(LabelSearch::Unreachable(n)) => all.not_searched.push(n),
            Err(LabelSearch::Failed(e)) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(all)
    } else {
        Err(BackendError::Teardown(errors.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Discard;
    use crate::topology::{BackendKind, TopologySpec};
    use std::path::Path;

    #[test]
    fn directories_that_cannot_be_removed_are_reported() {
        let root = tempfile::tempdir().unwrap();
        let spec =
            TopologySpec::parse("name = \"s\"\nkind = \"standalone\"\n", Path::new("t.toml"))
                .unwrap();
        let opts = crate::topology::PlanOptions {
            links_pending: false,
            backend: BackendKind::Docker,
            run_id: "t-1".into(),
            run_dir: root.path().join("run"),
            bin_dir: None,
            total_memory_gb: Some(9.0),
        };
        let plan = super::super::plan(&spec, &opts).unwrap();
        let mut c = RunningCluster::from_plan(&plan, false);
        let gone = root.path().join("gone");
        let file = root.path().join("a.log");
        std::fs::write(&file, "x").unwrap();
        // A directory whose parent forbids removal stands for one a container's uid 999 owns.
        let locked = root.path().join("locked");
        let inner = locked.join("db");
        std::fs::create_dir_all(&inner).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
        // Under a regular file: removing it fails for root too (not a directory).
        let under_file = root.path().join("plain");
        std::fs::write(&under_file, "x").unwrap();
        let impossible = under_file.join("db");
        c.created_dirs = vec![gone, file.clone(), impossible.clone(), inner.clone()];
        let left = remove_dirs(&c, super::super::of(BackendKind::Docker));
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!file.exists(), "a recorded log file is removed too");
        assert!(
            left[0].starts_with(&format!("{}: ", impossible.display())),
            "{left:?}"
        );
        if inner.exists() {
            // Not root: the permission failure is reported with the path and the likely cause.
            assert_eq!(left.len(), 2, "{left:?}");
            assert!(
                left[1].starts_with(&inner.display().to_string()),
                "{left:?}"
            );
            assert!(left[1].contains("uid 999"), "{left:?}");
        } else {
            // Root removes what the permissions protect: only the impossible one is reported.
            assert_eq!(left.len(), 1, "{left:?}");
        }
        // `down` turns them into its error, after removing the state file.
        c.created_dirs = vec![impossible.clone()];
        c.state_file = root.path().join("state.json");
        std::fs::write(&c.state_file, "{}").unwrap();
        c.backend = BackendKind::Existing;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let err = rt.block_on(down(&c, &Discard)).unwrap_err().to_string();
        assert!(
            err.contains("could not remove") && err.contains(&impossible.display().to_string()),
            "{err}"
        );
        assert!(!c.state_file.exists());
    }
}
