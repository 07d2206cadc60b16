//! Logging in to OAuth-protected upstreams (`auth = "oauth"`): what sluice
//! decides when such an upstream refuses a request, and the login record it
//! keeps for each one.
//!
//! The OAuth protocol (RFC 9728 and RFC 8414 discovery, client ID metadata
//! documents or dynamic registration, PKCE, the token and refresh requests)
//! is the shell's, through rmcp's OAuth client. What sluice adds around it
//! is decided here:
//!
//! - a `401` is answered by one refresh, then by a login
//!   ([`after_unauthorized`]);
//! - a `403` with `error="insufficient_scope"` is a step-up: a login asking
//!   for the scopes already granted plus the ones the challenge names. A
//!   step-up the upstream still refuses after a login that granted every
//!   scope it asked for, or after [`MAX_STEP_UP_LOGINS`] logins, is given up,
//!   so that no loop of logins follows ([`after_forbidden`]);
//! - with `[auth]`, each principal logs in for itself through sluice's own
//!   pages ([`web`]: login tickets, the browser flows, their cookies);
//! - a [`LoginRecord`] holds one login (the client sluice registered as, the
//!   authorization server's metadata, the tokens, a pending step-up); the
//!   shell keeps it encrypted in the state store, keyed by [`VaultKey`].

pub mod web;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How many logins in a row a step-up may ask for before sluice stops
/// asking (the MCP authorization spec asks clients to bound these retries).
pub const MAX_STEP_UP_LOGINS: u32 = 2;

/// The `Bearer` challenge of an upstream's `WWW-Authenticate` header
/// (RFC 6750 section 3, RFC 9728 section 5.1).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Challenge {
    /// `error`: `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
    /// `scope`: what the request needs, split on spaces.
    pub scopes: Vec<String>,
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
}

impl Challenge {
    /// Reads the `Bearer` challenge of a `WWW-Authenticate` value: its
    /// auth-params, `key=token` or `key="quoted string"`, comma separated.
    /// Another scheme's challenge, or none, gives an empty challenge.
    pub fn parse(header: &str) -> Challenge {
        let mut challenge = Challenge::default();
        let Some(params) = bearer_params(header) else {
            return challenge;
        };
        for (key, value) in auth_params(params) {
            match key.to_ascii_lowercase().as_str() {
                "error" => challenge.error = Some(value),
                "scope" => challenge.scopes = split_scopes(&value),
                "resource_metadata" => challenge.resource_metadata = Some(value),
                _ => {}
            }
        }
        challenge
    }

    /// Whether it asks for more scope (a step-up), not for a new token.
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The text after `Bearer` in a `WWW-Authenticate` value, when one of its
/// challenges is `Bearer` (the scheme starts the value or follows a comma).
fn bearer_params(header: &str) -> Option<&str> {
    // ASCII lowercasing keeps every byte offset.
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = lower[from..].find("bearer") {
        let at = from + pos;
        let before = lower[..at].trim_end();
        let after = &header[at + "bearer".len()..];
        if (before.is_empty() || before.ends_with(','))
            && (after.is_empty() || after.starts_with(char::is_whitespace))
        {
            return Some(after);
        }
        from = at + "bearer".len();
    }
    None
}

/// `key=value` pairs of one challenge, stopping at the next scheme.
fn auth_params(mut s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        let Some(eq) = s.find('=') else { break };
        let key = s[..eq].trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            break;
        }
        let after = s[eq + 1..].trim_start();
        let (value, rest) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    other => value.push(other),
                }
            }
            (value, &quoted[end.min(quoted.len())..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_owned(), &after[end..])
        };
        out.push((key.to_owned(), value));
        s = rest;
    }
    out
}

fn split_scopes(value: &str) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for s in value.split_whitespace() {
        if !scopes.iter().any(|x| x == s) {
            scopes.push(s.to_owned());
        }
    }
    scopes
}

/// `granted` then every scope of `more` it lacks, in order.
pub fn union_scopes(granted: &[String], more: &[String]) -> Vec<String> {
    let mut out = granted.to_vec();
    for s in more {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// A step-up an upstream asked for that no request has settled yet, kept in
/// the login record: `sluice login` asks for its scopes, and a serving
/// sluice knows how many logins it already cost.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StepUp {
    /// What to ask for: the scopes granted plus those the challenge named.
    pub scopes: Vec<String>,
    /// Logins made for it so far.
    pub logins: u32,
    /// sluice stopped asking: the upstream refuses what a login grants.
    pub given_up: bool,
    /// The login (its `logged_in_at_ms`) whose token was refused: until a
    /// newer login, requests wait for one instead of being sent.
    pub refused_login_ms: i64,
}

/// What the shell does after a `401`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterUnauthorized {
    /// Refresh the token and send the request once more.
    Refresh,
    /// The token is dead: a new login is needed (`sluice login`).
    Login,
}

/// What the shell does after a `403` asking for more scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepUpVerdict {
    /// A new login is needed, asking for `scopes`.
    Login {
        /// The scopes the login asks for.
        scopes: Vec<String>,
    },
    /// The upstream keeps refusing what logging in grants: asking for
    /// another login would loop.
    GiveUp {
        /// What it asked for.
        scopes: Vec<String>,
    },
}

/// After a `401`: refresh once when a refresh token is held and this
/// request was not refreshed for already, else log in again.
pub fn after_unauthorized(already_refreshed: bool, can_refresh: bool) -> AfterUnauthorized {
    if can_refresh && !already_refreshed {
        AfterUnauthorized::Refresh
    } else {
        AfterUnauthorized::Login
    }
}

/// After a `403` whose challenge is `insufficient_scope`, for the token of
/// `record`, with `record.step_up` the step-up already asked for (if any):
/// what to do, and the step-up to record now.
pub fn after_forbidden(challenge: &Challenge, record: &LoginRecord) -> (StepUpVerdict, StepUp) {
    let granted = record.granted_scopes();
    let granted = granted.as_slice();
    let pending = record.step_up.as_ref();
    let wanted = union_scopes(granted, &challenge.scopes);
    let logins = pending.map_or(0, |p| p.logins);
    let holds_every_scope = challenge.scopes.iter().all(|s| granted.contains(s));
    let give_up = pending.is_some_and(|p| p.given_up)
        || (logins >= 1 && holds_every_scope)
        || logins >= MAX_STEP_UP_LOGINS;
    let step_up = StepUp {
        scopes: wanted.clone(),
        logins,
        given_up: give_up,
        refused_login_ms: record.logged_in_at_ms,
    };
    if give_up {
        (StepUpVerdict::GiveUp { scopes: wanted }, step_up)
    } else {
        (StepUpVerdict::Login { scopes: wanted }, step_up)
    }
}

/// The scopes `sluice login` asks for: a pending step-up's, else the
/// configured ones (empty: the upstream decides).
pub fn login_scopes(configured: &[String], pending: Option<&StepUp>) -> Vec<String> {
    match pending {
        Some(step_up) if !step_up.given_up && !step_up.scopes.is_empty() => {
            union_scopes(configured, &step_up.scopes)
        }
        _ => configured.to_vec(),
    }
}

/// The step-up a new login carries on: one more login for a live step-up,
/// none after a given-up one (a login by hand starts afresh).
pub fn step_up_after_login(pending: Option<&StepUp>) -> Option<StepUp> {
    match pending {
        Some(p) if !p.given_up => Some(StepUp {
            logins: p.logins + 1,
            ..p.clone()
        }),
        _ => None,
    }
}

/// Whose login a record is: an upstream's, for one principal (`""` is
/// sluice's own login, made with `sluice login`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VaultKey {
    /// The principal, or `""`.
    pub principal: String,
    /// The upstream's name.
    pub upstream: String,
}

impl VaultKey {
    /// sluice's own login to `upstream`.
    pub fn operator(upstream: &str) -> VaultKey {
        VaultKey {
            principal: String::new(),
            upstream: upstream.to_owned(),
        }
    }
}

/// One login to one upstream, as kept (sealed) in the state store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoginRecord {
    /// The record format; this is [`LoginRecord::FORMAT`].
    pub format: u32,
    /// The upstream it was made for.
    pub upstream: String,
    /// Its principal (`""`: sluice's own).
    pub principal: String,
    /// The upstream URL logged in to: a login for another URL is not used.
    pub url: String,
    /// The client sluice was, with that authorization server.
    pub client: ClientIdentity,
    /// The authorization server's metadata, as discovered at login.
    pub metadata: Value,
    /// The token response and what it granted, in rmcp's stored form.
    pub credentials: Value,
    /// A step-up not settled yet.
    pub step_up: Option<StepUp>,
    /// When the login was made (ms since the epoch).
    pub logged_in_at_ms: i64,
}

/// Whether a login's token may be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// It may.
    Ready,
    /// Not until a new login: it holds no token, or its token was refused
    /// for want of `scopes`.
    NeedsLogin {
        /// What the login must ask for (empty: the upstream decides).
        scopes: Vec<String>,
    },
    /// Not until a login by hand: a step-up was given up.
    GivenUp {
        /// What the upstream asked for.
        scopes: Vec<String>,
    },
}

impl LoginRecord {
    /// The current record format.
    pub const FORMAT: u32 = 1;

    /// Whether its token may be sent now.
    pub fn readiness(&self) -> Readiness {
        if self
            .credentials
            .get("token_response")
            .is_none_or(Value::is_null)
        {
            return Readiness::NeedsLogin { scopes: Vec::new() };
        }
        match &self.step_up {
            Some(s) if s.given_up => Readiness::GivenUp {
                scopes: s.scopes.clone(),
            },
            Some(s) if s.refused_login_ms == self.logged_in_at_ms => Readiness::NeedsLogin {
                scopes: s.scopes.clone(),
            },
            _ => Readiness::Ready,
        }
    }

    /// The record after its token was found dead (a `401` that a refresh
    /// did not cure): kept for its client, without tokens.
    pub fn without_tokens(mut self) -> LoginRecord {
        if let Some(c) = self.credentials.as_object_mut() {
            c.insert("token_response".into(), Value::Null);
        }
        self
    }

    /// Whether it may be used for `url` by `key` (a record copied under
    /// another key, or kept from another URL, is not).
    pub fn is_for(&self, key: &VaultKey, url: &str) -> bool {
        self.format == Self::FORMAT
            && self.upstream == key.upstream
            && self.principal == key.principal
            && self.url == url
    }

    /// The scopes the last token was granted.
    pub fn granted_scopes(&self) -> Vec<String> {
        self.credentials
            .get("granted_scopes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether a refresh token is held.
    pub fn can_refresh(&self) -> bool {
        self.credentials
            .pointer("/token_response/refresh_token")
            .is_some_and(|t| t.as_str().is_some_and(|s| !s.is_empty()))
    }

    /// When the access token expires (ms since the epoch), if known.
    pub fn expires_at_ms(&self) -> Option<i64> {
        let received = self.credentials.get("token_received_at")?.as_i64()?;
        let lifetime = self
            .credentials
            .pointer("/token_response/expires_in")?
            .as_i64()?;
        received.checked_add(lifetime)?.checked_mul(1000)
    }
}

/// The client sluice registered as (or was configured as).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientIdentity {
    /// `client_id` (a URL for a client ID metadata document).
    pub client_id: String,
    /// The secret of a confidential client.
    pub client_secret: Option<String>,
    /// How it got the id: `"preregistered"`, `"metadata_document"` or
    /// `"dynamic"`.
    pub registration: String,
    /// The redirect URI the login used.
    pub redirect_uri: String,
}

/// How sluice gets a client id from an authorization server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// `[upstream.oauth] client_id`, registered out of band.
    Preregistered,
    /// `client_metadata_url` is the client id (a client ID metadata
    /// document), the server supporting them.
    MetadataDocument,
    /// RFC 7591 dynamic registration at the server's `registration_endpoint`.
    Dynamic,
}

impl Registration {
    /// Its word, as kept in the login record and shown by `sluice auth status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Registration::Preregistered => "preregistered",
            Registration::MetadataDocument => "metadata_document",
            Registration::Dynamic => "dynamic",
        }
    }
}

/// The MCP authorization spec's order: a pre-registered client, else a
/// client ID metadata document when both sides have one, else dynamic
/// registration; an error when none is possible.
pub fn registration(
    preregistered: bool,
    has_metadata_document: bool,
    server_supports_documents: bool,
    server_registers: bool,
) -> Result<Registration, &'static str> {
    if preregistered {
        Ok(Registration::Preregistered)
    } else if has_metadata_document && server_supports_documents {
        Ok(Registration::MetadataDocument)
    } else if server_registers {
        Ok(Registration::Dynamic)
    } else {
        Err(
            "the authorization server offers no dynamic registration and supports no client ID metadata document sluice has: set [upstream.oauth] client_id (and client_secret) of a client registered with it, or client_metadata_url",
        )
    }
}

/// A 2025-03-26 server without protected resource metadata has its
/// authorization server metadata at its own origin's
/// `/.well-known/oauth-authorization-server`; some name an issuer there
/// with a path (`https://mcp.example.com/oauth`), which a strict RFC 8414
/// check refuses, since the document was not found under that path. sluice
/// takes such a document only when its issuer is on the MCP server's own
/// origin (the server vouches for itself), never another host's.
pub fn legacy_issuer_acceptable(server_url: &str, received_issuer: &str) -> bool {
    match (origin(server_url), origin(received_issuer)) {
        (Some(server), Some(issuer)) => server == issuer,
        _ => false,
    }
}

/// `scheme://authority` of an http(s) URL, lowercased.
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?.to_ascii_lowercase();
    (!authority.is_empty() && !authority.contains('@')).then(|| format!("{scheme}://{authority}"))
}

/// The command that logs in to `upstream`, for error messages.
pub fn login_command(upstream: &str) -> String {
    format!("sluice login {upstream}")
}

#[cfg(test)]
mod tests;
