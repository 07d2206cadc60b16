//! `sluice.toml` and `mcp.json`, from raw text to a validated [`Config`].
//!
//! Parsing collects **every** problem it can before giving up, each as a
//! [`Diagnostic`] that names where it is, the key, the value and what is
//! allowed, so one run of `sluice config check` shows every mistake. Unknown
//! keys in `sluice.toml` are errors: a typo must not pass silently.
//!
//! Environment variables are read through a lookup function passed in, so
//! this module stays pure and tests never touch the process environment.
//!
//! # Layout
//!
//! Each section of `sluice.toml` has its own module: its validated types,
//! their defaults, its validator and its tests (the serde forms of every
//! section are together in `raw`). Every public item is re-exported here.
//!
//! - `raw`: every key `sluice.toml` accepts, as serde reads it, unchecked.
//! - `structure`: the text into `raw`'s form, with every unknown key, wrong
//!   type and missing key reported in one pass.
//! - `diagnostics`: [`Diagnostic`] and [`Source`], and the collector that
//!   places each problem and reads the kinds of value all sections share.
//! - `values`: the value syntaxes: `${VAR}` ([`expand_env`]) and durations
//!   ([`parse_duration`]).
//! - `server`: `[server]`, and the rule that a listener beyond loopback
//!   needs auth ([`exposure_problem`]).
//! - `upstream`: `[[upstream]]`: transports, per-upstream budgets and rates,
//!   unique names.
//! - `catalog`: `[catalog]`: reading, approving and paging catalogs.
//! - `boundary`: `[limits]`, `[redaction]`, `[[policy.project]]`, and the
//!   secrets sluice knows ([`Config::known_secrets`]).
//! - `state`: `[state]`: the state directory, the cursor secret, the audit
//!   log.
//! - `security`: `[auth]`, `[ratelimit]`, `[server] allowed_origins`,
//!   `[policy] sensitive_elicitation`, and each upstream's rates and
//!   `rlimit`.
//! - `ops`: `[metrics]` and `[telemetry]`.
//! - `console`: `[console]`, the web console.
//! - `sandbox`: `[sandbox]`, each stdio upstream's `sandbox` over it, and
//!   `allow_dangerous` (what a sandbox shows is [`crate::sandbox`]'s).
//! - `mcp_json`: the `mcp.json` import ([`Config::from_mcp_json`]).
//! - `server_json`: a `server.json` of the official MCP registry as one
//!   `[[upstream]]` ([`import_server_json`], `sluice import`).
//! - `preflight`: what `sluice config check` refuses in a config that
//!   loads: one that serves nothing, a private upstream URL without
//!   `allow_private` ([`preflight()`]).
//! - [`reload`]: what a reload changes, and what waits for a restart.

use crate::naming;

mod boundary;
mod catalog;
mod connections;
mod console;
mod diagnostics;
mod mcp_json;
mod ops;
mod preflight;
mod raw;
pub mod reload;
mod sandbox;
mod security;
mod server;
mod server_json;
mod state;
mod structure;
mod upstream;
mod upstream_oauth;
mod values;
mod view;

pub use boundary::{
    DEFAULT_TRANSPORT_MESSAGE_BYTES, LimitsConfig, MAX_TRANSPORT_MESSAGE_BYTES, ProjectionRule,
    RedactionConfig,
};
pub use catalog::{CatalogConfig, CatalogMode};
pub use console::{ConsoleConfig, ConsoleListener, DEFAULT_ADMIN_SCOPE};
pub use diagnostics::{Diagnostic, Source};
pub use ops::{MetricsConfig, TelemetryConfig};
pub use preflight::preflight;
pub use sandbox::SandboxConfig;
pub use security::{
    AllowedOrigin, AuthConfig, AuthMode, BearerToken, DEFAULT_RATE, IssuerConfig, MIN_TOKEN_CHARS,
    OAuthConfig, Rate, RateLimitBackend, RateLimitConfig, Rlimits, ScopeRequirement,
    SensitiveElicitation, TokenSource, parse_rate, without_password,
};
pub use server::{DEFAULT_LISTEN, DEFAULT_SEPARATOR, MCP_PATH, ServerConfig, exposure_problem};
pub use server_json::{ImportedUpstream, Prefer, import_server_json};
pub use state::{AUDIT_RETENTION_RANGE, DEFAULT_AUDIT_RETENTION, StateConfig, StateStore};
pub use upstream::{UpstreamConfig, UpstreamTransport};
pub use upstream_oauth::UpstreamOAuth;
pub use values::{expand_env, parse_duration};

use diagnostics::Diagnostics;
use raw::RawConfig;

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `[server]`.
    pub server: ServerConfig,
    /// `[[upstream]]`, in file order (the order that breaks ties).
    pub upstreams: Vec<UpstreamConfig>,
    /// `[catalog]`.
    pub catalog: CatalogConfig,
    /// `[limits]`.
    pub limits: LimitsConfig,
    /// `[redaction]`.
    pub redaction: RedactionConfig,
    /// `[[policy.project]]`, in file order.
    pub projections: Vec<ProjectionRule>,
    /// `[state]`.
    pub state: StateConfig,
    /// `[auth]`.
    pub auth: AuthConfig,
    /// `[ratelimit]`.
    pub ratelimit: RateLimitConfig,
    /// `[policy] sensitive_elicitation`.
    pub sensitive_elicitation: SensitiveElicitation,
    /// `[metrics]`.
    pub metrics: MetricsConfig,
    /// `[telemetry]`.
    pub telemetry: TelemetryConfig,
    /// `[[view]]`, in file order.
    pub views: Vec<crate::catalog::view::View>,
    /// `[sandbox]`: the default of every stdio upstream (each upstream's
    /// merged setting is in its transport).
    pub sandbox: SandboxConfig,
    /// `[console]`: the web console.
    pub console: ConsoleConfig,
}

impl Config {
    /// Parses and validates `sluice.toml` text. `env` looks up environment
    /// variables for `${VAR}` expansion.
    pub fn from_toml(
        source: Source<'_>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, Vec<Diagnostic>> {
        let mut diags = Diagnostics::new(source);
        let Some(raw) = structure::read(source.text, &mut diags) else {
            return Err(diags.list);
        };
        match validate(&raw, env, &mut diags) {
            Some(config) if diags.list.is_empty() => Ok(config),
            _ => Err(diags.list),
        }
    }

    /// Parses a Claude Desktop / Cursor / VS Code `mcp.json`
    /// (`{"mcpServers": {...}}` or `{"servers": {...}}`) into a config with
    /// default `[server]` settings. Keys those tools use that sluice has no
    /// use for are ignored (the file is shared with them); `"disabled": true`
    /// entries are skipped. Server names are normalized to `[a-z0-9_-]`.
    pub fn from_mcp_json(
        source: Source<'_>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, Vec<Diagnostic>> {
        let upstreams = mcp_json::upstreams(source, env)?;
        Ok(Config {
            catalog: CatalogConfig::default(),
            limits: LimitsConfig::default(),
            redaction: RedactionConfig::default(),
            projections: Vec::new(),
            state: StateConfig::default(),
            server: ServerConfig::default(),
            upstreams,
            auth: AuthConfig::default(),
            ratelimit: RateLimitConfig::default(),
            sensitive_elicitation: SensitiveElicitation::Refuse,
            metrics: MetricsConfig::default(),
            telemetry: TelemetryConfig::default(),
            views: Vec::new(),
            sandbox: SandboxConfig::default(),
            console: ConsoleConfig::default(),
        })
    }

    /// How exposed tool and prompt names are made.
    pub fn naming(&self) -> naming::Naming {
        naming::Naming::new(
            self.server.separator.clone(),
            self.upstreams
                .iter()
                .filter(|u| !u.prefixed)
                .map(|u| u.name.clone())
                .collect(),
        )
    }
}

/// Every section of `raw`, each validated whatever the others hold, so that
/// every problem is reported; `None` when a section has one.
fn validate(
    raw: &RawConfig,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<Config> {
    let server = server::validate_server(&raw.server, diags);
    let sandbox = sandbox::validate_sandbox(&raw.sandbox, env, diags);
    let default_sandbox = sandbox.clone().unwrap_or_default();
    let mut upstreams = Vec::new();
    for (i, up) in raw.upstream.iter().enumerate() {
        if let Some(up) = upstream::validate_upstream(i, up, &default_sandbox, env, diags) {
            upstreams.push(up);
        }
    }
    let separator = server.as_ref().map(|s| s.separator.as_str());
    upstream::check_names(&raw.upstream, separator, diags);
    let catalog = catalog::validate_catalog(&raw.catalog, diags);
    let limits = boundary::validate_limits(&raw.limits, &upstreams, diags);
    let redaction = boundary::validate_redaction(&raw.redaction, env, diags);
    let projections = boundary::validate_projections(&raw.policy, diags);
    let state = state::validate_state(&raw.state, env, diags);
    let auth = security::validate_auth(&raw.auth, env, diags);
    let ratelimit = security::validate_ratelimit(&raw.ratelimit, env, diags);
    let metrics = ops::validate_metrics(&raw.metrics, diags);
    let telemetry = ops::validate_telemetry(&raw.telemetry, diags);
    let sensitive_elicitation = security::validate_sensitive_elicitation(&raw.policy, diags);
    let views = view::validate_views(&raw.view, diags);
    let console = console::validate_console(&raw.console, metrics.as_ref(), diags);
    if let (Some(server), Some(auth)) = (&server, &auth) {
        server::check_exposure(server, auth, &raw.server, diags);
    }
    Some(Config {
        server: server?,
        upstreams,
        catalog: catalog?,
        limits: limits?,
        redaction,
        projections,
        state,
        auth: auth?,
        ratelimit: ratelimit?,
        sensitive_elicitation: sensitive_elicitation?,
        metrics: metrics?,
        telemetry: telemetry?,
        views,
        sandbox: sandbox?,
        console: console?,
    })
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
