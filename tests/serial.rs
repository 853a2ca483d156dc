//! The end-to-end tests that run one at a time (each holds `util::one_at_a_time`), in a binary
//! apart from `integration.rs`: those that drive the library in this process and point its
//! `MICROSHARD_STATE_DIR` at a directory of their own (the environment belongs to the whole
//! process), and those that measure a scaling, which needs the machine to themselves.

mod util;

// The library in process, with this process's state directory.
mod backend_docker;
mod fidelity_engines;
mod reliability_docker_signals;
mod topology_process;
mod topology_replsets;

// Faults whose bounds are measured in seconds: fail fast on a dead member, stalls, elections.
mod reliability_busy_host;
mod reliability_election;
mod reliability_failfast;

// Pods run as whole processes by a fake Kubernetes API (`docs/kubernetes.md`, "Tests").
#[cfg(feature = "kubernetes")]
mod kubernetes_fake;

// Scaling under the stand-in's capacity model.
mod experiment_ceiling;
mod experiment_compare;
mod experiment_sweep;
