//! The live backend's API calls against a mock API (kube's `tower-test` pattern, as for client
//! pods: exact requests in order, canned responses): what `up` creates and renews, what a
//! failure mid-apply deletes, what teardown and `down --all` delete and refuse to. Nothing here
//! says how a real API server behaves.

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::namespace::{self, Deleted, LABEL_IO_RUN, LABEL_MANAGED_BY};
use super::{down, lease, pods, provision};
use crate::backend::labels::{LABEL_OWNER, owner_id};
use crate::runner::fanout::kubernetes::mock::{Exchange, serve};
use crate::topology::{BackendKind, Plan, PlanOptions, TopologySpec};

const RUN: &str = "k1-20261207-060000-ab12";
const NS: &str = "k1-20261207-060000-ab12";

/// A sharded topology of one shard: config servers, the shard and a router, each a Service and
/// a StatefulSet.
fn plan() -> Plan {
    let toml = "name = \"k1\"\nkind = \"sharded\"\nshards_per_host = 1\nimage = \"mongo:8.0\"\n";
    let spec = TopologySpec::parse(toml, std::path::Path::new("k1.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut opts = PlanOptions::new(&spec, BackendKind::Kubernetes);
    opts.run_id = RUN.into();
    crate::backend::plan(&spec, &opts).unwrap_or_else(|e| panic!("{e}"))
}

/// A namespace as the API returns it, labelled `labels`.
fn ns_doc(name: &str, labels: Value, extra: Value) -> Value {
    let mut doc = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": labels,
                     "creationTimestamp": "2026-12-07T05:00:00Z"}});
    if let (Some(m), Value::Object(e)) = (doc["metadata"].as_object_mut(), extra) {
        m.extend(e);
    }
    doc
}

/// The labels of run `run`, made by this test's owner.
fn ours(run: &str) -> Value {
    json!({LABEL_MANAGED_BY: "microshard", LABEL_IO_RUN: run, LABEL_OWNER: owner_id(), "microshard.cluster": "k1"})
}

fn echo(kind: &str, api: &str, name: &str) -> Value {
    json!({"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": NS}})
}

fn created(path: &str, kind: &str, api: &str, name: &str) -> Exchange {
    Exchange::ok("POST", format!("{path}?"), echo(kind, api, name))
}

const SERVICES: &str = "/api/v1/namespaces/k1-20261207-060000-ab12/services";
const SETS: &str = "/apis/apps/v1/namespaces/k1-20261207-060000-ab12/statefulsets";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/k1-20261207-060000-ab12/leases";

/// The requests of a provision up to and including the first StatefulSet.
fn until_first_set(last: Exchange) -> Vec<Exchange> {
    vec![
        Exchange::ok(
            "POST",
            "/api/v1/namespaces?",
            ns_doc(NS, ours(RUN), json!({})),
        ),
        created(LEASES, "Lease", "coordination.k8s.io/v1", "microshard"),
        created(SERVICES, "Service", "v1", "k1-cfg"),
        last,
    ]
}

#[tokio::test]
async fn mock_api_up_creates_a_labelled_namespace_its_lease_then_every_object_in_it() {
    let mut script = until_first_set(created(SETS, "StatefulSet", "apps/v1", "k1-cfg"));
    for set in ["k1-sh0", "k1-mongos"] {
        script.push(created(SERVICES, "Service", "v1", set));
        script.push(created(SETS, "StatefulSet", "apps/v1", set));
    }
    let (client, task) = serve(script);
    let now = Timestamp::from_second(1_800_000_000).unwrap_or_else(|e| panic!("{e}"));
    let ns = provision::provision(&client, &plan(), "me/pid-1", now).await;
    assert_eq!(ns.map_err(|e| e.to_string()).as_deref(), Ok(NS));
    let bodies = task.await.unwrap_or_default();
    assert_eq!(bodies.len(), 8);
    assert_eq!(bodies[0]["metadata"]["name"], NS);
    let labels = &bodies[0]["metadata"]["labels"];
    assert_eq!(labels[LABEL_MANAGED_BY], "microshard", "{labels}");
    assert_eq!(labels[LABEL_IO_RUN], RUN, "{labels}");
    let spec = &bodies[1]["spec"];
    assert_eq!(spec["holderIdentity"], "me/pid-1", "{spec}");
    assert_eq!(spec["leaseDurationSeconds"], 60, "{spec}");
    assert_eq!(spec["renewTime"], "2027-01-15T08:00:00.000000Z", "{spec}");
    let kinds: Vec<&str> = bodies[2..]
        .iter()
        .filter_map(|b| b["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["Service", "StatefulSet"].repeat(3));
    for b in &bodies[1..] {
        assert_eq!(b["metadata"]["labels"][LABEL_IO_RUN], RUN, "{b}");
        assert_eq!(
            b["metadata"]["labels"][LABEL_MANAGED_BY], "microshard",
            "{b}"
        );
    }
    let image = &bodies[3]["spec"]["template"]["spec"]["containers"][0]["image"];
    assert_eq!(image, "mongo:8.0");
    assert!(
        bodies.iter().all(|b| b["kind"] != "Job"),
        "no admin Job: the backend assembles"
    );
}

#[tokio::test]
async fn mock_api_an_error_mid_apply_deletes_the_namespace_it_created() {
    let mut script = until_first_set(Exchange::fail("POST", format!("{SETS}?"), 403, "Forbidden"));
    script.push(Exchange::ok(
        "GET",
        format!("/api/v1/namespaces/{NS}"),
        ns_doc(NS, ours(RUN), json!({})),
    ));
    script.push(Exchange::ok(
        "DELETE",
        format!("/api/v1/namespaces/{NS}?"),
        ns_doc(NS, ours(RUN), json!({})),
    ));
    let (client, task) = serve(script);
    let plan = plan();
    let failed = provision::provision(&client, &plan, "me", Timestamp::now()).await;
    let Err(failed) = failed else {
        panic!("a refused StatefulSet fails the bring-up");
    };
    // What `up` does with a failure: nothing left without --keep.
    let (kept, e) = provision::abandon(&client, &plan, false, failed).await;
    assert_eq!(kept, None);
    let e = e.to_string();
    assert!(
        e.starts_with(&format!("creating StatefulSet k1-cfg in namespace {NS}: ")),
        "{e}"
    );
    assert!(e.contains("Forbidden") && !e.contains('\n'), "{e}");
    let bodies = task.await.unwrap_or_default();
    assert_eq!(bodies.len(), 6);
    // Deleted as the namespace read, not one recreated meanwhile under its name.
    assert_eq!(bodies[5]["preconditions"]["uid"], format!("uid-{NS}"));
    assert_eq!(bodies[5]["propagationPolicy"], "Background");
}

#[tokio::test]
async fn mock_api_a_namespace_already_there_is_refused_never_adopted_nor_deleted() {
    let (client, task) = serve(vec![
        Exchange::fail("POST", "/api/v1/namespaces?", 409, "AlreadyExists"),
        Exchange::ok(
            "GET",
            format!("/api/v1/namespaces/{NS}"),
            ns_doc(NS, json!({"team": "payments"}), json!({})),
        ),
    ]);
    let plan = plan();
    let failed = provision::provision(&client, &plan, "me", Timestamp::now()).await;
    let Err(failed) = failed else {
        panic!("an existing namespace is refused");
    };
    let (_, e) = provision::abandon(&client, &plan, false, failed).await;
    let e = e.to_string();
    assert!(e.starts_with(&format!("creating namespace {NS}: ")), "{e}");
    assert!(
        e.contains("AlreadyExists") && !e.contains("deleting"),
        "{e}"
    );
    // Read, found not labelled as the run's, and not deleted.
    assert_eq!(task.await.map(|b| b.len()).unwrap_or(0), 2);
}

#[tokio::test]
async fn mock_api_with_keep_a_failed_bring_up_leaves_its_namespace_and_names_it() {
    let (client, task) = serve(vec![]);
    let err = crate::backend::BackendError::Internal("x".into());
    let (kept, _) = provision::abandon(&client, &plan(), true, err).await;
    assert_eq!(kept.as_deref(), Some(NS));
    assert!(task.await.is_ok_and(|b| b.is_empty()), "no request");
}

#[tokio::test]
async fn mock_api_the_lease_is_renewed_by_its_holder() {
    let (client, task) = serve(vec![Exchange::ok(
        "PATCH",
        format!("{LEASES}/microshard?"),
        echo("Lease", "coordination.k8s.io/v1", "microshard"),
    )]);
    let now = Timestamp::from_second(1_800_000_060).unwrap_or_else(|e| panic!("{e}"));
    let renewed = lease::renew(&client, NS, "me/pid-1", now).await;
    assert!(renewed.is_ok(), "{renewed:?}");
    let bodies = task.await.unwrap_or_default();
    assert_eq!(
        bodies[0],
        json!({"spec": {"holderIdentity": "me/pid-1", "renewTime": "2027-01-15T08:01:00.000000Z"}})
    );
}

#[tokio::test]
async fn mock_api_teardown_deletes_only_a_namespace_labelled_as_the_run_s() {
    let get = |labels: Value| {
        Exchange::ok(
            "GET",
            format!("/api/v1/namespaces/{NS}"),
            ns_doc(NS, labels, json!({})),
        )
    };
    let (client, task) = serve(vec![
        get(ours(RUN)),
        Exchange::ok(
            "DELETE",
            format!("/api/v1/namespaces/{NS}?"),
            ns_doc(NS, ours(RUN), json!({})),
        ),
        get(json!({"team": "payments"})),
        get(ours("k1-20261207-060000-ffff")),
        Exchange::fail("GET", format!("/api/v1/namespaces/{NS}"), 404, "NotFound"),
    ]);
    let delete = || namespace::delete_if_ours(&client, NS, Some(RUN));
    assert_eq!(delete().await.ok(), Some(Deleted::Now));
    let refused =
        |r: Result<Deleted, super::KubeError>| r.err().map(|e| e.to_string()).unwrap_or_default();
    let e = refused(delete().await);
    assert!(
        e.contains("no label app.kubernetes.io/managed-by=microshard")
            && e.contains("left this one alone"),
        "{e}"
    );
    let e = refused(delete().await);
    assert!(
        e.contains("microshard.io/run is \"k1-20261207-060000-ffff\""),
        "another run's: {e}"
    );
    assert_eq!(delete().await.ok(), Some(Deleted::Gone));
    // Two refusals: no DELETE after either.
    assert_eq!(task.await.map(|b| b.len()).unwrap_or(0), 5);
}

#[tokio::test]
async fn mock_api_down_all_deletes_only_labelled_namespaces_whose_lease_expired() {
    let now = Timestamp::from_second(1_800_000_000).unwrap_or_else(|e| panic!("{e}"));
    let lease_at = |second: i64| {
        let at = Timestamp::from_second(second).unwrap_or_else(|e| panic!("{e}"));
        serde_json::to_value(lease::lease(&Default::default(), "x", at)).unwrap_or_default()
    };
    let mut other = ours("r-other");
    other[LABEL_OWNER] = "uid0-someone-else".into();
    let list = json!({"apiVersion": "v1", "kind": "NamespaceList", "metadata": {}, "items": [
        ns_doc("r-dead", ours("r-dead"), json!({})),
        ns_doc("r-live", ours("r-live"), json!({})),
        ns_doc("r-other", other, json!({})),
        ns_doc("r-plain", json!({"team": "payments"}), json!({})),
        ns_doc("r-going", ours("r-going"), json!({"deletionTimestamp": "2026-12-07T05:59:00Z"})),
    ]});
    let lease_path =
        |ns: &str| format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/microshard");
    let (client, task) = serve(vec![
        Exchange::ok(
            "GET",
            "/api/v1/namespaces?&labelSelector=app.kubernetes.io%2Fmanaged-by%3Dmicroshard",
            list,
        ),
        Exchange::ok("GET", lease_path("r-dead"), lease_at(1_800_000_000 - 61)),
        Exchange::ok(
            "GET",
            "/api/v1/namespaces/r-dead",
            ns_doc("r-dead", ours("r-dead"), json!({})),
        ),
        Exchange::ok(
            "DELETE",
            "/api/v1/namespaces/r-dead?",
            ns_doc("r-dead", ours("r-dead"), json!({})),
        ),
        Exchange::ok("GET", lease_path("r-live"), lease_at(1_800_000_000 - 30)),
    ]);
    let mine = owner_id();
    let keep = move |l: &crate::backend::Labels| l.get(LABEL_OWNER) == Some(&mine);
    let done = down::reap(&client, &keep, now).await.unwrap_or_default();
    assert_eq!(
        done,
        ["namespace r-dead (run r-dead, kubernetes, its lease expired)"]
    );
    let bodies = task.await.unwrap_or_default();
    assert_eq!(
        bodies.len(),
        5,
        "nothing asked of another owner's, an unlabelled or a leaving namespace"
    );
    assert_eq!(bodies[3]["preconditions"]["uid"], "uid-r-dead");
}

#[tokio::test]
async fn mock_api_a_namespace_the_user_names_is_deleted_only_when_microshard_s() {
    let get = |name: &str, labels: Value| {
        Exchange::ok(
            "GET",
            format!("/api/v1/namespaces/{name}"),
            ns_doc(name, labels, json!({})),
        )
    };
    let mut other = ours("r-other");
    other[LABEL_OWNER] = "uid0-someone-else".into();
    let (client, task) = serve(vec![
        get("r-other", other.clone()),
        Exchange::ok(
            "DELETE",
            "/api/v1/namespaces/r-other?",
            ns_doc("r-other", other, json!({})),
        ),
        get("payments", json!({"team": "payments"})),
        Exchange::fail("GET", "/api/v1/namespaces/nowhere", 404, "NotFound"),
    ]);
    let named = |n: &'static str| down::delete_named(&client, n);
    let done = named("r-other").await.ok().flatten();
    assert_eq!(
        done.as_deref(),
        Some("namespace r-other (kubernetes)"),
        "named: whoever's run"
    );
    let e = named("payments")
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.starts_with("namespace payments: it has no label"), "{e}");
    assert!(named("nowhere").await.is_ok_and(|d| d.is_none()));
    assert_eq!(task.await.map(|b| b.len()).unwrap_or(0), 4);
}

/// A pod list as the API returns it: each `(name, ready, waiting reason)`.
fn pod_list(pods: &[(&str, bool, Option<&str>)]) -> Value {
    let items: Vec<Value> = pods
        .iter()
        .map(|(name, ready, waiting)| {
            let state = waiting.map_or(
                json!({"running": {}}),
                |r| json!({"waiting": {"reason": r}}),
            );
            json!({"metadata": {"name": name}, "status": {
                "conditions": [{"type": "Ready", "status": if *ready { "True" } else { "False" }}],
                "containerStatuses": [{"name": "mongod", "image": "mongo:8.0", "imageID": "",
                    "ready": ready, "restartCount": 0, "state": state}]}})
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items})
}

#[tokio::test]
async fn mock_api_pods_are_waited_for_by_the_run_s_label_until_every_one_is_ready() {
    let path = format!("/api/v1/namespaces/{NS}/pods?&labelSelector=microshard.run%3D{RUN}");
    let names = ["k1-cfg-0".to_string(), "k1-sh0-0".to_string()];
    let (client, task) = serve(vec![
        Exchange::ok("GET", &path, pod_list(&[("k1-cfg-0", true, None)])),
        Exchange::ok(
            "GET",
            &path,
            pod_list(&[("k1-cfg-0", true, None), ("k1-sh0-0", true, None)]),
        ),
        Exchange::ok(
            "GET",
            &path,
            pod_list(&[
                ("k1-cfg-0", true, None),
                ("k1-sh0-0", false, Some("ErrImagePull")),
            ]),
        ),
        Exchange::ok("GET", &path, pod_list(&[("k1-cfg-0", true, None)])),
    ]);
    let long = std::time::Duration::from_secs(30);
    let waited = pods::wait_ready(&client, NS, RUN, &names, long).await;
    assert!(waited.is_ok(), "{waited:?}");
    let e = pods::wait_ready(&client, NS, RUN, &names, long)
        .await
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("pod k1-sh0-0 in namespace k1-20261207-060000-ab12 cannot start: ErrImagePull")
    );
    let e = pods::wait_ready(&client, NS, RUN, &names, std::time::Duration::ZERO).await;
    let e = e.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.starts_with("1 of 2 pods in namespace k1-20261207-060000-ab12 not Ready after 0 s: k1-sh0-0 (not created yet)"), "{e}");
    assert_eq!(task.await.map(|b| b.len()).unwrap_or(0), 4);
}

#[tokio::test]
async fn mock_api_a_member_whose_pod_restarted_has_crashed_and_its_previous_log_says_why() {
    let pod = |restarted: bool| {
        let last = if restarted {
            json!({"terminated": {"exitCode": 2, "reason": "Error"}})
        } else {
            json!({})
        };
        json!({"metadata": {"name": "k1-sh0-0"}, "status": {"containerStatuses": [{"name": "mongod",
            "image": "mongo:8.0", "imageID": "", "ready": false, "restartCount": 1, "lastState": last}]}})
    };
    let at = format!("/api/v1/namespaces/{NS}/pods/k1-sh0-0");
    let (client, task) = serve(vec![
        Exchange::ok("GET", &at, pod(false)),
        Exchange::ok("GET", &at, pod(true)),
        Exchange::ok(
            "GET",
            format!("{at}/log?&previous=true&tailLines=40"),
            json!("Error parsing option \"bogus\""),
        ),
    ]);
    assert_eq!(pods::crashed(&client, NS, "k1-sh0-0").await, None);
    let tail = pods::crashed(&client, NS, "k1-sh0-0")
        .await
        .unwrap_or_default();
    assert!(
        tail.contains("(pod k1-sh0-0 exited with code 2: Error)"),
        "{tail}"
    );
    assert_eq!(task.await.map(|b| b.len()).unwrap_or(0), 3);
}

#[tokio::test]
async fn mock_api_the_lease_is_renewed_every_period_until_teardown_and_a_failure_said_once() {
    let patch = format!("{LEASES}/microshard?");
    let (client, task) = serve(vec![
        Exchange::ok(
            "PATCH",
            &patch,
            echo("Lease", "coordination.k8s.io/v1", "microshard"),
        ),
        Exchange::fail("PATCH", &patch, 403, "Forbidden"),
        Exchange::fail("PATCH", &patch, 403, "Forbidden"),
    ]);
    let recorder = std::sync::Arc::new(crate::events::Recorder::default());
    let stop = tokio_util::sync::CancellationToken::new();
    let renewal = lease::Renewal {
        client,
        ns: NS.into(),
        holder: "me/pid-1".into(),
        every: std::time::Duration::from_millis(20),
    };
    let renewer = lease::keep_renewed(renewal, stop.clone(), recorder.clone());
    let bodies = task.await.unwrap_or_default();
    assert_eq!(bodies.len(), 3, "renewed each period");
    assert!(
        bodies
            .iter()
            .all(|b| b["spec"]["holderIdentity"] == "me/pid-1")
    );
    stop.cancel();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(5), renewer).await;
    assert!(ended.is_ok(), "teardown stops the renewal");
    let warnings: Vec<String> = recorder
        .events()
        .into_iter()
        .filter_map(|e| match e {
            crate::events::Event::Warning(w) => Some(w),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("renewing Lease microshard in namespace"),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn teardown_with_keep_stops_the_run_s_work_here_and_names_the_namespace_it_leaves() {
    let cluster = crate::backend::RunningCluster::from_plan(&plan(), true);
    let work = super::held::token(RUN);
    let recorder = crate::events::Recorder::default();
    // With --keep no cluster is asked: this passes with no kubeconfig at all.
    let done = down::teardown(&cluster, &recorder).await;
    assert!(done.is_ok(), "{done:?}");
    assert!(work.is_cancelled(), "renewal and port-forwards stopped");
    let said = format!("{:?}", recorder.events());
    assert!(
        said.contains(&format!("kubectl delete namespace {NS}")),
        "{said}"
    );
}
