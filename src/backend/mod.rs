//! Backends that execute a plan: local processes, Docker containers, or hosts that already run.
