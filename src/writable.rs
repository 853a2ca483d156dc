//! Output paths proven before any work starts (`docs/reliability.md` §1): a probe file is
//! created and removed, so permissions, read-only mounts and full or vanished file systems are
//! found while nothing has been created. A failure is one [`crate::error::BadInput`] line naming
//! the flag and the path (exit status 2).

use std::path::Path;

use crate::error::bad_input;

/// Creates and removes a probe file in `dir`: the only proof that a write there will work
/// (permissions, read-only mounts, a full or vanished file system all show up here).
fn probe(dir: &Path) -> std::io::Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let path = dir.join(format!(
        ".microshard-probe-{}-{nanos:09}",
        std::process::id()
    ));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)
}

/// `Path::parent` of a bare name is `""`; the directory meant is the current one.
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Proves that files can be created in `dir`, or that `dir` can be created (probing its nearest
/// existing ancestor) when it does not exist yet. `flag` names the culprit in the message.
pub(crate) fn dir(flag: &str, dir: &Path) -> anyhow::Result<()> {
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(bad_input(format!(
                    "{flag} {}: {} is not a directory",
                    dir.display(),
                    at.display()
                )));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) && at != Path::new(".") =>
            {
                at = parent_of(at);
            }
            Err(e) => return Err(bad_input(format!("{flag} {}: {e}", dir.display()))),
        }
    }
    probe(at).map_err(|e| {
        bad_input(format!(
            "{flag} {}: cannot write in {}: {e}",
            dir.display(),
            at.display()
        ))
    })
}

/// Proves that `file` can be written: not a directory, in a directory that exists and takes new
/// files, and writable itself when it already exists (opened for appending, so nothing is lost).
pub(crate) fn file(flag: &str, file: &Path) -> anyhow::Result<()> {
    let culprit = |why: String| bad_input(format!("{flag} {}: {why}", file.display()));
    match std::fs::metadata(file) {
        Ok(m) if m.is_dir() => return Err(culprit("is a directory".into())),
        Ok(_) => {
            return std::fs::OpenOptions::new()
                .append(true)
                .open(file)
                .map(drop)
                .map_err(|e| culprit(format!("cannot write: {e}")));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(culprit(e.to_string())),
    }
    let dir = parent_of(file);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(culprit(format!("{} is not a directory", dir.display()))),
        Err(e) => return Err(culprit(format!("{}: {e}", dir.display()))),
    }
    probe(dir).map_err(|e| culprit(format!("cannot create files in {}: {e}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_to_be_created_is_probed_in_its_existing_ancestor() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/c");
        dir("--out", &deep).unwrap();
        assert!(
            !tmp.path().join("a").exists(),
            "the check must create nothing"
        );
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_file_in_the_way_is_refused_naming_the_flag_and_path() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = tmp.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        let e = dir("--out", &plain.join("results")).unwrap_err();
        assert!(crate::exit::is_bad_input(&e));
        let msg = format!("{e:#}");
        assert!(
            msg.contains("--out") && msg.contains("not a directory"),
            "{msg}"
        );

        let e = file("--json", tmp.path()).unwrap_err();
        assert!(format!("{e:#}").contains("is a directory"), "{e:#}");
        let e = file("--json", &plain.join("x.json")).unwrap_err();
        assert!(format!("{e:#}").contains("--json"), "{e:#}");
        file("--json", &plain).unwrap();
        assert_eq!(
            std::fs::read_to_string(&plain).unwrap(),
            "x",
            "an existing file is kept"
        );
        file("--json", &tmp.path().join("new.json")).unwrap();
        assert!(!tmp.path().join("new.json").exists());
    }

    #[test]
    fn a_read_only_file_system_is_refused() {
        // /proc refuses new files even for root.
        let e = file("--json", Path::new("/proc/microshard-result.json")).unwrap_err();
        assert!(format!("{e:#}").contains("/proc"), "{e:#}");
        assert!(dir("--out", Path::new("/proc/microshard-results")).is_err());
    }
}
