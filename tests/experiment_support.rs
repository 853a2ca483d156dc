//! Helpers shared by the experiment end-to-end tests (included with `#[path]`; on its own it holds no tests).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The microshard binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_microshard"))
}

/// A directory with `mongod`/`mongos` symlinks to the microshard binary (the stand-in).
pub fn standin_bin_dir(root: &Path) -> PathBuf {
    let dir = root.join("bin");
    std::fs::create_dir_all(&dir).ok();
    for name in ["mongod", "mongos"] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        let _ = std::os::unix::fs::symlink(bin(), &link);
    }
    dir
}

/// A base port with `count` consecutive free loopback ports (probed, bounded attempts).
pub fn free_base_port(count: u16) -> u16 {
    for attempt in 0..200u32 {
        let base = 20_000 + ((std::process::id() * 7919 + attempt * 977) % 12_000) as u16;
        let all_free =
            (0..count).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok());
        if all_free {
            return base;
        }
    }
    panic!("no free port range found");
}

/// A `microshard` command with a private state directory and the workloads of this checkout.
pub fn microshard(state_dir: &Path) -> Command {
    let mut c = Command::new(bin());
    c.env("MICROSHARD_STATE_DIR", state_dir)
        .env("CI", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// The single run directory created under `results`.
pub fn run_dir(results: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(results)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        dirs.len(),
        1,
        "expected one run directory in {}: {dirs:?}",
        results.display()
    );
    dirs[0].clone()
}

/// Parses report.csv into header-keyed rows (the report's CSV never quotes these fields).
pub fn csv_rows(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "CSV row width: {l}");
            header
                .iter()
                .cloned()
                .zip(fields.iter().map(|f| f.to_string()))
                .collect()
        })
        .collect()
}

/// Asserts that nothing microshard started is still recorded as running.
pub fn assert_nothing_left(state_dir: &Path) {
    let left: Vec<PathBuf> = std::fs::read_dir(state_dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "state files left behind: {left:?}");
}
