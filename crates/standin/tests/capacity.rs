//! The capacity model: W slots × T µs gives a ceiling of W·10⁶/T ops/s, per stand-in and through mongos.
//!
//! These assert the model's behaviour (the ceiling it enforces), not the machine's speed: the ceilings
//! are set far below what the driver and stand-in sustain unthrottled, and the load is over-driven.
//! A binary of its own (the other is `standin.rs`), so no other test loads the machine meanwhile.

mod util;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::util::*;
use microshard_standin::Role;
use mongodb::Client;
use mongodb::bson::{Document, doc};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

// Inserts are charged per document, so the data set stays small.
const KEYS: usize = 200;

/// Over-drives `client` with point reads from `tasks` concurrent tasks; returns measured ops/s.
async fn measure(client: &Client, tasks: usize) -> f64 {
    let coll = client.database("ycsb").collection::<Document>("usertable");
    let done = Arc::new(AtomicU64::new(0));
    let stop_at = Instant::now() + Duration::from_millis(3600);
    let mut handles = Vec::new();
    for t in 0..tasks {
        let coll = coll.clone();
        let done = done.clone();
        handles.push(tokio::spawn(async move {
            let mut i = t * 7919;
            let mut n = 0u64;
            // Bounded in count and time.
            while Instant::now() < stop_at && n < 100_000 {
                i = (i * 31 + 17) % KEYS;
                let found = coll
                    .find_one(doc! {"_id": format!("user{i}")})
                    .await
                    .unwrap();
                assert!(found.is_some());
                done.fetch_add(1, Ordering::Relaxed);
                n += 1;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (c0, t0) = (done.load(Ordering::Relaxed), Instant::now());
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let (c1, t1) = (done.load(Ordering::Relaxed), Instant::now());
    for h in handles {
        h.await.unwrap();
    }
    (c1 - c0) as f64 / (t1 - t0).as_secs_f64()
}

async fn load(client: &Client) {
    let coll = client.database("ycsb").collection::<Document>("usertable");
    let docs: Vec<Document> = (0..KEYS)
        .map(|i| doc! {"_id": format!("user{i}"), "field0": "x"})
        .collect();
    coll.insert_many(docs).ordered(false).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_standin_ceiling_is_w_times_million_over_t() {
    let _g = SERIAL.lock().await;
    // W=2, T=10 ms → 200 ops/s (a 2-core CI box shared with builds sustains several times that unthrottled).
    let h = start(Role::Mongod, "--service-time-us 10000 --workers 2");
    let client = Client::with_uri_str(format!("{}&maxPoolSize=64", h.uri()))
        .await
        .unwrap();
    load(&client).await;
    let rate = measure(&client, 24).await;
    let ceiling = 200.0;
    eprintln!("one stand-in: measured {rate:.0} ops/s against a ceiling of {ceiling}");
    assert!(
        (rate - ceiling).abs() / ceiling < 0.15,
        "measured {rate:.0} ops/s, ceiling {ceiling}"
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongos_over_four_shards_has_four_times_the_ceiling() {
    let _g = SERIAL.lock().await;
    // Each shard W=1, T=25 ms → 40 ops/s; four shards behind mongos → 160 ops/s.
    let c = Cluster::start(4, "--service-time-us 25000 --workers 1", "").await;
    load(&c.client).await;
    let rate = measure(&c.client, 48).await;
    let ceiling = 4.0 * 40.0;
    eprintln!("mongos over 4: measured {rate:.0} ops/s against a ceiling of {ceiling}");
    assert!(
        (rate - ceiling).abs() / ceiling < 0.15,
        "measured {rate:.0} ops/s, ceiling {ceiling}"
    );
    c.shutdown().await;
}
