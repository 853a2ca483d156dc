//! Helpers shared by the reliability tests (a module folder, so it is not a test of its own).

use std::path::Path;

/// Pids of processes (other than this test) whose command line or working directory mentions `root`.
pub fn processes_referring_to(root: &Path) -> Vec<(u32, String)> {
    let needle = root.to_string_lossy().into_owned();
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        let cwd = std::fs::read_link(e.path().join("cwd"))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Zombies (state Z) hold no port, file or directory; only the living count.
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|st| {
                st.rsplit(')')
                    .next()
                    .map(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(false);
        if !zombie && (cmdline.contains(&needle) || cwd.starts_with(&needle)) {
            out.push((pid, cmdline));
        }
    }
    out
}
