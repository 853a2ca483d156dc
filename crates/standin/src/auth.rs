//! Users and SCRAM-SHA-256 (RFC 5802, RFC 7677), as mongod and mongos authenticate a client:
//! with `--auth-user NAME:PASSWORD` given, every command but the handshake (`hello`, `ping`,
//! `buildInfo`, `saslStart`, `saslContinue`, ...) is refused with Unauthorized (13) until the
//! connection has authenticated, and a wrong name or password is AuthenticationFailed (18),
//! "Authentication failed.", the one message mongod gives for both.
//!
//! The users live in `admin` (any `authSource` other than `admin` finds no user, as it would
//! find none on a mongod whose users were created in `admin`). Each user's keys are derived
//! once, at start-up, with MongoDB's defaults for SCRAM-SHA-256 (15,000 iterations, a 28-byte
//! salt), so a login costs the server two HMACs.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{KeyInit, Mac};
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Binary, Document, doc};
use sha2::{Digest, Sha256};

use crate::cmderr::{CmdError, CmdResult, code};
use crate::security_flags::AuthUser;

/// MongoDB's `scramSHA256IterationCount` default.
const ITERATIONS: u32 = 15_000;

/// The mechanism, as `saslStart.mechanism` and `hello.saslSupportedMechs` name it.
pub(crate) const MECHANISM: &str = "SCRAM-SHA-256";

/// The commands a connection may send before it authenticates (mongod's commands whose
/// `requiresAuth()` is false, and `_isSelf`, with which members find themselves).
const WITHOUT_AUTH: &[&str] = &[
    "hello",
    "isMaster",
    "ismaster",
    "ping",
    "buildInfo",
    "buildinfo",
    "saslStart",
    "saslContinue",
    "getnonce",
    "logout",
    "endSessions",
    "_isSelf",
];

/// One user's SCRAM keys (never its password).
struct User {
    name: String,
    salt: Vec<u8>,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

/// The users a stand-in accepts; empty: authentication is off (mongod without `--auth`).
#[derive(Default)]
pub(crate) struct Users(Vec<User>);

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|u| u.name.as_str()).collect();
        f.debug_tuple("Users").field(&names).finish()
    }
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length: new_from_slice cannot fail for it.
    let Ok(mut mac) = hmac::Hmac::<Sha256>::new_from_slice(key) else {
        return Vec::new();
    };
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

impl Users {
    /// Derives every user's keys from `NAME`/`PASSWORD` pairs (SASLprep'd as the driver does).
    pub(crate) fn new(credentials: &[AuthUser]) -> Users {
        let users = credentials
            .iter()
            .map(|AuthUser { name, password }| {
                let prepped = stringprep::saslprep(password)
                    .map(|p| p.into_owned())
                    .unwrap_or_else(|_| password.clone());
                let salt: [u8; 28] = rand::random();
                let mut salted = [0u8; 32];
                pbkdf2::pbkdf2::<hmac::Hmac<Sha256>>(
                    prepped.as_bytes(),
                    &salt,
                    ITERATIONS,
                    &mut salted,
                )
                .unwrap_or_default();
                let client_key = hmac(&salted, b"Client Key");
                User {
                    name: name.clone(),
                    salt: salt.to_vec(),
                    stored_key: Sha256::digest(&client_key).to_vec(),
                    server_key: hmac(&salted, b"Server Key"),
                }
            })
            .collect();
        Users(users)
    }

    /// Whether connections must authenticate.
    pub(crate) fn required(&self) -> bool {
        !self.0.is_empty()
    }

    /// Whether `name` is one of the users (`hello.saslSupportedMechs`).
    pub(crate) fn knows(&self, name: &str) -> bool {
        self.0.iter().any(|u| u.name == name)
    }
}

/// A conversation between `saslStart` and its final `saslContinue`.
struct Pending {
    user: usize,
    nonce: String,
    /// `client-first-message-bare,server-first-message`: the start of the AuthMessage.
    first_messages: String,
}

/// One connection's authentication: who it is, and a conversation under way.
#[derive(Default)]
pub(crate) struct ConnAuth {
    user: Option<String>,
    pending: Option<Pending>,
}

impl ConnAuth {
    /// Refuses `command` with Unauthorized (13) while authentication is required and this
    /// connection has not authenticated.
    pub(crate) fn check(&self, users: &Users, command: &str) -> CmdResult<()> {
        if !users.required() || self.user.is_some() || WITHOUT_AUTH.contains(&command) {
            return Ok(());
        }
        Err(CmdError::new(
            code::UNAUTHORIZED,
            format!("Command {command} requires authentication"),
        ))
    }

    /// Answers `saslStart` and `saslContinue` when users are configured; `None` otherwise (the
    /// stand-in without users keeps accepting PLAIN as before).
    pub(crate) fn command(
        &mut self,
        users: &Users,
        name: &str,
        db: &str,
        body: &Document,
    ) -> Option<CmdResult<Document>> {
        if !users.required() {
            return None;
        }
        match name {
            "saslStart" => Some(self.start(users, db, body)),
            "saslContinue" => Some(self.finish(users, body)),
            "logout" => {
                self.user = None;
                Some(Ok(doc! {}))
            }
            _ => None,
        }
    }

    fn start(&mut self, users: &Users, db: &str, body: &Document) -> CmdResult<Document> {
        self.pending = None;
        if body.get_str("mechanism") != Ok(MECHANISM) {
            return Err(failed());
        }
        let payload = payload_text(body)?;
        // gs2 header "n,," (no channel binding), then the bare message "n=NAME,r=NONCE".
        let bare = payload.strip_prefix("n,,").ok_or_else(failed)?;
        let name = attribute(bare, "n").map(unescape_name).ok_or_else(failed)?;
        let client_nonce = attribute(bare, "r").ok_or_else(failed)?;
        let user = users
            .0
            .iter()
            .position(|u| u.name == name && db == "admin")
            .ok_or_else(failed)?;
        let server_nonce = BASE64.encode(rand::random::<[u8; 24]>());
        let nonce = format!("{client_nonce}{server_nonce}");
        let server_first = format!(
            "r={nonce},s={},i={ITERATIONS}",
            BASE64.encode(&users.0[user].salt)
        );
        self.pending = Some(Pending {
            user,
            nonce,
            first_messages: format!("{bare},{server_first}"),
        });
        Ok(sasl_reply(false, server_first.into_bytes()))
    }

    fn finish(&mut self, users: &Users, body: &Document) -> CmdResult<Document> {
        let Some(pending) = self.pending.take() else {
            // The empty exchange after success, for a client that did not skip it.
            return match &self.user {
                Some(_) => Ok(sasl_reply(true, Vec::new())),
                None => Err(failed()),
            };
        };
        let payload = payload_text(body)?;
        let (without_proof, proof) = payload.rsplit_once(",p=").ok_or_else(failed)?;
        if attribute(without_proof, "r") != Some(pending.nonce.as_str()) {
            return Err(failed());
        }
        let proof = BASE64.decode(proof).map_err(|_| failed())?;
        let user = &users.0[pending.user];
        let auth_message = format!("{},{without_proof}", pending.first_messages);
        let signature = hmac(&user.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(failed());
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        if Sha256::digest(&client_key).as_slice() != user.stored_key.as_slice() {
            return Err(failed());
        }
        self.user = Some(user.name.clone());
        let verifier = hmac(&user.server_key, auth_message.as_bytes());
        let server_final = format!("v={}", BASE64.encode(verifier));
        Ok(sasl_reply(true, server_final.into_bytes()))
    }
}

/// mongod's answer to every failed authentication, whatever failed (no user, wrong password,
/// a malformed message): one message, so that it tells an attacker nothing.
fn failed() -> CmdError {
    CmdError::new(code::AUTHENTICATION_FAILED, "Authentication failed.")
}

fn payload_text(body: &Document) -> CmdResult<String> {
    let bytes = match body.get("payload") {
        Some(mongodb::bson::Bson::Binary(b)) => b.bytes.clone(),
        Some(mongodb::bson::Bson::String(s)) => s.clone().into_bytes(),
        _ => return Err(failed()),
    };
    String::from_utf8(bytes).map_err(|_| failed())
}

fn sasl_reply(done: bool, payload: Vec<u8>) -> Document {
    doc! {
        "conversationId": 1,
        "done": done,
        "payload": Binary { subtype: BinarySubtype::Generic, bytes: payload },
    }
}

/// The value of attribute `key` (`r=...`) in a SCRAM message.
fn attribute<'a>(message: &'a str, key: &str) -> Option<&'a str> {
    message
        .split(',')
        .find_map(|part| part.strip_prefix(key)?.strip_prefix('='))
}

/// SCRAM's escaping of `=` and `,` in a user name.
fn unescape_name(name: &str) -> String {
    name.replace("=2C", ",").replace("=3D", "=")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> AuthUser {
        AuthUser {
            name: "alice".into(),
            password: "pw".into(),
        }
    }

    fn start_body(payload: &str) -> Document {
        doc! {"saslStart": 1, "mechanism": MECHANISM, "payload": Binary { subtype: BinarySubtype::Generic, bytes: payload.as_bytes().to_vec() }}
    }

    #[test]
    fn commands_wait_for_authentication_only_when_users_exist() {
        let none = Users::default();
        assert!(ConnAuth::default().check(&none, "find").is_ok());
        let users = Users::new(&[alice()]);
        let conn = ConnAuth::default();
        assert_eq!(
            conn.check(&users, "find").map_err(|e| e.code),
            Err(code::UNAUTHORIZED)
        );
        assert!(conn.check(&users, "hello").is_ok());
        assert!(conn.check(&users, "saslStart").is_ok());
    }

    #[test]
    fn an_unknown_user_or_another_database_fails_like_a_wrong_password() {
        let users = Users::new(&[alice()]);
        let mut conn = ConnAuth::default();
        let bob = start_body("n,,n=bob,r=abc");
        let e = conn.start(&users, "admin", &bob).unwrap_err();
        assert_eq!((e.code, e.msg.as_str()), (18, "Authentication failed."));
        let alice = start_body("n,,n=alice,r=abc");
        assert_eq!(conn.start(&users, "ycsb", &alice).unwrap_err().code, 18);
        let first = conn.start(&users, "admin", &alice).unwrap();
        assert!(!first.get_bool("done").unwrap());
        // A proof made without the password is refused, and the connection stays unauthenticated.
        let nonce = conn.pending.as_ref().unwrap().nonce.clone();
        let forged = format!("c=biws,r={nonce},p={}", BASE64.encode([0u8; 32]));
        let body = doc! {"saslContinue": 1, "payload": Binary { subtype: BinarySubtype::Generic, bytes: forged.into_bytes() }};
        assert_eq!(conn.finish(&users, &body).unwrap_err().code, 18);
        assert_eq!(conn.user, None);
    }

    #[test]
    fn user_names_are_unescaped() {
        assert_eq!(unescape_name("a=2Cb=3Dc"), "a,b=c");
        assert_eq!(attribute("n=x,r=abc", "r"), Some("abc"));
    }
}
