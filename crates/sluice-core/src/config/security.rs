//! The security sections of `sluice.toml`: `[auth]`, `[ratelimit]`,
//! `[server] allowed_origins`, and the per-upstream `allow_private`,
//! `rate_limit`, `tool_rate_limit` and `rlimit` keys.
//!
//! Everything here is checked before sluice serves anything, so a weak or
//! contradictory setting (a public bind with no auth, a wildcard scope, a
//! token too short to be secret) stops the start with the key that says so.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::{Diagnostics, expand_env};

/// Scope names that grant everything; S-20 forbids advertising them.
const WILDCARD_SCOPES: [&str; 6] = ["*", "all", "full-access", "full_access", "admin", "root"];
/// The shortest static bearer token accepted (it is a password).
pub const MIN_TOKEN_CHARS: usize = 16;
/// The default tool-call rate, per principal and tool.
pub const DEFAULT_RATE: Rate = Rate {
    calls: 600,
    per: Duration::from_secs(60),
};

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

/// A call rate: `calls` per `per`, with a burst of `calls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Calls allowed in one period (and the burst).
    pub calls: u32,
    /// The period.
    pub per: Duration,
}

/// The default `[ratelimit] key_prefix`.
pub const DEFAULT_RATELIMIT_KEY_PREFIX: &str = "sluice:rl:";

/// `[ratelimit]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitConfig {
    /// `default`: every tool's rate, per principal and tool (`None`: off).
    pub default: Option<Rate>,
    /// `backend`: where the allowances are kept.
    pub backend: RateLimitBackend,
}

/// `[ratelimit] backend`.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum RateLimitBackend {
    /// In this process: each replica has its own allowance.
    #[default]
    Memory,
    /// In Redis, shared by every replica that names it.
    Redis {
        /// `redis_url`, `${VAR}` expanded: `redis://`, `rediss://` or
        /// `unix://`. May hold a password.
        url: String,
        /// `key_prefix`: what every key sluice writes starts with.
        key_prefix: String,
    },
}

/// `rlimit` of a stdio upstream: resource limits applied to the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rlimits {
    /// `memory_bytes`: address space (RLIMIT_AS).
    pub memory_bytes: Option<u64>,
    /// `cpu_seconds`: CPU time (RLIMIT_CPU).
    pub cpu_seconds: Option<u64>,
    /// `open_files`: file descriptors (RLIMIT_NOFILE).
    pub open_files: Option<u64>,
}

/// One `[server] allowed_origins` entry: `scheme://host[:port|:*]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedOrigin {
    /// `http` or `https`.
    pub scheme: String,
    /// Lowercase host (IPv6 without brackets).
    pub host: String,
    /// The port; `None` means any port.
    pub port: Option<u16>,
}

/// `[policy] sensitive_elicitation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SensitiveElicitation {
    /// Refuse an elicitation that asks for a secret (S-27).
    #[default]
    Refuse,
    /// Relay it anyway.
    Allow,
}

// === raw forms ===

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuth {
    mode: Option<Spanned<String>>,
    #[serde(default)]
    token: Vec<RawToken>,
    resource: Option<Spanned<String>>,
    scopes_supported: Option<Vec<Spanned<String>>>,
    required_scopes: Option<Vec<Spanned<String>>>,
    clock_skew: Option<Spanned<String>>,
    principal_claim: Option<Spanned<String>>,
    #[serde(default)]
    issuer: Vec<RawIssuer>,
    #[serde(default)]
    require: Vec<RawRequire>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    principal: Spanned<String>,
    env: Option<Spanned<String>>,
    file: Option<Spanned<String>>,
    #[serde(default)]
    scopes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIssuer {
    issuer: Spanned<String>,
    jwks_url: Option<Spanned<String>>,
    allow_private: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequire {
    upstream: Spanned<String>,
    tool: Option<String>,
    scopes: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRateLimit {
    default: Option<Spanned<String>>,
    backend: Option<Spanned<String>>,
    redis_url: Option<Spanned<String>>,
    key_prefix: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRlimit {
    memory_bytes: Option<Spanned<i64>>,
    cpu_seconds: Option<Spanned<i64>>,
    open_files: Option<Spanned<i64>>,
}

// === validation ===

pub(super) fn validate_auth(
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
    let mut require = Vec::new();
    for (i, r) in raw.require.iter().enumerate() {
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
    (diags.list.len() == before).then_some(AuthConfig { mode, require })
}

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
        let source = match (&t.env, &t.file) {
            (Some(var), None) => match env(var.get_ref()) {
                Some(value) if value.trim().chars().count() >= MIN_TOKEN_CHARS => {
                    TokenSource::Env {
                        var: var.get_ref().clone(),
                        value: value.trim().to_owned(),
                    }
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
                    continue;
                }
                None => {
                    diags.push(
                        Some(var.span()),
                        &format!("{key}.env"),
                        format!("${} is not set in the environment", var.get_ref()),
                    );
                    continue;
                }
            },
            (None, Some(file)) => TokenSource::File {
                path: PathBuf::from(file.get_ref()),
                value: None,
            },
            _ => {
                diags.push(
                    Some(t.principal.span()),
                    &key,
                    "needs exactly one of `env` (a variable holding the token) or `file`".into(),
                );
                continue;
            }
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

fn validate_oauth(raw: &RawAuth, diags: &mut Diagnostics<'_>) -> Option<OAuthConfig> {
    let resource = match &raw.resource {
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
    };
    if raw.issuer.is_empty() {
        diags.push(
            None,
            "auth.issuer",
            "auth.mode = \"oauth\" needs at least one [[auth.issuer]] (an OAuth 2.1 / OIDC authorization server)".into(),
        );
    }
    let mut issuers = Vec::new();
    for (i, is) in raw.issuer.iter().enumerate() {
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

pub(super) fn validate_ratelimit(
    raw: &RawRateLimit,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<RateLimitConfig> {
    let default = match &raw.default {
        None => Some(Some(DEFAULT_RATE)),
        Some(s) => rate(s, "ratelimit.default", diags),
    };
    let redis = diags.choice(
        &raw.backend,
        "ratelimit.backend",
        false,
        &[("memory", false), ("redis", true)],
    );
    let backend = match redis {
        Some(true) => redis_backend(raw, env, diags),
        Some(false) => {
            for (key, set) in [
                ("redis_url", raw.redis_url.is_some()),
                ("key_prefix", raw.key_prefix.is_some()),
            ] {
                if set {
                    diags.push(
                        None,
                        &format!("ratelimit.{key}"),
                        "applies only with backend = \"redis\"".into(),
                    );
                }
            }
            Some(RateLimitBackend::Memory)
        }
        None => None,
    };
    Some(RateLimitConfig {
        default: default?,
        backend: backend?,
    })
}

fn redis_backend(
    raw: &RawRateLimit,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<RateLimitBackend> {
    let url = match &raw.redis_url {
        None => {
            diags.push(
                raw.backend.as_ref().map(Spanned::span),
                "ratelimit.redis_url",
                "backend = \"redis\" needs redis_url: \"redis://host:6379\", \"rediss://...\" (TLS) or \"unix:///path/to/redis.sock\"; write a password as ${VAR}".into(),
            );
            None
        }
        Some(s) => match expand_env(s.get_ref(), env) {
            Err(var) => {
                diags.push(
                    Some(s.span()),
                    "ratelimit.redis_url",
                    format!("refers to ${{{var}}}, which is not set in the environment"),
                );
                None
            }
            Ok(url) => match check_redis_url(&url) {
                Ok(()) => Some(url),
                Err(why) => {
                    diags.push(
                        Some(s.span()),
                        "ratelimit.redis_url",
                        format!(
                            "{:?} {why}: write \"redis://[user:password@]host[:port][/db]\", \"rediss://...\" (TLS) or \"unix:///path/to/redis.sock\"",
                            without_password(&url)
                        ),
                    );
                    None
                }
            },
        },
    };
    let key_prefix = match &raw.key_prefix {
        None => Some(DEFAULT_RATELIMIT_KEY_PREFIX.to_owned()),
        Some(s) => {
            let p = s.get_ref();
            if (1..=64).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_graphic()) {
                Some(p.clone())
            } else {
                diags.push(
                    Some(s.span()),
                    "ratelimit.key_prefix",
                    format!("{p:?}: must be 1 to 64 visible ASCII characters, no spaces"),
                );
                None
            }
        }
    };
    Some(RateLimitBackend::Redis {
        url: url?,
        key_prefix: key_prefix?,
    })
}

/// A Redis URL the client can connect with: a known scheme, and a host
/// (or, for `unix://`, a socket path).
fn check_redis_url(text: &str) -> Result<(), &'static str> {
    let url = url::Url::parse(text).map_err(|_| "is not a URL")?;
    match url.scheme() {
        "redis" | "rediss" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        "redis" | "rediss" => Err("has no host"),
        "unix" if url.path().len() > 1 => Ok(()),
        "unix" => Err("has no socket path"),
        _ => Err("is not a redis://, rediss:// or unix:// URL"),
    }
}

/// `url` with its password (if any) masked, for diagnostics and logs.
pub fn without_password(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(mut url) if url.password().is_some() => {
            // Only fails for URLs that cannot have a password at all.
            let _ = url.set_password(Some("***"));
            url.to_string()
        }
        Ok(_) => text.to_owned(),
        // Unparsed: anything after a scheme may be a password.
        Err(_) => match text.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://***"),
            None => "***".to_owned(),
        },
    }
}

/// The URL may hold a password: it is shown without.
impl fmt::Debug for RateLimitBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateLimitBackend::Memory => f.write_str("Memory"),
            RateLimitBackend::Redis { url, key_prefix } => f
                .debug_struct("Redis")
                .field("url", &without_password(url))
                .field("key_prefix", key_prefix)
                .finish(),
        }
    }
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            default: Some(DEFAULT_RATE),
            backend: RateLimitBackend::Memory,
        }
    }
}

/// `"N/s"`, `"N/min"`, `"N/h"`, or `"off"` (`None`).
pub(super) fn rate(
    s: &Spanned<String>,
    key: &str,
    diags: &mut Diagnostics<'_>,
) -> Option<Option<Rate>> {
    if s.get_ref() == "off" {
        return Some(None);
    }
    match parse_rate(s.get_ref()) {
        Some(r) => Some(Some(r)),
        None => {
            diags.push(
                Some(s.span()),
                key,
                format!(
                    "{:?}: write calls per period, \"N/s\", \"N/min\" or \"N/h\" with N from 1 to 1000000, or \"off\"",
                    s.get_ref()
                ),
            );
            None
        }
    }
}

/// Parses `"N/s"`, `"N/min"`, `"N/h"` (1 ≤ N ≤ 1,000,000).
pub fn parse_rate(s: &str) -> Option<Rate> {
    let (n, unit) = s.split_once('/')?;
    let calls: u32 = n.trim().parse().ok()?;
    let per = match unit.trim() {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        _ => return None,
    };
    (1..=1_000_000)
        .contains(&calls)
        .then_some(Rate { calls, per })
}

pub(super) fn validate_rlimit(
    raw: &RawRlimit,
    key: &str,
    diags: &mut Diagnostics<'_>,
) -> Option<Rlimits> {
    let mut field = |v: &Option<Spanned<i64>>, name: &str, range: (usize, usize)| match v {
        None => Some(None),
        some => diags
            .integer(some, &format!("{key}.rlimit.{name}"), range.0, range)
            .map(|n| Some(n as u64)),
    };
    let memory_bytes = field(&raw.memory_bytes, "memory_bytes", (16 << 20, 1 << 40));
    let cpu_seconds = field(&raw.cpu_seconds, "cpu_seconds", (1, 1 << 31));
    let open_files = field(&raw.open_files, "open_files", (16, 1 << 20));
    Some(Rlimits {
        memory_bytes: memory_bytes?,
        cpu_seconds: cpu_seconds?,
        open_files: open_files?,
    })
}

/// `[server] allowed_origins`.
pub(super) fn validate_origins(
    raw: &Option<Vec<Spanned<String>>>,
    diags: &mut Diagnostics<'_>,
) -> Option<Vec<AllowedOrigin>> {
    let Some(raw) = raw else {
        return Some(default_origins());
    };
    let mut out = Vec::new();
    let mut ok = true;
    for s in raw {
        match AllowedOrigin::parse(s.get_ref()) {
            Some(o) => out.push(o),
            None => {
                diags.push(
                    Some(s.span()),
                    "server.allowed_origins",
                    format!(
                        "{:?} is not an origin: write scheme://host or scheme://host:port, port may be * (e.g. \"https://app.example.com\", \"http://localhost:*\")",
                        s.get_ref()
                    ),
                );
                ok = false;
            }
        }
    }
    ok.then_some(out)
}

/// Localhost on any port, over http and https.
pub(super) fn default_origins() -> Vec<AllowedOrigin> {
    ["http", "https"]
        .iter()
        .flat_map(|scheme| {
            ["localhost", "127.0.0.1", "::1"].map(|host| AllowedOrigin {
                scheme: (*scheme).to_owned(),
                host: host.to_owned(),
                port: None,
            })
        })
        .collect()
}

impl AllowedOrigin {
    /// Parses `scheme://host[:port|:*]` (no path).
    pub fn parse(s: &str) -> Option<AllowedOrigin> {
        let (scheme, rest) = s.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let (host, port) = split_host_port(rest)?;
        let port = match port {
            None => Some(if scheme == "https" { 443 } else { 80 }),
            Some("*") => None,
            Some(p) => Some(p.parse().ok()?),
        };
        Some(AllowedOrigin {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// Whether an `Origin` header value is this origin.
    pub fn admits(&self, origin: &str) -> bool {
        let Some((scheme, rest)) = origin.split_once("://") else {
            return false;
        };
        let Some((host, port)) = split_host_port(rest) else {
            return false;
        };
        let port = match port {
            None if scheme.eq_ignore_ascii_case("https") => 443,
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(p) => p,
                Err(_) => return false,
            },
        };
        scheme.eq_ignore_ascii_case(&self.scheme)
            && host.eq_ignore_ascii_case(&self.host)
            && self.port.is_none_or(|p| p == port)
    }
}

/// `host[:port]` or `[v6][:port]`, nothing after.
fn split_host_port(s: &str) -> Option<(&str, Option<&str>)> {
    if s.is_empty() || s.contains(['/', '?', '#', '@']) {
        return None;
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            p => Some((host, Some(p.strip_prefix(':')?))),
        };
    }
    match s.split_once(':') {
        Some((host, port)) if !host.is_empty() => Some((host, Some(port))),
        Some(_) => None,
        None => Some((s, None)),
    }
}

/// The scheme and authority of an http(s) URL, if it is one.
fn http_url(s: &str) -> Option<&str> {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty() && !authority.contains('@')).then_some(authority)
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

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.per.as_secs() {
            1 => "s",
            60 => "min",
            _ => "h",
        };
        write!(f, "{}/{unit}", self.calls)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::{Config, Source, UpstreamTransport};
    use super::*;

    fn env(key: &str) -> Option<String> {
        match key {
            "ALICE_TOKEN" => Some("alice-0123456789abcdef".into()),
            "SHORT" => Some("short".into()),
            "REDIS_PASSWORD" => Some("s3cret-redis-pw".into()),
            _ => None,
        }
    }

    fn parse(text: &str) -> Result<Config, Vec<String>> {
        Config::from_toml(
            Source {
                name: "sluice.toml",
                text,
            },
            &env,
        )
        .map_err(|ds| ds.iter().map(ToString::to_string).collect())
    }

    fn errors(text: &str) -> Vec<String> {
        parse(text).expect_err("should be refused")
    }

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
    fn a_public_bind_needs_auth() {
        let e = errors("[server]\nlisten = \"0.0.0.0:8787\"\n");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("sluice.toml:2:10: server.listen: 0.0.0.0:8787 is not a loopback address, and [auth] mode is \"none\""), "{e:?}");
        let ok = parse(
            "[server]\nlisten = \"0.0.0.0:8787\"\n[auth]\nmode = \"bearer\"\n[[auth.token]]\nprincipal = \"alice\"\nenv = \"ALICE_TOKEN\"\n",
        )
        .unwrap();
        let AuthMode::Bearer(tokens) = &ok.auth.mode else {
            panic!("bearer");
        };
        assert_eq!(tokens[0].secret(), Some("alice-0123456789abcdef"));
        // The token is a secret: redacted by value, never printed.
        assert!(
            ok.known_secrets()
                .contains(&"alice-0123456789abcdef".to_owned())
        );
        assert!(!format!("{:?}", ok.auth).contains("0123456789"));
    }

    #[test]
    fn bearer_tokens_are_checked() {
        let e = errors(
            "[auth]\nmode = \"bearer\"\n[[auth.token]]\nprincipal = \"a\"\nenv = \"SHORT\"\n[[auth.token]]\nprincipal = \"b\"\nenv = \"UNSET\"\n[[auth.token]]\nprincipal = \"c\"\n",
        );
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].contains("auth.token[0].env: $SHORT is shorter than 16 characters"));
        assert!(e[1].contains("auth.token[1].env: $UNSET is not set"));
        assert!(e[2].contains("auth.token[2]: needs exactly one of `env`"));
        let e = errors("[auth]\nmode = \"bearer\"\n");
        assert!(e[0].contains("needs at least one [[auth.token]]"), "{e:?}");
    }

    #[test]
    fn token_files_are_read_by_the_loader() {
        let mut c = parse(
            "[auth]\nmode = \"bearer\"\n[[auth.token]]\nprincipal = \"a\"\nfile = \"a.token\"\n[[auth.token]]\nprincipal = \"b\"\nfile = \"b.token\"\n",
        )
        .unwrap();
        let read = |p: &std::path::Path| match p.to_str() {
            Some("a.token") => Ok("  file-token-0123456789\n".to_owned()),
            _ => Err("No such file".to_owned()),
        };
        let problems = c.auth.load_token_files(&read).unwrap_err();
        assert_eq!(
            problems,
            ["auth.token[1].file: cannot read b.token: No such file"]
        );
        let AuthMode::Bearer(tokens) = &c.auth.mode else {
            panic!("bearer");
        };
        assert_eq!(tokens[0].secret(), Some("file-token-0123456789"));
    }

    #[test]
    fn oauth_needs_a_resource_an_issuer_and_narrow_scopes() {
        let c = parse(
            "[auth]\nmode = \"oauth\"\nresource = \"https://mcp.example.com/mcp\"\nscopes_supported = [\"mcp:tools\"]\nrequired_scopes = [\"mcp:tools\"]\nclock_skew = \"30s\"\n[[auth.issuer]]\nissuer = \"https://auth.example.com\"\n[[auth.require]]\nupstream = \"fs\"\ntool = \"write\"\nscopes = [\"files:write\"]\n",
        )
        .unwrap();
        let AuthMode::OAuth(o) = &c.auth.mode else {
            panic!("oauth");
        };
        assert_eq!(o.issuers[0].issuer, "https://auth.example.com");
        assert_eq!(o.clock_skew, Duration::from_secs(30));
        assert_eq!(o.principal_claim, "sub");
        assert_eq!(c.auth.require[0].scopes, ["files:write"]);
        let e = errors(
            "[auth]\nmode = \"oauth\"\nscopes_supported = [\"*\", \"all\", \"a b\"]\nclock_skew = \"1h\"\n",
        );
        let joined = e.join("\n");
        for want in [
            "auth.resource: auth.mode = \"oauth\" needs `resource`",
            "auth.issuer: auth.mode = \"oauth\" needs at least one [[auth.issuer]]",
            "auth.scopes_supported: \"*\" is a wildcard scope",
            "auth.scopes_supported: \"all\" is a wildcard scope",
            "auth.scopes_supported: \"a b\" is not a scope name",
            "auth.clock_skew: \"1h\" is out of range: must be 0ms to 300s",
        ] {
            assert!(joined.contains(want), "missing {want:?} in\n{joined}");
        }
    }

    #[test]
    fn issuer_keys_come_over_https_unless_private() {
        let base = "[auth]\nmode = \"oauth\"\nresource = \"https://mcp.example.com/mcp\"\n[[auth.issuer]]\n";
        let e = errors(&format!(
            "{base}issuer = \"http://auth.example.com\"\njwks_url = \"http://auth.example.com/jwks\"\n"
        ));
        assert!(e[0].contains("auth.issuer[0].issuer: \"http://auth.example.com\": an issuer's keys must come over https"), "{e:?}");
        assert!(
            e[1].contains(
                "auth.issuer[0].jwks_url: \"http://auth.example.com/jwks\": must be an https URL"
            ),
            "{e:?}"
        );
        assert!(
            parse(&format!(
                "{base}issuer = \"http://127.0.0.1:9000\"\nallow_private = true\n"
            ))
            .is_ok()
        );
    }

    #[test]
    fn keys_of_another_mode_are_refused() {
        let e = errors(
            "[auth]\nresource = \"https://x/mcp\"\n[[auth.require]]\nupstream = \"a\"\nscopes = [\"s\"]\n",
        );
        assert!(
            e.iter()
                .any(|m| m.contains("auth.resource: only applies with auth.mode = \"oauth\"")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|m| m.contains("auth.require: scopes can only be required")),
            "{e:?}"
        );
    }

    #[test]
    fn rates_and_rlimits() {
        assert_eq!(
            parse_rate("10/min"),
            Some(Rate {
                calls: 10,
                per: Duration::from_secs(60)
            })
        );
        assert_eq!(parse_rate("0/s"), None);
        assert_eq!(parse_rate("10/day"), None);
        let c = parse(
            "[ratelimit]\ndefault = \"off\"\n[[upstream]]\nname = \"a\"\ncommand = \"x\"\nrate_limit = \"5/s\"\ntool_rate_limit = { t = \"1/h\" }\nrlimit = { memory_bytes = 536870912, open_files = 64 }\n",
        )
        .unwrap();
        assert_eq!(c.ratelimit.default, None);
        let up = &c.upstreams[0];
        assert_eq!(up.rate_limit, Some(parse_rate("5/s")));
        assert_eq!(up.tool_rate_limits["t"], parse_rate("1/h"));
        let UpstreamTransport::Stdio { rlimit, .. } = &up.transport else {
            panic!("stdio");
        };
        assert_eq!(rlimit.memory_bytes, Some(536_870_912));
        assert_eq!(rlimit.cpu_seconds, None);
        let e = errors(
            "[ratelimit]\ndefault = \"lots\"\n[[upstream]]\nname = \"a\"\ncommand = \"x\"\nrlimit = { open_files = 1 }\nallow_private = true\n",
        );
        let joined = e.join("\n");
        assert!(
            joined.contains("ratelimit.default: \"lots\": write calls per period"),
            "{joined}"
        );
        assert!(
            joined.contains("upstream[0].rlimit.open_files: 1 is out of range: must be 16 to"),
            "{joined}"
        );
        assert!(
            joined.contains("upstream[0].allow_private: only an upstream with `url`"),
            "{joined}"
        );
    }

    #[test]
    fn origins_are_parsed() {
        let o = AllowedOrigin::parse("HTTPS://App.Example.com").unwrap();
        assert!(o.admits("https://app.example.com"));
        assert!(o.admits("https://app.example.com:443"));
        assert!(!o.admits("https://app.example.com.evil.example"));
        assert!(!o.admits("http://app.example.com"));
        for bad in [
            "app.example.com",
            "ftp://x",
            "https://x/path",
            "https://",
            "https://x:port",
        ] {
            assert_eq!(AllowedOrigin::parse(bad), None, "{bad}");
        }
        let e = errors("[server]\nallowed_origins = [\"*\"]\n");
        assert!(
            e[0].contains("server.allowed_origins: \"*\" is not an origin"),
            "{e:?}"
        );
        let c = parse("[server]\nallowed_origins = [\"http://[::1]:*\"]\n").unwrap();
        assert!(c.server.allowed_origins[0].admits("http://[::1]:1234"));
    }

    #[test]
    fn sensitive_elicitation_policy() {
        let c = parse("[policy]\nsensitive_elicitation = \"allow\"\n").unwrap();
        assert_eq!(c.sensitive_elicitation, SensitiveElicitation::Allow);
        let e = errors("[policy]\nsensitive_elicitation = \"ask\"\n");
        assert!(e[0].contains("must be \"refuse\" or \"allow\""), "{e:?}");
    }

    #[test]
    fn the_redis_backend_needs_a_url_and_keeps_its_password_out_of_diagnostics() {
        let c = parse("").unwrap();
        assert_eq!(c.ratelimit.backend, RateLimitBackend::Memory);
        let c = parse(
            "[ratelimit]\nbackend = \"redis\"\nredis_url = \"redis://:${REDIS_PASSWORD}@10.0.0.5:6380/2\"\n",
        )
        .unwrap();
        assert_eq!(
            c.ratelimit.backend,
            RateLimitBackend::Redis {
                url: "redis://:s3cret-redis-pw@10.0.0.5:6380/2".into(),
                key_prefix: DEFAULT_RATELIMIT_KEY_PREFIX.into(),
            }
        );
        assert!(!format!("{c:?}").contains("s3cret-redis-pw"), "{c:?}");
        for url in ["rediss://cache.internal", "unix:///run/redis/redis.sock"] {
            let c = parse(&format!(
                "[ratelimit]\nbackend = \"redis\"\nredis_url = \"{url}\"\nkey_prefix = \"prod:rl:\"\n"
            ))
            .unwrap();
            assert_eq!(
                c.ratelimit.backend,
                RateLimitBackend::Redis {
                    url: url.into(),
                    key_prefix: "prod:rl:".into()
                }
            );
        }

        let e = errors("[ratelimit]\nbackend = \"redis\"\n");
        assert!(
            e[0].contains("ratelimit.redis_url: backend = \"redis\" needs redis_url"),
            "{e:?}"
        );
        let e = errors("[ratelimit]\nbackend = \"memcached\"\n");
        assert!(
            e[0].contains("ratelimit.backend: \"memcached\": must be \"memory\" or \"redis\""),
            "{e:?}"
        );
        let e = errors(
            "[ratelimit]\nbackend = \"redis\"\nredis_url = \"http://u:${REDIS_PASSWORD}@host\"\n",
        );
        assert!(
            e[0].contains("ratelimit.redis_url: \"http://u:***@host/\" is not a redis://, rediss:// or unix:// URL"),
            "{e:?}"
        );
        assert!(!e.join("").contains("s3cret-redis-pw"), "{e:?}");
        let e = errors(
            "[ratelimit]\nbackend = \"redis\"\nredis_url = \"redis://:${UNSET}@h\"\nkey_prefix = \"has space\"\n",
        );
        assert!(
            e[0].contains("ratelimit.redis_url: refers to ${UNSET}, which is not set"),
            "{e:?}"
        );
        assert!(
            e[1].contains("ratelimit.key_prefix: \"has space\": must be 1 to 64 visible ASCII"),
            "{e:?}"
        );
        let e = errors("[ratelimit]\nredis_url = \"redis://h\"\n");
        assert!(
            e[0].contains("ratelimit.redis_url: applies only with backend = \"redis\""),
            "{e:?}"
        );
        assert_eq!(
            without_password("redis//:pw@host"),
            "***",
            "an unparsable URL shows nothing after its scheme"
        );
    }
}
