//! A deployment that requires TLS and authentication, as Atlas and every `requireTLS` cluster
//! with users is: `load`, `run`, `compare --backend existing` and `ceiling --uri` work with the
//! user's connection string alone, on a standalone and on a sharded cluster, every result valid,
//! and the password shows nowhere; a wrong CA, a wrong password or a plaintext connection string
//! is refused in one line naming the cause, exit 2, before any work.

use std::path::Path;
use std::process::Output;

use mongodb::bson::doc;

use crate::util::{Certs, Root, StandinProcess, assert_valid_but_for_toy_size, runtime};

const USER: &str = "alice";
const PASSWORD: &str = "pw-Zq81-kept-secret";

/// Stand-ins requiring TLS and SCRAM-SHA-256 (one mongod, or a config server, two shards and a
/// mongos), and the connection string that gets in.
struct Secured {
    certs: Certs,
    _servers: Vec<StandinProcess>,
    port: u16,
}

impl Secured {
    /// `mongodb://alice:…@127.0.0.1:PORT/ycsb?tls=true&tlsCAFile=CA&authSource=admin`, with
    /// `ca` and `userinfo` replaceable for the refusals.
    fn uri_with(&self, ca: &Path, userinfo: &str, tls: bool) -> String {
        uri_for(self.port, ca, userinfo, tls)
    }

    fn uri(&self) -> String {
        self.uri_with(&self.certs.ca, &format!("{USER}:{PASSWORD}@"), true)
    }
}

fn uri_for(port: u16, ca: &Path, userinfo: &str, tls: bool) -> String {
    let tls = if tls {
        format!("tls=true&tlsCAFile={}&", ca.display())
    } else {
        String::new()
    };
    format!("mongodb://{userinfo}127.0.0.1:{port}/ycsb?{tls}authSource=admin&w=1")
}

fn security_flags(certs: &Certs) -> Vec<String> {
    let mut flags = certs.flags();
    flags.push(format!("--auth-user={USER}:{PASSWORD}"));
    // A server of 2,000 operations/s, so a ceiling search has one to find.
    flags.extend(["--service-time-us=1000".into(), "--workers=2".into()]);
    flags
}

fn single(root: &Root) -> Secured {
    let certs = Certs::make();
    let flags = security_flags(&certs);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = StandinProcess::start_with(&root.path.join("db"), &flags);
    Secured {
        port: server.port,
        certs,
        _servers: vec![server],
    }
}

/// A config server, two shards and a mongos, every one of them secured, assembled over secured
/// connections as an operator would.
fn sharded(root: &Root) -> Secured {
    let certs = Certs::make();
    let flags = security_flags(&certs);
    let set = |name: &str, role: &str| {
        let mut f: Vec<String> = flags.clone();
        f.extend([format!("--replSet={name}"), role.to_string()]);
        let f: Vec<&str> = f.iter().map(String::as_str).collect();
        StandinProcess::start_with(&root.path.join(name), &f)
    };
    let (cfg, sh0, sh1) = (
        set("cfg", "--configsvr"),
        set("sh0", "--shardsvr"),
        set("sh1", "--shardsvr"),
    );
    let rt = runtime();
    let secure = |port: u16, direct: bool| {
        let uri = uri_for(port, &certs.ca, &format!("{USER}:{PASSWORD}@"), true);
        if direct {
            format!("{uri}&directConnection=true")
        } else {
            uri
        }
    };
    for (name, p) in [("cfg", &cfg), ("sh0", &sh0), ("sh1", &sh1)] {
        let uri = secure(p.port, true);
        let host = format!("127.0.0.1:{}", p.port);
        rt.block_on(async {
            let c = mongodb::Client::with_uri_str(&uri).await.expect("client");
            let mut config = doc! {"_id": name, "members": [{"_id": 0, "host": &host}]};
            if name == "cfg" {
                config.insert("configsvr", true);
            }
            let admin = c.database("admin");
            admin
                .run_command(doc! {"replSetInitiate": config})
                .await
                .expect("initiate");
            wait(|| async {
                let h = admin.run_command(doc! {"hello": 1}).await;
                h.is_ok_and(|h| h.get_bool("isWritablePrimary").unwrap_or(false))
            })
            .await;
        });
    }
    let mut mongos_flags = flags.clone();
    mongos_flags.retain(|f| !f.starts_with("--service-time-us") && !f.starts_with("--workers"));
    mongos_flags.push(format!("--configdb=cfg/127.0.0.1:{}", cfg.port));
    let f: Vec<&str> = mongos_flags.iter().map(String::as_str).collect();
    let mongos = StandinProcess::start_role("mongos", &f);
    let uri = secure(mongos.port, false);
    rt.block_on(async {
        let c = mongodb::Client::with_uri_str(&uri).await.expect("client");
        let admin = c.database("admin");
        wait(|| async { admin.run_command(doc! {"listShards": 1}).await.is_ok() }).await;
        for (name, p) in [("sh0", &sh0), ("sh1", &sh1)] {
            let add = doc! {"addShard": format!("{name}/127.0.0.1:{}", p.port), "name": name};
            admin.run_command(add).await.expect("addShard");
        }
    });
    Secured {
        port: mongos.port,
        certs,
        _servers: vec![mongos, sh0, sh1, cfg],
    }
}

async fn wait<F, Fut>(mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..300 {
        if f().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("not ready within 15 s");
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The password is in no output and no file the commands left (results, state, logs).
fn assert_password_kept(root: &Root, outputs: &[&Output]) {
    for out in outputs {
        assert!(!text(out).contains(PASSWORD), "{}", text(out));
    }
    for file in crate::util::files_under(&root.path) {
        if let Ok(content) = std::fs::read(&file) {
            let found = content
                .windows(PASSWORD.len())
                .any(|w| w == PASSWORD.as_bytes());
            assert!(!found, "{} holds the password", file.display());
        }
    }
}

fn result(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("result")).expect("JSON")
}

/// `load`, `run` (longer than the watch needs to call a silent member invalid), `compare
/// --backend existing` and `ceiling --uri`, each valid.
fn every_command_works(root: &Root, secured: &Secured, kind: &str, members: usize) {
    let uri = secured.uri();
    let results = root.path.join("results");
    let load = root.output(&[
        "load",
        "-P",
        "workloads/S1",
        "-p",
        "recordcount=500",
        "--uri",
        &uri,
    ]);
    assert_eq!(load.status.code(), Some(0), "{}", text(&load));
    let json = root.path.join("run.json");
    let run = root
        .cmd()
        .args([
            "run",
            "-P",
            "workloads/S2",
            "-p",
            "recordcount=500",
            "-p",
            "operationcount=0",
        ])
        .args(["-p", "maxexecutiontime=4", "--uri", &uri, "--json"])
        .arg(&json)
        .output()
        .expect("run");
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let doc = result(&json);
    assert_valid_but_for_toy_size(&doc["validity"]);
    // Every member was probed with the user's TLS and credentials, and answered throughout:
    // the mongod, or the mongos and both shards it lists.
    let probed = doc["timeline"]["probed"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(probed.len(), members, "{doc}");
    assert_eq!(
        doc["timeline"]["member_outages"],
        serde_json::json!([]),
        "{doc}"
    );

    // The topology file is the user's own and holds the password: it lives outside the root
    // searched for it afterwards.
    let topology = secured.certs.dir.path().join("secured.toml");
    let shards = if kind == "sharded" {
        "shards_per_host = 2\n"
    } else {
        ""
    };
    std::fs::write(
        &topology,
        format!("name = \"secured\"\nkind = \"{kind}\"\n{shards}uri = \"{uri}\"\n"),
    )
    .expect("topology");
    let compare = root
        .cmd()
        .args(["compare", "--backend", "existing", "--topologies"])
        .arg(&topology)
        .args([
            "--scenarios",
            "S1,S2",
            "--records",
            "500",
            "--duration",
            "3s",
            "--out",
        ])
        .arg(&results)
        .output()
        .expect("compare");
    assert_eq!(compare.status.code(), Some(0), "{}", text(&compare));
    let cells = crate::util::cells_under(&crate::util::run_dir(&results));
    assert_eq!(cells.len(), 2, "{}", text(&compare));
    for cell in &cells {
        assert_valid_but_for_toy_size(&cell["summary"]["validity"]);
    }

    let ceiling = root
        .cmd()
        .args([
            "ceiling",
            "-P",
            "S2",
            "--uri",
            &uri,
            "--records",
            "500",
            "--no-load",
        ])
        .args([
            "--step-duration",
            "2s",
            "--slo",
            "p99=50ms",
            "--precision",
            "25%",
            "-q",
        ])
        .arg("--out")
        .arg(root.path.join("ceilings"))
        .output()
        .expect("ceiling");
    assert_eq!(ceiling.status.code(), Some(0), "{}", text(&ceiling));
    assert!(text(&ceiling).contains("ops/s"), "{}", text(&ceiling));
    assert_password_kept(root, &[&load, &run, &compare, &ceiling]);
}

#[test]
fn every_command_works_against_a_tls_and_authentication_required_standalone() {
    let root = Root::new();
    let secured = single(&root);
    every_command_works(&root, &secured, "standalone", 1);
}

#[test]
fn every_command_works_against_a_tls_and_authentication_required_sharded_cluster() {
    let root = Root::new();
    let secured = sharded(&root);
    every_command_works(&root, &secured, "sharded", 3);
}

/// A wrong CA, a wrong password, no password and a plaintext string: one line naming the cause,
/// exit 2, and nothing created, from every command.
#[test]
fn a_wrong_ca_password_or_plaintext_string_is_one_line_before_any_work() {
    let root = Root::new();
    let secured = single(&root);
    let userinfo = format!("{USER}:{PASSWORD}@");
    let cases = [
        (
            secured.uri_with(&secured.certs.other_ca, &userinfo, true),
            "certificate is not trusted",
        ),
        (
            secured.uri_with(
                &secured.certs.ca,
                &format!("{USER}:wrong-{PASSWORD}@"),
                true,
            ),
            "authentication failed",
        ),
        (
            secured.uri_with(&secured.certs.ca, "", true),
            "it requires authentication",
        ),
        (
            secured.uri_with(&secured.certs.ca, &userinfo, false),
            "add tls=true",
        ),
    ];
    let results = root.path.join("refused");
    for (uri, cause) in &cases {
        let out_dir = results.display().to_string();
        let commands: [Vec<&str>; 3] = [
            vec![
                "load",
                "-P",
                "workloads/S1",
                "-p",
                "recordcount=50",
                "--uri",
                uri,
            ],
            vec![
                "run",
                "-P",
                "workloads/S2",
                "-p",
                "recordcount=50",
                "-p",
                "operationcount=50",
                "--uri",
                uri,
            ],
            vec![
                "ceiling",
                "-P",
                "S2",
                "--slo",
                "p99=50ms",
                "--records",
                "50",
                "--uri",
                uri,
                "--out",
                &out_dir,
            ],
        ];
        for args in commands {
            let out = root.cmd().args(&args).output().expect("run");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains(cause), "{args:?}: {cause}: {err}");
            assert!(!err.contains(PASSWORD), "{err}");
        }
    }
    assert!(!results.exists(), "a refused command created its results");
}
