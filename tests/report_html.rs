//! The report page in a real browser: `microshard report DIR --format html` on a run directory,
//! loaded by headless Chromium (Debian's `chromium`; `.ci/run` installs it). The page must load
//! without a console message, show one table row per scenario × topology, the stand-in marker,
//! the charts and the run's facts, and a screenshot is left for a person to look at. Without
//! Chromium the browser part is skipped with a message.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use microshard::experiment::model::{CompareCommand, ExperimentConfig, Latency, SweepFile};
use microshard::experiment::results::ExperimentDir;
use microshard::measure::validity::Validity;
use microshard::topology::{BackendKind, Plan, PlanOptions, TopologySpec};

fn plan(given: &str) -> Plan {
    let spec = TopologySpec::load(given).expect("shipped topology");
    let mut opts = PlanOptions::new(&spec, BackendKind::Docker);
    opts.total_memory_gb = Some(16.0);
    microshard::backend::plan(&spec, &opts).expect("plan")
}

fn single_path() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("topologies")
        .join("single.toml")
        .display()
        .to_string()
}

/// Two scenarios on two topologies (the baseline given as a file path), two repetitions, one
/// cell invalid, stand-in figures, plans recorded, and a thread sweep.
fn run_dir(root: &Path) -> (ExperimentDir, usize) {
    run_dir_with(root, &["microshard-2"], &["S1", "S2"])
}

/// [`run_dir`] with the baseline (`single`, given as a file path) and `others` as topologies
/// and these scenarios; the second topology's second scenario is invalid in its second
/// repetition.
pub(crate) fn run_dir_with(
    root: &Path,
    others: &[&str],
    scenarios: &[&str],
) -> (ExperimentDir, usize) {
    let single = single_path();
    let mut topologies = vec![single.clone()];
    topologies.extend(others.iter().map(|t| t.to_string()));
    let mut properties = std::collections::BTreeMap::new();
    for &s in scenarios {
        let mut p = microshard::workload::Properties::new();
        for (k, v) in [
            ("recordcount", "100000"),
            ("readproportion", "0.95"),
            ("workload", "site.ycsb.workloads.CoreWorkload"),
        ] {
            p.set(k, v, microshard::workload::Origin::Override);
        }
        properties.insert(s.to_string(), p);
    }
    let command = CompareCommand {
        name: "page".into(),
        topologies: topologies.clone(),
        baseline: single.clone(),
        scenarios: scenarios.iter().map(|s| s.to_string()).collect(),
        repeat: 2,
        servers: microshard::experiment::flags::ServerFlags {
            backend: BackendKind::Docker,
            ..Default::default()
        },
        duration_s: Some(30),
        threads: Some(16),
        sweep: true,
        sweep_threads: vec![1, 4, 16, 64],
        sweep_duration_s: Some(10),
        ..Default::default()
    };
    let config = ExperimentConfig {
        properties,
        host: microshard::measure::HostFacts {
            cpu_count: 2,
            os: "linux".into(),
            cpu_model: Some("test CPU".into()),
            ..Default::default()
        },
        ..crate::util::experiment_config(command, true)
    };
    let dir = ExperimentDir::create(root, "page").expect("run directory");
    dir.write_config(&config).expect("experiment.json");
    for (ti, t) in topologies.iter().enumerate() {
        let plan = plan(t);
        for (si, s) in scenarios.iter().enumerate() {
            for repeat in 1..=2u32 {
                let tp = 1000.0 * (1.0 + ti as f64) * (1.0 + si as f64) + f64::from(repeat) * 20.0;
                let mut validity = Validity::valid();
                if ti == 1 && si == 1 && repeat == 2 {
                    validity.invalid("sh1 (127.0.0.1:27019) stopped answering at 4.0 s");
                }
                let latency = Latency {
                    avg: 500.0,
                    min: 90.0,
                    max: 90_000.0,
                    p50: 400.0,
                    p95: 1200.0,
                    p99: 4000.0,
                    p999: 20_000.0,
                };
                let mut cell = crate::util::standin_cell((t, s, repeat), tp, 30.0, latency);
                cell.finished = format!(
                    "2026-01-01T00:{:02}:00Z",
                    10 + ti * 4 + si * 2 + repeat as usize
                );
                cell.summary.write_concern = Some("w=1".into());
                cell.summary.validity = validity;
                cell.topology = Some(plan.clone());
                cell.server_versions = plan
                    .members
                    .iter()
                    .map(|m| (m.name.clone(), "7.0.14-standin".to_string()))
                    .collect();
                dir.write_cell(&cell).expect("cell written");
            }
        }
    }
    let points = [(1, 500.0), (4, 1800.0), (16, 2600.0), (64, 2500.0)]
        .iter()
        .map(|&(threads, tp)| crate::util::sweep_point(threads, tp))
        .collect();
    let sweep = SweepFile {
        label: "S2 on microshard-2".into(),
        points,
        max_threads: Some(16),
        knee_threads: Some(16),
        tolerance: 0.05,
        standin: true,
        ..Default::default()
    };
    dir.write_sweep("microshard-2", &sweep)
        .expect("sweep written");
    (dir, topologies.len() * scenarios.len())
}

fn microshard(args: &[&str]) -> String {
    let out = assert_cmd::Command::cargo_bin("microshard")
        .expect("binary")
        .args(args)
        .output()
        .expect("runs");
    crate::util::assert_ok(&out, &format!("microshard {args:?}"));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The results table's body rows.
fn result_rows(html: &str) -> usize {
    let start = html
        .find("<table class=\"results\">")
        .expect("a results table");
    let end = html[start..].find("</table>").expect("closed") + start;
    html[start..end].matches("<tr class=").count()
}

/// The HTML page `microshard report` makes of `dir`.
fn html_of(dir: &ExperimentDir) -> String {
    microshard(&[
        "report",
        &dir.path().display().to_string(),
        "--format",
        "html",
    ])
}

/// A page of `body` alone, written to `dir/name`: the control a check is shown able to fail on.
fn control_page(dir: &Path, name: &str, body: &str) -> PathBuf {
    let page = dir.join(name);
    let html = format!("<!DOCTYPE html><html><body>{body}</body></html>");
    std::fs::write(&page, html).expect("control page");
    page
}

/// The page written as `target/tmp/<dir>/report.html` for the browser, with the directory, the
/// page and the browser; `None` (said on stdout) where chromium is not installed.
fn page_for_chromium(dir: &str, html: &str) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&out).expect("out dir");
    let page = out.join("report.html");
    std::fs::write(&page, html).expect("page written");
    let Some(chromium) = chromium() else {
        println!("SKIPPED the browser part: chromium is not installed (apt-get install chromium)");
        return None;
    };
    Some((out, page, chromium))
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        let out = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .ok()?;
        let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
    })
}

/// Runs headless Chromium on a file; returns (stdout, stderr), which go through files so that a
/// large DOM never fills a pipe. Killed if it hangs.
fn browse(chromium: &Path, page: &Path, extra: &[String]) -> (String, String) {
    let out_path = page.with_extension("stdout");
    let err_path = page.with_extension("stderr");
    let stdout = std::fs::File::create(&out_path).expect("stdout file");
    let stderr = std::fs::File::create(&err_path).expect("stderr file");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default(),
    )
}

fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn markdown_links_the_charts_and_write_leaves_them_beside_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (dir, _) = run_dir(tmp.path());
    let path = dir.path().display().to_string();
    let md = microshard(&["report", &path, "--format", "markdown", "--write"]);
    for file in ["throughput.svg", "latency.svg", "sweep-microshard-2.svg"] {
        assert!(md.contains(&format!("]({file})")), "{file} linked:\n{md}");
        assert!(dir.path().join(file).is_file(), "{file} written");
        let png = dir.path().join(file.replace(".svg", ".png"));
        assert!(png.is_file(), "{} written beside it", png.display());
    }
    assert!(dir.path().join("report.html").is_file());
    // Names, not paths: the baseline given as a file is labelled by its name.
    assert!(!md.contains(&single_path()), "no path in the report:\n{md}");
    assert!(md.contains("× single |"), "{md}");
    let svg = std::fs::read_to_string(dir.path().join("throughput.svg")).expect("svg");
    assert!(!svg.contains(".toml"), "no path in the chart");
}

#[test]
fn the_page_loads_in_chromium_with_a_row_per_cell() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (dir, cells) = run_dir(tmp.path());
    let html = html_of(&dir);
    assert_eq!(result_rows(&html), cells, "one row per scenario × topology");
    assert!(
        html.contains("id=\"standin\""),
        "stand-in marker at the top"
    );
    assert!(html.contains("sh1 (127.0.0.1:27019) stopped answering"));
    assert!(html.contains("<th>validity</th>"));
    assert!(html.contains("Plan of single"), "topology plans");
    assert!(html.contains("readproportion"), "resolved properties");
    assert!(html.contains("test CPU"), "host facts");
    assert!(html.contains("Knee rule"), "sweep chart");
    assert!(!html.contains("<script") && !html.contains(" src=") && !html.contains(" href="));

    let Some((out, page, chromium)) = page_for_chromium("report_html", &html) else {
        return;
    };

    // The console check must be able to fail: a page with a script error is caught.
    let script = "<script>throw new Error('control')</script>";
    let control = control_page(&out, "control.html", script);
    let (_, stderr) = browse(&chromium, &control, &["--dump-dom".into()]);
    assert!(
        !console_lines(&stderr).is_empty(),
        "this Chromium does not report console errors on stderr; the check would be blind:\n{stderr}"
    );

    let (dom, stderr) = browse(&chromium, &page, &["--dump-dom".into()]);
    assert!(
        console_lines(&stderr).is_empty(),
        "console messages: {:?}",
        console_lines(&stderr)
    );
    assert_eq!(result_rows(&dom), cells, "rows as the browser parsed them");
    // Throughput, latency, the sweep's throughput and its latency beside it, plus the
    // timeline of the one invalid cell.
    assert_eq!(
        dom.matches("<svg").count(),
        4 + 1,
        "four inline charts and one timeline"
    );
    assert_eq!(
        dom.matches("id=\"chart-sweep-").count(),
        2,
        "the sweep's two charts"
    );
    assert_eq!(
        dom.matches("id=\"timeline-").count(),
        1,
        "the invalid cell's timeline"
    );

    screenshot(&chromium, &page, 1280, &out.join("report.png"));
}

#[test]
fn a_sweep_only_run_gets_a_page_of_its_sweeps() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (full, _) = run_dir(tmp.path());
    let config = full.config().expect("config");
    let sweep = full.sweeps().into_iter().next().expect("a sweep").1;
    let dir = ExperimentDir::create(&tmp.path().join("sweep-only"), "sweep").expect("dir");
    dir.write_config(&config).expect("config written");
    dir.write_sweep("microshard-2", &sweep)
        .expect("sweep written");
    let html = html_of(&dir);
    assert!(
        html.contains("Thread sweeps") && html.contains("Knee rule"),
        "{html}"
    );
    assert!(
        !html.contains("<table class=\"results\">"),
        "no empty comparison"
    );
    // A thread sweep compares nothing: no ratio, no baseline.
    let lower = html.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
    for word in ["ratio", "ratios", "baseline"] {
        assert!(!words.contains(&word), "{word}:\n{html}");
    }
    assert!(!lower.contains("compare with"), "{html}");
}

/// The page's own scroll width and client width at `width` CSS pixels, measured by a test-only
/// wrapper that loads the page in an iframe of that width (the page itself has no script).
/// Headless Chromium's window is at least 500 px wide, hence the iframe. Returns `None` when the
/// measurement did not come back.
fn scroll_width(chromium: &Path, page: &Path, width: u32) -> Option<(u32, u32)> {
    let name = page.file_name()?.to_string_lossy().into_owned();
    let wrapper = page.with_file_name(format!("fit-{width}-{name}"));
    std::fs::write(
        &wrapper,
        format!(
            "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"f\" src=\"{name}\" style=\"width:{width}px;height:900px;border:0\"></iframe>\
             <script>const f=document.getElementById('f');f.addEventListener('load',()=>{{const d=f.contentDocument.documentElement;document.body.setAttribute('data-fit',d.scrollWidth+' '+d.clientWidth);}});</script></body></html>"
        ),
    )
    .ok()?;
    let (dom, _) = browse(
        chromium,
        &wrapper,
        &[
            "--allow-file-access-from-files".into(),
            "--hide-scrollbars".into(),
            "--virtual-time-budget=10000".into(),
            "--window-size=1400,1000".into(),
            "--dump-dom".into(),
        ],
    );
    let at = dom.find("data-fit=\"")? + "data-fit=\"".len();
    let end = dom[at..].find('"')? + at;
    let mut it = dom[at..end].split(' ').filter_map(|n| n.parse().ok());
    Some((it.next()?, it.next()?))
}

/// A screenshot of the page at `width` CSS pixels, through the same iframe wrapper.
fn screenshot(chromium: &Path, page: &Path, width: u32, shot: &Path) {
    let name = page
        .file_name()
        .expect("a file")
        .to_string_lossy()
        .into_owned();
    let wrapper = page.with_file_name(format!("shot-{width}-{name}"));
    std::fs::write(
        &wrapper,
        format!(
            "<!DOCTYPE html><html><body style=\"margin:0\"><iframe src=\"{name}\" style=\"width:{width}px;height:7000px;border:0\"></iframe></body></html>"
        ),
    )
    .expect("wrapper written");
    let _ = std::fs::remove_file(shot);
    let (_, stderr) = browse(
        chromium,
        &wrapper,
        &[
            format!("--screenshot={}", shot.display()),
            format!("--window-size={},7000", width.max(500)),
            "--hide-scrollbars".into(),
        ],
    );
    assert!(
        shot.is_file(),
        "screenshot {} written: {stderr}",
        shot.display()
    );
    println!("screenshot at {width} px: {}", shot.display());
}

#[test]
fn the_page_fits_at_1280_and_390_px_and_says_times_in_words() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (dir, _) = run_dir(tmp.path());
    let html = html_of(&dir);
    // The run's facts as a short list, times in words.
    assert!(
        html.contains("<li>1 Jan 2026, 00:00 UTC; cells 00:11:00–00:18:00, 7 min</li>"),
        "{html}"
    );
    assert!(
        !html.contains("2026-01-01T00"),
        "no raw RFC 3339 on the page"
    );
    assert!(!html.contains("<script"), "the page itself has no script");

    let Some((out, page, chromium)) = page_for_chromium("report_html_fit", &html) else {
        return;
    };
    // The measurement must be able to fail: a page wider than 390 px is caught.
    let wide = control_page(&out, "wide.html", "<div style=\"width:600px\">wide</div>");
    let (scroll, client) = scroll_width(&chromium, &wide, 390).expect("measured");
    assert!(
        scroll > client,
        "the control page overflows: {scroll} > {client}"
    );

    for width in [1280, 390] {
        let (scroll, client) = scroll_width(&chromium, &page, width).expect("measured");
        assert_eq!(client, width, "the page was laid out at {width} px");
        assert!(
            scroll <= client,
            "the page scrolls sideways at {width} px: scroll width {scroll} > {client}"
        );
        screenshot(
            &chromium,
            &page,
            width,
            &out.join(format!("report-{width}.png")),
        );
    }
}
