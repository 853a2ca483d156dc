//! End-to-end: the Docker backend against this machine's engine, with the stand-in image built
//! locally from scratch. Runs whenever an engine answers and fails when something is wrong;
//! skips (saying why) only when no engine answers. The unreachable-engine error is tested always.

use std::path::{Path, PathBuf};
use std::time::Duration;

use microshard::backend::{self, UpOptions, docker};
use microshard::topology::{BackendKind, MemberRole, Plan, PlanOptions, TopologySpec};
use mongodb::bson::{Document, doc};

fn microshard_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_microshard"))
}

fn standin_implemented() -> bool {
    let out = std::process::Command::new(microshard_bin())
        .args(["standin", "mongod", "--version"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && err.contains("not implemented") {
        eprintln!("SKIP: the stand-in is not implemented in this build yet");
        return false;
    }
    true
}

fn plan(root: &Path, text: &str) -> Plan {
    let path = root.join("t.toml");
    std::fs::write(&path, text).unwrap();
    let spec = TopologySpec::load(path.to_str().unwrap()).unwrap();
    let mut opts = PlanOptions::new(&spec, BackendKind::Docker);
    opts.run_dir = root.join("run");
    opts.total_memory_gb = Some(5.0);
    microshard::backend::plan(&spec, &opts).unwrap()
}

fn up_opts() -> UpOptions {
    UpOptions {
        stop_timeout: Duration::from_secs(5),
        ..crate::util::up_options(60, 60)
    }
}

/// Runs a throw-away container of the stand-in image and returns its exit code.
async fn run_once(d: &bollard::Docker, cmd: &[&str]) -> i64 {
    use bollard::models::ContainerCreateBody;
    use bollard::query_parameters::{CreateContainerOptionsBuilder, RemoveContainerOptionsBuilder};
    use futures::StreamExt;
    let name = format!("microshard-smoke-{}", std::process::id());
    let body = ContainerCreateBody {
        image: Some(docker::STANDIN_IMAGE.to_string()),
        cmd: Some(cmd.iter().map(|s| s.to_string()).collect()),
        labels: Some([(docker::LABEL_CLUSTER.to_string(), "smoke".to_string())].into()),
        ..Default::default()
    };
    d.create_container(
        Some(CreateContainerOptionsBuilder::default().name(&name).build()),
        body,
    )
    .await
    .unwrap();
    d.start_container(
        &name,
        None::<bollard::query_parameters::StartContainerOptions>,
    )
    .await
    .unwrap();
    let mut wait = d.wait_container(
        &name,
        None::<bollard::query_parameters::WaitContainerOptions>,
    );
    let code = match wait.next().await {
        Some(Ok(r)) => r.status_code,
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
        other => panic!("waiting for {name}: {other:?}"),
    };
    let logs = docker::container_log_tail(d, &name).await;
    d.remove_container(
        &name,
        Some(
            RemoveContainerOptionsBuilder::default()
                .force(true)
                .v(true)
                .build(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(code, 0, "{cmd:?} in the stand-in image: {logs}");
    code
}

#[test]
fn docker_backend_end_to_end() {
    let _env = crate::util::one_at_a_time();
    let root = crate::util::state_root();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // An endpoint nobody answers: a one-line error naming it, nothing started.
        let p = plan(
            root.path(),
            "name = \"t-unreach\"\nkind = \"standalone\"\n[[hosts]]\ndocker = \"unix:///nonexistent/docker.sock\"\n",
        );
        let err = format!("{:#}", backend::up(&p, &up_opts()).await.unwrap_err());
        assert!(err.contains("Docker engine unreachable (unix:///nonexistent/docker.sock"), "{err}");

        let Some(d) = crate::util::docker_or_skip().await else {
            return;
        };
        // Image missing and no registry: a clear error, nothing left.
        let p = plan(
            root.path(),
            "name = \"t-noimage\"\nkind = \"standalone\"\nimage = \"microshard-no-such-image:never\"\nbase_port = 29900\n",
        );
        let err = format!("{:#}", backend::up(&p, &up_opts()).await.unwrap_err());
        assert!(
            err.contains("image microshard-no-such-image:never is not present on") && err.contains("cannot be pulled"),
            "{err}"
        );
        assert!(labelled_objects(&d, &p.run_id).await.is_empty());

        // The stand-in image, built from scratch through the build API; the binary must run in it.
        docker::build_standin_image(&d, &microshard_bin(), docker::STANDIN_IMAGE)
            .await
            .unwrap();
        assert_eq!(run_once(&d, &["microshard", "--version"]).await, 0);
        if !standin_implemented() {
            return;
        }

        for (shards, port) in [(0u32, 29910u16), (2, 29920)] {
            // The sharded case also runs in 1 GB containers on a "5 GB host": the caches follow
            // the containers' limit, not the host's RAM.
            let text = if shards == 0 {
                format!("name = \"t-dsingle\"\nkind = \"standalone\"\nimage = \"{}\"\nbase_port = {port}\n", docker::STANDIN_IMAGE)
            } else {
                format!(
                    "name = \"t-d{shards}\"\nkind = \"sharded\"\nshards_per_host = {shards}\nimage = \"{}\"\nbase_port = {port}\nmemory_limit_gb = 1\n",
                    docker::STANDIN_IMAGE
                )
            };
            let p = plan(root.path(), &text);
            let cluster = backend::up(&p, &up_opts()).await.unwrap();
            assert!(cluster.standin);
            assert!(cluster.entry_uri.starts_with(&format!("mongodb://127.0.0.1:{port}/")), "{}", cluster.entry_uri);
            // Every member is published on 127.0.0.1 at its own port, and every address
            // microshard dialled for admin, probes and metrics is that published one — never a
            // container IP, which only rootful Docker on this Linux machine could route.
            for m in &cluster.members {
                let published = format!("127.0.0.1:{}", m.port);
                assert_eq!(m.address, published, "{} was dialled elsewhere", m.name);
                assert_eq!(m.direct_uri, format!("mongodb://{published}/?directConnection=true"));
                let planned = p.members.iter().find(|x| x.name == m.name).unwrap();
                assert_eq!(planned.published.as_deref(), Some(published.as_str()));
                // Replica-set configs and --configdb keep the container name.
                assert!(m.member_host.starts_with(m.handle.container().unwrap()), "{}", m.member_host);
            }
            // What the engine really bound: each member's port on 127.0.0.1 only (the topology
            // names no publish_address); plus nofile ulimits and, with a limit, no extra swap.
            for m in &cluster.members {
                let name = m.handle.container().expect("a Docker member names its container");
                let info = d
                    .inspect_container(name, None::<bollard::query_parameters::InspectContainerOptions>)
                    .await
                    .unwrap();
                let host = info.host_config.clone().unwrap_or_default();
                // nofile 64000, or — on an engine that cannot raise its own limit — none, and
                // then the member's record says it is unknown rather than claiming 64000.
                let ulimits = host.ulimits.clone().unwrap_or_default();
                let raised = ulimits.iter().any(|u| {
                    u.name.as_deref() == Some("nofile")
                        && u.soft == Some(docker::NOFILE)
                        && u.hard == Some(docker::NOFILE)
                });
                assert_eq!(raised, ulimits.iter().any(|u| u.name.as_deref() == Some("nofile")), "{name}: {ulimits:?}");
                assert_eq!(m.nofile, raised.then_some(docker::NOFILE as u64), "{name}: {ulimits:?}");
                if shards > 0 {
                    assert_eq!(host.memory, Some(1 << 30), "{name}");
                    assert_eq!(host.memory_swap, host.memory, "{name}");
                    if m.role != MemberRole::Mongos {
                        assert!(m.argv.join(" ").contains("--wiredTigerCacheSizeGB 0.25"), "{:?}", m.argv);
                    }
                }
                let asked = host.port_bindings.unwrap_or_default();
                let live = info
                    .network_settings
                    .and_then(|n| n.ports)
                    .unwrap_or_default();
                for (what, map) in [("asked", asked), ("bound", live)] {
                    let mut ports = Vec::new();
                    for (container_port, bindings) in map {
                        for b in bindings.unwrap_or_default() {
                            assert_eq!(
                                b.host_ip.as_deref(),
                                Some("127.0.0.1"),
                                "{name} {container_port} ({what}): {b:?}"
                            );
                            ports.push(b.host_port.clone().unwrap_or_default());
                        }
                    }
                    assert_eq!(ports, [m.port.to_string()], "{name} ({what})");
                }
            }
            let client = mongodb::Client::with_uri_str(&cluster.entry_uri).await.unwrap();
            let coll = client.database("ycsb").collection::<Document>("usertable");
            let docs: Vec<Document> = (0..100).map(|i| doc! {"_id": format!("user{i}")}).collect();
            coll.insert_many(docs).await.unwrap();
            if shards > 0 {
                assert_eq!(cluster.chunks.len(), shards as usize, "{:?}", cluster.chunks);
                let mut total = 0;
                for m in cluster.members.iter().filter(|m| m.role == MemberRole::Shard) {
                    let n = crate::util::usertable_count(&m.direct_uri).await;
                    assert!(n > 0, "shard {} got no documents", m.name);
                    total += n;
                }
                assert_eq!(total, 100);
            }
            backend::down(&cluster, &microshard::events::Discard).await.unwrap();
            let left = labelled_objects(&d, &p.run_id).await;
            assert!(left.is_empty(), "left behind: {left:?}");
            assert!(!cluster.state_file.exists());
        }

        // Replica sets of three members on Docker: the members find each other by container
        // name on the run's network (the stand-in's initiate checks every member first), member
        // 1 wins every election, and microshard reaches all of them at published ports only.
        let p = plan(
            root.path(),
            &format!(
                "name = \"t-drs\"\nkind = \"sharded\"\nshards_per_host = 1\nshard_members = 3\nimage = \"{}\"\nbase_port = 29940\nmongod_args = [\"--election-winner\", \"1\", \"--election-delay-ms\", \"300\"]\n[config_servers]\nmembers = 3\n",
                docker::STANDIN_IMAGE
            ),
        );
        let cluster = backend::up(&p, &up_opts()).await.unwrap();
        assert_eq!(cluster.primaries.get("cfg").map(String::as_str), Some("cfg1"));
        assert_eq!(cluster.primaries.get("sh0").map(String::as_str), Some("sh0-1"));
        for m in &cluster.members {
            assert_eq!(m.address, format!("127.0.0.1:{}", m.port), "{}", m.name);
        }
        let client = mongodb::Client::with_uri_str(&cluster.entry_uri).await.unwrap();
        let coll = client.database("ycsb").collection::<Document>("usertable");
        coll.insert_many((0..50).map(|i| doc! {"_id": format!("user{i}")}))
            .await
            .unwrap();
        assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 50);
        backend::down(&cluster, &microshard::events::Discard).await.unwrap();
        assert!(labelled_objects(&d, &p.run_id).await.is_empty());

        // A run that "crashed" (never torn down) plus a labelled network without a state file:
        // `down --all` finds both, by state file and by label.
        let p = plan(
            root.path(),
            &format!("name = \"t-dcrash\"\nkind = \"standalone\"\nimage = \"{}\"\nbase_port = 29930\n", docker::STANDIN_IMAGE),
        );
        let crashed = backend::up(&p, &up_opts()).await.unwrap();
        let stray = bollard::models::NetworkCreateRequest {
            name: format!("t-dstray-{}", std::process::id()),
            labels: Some(
                [
                    (docker::LABEL_CLUSTER.to_string(), "t-dstray".to_string()),
                    (docker::LABEL_RUN.to_string(), "t-dstray-run".to_string()),
                ]
                .into(),
            ),
            ..Default::default()
        };
        d.create_network(stray).await.unwrap();
        let done = backend::down_all_where(|n| n.starts_with("t-d"), &microshard::events::Discard).await.unwrap();
        assert!(done.iter().any(|l| l.contains("t-dcrash")), "{done:?}");
        assert!(done.iter().any(|l| l.contains("network t-dstray")), "{done:?}");
        assert!(labelled_objects(&d, &crashed.run_id).await.is_empty());
        assert!(labelled_objects(&d, "t-dstray-run").await.is_empty());
        assert!(!crashed.state_file.exists());
    });
}

/// Every container, network and volume of one bring-up (its run label).
async fn labelled_objects(d: &bollard::Docker, run: &str) -> Vec<String> {
    crate::util::docker_objects_labelled(d, docker::LABEL_RUN, run).await
}
