//! How much does microshard's runner cost compared with a plain loop over the `mongodb` crate?
//!
//! For workloads A, C and S2, the runner (`microshard::runner::execute`, the engine behind
//! `microshard run`) and a plain loop over the driver do the same operations — the same read /
//! update mix, field count and field length, uniform keys hashed as YCSB hashes them — at the same
//! concurrency against the same stand-in mongod. The stand-in runs as a separate process, so the
//! CPU time this process uses is the client's alone. Rounds alternate (runner, plain, runner, ...)
//! so that a change in the machine's load hits both sides alike; each side builds a fresh driver
//! client per round (the runner connects once per run).
//!
//! Figures printed at the end, per workload: throughput runner / plain (target ≥ 0.9) and client
//! CPU per operation runner / plain (target ≤ 1.15). They are stand-in figures: they say what the
//! client costs, never what MongoDB does.
//!
//! `cargo bench --bench harness` measures (`MICROSHARD_BENCH_OPS`, `MICROSHARD_BENCH_ROUNDS`,
//! `MICROSHARD_BENCH_THREADS` change the defaults 30000, 5 and 8). Run without `--bench` (as
//! `cargo test --all-targets` does) or with `--test` or `MICROSHARD_BENCH_SMOKE=1`, it is the smoke
//! mode: tiny sizes, one round.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use microshard::measure::ClientCpu;
use microshard::runner::{ExecuteOptions, Phase, execute};
use microshard::workload::{Properties, build_key_name};
use mongodb::bson::{Binary, RawDocumentBuf, doc, spec::BinarySubtype};
use rand::{Rng, SeedableRng};

fn smoke() -> bool {
    let args: Vec<String> = std::env::args().collect();
    std::env::var_os("MICROSHARD_BENCH_SMOKE").is_some()
        || args.iter().any(|a| a == "--test")
        || !args.iter().any(|a| a == "--bench")
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One workload as both sides run it.
struct Mix {
    name: &'static str,
    /// The workload file the runner reads (`workloads/NAME`).
    file: &'static str,
    read_share: f64,
    field_count: u32,
    field_length: usize,
}

const MIXES: [Mix; 3] = [
    Mix {
        name: "A (50/50 read/update)",
        file: "workloads/workloada",
        read_share: 0.5,
        field_count: 10,
        field_length: 100,
    },
    Mix {
        name: "C (read only)",
        file: "workloads/workloadc",
        read_share: 1.0,
        field_count: 10,
        field_length: 100,
    },
    Mix {
        name: "S2 (10/90 read/update, 8×250 B)",
        file: "workloads/S2",
        read_share: 0.1,
        field_count: 8,
        field_length: 250,
    },
];

/// The stand-in mongod, a child process killed on drop.
struct Standin {
    child: Child,
    port: u16,
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn start_standin(dbpath: &Path) -> Standin {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_microshard"))
        .args(["standin", "mongod", "--bind_ip", "127.0.0.1", "--quiet"])
        .arg("--port")
        .arg(port.to_string())
        .arg("--dbpath")
        .arg(dbpath)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the stand-in");
    Standin { child, port }
}

fn properties(mix: &Mix, uri: &str, records: u64, ops: u64, threads: u64) -> Properties {
    let mut p = Properties::new();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(mix.file);
    p.load_file(&file).expect("workload file");
    for kv in [
        format!("mongodb.url={uri}"),
        format!("recordcount={records}"),
        format!("operationcount={ops}"),
        format!("threadcount={threads}"),
        // The plain loop draws uniform keys; so does the runner here.
        "requestdistribution=uniform".to_string(),
    ] {
        p.apply_override(&kv).expect("property");
    }
    p
}

fn quiet() -> ExecuteOptions {
    ExecuteOptions {
        ..ExecuteOptions::default()
    }
}

/// The same operations without microshard: `threads` tasks sharing one driver client, no
/// measurement, no pacing, documents read as raw BSON (the cheapest the driver allows).
async fn plain_loop(uri: &str, mix: &Mix, records: u64, ops: u64, threads: u64) {
    let client = mongodb::Client::with_uri_str(format!("{uri}&maxPoolSize={threads}"))
        .await
        .expect("driver client");
    let coll = client
        .database("ycsb")
        .collection::<RawDocumentBuf>("usertable");
    let per = ops / threads;
    let (read_share, field_count, field_length) =
        (mix.read_share, mix.field_count, mix.field_length);
    let mut tasks = Vec::new();
    for _ in 0..threads {
        let coll = coll.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::SmallRng::from_os_rng();
            for _ in 0..per {
                let keynum = rng.random_range(0..records) as i64;
                let key = build_key_name(keynum, 1, false);
                if rng.random::<f64>() < read_share {
                    let _ = coll.find_one(doc! {"_id": key}).await;
                } else {
                    let bytes: Vec<u8> = (0..field_length)
                        .map(|_| rng.random_range(0x20..0x7f))
                        .collect();
                    let field = format!("field{}", rng.random_range(0..field_count));
                    let set =
                        doc! {"$set": {field: Binary { subtype: BinarySubtype::Generic, bytes }}};
                    let _ = coll.update_one(doc! {"_id": key}, set).await;
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Wall time and this process's CPU time of one round.
fn measure<F: std::future::Future<Output = ()>>(
    rt: &tokio::runtime::Runtime,
    f: F,
) -> (Duration, u64) {
    let cpu = ClientCpu::now();
    let t = Instant::now();
    rt.block_on(f);
    let wall = t.elapsed();
    let used = ClientCpu::now().since(&cpu);
    (wall, used.user_us + used.system_us)
}

#[derive(Default)]
struct Side {
    wall: Duration,
    cpu_us: u64,
    ops: u64,
}

impl Side {
    fn ops_per_s(&self) -> f64 {
        self.ops as f64 / self.wall.as_secs_f64().max(1e-9)
    }
    fn cpu_us_per_op(&self) -> f64 {
        self.cpu_us as f64 / self.ops.max(1) as f64
    }
}

fn main() {
    let smoke = smoke();
    let threads = env_or("MICROSHARD_BENCH_THREADS", 8).max(1);
    let (records, ops, rounds) = if smoke {
        (500, 400, 1)
    } else {
        (
            env_or("MICROSHARD_BENCH_RECORDS", 10_000),
            env_or("MICROSHARD_BENCH_OPS", 30_000),
            env_or("MICROSHARD_BENCH_ROUNDS", 5).max(1),
        )
    };
    let ops = ops / threads * threads;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_standin(dir.path());
    let uri = format!(
        "mongodb://127.0.0.1:{}/ycsb?directConnection=true&w=1",
        server.port
    );
    // Wait until the stand-in answers.
    rt.block_on(async {
        let client = mongodb::Client::with_uri_str(&uri)
            .await
            .expect("driver client");
        for _ in 0..200 {
            if client
                .database("admin")
                .run_command(doc! {"ping": 1})
                .await
                .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the stand-in did not answer on {uri}");
    });

    println!(
        "harness: microshard runner vs plain mongodb-crate loop, stand-in mongod (separate process, \
         not MongoDB), {threads} clients, {records} records, {ops} ops × {rounds} rounds, {} cores{}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if smoke {
            " -- SMOKE MODE: tiny sizes (and usually an unoptimised build), not a measurement"
        } else {
            ""
        }
    );
    for mix in &MIXES {
        let load = properties(mix, &uri, records, 0, threads);
        rt.block_on(async {
            let client = mongodb::Client::with_uri_str(&uri).await.expect("client");
            let _ = client.database("ycsb").drop().await;
        });
        rt.block_on(execute(&load, Phase::Load, &quiet()))
            .expect("load");
        let props = properties(mix, &uri, records, ops, threads);
        let mut runner = Side::default();
        let mut plain = Side::default();
        let mut ratios = Vec::new();
        for _ in 0..rounds {
            let (wall, cpu) = measure(&rt, async {
                execute(&props, Phase::Run, &quiet()).await.expect("run");
            });
            runner.wall += wall;
            runner.cpu_us += cpu;
            runner.ops += ops;
            let runner_round = wall;
            let (wall, cpu) = measure(&rt, plain_loop(&uri, mix, records, ops, threads));
            plain.wall += wall;
            plain.cpu_us += cpu;
            plain.ops += ops;
            ratios.push(wall.as_secs_f64() / runner_round.as_secs_f64().max(1e-9));
        }
        ratios.sort_by(f64::total_cmp);
        let (lo, hi) = (ratios[0], ratios[ratios.len() - 1]);
        let median = ratios[ratios.len() / 2];
        println!(
            "  {:<34} throughput {:>8.0} vs {:>8.0} ops/s = {:.3}× (per round: median {median:.3}, {lo:.3}–{hi:.3}; target ≥ 0.9)   \
             client CPU {:>6.1} vs {:>6.1} µs/op = {:.3}× (target ≤ 1.15)",
            mix.name,
            runner.ops_per_s(),
            plain.ops_per_s(),
            runner.ops_per_s() / plain.ops_per_s().max(1e-9),
            runner.cpu_us_per_op(),
            plain.cpu_us_per_op(),
            runner.cpu_us_per_op() / plain.cpu_us_per_op().max(1e-9),
        );
    }
    drop(server);
}
