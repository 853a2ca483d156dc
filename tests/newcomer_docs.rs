//! What a newcomer reads points only at the repository: no document names an absolute path of
//! the machine it was written on, or the authors' shared material outside the clone.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every text file a reader is sent to: the README files, `docs/`, `workloads/`, `topologies/`.
fn documents() -> Vec<PathBuf> {
    let root = repo();
    let mut out: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "BENCHMARKS.md"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    for dir in ["docs", "workloads", "topologies"] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// Directories every machine has, which a document may name in an example (`/tmp/…`): a clone
/// under one of them does not make its examples machine paths.
const SYSTEM_DIRS: [&str; 8] = [
    "/tmp", "/var/tmp", "/var", "/home", "/root", "/usr", "/opt", "/mnt",
];

/// The absolute paths that would be this machine's: the clone and each directory above it, but
/// for the system's own directories.
fn machine_paths(root: &Path) -> Vec<String> {
    root.ancestors()
        .filter(|a| a.components().count() > 1)
        .filter(|a| !SYSTEM_DIRS.iter().any(|d| Path::new(d) == *a))
        .map(|a| format!("{}/", a.display()))
        .collect()
}

#[test]
fn a_clone_under_tmp_forbids_itself_not_tmp() {
    assert_eq!(
        machine_paths(Path::new("/tmp/x/microshard")),
        ["/tmp/x/microshard/", "/tmp/x/"]
    );
    assert_eq!(
        machine_paths(Path::new("/work/main")),
        ["/work/main/", "/work/"]
    );
}

#[test]
fn documents_name_no_path_outside_the_repository() {
    let root = repo();
    let mut forbidden = machine_paths(&root);
    forbidden.extend(["../shared".to_string(), "shared/seeds".to_string()]);
    let mut found = Vec::new();
    let docs = documents();
    assert!(docs.len() > 10, "{docs:?}");
    for file in docs {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            for f in &forbidden {
                if line.contains(f.as_str()) {
                    found.push(format!("{}:{}: {f}", file.display(), i + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "paths outside the repository:\n{}",
        found.join("\n")
    );
}

/// The source files of everything that renders a verdict to a reader: reports, experiments and
/// the command line.
fn renderers() -> Vec<PathBuf> {
    let root = repo();
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["src/report", "src/experiment", "src/cli"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// One vocabulary (README, "Results you can trust"): a result is valid, degraded, invalid, not
/// run or interrupted. "Not valid" lumped degraded figures — usable with their caveat — with
/// invalid ones (the `!` legend, the page's Validity section, `rerun`, the vary
/// legend), so neither the renderers nor the documents say it at all.
#[test]
fn nothing_a_reader_sees_calls_a_result_not_valid() {
    let files: Vec<PathBuf> = renderers().into_iter().chain(documents()).collect();
    assert!(files.len() > 60, "{files:?}");
    let mut found = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        // Joined across line breaks, so a sentence wrapped between the two words is caught too.
        let words: Vec<&str> = text.split_whitespace().collect();
        for pair in words.windows(2) {
            let word = |w: &str| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            };
            if word(pair[0]) == "not" && word(pair[1]) == "valid" {
                found.push(format!("{}: {} {}", file.display(), pair[0], pair[1]));
            }
        }
    }
    assert!(
        found.is_empty(),
        "say degraded, invalid or not run:\n{}",
        found.join("\n")
    );
}
