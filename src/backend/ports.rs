//! Ports a plan needs on this machine, checked free before anything starts; and why a local TCP
//! port cannot be bound, in true words: a program listening on
//! it, or only the local end of a connection — often microshard's own, closed a moment ago and
//! waiting out TIME-WAIT — since ports above the kernel's ephemeral floor are handed to outgoing
//! connections too. Read from `/proc/net/tcp` and `/proc/net/tcp6` (Linux).

use super::BackendError;
use crate::topology::Plan;

/// Refuses a plan whose ports are taken on this machine, naming the leftover cluster (from the
/// state files) and the command that clears it when microshard itself holds the port. Plans for
/// other machines or an existing cluster have no ports here ([`super::Backend::local_ports`]).
pub(crate) fn ports_free(culprit: &str, plan: &Plan) -> Result<(), BackendError> {
    for port in super::of(plan.backend).local_ports(plan) {
        if std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).is_ok() {
            continue;
        }
        let holder = super::state::list()
            .into_iter()
            .filter_map(|(_, r)| r.ok())
            .find(|c| {
                c.members.iter().any(|m| {
                    m.port == port
                        || m.address.rsplit_once(':').map(|(_, p)| p) == Some(&port.to_string())
                })
            });
        return Err(BackendError::BadInput(match holder {
            Some(c) => format!(
                "{culprit}: port {port} is in use by cluster {} (run {}) left running; `microshard down {}` clears it",
                c.name, c.run_id, c.name
            ),
            None => format!(
                "{culprit}: port {port} {}; choose another --base-port",
                why_taken(port)
            ),
        }));
    }
    Ok(())
}

/// What holds a local port, as the kernel's socket tables show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    /// A socket listens on it: another program (or a server left running).
    Listening,
    /// Only connections closed recently (TIME-WAIT): free again within about a minute.
    RecentlyClosed,
    /// The local end of an open connection (an ephemeral port given to a client).
    Connection,
    /// Nothing found in the tables (or they are unreadable).
    Unknown,
}

/// The first port of the kernel's ephemeral range (`ip_local_port_range`; 32768 when unreadable).
pub(crate) fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768)
}

/// The states (hex, as `/proc/net/tcp` writes them) of every socket whose local port is `port`.
fn states(port: u16) -> Vec<u8> {
    let tables = ["/proc/net/tcp", "/proc/net/tcp6"].map(std::fs::read_to_string);
    let lines = tables
        .iter()
        .flatten()
        .flat_map(|text| text.lines().skip(1));
    lines
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = fields.get(1)?.rsplit_once(':')?.1;
            (u16::from_str_radix(local, 16).ok()? == port)
                .then(|| u8::from_str_radix(fields.get(3)?, 16).ok())?
        })
        .collect()
}

/// What holds `port` on this machine.
pub(crate) fn holder(port: u16) -> Holder {
    const LISTEN: u8 = 0x0A;
    const TIME_WAIT: u8 = 0x06;
    let found = states(port);
    if found.contains(&LISTEN) {
        Holder::Listening
    } else if found.is_empty() {
        Holder::Unknown
    } else if found.iter().all(|s| *s == TIME_WAIT) {
        Holder::RecentlyClosed
    } else {
        Holder::Connection
    }
}

/// Why `port` cannot be bound, in words, for a message "port N …".
pub(crate) fn why_taken(port: u16) -> String {
    let below = format!(
        "ports below {} are never given to outgoing connections",
        ephemeral_low()
    );
    match holder(port) {
        Holder::Listening | Holder::Unknown => "is in use by another program".into(),
        Holder::RecentlyClosed => format!(
            "is the local end of a connection closed a moment ago (TIME-WAIT; no program listens on it) and is free again within about a minute; {below}"
        ),
        Holder::Connection => format!(
            "is the local end of an open connection (the kernel gave it to a client as an ephemeral port; no program listens on it); {below}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, TcpListener, TcpStream};

    #[test]
    fn a_port_left_in_time_wait_is_said_to_be_one_not_another_program() {
        let server = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("listen");
        let listening = server.local_addr().expect("addr").port();
        assert_eq!(holder(listening), Holder::Listening);
        let client = TcpStream::connect(server.local_addr().expect("addr")).expect("connect");
        let (accepted, _) = server.accept().expect("accept");
        let port = client.local_addr().expect("addr").port();
        assert_eq!(holder(port), Holder::Connection);
        assert!(
            why_taken(port).contains("open connection"),
            "{}",
            why_taken(port)
        );
        // The client closes first: its end waits in TIME-WAIT.
        drop(client);
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(accepted);
        drop(server);
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(holder(port), Holder::RecentlyClosed);
        let said = why_taken(port);
        assert!(
            said.contains("closed a moment ago")
                && said.contains("free again within about a minute"),
            "{said}"
        );
        assert!(!said.contains("another program"), "{said}");
    }
}
