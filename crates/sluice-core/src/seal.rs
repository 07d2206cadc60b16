//! Tokens sluice hands out and must be able to trust when they come back
//! (MRTR `requestState`, list cursors): a JSON payload, encrypted and
//! authenticated with XChaCha20-Poly1305, so that a token tells its holder
//! nothing (a cursor's position, filter and surface are not readable) and
//! cannot be altered.
//!
//! Wire form: `<prefix><base64url(nonce (24) ‖ ciphertext ‖ tag (16))>`.
//! The key and the associated data are derived from a domain string, so a
//! token made for one purpose (a cursor) never opens as another (a request
//! state), even under the same secret.
//!
//! The nonce is synthetic: HMAC-SHA256 of the payload under a key of its
//! own, cut to 24 bytes. Sealing stays a pure function (this crate takes
//! no randomness), equal payloads give equal tokens, and two different
//! payloads share a nonce only by a 192-bit collision.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// XChaCha20's nonce length.
pub(crate) const NONCE_BYTES: usize = 24;
/// Poly1305's tag length.
pub(crate) const TAG_BYTES: usize = 16;
/// The longest token worth decoding: sluice makes none this long.
const MAX_TOKEN_CHARS: usize = 16 * 1024;

/// A key for one kind of token.
#[derive(Clone)]
pub struct SealKey {
    cipher: XChaCha20Poly1305,
    /// Keys the synthetic nonce.
    nonce_key: [u8; 32],
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

/// HMAC-SHA256 of `parts` under `key`, each part followed by a NUL.
fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes a key of any length; it never fails.
    let mut mac = <HmacSha256 as hmac::KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    for part in parts {
        mac.update(part);
        mac.update(b"\0");
    }
    mac.finalize().into_bytes().into()
}

impl SealKey {
    /// A key from 32 secret bytes. Its tokens start with `prefix`; `domain`
    /// names their purpose.
    pub fn new(secret: [u8; 32], prefix: String, domain: &'static str) -> Self {
        let key = hmac(&secret, &[b"sluice seal key", domain.as_bytes()]);
        SealKey {
            cipher: XChaCha20Poly1305::new(&key.into()),
            nonce_key: hmac(&secret, &[b"sluice seal nonce", domain.as_bytes()]),
            prefix,
            domain,
        }
    }

    /// What this key's tokens start with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Seals a payload.
    pub fn seal(&self, payload: &Value) -> String {
        let plaintext = payload.to_string();
        let synthetic = hmac(&self.nonce_key, &[plaintext.as_bytes()]);
        let mut nonce = [0; NONCE_BYTES];
        nonce.copy_from_slice(&synthetic[..NONCE_BYTES]);
        let wire = encrypt(
            &self.cipher,
            nonce,
            plaintext.as_bytes(),
            self.domain.as_bytes(),
        );
        format!("{}{}", self.prefix, URL_SAFE_NO_PAD.encode(wire))
    }

    /// The payload of a token this key sealed.
    pub fn open(&self, token: &str) -> Result<Value, SealError> {
        let body = token
            .strip_prefix(&self.prefix)
            .filter(|body| body.len() <= MAX_TOKEN_CHARS)
            .ok_or(SealError::Malformed)?;
        let wire = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| SealError::Malformed)?;
        let plaintext = decrypt(&self.cipher, &wire, self.domain.as_bytes())?;
        serde_json::from_slice(&plaintext).map_err(|_| SealError::Malformed)
    }
}

/// `nonce ‖ ciphertext ‖ tag` of `plaintext` under `cipher`, with `aad`
/// authenticated alongside (the wire form of every sealed token; never
/// reuse a nonce with one key for two plaintexts).
pub(crate) fn encrypt(
    cipher: &XChaCha20Poly1305,
    nonce: [u8; NONCE_BYTES],
    plaintext: &[u8],
    aad: &[u8],
) -> Vec<u8> {
    let sealed = cipher
        .encrypt(
            &XNonce::from(nonce),
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .unwrap_or_else(|_| unreachable!("XChaCha20-Poly1305 encrypts any payload sluice makes"));
    let mut wire = Vec::with_capacity(NONCE_BYTES + sealed.len());
    wire.extend_from_slice(&nonce);
    wire.extend(sealed);
    wire
}

/// The plaintext of what [`encrypt`] made with `cipher` and `aad`.
pub(crate) fn decrypt(
    cipher: &XChaCha20Poly1305,
    wire: &[u8],
    aad: &[u8],
) -> Result<Vec<u8>, SealError> {
    if wire.len() < NONCE_BYTES + TAG_BYTES {
        return Err(SealError::Malformed);
    }
    let (nonce, sealed) = wire.split_at(NONCE_BYTES);
    let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| SealError::Malformed)?;
    cipher
        .decrypt(&XNonce::from(nonce), Payload { msg: sealed, aad })
        .map_err(|_| SealError::BadSeal)
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
    fn a_token_reveals_nothing_of_its_payload() {
        let key = SealKey::new([7; 32], String::new(), "sluice list cursor v1");
        let payload = json!({"v": 1, "s": "tools/list", "o": 500, "k": "h__tool_499"});
        let token = key.seal(&payload);
        assert_eq!(
            key.seal(&payload),
            token,
            "sealing is a function of the payload"
        );
        let wire = URL_SAFE_NO_PAD.decode(&token).unwrap_or_default();
        assert_eq!(
            wire.len(),
            NONCE_BYTES + payload.to_string().len() + TAG_BYTES
        );
        for needle in [&b"tools/list"[..], b"h__tool_499", b"500", b"\"o\""] {
            assert!(
                !wire.windows(needle.len()).any(|w| w == needle),
                "{needle:?} in the clear"
            );
        }
        let other = key.seal(&json!({"v": 1, "s": "tools/list", "o": 501, "k": "h__tool_500"}));
        assert_ne!(token[..32], other[..32], "another payload, another nonce");
        // Too long to be one of sluice's.
        assert_eq!(
            key.open(&"A".repeat(MAX_TOKEN_CHARS + 1)),
            Err(SealError::Malformed)
        );
        assert_eq!(key.open("AAAA"), Err(SealError::Malformed));
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
