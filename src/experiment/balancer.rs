//! The balancer watched, not trusted: on a sharded deployment microshard stops the balancer once
//! at bring-up (unless `keep_balancer`), but the clusters people run on Kubernetes switch it back
//! on (Percona's operator does every few seconds unless `spec.sharding.balancer.enabled:
//! false`). So every cell reads the balancer's mode and the chunks of its table per shard before
//! and after it; a cell during which chunks moved, or with the balancer on, measured migrations
//! too and is degraded, naming the setting that keeps the balancer off
//! (`docs/mongodb-versions.md`, "The balancer").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The balancer's mode and the table's chunks per shard, as one look found them; `None` where
/// the mongos did not say.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BalancerLook {
    /// `balancerStatus.mode` (`full`, `off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Chunks of the cell's table per shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<BTreeMap<String, u64>>,
}

/// Both looks of a cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BalancerWatch {
    /// Before the cell.
    pub before: BalancerLook,
    /// After it.
    pub after: BalancerLook,
}

/// Reads the balancer's mode and `ycsb.<table>`'s chunks per shard on the mongos at `entry_uri`.
pub(crate) async fn look(entry_uri: &str, table: &str) -> BalancerLook {
    let (mode, chunks) = futures::join!(
        crate::cluster::balancer_mode(entry_uri),
        crate::cluster::chunks_per_shard_of(entry_uri, table)
    );
    BalancerLook {
        mode: mode.ok(),
        chunks: chunks.ok(),
    }
}

/// What the operator setting that keeps the balancer off is called.
const OPERATOR_SETTING: &str = "on Kubernetes, Percona's operator re-enables it unless spec.sharding.balancer.enabled: false (MongoDB's: stop it in the cluster resource), elsewhere sh.stopBalancer()";

/// Why a cell measured migrations too, if it did: its chunks moved between the shards, or the
/// balancer was on at either end of it though microshard had stopped it.
pub(crate) fn degraded(watch: &BalancerWatch) -> Option<String> {
    let (b, a) = (&watch.before, &watch.after);
    if let (Some(before), Some(after)) = (&b.chunks, &a.chunks)
        && before != after
    {
        return Some(format!(
            "chunks moved during the cell ({}): the figures include migrations; {OPERATOR_SETTING}",
            moves(before, after)
        ));
    }
    let on = |l: &BalancerLook| l.mode.as_deref().is_some_and(|m| m != "off");
    if on(b) || on(a) {
        let when = if on(b) { "at its start" } else { "by its end" };
        return Some(format!(
            "the balancer was back on {when} (microshard had stopped it): chunks may migrate during a cell; {OPERATOR_SETTING}"
        ));
    }
    None
}

/// `sh0 4 → 3, sh1 4 → 5`: the shards whose chunk count changed.
fn moves(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> String {
    let shards: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    shards
        .into_iter()
        .filter_map(|s| {
            let (b, a) = (before.get(s).copied(), after.get(s).copied());
            (b != a).then(|| format!("{s} {} → {}", b.unwrap_or(0), a.unwrap_or(0)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(mode: &str, chunks: &[(&str, u64)]) -> BalancerLook {
        BalancerLook {
            mode: Some(mode.into()),
            chunks: Some(chunks.iter().map(|(s, n)| (s.to_string(), *n)).collect()),
        }
    }

    #[test]
    fn a_cell_is_degraded_when_chunks_moved_or_the_balancer_came_back() {
        let quiet = BalancerWatch {
            before: look("off", &[("sh0", 4), ("sh1", 4)]),
            after: look("off", &[("sh0", 4), ("sh1", 4)]),
        };
        assert_eq!(degraded(&quiet), None);
        let back = BalancerWatch {
            after: look("full", &[("sh0", 4), ("sh1", 4)]),
            ..quiet.clone()
        };
        let why = degraded(&back).unwrap();
        assert!(
            why.starts_with("the balancer was back on by its end"),
            "{why}"
        );
        assert!(
            why.contains("spec.sharding.balancer.enabled: false"),
            "{why}"
        );
        let moved = BalancerWatch {
            after: look("off", &[("sh0", 3), ("sh1", 5)]),
            ..quiet.clone()
        };
        let why = degraded(&moved).unwrap();
        assert!(
            why.starts_with("chunks moved during the cell (sh0 4 → 3, sh1 4 → 5)"),
            "{why}"
        );
        // A look that failed says nothing either way.
        let unknown = BalancerWatch::default();
        assert_eq!(degraded(&unknown), None);
    }
}
