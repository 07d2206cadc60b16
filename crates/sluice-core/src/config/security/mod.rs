//! The security sections of `sluice.toml`: `[auth]`, `[ratelimit]`,
//! `[server] allowed_origins`, `[policy] sensitive_elicitation`, and the
//! per-upstream `rate_limit`, `tool_rate_limit` and `rlimit` keys.
//!
//! Everything here is checked before sluice serves anything, so a weak or
//! contradictory setting (a public bind with no auth, a wildcard scope, a
//! token too short to be secret) stops the start with the key that says so.
//!
//! - `auth`: `[auth]`: static bearer tokens or an OAuth resource server,
//!   and the scopes each upstream or tool requires.
//! - `ratelimit`: call rates, `[ratelimit]` and where its allowances live.
//! - `origins`: `[server] allowed_origins`, the browser origins let in.
//! - `rlimit`: the resource limits of a stdio child.

mod auth;
mod origins;
mod ratelimit;
mod rlimit;

pub(super) use auth::validate_auth;
pub use auth::{
    AuthConfig, AuthMode, BearerToken, IssuerConfig, MIN_TOKEN_CHARS, OAuthConfig,
    ScopeRequirement, TokenSource,
};
pub use origins::AllowedOrigin;
pub(super) use origins::{default_origins, validate_origins};
pub use ratelimit::{
    DEFAULT_RATE, Rate, RateLimitBackend, RateLimitConfig, parse_rate, without_password,
};
pub(super) use ratelimit::{rate, validate_ratelimit};
pub use rlimit::Rlimits;
pub(super) use rlimit::validate_rlimit;

use super::diagnostics::Diagnostics;
use super::raw::RawPolicy;

/// `[policy] sensitive_elicitation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SensitiveElicitation {
    /// Refuse an elicitation that asks for a secret (S-27).
    #[default]
    Refuse,
    /// Relay it anyway.
    Allow,
}

pub(super) fn validate_sensitive_elicitation(
    raw: &RawPolicy,
    diags: &mut Diagnostics<'_>,
) -> Option<SensitiveElicitation> {
    diags.choice(
        &raw.sensitive_elicitation,
        "policy.sensitive_elicitation",
        SensitiveElicitation::Refuse,
        &[
            ("refuse", SensitiveElicitation::Refuse),
            ("allow", SensitiveElicitation::Allow),
        ],
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::testing::secrets::{errors, parse};

    #[test]
    fn defaults_are_loopback_no_auth_and_a_rate_limit() {
        let c = parse("").unwrap();
        assert_eq!(c.auth.mode, AuthMode::None);
        assert_eq!(c.ratelimit.default, Some(DEFAULT_RATE));
        assert_eq!(c.sensitive_elicitation, SensitiveElicitation::Refuse);
        let origins = &c.server.allowed_origins;
        assert!(origins.iter().any(|o| o.admits("http://localhost:3000")));
        assert!(origins.iter().any(|o| o.admits("https://127.0.0.1")));
        assert!(!origins.iter().any(|o| o.admits("https://example.com")));
    }

    #[test]
    fn sensitive_elicitation_policy() {
        let c = parse("[policy]\nsensitive_elicitation = \"allow\"\n").unwrap();
        assert_eq!(c.sensitive_elicitation, SensitiveElicitation::Allow);
        let e = errors("[policy]\nsensitive_elicitation = \"ask\"\n");
        assert!(e[0].contains("(allowed: \"refuse\", \"allow\")"), "{e:?}");
    }
}
