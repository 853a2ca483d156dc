//! The bad-input catalogue: every kind of wrong input a user can give (property files, `-p`
//! overrides, topology files, connection strings, the command line) goes through the real binary
//! and must end the same way: exit status 2, exactly one line on stderr that names the culprit
//! (file:line, property, key, flag or host), no panic or backtrace, and nothing started — no new
//! file anywhere under the case's working directory, state directory or `TMPDIR`, and no process
//! left that refers to them.
//!
//! Every case fails before any server is contacted (or against a closed loopback port with a
//! short selection timeout), so the whole table runs in a few seconds.

use crate::util::bin;
use crate::util::processes_referring_to;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind an ephemeral port");
    let port = l.local_addr().expect("local addr").port();
    drop(l);
    port
}

/// What a path holds, to compare before and after a case: a file's bytes, a symbolic link's
/// target (not followed: the loop fixture points at itself), or a directory.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Link(PathBuf),
    Dir,
    /// A file this user cannot read (mode 000 when not root): its length and modification time.
    Unreadable(u64, Option<std::time::SystemTime>),
}

/// Every path under `root`, relative, with what it holds: a case must leave the tree
/// byte-identical (nothing created, removed or changed).
fn tree(root: &Path) -> BTreeMap<PathBuf, Entry> {
    walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let rel = e.path().strip_prefix(root).ok()?.to_path_buf();
            let kind = e.file_type();
            let entry = if kind.is_symlink() {
                Entry::Link(std::fs::read_link(e.path()).unwrap_or_default())
            } else if kind.is_dir() {
                Entry::Dir
            } else {
                std::fs::read(e.path())
                    .map(Entry::File)
                    .unwrap_or_else(|_| {
                        let m = e.metadata().ok();
                        Entry::Unreadable(
                            m.as_ref().map_or(0, |m| m.len()),
                            m.and_then(|m| m.modified().ok()),
                        )
                    })
            };
            Some((rel, entry))
        })
        .collect()
}

/// What changed from `before` to `after`: paths created, removed or modified.
fn changes(before: &BTreeMap<PathBuf, Entry>, after: &BTreeMap<PathBuf, Entry>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, entry) in after {
        match before.get(path) {
            None => out.push(format!("created {}", path.display())),
            Some(old) if old != entry => out.push(format!("changed {}", path.display())),
            Some(_) => {}
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        out.push(format!("removed {}", path.display()));
    }
    out
}

/// The Docker objects a case could have made, when the `docker` CLI answers (`None` without
/// Docker, and the comparison is skipped): the containers and networks labelled with the owner
/// id of the case's state directory (as every object microshard creates is), and the images the
/// case names (`--tag`, `--image`) that the engine holds. Scoped so, tests running beside it
/// that use Docker do not count.
fn docker_objects(root: &Path, c: &Case) -> Option<Vec<String>> {
    static ANSWERS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let answers = *ANSWERS.get_or_init(|| {
        Command::new("docker")
            .args(["info", "--format", "{{.ID}}"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !answers {
        return None;
    }
    let owner = format!(
        "label={}={}",
        microshard::backend::docker::LABEL_OWNER,
        microshard::backend::docker::owner_id_for(&root.join("state"))
    );
    let mut ids = Vec::new();
    for (what, args) in [
        ("container", vec!["ps", "-aq", "--no-trunc"]),
        ("network", vec!["network", "ls", "-q", "--no-trunc"]),
    ] {
        let out = Command::new("docker")
            .args(args)
            .args(["--filter", &owner])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        ids.extend(text.split_whitespace().map(|id| format!("{what} {id}")));
    }
    let named = c
        .args
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a.split_once('=') {
            Some(("--tag" | "--image", image)) => Some(image.to_string()),
            _ if a == "--tag" || a == "--image" => c.args.get(i + 1).cloned(),
            _ => None,
        });
    for image in named {
        let held = Command::new("docker")
            .args(["image", "inspect", "--format", "{{.Id}}", &image])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if held {
            ids.push(format!("image {image}"));
        }
    }
    Some(ids)
}

/// Whether a case can reach a Docker engine (a Docker backend, an image, `standin image`).
fn reaches_docker(c: &Case) -> bool {
    c.args
        .iter()
        .any(|a| a.contains("docker") || a.starts_with("--image"))
        || c.args.first().is_some_and(|a| a == "standin")
}

/// One kind of bad input.
struct Case {
    /// What is wrong, for failure messages.
    what: String,
    /// The arguments; `{dir}` is replaced by the fixture directory, `{closed}` by a closed port.
    args: Vec<String>,
    /// Strings the single stderr line must contain (the culprit).
    culprits: Vec<String>,
    /// Strings it must not contain (a wrong reason).
    absent: Vec<String>,
    /// Environment variables set for this case only (`{dir}` replaced too).
    env: Vec<(String, String)>,
}

/// A case of the command line `line` (split at white space: no argument in it holds any).
fn case(what: &str, line: &str, culprits: &[&str]) -> Case {
    Case {
        what: what.to_string(),
        args: line.split_whitespace().map(str::to_string).collect(),
        culprits: culprits.iter().map(|s| s.to_string()).collect(),
        absent: Vec::new(),
        env: Vec::new(),
    }
}

impl Case {
    fn with_env(mut self, key: &str, value: &str) -> Case {
        self.env.push((key.to_string(), value.to_string()));
        self
    }
}

/// Replaces `{dir}` in every argument, culprit and environment value.
fn expand_dir(cases: &mut [Case], dir: &Path) {
    let d = dir.to_string_lossy().into_owned();
    for c in cases {
        for s in c.args.iter_mut().chain(&mut c.culprits) {
            *s = s.replace("{dir}", &d);
        }
        for (_, v) in &mut c.env {
            *v = v.replace("{dir}", &d);
        }
    }
}

/// The cases of one `## section` of `tests/data/bad_input.txt` (its header gives the format),
/// with `{uri}` and `{closed}` filled in for a closed port and `{dir}` for the fixture directory.
fn catalogue(section: &str, dir: &Path, closed: u16) -> Vec<Case> {
    let text = include_str!("data/bad_input.txt");
    let uri = format!("mongodb://127.0.0.1:{closed}/ycsb?serverSelectionTimeoutMS=300");
    let fill = |s: &str| {
        s.replace("{uri}", &uri)
            .replace("{closed}", &closed.to_string())
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let body = text
        .split("\n## ")
        .find_map(|part| part.strip_prefix(section)?.strip_prefix('\n'))
        .unwrap_or_else(|| panic!("no section {section:?} in bad_input.txt"));
    let mut cases = Vec::new();
    for block in body.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut lines = block.trim().lines();
        let what = lines
            .next()
            .and_then(|l| l.strip_prefix("# "))
            .expect("a # line");
        let args = shlex::split(lines.next().expect("the arguments")).expect("shell words");
        let mut c = case(what, "", &[]);
        c.args = args.iter().map(|a| fill(a)).collect();
        let mut skip = false;
        for line in lines {
            if let Some(culprit) = line.strip_prefix("=> ") {
                c.culprits.push(fill(culprit));
            } else if let Some(wrong) = line.strip_prefix("not ") {
                c.absent.push(fill(wrong));
            } else if let Some((k, v)) = line.strip_prefix("env ").and_then(|e| e.split_once('=')) {
                c = c.with_env(k, &fill(v));
            } else if line == "unless root" {
                skip = root;
            } else {
                panic!("bad_input.txt, case {what:?}: cannot read {line:?}");
            }
        }
        if !skip {
            cases.push(c);
        }
    }
    expand_dir(&mut cases, dir);
    cases
}

/// An experiment's `experiment.json` as `compare` writes it: one topology, S1 (load) and S2, on
/// the stand-in binaries in `bin`, so a `--resume` that wrongly went ahead would really start them.
fn experiment_config(bin: &Path, schema: &str) -> serde_json::Value {
    serde_json::json!({
        "schema": schema,
        "name": "fixture",
        "created": "2026-01-01T00:00:00+00:00",
        "tool_version": "0.1.0",
        "topologies": ["single"],
        "baseline": "single",
        "scenarios": ["S1", "S2"],
        "repeat": 1,
        "backend": "process",
        "bin_dir": bin,
        "duration_s": 1,
        "full": false,
        "scale_note": "laptop scale: 10 records",
        "properties": {
            "S1": {"recordcount": "10", "insertcount": "10", "operationcount": "10",
                   "insertproportion": "1", "readproportion": "0", "updateproportion": "0"},
            "S2": {"recordcount": "10", "operationcount": "10", "readproportion": "1",
                   "updateproportion": "0", "maxexecutiontime": "1"}
        },
        "host": {}
    })
}

/// One cell file as `compare` writes it.
fn cell(scenario: &str, schema: &str) -> serde_json::Value {
    let latency = serde_json::json!({"avg": 1.0, "min": 1.0, "max": 1.0, "p50": 1.0,
                                     "p95": 1.0, "p99": 1.0, "p999": 1.0});
    serde_json::json!({
        "schema": schema,
        "cell": {"topology": "single", "scenario": scenario, "repeat": 1},
        "finished": "2026-01-01T00:00:01+00:00",
        "summary": {"phase": "load", "threads": 1, "operations": 10, "runtime_ms": 100.0,
                    "throughput": 100.0, "main_op": "INSERT", "latency": latency,
                    "errors": 0, "standin": true},
        "result": serde_json::to_value(microshard::measure::RunDocument::default())
            .expect("a result document serialises")
    })
}

/// Results directories: a good one, one with a damaged cell, one with a cell of an unknown
/// schema, one whose configuration has an unknown schema, one whose `cells` cannot be written.
fn write_experiments(dir: &Path) {
    let bin = dir.join("bin");
    let write = |exp: &str, file: &str, body: String| {
        let path = dir.join(exp).join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, body).expect("write experiment fixture");
    };
    let json = |v: serde_json::Value| v.to_string();
    for exp in ["exp-ok", "exp-damaged", "exp-cell-schema", "exp-cells-file"] {
        write(
            exp,
            "experiment.json",
            json(experiment_config(&bin, "microshard.experiment/1")),
        );
    }
    write(
        "exp-schema",
        "experiment.json",
        json(experiment_config(&bin, "microshard.experiment/99")),
    );
    for exp in ["exp-ok", "exp-damaged"] {
        write(
            exp,
            "cells/single/S1-r1.json",
            json(cell("S1", microshard::experiment::model::CELL_SCHEMA)),
        );
    }
    write(
        "exp-damaged",
        "cells/single/S2-r1.json",
        "{\"schema\": \"micro".into(),
    );
    write(
        "exp-cell-schema",
        "cells/single/S1-r1.json",
        json(cell("S1", "microshard.cell/99")),
    );
    write("exp-cells-file", "cells", "not a directory\n".into());
    // A report file `report --write` would replace is a directory.
    write(
        "exp-report-blocked",
        "experiment.json",
        json(experiment_config(&bin, "microshard.experiment/1")),
    );
    write(
        "exp-report-blocked",
        "cells/single/S1-r1.json",
        json(cell("S1", microshard::experiment::model::CELL_SCHEMA)),
    );
    write("exp-report-blocked", "report.html/kept", String::new());
}

/// A result document as `--json` writes it: one client's load of `operations` keys, in the same
/// one-second window as the others.
fn result_document(operations: u64) -> serde_json::Value {
    let mut doc = serde_json::to_value(microshard::measure::RunDocument::default())
        .expect("a result document serialises");
    // The layout this version writes (`measure::SCHEMA_VERSION`).
    doc["schema_version"] = 2.into();
    doc["phase"] = "load".into();
    doc["started"] = "2026-01-01T00:00:00.000Z".into();
    doc["ended"] = "2026-01-01T00:00:01.000Z".into();
    doc["runtime_ms"] = 1000.into();
    doc["operations"] = operations.into();
    doc["throughput"] = (operations as f64).into();
    doc
}

/// Results for `merge`: `r1.json`, a copy of it under another name (re-formatted: the same
/// result), and `r2.json`, another client of the same run.
fn write_results(dir: &Path) {
    let results = dir.join("results");
    std::fs::create_dir_all(&results).expect("mkdir");
    let r1 = result_document(10);
    let write = |name: &str, text: String| {
        std::fs::write(results.join(name), text).expect("write result fixture");
    };
    write("r1.json", serde_json::to_string_pretty(&r1).expect("json"));
    write("r1-copy.json", r1.to_string());
    write("r2.json", result_document(12).to_string());
}

/// Writes the fixture files every case can refer to.
fn write_fixtures(dir: &Path) {
    let w = |name: &str, body: &str| {
        std::fs::write(dir.join(name), body).expect("write fixture");
    };
    w(
        "badnum.properties",
        "# a comment\nrecordcount=12x\noperationcount=10\n",
    );
    w(
        "bad-escape.properties",
        "recordcount=10\n# next line has a bad escape\nfieldnameprefix=f\\uZZZZ\n",
    );
    w(
        "zero-mix.properties",
        "recordcount=10\nreadproportion=0\nupdateproportion=0\ninsertproportion=0\nscanproportion=0\nreadmodifywriteproportion=0\n",
    );
    w("good.properties", "recordcount=10\noperationcount=10\n");
    std::fs::write(
        dir.join("binary.properties"),
        b"recordcount=10\n\x00\x13\x9c\xfe\xffoperationcount=\x01\n",
    )
    .expect("write fixture");
    std::fs::write(
        dir.join("not-utf8.properties"),
        b"recordcount=10\nfieldnameprefix=caf\xe9\n",
    )
    .expect("write fixture");
    write_experiments(dir);
    write_results(dir);
    std::fs::create_dir_all(dir.join("a-directory.properties")).expect("mkdir");
    // A symlink pointing at itself: open(2) fails with ELOOP even for root.
    let _ = std::os::unix::fs::symlink("loop.properties", dir.join("loop.properties"));
    w("unreadable.properties", "recordcount=10\n");
    let _ = std::fs::set_permissions(
        dir.join("unreadable.properties"),
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o000),
    );

    std::fs::create_dir_all(dir.join("topos/dir.toml")).expect("mkdir");
    let t = |name: &str, body: &str| {
        std::fs::write(dir.join("topos").join(name), body).expect("write topology");
    };
    t(
        "far-clients.toml",
        "name = \"far\"\nkind = \"standalone\"\nclients = [{ docker = \"tcp://loadgen-2.invalid:2375\", count = 1 }]\n",
    );
    t(
        "unsharded-two.toml",
        "name = \"u2\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_collection = false\n",
    );
    t(
        "unknown-key.toml",
        "name = \"uk\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_per_host = 3\n",
    );
    // A name this machine resolves to loopback (127.0.1.1, as Debian maps its own name), given
    // through a test-local hosts file (`MICROSHARD_HOSTS_FILE`) rather than /etc/hosts.
    w(
        "hosts",
        "127.0.1.1 ctl.microshard.test ctl\n10.0.0.2 db2.microshard.test\n",
    );
    t(
        "loopback-name.toml",
        "name = \"lo\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"ctl.microshard.test\"\npublish_address = \"0.0.0.0\"\n[[hosts]]\naddress = \"db2.microshard.test\"\ndocker = \"tcp://db2.microshard.test:2375\"\npublish_address = \"0.0.0.0\"\n",
    );
    t(
        "dup-host.toml",
        "name = \"dup\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"10.0.0.1\"\n[[hosts]]\naddress = \"10.0.0.1\"\n",
    );
    t(
        "port-range.toml",
        "name = \"pr\"\nkind = \"standalone\"\n\nbase_port = 70000\n",
    );
    t(
        "port-overflow.toml",
        "name = \"po\"\nkind = \"sharded\"\nshards_per_host = 8\nbase_port = 65530\n",
    );
    t(
        "port-zero.toml",
        "name = \"pz\"\nkind = \"standalone\"\nbase_port = 0\n",
    );
    t(
        "budget.toml",
        "name = \"bud\"\nkind = \"sharded\"\nshards_per_host = 8\n[[hosts]]\naddress = \"localhost\"\nmemory_budget_gb = 1.0\n",
    );
    t(
        "bad-image.toml",
        "name = \"bi\"\nkind = \"standalone\"\nimage = \"Mongo:8.0\"\n",
    );
    t(
        "bad-client-image.toml",
        "name = \"bci\"\nkind = \"standalone\"\nclient_image = \"microshard-standin:\"\nclients = [{ docker = \"unix:///var/run/docker.sock\", count = 1 }]\n",
    );
    t("bad-kind.toml", "name = \"bk\"\nkind = \"clustered\"\n");
    t(
        "neg-shards.toml",
        "name = \"ns\"\nkind = \"sharded\"\nshards_per_host = -1\n",
    );
    t(
        "too-many-shards.toml",
        "name = \"tm\"\nkind = \"sharded\"\nshards_per_host = 65\n",
    );
    t(
        "bad-uri.toml",
        "name = \"bu\"\nkind = \"sharded\"\nshards_per_host = 1\nuri = \"http://127.0.0.1:27017\"\n",
    );
    t("syntax.toml", "name = \"unterminated\nkind = \"sharded\"\n");
    t(
        "managed-flag.toml",
        "name = \"mf\"\nkind = \"standalone\"\nmongod_args = [\"--port=1\"]\n",
    );
    t(
        "bad-name.toml",
        "name = \"bad name!\"\nkind = \"standalone\"\n",
    );
    t(
        "config-members.toml",
        "name = \"cm\"\nkind = \"sharded\"\nshards_per_host = 1\n[config_servers]\nmembers = 9\n",
    );
    t("missing-kind.toml", "name = \"mk\"\n");
    t(
        "type-error.toml",
        "name = \"te\"\nkind = \"sharded\"\nshards_per_host = \"two\"\n",
    );
    t(
        "many-cpus.toml",
        "name = \"mc\"\nkind = \"sharded\"\nshards_per_host = 1\n[[hosts]]\naddress = \"localhost\"\nshard_cpusets = [\"4000\"]\n",
    );
    t(
        "client-count.toml",
        "name = \"cc\"\nkind = \"standalone\"\nclients = [{ docker = \"unix:///var/run/docker.sock\", count = 0 }]\n",
    );
    t(
        "client-pods.toml",
        "name = \"kp\"\nkind = \"standalone\"\nclient_image = \"m:1\"\nclients = [{ kubernetes = \"lab\", count = 2, node_selector = { \"bad key\" = \"x\" } }]\n",
    );
    t(
        "client-engine.toml",
        "name = \"ce\"\nkind = \"standalone\"\nclients = [{ docker = \"unix:///nonexistent/microshard-docker.sock\", count = 2 }]\n",
    );
    t(
        "bad-cpuset.toml",
        "name = \"cs\"\nkind = \"sharded\"\nshards_per_host = 2\n[[hosts]]\naddress = \"localhost\"\nshard_cpusets = [\"0-1\", \"banana\"]\n",
    );
}

/// `microshard` in the fixture directory `work`, with its state and temporary files under `root`.
fn microshard(root: &Path, work: &Path) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(work)
        .env("MICROSHARD_STATE_DIR", root.join("state"))
        .env("TMPDIR", root.join("tmp"))
        .env("RUST_BACKTRACE", "1")
        .env("CI", "1")
        .stdin(Stdio::null());
    c
}

/// Runs one case; returns what is wrong with the outcome, if anything.
fn check(c: &Case, root: &Path, work: &Path) -> Option<String> {
    let before = tree(root);
    let docker_before = reaches_docker(c).then(|| docker_objects(root, c)).flatten();
    let started = Instant::now();
    let out = microshard(root, work)
        .args(&c.args)
        .env_remove("MONGODB_URL")
        .envs(c.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => return Some(format!("cannot run microshard: {e}")),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut problems = Vec::new();
    if out.status.code() != Some(2) {
        problems.push(format!("exit status {:?}, expected 2", out.status.code()));
    }
    if lines.len() != 1 {
        problems.push(format!("{} stderr lines, expected 1", lines.len()));
    }
    // One short line: not the same failure repeated per topology.
    if lines.iter().any(|l| l.len() > 400) {
        problems.push("a stderr line longer than 400 characters".into());
    }
    let lower = stderr.to_lowercase();
    if lower.contains("panicked") || lower.contains("backtrace") {
        problems.push("a panic or backtrace on stderr".into());
    }
    for culprit in &c.culprits {
        if !stderr.contains(culprit.as_str()) {
            problems.push(format!("stderr does not name {culprit:?}"));
        }
    }
    for wrong in &c.absent {
        if stderr.contains(wrong.as_str()) {
            problems.push(format!("stderr says {wrong:?}"));
        }
    }
    if started.elapsed() > Duration::from_secs(20) {
        problems.push(format!("took {:?}", started.elapsed()));
    }
    problems.extend(changes(&before, &tree(root)));
    if let Some(before) = docker_before {
        let after = docker_objects(root, c).unwrap_or_default();
        let new: Vec<&String> = after.iter().filter(|id| !before.contains(id)).collect();
        if !new.is_empty() {
            problems.push(format!("new Docker objects: {new:?}"));
        }
    }
    let left = processes_referring_to(root);
    if !left.is_empty() {
        problems.push(format!("processes left: {left:?}"));
        for (pid, _) in &left {
            // SAFETY: kill(2) on a pid this case left behind; the worst case is ESRCH.
            unsafe {
                libc::kill(*pid as i32, libc::SIGKILL);
            }
        }
    }
    if problems.is_empty() {
        None
    } else {
        Some(format!(
            "{}\n    args: {:?}\n    problems: {}\n    stderr: {}",
            c.what,
            c.args,
            problems.join("; "),
            stderr.trim_end().replace('\n', "\n            ")
        ))
    }
}

/// Creates the fixture tree: `work` (fixtures, stand-in binaries), `state`, `tmp`.
fn fixture_root() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    let work = root.join("work");
    for d in ["work", "state", "tmp"] {
        std::fs::create_dir_all(root.join(d)).expect("mkdir");
    }
    write_fixtures(&work);
    // Stand-in binaries, so a `compare` that wrongly started something would really start it.
    crate::util::standin_bin_dir(&work);
    (tmp, work)
}

fn assert_all_refused(root: &Path, work: &Path, cases: &[Case]) {
    let failures: Vec<String> = cases.iter().filter_map(|c| check(c, root, work)).collect();
    assert!(
        failures.is_empty(),
        "{} of {} bad-input cases misbehave:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_kind_of_bad_input_exits_2_with_one_line_naming_the_culprit() {
    let (tmp, work) = fixture_root();
    let root = tmp.path();
    let cases = catalogue("catalogue", &work, closed_port());
    assert!(cases.len() >= 30, "the catalogue has {} cases", cases.len());
    assert_all_refused(root, &work, &cases);
}

/// Each command on the surfaces issue #32 names (a port range past 65535, an image reference
/// that is none, an output that cannot be written, a result merged with itself, more clients
/// than keys) refuses before anything exists: the fixture tree, state directory and temporary
/// directory are byte-identical afterwards, and no Docker object appeared.
#[test]
fn every_command_refuses_bad_input_leaving_everything_byte_identical() {
    let (tmp, work) = fixture_root();
    let cases = catalogue("commands", &work, closed_port());
    assert_all_refused(tmp.path(), &work, &cases);
}

/// The before/after comparison sees a file whose bytes changed (same length), a link pointed
/// elsewhere, and a path created or removed.
#[test]
fn the_tree_comparison_catches_changed_bytes_not_only_new_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    std::fs::write(root.join("cell.json"), "{\"a\": 1}").expect("write");
    std::os::unix::fs::symlink("cell.json", root.join("latest")).expect("symlink");
    std::fs::write(root.join("gone"), "").expect("write");
    let before = tree(root);
    std::fs::write(root.join("cell.json"), "{\"a\": 2}").expect("write");
    std::fs::remove_file(root.join("latest")).expect("rm");
    std::os::unix::fs::symlink("elsewhere", root.join("latest")).expect("symlink");
    std::fs::remove_file(root.join("gone")).expect("rm");
    std::fs::create_dir(root.join("new")).expect("mkdir");
    assert_eq!(
        changes(&before, &tree(root)),
        [
            "changed cell.json",
            "changed latest",
            "created new",
            "removed gone"
        ]
    );
}

/// The command a case runs, as the catalogue counts it: `standin image` and `compare --ceiling`
/// apart from `standin` and `compare`.
fn command_of(c: &Case) -> String {
    let first = c.args.first().map(String::as_str).unwrap_or_default();
    match first {
        "standin" if c.args.get(1).is_some_and(|a| a == "image") => "standin image".into(),
        "compare" if c.args.iter().any(|a| a == "--ceiling") => "compare --ceiling".into(),
        other => other.into(),
    }
}

/// The catalogue holds at least three bad inputs for every command that takes input.
#[test]
fn every_command_has_at_least_three_bad_inputs() {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for section in ["catalogue", "compare", "commands"] {
        for c in catalogue(section, Path::new("/fixture"), 1) {
            *count.entry(command_of(&c)).or_default() += 1;
        }
    }
    let commands = [
        "load",
        "run",
        "ycsb",
        "up",
        "compare",
        "sweep",
        "report",
        "diff",
        "rerun",
        "merge",
        "standin image",
        "ceiling",
        "compare --ceiling",
    ];
    let few: Vec<String> = commands
        .iter()
        .filter(|c| count.get(**c).copied().unwrap_or(0) < 3)
        .map(|c| format!("{c}: {}", count.get(*c).copied().unwrap_or(0)))
        .collect();
    assert!(few.is_empty(), "fewer than three bad inputs: {few:?}");
}

/// Every `compare` input (backend, binaries, topologies, CPU sets, threads, `-p`, results root,
/// `--resume` directory) is checked before the run directory is made or anything is started.
#[test]
fn compare_refuses_bad_input_before_starting_anything() {
    let (tmp, work) = fixture_root();
    let cases = catalogue("compare", &work, closed_port());
    assert!(
        cases.len() >= 30,
        "the compare catalogue has {} cases",
        cases.len()
    );
    assert_all_refused(tmp.path(), &work, &cases);
}

/// Too many threads for the open-file limit: refused up front, naming `threadcount` and the fix,
/// instead of failing half-way through the run with "too many open files".
#[test]
fn threads_beyond_the_open_file_limit_are_refused() {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 128 && exec '{}' run -P workloads/S2 -p threadcount=500 --uri mongodb://127.0.0.1:9/ycsb",
            env!("CARGO_BIN_EXE_microshard")
        ))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("threadcount") && last.contains("ulimit -n"),
        "{stderr}"
    );
}

/// A write end of a pipe whose read end is already closed: what `| head -0` leaves a program
/// with, without any race on when the reader goes away.
fn closed_pipe() -> Stdio {
    let mut fds = [0i32; 2];
    // SAFETY: pipe(2) fills two descriptors we own from here on.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    // SAFETY: closing the read end we own; the write end is handed to the child.
    unsafe { libc::close(fds[0]) };
    // SAFETY: fds[1] is open and owned by nothing else.
    Stdio::from(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fds[1]) })
}

/// `microshard report DIR --format csv | head -1`, `status --json | head -0` and friends: a reader
/// that goes away is a normal end (exit 0), never a panic.
#[test]
fn a_closed_stdout_ends_the_program_normally() {
    let (tmp, work) = fixture_root();
    let root = tmp.path();
    let exp = work.join("exp-ok").display().to_string();
    // `load | head`: the YCSB report is written by the runner.
    let rt = crate::util::runtime();
    let data = tempfile::tempdir().expect("temp dir");
    let server = crate::util::standin_in(&rt, data.path());
    let uri = server.uri();
    let bin_dir = work.join("bin").display().to_string();
    // A dry run checks ports too: a free one, whatever else runs on this machine.
    let free_port = crate::util::free_base_port(1).to_string();
    // Command lines split at white space (no argument in them holds any).
    let cases = [
        format!("load -P good.properties --uri {uri}"),
        format!("report {exp} --format csv"),
        format!("report {exp}"),
        format!("diff {exp} {exp}"),
        "status --json".into(),
        "status".into(),
        format!("up single --standin --dry-run --base-port {free_port}"),
        "--version".into(),
        "standin mongod --version".into(),
        format!("doctor --bin-dir {bin_dir}"),
    ];
    for line in &cases {
        let args: Vec<&str> = line.split_whitespace().collect();
        let out = microshard(root, &work)
            .args(&args)
            .stdout(closed_pipe())
            .output()
            .expect("run microshard");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
    rt.block_on(server.shutdown());
}

/// A cell file that does not parse, or that has a schema this version does not know, is named
/// in a warning by `report` (which still shows the rest); `--resume` refuses it (the catalogue).
#[test]
fn report_names_damaged_cells_in_a_warning() {
    let (tmp, work) = fixture_root();
    for (exp, file) in [
        ("exp-damaged", "S2-r1.json"),
        ("exp-cell-schema", "S1-r1.json"),
    ] {
        let out = microshard(tmp.path(), &work)
            .arg("report")
            .arg(work.join(exp))
            .output()
            .expect("run microshard");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{exp}: {stderr}");
        let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(warnings.len(), 1, "{exp}: {stderr}");
        assert!(warnings[0].contains(file), "{exp}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("single"),
            "{exp}: the table is still shown: {stdout}"
        );
    }
}

/// `--backend existing` (and `sweep --uri`) ask the cluster first: credentials it refuses are bad
/// input named on one line, before a run directory exists.
#[test]
fn credentials_the_existing_cluster_refuses_are_refused_before_anything_starts() {
    let rt = crate::util::runtime();
    let (tmp, work) = fixture_root();
    let data = tempfile::tempdir().expect("temp dir");
    let server = crate::util::standin_in(&rt, data.path());
    // The stand-in has no users: SCRAM (the default mechanism) fails like a real server's.
    let uri = format!(
        "mongodb://bench:wrong@127.0.0.1:{}/?directConnection=true",
        server.port()
    );
    std::fs::write(
        work.join("topos/refused.toml"),
        format!("name = \"refused\"\nkind = \"standalone\"\nuri = \"{uri}\"\n"),
    )
    .expect("write topology");
    let host = format!("127.0.0.1:{}", server.port());
    // The URI is shown with its password redacted.
    let culprits = ["refused.toml", host.as_str(), "bench:****@"];
    let mut cases = vec![
        case(
            "compare --backend existing with refused credentials",
            "compare --backend existing --topologies {dir}/topos/refused.toml --scenarios S1 -q",
            &culprits,
        ),
        case(
            "up of an existing cluster with refused credentials",
            "up {dir}/topos/refused.toml",
            &culprits,
        ),
        case(
            "sweep --uri with refused credentials",
            &format!("sweep -P S2 --uri {uri} -q"),
            &["--uri", host.as_str(), "bench:****@"],
        ),
    ];
    expand_dir(&mut cases, &work);
    assert_all_refused(tmp.path(), &work, &cases);
    rt.block_on(server.shutdown());
}

/// Tears a cluster left running by a test down again, even when the test fails.
struct LeftRunning<'a> {
    root: &'a Path,
    work: &'a Path,
    name: &'static str,
}

impl LeftRunning<'_> {
    fn microshard(&self, args: &[&str]) -> std::process::Output {
        microshard(self.root, self.work)
            .args(args)
            .output()
            .expect("run microshard")
    }
}

impl Drop for LeftRunning<'_> {
    fn drop(&mut self) {
        let _ = self.microshard(&["down", self.name]);
    }
}

/// A port held by a cluster microshard left running (as after a SIGKILL) is named with that
/// cluster and the `microshard down NAME` that clears it, by `up` and by `compare`, before
/// anything of the new run starts.
#[test]
fn a_port_held_by_a_leftover_cluster_names_it_and_its_down_command() {
    let (tmp, work) = fixture_root();
    let root = tmp.path();
    let port = crate::util::free_base_port(1);
    for name in ["left-a", "left-b"] {
        std::fs::write(
            work.join("topos").join(format!("{name}.toml")),
            format!("name = \"{name}\"\nkind = \"standalone\"\nbaseline = \"standalone\"\nbase_port = {port}\n"),
        )
        .expect("write topology");
    }
    let bin_dir = work.join("bin").display().to_string();
    let left = LeftRunning {
        root,
        work: &work,
        name: "left-a",
    };
    let out = left.microshard(&[
        "up",
        "topos/left-a.toml",
        "--backend",
        "process",
        "--bin-dir",
        &bin_dir,
    ]);
    crate::util::assert_ok(&out, "up left-a");
    let culprits = ["left-a", "`microshard down left-a`", &port.to_string()];
    let mut cases = vec![
        case(
            "up of another topology on the leftover's port",
            "up topos/left-b.toml --backend process --bin-dir {dir}/bin",
            &culprits,
        ),
        case(
            "compare on the leftover's port",
            "compare --topologies {dir}/topos/left-b.toml --scenarios S1 --bin-dir {dir}/bin -q",
            &culprits,
        ),
    ];
    expand_dir(&mut cases, &work);
    // The leftover's own processes refer to the fixture root; only new ones would be a failure.
    let before = processes_referring_to(root).len();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let out = left.microshard(&c.args.iter().map(String::as_str).collect::<Vec<_>>());
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let lines = stderr.lines().filter(|l| !l.trim().is_empty()).count();
            let named = c.culprits.iter().all(|s| stderr.contains(s.as_str()));
            (out.status.code() != Some(2) || lines != 1 || !named)
                .then(|| format!("{}: {:?} {stderr}", c.what, out.status.code()))
        })
        .collect();
    assert_eq!(
        processes_referring_to(root).len(),
        before,
        "a new process started"
    );
    assert!(failures.is_empty(), "{failures:#?}");
    let out = left.microshard(&["status", "--json"]);
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(
        !status.contains("left-b"),
        "left-b must not have been recorded: {status}"
    );
}

/// `status --json` is JSON whatever the state: an empty array when no cluster is recorded (a
/// script parsing it must not meet a sentence).
#[test]
fn status_json_is_json_even_with_no_clusters() {
    let (tmp, work) = fixture_root();
    let out = microshard(tmp.path(), &work)
        .args(["status", "--json"])
        .output()
        .expect("run microshard");
    assert_eq!(out.status.code(), Some(0));
    let parsed: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("status --json prints JSON");
    assert_eq!(parsed, serde_json::json!([]));
}

/// `--backend docker --image X` when X is not on the engine and cannot be pulled: one line naming
/// `--image`, exit 2, nothing created. The image names a registry on a closed loopback port, so
/// the engine's pull attempt never leaves this machine. Skipped when no Docker engine answers.
#[test]
fn an_image_that_is_absent_and_cannot_be_pulled_is_refused_in_one_line() {
    let answers = Command::new("docker")
        .args(["info", "--format", "{{.ID}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !answers {
        eprintln!("skipped: no Docker engine answers");
        return;
    }
    let (tmp, work) = fixture_root();
    let image = format!("127.0.0.1:{}/microshard-absent:1", closed_port());
    let case = case(
        "compare --backend docker --image <absent, unpullable>",
        &format!(
            "compare --backend docker --image {image} --topologies single --scenarios S1 --out results"
        ),
        // What to do without a registry is in the same line.
        &[
            "--image",
            "microshard-absent",
            "microshard standin image",
            "--standin",
        ],
    );
    assert_all_refused(tmp.path(), &work, &[case]);
}
