//! The runner's one output sink: every line it says (status lines, live findings, notes) goes
//! through a [`Notify`] the caller chooses — stderr from the CLI, the progress display in
//! experiments — so the engine itself never prints (`docs/architecture.md`).

use std::sync::Arc;

/// Where the runner's live messages go (stderr from the CLI, the progress display in experiments).
#[derive(Clone)]
pub struct Notify(Arc<dyn Fn(&str) + Send + Sync>);

impl Notify {
    /// A sink calling `f` with each line.
    pub(crate) fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Notify {
        Notify(Arc::new(f))
    }

    /// Lines to stderr.
    pub(crate) fn stderr() -> Notify {
        Notify::new(crate::output::eprintln)
    }

    /// Says one line.
    pub(crate) fn say(&self, line: &str) {
        (self.0)(line)
    }
}

impl std::fmt::Debug for Notify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notify")
    }
}
