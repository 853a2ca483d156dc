//! A cluster whose balancer comes back on by itself, as a Kubernetes operator switches it back on
//! (Percona's every few seconds, unless `spec.sharding.balancer.enabled: false`): the cell during
//! which it did is degraded with the reason and the setting that keeps it off, and every cell
//! records the balancer's mode and the chunks per shard before and after it.

use crate::util::{Root, sharded_standins};

#[test]
fn a_cell_during_which_the_balancer_came_back_is_degraded_naming_the_operator_setting() {
    let root = Root::new();
    // 2 s after the first data command (the load's first insert), the balancer is on again.
    let (_servers, port) = sharded_standins(&root, &["--balancer-on-after-ms=2000"]);
    let topology = root.path.join("operated.toml");
    std::fs::write(
        &topology,
        format!(
            "name = \"operated\"\nkind = \"sharded\"\nshards_per_host = 2\nuri = \"mongodb://127.0.0.1:{port}/\"\n"
        ),
    )
    .expect("topology");
    let results = root.path.join("results");
    let out = root
        .cmd()
        .args(["compare", "--backend", "existing", "--topologies"])
        .arg(&topology)
        .args([
            "--scenarios",
            "S1,S2",
            "--records",
            "300",
            "--duration",
            "4s",
            "--out",
        ])
        .arg(&results)
        .output()
        .expect("compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let cells = crate::util::cells_under(&crate::util::run_dir(&results));
    let s2 = cells
        .iter()
        .find(|c| c["cell"]["scenario"] == "S2")
        .expect("S2 cell");
    let reasons = s2["summary"]["validity"]["reasons"].to_string();
    assert_eq!(
        s2["summary"]["validity"]["verdict"], "degraded",
        "{reasons}"
    );
    assert!(reasons.contains("the balancer was back on"), "{reasons}");
    assert!(
        reasons.contains("spec.sharding.balancer.enabled: false"),
        "{reasons}"
    );
    // Both looks are kept: the load found it off, the run found it on.
    let s1 = cells
        .iter()
        .find(|c| c["cell"]["scenario"] == "S1")
        .expect("S1");
    assert_eq!(s1["server"]["balancer"]["before"]["mode"], "off", "{s1}");
    assert_eq!(s2["server"]["balancer"]["after"]["mode"], "full", "{s2}");
    let chunks = &s2["server"]["balancer"]["after"]["chunks"];
    assert_eq!(chunks.as_object().map(|c| c.len()), Some(2), "{chunks}");
}
