//! How a stand-in dials the other members of its deployment (a mongos its shards and config
//! server, a replica-set member the others): with TLS when it serves TLS, and authenticated as
//! its first `--auth-user` when it requires authentication. Real members authenticate to each
//! other with the `--keyFile`'s internal user; a stand-in deployment shares its users instead,
//! so one set of flags secures every member (`docs/mongodb-versions.md`, "TLS and
//! authentication").

use mongodb::options::{ClientOptions, Credential, Tls, TlsOptions};

use crate::config::StandinConfig;

/// The security a stand-in adds to every connection it opens to a peer.
#[derive(Clone, Default)]
pub(crate) struct Peer {
    credential: Option<Credential>,
    tls: Option<TlsOptions>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("authenticated", &self.credential.is_some())
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Peer {
    /// The peer security `cfg` implies.
    pub(crate) fn from_config(cfg: &StandinConfig) -> Peer {
        let credential = cfg.auth_users.first().map(|user| {
            Credential::builder()
                .username(user.name.clone())
                .password(user.password.clone())
                .source("admin".to_string())
                .mechanism(mongodb::options::AuthMechanism::ScramSha256)
                .build()
        });
        let tls = cfg.tls.as_ref().map(|files| {
            TlsOptions::builder()
                .ca_file_path(files.ca.clone())
                .allow_invalid_certificates(files.ca.is_none().then_some(true))
                .build()
        });
        Peer { credential, tls }
    }

    /// Adds this stand-in's TLS and credentials to `options`.
    pub(crate) fn secure(&self, options: &mut ClientOptions) {
        if let Some(c) = &self.credential {
            options.credential = Some(c.clone());
        }
        if let Some(t) = &self.tls {
            options.tls = Some(Tls::Enabled(t.clone()));
        }
    }

    /// A driver client for `uri` (a peer's address and timeouts), secured as [`Peer::secure`] says.
    pub(crate) async fn client(&self, uri: &str) -> mongodb::error::Result<mongodb::Client> {
        let mut options = ClientOptions::parse(uri).await?;
        self.secure(&mut options);
        mongodb::Client::with_options(options)
    }
}
