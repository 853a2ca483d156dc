//! Helpers shared by the reliability tests (a module folder, so it is not a test of its own).
// Each test binary uses only some of these helpers.
#![allow(dead_code)]

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

/// The first of `count` consecutive free loopback ports. Spread by pid and by call, so tests
/// running at the same time rarely collide; `lowest` keeps test binaries apart.
pub fn free_base_port(lowest: u16, count: u16) -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    for _ in 0..200u32 {
        let attempt = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = lowest
            + (std::process::id()
                .wrapping_mul(7907)
                .wrapping_add(attempt.wrapping_mul(953))
                % 28_000) as u16;
        if (0..count).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
    panic!("no free port range");
}

/// Every Docker container (running or not), network and volume labelled `label=value`.
pub async fn docker_objects_labelled(d: &bollard::Docker, label: &str, value: &str) -> Vec<String> {
    use bollard::query_parameters::{
        ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
    };
    let mut filters = std::collections::HashMap::new();
    filters.insert("label", vec![format!("{label}={value}")]);
    let mut out = Vec::new();
    for c in d
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .expect("list containers")
    {
        out.push(format!("container {:?} ({:?})", c.names, c.state));
    }
    for n in d
        .list_networks(Some(
            ListNetworksOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .expect("list networks")
    {
        out.push(format!("network {:?}", n.name));
    }
    for v in d
        .list_volumes(Some(
            ListVolumesOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .expect("list volumes")
        .volumes
        .unwrap_or_default()
    {
        out.push(format!("volume {}", v.name));
    }
    out
}

/// A small multi-threaded runtime for the in-process stand-ins and Docker calls of a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}
