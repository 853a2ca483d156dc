//! Golden files: the bytes every report format writes today for each result kind — a compare
//! (plain, with flagged cells, with `--ceiling`), a thread sweep, a `--vary` table, a standalone
//! ceiling search, a diff, and whole fake runs (a cell not run, an interrupted experiment,
//! `compare --sweep [--vary]`, `sweep [--vary]`) through [`write_reports`] — so a change to a
//! writer shows as a diff of its output. `MICROSHARD_BLESS=1` writes them anew
//! (`src/report/golden/`).

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::render::{render, render_with};
use super::run_tests::{TestResult, sweep_with};
use super::*;
use crate::experiment::ceiling::CeilingRecord;
use crate::experiment::compare::tests::FakeLab;
use crate::experiment::compare::tests::{new_lab, setup};
use crate::experiment::compare::{MatrixOutcome, Prepared};
use crate::experiment::compare::{create, resume};
use crate::experiment::lab::Session;
use crate::experiment::model::{SweepOutcome, Vary};
use crate::experiment::progress::Progress;
use crate::experiment::sweep::tests::{Curve, command};

/// Every format a report is printed in, with the file suffix its golden carries.
const FORMATS: [(Format, &str); 5] = [
    (Format::Table, "txt"),
    (Format::Markdown, "md"),
    (Format::Csv, "csv"),
    (Format::Json, "json"),
    (Format::Html, "html"),
];

/// The golden files checked by one test: each mismatch is kept, and all are said at the end.
struct Goldens {
    kind: &'static str,
    bless: bool,
    failures: Vec<String>,
}

impl Goldens {
    fn new(kind: &'static str) -> Self {
        let bless = std::env::var("MICROSHARD_BLESS").is_ok_and(|v| v == "1");
        Goldens {
            kind,
            bless,
            failures: Vec::new(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/report/golden")
            .join(self.kind)
            .join(name)
    }

    /// Compares `text` with the golden file `name` (or writes it, blessing).
    fn check(&mut self, name: &str, text: &str) {
        let path = self.path(name);
        if self.bless {
            let written = (path.parent().map_or(Ok(()), std::fs::create_dir_all))
                .and_then(|()| std::fs::write(&path, text));
            if let Err(e) = written {
                self.failures.push(format!("{}: {e}", path.display()));
            }
            return;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if want == text => {}
            Ok(want) => self.failures.push(line_diff(&path, &want, text)),
            Err(e) => self.failures.push(format!(
                "{}: {e} (MICROSHARD_BLESS=1 writes it)",
                path.display()
            )),
        }
    }

    /// Fails with every mismatch.
    fn finish(self) {
        assert!(
            self.failures.is_empty(),
            "{} golden file(s) differ (MICROSHARD_BLESS=1 rewrites them if the change is meant):\n\n{}",
            self.failures.len(),
            self.failures.join("\n\n")
        );
    }
}

/// The lines that differ between `want` and `got`, their common start and end left out.
fn line_diff(path: &Path, want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.split('\n').collect(), got.split('\n').collect());
    let head = w.iter().zip(&g).take_while(|(a, b)| a == b).count();
    let tail = (w[head..].iter().rev())
        .zip(g[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let shown = |lines: &[&str], mark: char| -> String {
        let part = &lines[head..lines.len() - tail];
        let mut out: Vec<String> = part
            .iter()
            .take(30)
            .map(|l| format!("{mark} {l}"))
            .collect();
        if part.len() > 30 {
            out.push(format!("{mark} … {} more lines", part.len() - 30));
        }
        out.join("\n")
    };
    format!(
        "{} differs from line {}:\n{}\n{}",
        path.display(),
        head + 1,
        shown(&w, '-'),
        shown(&g, '+')
    )
}

/// What changes from one run to the next replaced by a placeholder: the temporary directory,
/// times and the run directory's stamp; and each chart a page holds inline (charts have tests
/// of their own), so the goldens hold the pages' words and tables.
fn steady(text: &str, tmp: &Path) -> String {
    let mut out = text.replace(&tmp.display().to_string(), "{tmp}");
    for (pattern, with) in [
        (r"(?s)<svg.*?</svg>", "<svg/>"),
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
            "{time}",
        ),
        (r"\d{4}-\d{2}-\d{2}-\d{6}", "{stamp}"),
        (
            r"\d{1,2} [A-Z][a-z]{2} \d{4},? \d{2}:\d{2}(:\d{2})?( UTC)?",
            "{day}",
        ),
        (r"\b\d{2}:\d{2}:\d{2}\b", "{hms}"),
    ] {
        let re = regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{e}"));
        out = re.replace_all(&out, with).into_owned();
    }
    out
}

/// A report in every format, and in the wide and picked columns where those differ.
fn every_format(g: &mut Goldens, stem: &str, report: &Report) {
    for (format, ext) in FORMATS {
        g.check(
            &format!("{stem}.{ext}"),
            &steady(&render(report, format), Path::new("/nowhere")),
        );
    }
    for format in [Format::Table, Format::Markdown] {
        let ext = if format == Format::Table { "txt" } else { "md" };
        let wide = render_with(report, format, &Columns::Wide);
        g.check(&format!("{stem}-wide.{ext}"), &wide);
    }
    let picked = Columns::chosen(false, Some("topology,scenario,ops,p99,validity"));
    let picked = picked.unwrap_or_else(|e| panic!("{e}"));
    g.check(
        &format!("{stem}-picked.txt"),
        &render_with(report, Format::Table, &picked),
    );
}

#[test]
fn golden_report_of_a_compare() {
    let mut g = Goldens::new("compare");
    every_format(
        &mut g,
        "plain",
        &build_from(&tests::config(false), &tests::cells()),
    );
    // Two repetitions (fragile), the client near its ceiling, stand-in figures.
    let mut c = tests::config(true);
    c.client_ceiling = Some(2100.0);
    let two: Vec<CellFile> = (tests::cells().into_iter())
        .filter(|c| c.cell.repeat < 3)
        .collect();
    every_format(&mut g, "fragile", &build_from(&c, &two));
    g.finish();
}

#[test]
fn golden_report_of_a_compare_with_flagged_cells() {
    let mut g = Goldens::new("compare");
    let mut cs = tests::cells();
    cs.retain(|c| !(c.cell.scenario == "S2" && c.cell.topology == "microshard-2"));
    for c in cs.iter_mut().filter(|c| c.cell.scenario == "S2") {
        c.summary.validity.degrade("12 of 1,000 operations failed");
    }
    for c in cs
        .iter_mut()
        .filter(|c| c.cell.scenario == "S1" && c.cell.topology == "single")
    {
        c.summary
            .validity
            .invalid("sh0 (localhost:41110) stopped answering at 5.2 s for 20.1 s");
    }
    every_format(&mut g, "flagged", &build_from(&tests::config(false), &cs));
    g.finish();
}

#[test]
fn golden_report_of_a_compare_with_ceilings() {
    let mut g = Goldens::new("compare-ceiling");
    let tps = [
        ("single", 2_000.0),
        ("microshard-1u", 1_800.0),
        ("microshard-1", 1_700.0),
        ("microshard-2", 3_600.0),
    ];
    let (mut report, records) = ceiling::tests::searched_s5(&tps);
    let part = ceiling::CeilingPart::of(&records, &report.rows, "single").expect("a part");
    part.quote_in(&mut report.rows, "single");
    report.ceiling = Some(part);
    every_format(&mut g, "s5", &report.with_found(&[]));
    g.finish();
}

/// Two searches of one topology, with a probe, a step not counted and a degraded one.
fn searches() -> Vec<CeilingRecord> {
    (1..=2)
        .map(|repeat| {
            let mut r = ceiling::tests::found("single", 1_000.0 * f64::from(repeat), repeat);
            r.created = "2026-01-01T00:00:00Z".into();
            r.host = Default::default();
            r.uri = "mongodb://127.0.0.1:27017".into();
            let mut probe = ceiling::tests::step(1_500.0, None);
            probe.kind = crate::experiment::ceiling::StepKind::Probe;
            probe.offered = None;
            let mut short = ceiling::tests::step(1_200.0, Some("p99 60 ms > 50 ms, \"late\""));
            short.counted = false;
            let mut busy = ceiling::tests::step(900.0, None);
            busy.verdict = "degraded".into();
            busy.verdict_reasons = vec!["busy host: load 3.1 on 2 cores".into()];
            let mut steps = vec![probe, short, busy];
            steps.append(&mut r.steps);
            r.steps = steps;
            r.server_cpu = crate::experiment::ceiling::CpuFit::of(&[
                (900.0, 0.3),
                (1_000.0, 0.34),
                (1_050.0, 0.37),
            ]);
            r
        })
        .collect()
}

#[test]
fn golden_report_of_a_ceiling_search() -> TestResult {
    let mut g = Goldens::new("ceiling");
    let records = searches();
    for (format, ext) in FORMATS {
        let text = ceiling_dir::render(&records, format)?;
        g.check(
            &format!("searches.{ext}"),
            &steady(&text, Path::new("/nowhere")),
        );
    }
    let one = &records[..1];
    g.check("one.txt", &ceiling_dir::render(one, Format::Table)?);
    g.check("one.md", &ceiling_dir::render(one, Format::Markdown)?);
    g.finish();
    Ok(())
}

#[test]
fn golden_report_of_a_diff() {
    let mut g = Goldens::new("diff");
    let a = build_from(&tests::config(false), &tests::cells());
    let mut later = tests::cells();
    later.retain(|c| !(c.cell.scenario == "S1" && c.cell.topology == "single"));
    for c in &mut later {
        c.summary.throughput *= 1.1;
        c.summary.latency.p99 *= 0.9;
    }
    later.push(tests::cell("microshard-2", "S9", 1, 750.0));
    let mut b = build_from(&tests::config(true), &later);
    b.experiment = "u".into();
    let mut d = diff::compare(&a, &b);
    if let Some(r) = d.rows.last_mut() {
        r.unlike = Some("workload: A readproportion=0.5, B 0.9".into());
    }
    for (format, ext) in FORMATS {
        let text = steady(&diff::render(&d, format), Path::new("/nowhere"));
        g.check(&format!("diff.{ext}"), &text);
    }
    g.finish();
}

/// The seed-2 outcome with memory recorded, a degraded point and a point whose client and
/// server disagree.
fn seed_two() -> SweepOutcome {
    let mut outcome = sweep::tests::seed_two();
    for (i, (v, s)) in outcome.curves.iter_mut().enumerate() {
        let twenty = v.value.as_deref() == Some("20");
        s.memory = Some(crate::experiment::metrics::MemoryAtEnd {
            resident_bytes: Some((1 + i as u64) << 30),
            cache_bytes: (!twenty).then_some(512 << 20),
            cache_max_bytes: Some(2 << 30),
            index_bytes: Some(1 << 30),
            index_cache_bytes: (!twenty).then_some(3 << 29),
            members: vec!["mongos0".into(), "sh0".into()],
            flagged: Vec::new(),
        });
    }
    let (_, s) = &mut outcome.curves[4];
    s.points[2].summary.validity.degrade("too few operations");
    s.points[1].crosscheck = Some(crate::experiment::crosscheck::CrossCheck {
        warnings: vec!["the server counted 2.0 round trips per READ".into()],
        ..Default::default()
    });
    outcome
}

#[test]
fn golden_report_of_sweeps_and_vary_tables() {
    let mut g = Goldens::new("sweep");
    let mut outcome = seed_two();
    for (format, ext) in [
        (Format::Table, "txt"),
        (Format::Markdown, "md"),
        (Format::Csv, "csv"),
    ] {
        let compact = sweep::render_vary(&outcome, format, &Columns::Compact);
        g.check(&format!("vary.{ext}"), &compact);
        let wide = sweep::render_vary(&outcome, format, &Columns::Wide);
        g.check(&format!("vary-wide.{ext}"), &wide);
    }
    outcome.topology = Some("single".into());
    let md = sweep::render_vary(&outcome, Format::Markdown, &Columns::Compact);
    g.check("vary-on-single.md", &md);
    let mut curve = outcome.curves[4].1.clone();
    curve.max_threads = Some(50);
    curve.knee_threads = Some(50);
    curve.points[0].summary.main_op = "READ".into();
    g.check("sweep.txt", &sweep::render_sweep(&curve));
    g.check("sweep.md", &sweep::sweep_markdown(&curve));
    g.check("sweep.csv", &sweep::sweep_table(&curve).csv(curve.standin));
    curve.knee_threads = Some(10);
    curve.standin = false;
    g.check("sweep-knee.txt", &sweep::render_sweep(&curve));
    g.finish();
}

/// `compare` measured on a fake lab, its reports left for [`pinned`] to write.
async fn compare_with(
    lab: &mut FakeLab,
    prepared: Prepared,
    cancel: &CancellationToken,
    progress: &Progress,
) -> TestResult<(ExperimentDir, MatrixOutcome)> {
    let mut session = Session::new(lab, cancel, progress);
    Ok(crate::experiment::compare::compare_with(&mut session, prepared).await?)
}

/// Fixes what a fake run records of this machine and this moment (creation, the host, when
/// each cell finished), so its reports are the same on every run; then writes them again.
fn pinned(dir: &ExperimentDir) -> TestResult<String> {
    let mut config = dir.config()?;
    config.created = "2026-01-01T00:00:00Z".into();
    config.host = Default::default();
    for s in &mut config.sessions {
        s.started = format!("2026-01-01T0{}:00:00Z", s.number);
    }
    dir.write_config(&config)?;
    for mut cell in dir.cells()? {
        cell.finished = format!("2026-01-01T00:0{}:00Z", cell.cell.repeat);
        dir.write_cell(&cell)?;
    }
    Ok(write_reports(dir)?)
}

/// The text files a run directory's reports are: `report.*` and each seed-2 table.
fn run_files(g: &mut Goldens, stem: &str, dir: &ExperimentDir, tmp: &Path) -> TestResult {
    let mut names: Vec<String> = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("report.") || n.starts_with("vary"))
        .filter(|n| !n.ends_with(".svg") && !n.ends_with(".png"))
        .collect();
    names.sort();
    for name in names {
        let text = std::fs::read_to_string(dir.path().join(&name))?;
        g.check(&format!("{stem}/{name}"), &steady(&text, tmp));
    }
    Ok(())
}

#[tokio::test]
async fn golden_reports_of_fake_compares() -> TestResult {
    let mut g = Goldens::new("runs");
    let silent = Progress::silent();
    let cancel = CancellationToken::new();
    // A dead member: the rest of its topology not run.
    let Some((tmp, mut cmd, at)) = setup() else {
        return Ok(());
    };
    cmd.topologies = vec!["microshard-2".into(), "single".into()];
    cmd.baseline = "single".into();
    let mut lab = new_lab();
    lab.dead_on = Some(("microshard-2".into(), "S2".into()));
    let (dir, _) = compare_with(&mut lab, create(&cmd, &at)?, &cancel, &silent).await?;
    pinned(&dir)?;
    run_files(&mut g, "not-run", &dir, tmp.path())?;
    // Resumed: two invocations measured it.
    let again = resume(dir.path(), &Default::default(), Default::default())?;
    let (dir, _) = compare_with(&mut new_lab(), again, &cancel, &silent).await?;
    pinned(&dir)?;
    run_files(&mut g, "resumed", &dir, tmp.path())?;
    // Interrupted after its first cell.
    let Some((tmp, cmd, at)) = setup() else {
        return Ok(());
    };
    let mut lab = new_lab();
    let stop = CancellationToken::new();
    lab.cancel_after_runs = Some((1, stop.clone()));
    let (dir, _) = compare_with(&mut lab, create(&cmd, &at)?, &stop, &silent).await?;
    pinned(&dir)?;
    run_files(&mut g, "interrupted", &dir, tmp.path())?;
    g.finish();
    Ok(())
}

#[tokio::test]
async fn golden_reports_of_fake_compare_sweeps() -> TestResult {
    let mut g = Goldens::new("runs");
    let silent = Progress::silent();
    let cancel = CancellationToken::new();
    let Some((tmp, mut cmd, at)) = setup() else {
        return Ok(());
    };
    cmd.sweep = true;
    cmd.sweep_threads = vec![1, 2, 4, 8, 16, 32];
    let (dir, outcome) = compare_with(&mut new_lab(), create(&cmd, &at)?, &cancel, &silent).await?;
    pinned(&dir)?;
    run_files(&mut g, "sweep", &dir, tmp.path())?;
    let under = sweep::under_comparison(&dir, &outcome.varied, &Columns::Compact);
    g.check("sweep/under.txt", &steady(&under, tmp.path()));
    cmd.vary = Some(Vary::parse("readbatchsize=1,10")?);
    cmd.repeat = 2;
    let (dir, outcome) = compare_with(&mut new_lab(), create(&cmd, &at)?, &cancel, &silent).await?;
    pinned(&dir)?;
    run_files(&mut g, "sweep-vary", &dir, tmp.path())?;
    let under = sweep::under_comparison(&dir, &outcome.varied, &Columns::Wide);
    g.check("sweep-vary/under-wide.txt", &steady(&under, tmp.path()));
    g.finish();
    Ok(())
}

#[tokio::test]
async fn golden_reports_of_fake_sweeps() -> TestResult {
    let mut g = Goldens::new("runs");
    for (stem, extra) in [
        ("sweep-dir", vec!["--threads=1,5,10,20"]),
        (
            "vary-dir",
            vec![
                "--threads=1,5,10",
                "--vary=readbatchsize=1,10,20",
                "--repeat=3",
            ],
        ),
    ] {
        let tmp = tempfile::tempdir()?;
        let wl = tmp.path().join("W");
        std::fs::write(&wl, "recordcount=10\n")?;
        let mut args = vec![
            format!("-P{}", wl.display()),
            "--topology=single".into(),
            "--duration=1s".into(),
            "--records=100".into(),
            format!("--out={}", tmp.path().join("results").display()),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let cfg = command(&args).checked()?;
        let mut lab = Curve { loads: 0, downs: 0 };
        let (dir, _) = sweep_with(
            &mut lab,
            &cfg,
            &CancellationToken::new(),
            &Progress::silent(),
        )
        .await?;
        pinned(&dir)?;
        run_files(&mut g, stem, &dir, tmp.path())?;
        let wide = sweep::render_sweep_dir(&dir, Format::Table, &Columns::Wide)?;
        g.check(&format!("{stem}/wide.txt"), &steady(&wide, tmp.path()));
    }
    g.finish();
    Ok(())
}
