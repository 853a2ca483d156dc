//! Host names as this machine resolves them, and the names a multi-host Docker topology cannot
//! use: one that resolves here to a loopback address (Debian and Ubuntu map the machine's own
//! name to 127.0.1.1 in `/etc/hosts`) would go into every member's `/etc/hosts` as that
//! address, so each member would dial its own container, and `mongos` could not reach its
//! config servers. Such a plan is refused before anything starts.

use std::net::{IpAddr, ToSocketAddrs};

use super::{TopologyError, TopologySpec};

/// A hosts file (`/etc/hosts` format) read before this machine's resolver, so a test can name
/// a host without touching `/etc/hosts` (`tests/data/bad_input.txt`).
pub(crate) const HOSTS_FILE_ENV: &str = "MICROSHARD_HOSTS_FILE";

/// `name`'s address here: [`HOSTS_FILE_ENV`]'s file when it names it, else the resolver
/// (`/etc/hosts` first, as glibc's `files dns` order does), preferring an IPv4 address, which
/// every engine's bridge network carries.
pub(crate) fn resolve_here(name: &str) -> Option<IpAddr> {
    let from_file = std::env::var_os(HOSTS_FILE_ENV)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|text| in_hosts_text(&text, name));
    if from_file.is_some() {
        return from_file;
    }
    let addrs: Vec<IpAddr> = (name, 0).to_socket_addrs().ok()?.map(|s| s.ip()).collect();
    addrs
        .iter()
        .find(|ip| ip.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
}

/// The first address a hosts file gives `name` (case-insensitive, comments ignored).
fn in_hosts_text(text: &str, name: &str) -> Option<IpAddr> {
    text.lines().find_map(|line| {
        let mut words = line.split('#').next()?.split_whitespace();
        let ip: IpAddr = words.next()?.parse().ok()?;
        words.any(|n| n.eq_ignore_ascii_case(name)).then_some(ip)
    })
}

/// Whether `ip` is loopback: 127.0.0.0/8, `::1`, or an IPv4-mapped 127.x.
pub(crate) fn is_loopback_ip(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// Refuses the first host whose address is a name that `resolve` maps to loopback, naming the
/// file, line and key (a multi-host Docker plan: every member's `/etc/hosts` gets the name).
pub(crate) fn check_no_loopback_names(
    spec: &TopologySpec,
    resolve: impl Fn(&str) -> Option<IpAddr>,
) -> Result<(), TopologyError> {
    for (i, h) in spec.hosts.iter().enumerate() {
        if h.address.parse::<IpAddr>().is_ok() {
            continue;
        }
        let Some(ip) = resolve(&h.address).filter(|ip| is_loopback_ip(*ip)) else {
            continue;
        };
        return Err(TopologyError::Invalid {
            file: spec.source.display().to_string(),
            line: h.address_line,
            key: format!("hosts[{i}].address"),
            message: format!(
                "{:?} resolves to {ip} on this machine, a loopback address (as /etc/hosts maps a Debian or Ubuntu machine's own name): every member would dial its own container; give the host's routable address",
                h.address
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_text_names_and_loopback_addresses() {
        let text = "127.0.0.1 localhost\n127.0.1.1 ctl.lab ctl # this machine\n10.0.0.2 db2.lab\n# 10.9.9.9 ctl.lab\n";
        assert_eq!(in_hosts_text(text, "CTL"), "127.0.1.1".parse().ok());
        assert_eq!(in_hosts_text(text, "db2.lab"), "10.0.0.2".parse().ok());
        assert_eq!(in_hosts_text(text, "nowhere"), None);
        for ip in ["127.0.1.1", "127.0.0.1", "::1", "::ffff:127.0.1.1"] {
            assert!(is_loopback_ip(ip.parse().unwrap()), "{ip}");
        }
        assert!(!is_loopback_ip("10.0.0.2".parse().unwrap()));
        assert_eq!(
            resolve_here("localhost").map(|ip| ip.is_loopback()),
            Some(true)
        );
    }

    #[test]
    fn a_host_name_resolving_to_loopback_is_refused_naming_file_line_and_key() {
        let text = "name = \"two\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"db1.lab\"\npublish_address = \"0.0.0.0\"\n[[hosts]]\naddress = \"ctl.lab\"\npublish_address = \"0.0.0.0\"\n";
        let spec = TopologySpec::parse(text, std::path::Path::new("two.toml")).unwrap();
        let resolve = |n: &str| match n {
            "db1.lab" => "10.0.0.1".parse().ok(),
            "ctl.lab" => "127.0.1.1".parse().ok(),
            _ => None,
        };
        let err = check_no_loopback_names(&spec, resolve)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("two.toml:8: hosts[1].address: \"ctl.lab\" resolves to 127.0.1.1"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
        let routable = |n: &str| (n != "nowhere").then(|| "10.0.0.3".parse().unwrap());
        assert!(check_no_loopback_names(&spec, routable).is_ok());
        assert!(check_no_loopback_names(&spec, |_| None).is_ok());
    }
}
