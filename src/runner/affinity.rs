//! Pins microshard's own client threads to a topology's `client_cpuset`, so a one-box
//! experiment can keep the client off the cores its shards were given (`docs/mongodb-versions.md`,
//! "Fidelity review": R13). The previous affinity comes back when the guard is dropped, so servers
//! started afterwards do not inherit the client's cores.

use rustix::thread::{CpuSet, Pid, sched_getaffinity, sched_setaffinity};

/// Restores every thread's previous CPU affinity when dropped.
#[derive(Debug)]
pub(crate) struct Pinned {
    previous: CpuSet,
}

/// Sets `set` on every thread of this process; a thread that just ended is skipped.
fn set_all(set: &CpuSet) -> std::io::Result<()> {
    let tasks = std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten();
    for tid in tasks.filter_map(|e| e.file_name().to_str()?.parse().ok()) {
        match sched_setaffinity(Pid::from_raw(tid), set) {
            Ok(()) | Err(rustix::io::Errno::SRCH) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Pins every thread of this process (and so every thread it starts later) to `cpus`.
pub(crate) fn pin_process(cpus: &[usize]) -> std::io::Result<Pinned> {
    let previous = sched_getaffinity(None)?;
    let mut set = CpuSet::new();
    for &c in cpus.iter().filter(|&&c| c < CpuSet::MAX_CPU) {
        set.set(c);
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
        let set = sched_getaffinity(None).unwrap_or_else(|e| panic!("{e}"));
        (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect()
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
