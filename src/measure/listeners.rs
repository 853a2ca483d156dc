//! Which process listens on a TCP port of this machine, from `/proc/net/tcp{,6}` (the listening
//! socket's inode) and `/proc/PID/fd` (the process holding that socket). A server started by a
//! wrapper script, a custom entrypoint or a renamed binary has no `mongod --port N` on its
//! command line, but it still owns the socket it listens on: this finds it by that socket.

use std::collections::BTreeMap;

/// TCP state `LISTEN` in `/proc/net/tcp`.
const LISTEN: &str = "0A";

/// The inodes of the sockets listening on `ports` (any local address), by port.
fn listening_inodes(ports: &[u16]) -> BTreeMap<u64, u16> {
    let mut out = BTreeMap::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        out.extend(parse_table(&text, ports));
    }
    out
}

/// `inode → port` for the `LISTEN` lines of one `/proc/net/tcp` table on `ports`.
fn parse_table(text: &str, ports: &[u16]) -> Vec<(u64, u16)> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (local, state, inode) = (f.get(1)?, f.get(3)?, f.get(9)?);
            let port = u16::from_str_radix(local.rsplit_once(':')?.1, 16).ok()?;
            (*state == LISTEN && ports.contains(&port)).then_some(())?;
            Some((inode.parse().ok()?, port))
        })
        .collect()
}

/// The process listening on each of `ports`, by port, among the processes this user may look
/// into (`/proc/PID/fd` of another user's process is closed to it).
pub(crate) fn pids_listening_on(ports: &[u16]) -> BTreeMap<u16, u32> {
    let inodes = listening_inodes(ports);
    let mut out = BTreeMap::new();
    if inodes.is_empty() {
        return out;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for pid in dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
    {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let inode = (link.to_str())
                .and_then(|l| l.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok());
            if let Some(port) = inode.and_then(|i: u64| inodes.get(&i)) {
                out.entry(*port).or_insert(pid);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_lines_are_read_by_port_and_state() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:6989 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 41234 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:6989 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 41300 1 0000000000000000 20 4 30 10 -1\n\
   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 999 1 0000000000000000 100 0 0 10 0\n";
        // 0x6989 = 27017; the established connection and port 22 are not it.
        assert_eq!(parse_table(table, &[27017]), vec![(41234, 27017)]);
    }

    #[test]
    fn this_process_is_found_by_the_port_it_listens_on() {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        let port = listener.local_addr().expect("address").port();
        let found = pids_listening_on(&[port]);
        assert_eq!(found.get(&port), Some(&std::process::id()));
    }
}
