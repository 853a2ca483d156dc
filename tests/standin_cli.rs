//! The stand-in as a program: `microshard standin ...`, invoked as `mongod`/`mongos`, flag refusals, SIGTERM.

use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;
use mongodb::Client;
use mongodb::bson::doc;

fn wait_for_log_line(path: &std::path::Path, needle: &str) {
    let seen = || std::fs::read_to_string(path).is_ok_and(|s| s.contains(needle));
    crate::util::poll_for(Duration::from_secs(20), || seen().then_some(()))
        .unwrap_or_else(|| panic!("no '{needle}' in {}", path.display()));
}

#[test]
fn bad_flags_exit_with_status_2() {
    for flags in [
        &["mongod", "--bogus"][..],
        &["mongod", "--fork"],
        &["mongod", "--shardsvr"],
        &[
            "mongos",
            "--wiredTigerCacheSizeGB",
            "1",
            "--configdb",
            "c/h:1",
        ],
    ] {
        let out = Command::cargo_bin("microshard")
            .unwrap()
            .arg("standin")
            .args(flags)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flags:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let out = Command::cargo_bin("microshard")
        .unwrap()
        .args(["standin", "mongod", "--port", "0", "--dbpath"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("NonExistentPath"));
}

/// `standin image --help` explains itself and builds nothing.
#[test]
fn standin_image_help_says_what_it_builds() {
    let out = Command::cargo_bin("microshard")
        .unwrap()
        .args(["standin", "image", "--help"])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("--tag") && stdout.contains("--image"),
        "{stdout}"
    );
}

#[test]
fn invoked_as_mongod_serves_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    // link_binaries links the *current* executable (this test); link the real binary the same way.
    std::fs::create_dir_all(&bin).unwrap();
    let exe = assert_cmd::cargo::cargo_bin("microshard");
    std::os::unix::fs::symlink(&exe, bin.join("mongod")).unwrap();
    let port = crate::util::free_base_port(1);
    let log = dir.path().join("mongod.log");
    let dbpath = dir.path().join("db");
    std::fs::create_dir_all(&dbpath).unwrap();
    let mut child = Command::new(bin.join("mongod"))
        .args([
            "--port",
            &port.to_string(),
            "--bind_ip",
            "127.0.0.1",
            "--logpath",
        ])
        .arg(&log)
        .arg("--dbpath")
        .arg(&dbpath)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_log_line(&log, "\"id\":23016");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = Client::with_uri_str(format!("mongodb://127.0.0.1:{port}/?directConnection=true"))
            .await
            .unwrap();
        let opts = c
            .database("admin")
            .run_command(doc! {"getCmdLineOpts": 1})
            .await
            .unwrap();
        assert_eq!(opts.get_array("argv").unwrap()[0].as_str(), Some("mongod"));
        let bi = c
            .database("admin")
            .run_command(doc! {"buildInfo": 1})
            .await
            .unwrap();
        assert!(bi.get_str("version").unwrap().ends_with("-standin"));
    });
    // SAFETY: sending SIGTERM to the child we spawned.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = crate::util::poll_for(Duration::from_secs(20), || child.try_wait().unwrap())
        .expect("did not stop on SIGTERM");
    assert!(status.success(), "{status:?}");
    // A clean shutdown empties mongod.lock, as mongod does.
    assert_eq!(
        std::fs::read_to_string(dbpath.join("mongod.lock")).unwrap(),
        ""
    );
}

#[test]
fn link_binaries_creates_both_names() {
    let dir = tempfile::tempdir().unwrap();
    microshard::standin::link_binaries(dir.path()).unwrap();
    for n in ["mongod", "mongos"] {
        let meta = std::fs::symlink_metadata(dir.path().join(n)).unwrap();
        assert!(meta.file_type().is_symlink());
        // From a test harness, the link must point at the microshard binary, not at the harness.
        let target = std::fs::read_link(dir.path().join(n)).unwrap();
        assert_eq!(target.file_name().unwrap(), "microshard");
    }
    let out = Command::new(dir.path().join("mongos"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("standin"));
    // Idempotent.
    microshard::standin::link_binaries(dir.path()).unwrap();
}
