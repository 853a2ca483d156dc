//! CoreWorkload behaviour tests and the check of every file in `workloads/`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::*;
use crate::measure::Status;

fn props(overrides: &[&str]) -> Properties {
    let mut p = Properties::new();
    for o in overrides {
        p.apply_override(o).unwrap();
    }
    p
}

fn workload(overrides: &[&str]) -> CoreWorkload {
    let mut w = CoreWorkload::from_properties(&props(overrides)).unwrap();
    w.set_seed(42);
    w
}

fn error(overrides: &[&str]) -> String {
    match CoreWorkload::from_properties(&props(overrides)) {
        Ok(_) => panic!("{overrides:?} must be refused"),
        Err(e) => e.to_string(),
    }
}

fn keynum_of(key: &str) -> i64 {
    key.trim_start_matches("user").parse().unwrap()
}

#[test]
fn core_workload_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<CoreWorkload>();
    fn check_send<T: Send>() {}
    check_send::<ClientState>();
}

#[test]
fn load_ops_use_shared_counter_hashed_keys_and_hashmap_order() {
    let w = workload(&["recordcount=100", "fieldlength=7"]);
    let mut a = w.client_state(0);
    let mut b = w.client_state(1);
    let mut keys = Vec::new();
    for i in 0..3 {
        let st = if i == 1 { &mut b } else { &mut a };
        keys.push(match w.next_load_op(st) {
            Operation::Insert {
                key,
                values,
                acknowledge,
                ..
            } => {
                assert!(!acknowledge);
                let names: Vec<&str> = values.iter().map(|v| &*v.name).collect();
                assert_eq!(
                    names,
                    [
                        "field1", "field0", "field7", "field6", "field9", "field8", "field3",
                        "field2", "field5", "field4"
                    ]
                );
                assert!(values.iter().all(|v| v.bytes.len() == 7));
                key
            }
            other => panic!("{other:?}"),
        });
    }
    assert_eq!(
        keys,
        [
            "user6284781860667377211",
            "user8517097267634966620",
            "user1820151046732198393"
        ]
    );
}

#[test]
fn the_keys_handed_out_to_inserts_are_known_whatever_became_of_them() {
    let w = workload(&["recordcount=100", "insertstart=50", "insertcount=50"]);
    assert_eq!(w.inserted_keys(true), None, "nothing taken yet");
    let mut st = w.client_state(0);
    for _ in 0..3 {
        let _ = w.next_load_op(&mut st);
    }
    let span = w.inserted_keys(true).map(|k| (k.first, k.end));
    assert_eq!(span, Some((50, 53)));
    // A run's inserts from recordcount on, spread as this client's stride places them.
    let w = workload(&[
        "recordcount=100",
        "insertproportion=1",
        "readproportion=0",
        "microshard.insertstride=3",
        "microshard.insertoffset=2",
    ]);
    let mut st = w.client_state(0);
    for _ in 0..4 {
        let _ = w.next_transaction_op(&mut st);
    }
    let span = w.inserted_keys(false).map(|k| (k.first, k.end));
    assert_eq!(span, Some((102, 112)), "keys 102, 105, 108, 111");
}

#[test]
fn load_starts_at_insertstart_and_ordered_keys_pad() {
    let w = workload(&[
        "recordcount=100",
        "insertstart=50",
        "insertcount=50",
        "insertorder=ordered",
        "zeropadding=4",
    ]);
    let mut st = w.client_state(0);
    match w.next_load_op(&mut st) {
        Operation::Insert { keynum, key, .. } => {
            assert_eq!(keynum, 50);
            assert_eq!(key, "user0050");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn op_chooser_proportions_over_many_draws() {
    let w = workload(&[
        "recordcount=1000",
        "readproportion=0.5",
        "updateproportion=0.2",
        "insertproportion=0.1",
        "scanproportion=0.1",
        "readmodifywriteproportion=0.1",
        "maxscanlength=10",
        "fieldcount=1",
        "fieldlength=1",
    ]);
    let mut st = w.client_state(3);
    let n = 100_000;
    let mut counts: HashMap<&'static str, usize> = HashMap::new();
    for _ in 0..n {
        let op = w.next_transaction_op(&mut st);
        if let Operation::Insert { keynum, .. } = &op {
            w.acknowledge_insert(*keynum).unwrap();
        }
        *counts.entry(op.measurement_name()).or_default() += 1;
    }
    for (name, want) in [
        ("READ", 0.5),
        ("UPDATE", 0.2),
        ("INSERT", 0.1),
        ("SCAN", 0.1),
        ("READ-MODIFY-WRITE", 0.1),
    ] {
        let got = counts.get(name).copied().unwrap_or(0) as f64 / n as f64;
        assert!((got - want).abs() < 0.01, "{name}: {got} vs {want}");
    }
}

#[test]
fn proportions_are_normalised() {
    let w = workload(&["recordcount=10", "readproportion=3", "updateproportion=1"]);
    assert_eq!(w.operation_mix(), vec![("READ", 0.75), ("UPDATE", 0.25)]);
}

#[test]
fn run_inserts_start_at_recordcount_and_reads_stay_below_the_acknowledged_limit() {
    let w = workload(&[
        "recordcount=100",
        "readproportion=0.5",
        "updateproportion=0",
        "insertproportion=0.5",
        "insertorder=ordered",
        "requestdistribution=zipfian",
        "operationcount=1000",
    ]);
    let mut st = w.client_state(0);
    let mut next_insert = 100;
    let mut pending = Vec::new();
    for i in 0..2000 {
        match w.next_transaction_op(&mut st) {
            Operation::Insert {
                keynum,
                key,
                acknowledge,
                ..
            } => {
                assert!(acknowledge);
                assert_eq!(keynum, next_insert);
                assert_eq!(key, format!("user{keynum}"));
                next_insert += 1;
                pending.push(keynum);
            }
            Operation::Read { keys, .. } => {
                assert_eq!(keys.len(), 1);
                assert!(keynum_of(&keys[0]) <= w.acknowledged_limit());
            }
            other => panic!("{other:?}"),
        }
        // Acknowledge in bursts so the limit lags behind the counter.
        if i % 10 == 9 {
            for k in pending.drain(..) {
                w.acknowledge_insert(k).unwrap();
            }
            assert_eq!(w.acknowledged_limit(), next_insert - 1);
        }
    }
    assert!(next_insert > 800);
}

#[test]
fn latest_reads_follow_new_inserts() {
    let w = workload(&[
        "recordcount=1000",
        "readproportion=1",
        "updateproportion=0",
        "requestdistribution=latest",
        "insertorder=ordered",
    ]);
    let mut st = w.client_state(0);
    let mut reads = Vec::new();
    for _ in 0..2000 {
        if let Operation::Read { keys, .. } = w.next_transaction_op(&mut st) {
            reads.push(keynum_of(&keys[0]));
        }
    }
    assert!(reads.iter().all(|k| (1..=999).contains(k)));
    let newest = reads.iter().filter(|k| **k == 999).count();
    assert!(
        newest > 2000 / 20,
        "the newest key is the most popular: {newest}"
    );
}

#[test]
fn readbatchsize_gives_distinct_keys() {
    let w = workload(&[
        "recordcount=30",
        "readproportion=1",
        "updateproportion=0",
        "readbatchsize=20",
        "requestdistribution=zipfian",
    ]);
    let mut st = w.client_state(0);
    for _ in 0..200 {
        match w.next_transaction_op(&mut st) {
            Operation::Read { keys, fields } => {
                assert_eq!(keys.len(), 20);
                let set: HashSet<&String> = keys.iter().collect();
                assert_eq!(set.len(), 20, "{keys:?}");
                assert_eq!(fields, None);
            }
            other => panic!("{other:?}"),
        }
    }
    // All keys of the range at once still terminates.
    let w = workload(&[
        "recordcount=30",
        "readproportion=1",
        "updateproportion=0",
        "readbatchsize=30",
        "requestdistribution=zipfian",
    ]);
    let mut st = w.client_state(0);
    match w.next_transaction_op(&mut st) {
        Operation::Read { keys, .. } => {
            let set: HashSet<String> = keys.into_iter().collect();
            let all: HashSet<String> = (0..30).map(|k| build_key_name(k, 1, false)).collect();
            assert_eq!(set, all);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn field_selection_rules() {
    // readallfields=false: one random field for read, scan and RMW; update writes one field.
    let w = workload(&[
        "recordcount=10",
        "readallfields=false",
        "readproportion=0.25",
        "updateproportion=0.25",
        "scanproportion=0.25",
        "readmodifywriteproportion=0.25",
        "fieldcount=3",
    ]);
    let mut st = w.client_state(0);
    let one = |f: &Option<Vec<std::sync::Arc<str>>>| {
        let f = f.as_ref().unwrap();
        assert_eq!(f.len(), 1);
        assert!(["field0", "field1", "field2"].contains(&&*f[0]));
    };
    for _ in 0..200 {
        match w.next_transaction_op(&mut st) {
            Operation::Read { fields, .. } | Operation::Scan { fields, .. } => one(&fields),
            Operation::ReadModifyWrite {
                read_fields,
                values,
                ..
            } => {
                one(&read_fields);
                assert_eq!(values.len(), 1);
            }
            Operation::Update { values, .. } => assert_eq!(values.len(), 1),
            other => panic!("{other:?}"),
        }
    }
    // writeallfields: every field in HashMap order; dataintegrity reads name all fields.
    let w = workload(&[
        "recordcount=10",
        "writeallfields=true",
        "dataintegrity=true",
        "readproportion=0.5",
        "updateproportion=0.5",
        "fieldcount=10",
    ]);
    let mut st = w.client_state(0);
    let order: Vec<&str> = vec![
        "field1", "field0", "field7", "field6", "field9", "field8", "field3", "field2", "field5",
        "field4",
    ];
    for _ in 0..50 {
        match w.next_transaction_op(&mut st) {
            Operation::Read { fields, .. } => {
                let f = fields.unwrap();
                assert_eq!(f.iter().map(|f| &**f).collect::<Vec<_>>(), order);
            }
            Operation::Update { key, values } => {
                assert_eq!(values.iter().map(|v| &*v.name).collect::<Vec<_>>(), order);
                for v in &values {
                    assert_eq!(
                        v.bytes,
                        values::deterministic_value(&key, &v.name, 100).into_bytes()
                    );
                }
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn scan_lengths_in_range() {
    let w = workload(&[
        "recordcount=1000",
        "readproportion=0",
        "updateproportion=0",
        "scanproportion=1",
        "minscanlength=5",
        "maxscanlength=9",
    ]);
    let mut st = w.client_state(0);
    let mut seen = HashSet::new();
    for _ in 0..1000 {
        match w.next_transaction_op(&mut st) {
            Operation::Scan { count, .. } => {
                assert!((5..=9).contains(&count));
                seen.insert(count);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen.len(), 5);
}

#[test]
fn verify_statuses() {
    let w = workload(&["recordcount=10", "dataintegrity=true", "fieldlength=40"]);
    let key = "user6284781860667377211";
    let good = vec![
        (
            "field0".to_string(),
            values::deterministic_value(key, "field0", 40).into_bytes(),
        ),
        (
            "field3".to_string(),
            values::deterministic_value(key, "field3", 40).into_bytes(),
        ),
    ];
    assert_eq!(w.verify(key, &good), Status::Ok);
    let mut bad = good.clone();
    bad[1].1[39] ^= 1;
    assert_eq!(w.verify(key, &bad), Status::UnexpectedState);
    let empty: Vec<(String, Vec<u8>)> = Vec::new();
    assert_eq!(w.verify(key, &empty), Status::Error);
}

#[test]
fn zipfian_without_operationcount_is_accepted() {
    // YCSB crashes here (NumberFormatException: null); we treat the missing count as 0.
    let w = workload(&["recordcount=1000", "requestdistribution=zipfian"]);
    assert_eq!(w.request_distribution(), "zipfian");
}

#[test]
fn every_error_names_its_property() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["requestdistribution=pareto"],
            "property 'requestdistribution'",
        ),
        (
            &["fieldlengthdistribution=normal"],
            "property 'fieldlengthdistribution'",
        ),
        (
            &["scanlengthdistribution=latest"],
            "property 'scanlengthdistribution'",
        ),
        (
            &[
                "readproportion=0",
                "updateproportion=0",
                "insertproportion=0",
                "scanproportion=0",
                "readmodifywriteproportion=0",
            ],
            "operation proportions",
        ),
        (&["updateproportion=-0.1"], "property 'updateproportion'"),
        (&["readproportion=NaN"], "property 'readproportion'"),
        (
            &["recordcount=100", "insertstart=50", "insertcount=60"],
            "property 'insertcount'",
        ),
        (
            &["fieldcount=100", "fieldlength=200000"],
            "property 'fieldlength'",
        ),
        (
            &["dataintegrity=true", "fieldlengthdistribution=uniform"],
            "property 'dataintegrity'",
        ),
        (
            &["requestdistribution=hotspot", "hotspotdatafraction=1.5"],
            "property 'hotspotdatafraction'",
        ),
        (
            &["requestdistribution=hotspot", "hotspotopnfraction=-1"],
            "property 'hotspotopnfraction'",
        ),
        (
            &[
                "requestdistribution=hotspot",
                "recordcount=3",
                "hotspotdatafraction=0.1",
            ],
            "property 'hotspotdatafraction'",
        ),
        (&["readbatchsize=0"], "property 'readbatchsize'"),
        (
            &["recordcount=10", "readbatchsize=11"],
            "property 'readbatchsize'",
        ),
        (
            &["minscanlength=10", "maxscanlength=5"],
            "property 'minscanlength'",
        ),
        (&["recordcount=-1"], "property 'recordcount'"),
        (&["recordcount=3000000000"], "property 'recordcount'"),
        (&["recordcount=5x"], "-p: property 'recordcount'"),
        (&["fieldcount=0"], "property 'fieldcount'"),
        (
            &["fieldlengthdistribution=uniform", "minfieldlength=200"],
            "property 'minfieldlength'",
        ),
        (
            &[
                "requestdistribution=exponential",
                "exponential.percentile=100",
            ],
            "property 'exponential.percentile'",
        ),
    ];
    for (overrides, want) in cases {
        let msg = error(overrides);
        assert!(msg.contains(want), "{overrides:?}: {msg}");
        assert!(!msg.contains('\n'), "one line: {msg}");
    }
}

#[test]
fn errors_from_files_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad");
    std::fs::write(&path, "recordcount=10\n# c\nrequestdistribution=pareto\n").unwrap();
    let mut p = Properties::new();
    p.load_file(&path).unwrap();
    let msg = CoreWorkload::from_properties(&p).unwrap_err().to_string();
    assert_eq!(
        msg,
        format!(
            "{}:3: property 'requestdistribution': unknown request distribution \"pareto\" (expected uniform, zipfian, latest, hotspot, sequential or exponential)",
            path.display()
        )
    );
}

#[test]
fn histogram_field_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hist.txt");
    std::fs::write(&path, "BlockSize\t4\n0\t0\n1\t5\n2\t0\n").unwrap();
    let w = workload(&[
        "recordcount=10",
        "fieldlengthdistribution=histogram",
        &format!("fieldlengthhistogram={}", path.display()),
    ]);
    let mut st = w.client_state(0);
    if let Operation::Insert { values, .. } = w.next_load_op(&mut st) {
        // Bucket 1 holds all the weight (length 8); a draw of exactly 0 gives 4 (YCSB's `<= 0` quirk).
        assert!(values.iter().all(|v| [4, 8].contains(&v.bytes.len())));
    }
    let missing = error(&[
        "fieldlengthdistribution=histogram",
        "fieldlengthhistogram=/nonexistent/hist.txt",
    ]);
    assert!(
        missing.starts_with("/nonexistent/hist.txt: ") && missing.contains("fieldlengthhistogram"),
        "{missing}"
    );
}

#[test]
fn counting_helpers() {
    assert_eq!(load_operation_count(&props(&["recordcount=7"])).unwrap(), 7);
    assert_eq!(
        load_operation_count(&props(&["recordcount=7", "insertcount=3"])).unwrap(),
        3
    );
    assert_eq!(load_operation_count(&props(&[])).unwrap(), 0);
    assert_eq!(
        run_operation_count(&props(&["operationcount=5e6"]))
            .unwrap_err()
            .to_string(),
        "-p: property 'operationcount': \"5e6\" is not a whole number"
    );
    assert_eq!(run_operation_count(&props(&[])).unwrap(), 0);

    assert_eq!(split_operations(10, 3), (vec![4, 3, 3], None));
    assert_eq!(split_operations(0, 2), (vec![0, 0], None));
    assert_eq!(
        split_operations(2, 5),
        (
            vec![1, 1],
            Some(super::core::THREADS_CAPPED_WARNING.to_string())
        )
    );
    let (split, _) = split_operations(100_000_000, 32);
    assert_eq!(split.iter().sum::<u64>(), 100_000_000);
}

#[test]
fn recycled_buffers_are_reused_without_leaking_content() {
    let w = workload(&["recordcount=10", "fieldlength=10", "fieldcount=2"]);
    let mut st = w.client_state(0);
    let op = w.next_load_op(&mut st);
    st.recycle(op);
    if let Operation::Insert { values, .. } = w.next_load_op(&mut st) {
        assert!(values.iter().all(|v| v.bytes.len() == 10));
    }
}

/// Expected operation mix and request distribution of every shipped workload file.
type Mix = Vec<(&'static str, f64)>;

fn documented() -> HashMap<&'static str, (Mix, &'static str)> {
    let s = |r: f64, u: f64, i: f64| {
        let mut v = Vec::new();
        for (n, p) in [("READ", r), ("UPDATE", u), ("INSERT", i)] {
            if p > 0.0 {
                v.push((n, p));
            }
        }
        v
    };
    HashMap::from([
        ("S1", (s(0.0, 0.0, 1.0), "uniform")),
        ("S2", (s(0.1, 0.9, 0.0), "uniform")),
        ("S3", (s(0.65, 0.10, 0.25), "uniform")),
        ("S4", (s(0.9, 0.05, 0.05), "uniform")),
        ("S5", (s(1.0, 0.0, 0.0), "uniform")),
        ("Q20M", (s(1.0, 0.0, 0.0), "uniform")),
        ("workloada", (s(0.5, 0.5, 0.0), "zipfian")),
        ("workloadb", (s(0.95, 0.05, 0.0), "zipfian")),
        ("workloadc", (s(1.0, 0.0, 0.0), "zipfian")),
        ("workloadd", (s(0.95, 0.0, 0.05), "latest")),
        (
            "workloade",
            (vec![("INSERT", 0.05), ("SCAN", 0.95)], "zipfian"),
        ),
        (
            "workloadf",
            (vec![("READ", 0.5), ("READMODIFYWRITE", 0.5)], "zipfian"),
        ),
    ])
}

#[test]
fn every_shipped_workload_file_validates_with_documented_mix() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_none())
        .collect();
    files.sort();
    let documented = documented();
    assert_eq!(files.len(), documented.len(), "{files:?}");
    for path in files {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let mut p = Properties::new();
        p.load_file(&path).unwrap();
        assert!(p.warnings().is_empty(), "{name}: {:?}", p.warnings());
        let w = CoreWorkload::from_properties(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (mix, dist) = documented
            .get(name.as_str())
            .unwrap_or_else(|| panic!("{name} is not documented"));
        let got = w.operation_mix();
        assert_eq!(got.len(), mix.len(), "{name}: {got:?}");
        for ((gn, gp), (wn, wp)) in got.iter().zip(mix) {
            assert_eq!(gn, wn, "{name}");
            assert!((gp - wp).abs() < 1e-12, "{name}: {gn} {gp} vs {wp}");
        }
        assert_eq!(w.request_distribution(), *dist, "{name}");
        assert_eq!(p.get("workload"), Some("site.ycsb.workloads.CoreWorkload"));
        if name.starts_with('S') {
            for (k, v) in [
                ("recordcount", "5000000"),
                ("operationcount", "100000000"),
                ("fieldcount", "8"),
                ("fieldlength", "250"),
                ("insertorder", "hashed"),
                ("readallfields", "true"),
                ("threadcount", "32"),
                ("scanproportion", "0"),
                ("mongodb.url", "mongodb://localhost:27017/ycsb?w=1"),
                ("mongodb.writeConcern", "acknowledged"),
            ] {
                assert_eq!(p.get(k), Some(v), "{name}: {k}");
            }
        } else if name == "Q20M" {
            // The second seed's query test: 20 M documents of about 550 bytes, 10,000 queries.
            for (k, v) in [
                ("recordcount", "20000000"),
                ("operationcount", "10000"),
                ("fieldcount", "5"),
                ("fieldlength", "100"),
                ("readbatchsize", "1"),
            ] {
                assert_eq!(p.get(k), Some(v), "{name}: {k}");
            }
        } else {
            assert_eq!(p.get("recordcount"), Some("1000"), "{name}");
            assert_eq!(p.get("operationcount"), Some("1000"), "{name}");
        }
        if name == "workloade" {
            assert_eq!(p.get("maxscanlength"), Some("100"));
            assert_eq!(p.get("scanlengthdistribution"), Some("uniform"));
        }
    }
}
