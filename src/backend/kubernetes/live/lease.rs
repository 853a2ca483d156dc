//! The run's Lease (`coordination.k8s.io/v1`, named `microshard`, in the run's namespace): the
//! process that brought the run up renews it while it lives, so a namespace whose lease expired
//! belongs to a run nobody holds any more, which `down --all` may delete.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use tokio_util::sync::CancellationToken;

use super::error::{KubeError, failed};
use crate::events::{Event, Sink};

/// The Lease's name in the run's namespace.
pub(crate) const NAME: &str = "microshard";
/// How long a renewal holds the run: three renewal periods, so one failed renewal is no loss.
pub(crate) const DURATION: Duration = Duration::from_secs(60);
/// How often the holder renews it.
pub(crate) const RENEW_EVERY: Duration = Duration::from_secs(20);

/// Who holds a run's lease: microshard's owner id (user and state directory) and this process.
pub(crate) fn holder() -> String {
    format!(
        "{}/pid-{}",
        crate::backend::labels::owner_id(),
        std::process::id()
    )
}

/// The Lease of a run labelled `labels`, held by `holder` from `now`.
pub(crate) fn lease(labels: &BTreeMap<String, String>, holder: &str, now: Timestamp) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(NAME.to_string()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.to_string()),
            lease_duration_seconds: Some(DURATION.as_secs() as i32),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        }),
    }
}

/// Creates the run's Lease in `ns`.
pub(crate) async fn create(
    client: &kube::Client,
    ns: &str,
    lease: &Lease,
) -> Result<(), KubeError> {
    Api::<Lease>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), lease)
        .await
        .map_err(failed(format!("creating Lease {NAME} in namespace {ns}")))?;
    Ok(())
}

/// Renews the Lease in `ns` as `holder` at `now` (a merge patch of the holder and renew time).
pub(crate) async fn renew(
    client: &kube::Client,
    ns: &str,
    holder: &str,
    now: Timestamp,
) -> Result<(), KubeError> {
    let patch = serde_json::json!({
        "spec": {"holderIdentity": holder, "renewTime": MicroTime(now)},
    });
    Api::<Lease>::namespaced(client.clone(), ns)
        .patch(NAME, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(failed(format!("renewing Lease {NAME} in namespace {ns}")))?;
    Ok(())
}

/// Whether the run of a namespace created at `created` with Lease `lease` is held by nobody at
/// `now`: its last renewal (or acquisition) is older than its duration; without a Lease, the
/// namespace is older than a lease lasts (a run that died between the two creations). A
/// namespace with no time on it is held: nothing says it is not.
pub(crate) fn expired(lease: Option<&Lease>, created: Option<&Time>, now: Timestamp) -> bool {
    let spec = lease.and_then(|l| l.spec.as_ref());
    let renewed = spec.and_then(|s| s.renew_time.as_ref().or(s.acquire_time.as_ref()));
    let (since, duration) = match (lease, renewed) {
        (Some(_), Some(t)) => (
            t.0,
            spec.and_then(|s| s.lease_duration_seconds)
                .map_or(DURATION.as_secs() as i64, i64::from),
        ),
        (Some(_), None) | (None, _) => match created {
            Some(t) => (t.0, DURATION.as_secs() as i64),
            None => return false,
        },
    };
    now.as_second() > since.as_second() + duration
}

/// Who renews a Lease, and how often ([`RENEW_EVERY`] but in tests).
pub(crate) struct Renewal {
    /// The API.
    pub client: kube::Client,
    /// The run's namespace.
    pub ns: String,
    /// The Lease's holder.
    pub holder: String,
    /// The period.
    pub every: Duration,
}

/// Renews the Lease of `r.ns` every `r.every` until `stop` is cancelled (teardown) or the
/// process ends; a failed renewal is said once to `events` (until one succeeds again) and tried
/// again next period.
pub(crate) fn keep_renewed(
    r: Renewal,
    stop: CancellationToken,
    events: Sink,
) -> tokio::task::JoinHandle<()> {
    let Renewal {
        client,
        ns,
        holder,
        every,
    } = r;
    tokio::spawn(async move {
        let mut warned = false;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
            match renew(&client, &ns, &holder, Timestamp::now()).await {
                Ok(()) => warned = false,
                Err(e) if !warned => {
                    warned = true;
                    events.event(Event::Warning(format!("microshard: {e}")));
                }
                Err(_) => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_lease_expires_its_duration_after_its_last_renewal() {
        let held = lease(&BTreeMap::new(), "me", at(1_000));
        assert!(
            !expired(Some(&held), None, at(1_060)),
            "still held at the limit"
        );
        assert!(expired(Some(&held), None, at(1_061)));
        let mut short = held.clone();
        if let Some(s) = short.spec.as_mut() {
            s.lease_duration_seconds = Some(10);
            s.renew_time = Some(MicroTime(at(2_000)));
        }
        assert!(!expired(Some(&short), None, at(2_010)), "renewed later");
        assert!(expired(Some(&short), None, at(2_011)));
    }

    #[test]
    fn without_a_lease_the_namespace_s_age_decides_and_no_time_means_held() {
        let created = Time(at(5_000));
        assert!(
            !expired(None, Some(&created), at(5_030)),
            "its lease may be on its way"
        );
        assert!(expired(None, Some(&created), at(5_061)));
        assert!(!expired(None, None, at(9_999)));
        let timeless = Lease::default();
        assert!(expired(Some(&timeless), Some(&created), at(5_061)));
        assert!(!expired(Some(&timeless), None, at(9_999)));
    }
}
