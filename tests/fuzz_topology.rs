//! Property-based fuzzing of the topology parser and planner: random text, generated TOML from
//! the schema's keys with edge values, and mutations of the shipped `topologies/*.toml`.
//!
//! Invariants: `TopologySpec::parse` never panics; every error is one line and names the file;
//! a spec that parses can be planned (Docker and existing backends, which need no binaries)
//! without panicking, with one-line errors, and its plan renders. Small case counts for CI;
//! longer: `PROPTEST_CASES=100000 cargo test --test fuzz_topology`.

use std::path::{Path, PathBuf};

use microshard::topology::{BackendKind, Plan, PlanOptions, TopologySpec};
use proptest::prelude::*;

use crate::util::proptest_config as config;

fn source() -> &'static Path {
    Path::new("fuzz.toml")
}

fn assert_one_line(what: &str, message: &str) {
    assert!(
        !message.contains('\n') && !message.contains('\r'),
        "{what}: error is not one line: {message:?}"
    );
}

/// Parses; on success plans with every backend that needs nothing installed and renders.
fn exercise(text: &str) {
    match TopologySpec::parse(text, source()) {
        Ok(spec) => {
            for backend in [BackendKind::Docker, BackendKind::Existing] {
                let opts = PlanOptions {
                    links_pending: false,
                    backend,
                    run_id: "fuzz-run".into(),
                    run_dir: PathBuf::from("/nonexistent/microshard-fuzz"),
                    bin_dir: None,
                    total_memory_gb: Some(8.0),
                };
                match microshard::backend::plan(&spec, &opts) {
                    Ok(plan) => {
                        let _ = plan.render();
                        if backend == BackendKind::Docker {
                            assert_loopback_only(&spec, &plan);
                        }
                    }
                    Err(e) => assert_one_line("Plan::new", &e.to_string()),
                }
            }
        }
        Err(e) => {
            let msg = e.to_string();
            assert_one_line("TopologySpec::parse", &msg);
            assert!(
                msg.contains("fuzz.toml"),
                "error does not name the file: {msg}"
            );
        }
    }
}

/// One host without `publish_address`: Docker publishes nothing but on 127.0.0.1.
fn assert_loopback_only(spec: &TopologySpec, plan: &Plan) {
    if spec.hosts.len() != 1 || spec.hosts[0].publish_address.is_some() {
        return;
    }
    for m in &plan.members {
        if let Some(p) = &m.published {
            assert!(
                p.starts_with("127.0.0.1:"),
                "{} published on {p} without publish_address",
                m.name
            );
        }
    }
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("1".to_string()),
        Just("-1".to_string()),
        Just("2".to_string()),
        Just("64".to_string()),
        Just("65".to_string()),
        Just("65535".to_string()),
        Just("65536".to_string()),
        Just("4294967296".to_string()),
        Just("9223372036854775807".to_string()),
        Just("0.1".to_string()),
        Just("0.25".to_string()),
        Just("1e400".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("true".to_string()),
        Just("\"\"".to_string()),
        Just("\"sharded\"".to_string()),
        Just("\"standalone\"".to_string()),
        Just("\"replica-set\"".to_string()),
        Just("\"localhost\"".to_string()),
        Just("\"10.0.0.1\"".to_string()),
        Just("\"0-1\"".to_string()),
        Just("\"3-1\"".to_string()),
        Just("\"0-99999999999\"".to_string()),
        Just("\",,\"".to_string()),
        Just("\"mongodb://u:p@h:1/x\"".to_string()),
        Just("\"unix:///var/run/docker.sock\"".to_string()),
        Just("[]".to_string()),
        Just("[\"0-1\", \"2-3\"]".to_string()),
        Just("[\"--port=1\"]".to_string()),
        Just("[\"--quiet\"]".to_string()),
        Just("{}".to_string()),
        (0u32..70_000).prop_map(|n| n.to_string()),
        "\"[ -~&&[^\"\\\\]]{0,12}\"",
    ]
}

const TOP_KEYS: &[&str] = &[
    "name",
    "kind",
    "baseline",
    "shards_per_host",
    "version",
    "image",
    "cache_gb",
    "memory_limit_gb",
    "client_cpuset",
    "mongod_args",
    "mongos_args",
    "base_port",
    "initial_chunks_per_shard",
    "keep_balancer",
    "uri",
    "bogus_key",
];
const HOST_KEYS: &[&str] = &[
    "address",
    "docker",
    "memory_budget_gb",
    "shard_cpusets",
    "data_dirs",
    "log_dir",
    "publish_address",
];

/// A topology file built from the schema's keys with edge values.
fn generated() -> impl Strategy<Value = String> {
    let top = proptest::collection::vec((proptest::sample::select(TOP_KEYS), value()), 0..10);
    let hosts = proptest::collection::vec(
        proptest::collection::vec((proptest::sample::select(HOST_KEYS), value()), 0..5),
        0..4,
    );
    let cfg = proptest::option::of(proptest::collection::vec(
        (
            proptest::sample::select(&["members", "cache_gb", "cpuset", "nope"][..]),
            value(),
        ),
        0..3,
    ));
    let mongos = proptest::option::of(proptest::collection::vec(
        (proptest::sample::select(&["count", "cpuset"][..]), value()),
        0..2,
    ));
    (
        prop_oneof![Just("\"sharded\""), Just("\"standalone\""), Just("\"x\"")],
        top,
        hosts,
        cfg,
        mongos,
    )
        .prop_map(|(kind, top, hosts, cfg, mongos)| {
            let mut s = format!("name = \"fz\"\nkind = {kind}\n");
            for (k, v) in top {
                s.push_str(&format!("{k} = {v}\n"));
            }
            for h in hosts {
                s.push_str("[[hosts]]\n");
                for (k, v) in h {
                    s.push_str(&format!("{k} = {v}\n"));
                }
            }
            if let Some(c) = cfg {
                s.push_str("[config_servers]\n");
                for (k, v) in c {
                    s.push_str(&format!("{k} = {v}\n"));
                }
            }
            if let Some(m) = mongos {
                s.push_str("[mongos]\n");
                for (k, v) in m {
                    s.push_str(&format!("{k} = {v}\n"));
                }
            }
            s
        })
}

/// The shipped topology files (the seeds of the mutation strategy).
fn shipped() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies");
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "toml"))
                .filter_map(|p| std::fs::read_to_string(p).ok())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    ReplaceValue(usize, String),
    Truncate(usize),
    InsertByte(usize, u8),
}

fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut out_bytes: Option<Vec<u8>> = None;
    for m in mutations {
        if lines.is_empty() {
            break;
        }
        match m {
            Mutation::DeleteLine(i) => {
                lines.remove(i % lines.len());
            }
            Mutation::DuplicateLine(i) => {
                let l = lines[i % lines.len()].clone();
                lines.insert(i % lines.len(), l);
            }
            Mutation::ReplaceValue(i, v) => {
                let n = i % lines.len();
                if let Some((k, _)) = lines[n].split_once('=') {
                    lines[n] = format!("{k}= {v}");
                }
            }
            Mutation::Truncate(at) => {
                let joined = lines.join("\n");
                let cut = at % (joined.len() + 1);
                out_bytes = Some(joined.as_bytes()[..cut].to_vec());
            }
            Mutation::InsertByte(at, b) => {
                let mut joined = lines.join("\n").into_bytes();
                let at = at % (joined.len() + 1);
                joined.insert(at, *b);
                out_bytes = Some(joined);
            }
        }
    }
    match out_bytes {
        Some(b) => String::from_utf8_lossy(&b).into_owned(),
        None => lines.join("\n"),
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), value()).prop_map(|(i, v)| Mutation::ReplaceValue(i, v)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::InsertByte(i, b)),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn parser_survives_arbitrary_text(text in "\\PC{0,200}") {
        exercise(&text);
    }

    #[test]
    fn parser_survives_generated_topologies(text in generated()) {
        exercise(&text);
    }

    #[test]
    fn parser_survives_mutated_shipped_files(
        seed in any::<prop::sample::Index>(),
        mutations in proptest::collection::vec(mutation(), 1..5),
    ) {
        let files = shipped();
        prop_assume!(!files.is_empty());
        let picked: &String = seed.get(files.as_slice());
        let text = mutate(picked, &mutations);
        exercise(&text);
    }
}

/// Every shipped single-host topology, planned for Docker, publishes only on loopback and
/// publishes at least its entry point.
#[test]
fn shipped_topologies_publish_on_loopback_only() {
    let mut checked = 0;
    for text in shipped() {
        let Ok(spec) = TopologySpec::parse(&text, source()) else {
            continue;
        };
        if spec.hosts.len() != 1 || spec.hosts[0].publish_address.is_some() || spec.uri.is_some() {
            continue;
        }
        let opts = PlanOptions {
            links_pending: false,
            backend: BackendKind::Docker,
            run_id: "loopback".into(),
            run_dir: PathBuf::from("/nonexistent/microshard-loopback"),
            bin_dir: None,
            total_memory_gb: Some(16.0),
        };
        let plan =
            microshard::backend::plan(&spec, &opts).expect("shipped topology plans for Docker");
        assert_loopback_only(&spec, &plan);
        assert!(
            plan.members.iter().any(|m| m.published.is_some()),
            "{}: nothing published",
            spec.name
        );
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} shipped topologies checked");
}

/// Every shipped topology parses and plans (the mutation seeds are valid to begin with).
#[test]
fn shipped_topologies_parse() {
    let files = shipped();
    assert!(files.len() >= 3, "shipped topologies not found");
    for text in files {
        let spec = TopologySpec::parse(&text, source());
        assert!(spec.is_ok(), "{spec:?}\n{text}");
    }
}
