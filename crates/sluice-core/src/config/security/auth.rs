//! `[auth]`: who may use sluice over HTTP. Static bearer tokens (each
//! naming a principal) or an OAuth 2.1 resource server verifying JWTs from
//! named issuers; and `[[auth.require]]`, the scopes an upstream or one of
//! its tools needs.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use crate::config::diagnostics::Diagnostics;
use crate::config::raw::{RawAuth, RawIssuer, RawRequire, RawToken};

/// Scope names that grant everything; S-20 forbids advertising them.
const WILDCARD_SCOPES: [&str; 6] = ["*", "all", "full-access", "full_access", "admin", "root"];
/// The shortest static bearer token accepted (it is a password).
pub const MIN_TOKEN_CHARS: usize = 16;

/// `[auth]`: who may use sluice over HTTP.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AuthConfig {
    /// `mode` and what it needs.
    pub mode: AuthMode,
    /// `[[auth.require]]`: scopes needed per upstream or tool.
    pub require: Vec<ScopeRequirement>,
}

/// `[auth] mode`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum AuthMode {
    /// No authentication (only allowed on a loopback address).
    #[default]
    None,
    /// Static bearer tokens, each naming a principal.
    Bearer(Vec<BearerToken>),
    /// An OAuth 2.1 resource server that verifies JWTs.
    OAuth(OAuthConfig),
}

/// One `[[auth.token]]`.
#[derive(Clone, PartialEq)]
pub struct BearerToken {
    /// `principal`: the name the token stands for (rate limits, sessions,
    /// logs).
    pub principal: String,
    /// Where the token is.
    pub source: TokenSource,
    /// `scopes`: what the principal holds, for `[[auth.require]]`.
    pub scopes: Vec<String>,
}

/// Where a static token comes from.
#[derive(Clone, PartialEq)]
pub enum TokenSource {
    /// `env`: the variable's value, read at load time.
    Env {
        /// The variable's name.
        var: String,
        /// Its value, the token.
        value: String,
    },
    /// `file`: the file's content, trimmed, relative to the config file's
    /// directory; read by whoever loads the config ([`AuthConfig::load_token_files`]).
    File {
        /// The path as written.
        path: PathBuf,
        /// The token, once read.
        value: Option<String>,
    },
}

impl BearerToken {
    /// The token, once known.
    pub fn secret(&self) -> Option<&str> {
        match &self.source {
            TokenSource::Env { value, .. } => Some(value),
            TokenSource::File { value, .. } => value.as_deref(),
        }
    }
}

impl AuthConfig {
    /// Reads every `file` token with `read` (given the path as written);
    /// returns one message per token that cannot be used.
    pub fn load_token_files(
        &mut self,
        read: &dyn Fn(&std::path::Path) -> Result<String, String>,
    ) -> Result<(), Vec<String>> {
        let AuthMode::Bearer(tokens) = &mut self.mode else {
            return Ok(());
        };
        let mut problems = Vec::new();
        for (i, t) in tokens.iter_mut().enumerate() {
            let TokenSource::File { path, value } = &mut t.source else {
                continue;
            };
            match read(path) {
                Ok(text) if text.trim().chars().count() >= MIN_TOKEN_CHARS => {
                    *value = Some(text.trim().to_owned());
                }
                Ok(_) => problems.push(format!(
                    "auth.token[{i}].file: {} holds fewer than {MIN_TOKEN_CHARS} characters: a bearer token must be a long random secret",
                    path.display()
                )),
                Err(e) => problems.push(format!(
                    "auth.token[{i}].file: cannot read {}: {e}",
                    path.display()
                )),
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

/// `[auth]` in `mode = "oauth"`.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthConfig {
    /// `resource`: sluice's canonical URI, the audience tokens must name.
    pub resource: String,
    /// `[[auth.issuer]]`: the authorization servers whose tokens count.
    pub issuers: Vec<IssuerConfig>,
    /// `scopes_supported`: advertised in the protected resource metadata.
    pub scopes_supported: Vec<String>,
    /// `required_scopes`: needed on every request.
    pub required_scopes: Vec<String>,
    /// `clock_skew`: leeway on `exp` and `nbf`.
    pub clock_skew: Duration,
    /// `principal_claim`: the claim that names the principal.
    pub principal_claim: String,
}

/// One `[[auth.issuer]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct IssuerConfig {
    /// `issuer`: compared exactly with a token's `iss`.
    pub issuer: String,
    /// `jwks_url`: where its keys are; discovered from its metadata when
    /// absent.
    pub jwks_url: Option<String>,
    /// `allow_private`: its metadata and keys may be on a private address.
    pub allow_private: bool,
}

/// One `[[auth.require]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeRequirement {
    /// `upstream`.
    pub upstream: String,
    /// `tool`: one tool (by the upstream's name), or every tool when absent.
    pub tool: Option<String>,
    /// `scopes`: all of them are needed.
    pub scopes: Vec<String>,
}

impl fmt::Debug for BearerToken {
    /// The token is a secret: only where it comes from shows.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            TokenSource::Env { var, .. } => format!("env ${var}"),
            TokenSource::File { path, .. } => format!("file {}", path.display()),
        };
        f.debug_struct("BearerToken")
            .field("principal", &self.principal)
            .field("source", &source)
            .field("scopes", &self.scopes)
            .finish()
    }
}

pub(in crate::config) fn validate_auth(
    raw: &RawAuth,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<AuthConfig> {
    let mode = diags.choice(
        &raw.mode,
        "auth.mode",
        "none",
        &[("none", "none"), ("bearer", "bearer"), ("oauth", "oauth")],
    )?;
    let oauth_keys = [
        ("resource", raw.resource.is_some()),
        ("scopes_supported", raw.scopes_supported.is_some()),
        ("required_scopes", raw.required_scopes.is_some()),
        ("clock_skew", raw.clock_skew.is_some()),
        ("principal_claim", raw.principal_claim.is_some()),
        ("issuer", !raw.issuer.is_empty()),
    ];
    let misplaced = |diags: &mut Diagnostics<'_>, keys: &[(&str, bool)], needs: &str| {
        for (key, _) in keys.iter().filter(|k| k.1) {
            diags.push(
                None,
                &format!("auth.{key}"),
                format!("only applies with auth.mode = {needs:?} (mode is {mode:?})"),
            );
        }
    };
    let before = diags.list.len();
    let mode = match mode {
        "bearer" => {
            misplaced(diags, &oauth_keys, "oauth");
            AuthMode::Bearer(validate_tokens(&raw.token, env, diags))
        }
        "oauth" => {
            misplaced(diags, &[("token", !raw.token.is_empty())], "bearer");
            AuthMode::OAuth(validate_oauth(raw, diags)?)
        }
        _ => {
            misplaced(diags, &oauth_keys, "oauth");
            misplaced(diags, &[("token", !raw.token.is_empty())], "bearer");
            if !raw.require.is_empty() {
                diags.push(
                    None,
                    "auth.require",
                    "scopes can only be required with auth.mode = \"bearer\" or \"oauth\"".into(),
                );
            }
            AuthMode::None
        }
    };
    let require = validate_requirements(&raw.require, diags);
    (diags.list.len() == before).then_some(AuthConfig { mode, require })
}

/// `[[auth.require]]`: each names at least one scope.
fn validate_requirements(raw: &[RawRequire], diags: &mut Diagnostics<'_>) -> Vec<ScopeRequirement> {
    let mut require = Vec::new();
    for (i, r) in raw.iter().enumerate() {
        let scopes = scope_list(&r.scopes, &format!("auth.require[{i}].scopes"), diags);
        if scopes.is_empty() {
            diags.push(
                Some(r.upstream.span()),
                &format!("auth.require[{i}].scopes"),
                "must name at least one scope".into(),
            );
        }
        require.push(ScopeRequirement {
            upstream: r.upstream.get_ref().clone(),
            tool: r.tool.clone(),
            scopes,
        });
    }
    require
}

/// `[[auth.token]]` of `mode = "bearer"`: at least one, each with a
/// principal of its own.
fn validate_tokens(
    raw: &[RawToken],
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Vec<BearerToken> {
    if raw.is_empty() {
        diags.push(
            None,
            "auth.token",
            "auth.mode = \"bearer\" needs at least one [[auth.token]] with a principal and an env or file".into(),
        );
    }
    let mut tokens = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let key = format!("auth.token[{i}]");
        let principal = t.principal.get_ref();
        if principal.is_empty() || principal.chars().any(char::is_control) {
            diags.push(
                Some(t.principal.span()),
                &format!("{key}.principal"),
                "must be a non-empty name without control characters".into(),
            );
        }
        let Some(source) = token_source(&key, t, env, diags) else {
            continue;
        };
        if let Some(first) = raw[..i]
            .iter()
            .position(|o| o.principal.get_ref() == principal)
        {
            diags.push(
                Some(t.principal.span()),
                &format!("{key}.principal"),
                format!("{principal:?} is already the principal of auth.token[{first}]"),
            );
        }
        tokens.push(BearerToken {
            principal: principal.clone(),
            source,
            scopes: t.scopes.clone(),
        });
    }
    tokens
}

/// Where one token is: a variable, read now, or a file, read by the loader
/// ([`AuthConfig::load_token_files`]).
fn token_source(
    key: &str,
    t: &RawToken,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<TokenSource> {
    match (&t.env, &t.file) {
        (Some(var), None) => match env(var.get_ref()) {
            Some(value) if value.trim().chars().count() >= MIN_TOKEN_CHARS => {
                Some(TokenSource::Env {
                    var: var.get_ref().clone(),
                    value: value.trim().to_owned(),
                })
            }
            Some(_) => {
                diags.push(
                    Some(var.span()),
                    &format!("{key}.env"),
                    format!(
                        "${} is shorter than {MIN_TOKEN_CHARS} characters: a bearer token must be a long random secret",
                        var.get_ref()
                    ),
                );
                None
            }
            None => {
                diags.push(
                    Some(var.span()),
                    &format!("{key}.env"),
                    format!("${} is not set in the environment", var.get_ref()),
                );
                None
            }
        },
        (None, Some(file)) => Some(TokenSource::File {
            path: PathBuf::from(file.get_ref()),
            value: None,
        }),
        _ => {
            diags.push(
                Some(t.principal.span()),
                key,
                "needs exactly one of `env` (a variable holding the token) or `file`".into(),
            );
            None
        }
    }
}

/// The keys of `mode = "oauth"`.
fn validate_oauth(raw: &RawAuth, diags: &mut Diagnostics<'_>) -> Option<OAuthConfig> {
    let resource = validate_resource(&raw.resource, diags);
    let issuers = validate_issuers(&raw.issuer, diags);
    let scopes_supported = scope_list(
        raw.scopes_supported.as_deref().unwrap_or_default(),
        "auth.scopes_supported",
        diags,
    );
    let required_scopes = scope_list(
        raw.required_scopes.as_deref().unwrap_or_default(),
        "auth.required_scopes",
        diags,
    );
    let clock_skew = diags.duration(
        &raw.clock_skew,
        "auth.clock_skew",
        Duration::from_secs(60),
        (Duration::ZERO, Duration::from_secs(300)),
    );
    let principal_claim = raw
        .principal_claim
        .as_ref()
        .map_or_else(|| "sub".to_owned(), |c| c.get_ref().clone());
    Some(OAuthConfig {
        resource: resource?,
        issuers,
        scopes_supported,
        required_scopes,
        clock_skew: clock_skew?,
        principal_claim,
    })
}

/// `resource`: sluice's own URL, the audience its tokens must name.
fn validate_resource(raw: &Option<Spanned<String>>, diags: &mut Diagnostics<'_>) -> Option<String> {
    match raw {
        Some(r) if http_url(r.get_ref()).is_some() => Some(r.get_ref().clone()),
        Some(r) => {
            diags.push(
                Some(r.span()),
                "auth.resource",
                format!(
                    "{:?}: must be sluice's own http(s) URL, e.g. \"https://mcp.example.com/mcp\" (the audience tokens are issued for)",
                    r.get_ref()
                ),
            );
            None
        }
        None => {
            diags.push(
                None,
                "auth.resource",
                "auth.mode = \"oauth\" needs `resource`: sluice's public MCP URL, the audience its tokens must name".into(),
            );
            None
        }
    }
}

/// `[[auth.issuer]]`: at least one, each fetched over https unless it is
/// declared private.
fn validate_issuers(raw: &[RawIssuer], diags: &mut Diagnostics<'_>) -> Vec<IssuerConfig> {
    if raw.is_empty() {
        diags.push(
            None,
            "auth.issuer",
            "auth.mode = \"oauth\" needs at least one [[auth.issuer]] (an OAuth 2.1 / OIDC authorization server)".into(),
        );
    }
    let mut issuers = Vec::new();
    for (i, is) in raw.iter().enumerate() {
        let key = format!("auth.issuer[{i}]");
        let allow_private = is.allow_private.unwrap_or(false);
        // Keys fetched in the clear can be swapped on the way.
        let https_unless_private = |url: &str| url.starts_with("https://") || allow_private;
        if http_url(is.issuer.get_ref()).is_none() {
            diags.push(
                Some(is.issuer.span()),
                &format!("{key}.issuer"),
                format!("{:?}: must be an http(s) URL", is.issuer.get_ref()),
            );
        } else if !https_unless_private(is.issuer.get_ref()) {
            diags.push(
                Some(is.issuer.span()),
                &format!("{key}.issuer"),
                format!(
                    "{:?}: an issuer's keys must come over https (http only with allow_private = true, for a private issuer)",
                    is.issuer.get_ref()
                ),
            );
        }
        if let Some(j) = &is.jwks_url
            && (http_url(j.get_ref()).is_none() || !https_unless_private(j.get_ref()))
        {
            diags.push(
                Some(j.span()),
                &format!("{key}.jwks_url"),
                format!(
                    "{:?}: must be an https URL (http only with allow_private = true)",
                    j.get_ref()
                ),
            );
        }
        issuers.push(IssuerConfig {
            issuer: is.issuer.get_ref().clone(),
            jwks_url: is.jwks_url.as_ref().map(|j| j.get_ref().clone()),
            allow_private,
        });
    }
    issuers
}

/// Scope names: RFC 6749 scope tokens, never a wildcard (S-20).
fn scope_list(raw: &[Spanned<String>], key: &str, diags: &mut Diagnostics<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for s in raw {
        let scope = s.get_ref();
        let valid = !scope.is_empty()
            && scope
                .chars()
                .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\');
        if !valid {
            diags.push(
                Some(s.span()),
                key,
                format!("{scope:?} is not a scope name (printable ASCII, no spaces, quotes or backslashes)"),
            );
        } else if WILDCARD_SCOPES.contains(&scope.to_ascii_lowercase().as_str()) {
            diags.push(
                Some(s.span()),
                key,
                format!("{scope:?} is a wildcard scope: name the narrow scopes an operation needs (S-20)"),
            );
        } else {
            out.push(scope.clone());
        }
    }
    out
}

/// The scheme and authority of an http(s) URL, if it is one.
fn http_url(s: &str) -> Option<&str> {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty() && !authority.contains('@')).then_some(authority)
}

#[cfg(test)]
mod tests;
