//! Topology files (TOML) and the plan computed from them before anything starts.
//!
//! A [`TopologySpec`] is what the user wrote (validated, with file:line errors); a [`Plan`] is
//! every member with its role, ports, directories, container name and exact command line. The
//! backends execute the plan and nothing else, so `microshard up --dry-run` shows exactly what
//! will run.

mod cpusets;
pub(crate) mod flags;
mod label;
mod plan;
mod reach;
pub(crate) mod resolve;
mod spec;

pub(crate) use cpusets::{check_cpusets, local_engine};
pub(crate) use flags::check_mongod_args;
pub(crate) use label::{Loaded, topology_label};
pub use plan::{BackendKind, HostMemory, Member, MemberRole, Plan, PlanOptions, new_run_id};
pub(crate) use plan::{
    Layout, MAX_UNIX_SOCKET_PATH, Placement, Seat, container_name, find_program, format_gb,
    is_local,
};
pub(crate) use reach::{check_clients_reach, engine_label, is_loopback_host, uri_is_loopback};
pub use spec::{
    Baseline, ClientHostSpec, ClientPodsSpec, ConfigServersSpec, HostSpec, Kind, MongosSpec,
    TopologySpec, total_memory_gb,
};
pub(crate) use spec::{DEFAULT_CLIENT_IMAGE, check_managed_args, parse_cpuset};

use std::path::PathBuf;

/// The Docker image used when a topology names none (for `doctor`).
pub(crate) fn spec_default_image() -> &'static str {
    spec::DEFAULT_IMAGE
}

/// Everything that can be wrong with a topology file or the plan made from it.
///
/// Every variant is the user's input being wrong; the CLI reports it with exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// A value in the file is wrong; names the file, line and key.
    #[error("{file}:{line}: {key}: {message}")]
    Invalid {
        /// The topology file.
        file: String,
        /// 1-based line of the offending key or value (0 when unknown).
        line: usize,
        /// The key, dotted (`hosts[1].shard_cpusets`).
        key: String,
        /// What is wrong, one line.
        message: String,
    },
    /// The file does not parse as TOML or does not match the schema.
    #[error("{file}:{line}: {message}")]
    Syntax {
        /// The topology file.
        file: String,
        /// 1-based line.
        line: usize,
        /// The parser's message, one line.
        message: String,
    },
    /// No topology file by that name.
    #[error("topology {name:?} not found (looked in {searched}){hint}")]
    NotFound {
        /// What the user asked for.
        name: String,
        /// Where we looked.
        searched: String,
        /// ", did you mean ...?" or empty.
        hint: String,
    },
    /// The file exists but cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The plan cannot be made for this machine or backend (binary missing, backend mismatch).
    #[error("{0}")]
    Plan(String),
}
