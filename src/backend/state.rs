//! State files: one JSON file per running cluster, written before anything starts and updated
//! after every step, so `microshard down` (from any process) and `down --all` after a crash find
//! every pid, container, network and directory a run made.

use std::path::{Path, PathBuf};

use super::{BackendError, RunningCluster};

/// The directory holding state files: `$MICROSHARD_STATE_DIR`, else `$XDG_STATE_HOME/microshard`,
/// else `~/.local/state/microshard`.
pub(crate) fn state_dir() -> PathBuf {
    let var = |name| std::env::var_os(name).map(PathBuf::from);
    (var("MICROSHARD_STATE_DIR"))
        .or_else(|| Some(var("XDG_STATE_HOME")?.join("microshard")))
        .or_else(|| Some(var("HOME")?.join(".local/state/microshard")))
        .unwrap_or_else(|| std::env::temp_dir().join("microshard-state"))
}

/// The state file of a run.
pub fn state_path(run_id: &str) -> PathBuf {
    state_dir().join(format!("{run_id}.json"))
}

/// Writes the record atomically (temp file + rename).
pub(crate) fn write(cluster: &RunningCluster) -> Result<(), BackendError> {
    let path = &cluster.state_file;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            BackendError::io(
                format!("cannot create state directory {}", dir.display()),
                e,
            )
        })?;
    }
    let tmp = path.with_extension("json.tmp");
    // Stored URIs never carry a password.
    let mut stored = cluster.clone();
    stored.entry_uri = crate::redact::redact_uri(&stored.entry_uri);
    stored.plan.uri = stored.plan.uri.as_deref().map(crate::redact::redact_uri);
    let text =
        serde_json::to_string_pretty(&stored).map_err(|e| BackendError::State(e.to_string()))?;
    std::fs::write(&tmp, text)
        .map_err(|e| BackendError::io(format!("cannot write state file {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path)
        .map_err(|e| BackendError::io(format!("cannot write state file {}", path.display()), e))?;
    Ok(())
}

/// Reads one state file.
pub(crate) fn read(path: &Path) -> Result<RunningCluster, BackendError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BackendError::io(format!("cannot read state file {}", path.display()), e))?;
    let mut c: RunningCluster = serde_json::from_str(&text).map_err(|e| {
        BackendError::State(format!("state file {} is damaged: {e}", path.display()))
    })?;
    c.state_file = path.to_path_buf();
    Ok(c)
}

/// Every state file in the state directory, oldest first; unreadable ones are reported, not skipped silently.
pub(crate) fn list() -> Vec<(PathBuf, Result<RunningCluster, BackendError>)> {
    let Ok(rd) = std::fs::read_dir(state_dir()) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths.iter().map(|p| (p.clone(), read(p))).collect()
}

/// Every state record as [`list`] reads it, each member's state checked now: a process that is
/// gone is `stopped`, whatever the record says.
pub(crate) fn list_checked() -> Vec<(PathBuf, Result<RunningCluster, BackendError>)> {
    let mut all = list();
    for c in all.iter_mut().filter_map(|(_, r)| r.as_mut().ok()) {
        for m in &mut c.members {
            if let Some(pid) = m.handle.pid()
                && !super::process::stop::pid_alive(pid, m.port)
            {
                m.state = super::MemberState::Stopped;
            }
        }
    }
    all
}

/// The recorded clusters called `name` or whose run id is `name`.
pub(crate) fn matching(name: &str) -> Vec<RunningCluster> {
    list()
        .into_iter()
        .filter_map(|(_, r)| r.ok())
        .filter(|c| c.name == name || c.run_id == name)
        .collect()
}

/// The recorded clusters `wanted` names: a cluster's name, a run id, or the topology file it was
/// brought up from (its plan records the file, so nothing is loaded again). None is an error
/// naming `wanted` and the closest running cluster's name.
pub(crate) fn find(wanted: &str) -> Result<Vec<RunningCluster>, String> {
    let mut found = matching(wanted);
    if found.is_empty()
        && let Ok(file) = Path::new(wanted).canonicalize()
    {
        found = (list().into_iter().filter_map(|(_, r)| r.ok()))
            .filter(|c| c.plan.source.canonicalize().is_ok_and(|s| s == file))
            .collect();
    }
    if !found.is_empty() {
        return Ok(found);
    }
    let running: Vec<String> = list()
        .into_iter()
        .filter_map(|(_, r)| r.ok().map(|c| c.name))
        .collect();
    let hint = crate::suggest::closest(wanted, &running, |n| n.as_str())
        .map(|n| format!("; did you mean {n:?}?"))
        .unwrap_or_default();
    Err(format!(
        "no running cluster named {wanted:?}{hint} (see `microshard status`)"
    ))
}

/// Removes a state file (missing is fine).
pub(crate) fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{BackendKind, PlanOptions, TopologySpec};

    #[test]
    fn stored_state_never_holds_a_password_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let spec = TopologySpec::parse(
            "name = \"e\"\nkind = \"sharded\"\nshards_per_host = 1\nuri = \"mongodb://u:hunter2@localhost:1/\"\n",
            Path::new("e.toml"),
        )
        .unwrap();
        let opts = PlanOptions::new(&spec, BackendKind::Existing);
        let plan = crate::backend::plan(&spec, &opts).unwrap();
        let mut c = RunningCluster::from_plan(&plan, false);
        c.entry_uri = "mongodb://u:hunter2@localhost:1/".into();
        c.state_file = dir.path().join("e.json");
        write(&c).unwrap();
        let text = std::fs::read_to_string(&c.state_file).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        let back = read(&c.state_file).unwrap();
        assert_eq!(back.run_id, c.run_id);
        assert_eq!(back.entry_uri, "mongodb://u:****@localhost:1/");
    }
}
