//! Ctrl-C and SIGTERM: one cancellation token that every long-running piece watches,
//! so that an interrupted run stops measuring, writes what it finished and tears down what it started.

use tokio_util::sync::CancellationToken;

/// Installs SIGINT/SIGTERM handlers (once per process) and returns a token cancelled on either.
///
/// Must be called from inside a tokio runtime. A second signal while teardown is running
/// is ignored by the handler; teardown code bounds its own waits instead.
pub(crate) fn install() -> CancellationToken {
    use std::sync::OnceLock;
    static TOKEN: OnceLock<CancellationToken> = OnceLock::new();
    TOKEN
        .get_or_init(|| {
            use tokio::signal::unix::{SignalKind, signal};
            let token = CancellationToken::new();
            let trigger = token.clone();
            // Registered here, not in the task: a signal that comes before the task first runs
            // is caught, not the default action's death.
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return token;
            };
            tokio::spawn(async move {
                tokio::select! {
                    _ = int.recv() => {},
                    _ = term.recv() => {},
                }
                // Through `output`: a closed stderr must not panic this task before it cancels.
                crate::output::eprintln("microshard: interrupted, stopping and cleaning up");
                trigger.cancel();
            });
            token
        })
        .clone()
}
