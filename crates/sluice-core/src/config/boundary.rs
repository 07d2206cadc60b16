//! What the boundary does to what crosses it (see [`crate::boundary`]):
//! `[limits]` (the read budget and the transport ceiling), `[redaction]`
//! (what else counts as secret) and `[[policy.project]]` (the operator's
//! projections of tool results); and every exact value sluice knows is
//! secret, which the redactor hides wherever it appears.

use std::fmt;

use toml::Spanned;

use super::Config;
use super::diagnostics::Diagnostics;
use super::raw::{RawLimits, RawPolicy, RawRedaction};
use super::security::{AuthMode, RateLimitBackend};
use super::state::StateStore;
use super::upstream::{UpstreamConfig, UpstreamTransport};
use crate::boundary::budget::{DEFAULT_READ_BUDGET, MAX_READ_BUDGET, MIN_READ_BUDGET};
use crate::boundary::project::{self, Projection};
use crate::boundary::redact::{self, DEFAULT_SECRET_KEYS};

/// The default transport ceiling (16 MiB).
pub const DEFAULT_TRANSPORT_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// The largest transport ceiling (1 GiB).
pub const MAX_TRANSPORT_MESSAGE_BYTES: usize = 1024 * 1024 * 1024;

/// `[limits]`: the read budget and the transport ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitsConfig {
    /// `mcp_read_response_max_bytes`: the largest read result passed, as
    /// compact JSON after redaction (64 KiB..8 MiB, default 1 MiB).
    pub read_budget: usize,
    /// `transport_max_message_bytes`: the largest message read from an
    /// upstream or a client (at least every read budget; default 16 MiB).
    pub transport_max_message_bytes: usize,
}

/// `[redaction]`: what else counts as secret.
#[derive(Clone, PartialEq, Eq)]
pub struct RedactionConfig {
    /// `secret_keys`: object keys whose values are secret (replaces the
    /// default list).
    pub secret_keys: Vec<String>,
    /// `secret_env`: names of environment variables whose values are secret.
    pub secret_env: Vec<String>,
    /// The values of the `secret_env` variables that are set.
    pub secret_env_values: Vec<String>,
}

/// One `[[policy.project]]`: a projection of one tool's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectionRule {
    /// `tool`: the exposed name (`upstream__tool`).
    pub tool: String,
    /// `keep` or `drop`.
    pub projection: Projection,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            read_budget: DEFAULT_READ_BUDGET,
            transport_max_message_bytes: DEFAULT_TRANSPORT_MESSAGE_BYTES,
        }
    }
}

impl Default for RedactionConfig {
    fn default() -> Self {
        RedactionConfig {
            secret_keys: DEFAULT_SECRET_KEYS
                .iter()
                .map(|k| (*k).to_owned())
                .collect(),
            secret_env: Vec::new(),
            secret_env_values: Vec::new(),
        }
    }
}

/// The values are secrets: only the names are shown.
impl fmt::Debug for RedactionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedactionConfig")
            .field("secret_keys", &self.secret_keys)
            .field("secret_env", &self.secret_env)
            .finish_non_exhaustive()
    }
}

/// `[limits]`, checked against every upstream's read budgets.
pub(super) fn validate_limits(
    raw: &RawLimits,
    upstreams: &[UpstreamConfig],
    diags: &mut Diagnostics<'_>,
) -> Option<LimitsConfig> {
    let d = LimitsConfig::default();
    let read_budget = diags.integer(
        &raw.mcp_read_response_max_bytes,
        "limits.mcp_read_response_max_bytes",
        d.read_budget,
        (MIN_READ_BUDGET, MAX_READ_BUDGET),
    )?;
    let transport = diags.integer(
        &raw.transport_max_message_bytes,
        "limits.transport_max_message_bytes",
        d.transport_max_message_bytes,
        (MIN_READ_BUDGET, MAX_TRANSPORT_MESSAGE_BYTES),
    )?;
    // Every read budget must fit under the ceiling, or a read just under
    // its budget could never be received whole.
    let largest = upstreams
        .iter()
        .flat_map(|u| {
            u.read_budget
                .into_iter()
                .chain(u.tool_read_budgets.values().copied())
        })
        .chain([read_budget])
        .max()
        .unwrap_or(read_budget);
    if transport < largest {
        let span = raw.transport_max_message_bytes.as_ref().map(Spanned::span);
        diags.push(
            span,
            "limits.transport_max_message_bytes",
            format!(
                "{transport} is below the largest read budget ({largest}): it must be at least every mcp_read_response_max_bytes"
            ),
        );
        return None;
    }
    Some(LimitsConfig {
        read_budget,
        transport_max_message_bytes: transport,
    })
}

pub(super) fn validate_redaction(
    raw: &RawRedaction,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> RedactionConfig {
    let mut out = RedactionConfig::default();
    if let Some(keys) = &raw.secret_keys {
        out.secret_keys.clear();
        for k in keys {
            if k.get_ref().trim().is_empty() {
                diags.push(
                    Some(k.span()),
                    "redaction.secret_keys",
                    "an empty key name would match nothing; remove it".into(),
                );
            } else {
                out.secret_keys.push(k.get_ref().clone());
            }
        }
    }
    for name in raw.secret_env.iter().flatten() {
        out.secret_env.push(name.get_ref().clone());
        // An unset variable holds no secret to hide: not an error.
        if let Some(value) = env(name.get_ref()) {
            out.secret_env_values.push(value);
        }
    }
    out
}

pub(super) fn validate_projections(
    raw: &RawPolicy,
    diags: &mut Diagnostics<'_>,
) -> Vec<ProjectionRule> {
    let mut out = Vec::new();
    for (i, rule) in raw.project.iter().enumerate() {
        let key = format!("policy.project[{i}]");
        let (paths, keep) = match (&rule.keep, &rule.drop) {
            (Some(paths), None) => (paths, true),
            (None, Some(paths)) => (paths, false),
            _ => {
                diags.push(
                    Some(rule.tool.span()),
                    &key,
                    "needs exactly one of `keep` (the only paths returned) or `drop` (paths removed)".into(),
                );
                continue;
            }
        };
        let field = if keep { "keep" } else { "drop" };
        let mut parsed = Vec::new();
        for path in paths {
            match project::parse_path(path.get_ref()) {
                Ok(steps) => parsed.push(steps),
                Err(message) => diags.push(Some(path.span()), &format!("{key}.{field}"), message),
            }
        }
        out.push(ProjectionRule {
            tool: rule.tool.get_ref().clone(),
            projection: if keep {
                Projection::Keep(parsed)
            } else {
                Projection::Drop(parsed)
            },
        });
    }
    out
}

impl Config {
    /// Every exact value sluice knows is secret: the values of
    /// `[redaction] secret_env`, and the upstream credentials it holds (`env`
    /// entries and `headers` whose names name a secret, and the token part
    /// of `Bearer`/`Basic` header values).
    pub fn known_secrets(&self) -> Vec<String> {
        let mut out = self.redaction.secret_env_values.clone();
        out.extend(self.upstream_credentials());
        // Clients' bearer tokens must not come back through a result.
        if let AuthMode::Bearer(tokens) = &self.auth.mode {
            out.extend(tokens.iter().filter_map(|t| t.secret().map(str::to_owned)));
        }
        // sluice's own store passwords, should an error ever quote them.
        let store_urls = [
            match &self.state.store {
                StateStore::Postgres { url } => Some(url),
                StateStore::Sqlite => None,
            },
            match &self.ratelimit.backend {
                RateLimitBackend::Redis { url, .. } => Some(url),
                RateLimitBackend::Memory => None,
            },
        ];
        for url in store_urls.into_iter().flatten() {
            out.extend(store_passwords(url));
        }
        out
    }

    /// The upstreams' `env` and `headers` values whose names name a secret,
    /// and the token part of such a header.
    fn upstream_credentials(&self) -> Vec<String> {
        // A credential is one whatever the configured key list says.
        let keys: Vec<&str> = self
            .redaction
            .secret_keys
            .iter()
            .map(String::as_str)
            .chain(DEFAULT_SECRET_KEYS.iter().copied())
            .collect();
        let mut out = Vec::new();
        for up in &self.upstreams {
            let (map, is_headers) = match &up.transport {
                UpstreamTransport::Stdio { env, .. } => (env, false),
                UpstreamTransport::Http { headers, .. } => (headers, true),
            };
            for (name, value) in map {
                if !redact::names_secret(name, &keys) {
                    continue;
                }
                out.push(value.clone());
                if is_headers && let Some((_, token)) = value.split_once(' ') {
                    out.push(token.trim().to_owned());
                }
            }
        }
        out
    }
}

/// The passwords in a store URL: in its userinfo and in a `password=`
/// query parameter, each as written and, when that differs, as the server
/// gets it (percent-decoded).
fn store_passwords(url: &str) -> Vec<String> {
    let Ok(url) = url::Url::parse(url) else {
        return Vec::new();
    };
    let mut passwords: Vec<String> = url.password().map(str::to_owned).into_iter().collect();
    passwords.extend(
        url.query_pairs()
            .filter(|(k, _)| k == "password")
            .map(|(_, v)| v.into_owned()),
    );
    let mut out = Vec::new();
    for password in passwords {
        let decoded = percent_encoding::percent_decode_str(&password)
            .decode_utf8_lossy()
            .into_owned();
        if decoded != password {
            out.push(decoded);
        }
        out.push(password);
    }
    out
}

#[cfg(test)]
mod tests;
