//! TLS on the listening sockets, as a mongod started with `--tlsMode requireTLS` serves it: every
//! connection must complete a TLS handshake before its first message; a plaintext client is
//! dropped (mongod logs "SSL handshake failed" and closes). Built on rustls with the ring
//! provider, the one the driver links. The client's certificate is not asked for (mongod's
//! `--tlsAllowConnectionsWithoutCertificates`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::StandinError;

/// Where the server's certificate chain and private key are (one file may hold both, as
/// mongod's `--tlsCertificateKeyFile` does), and the CA the stand-in trusts when it dials its
/// peers (`--tlsCAFile`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain, the server's own first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// PEM CA certificates for the stand-in's own connections to other members; `None`: its
    /// peers' certificates are not verified.
    pub ca: Option<PathBuf>,
}

fn read(flag: &str, path: &Path) -> Result<Vec<u8>, StandinError> {
    std::fs::read(path)
        .map_err(|e| StandinError::BadFlag(format!("{flag} {}: {e}", path.display())))
}

/// The acceptor for `files`; a file that cannot be read or holds no certificate or key is the
/// user's input, named with its flag.
pub(crate) fn acceptor(files: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, StandinError> {
    let cert_pem = read("--tls-cert", &files.cert)?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| StandinError::BadFlag(format!("--tls-cert {}: {e}", files.cert.display())))?;
    if certs.is_empty() {
        return Err(StandinError::BadFlag(format!(
            "--tls-cert {}: no PEM certificate in the file",
            files.cert.display()
        )));
    }
    let key_pem = read("--tls-key", &files.key)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        StandinError::BadFlag(format!(
            "--tls-key {}: no PEM private key ({e})",
            files.key.display()
        ))
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| {
            StandinError::BadFlag(format!(
                "--tls-cert {} / --tls-key {}: {e}",
                files.cert.display(),
                files.key.display()
            ))
        })?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
