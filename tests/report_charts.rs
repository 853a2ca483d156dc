//! Every chart kind drawn from realistic results and checked as a reader would see it: text laid
//! out with the machine's real fonts never overlaps the data area or other text, ticks read as
//! people write numbers, invalid cells are not drawn as normal bars, and a PNG of each chart is
//! left in the test's target directory to be looked at.

use std::path::PathBuf;

use microshard::experiment::model::{
    CellFile, CellSummary, CompareCommand, ExperimentConfig, Latency, SweepFile, SweepPoint,
};
use microshard::measure::RunDocument;
use microshard::report::charts::{self, Chart};
use microshard::report::png;

/// A document whose READ histogram has the latencies the cell's summary states (`p50` and the
/// multiples `cell` gives p95, p99 and p99.9), since reports merge repetitions' histograms.
fn document(p50: f64) -> RunDocument {
    let shape = [(1, 0.25), (500, 1.0), (450, 3.0), (40, 8.0), (9, 40.0)];
    crate::util::read_document(
        shape
            .iter()
            .flat_map(|&(times, factor)| std::iter::repeat_n((p50 * factor) as u64, times)),
    )
}

fn config(topologies: &[&str], scenarios: &[&str], repeat: u32) -> ExperimentConfig {
    let command = CompareCommand {
        name: "compare-20260101-000000".into(),
        topologies: topologies.iter().map(|s| s.to_string()).collect(),
        baseline: topologies[0].to_string(),
        scenarios: scenarios.iter().map(|s| s.to_string()).collect(),
        threads: Some(16),
        sweep_duration_s: None,
        repeat,
        ..Default::default()
    };
    ExperimentConfig {
        scale_note: "100000 records, 1 KB each (laptop scale)".into(),
        ..crate::util::experiment_config(command, false)
    }
}

fn cell(topology: &str, scenario: &str, repeat: u32, tp: f64, p50: f64) -> CellFile {
    let latency = Latency {
        avg: p50 * 1.2,
        min: p50 / 4.0,
        max: p50 * 200.0,
        p50,
        p95: p50 * 3.0,
        p99: p50 * 8.0,
        p999: p50 * 40.0,
    };
    CellFile {
        result: document(p50),
        ..crate::util::standin_cell((topology, scenario, repeat), tp, 60.0, latency)
    }
}

/// Five scenarios on three topologies, three repetitions each, spanning 200 ops/s to 1.2 M ops/s,
/// with one invalid and one degraded cell, and the baseline invalid in S4.
fn full_matrix() -> (ExperimentConfig, Vec<CellFile>) {
    let topologies = ["single", "microshard-2", "microshard-4"];
    let scenarios = [
        "S1 load",
        "S2 point reads",
        "S3 updates",
        "S4 scans of 100 records",
        "S5 read-modify-write",
    ];
    let cfg = config(&topologies, &scenarios, 3);
    let mut cells = Vec::new();
    for (si, s) in scenarios.iter().enumerate() {
        for (ti, t) in topologies.iter().enumerate() {
            for r in 1..=3u32 {
                let base = [150_000.0, 1_200_000.0, 80_000.0, 200.0, 45_000.0][si];
                let tp = base * (1.0 + 0.6 * ti as f64) * (1.0 + 0.04 * f64::from(r));
                let mut c = cell(t, s, r, tp, 150.0 * (si + 1) as f64 * (1.0 + ti as f64));
                if si == 2 && ti == 1 && r == 2 {
                    c.summary
                        .validity
                        .invalid("sh1 (127.0.0.1:27019) stopped answering at 12.0 s for 9.0 s");
                }
                if si == 1 && ti == 2 {
                    c.summary
                        .validity
                        .degrade("2.1% of operations failed (WriteConflict)");
                }
                if si == 3 && ti == 0 {
                    c.summary.validity.invalid("the run stalled for 30 s");
                }
                cells.push(c);
            }
        }
    }
    (cfg, cells)
}

fn seed_sweep() -> SweepFile {
    let points = [
        (1, 900.0),
        (5, 2900.0),
        (10, 3700.0),
        (20, 3850.0),
        (50, 2500.0),
        (100, 1200.0),
    ]
    .iter()
    .map(|&(threads, tp)| {
        let mut point = crate::util::sweep_point(threads, tp);
        point.summary.runtime_ms = 5_000.0;
        point.summary.latency.p50 = f64::from(threads) * 1e6 / tp;
        point.summary.latency.p99 = f64::from(threads) * 4e6 / tp;
        point.summary.server_version = Some("7.0.14-standin".into());
        point
    })
    .collect();
    SweepFile {
        label: "S2 point reads on microshard-2".into(),
        points,
        max_threads: Some(20),
        knee_threads: Some(10),
        tolerance: 0.05,
        standin: true,
        ..Default::default()
    }
}

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_charts");
    std::fs::create_dir_all(&dir).expect("output directory");
    dir
}

/// Writes the chart as SVG and PNG for a person to look at; returns the PNG's path.
fn keep(name: &str, chart: &Chart) -> PathBuf {
    let dir = out_dir();
    std::fs::write(dir.join(format!("{name}.svg")), &chart.svg).expect("svg written");
    let png = png::svg_to_png(&chart.svg).expect("PNG drawn with this machine's fonts");
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).expect("png written");
    println!("chart {name}: {}", path.display());
    path
}

fn overlap(a: (f32, f32, f32, f32), b: (f32, f32, f32, f32)) -> f32 {
    let w = a.2.min(b.2) - a.0.max(b.0);
    let h = a.3.min(b.3) - a.1.max(b.1);
    if w > 0.0 && h > 0.0 { w * h } else { 0.0 }
}

/// No text inside the data area, no two texts on top of each other, nothing off the canvas.
fn assert_layout(name: &str, chart: &Chart) {
    let boxes = png::text_boxes(&chart.svg).expect("laid out");
    let texts = chart.svg.matches("<text").count();
    assert_eq!(
        boxes.len(),
        texts,
        "{name}: every <text> is laid out with a real font"
    );
    let p = chart.plot_area;
    let plot = (p.x0 as f32, p.y0 as f32, p.x1 as f32, p.y1 as f32);
    assert!(p.x1 - p.x0 > 300 && p.y1 - p.y0 > 200, "{name}: {p:?}");
    for b in &boxes {
        let r = (b.x0, b.y0, b.x1, b.y1);
        // The significance mark `*` belongs on its bar, inside the data area, as in the table.
        assert!(
            b.text == "*" || overlap(r, plot) < 1.0,
            "{name}: text {:?} at {r:?} overlaps the data area {plot:?}",
            b.text
        );
        assert!(
            b.x0 >= 0.0 && b.y0 >= 0.0 && b.x1 <= chart.width as f32 && b.y1 <= chart.height as f32,
            "{name}: text {:?} at {r:?} leaves the {}×{} canvas",
            b.text,
            chart.width,
            chart.height
        );
    }
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let o = overlap((a.x0, a.y0, a.x1, a.y1), (b.x0, b.y0, b.x1, b.y1));
            assert!(
                o < 2.0,
                "{name}: text {:?} ({:?}) overlaps {:?} ({:?})",
                a.text,
                (a.x0, a.y0, a.x1, a.y1),
                b.text,
                (b.x0, b.y0, b.x1, b.y1)
            );
        }
    }
}

/// Every number drawn reads as people write it.
fn assert_human_ticks(name: &str, chart: &Chart) {
    let boxes = png::text_boxes(&chart.svg).expect("laid out");
    for b in &boxes {
        let t = b.text.trim();
        let digits = t.chars().filter(char::is_ascii_digit).count();
        assert!(
            !(digits >= 4 && t.chars().all(|c| c.is_ascii_digit() || c == '.')),
            "{name}: tick {t:?} is not written for people"
        );
        assert!(!t.ends_with(".0"), "{name}: {t:?}");
    }
}

#[test]
fn throughput_chart_reads_like_a_publication() {
    let (cfg, cells) = full_matrix();
    let report = microshard::report::build_from(&cfg, &cells);
    let chart = charts::throughput(&report).expect("drawn");
    keep("throughput", &chart);
    assert_layout("throughput", &chart);
    assert_human_ticks("throughput", &chart);
    let texts: Vec<String> = png::text_boxes(&chart.svg)
        .expect("laid out")
        .into_iter()
        .map(|b| b.text)
        .collect();
    // Scenario names under the plot, horizontal; topologies in the legend beside it.
    let plot = chart.plot_area;
    for b in png::text_boxes(&chart.svg).expect("laid out") {
        if b.text.starts_with("S2 point") {
            assert!(b.y0 >= plot.y1 as f32, "scenario label under the plot");
            assert!(b.x1 - b.x0 > b.y1 - b.y0, "scenario label is horizontal");
        }
        if b.text.starts_with("microshard-4") {
            assert!(b.x0 >= plot.x1 as f32, "legend to the right of the data");
        }
    }
    assert!(texts.iter().any(|t| t.ends_with(" M")), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.contains("min–max")),
        "whiskers explained"
    );
    assert!(texts.iter().any(|t| t.contains("STAND-IN")));
    assert!(
        texts.iter().any(|t| t.contains("7.0.14-standin")),
        "server version in the title block"
    );
    assert!(texts.iter().any(|t| t.contains("No single line for S4")));
    // Which cells and why is said once on the page (Validity); the chart counts and points there.
    let words = texts.join(" ");
    assert!(
        words.contains("3 of 15 figures are degraded or invalid (1 degraded, drawn hatched in their colour; 2 invalid, drawn hatched grey)")
            && words.contains("Validity list"),
        "{texts:?}"
    );
    assert!(
        !words.contains("stopped answering"),
        "no per-cell notes: {words}"
    );
    assert!(texts.iter().any(|t| t.contains("degraded: see Validity")));
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("S4 scans of 100 records: at most")),
        "tiny bars are pointed to the table: {texts:?}"
    );
    // An invalid bar is white with a grey outline and hatched, never a normal bar: microshard-2
    // has 4 solid bars (S3 is invalid) and its legend swatch.
    let orange = chart
        .svg
        .matches("fill=\"#FF7F0E\" stroke=\"none\"")
        .count();
    assert_eq!(orange, 4 + 1, "microshard-2: 5 scenarios, S3 invalid");
}

#[test]
fn latency_chart_reads_like_a_publication() {
    let (cfg, cells) = full_matrix();
    let report = microshard::report::build_from(&cfg, &cells);
    let chart = charts::latency(&report).expect("drawn");
    keep("latency", &chart);
    assert_layout("latency", &chart);
    let texts: Vec<String> = png::text_boxes(&chart.svg)
        .expect("laid out")
        .into_iter()
        .map(|b| b.text)
        .collect();
    for p in ["p95", "p99", "p99.9"] {
        assert!(texts.iter().any(|t| t == p), "{p} in the legend: {texts:?}");
    }
    assert!(
        texts.iter().any(|t| t.ends_with(" ms")) && texts.iter().any(|t| t.ends_with(" µs")),
        "log axis in human units: {texts:?}"
    );
    // The title names no unit the axis does not use.
    let title = &texts[0];
    assert!(
        title.starts_with("Latency percentiles") && !title.contains("(µs"),
        "{title}"
    );
    // Points, not bars from the axis floor: no rectangle in a topology's
    // colour, a dot per measured cell (and a legend swatch) instead.
    for colour in ["#1F77B4", "#FF7F0E", "#2CA02C"] {
        assert!(
            !chart
                .svg
                .lines()
                .any(|l| l.starts_with("<rect") && l.contains(colour)),
            "no bar in {colour}"
        );
        assert!(
            chart
                .svg
                .lines()
                .any(|l| l.starts_with("<circle") && l.contains(colour)),
            "a dot in {colour}"
        );
    }
    assert!(
        texts
            .join(" ")
            .contains("The axis starts at the power of ten")
    );
}

/// A load (S1) drawn beside run phases is shaded apart, named "load", and has
/// no baseline ceiling over it; the run scenarios keep theirs.
#[test]
fn a_load_is_set_apart_from_the_runs_without_a_ceiling() {
    let cfg = config(&["single", "microshard-2"], &["S1", "S2"], 2);
    let mut cells = Vec::new();
    for (t, k) in [("single", 1.0), ("microshard-2", 1.7)] {
        for r in 1..=2 {
            let mut load = cell(t, "S1", r, 14_000.0 * k, 300.0);
            load.summary.phase = "load".into();
            load.summary.main_op = "INSERT".into();
            load.summary.runtime_ms = 400.0;
            cells.push(load);
            cells.push(cell(t, "S2", r, 25_000.0 * k, 200.0));
        }
    }
    let report = microshard::report::build_from(&cfg, &cells);
    let chart = charts::throughput(&report).expect("drawn");
    keep("throughput-load", &chart);
    assert_layout("throughput-load", &chart);
    let texts: Vec<String> = (png::text_boxes(&chart.svg).expect("laid out").into_iter())
        .map(|b| b.text)
        .collect();
    let words = texts.join(" ");
    assert!(texts.iter().any(|t| t == "S1 (load)"), "{texts:?}");
    assert!(words.contains("load phase (shaded)"), "{words}");
    assert!(words.contains("S1 (shaded): the load phase"), "{words}");
    // The ceiling's dashes (8 px long) lie over S2 only, right of the shaded S1 band.
    let band_right = chart
        .svg
        .lines()
        .find(|l| l.starts_with("<rect") && l.contains("#ECECEC"))
        .and_then(|l| {
            let x: i32 = l.split("x=\"").nth(1)?.split('"').next()?.parse().ok()?;
            let w: i32 = l
                .split("width=\"")
                .nth(1)?
                .split('"')
                .next()?
                .parse()
                .ok()?;
            Some(x + w)
        })
        .expect("the load band is drawn");
    let dashes: Vec<(i32, i32)> = (chart.svg.lines())
        .filter(|l| l.contains("stroke=\"#000000\" stroke-width=\"2\" points="))
        .filter_map(|l| {
            let pts = l.split("points=\"").nth(1)?;
            let xs: Vec<i32> = (pts.split_whitespace())
                .filter_map(|p| p.split(',').next()?.parse().ok())
                .collect();
            (xs.len() == 2 && xs[1] - xs[0] == 8).then(|| (xs[0], xs[1]))
        })
        .collect();
    assert!(!dashes.is_empty(), "S2 has its ceiling");
    assert!(
        dashes.iter().all(|&(a, _)| a > band_right),
        "no ceiling over the load: {dashes:?}, band ends at {band_right}"
    );
    let latency = charts::latency(&report).expect("drawn");
    keep("latency-load", &latency);
    assert_layout("latency-load", &latency);
}

#[test]
fn sweep_chart_labels_every_thread_count_and_marks_peak_and_knee() {
    let chart = charts::sweep(&seed_sweep(), None, "100000 records").expect("drawn");
    keep("sweep", &chart);
    assert_layout("sweep", &chart);
    let boxes = png::text_boxes(&chart.svg).expect("laid out");
    let plot = chart.plot_area;
    for t in ["1", "5", "10", "20", "50", "100"] {
        assert!(
            boxes.iter().any(|b| b.text == t && b.y0 >= plot.y1 as f32),
            "thread count {t} labelled under the axis"
        );
    }
    let texts: Vec<&str> = boxes.iter().map(|b| b.text.as_str()).collect();
    assert!(texts.iter().any(|t| t.starts_with("peak: 20 threads")));
    assert!(texts.iter().any(|t| t.starts_with("knee: 10 threads")));
    assert!(
        texts.iter().any(|t| t.contains("Knee rule")),
        "the rule is in the caption: {texts:?}"
    );
}

/// The latency beside the sweep: both percentiles, the knee, the sizes.
#[test]
fn sweep_latency_chart_sits_beside_the_throughput_chart() {
    let chart = charts::sweep_latency(&seed_sweep(), None, "100000 records").expect("drawn");
    keep("sweep-latency", &chart);
    assert_layout("sweep-latency", &chart);
    let boxes = png::text_boxes(&chart.svg).expect("laid out");
    let texts: Vec<&str> = boxes.iter().map(|b| b.text.as_str()).collect();
    for said in ["p50 (median)", "p99", "knee: 10 threads", "latency (ms)"] {
        assert!(texts.iter().any(|t| t.contains(said)), "{said}: {texts:?}");
    }
    assert!(
        texts.iter().any(|t| t.starts_with("Data: 100000 records")),
        "{texts:?}"
    );
}

#[test]
fn dense_sweep_staggers_labels_instead_of_overlapping() {
    let mut s = seed_sweep();
    s.points = [1u32, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64, 96, 128]
        .iter()
        .map(|&threads| SweepPoint {
            crosscheck: None,
            threads,
            summary: CellSummary {
                throughput: 100.0 * f64::from(threads).sqrt(),
                ..Default::default()
            },
        })
        .collect();
    s.max_threads = Some(128);
    s.knee_threads = Some(96);
    let chart = charts::sweep(&s, None, "100000 records").expect("drawn");
    keep("sweep-dense", &chart);
    assert_layout("sweep-dense", &chart);
}

#[test]
fn a_single_run_without_repetitions_or_problems() {
    let cfg = config(&["single", "microshard-2"], &["S2"], 1);
    let cells = vec![
        cell("single", "S2", 1, 4321.0, 900.0),
        cell("microshard-2", "S2", 1, 8000.0, 500.0),
    ];
    let report = microshard::report::build_from(&cfg, &cells);
    for (name, chart) in [
        (
            "throughput-one",
            charts::throughput(&report).expect("drawn"),
        ),
        ("latency-one", charts::latency(&report).expect("drawn")),
    ] {
        keep(name, &chart);
        assert_layout(name, &chart);
        assert!(
            !chart.svg.contains("min–max"),
            "{name}: no whiskers for one run"
        );
    }
}

#[test]
fn many_topologies_long_names_and_many_scenarios_still_fit() {
    let topologies = [
        "single",
        "microshard-2",
        "microshard-4",
        "microshard-8",
        "microshard-4-pinned-to-separate-disks",
        "docker-two-hosts",
    ];
    let scenarios: Vec<String> = (1..=9).map(|i| format!("S{i} scenario-{i}")).collect();
    let scenario_refs: Vec<&str> = scenarios.iter().map(String::as_str).collect();
    let cfg = config(&topologies, &scenario_refs, 2);
    let mut cells = Vec::new();
    for (si, s) in scenarios.iter().enumerate() {
        for (ti, t) in topologies.iter().enumerate() {
            for r in 1..=2u32 {
                let tp = 1000.0 * (si + 1) as f64 * (1.0 + 0.3 * ti as f64) + f64::from(r) * 50.0;
                cells.push(cell(t, s, r, tp, 200.0 + 50.0 * ti as f64));
            }
        }
    }
    let report = microshard::report::build_from(&cfg, &cells);
    for (name, chart) in [
        (
            "throughput-crowded",
            charts::throughput(&report).expect("drawn"),
        ),
        ("latency-crowded", charts::latency(&report).expect("drawn")),
    ] {
        keep(name, &chart);
        assert_layout(name, &chart);
    }
}

/// The seed-2 chart (`sweep --vary`): one line per value with min–max whiskers, every thread
/// count labelled, a legend entry per value, and no text over the data; an invalid point is
/// named in the notes.
#[test]
fn vary_chart_draws_one_line_per_value_with_its_spread() {
    // The seed's figures (queries/s): 1, 10 and 20 ids per query, three repetitions.
    let seed: [(&str, [[f64; 3]; 6]); 3] = [
        (
            "readbatchsize=1",
            [
                [583.6, 392.0, 575.1],
                [2048.8, 2206.1, 2073.4],
                [3627.5, 3722.0, 3527.5],
                [3891.3, 3481.5, 3716.8],
                [3124.3, 3109.3, 3118.3],
                [461.8, 1572.6, 1686.5],
            ],
        ),
        (
            "readbatchsize=10",
            [
                [269.3, 296.0, 397.7],
                [1206.2, 1193.6, 1257.9],
                [1796.2, 1840.0, 1963.5],
                [1675.2, 1694.7, 2617.6],
                [1455.4, 1417.5, 1085.4],
                [917.2, 967.1, 943.2],
            ],
        ),
        (
            "readbatchsize=20",
            [
                [223.5, 320.9, 326.0],
                [890.7, 930.9, 914.6],
                [1370.3, 1221.6, 1317.1],
                [1058.4, 1063.6, 1440.5],
                [818.5, 819.7, 354.3],
                [698.2, 681.7, 677.9],
            ],
        ),
    ];
    let threads = [1u32, 5, 10, 20, 50, 100];
    let series: Vec<charts::VarySeries> = seed
        .iter()
        .map(|(label, rows)| charts::VarySeries {
            label: label.to_string(),
            points: threads
                .iter()
                .zip(rows)
                .map(|(&t, r)| {
                    let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = r.iter().copied().fold(0.0, f64::max);
                    (t, lo, r.iter().sum::<f64>() / 3.0, hi)
                })
                .collect(),
            worst: match label.ends_with("=20") {
                true => microshard::measure::validity::Verdict::Invalid,
                false => microshard::measure::validity::Verdict::Valid,
            },
        })
        .collect();
    let notes =
        vec!["readbatchsize=20 at 50 threads is invalid: the run stalled for 30 s".to_string()];
    let chart = charts::vary(
        "Throughput by client threads and readbatchsize: Q20M on single",
        &series,
        3,
        "MongoDB 7.0.14",
        false,
        &notes,
    )
    .expect("drawn");
    keep("vary", &chart);
    assert_layout("vary", &chart);
    let boxes = png::text_boxes(&chart.svg).expect("laid out");
    let plot = chart.plot_area;
    for t in threads {
        assert!(
            boxes
                .iter()
                .any(|b| b.text == t.to_string() && b.y0 >= plot.y1 as f32),
            "thread count {t} labelled under the axis"
        );
    }
    let text: String = boxes
        .iter()
        .map(|b| b.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    for want in [
        "readbatchsize=1",
        "readbatchsize=10",
        "min–max of 3",
        "stalled for 30 s",
    ] {
        assert!(text.contains(want), "{want} missing: {text}");
    }
}

/// A cell whose server stalled twice while its members answered, after a 2 s warm-up.
fn stalled_cell() -> CellFile {
    use microshard::measure::{Outage, TimelineSecond};
    let mut c = cell("microshard-2", "S1", 1, 900.0, 800.0);
    let stalls = [(6.0, 1.6), (16.0, 1.5)];
    let t = &mut c.result.timeline;
    t.probed = vec!["sh0 (localhost:41110)".into()];
    for second in 0..24u32 {
        let stalled = stalls
            .iter()
            .any(|(f, d)| f64::from(second) >= *f && f64::from(second) + 1.0 <= f + d + 0.5);
        let ops = if stalled {
            0
        } else {
            900 + u64::from(second % 3) * 40
        };
        t.seconds.push(TimelineSecond {
            second,
            operations: [("INSERT".to_string(), ops)].into_iter().collect(),
            errors: [("INSERT".to_string(), u64::from(second == 12) * 30)]
                .into_iter()
                .collect(),
            ..Default::default()
        });
    }
    t.stalls = stalls
        .iter()
        .map(|&(from_s, duration_s)| Outage {
            subject: "all clients".into(),
            from_s,
            duration_s,
            ongoing: false,
        })
        .collect();
    c.result.warmup_s = 2.0;
    c.summary.runtime_ms = 22_000.0;
    c.summary.validity.degrade(
        "the server stalled: no operation completed for 1.6 s from 6.0 s; every member answered its probe",
    );
    c
}

#[test]
fn a_stalled_cell_has_a_timeline_with_the_stall_shaded() {
    let cell = stalled_cell();
    let chart = microshard::report::timeline::timeline(&cell, "microshard-2").expect("drawn");
    keep("timeline-stalled", &chart);
    assert_layout("timeline-stalled", &chart);
    for words in [
        "seconds into the run",
        "operations per second",
        "warm-up, left out of the figures: 0–2.0 s",
        "server stall (members answered): 6.0–7.6 s",
        "server stall (members answered): 16.0–17.5 s",
        "verdict: degraded",
        "STAND-IN",
    ] {
        assert!(chart.svg.contains(words), "the chart says {words:?}");
    }
    // Three shaded spans: the warm-up and two stalls.
    assert!(
        chart.svg.matches("opacity=\"0.22\"").count() >= 3,
        "spans shaded"
    );
}

/// The 44 operations after `maxexecutiontime` at 3.0 s are not drawn as a
/// second of 44 ops/s; the line ends level, and the chart says what was left out.
#[test]
fn a_timeline_ends_level_not_with_its_partial_last_second() {
    use microshard::measure::TimelineSecond;
    let mut c = cell("single", "S4", 2, 24_700.0, 300.0);
    c.summary.runtime_ms = 3002.0;
    c.result.timeline.seconds = [25_781u64, 25_463, 22_920, 44]
        .iter()
        .zip(0u32..)
        .map(|(&n, second)| TimelineSecond {
            second,
            operations: [("SCAN".to_string(), n)].into_iter().collect(),
            ..Default::default()
        })
        .collect();
    let chart = microshard::report::timeline::timeline(&c, "single").expect("drawn");
    keep("timeline-partial", &chart);
    assert_layout("timeline-partial", &chart);
    assert!(chart.svg.contains("the last 2 ms of the run is left out"));
}
