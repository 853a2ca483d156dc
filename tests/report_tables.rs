//! The comparison table's width: compact by default (one row per cell in at most 100
//! characters for three topologies × five scenarios, in the terminal and in Markdown), every
//! column with `--wide`, chosen ones with `--columns`.

use crate::report_html::run_dir_with;

const TOPOLOGIES: [&str; 2] = ["microshard-2", "microshard-4"];
const SCENARIOS: [&str; 5] = ["S1", "S2", "S3", "S4", "S5"];

fn report(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    assert_cmd::Command::cargo_bin("microshard")
        .expect("binary")
        .arg("report")
        .arg(dir)
        .args(extra)
        .output()
        .expect("runs")
}

fn stdout_of(dir: &std::path::Path, extra: &[&str]) -> String {
    let out = report(dir, extra);
    crate::util::assert_ok(&out, &format!("report {extra:?}"));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The table's own lines: box drawing in the terminal, pipes in Markdown.
fn table_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with(['│', '╭', '├', '╰', '|']))
        .collect()
}

#[test]
fn default_tables_of_three_topologies_and_five_scenarios_fit_100_characters() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (dir, cells) = run_dir_with(tmp.path(), &TOPOLOGIES, &SCENARIOS);
    assert_eq!(cells, 15);
    for format in ["table", "markdown"] {
        let text = stdout_of(dir.path(), &["--format", format]);
        let lines = table_lines(&text);
        assert!(lines.len() >= 15, "{format}: a row per cell\n{text}");
        for line in &lines {
            assert!(
                line.chars().count() <= 100,
                "{format}: {} characters:\n{line}\n{text}",
                line.chars().count()
            );
        }
        for column in [
            "scenario",
            "topology",
            "ops/s",
            "× single",
            "p99 µs",
            "validity",
        ] {
            assert!(
                lines[0..3].concat().contains(column),
                "{format}: {column}\n{text}"
            );
        }
    }
    let md = stdout_of(dir.path(), &["--format", "markdown"]);
    assert!(md.contains("#### Latency detail"), "{md}");
    assert!(
        md.contains("| p99.9 µs |"),
        "the detail has every percentile:\n{md}"
    );
}

#[test]
fn wide_shows_every_column_and_columns_picks_some() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (dir, _) = run_dir_with(tmp.path(), &TOPOLOGIES, &SCENARIOS);
    let every = [
        "scenario",
        "topology",
        "threads",
        "ops/s",
        "× single",
        "op",
        "avg µs",
        "p50 µs",
        "p95 µs",
        "p99 µs",
        "p99.9 µs",
        "errors",
        "validity",
        "spread (min–max)",
        "± stddev",
        "significant",
        "client CPU",
        "CPU µs/op: client / servers",
    ];
    for format in ["table", "markdown"] {
        let text = stdout_of(dir.path(), &["--format", format, "--wide"]);
        let header = table_lines(&text)
            .into_iter()
            .find(|l| l.contains("scenario"))
            .expect("a header");
        let cells: Vec<&str> = header
            .split(['│', '|'])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(cells, every, "{format}: every column\n{text}");
    }
    let text = stdout_of(dir.path(), &["--columns", "scenario,topology,p95"]);
    let header = table_lines(&text)[1];
    let cells: Vec<&str> = header
        .split('│')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(cells, ["scenario", "topology", "p95 µs"], "{text}");

    let bad = report(dir.path(), &["--columns", "scenario,nope"]);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("--columns") && stderr.contains("'nope'"),
        "{stderr}"
    );
}
