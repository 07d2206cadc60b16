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
//! The token's (unverified) `iss` picks the one configured issuer whose
//! keys may verify it; `iss` is checked again once verified. An issuer's
//! keys are fetched through the outbound guard (S-10), over https unless
//! the issuer has `allow_private`, from its `jwks_url` or from the
//! `jwks_uri` of its RFC 8414 / OIDC metadata (whose `issuer` must be the
//! configured one exactly). Requests read the keys without waiting: keys
//! older than [`KEYS_TTL`] are refreshed in the background while still in
//! use, keys older than [`KEYS_MAX_AGE`] are no longer trusted, and an
//! unknown `kid` waits at most [`UNKNOWN_KID_WAIT`] for a fetch that runs
//! at most once per [`REFETCH_EVERY`]: a flood of made-up key ids, or an
//! issuer that does not answer, neither loads the issuer nor stalls the
//! requests whose keys are known.
//!
//! The client's token stops here: nothing in this module or elsewhere
//! forwards the `Authorization` header upstream (S-8).

use std::sync::{Arc, PoisonError};
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

/// How long fetched keys are used before they are fetched again (in the
/// background: they stay in use meanwhile).
pub const KEYS_TTL: Duration = Duration::from_secs(15 * 60);
/// Keys not refreshed for this long (the issuer keeps failing) are no
/// longer trusted: a key the issuer withdrew must stop working.
pub const KEYS_MAX_AGE: Duration = Duration::from_secs(60 * 60);
/// The least time between two fetches of one issuer's keys.
pub const REFETCH_EVERY: Duration = Duration::from_secs(10);
/// The most a request with an unknown `kid` waits for the keys.
pub const UNKNOWN_KID_WAIT: Duration = Duration::from_secs(10);
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
        issuers: Vec<Arc<IssuerKeys>>,
    },
}

/// One issuer and what is known of its keys.
struct IssuerKeys {
    config: IssuerConfig,
    /// The keys and when they were fetched: read without waiting.
    keys: std::sync::RwLock<Option<(Arc<JwkSet>, Instant)>>,
    /// Held by the one fetch in progress; holds when the last one started.
    fetching: tokio::sync::Mutex<Option<Instant>>,
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
                            issuer: None,
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
                    .map(|config| {
                        Arc::new(IssuerKeys {
                            config: config.clone(),
                            keys: std::sync::RwLock::new(None),
                            fetching: tokio::sync::Mutex::new(None),
                        })
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

/// Verifies a JWT against its issuer's keys and checks its claims.
async fn verify_jwt(
    token: &str,
    config: &OAuthConfig,
    issuers: &[Arc<IssuerKeys>],
) -> Result<Principal, Refusal> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|_| Refusal::Invalid("the token is not a well-formed JWT".into()))?;
    if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256) {
        return Err(Refusal::Invalid(format!(
            "tokens signed with {:?} are not accepted (RS256 or ES256 only)",
            header.alg
        )));
    }
    // The claimed issuer only chooses whose keys to try; nothing is
    // believed before the signature verifies (and `iss` is checked again).
    let claimed: Value = jsonwebtoken::dangerous::insecure_decode_claims(token)
        .map_err(|_| Refusal::Invalid("the token is not a well-formed JWT".into()))?;
    let iss = claimed
        .get("iss")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let issuer = issuers
        .iter()
        .find(|i| i.config.issuer == iss)
        .ok_or_else(|| Refusal::Invalid("the token's issuer is not a configured issuer".into()))?;
    // Signature only: the claims are checked by `access::check_claims`,
    // which reads numbers the way the rest of sluice does.
    let mut validation = Validation::new(header.alg);
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    for jwk in issuer.keys_for(header.kid.as_deref(), header.alg).await {
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        if let Ok(data) = jsonwebtoken::decode::<Value>(token, &key, &validation) {
            return access::check_claims(&data.claims, &issuer.config.issuer, config, unix_now())
                .map_err(|e| Refusal::Invalid(e.to_string()));
        }
    }
    Err(Refusal::Invalid(
        "no key of the token's issuer verifies its signature".into(),
    ))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl IssuerKeys {
    /// The issuer's keys that may have signed a token with this `kid` and
    /// `alg`. Known keys are answered at once (old ones refreshed in the
    /// background); an unknown `kid` waits, boundedly, for a fetch.
    async fn keys_for(self: &Arc<Self>, kid: Option<&str>, alg: Algorithm) -> Vec<Jwk> {
        let usable = self.usable();
        let known = usable
            .as_ref()
            .is_some_and(|(set, _)| kid.is_none_or(|k| set.find(k).is_some()));
        match usable {
            Some((set, fetched)) if known => {
                if fetched.elapsed() >= KEYS_TTL {
                    let this = Arc::clone(self);
                    tokio::spawn(async move { this.fetch(false).await });
                }
                matching(&set, kid, alg)
            }
            _ => {
                let _ = tokio::time::timeout(UNKNOWN_KID_WAIT, self.fetch(true)).await;
                self.usable()
                    .map(|(set, _)| matching(&set, kid, alg))
                    .unwrap_or_default()
            }
        }
    }

    /// The keys, unless they are older than [`KEYS_MAX_AGE`].
    fn usable(&self) -> Option<(Arc<JwkSet>, Instant)> {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        keys.as_ref()
            .filter(|(_, fetched)| fetched.elapsed() < KEYS_MAX_AGE)
            .map(|(set, fetched)| (Arc::clone(set), *fetched))
    }

    /// Fetches the keys unless a fetch started less than [`REFETCH_EVERY`]
    /// ago. `wait`: queue behind a fetch in progress (then find it recent);
    /// otherwise leave it to that fetch.
    async fn fetch(&self, wait: bool) {
        let mut last = if wait {
            self.fetching.lock().await
        } else {
            match self.fetching.try_lock() {
                Ok(guard) => guard,
                Err(_) => return,
            }
        };
        if last.is_some_and(|t| t.elapsed() < REFETCH_EVERY) {
            return;
        }
        *last = Some(Instant::now());
        match self.fetch_keys().await {
            Ok(set) => {
                *self.keys.write().unwrap_or_else(PoisonError::into_inner) =
                    Some((Arc::new(set), Instant::now()));
            }
            Err(e) => tracing::warn!(
                issuer = %self.config.issuer,
                "cannot fetch the issuer's signing keys: {e}"
            ),
        }
    }

    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        let jwks_url = match &self.config.jwks_url {
            Some(url) => url.clone(),
            None => self.discover_jwks_url().await?,
        };
        let doc = self.fetch_json(&jwks_url).await?;
        serde_json::from_value(doc).map_err(|e| format!("{jwks_url} is not a JWK set: {e}"))
    }

    /// RFC 8414 first, then OIDC discovery (both placements), as
    /// the MCP authorization spec (2025-11-25, Authorization Server
    /// Metadata Discovery) orders them; the metadata must name this issuer.
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
            match self.fetch_json(&url).await {
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

    /// Key material must not travel in the clear: https, unless the issuer
    /// is a private one the operator allowed.
    async fn fetch_json(&self, url: &str) -> Result<Value, String> {
        if !self.config.allow_private && !url.starts_with("https://") {
            return Err(format!(
                "{url} is not https (set allow_private = true only for a private issuer)"
            ));
        }
        fetch_json(url, self.config.allow_private).await
    }
}

/// The keys of `set` that may verify a token with this `kid` and `alg`.
fn matching(set: &JwkSet, kid: Option<&str>, alg: Algorithm) -> Vec<Jwk> {
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
