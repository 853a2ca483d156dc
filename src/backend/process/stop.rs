//! How the process backend stops its members, and whether one still runs: `shutdown`, then
//! signals to its process (checked to still be the member, against pid reuse).

use std::time::{Duration, Instant};

use crate::backend::{BackendError, RunningCluster, STOP_ORDER};
use crate::events::{Event, Events};

/// True while `pid` runs and is still the member listening on `port` (guards against pid reuse).
pub fn pid_alive(pid: u32, port: u16) -> bool {
    let Ok(pid_i) = i32::try_from(pid) else {
        return false;
    };
    // Reap it if it is our child and has exited (otherwise it lingers as a zombie).
    // SAFETY: waitpid with WNOHANG on a specific pid; no memory is shared.
    unsafe {
        libc::waitpid(pid_i, std::ptr::null_mut(), libc::WNOHANG);
    }
    if matches!(process_state(pid), Some('Z' | 'X') | None) {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let needle = format!("--port\0{port}\0");
    cmdline
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Stops every process of the cluster: `shutdown` (force) mongos → shards → config, then
/// SIGTERM, then SIGKILL, each bounded.
pub(super) async fn teardown(
    cluster: &RunningCluster,
    stop_timeout: Duration,
    events: &dyn Events,
) -> Result<(), BackendError> {
    let mut survivors = Vec::new();
    for roles in STOP_ORDER {
        let stops = cluster
            .members
            .iter()
            .filter(|m| roles.contains(&m.role))
            .filter_map(|m| m.handle.pid().map(|pid| (m, pid)))
            .map(|(m, pid)| async move {
                let ok = stop_one(&m.name, pid, m.port, &m.address, stop_timeout, events).await;
                (m.name.clone(), pid, ok)
            });
        for (name, pid, ok) in futures::future::join_all(stops).await {
            if !ok {
                survivors.push(format!("{name} (pid {pid})"));
            }
        }
    }
    if survivors.is_empty() {
        Ok(())
    } else {
        Err(BackendError::Teardown(format!(
            "could not stop {}; the state file {} is kept so `microshard down --all` can retry",
            survivors.join(", "),
            cluster.state_file.display()
        )))
    }
}

/// How long a member gets to answer `shutdown` before it is signalled.
const SHUTDOWN_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// Stops one member, saying (to `events`) what it waits for whenever the member does not go
/// quietly: a frozen (stopped) process is killed at once, a member that does not answer
/// `shutdown` gets SIGTERM and then SIGKILL, each wait bounded by `stop_timeout`.
async fn stop_one(
    name: &str,
    pid: u32,
    port: u16,
    address: &str,
    stop_timeout: Duration,
    events: &dyn Events,
) -> bool {
    if !pid_alive(pid, port) {
        return true;
    }
    let kill = |signal| {
        // SAFETY: kill(2) on a pid verified by `pid_alive` to be the member we started.
        unsafe {
            libc::kill(pid as i32, signal);
        }
    };
    // A stopped process (SIGSTOP) cannot answer a command or handle SIGTERM: only SIGKILL.
    if matches!(process_state(pid), Some('T' | 't')) {
        events.event(Event::Warning(format!(
            "microshard: {name} (pid {pid}) is frozen (stopped by a signal): killing it"
        )));
        kill(libc::SIGKILL);
        return wait_gone(pid, port, stop_timeout).await;
    }
    let answered =
        tokio::time::timeout(SHUTDOWN_COMMAND_TIMEOUT, crate::cluster::shutdown(address))
            .await
            .is_ok();
    if !answered {
        events.event(Event::Warning(format!(
            "microshard: {name} ({address}) did not answer shutdown within {} s: sending SIGTERM, then SIGKILL after {} s",
            SHUTDOWN_COMMAND_TIMEOUT.as_secs(),
            stop_timeout.as_secs()
        )));
    } else if wait_gone(pid, port, stop_timeout).await {
        return true;
    }
    for signal in [libc::SIGTERM, libc::SIGKILL] {
        if !pid_alive(pid, port) {
            return true;
        }
        kill(signal);
        if wait_gone(pid, port, stop_timeout).await {
            return true;
        }
    }
    !pid_alive(pid, port)
}

/// The state letter of a process in /proc/PID/stat (`R`, `S`, `T` for stopped, `Z`, ...).
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

async fn wait_gone(pid: u32, port: u16, timeout: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if !pid_alive(pid, port) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    !pid_alive(pid, port)
}
