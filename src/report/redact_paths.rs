//! `report --redact-paths`: a report to publish without this machine's details. The host's name,
//! the members' run directories, the server binaries' directory, the run directory and the home
//! directory are replaced by placeholders (`{host}`, `{member-dir}`, `{bin-dir}`, `{run-dir}`,
//! `{tmp}`, `~`) wherever a report names them, in any format.

use crate::experiment::model::{CellFile, ExperimentConfig};

/// What is replaced, longest first, by what.
#[derive(Debug, Default)]
pub(crate) struct Redaction {
    pairs: Vec<(String, &'static str)>,
    /// The host's name, replaced as a whole word only (a short name such as `vm` is also a part
    /// of words).
    host: Option<String>,
}

impl Redaction {
    /// The details of the experiment in `run_dir` that name this machine.
    pub(crate) fn of(
        run_dir: &std::path::Path,
        config: &ExperimentConfig,
        cells: &[CellFile],
    ) -> Self {
        let mut pairs: Vec<(String, &'static str)> = Vec::new();
        let mut add = |text: String, placeholder: &'static str| {
            if text.len() > 1 && !pairs.iter().any(|(t, _)| *t == text) {
                pairs.push((text, placeholder));
            }
        };
        for plan in cells.iter().filter_map(|c| c.topology.as_ref()) {
            add(plan.run_dir.display().to_string(), "{member-dir}");
        }
        if let Some(bin) = &config.command.servers.bin_dir {
            add(bin.display().to_string(), "{bin-dir}");
        }
        if let Ok(abs) = std::path::absolute(run_dir) {
            add(abs.display().to_string(), "{run-dir}");
        }
        add(std::env::temp_dir().display().to_string(), "{tmp}");
        if let Some(home) = std::env::var_os("HOME") {
            add(home.to_string_lossy().into_owned(), "~");
        }
        // Longest first, so a run directory under the home directory keeps its own name.
        pairs.sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
        let host = config.host.hostname.clone().filter(|h| !h.is_empty());
        Redaction { pairs, host }
    }

    /// `text` with every detail replaced.
    pub(crate) fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (detail, placeholder) in &self.pairs {
            out = out.replace(detail.as_str(), placeholder);
        }
        match &self.host {
            Some(host) => whole_words(&out, host, "{host}"),
            None => out,
        }
    }
}

/// `text` with each occurrence of `word` that is not part of a longer word (letters, digits, `-`,
/// `_` around it) replaced by `by`.
fn whole_words(text: &str, word: &str, by: &str) -> String {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || "-_".contains(c));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let (before, after) = (&rest[..at], &rest[at + word.len()..]);
        out.push_str(before);
        let whole = !part(before.chars().next_back()) && !part(after.chars().next());
        out.push_str(if whole { by } else { word });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{cell, config};

    #[test]
    fn host_name_and_paths_are_replaced_longest_first() {
        let mut cfg = config(true);
        cfg.host.hostname = Some("lab-box-7".into());
        cfg.command.servers.bin_dir = Some("/opt/mongo/bin".into());
        let c = cell("single", "S1", 1, 100.0);
        let r = Redaction::of(
            std::path::Path::new("/srv/results/2026-compare"),
            &cfg,
            &[c],
        );
        let text = "host lab-box-7 ran /opt/mongo/bin/mongod into /srv/results/2026-compare/cells";
        let mut short = config(true);
        short.host.hostname = Some("vm".into());
        let vm = Redaction::of(std::path::Path::new("/srv/r"), &short, &[]);
        assert_eq!(vm.apply("vm ran vmstat"), "{host} ran vmstat");
        assert_eq!(
            r.apply(text),
            "host {host} ran {bin-dir}/mongod into {run-dir}/cells"
        );
    }
}
