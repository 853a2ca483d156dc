//! `mongodb.url` handling: validation, YCSB's legacy option names, the database name and
//! the pool/timeout options microshard adds so the driver never throttles the benchmark.
//!
//! Everything here is pure (no I/O) so it can be tested without a server.

use crate::workload::prop;

/// YCSB's default connection string (declared with the property, `src/props/prop.rs`).
pub(crate) const DEFAULT_URL: &str = prop::MONGODB_URL.default;

/// The database used when the URL names none (or names `admin`), as YCSB does.
pub(crate) const DEFAULT_DATABASE: &str = "ycsb";

/// Server-selection timeout used unless the URL sets `serverSelectionTimeoutMS`: the driver's
/// default of 30 s is too long for a command-line tool to sit silent on an unreachable host.
pub(crate) const DEFAULT_SERVER_SELECTION_TIMEOUT_MS: u64 = 5_000;

/// Why a `mongodb.url` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Neither `mongodb://` nor `mongodb+srv://`.
    #[error("mongodb.url must start with mongodb:// or mongodb+srv:// (got {0:?})")]
    BadScheme(String),
    /// A URL with nothing after the scheme.
    #[error("mongodb.url has no host: {0}")]
    NoHost(String),
    /// An unacknowledged write concern (`w=0`): the official Rust driver refuses to send
    /// unacknowledged writes, so every write would fail (`docs/engine.md`).
    #[error(
        "{0}: unacknowledged writes (w=0) are not supported: the official Rust driver does not send unacknowledged writes; use acknowledged (w=1) or stronger"
    )]
    Unacknowledged(String),
}

/// Refuses unacknowledged write concerns in the URL (`w=0`) or in `mongodb.writeConcern`
/// (`unacknowledged`, `errors_ignored`, `normal`), naming where it was set.
pub(crate) fn refuse_unacknowledged(
    url: &str,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<(), UrlError> {
    if let Some(raw) = get(prop::MONGODB_WRITE_CONCERN.name) {
        let v = raw.trim().to_lowercase();
        if matches!(v.as_str(), "unacknowledged" | "errors_ignored" | "normal") {
            return Err(UrlError::Unacknowledged(format!(
                "property mongodb.writeConcern={raw}"
            )));
        }
    }
    if query_option(url, "w").is_some_and(|w| w.trim() == "0") {
        return Err(UrlError::Unacknowledged(format!(
            "mongodb.url {} (w=0)",
            crate::redact::redact_uri(url)
        )));
    }
    Ok(())
}

/// The write concern a resolved URL asks for (`w=1`, `w=majority, journal=true`), or `None`
/// when it sets none and the server's default applies (w:1 on 4.4; w:"majority" on 5.0+ replica
/// sets and sharded clusters: `docs/mongodb-versions.md`).
pub(crate) fn write_concern_of(url: &str) -> Option<String> {
    let parts: Vec<String> = ["w", "journal", "wtimeoutMS"]
        .iter()
        .filter_map(|k| query_option(url, k).map(|v| format!("{k}={v}")))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The result of resolving `mongodb.url` and the legacy properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedUrl {
    /// The connection string handed to the driver (with microshard's additions).
    pub url: String,
    /// The database the collection lives in.
    pub database: String,
    /// The `maxPoolSize` in effect (from the URL, a legacy property, or the thread count).
    pub max_pool_size: u32,
    /// Lines for stderr: legacy properties without effect, a pool smaller than the threads, ...
    pub warnings: Vec<String>,
}

/// Checks the scheme, as YCSB does before anything else.
pub(crate) fn validate_scheme(url: &str) -> Result<(), UrlError> {
    let rest = url
        .strip_prefix("mongodb://")
        .or_else(|| url.strip_prefix("mongodb+srv://"))
        .ok_or_else(|| UrlError::BadScheme(mask_foreign_userinfo(url)))?;
    let host_part = rest.split(['/', '?']).next().unwrap_or("");
    let host_part = host_part.rsplit('@').next().unwrap_or("");
    if host_part.is_empty() {
        return Err(UrlError::NoHost(crate::redact::redact_uri(url)));
    }
    Ok(())
}

/// Masks `user:password@` in a string that is not a MongoDB URI (so `redact_uri` would not touch it).
fn mask_foreign_userinfo(url: &str) -> String {
    let start = url.find("://").map(|i| i + 3).unwrap_or(0);
    let authority_end = url[start..]
        .find(['/', '?'])
        .map(|i| start + i)
        .unwrap_or(url.len());
    match url[start..authority_end].rfind('@') {
        Some(at) => format!("{}****{}", &url[..start], &url[start + at..]),
        None => url.to_string(),
    }
}

/// True when the URL already carries `name=` (YCSB's test: a plain, case-sensitive substring search).
fn has_option_substring(url: &str, name: &str) -> bool {
    url.contains(&format!("{name}="))
}

/// The value of a URL query option, matched case-insensitively as the driver does.
pub(crate) fn query_option<'a>(url: &'a str, name: &str) -> Option<&'a str> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.eq_ignore_ascii_case(name).then_some(v)
    })
}

fn append_option(url: &mut String, name: &str, value: &str) {
    if url.contains('?') {
        if !url.ends_with('?') && !url.ends_with('&') {
            url.push('&');
        }
    } else {
        // A query needs the path separator first: `mongodb://h:1?x` is rejected by the driver.
        let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
        if !url[after_scheme..].contains('/') {
            url.push('/');
        }
        url.push('?');
    }
    url.push_str(name);
    url.push('=');
    url.push_str(value);
}

/// Rewrites YCSB's legacy properties into URL options, exactly when YCSB's OptionsSupport would
/// (an option is added only if `name=` is not already in the URL), and adapts the two the Rust
/// driver does not accept: `j=` (only `journal=` is added) and `waitQueueMultiple` (dropped, warned).
pub(crate) fn apply_legacy_options(
    url: &str,
    get: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> String {
    let mut out = url.to_string();
    if let Some(raw) = get(prop::MONGODB_MAXCONNECTIONS.name) {
        let v = raw.trim().to_lowercase();
        if !has_option_substring(&out, "maxPoolSize") {
            append_option(&mut out, "maxPoolSize", &v);
        } else {
            warnings.push(format!(
                "mongodb.maxconnections={raw} has no effect: mongodb.url already sets maxPoolSize (as in YCSB)"
            ));
        }
    }
    if let Some(raw) = get(prop::MONGODB_THREADS_ALLOWED_TO_BLOCK.name) {
        warnings.push(format!(
            "mongodb.threadsAllowedToBlockForConnectionMultiplier={raw} is ignored: the Rust driver has no waitQueueMultiple (its pool queues waiters without a limit)"
        ));
    }
    if let Some(raw) = get(prop::MONGODB_WRITE_CONCERN.name) {
        let v = raw.trim().to_lowercase();
        let options: Option<&[(&str, &str)]> = match v.as_str() {
            "errors_ignored" | "unacknowledged" | "normal" => Some(&[("w", "0")]),
            "acknowledged" => Some(&[("w", "1")]),
            "journaled" => Some(&[("journal", "true")]),
            "replica_acknowledged" => Some(&[("w", "2")]),
            "majority" => Some(&[("w", "majority")]),
            _ => None,
        };
        match options {
            None => warnings.push(format!(
                "mongodb.writeConcern={raw} is not a known write concern (errors_ignored, unacknowledged, acknowledged, journaled, replica_acknowledged, majority); ignored"
            )),
            Some(options) => {
                for (name, value) in options {
                    if query_option(&out, name).is_some_and(|set| set.eq_ignore_ascii_case(value)) {
                        // The URL already asks for the same: nothing to warn about (workloads/S1 has both).
                    } else if has_option_substring(&out, name) {
                        warnings.push(format!(
                            "mongodb.writeConcern={raw} has no effect: mongodb.url already sets {name}= (YCSB behaves the same; its default URL carries w=1)"
                        ));
                    } else {
                        append_option(&mut out, name, value);
                    }
                }
            }
        }
    }
    if let Some(raw) = get(prop::MONGODB_READ_PREFERENCE.name) {
        let v = raw.trim().to_lowercase();
        let mode = match v.as_str() {
            "primary" => Some("primary"),
            "primary_preferred" => Some("primaryPreferred"),
            "secondary" => Some("secondary"),
            "secondary_preferred" => Some("secondaryPreferred"),
            "nearest" => Some("nearest"),
            _ => None,
        };
        match mode {
            None => warnings.push(format!(
                "mongodb.readPreference={raw} is not a known read preference (primary, primary_preferred, secondary, secondary_preferred, nearest); ignored"
            )),
            Some(_) if has_option_substring(&out, "readPreference") => warnings.push(format!(
                "mongodb.readPreference={raw} has no effect: mongodb.url already sets readPreference="
            )),
            Some(mode) => append_option(&mut out, "readPreference", mode),
        }
    }
    out
}

/// The database named in the URL path, or `ycsb` when there is none, it is empty or it is `admin`.
pub(crate) fn database_from_url(url: &str) -> String {
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    let rest = &url[after_scheme..];
    let rest = rest.split('?').next().unwrap_or("");
    let db = rest.split_once('/').map_or("", |(_, path)| path);
    let db = if db.is_empty() || db == "admin" {
        DEFAULT_DATABASE
    } else {
        db
    };
    db.to_string()
}

/// Resolves `mongodb.url` (already chosen by the caller) and the legacy properties for `threads` clients.
pub(crate) fn resolve(
    url: &str,
    get: &dyn Fn(&str) -> Option<String>,
    threads: usize,
) -> Result<ResolvedUrl, UrlError> {
    validate_scheme(url)?;
    refuse_unacknowledged(url, get)?;
    let mut warnings = Vec::new();
    let mut out = apply_legacy_options(url, get, &mut warnings);
    let threads32 = u32::try_from(threads.max(1)).unwrap_or(u32::MAX);
    let max_pool_size = match query_option(&out, "maxPoolSize").map(str::parse::<u32>) {
        Some(Ok(n)) => {
            if n != 0 && n < threads32 {
                warnings.push(format!(
                    "mongodb.url sets maxPoolSize={n}, fewer than the {threads} client threads: clients will queue for connections and the pool, not the server, limits throughput"
                ));
            }
            n
        }
        // Unparsable: leave it to the driver, which names the option in its error.
        Some(Err(_)) => threads32,
        None => {
            append_option(&mut out, "maxPoolSize", &threads32.to_string());
            threads32
        }
    };
    if query_option(&out, "serverSelectionTimeoutMS").is_none() {
        append_option(
            &mut out,
            "serverSelectionTimeoutMS",
            &DEFAULT_SERVER_SELECTION_TIMEOUT_MS.to_string(),
        );
    }
    let database = database_from_url(&out);
    Ok(ResolvedUrl {
        url: out,
        database,
        max_pool_size,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Properties;

    fn props(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        Properties::lookup_of(pairs)
    }

    /// [`apply_legacy_options`] on `url` with the properties `pairs`: the URL and the warnings.
    fn legacy(url: &str, pairs: &[(&str, &str)]) -> (String, Vec<String>) {
        let mut warnings = Vec::new();
        let out = apply_legacy_options(url, &props(pairs), &mut warnings);
        (out, warnings)
    }

    #[test]
    fn scheme_is_checked() {
        assert!(validate_scheme("mongodb://h:1").is_ok());
        assert!(validate_scheme("mongodb+srv://cluster.example").is_ok());
        let err = validate_scheme("http://h:1").unwrap_err();
        assert!(err.to_string().contains("mongodb.url"), "{err}");
        assert!(validate_scheme("mongodb://").is_err());
        assert!(validate_scheme("mongodb:///ycsb").is_err());
        // Credentials in a bad URL are never echoed.
        let err = validate_scheme("mongo://u:secret@h").unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
    }

    #[test]
    fn database_defaults_to_ycsb() {
        assert_eq!(database_from_url("mongodb://h:1/bench?w=1"), "bench");
        assert_eq!(database_from_url("mongodb://h:1/?w=1"), "ycsb");
        assert_eq!(database_from_url("mongodb://h:1"), "ycsb");
        assert_eq!(database_from_url("mongodb://h:1/admin"), "ycsb");
        assert_eq!(database_from_url("mongodb://u:p@h:1,h2:2/db2"), "db2");
    }

    #[test]
    fn write_concern_is_ignored_when_url_has_w_like_ycsb() {
        let (out, w) = legacy(DEFAULT_URL, &[("mongodb.writeConcern", "majority")]);
        assert_eq!(out, DEFAULT_URL);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("no effect"), "{w:?}");
    }

    /// workloads/S1 carries both `?w=1` and `acknowledged`: asking twice for the same is no mistake.
    #[test]
    fn a_write_concern_the_url_already_asks_for_is_no_warning() {
        let (out, w) = legacy(DEFAULT_URL, &[("mongodb.writeConcern", "acknowledged")]);
        assert_eq!(out, DEFAULT_URL);
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn legacy_options_are_appended() {
        let (out, w) = legacy(
            "mongodb://h:27017",
            &[
                ("mongodb.writeConcern", "ACKNOWLEDGED"),
                ("mongodb.readPreference", "secondary_preferred"),
                ("mongodb.maxconnections", "50"),
            ],
        );
        assert_eq!(
            out,
            "mongodb://h:27017/?maxPoolSize=50&w=1&readPreference=secondaryPreferred"
        );
        assert!(w.is_empty(), "{w:?}");
        let (out, _) = legacy(
            "mongodb://h/db?appName=x",
            &[("mongodb.writeConcern", "journaled")],
        );
        assert_eq!(out, "mongodb://h/db?appName=x&journal=true");
    }

    #[test]
    fn unknown_legacy_values_warn() {
        let (out, w) = legacy(
            "mongodb://h/",
            &[
                ("mongodb.writeConcern", "fsync_safe"),
                ("mongodb.readPreference", "anywhere"),
                ("mongodb.threadsAllowedToBlockForConnectionMultiplier", "5"),
            ],
        );
        assert_eq!(out, "mongodb://h/");
        assert_eq!(w.len(), 3, "{w:?}");
    }

    #[test]
    fn pool_follows_threads_unless_url_sets_it() {
        let r = resolve(DEFAULT_URL, &props(&[]), 32).unwrap();
        assert_eq!(r.max_pool_size, 32);
        assert_eq!(
            r.url,
            "mongodb://localhost:27017/ycsb?w=1&maxPoolSize=32&serverSelectionTimeoutMS=5000"
        );
        assert_eq!(r.database, "ycsb");
        assert!(r.warnings.is_empty());

        let r = resolve(
            "mongodb://h/x?maxpoolsize=4&serverSelectionTimeoutMS=100",
            &props(&[]),
            16,
        )
        .unwrap();
        assert_eq!(r.max_pool_size, 4);
        assert_eq!(
            r.url,
            "mongodb://h/x?maxpoolsize=4&serverSelectionTimeoutMS=100"
        );
        assert!(r.warnings[0].contains("maxPoolSize=4"), "{:?}", r.warnings);

        let r = resolve(
            "mongodb://h",
            &props(&[("mongodb.maxconnections", "64")]),
            8,
        )
        .unwrap();
        assert_eq!(r.max_pool_size, 64);
        assert!(r.warnings.is_empty());
    }
}
