//! Who may do what: the pure half of sluice's OAuth 2.1 resource server.
//!
//! The signature of a token is checked by `jsonwebtoken` in the gateway;
//! what the verified claims must say is decided here, with the clock passed
//! in: `iss` is a configured issuer exactly, `aud` names sluice's resource,
//! `exp` is present and not past, `nbf` not ahead (both with the configured
//! leeway). Scopes come from `scope` (space separated) or `scp` (a list).
//! The challenges sent with 401 and 403 (RFC 6750 §3, MCP 2026-07-28
//! `basic/authorization`) are built here too, so every refusal says the same
//! thing the same way.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::config::{OAuthConfig, ScopeRequirement};

/// Who a request comes from, once authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The issuer that vouches for it (OAuth), so that the same `sub` from
    /// two issuers is two principals.
    pub issuer: Option<String>,
    /// The principal's name (a configured token's principal, a token's
    /// `sub`, `local` on stdio, `anonymous` on HTTP without auth).
    pub name: String,
    /// The scopes it holds.
    pub scopes: BTreeSet<String>,
}

/// The principal of the stdio client (the process that started sluice).
pub const LOCAL: &str = "local";
/// The principal of an HTTP client when `[auth] mode = "none"`.
pub const ANONYMOUS: &str = "anonymous";

/// Why verified claims are not accepted. The text goes into logs and the
/// `error_description` of the challenge: it never quotes the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    /// No `exp`, or not a number.
    #[error("the token has no numeric exp")]
    NoExpiry,
    /// `exp` is past.
    #[error("the token has expired")]
    Expired,
    /// `nbf` is ahead.
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    /// `iss` is not the issuer whose key verified it.
    #[error("the token's issuer is not {expected}")]
    WrongIssuer {
        /// The configured issuer.
        expected: String,
    },
    /// `aud` does not name sluice.
    #[error("the token was not issued for {resource} (aud)")]
    WrongAudience {
        /// sluice's resource URI.
        resource: String,
    },
    /// The principal claim is missing or not a string.
    #[error("the token has no string {claim} claim to name its principal")]
    NoPrincipal {
        /// The configured principal claim.
        claim: String,
    },
}

impl Principal {
    /// A principal with no scopes.
    pub fn named(name: &str) -> Principal {
        Principal {
            issuer: None,
            name: name.to_owned(),
            scopes: BTreeSet::new(),
        }
    }

    /// Who this is, issuer included: what sessions and rate limits are
    /// keyed by.
    pub fn key(&self) -> String {
        match &self.issuer {
            Some(issuer) => format!("{issuer} {}", self.name),
            None => self.name.clone(),
        }
    }

    /// The scopes of `required` that this principal does not hold.
    pub fn missing<'a>(&self, required: &'a [String]) -> Vec<&'a str> {
        required
            .iter()
            .filter(|s| !self.scopes.contains(*s))
            .map(String::as_str)
            .collect()
    }
}

/// Checks the claims of a token whose signature `issuer`'s key verified.
/// `now` is seconds since the Unix epoch.
pub fn check_claims(
    claims: &Value,
    issuer: &str,
    config: &OAuthConfig,
    now: u64,
) -> Result<Principal, ClaimError> {
    let leeway = config.clock_skew.as_secs();
    let exp = claims
        .get("exp")
        .and_then(numeric_date)
        .ok_or(ClaimError::NoExpiry)?;
    if exp.saturating_add(leeway) <= now {
        return Err(ClaimError::Expired);
    }
    if let Some(nbf) = claims.get("nbf") {
        match numeric_date(nbf) {
            Some(nbf) if nbf <= now.saturating_add(leeway) => {}
            _ => return Err(ClaimError::NotYetValid),
        }
    }
    if claims.get("iss").and_then(Value::as_str) != Some(issuer) {
        return Err(ClaimError::WrongIssuer {
            expected: issuer.to_owned(),
        });
    }
    let names_us = |v: &Value| v.as_str() == Some(config.resource.as_str());
    let aud_ok = match claims.get("aud") {
        Some(Value::Array(list)) => list.iter().any(names_us),
        Some(one) => names_us(one),
        None => false,
    };
    if !aud_ok {
        return Err(ClaimError::WrongAudience {
            resource: config.resource.clone(),
        });
    }
    let name = claims
        .get(&config.principal_claim)
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ClaimError::NoPrincipal {
            claim: config.principal_claim.clone(),
        })?;
    Ok(Principal {
        issuer: Some(issuer.to_owned()),
        name: name.to_owned(),
        scopes: scopes(claims),
    })
}

/// A NumericDate (RFC 7519 §2): seconds, possibly with a fraction.
fn numeric_date(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            // Truncation is the rounding RFC 7519 allows for a fraction.
            .map(|f| f as u64)
    })
}

/// `scope` (RFC 8693 §4.2, space separated) or `scp` (a list, as some
/// authorization servers send).
fn scopes(claims: &Value) -> BTreeSet<String> {
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => s.split_whitespace().map(str::to_owned).collect(),
        (_, Some(Value::Array(list))) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        (_, Some(Value::String(s))) => s.split_whitespace().map(str::to_owned).collect(),
        _ => BTreeSet::new(),
    }
}

/// The scopes a use of `upstream` needs: those of every `[[auth.require]]`
/// entry that names the upstream and no tool, and, for a call of `tool`,
/// those that name that tool; without repeats, in config order.
pub fn required_scopes(
    require: &[ScopeRequirement],
    upstream: &str,
    tool: Option<&str>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in require {
        if r.upstream == upstream && (r.tool.is_none() || r.tool.as_deref() == tool) {
            for s in &r.scopes {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
        }
    }
    out
}

/// The protected resource metadata URL for `resource` (RFC 9728 §3.1: the
/// well-known segment goes between the host and the path).
pub fn metadata_url(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("https", resource));
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    format!("{scheme}://{authority}/.well-known/oauth-protected-resource{path}")
}

/// What a `WWW-Authenticate: Bearer` challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge<'a> {
    /// `resource_metadata` (OAuth mode only).
    pub resource_metadata: Option<&'a str>,
    /// `error` (`invalid_token`, `insufficient_scope`).
    pub error: Option<&'static str>,
    /// `error_description`.
    pub description: Option<&'a str>,
    /// `scope`: what the operation needs.
    pub scopes: &'a [String],
}

impl Challenge<'_> {
    /// The header value. Quoted strings are RFC 9110 quoted-strings, so a
    /// quote or backslash in a description is escaped and control
    /// characters are dropped.
    pub fn header_value(&self) -> String {
        let mut out = String::from("Bearer realm=\"mcp\"");
        let mut param = |name: &str, value: &str| {
            let escaped: String = value
                .chars()
                .filter(|c| !c.is_control())
                .flat_map(|c| match c {
                    '"' | '\\' => vec!['\\', c],
                    c => vec![c],
                })
                .collect();
            out.push_str(&format!(", {name}=\"{escaped}\""));
        };
        if let Some(error) = self.error {
            param("error", error);
        }
        if let Some(d) = self.description {
            param("error_description", d);
        }
        if !self.scopes.is_empty() {
            param("scope", &self.scopes.join(" "));
        }
        if let Some(url) = self.resource_metadata {
            param("resource_metadata", url);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn oauth() -> OAuthConfig {
        OAuthConfig {
            resource: "https://mcp.example.com/mcp".into(),
            issuers: Vec::new(),
            scopes_supported: vec!["mcp:tools".into()],
            required_scopes: vec!["mcp:tools".into()],
            clock_skew: Duration::from_secs(60),
            principal_claim: "sub".into(),
        }
    }

    const ISS: &str = "https://auth.example.com";
    const NOW: u64 = 1_800_000_000;

    fn claims(extra: Value) -> Value {
        let mut c = json!({"iss": ISS, "aud": "https://mcp.example.com/mcp", "sub": "alice",
                           "exp": NOW + 300, "scope": "mcp:tools files:read"});
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                c.as_object_mut().unwrap().remove(k);
            } else {
                c[k] = v.clone();
            }
        }
        c
    }

    #[test]
    fn a_good_token_names_its_principal_and_scopes() {
        let p = check_claims(&claims(json!({})), ISS, &oauth(), NOW).unwrap();
        assert_eq!(p.name, "alice");
        assert_eq!(
            p.scopes.iter().map(String::as_str).collect::<Vec<_>>(),
            ["files:read", "mcp:tools"]
        );
        let scp = claims(json!({"scope": null, "scp": ["a", "b"]}));
        let p = check_claims(&scp, ISS, &oauth(), NOW).unwrap();
        assert_eq!(p.scopes.len(), 2);
        let aud_list = claims(json!({"aud": ["other", "https://mcp.example.com/mcp"]}));
        assert!(check_claims(&aud_list, ISS, &oauth(), NOW).is_ok());
        let fraction = claims(json!({"exp": 1_800_000_300.5}));
        assert!(check_claims(&fraction, ISS, &oauth(), NOW).is_ok());
    }

    #[test]
    fn every_bad_claim_is_refused_with_its_reason() {
        let c = oauth();
        let cases = [
            (json!({"exp": null}), ClaimError::NoExpiry),
            (json!({"exp": "soon"}), ClaimError::NoExpiry),
            (json!({"exp": NOW - 61}), ClaimError::Expired),
            (json!({"nbf": NOW + 61}), ClaimError::NotYetValid),
            (json!({"nbf": "now"}), ClaimError::NotYetValid),
            (
                json!({"iss": "https://evil.example.com"}),
                ClaimError::WrongIssuer {
                    expected: ISS.into(),
                },
            ),
            (
                json!({"iss": null}),
                ClaimError::WrongIssuer {
                    expected: ISS.into(),
                },
            ),
            (
                json!({"aud": "https://mcp.example.com/other"}),
                ClaimError::WrongAudience {
                    resource: c.resource.clone(),
                },
            ),
            (
                json!({"aud": null}),
                ClaimError::WrongAudience {
                    resource: c.resource.clone(),
                },
            ),
            (
                json!({"sub": null}),
                ClaimError::NoPrincipal {
                    claim: "sub".into(),
                },
            ),
        ];
        for (extra, want) in cases {
            assert_eq!(
                check_claims(&claims(extra.clone()), ISS, &c, NOW),
                Err(want),
                "{extra}"
            );
        }
    }

    #[test]
    fn the_leeway_is_bounded_by_the_configured_skew() {
        let c = oauth();
        assert!(check_claims(&claims(json!({"exp": NOW - 59})), ISS, &c, NOW).is_ok());
        assert!(check_claims(&claims(json!({"nbf": NOW + 59})), ISS, &c, NOW).is_ok());
        let strict = OAuthConfig {
            clock_skew: Duration::ZERO,
            ..oauth()
        };
        assert_eq!(
            check_claims(&claims(json!({"exp": NOW})), ISS, &strict, NOW),
            Err(ClaimError::Expired)
        );
    }

    #[test]
    fn scopes_required_per_upstream_and_tool() {
        let req = |upstream: &str, tool: Option<&str>, scopes: &[&str]| ScopeRequirement {
            upstream: upstream.into(),
            tool: tool.map(String::from),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        };
        let require = [
            req("fs", None, &["files:read"]),
            req("fs", Some("write_file"), &["files:write", "files:read"]),
            req("web", Some("fetch"), &["web"]),
        ];
        assert_eq!(
            required_scopes(&require, "fs", Some("write_file")),
            ["files:read", "files:write"]
        );
        assert_eq!(
            required_scopes(&require, "fs", Some("read_file")),
            ["files:read"]
        );
        // A resource or prompt of fs: the upstream-wide scopes only.
        assert_eq!(required_scopes(&require, "fs", None), ["files:read"]);
        assert!(required_scopes(&require, "web", Some("search")).is_empty());
        assert!(required_scopes(&require, "web", None).is_empty());
        let p = Principal {
            issuer: None,
            name: "a".into(),
            scopes: ["files:read".to_owned()].into(),
        };
        assert_eq!(
            p.missing(&required_scopes(&require, "fs", Some("write_file"))),
            ["files:write"]
        );
    }

    #[test]
    fn metadata_url_inserts_the_well_known_segment() {
        assert_eq!(
            metadata_url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8787/"),
            "http://127.0.0.1:8787/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn challenges_quote_their_parameters() {
        let scopes = vec!["files:write".to_owned()];
        let c = Challenge {
            resource_metadata: Some("https://x/.well-known/oauth-protected-resource/mcp"),
            error: Some("insufficient_scope"),
            description: Some("needs \"files:write\"\n"),
            scopes: &scopes,
        };
        assert_eq!(
            c.header_value(),
            "Bearer realm=\"mcp\", error=\"insufficient_scope\", error_description=\"needs \\\"files:write\\\"\", scope=\"files:write\", resource_metadata=\"https://x/.well-known/oauth-protected-resource/mcp\""
        );
        assert_eq!(Challenge::default().header_value(), "Bearer realm=\"mcp\"");
    }
}
