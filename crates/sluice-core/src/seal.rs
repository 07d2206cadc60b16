//! Tokens sluice hands out and must be able to trust when they come back
//! (MRTR `requestState`, list cursors): a JSON payload, base64url-encoded
//! and sealed with HMAC-SHA256.
//!
//! Wire form: `<prefix><base64url(payload JSON)>.<base64url(mac)>`. The mac
//! also covers a domain string, so a token made for one purpose (a cursor)
//! never opens as another (a request state), even under the same key.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// A key for one kind of token.
#[derive(Clone)]
pub struct SealKey {
    secret: [u8; 32],
    prefix: String,
    domain: &'static str,
}

/// Why a token did not open. The texts are fixed: they echo nothing of the
/// token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// Not of this key's form, or not decodable.
    #[error("malformed")]
    Malformed,
    /// The seal does not match: tampered, or made with another key or for
    /// another purpose.
    #[error("failed verification")]
    BadSeal,
}

impl SealKey {
    /// A key from 32 secret bytes. Its tokens start with `prefix`; `domain`
    /// names their purpose.
    pub fn new(secret: [u8; 32], prefix: String, domain: &'static str) -> Self {
        SealKey {
            secret,
            prefix,
            domain,
        }
    }

    /// What this key's tokens start with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn mac(&self, payload: &str) -> HmacSha256 {
        // HMAC takes a key of any length; 32 bytes never fails.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        mac.update(self.domain.as_bytes());
        mac.update(b"\0");
        mac.update(payload.as_bytes());
        mac
    }

    /// Seals a payload.
    pub fn seal(&self, payload: &Value) -> String {
        let payload = URL_SAFE_NO_PAD.encode(payload.to_string());
        let tag = URL_SAFE_NO_PAD.encode(self.mac(&payload).finalize().into_bytes());
        format!("{}{payload}.{tag}", self.prefix)
    }

    /// The payload of a token this key sealed.
    pub fn open(&self, token: &str) -> Result<Value, SealError> {
        let body = token
            .strip_prefix(&self.prefix)
            .ok_or(SealError::Malformed)?;
        let (payload, tag) = body.split_once('.').ok_or(SealError::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| SealError::Malformed)?;
        self.mac(payload)
            .verify_slice(&tag)
            .map_err(|_| SealError::BadSeal)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| SealError::Malformed)?;
        serde_json::from_slice(&payload).map_err(|_| SealError::Malformed)
    }
}

/// A 32-byte secret from a configured passphrase (SHA-256 of it).
pub fn secret_from_passphrase(passphrase: &str) -> [u8; 32] {
    use sha2::Digest;
    Sha256::digest(passphrase.as_bytes()).into()
}

/// How a secret is written to a key file: base64url, 43 characters.
pub fn secret_to_text(secret: &[u8; 32]) -> String {
    URL_SAFE_NO_PAD.encode(secret)
}

/// A secret read back from a key file; `None` when it is not one.
pub fn secret_from_text(text: &str) -> Option<[u8; 32]> {
    URL_SAFE_NO_PAD.decode(text.trim()).ok()?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_token_opens_only_with_its_key_and_domain() {
        let a = SealKey::new([1; 32], "t1.".into(), "one");
        let token = a.seal(&json!({"x": 1}));
        assert_eq!(a.open(&token), Ok(json!({"x": 1})));
        let other_key = SealKey::new([2; 32], "t1.".into(), "one");
        assert_eq!(other_key.open(&token), Err(SealError::BadSeal));
        let other_domain = SealKey::new([1; 32], "t1.".into(), "two");
        assert_eq!(other_domain.open(&token), Err(SealError::BadSeal));
        // Any flipped byte fails.
        for i in 3..token.len() {
            let mut bytes = token.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let flipped = String::from_utf8(bytes).unwrap_or_default();
            if flipped != token {
                assert!(a.open(&flipped).is_err(), "byte {i}");
            }
        }
        assert!(a.open(&token[..token.len() - 2]).is_err());
        assert_eq!(a.open("nope"), Err(SealError::Malformed));
    }

    #[test]
    fn secrets_round_trip_through_text() {
        let secret = secret_from_passphrase("correct horse battery staple, long enough");
        let text = secret_to_text(&secret);
        assert_eq!(text.len(), 43);
        assert_eq!(secret_from_text(&format!("{text}\n")), Some(secret));
        assert_eq!(secret_from_text("short"), None);
    }
}
