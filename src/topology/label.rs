//! The name a topology is shown by (tables, legends, titles, cell directories): never the path
//! it was given as (`docs/architecture.md`).

use super::Plan;

/// True when a topology was given as a file rather than by the name of a shipped one.
fn is_path(given: &str) -> bool {
    given.contains('/') || given.contains('\\') || given.ends_with(".toml")
}

/// The name a topology is shown by: the `name` its plan recorded, else the `name` in its file,
/// else the file stem when it was given as a path (`/home/me/single.toml` → `single`), else what
/// was given. Tables, legends and titles show names, never paths.
pub(crate) fn topology_label(given: &str, plan: Option<&Plan>) -> String {
    if let Some(p) = plan.filter(|p| !p.name.trim().is_empty()) {
        return p.name.clone();
    }
    if !is_path(given) {
        return given.to_string();
    }
    let path = std::path::Path::new(given);
    let from_file = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|t| t.get("name").and_then(|n| n.as_str()).map(str::to_string))
        .filter(|n| !n.trim().is_empty());
    from_file
        .or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| given.to_string())
}
