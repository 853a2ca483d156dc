//! CPU sets a topology gives its members and its client, checked against the CPUs this process
//! may run on (its affinity mask), for members that run here: the kernel would refuse them only
//! when the member starts (`docs/topologies.md`).

use std::collections::BTreeSet;

use rustix::thread::{CpuSet, sched_getaffinity};

use super::TopologySpec;

/// True for the local Docker engine (no endpoint, or a unix socket).
pub(crate) fn local_engine(endpoint: Option<&str>) -> bool {
    endpoint.is_none_or(|e| e.starts_with("unix://"))
}

/// The CPUs this process may run on (its affinity mask), which is what `sched_setaffinity` and
/// Docker's `cpuset_cpus` accept here. `None` when the kernel does not say.
pub(crate) fn cpus_here() -> Option<BTreeSet<usize>> {
    let set = sched_getaffinity(None).ok()?;
    Some((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Renders a CPU set as ranges (`0-3,6`) for messages.
fn cpu_ranges(cpus: &BTreeSet<usize>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut it = cpus.iter().copied().peekable();
    while let Some(start) = it.next() {
        let mut end = start;
        while it.peek() == Some(&(end + 1)) {
            end += 1;
            it.next();
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

/// Refuses CPU sets naming CPUs this machine does not offer, for members that run here (the
/// kernel would refuse them only when the member starts). Only for a backend that starts its
/// servers: an existing cluster's CPU sets are not microshard's.
pub(crate) fn check_cpusets(name: &str, spec: &TopologySpec) -> Result<(), String> {
    let Some(here) = cpus_here() else {
        return Ok(());
    };
    let runs_here = |i: usize| {
        spec.hosts.get(i).is_some_and(|h| {
            let loopback = h
                .address
                .parse()
                .is_ok_and(|ip: std::net::IpAddr| ip.is_loopback());
            (h.address == "localhost" || loopback) && local_engine(h.docker.as_deref())
        })
    };
    let mut sets: Vec<(String, &str)> = Vec::new();
    for (i, h) in spec.hosts.iter().enumerate() {
        if runs_here(i) {
            for c in &h.shard_cpusets {
                sets.push((format!("hosts[{i}].shard_cpusets"), c));
            }
        }
    }
    if runs_here(0) {
        if let Some(c) = &spec.config_servers.cpuset {
            sets.push(("config_servers.cpuset".into(), c));
        }
        if let Some(c) = &spec.mongos.cpuset {
            sets.push(("mongos.cpuset".into(), c));
        }
    }
    if let Some(c) = &spec.client_cpuset {
        sets.push(("client_cpuset".into(), c));
    }
    for (key, set) in sets {
        let cpus = super::parse_cpuset(set).map_err(|m| format!("{name}: {key}: {m}"))?;
        if let Some(missing) = cpus.iter().find(|c| !here.contains(c)) {
            return Err(format!(
                "{}: {key}: {set:?} names CPU {missing}, which this machine does not offer (CPUs here: {})",
                spec.source.display(),
                cpu_ranges(&here)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn cpu_ranges_read_like_cpusets() {
        let set: BTreeSet<usize> = [0, 1, 2, 3, 6, 8, 9].into_iter().collect();
        assert_eq!(cpu_ranges(&set), "0-3,6,8-9");
        let here = cpus_here().unwrap_or_default();
        assert!(!here.is_empty());
    }

    #[test]
    fn cpusets_beyond_this_machine_are_refused_naming_the_key() {
        let Some(here) = cpus_here() else { return };
        let beyond = here.iter().max().copied().unwrap_or(0) + 1;
        let text = format!(
            "name = \"cs\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"localhost\"\nshard_cpusets = [\"{beyond}\"]\n"
        );
        let spec = TopologySpec::parse(&text, Path::new("cs.toml")).unwrap();
        let e = check_cpusets("cs", &spec).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains("cs.toml") && msg.contains("hosts[0].shard_cpusets"),
            "{msg}"
        );
        let fine = text.replace(&format!("\"{beyond}\""), &format!("\"{}\"", beyond - 1));
        let spec = TopologySpec::parse(&fine, Path::new("cs.toml")).unwrap();
        check_cpusets("cs", &spec).unwrap();
    }
}
