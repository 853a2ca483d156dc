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
    /// Collects the facts (the same ones every result document records, plus the host name);
    /// anything unreadable stays `None`.
    pub fn collect() -> Host {
        let facts = crate::measure::HostFacts::collect();
        Host {
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|s| s.trim().to_string()),
            cpus: usize::try_from(facts.cpu_count).unwrap_or(1).max(1),
            cpu_model: facts.cpu_model,
            memory_bytes: facts.memory_bytes,
            kernel: facts.kernel,
            transparent_hugepages: facts.transparent_hugepage,
            os: format!("{}-{}", facts.os, std::env::consts::ARCH),
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
