//! A plan as Kubernetes manifests, a pure function of the [`Plan`]: per replica set (and for the
//! routers) a headless Service and a StatefulSet, then the admin steps as a Job. Nothing here
//! needs a cluster (`docs/kubernetes.md`).

use serde_json::{Map, Value, json};

use super::place::{group, set_name};
use crate::backend::BackendError;
use crate::backend::labels::{LABEL_CLUSTER, LABEL_MEMBER, LABEL_RUN};
use crate::topology::{Member, MemberRole, Plan, parse_cpuset};

/// The manifests of `plan`, as YAML documents in the order to apply them. Refuses an image that
/// is not pinned and a replica set whose members' command lines differ (a StatefulSet runs one).
/// A plan carries no password, so there is no Secret to write.
pub fn manifests(plan: &Plan) -> Result<String, BackendError> {
    Ok(super::yaml::documents(&objects(plan)?))
}

/// The objects of [`manifests`], in order.
fn objects(plan: &Plan) -> Result<Vec<Value>, BackendError> {
    let mut objects = servers(plan)?;
    objects.extend(admin_job(plan));
    Ok(objects)
}

/// The objects that run the servers (a headless Service and a StatefulSet per group), in start
/// order, without the admin Job: the live backend runs the admin steps itself.
pub(super) fn servers(plan: &Plan) -> Result<Vec<Value>, BackendError> {
    pinned(&plan.image)?;
    let mut objects = Vec::new();
    for (group, members) in groups(plan) {
        one_command_line(&group, &members)?;
        objects.push(service(plan, &group, members[0]));
        objects.push(stateful_set(plan, &group, &members));
    }
    Ok(objects)
}

/// Refuses an image a node could resolve differently tomorrow: no tag, or `latest`.
pub(super) fn pinned(image: &str) -> Result<(), BackendError> {
    let name = image.rsplit('/').next().unwrap_or(image);
    let tag = name.split_once(':').map(|(_, t)| t);
    if image.contains('@') || tag.is_some_and(|t| t != "latest") {
        return Ok(());
    }
    Err(BackendError::BadInput(format!(
        "image {image}: Kubernetes manifests need a pinned image, a tag other than latest or a digest (the topology's `image` or --image, e.g. mongo:8.0)"
    )))
}

/// The plan's members by StatefulSet, in start order (config servers, shards or the
/// standalone, routers).
fn groups(plan: &Plan) -> Vec<(String, Vec<&Member>)> {
    let mut out: Vec<(String, Vec<&Member>)> = Vec::new();
    for m in plan.start_order() {
        match out.iter_mut().find(|(g, _)| g == group(m)) {
            Some((_, members)) => members.push(m),
            None => out.push((group(m).to_string(), vec![m])),
        }
    }
    out
}

/// The members of a StatefulSet share its one pod template, so their command lines must agree
/// (`{name}`, `{port}` or `{dir}` in `mongod_args`/`mongos_args` make them differ).
fn one_command_line(group: &str, members: &[&Member]) -> Result<(), BackendError> {
    match members.iter().find(|m| m.argv != members[0].argv) {
        None => Ok(()),
        Some(m) => Err(BackendError::BadInput(format!(
            "mongod_args/mongos_args: {} and {} of {group} would run different command lines, which one StatefulSet cannot ({{name}}, {{port}} and {{dir}} differ per member)",
            members[0].name, m.name
        ))),
    }
}

/// The labels of every object of `group`: microshard's own and who manages it.
fn labels(plan: &Plan, group: &str) -> Value {
    let mut l = selector(plan, group);
    l.insert(LABEL_RUN.into(), plan.run_id.clone().into());
    l.insert("app.kubernetes.io/managed-by".into(), "microshard".into());
    Value::Object(l)
}

/// The labels that pick the pods of `group`.
fn selector(plan: &Plan, group: &str) -> Map<String, Value> {
    let mut l = Map::new();
    l.insert(LABEL_CLUSTER.into(), plan.name.clone().into());
    l.insert(LABEL_MEMBER.into(), group.into());
    l
}

/// The headless Service that gives each pod of `group` its DNS name, ready or not (a replica
/// set's members must find each other before any is ready).
fn service(plan: &Plan, group: &str, first: &Member) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": set_name(&plan.name, group), "labels": labels(plan, group)},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": true,
            "selector": selector(plan, group),
            "ports": [{"name": "mongodb", "port": first.port, "targetPort": first.port}],
        },
    })
}

/// The StatefulSet of `group`: its pods started together, on the member's node, with no
/// liveness probe (a mongod busy under load must not be restarted mid-measurement) and its
/// data on an emptyDir (gone with the pod).
fn stateful_set(plan: &Plan, group: &str, members: &[&Member]) -> Value {
    let first = members[0];
    let mut container = json!({
        "name": first.role.program(),
        "image": plan.image,
        "args": first.argv,
        "ports": [{"name": "mongodb", "containerPort": first.port}],
    });
    if let Some(r) = resources(first) {
        container["resources"] = r;
    }
    let mut pod = json!({"containers": [container]});
    if let Some(node) = &first.node {
        pod["nodeSelector"] = json!({"kubernetes.io/hostname": node});
    }
    if first.role != MemberRole::Mongos {
        pod["containers"][0]["volumeMounts"] = json!([{"name": "data", "mountPath": "/data/db"}]);
        pod["volumes"] = json!([{"name": "data", "emptyDir": {}}]);
    }
    let name = set_name(&plan.name, group);
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "labels": labels(plan, group)},
        "spec": {
            "serviceName": name,
            "replicas": members.len(),
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": selector(plan, group)},
            "template": {"metadata": {"labels": labels(plan, group)}, "spec": pod},
        },
    })
}

/// A member's resources: with a CPU set, Guaranteed QoS (requests = limits, as many whole CPUs
/// as the set names, and memory: the container limit, else the least in which its cache fits
/// mongod's rule, 2 × cache + 1 GB); without one, only the container memory limit, if any.
fn resources(m: &Member) -> Option<Value> {
    let mebibytes = |gb: f64| format!("{}Mi", (gb * 1024.0).ceil() as u64);
    let cpus = m.cpuset.as_deref().and_then(|c| parse_cpuset(c).ok());
    let fitting = m.cache_gb.map_or(1.0, |c| 2.0 * c + 1.0);
    let amounts = match (cpus, m.memory_limit_gb) {
        (Some(cpus), limit) => json!({
            "cpu": cpus.len().to_string(),
            "memory": mebibytes(limit.unwrap_or(fitting)),
        }),
        (None, Some(limit)) => json!({"memory": mebibytes(limit)}),
        (None, None) => return None,
    };
    Some(json!({"requests": amounts, "limits": amounts}))
}

/// The admin steps as a Job: each replica set initiated and given a primary, then on the first
/// router every shard added, `ycsb.usertable` sharded on hashed `_id`, the balancer stopped
/// (unless the topology keeps it) — the sequence `cluster::assemble` runs for the other
/// backends. `None` for a standalone without a replica set.
fn admin_job(plan: &Plan) -> Option<Value> {
    let script = admin_script(plan)?;
    let name = format!("{}-admin", plan.name);
    let command = ["mongosh", "--nodb", "--quiet", "--eval", &script];
    Some(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels(plan, "admin")},
        "spec": {
            "backoffLimit": 10,
            "template": {
                "metadata": {"labels": labels(plan, "admin")},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [{"name": "admin", "image": plan.image, "command": command}],
                },
            },
        },
    }))
}

/// The mongosh script of the admin Job; every step may run again (a retried Job).
fn admin_script(plan: &Plan) -> Option<String> {
    let q = |v: &str| Value::from(v).to_string();
    let mut lines = vec![
        "const admin = (h) => new Mongo(h).getDB('admin');".to_string(),
        "function answer(h) { for (;;) { try { if (admin(h).runCommand({ping: 1}).ok) return; } catch (e) {} sleep(1000); } }".into(),
        "function must(r, what) { if (!r.ok && !/already/.test(r.errmsg)) throw new Error(what + ': ' + r.errmsg); }".into(),
        "function initiate(set, hosts, configsvr) { hosts.forEach(answer); const r = admin(hosts[0]).runCommand({replSetInitiate: {_id: set, configsvr: configsvr, members: hosts.map((host, i) => ({_id: i, host: host}))}}); if (!r.ok && r.code !== 23) throw new Error(set + ': ' + r.errmsg); while (!admin(hosts[0]).runCommand({hello: 1}).primary) sleep(1000); }".into(),
    ];
    let mut steps = 0;
    for (set, members) in groups(plan)
        .iter()
        .filter(|(_, m)| m[0].replica_set.is_some())
    {
        let hosts: Vec<Value> = members
            .iter()
            .map(|m| m.member_host.clone().into())
            .collect();
        let configsvr = members[0].role == MemberRole::Config;
        lines.push(format!(
            "initiate({}, {}, {configsvr});",
            q(set),
            Value::from(hosts)
        ));
        steps += 1;
    }
    if let Some(router) = plan.members_with(MemberRole::Mongos).next() {
        lines.push(format!("const router = {};", q(&router.member_host)));
        let r = "router";
        lines.push(format!("answer({r});"));
        for (set, members) in plan.shard_sets() {
            let conn = q(&Plan::shard_connection_string(&members));
            lines.push(format!(
                "must(admin({r}).runCommand({{addShard: {conn}}}), {});",
                q(&format!("addShard {set}"))
            ));
        }
        lines.push(format!(
            "must(admin({r}).runCommand({{enableSharding: 'ycsb'}}), 'enableSharding');"
        ));
        if plan.shard_collection {
            lines.push(format!("must(admin({r}).runCommand({{shardCollection: 'ycsb.usertable', key: {{_id: 'hashed'}}}}), 'shardCollection');"));
        }
        if !plan.keep_balancer {
            lines.push(format!(
                "must(admin({r}).runCommand({{balancerStop: 1}}), 'balancerStop');"
            ));
        }
        steps += 1;
    }
    (steps > 0).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{BackendKind, PlanOptions, TopologySpec};

    fn plan_of(toml: &str) -> Plan {
        let spec = TopologySpec::parse(toml, std::path::Path::new("k.toml")).unwrap();
        let mut opts = PlanOptions::new(&spec, BackendKind::Kubernetes);
        opts.run_id = spec.name.clone();
        crate::backend::plan(&spec, &opts).unwrap()
    }

    const TWO_NODES: &str = "name = \"k2\"\nkind = \"sharded\"\nshards_per_host = 2\nimage = \"mongo:8.0\"\nmemory_limit_gb = 4.0\n[[hosts]]\naddress = \"node-a\"\nmemory_budget_gb = 6.0\nshard_cpusets = [\"0-1\", \"2-3\"]\n[[hosts]]\naddress = \"node-b\"\nmemory_budget_gb = 6.0\nshard_cpusets = [\"0-1\", \"2\"]\n";

    fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
        objects.iter().filter(|o| o["kind"] == kind).collect()
    }

    #[test]
    fn every_object_is_labelled_and_no_service_leaves_the_cluster() {
        let objects = objects(&plan_of(TWO_NODES)).unwrap();
        assert_eq!(
            objects.len(),
            2 * 6 + 1,
            "cfg, 4 shards, mongos: a Service and a StatefulSet each; one Job"
        );
        for o in &objects {
            let labels = &o["metadata"]["labels"];
            assert_eq!(labels[LABEL_CLUSTER], "k2", "{o}");
            assert_eq!(labels[LABEL_RUN], "k2", "{o}");
            assert_eq!(labels["app.kubernetes.io/managed-by"], "microshard", "{o}");
            assert!(
                o["metadata"].get("namespace").is_none(),
                "applied where the user says: {o}"
            );
        }
        for s in of_kind(&objects, "Service") {
            assert_eq!(s["spec"]["clusterIP"], "None", "{s}");
            assert_eq!(s["spec"]["publishNotReadyAddresses"], true, "{s}");
            assert!(
                s["spec"].get("type").is_none(),
                "no NodePort or LoadBalancer: {s}"
            );
        }
    }

    #[test]
    fn shards_go_to_their_node_with_guaranteed_whole_cpus_and_no_liveness_probe() {
        let all = objects(&plan_of(TWO_NODES)).unwrap();
        let sets = of_kind(&all, "StatefulSet");
        let pod = |name: &str| {
            let s = sets.iter().find(|s| s["metadata"]["name"] == name).unwrap();
            assert_eq!(s["spec"]["podManagementPolicy"], "Parallel", "{s}");
            s["spec"]["template"]["spec"].clone()
        };
        for (set, node, cpus) in [
            ("k2-sh0", "node-a", "2"),
            ("k2-sh2", "node-b", "2"),
            ("k2-sh3", "node-b", "1"),
        ] {
            let p = pod(set);
            assert_eq!(
                p["nodeSelector"]["kubernetes.io/hostname"], node,
                "{set}: {p}"
            );
            let c = &p["containers"][0];
            assert_eq!(
                c["resources"]["requests"], c["resources"]["limits"],
                "{set}: Guaranteed"
            );
            assert_eq!(c["resources"]["limits"]["cpu"], cpus, "{set}");
            assert_eq!(c["resources"]["limits"]["memory"], "4096Mi", "{set}");
            assert!(c.get("livenessProbe").is_none(), "{set}");
            assert_eq!(p["volumes"][0]["emptyDir"], serde_json::json!({}), "{set}");
            assert_eq!(c["volumeMounts"][0]["mountPath"], "/data/db", "{set}");
        }
        // Config servers and the router are on the first host, with no CPU set: no CPU claimed.
        let cfg = pod("k2-cfg");
        assert_eq!(cfg["nodeSelector"]["kubernetes.io/hostname"], "node-a");
        assert!(
            cfg["containers"][0]["resources"]["limits"]
                .get("cpu")
                .is_none()
        );
        // A single host named localhost: any node.
        let local = objects(&plan_of(
            "name = \"one\"\nkind = \"standalone\"\nimage = \"mongo:8.0\"\n",
        ))
        .unwrap();
        let set = of_kind(&local, "StatefulSet")[0];
        assert!(
            set["spec"]["template"]["spec"]
                .get("nodeSelector")
                .is_none(),
            "{set}"
        );
    }

    #[test]
    fn the_admin_job_assembles_the_cluster_the_other_backends_assemble() {
        let plan = plan_of(TWO_NODES);
        let script = admin_script(&plan).unwrap();
        assert!(
            script.contains("initiate(\"cfg\", [\"k2-cfg-0.k2-cfg:27017\"], true);"),
            "{script}"
        );
        for set in ["sh0", "sh1", "sh2", "sh3"] {
            assert!(
                script.contains(&format!("addShard: \"{set}/k2-{set}-0.k2-{set}:27017\"")),
                "{script}"
            );
        }
        assert!(
            script.contains("shardCollection: 'ycsb.usertable', key: {_id: 'hashed'}"),
            "{script}"
        );
        assert!(script.contains("balancerStop"), "{script}");
        let mongos = plan.members_with(MemberRole::Mongos).next().unwrap();
        assert!(
            mongos
                .argv
                .join(" ")
                .ends_with("--configdb cfg/k2-cfg-0.k2-cfg:27017")
        );
        let alone = plan_of(
            "name = \"s\"\nkind = \"standalone\"\nbaseline = \"standalone\"\nimage = \"mongo:8.0\"\n",
        );
        assert!(admin_script(&alone).is_none(), "nothing to assemble");
    }

    #[test]
    fn unpinned_images_and_per_member_command_lines_are_refused() {
        for image in ["mongo", "mongo:latest", "reg:5000/mongo"] {
            let mut plan = plan_of(TWO_NODES);
            plan.image = image.into();
            let e = objects(&plan).unwrap_err();
            assert!(
                e.is_bad_input() && e.to_string().contains("pinned"),
                "{image}: {e}"
            );
        }
        let mut plan = plan_of(TWO_NODES);
        plan.image = "reg:5000/mongo@sha256:0123".into();
        assert!(objects(&plan).is_ok());
        let named = TWO_NODES.replace(
            "memory_limit_gb",
            "shard_members = 2\nmongod_args = [\"--keyFile=/k/{name}\"]\nmemory_limit_gb",
        );
        let e = objects(&plan_of(&named)).unwrap_err().to_string();
        assert!(e.contains("mongod_args") && e.contains("sh0-1"), "{e}");
    }
}
