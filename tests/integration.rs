//! The end-to-end tests, in one binary over one support module (`util.rs`): each file beside this
//! one is a module here, grouped by the layer it drives (`docs/architecture.md`). The tests that
//! must run one at a time are in `serial.rs`, the second and last binary.

mod util;

// The workload engine: YCSB's command lines, phases and bindings against one stand-in.
mod engine_binding;
mod engine_cli;
mod engine_outputs;
mod engine_phases;
mod measure_api;
mod measured_window;

// Experiments: compare, sweep, demo, resume; several clients.
mod clients;
mod experiment_demo;
mod experiment_rerun;
mod experiment_resume;

// Reports: charts and the HTML page.
mod report_charts;
mod report_html;
mod report_tables;

// Guarantees: bad input, faults, verdicts, signals, secrets, teardown.
mod backend_docker_cpu;
mod backend_down_all;
mod fidelity_failover;
mod fidelity_records;
mod kubernetes;
mod reliability_bad_input;
mod reliability_balancer;
mod reliability_discovery;
mod reliability_faults;
mod reliability_network;
mod reliability_secrets;
mod reliability_signals;
mod reliability_verdict;
mod secured;

// Several hosts in network namespaces (root only).
mod multihost;

// Property-based tests of the input parsers.
mod fuzz_properties;
mod fuzz_topology;

// The stand-in's own command line.
mod standin_cli;

// What a newcomer reads: documents, glossary, the architecture page against the code.
mod architecture;
mod newcomer;
mod newcomer_docs;

// The README's commands, as written.
mod readme;
