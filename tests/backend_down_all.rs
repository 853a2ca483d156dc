//! `microshard down --all` tears down what this user's state directory knows plus the Docker
//! objects labelled with this user's owner id, never another owner's (`--any-owner` is for
//! those, and is not run here: on a shared engine it would remove other people's experiments).
//! When the Docker engine does not answer it says so instead of "nothing to tear down".

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use microshard::backend::docker;

fn down_all(state: &Path, docker_host: Option<&str>) -> Output {
    let mut cmd = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_microshard")));
    cmd.args(["down", "--all"])
        .env("MICROSHARD_STATE_DIR", state)
        .env_remove("DOCKER_HOST");
    if let Some(host) = docker_host {
        cmd.env("DOCKER_HOST", host);
    }
    cmd.output().expect("run microshard down --all")
}

#[test]
fn down_all_says_when_docker_was_not_searched() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let sock = format!("unix://{}/no-docker.sock", tmp.path().display());
    let out = down_all(&tmp.path().join("state"), Some(&sock));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("Docker engine unreachable") && stderr.contains("no-docker.sock"),
        "{stderr}"
    );
    assert!(stdout.contains("Docker not searched"), "{stdout}");
}

#[test]
fn down_all_removes_only_this_owners_docker_objects() {
    let rt = crate::util::runtime();
    rt.block_on(async {
        let Some(d) = crate::util::docker_or_skip().await else {
            return;
        };
        let tmp = tempfile::tempdir().expect("temp dir");
        let state = tmp.path().join("state");
        let pid = std::process::id();
        let network = |who: &str, owner: String| bollard::models::NetworkCreateRequest {
            name: format!("t-own-{who}-{pid}"),
            labels: Some(
                [
                    (docker::LABEL_CLUSTER.to_string(), format!("t-own-{pid}")),
                    (docker::LABEL_RUN.to_string(), format!("t-own-{who}-{pid}")),
                    (docker::LABEL_OWNER.to_string(), owner),
                ]
                .into(),
            ),
            ..Default::default()
        };
        d.create_network(network("mine", docker::owner_id_for(&state)))
            .await
            .expect("create own network");
        d.create_network(network("other", "uid4242-someone-else".into()))
            .await
            .expect("create another owner's network");

        let out = tokio::task::spawn_blocking(move || down_all(&state, None))
            .await
            .expect("join");
        let other_left = crate::util::docker_objects_labelled(
            &d,
            docker::LABEL_RUN,
            &format!("t-own-other-{pid}"),
        )
        .await;
        let mine_left = crate::util::docker_objects_labelled(
            &d,
            docker::LABEL_RUN,
            &format!("t-own-mine-{pid}"),
        )
        .await;
        // Clean up before asserting, so a failure leaves nothing on the engine.
        let _ = d.remove_network(&format!("t-own-other-{pid}")).await;
        let _ = d.remove_network(&format!("t-own-mine-{pid}")).await;

        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stdout.contains(&format!("network t-own-mine-{pid}")),
            "{stdout}"
        );
        assert!(!stdout.contains("t-own-other"), "{stdout}");
        assert!(mine_left.is_empty(), "own network left: {mine_left:?}");
        assert_eq!(
            other_left.len(),
            1,
            "another owner's network must stay: {stdout}"
        );
    });
}
