//! Each member container's CPU time, from the Engine API's stats: a container's processes are
//! in its own PID namespace, behind `docker-proxy` on the published port, so `/proc` on this
//! machine cannot tell them (and cannot see them at all on a remote engine). The engine's
//! cgroup account (`cpu_stats.cpu_usage.total_usage`, cumulative nanoseconds) covers every
//! process and thread of the container, as `/proc` does for a local member.

use std::collections::BTreeMap;
use std::time::Duration;

use bollard::Docker;
use bollard::models::ContainerStatsResponse;
use bollard::query_parameters::StatsOptions;
use futures::StreamExt;

use super::{DockerError, connect, one_line};
use crate::backend::RunningMember;

/// How long one container's stats may take: a cell's start must not wait on a stuck engine,
/// and a member not read is named as missing rather than holding the run.
const STATS_TIMEOUT: Duration = Duration::from_secs(5);

/// The cumulative CPU nanoseconds a stats answer reports for the whole container; `None`
/// when the engine leaves it out (a Windows container, an engine without cgroup accounting).
pub(crate) fn total_usage_ns(stats: &ContainerStatsResponse) -> Option<u64> {
    stats.cpu_stats.as_ref()?.cpu_usage.as_ref()?.total_usage
}

/// One container's cumulative CPU nanoseconds: a single one-shot stats answer (no stream, no
/// second sample the engine would wait a second for).
async fn container_cpu_ns(docker: &Docker, container: &str) -> Result<u64, DockerError> {
    let options = StatsOptions {
        stream: false,
        one_shot: true,
    };
    let mut answers = docker.stats(container, Some(options));
    let first = tokio::time::timeout(STATS_TIMEOUT, answers.next())
        .await
        .map_err(|_| DockerError::Api(format!("stats of {container}: no answer")))?;
    let stats = first
        .ok_or_else(|| DockerError::Api(format!("stats of {container}: empty answer")))?
        .map_err(|e| DockerError::Api(format!("stats of {container}: {}", one_line(e))))?;
    total_usage_ns(&stats)
        .ok_or_else(|| DockerError::Api(format!("stats of {container}: no cpu_usage")))
}

/// The cumulative CPU nanoseconds of every member container that could be read, by member
/// name; one engine connection per endpoint. A member left out (engine unreachable, container
/// gone, no CPU account) is one the caller names as missing.
pub(crate) async fn members_cpu_ns(members: &[RunningMember]) -> BTreeMap<String, u64> {
    let mut by_endpoint: BTreeMap<Option<&str>, Vec<(&str, &str)>> = BTreeMap::new();
    for m in members {
        if let crate::backend::Handle::Container {
            container,
            endpoint,
        } = &m.handle
        {
            let list = by_endpoint.entry(endpoint.as_deref()).or_default();
            list.push((m.name.as_str(), container.as_str()));
        }
    }
    let mut found = BTreeMap::new();
    for (endpoint, list) in by_endpoint {
        let Ok(docker) = connect(endpoint).await else {
            continue;
        };
        let reads = list.iter().map(|(name, container)| {
            let docker = &docker;
            async move { (*name, container_cpu_ns(docker, container).await) }
        });
        for (name, read) in futures::future::join_all(reads).await {
            if let Ok(ns) = read {
                found.insert(name.to_string(), ns);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_total_is_read_from_a_stats_answer_and_absent_when_not_reported() {
        let answer: ContainerStatsResponse = serde_json::from_str(
            r#"{"id":"abc","name":"/t-sh0","cpu_stats":{"cpu_usage":{"total_usage":123456789,
                "usage_in_kernelmode":1000,"usage_in_usermode":2000},"online_cpus":2},
                "precpu_stats":{"cpu_usage":{"total_usage":0}}}"#,
        )
        .expect("a stats answer parses");
        assert_eq!(total_usage_ns(&answer), Some(123_456_789));
        let bare: ContainerStatsResponse =
            serde_json::from_str(r#"{"id":"abc","cpu_stats":{}}"#).expect("parses");
        assert_eq!(total_usage_ns(&bare), None);
    }
}
