//! Cost of recording one operation (target: tens of ns), and of one status-interval aggregation.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use microshard::measure::{MeasurementConfig, Measurements, Status};

fn record(c: &mut Criterion) {
    let m = Measurements::new(MeasurementConfig::default());
    let rec = m.client();
    let mut i = 0u64;
    c.bench_function("record READ ok", |b| {
        b.iter(|| {
            i = i.wrapping_add(7919);
            rec.record(black_box("READ"), 100 + (i % 5000), None, Status::Ok);
        })
    });
    c.bench_function("record UPDATE failed", |b| {
        b.iter(|| {
            i = i.wrapping_add(7919);
            rec.record(black_box("UPDATE"), 100 + (i % 5000), None, Status::Error);
        })
    });

    let mut h = microshard::measure::hdr::new_histogram();
    c.bench_function("baseline: Histogram::record", |b| {
        b.iter(|| {
            i = i.wrapping_add(7919);
            let _ = h.record(black_box(100 + (i % 5000)));
        })
    });
    let mx = std::sync::Mutex::new(0u64);
    c.bench_function("baseline: Mutex lock+add", |b| {
        b.iter(|| {
            i = i.wrapping_add(7919);
            let mut g = mx.lock().unwrap();
            *g = g.wrapping_add(black_box(i));
        })
    });

    let both = Measurements::new(MeasurementConfig {
        interval: microshard::measure::IntervalMode::Both,
        ..MeasurementConfig::default()
    });
    let rec2 = both.client();
    c.bench_function("record READ ok, interval=both", |b| {
        b.iter(|| {
            i = i.wrapping_add(7919);
            rec2.record(black_box("READ"), 100 + (i % 5000), Some(200), Status::Ok);
        })
    });

    // The other measurement types, against the default (hdrhistogram) in the same run.
    for t in [
        microshard::measure::MeasurementType::Raw,
        microshard::measure::MeasurementType::TimeSeries,
        microshard::measure::MeasurementType::HdrHistogramAndRaw,
    ] {
        let m = Measurements::new(MeasurementConfig {
            measurement_type: t,
            ..MeasurementConfig::default()
        });
        let rec = m.client();
        c.bench_function(&format!("record READ ok, measurementtype={t:?}"), |b| {
            b.iter(|| {
                i = i.wrapping_add(7919);
                rec.record(black_box("READ"), 100 + (i % 5000), None, Status::Ok);
            })
        });
    }

    let agg = Measurements::new(MeasurementConfig::default());
    let clients: Vec<_> = (0..64).map(|_| agg.client()).collect();
    c.bench_function("take_interval, 64 clients x 3 ops", |b| {
        b.iter(|| {
            for (n, client) in clients.iter().enumerate() {
                client.record("READ", 100 + n as u64, None, Status::Ok);
                client.record("UPDATE", 2000 + n as u64, None, Status::Ok);
                client.record("INSERT", 90_000 + n as u64, None, Status::Ok);
            }
            black_box(agg.take_interval());
        })
    });
}

criterion_group!(benches, record);
criterion_main!(benches);
