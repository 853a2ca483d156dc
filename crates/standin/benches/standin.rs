//! The stand-in's own per-operation cost (capacity model off), through the official driver:
//! insert one document and find one by `_id`. These figures bound what `calibrate` and `demo` can show.

use criterion::{Criterion, criterion_group, criterion_main};
use microshard_standin::{self as standin, Role, StandinConfig};
use mongodb::Client;
use mongodb::bson::{Document, doc};

fn bench(c: &mut Criterion) {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("runtime: {e}"),
    };
    let (handle, coll) = rt.block_on(async {
        let cfg =
            StandinConfig::from_args(Role::Mongod, &["--port".into(), "0".into()]).expect("flags");
        let h = standin::spawn(cfg).expect("stand-in");
        let client = Client::with_uri_str(h.uri()).await.expect("client");
        let coll = client.database("ycsb").collection::<Document>("usertable");
        let docs: Vec<Document> = (0..10_000)
            .map(|i| doc! {"_id": format!("user{i}"), "field0": "x".repeat(100)})
            .collect();
        coll.insert_many(docs).await.expect("load");
        (h, coll)
    });
    let mut group = c.benchmark_group("standin");
    let mut next = 0u64;
    group.bench_function("insert_one", |b| {
        b.iter(|| {
            next += 1;
            let d = doc! {"_id": format!("bench{next}"), "field0": "x".repeat(100)};
            rt.block_on(async { coll.insert_one(d).await })
                .expect("insert");
        })
    });
    let mut k = 0u64;
    group.bench_function("find_one_by_id", |b| {
        b.iter(|| {
            k = (k * 31 + 7) % 10_000;
            let found = rt
                .block_on(async { coll.find_one(doc! {"_id": format!("user{k}")}).await })
                .expect("find");
            assert!(found.is_some());
        })
    });
    group.finish();
    rt.block_on(handle.shutdown());
}

criterion_group!(benches, bench);
criterion_main!(benches);
