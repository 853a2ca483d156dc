//! Server flags that MongoDB removed in a given version: refused before anything starts, in one
//! place for both spellings (`mongod_args` in a topology file and `--mongod-arg` on the command
//! line), so a removed flag is named with the version instead of surfacing as a start-up failure
//! (docs/mongodb-versions.md, "Removed flags").

/// One flag the chosen server version no longer accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag} was removed in MongoDB {removed_in} ({why}); the chosen version is {version}")]
pub(crate) struct RemovedFlag {
    /// The flag as given (`--nojournal`, `--enableMajorityReadConcern=false`).
    pub flag: String,
    /// The first version that refuses it (`6.1`).
    pub removed_in: String,
    /// What replaced it or why it went.
    pub why: &'static str,
    /// The version it was checked against (`7.0`, `8.0.4`).
    pub version: String,
}

/// `(flags, refused from (major, minor), refused only with these values (empty = any), why)`.
type Removal = (
    &'static [&'static str],
    (u32, u32),
    &'static [&'static str],
    &'static str,
);

const REMOVED: &[Removal] = &[
    (
        &["--nojournal", "--journal"],
        (6, 1),
        &[],
        "journaling is always on from 6.1",
    ),
    (
        &["--enableMajorityReadConcern"],
        (5, 0),
        &["false", "0"],
        "majority read concern cannot be disabled from 5.0",
    ),
    (
        &["--noIndexBuildRetry"],
        (4, 4),
        &[],
        "index builds resume on their own from 4.4",
    ),
    (
        &["--storageEngine"],
        (4, 2),
        &["mmapv1"],
        "MMAPv1 was removed in 4.2",
    ),
    (&["--smallfiles"], (4, 2), &[], "an MMAPv1 option"),
    (
        &["--master", "--slave"],
        (4, 0),
        &[],
        "master-slave replication was removed",
    ),
    (
        &["--rest", "--httpinterface"],
        (3, 6),
        &[],
        "the HTTP interface was removed",
    ),
];

/// Why a server of `version` cannot run on an x86-64 CPU whose `/proc/cpuinfo` is `cpuinfo`:
/// MongoDB 5.0+ is built for AVX, and without it mongod dies with an illegal instruction (the
/// official image only warns). `None` when it can run (or it cannot be told).
pub(crate) fn missing_avx(version: Option<&str>, arch: &str, cpuinfo: &str) -> Option<String> {
    let v = version_of(version?)?;
    if v < (5, 0) || arch != "x86_64" {
        return None;
    }
    let flags = cpuinfo.lines().find(|l| l.starts_with("flags"))?;
    let has_avx = flags
        .split_whitespace()
        .any(|f| f == "avx" || f.starts_with("avx2"));
    (!has_avx).then(|| {
        format!(
            "MongoDB {}.{} needs a CPU with AVX and this machine's CPU has none (mongod would die with an illegal instruction); use 4.4 or another machine",
            v.0, v.1
        )
    })
}

/// The note to show for a version whose official image is end of life (4.4, 5.0, 6.0: removed
/// from docker-library in December 2025, so the tags get no more rebuilds).
pub(crate) fn end_of_life(version: Option<&str>) -> Option<String> {
    let v = version_of(version?)?;
    (v < (7, 0)).then(|| {
        format!(
            "warning: MongoDB {}.{} is end of life; its official image gets no more rebuilds (docs/mongodb-versions.md)",
            v.0, v.1
        )
    })
}

/// Parses `major.minor` from a version (`7.0`, `8.0.4`, `db version v8.0.4`, `mongo:6.0`).
pub(crate) fn version_of(text: &str) -> Option<(u32, u32)> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let mut parts = text[start..].split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The server version a topology asks for: its `version`, or the tag of an image called
/// `mongo`/`mongodb/...` (`mongo:6.0` → `6.0`); `None` when neither says (a custom image, `latest`).
pub(crate) fn wanted_version(version: Option<&str>, image: &str) -> Option<String> {
    if let Some(v) = version {
        return Some(v.to_string());
    }
    let (name, tag) = image.rsplit_once(':')?;
    let official = name == "mongo" || name.ends_with("/mongo") || name.contains("mongodb");
    (official && version_of(tag).is_some() && tag.starts_with(|c: char| c.is_ascii_digit()))
        .then(|| tag.to_string())
}

/// Refuses any flag in `args` that MongoDB `version` no longer accepts. `version` may be `7.0`,
/// `8.0.4` or a `mongod --version` line; an unparsable or absent version checks nothing. This is
/// the one check behind `mongod_args` (topology files) and `--mongod-arg` (command line).
pub(crate) fn check_mongod_args(args: &[String], version: Option<&str>) -> Result<(), RemovedFlag> {
    let Some((text, v)) = version.and_then(|t| Some((t, version_of(t)?))) else {
        return Ok(());
    };
    for (i, arg) in args.iter().enumerate() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, val)) => (f, Some(val.to_string())),
            None => (arg.as_str(), None),
        };
        for (removed, since, values, why) in REMOVED {
            if !removed.contains(&flag) || v < *since {
                continue;
            }
            let value = inline
                .clone()
                .or_else(|| args.get(i + 1).filter(|n| !n.starts_with("--")).cloned());
            let hit = values.is_empty()
                || value
                    .as_deref()
                    .is_some_and(|x| values.iter().any(|w| w.eq_ignore_ascii_case(x)));
            if hit {
                let shown = match (&inline, values.is_empty(), &value) {
                    (None, false, Some(val)) => format!("{arg} {val}"),
                    _ => arg.clone(),
                };
                return Err(RemovedFlag {
                    flag: shown,
                    removed_in: format!("{}.{}", since.0, since.1),
                    why,
                    version: text.trim().to_string(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn nojournal_is_refused_from_6_1_only() {
        assert!(check_mongod_args(&args("--nojournal"), Some("6.0")).is_ok());
        let e = check_mongod_args(&args("--quiet --nojournal"), Some("7.0")).unwrap_err();
        assert_eq!(e.flag, "--nojournal");
        assert_eq!(e.removed_in, "6.1");
        let shown = e.to_string();
        assert!(
            shown.contains("--nojournal") && shown.contains("7.0"),
            "{shown}"
        );
        assert!(check_mongod_args(&args("--nojournal"), Some("db version v8.0.4")).is_err());
    }

    #[test]
    fn majority_read_concern_false_is_refused_from_5_0_in_both_spellings() {
        assert!(check_mongod_args(&args("--enableMajorityReadConcern false"), Some("4.4")).is_ok());
        let e =
            check_mongod_args(&args("--enableMajorityReadConcern false"), Some("5.0")).unwrap_err();
        assert_eq!(e.flag, "--enableMajorityReadConcern false");
        assert_eq!(e.removed_in, "5.0");
        assert!(check_mongod_args(&args("--enableMajorityReadConcern=0"), Some("8.0")).is_err());
        // `true` stays accepted.
        assert!(check_mongod_args(&args("--enableMajorityReadConcern true"), Some("8.0")).is_ok());
        assert!(check_mongod_args(&args("--enableMajorityReadConcern"), Some("8.0")).is_ok());
    }

    #[test]
    fn unknown_versions_check_nothing_and_values_are_not_flags() {
        assert!(check_mongod_args(&args("--nojournal"), None).is_ok());
        assert!(check_mongod_args(&args("--nojournal"), Some("latest")).is_ok());
        assert!(check_mongod_args(&args("--storageEngine wiredTiger"), Some("7.0")).is_ok());
        assert!(check_mongod_args(&args("--storageEngine mmapv1"), Some("7.0")).is_err());
    }

    #[test]
    fn avx_and_end_of_life() {
        let no_avx = "processor : 0\nflags : fpu sse sse2 ssse3 sse4_1 sse4_2\n";
        let avx = "processor : 0\nflags : fpu sse sse2 avx avx2\n";
        let e = missing_avx(Some("7.0"), "x86_64", no_avx).unwrap();
        assert!(e.contains("MongoDB 7.0 needs a CPU with AVX"), "{e}");
        assert!(missing_avx(Some("4.4"), "x86_64", no_avx).is_none());
        assert!(missing_avx(Some("8.0"), "x86_64", avx).is_none());
        assert!(missing_avx(Some("8.0"), "aarch64", no_avx).is_none());
        assert!(missing_avx(None, "x86_64", no_avx).is_none());
        assert!(
            end_of_life(Some("6.0"))
                .unwrap()
                .contains("6.0 is end of life")
        );
        assert!(end_of_life(Some("7.0")).is_none());
        assert!(end_of_life(None).is_none());
    }

    #[test]
    fn wanted_version_from_version_or_official_image_tag() {
        assert_eq!(wanted_version(Some("6.0"), "x"), Some("6.0".into()));
        assert_eq!(wanted_version(None, "mongo:8.0"), Some("8.0".into()));
        assert_eq!(
            wanted_version(None, "mongodb/mongodb-community-server:7.0-ubuntu2204"),
            Some("7.0-ubuntu2204".into())
        );
        assert_eq!(wanted_version(None, "mongo:latest"), None);
        assert_eq!(wanted_version(None, "microshard-standin:test"), None);
        assert_eq!(version_of("db version v8.0.16"), Some((8, 0)));
        assert_eq!(version_of("7.0.0-standin"), Some((7, 0)));
    }
}
