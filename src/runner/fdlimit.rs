//! File descriptors: every client may hold one connection per server it talks to, so a run with
//! many threads needs a descriptor limit to match. Raise the soft limit when the hard limit allows,
//! and refuse with a clear message when it does not (rather than failing half-way with EMFILE).

/// Descriptors reserved beyond one connection per client: the driver's monitors, stdio, log and
/// result files.
const RESERVED: u64 = 64;

/// Descriptors a run with `threads` clients needs.
pub(crate) fn needed(threads: usize) -> u64 {
    threads as u64 + RESERVED
}

/// Makes sure the process may open `needed(threads)` descriptors, raising the soft limit up to the
/// hard limit if necessary. The error names `threadcount` and says how to raise the limit.
pub(crate) fn ensure(threads: usize) -> Result<(), String> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    check(needed(threads), limit.current, limit.maximum, |soft| {
        let raised = rustix::process::Rlimit {
            current: Some(soft),
            ..limit
        };
        setrlimit(Resource::Nofile, raised).is_ok()
    })
}

/// The decision, apart from the system calls (so it can be tested); `None` is unlimited.
fn check(
    want: u64,
    soft: Option<u64>,
    hard: Option<u64>,
    raise: impl FnOnce(u64) -> bool,
) -> Result<(), String> {
    let enough = |limit: Option<u64>| limit.is_none_or(|l| l >= want);
    if enough(soft) || (enough(hard) && raise(want)) {
        return Ok(());
    }
    Err(format!(
        "property threadcount: {} clients need about {want} open files, but the limit is {} (hard {}); raise it with `ulimit -n {want}` or use fewer threads",
        want - RESERVED,
        soft.unwrap_or_default(),
        hard.map_or("unlimited".to_string(), |h| h.to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enough_soft_limit_needs_nothing() {
        assert!(check(100, Some(1024), Some(4096), |_| panic!("must not raise")).is_ok());
    }

    #[test]
    fn raises_soft_limit_within_hard() {
        let mut asked = None;
        assert!(
            check(2000, Some(1024), Some(4096), |n| {
                asked = Some(n);
                true
            })
            .is_ok()
        );
        assert_eq!(asked, Some(2000));
    }

    #[test]
    fn refuses_beyond_hard_limit_naming_threadcount() {
        let err = check(needed(5000), Some(1024), Some(4096), |_| true).unwrap_err();
        assert!(
            err.starts_with("property threadcount: 5000 clients"),
            "{err}"
        );
        assert!(err.contains("ulimit -n 5064"), "{err}");
    }

    #[test]
    fn failed_raise_is_refused() {
        assert!(check(2000, Some(1024), Some(4096), |_| false).is_err());
    }

    #[test]
    fn this_process_can_run_a_small_run() {
        assert!(ensure(8).is_ok());
    }
}
