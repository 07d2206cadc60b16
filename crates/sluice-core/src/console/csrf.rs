//! The CSRF token of every console form: sealed ([`crate::seal`]) for one
//! principal at one time, so that a token copied from another principal's
//! page, altered, or older than [`CSRF_TTL_MS`] does not verify. A page on
//! another origin cannot read the console's pages (and the admission's
//! Origin check refuses its requests), so it cannot learn a token.

use serde_json::json;

use crate::seal::SealKey;

/// How long a form's token verifies: a page left open for longer must be
/// reloaded before it can approve.
pub const CSRF_TTL_MS: u64 = 2 * 60 * 60 * 1000;

/// Seals and opens console form tokens.
#[derive(Clone)]
pub struct CsrfKey(SealKey);

/// Why a token does not verify. Fixed texts: they echo nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CsrfError {
    /// The form carried none.
    #[error("is missing")]
    Missing,
    /// Not made by this sluice, or altered.
    #[error("does not verify")]
    Forged,
    /// Made for another principal.
    #[error("was issued to someone else")]
    OtherPrincipal,
    /// Older than [`CSRF_TTL_MS`], or from the future.
    #[error("has expired")]
    Expired,
}

impl CsrfKey {
    /// The key, derived from the gateway's cursor secret for this purpose
    /// alone.
    pub fn derive(secret: &[u8; 32]) -> CsrfKey {
        CsrfKey(SealKey::new(
            *secret,
            "csrf_".to_owned(),
            "sluice console csrf",
        ))
    }

    /// A token for `principal` (its [`crate::access::Principal::key`]),
    /// issued at `now_ms`.
    pub fn issue(&self, principal: &str, now_ms: u64) -> String {
        self.0.seal(&json!({"p": principal, "t": now_ms}))
    }

    /// Whether `token` was issued by this key to `principal` within
    /// [`CSRF_TTL_MS`] of `now_ms`.
    pub fn verify(
        &self,
        token: Option<&str>,
        principal: &str,
        now_ms: u64,
    ) -> Result<(), CsrfError> {
        let token = token.filter(|t| !t.is_empty()).ok_or(CsrfError::Missing)?;
        let payload = self.0.open(token).map_err(|_| CsrfError::Forged)?;
        if payload.get("p").and_then(|p| p.as_str()) != Some(principal) {
            return Err(CsrfError::OtherPrincipal);
        }
        let issued = payload
            .get("t")
            .and_then(serde_json::Value::as_u64)
            .ok_or(CsrfError::Forged)?;
        if issued > now_ms || now_ms - issued > CSRF_TTL_MS {
            return Err(CsrfError::Expired);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    #[test]
    fn a_token_verifies_for_its_principal_within_its_time() {
        let key = CsrfKey::derive(&[7; 32]);
        let token = key.issue("alice", NOW);
        assert!(token.starts_with("csrf_"));
        assert_eq!(key.verify(Some(&token), "alice", NOW + 1000), Ok(()));
        assert_eq!(key.verify(Some(&token), "alice", NOW + CSRF_TTL_MS), Ok(()));
        assert_eq!(
            key.verify(Some(&token), "alice", NOW + CSRF_TTL_MS + 1),
            Err(CsrfError::Expired)
        );
        assert_eq!(
            key.verify(Some(&token), "alice", NOW - 1),
            Err(CsrfError::Expired)
        );
        assert_eq!(
            key.verify(Some(&token), "mallory", NOW),
            Err(CsrfError::OtherPrincipal)
        );
    }

    #[test]
    fn missing_forged_and_foreign_tokens_do_not_verify() {
        let key = CsrfKey::derive(&[7; 32]);
        assert_eq!(key.verify(None, "alice", NOW), Err(CsrfError::Missing));
        assert_eq!(key.verify(Some(""), "alice", NOW), Err(CsrfError::Missing));
        let token = key.issue("alice", NOW);
        let mut altered = token.clone();
        altered.pop();
        altered.push(if token.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(
            key.verify(Some(&altered), "alice", NOW),
            Err(CsrfError::Forged)
        );
        let other = CsrfKey::derive(&[8; 32]).issue("alice", NOW);
        assert_eq!(
            key.verify(Some(&other), "alice", NOW),
            Err(CsrfError::Forged)
        );
        // A cursor sealed under the same secret is no form token.
        let cursor = SealKey::new([7; 32], "csrf_".into(), "sluice cursor")
            .seal(&json!({"p": "alice", "t": NOW}));
        assert_eq!(
            key.verify(Some(&cursor), "alice", NOW),
            Err(CsrfError::Forged)
        );
    }
}
