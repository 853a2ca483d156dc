//! Keeps credentials out of logs, status lines, result files, reports and error messages.
//!
//! Anything that may print or store a connection string passes it through [`redact_uri`]
//! (or free text through [`redact_text`]) first.

/// Replaces the password of every `mongodb://` / `mongodb+srv://` URI in `uri` with `****`.
///
/// `mongodb://alice:s3cret@h:27017/ycsb` becomes `mongodb://alice:****@h:27017/ycsb`.
/// Query options that carry secrets (`password=`, `tlsCertificateKeyFilePassword=`) are masked too.
pub fn redact_uri(uri: &str) -> String {
    redact_text(uri)
}

/// Masks credentials of any MongoDB URI found anywhere in `text`.
pub fn redact_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = find_scheme(rest) {
        let (before, from_scheme) = rest.split_at(pos);
        out.push_str(before);
        let scheme_len = if from_scheme.starts_with("mongodb+srv://") {
            "mongodb+srv://".len()
        } else {
            "mongodb://".len()
        };
        out.push_str(&from_scheme[..scheme_len]);
        let after = &from_scheme[scheme_len..];
        // Only white space ends a URI here: quotes and backticks are legal (unescaped) in a
        // password, and masking a trailing quote along with the rest does no harm.
        let end = after.find(char::is_whitespace).unwrap_or(after.len());
        out.push_str(&mask_uri_body(&after[..end]));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn find_scheme(text: &str) -> Option<usize> {
    text.find("mongodb://")
        .into_iter()
        .chain(text.find("mongodb+srv://"))
        .min()
}

/// Masks `user:password@` and secret query options in the part of a URI after the scheme.
fn mask_uri_body(body: &str) -> String {
    let (authority_end, has_query) = match body.find(['/', '?']) {
        Some(i) => (i, true),
        None => (body.len(), false),
    };
    let authority = &body[..authority_end];
    let mut out = String::with_capacity(body.len());
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.find(':') {
                Some(colon) => {
                    out.push_str(&userinfo[..colon]);
                    out.push_str(":****");
                }
                None => out.push_str(userinfo),
            }
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    if has_query {
        let tail = &body[authority_end..];
        match tail.find('?') {
            Some(q) => {
                out.push_str(&tail[..=q]);
                let masked: Vec<String> = tail[q + 1..]
                    .split('&')
                    .map(|pair| match pair.split_once('=') {
                        Some((k, _)) if k.to_ascii_lowercase().contains("password") => {
                            format!("{k}=****")
                        }
                        _ => pair.to_string(),
                    })
                    .collect();
                out.push_str(&masked.join("&"));
            }
            None => out.push_str(tail),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_password_keeps_user_and_hosts() {
        assert_eq!(
            redact_uri("mongodb://alice:s3cret@h1:27017,h2:27018/ycsb?w=1"),
            "mongodb://alice:****@h1:27017,h2:27018/ycsb?w=1"
        );
    }

    #[test]
    fn masks_srv_and_query_passwords() {
        let s = redact_uri(
            "mongodb+srv://bob:pa%40ss@cluster.example/?tlsCertificateKeyFilePassword=x&w=1",
        );
        assert!(!s.contains("pa%40ss"), "{s}");
        assert!(!s.contains("=x"), "{s}");
        assert!(s.contains("w=1"));
    }

    #[test]
    fn password_containing_at_sign_is_masked() {
        let s = redact_uri("mongodb://u:p@ss@host:1/");
        assert_eq!(s, "mongodb://u:****@host:1/");
    }

    #[test]
    fn masks_inside_free_text() {
        let s = redact_text("cannot reach mongodb://u:hunter2@db:27017 (timeout)");
        assert_eq!(s, "cannot reach mongodb://u:****@db:27017 (timeout)");
    }

    #[test]
    fn password_with_quote_is_masked() {
        let s = redact_text("url 'mongodb://bench:Sup3r'Secr3t@h/ycsb' failed");
        assert!(!s.contains("Secr3t"), "{s}");
        assert!(s.contains("bench:****@h/ycsb"), "{s}");
    }

    #[test]
    fn leaves_uris_without_credentials_alone() {
        let s = "mongodb://localhost:27017/ycsb?w=1";
        assert_eq!(redact_text(s), s);
    }
}
