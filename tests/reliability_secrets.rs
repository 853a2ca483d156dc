//! Secrets: a password given in a connection string never shows up in anything microshard prints
//! or writes — stdout, stderr, the `--json` result document, `exportfile`, state files — on the
//! success path and on error paths (authentication refused, unreachable server, bad input after
//! the URI was read, a topology file that carries the URI).

use crate::util::bin;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const SECRET: &str = "Sup3rSecr3t";

fn microshard(work: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(work)
        .env("MICROSHARD_STATE_DIR", work.join("state"))
        .env("TMPDIR", work.join("tmp"))
        .env("CI", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run microshard")
}

/// Every file under `root` (recursively) whose bytes contain the secret.
fn files_with_secret(root: &Path) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file()
                && std::fs::read(&p)
                    .is_ok_and(|b| b.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()))
            {
                hits.push(p);
            }
        }
    }
    hits
}

fn assert_no_secret(what: &str, out: &Output, roots: &[&Path], inputs: &[&Path]) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stdout.contains(SECRET),
        "{what}: the password is on stdout:\n{stdout}"
    );
    assert!(
        !stderr.contains(SECRET),
        "{what}: the password is on stderr:\n{stderr}"
    );
    for root in roots {
        let hits: Vec<PathBuf> = files_with_secret(root)
            .into_iter()
            .filter(|p| !inputs.iter().any(|i| p == i))
            .collect();
        assert!(
            hits.is_empty(),
            "{what}: the password is stored in {hits:?}"
        );
    }
}

fn workdir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    for d in ["state", "tmp"] {
        std::fs::create_dir_all(tmp.path().join(d)).expect("mkdir");
    }
    tmp
}

/// The success path: load and run with `--json` and `exportfile` against a stand-in, the
/// credentials in `--uri`, in `-p mongodb.url` and in a `-P` file.
#[test]
fn password_never_printed_or_stored_on_success() {
    let rt = crate::util::runtime();
    let tmp = workdir();
    let work = tmp.path();
    let data = tempfile::tempdir().expect("temp dir");
    let server = crate::util::standin_in(&rt, data.path());
    let uri = format!(
        "mongodb://bench:{SECRET}@127.0.0.1:{}/ycsb?w=1&directConnection=true&authMechanism=PLAIN&authSource=$external",
        server.port()
    );
    let props = work.join("creds.properties");
    std::fs::write(
        &props,
        format!("recordcount=200\noperationcount=200\nmongodb.url={uri}\n"),
    )
    .expect("write properties");
    let json_load = work.join("load.json");
    let json_run = work.join("run.json");
    let export = work.join("export.txt");
    let runs: Vec<(&str, Vec<String>)> = vec![
        (
            "load --uri",
            vec![
                "load".into(),
                "-p".into(),
                "recordcount=200".into(),
                "--uri".into(),
                uri.clone(),
                "--json".into(),
                json_load.display().to_string(),
                "-s".into(),
            ],
        ),
        (
            "run -P file with the URI, exportfile",
            vec![
                "run".into(),
                "-P".into(),
                props.display().to_string(),
                "-p".into(),
                format!("exportfile={}", export.display()),
                "--json".into(),
                json_run.display().to_string(),
                "-s".into(),
            ],
        ),
        (
            "run -p mongodb.url",
            vec![
                "run".into(),
                "-p".into(),
                "recordcount=200".into(),
                "-p".into(),
                "operationcount=100".into(),
                "-p".into(),
                format!("mongodb.url={uri}"),
                "-p".into(),
                "exporter=site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter".into(),
            ],
        ),
    ];
    for (what, args) in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = microshard(work, &args);
        crate::util::assert_ok(&out, what);
        assert_no_secret(what, &out, &[work], &[&props]);
    }
    // The result documents exist, parse and still say which server was used (redacted).
    for j in [&json_load, &json_run] {
        let text = std::fs::read_to_string(j).expect("result document written");
        let v: serde_json::Value = serde_json::from_str(&text).expect("result parses");
        assert!(
            text.contains("bench:****@"),
            "URI not kept in redacted form: {v}"
        );
    }
    assert!(export.is_file(), "exportfile written");
    rt.block_on(server.shutdown());
}

/// Error paths: the password must not leak through driver errors or our own messages.
#[test]
fn password_never_printed_or_stored_on_error_paths() {
    let rt = crate::util::runtime();
    let tmp = workdir();
    let work = tmp.path();
    let data = tempfile::tempdir().expect("temp dir");
    let server = crate::util::standin_in(&rt, data.path());
    let closed = {
        let l = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        l.local_addr().expect("addr").port()
    };
    let at_standin = format!(
        "mongodb://bench:{SECRET}@127.0.0.1:{}/ycsb?w=1&directConnection=true&serverSelectionTimeoutMS=2000",
        server.port()
    );
    let unreachable =
        format!("mongodb://bench:{SECRET}@127.0.0.1:{closed}/ycsb?serverSelectionTimeoutMS=300");
    let secret_option = format!(
        "mongodb://127.0.0.1:{closed}/ycsb?tlsCertificateKeyFilePassword={SECRET}&serverSelectionTimeoutMS=300"
    );
    let topo = work.join("existing-creds.toml");
    std::fs::write(
        &topo,
        format!(
            "name = \"creds\"\nkind = \"sharded\"\nshards_per_host = 1\nuri = \"{unreachable}\"\n"
        ),
    )
    .expect("write topology");
    let bad_props = work.join("bad.properties");
    std::fs::write(
        &bad_props,
        format!("mongodb.url={unreachable}\nrecordcount=many\n"),
    )
    .expect("write properties");
    let json = work.join("out.json");
    let topo_s = topo.display().to_string();
    let bad_s = bad_props.display().to_string();
    let json_s = json.display().to_string();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "authentication against the stand-in",
            vec![
                "load",
                "-p",
                "recordcount=10",
                "--uri",
                at_standin.as_str(),
                "--json",
                json_s.as_str(),
            ],
        ),
        (
            "unreachable server",
            vec![
                "load",
                "-p",
                "recordcount=10",
                "--uri",
                unreachable.as_str(),
                "--json",
                json_s.as_str(),
            ],
        ),
        (
            "unreachable server, password in a query option",
            vec![
                "run",
                "-p",
                "recordcount=10",
                "--uri",
                secret_option.as_str(),
            ],
        ),
        (
            "bad property in a file that also holds the URI",
            vec!["load", "-P", bad_s.as_str()],
        ),
        (
            "bad -p after the URI",
            vec!["load", "--uri", unreachable.as_str(), "-p", "fieldcount=-3"],
        ),
        (
            "URI with an invalid option",
            vec![
                "load",
                "-p",
                "recordcount=10",
                "--uri",
                "mongodb://bench:Sup3rSecr3t@127.0.0.1:1/ycsb?w=banana&journal=maybe",
            ],
        ),
        (
            "up --dry-run of an existing topology with credentials",
            vec!["up", topo_s.as_str(), "--dry-run", "--backend", "existing"],
        ),
        (
            "up of an unreachable existing topology",
            vec![
                "up",
                topo_s.as_str(),
                "--backend",
                "existing",
                "--timeout",
                "2",
            ],
        ),
        ("status --json after all that", vec!["status", "--json"]),
    ];
    for (what, args) in &cases {
        let out = microshard(work, args);
        assert_no_secret(what, &out, &[work], &[&topo, &bad_props]);
    }
    rt.block_on(server.shutdown());
}

/// `compare` on the existing backend, both topologies carrying credentials in their `uri`: the
/// experiment succeeds and the password is in nothing it prints or writes (results directory,
/// cells, reports, state files, temporary files).
#[test]
fn password_never_printed_or_stored_by_compare() {
    let rt = crate::util::runtime();
    let tmp = workdir();
    let work = tmp.path();
    let data_a = tempfile::tempdir().expect("temp dir");
    let data_b = tempfile::tempdir().expect("temp dir");
    let servers = [
        crate::util::standin_in(&rt, data_a.path()),
        crate::util::standin_in(&rt, data_b.path()),
    ];
    let mut topologies = Vec::new();
    for (name, server) in ["creds-a", "creds-b"].iter().zip(&servers) {
        let path = work.join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\nkind = \"standalone\"\nuri = \"mongodb://bench:{SECRET}@127.0.0.1:{}/?directConnection=true&authMechanism=PLAIN&authSource=$external\"\n",
                server.port()
            ),
        )
        .expect("write topology");
        topologies.push(path);
    }
    let list = topologies
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let results = work.join("results");
    let results_s = results.display().to_string();
    let out = microshard(
        work,
        &[
            "compare",
            "--backend",
            "existing",
            "--topologies",
            &list,
            "--scenarios",
            "S1,S2",
            "-s",
            "--duration",
            "2s",
            "--records",
            "500",
            "--threads",
            "2",
            "--out",
            &results_s,
        ],
    );
    crate::util::assert_ok(&out, "compare");
    let inputs: Vec<&Path> = topologies.iter().map(PathBuf::as_path).collect();
    assert_no_secret("compare --backend existing", &out, &[work], &inputs);
    // It did measure: a run directory with cell results for both topologies.
    let written: Vec<PathBuf> = {
        let mut all = Vec::new();
        let mut stack = vec![results.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() && !p.is_symlink() {
                    stack.push(p);
                } else {
                    all.push(p);
                }
            }
        }
        all
    };
    for name in ["creds-a", "creds-b"] {
        assert!(
            written.iter().any(|p| p.to_string_lossy().contains(name)
                && p.extension().is_some_and(|e| e == "json")),
            "no result of {name} among {written:?}"
        );
    }
    for s in servers {
        rt.block_on(s.shutdown());
    }
}
