//! "Did you mean": the one rule every name check uses to suggest what a user most likely meant
//! (a property, a scenario, a running cluster).

/// The known name closest to `name`: the same but for case, else within two edits (Levenshtein,
/// case folded); `None` when nothing is that close.
pub(crate) fn closest<T>(
    name: &str,
    known: impl IntoIterator<Item = T>,
    name_of: impl for<'k> Fn(&'k T) -> &'k str,
) -> Option<T> {
    let lower = name.to_lowercase();
    known
        .into_iter()
        .map(|k| (strsim::levenshtein(&lower, &name_of(&k).to_lowercase()), k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    #[test]
    fn case_first_then_two_edits_then_nothing() {
        let known = ["single", "microshard-2", "S1"];
        assert_eq!(super::closest("s1", known, |k| *k), Some("S1"));
        assert_eq!(super::closest("singel", known, |k| *k), Some("single"));
        assert_eq!(super::closest("triple", known, |k| *k), None);
    }
}
