//! Every key `sluice.toml` accepts, as serde reads it, before any value is
//! checked.
//!
//! Every table refuses unknown keys (`deny_unknown_fields`), so a typo stops
//! the load instead of passing silently; values that a validator may refuse
//! keep their span, so its diagnostic can say where the value is.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    pub(super) server: RawServer,
    #[serde(default)]
    pub(super) upstream: Vec<RawUpstream>,
    #[serde(default)]
    pub(super) catalog: RawCatalog,
    #[serde(default)]
    pub(super) limits: RawLimits,
    #[serde(default)]
    pub(super) redaction: RawRedaction,
    #[serde(default)]
    pub(super) policy: RawPolicy,
    #[serde(default)]
    pub(super) state: RawState,
    #[serde(default)]
    pub(super) auth: RawAuth,
    #[serde(default)]
    pub(super) ratelimit: RawRateLimit,
    #[serde(default)]
    pub(super) metrics: RawMetrics,
    #[serde(default)]
    pub(super) telemetry: RawTelemetry,
    #[serde(default)]
    pub(super) view: Vec<super::view::RawView>,
    #[serde(default)]
    pub(super) sandbox: RawSandbox,
    #[serde(default)]
    pub(super) console: super::console::RawConsole,
}

/// `[server]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
    pub(super) listen: Option<Spanned<String>>,
    pub(super) separator: Option<Spanned<String>>,
    pub(super) request_timeout: Option<Spanned<String>>,
    pub(super) session_idle_timeout: Option<Spanned<String>>,
    pub(super) max_sessions: Option<Spanned<i64>>,
    pub(super) session_max_age: Option<Spanned<String>>,
    pub(super) startup_timeout: Option<Spanned<String>>,
    pub(super) shutdown_grace: Option<Spanned<String>>,
    pub(super) allowed_origins: Option<Vec<Spanned<String>>>,
    pub(super) public_url: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) connections: super::connections::RawConnections,
}

/// One `[[upstream]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawUpstream {
    pub(super) name: Spanned<String>,
    pub(super) command: Option<Spanned<String>>,
    pub(super) args: Option<Vec<String>>,
    pub(super) env: Option<BTreeMap<String, Spanned<String>>>,
    pub(super) cwd: Option<String>,
    pub(super) url: Option<Spanned<String>>,
    pub(super) headers: Option<BTreeMap<String, Spanned<String>>>,
    pub(super) trusted: Option<bool>,
    pub(super) read_only_tools: Option<Vec<String>>,
    pub(super) mcp_read_response_max_bytes: Option<Spanned<i64>>,
    pub(super) tool_read_budget: Option<BTreeMap<String, Spanned<i64>>>,
    pub(super) prefix: Option<bool>,
    pub(super) allow_private: Option<bool>,
    pub(super) rate_limit: Option<Spanned<String>>,
    pub(super) tool_rate_limit: Option<BTreeMap<String, Spanned<String>>>,
    pub(super) rlimit: Option<RawRlimit>,
    pub(super) sandbox: Option<RawSandbox>,
    pub(super) allow_dangerous: Option<bool>,
    pub(super) auth: Option<Spanned<String>>,
    pub(super) oauth: Option<Spanned<RawOAuth>>,
}

/// `oauth` of one `[[upstream]]` (with `auth = "oauth"`).
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOAuth {
    pub(super) client_id: Option<Spanned<String>>,
    pub(super) client_secret: Option<Spanned<String>>,
    pub(super) scopes: Option<Vec<Spanned<String>>>,
    pub(super) client_metadata_url: Option<Spanned<String>>,
    pub(super) redirect_port: Option<Spanned<i64>>,
}

/// `rlimit` of one `[[upstream]]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRlimit {
    pub(super) memory_bytes: Option<Spanned<i64>>,
    pub(super) cpu_seconds: Option<Spanned<i64>>,
    pub(super) open_files: Option<Spanned<i64>>,
}

/// `[sandbox]`, or `sandbox` of one `[[upstream]]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSandbox {
    pub(super) enabled: Option<bool>,
    pub(super) network: Option<bool>,
    pub(super) read: Option<Vec<Spanned<String>>>,
    pub(super) write: Option<Vec<Spanned<String>>>,
}

/// `[catalog]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCatalog {
    pub(super) lockfile: Option<Spanned<String>>,
    pub(super) on_drift: Option<Spanned<String>>,
    pub(super) require_lock: Option<bool>,
    pub(super) refresh_interval: Option<Spanned<String>>,
    pub(super) read_timeout: Option<Spanned<String>>,
    pub(super) max_pages: Option<Spanned<i64>>,
    pub(super) max_items: Option<Spanned<i64>>,
    pub(super) mode: Option<Spanned<String>>,
    pub(super) page_bytes: Option<Spanned<i64>>,
    pub(super) list_page_size: Option<Spanned<i64>>,
    pub(super) list_page_bytes: Option<Spanned<i64>>,
}

/// `[limits]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub(super) mcp_read_response_max_bytes: Option<Spanned<i64>>,
    pub(super) transport_max_message_bytes: Option<Spanned<i64>>,
}

/// `[redaction]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRedaction {
    pub(super) secret_keys: Option<Vec<Spanned<String>>>,
    pub(super) secret_env: Option<Vec<Spanned<String>>>,
}

/// `[policy]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    #[serde(default)]
    pub(super) project: Vec<RawProject>,
    pub(super) sensitive_elicitation: Option<Spanned<String>>,
}

/// One `[[policy.project]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProject {
    pub(super) tool: Spanned<String>,
    pub(super) keep: Option<Vec<Spanned<String>>>,
    pub(super) drop: Option<Vec<Spanned<String>>>,
}

/// `[state]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawState {
    pub(super) dir: Option<Spanned<String>>,
    pub(super) cursor_secret: Option<Spanned<String>>,
    pub(super) vault_key: Option<Spanned<String>>,
    pub(super) vault_previous_key: Option<Spanned<String>>,
    pub(super) url: Option<Spanned<String>>,
    pub(super) audit: Option<bool>,
    pub(super) audit_retention: Option<Spanned<String>>,
}

/// `[auth]`, whatever its mode.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuth {
    pub(super) mode: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) token: Vec<RawToken>,
    pub(super) resource: Option<Spanned<String>>,
    pub(super) scopes_supported: Option<Vec<Spanned<String>>>,
    pub(super) required_scopes: Option<Vec<Spanned<String>>>,
    pub(super) clock_skew: Option<Spanned<String>>,
    pub(super) principal_claim: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) issuer: Vec<RawIssuer>,
    #[serde(default)]
    pub(super) require: Vec<RawRequire>,
}

/// One `[[auth.token]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawToken {
    pub(super) principal: Spanned<String>,
    pub(super) env: Option<Spanned<String>>,
    pub(super) file: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) scopes: Vec<String>,
}

/// One `[[auth.issuer]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIssuer {
    pub(super) issuer: Spanned<String>,
    pub(super) jwks_url: Option<Spanned<String>>,
    pub(super) allow_private: Option<bool>,
}

/// One `[[auth.require]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRequire {
    pub(super) upstream: Spanned<String>,
    pub(super) tool: Option<String>,
    pub(super) scopes: Vec<Spanned<String>>,
}

/// `[ratelimit]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRateLimit {
    pub(super) default: Option<Spanned<String>>,
    pub(super) backend: Option<Spanned<String>>,
    pub(super) redis_url: Option<Spanned<String>>,
    pub(super) key_prefix: Option<Spanned<String>>,
}

/// `[metrics]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMetrics {
    pub(super) enabled: Option<bool>,
    pub(super) listen: Option<Spanned<String>>,
}

/// `[telemetry]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTelemetry {
    pub(super) otlp_endpoint: Option<Spanned<String>>,
    pub(super) service_name: Option<Spanned<String>>,
    pub(super) sample_ratio: Option<Spanned<f64>>,
}
