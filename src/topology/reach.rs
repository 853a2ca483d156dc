//! Can the client containers reach the cluster? Clients on the cluster's own Docker engine join
//! its network; clients on any other engine use their host's network and the entry address
//! microshard dials. When that address is loopback (a single-host plan publishes on 127.0.0.1,
//! and a `0.0.0.0` publish is dialled there too) it names the client's own machine, where no
//! cluster listens or, worse, another `mongod` does. Such a plan is refused.

use super::{Plan, TopologyError, TopologySpec};

/// Whether `host` (a host name or IP, maybe bracketed) names this machine's loopback.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
}

/// The host part of `host:port` (`[::1]:27017` → `[::1]`).
fn host_of(host_port: &str) -> &str {
    match host_port.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) && !h.ends_with(':') => h,
        _ => host_port,
    }
}

/// The hosts a `mongodb://` URI names (none for `mongodb+srv://`, which DNS resolves).
fn uri_hosts(uri: &str) -> Vec<&str> {
    let Some(rest) = uri.strip_prefix("mongodb://") else {
        return Vec::new();
    };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let hosts = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    hosts.split(',').map(host_of).collect()
}

/// Whether every host a `mongodb://` URI names is this machine's loopback: its servers run here,
/// so this machine's memory bounds what they can hold (`false` for `mongodb+srv://`).
pub(crate) fn uri_is_loopback(uri: &str) -> bool {
    let hosts = uri_hosts(uri);
    !hosts.is_empty() && hosts.iter().all(|h| is_loopback_host(h))
}

/// The engine a Docker endpoint names, as the engine client resolves it (`None` = `DOCKER_HOST`
/// or the local socket).
pub(crate) fn engine_label(endpoint: Option<&str>) -> String {
    endpoint
        .map(String::from)
        .or_else(|| std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "unix:///var/run/docker.sock".into())
}

/// Refuses a client engine that is not the cluster's own when the entry address clients would
/// dial there is loopback; the error names the key to change and says `fix`. `own_engine` is the
/// engine whose network the cluster shares with clients on it (its backend says which, if any).
pub(crate) fn check_clients_reach(
    spec: &TopologySpec,
    plan: &Plan,
    own_engine: Option<&str>,
    fix: &str,
) -> Result<(), TopologyError> {
    if spec.clients.is_empty() {
        return Ok(());
    }
    // What clients elsewhere dial: the existing cluster's URI, or the entry microshard dials.
    let dialled: Vec<String> = match &plan.uri {
        Some(uri) => uri_hosts(uri).into_iter().map(String::from).collect(),
        None => (plan.entry())
            .map(|m| host_of(&plan.dial_address(m)).to_string())
            .into_iter()
            .collect(),
    };
    let Some(loopback) = dialled.iter().find(|h| is_loopback_host(h)) else {
        return Ok(());
    };
    for (i, c) in spec.clients.iter().enumerate() {
        if own_engine == Some(engine_label(Some(&c.docker)).as_str()) {
            continue;
        }
        return Err(TopologyError::Plan(format!(
            "{}: clients[{i}].docker = {:?}: on another engine than the cluster's, clients would dial {loopback}, their own machine; {fix}",
            spec.source.display(),
            c.docker
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_and_uri_hosts() {
        for h in [
            "localhost",
            "127.0.0.1",
            "127.9.9.9",
            "[::1]",
            "::1",
            "0.0.0.0",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["192.0.2.2", "db1.example", "[2001:db8::1]"] {
            assert!(!is_loopback_host(h), "{h}");
        }
        assert_eq!(
            uri_hosts("mongodb://u:p@a:1,[::1]:2,b/ycsb?w=1"),
            vec!["a", "[::1]", "b"]
        );
        assert!(uri_hosts("mongodb+srv://c.example/").is_empty());
        assert!(uri_is_loopback("mongodb://localhost:1,127.0.0.1:2/?w=1"));
        assert!(!uri_is_loopback("mongodb://localhost:1,db1.example:2"));
        assert!(!uri_is_loopback("mongodb+srv://c.example/"));
    }
}
