//! A mock Kubernetes API for the tests (kube's own `tower-test` pattern): a script of exact
//! requests and the responses to give, played by a task in place of an API server. It checks
//! what microshard asks, in order, and nothing about what a cluster would do.

use http::{Request, Response};
use kube::client::Body;

/// One request the script expects and the response it gives.
pub(crate) struct Exchange {
    /// `GET`, `POST`, `DELETE`, ...
    pub method: &'static str,
    /// The path and query, exactly.
    pub path: String,
    /// The response's status code.
    pub status: u16,
    /// The response's body.
    pub body: serde_json::Value,
}

impl Exchange {
    /// A request answered `200 OK` with `body`.
    pub(crate) fn ok(
        method: &'static str,
        path: impl Into<String>,
        body: serde_json::Value,
    ) -> Exchange {
        Exchange {
            method,
            path: path.into(),
            status: 200,
            body,
        }
    }

    /// A request answered with the API's error `Status` (`code`, `reason`).
    pub(crate) fn fail(
        method: &'static str,
        path: impl Into<String>,
        code: u16,
        reason: &str,
    ) -> Exchange {
        let body = serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("{reason} (mock)"), "reason": reason, "code": code,
        });
        Exchange {
            method,
            path: path.into(),
            status: code,
            body,
        }
    }
}

/// A client of the mock API and the task playing `script`: the task ends with every request's
/// body (as JSON, `null` when empty), and fails the test on a request out of script.
pub(crate) fn serve(
    script: Vec<Exchange>,
) -> (
    kube::Client,
    tokio::task::JoinHandle<Vec<serde_json::Value>>,
) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let task = tokio::spawn(async move {
        let mut bodies = Vec::new();
        for step in script {
            let Some((request, send)) = handle.next_request().await else {
                panic!(
                    "the mock API expected {} {}, got nothing",
                    step.method, step.path
                );
            };
            let got = format!(
                "{} {}",
                request.method(),
                request
                    .uri()
                    .path_and_query()
                    .map(|p| p.as_str())
                    .unwrap_or("")
            );
            assert_eq!(got, format!("{} {}", step.method, step.path));
            let bytes = request
                .into_body()
                .collect_bytes()
                .await
                .unwrap_or_default();
            bodies.push(serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null));
            let response = Response::builder().status(step.status).body(Body::from(
                serde_json::to_vec(&step.body).unwrap_or_default(),
            ));
            send.send_response(response.expect("a well-formed mock response"));
        }
        bodies
    });
    (kube::Client::new(service, "default"), task)
}
