//! The reports of whole (fake) experiments and sweeps: `experiment` measures and stores, then
//! [`write_reports`] writes the files, as the CLI does.

use tokio_util::sync::CancellationToken;

use super::*;
use crate::experiment::compare::tests::{FakeLab, cancel_never, new_lab, setup};
use crate::experiment::compare::{MatrixOutcome, Prepared, create, resume, verdict_lines};
use crate::experiment::lab::Session;
use crate::experiment::model::{CellId, CompareCommand, SweepOutcome, Vary};
use crate::experiment::progress::Progress;
use crate::experiment::sweep::SweepCommand;
use crate::experiment::sweep::tests::Curve;
use crate::experiment::sweep::tests::command;
use crate::runner::Phase;

/// A test's outcome: any error fails it, with its message.
pub(super) type TestResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// `compare` as the CLI runs it: measure, then write the reports.
async fn compare_with(
    lab: &mut FakeLab,
    prepared: Prepared,
    cancel: &CancellationToken,
    progress: &Progress,
) -> TestResult<(ExperimentDir, MatrixOutcome)> {
    let (dir, outcome) = crate::experiment::compare::compare_with(
        &mut Session::new(lab, cancel, progress),
        prepared,
    )
    .await?;
    write_reports(&dir)?;
    Ok((dir, outcome))
}

/// `sweep` as the CLI runs it: measure, then write the reports and the seed-2 table.
pub(super) async fn sweep_with(
    lab: &mut Curve,
    cfg: &SweepCommand,
    cancel: &CancellationToken,
    progress: &Progress,
) -> TestResult<(ExperimentDir, SweepOutcome)> {
    let resolved = crate::experiment::sweep::resolve(cfg)?;
    let mut session = Session::new(lab, cancel, progress);
    let swept = crate::experiment::sweep::sweep_with(&mut session, cfg, &resolved).await?;
    // The seed-2 table first: the page written with the reports shows it (`vary.json`).
    if !swept.outcome.is_single() {
        sweep::write_vary(&swept.dir, &swept.outcome, &swept.label, "vary")?;
    }
    write_reports(&swept.dir)?;
    Ok((swept.dir, swept.outcome))
}

#[tokio::test]
async fn a_dead_member_skips_its_topology_and_resume_measures_what_is_missing() -> TestResult {
    let Some((_tmp, mut cmd, at)) = setup() else {
        return Ok(());
    };
    cmd.topologies = vec!["microshard-2".into(), "single".into()];
    cmd.baseline = "single".into();
    let mut lab = new_lab();
    lab.dead_on = Some(("microshard-2".into(), "S2".into()));
    let cancel = CancellationToken::new();
    let (dir, outcome) =
        compare_with(&mut lab, create(&cmd, &at)?, &cancel, &Progress::silent()).await?;
    // S3 of the dead topology is not run; the next topology is measured whole.
    let ran: Vec<(String, String)> = lab
        .runs
        .iter()
        .map(|(t, s, _)| (t.clone(), s.clone()))
        .collect();
    assert!(
        !ran.contains(&("microshard-2".into(), "S3".into())),
        "{ran:?}"
    );
    assert_eq!(ran.iter().filter(|(t, _)| t == "single").count(), 3);
    assert_eq!(outcome.not_run.len(), 1);
    assert_eq!(
        outcome.not_run[0].reason,
        "not run: sh0 (localhost:41110) dead since S2 at 3.0 s"
    );
    let lines = verdict_lines(&dir)?;
    assert_eq!(lines.invalid.len(), 2, "{lines:?}");
    let table = render_dir(&dir, Format::Table, false, &Columns::Compact)?;
    assert!(table.contains("not run"), "{table}");
    assert!(table.contains("dead since S2"), "{table}");
    let csv = render_dir(&dir, Format::Csv, false, &Columns::Compact)?;
    assert!(csv.contains("not run"), "{csv}");
    not_run_said_in_every_format(&dir, &csv)?;

    // Resume: the cell not run is measured; with --remeasure-invalid the invalid S2 too,
    // its first attempt kept under earlier/.
    let mut lab = new_lab();
    let (dir, outcome) = compare_with(
        &mut lab,
        resume(
            dir.path(),
            &CompareCommand::default(),
            crate::experiment::model::Remeasure {
                invalid: true,
                degraded: false,
            },
        )?,
        &cancel,
        &Progress::silent(),
    )
    .await?;
    assert_eq!(outcome.measured.len(), 2, "{:?}", outcome.measured);
    assert!(dir.not_run().is_empty());
    let lines = verdict_lines(&dir)?;
    assert!(lines.invalid.is_empty(), "{lines:?}");
    let earlier = dir
        .path()
        .join("cells/microshard-2/earlier/S2-r1.session1.json");
    assert!(earlier.is_file(), "the first attempt is kept");
    let sessions: Vec<u32> = dir.cells()?.iter().map(|c| c.session).collect();
    assert!(
        sessions.contains(&1) && sessions.contains(&2),
        "{sessions:?}"
    );
    Ok(())
}

#[tokio::test]
async fn measures_every_cell_and_tears_down() -> TestResult {
    let Some((_tmp, cmd, at)) = setup() else {
        return Ok(());
    };
    let mut lab = new_lab();
    let cancel = CancellationToken::new();
    let (dir, outcome) =
        compare_with(&mut lab, create(&cmd, &at)?, &cancel, &Progress::silent()).await?;
    assert_eq!(outcome.measured.len(), 6);
    assert!(outcome.failures.is_empty());
    // Per topology: the load, then S2 on the loaded records, then S3 with the 5 S2 inserted too.
    assert_eq!(
        lab.recordcounts,
        vec![100_000, 100_000, 100_005, 100_000, 100_000, 100_005]
    );
    assert_eq!((lab.ups, lab.downs), (2, 2));
    let rep = build(&dir)?;
    let ms = rep
        .rows
        .iter()
        .find(|r| r.scenario == "S2" && r.topology == "microshard-2");
    assert!(
        ms.and_then(|r| r.vs_baseline)
            .is_some_and(|x| (x - 2.0).abs() < 1e-9)
    );
    assert!(rep.standin(), "fake cells are stand-in cells");
    assert!(dir.config()?.standin);
    for f in [
        "report.md",
        "report.csv",
        "report.json",
        "throughput.svg",
        "latency.svg",
    ] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    Ok(())
}

#[tokio::test]
async fn resume_skips_finished_cells_but_reloads_data() -> TestResult {
    let Some((_tmp, cmd, at)) = setup() else {
        return Ok(());
    };
    let mut lab = new_lab();
    let cancel = CancellationToken::new();
    lab.cancel_after_runs = Some((1, cancel.clone()));
    let (dir, outcome) =
        compare_with(&mut lab, create(&cmd, &at)?, &cancel, &Progress::silent()).await?;
    assert!(outcome.interrupted);
    assert_eq!(outcome.measured.len(), 1, "only the load cell was finished");
    assert_eq!(
        (lab.ups, lab.downs),
        (1, 1),
        "interrupted topology torn down"
    );
    let first = CellId {
        topology: "single".into(),
        scenario: "S1".into(),
        repeat: 1,
    };
    let before = std::fs::read(dir.cell_path(&first))?;
    assert!(!dir.is_finished(&CellId {
        scenario: "S2".into(),
        ..first.clone()
    }));

    let mut lab2 = new_lab();
    let cancel = CancellationToken::new();
    let resumed = resume(dir.path(), &CompareCommand::default(), Default::default())?;
    let (dir2, outcome) = compare_with(&mut lab2, resumed, &cancel, &Progress::silent()).await?;
    assert_eq!(dir2.path(), dir.path());
    assert_eq!(outcome.measured.len(), 5);
    assert!(!outcome.measured.contains(&first));
    assert_eq!(
        std::fs::read(dir.cell_path(&first))?,
        before,
        "first cell untouched"
    );
    // The data is loaded again on the fresh topology, but not recorded as a measurement.
    assert_eq!(
        lab2.runs
            .iter()
            .filter(|r| r.0 == "single" && r.2 == Phase::Load)
            .count(),
        1
    );
    let rep = build(&dir)?;
    assert!(rep.rows.iter().all(|r| r.repeats == 1));
    Ok(())
}

#[tokio::test]
async fn sweep_picks_knee_threads_for_cells() -> TestResult {
    let Some((_tmp, mut cmd, at)) = setup() else {
        return Ok(());
    };
    cmd.sweep = true;
    cmd.sweep_threads = vec![1, 2, 4, 8, 16, 32, 64];
    let mut lab = new_lab();
    let cancel = CancellationToken::new();
    let (dir, _) = compare_with(&mut lab, create(&cmd, &at)?, &cancel, &Progress::silent()).await?;
    // capacity 1000 at 100 ops/s per thread → saturates at 10 threads → knee 16.
    assert_eq!(
        dir.read_sweep("single").and_then(|s| s.knee_threads),
        Some(16)
    );
    assert_eq!(
        dir.read_sweep("microshard-2").and_then(|s| s.knee_threads),
        Some(32)
    );
    let cells = dir.cells()?;
    let s3 = cells
        .iter()
        .find(|c| c.cell.topology == "microshard-2" && c.cell.scenario == "S3");
    assert_eq!(s3.map(|c| c.summary.threads), Some(32));
    assert!(dir.path().join("sweep-single.svg").is_file());
    Ok(())
}

#[tokio::test]
async fn sweep_vary_measures_every_value_on_every_topology_once() -> TestResult {
    let Some((_tmp, mut cmd, at)) = setup() else {
        return Ok(());
    };
    cmd.sweep = true;
    cmd.sweep_threads = vec![1, 2, 4, 8, 16, 32];
    cmd.vary = Some(Vary::parse("readbatchsize=1,10")?);
    cmd.repeat = 2;
    let mut lab = new_lab();
    let (dir, outcome) = compare_with(
        &mut lab,
        create(&cmd, &at)?,
        &cancel_never(),
        &Progress::silent(),
    )
    .await?;
    // Two values × two repetitions per topology, measured on its first bring-up only.
    let sweep_runs = |lab: &FakeLab| {
        lab.runs
            .iter()
            .filter(|r| r.1 == "S2" && r.2 == Phase::Run)
            .count()
    };
    assert_eq!(sweep_runs(&lab), 2 * (4 * 6 + 2), "curves + S2 cells");
    assert_eq!(dir.sweeps().len(), 8);
    assert_eq!(outcome.varied.len(), 2, "a table per topology");
    assert!(outcome.varied.iter().all(|o| o.curves.len() == 4));
    for stem in ["vary-single", "vary-microshard-2"] {
        for ext in ["md", "csv", "json", "txt", "svg"] {
            assert!(
                dir.path().join(format!("{stem}.{ext}")).is_file(),
                "{stem}.{ext}"
            );
        }
    }
    // The cells run at the first value's knee (capacity 1000 at 100 ops/s per thread → 16).
    let cells = dir.cells()?;
    let s3 = cells
        .iter()
        .find(|c| c.cell.topology == "single" && c.cell.scenario == "S3");
    assert_eq!(s3.map(|c| c.summary.threads), Some(16));
    let text = sweep::render_vary(&outcome.varied[0], Format::Table, &Columns::Compact);
    assert!(text.contains("readbatchsize on single"), "{text}");
    // Each topology's seed-2 table and chart are on the page.
    let html = std::fs::read_to_string(dir.path().join("report.html"))?;
    for label in ["S2 on single", "S2 on microshard-2"] {
        let heading = format!("Throughput (ops/s) by threads and readbatchsize: {label}</h2>");
        assert!(html.contains(&heading), "{heading}");
    }
    assert_eq!(html.matches("<table class=\"vary\">").count(), 2);
    assert_eq!(html.matches("<figure id=\"chart-vary-").count(), 2);
    Ok(())
}

#[tokio::test]
async fn loads_once_and_finds_knee() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let wl = tmp.path().join("W");
    std::fs::write(&wl, "recordcount=10\n")?;
    let cfg = command(&[
        &format!("-P{}", wl.display()),
        "--topology=single",
        "--duration=1s",
        "--records=10",
        &format!("--out={}", tmp.path().join("results").display()),
    ])
    .checked()?;
    let mut lab = Curve { loads: 0, downs: 0 };
    let cancel = CancellationToken::new();
    let (dir, outcome) = sweep_with(&mut lab, &cfg, &cancel, &Progress::silent()).await?;
    assert_eq!((lab.loads, lab.downs), (1, 1));
    assert!(outcome.is_single());
    let sweep = &outcome.curves[0].1;
    assert_eq!(sweep.points.len(), 8);
    assert_eq!(sweep.max_threads, Some(16));
    assert_eq!(sweep.knee_threads, Some(16));
    let text = sweep::render_sweep(sweep);
    assert!(text.contains("max, knee"), "{text}");
    assert!(dir.path().join("sweep-single.svg").is_file());
    Ok(())
}

#[tokio::test]
async fn vary_and_repeat_give_one_curve_per_value_and_repetition_and_the_seed_table() -> TestResult
{
    let tmp = tempfile::tempdir()?;
    let wl = tmp.path().join("W");
    std::fs::write(&wl, "recordcount=10\n")?;
    let cfg = command(&[
        &format!("-P{}", wl.display()),
        "--threads=1,5,10",
        "--topology=single",
        "--duration=1s",
        "--records=100",
        "--vary=readbatchsize=1,10,20",
        "--repeat=3",
        &format!("--out={}", tmp.path().join("results").display()),
    ])
    .checked()?;
    let mut lab = Curve { loads: 0, downs: 0 };
    let (dir, outcome) = sweep_with(
        &mut lab,
        &cfg,
        &CancellationToken::new(),
        &Progress::silent(),
    )
    .await?;
    assert_eq!(lab.loads, 1, "one load for every curve");
    assert_eq!(outcome.curves.len(), 9);
    let table = sweep::render_vary(&outcome, Format::Csv, &Columns::Compact);
    let header = table.lines().next().unwrap_or_default();
    assert_eq!(header.split(',').count(), 2 + 3 * (3 * 2 + 1), "{header}");
    assert!(header.contains("readbatchsize=10 #3") && header.contains("readbatchsize=20 mean"));
    assert_eq!(table.lines().count(), 4, "a row per thread count: {table}");
    for f in ["vary.md", "vary.csv", "vary.json", "vary.txt"] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    // The seed-2 table and chart are on the sweep's page, before its curves.
    let html = std::fs::read_to_string(dir.path().join("report.html"))?;
    let table = html.find("<table class=\"vary\">");
    assert!(table.is_some(), "the seed-2 table on the page");
    assert!(
        html.contains("<figure id=\"chart-vary-"),
        "its chart on the page"
    );
    assert!(table < html.find("id=\"sweeps\""), "before the curves");
    assert_eq!(dir.sweeps().len(), 9, "every curve stored");
    assert!(Vary::parse("readbatchsize").is_err());
    assert!(Vary::parse("readbatchsize=1,,2").is_err());
    let typo = Vary::parse("readbachsize=1,10").unwrap_err().to_string();
    assert!(
        typo.contains("'readbachsize' is not a property")
            && typo.contains("did you mean 'readbatchsize'?"),
        "{typo}"
    );
    assert!(Vary::parse("mycompany.knob=1,2").is_err());
    Ok(())
}

/// Every format says a cell not run in the same words: "not run", never "valid".
fn not_run_said_in_every_format(dir: &ExperimentDir, csv: &str) -> TestResult {
    let json: serde_json::Value =
        serde_json::from_str(&render_dir(dir, Format::Json, false, &Columns::Compact)?)?;
    let row = (json["rows"].as_array().into_iter().flatten())
        .find(|r| r["topology"] == "microshard-2" && r["scenario"] == "S3")
        .expect("the row not run");
    assert_eq!(row["verdict"], "not run", "{row}");
    assert_eq!(row["validity"]["verdict"], "not run", "{row}");
    let csv_row = (csv.lines())
        .find(|l| l.contains(",S3,microshard-2,"))
        .expect("its CSV row");
    assert!(csv_row.contains(",not run,"), "{csv_row}");
    let md = render_dir(dir, Format::Markdown, false, &Columns::Compact)?;
    assert!(md.contains("| S3 | microshard-2 | not run |"), "{md}");
    let page = render_dir(dir, Format::Html, false, &Columns::Compact)?;
    assert!(
        page.contains("<td class=\"validity\">NOT RUN</td>"),
        "the page"
    );
    Ok(())
}

/// Two runs that measured different things — here a closed-loop compare and one recorded as a
/// ceiling search at a bound — are never compared row by row: every row says why.
#[tokio::test]
async fn a_diff_of_unlike_runs_flags_every_row_and_compares_none() -> TestResult {
    let Some((_tmp, cmd, at)) = setup() else {
        return Ok(());
    };
    let cancel = CancellationToken::new();
    let silent = Progress::silent();
    let (a, _) = compare_with(&mut new_lab(), create(&cmd, &at)?, &cancel, &silent).await?;
    let (b, _) = compare_with(&mut new_lab(), create(&cmd, &at)?, &cancel, &silent).await?;
    assert!(
        super::diff::diff_of(&a, &b)?
            .rows
            .iter()
            .all(|r| r.unlike.is_none())
    );
    let mut config = b.config()?;
    config.command.ceiling = Some(crate::experiment::slo::SearchSpec {
        bounds: crate::experiment::slo::Bound::parse_list("p99=200ms")?,
        step_s: 10,
        precision: 0.05,
        max_threads: 4096,
    });
    b.write_config(&config)?;
    let d = super::diff::diff_of(&a, &b)?;
    assert!(!d.rows.is_empty());
    for r in &d.rows {
        let why = r.unlike.as_deref().unwrap_or_default();
        assert!(
            why.starts_with("search: A closed-loop throughput, B ceilings at p99 ≤ 200.0 ms"),
            "{why}"
        );
        assert!(r.comparison.is_none());
    }
    let table = super::diff::render(&d, Format::Table);
    assert!(
        table.contains("not comparable (search: A closed-loop"),
        "{table}"
    );
    Ok(())
}
