//! The hosts' names as this machine resolves them, for every member container's `/etc/hosts`
//! (`HostConfig.extra_hosts`). Across hosts, members reach each other at `hosts[i].address`,
//! and Docker's embedded DNS forwards to the host's resolvers without reading the host's
//! `/etc/hosts`: a lab that names its machines only there would get "No host … maps to this
//! node" at `replSetInitiate` while microshard's own connections work.

use std::net::IpAddr;

/// `name:ip` for every host address of `plan` that is a name `resolve` knows, in host order,
/// each name once. IPs need no entry; a name `resolve` does not know is left to the
/// container's DNS (it may know it, and the error then comes from the member itself); a name
/// it maps to loopback is left out too (the plan refuses it: `topology::resolve`), since in a
/// member's `/etc/hosts` it would name the member's own container.
pub(crate) fn extra_hosts(
    addresses: &[&str],
    resolve: impl Fn(&str) -> Option<IpAddr>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in addresses {
        if a.parse::<IpAddr>().is_ok() || a.eq_ignore_ascii_case("localhost") {
            continue;
        }
        let Some(ip) = resolve(a).filter(|ip| !crate::topology::resolve::is_loopback_ip(*ip))
        else {
            continue;
        };
        let entry = format!("{a}:{ip}");
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    out
}

/// This machine's resolver.
pub(crate) use crate::topology::resolve::resolve_here;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_get_their_address_ips_and_unknown_names_none() {
        let resolve = |n: &str| match n {
            "db1.lab" => Some("10.0.0.1".parse().unwrap()),
            "db2.lab" => Some("10.0.0.2".parse().unwrap()),
            "ctl.lab" => Some("127.0.1.1".parse().unwrap()),
            _ => None,
        };
        assert_eq!(
            extra_hosts(
                &[
                    "db1.lab",
                    "10.0.0.9",
                    "db2.lab",
                    "db1.lab",
                    "nowhere",
                    "ctl.lab",
                    "localhost"
                ],
                resolve
            ),
            vec!["db1.lab:10.0.0.1", "db2.lab:10.0.0.2"]
        );
        assert_eq!(
            resolve_here("localhost").map(|ip| ip.is_loopback()),
            Some(true)
        );
    }
}
