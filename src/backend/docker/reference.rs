//! Image references checked by Docker's reference grammar (`distribution/reference`) before any
//! call to the engine, so a bad `--image`, `--tag` or topology `image` is one line naming it
//! (exit 2) rather than the engine's HTTP 500 after a connection:
//!
//! ```text
//! reference  := name [ ":" tag ] [ "@" digest ]
//! name       := [ domain "/" ] path-component { "/" path-component }   (at most 255 characters)
//! domain     := host [ ":" port ]      (the first component, when it holds "." or ":", is
//!                                        "localhost", or has an upper-case letter)
//! path-comp. := [a-z0-9]+ { ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ }
//! tag        := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
//! digest     := algorithm ":" [a-fA-F0-9]{32,}     (sha256: exactly 64 lower-case hex digits)
//! ```

/// Checks `reference` against the grammar above; the error says which part is wrong.
pub fn check_reference(reference: &str) -> Result<(), String> {
    if reference.is_empty() {
        return Err("an image reference must not be empty".into());
    }
    let (rest, digest) = match reference.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (reference, None),
    };
    if let Some(digest) = digest {
        check_digest(digest)?;
    }
    let (name, tag) = match rest.rfind(':') {
        Some(colon) if !rest[colon..].contains('/') => (&rest[..colon], Some(&rest[colon + 1..])),
        _ => (rest, None),
    };
    if let Some(tag) = tag {
        check_tag(tag)?;
    }
    check_name(name)
}

/// Checks the images a topology names (`image`, and `client_image` when it has clients); the
/// error names the key.
pub fn check_spec_images(spec: &crate::topology::TopologySpec) -> Result<(), String> {
    check_reference(&spec.image).map_err(|e| format!("image {:?}: {e}", spec.image))?;
    if !spec.clients.is_empty() {
        check_reference(&spec.client_image)
            .map_err(|e| format!("client_image {:?}: {e}", spec.client_image))?;
    }
    Ok(())
}

/// One part of the grammar, compiled once.
fn grammar(pattern: &'static str) -> regex::Regex {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};
    static COMPILED: LazyLock<Mutex<HashMap<&str, regex::Regex>>> = LazyLock::new(Default::default);
    let mut compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    let regex = compiled.entry(pattern).or_insert_with(|| {
        regex::Regex::new(pattern).unwrap_or_else(|e| unreachable!("{pattern}: {e}"))
    });
    regex.clone()
}

fn matches(pattern: &'static str, text: &str) -> bool {
    grammar(pattern).is_match(text)
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn check_tag(tag: &str) -> Result<(), String> {
    match matches(r"^\w[\w.-]{0,127}$", tag) {
        true => Ok(()),
        false => Err(format!(
            "tag {tag:?}: must be 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
        )),
    }
}

/// `algorithm:hex`, sha256 with exactly 64 lower-case hex digits.
fn check_digest(digest: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("digest {digest:?}: {why}"));
    if !matches(
        r"^[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$",
        digest,
    ) {
        return bad("must be algorithm:hex, at least 32 hex digits (sha256:<64 hex digits>)");
    }
    if digest.starts_with("sha256:") && !matches(r"^sha256:[0-9a-f]{64}$", digest) {
        return bad("sha256 takes exactly 64 lower-case hex digits");
    }
    Ok(())
}

/// `[domain/]path`, at most 255 characters.
fn check_name(name: &str) -> Result<(), String> {
    if name.len() > 255 {
        return Err(format!(
            "name of {} characters: at most 255 are allowed",
            name.len()
        ));
    }
    let mut components = name.split('/').collect::<Vec<_>>();
    let first = components[0];
    let is_domain = components.len() > 1
        && (first.contains(['.', ':'])
            || first == "localhost"
            || first.chars().any(|c| c.is_ascii_uppercase()));
    if is_domain {
        check_domain(first)?;
        components.remove(0);
    }
    components.into_iter().try_for_each(check_path_component)
}

/// `[a-z0-9]+` joined by `.`, `_`, `__` or runs of `-`.
fn check_path_component(component: &str) -> Result<(), String> {
    if matches(r"^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$", component) {
        return Ok(());
    }
    let why = match component {
        "" => "must not be empty",
        c if c.chars().any(|c| c.is_ascii_uppercase()) => "must be lower-case",
        _ => "must be a-z and 0-9, joined by '.', '_', '__' or '-' (none at either end)",
    };
    Err(format!("repository name component {component:?}: {why}"))
}

/// A registry: `host[:port]`, the host a DNS name (components of letters, digits and inner `-`),
/// an IPv4 address or a bracketed IPv6 address.
fn check_domain(domain: &str) -> Result<(), String> {
    let host = r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[([0-9A-Fa-f:.]+)\])(?::[0-9]+)?$";
    let ok = grammar(host).captures(domain).is_some_and(|c| {
        c.get(1)
            .is_none_or(|v6| v6.as_str().parse::<std::net::Ipv6Addr>().is_ok())
    });
    match ok {
        true => Ok(()),
        false => Err(format!(
            "registry {domain:?}: a host name (letters, digits and inner '-', joined by '.'), an IPv4 address or a bracketed IPv6 address, then :port in digits"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::check_reference;

    #[test]
    fn references_docker_accepts_pass() {
        let digest = format!("sha256:{}", "0123456789abcdef".repeat(4));
        for good in [
            "mongo",
            "mongo:8.0",
            "mongo:7.0.14-jammy",
            "library/mongo:latest",
            "localhost:5000/mongo:7",
            "registry.example.com/team/mongo_db__x:v1.2_rc-3",
            "127.0.0.1:5000/microshard-standin:test",
            "[::1]:5000/mongo",
            "Registry.Example.com/mongo",
            &format!("mongo@{digest}"),
            &format!("mongo:8.0@{digest}"),
            "a--b/c.d",
        ] {
            assert_eq!(check_reference(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn references_docker_refuses_fail_naming_the_part() {
        for (bad, part) in [
            ("", "empty"),
            ("Mongo", "lower-case"),
            ("mongo:", "tag \"\""),
            ("mongo:bad tag", "tag \"bad tag\""),
            ("mongo:.hidden", "tag"),
            (&format!("mongo:{}", "x".repeat(129)), "tag"),
            ("mongo@sha256:abc", "digest"),
            ("mongo@sha256:", "digest"),
            (&format!("mongo@sha256:{}", "A".repeat(64)), "digest"),
            ("mongo@", "digest"),
            ("mon go", "component"),
            ("mongo/", "component"),
            ("/mongo", "component"),
            ("mongo_/x", "component"),
            ("mo___ngo", "component"),
            ("-mongo", "component"),
            ("bad_host:5000/mongo", "registry"),
            ("localhost:port/mongo", "registry"),
            (&"a".repeat(256), "255"),
        ] {
            let e = check_reference(bad).expect_err(bad);
            assert!(e.contains(part), "{bad:?}: {e}");
        }
    }
}
