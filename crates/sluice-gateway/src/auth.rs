//! Who is calling: `[auth]` applied to an HTTP request's `Authorization`
//! header (S-5, S-8).
//!
//! - `bearer`: each configured token names a principal. Tokens are compared
//!   as HMAC tags under a key made at start, with `verify_slice`, so the
//!   comparison takes the same time whatever the presented token shares
//!   with a real one.
//! - `oauth`: sluice is an OAuth 2.1 resource server. A token is a JWT
//!   signed with RS256 or ES256 (nothing else, so `alg: none` and an HS256
//!   token "signed" with a public key are refused before any key is
//!   touched), by a key of a configured issuer's JWKS. `jsonwebtoken`
//!   checks the signature; `sluice_core::access` checks the claims.
//!
//! An issuer's keys are fetched through the outbound guard (S-10), from its
//! `jwks_url` or from the `jwks_uri` of its RFC 8414 / OIDC metadata (whose
//! `issuer` must be the configured one exactly), kept for [`KEYS_TTL`], and
//! fetched again for an unknown `kid` at most once per [`REFETCH_EVERY`]:
//! a flood of made-up key ids cannot turn sluice into a load on the issuer.
//!
//! The client's token stops here: nothing in this module or elsewhere
//! forwards the `Authorization` header upstream (S-8).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use rand::Rng;
use serde_json::{Value, json};
use sha2::Sha256;
use sluice_core::access::{self, Challenge, Principal};
use sluice_core::config::{AuthConfig, AuthMode, IssuerConfig, OAuthConfig};

use crate::outbound;

type HmacSha256 = Hmac<Sha256>;

/// How long fetched keys are used before they are fetched again.
pub const KEYS_TTL: Duration = Duration::from_secs(15 * 60);
/// The least time between two fetches of one issuer's keys.
pub const REFETCH_EVERY: Duration = Duration::from_secs(10);
/// The most a metadata or JWKS fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest metadata or JWKS document read.
const FETCH_MAX_BYTES: usize = 1024 * 1024;

/// `[auth]`, ready to authenticate requests.
pub struct Auth {
    mode: Mode,
}

enum Mode {
    None,
    Bearer {
        key: [u8; 32],
        tokens: Vec<(Vec<u8>, Principal)>,
    },
    OAuth {
        config: OAuthConfig,
        metadata_url: String,
        issuers: Vec<IssuerKeys>,
    },
}

/// One issuer and what is known of its keys.
struct IssuerKeys {
    config: IssuerConfig,
    state: tokio::sync::Mutex<KeyState>,
}

#[derive(Default)]
struct KeyState {
    keys: Option<JwkSet>,
    /// When the keys were last fetched, or a fetch last failed.
    attempted: Option<Instant>,
    fetched: Option<Instant>,
}

/// Why a request is not authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token: 401 with the challenge only.
    Missing,
    /// A token that does not verify: 401 `invalid_token`.
    Invalid(String),
    /// A valid token without the scopes every request needs: 403.
    Insufficient(Vec<String>),
}

impl Auth {
    /// `[auth]` of `config` (file tokens must already be loaded).
    pub fn new(config: &AuthConfig) -> Auth {
        let mode = match &config.mode {
            AuthMode::None => Mode::None,
            AuthMode::Bearer(tokens) => {
                let key: [u8; 32] = rand::rng().random();
                let tokens = tokens
                    .iter()
                    .filter_map(|t| {
                        let principal = Principal {
                            name: t.principal.clone(),
                            scopes: t.scopes.iter().cloned().collect(),
                        };
                        Some((tag(&key, t.secret()?), principal))
                    })
                    .collect();
                Mode::Bearer { key, tokens }
            }
            AuthMode::OAuth(oauth) => Mode::OAuth {
                metadata_url: access::metadata_url(&oauth.resource),
                issuers: oauth
                    .issuers
                    .iter()
                    .map(|config| IssuerKeys {
                        config: config.clone(),
                        state: tokio::sync::Mutex::new(KeyState::default()),
                    })
                    .collect(),
                config: oauth.clone(),
            },
        };
        Auth { mode }
    }

    /// Whether requests must carry a token.
    pub fn is_on(&self) -> bool {
        !matches!(self.mode, Mode::None)
    }

    /// The principal of a request with this `Authorization` header value.
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Principal, Refusal> {
        let token = match authorization {
            None if !self.is_on() => return Ok(Principal::named(access::ANONYMOUS)),
            None => return Err(Refusal::Missing),
            Some(value) => bearer_token(value).ok_or_else(|| {
                Refusal::Invalid("the Authorization header is not a Bearer token".into())
            })?,
        };
        match &self.mode {
            // A token sent to a server that asks for none is ignored, as
            // any other header.
            Mode::None => Ok(Principal::named(access::ANONYMOUS)),
            Mode::Bearer { key, tokens } => {
                // Every tag is compared, so the time taken does not say
                // which principal (if any) came close.
                let presented = keyed(key, token);
                let mut found = None;
                for (t, principal) in tokens {
                    if presented.clone().verify_slice(t).is_ok() && found.is_none() {
                        found = Some(principal.clone());
                    }
                }
                found.ok_or_else(|| Refusal::Invalid("unknown token".into()))
            }
            Mode::OAuth {
                config, issuers, ..
            } => {
                let principal = verify_jwt(token, config, issuers).await?;
                let missing = principal.missing(&config.required_scopes);
                if missing.is_empty() {
                    Ok(principal)
                } else {
                    Err(Refusal::Insufficient(config.required_scopes.clone()))
                }
            }
        }
    }

    /// The `WWW-Authenticate` value for a refusal.
    pub fn challenge(&self, refusal: &Refusal) -> String {
        let (metadata, required) = match &self.mode {
            Mode::OAuth {
                metadata_url,
                config,
                ..
            } => (
                Some(metadata_url.as_str()),
                config.required_scopes.as_slice(),
            ),
            _ => (None, [].as_slice()),
        };
        match refusal {
            Refusal::Missing => Challenge {
                resource_metadata: metadata,
                scopes: required,
                ..Challenge::default()
            },
            Refusal::Invalid(why) => Challenge {
                resource_metadata: metadata,
                error: Some("invalid_token"),
                description: Some(why),
                scopes: required,
            },
            Refusal::Insufficient(scopes) => Challenge {
                resource_metadata: metadata,
                error: Some("insufficient_scope"),
                description: Some("the token lacks a scope this operation needs"),
                scopes,
            },
        }
        .header_value()
    }

    /// The protected resource metadata (RFC 9728), in OAuth mode.
    pub fn resource_metadata(&self) -> Option<Value> {
        let Mode::OAuth { config, .. } = &self.mode else {
            return None;
        };
        Some(json!({
            "resource": config.resource,
            "authorization_servers": config.issuers.iter().map(|i| &i.issuer).collect::<Vec<_>>(),
            "scopes_supported": config.scopes_supported,
            "bearer_methods_supported": ["header"],
        }))
    }
}

/// The token of `Bearer <token>` (the scheme is case-insensitive).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The MAC of `token` under `key`, ready to finalize or to verify a tag
/// with (`verify_slice` compares in constant time).
fn keyed(key: &[u8; 32], token: &str) -> HmacSha256 {
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(token.as_bytes());
    mac
}

fn tag(key: &[u8; 32], token: &str) -> Vec<u8> {
    keyed(key, token).finalize().into_bytes().to_vec()
}

/// Verifies a JWT against the configured issuers' keys and checks its
/// claims.
async fn verify_jwt(
    token: &str,
    config: &OAuthConfig,
    issuers: &[IssuerKeys],
) -> Result<Principal, Refusal> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|_| Refusal::Invalid("the token is not a well-formed JWT".into()))?;
    if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256) {
        return Err(Refusal::Invalid(format!(
            "tokens signed with {:?} are not accepted (RS256 or ES256 only)",
            header.alg
        )));
    }
    // Signature only: the claims are checked by `access::check_claims`,
    // which reads numbers the way the rest of sluice does.
    let mut validation = Validation::new(header.alg);
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let mut last = None;
    for issuer in issuers {
        for jwk in issuer.keys_for(header.kid.as_deref(), header.alg).await {
            let Ok(key) = DecodingKey::from_jwk(&jwk) else {
                continue;
            };
            let Ok(data) = jsonwebtoken::decode::<Value>(token, &key, &validation) else {
                continue;
            };
            match access::check_claims(&data.claims, &issuer.config.issuer, config, unix_now()) {
                Ok(principal) => return Ok(principal),
                // A token whose signature is good for one issuer may still
                // name another; remember why, try the next.
                Err(e) => last = Some(e.to_string()),
            }
        }
    }
    Err(Refusal::Invalid(last.unwrap_or_else(|| {
        "no configured issuer's key verifies the token's signature".into()
    })))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl IssuerKeys {
    /// The issuer's keys that may have signed a token with this `kid` and
    /// `alg`, fetching the set when it is missing, old, or lacks the kid.
    async fn keys_for(&self, kid: Option<&str>, alg: Algorithm) -> Vec<Jwk> {
        let mut state = self.state.lock().await;
        let stale = state.fetched.is_none_or(|t| t.elapsed() >= KEYS_TTL);
        let known = |state: &KeyState| {
            state
                .keys
                .as_ref()
                .is_some_and(|set| kid.is_none_or(|k| set.find(k).is_some()))
        };
        let may_fetch = state.attempted.is_none_or(|t| t.elapsed() >= REFETCH_EVERY);
        if (stale || !known(&state)) && may_fetch {
            state.attempted = Some(Instant::now());
            match self.fetch_keys().await {
                Ok(set) => {
                    state.keys = Some(set);
                    state.fetched = Some(Instant::now());
                }
                Err(e) => tracing::warn!(
                    issuer = %self.config.issuer,
                    "cannot fetch the issuer's signing keys: {e}"
                ),
            }
        }
        let Some(set) = &state.keys else {
            return Vec::new();
        };
        set.keys
            .iter()
            .filter(|k| kid.is_none_or(|kid| k.common.key_id.as_deref() == Some(kid)))
            .filter(|k| !matches!(k.common.public_key_use, Some(PublicKeyUse::Encryption)))
            .filter(|k| {
                k.common
                    .key_algorithm
                    .is_none_or(|a| a.to_string() == format!("{alg:?}"))
            })
            .cloned()
            .collect()
    }

    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        let private = self.config.allow_private;
        let jwks_url = match &self.config.jwks_url {
            Some(url) => url.clone(),
            None => self.discover_jwks_url().await?,
        };
        let doc = fetch_json(&jwks_url, private).await?;
        serde_json::from_value(doc).map_err(|e| format!("{jwks_url} is not a JWK set: {e}"))
    }

    /// RFC 8414 first, then OIDC discovery (both placements), as
    /// MCP-NOTES §5.1 orders them; the metadata must name this issuer.
    async fn discover_jwks_url(&self) -> Result<String, String> {
        let issuer = &self.config.issuer;
        let (origin, path) = split_origin(issuer);
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ];
        let mut errors = Vec::new();
        for url in candidates {
            match fetch_json(&url, self.config.allow_private).await {
                Ok(meta) => {
                    if meta.get("issuer").and_then(Value::as_str) != Some(issuer.as_str()) {
                        return Err(format!(
                            "the metadata at {url} names another issuer than {issuer}"
                        ));
                    }
                    return meta
                        .get("jwks_uri")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| format!("the metadata at {url} has no jwks_uri"));
                }
                Err(e) => errors.push(e),
            }
        }
        Err(format!(
            "no authorization server metadata: {}",
            errors.join("; ")
        ))
    }
}

/// `https://host:port` and the path (without a trailing slash).
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => {
            let (origin, path) = url.split_at(after_scheme + i);
            (origin, path.trim_end_matches('/'))
        }
        None => (url, ""),
    }
}

/// GETs a JSON document through the outbound guard: checked addresses,
/// pinned, no redirect, bounded in time and size.
async fn fetch_json(url: &str, allow_private: bool) -> Result<Value, String> {
    let checked =
        tokio::time::timeout(FETCH_TIMEOUT, outbound::resolve_checked(url, allow_private))
            .await
            .map_err(|_| format!("resolving {url} took longer than {FETCH_TIMEOUT:?}"))?
            .map_err(|e| e.to_string())?;
    let client =
        outbound::pinned_client(reqwest::Client::builder().timeout(FETCH_TIMEOUT), &checked)
            .map_err(|e| format!("{url}: {e}"))?;
    let mut response = client
        .get(checked.url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    if status.is_redirection() {
        return Err(format!("{url} redirects, and redirects are not followed"));
    }
    if !status.is_success() {
        return Err(format!("{url} answered {status}"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        if body.len() + chunk.len() > FETCH_MAX_BYTES {
            return Err(format!("{url} sent more than {FETCH_MAX_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url} is not JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive_and_needs_a_token() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer   abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer  "), None);
    }

    #[test]
    fn origin_and_path_of_an_issuer() {
        assert_eq!(
            split_origin("https://auth.example.com/tenant1/"),
            ("https://auth.example.com", "/tenant1")
        );
        assert_eq!(
            split_origin("http://127.0.0.1:9000"),
            ("http://127.0.0.1:9000", "")
        );
    }
}
