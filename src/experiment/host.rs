//! Facts about the client machine recorded with every experiment (CPU, memory, kernel, THP),
//! because a figure without its machine cannot be compared with anything.

use serde::{Deserialize, Serialize};

/// What the experiment records about the machine it ran on.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Host {
    /// Host name.
    pub hostname: Option<String>,
    /// Logical CPUs available to this process.
    pub cpus: usize,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Total memory in bytes.
    pub memory_bytes: Option<u64>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Transparent huge pages setting (the bracketed value of `enabled`).
    pub transparent_hugepages: Option<String>,
    /// Operating system and architecture.
    pub os: String,
}

impl Host {
    /// Collects the facts; anything unreadable stays `None`.
    pub fn collect() -> Host {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let cpu_model = read("/proc/cpuinfo").and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        });
        let memory_bytes = read("/proc/meminfo").and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        });
        let thp = read("/sys/kernel/mm/transparent_hugepage/enabled").and_then(|s| {
            let start = s.find('[')?;
            let end = s[start..].find(']')? + start;
            Some(s[start + 1..end].to_string())
        });
        Host {
            hostname: read("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu_model,
            memory_bytes,
            kernel: read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
            transparent_hugepages: thp,
            os: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn collects_at_least_cpus() {
        let h = super::Host::collect();
        assert!(h.cpus >= 1);
        assert!(!h.os.is_empty());
    }
}
