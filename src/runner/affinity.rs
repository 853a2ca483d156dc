//! Pins microshard's own client threads to a topology's `client_cpuset`, so a one-box
//! experiment can keep the client off the cores its shards were given (`docs/mongodb-versions.md`,
//! "Fidelity review": R13). The previous affinity comes back when the guard is dropped, so servers
//! started afterwards do not inherit the client's cores.

/// Restores every thread's previous CPU affinity when dropped.
#[derive(Debug)]
pub(crate) struct Pinned {
    previous: libc::cpu_set_t,
}

fn threads() -> Vec<libc::pid_t> {
    std::fs::read_dir("/proc/self/task")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

fn set_all(set: &libc::cpu_set_t) -> std::io::Result<()> {
    for tid in threads() {
        // SAFETY: sched_setaffinity reads the set we pass; a thread that just ended gives ESRCH.
        let rc =
            unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::ESRCH) {
                return Err(err);
            }
        }
    }
    Ok(())
}

/// Pins every thread of this process (and so every thread it starts later) to `cpus`.
pub(crate) fn pin_process(cpus: &[usize]) -> std::io::Result<Pinned> {
    // SAFETY: zeroed cpu_set_t is the empty set; sched_getaffinity writes into it.
    let mut previous: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut previous)
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above; CPU_SET only writes inside the set for indices below CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set_all(&set)?;
    Ok(Pinned { previous })
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let _ = set_all(&self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Vec<usize> {
        // SAFETY: as in pin_process.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    #[test]
    fn pins_and_restores() {
        let before = allowed();
        let Some(&first) = before.first() else { return };
        {
            let _pinned = pin_process(&[first]).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(allowed(), vec![first]);
            let from_thread = std::thread::spawn(allowed).join().unwrap_or_default();
            assert_eq!(from_thread, vec![first], "new threads inherit the pin");
        }
        assert_eq!(allowed(), before);
    }
}
