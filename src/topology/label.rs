//! The name a topology is shown by (tables, legends, titles, cell directories): never the path
//! it was given as (`docs/architecture.md`). It is decided once, when the topology loads
//! ([`Loaded`]), and stored with the experiment; nothing here reads a file.

use super::{Plan, TopologySpec};

/// True when a topology was given as a file rather than by the name of a shipped one.
fn is_path(given: &str) -> bool {
    given.contains('/') || given.contains('\\') || given.ends_with(".toml")
}

/// A topology as the servers check loaded it (`preflight::servers`): what it was given as (a
/// name or a file), the name it is shown by and filed under, decided here once, and its spec
/// with the flags applied. Commands bring up and plan from this value; no file is read again.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// As given on the command line or in the record.
    pub given: String,
    /// The name it is shown by ([`loaded_name`]).
    pub name: String,
    /// `--mongod-arg`, `--image` and `--base-port` applied.
    pub spec: TopologySpec,
}

impl Loaded {
    /// `spec` loaded from `given`, named.
    pub(crate) fn new(given: &str, spec: TopologySpec) -> Loaded {
        let name = loaded_name(given, &spec);
        Loaded {
            given: given.to_string(),
            name,
            spec,
        }
    }
}

/// The name a loaded topology is shown by: the `name` in its file when it was given as a file,
/// else what was given.
fn loaded_name(given: &str, spec: &TopologySpec) -> String {
    match is_path(given) {
        true => spec.name.clone(),
        false => given.to_string(),
    }
}

/// The name a topology is shown by when none was stored as it loaded: the `name` its plan
/// recorded, else the file stem when it was given as a path (`/home/me/single.toml` →
/// `single`), else what was given.
pub(crate) fn topology_label(given: &str, plan: Option<&Plan>) -> String {
    if let Some(p) = plan.filter(|p| !p.name.trim().is_empty()) {
        return p.name.clone();
    }
    let stem = std::path::Path::new(given).file_stem();
    match stem.map(|s| s.to_string_lossy()).filter(|s| !s.is_empty()) {
        Some(stem) if is_path(given) => stem.into_owned(),
        _ => given.to_string(),
    }
}
