//! The bad-input catalogue: every kind of wrong input a user can give (property files, `-p`
//! overrides, topology files, connection strings, the command line) goes through the real binary
//! and must end the same way: exit status 2, exactly one line on stderr that names the culprit
//! (file:line, property, key, flag or host), no panic or backtrace, and nothing started — no new
//! file anywhere under the case's working directory, state directory or `TMPDIR`, and no process
//! left that refers to them.
//!
//! Every case fails before any server is contacted (or against a closed loopback port with a
//! short selection timeout), so the whole table runs in a few seconds.

mod reliability_support;
use reliability_support::processes_referring_to;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_microshard"))
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind an ephemeral port");
    let port = l.local_addr().expect("local addr").port();
    drop(l);
    port
}

/// Every path under `root`, relative, to compare before and after a case.
fn tree(root: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if let Ok(rel) = p.strip_prefix(root) {
                out.insert(rel.to_path_buf());
            }
            // Do not follow symlinks (the loop fixture points at itself).
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    out
}

/// One kind of bad input.
struct Case {
    /// What is wrong, for failure messages.
    what: &'static str,
    /// The arguments; `{dir}` is replaced by the fixture directory, `{closed}` by a closed port.
    args: Vec<String>,
    /// Strings the single stderr line must contain (the culprit).
    culprits: Vec<String>,
}

fn case(what: &'static str, args: &[&str], culprits: &[&str]) -> Case {
    Case {
        what,
        args: args.iter().map(|s| s.to_string()).collect(),
        culprits: culprits.iter().map(|s| s.to_string()).collect(),
    }
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
        "unknown-key.toml",
        "name = \"uk\"\nkind = \"sharded\"\nshards_per_host = 2\nshard_per_host = 3\n",
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
        "bad-cpuset.toml",
        "name = \"cs\"\nkind = \"sharded\"\nshards_per_host = 2\n[[hosts]]\naddress = \"localhost\"\nshard_cpusets = [\"0-1\", \"banana\"]\n",
    );
}

/// The catalogue. Property cases pass `--uri` to a closed port with a short selection timeout, so a
/// property that is *not* caught before connecting fails the culprit check instead of hanging.
fn catalogue(dir: &Path, closed: u16) -> Vec<Case> {
    let uri = format!("mongodb://127.0.0.1:{closed}/ycsb?serverSelectionTimeoutMS=300");
    let load = |what: &'static str, extra: &[&str], culprits: &[&str]| {
        let mut args = vec!["load", "--uri", uri.as_str()];
        args.extend_from_slice(extra);
        case(what, &args, culprits)
    };
    let run = |what: &'static str, extra: &[&str], culprits: &[&str]| {
        let mut args = vec!["run", "--uri", uri.as_str()];
        args.extend_from_slice(extra);
        case(what, &args, culprits)
    };
    let up = |what: &'static str, file: &str, culprits: &[&str]| {
        let path = format!("topos/{file}");
        let args = ["up", path.as_str(), "--dry-run", "--backend", "docker"];
        case(what, &args, culprits)
    };
    let unreachable = format!("127.0.0.1:{closed}");
    let mut cases = vec![
        // --- property files (-P) ---
        load(
            "missing -P file",
            &["-P", "no-such.properties"],
            &["no-such.properties"],
        ),
        load(
            "-P names a directory",
            &["-P", "a-directory.properties"],
            &["a-directory.properties"],
        ),
        load(
            "-P is a symlink loop (unreadable)",
            &["-P", "loop.properties"],
            &["loop.properties"],
        ),
        load(
            "bad number in a file names file:line and key",
            &["-P", "badnum.properties"],
            &["badnum.properties:2", "recordcount"],
        ),
        load(
            "bad \\u escape names file:line",
            &["-P", "bad-escape.properties"],
            &["bad-escape.properties:3"],
        ),
        run(
            "all operation proportions zero",
            &["-P", "zero-mix.properties"],
            &["zero-mix.properties", "proportion"],
        ),
        // --- -p overrides ---
        load("-p without =", &["-p", "recordcount"], &["-p recordcount"]),
        load(
            "negative recordcount",
            &["-p", "recordcount=-5"],
            &["recordcount"],
        ),
        load(
            "overflowing recordcount",
            &["-p", "recordcount=99999999999999999999"],
            &["recordcount"],
        ),
        load(
            "recordcount above 2^31-1",
            &["-p", "recordcount=3000000000"],
            &["recordcount"],
        ),
        run(
            "negative operationcount",
            &["-p", "recordcount=10", "-p", "operationcount=-1"],
            &["operationcount"],
        ),
        load(
            "threadcount zero",
            &["-p", "threadcount=0"],
            &["threadcount"],
        ),
        load(
            "threadcount not a number",
            &["-p", "threadcount=eight"],
            &["threadcount"],
        ),
        run(
            "unknown request distribution",
            &["-p", "recordcount=10", "-p", "requestdistribution=gaussian"],
            &["requestdistribution"],
        ),
        load(
            "unknown field length distribution",
            &[
                "-p",
                "recordcount=10",
                "-p",
                "fieldlengthdistribution=weird",
            ],
            &["fieldlengthdistribution"],
        ),
        run(
            "unknown scan length distribution",
            &[
                "-p",
                "recordcount=10",
                "-p",
                "scanlengthdistribution=wobbly",
            ],
            &["scanlengthdistribution"],
        ),
        run(
            "negative proportion",
            &["-p", "recordcount=10", "-p", "readproportion=-0.5"],
            &["readproportion"],
        ),
        load(
            "a field larger than MongoDB's 16 MiB document limit",
            &["-p", "recordcount=10", "-p", "fieldlength=17000000"],
            &["fieldlength"],
        ),
        load(
            "fields summing past the 16 MiB document limit",
            &[
                "-p",
                "recordcount=10",
                "-p",
                "fieldcount=20",
                "-p",
                "fieldlength=1000000",
            ],
            &["field"],
        ),
        load(
            "fieldcount zero",
            &["-p", "recordcount=10", "-p", "fieldcount=0"],
            &["fieldcount"],
        ),
        load(
            "insertstart + insertcount > recordcount",
            &[
                "-p",
                "recordcount=100",
                "-p",
                "insertstart=50",
                "-p",
                "insertcount=100",
            ],
            &["insertcount"],
        ),
        load(
            "unknown measurementtype",
            &["-p", "recordcount=10", "-p", "measurementtype=sundial"],
            &["measurementtype"],
        ),
        load(
            "negative maxexecutiontime",
            &["-p", "recordcount=10", "-p", "maxexecutiontime=-1"],
            &["maxexecutiontime"],
        ),
        load(
            "error rate outside [0, 1]",
            &["-p", "recordcount=10", "-p", "microshard.maxerrorrate=2"],
            &["microshard.maxerrorrate"],
        ),
        run(
            "hotspot fraction above 1",
            &[
                "-p",
                "recordcount=10",
                "-p",
                "requestdistribution=hotspot",
                "-p",
                "hotspotdatafraction=1.5",
            ],
            &["hotspotdatafraction"],
        ),
        load(
            "status.interval not a number",
            &["-p", "recordcount=10", "-p", "status.interval=often"],
            &["status.interval"],
        ),
        load(
            "empty table name",
            &["-p", "recordcount=10", "-p", "table="],
            &["table"],
        ),
        // --- connection strings ---
        case(
            "URI with a foreign scheme",
            &[
                "load",
                "-P",
                "good.properties",
                "--uri",
                "http://127.0.0.1:27017/ycsb",
            ],
            &["http://127.0.0.1:27017"],
        ),
        case(
            "URI with a port out of range",
            &[
                "load",
                "-P",
                "good.properties",
                "-p",
                "mongodb.url=mongodb://127.0.0.1:99999/ycsb",
            ],
            &["99999"],
        ),
        case(
            "URI without a host",
            &["load", "-P", "good.properties", "--uri", "mongodb:///ycsb"],
            &["mongodb:///ycsb"],
        ),
        case(
            "URI with an unknown option value",
            &[
                "load",
                "-P",
                "good.properties",
                "--uri",
                "mongodb://127.0.0.1:27017/ycsb?w=1&readPreference=sometimes",
            ],
            &["readPreference"],
        ),
        case(
            "unreachable server (closed loopback port)",
            &["load", "-P", "good.properties", "--uri", uri.as_str()],
            &[unreachable.as_str()],
        ),
        // --- topology files ---
        up(
            "unknown topology key",
            "unknown-key.toml",
            &["unknown-key.toml:4", "shard_per_host"],
        ),
        up(
            "duplicate host",
            "dup-host.toml",
            &["dup-host.toml:", "hosts[1].address"],
        ),
        up(
            "base_port above 65535",
            "port-range.toml",
            &["port-range.toml:4", "base_port"],
        ),
        up(
            "ports running past 65535",
            "port-overflow.toml",
            &["port-overflow.toml:4", "base_port"],
        ),
        up(
            "base_port zero",
            "port-zero.toml",
            &["port-zero.toml:3", "base_port"],
        ),
        up(
            "a host whose memory cannot hold its shards",
            "budget.toml",
            &["budget.toml:6", "hosts[0].memory_budget_gb"],
        ),
        up(
            "unknown kind",
            "bad-kind.toml",
            &["bad-kind.toml:2", "clustered"],
        ),
        up(
            "negative shard count",
            "neg-shards.toml",
            &["neg-shards.toml:3"],
        ),
        up(
            "shard count above the limit",
            "too-many-shards.toml",
            &["too-many-shards.toml:3", "shards_per_host"],
        ),
        up(
            "topology uri that is not mongodb://",
            "bad-uri.toml",
            &["bad-uri.toml:4", "uri"],
        ),
        up("TOML syntax error", "syntax.toml", &["syntax.toml:"]),
        up(
            "a flag the plan manages in mongod_args",
            "managed-flag.toml",
            &["managed-flag.toml:3", "mongod_args"],
        ),
        up(
            "topology name with spaces",
            "bad-name.toml",
            &["bad-name.toml:1", "name"],
        ),
        up(
            "config servers out of range",
            "config-members.toml",
            &["config-members.toml:5", "config_servers.members"],
        ),
        up(
            "required key missing",
            "missing-kind.toml",
            &["missing-kind.toml", "kind"],
        ),
        up(
            "unparsable CPU set",
            "bad-cpuset.toml",
            &["bad-cpuset.toml:6", "shard_cpusets"],
        ),
        up("topology path is a directory", "dir.toml", &["dir.toml"]),
        case(
            "unknown topology name",
            &["up", "no-such-topology", "--dry-run", "--backend", "docker"],
            &["no-such-topology"],
        ),
        case(
            "down of a cluster that does not exist",
            &["down", "no-such-cluster"],
            &["no-such-cluster"],
        ),
        // --- the command line ---
        case("unknown flag", &["load", "--frobnicate"], &["--frobnicate"]),
        case("unknown subcommand", &["lod"], &["lod"]),
        case("negative --threads", &["load", "--threads", "-1"], &["-1"]),
        case(
            "--threads not a number",
            &["load", "--threads", "lots"],
            &["--threads"],
        ),
        case(
            "--target overflowing u64",
            &["load", "--target", "99999999999999999999999"],
            &["--target"],
        ),
        case(
            "flag without its value",
            &["load", "-P", "good.properties", "--uri"],
            &["--uri"],
        ),
        case(
            "bad duration",
            &["compare", "--duration", "5x"],
            &["--duration"],
        ),
        case(
            "thread list with zero",
            &["compare", "--sweep-threads", "0,4"],
            &["--sweep-threads"],
        ),
        case(
            "unknown report format",
            &["report", "somewhere", "--format", "pdf"],
            &["--format"],
        ),
        case(
            "unknown --backend value for up",
            &["up", "single", "--backend", "kubernetes"],
            &["--backend"],
        ),
        case(
            "compare with an unknown scenario",
            &[
                "compare",
                "--topologies",
                "single",
                "--scenarios",
                "S1,S9",
                "--bin-dir",
                "{dir}/bin",
                "-q",
            ],
            &["S9"],
        ),
        case(
            "compare --resume of a directory that does not exist",
            &["compare", "--resume", "{dir}/no-such-run", "-q"],
            &["--resume", "no-such-run"],
        ),
        case(
            "report of a directory that is no experiment",
            &["report", "{dir}/topos"],
            &["topos"],
        ),
        case(
            "ycsb with another binding",
            &["ycsb", "load", "cassandra", "-P", "good.properties"],
            &["cassandra"],
        ),
        case(
            "ycsb -threads not a number",
            &["ycsb", "load", "mongodb", "-threads", "many"],
            &["-threads"],
        ),
        case(
            "ycsb -p without =",
            &["ycsb", "run", "mongodb", "-p", "operationcount"],
            &["operationcount"],
        ),
    ];
    // Permission bits do not stop root; only meaningful for other users.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        cases.push(load(
            "unreadable -P file (mode 000)",
            &["-P", "unreadable.properties"],
            &["unreadable.properties"],
        ));
    }
    let d = dir.to_string_lossy().into_owned();
    for c in &mut cases {
        for a in &mut c.args {
            *a = a.replace("{dir}", &d);
        }
        for s in &mut c.culprits {
            *s = s.replace("{dir}", &d);
        }
    }
    cases
}

/// `compare` input that is only refused after topologies were brought up (or never as bad input).
fn compare_catalogue(dir: &Path) -> Vec<Case> {
    let mut cases = vec![
        case(
            "compare with an unknown backend",
            &[
                "compare",
                "--backend",
                "kubernetes",
                "--topologies",
                "single",
                "--scenarios",
                "S1",
                "-q",
            ],
            &["kubernetes"],
        ),
        case(
            "compare with an unknown topology",
            &[
                "compare",
                "--topologies",
                "single,no-such-topology",
                "--scenarios",
                "S1",
                "--bin-dir",
                "{dir}/bin",
                "-q",
            ],
            &["no-such-topology"],
        ),
        case(
            "compare with a bad -p override",
            &[
                "compare",
                "--topologies",
                "single",
                "--scenarios",
                "S1",
                "--bin-dir",
                "{dir}/bin",
                "-p",
                "recordcount=lots",
                "-q",
            ],
            &["recordcount"],
        ),
    ];
    let d = dir.to_string_lossy().into_owned();
    for c in &mut cases {
        for a in &mut c.args {
            *a = a.replace("{dir}", &d);
        }
    }
    cases
}

/// Runs one case; returns what is wrong with the outcome, if anything.
fn check(c: &Case, root: &Path, work: &Path) -> Option<String> {
    let before = tree(root);
    let started = Instant::now();
    let out = Command::new(bin())
        .args(&c.args)
        .current_dir(work)
        .env("MICROSHARD_STATE_DIR", root.join("state"))
        .env("TMPDIR", root.join("tmp"))
        .env("RUST_BACKTRACE", "1")
        .env("CI", "1")
        .env_remove("MONGODB_URL")
        .stdin(Stdio::null())
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
    let lower = stderr.to_lowercase();
    if lower.contains("panicked") || lower.contains("backtrace") {
        problems.push("a panic or backtrace on stderr".into());
    }
    for culprit in &c.culprits {
        if !stderr.contains(culprit.as_str()) {
            problems.push(format!("stderr does not name {culprit:?}"));
        }
    }
    if started.elapsed() > Duration::from_secs(20) {
        problems.push(format!("took {:?}", started.elapsed()));
    }
    let after = tree(root);
    let new: Vec<_> = after.difference(&before).collect();
    if !new.is_empty() {
        problems.push(format!("created {new:?}"));
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
    let bin_dir = work.join("bin");
    std::fs::create_dir_all(&bin_dir).expect("mkdir bin");
    for n in ["mongod", "mongos"] {
        std::os::unix::fs::symlink(bin(), bin_dir.join(n)).expect("symlink");
    }
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
    let cases = catalogue(&work, closed_port());
    assert!(cases.len() >= 30, "the catalogue has {} cases", cases.len());
    assert_all_refused(root, &work, &cases);
}

/// `compare` checks its backend, topologies and `-p` overrides only when it reaches them: after
/// creating the run directory, and for a later topology after measuring the earlier ones.
#[test]
fn compare_refuses_bad_input_before_starting_anything() {
    let (tmp, work) = fixture_root();
    assert_all_refused(tmp.path(), &work, &compare_catalogue(&work));
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
