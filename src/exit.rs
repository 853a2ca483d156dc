//! The exit status a failed command ends with (`docs/result-schema.md`, "Exit status"), read from
//! what the error is, never from its words: 2 when the user's input is wrong
//! ([`crate::error::BadInput`], or an engine's typed error whose `is_bad_input()` says so), 3 when
//! the run finished but must not be published ([`crate::error::NotValid`]) or Ctrl-C ended it
//! ([`crate::error::Interrupted`], or an engine's error saying so), 1 for everything else.
//!
//! It sits above the engines, whose errors it knows, so that `error` below them knows none.

use crate::backend::BackendError;
use crate::cluster::ClusterError;
use crate::error::{BadInput, Interrupted, NotValid};
use crate::runner::RunError;

/// True when the error (or anything it wraps) is the user's fault.
pub(crate) fn is_bad_input(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.is::<BadInput>()
            || cause.downcast_ref().is_some_and(RunError::is_bad_input)
            || cause.downcast_ref().is_some_and(BackendError::is_bad_input)
            || cause.downcast_ref().is_some_and(ClusterError::is_bad_input)
    })
}

/// True when Ctrl-C ended the command (or a step it waited for).
pub(crate) fn is_interrupted(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.is::<Interrupted>()
            || cause.downcast_ref().is_some_and(RunError::is_interrupted)
            || cause
                .downcast_ref()
                .is_some_and(BackendError::is_interrupted)
    })
}

/// The exit status for an error: 2 for bad input, 3 for a finished run whose result is not
/// valid or a run cut short by Ctrl-C, 1 for everything else.
pub(crate) fn status(err: &anyhow::Error) -> u8 {
    if is_bad_input(err) {
        2
    } else if is_interrupted(err) || err.chain().any(|cause| cause.is::<NotValid>()) {
        3
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{bad_input, interrupted};

    #[test]
    fn bad_input_survives_context() {
        let err = bad_input("workloads/S9: no such file").context("loading properties");
        assert_eq!(status(&err), 2);
        assert_eq!(
            format!("{err:#}"),
            "loading properties: workloads/S9: no such file"
        );
    }

    #[test]
    fn an_interrupted_run_exits_three_and_says_so() {
        let err = interrupted("2 cell(s) measured").context("compare");
        assert_eq!(status(&err), 3);
        assert_eq!(
            format!("{err:#}"),
            "compare: interrupted: 2 cell(s) measured"
        );
    }

    #[test]
    fn other_errors_exit_one() {
        let err = anyhow::anyhow!("server went away");
        assert_eq!(status(&err), 1);
    }

    #[test]
    fn an_engine_error_keeps_its_kind_and_its_words_through_context() {
        let run = anyhow::Error::new(RunError::bad_input("property threadcount=0: at least 1"))
            .context("scenario S1");
        assert_eq!(status(&run), 2);
        assert_eq!(
            format!("{run:#}"),
            "scenario S1: property threadcount=0: at least 1"
        );
        let up = anyhow::Error::new(BackendError::from(Interrupted("during bring-up".into())));
        assert_eq!(status(&up), 3);
        assert!(is_interrupted(&up));
        assert_eq!(format!("{up:#}"), "interrupted: during bring-up");
        let failed = RunError::Context {
            context: "cannot remove container c0".into(),
            source: Box::new(RunError::Clients("no client finished".into())),
        };
        let failed = anyhow::Error::new(failed);
        assert_eq!(status(&failed), 1);
        assert_eq!(
            format!("{failed:#}"),
            "cannot remove container c0: no client finished"
        );
    }

    #[test]
    fn a_bring_up_failure_is_bad_input_when_the_user_gave_its_cause() {
        let refused = ClusterError::Exited {
            member: "single (localhost:27017)".into(),
            line: "Error parsing command line: unrecognised option '--bogus'".into(),
            log: "/tmp/x/mongod.log".into(),
            user_flag: Some("--bogus".into()),
        };
        let up = BackendError::from_assembly(refused);
        assert!(up.is_bad_input());
        assert!(
            up.to_string()
                .ends_with("; --bogus comes from the topology's mongod_args or --mongod-arg"),
            "{up}"
        );
        // A member's start failure comes back as the backend's own error, with its kind.
        let port = BackendError::BadInput("port 27017 (for single) is already in use".into());
        let start = ClusterError::Start(Box::new(port));
        let up = anyhow::Error::new(BackendError::from_assembly(start));
        assert_eq!(status(&up), 2);
        assert_eq!(
            format!("{up:#}"),
            "port 27017 (for single) is already in use"
        );
    }
}
