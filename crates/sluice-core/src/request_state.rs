//! Integrity-protected `requestState` for bridging MRTR (2026-07-28 multi
//! round-trip requests) onto legacy upstreams.
//!
//! A legacy upstream asks for sampling or elicitation *during* a call, as a
//! server-to-client request; a 2026-07-28 client only takes such questions
//! as an `input_required` result, and answers by retrying the call with
//! `inputResponses` and the `requestState` it was given (MCP 2026-07-28,
//! `basic/patterns/mrtr`). sluice keeps the upstream call open and hands the
//! client a state that names it. The state is attacker-controlled input, so
//! it is sealed ([`crate::seal`]: encrypted and authenticated) and binds the parked call's handle, the
//! method, a digest of the call's params and an expiry: a tampered, foreign,
//! stale or replayed state is refused (a server must reject state that fails
//! verification).
//!
//! Wire form: `sluice1.<key id>.<base64url(payload JSON)>.<base64url(mac)>`.
//! The key id tells one sluice's states from another's, so that a sluice
//! in front of another sluice forwards the inner one's states untouched.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::canonical::canonical_json;
use crate::seal::{SealError, SealKey};

/// Every state sluice issues starts with this, then its key id.
pub const PREFIX: &str = "sluice1.";

/// The secret that seals states, made by the shell at start.
#[derive(Clone)]
pub struct StateKey {
    /// Prefix `sluice1.<key id>.`.
    key: SealKey,
}

/// What a state says, once its seal is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedCall {
    /// The handle of the call sluice keeps open.
    pub handle: String,
    /// The method of the original request.
    pub method: String,
    /// [`params_digest`] of the original request's params.
    pub params_digest: String,
    /// Unix time in milliseconds after which the state is refused.
    pub expires_at_ms: u64,
}

/// Why a state was refused. The texts are fixed: they echo nothing of the
/// token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not of sluice's form, or not decodable.
    #[error("requestState is malformed")]
    Malformed,
    /// The seal does not match: tampered, or made with another key.
    #[error("requestState failed verification")]
    BadSeal,
    /// Past its expiry.
    #[error("requestState has expired")]
    Expired,
    /// Sealed for another method or other params.
    #[error("requestState belongs to another request")]
    Mismatch,
}

// === impl StateKey ===

impl StateKey {
    /// A key from 32 random bytes.
    pub fn new(secret: [u8; 32]) -> Self {
        // The id is public: a digest of the secret reveals nothing of it.
        let id = URL_SAFE_NO_PAD.encode(&Sha256::digest(secret)[..6]);
        StateKey {
            key: SealKey::new(secret, format!("{PREFIX}{id}."), "requestState"),
        }
    }

    /// Whether `token` was sealed with this key (by its prefix alone; the
    /// seal is checked by [`StateKey::open`]).
    pub fn issued(&self, token: &str) -> bool {
        token.starts_with(self.key.prefix())
    }

    /// Seals a parked call's description.
    pub fn seal(&self, call: &ParkedCall) -> String {
        self.key.seal(&json!({
            "h": call.handle,
            "m": call.method,
            "d": call.params_digest,
            "x": call.expires_at_ms,
        }))
    }

    /// Checks a state's seal and expiry, and that it belongs to this request.
    pub fn open(
        &self,
        token: &str,
        method: &str,
        params: &Value,
        now_ms: u64,
    ) -> Result<ParkedCall, StateError> {
        let payload = self.key.open(token).map_err(|e| match e {
            SealError::Malformed => StateError::Malformed,
            SealError::BadSeal => StateError::BadSeal,
        })?;
        let field = |k: &str| payload.get(k).and_then(Value::as_str).map(String::from);
        let call = ParkedCall {
            handle: field("h").ok_or(StateError::Malformed)?,
            method: field("m").ok_or(StateError::Malformed)?,
            params_digest: field("d").ok_or(StateError::Malformed)?,
            expires_at_ms: payload
                .get("x")
                .and_then(Value::as_u64)
                .ok_or(StateError::Malformed)?,
        };
        if now_ms > call.expires_at_ms {
            return Err(StateError::Expired);
        }
        if call.method != method || call.params_digest != params_digest(params) {
            return Err(StateError::Mismatch);
        }
        Ok(call)
    }
}

/// A digest of a request's params that ignores what legitimately changes
/// between MRTR rounds (`_meta`, `inputResponses`, `requestState`) and key
/// order.
pub fn params_digest(params: &Value) -> String {
    let mut stripped = params.clone();
    if let Some(obj) = stripped.as_object_mut() {
        for key in ["_meta", "inputResponses", "requestState"] {
            obj.remove(key);
        }
    }
    let digest = Sha256::digest(canonical_json(&stripped).as_bytes());
    URL_SAFE_NO_PAD.encode(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> StateKey {
        StateKey::new([b; 32])
    }

    fn call(params: &Value) -> ParkedCall {
        ParkedCall {
            handle: "h1".into(),
            method: "tools/call".into(),
            params_digest: params_digest(params),
            expires_at_ms: 1_000,
        }
    }

    #[test]
    fn a_sealed_state_opens_for_its_own_request_only() {
        let params = json!({"name": "t", "arguments": {"a": 1, "b": [1, 2]}});
        let token = key(1).seal(&call(&params));
        assert!(token.starts_with(PREFIX));
        assert!(key(1).issued(&token));
        assert!(!key(2).issued(&token), "another sluice's state is not ours");
        // The retry adds inputResponses, requestState and _meta, and may
        // order keys differently: still the same request.
        let retry = json!({"arguments": {"b": [1, 2], "a": 1}, "name": "t",
            "inputResponses": {"k": {}}, "requestState": token, "_meta": {"x": 1}});
        assert_eq!(
            key(1).open(&token, "tools/call", &retry, 999),
            Ok(call(&params))
        );
        assert_eq!(
            key(1).open(&token, "tools/call", &retry, 1_001),
            Err(StateError::Expired)
        );
        assert_eq!(
            key(1).open(&token, "prompts/get", &retry, 5),
            Err(StateError::Mismatch)
        );
        let other = json!({"name": "t", "arguments": {"a": 2, "b": [1, 2]}});
        assert_eq!(
            key(1).open(&token, "tools/call", &other, 5),
            Err(StateError::Mismatch)
        );
        // Another key's states are not even of this key's form.
        assert_eq!(
            key(2).open(&token, "tools/call", &retry, 5),
            Err(StateError::Malformed)
        );
        assert!(key(1).issued(&token));
        assert!(!key(2).issued(&token));
    }

    #[test]
    fn tampering_is_refused() {
        let params = json!({"name": "t"});
        let token = key(1).seal(&call(&params));
        let prefix = key(1).key.prefix().to_owned();
        let body = token.strip_prefix(&prefix).expect("the prefix");
        // A changed byte of the sealed body no longer opens.
        let mut wire = URL_SAFE_NO_PAD.decode(body).expect("base64url");
        if let Some(last) = wire.last_mut() {
            *last ^= 1;
        }
        let forged = format!("{prefix}{}", URL_SAFE_NO_PAD.encode(&wire));
        assert_eq!(
            key(1).open(&forged, "tools/call", &params, 5),
            Err(StateError::BadSeal)
        );
        // A state sealed by another replica's secret does not open either.
        let foreign = key(2).seal(&call(&params));
        assert!(key(1).open(&foreign, "tools/call", &params, 5).is_err());
        let short = format!("{prefix}a.b");
        for bad in [
            &token[..token.len() - 1],
            "sluice1.",
            "upstream-state",
            short.as_str(),
        ] {
            let e = key(1)
                .open(bad, "tools/call", &params, 5)
                .expect_err("refused");
            assert!(
                matches!(e, StateError::Malformed | StateError::BadSeal),
                "{bad}: {e:?}"
            );
        }
    }
}
