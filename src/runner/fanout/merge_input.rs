//! What `merge` takes: the result documents of clients started by hand, read and checked. It
//! adds the operations of clients that ran at the same time; documents whose timed windows do
//! not overlap would add up to a throughput no one measured, so they are refused.

use std::path::PathBuf;

use crate::measure::RunDocument;
use crate::runner::RunError;

/// Reads the result documents `files` name and checks they are parts of one run
/// ([`super::check_mergeable`]) that ran at the same time ([`check_overlap`]); each error names
/// the file at fault (bad input).
pub(crate) fn read(files: &[PathBuf]) -> Result<Vec<(String, RunDocument)>, RunError> {
    read_checked(files).map_err(RunError::bad_input)
}

/// [`read`], its refusal as the line that names the file.
fn read_checked(files: &[PathBuf]) -> Result<Vec<(String, RunDocument)>, String> {
    let mut docs: Vec<(String, RunDocument)> = Vec::new();
    for f in files {
        let name = f.display().to_string();
        let text = std::fs::read_to_string(f).map_err(|e| format!("{name}: {e}"))?;
        let doc: RunDocument = serde_json::from_str(&text)
            .map_err(|e| format!("{name}: not a microshard result document: {e}"))?;
        if doc.schema_version != crate::measure::SCHEMA_VERSION {
            return Err(format!(
                "{name}: schema_version {} (this microshard reads {})",
                doc.schema_version,
                crate::measure::SCHEMA_VERSION
            ));
        }
        docs.push((name, doc));
    }
    check_distinct(&docs)?;
    super::check_mergeable(&docs)?;
    check_overlap(&docs)?;
    Ok(docs)
}

/// Refuses a result given twice, under its own name or another (a copy): merging it with itself
/// would double its operations and throughput. A result's identity is its whole content: the
/// clients that really ran together never record the same window, host, operations and
/// latency histograms to the byte, while a copy of one result (re-formatted or not) does.
fn check_distinct(docs: &[(String, RunDocument)]) -> Result<(), String> {
    let identities: Vec<_> = (docs.iter())
        .map(|(_, d)| serde_json::to_value(d).ok())
        .collect();
    for (i, (name, _)) in docs.iter().enumerate() {
        if let Some(j) = identities[..i].iter().position(|e| *e == identities[i]) {
            let earlier = &docs[j].0;
            return Err(format!(
                "{name} is the same result as {earlier} (same run, window and measurements): \
                 merge adds different clients' results, each once"
            ));
        }
    }
    Ok(())
}

/// How much of the shorter of two windows the other must cover for a merge (a half).
pub(crate) const MIN_OVERLAP: f64 = 0.5;

/// A client's timed window, in seconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Window {
    start: f64,
    end: f64,
}

fn window(name: &str, doc: &RunDocument) -> Result<Window, String> {
    let at = |field: &str, text: &str| {
        chrono::DateTime::parse_from_rfc3339(text)
            .map(|t| t.timestamp_micros() as f64 / 1e6)
            .map_err(|e| format!("{name}: {field} {text:?} is not an RFC 3339 time: {e}"))
    };
    let start = at("started", &doc.started)?;
    let end = at("ended", &doc.ended)?.max(start);
    Ok(Window { start, end })
}

/// The fraction of the shorter window the two share (1 when one is empty and inside the other).
fn overlap(a: Window, b: Window) -> f64 {
    let shared = (a.end.min(b.end) - a.start.max(b.start)).max(0.0);
    let shorter = (a.end - a.start).min(b.end - b.start);
    if shorter <= 0.0 {
        return if shared >= 0.0 && a.start.max(b.start) <= a.end.min(b.end) {
            1.0
        } else {
            0.0
        };
    }
    shared / shorter
}

/// Refuses documents whose windows overlap the first one's by less than [`MIN_OVERLAP`] of the
/// shorter window, naming both files, the overlap and the gap between them.
pub(crate) fn check_overlap(docs: &[(String, RunDocument)]) -> Result<(), String> {
    let Some((first_name, first)) = docs.first() else {
        return Ok(());
    };
    let w0 = window(first_name, first)?;
    for (name, d) in docs.iter().skip(1) {
        let w = window(name, d)?;
        let shared = overlap(w0, w);
        if shared < MIN_OVERLAP {
            let gap = (w.start.max(w0.start) - w.end.min(w0.end)).max(0.0);
            return Err(format!(
                "{name} and {first_name} did not run at the same time: their windows overlap by {:.0} % \
                 of the shorter one ({gap:.1} s apart); merge adds clients that ran together \
                 (at least {:.0} % overlap) — start them at the same time, or use --clients N",
                shared * 100.0,
                MIN_OVERLAP * 100.0
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(started: &str, ended: &str) -> RunDocument {
        RunDocument {
            started: started.into(),
            ended: ended.into(),
            ..RunDocument::default()
        }
    }

    #[test]
    fn sequential_windows_are_refused_with_the_gap() {
        let docs = vec![
            (
                "a.json".to_string(),
                doc("2026-12-01T10:00:00Z", "2026-12-01T10:00:05Z"),
            ),
            (
                "b.json".to_string(),
                doc("2026-12-01T10:00:08Z", "2026-12-01T10:00:13Z"),
            ),
        ];
        let e = check_overlap(&docs).unwrap_err();
        assert!(
            e.contains("b.json and a.json did not run at the same time"),
            "{e}"
        );
        assert!(e.contains("overlap by 0 %"), "{e}");
        assert!(e.contains("3.0 s apart"), "{e}");
    }

    #[test]
    fn windows_that_share_most_of_their_time_merge() {
        let docs = vec![
            (
                "a.json".to_string(),
                doc("2026-12-01T10:00:00Z", "2026-12-01T10:00:05Z"),
            ),
            (
                "b.json".to_string(),
                doc("2026-12-01T10:00:00.200Z", "2026-12-01T10:00:05.100Z"),
            ),
        ];
        assert_eq!(check_overlap(&docs), Ok(()));
        // A quarter of the shorter window is not enough.
        let late = vec![
            docs[0].clone(),
            (
                "c.json".to_string(),
                doc("2026-12-01T10:00:03.75Z", "2026-12-01T10:00:08.75Z"),
            ),
        ];
        assert!(
            check_overlap(&late)
                .unwrap_err()
                .contains("overlap by 25 %")
        );
    }

    #[test]
    fn the_same_result_twice_is_refused_whatever_its_file_names() {
        let a = doc("2026-12-01T10:00:00Z", "2026-12-01T10:00:05Z");
        let mut b = a.clone();
        b.operations = 7;
        let twice = vec![
            ("a.json".to_string(), a.clone()),
            ("copy.json".to_string(), a.clone()),
        ];
        let e = check_distinct(&twice).unwrap_err();
        assert!(e.contains("copy.json is the same result as a.json"), "{e}");
        let distinct = vec![("a.json".to_string(), a), ("b.json".to_string(), b)];
        assert_eq!(check_distinct(&distinct), Ok(()));
    }
}
