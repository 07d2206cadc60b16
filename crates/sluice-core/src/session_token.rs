//! Legacy session ids (`Mcp-Session-Id`) that carry their session: what a
//! replica needs to serve a session another replica opened, sealed with
//! XChaCha20-Poly1305 under a key every replica derives from the shared
//! cursor secret.
//!
//! Wire form: `base64url(version ‖ aead nonce (24) ‖ ciphertext ‖ tag (16))`,
//! visible ASCII as the transport asks. The plaintext is a random session
//! nonce (16 bytes) then JSON `{p, v, c, t}`: principal key, protocol
//! version, client capabilities, issued-at in ms. The principal and the
//! capabilities are encrypted, not just signed: an id shows up in proxy
//! logs and must not say who opened it.
//!
//! The nonces, the clock and the key come from the caller: this module takes
//! no randomness and reads no clock.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::XChaCha20Poly1305;
use chacha20poly1305::aead::KeyInit;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

use crate::seal::{self, SealError};

/// The format this module writes and reads; also authenticated as
/// associated data, so a future format is never misread as this one.
const FORMAT_VERSION: u8 = 1;
/// Separates this key from every other use of the cursor secret.
const KEY_DOMAIN: &[u8] = b"sluice session id v1";
/// XChaCha20's nonce length.
pub const AEAD_NONCE_BYTES: usize = seal::NONCE_BYTES;
/// The random part of a session's identity.
pub const SESSION_NONCE_BYTES: usize = 16;
/// Capabilities larger than this (as JSON) are not carried: the id would
/// outgrow the request header cap. Another replica then serves the session
/// as if the client had declared none. A session holds no more than this
/// anyway ([`crate::protocol::retained_capabilities`]).
pub const MAX_CARRIED_CAPABILITIES_BYTES: usize = crate::protocol::MAX_CLIENT_CAPABILITIES_BYTES;
/// The longest id worth decoding: anything longer was not made here.
const MAX_TOKEN_CHARS: usize = 8192;

/// What a session id carries.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionClaims {
    /// Random: two sessions of one principal never share an id.
    pub session_nonce: [u8; SESSION_NONCE_BYTES],
    /// [`crate::access::Principal::key`] of whoever opened it.
    pub principal: String,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// What the client declared at `initialize` (`{}` when it was too large
    /// to carry).
    pub client_capabilities: Value,
    /// When it was issued, ms since the Unix epoch.
    pub issued_at_ms: u64,
    /// The `[[view]]` it was opened through (`/mcp/<name>`): which
    /// `list_changed` its stream hears.
    pub view: Option<String>,
}

/// The encrypted part, after the session nonce.
#[derive(Serialize, Deserialize)]
struct Body {
    p: String,
    v: String,
    c: Value,
    t: u64,
    /// Absent in ids sealed before views (and for no view).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    w: Option<String>,
}

/// Why an id did not open. The texts are fixed: they echo nothing of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionTokenError {
    /// Not base64url, too short or long, or another format version.
    #[error("malformed session id")]
    Malformed,
    /// Tampered with, or sealed under another key.
    #[error("session id failed verification")]
    BadSeal,
}

/// The key that seals and opens session ids.
#[derive(Clone)]
pub struct SessionKey {
    cipher: XChaCha20Poly1305,
}

impl SessionKey {
    /// The key derived from the cursor secret: HMAC-SHA256(secret, domain),
    /// so a cursor and a session id never share a key.
    pub fn derive(cursor_secret: &[u8; 32]) -> SessionKey {
        let mut mac = <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(cursor_secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        mac.update(KEY_DOMAIN);
        let key = mac.finalize().into_bytes();
        SessionKey {
            cipher: XChaCha20Poly1305::new(&key),
        }
    }

    /// Seals `claims` with a fresh random `aead_nonce` (never reuse one).
    pub fn seal(&self, claims: &SessionClaims, aead_nonce: [u8; AEAD_NONCE_BYTES]) -> String {
        let capabilities = serde_json::to_string(&claims.client_capabilities)
            .ok()
            .filter(|json| json.len() <= MAX_CARRIED_CAPABILITIES_BYTES)
            .map_or_else(
                || Value::Object(Default::default()),
                |_| claims.client_capabilities.clone(),
            );
        let body = Body {
            p: claims.principal.clone(),
            v: claims.protocol_version.clone(),
            c: capabilities,
            t: claims.issued_at_ms,
            w: claims.view.clone(),
        };
        let mut plaintext = claims.session_nonce.to_vec();
        // Serializing owned strings, numbers and a `Value` cannot fail.
        plaintext.extend(serde_json::to_vec(&body).unwrap_or_default());
        let mut wire = vec![FORMAT_VERSION];
        wire.extend(seal::encrypt(
            &self.cipher,
            aead_nonce,
            &plaintext,
            &[FORMAT_VERSION],
        ));
        URL_SAFE_NO_PAD.encode(wire)
    }

    /// The claims of an id this key sealed.
    pub fn open(&self, token: &str) -> Result<SessionClaims, SessionTokenError> {
        if token.len() > MAX_TOKEN_CHARS {
            return Err(SessionTokenError::Malformed);
        }
        let wire = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| SessionTokenError::Malformed)?;
        let min = 1 + AEAD_NONCE_BYTES + SESSION_NONCE_BYTES + seal::TAG_BYTES;
        if wire.len() < min || wire[0] != FORMAT_VERSION {
            return Err(SessionTokenError::Malformed);
        }
        let plaintext =
            seal::decrypt(&self.cipher, &wire[1..], &[FORMAT_VERSION]).map_err(|e| match e {
                SealError::Malformed => SessionTokenError::Malformed,
                SealError::BadSeal => SessionTokenError::BadSeal,
            })?;
        let (session_nonce, body) = plaintext.split_at(SESSION_NONCE_BYTES);
        // Authentic yet unreadable: sealed by a build with another layout.
        let body: Body = serde_json::from_slice(body).map_err(|_| SessionTokenError::Malformed)?;
        Ok(SessionClaims {
            session_nonce: session_nonce
                .try_into()
                .map_err(|_| SessionTokenError::Malformed)?,
            principal: body.p,
            protocol_version: body.v,
            client_capabilities: body.c,
            issued_at_ms: body.t,
            view: body.w,
        })
    }
}

impl SessionClaims {
    /// Whether the id is older than `max_age_ms` at `now_ms`. An id from a
    /// replica whose clock runs ahead is not held against the client.
    pub fn expired(&self, now_ms: u64, max_age_ms: u64) -> bool {
        now_ms.saturating_sub(self.issued_at_ms) > max_age_ms
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn claims() -> SessionClaims {
        SessionClaims {
            session_nonce: [7; SESSION_NONCE_BYTES],
            principal: "https://issuer.example alice-the-principal".into(),
            protocol_version: "2025-11-25".into(),
            client_capabilities: json!({"sampling": {}, "elicitation": {"form": {}}, "roots": {"listChanged": true}}),
            issued_at_ms: 1_790_000_000_000,
            view: Some("research".into()),
        }
    }

    #[test]
    fn a_sealed_id_opens_to_its_claims_under_the_same_secret_only() {
        let key = SessionKey::derive(&[1; 32]);
        let token = key.seal(&claims(), [9; AEAD_NONCE_BYTES]);
        assert!(token.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{token}");
        assert_eq!(key.open(&token), Ok(claims()));
        // Another replica with the same secret derives the same key.
        assert_eq!(SessionKey::derive(&[1; 32]).open(&token), Ok(claims()));
        assert_eq!(
            SessionKey::derive(&[2; 32]).open(&token),
            Err(SessionTokenError::BadSeal)
        );
    }

    #[test]
    fn tampered_truncated_and_foreign_ids_do_not_open() {
        let key = SessionKey::derive(&[1; 32]);
        let token = key.seal(&claims(), [9; AEAD_NONCE_BYTES]);
        let wire = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for i in 0..wire.len() {
            let mut bad = wire.clone();
            bad[i] ^= 0x01;
            let bad = URL_SAFE_NO_PAD.encode(bad);
            assert!(key.open(&bad).is_err(), "flipped byte {i} opened");
        }
        for cut in [1, 16, wire.len() / 2, wire.len() - 1] {
            let short = URL_SAFE_NO_PAD.encode(&wire[..cut]);
            assert!(key.open(&short).is_err(), "cut at {cut} opened");
        }
        // A pre-token random hex id, and junk.
        for junk in [
            "0123456789abcdef0123456789abcdef",
            "",
            "!!!",
            &"A".repeat(9000),
        ] {
            assert_eq!(key.open(junk), Err(SessionTokenError::Malformed), "{junk}");
        }
    }

    #[test]
    fn the_id_reveals_neither_principal_nor_capabilities() {
        let key = SessionKey::derive(&[1; 32]);
        let token = key.seal(&claims(), [9; AEAD_NONCE_BYTES]);
        let wire = URL_SAFE_NO_PAD.decode(&token).unwrap();
        let text = String::from_utf8_lossy(&wire);
        for secret in ["alice", "issuer", "sampling", "elicitation", "2025-11-25"] {
            assert!(!text.contains(secret), "{secret} readable in the id");
            assert!(!token.contains(secret), "{secret} in the id");
        }
        // Two ids of the same claims differ (the nonce), so an id cannot be
        // matched against a guess.
        assert_ne!(token, key.seal(&claims(), [10; AEAD_NONCE_BYTES]));
    }

    #[test]
    fn oversized_capabilities_are_not_carried() {
        let key = SessionKey::derive(&[1; 32]);
        let mut big = claims();
        big.client_capabilities =
            json!({"experimental": {"x": "y".repeat(MAX_CARRIED_CAPABILITIES_BYTES)}});
        let token = key.seal(&big, [9; AEAD_NONCE_BYTES]);
        assert!(token.len() < 1024, "{}", token.len());
        let opened = key.open(&token).unwrap();
        assert_eq!(opened.client_capabilities, json!({}));
        assert_eq!(opened.principal, big.principal);
    }

    #[test]
    fn age_counts_from_issue_and_a_fast_issuer_clock_is_no_expiry() {
        let c = claims();
        let day = 86_400_000;
        assert!(!c.expired(c.issued_at_ms, day));
        assert!(!c.expired(c.issued_at_ms + day, day));
        assert!(c.expired(c.issued_at_ms + day + 1, day));
        assert!(!c.expired(c.issued_at_ms - 5_000, day));
    }
}
