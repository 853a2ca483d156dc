//! What a run keeps going in this process (its lease renewal, its port-forward listeners),
//! found again by run id when the run is torn down, so nothing of it outlives its namespace.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

/// Each run's token; cancelling it stops everything the run started here.
fn runs() -> &'static Mutex<HashMap<String, CancellationToken>> {
    static RUNS: OnceLock<Mutex<HashMap<String, CancellationToken>>> = OnceLock::new();
    RUNS.get_or_init(Mutex::default)
}

/// The token that stops the background work of run `run` (a new one for a new run).
pub(crate) fn token(run: &str) -> CancellationToken {
    let mut runs = runs().lock().unwrap_or_else(|p| p.into_inner());
    runs.entry(run.to_string()).or_default().clone()
}

/// Stops everything run `run` started in this process (nothing when it started none here).
pub(crate) fn release(run: &str) {
    let taken = runs().lock().unwrap_or_else(|p| p.into_inner()).remove(run);
    if let Some(token) = taken {
        token.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releasing_a_run_stops_its_work_and_only_its_own() {
        let (a, b) = (token("held-a"), token("held-b"));
        assert!(
            !token("held-a").is_cancelled(),
            "the same run, the same token"
        );
        release("held-a");
        assert!(a.is_cancelled());
        assert!(!b.is_cancelled());
        assert!(
            !token("held-a").is_cancelled(),
            "a new run of that id starts afresh"
        );
        release("held-a");
        release("held-b");
        release("never-started");
        assert!(b.is_cancelled());
    }
}
