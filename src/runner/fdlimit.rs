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
    let want = needed(threads);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own; no other memory is touched.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Ok(()); // Unknown limit: let the run try.
    }
    check(want, limit.rlim_cur, limit.rlim_max, |new_soft| {
        let raised = libc::rlimit {
            rlim_cur: new_soft,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit only reads the struct we pass.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 }
    })
}

/// The decision, apart from the system calls (so it can be tested).
fn check(
    want: u64,
    soft: libc::rlim_t,
    hard: libc::rlim_t,
    raise: impl FnOnce(libc::rlim_t) -> bool,
) -> Result<(), String> {
    if soft == libc::RLIM_INFINITY || soft >= want {
        return Ok(());
    }
    if (hard == libc::RLIM_INFINITY || hard >= want) && raise(want) {
        return Ok(());
    }
    Err(format!(
        "property threadcount: {} clients need about {want} open files, but the limit is {soft} (hard {}); raise it with `ulimit -n {want}` or use fewer threads",
        want - RESERVED,
        if hard == libc::RLIM_INFINITY {
            "unlimited".to_string()
        } else {
            hard.to_string()
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enough_soft_limit_needs_nothing() {
        assert!(check(100, 1024, 4096, |_| panic!("must not raise")).is_ok());
    }

    #[test]
    fn raises_soft_limit_within_hard() {
        let mut asked = None;
        assert!(
            check(2000, 1024, 4096, |n| {
                asked = Some(n);
                true
            })
            .is_ok()
        );
        assert_eq!(asked, Some(2000));
    }

    #[test]
    fn refuses_beyond_hard_limit_naming_threadcount() {
        let err = check(needed(5000), 1024, 4096, |_| true).unwrap_err();
        assert!(
            err.starts_with("property threadcount: 5000 clients"),
            "{err}"
        );
        assert!(err.contains("ulimit -n 5064"), "{err}");
    }

    #[test]
    fn failed_raise_is_refused() {
        assert!(check(2000, 1024, 4096, |_| false).is_err());
    }

    #[test]
    fn this_process_can_run_a_small_run() {
        assert!(ensure(8).is_ok());
    }
}
