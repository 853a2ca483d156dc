//! Cost of one draw from each YCSB generator, of building a key, and of a whole `next_transaction_op`
//! (S2 and workloada), in ns per draw. Target: < 100 ns per draw for every generator.
//!
//! After criterion's own figures, a summary table repeats each measurement with a plain timed loop in the
//! same process and prints it as a ratio against the reference draw (one `f64` from the client's RNG, the
//! least any generator must do), so the figures stay comparable on a noisy machine.
//!
//! `cargo bench --bench generators` measures; `cargo bench --bench generators -- --test` (or
//! `MICROSHARD_BENCH_SMOKE=1`) is the smoke mode: every benchmark once, a tiny summary.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use criterion::Criterion;
use microshard::workload::generators::{
    Discrete, Exponential, Hotspot, OpKind, ScrambledZipfian, Sequential, SkewedLatest,
    UniformLong, Zipfian, next_double,
};
use microshard::workload::keys::write_key_name;
use microshard::workload::{ClientState, CoreWorkload, Properties, build_key_name};
use rand::SeedableRng;
use rand::rngs::SmallRng;

/// Key range of the generator benchmarks (S2's scaled record count).
const RECORDS: i64 = 10_000;

/// Smoke mode: `--test`, `MICROSHARD_BENCH_SMOKE`, or not started by `cargo bench` (which passes `--bench`;
/// `cargo test --all-targets` does not, and then criterion runs each benchmark once too).
fn smoke() -> bool {
    std::env::var_os("MICROSHARD_BENCH_SMOKE").is_some()
        || std::env::args().any(|a| a == "--test")
        || !std::env::args().any(|a| a == "--bench")
}

/// A workload from a file under `workloads/` with overrides; the path is relative to the crate root.
fn workload(file: &str, overrides: &[&str]) -> CoreWorkload {
    let mut p = Properties::new();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join(file);
    p.load_file(&path).expect("workload file");
    for o in overrides {
        p.apply_override(o).expect("override");
    }
    let mut w = CoreWorkload::from_properties(&p).expect("workload");
    w.set_seed(42);
    w
}

/// One benchmark: a name and a closure doing one draw (returning something to keep it alive).
type Draw = Box<dyn FnMut() -> i64>;

fn cases() -> Vec<(&'static str, Draw)> {
    let mut v: Vec<(&'static str, Draw)> = Vec::new();

    let mut rng = SmallRng::seed_from_u64(1);
    v.push((
        "reference: rng f64",
        Box::new(move || next_double(&mut rng).to_bits() as i64),
    ));

    let u = UniformLong::new(0, RECORDS - 1).expect("range");
    let mut rng = SmallRng::seed_from_u64(2);
    v.push(("uniform", Box::new(move || u.next(&mut rng))));

    // Per-client copy, drawing with `nextLong(itemcount)` (field length / scan length use `sample`).
    let mut z = Zipfian::new(0, RECORDS - 1);
    let mut rng = SmallRng::seed_from_u64(3);
    v.push(("zipfian", Box::new(move || z.next_long(&mut rng, RECORDS))));

    let s = ScrambledZipfian::new(0, RECORDS - 1);
    let mut rng = SmallRng::seed_from_u64(4);
    v.push(("scrambled zipfian", Box::new(move || s.next(&mut rng))));

    let mut l = SkewedLatest::new(RECORDS - 1);
    let mut rng = SmallRng::seed_from_u64(5);
    v.push(("latest", Box::new(move || l.next(&mut rng, RECORDS - 1))));

    let h = Hotspot::new(0, RECORDS - 1, 0.2, 0.8).expect("hotspot");
    let mut rng = SmallRng::seed_from_u64(6);
    v.push(("hotspot", Box::new(move || h.next(&mut rng))));

    let seq = Sequential::new(0, RECORDS - 1).expect("range");
    v.push(("sequential", Box::new(move || seq.next())));

    // Workload D's defaults: 95th percentile within 85.71% of the records.
    let e = Exponential::new(95.0, RECORDS as f64, 0.8571428571);
    let mut rng = SmallRng::seed_from_u64(7);
    v.push(("exponential", Box::new(move || e.next(&mut rng) as i64)));

    let chooser = Discrete::new(&[
        (OpKind::Read, 0.95),
        (OpKind::Update, 0.0),
        (OpKind::Insert, 0.05),
        (OpKind::Scan, 0.0),
        (OpKind::ReadModifyWrite, 0.0),
    ])
    .expect("weights");
    let mut rng = SmallRng::seed_from_u64(8);
    v.push((
        "op chooser",
        Box::new(move || chooser.next(&mut rng) as i64),
    ));

    let mut n = 0i64;
    v.push((
        "key: build_key_name (hashed)",
        Box::new(move || {
            n = (n + 7919) % RECORDS;
            build_key_name(black_box(n), 1, false).len() as i64
        }),
    ));
    let mut n = 0i64;
    let mut buf = String::with_capacity(32);
    v.push((
        "key: write_key_name (reused buffer)",
        Box::new(move || {
            n = (n + 7919) % RECORDS;
            buf.clear();
            write_key_name(&mut buf, black_box(n), 1, false);
            buf.len() as i64
        }),
    ));

    for (label, file, overrides) in [
        (
            "next_transaction_op S2",
            "S2",
            &["recordcount=10000"] as &[&str],
        ),
        ("next_transaction_op workloada", "workloada", &[]),
    ] {
        let w = workload(file, overrides);
        let mut state = w.client_state(0);
        v.push((
            label,
            Box::new(move || {
                let op = w.next_transaction_op(&mut state);
                let n = op_size(&op);
                // As the runner does: value buffers go back to the client for the next operation.
                state.recycle(op);
                n
            }),
        ));
    }
    // The same, dropping each operation (what a caller that never recycles pays).
    let w = workload("S2", &["recordcount=10000"]);
    let mut state: ClientState = w.client_state(1);
    v.push((
        "next_transaction_op S2 (no recycle)",
        Box::new(move || op_size(&w.next_transaction_op(&mut state))),
    ));
    v
}

fn op_size(op: &microshard::workload::Operation) -> i64 {
    use microshard::workload::Operation::*;
    match op {
        Insert { values, .. } | Update { values, .. } | ReadModifyWrite { values, .. } => {
            values.iter().map(|f| f.bytes.len() as i64).sum()
        }
        Read { keys, .. } => keys.len() as i64,
        Scan { count, .. } => *count as i64,
    }
}

fn criterion_part() {
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("generators");
    for (name, mut draw) in cases() {
        group.bench_function(name, |b| b.iter(|| black_box(draw())));
    }
    group.finish();
    c.final_summary();
}

/// Median ns per draw over `rounds` rounds of `n` draws.
fn time_per_draw(draw: &mut Draw, n: u64, rounds: usize) -> f64 {
    let mut per: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                black_box(draw());
            }
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect();
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

fn summary() {
    let smoke = smoke();
    let (n, rounds) = if smoke { (1_000, 1) } else { (2_000_000, 7) };
    let mut cases = cases();
    // Warm up every case once so caches and lazily sized buffers do not count.
    for (_, d) in cases.iter_mut() {
        time_per_draw(d, n.min(10_000), 1);
    }
    let mut rows = Vec::new();
    let mut reference = f64::NAN;
    for (name, d) in cases.iter_mut() {
        let ns = time_per_draw(d, n, rounds);
        if name.starts_with("reference") {
            reference = ns;
        }
        rows.push((*name, ns));
    }
    println!(
        "\ngenerators summary ({} draws x {rounds} rounds, median; target < 100 ns per generator draw){}",
        n,
        if smoke {
            " -- SMOKE MODE: too few draws (and usually an unoptimised build), not a measurement"
        } else {
            ""
        }
    );
    println!(
        "{:<40} {:>10} {:>14} {:>8}",
        "case", "ns/draw", "x reference", "<100ns"
    );
    for (name, ns) in rows {
        let target =
            if smoke || name.starts_with("next_transaction_op") || name.starts_with("reference") {
                "-"
            } else if ns < 100.0 {
                "yes"
            } else {
                "NO"
            };
        println!("{name:<40} {ns:>10.1} {:>14.2} {target:>8}", ns / reference);
    }
}

fn main() {
    criterion_part();
    summary();
}
