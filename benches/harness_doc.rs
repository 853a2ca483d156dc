//! Building one YCSB record for the driver: a `bson::Document` versus the raw BSON the binding builds.
//!
//! Both variants include the serialization the driver performs in `insert_one`
//! (`to_raw_document_buf`), so the figures compare what one insert costs on the client before
//! any I/O. `cargo bench --bench harness_doc -- --test` is the smoke mode.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use microshard::db::record_document;
use microshard::workload::FieldValue;
use mongodb::bson::{Binary, Document, spec::BinarySubtype, to_raw_document_buf};

fn values(fields: usize, len: usize) -> Vec<FieldValue> {
    (0..fields)
        .map(|i| FieldValue {
            name: Arc::from(format!("field{i}")),
            bytes: vec![b'a' + (i as u8 % 26); len],
        })
        .collect()
}

fn as_document(key: &str, values: &[FieldValue]) -> Document {
    let mut d = Document::new();
    d.insert("_id", key);
    for v in values {
        d.insert(
            &*v.name,
            Binary {
                subtype: BinarySubtype::Generic,
                bytes: v.bytes.clone(),
            },
        );
    }
    d
}

fn documents(c: &mut Criterion) {
    // YCSB's default record (10 × 100 B) and the seed benchmark's (8 × 250 B).
    for (fields, len) in [(10usize, 100usize), (8, 250)] {
        let v = values(fields, len);
        let key = "user6284781860667377211";
        let mut g = c.benchmark_group(format!("record_{fields}x{len}"));
        g.bench_function("bson_document", |b| {
            b.iter(|| {
                let d = as_document(black_box(key), black_box(&v));
                black_box(to_raw_document_buf(&d).expect("serializes"))
            })
        });
        g.bench_function("raw_document_buf", |b| {
            b.iter(|| {
                let d = record_document(black_box(key), black_box(&v));
                black_box(to_raw_document_buf(&d).expect("serializes"))
            })
        });
        g.finish();
    }
}

criterion_group!(benches, documents);
criterion_main!(benches);
