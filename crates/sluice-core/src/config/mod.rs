//! `sluice.toml` and `mcp.json`, from raw text to a validated [`Config`].
//!
//! Parsing collects **every** problem it can before giving up, each as a
//! [`Diagnostic`] that names where it is, the key, the value and what is
//! allowed, so one run of `sluice config check` shows every mistake. Unknown
//! keys in `sluice.toml` are errors: a typo must not pass silently.
//!
//! Environment variables are read through a lookup function passed in, so
//! this module stays pure and tests never touch the process environment.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use crate::boundary::budget::{DEFAULT_READ_BUDGET, MAX_READ_BUDGET, MIN_READ_BUDGET};
use crate::boundary::project::{self, Projection};
use crate::boundary::redact::{self, DEFAULT_SECRET_KEYS};
use crate::catalog::drift::OnDrift;
use crate::discovery::WalkLimits;
use crate::envelope::DEFAULT_PAGE_BYTES;
use crate::naming;

mod ops;
pub mod reload;
mod security;

pub use ops::{MetricsConfig, TelemetryConfig};
pub use security::{
    AllowedOrigin, AuthConfig, AuthMode, BearerToken, DEFAULT_RATE, IssuerConfig, MIN_TOKEN_CHARS,
    OAuthConfig, Rate, RateLimitBackend, RateLimitConfig, Rlimits, ScopeRequirement,
    SensitiveElicitation, TokenSource, parse_rate, without_password,
};
use security::{RawAuth, RawRateLimit, RawRlimit};

/// The default HTTP listen address (loopback only).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";
/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";
/// The default transport ceiling (16 MiB).
pub const DEFAULT_TRANSPORT_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// The largest transport ceiling (1 GiB).
pub const MAX_TRANSPORT_MESSAGE_BYTES: usize = 1024 * 1024 * 1024;
/// The default tool and prompt name separator.
pub const DEFAULT_SEPARATOR: &str = "__";

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
}

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

/// `[catalog]`: how catalogs are read, approved and re-read.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogConfig {
    /// `lockfile`: the approved catalogs, relative to the config file's
    /// directory. Default `sluice.lock`.
    pub lockfile: PathBuf,
    /// `on_drift`: `"block"` (default) or `"warn"`.
    pub on_drift: OnDrift,
    /// `require_lock`: refuse to serve without a lockfile (default false:
    /// serve unpinned, and say so at start).
    pub require_lock: bool,
    /// `refresh_interval`: how often every catalog is read again, besides
    /// on `list_changed` (`0s`: only on `list_changed`). Default 5m.
    pub refresh_interval: Duration,
    /// `read_timeout`: the most one whole catalog read may take. Default 2m.
    pub read_timeout: Duration,
    /// `max_pages` and `max_items`: caps on one list's walk.
    pub limits: WalkLimits,
    /// `mode`: what `tools/list` shows.
    pub mode: CatalogMode,
    /// `page_bytes`: the byte cap of a page of sluice's own list tools.
    pub page_bytes: usize,
    /// `list_page_size`: rows in a page of the MCP lists (`tools/list`, ...).
    pub list_page_size: usize,
    /// `list_page_bytes`: the byte cap of a page of the MCP lists.
    pub list_page_bytes: usize,
}

/// `[catalog] mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogMode {
    /// `tools/list` shows every tool (paged).
    Full,
    /// `tools/list` shows the four meta-tools of progressive discovery.
    Progressive,
}

/// `[state]`: where sluice keeps what must outlive a restart.
#[derive(Clone, PartialEq, Eq)]
pub struct StateConfig {
    /// `dir`: relative to the config file's directory. Default `.sluice`.
    pub dir: PathBuf,
    /// `cursor_secret`: seals list cursors (at least 32 characters); when
    /// absent, a random key is made at first start and kept in `dir`.
    pub cursor_secret: Option<String>,
    /// `url`: where the audit log is kept.
    pub store: StateStore,
    /// `audit`: whether every decision is written to the audit log
    /// (default true).
    pub audit: bool,
    /// `audit_retention`: audit rows older than this are deleted (1h to
    /// 3650d, default 30d).
    pub audit_retention: Duration,
}

/// `[state] url`: the database of the audit log.
#[derive(Clone, PartialEq, Eq)]
pub enum StateStore {
    /// No `url`: an SQLite file in `[state] dir`.
    Sqlite,
    /// A `postgres://` or `postgresql://` URL (after `${VAR}` expansion).
    Postgres {
        /// The URL; it may hold a password, so it is never shown.
        url: String,
    },
}

/// The default `[state] audit_retention` (30 days).
pub const DEFAULT_AUDIT_RETENTION: Duration = Duration::from_secs(30 * 86_400);
/// The range of `[state] audit_retention`: 1 hour to 3650 days.
pub const AUDIT_RETENTION_RANGE: (Duration, Duration) = (
    Duration::from_secs(3_600),
    Duration::from_secs(3_650 * 86_400),
);

/// `[server]`: how sluice serves its clients.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// `listen`: the HTTP address; the endpoint is [`MCP_PATH`].
    pub listen: SocketAddr,
    /// `separator`: between an upstream's name and a tool or prompt name.
    pub separator: String,
    /// `request_timeout`: the hard ceiling on one forwarded request;
    /// progress notifications do not extend it.
    pub request_timeout: Duration,
    /// `session_idle_timeout`: a legacy HTTP session unused this long is
    /// closed, so a client that never sends DELETE leaks nothing.
    pub session_idle_timeout: Duration,
    /// `max_sessions`: the most legacy HTTP sessions open at once.
    pub max_sessions: usize,
    /// `session_max_age`: the oldest session id another replica still
    /// takes up (ids carry their session; this bounds how long one that
    /// leaked, or was ended on another replica, stays usable).
    pub session_max_age: Duration,
    /// `startup_timeout`: how long an upstream may take to start and answer
    /// its handshake.
    pub startup_timeout: Duration,
    /// `shutdown_grace`: how long a child gets after SIGTERM before SIGKILL.
    pub shutdown_grace: Duration,
    /// `allowed_origins`: the browser origins that may call sluice (a
    /// present `Origin` outside them gets 403). Default: localhost.
    pub allowed_origins: Vec<AllowedOrigin>,
}

/// One `[[upstream]]`.
#[derive(Clone, PartialEq)]
pub struct UpstreamConfig {
    /// `name`: unique, `[a-z0-9_-]`.
    pub name: String,
    /// How sluice reaches it.
    pub transport: UpstreamTransport,
    /// `trusted`: whether its tool annotations are believed (a
    /// `readOnlyHint` makes a tool's results reads only when it is).
    pub trusted: bool,
    /// `read_only_tools`: tools (by the upstream's names) whose results are
    /// reads, whatever their annotations say.
    pub read_only_tools: Vec<String>,
    /// `mcp_read_response_max_bytes`: this upstream's read budget, when it
    /// differs from `[limits]`.
    pub read_budget: Option<usize>,
    /// `tool_read_budget`: per-tool read budgets, by the upstream's names.
    pub tool_read_budgets: BTreeMap<String, usize>,
    /// `prefix`: whether its tool and prompt names are shown as
    /// `<name><separator><tool>` (default) or as they are.
    pub prefixed: bool,
    /// `rate_limit`: its tools' call rate, when it differs from
    /// `[ratelimit] default` (`Some(None)`: off).
    pub rate_limit: Option<Option<Rate>>,
    /// `tool_rate_limit`: per-tool rates, by the upstream's names.
    pub tool_rate_limits: BTreeMap<String, Option<Rate>>,
}

/// How sluice reaches an upstream.
#[derive(Clone, PartialEq)]
pub enum UpstreamTransport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// `command`.
        command: String,
        /// `args`.
        args: Vec<String>,
        /// `env`, with `${VAR}` expanded. The child gets only this plus
        /// `PATH` and `HOME`.
        env: BTreeMap<String, String>,
        /// `cwd`.
        cwd: Option<PathBuf>,
        /// `rlimit`: resource limits of the child.
        rlimit: Rlimits,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// `url`.
        url: String,
        /// `headers`, with `${VAR}` expanded.
        headers: BTreeMap<String, String>,
        /// `allow_private`: the URL may resolve to a loopback, private or
        /// link-local address (S-10 refuses those by default).
        allow_private: bool,
    },
}

/// One problem found in a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// `file:line:col` when known, else the file name.
    pub location: String,
    /// The dotted key path, e.g. `upstream[2].name`.
    pub key: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

/// Where a configuration comes from, for diagnostics.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The file name shown in diagnostics.
    pub name: &'a str,
    /// The file's text.
    pub text: &'a str,
}

// === raw (unvalidated) forms ===

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    upstream: Vec<RawUpstream>,
    #[serde(default)]
    catalog: RawCatalog,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    redaction: RawRedaction,
    #[serde(default)]
    policy: RawPolicy,
    #[serde(default)]
    state: RawState,
    #[serde(default)]
    auth: RawAuth,
    #[serde(default)]
    ratelimit: RawRateLimit,
    #[serde(default)]
    metrics: ops::RawMetrics,
    #[serde(default)]
    telemetry: ops::RawTelemetry,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    mcp_read_response_max_bytes: Option<Spanned<i64>>,
    transport_max_message_bytes: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRedaction {
    secret_keys: Option<Vec<Spanned<String>>>,
    secret_env: Option<Vec<Spanned<String>>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    project: Vec<RawProject>,
    sensitive_elicitation: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProject {
    tool: Spanned<String>,
    keep: Option<Vec<Spanned<String>>>,
    drop: Option<Vec<Spanned<String>>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCatalog {
    lockfile: Option<Spanned<String>>,
    on_drift: Option<Spanned<String>>,
    require_lock: Option<bool>,
    refresh_interval: Option<Spanned<String>>,
    read_timeout: Option<Spanned<String>>,
    max_pages: Option<Spanned<i64>>,
    max_items: Option<Spanned<i64>>,
    mode: Option<Spanned<String>>,
    page_bytes: Option<Spanned<i64>>,
    list_page_size: Option<Spanned<i64>>,
    list_page_bytes: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawState {
    dir: Option<Spanned<String>>,
    cursor_secret: Option<Spanned<String>>,
    url: Option<Spanned<String>>,
    audit: Option<bool>,
    audit_retention: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawServer {
    listen: Option<Spanned<String>>,
    separator: Option<Spanned<String>>,
    request_timeout: Option<Spanned<String>>,
    session_idle_timeout: Option<Spanned<String>>,
    max_sessions: Option<Spanned<i64>>,
    session_max_age: Option<Spanned<String>>,
    startup_timeout: Option<Spanned<String>>,
    shutdown_grace: Option<Spanned<String>>,
    allowed_origins: Option<Vec<Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstream {
    name: Spanned<String>,
    command: Option<Spanned<String>>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, Spanned<String>>>,
    cwd: Option<String>,
    url: Option<Spanned<String>>,
    headers: Option<BTreeMap<String, Spanned<String>>>,
    trusted: Option<bool>,
    read_only_tools: Option<Vec<String>>,
    mcp_read_response_max_bytes: Option<Spanned<i64>>,
    tool_read_budget: Option<BTreeMap<String, Spanned<i64>>>,
    prefix: Option<bool>,
    allow_private: Option<bool>,
    rate_limit: Option<Spanned<String>>,
    tool_rate_limit: Option<BTreeMap<String, Spanned<String>>>,
    rlimit: Option<RawRlimit>,
}

/// Collects diagnostics with locations resolved against one source.
struct Diagnostics<'a> {
    source: Source<'a>,
    list: Vec<Diagnostic>,
}

// === impl Config ===

impl Config {
    /// Parses and validates `sluice.toml` text. `env` looks up environment
    /// variables for `${VAR}` expansion.
    pub fn from_toml(
        source: Source<'_>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, Vec<Diagnostic>> {
        let mut diags = Diagnostics {
            source,
            list: Vec::new(),
        };
        let raw: RawConfig = match toml::from_str(source.text) {
            Ok(raw) => raw,
            Err(e) => {
                // serde stops at the first structural problem (unknown key,
                // wrong type); report it with its position.
                diags.push(e.span(), "", e.message().trim().to_owned());
                return Err(diags.list);
            }
        };
        let server = validate_server(&raw.server, &mut diags);
        let mut upstreams = Vec::new();
        for (i, up) in raw.upstream.iter().enumerate() {
            if let Some(up) = validate_upstream(i, up, env, &mut diags) {
                upstreams.push(up);
            }
        }
        check_names(&raw.upstream, server.as_ref(), &mut diags);
        let catalog = validate_catalog(&raw.catalog, &mut diags);
        let limits = validate_limits(&raw.limits, &upstreams, &mut diags);
        let redaction = validate_redaction(&raw.redaction, env, &mut diags);
        let projections = validate_projections(&raw.policy, &mut diags);
        let state = validate_state(&raw.state, env, &mut diags);
        let auth = security::validate_auth(&raw.auth, env, &mut diags);
        let ratelimit = security::validate_ratelimit(&raw.ratelimit, env, &mut diags);
        let metrics = ops::validate_metrics(&raw.metrics, &mut diags);
        let telemetry = ops::validate_telemetry(&raw.telemetry, &mut diags);
        let sensitive_elicitation = diags.choice(
            &raw.policy.sensitive_elicitation,
            "policy.sensitive_elicitation",
            SensitiveElicitation::Refuse,
            &[
                ("refuse", SensitiveElicitation::Refuse),
                ("allow", SensitiveElicitation::Allow),
            ],
        );
        if let (Some(server), Some(auth)) = (&server, &auth) {
            check_exposure(server, auth, &raw.server, &mut diags);
        }
        match (
            (server, catalog, limits),
            (auth, ratelimit, sensitive_elicitation),
            (metrics, telemetry),
        ) {
            (
                (Some(server), Some(catalog), Some(limits)),
                (Some(auth), Some(ratelimit), Some(sensitive_elicitation)),
                (Some(metrics), Some(telemetry)),
            ) if diags.list.is_empty() => Ok(Config {
                server,
                upstreams,
                catalog,
                limits,
                redaction,
                projections,
                state,
                auth,
                ratelimit,
                sensitive_elicitation,
                metrics,
                telemetry,
            }),
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
        let mut diags = Diagnostics {
            source,
            list: Vec::new(),
        };
        let doc: Value = match serde_json::from_str(source.text) {
            Ok(doc) => doc,
            Err(e) => {
                diags.list.push(Diagnostic {
                    location: format!("{}:{}:{}", source.name, e.line(), e.column()),
                    key: String::new(),
                    message: format!("not valid JSON: {e}"),
                });
                return Err(diags.list);
            }
        };
        let servers = doc
            .get("mcpServers")
            .or_else(|| doc.get("servers"))
            .and_then(Value::as_object);
        let Some(servers) = servers else {
            diags.push(
                None,
                "mcpServers",
                "expected an object {\"mcpServers\": {\"name\": {...}}}".into(),
            );
            return Err(diags.list);
        };
        let mut upstreams: Vec<UpstreamConfig> = Vec::new();
        for (raw_name, entry) in servers {
            let key = format!("mcpServers.{raw_name}");
            if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let Some(name) = naming::normalize_upstream_name(raw_name) else {
                diags.push(None, &key, "the server name has no usable character".into());
                continue;
            };
            if let Some(other) = upstreams.iter().find(|u| u.name == name) {
                diags.push(
                    None,
                    &key,
                    format!(
                        "normalizes to {name:?}, the same as another server ({:?})",
                        other.name
                    ),
                );
                continue;
            }
            if let Some(transport) = mcp_json_transport(&key, entry, env, &mut diags) {
                upstreams.push(UpstreamConfig {
                    name,
                    transport,
                    trusted: false,
                    read_only_tools: Vec::new(),
                    read_budget: None,
                    tool_read_budgets: BTreeMap::new(),
                    prefixed: true,
                    rate_limit: None,
                    tool_rate_limits: BTreeMap::new(),
                });
            }
        }
        if !diags.list.is_empty() {
            return Err(diags.list);
        }
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
        })
    }
}

fn mcp_json_transport(
    key: &str,
    entry: &Value,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<UpstreamTransport> {
    let strings = |field: &str| -> Option<BTreeMap<String, String>> {
        entry.get(field).and_then(Value::as_object).map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
    };
    let mut expand_all = |field: &str, map: BTreeMap<String, String>| {
        map.into_iter()
            .filter_map(|(k, v)| match expand_env(&v, env) {
                Ok(v) => Some((k, v)),
                Err(var) => {
                    diags.push(
                        None,
                        &format!("{key}.{field}.{k}"),
                        format!("refers to ${{{var}}}, which is not set in the environment"),
                    );
                    None
                }
            })
            .collect::<BTreeMap<_, _>>()
    };
    match (entry.get("command"), entry.get("url")) {
        (Some(Value::String(command)), None) => {
            let args = entry
                .get("args")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            let env_map = expand_all("env", strings("env").unwrap_or_default());
            Some(UpstreamTransport::Stdio {
                command: command.clone(),
                args,
                env: env_map,
                cwd: entry.get("cwd").and_then(Value::as_str).map(PathBuf::from),
                rlimit: Rlimits::default(),
            })
        }
        (None, Some(Value::String(url))) => {
            if let Err(msg) = check_url(url) {
                diags.push(None, &format!("{key}.url"), format!("{url:?}: {msg}"));
                return None;
            }
            let headers = expand_all("headers", strings("headers").unwrap_or_default());
            Some(UpstreamTransport::Http {
                url: url.clone(),
                headers,
                // sluice's own key, which the other tools ignore.
                allow_private: entry.get("allowPrivate") == Some(&Value::Bool(true)),
            })
        }
        _ => {
            diags.push(
                None,
                key,
                "needs either \"command\" (a stdio server) or \"url\" (a Streamable HTTP server), as a string".into(),
            );
            None
        }
    }
}

fn validate_server(raw: &RawServer, diags: &mut Diagnostics<'_>) -> Option<ServerConfig> {
    let d = ServerConfig::default();
    let listen = match &raw.listen {
        None => Some(d.listen),
        Some(s) => diags.socket_addr(s, "server.listen"),
    };
    let separator = match &raw.separator {
        None => Some(d.separator.clone()),
        Some(s) if naming::is_valid_separator(s.get_ref()) => Some(s.get_ref().clone()),
        Some(s) => {
            diags.push(
                Some(s.span()),
                "server.separator",
                format!(
                    "{:?}: must be 1 to 8 characters from [A-Za-z0-9_.-], so that exposed names stay valid tool names",
                    s.get_ref()
                ),
            );
            None
        }
    };
    let secs = Duration::from_secs;
    let request_timeout = diags.duration(
        &raw.request_timeout,
        "server.request_timeout",
        d.request_timeout,
        (secs(1), secs(3600)),
    );
    let session_idle_timeout = diags.duration(
        &raw.session_idle_timeout,
        "server.session_idle_timeout",
        d.session_idle_timeout,
        (secs(1), secs(86_400)),
    );
    let session_max_age = diags.duration(
        &raw.session_max_age,
        "server.session_max_age",
        d.session_max_age,
        (secs(60), secs(30 * 86_400)),
    );
    let startup_timeout = diags.duration(
        &raw.startup_timeout,
        "server.startup_timeout",
        d.startup_timeout,
        (secs(1), secs(600)),
    );
    let shutdown_grace = diags.duration(
        &raw.shutdown_grace,
        "server.shutdown_grace",
        d.shutdown_grace,
        (Duration::ZERO, secs(60)),
    );
    let max_sessions = diags.integer(
        &raw.max_sessions,
        "server.max_sessions",
        d.max_sessions,
        (1, 100_000),
    );
    let allowed_origins = security::validate_origins(&raw.allowed_origins, diags);
    Some(ServerConfig {
        listen: listen?,
        separator: separator?,
        request_timeout: request_timeout?,
        session_idle_timeout: session_idle_timeout?,
        max_sessions: max_sessions?,
        session_max_age: session_max_age?,
        startup_timeout: startup_timeout?,
        shutdown_grace: shutdown_grace?,
        allowed_origins: allowed_origins?,
    })
}

fn check_exposure(
    server: &ServerConfig,
    auth: &AuthConfig,
    raw: &RawServer,
    diags: &mut Diagnostics<'_>,
) {
    if let Some(problem) = exposure_problem(server.listen, auth) {
        diags.push(
            raw.listen.as_ref().map(Spanned::span),
            "server.listen",
            problem,
        );
    }
}

/// A non-loopback listener serves whoever reaches it, so it needs auth
/// (S-5, S-16, S-22): what is wrong with listening on `listen`, if
/// anything. Also for a listen address given on the command line.
pub fn exposure_problem(listen: SocketAddr, auth: &AuthConfig) -> Option<String> {
    (!listen.ip().is_loopback() && auth.mode == AuthMode::None).then(|| {
        format!(
            "{listen} is not a loopback address, and [auth] mode is \"none\": anyone who can reach it could use every upstream. Set [auth] mode = \"bearer\" or \"oauth\", or listen on 127.0.0.1"
        )
    })
}

fn validate_catalog(raw: &RawCatalog, diags: &mut Diagnostics<'_>) -> Option<CatalogConfig> {
    let d = CatalogConfig::default();
    let lockfile = match &raw.lockfile {
        None => Some(d.lockfile.clone()),
        Some(s) if s.get_ref().trim().is_empty() => {
            diags.push(
                Some(s.span()),
                "catalog.lockfile",
                "must be a file path (relative to this file's directory), not empty".into(),
            );
            None
        }
        Some(s) => Some(PathBuf::from(s.get_ref())),
    };
    let on_drift = diags.choice(
        &raw.on_drift,
        "catalog.on_drift",
        d.on_drift,
        &[("block", OnDrift::Block), ("warn", OnDrift::Warn)],
    );
    let secs = Duration::from_secs;
    let refresh_interval = diags.duration(
        &raw.refresh_interval,
        "catalog.refresh_interval",
        d.refresh_interval,
        (Duration::ZERO, secs(86_400)),
    );
    let read_timeout = diags.duration(
        &raw.read_timeout,
        "catalog.read_timeout",
        d.read_timeout,
        (secs(1), secs(3600)),
    );
    let max_pages = diags.integer(
        &raw.max_pages,
        "catalog.max_pages",
        d.limits.max_pages,
        (1, 1_000_000),
    );
    let max_items = diags.integer(
        &raw.max_items,
        "catalog.max_items",
        d.limits.max_items,
        (1, 10_000_000),
    );
    let mode = diags.choice(
        &raw.mode,
        "catalog.mode",
        d.mode,
        &[
            ("full", CatalogMode::Full),
            ("progressive", CatalogMode::Progressive),
        ],
    );
    let page_bytes = diags.integer(
        &raw.page_bytes,
        "catalog.page_bytes",
        d.page_bytes,
        (1_024, 1_048_576),
    );
    let list_page_size = diags.integer(
        &raw.list_page_size,
        "catalog.list_page_size",
        d.list_page_size,
        (1, 100_000),
    );
    let list_page_bytes = diags.integer(
        &raw.list_page_bytes,
        "catalog.list_page_bytes",
        d.list_page_bytes,
        (4_096, MAX_TRANSPORT_MESSAGE_BYTES),
    );
    Some(CatalogConfig {
        mode: mode?,
        page_bytes: page_bytes?,
        list_page_size: list_page_size?,
        list_page_bytes: list_page_bytes?,
        lockfile: lockfile?,
        on_drift: on_drift?,
        require_lock: raw.require_lock.unwrap_or(d.require_lock),
        refresh_interval: refresh_interval?,
        read_timeout: read_timeout?,
        limits: WalkLimits {
            max_pages: max_pages?,
            max_items: max_items?,
        },
    })
}

fn validate_state(
    raw: &RawState,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> StateConfig {
    let mut out = StateConfig::default();
    if let Some(dir) = &raw.dir {
        if dir.get_ref().trim().is_empty() {
            diags.push(
                Some(dir.span()),
                "state.dir",
                "must be a directory path, not empty".into(),
            );
        } else {
            out.dir = PathBuf::from(dir.get_ref());
        }
    }
    if let Some(secret) = &raw.cursor_secret {
        match expand_env(secret.get_ref(), env) {
            Ok(value) if value.len() >= 32 => out.cursor_secret = Some(value),
            Ok(value) => diags.push(
                Some(secret.span()),
                "state.cursor_secret",
                format!(
                    "is {} characters long: must be at least 32 (e.g. 64 hex digits from a random source)",
                    value.len()
                ),
            ),
            Err(var) => diags.push(
                Some(secret.span()),
                "state.cursor_secret",
                format!("refers to ${{{var}}}, which is not set in the environment"),
            ),
        }
    }
    if let Some(url) = &raw.url {
        match expand_env(url.get_ref(), env) {
            Ok(value) if value.starts_with("postgres://") || value.starts_with("postgresql://") => {
                out.store = StateStore::Postgres { url: value };
            }
            // Only the scheme is shown: the rest may hold a password.
            Ok(value) => diags.push(
                Some(url.span()),
                "state.url",
                format!(
                    "{}: must be a postgres:// or postgresql:// URL (PostgreSQL), or absent for the SQLite file in [state] dir",
                    match value.split_once("://") {
                        Some((scheme, _)) => format!("the scheme {scheme:?} is not supported"),
                        None => "is not a URL".to_owned(),
                    }
                ),
            ),
            Err(var) => diags.push(
                Some(url.span()),
                "state.url",
                format!("refers to ${{{var}}}, which is not set in the environment"),
            ),
        }
    }
    out.audit = raw.audit.unwrap_or(out.audit);
    if let Some(retention) = diags.duration(
        &raw.audit_retention,
        "state.audit_retention",
        DEFAULT_AUDIT_RETENTION,
        AUDIT_RETENTION_RANGE,
    ) {
        out.audit_retention = retention;
    }
    out
}

fn validate_upstream(
    i: usize,
    raw: &RawUpstream,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<UpstreamConfig> {
    let key = format!("upstream[{i}]");
    let name = raw.name.get_ref();
    let mut ok = true;
    if !naming::is_valid_upstream_name(name) {
        diags.push(
            Some(raw.name.span()),
            &format!("{key}.name"),
            format!("{name:?}: must be 1 to 64 characters from [a-z0-9_-]"),
        );
        ok = false;
    }
    let mut expand_map = |field: &str, map: &Option<BTreeMap<String, Spanned<String>>>| {
        let mut out = BTreeMap::new();
        for (k, v) in map.iter().flatten() {
            match expand_env(v.get_ref(), env) {
                Ok(value) => {
                    out.insert(k.clone(), value);
                }
                Err(var) => {
                    diags.push(
                        Some(v.span()),
                        &format!("{key}.{field}.{k}"),
                        format!("refers to ${{{var}}}, which is not set in the environment"),
                    );
                    ok = false;
                }
            }
        }
        out
    };
    let transport = match (&raw.command, &raw.url) {
        (Some(command), None) => {
            let env_map = expand_map("env", &raw.env);
            if raw.headers.is_some() {
                diags.push(
                    Some(raw.name.span()),
                    &format!("{key}.headers"),
                    "only an upstream with `url` takes headers; a stdio upstream takes `env`"
                        .into(),
                );
                ok = false;
            }
            if command.get_ref().trim().is_empty() {
                diags.push(
                    Some(command.span()),
                    &format!("{key}.command"),
                    "must not be empty".into(),
                );
                ok = false;
            }
            if raw.allow_private.is_some() {
                diags.push(
                    Some(raw.name.span()),
                    &format!("{key}.allow_private"),
                    "only an upstream with `url` takes allow_private".into(),
                );
                ok = false;
            }
            let rlimit = match &raw.rlimit {
                None => Some(Rlimits::default()),
                Some(r) => security::validate_rlimit(r, &key, diags),
            };
            ok &= rlimit.is_some();
            UpstreamTransport::Stdio {
                command: command.get_ref().clone(),
                args: raw.args.clone().unwrap_or_default(),
                env: env_map,
                cwd: raw.cwd.as_ref().map(PathBuf::from),
                rlimit: rlimit.unwrap_or_default(),
            }
        }
        (None, Some(url)) => {
            let headers = expand_map("headers", &raw.headers);
            if let Err(msg) = check_url(url.get_ref()) {
                diags.push(
                    Some(url.span()),
                    &format!("{key}.url"),
                    format!("{:?}: {msg}", url.get_ref()),
                );
                ok = false;
            }
            for field in [
                ("args", raw.args.is_some()),
                ("env", raw.env.is_some()),
                ("cwd", raw.cwd.is_some()),
                ("rlimit", raw.rlimit.is_some()),
            ]
            .iter()
            .filter(|f| f.1)
            {
                diags.push(
                    Some(url.span()),
                    &format!("{key}.{}", field.0),
                    "only an upstream with `command` takes args, env, cwd and rlimit".into(),
                );
                ok = false;
            }
            UpstreamTransport::Http {
                url: url.get_ref().clone(),
                headers,
                allow_private: raw.allow_private.unwrap_or(false),
            }
        }
        (Some(_), Some(url)) => {
            diags.push(
                Some(url.span()),
                &key,
                "has both `command` and `url`: choose one (stdio child or Streamable HTTP)".into(),
            );
            return None;
        }
        (None, None) => {
            diags.push(
                Some(raw.name.span()),
                &key,
                "needs `command` (a stdio child) or `url` (a Streamable HTTP server)".into(),
            );
            return None;
        }
    };
    let read_budget = match &raw.mcp_read_response_max_bytes {
        None => None,
        some => diags.integer(
            some,
            &format!("{key}.mcp_read_response_max_bytes"),
            DEFAULT_READ_BUDGET,
            (MIN_READ_BUDGET, MAX_READ_BUDGET),
        ),
    };
    ok &= raw.mcp_read_response_max_bytes.is_none() || read_budget.is_some();
    let mut tool_read_budgets = BTreeMap::new();
    for (tool, budget) in raw.tool_read_budget.iter().flatten() {
        match diags.integer(
            &Some(budget.clone()),
            &format!("{key}.tool_read_budget.{tool}"),
            DEFAULT_READ_BUDGET,
            (MIN_READ_BUDGET, MAX_READ_BUDGET),
        ) {
            Some(b) => {
                tool_read_budgets.insert(tool.clone(), b);
            }
            None => ok = false,
        }
    }
    let rate_limit = match &raw.rate_limit {
        None => None,
        Some(r) => {
            let rate = security::rate(r, &format!("{key}.rate_limit"), diags);
            ok &= rate.is_some();
            rate
        }
    };
    let mut tool_rate_limits = BTreeMap::new();
    for (tool, r) in raw.tool_rate_limit.iter().flatten() {
        match security::rate(r, &format!("{key}.tool_rate_limit.{tool}"), diags) {
            Some(rate) => {
                tool_rate_limits.insert(tool.clone(), rate);
            }
            None => ok = false,
        }
    }
    ok.then(|| UpstreamConfig {
        name: name.clone(),
        transport,
        trusted: raw.trusted.unwrap_or(false),
        read_only_tools: raw.read_only_tools.clone().unwrap_or_default(),
        read_budget,
        tool_read_budgets,
        prefixed: raw.prefix.unwrap_or(true),
        rate_limit,
        tool_rate_limits,
    })
}

fn validate_limits(
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

fn validate_redaction(
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

fn validate_projections(raw: &RawPolicy, diags: &mut Diagnostics<'_>) -> Vec<ProjectionRule> {
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

/// Upstream names are unique, and none contains the separator (which would
/// make exposed names harder to read back).
fn check_names(raw: &[RawUpstream], server: Option<&ServerConfig>, diags: &mut Diagnostics<'_>) {
    for (i, up) in raw.iter().enumerate() {
        let name = up.name.get_ref();
        if let Some(first) = raw[..i].iter().position(|u| u.name.get_ref() == name) {
            diags.push(
                Some(up.name.span()),
                &format!("upstream[{i}].name"),
                format!("{name:?} is already the name of upstream[{first}]; names must be unique"),
            );
        }
        if let Some(server) = server
            && name.contains(&server.separator)
        {
            diags.push(
                Some(up.name.span()),
                &format!("upstream[{i}].name"),
                format!(
                    "{name:?} contains the separator {:?}; choose another name or separator",
                    server.separator
                ),
            );
        }
    }
}

fn check_url(url: &str) -> Result<(), &'static str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or("must start with http:// or https://")?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() {
        return Err("has no host");
    }
    Ok(())
}

/// Expands `${VAR}` references. `$` not followed by `{` is kept. Returns the
/// name of the first variable that is not set.
pub fn expand_env(template: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let var = &after[..end];
        out.push_str(&env(var).ok_or_else(|| var.to_owned())?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Parses `"250ms"`, `"60s"`, `"5m"`, `"1h"`, `"30d"`.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    match unit {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" => n.checked_mul(60).map(Duration::from_secs),
        "h" => n.checked_mul(3600).map(Duration::from_secs),
        "d" => n.checked_mul(86_400).map(Duration::from_secs),
        _ => None,
    }
}

fn format_duration(d: Duration) -> String {
    if d.subsec_millis() != 0 || d.is_zero() {
        format!("{}ms", d.as_millis())
    } else if d.as_secs() > 86_400 && d.as_secs().is_multiple_of(86_400) {
        format!("{}d", d.as_secs() / 86_400)
    } else {
        format!("{}s", d.as_secs())
    }
}

// === impl ServerConfig ===

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

impl Config {
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

    /// Every exact value sluice knows is secret: the values of
    /// `[redaction] secret_env`, and the upstream credentials it holds (`env`
    /// entries and `headers` whose names name a secret, and the token part
    /// of `Bearer`/`Basic` header values).
    pub fn known_secrets(&self) -> Vec<String> {
        // A credential is one whatever the configured key list says.
        let keys: Vec<&str> = self
            .redaction
            .secret_keys
            .iter()
            .map(String::as_str)
            .chain(DEFAULT_SECRET_KEYS.iter().copied())
            .collect();
        let mut out = self.redaction.secret_env_values.clone();
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
            let Ok(url) = url::Url::parse(url) else {
                continue;
            };
            // As written in the URL, and as the server gets it.
            let mut passwords: Vec<String> =
                url.password().map(str::to_owned).into_iter().collect();
            passwords.extend(
                url.query_pairs()
                    .filter(|(k, _)| k == "password")
                    .map(|(_, v)| v.into_owned()),
            );
            for password in passwords {
                let decoded = percent_encoding::percent_decode_str(&password)
                    .decode_utf8_lossy()
                    .into_owned();
                if decoded != password {
                    out.push(decoded);
                }
                out.push(password);
            }
        }
        out
    }
}

impl Default for CatalogConfig {
    fn default() -> Self {
        CatalogConfig {
            lockfile: PathBuf::from("sluice.lock"),
            on_drift: OnDrift::Block,
            require_lock: false,
            refresh_interval: Duration::from_secs(300),
            read_timeout: Duration::from_secs(120),
            limits: WalkLimits::default(),
            mode: CatalogMode::Full,
            page_bytes: DEFAULT_PAGE_BYTES,
            list_page_size: 500,
            list_page_bytes: 1_048_576,
        }
    }
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            dir: PathBuf::from(".sluice"),
            cursor_secret: None,
            store: StateStore::Sqlite,
            audit: true,
            audit_retention: DEFAULT_AUDIT_RETENTION,
        }
    }
}

/// The secret is not shown.
impl fmt::Debug for StateConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateConfig")
            .field("dir", &self.dir)
            .field(
                "cursor_secret",
                &self.cursor_secret.as_ref().map(|_| "(set)"),
            )
            .field("store", &self.store)
            .field("audit", &self.audit)
            .field("audit_retention", &self.audit_retention)
            .finish()
    }
}

/// The URL is not shown (it may hold a password).
impl fmt::Debug for StateStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateStore::Sqlite => f.write_str("Sqlite"),
            StateStore::Postgres { .. } => f.write_str("Postgres(url set)"),
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8787)),
            separator: DEFAULT_SEPARATOR.to_owned(),
            request_timeout: Duration::from_secs(60),
            session_idle_timeout: Duration::from_secs(30 * 60),
            max_sessions: 1_000,
            session_max_age: Duration::from_secs(86_400),
            startup_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
            allowed_origins: security::default_origins(),
        }
    }
}

// === impl UpstreamConfig ===

impl fmt::Debug for UpstreamConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("trusted", &self.trusted)
            .field("read_only_tools", &self.read_only_tools)
            .field("read_budget", &self.read_budget)
            .field("tool_read_budgets", &self.tool_read_budgets)
            .field("prefixed", &self.prefixed)
            .field("rate_limit", &self.rate_limit)
            .field("tool_rate_limits", &self.tool_rate_limits)
            .finish()
    }
}

impl fmt::Debug for UpstreamTransport {
    /// Values of `env` and `headers` are credentials: only their keys show.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamTransport::Stdio {
                command,
                args,
                env,
                cwd,
                rlimit,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .field("rlimit", rlimit)
                .finish(),
            UpstreamTransport::Http {
                url,
                headers,
                allow_private,
            } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("allow_private", allow_private)
                .finish(),
        }
    }
}

// === impl Diagnostics ===

impl Diagnostics<'_> {
    /// A duration key within `range`, or `default` when absent.
    fn duration(
        &mut self,
        field: &Option<Spanned<String>>,
        key: &str,
        default: Duration,
        range: (Duration, Duration),
    ) -> Option<Duration> {
        let Some(s) = field else {
            return Some(default);
        };
        match parse_duration(s.get_ref()) {
            Some(v) if v >= range.0 && v <= range.1 => Some(v),
            Some(_) => {
                self.push(
                    Some(s.span()),
                    key,
                    format!(
                        "{:?} is out of range: must be {} to {}",
                        s.get_ref(),
                        format_duration(range.0),
                        format_duration(range.1)
                    ),
                );
                None
            }
            None => {
                self.push(
                    Some(s.span()),
                    key,
                    format!(
                        "{:?} is not a duration: write a number with a unit, ms, s, m, h or d (e.g. \"60s\")",
                        s.get_ref()
                    ),
                );
                None
            }
        }
    }

    /// An `IP:port` key.
    fn socket_addr(&mut self, s: &Spanned<String>, key: &str) -> Option<SocketAddr> {
        let addr = s.get_ref().parse::<SocketAddr>().ok();
        if addr.is_none() {
            self.push(
                Some(s.span()),
                key,
                format!(
                    "{:?} is not an IP:port address (e.g. \"127.0.0.1:8787\")",
                    s.get_ref()
                ),
            );
        }
        addr
    }

    /// A key that takes one of a few words, or `default` when absent.
    fn choice<T: Copy>(
        &mut self,
        field: &Option<Spanned<String>>,
        key: &str,
        default: T,
        options: &[(&str, T)],
    ) -> Option<T> {
        let Some(s) = field else {
            return Some(default);
        };
        if let Some((_, value)) = options.iter().find(|(word, _)| *word == s.get_ref()) {
            return Some(*value);
        }
        let words: Vec<String> = options.iter().map(|(w, _)| format!("{w:?}")).collect();
        self.push(
            Some(s.span()),
            key,
            format!("{:?}: must be {}", s.get_ref(), words.join(" or ")),
        );
        None
    }

    /// An integer key within `range` (inclusive), or `default` when absent.
    fn integer(
        &mut self,
        field: &Option<Spanned<i64>>,
        key: &str,
        default: usize,
        range: (usize, usize),
    ) -> Option<usize> {
        let Some(n) = field else {
            return Some(default);
        };
        match usize::try_from(*n.get_ref()) {
            Ok(v) if (range.0..=range.1).contains(&v) => Some(v),
            _ => {
                self.push(
                    Some(n.span()),
                    key,
                    format!(
                        "{} is out of range: must be {} to {}",
                        n.get_ref(),
                        range.0,
                        range.1
                    ),
                );
                None
            }
        }
    }

    fn push(&mut self, span: Option<Range<usize>>, key: &str, message: String) {
        let location = match span {
            Some(span) => {
                let (line, col) = line_col(self.source.text, span.start);
                format!("{}:{line}:{col}", self.source.name)
            }
            None => self.source.name.to_owned(),
        };
        self.list.push(Diagnostic {
            location,
            key: key.to_owned(),
            message,
        });
    }
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..text.floor_char_boundary(offset.min(text.len()))];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.location, self.message)
        } else {
            write!(f, "{}: {}: {}", self.location, self.key, self.message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn parse(text: &str) -> Result<Config, Vec<Diagnostic>> {
        Config::from_toml(
            Source {
                name: "sluice.toml",
                text,
            },
            &no_env,
        )
    }

    fn errors(text: &str) -> Vec<String> {
        parse(text)
            .expect_err("expected errors")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn defaults() {
        let c = parse("").expect("empty config is valid");
        assert_eq!(c.server, ServerConfig::default());
        assert_eq!(c.server.listen.to_string(), DEFAULT_LISTEN);
        assert!(c.upstreams.is_empty());
    }

    #[test]
    fn full_config() {
        let text = r#"
[server]
listen = "127.0.0.1:9000"
separator = "."
request_timeout = "5s"

[[upstream]]
name = "files"
command = "node"
args = ["server.js", "/tmp"]
env = { TOKEN = "${MY_TOKEN}", PLAIN = "x" }
cwd = "/tmp"
trusted = true

[[upstream]]
name = "remote"
url = "http://127.0.0.1:3101/mcp"
headers = { Authorization = "Bearer ${MY_TOKEN}" }
"#;
        let env = |k: &str| (k == "MY_TOKEN").then(|| "s3cret".to_owned());
        let c = Config::from_toml(Source { name: "f", text }, &env).expect("valid");
        assert_eq!(c.server.separator, ".");
        assert_eq!(c.server.request_timeout, Duration::from_secs(5));
        assert_eq!(c.upstreams.len(), 2);
        let UpstreamTransport::Stdio { env, args, .. } = &c.upstreams[0].transport else {
            panic!("stdio expected")
        };
        assert_eq!(env.get("TOKEN").map(String::as_str), Some("s3cret"));
        assert_eq!(args, &["server.js", "/tmp"]);
        assert!(c.upstreams[0].trusted);
        let UpstreamTransport::Http { headers, .. } = &c.upstreams[1].transport else {
            panic!("http expected")
        };
        assert_eq!(headers["Authorization"], "Bearer s3cret");
        // Credentials never show in Debug output.
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn unknown_keys_are_errors_with_position() {
        let e = errors("[server]\nlisten = \"127.0.0.1:1\"\nlistn = \"x\"\n");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("sluice.toml:3:1: "), "{}", e[0]);
        assert!(e[0].contains("unknown field `listn`"), "{}", e[0]);
        let e = errors("[[upstream]]\nname = \"a\"\ncommand = \"x\"\ncomand = \"y\"\n");
        assert!(e[0].contains("unknown field `comand`"), "{}", e[0]);
    }

    #[test]
    fn every_problem_is_reported_with_key_value_and_range() {
        let text = r#"
[server]
listen = "localhost"
separator = "/"
request_timeout = "0s"
session_idle_timeout = "soon"

[[upstream]]
name = "Bad Name"
command = "x"

[[upstream]]
name = "dup"
url = "ftp://x"

[[upstream]]
name = "dup"
command = "y"
env = { K = "${NOPE}" }

[[upstream]]
name = "neither"
"#;
        let e = errors(text);
        let expected = [
            "sluice.toml:3:10: server.listen: \"localhost\" is not an IP:port address",
            "sluice.toml:4:13: server.separator: \"/\": must be 1 to 8 characters",
            "sluice.toml:5:19: server.request_timeout: \"0s\" is out of range: must be 1s to 3600s",
            "sluice.toml:6:24: server.session_idle_timeout: \"soon\" is not a duration",
            "sluice.toml:9:8: upstream[0].name: \"Bad Name\": must be 1 to 64 characters from [a-z0-9_-]",
            "sluice.toml:14:7: upstream[1].url: \"ftp://x\": must start with http:// or https://",
            "sluice.toml:19:13: upstream[2].env.K: refers to ${NOPE}, which is not set",
            "sluice.toml:22:8: upstream[3]: needs `command` (a stdio child) or `url`",
            "sluice.toml:17:8: upstream[2].name: \"dup\" is already the name of upstream[1]",
        ];
        assert_eq!(e.len(), expected.len(), "{e:#?}");
        for want in expected {
            assert!(
                e.iter().any(|got| got.starts_with(want)),
                "missing {want:?} in {e:#?}"
            );
        }
    }

    #[test]
    fn names_must_not_contain_the_separator() {
        let e = errors("[[upstream]]\nname = \"a__b\"\ncommand = \"x\"\n");
        assert!(e[0].contains("contains the separator \"__\""), "{}", e[0]);
    }

    #[test]
    fn transports_take_only_their_own_keys() {
        let e = errors("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h\"\n");
        assert!(e[0].contains("has both `command` and `url`"), "{}", e[0]);
        let e = errors("[[upstream]]\nname = \"a\"\nurl = \"http://h\"\nargs = [\"x\"]\n");
        assert!(e[0].contains("upstream[0].args"), "{}", e[0]);
        let e = errors("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nheaders = {A = \"b\"}\n");
        assert!(e[0].contains("upstream[0].headers"), "{}", e[0]);
    }

    #[test]
    fn mcp_json() {
        let text = r#"{"mcpServers": {
            "Brave Search": {"command": "npx", "args": ["-y", "x"], "env": {"K": "${T}"}, "autoApprove": []},
            "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"A": "b"}},
            "off": {"command": "x", "disabled": true}
        }}"#;
        let env = |k: &str| (k == "T").then(|| "v".to_owned());
        let c = Config::from_mcp_json(
            Source {
                name: "mcp.json",
                text,
            },
            &env,
        )
        .expect("valid");
        let names: Vec<&str> = c.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["brave-search", "remote"]);
        let bad = Config::from_mcp_json(
            Source {
                name: "mcp.json",
                text: r#"{"mcpServers": {"x": {"args": []}, "y": {"url": "file:///"}}}"#,
            },
            &no_env,
        )
        .expect_err("invalid");
        assert_eq!(bad.len(), 2);
        assert!(bad[0].to_string().contains("mcpServers.x: needs either"));
        let bad = Config::from_mcp_json(
            Source {
                name: "mcp.json",
                text: "{",
            },
            &no_env,
        )
        .expect_err("invalid");
        assert!(bad[0].to_string().starts_with("mcp.json:1:"));
    }

    #[test]
    fn env_expansion() {
        let env = |k: &str| (k == "A").then(|| "1".to_owned());
        assert_eq!(expand_env("x${A}y${A}", &env), Ok("x1y1".into()));
        assert_eq!(expand_env("$A ${", &env), Ok("$A ${".into()));
        assert_eq!(expand_env("${B}", &env), Err("B".into()));
    }

    #[test]
    fn catalog_section() {
        let c = parse(
            r#"
[catalog]
lockfile = "locks/prod.lock"
on_drift = "warn"
require_lock = true
refresh_interval = "0s"
read_timeout = "30s"
max_pages = 50
max_items = 500
"#,
        )
        .expect("valid");
        assert_eq!(c.catalog.lockfile, PathBuf::from("locks/prod.lock"));
        assert_eq!(c.catalog.on_drift, OnDrift::Warn);
        assert!(c.catalog.require_lock);
        assert_eq!(c.catalog.refresh_interval, Duration::ZERO);
        assert_eq!(c.catalog.read_timeout, Duration::from_secs(30));
        assert_eq!(
            c.catalog.limits,
            WalkLimits {
                max_pages: 50,
                max_items: 500
            }
        );
        assert_eq!(parse("").expect("empty").catalog, CatalogConfig::default());
        let errs = errors(
            "[catalog]\non_drift = \"ignore\"\nmax_pages = 0\nread_timeout = \"2h\"\nlockfile = \"\"",
        );
        assert_eq!(errs.len(), 4, "{errs:#?}");
        assert!(
            errs.iter()
                .any(|e| e.contains("catalog.on_drift") && e.contains("\"block\" or \"warn\""))
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("catalog.max_pages") && e.contains("1 to 1000000"))
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("catalog.read_timeout") && e.contains("out of range"))
        );
        assert!(errs.iter().any(|e| e.contains("catalog.lockfile")));
    }

    #[test]
    fn limits_redaction_and_projections() {
        let env = |k: &str| match k {
            "GH_TOKEN" => Some("ghp_from_the_environment_123".to_owned()),
            "REMOTE_TOKEN" => Some("remote-credential-42".to_owned()),
            _ => None,
        };
        let text = r#"
[limits]
mcp_read_response_max_bytes = 65536
transport_max_message_bytes = 4194304

[redaction]
secret_env = ["GH_TOKEN", "UNSET_ONE"]
secret_keys = ["password", "pin"]

[[upstream]]
name = "files"
command = "x"
env = { DB_PASSWORD = "db-pass-1234", LOG_LEVEL = "debug" }
read_only_tools = ["read_file"]
mcp_read_response_max_bytes = 131072
tool_read_budget = { read_file = 2097152 }

[[upstream]]
name = "remote"
url = "http://127.0.0.1:1/mcp"
headers = { Authorization = "Bearer ${REMOTE_TOKEN}" }

[[policy.project]]
tool = "files__stats"
keep = ["$.summary", "$.rows[*].count"]
"#;
        let c = Config::from_toml(
            Source {
                name: "t.toml",
                text,
            },
            &env,
        )
        .expect("valid");
        assert_eq!(c.limits.read_budget, 65_536);
        assert_eq!(c.limits.transport_max_message_bytes, 4_194_304);
        assert_eq!(c.upstreams[0].read_budget, Some(131_072));
        assert_eq!(c.upstreams[0].tool_read_budgets["read_file"], 2_097_152);
        assert_eq!(c.upstreams[0].read_only_tools, vec!["read_file"]);
        assert_eq!(c.redaction.secret_keys, vec!["password", "pin"]);
        let mut secrets = c.known_secrets();
        secrets.sort();
        assert_eq!(
            secrets,
            vec![
                "Bearer remote-credential-42",
                "db-pass-1234",
                "ghp_from_the_environment_123",
                "remote-credential-42"
            ]
        );
        assert!(!format!("{c:?}").contains("ghp_from_the_environment_123"));
        assert_eq!(c.projections.len(), 1);
        assert_eq!(c.projections[0].tool, "files__stats");
        assert_eq!(parse("").expect("empty").limits, LimitsConfig::default());
    }

    #[test]
    fn limits_are_checked_with_key_value_and_range() {
        let errs = errors("[limits]\nmcp_read_response_max_bytes = 1000\n");
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains(
                "limits.mcp_read_response_max_bytes: 1000 is out of range: must be 65536 to 8388608"
            ),
            "{errs:?}"
        );
        let errs = errors(
            "[limits]\nmcp_read_response_max_bytes = 2097152\ntransport_max_message_bytes = 1048576\n",
        );
        assert!(
            errs.iter().any(|e| e.contains("limits.transport_max_message_bytes: 1048576 is below the largest read budget (2097152)")),
            "{errs:?}"
        );
        let errs = errors(
            "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ntool_read_budget = { t = 9999999999 }\n",
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("upstream[0].tool_read_budget.t: 9999999999 is out of range")),
            "{errs:?}"
        );
        let errs = errors(
            "[[policy.project]]\ntool = \"a__b\"\nkeep = [\"x\"]\n[[policy.project]]\ntool = \"a__c\"\n",
        );
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0].contains("policy.project[0].keep") && errs[0].contains("starts with `$`"),
            "{errs:?}"
        );
        assert!(
            errs[1].contains("policy.project[1]: needs exactly one of `keep`"),
            "{errs:?}"
        );
    }

    #[test]
    fn prefix_can_be_turned_off_per_upstream() {
        let c = parse("[[upstream]]\nname = \"conf\"\ncommand = \"x\"\nprefix = false\n\n[[upstream]]\nname = \"git\"\ncommand = \"y\"\n").expect("valid");
        let naming = c.naming();
        assert_eq!(
            naming.exposed("conf", "test_simple_text"),
            "test_simple_text"
        );
        assert_eq!(naming.exposed("git", "log"), "git__log");
    }

    #[test]
    fn session_max_age_defaults_to_a_day_within_a_minute_and_thirty_days() {
        assert_eq!(
            parse("").expect("defaults").server.session_max_age,
            Duration::from_secs(86_400)
        );
        let c = parse("[server]\nsession_max_age = \"2h\"\n").expect("2h");
        assert_eq!(c.server.session_max_age, Duration::from_secs(7200));
        let c = parse("[server]\nsession_max_age = \"30d\"\n").expect("30d");
        assert_eq!(c.server.session_max_age, Duration::from_secs(2_592_000));
        let e = errors("[server]\nsession_max_age = \"31d\"\n");
        assert!(
            e[0].contains("server.session_max_age: \"31d\" is out of range: must be 60s to 30d"),
            "{e:?}"
        );
        let e = errors("[server]\nsession_max_age = \"30s\"\n");
        assert!(
            e[0].contains("server.session_max_age: \"30s\" is out of range: must be 60s to 30d"),
            "{e:?}"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("60"), None);
        assert_eq!(parse_duration("s"), None);
        assert_eq!(parse_duration("1d"), Some(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("1w"), None);
    }

    #[test]
    fn the_audit_log_defaults_to_sqlite_in_the_state_dir_for_30_days() {
        let c = parse("").expect("valid");
        assert_eq!(c.state.store, StateStore::Sqlite);
        assert!(c.state.audit);
        assert_eq!(c.state.audit_retention, Duration::from_secs(30 * 86_400));
        let c = parse(
            "[state]
audit = false
audit_retention = \"90d\"\n",
        )
        .expect("valid");
        assert!(!c.state.audit);
        assert_eq!(c.state.audit_retention, Duration::from_secs(90 * 86_400));
    }

    #[test]
    fn a_postgres_url_is_expanded_and_never_shown() {
        let env = |k: &str| (k == "PG_PASSWORD").then(|| "hunter2-pg".to_owned());
        let c = Config::from_toml(
            Source {
                name: "sluice.toml",
                text: "[state]\nurl = \"postgresql://sluice:${PG_PASSWORD}@db:5432/audit\"\n",
            },
            &env,
        )
        .expect("valid");
        assert_eq!(
            c.state.store,
            StateStore::Postgres {
                url: "postgresql://sluice:hunter2-pg@db:5432/audit".into()
            }
        );
        assert!(!format!("{c:?}").contains("hunter2-pg"));
        let errs = errors("[state]\nurl = \"postgres://u:${NOT_SET}@db/a\"\n");
        assert_eq!(
            errs,
            [
                "sluice.toml:2:7: state.url: refers to ${NOT_SET}, which is not set in the environment"
            ]
        );
    }

    #[test]
    fn state_keys_are_checked_with_key_value_and_range() {
        let errs =
            errors("[state]\nurl = \"mysql://root:pw-secret@db/x\"\naudit_retention = \"10m\"\n");
        assert_eq!(
            errs,
            [
                "sluice.toml:2:7: state.url: the scheme \"mysql\" is not supported: must be a postgres:// or postgresql:// URL (PostgreSQL), or absent for the SQLite file in [state] dir",
                "sluice.toml:3:19: state.audit_retention: \"10m\" is out of range: must be 3600s to 3650d",
            ]
        );
        let errs = errors("[state]\nurl = \"audit.db\"\naudit_retention = \"3651d\"\n");
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0].contains("state.url: is not a URL: must be"),
            "{errs:?}"
        );
        assert!(
            errs[1].contains("\"3651d\" is out of range: must be 3600s to 3650d"),
            "{errs:?}"
        );
        let errs = errors("[state]\naudit_retention = \"forever\"\n");
        assert!(
            errs[0].contains("state.audit_retention: \"forever\" is not a duration"),
            "{errs:?}"
        );
    }
}

#[cfg(test)]
mod store_secrets {
    #![allow(clippy::unwrap_used)]
    use crate::config::{Config, Source};

    #[test]
    fn store_passwords_are_known_secrets() {
        let text = "[state]\nurl = \"postgres://sluice:pg-pass%40%2F0123456789@db/sluice?password=q-pass-0123456789\"\n\
                    [ratelimit]\nbackend = \"redis\"\nredis_url = \"redis://:rd-pass-0123456789@cache:6379/\"\n";
        let config = Config::from_toml(
            Source {
                name: "sluice.toml",
                text,
            },
            &|_| None,
        )
        .unwrap();
        let secrets = config.known_secrets();
        // As written, as the server gets it, and from the query string.
        for expected in [
            "pg-pass%40%2F0123456789",
            "pg-pass@/0123456789",
            "q-pass-0123456789",
            "rd-pass-0123456789",
        ] {
            assert!(secrets.contains(&expected.to_owned()), "{secrets:?}");
        }
    }
}
