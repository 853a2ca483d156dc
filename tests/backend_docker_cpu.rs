//! A cell measured against a Docker topology sums every member container's CPU, read from the
//! engine's stats at the cell's start and end: no member is left out of the servers' CPU per
//! operation. Runs whenever an engine answers; skips (saying why) when none does.

use microshard::backend::docker;

use crate::util::{Root, free_base_port};

/// Whatever happens, the test's containers, network and image do not outlive it.
struct Cleanup {
    cluster: String,
    image: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        crate::util::runtime().block_on(async {
            let cluster = self.cluster.clone();
            let _ = docker::remove_labelled_matching(None, None, |l| {
                l.get(docker::LABEL_CLUSTER) == Some(&cluster)
            })
            .await;
            if let Ok(d) = docker::connect(None).await {
                let opts = bollard::query_parameters::RemoveImageOptionsBuilder::default()
                    .force(true)
                    .build();
                let _ = d.remove_image(&self.image, Some(opts), None).await;
            }
        });
    }
}

#[test]
fn a_docker_cell_sums_every_member_containers_cpu() {
    let rt = crate::util::runtime();
    let Some(d) = rt.block_on(crate::util::docker_or_skip()) else {
        return;
    };
    let pid = std::process::id();
    // An image of this test's own, so another test rebuilding the shared tag cannot change it;
    // a name not `t-d…`, which tests/backend_docker.rs sweeps.
    let cleanup = Cleanup {
        cluster: format!("dcpu-{pid}"),
        image: format!("microshard-standin:cpu-{pid}"),
    };
    rt.block_on(docker::build_standin_image(
        &d,
        &crate::util::bin(),
        &cleanup.image,
    ))
    .expect("stand-in image builds");
    let root = Root::new();
    let topology = root.path.join("dcpu.toml");
    std::fs::write(
        &topology,
        format!(
            "name = \"{}\"\nkind = \"sharded\"\nshards_per_host = 1\nimage = \"{}\"\nbase_port = {}\n",
            cleanup.cluster,
            cleanup.image,
            free_base_port(4)
        ),
    )
    .expect("write topology");
    let results = root.path.join("results");
    let out = root.output(&[
        "compare",
        "--backend",
        "docker",
        "--image",
        &cleanup.image,
        "--topologies",
        &topology.display().to_string(),
        "--scenarios",
        "S1",
        "--duration",
        "2s",
        "--records",
        "200",
        "--threads",
        "2",
        "--out",
        &results.display().to_string(),
        "-q",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(3)), "{stderr}");
    let cells = crate::util::cells_under(&results);
    assert!(!cells.is_empty(), "{stderr}");
    for c in &cells {
        let at = format!("{} {}", c["cell"]["topology"], c["cell"]["scenario"]);
        let load = &c["result"]["host_load"];
        let cpu = load["server_cpu_us"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut names: Vec<&str> = cpu.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["cfg0", "mongos0", "sh0"], "{at}: {load}");
        assert!(load["server_cpu_missing"].is_null(), "{at}: {load}");
        assert!(cpu.values().all(|v| v.as_u64().is_some()), "{at}: {load}");
        // The run did work: the containers used some CPU between the cell's ends.
        assert!(cpu.values().any(|v| v.as_u64() > Some(0)), "{at}: {load}");
        assert!(
            c["summary"]["server_cpu_s"].as_f64().is_some(),
            "{at}: {}",
            c["summary"]
        );
    }
}
