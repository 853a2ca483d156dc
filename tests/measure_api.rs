//! The measure module through its public API, the way the runner drives it: recorders moved into
//! tokio tasks, status lines while they run, then the YCSB export and the result document.

use microshard::measure::{
    self, ExporterKind, MeasurementConfig, Measurements, Overall, RunDocument, Status, StatusInput,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_record_and_reports_add_up() {
    let cfg = MeasurementConfig::from_lookup(&|k: &str| match k {
        "hdrhistogram.percentiles" => Some("50,99.9".to_string()),
        _ => None,
    })
    .unwrap();
    let m = Measurements::new(cfg.clone());
    let mut tasks = Vec::new();
    for t in 0..4u64 {
        let rec = m.client();
        tasks.push(tokio::spawn(async move {
            for i in 0..500u64 {
                let status = if i % 100 == 99 {
                    Status::NotFound
                } else {
                    Status::Ok
                };
                rec.record("READ", 100 + t * 10 + i, None, status);
                if i % 10 == 0 {
                    rec.record("UPDATE", 2_000 + i, None, Status::Ok);
                    tokio::task::yield_now().await;
                }
            }
            rec.record_without_status("CLEANUP", 5, None);
        }));
    }
    // A status line while the tasks run: its shape does not depend on timing.
    let interval = m.take_interval();
    let line = measure::status_line(&StatusInput {
        label: "",
        now: chrono::Local::now(),
        elapsed_ms: 1000,
        total_ops: 10,
        prev_ops: 0,
        prev_elapsed_ms: 0,
        todo_ops: 0,
        summaries: &interval,
    });
    assert!(
        line.contains(" 1 sec: 10 operations; 10 current ops/sec; "),
        "{line}"
    );
    for t in tasks {
        t.await.unwrap();
    }
    let rest = m.take_interval();
    let counted: u64 = interval
        .entries
        .iter()
        .chain(rest.entries.iter())
        .filter(|e| e.name == "READ")
        .map(|e| match e.stats {
            measure::SummaryStats::Hdr { count, .. } => count,
            _ => 0,
        })
        .sum();
    assert_eq!(counted, 4 * 495, "every READ is in exactly one interval");

    let run = m.finish();
    let names: Vec<&str> = run.measurements.iter().map(|x| x.name.as_str()).collect();
    // UPDATE (first at i=0) was measured before READ-FAILED (first at i=99); both are in bin 10.
    assert_eq!(names, ["READ", "CLEANUP", "UPDATE", "READ-FAILED"]);
    let read = run.get("READ").unwrap();
    assert_eq!(read.count(), 4 * 495);
    assert_eq!(
        read.statuses,
        vec![(Status::Ok, 4 * 495), (Status::NotFound, 4 * 5)]
    );

    let overall = Overall {
        runtime_ms: 2000,
        operations: 4 * 550,
    };
    let text = ExporterKind::Text.render(&run, &overall, &cfg);
    assert!(text.starts_with(
        "[OVERALL], RunTime(ms), 2000\n[OVERALL], Throughput(ops/sec), 1100.0\n[READ], Operations, 1980\n"
    ));
    assert!(text.contains("[READ], 99.9PercentileLatency(us), "));
    assert!(text.contains("[READ], Return=NOT_FOUND, 20\n"));

    let started = chrono::Utc::now();
    let doc = RunDocument::new("run", started, started, &overall, &run).unwrap();
    let json = serde_json::to_string_pretty(&doc).unwrap();
    let back: RunDocument = serde_json::from_str(&json).unwrap();
    let merged = RunDocument::merge(&[back.clone(), back]).unwrap();
    let r = merged.measurement("READ").unwrap();
    assert_eq!(r.count, 2 * 4 * 495);
    assert_eq!(r.p50, doc.measurement("READ").unwrap().p50);
    assert_eq!(merged.runs, 2);
}
