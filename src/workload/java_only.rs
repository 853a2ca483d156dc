//! The properties microshard declares but does not read as YCSB does: those only the Java client
//! uses are accepted with a one-line note that they have no effect here, and those naming a
//! choice microshard makes elsewhere (the workload class, the phase) are checked against it.
//! A test walks every declaration in [`super::prop`] and fails on one that nothing reads and
//! nothing notes, so no property is ever accepted and silently ignored.

use super::prop;
use super::properties::Properties;

/// Properties accepted with a note, and why they have no effect here (`docs/engine.md` lists them).
pub(crate) const NO_EFFECT_HERE: &[(&str, &str)] = &[
    (
        prop::DB.name,
        "microshard always runs its MongoDB binding (`microshard ycsb` takes only mongodb and mongodb-async)",
    ),
    (
        prop::MEASUREMENT_TRACKJVM.name,
        "there is no JVM whose threads, memory and load to report",
    ),
];

/// The workload classes microshard implements (YCSB's current and pre-0.14 package names).
const CORE_WORKLOAD: [&str; 2] = [
    "site.ycsb.workloads.CoreWorkload",
    "com.yahoo.ycsb.workloads.CoreWorkload",
];

/// The notes to say for the Java-only properties that are set, or the one line refusing a
/// `workload` class or a `dotransactions` value this phase cannot honour.
pub(crate) fn notes(props: &Properties, load: bool) -> Result<Vec<String>, String> {
    if let Some(class) = props.get(prop::WORKLOAD.name)
        && !CORE_WORKLOAD.contains(&class)
    {
        return Err(format!(
            "property {}={class}: only site.ycsb.workloads.CoreWorkload is implemented",
            prop::WORKLOAD.name
        ));
    }
    if let Some(v) = props.get(prop::DOTRANSACTIONS.name) {
        let transactions = v.eq_ignore_ascii_case("true");
        if transactions == load {
            let phase = if load { "load" } else { "run" };
            return Err(format!(
                "property {}={v}: contradicts `{phase}` (here the subcommand chooses the phase)",
                prop::DOTRANSACTIONS.name
            ));
        }
    }
    Ok(NO_EFFECT_HERE
        .iter()
        .filter_map(|(name, why)| {
            props
                .get(name)
                .map(|v| format!("note: property {name}={v} has no effect here: {why}"))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Properties {
        Properties::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn java_only_properties_get_a_note_and_wrong_choices_a_refusal() {
        let notes = notes(
            &props(&[("measurement.trackjvm", "true"), ("db", "x.Db")]),
            false,
        )
        .unwrap();
        assert_eq!(notes.len(), 2);
        assert!(
            notes[0].starts_with("note: property db=x.Db has no effect here: "),
            "{notes:?}"
        );
        assert!(
            notes[1].starts_with("note: property measurement.trackjvm=true"),
            "{notes:?}"
        );
        assert!(super::notes(&props(&[]), true).unwrap().is_empty());
        let ok = props(&[
            ("workload", "site.ycsb.workloads.CoreWorkload"),
            ("dotransactions", "true"),
        ]);
        assert!(super::notes(&ok, false).is_ok());
        let e = super::notes(&ok, true).unwrap_err();
        assert!(
            e.starts_with("property dotransactions=true: contradicts `load`"),
            "{e}"
        );
        let e = super::notes(
            &props(&[("workload", "site.ycsb.workloads.TimeSeriesWorkload")]),
            false,
        )
        .unwrap_err();
        assert!(
            e.starts_with("property workload=site.ycsb.workloads.TimeSeriesWorkload:"),
            "{e}"
        );
    }

    /// Every declared property is read by code outside `prop.rs` (its constant is named there)
    /// or is in [`NO_EFFECT_HERE`]; a declaration nothing reads and nothing notes fails here.
    #[test]
    fn no_declared_property_is_silently_ignored() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut sources = String::new();
        collect_sources(&root, &mut sources);
        assert!(
            sources.len() > 100_000,
            "the sources were not found under {}",
            root.display()
        );
        let mut silent = Vec::new();
        for (konst, name) in prop::DECLARED {
            let noted = NO_EFFECT_HERE.iter().any(|(n, _)| n == name);
            // Code names a declaration as `prop::NAME` (the module is imported, never its items).
            let read = uses_word(&sources, &format!("prop::{konst}"));
            assert!(!(noted && read), "{name}: both read and noted");
            if !noted && !read {
                silent.push(*name);
            }
        }
        assert!(
            silent.is_empty(),
            "declared but neither read nor noted: {silent:?}"
        );
        // The check itself can fail: a constant nobody names is found.
        assert!(!uses_word(&sources, "prop::NO_SUCH_PROPERTY_CONSTANT_X"));
        assert!(!uses_word("prop::TARGETS", "prop::TARGET"));
    }

    /// The text of every `.rs` file under `dir` except `prop.rs`.
    fn collect_sources(dir: &std::path::Path, out: &mut String) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                collect_sources(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs")
                && !path.ends_with("props/prop.rs")
            {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                out.push_str(&without_lists(&path, &text));
                out.push('\n');
            }
        }
    }

    /// This file without [`NO_EFFECT_HERE`] and its tests, which name constants without reading them.
    fn without_lists(path: &std::path::Path, text: &str) -> String {
        if !path.ends_with("workload/java_only.rs") {
            return text.to_string();
        }
        let list = text.find("pub(crate) const NO_EFFECT_HERE").unwrap_or(0);
        let list_end = text[list..].find("\n];").map_or(list, |e| list + e);
        let tests = text.find("#[cfg(test)]").unwrap_or(text.len());
        format!("{}{}", &text[..list], &text[list_end..tests])
    }

    /// Whether `word` occurs in `text` as a whole identifier.
    fn uses_word(text: &str, word: &str) -> bool {
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        text.match_indices(word).any(|(i, _)| {
            let before = text[..i].chars().next_back().is_none_or(|c| !ident(c));
            let after = text[i + word.len()..]
                .chars()
                .next()
                .is_none_or(|c| !ident(c));
            before && after
        })
    }
}
