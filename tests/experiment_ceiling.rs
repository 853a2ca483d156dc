//! `ceiling` and `compare --ceiling` against stand-ins with a known capacity (W workers × T µs
//! = W·10⁶/T ops/s per `mongod`): the ceiling is found where the model puts it, with two shards
//! and two client processes too; a server that needs more than 512 operations in flight gets
//! its own ceiling; a client made the limit is said to be, with the shortfall measured; an
//! insert search with a warm-up finds its ceiling; and a compare of four topologies over three
//! whole searches each finds every ceiling and the true ratios inside their intervals, every
//! search on the same data, also after `--resume` (README, "Glossary": ceiling;
//! `docs/ceiling.md`).

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::util::*;

/// Runs `ceiling -P <workload>` on a stand-in topology with the capacity model `model`
/// (`workers×service_us`); returns the output and the `ceiling.json` it wrote.
fn ceiling(workload: &str, topology: &str, model: (u32, u32), extra: &str) -> (Output, Value) {
    let Scratch(_tmp, state, results, bin_dir) = Scratch::new();
    let port = free_base_port(8);
    let out = microshard(&state)
        .args(["ceiling", "-P", workload, "--topology", topology])
        .args(["--records", "1000", "--step-duration", "1s"])
        .args(["--backend", "process", "--bin-dir"])
        .arg(&bin_dir)
        .arg(format!("--mongod-arg=--workers={}", model.0))
        .arg(format!("--mongod-arg=--service-time-us={}", model.1))
        .args(["-p", "microshard.busyhost=1"])
        .args(["--base-port", &port.to_string(), "-q", "--out"])
        .arg(&results)
        .args(extra.split_whitespace())
        .output()
        .expect("run ceiling");
    assert_nothing_left(&state);
    let record = read(&run_dir(&results).join("ceiling.json"))
        .unwrap_or_else(|| panic!("no ceiling.json\n{}", text(&out)));
    (out, record)
}

fn read(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ceiling_of(record: &Value) -> f64 {
    record["outcome"]["ceiling"].as_f64().unwrap_or(0.0)
}

fn steps(record: &Value) -> Vec<Value> {
    record["steps"].as_array().cloned().unwrap_or_default()
}

#[test]
fn the_ceiling_is_where_the_capacity_model_puts_it_and_two_clients_offer_the_rate_together() {
    let _alone = one_at_a_time();
    let (out, single) = ceiling("S5", "single", (2, 1_000), "--slo p99=50ms");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(single["outcome"]["kind"], "found", "{all}");
    let found = ceiling_of(&single);
    assert!(
        (1_700.0..=2_040.0).contains(&found),
        "single: {found}\n{all}"
    );
    // The bracket: what passed and what failed, each with its trials; every step kept and shown.
    let bracket = &single["outcome"]["bracket"];
    let failed = bracket["failed"].as_f64().unwrap_or(0.0);
    assert!(
        failed > bracket["passed"].as_f64().unwrap_or(f64::MAX),
        "{bracket}"
    );
    assert!(
        all.contains("ceiling: single sustains") && all.contains("(bracket: "),
        "{all}"
    );
    assert!(
        all.contains("Ceiling search: S5 on single at p99 ≤ 50.0 ms"),
        "{all}"
    );
    let miss = steps(&single)
        .into_iter()
        .find_map(|s| s["failed"].as_str().map(String::from));
    assert!(all.contains(&miss.expect("a failing step")), "{all}");

    // Two client processes share the rate: each step achieves what was offered, not twice it
    // (a step behind its schedule when its window opens catches up inside it, a little above),
    // and the search finds the same capacity. On one server: a sharded topology's mongos and
    // two debug-build clients would make this 2-core machine's CPU the limit, not the model.
    let (out, two) = ceiling("S5", "single", (2, 1_000), "--slo p99=50ms --clients 2");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        (1_700.0..=2_040.0).contains(&ceiling_of(&two)),
        "single, two clients: {}\n{all}",
        ceiling_of(&two)
    );
    for s in steps(&two).iter().filter(|s| s["kind"] == "search") {
        let offered = s["offered"].as_f64().unwrap_or(0.0);
        let achieved = s["achieved"].as_f64().unwrap_or(0.0);
        assert!(achieved <= offered * 1.2, "{s}");
        if s["failed"].is_null() {
            assert!((offered * 0.95..=offered * 1.05).contains(&achieved), "{s}");
        }
    }
}

#[test]
fn a_bound_below_the_service_time_is_met_by_no_rate_and_a_capped_client_is_measured() {
    let _alone = one_at_a_time();
    let (out, none) = ceiling("S5", "single", (2, 1_000), "--slo p99=500us");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(none["outcome"]["kind"], "no_rate_met_bound", "{all}");
    assert!(
        all.contains("no ceiling: no rate met p99 ≤ 500 µs on single"),
        "{all}"
    );
    assert!(!all.contains("sustains"), "{all}");

    // One thread cannot offer a rate whose operations take 1 ms each beyond 1,000 ops/s: the
    // search measures the client's shortfall and keeps what passed as a lower bound.
    let (out, capped) = ceiling("S5", "single", (2, 1_000), "--slo p99=50ms --max-threads 1");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(capped["outcome"]["kind"], "client_limited", "{all}");
    let why = capped["outcome"]["why"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("all 1 client threads busy") && why.contains("planned operations unsent"),
        "{why}"
    );
    assert!(
        all.contains("client-limited: the client could not offer"),
        "{all}"
    );
    assert!(all.contains("a lower bound of its ceiling"), "{all}");
    assert!(all.contains("microshard: 1 degraded result(s)"), "{all}");
}

/// 800 workers × 400 ms: 2,000 ops/s with 800 operations in flight at the ceiling, more than
/// the 512 threads that once capped every search.
#[test]
fn a_server_needing_more_than_512_operations_in_flight_gets_its_own_ceiling() {
    let _alone = one_at_a_time();
    let extra = "--slo p99=1s -p threadcount=1000";
    let (out, record) = ceiling("S5", "single", (800, 400_000), extra);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(record["outcome"]["kind"], "found", "{all}");
    let found = ceiling_of(&record);
    assert!((1_700.0..=2_040.0).contains(&found), "{found}\n{all}");
    assert!(
        record["outcome"]["threads"].as_u64().unwrap_or(0) > 512,
        "{all}"
    );
}

#[test]
fn an_insert_search_with_a_warm_up_finds_its_ceiling_and_leaves_the_data_as_loaded() {
    let _alone = one_at_a_time();
    let (out, record) = ceiling("S1", "single", (2, 1_000), "--slo p99=50ms --warmup 1s");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(!all.contains("duplicate key"), "{all}");
    assert_eq!(record["outcome"]["kind"], "found", "{all}");
    assert_eq!(record["phase"], "load", "{record}");
    let found = ceiling_of(&record);
    assert!((1_700.0..=2_040.0).contains(&found), "{found}\n{all}");
    assert!(
        record["removed"].as_u64().unwrap_or(0) > 1_000,
        "every step's keys deleted"
    );
}

/// The toy-size counterpart of the README's main job: 300 ops/s per `mongod`, four topologies,
/// S1 and S5, three whole searches each with the topologies taking turns.
#[test]
fn compare_ceiling_finds_every_ceiling_and_the_true_ratios_inside_their_intervals() {
    let _alone = one_at_a_time();
    let Scratch(_tmp, state, results, bin_dir) = Scratch::new();
    let port = free_base_port(16);
    let out = microshard(&state)
        .args([
            "compare",
            "--ceiling",
            "--slo",
            "p99=150ms",
            "--precision",
            "10%",
        ])
        .args([
            "--topologies",
            "single,microshard-1,microshard-2,microshard-4",
        ])
        // 4,000 records: hashed `_id` spreads N keys over the shards with a spread of about
        // 1/sqrt(N / shards), and the busiest shard sets a sharded topology's capacity; with
        // 1,000 it carried up to 8 % more than a quarter, so microshard-4 truly sustained less
        // than four times one shard's capacity.
        .args(["--scenarios", "S1,S5", "--repeat", "3", "--records", "4000"])
        .args(["--step-duration", "1s", "--backend", "process", "--bin-dir"])
        .arg(&bin_dir)
        .arg("--mongod-arg=--service-time-us=10000")
        .arg("--mongod-arg=--workers=3")
        .args(["-p", "microshard.busyhost=1"])
        .args(["--base-port", &port.to_string(), "-q", "--out"])
        .arg(&results)
        .output()
        .expect("run compare --ceiling");
    let all = text(&out);
    assert_ok(&out, "compare --ceiling");
    assert_nothing_left(&state);
    let dir = run_dir(&results);
    for (t, capacity) in [
        ("single", 300.0),
        ("microshard-1", 300.0),
        ("microshard-2", 600.0),
        ("microshard-4", 1_200.0),
    ] {
        for s in ["S1", "S5"] {
            for r in 1..=3 {
                let record = read(&dir.join(format!("ceilings/{t}/{s}-r{r}.json")))
                    .unwrap_or_else(|| panic!("{t} {s} r{r}\n{all}"));
                assert_eq!(record["outcome"]["kind"], "found", "{t} {s} r{r}\n{all}");
                let c = ceiling_of(&record) / capacity;
                assert!(
                    (0.85..=1.02).contains(&c),
                    "{t} {s} r{r}: {c} of capacity\n{all}"
                );
                assert_eq!(record["phase"], if s == "S1" { "load" } else { "run" });
            }
        }
    }
    assert!(
        all.contains("Ceilings at p99 ≤ 150.0 ms") && all.contains("bracket ops/s"),
        "{all}"
    );
    for (part, truth) in [
        ("routing tax (microshard-1 vs single)", 1.0),
        ("sharding gain (microshard-2 vs microshard-1)", 2.0),
        ("sharding gain (microshard-4 vs microshard-1)", 4.0),
        ("net (microshard-4 vs single)", 4.0),
    ] {
        for s in ["S1", "S5"] {
            let (lo, hi) = interval_of(&all, &format!("{s} {part}"));
            assert!(lo <= truth && truth <= hi, "{s} {part}: {lo}–{hi}\n{all}");
        }
    }
    same_data_everywhere(&dir);
    // The cells a resumed compare measures again run on the same data too.
    for f in [
        "cells/microshard-1/S5-r2.json",
        "ceilings/microshard-1/S5-r2.json",
    ] {
        std::fs::remove_file(dir.join(f)).expect(f);
    }
    let out = microshard(&state)
        .args(["compare", "--resume"])
        .arg(&dir)
        .args(["--bin-dir"])
        .arg(&bin_dir)
        .arg("-q")
        .output()
        .expect("resume");
    assert_ok(&out, "compare --resume");
    assert!(dir.join("cells/microshard-1/S5-r2.json").is_file());
    same_data_everywhere(&dir);
    assert_nothing_left(&state);
}

/// The 95 % interval a decomposition line quotes: `… (95 % CI 0.93–1.08× incl. the brackets`.
fn interval_of(all: &str, part: &str) -> (f64, f64) {
    let line = all
        .lines()
        .find(|l| l.contains(part))
        .unwrap_or_else(|| panic!("{part}\n{all}"));
    let range = line
        .split("95 % CI ")
        .nth(1)
        .and_then(|r| r.split('×').next())
        .unwrap_or_else(|| panic!("no interval: {line}"));
    let (lo, hi) = range.split_once('–').unwrap_or_else(|| panic!("{line}"));
    (
        lo.parse().unwrap_or(f64::NAN),
        hi.parse().unwrap_or(f64::NAN),
    )
}

/// Every S5 cell ran with the loaded record count (4,000): no search's inserts were left behind.
fn same_data_everywhere(dir: &Path) {
    for cell in cells_under(&dir.join("cells")) {
        let props = cell["result"]["properties"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let records = props.iter().find(|p| p["key"] == "recordcount");
        let phase = cell["result"]["phase"].as_str().unwrap_or_default();
        if phase == "run" {
            assert_eq!(
                records.map(|p| p["value"].clone()),
                Some(Value::from("4000")),
                "{cell}"
            );
        }
        let inserted = &cell["result"]["inserted_keys"];
        assert!(
            phase == "load" || inserted.is_null(),
            "S5 reads only: {inserted}"
        );
    }
}

/// A standalone search is a result like any other: `report DIR` reads it in every format, and a
/// degraded step's reason is in its table and on the last stderr line (here every step is
/// degraded: `microshard.busyhost=0` lets no other work go unnoticed, and a busy loop at the
/// lowest priority is always there to be noticed, even on a quiet machine).
#[test]
fn a_standalone_search_reports_in_every_format_and_names_its_degraded_steps() {
    let _alone = one_at_a_time();
    let _hog = Hog::niced();
    let Scratch(_tmp, state, results, bin_dir) = Scratch::new();
    let port = free_base_port(4);
    let out = microshard(&state)
        .args([
            "ceiling",
            "-P",
            "S5",
            "--topology",
            "single",
            "--slo",
            "p99=50ms",
        ])
        .args([
            "--records",
            "500",
            "--step-duration",
            "1s",
            "--precision",
            "20%",
        ])
        .args(["--backend", "process", "--bin-dir"])
        .arg(&bin_dir)
        .args([
            "--mongod-arg=--service-time-us=2000",
            "--mongod-arg=--workers=2",
        ])
        .args([
            "-p",
            "microshard.busyhost=0",
            "--base-port",
            &port.to_string(),
            "-q",
            "--out",
        ])
        .arg(&results)
        .output()
        .expect("run ceiling");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("degraded") && last.contains("busy host"),
        "{last}"
    );
    assert!(all.contains("degraded (step 1"), "{all}");
    let dir = run_dir(&results);
    for f in [
        "ceiling.txt",
        "ceiling.md",
        "ceiling.csv",
        "ceiling.html",
        "ceiling.svg",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    for (format, needle) in [
        (
            "markdown",
            "### Ceiling search: S5 on single at p99 ≤ 50.0 ms",
        ),
        ("html", "id=\"chart-ceiling\""),
        ("csv", "figures,search,step,kind,offered_ops_s"),
        ("json", "\"schema\": \"microshard-ceiling/2\""),
        ("table", "ceiling: single sustains"),
    ] {
        let out = microshard(&state)
            .args(["report", "--format", format])
            .arg(&dir)
            .output()
            .expect("report");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{format}: {}", text(&out));
        assert!(stdout.contains(needle), "{format}: {stdout}");
        assert!(
            stdout.contains("STAND-IN") || format == "csv" || format == "json",
            "{format}"
        );
    }
    assert_nothing_left(&state);
}
