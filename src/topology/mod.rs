//! Topology files (TOML) and the plan computed from them before anything starts.
