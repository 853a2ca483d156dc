//! How microshard dials one member of a deployment with the user's security: every connection it
//! opens beside the benchmark's own (liveness probes, server metrics, admin commands, the
//! cross-check) reaches one `host:port` directly, and must carry what the user's connection
//! string says about TLS, authentication and compression, or a `requireTLS` or
//! authentication-required server refuses it (`docs/mongodb-versions.md`, "TLS and
//! authentication"). [`Dial::member_uri`] is the one place such a connection string is made.
//!
//! Only the options that say how to get in are carried (TLS, credentials, compressors); the
//! rest of the user's string (replica set, read preference, pool sizes, timeouts, `w`) describes
//! the benchmark's own client and is left out: each dial site sets its own timeouts and pool.

/// The query options carried to every member, in the driver's spelling (matched without case).
const CARRIED: &[&str] = &[
    "tls",
    "ssl",
    "tlsInsecure",
    "tlsAllowInvalidCertificates",
    "tlsAllowInvalidHostnames",
    "tlsCAFile",
    "tlsCertificateKeyFile",
    "tlsCertificateKeyFilePassword",
    "tlsDisableOCSPEndpointCheck",
    "tlsDisableCertificateRevocationCheck",
    "authSource",
    "authMechanism",
    "authMechanismProperties",
    "compressors",
    "zlibCompressionLevel",
];

/// The user's way in (credentials and the carried options), parsed from their connection
/// string once. `Default` is a server without TLS or authentication.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Dial {
    /// `user[:password]@`, exactly as the user wrote it (percent-encoded), or empty.
    userinfo: String,
    /// `name=value` pairs from [`CARRIED`], as written.
    options: Vec<String>,
}

impl std::fmt::Debug for Dial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::redact::redact_uri(&self.member_uri("HOST")))
    }
}

impl Dial {
    /// The way in that `uri` (`mongodb://` or `mongodb+srv://`) describes. A `mongodb+srv://`
    /// string implies `tls=true` unless it says otherwise, as the driver reads it; with
    /// credentials and no `authSource`, the database in the path is where they are checked, as
    /// the driver does, so members are asked there too.
    pub(crate) fn from_uri(uri: &str) -> Dial {
        let (srv, rest) = match uri.strip_prefix("mongodb+srv://") {
            Some(rest) => (true, rest),
            None => (false, uri.strip_prefix("mongodb://").unwrap_or(uri)),
        };
        let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = before_query.split_once('/').unwrap_or((before_query, ""));
        let userinfo = authority
            .rfind('@')
            .map(|at| authority[..=at].to_string())
            .unwrap_or_default();
        let mut options: Vec<String> = query
            .split('&')
            .filter(|pair| {
                let name = pair.split('=').next().unwrap_or_default();
                CARRIED.iter().any(|c| c.eq_ignore_ascii_case(name))
            })
            .map(str::to_string)
            .collect();
        let given = |name: &str| {
            options.iter().any(|p| {
                let n = p.split('=').next().unwrap_or_default();
                n.eq_ignore_ascii_case(name)
            })
        };
        let mut implied = Vec::new();
        if srv && !given("tls") && !given("ssl") {
            implied.push("tls=true".to_string());
        }
        if !userinfo.is_empty() && !given("authSource") && !path.is_empty() {
            implied.push(format!("authSource={path}"));
        }
        options.extend(implied);
        Dial { userinfo, options }
    }

    /// The same way in, with credentials checked in `source` (what the driver settled on, for
    /// a `mongodb+srv://` string whose TXT record names it), unless the string named one.
    pub(crate) fn with_auth_source(mut self, source: &str) -> Dial {
        let named = self.options.iter().any(|p| {
            let n = p.split('=').next().unwrap_or_default();
            n.eq_ignore_ascii_case("authSource")
        });
        if !named && !self.userinfo.is_empty() && source != "admin" {
            self.options.push(format!("authSource={source}"));
        }
        self
    }

    /// The connection string that reaches member `host` (`host:port`) alone
    /// (`directConnection=true`) with the user's TLS, credentials and compressors. Never print it
    /// unredacted: it may hold a password.
    pub(crate) fn member_uri(&self, host: &str) -> String {
        let mut uri = format!("mongodb://{}{host}/?directConnection=true", self.userinfo);
        for option in &self.options {
            uri.push('&');
            uri.push_str(option);
        }
        uri
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_is_dialled_with_the_users_tls_credentials_and_compressors_only() {
        let user = "mongodb://alice:p%40ss@h1:27017,h2:27017/ycsb?replicaSet=rs0&tls=true&tlsCAFile=/etc/ca.pem&w=1&maxPoolSize=500&authSource=admin&compressors=zstd&readPreference=secondary";
        let dial = Dial::from_uri(user);
        assert_eq!(
            dial.member_uri("sh1-0:27018"),
            "mongodb://alice:p%40ss@sh1-0:27018/?directConnection=true&tls=true&tlsCAFile=/etc/ca.pem&authSource=admin&compressors=zstd"
        );
        assert!(!format!("{dial:?}").contains("p%40ss"));
    }

    #[test]
    fn what_the_driver_implies_is_carried_too() {
        // mongodb+srv: TLS on unless the string turns it off.
        let srv = Dial::from_uri("mongodb+srv://cluster0.example.net/");
        assert_eq!(
            srv.member_uri("a:1"),
            "mongodb://a:1/?directConnection=true&tls=true"
        );
        let off = Dial::from_uri("mongodb+srv://cluster0.example.net/?tls=false");
        assert_eq!(
            off.member_uri("a:1"),
            "mongodb://a:1/?directConnection=true&tls=false"
        );
        // Credentials without authSource are checked in the path's database.
        let path = Dial::from_uri("mongodb://u:p@h:1/bench?w=1");
        assert_eq!(
            path.member_uri("a:1"),
            "mongodb://u:p@a:1/?directConnection=true&authSource=bench"
        );
        // ... and in what an SRV TXT record named, when the string named nothing.
        let txt = Dial::from_uri("mongodb+srv://u:p@c.example.net/").with_auth_source("users");
        assert!(
            txt.member_uri("a:1")
                .ends_with("&tls=true&authSource=users")
        );
    }

    #[test]
    fn a_plain_string_dials_plainly() {
        let plain = Dial::from_uri("mongodb://localhost:27017/ycsb?w=1&directConnection=true");
        assert_eq!(plain, Dial::default());
        assert_eq!(
            plain.member_uri("localhost:27018"),
            "mongodb://localhost:27018/?directConnection=true"
        );
    }
}
