//! The flags that secure a stand-in: TLS (the stand-in's `--tls-cert FILE --tls-key FILE`, or
//! mongod's own `--tlsMode requireTLS --tlsCertificateKeyFile FILE`, with `--tlsCAFile` for the
//! stand-in's connections to its peers) and users (`--auth-user NAME:PASSWORD`, repeatable).
//! Passwords never reach `getCmdLineOpts` or the log: [`redact_argv`].

use std::path::PathBuf;

use crate::StandinError;
use crate::tls::TlsFiles;

/// A user the stand-in accepts with SCRAM-SHA-256, in `admin`.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthUser {
    /// The user name.
    pub name: String,
    /// The password (kept for the stand-in's own connections to its peers; never printed).
    pub password: String,
}

impl std::fmt::Debug for AuthUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuthUser({:?}, <password>)", self.name)
    }
}

/// The security flags as given, settled by [`SecurityGiven::settle`] once all are read.
#[derive(Default)]
pub(crate) struct SecurityGiven {
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    key_file: Option<PathBuf>,
    ca: Option<PathBuf>,
    mode: Option<String>,
    pub(crate) users: Vec<AuthUser>,
}

fn bad(msg: String) -> StandinError {
    StandinError::BadFlag(msg)
}

impl SecurityGiven {
    /// Records flag `name` when it is a security flag; false when it is not one.
    pub(crate) fn take(&mut self, name: &str, value: &str) -> Result<bool, StandinError> {
        match name {
            "tls-cert" => self.tls_cert = Some(PathBuf::from(value)),
            "tls-key" => self.tls_key = Some(PathBuf::from(value)),
            "tlsCertificateKeyFile" => self.key_file = Some(PathBuf::from(value)),
            "tlsCAFile" => self.ca = Some(PathBuf::from(value)),
            "tlsMode" => self.mode = Some(value.to_string()),
            "auth-user" => self.users.push(parse_user(value)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The TLS files the flags name together, or the combination's fault.
    pub(crate) fn settle(&self) -> Result<Option<TlsFiles>, StandinError> {
        let pair = match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) => Some((c.clone(), k.clone())),
            (None, None) => None,
            _ => {
                return Err(bad(
                    "--tls-cert and --tls-key go together: give both (the certificate chain and its private key)".into(),
                ));
            }
        };
        let mode = self.mode.as_deref().unwrap_or("disabled");
        let files = match (mode, pair, &self.key_file) {
            ("disabled", None, None) => None,
            ("disabled" | "requireTLS", Some((cert, key)), None) => Some((cert, key)),
            ("requireTLS", None, Some(f)) => Some((f.clone(), f.clone())),
            ("requireTLS", None, None) => {
                return Err(bad(
                    "--tlsMode requireTLS needs --tlsCertificateKeyFile FILE (or --tls-cert FILE --tls-key FILE)".into(),
                ));
            }
            ("disabled", None, Some(_)) => {
                return Err(bad(
                    "--tlsCertificateKeyFile needs --tlsMode requireTLS (the stand-in serves TLS only when it is required)".into(),
                ));
            }
            ("requireTLS" | "disabled", Some(_), Some(_)) => {
                return Err(bad(
                    "give either --tls-cert/--tls-key or --tlsCertificateKeyFile, not both".into(),
                ));
            }
            (other, _, _) => {
                return Err(bad(format!(
                    "--tlsMode {other}: the stand-in serves requireTLS or disabled (allowTLS and preferTLS mix plaintext and TLS on one port, which it does not)"
                )));
            }
        };
        if self.ca.is_some() && files.is_none() {
            return Err(bad(
                "--tlsCAFile is for the stand-in's TLS connections to its peers: give it with --tls-cert/--tls-key or --tlsMode requireTLS".into(),
            ));
        }
        Ok(files.map(|(cert, key)| TlsFiles {
            cert,
            key,
            ca: self.ca.clone(),
        }))
    }
}

/// `NAME:PASSWORD`, both non-empty (a name cannot hold `:`; a password can).
fn parse_user(value: &str) -> Result<AuthUser, StandinError> {
    match value.split_once(':') {
        Some((name, password)) if !name.is_empty() && !password.is_empty() => Ok(AuthUser {
            name: name.to_string(),
            password: password.to_string(),
        }),
        _ => {
            let name = value.split(':').next().unwrap_or_default();
            Err(bad(format!(
                "--auth-user {name}:<password>: give NAME:PASSWORD, both non-empty"
            )))
        }
    }
}

/// The command line with every `--auth-user` password replaced by `<password>`, as mongod
/// shows `--tlsCertificateKeyFilePassword`: the form `getCmdLineOpts` and the log show.
pub(crate) fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut next_is_user = false;
    for arg in argv {
        let hide = |v: &str| match v.split_once(':') {
            Some((name, _)) => format!("{name}:<password>"),
            None => v.to_string(),
        };
        if next_is_user {
            out.push(hide(arg));
            next_is_user = false;
        } else if let Some(v) = arg.strip_prefix("--auth-user=") {
            out.push(format!("--auth-user={}", hide(v)));
        } else {
            next_is_user = arg == "--auth-user";
            out.push(arg.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(flags: &[(&str, &str)]) -> Result<Option<TlsFiles>, StandinError> {
        let mut g = SecurityGiven::default();
        for (n, v) in flags {
            assert!(g.take(n, v)?);
        }
        g.settle()
    }

    #[test]
    fn tls_flags_settle_to_one_set_of_files_or_name_the_fault() {
        assert_eq!(given(&[]).unwrap(), None);
        let both = given(&[("tls-cert", "c.pem"), ("tls-key", "k.pem")]).unwrap();
        assert_eq!(both.unwrap().key, PathBuf::from("k.pem"));
        let real = given(&[
            ("tlsMode", "requireTLS"),
            ("tlsCertificateKeyFile", "s.pem"),
        ]);
        let real = real.unwrap().unwrap();
        assert_eq!((real.cert, real.key), ("s.pem".into(), "s.pem".into()));
        for (flags, says) in [
            (vec![("tls-cert", "c.pem")], "--tls-cert and --tls-key"),
            (
                vec![("tlsMode", "requireTLS")],
                "needs --tlsCertificateKeyFile",
            ),
            (vec![("tlsMode", "preferTLS")], "--tlsMode preferTLS"),
            (vec![("tlsCAFile", "ca.pem")], "--tlsCAFile"),
        ] {
            let e = given(&flags).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn users_are_name_colon_password_and_passwords_never_show() {
        let mut g = SecurityGiven::default();
        g.take("auth-user", "alice:s3:cret").unwrap();
        assert_eq!(g.users[0].password, "s3:cret");
        assert!(!format!("{:?}", g.users).contains("s3"));
        let e = parse_user("bob:").unwrap_err().to_string();
        assert!(e.contains("--auth-user bob:<password>"), "{e}");
        let argv: Vec<String> = ["mongod", "--auth-user", "alice:s3cret", "--auth-user=b:x"]
            .map(String::from)
            .to_vec();
        let shown = redact_argv(&argv).join(" ");
        assert_eq!(
            shown,
            "mongod --auth-user alice:<password> --auth-user=b:<password>"
        );
    }
}
