//! The README's commands, run as written, top to bottom, on a machine without MongoDB.
//!
//! Every ```sh block of `README.md` is read; each command (continuation lines joined, comments
//! dropped) runs through `bash` in a scratch directory that has the repository's `workloads/` and
//! `topologies/`, with the microshard under test first on PATH and a private state directory.
//! Each must exit 0. The exceptions are few and each is checked, not skipped silently:
//! - the two commands at the top (`./scripts/quickstart`, `./scripts/test`): the second is what
//!   runs this test, the first builds in release mode and runs `demo` (tests/experiment_demo.rs);
//! - `cargo build --release && export PATH=…`: the binary under test stands in for it;
//! - an hours-long `--full` command is meant for a machine with MongoDB: its `--dry-run` twin,
//!   which the README shows right before it (with `--standin`, so it plans here without MongoDB;
//!   without it, the stand-in is put on PATH as `mongod` and `mongos`), runs here (every input is
//!   checked and the plan printed; the test asserts the twin is there and passed);
//! - Docker commands, when no Docker engine answers (said on stderr).
//!
//! Each must also end valid (issue 33): a degraded result is allowed only with its
//! one-line caveat in the README, a comment right above the command naming the reason in double
//! quotes (`# … degraded: "measured for only" …`), which every degraded result of that command must
//! carry; and "busy host", which says that other work shared this machine, not that the example
//! is wrong (this test runs beside others).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{bin, processes_referring_to};

/// The longest any one README command may take here.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

/// The README's commands, in order: `(line number, command)`.
fn readme_commands(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if !in_sh {
            in_sh = line.trim_start() == "```sh";
            continue;
        }
        if line.trim_start().starts_with("```") {
            in_sh = false;
            continue;
        }
        let code = strip_comment(line);
        let (start, mut joined) = pending.take().unwrap_or((number, String::new()));
        let continued = code.trim_end().ends_with('\\');
        joined.push_str(code.trim_end().trim_end_matches('\\').trim());
        if continued {
            joined.push(' ');
            pending = Some((start, joined));
        } else if !joined.trim().is_empty() {
            out.push((start, joined.trim().to_string()));
        }
    }
    out
}

/// `line` without a shell comment (`#` at the start of a word, outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return &line[..i],
            None => {}
        }
        previous = c;
    }
    line
}

/// The caveats the README gives a command: the double-quoted phrases of the comment lines right
/// above line `line` (1-based) that speak of "degraded".
fn caveats_above(text: &str, line: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for l in lines[..line.saturating_sub(1)].iter().rev() {
        let l = l.trim();
        if !l.starts_with('#') {
            break;
        }
        if l.contains("degraded") {
            out.extend(l.split('"').skip(1).step_by(2).map(str::to_string));
        }
    }
    out
}

/// The degraded results a command listed (`cli::verdicts::verdicts_exit`): several on their own
/// `microshard: degraded:` lines, one on the last line.
fn degraded_results(output: &str) -> Vec<String> {
    let several: Vec<String> = (output.lines())
        .filter_map(|l| l.strip_prefix("microshard: degraded: "))
        .map(str::to_string)
        .collect();
    if !several.is_empty() {
        return several;
    }
    (output.lines().rev())
        .find(|l| l.starts_with("microshard: 1 degraded result(s), usable with their caveat"))
        .and_then(|l| l.split_once("exit 3): "))
        .map(|(_, one)| vec![one.to_string()])
        .unwrap_or_default()
}

/// Why a command's degraded results are not all accounted for: each must carry one of the
/// README's caveats for it, or be "busy host".
fn unexplained(degraded: &[String], caveats: &[String]) -> Vec<String> {
    degraded
        .iter()
        .filter(|d| !d.contains("busy host") && !caveats.iter().any(|c| d.contains(c.as_str())))
        .cloned()
        .collect()
}

fn docker_answers() -> bool {
    Command::new("docker")
        .args(["info"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `command` through bash in `dir` with the test's environment. At the timeout it does
/// what a user would: Ctrl-C to the command's process group, so what it started is torn down
/// and the README's later commands find their ports free; SIGKILL only if that is ignored.
/// With `mongod_on_path`, the stand-in is the `mongod`/`mongos` on PATH, as MongoDB's would be.
fn run(command: &str, dir: &Path, root: &Path, mongod_on_path: bool) -> (Option<i32>, String) {
    let bin_dir = bin().parent().map(Path::to_path_buf).unwrap_or_default();
    let mut path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    if mongod_on_path {
        let links = root.join("mongodb-bin");
        for name in ["mongod", "mongos"] {
            if !links.join(name).exists() {
                std::fs::create_dir_all(&links).expect("mkdir");
                std::os::unix::fs::symlink(bin(), links.join(name)).expect("symlink");
            }
        }
        path = format!("{}:{path}", links.display());
    }
    let log = root.join("command.log");
    let file = std::fs::File::create(&log).expect("log file");
    let mut child = Command::new("bash")
        .args(["-o", "pipefail", "-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env("MICROSHARD_STATE_DIR", root.join("state"))
        .env("TMPDIR", root.join("tmp"))
        .env("CI", "1")
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("log file"))
        .stderr(file)
        .process_group(0)
        .spawn()
        .expect("bash");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if started.elapsed() > COMMAND_TIMEOUT {
            interrupt(&mut child);
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status, std::fs::read_to_string(&log).unwrap_or_default())
}

/// SIGINT to the child's process group, up to 60 s for its teardown, then SIGKILL.
fn interrupt(child: &mut std::process::Child) {
    let group = -(child.id() as i32);
    // SAFETY: kill(2) on the process group this test created; ESRCH at worst.
    unsafe { libc::kill(group, libc::SIGINT) };
    let asked = Instant::now();
    while asked.elapsed() < Duration::from_secs(60) {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: as above.
    unsafe { libc::kill(group, libc::SIGKILL) };
    let _ = child.wait();
}

/// Tears down what the README's commands started, even when the test fails half-way: `down
/// --all` in the test's state directory, then any process still referring to it.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new(bin())
            .args(["down", "--all"])
            .env("MICROSHARD_STATE_DIR", self.0.join("state"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        for (pid, _) in processes_referring_to(&self.0) {
            // SAFETY: kill(2) on a leftover of this test; ESRCH at worst.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
        }
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[test]
fn the_readme_parser_joins_continuations_and_drops_comments() {
    let text = "intro\n```sh\n# a comment\nmicroshard a \\\n    --b 'x # y' # said\n\nmicroshard c\n```\n```toml\nnot = \"run\"\n```\n";
    assert_eq!(
        readme_commands(text),
        vec![
            (4, "microshard a --b 'x # y'".to_string()),
            (7, "microshard c".to_string())
        ]
    );
}

#[test]
fn a_degraded_readme_example_needs_its_caveat_above_it() {
    let text = "```sh\n# toy size: degraded, \"measured for only\" under 1 s\nmicroshard a\nmicroshard b\n```\n";
    assert_eq!(caveats_above(text, 3), ["measured for only"]);
    assert!(caveats_above(text, 4).is_empty());
    let output = "x\nmicroshard: degraded: S1 single #1: measured for only 0.2 s\nmicroshard: degraded: S2 single #1: busy host: other processes used 0.9 of 2 cores\nmicroshard: 2 degraded result(s), usable with their caveat (--strict makes this exit 3): each on a 'microshard: degraded:' line above\n";
    let degraded = degraded_results(output);
    assert_eq!(degraded.len(), 2);
    let one = "microshard: 1 degraded result(s), usable with their caveat (--strict makes this exit 3): S1 single #1 is degraded: measured for only 0.2 s\n";
    assert_eq!(
        degraded_results(one),
        ["S1 single #1 is degraded: measured for only 0.2 s"]
    );
    assert!(unexplained(&degraded, &caveats_above(text, 3)).is_empty());
    assert_eq!(
        unexplained(&degraded, &[]).len(),
        1,
        "only the busy host is tolerated"
    );
}

#[test]
fn every_readme_command_runs_as_written() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(repo.join("README.md")).expect("README.md");
    let commands = readme_commands(&text);
    assert!(commands.len() > 20, "README commands: {commands:?}");

    // The two commands at the top, exactly: the job and the tests.
    assert_eq!(commands[0].1, "./scripts/quickstart");
    assert_eq!(commands[1].1, "./scripts/test");

    // The stand-in examples use the usual MongoDB ports, as a user's first try would.
    if (27017..27024).any(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_err()) {
        eprintln!("readme: skipped: a port in 27017–27023 is taken (a MongoDB runs here?)");
        return;
    }
    let docker = docker_answers();

    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().to_path_buf();
    let _cleanup = Cleanup(root.clone());
    let work = root.join("work");
    for d in ["state", "tmp", "work"] {
        std::fs::create_dir_all(root.join(d)).expect("mkdir");
    }
    for d in ["workloads", "topologies"] {
        std::os::unix::fs::symlink(repo.join(d), work.join(d)).expect("symlink");
    }

    let mut planned: Vec<String> = Vec::new();
    let mut failures = Vec::new();
    for (line, command) in &commands[2..] {
        if command.starts_with("cargo build --release") {
            continue;
        }
        if !command.starts_with("microshard ") {
            failures.push(format!(
                "README.md:{line}: not a microshard command (the README shows only microshard's): {command}"
            ));
            continue;
        }
        if command.contains("--full") && !command.contains("--dry-run") {
            if planned.contains(&format!("{command} --dry-run"))
                || planned.contains(&format!("{command} --standin --dry-run"))
            {
                eprintln!("readme: README.md:{line}: hours long; its --dry-run twin passed");
            } else {
                failures.push(format!(
                    "README.md:{line}: a --full command without a passing --dry-run twin before it: {command}"
                ));
            }
            continue;
        }
        let needs_docker =
            command.contains("--backend docker") || command.contains("standin image");
        if needs_docker && !docker {
            eprintln!("readme: README.md:{line}: skipped, no Docker engine answers: {command}");
            continue;
        }
        let started = Instant::now();
        let for_mongodb = command.contains("--full")
            && command.contains("--dry-run")
            && !command.contains("--standin");
        let (status, output) = run(command, &work, &root, for_mongodb);
        eprintln!(
            "readme: README.md:{line}: exit {status:?} in {:.1} s: {command}",
            started.elapsed().as_secs_f64()
        );
        let degraded = degraded_results(&output);
        let unexplained = unexplained(&degraded, &caveats_above(&text, *line));
        // The count line and the list read here must agree, or this check could never fail.
        let counted = (output.lines())
            .find_map(|l| {
                l.strip_prefix("microshard: ")?
                    .split_once(" degraded result(s)")
            })
            .and_then(|(n, _)| n.parse::<usize>().ok())
            .unwrap_or(0);
        if counted != degraded.len() {
            failures.push(format!(
                "README.md:{line}: {counted} degraded result(s) counted, {} read: {command}",
                degraded.len()
            ));
        }
        // `rerun` compares only cells valid in both runs: when other work on this machine
        // degraded them all ("busy host", which this test forgives), it says nothing was
        // compared and exits 3, which is right, not the example's fault.
        let busy = degraded.iter().any(|d| d.contains("busy host"));
        let nothing_compared = status == Some(3)
            && command.starts_with("microshard rerun")
            && output.contains("rerun: nothing compared")
            && busy
            && unexplained.is_empty();
        if nothing_compared {
            eprintln!(
                "readme: README.md:{line}: nothing compared: every cell degraded, some for a busy host"
            );
        } else if status != Some(0) {
            failures.push(format!(
                "README.md:{line}: exit {status:?}: {command}\n{}",
                tail(&output, 15)
            ));
        } else if !unexplained.is_empty() {
            failures.push(format!(
                "README.md:{line}: degraded without a caveat above it in the README: {command}\n{}",
                unexplained.join("\n")
            ));
        } else if command.contains("--dry-run") {
            planned.push(command.clone());
        }
    }

    // What the commands promise to leave: the reports they name, and no process.
    for file in [
        "s2.json",
        "merged.json",
        "report.html",
        "results/latest/report.md",
    ] {
        if !work.join(file).is_file() {
            failures.push(format!("{file}: not written"));
        }
    }
    let (_, leftovers) = run("microshard down --all", &work, &root, false);
    let left = processes_referring_to(&root);
    assert!(
        failures.is_empty(),
        "{} README command(s) failed:\n\n{}\n\n(down --all: {leftovers})",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(left.is_empty(), "processes left: {left:?}");
}
