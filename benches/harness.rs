//! How much does microshard's runner cost compared with a plain loop over the `mongodb` crate?
//!
//! Both do the same operations (uniform `find_one` by `_id` over YCSB's hashed keys, and a 50/50
//! read/update mix) at the same concurrency against the same in-process stand-in. The figure that
//! matters is the throughput ratio runner / plain loop, printed at the end of each group.
//!
//! `cargo bench --bench harness` measures; `cargo bench --bench harness -- --test` (or
//! `MICROSHARD_BENCH_SMOKE=1`) is the short smoke mode: tiny sizes, each benchmark run once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use microshard::runner::{ExecuteOptions, Phase, execute};
use microshard::standin::{Role, StandinConfig};
use microshard::workload::{Properties, build_key_name};
use mongodb::bson::{Binary, Document, doc, spec::BinarySubtype};
use rand::{Rng, SeedableRng};

const THREADS: usize = 8;

fn smoke() -> bool {
    std::env::var_os("MICROSHARD_BENCH_SMOKE").is_some() || std::env::args().any(|a| a == "--test")
}

fn properties(uri: &str, records: u64, ops: u64, mix: &str) -> Properties {
    let mut p = Properties::new();
    for kv in [
        format!("mongodb.url={uri}"),
        format!("recordcount={records}"),
        format!("operationcount={ops}"),
        format!("threadcount={THREADS}"),
        "requestdistribution=uniform".to_string(),
        "fieldcount=10".to_string(),
        "fieldlength=100".to_string(),
    ] {
        p.apply_override(&kv).expect("property");
    }
    match mix {
        "read" => {
            p.apply_override("readproportion=1").expect("property");
            p.apply_override("updateproportion=0").expect("property");
        }
        _ => {
            p.apply_override("readproportion=0.5").expect("property");
            p.apply_override("updateproportion=0.5").expect("property");
        }
    }
    p
}

fn quiet() -> ExecuteOptions {
    ExecuteOptions {
        quiet: true,
        ..ExecuteOptions::default()
    }
}

/// The same operations without microshard: THREADS tasks, one shared driver client, no measurement.
async fn plain_loop(client: &mongodb::Client, records: u64, ops: u64, update_share: f64) {
    let coll = client.database("ycsb").collection::<Document>("usertable");
    let per = ops / THREADS as u64;
    let mut tasks = Vec::new();
    for _ in 0..THREADS {
        let coll = coll.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::SmallRng::from_os_rng();
            for _ in 0..per {
                let keynum = rng.random_range(0..records) as i64;
                let key = build_key_name(keynum, 1, false);
                if rng.random::<f64>() < update_share {
                    let bytes: Vec<u8> = (0..100).map(|_| rng.random_range(0x20..0x7f)).collect();
                    let field = format!("field{}", rng.random_range(0..10));
                    let set =
                        doc! {"$set": {field: Binary { subtype: BinarySubtype::Generic, bytes }}};
                    let _ = coll.update_one(doc! {"_id": key}, set).await;
                } else {
                    let _ = coll.find_one(doc! {"_id": key}).await;
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

fn harness(c: &mut Criterion) {
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime"),
    );
    let (records, ops) = if smoke() { (200, 400) } else { (5_000, 20_000) };
    let dir = tempfile::tempdir().expect("tempdir");
    let server = {
        let _guard = rt.enter();
        let mut cfg = StandinConfig::new(Role::Mongod);
        cfg.dbpath = Some(dir.path().to_path_buf());
        cfg.quiet = true;
        microshard::standin::spawn(cfg).expect("stand-in")
    };
    let uri = format!(
        "mongodb://127.0.0.1:{}/ycsb?directConnection=true",
        server.port()
    );
    rt.block_on(async {
        execute(&properties(&uri, records, 0, "read"), Phase::Load, &quiet())
            .await
            .expect("load")
    });
    let client = rt
        .block_on(mongodb::Client::with_uri_str(format!(
            "{uri}&maxPoolSize={THREADS}"
        )))
        .expect("driver client");

    for (mix, update_share) in [("read", 0.0), ("read_update", 0.5)] {
        let props = properties(&uri, records, ops, mix);
        let mut g = c.benchmark_group(format!("harness_{mix}"));
        g.throughput(Throughput::Elements(ops));
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(if smoke() { 1 } else { 10 }));
        g.bench_function("microshard_runner", |b| {
            b.iter(|| {
                rt.block_on(execute(&props, Phase::Run, &quiet()))
                    .expect("run")
            })
        });
        g.bench_function("plain_driver_loop", |b| {
            b.iter(|| rt.block_on(plain_loop(&client, records, ops, update_share)))
        });
        g.finish();

        // One more timed round of each, so the ratio is printed next to criterion's figures.
        let rounds = if smoke() { 1 } else { 3 };
        let mut runner_time = Duration::ZERO;
        let mut plain_time = Duration::ZERO;
        for _ in 0..rounds {
            let t = Instant::now();
            rt.block_on(execute(&props, Phase::Run, &quiet()))
                .expect("run");
            runner_time += t.elapsed();
            let t = Instant::now();
            rt.block_on(plain_loop(&client, records, ops, update_share));
            plain_time += t.elapsed();
        }
        let runner_ops = (ops * rounds) as f64 / runner_time.as_secs_f64();
        let plain_ops = (ops * rounds) as f64 / plain_time.as_secs_f64();
        println!(
            "harness_{mix}: microshard runner {runner_ops:.0} ops/s, plain driver loop {plain_ops:.0} ops/s, ratio {:.3} (stand-in figures, {THREADS} clients)",
            runner_ops / plain_ops
        );
    }
    rt.block_on(server.shutdown());
}

criterion_group!(benches, harness);
criterion_main!(benches);
