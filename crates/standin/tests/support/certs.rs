//! TLS certificates made at test time, for the tests of both crates (included by each one's
//! `util.rs` with `#[path]`, so there is one copy).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A test CA, a server certificate it signed for `localhost` and `127.0.0.1`, and a second CA
/// that signed nothing here (a client trusting it must refuse the server), made with the
/// `openssl` command (Debian's package `openssl`) when the test runs.
pub struct Certs {
    pub dir: tempfile::TempDir,
    pub ca: PathBuf,
    pub other_ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn openssl(dir: &Path, args: &str) {
    let out = Command::new("openssl")
        .args(args.split_whitespace())
        .current_dir(dir)
        .output()
        .expect("the openssl command (Debian package openssl)");
    assert!(
        out.status.success(),
        "openssl {args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Certs {
    pub fn make() -> Certs {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path();
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
        let ca_ext = "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign";
        for name in ["ca", "other-ca"] {
            openssl(
                d,
                &format!(
                    "req -x509 {ec} -keyout {name}.key -out {name}.pem -days 2 -subj /CN=microshard-test-{name} {ca_ext}"
                ),
            );
        }
        openssl(
            d,
            &format!("req {ec} -keyout server.key -out server.csr -subj /CN=localhost"),
        );
        std::fs::write(
            d.join("server.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .expect("extensions");
        openssl(
            d,
            "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile server.ext",
        );
        Certs {
            ca: d.join("ca.pem"),
            other_ca: d.join("other-ca.pem"),
            cert: d.join("server.crt"),
            key: d.join("server.key"),
            dir,
        }
    }

    /// Stand-in flags requiring TLS with this certificate (and trusting this CA for its peers).
    pub fn flags(&self) -> Vec<String> {
        vec![
            format!("--tls-cert={}", self.cert.display()),
            format!("--tls-key={}", self.key.display()),
            format!("--tlsCAFile={}", self.ca.display()),
        ]
    }
}
