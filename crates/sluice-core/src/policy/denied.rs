//! [`Denied`]: every way a request can end without the upstream's own
//! answer, as one type.
//!
//! Each variant knows its JSON-RPC error (code, message, data), its HTTP
//! status, and the [`Decision`] the audit log and the metrics record. The
//! shell builds a `Denied` where it learns of the failure and converts it
//! exactly once, at the transport's edge ([`Denied::to_answer`],
//! [`Denied::http_status`]); nothing is rebuilt from an error code on the
//! way (an upstream that sends `-32011` gets no 429).
//!
//! sluice's own codes live in `-32000..-32019`:
//!
//! | code     | meaning                                                        |
//! |----------|----------------------------------------------------------------|
//! | `-32001` | the upstream is not available (starting, failed, restarting), or has no complete catalog yet |
//! | `-32003` | the upstream did not answer within `server.request_timeout`    |
//! | `-32004` | the upstream's connection was lost during the request (`data.restarted`: sluice restarted it as hung) |
//! | `-32005` | the upstream sent an answer that is not valid JSON-RPC         |
//! | `-32007` | a mutation-capable call's answer exceeded the transport ceiling: its outcome could not be relayed |
//! | `-32010` | the entry is withheld: it drifted from `sluice.lock` (`on_drift = "block"`) |
//! | `-32011` | over the caller's rate limit (`data.retryAfterMs`)             |
//! | `-32012` | the caller lacks a scope the call needs (`data.requiredScopes`) |
//! | `-32013` | an OAuth upstream needs a (new) login (`data.login`: the command; `data.scopes`) |
//! | `-32014` | an OAuth upstream still refuses after a login granted what it asked: sluice stopped asking |
//!
//! Errors the upstream itself returns pass through unchanged
//! ([`UpstreamFailure::Rpc`]), apart from the era translation of `-32002`
//! (`protocol::shape_error`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::audit::{self, Decision};
use crate::boundary::budget::{self, Surface};
use crate::catalog::drift::DriftKind;
use crate::health::UpstreamState;
use crate::jsonrpc::{self, RpcError};
use crate::method::ListKind;
use crate::outbound::browser::BrowserUrlError;
use crate::protocol::{self, Era};

/// The upstream is not available.
pub const UPSTREAM_UNAVAILABLE: i64 = -32001;
/// The upstream did not answer in time.
pub const UPSTREAM_TIMEOUT: i64 = -32003;
/// The upstream's connection was lost during the request.
pub const UPSTREAM_LOST: i64 = -32004;
/// The upstream's answer was not valid JSON-RPC.
pub const UPSTREAM_PROTOCOL: i64 = -32005;
/// The upstream's answer exceeded the transport ceiling and was discarded.
pub const ANSWER_TOO_LARGE: i64 = -32007;
/// A call to an entry withheld because it drifted from `sluice.lock`.
pub const DRIFT_BLOCKED: i64 = -32010;
/// A tool call over its principal's rate limit (S-24).
pub const RATE_LIMITED: i64 = -32011;
/// A call whose principal lacks a scope it needs (S-20).
pub const INSUFFICIENT_SCOPE: i64 = -32012;
/// An OAuth upstream needs a login sluice does not hold, or a new one.
pub const UPSTREAM_LOGIN_REQUIRED: i64 = -32013;
/// An OAuth upstream refuses what a login grants; sluice stopped asking.
pub const UPSTREAM_LOGIN_REFUSED: i64 = -32014;

/// HTTP statuses a refusal can carry.
pub mod status {
    /// The JSON-RPC answer carries the error.
    pub const OK: u16 = 200;
    /// Malformed request or headers.
    pub const BAD_REQUEST: u16 = 400;
    /// No or bad credentials.
    pub const UNAUTHORIZED: u16 = 401;
    /// Not allowed for this caller or origin.
    pub const FORBIDDEN: u16 = 403;
    /// Unknown session, or (2026-07-28) unknown method.
    pub const NOT_FOUND: u16 = 404;
    /// A request body that did not arrive in time.
    pub const REQUEST_TIMEOUT: u16 = 408;
    /// A POST whose body is not declared as JSON.
    pub const UNSUPPORTED_MEDIA_TYPE: u16 = 415;
    /// A request whose target names another host.
    pub const MISDIRECTED_REQUEST: u16 = 421;
    /// Over the rate limit.
    pub const TOO_MANY_REQUESTS: u16 = 429;
    /// Too many or too large header fields.
    pub const HEADER_FIELDS_TOO_LARGE: u16 = 431;
    /// The gateway cannot take the request now.
    pub const SERVICE_UNAVAILABLE: u16 = 503;
}

/// Why a request to an upstream did not produce the upstream's own answer,
/// or the upstream's own error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UpstreamFailure {
    /// Not connected: starting, failed or restarting.
    #[error("upstream {upstream:?} is not available ({state})")]
    Unavailable {
        /// The upstream's name.
        upstream: String,
        /// Its state.
        state: UpstreamState,
    },
    /// No answer within the request timeout.
    #[error("upstream {upstream:?} did not answer within {after:?}")]
    Timeout {
        /// The upstream's name.
        upstream: String,
        /// The timeout that passed.
        after: Duration,
    },
    /// The connection ended before the answer came.
    #[error("upstream {upstream:?} connection was lost during the request")]
    Lost {
        /// The upstream's name.
        upstream: String,
    },
    /// sluice restarted the upstream, taken as hung, while the request was
    /// in flight; it is not retried, since a call may have taken effect.
    #[error(
        "upstream {upstream:?} was restarted while this request was in flight: {after_timeouts} requests in a row timed out with no answer from it. The request was not retried (it may have taken effect)"
    )]
    Restarted {
        /// The upstream's name.
        upstream: String,
        /// How many timeouts in a row made sluice take it as hung.
        after_timeouts: u32,
    },
    /// The answer could not be read as JSON-RPC.
    #[error("upstream {upstream:?} sent a malformed answer: {detail}")]
    Protocol {
        /// The upstream's name.
        upstream: String,
        /// What was wrong, in fixed words.
        detail: &'static str,
    },
    /// The answer was larger than the transport ceiling; it was discarded
    /// unread (a read gets the read budget's refusal instead, see
    /// `policy::answer`).
    #[error(
        "upstream {upstream:?} answered with a message larger than transport_max_message_bytes; it was discarded, so the outcome of this call could not be relayed (it may have taken effect)"
    )]
    TooLarge {
        /// The upstream's name.
        upstream: String,
    },
    /// The upstream needs an OAuth login sluice does not hold (none yet,
    /// expired past refresh, or a step-up to more scopes).
    #[error(
        "upstream {upstream:?} needs a login{}: {}",
        scope_words(scopes),
        login_words(login)
    )]
    LoginRequired {
        /// The upstream's name.
        upstream: String,
        /// The scopes the login must ask for (empty: the upstream decides).
        scopes: Vec<String>,
        /// How to log in: the command (`sluice login NAME`), or, for a
        /// principal of a sluice with `[auth]`, the URL of its login page.
        login: String,
    },
    /// The upstream refused the token of a login that granted what it
    /// asked: asking for another login would loop, so sluice stopped.
    #[error("upstream {upstream:?} still refuses after a login for scope {:?}; sluice stopped asking (check what the account may do, then log in again by hand: {})", scopes.join(" "), login_words(login))]
    LoginRefused {
        /// The upstream's name.
        upstream: String,
        /// What it asked for.
        scopes: Vec<String>,
        /// How to log in again.
        login: String,
    },
    /// The upstream answered with a JSON-RPC error.
    #[error("upstream error: {0}")]
    Rpc(RpcError),
}

/// "run `sluice login x`", or "open URL in a browser".
fn login_words(login: &str) -> String {
    if login.starts_with("https://") || login.starts_with("http://") {
        format!("open {login} in a browser")
    } else {
        format!("run `{login}`")
    }
}

/// " for scope \"a b\"", or nothing.
fn scope_words(scopes: &[String]) -> String {
    if scopes.is_empty() {
        String::new()
    } else {
        format!(" for scope {:?}", scopes.join(" "))
    }
}

/// sluice's refusal of a request, or the failure of the upstream it went
/// to: what the client gets instead of a result. A few variants answer an
/// upstream's own question instead, when it cannot be put to the client
/// (`ClientCannotAnswer`, `NoClientAnswered`, `SensitiveElicitation`,
/// `UnsafeElicitationUrl`);
/// only their JSON-RPC error matters then.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Denied {
    // --- the request itself ---
    /// The body is not JSON.
    #[error("Parse error")]
    ParseError,
    /// JSON, but not a JSON-RPC message sluice can take.
    #[error("{0}")]
    InvalidMessage(String),
    /// A method sluice does not serve (or not in this era).
    #[error("Method not found: {}", jsonrpc::excerpt(.0))]
    MethodNotFound(String),
    /// Params that are missing or malformed.
    #[error("{0}")]
    InvalidParams(String),
    /// An error `protocol` judged in the request's `_meta`, as it gave it.
    #[error("{}", .0.message)]
    Protocol(RpcError),
    /// Params a core rule refused (a list's limit, fields or cursor, a
    /// request state), with that rule's error.
    #[error("{}", .0.message)]
    Params(RpcError),

    // --- the HTTP transport (admission) ---
    /// More header fields, or header bytes, than sluice reads.
    #[error("Request Header Fields Too Large: at most {max_headers} headers and {max_bytes} bytes")]
    HeadersTooLarge {
        /// The most header fields.
        max_headers: usize,
        /// The most header bytes.
        max_bytes: usize,
    },
    /// A foreign `Origin`, or a foreign `Host` on loopback (S-22).
    #[error("Forbidden: {0} is not allowed")]
    Forbidden(&'static str),
    /// Header fields that contradict each other, such as two `Host` or two
    /// `Authorization` fields.
    #[error("Bad Request: {0}")]
    MalformedRequest(&'static str),
    /// An absolute-form request target naming another authority than the
    /// request's `Host`.
    #[error("Misdirected Request: the request target names another host than Host")]
    Misdirected,
    /// A request body not received within `body_read_timeout` of its
    /// head (a client that trickles a body holds a connection).
    #[error("Request Timeout: the body did not arrive within {}s", .0.as_secs())]
    SlowBody(Duration),
    /// A POST whose `Content-Type` is not `application/json`.
    #[error("Unsupported Media Type: send the message with Content-Type: application/json")]
    UnsupportedMediaType,
    /// No bearer token (`None`), or one that does not verify (why not).
    #[error("Unauthorized: {}", .0.as_deref().unwrap_or("send Authorization: Bearer <token>"))]
    Unauthorized(Option<String>),
    /// A valid token without the scopes `[auth]` requires of every
    /// request.
    #[error("Forbidden: the token lacks the scope(s) {}", .0.join(" "))]
    TokenLacksScopes(Vec<String>),
    /// A 2026-07-28 header that contradicts the body, or is missing.
    #[error("{0}")]
    HeaderMismatch(String),
    /// A legacy request with an `MCP-Protocol-Version` sluice does not speak.
    #[error("Unsupported MCP-Protocol-Version: {}", jsonrpc::quoted(.0))]
    UnsupportedVersionHeader(String),
    /// A legacy request without a session id.
    #[error(
        "Bad Request: no Mcp-Session-Id; send initialize first, or a 2026-07-28 request with _meta"
    )]
    NoSession,
    /// A response from the client without the session it answers in.
    #[error("a response needs the Mcp-Session-Id it answers in")]
    ResponseWithoutSession,
    /// A session id sluice does not hold, or that ended.
    #[error("Session not found: initialize again")]
    SessionNotFound,
    /// `server.max_sessions` are open.
    #[error("too many open sessions; try again later")]
    TooManySessions,

    // --- routing and approval ---
    /// No entry of this name or URI.
    #[error("Unknown {}: {}", kind.noun(), jsonrpc::excerpt(name))]
    UnknownEntry {
        /// Which list it would be in.
        kind: ListKind,
        /// What the client asked for.
        name: String,
    },
    /// A resource URI no approved entry or template covers, or that no
    /// upstream could be found for.
    #[error("Resource not found")]
    ResourceNotFound {
        /// The URI the client asked for.
        uri: String,
    },
    /// The entry drifted from `sluice.lock` and is withheld.
    #[error(
        "{} {} is blocked: {}. Review the drift with `sluice check`; approve it with `sluice lock`",
        kind.noun(),
        jsonrpc::quoted(name),
        drift_reason(*drift)
    )]
    DriftBlocked {
        /// Which list it is in.
        kind: ListKind,
        /// What the client asked for.
        name: String,
        /// The upstream that lists it.
        upstream: String,
        /// How it drifted.
        drift: DriftKind,
    },
    /// The name is in the namespace of an upstream whose catalog was never
    /// read to its end: nothing of it is served yet.
    #[error(
        "upstream {upstream:?} has no complete catalog yet: its tools and prompts are not served until a read of its lists finishes (see /health)"
    )]
    CatalogPending {
        /// The upstream.
        upstream: String,
    },
    /// A route names an upstream that is not running (a reload removed it).
    #[error("no upstream named {0:?}")]
    NoSuchUpstream(String),

    // --- admission of the call ---
    /// The caller lacks these scopes (S-20).
    #[error("insufficient scope: calling {} needs the scope(s) {}", jsonrpc::quoted(target), required.join(" "))]
    InsufficientScope {
        /// What was called, as the client named it.
        target: String,
        /// The scopes the call needs.
        required: Vec<String>,
    },
    /// Over the caller's rate limit (S-24).
    #[error("rate limited: too many calls of {}; retry in {} ms", jsonrpc::quoted(tool), retry_after_ms(*retry_after))]
    RateLimited {
        /// The tool, as the client named it.
        tool: String,
        /// When the next call would pass.
        retry_after: Duration,
    },

    // --- the answer ---
    /// A read larger than its read budget, withheld whole. A tool's
    /// refusal is an `isError` result, not an error.
    #[error("The result was withheld whole: it is larger than the read budget")]
    ReadTooLarge {
        /// What was read.
        surface: Surface,
        /// The budget that applied.
        limit: usize,
    },
    /// The upstream did not give its answer, or answered with an error.
    #[error("{0}")]
    Upstream(UpstreamFailure),
    /// An elicitation asking for sensitive data (S-27).
    #[error(
        "sluice refused an elicitation that asks for sensitive data (a credential, payment or identity field); collect secrets through configuration or URL-mode elicitation"
    )]
    SensitiveElicitation,
    /// A URL-mode elicitation whose URL may not be put to a user (see
    /// `outbound::browser`).
    #[error("sluice refused a URL-mode elicitation: {0}")]
    UnsafeElicitationUrl(BrowserUrlError),
    /// A 2026-07-28 request of an extension's method that does not declare
    /// the extension in its client capabilities.
    #[error("this request needs the {0} extension, which it does not declare")]
    MissingExtension(&'static str),
    /// The upstream kept asking for input.
    #[error("the upstream asked for input more than {0} times")]
    TooManyRounds(usize),
    /// The upstream asked the client something the client cannot answer
    /// (it did not declare the capability, or takes no requests).
    #[error("the upstream needs {} from the client, which did not declare it", jsonrpc::quoted(.0))]
    ClientLacksCapability(String),
    /// What an upstream's question gets when the client cannot be asked.
    #[error("the client cannot answer {} through sluice", jsonrpc::excerpt(.0))]
    ClientCannotAnswer(String),
    /// The client answered a relayed question with an error.
    #[error("{}", .0.message)]
    ClientError(RpcError),
    /// The client went away while sluice waited for its answer.
    #[error("the client is gone")]
    ClientGone,
    /// The client did not answer a relayed question in time.
    #[error("the client did not answer {} in time", jsonrpc::excerpt(.0))]
    ClientTimeout(String),
    /// An upstream's question found no request to relay it through, or
    /// its answer did not come back in time.
    #[error("no client answered {}", jsonrpc::excerpt(.0))]
    NoClientAnswered(String),
    /// The forwarded call ended without an answer sluice can send (it
    /// panicked, or its result could not be shaped).
    #[error("the forwarded call ended without an answer")]
    ForwardLost,
}

fn drift_reason(drift: DriftKind) -> &'static str {
    match drift {
        DriftKind::Changed => "its definition changed since it was approved in sluice.lock",
        DriftKind::Added => "it is not approved in sluice.lock",
        DriftKind::Removed => "its upstream no longer lists it",
        DriftKind::Findings => "its poisoning scan has findings sluice.lock did not accept",
    }
}

fn retry_after_ms(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1)
}

// === impl UpstreamFailure ===

impl UpstreamFailure {
    /// `upstream` sent a result nested deeper than sluice reads (its text
    /// was valid JSON, but no tree or walk of it can be made).
    pub fn nested_too_deeply(upstream: &str) -> UpstreamFailure {
        UpstreamFailure::Protocol {
            upstream: upstream.to_owned(),
            detail: "the result is nested too deeply to be read",
        }
    }

    /// The JSON-RPC error a client receives.
    pub fn to_rpc(&self) -> RpcError {
        let (code, upstream) = match self {
            UpstreamFailure::Rpc(e) => return e.clone(),
            UpstreamFailure::Unavailable { upstream, .. } => (UPSTREAM_UNAVAILABLE, upstream),
            UpstreamFailure::Timeout { upstream, .. } => (UPSTREAM_TIMEOUT, upstream),
            UpstreamFailure::Lost { upstream } => (UPSTREAM_LOST, upstream),
            UpstreamFailure::Restarted { upstream, .. } => {
                return RpcError::new(UPSTREAM_LOST, self.to_string())
                    .with_data(json!({"upstream": upstream, "restarted": true}));
            }
            UpstreamFailure::Protocol { upstream, .. } => (UPSTREAM_PROTOCOL, upstream),
            UpstreamFailure::TooLarge { upstream } => (ANSWER_TOO_LARGE, upstream),
            UpstreamFailure::LoginRequired {
                upstream,
                scopes,
                login,
            } => {
                return RpcError::new(UPSTREAM_LOGIN_REQUIRED, self.to_string()).with_data(json!({
                    "upstream": upstream,
                    "login": login,
                    "scopes": scopes,
                }));
            }
            UpstreamFailure::LoginRefused {
                upstream, scopes, ..
            } => {
                return RpcError::new(UPSTREAM_LOGIN_REFUSED, self.to_string())
                    .with_data(json!({"upstream": upstream, "scopes": scopes}));
            }
        };
        RpcError::new(code, self.to_string()).with_data(json!({"upstream": upstream}))
    }

    /// What the audit log records.
    pub fn decision(&self) -> Decision {
        match self {
            UpstreamFailure::Timeout { .. } => Decision::Timeout,
            _ => Decision::UpstreamError,
        }
    }
}

// === impl Denied ===

impl Denied {
    /// Invalid params, in words.
    pub fn invalid_params(message: impl Into<String>) -> Denied {
        Denied::InvalidParams(message.into())
    }

    /// What the client gets, converted once: a JSON-RPC error, or for a
    /// read-only tool's oversized result the fixed `isError` refusal.
    pub fn to_answer(&self) -> Result<Value, RpcError> {
        match self {
            Denied::ReadTooLarge {
                surface: Surface::Tool,
                limit,
            } => Ok(budget::tool_refusal(*limit)),
            other => Err(other.to_rpc()),
        }
    }

    /// The JSON-RPC error (for a tool's read refusal, the error a resource
    /// read would get; see [`Denied::to_answer`]).
    pub fn to_rpc(&self) -> RpcError {
        let message = self.to_string();
        match self {
            Denied::ParseError => RpcError::new(jsonrpc::PARSE_ERROR, message),
            Denied::MethodNotFound(_) | Denied::ClientCannotAnswer(_) => {
                RpcError::new(jsonrpc::METHOD_NOT_FOUND, message)
            }
            Denied::InvalidParams(_)
            | Denied::UnknownEntry { .. }
            | Denied::SensitiveElicitation
            | Denied::UnsafeElicitationUrl(_) => RpcError::new(jsonrpc::INVALID_PARAMS, message),
            Denied::Protocol(e) | Denied::Params(e) | Denied::ClientError(e) => e.clone(),
            Denied::InvalidMessage(_)
            | Denied::HeadersTooLarge { .. }
            | Denied::Forbidden(_)
            | Denied::MalformedRequest(_)
            | Denied::Misdirected
            | Denied::SlowBody(_)
            | Denied::UnsupportedMediaType
            | Denied::Unauthorized(_)
            | Denied::TokenLacksScopes(_)
            | Denied::NoSession
            | Denied::ResponseWithoutSession
            | Denied::SessionNotFound => RpcError::new(jsonrpc::INVALID_REQUEST, message),
            Denied::UnsupportedVersionHeader(_) => RpcError::new(jsonrpc::INVALID_REQUEST, message)
                .with_data(json!({"supported": protocol::supported_versions()})),
            Denied::HeaderMismatch(_) => RpcError::new(jsonrpc::HEADER_MISMATCH, message),
            Denied::TooManySessions
            | Denied::NoSuchUpstream(_)
            | Denied::TooManyRounds(_)
            | Denied::ClientLacksCapability(_)
            | Denied::ClientGone
            | Denied::ClientTimeout(_)
            | Denied::NoClientAnswered(_)
            | Denied::ForwardLost => RpcError::new(jsonrpc::INTERNAL_ERROR, message),
            Denied::MissingExtension(id) => {
                RpcError::new(jsonrpc::MISSING_CLIENT_CAPABILITY, message)
                    .with_data(json!({"requiredCapabilities": {"extensions": {*id: {}}}}))
            }
            Denied::ResourceNotFound { uri } => {
                RpcError::new(jsonrpc::LEGACY_RESOURCE_NOT_FOUND, message)
                    .with_data(json!({"uri": uri}))
            }
            Denied::DriftBlocked {
                upstream, drift, ..
            } => RpcError::new(DRIFT_BLOCKED, message)
                .with_data(json!({"upstream": upstream, "drift": drift.as_str()})),
            Denied::CatalogPending { upstream } => RpcError::new(UPSTREAM_UNAVAILABLE, message)
                .with_data(json!({"upstream": upstream})),
            Denied::InsufficientScope { required, .. } => {
                RpcError::new(INSUFFICIENT_SCOPE, message)
                    .with_data(json!({"requiredScopes": required}))
            }
            Denied::RateLimited { retry_after, .. } => RpcError::new(RATE_LIMITED, message)
                .with_data(json!({"retryAfterMs": retry_after_ms(*retry_after)})),
            Denied::ReadTooLarge { surface, limit } => budget::read_refusal(*limit, *surface),
            Denied::Upstream(failure) => failure.to_rpc(),
        }
    }

    /// The HTTP status of an answer that carries this refusal. Only
    /// sluice's own refusals give 429 and 403, never an error code an
    /// upstream sent; a 2026-07-28 client also learns an unknown method
    /// (404) or a missing capability (400) from the status.
    pub fn http_status(&self, era: Era) -> u16 {
        match self {
            Denied::ParseError
            | Denied::InvalidMessage(_)
            | Denied::Protocol(_)
            | Denied::HeaderMismatch(_)
            | Denied::UnsupportedVersionHeader(_)
            | Denied::NoSession
            | Denied::ResponseWithoutSession
            | Denied::MalformedRequest(_) => status::BAD_REQUEST,
            Denied::UnsupportedMediaType => status::UNSUPPORTED_MEDIA_TYPE,
            Denied::SlowBody(_) => status::REQUEST_TIMEOUT,
            Denied::Misdirected => status::MISDIRECTED_REQUEST,
            Denied::HeadersTooLarge { .. } => status::HEADER_FIELDS_TOO_LARGE,
            Denied::Unauthorized(_) => status::UNAUTHORIZED,
            Denied::Forbidden(_)
            | Denied::TokenLacksScopes(_)
            | Denied::InsufficientScope { .. } => status::FORBIDDEN,
            Denied::SessionNotFound => status::NOT_FOUND,
            Denied::TooManySessions => status::SERVICE_UNAVAILABLE,
            Denied::RateLimited { .. } => status::TOO_MANY_REQUESTS,
            Denied::ReadTooLarge {
                surface: Surface::Tool,
                ..
            } => status::OK,
            other if era == Era::Modern => match other.to_rpc().code {
                jsonrpc::METHOD_NOT_FOUND => status::NOT_FOUND,
                jsonrpc::MISSING_CLIENT_CAPABILITY => status::BAD_REQUEST,
                _ => status::OK,
            },
            _ => status::OK,
        }
    }

    /// Seconds for `Retry-After` (rounded up, at least 1), for a rate
    /// limit.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Denied::RateLimited { retry_after, .. } => {
                let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                Some(secs.max(1))
            }
            _ => None,
        }
    }

    /// The scopes a `WWW-Authenticate` challenge must name, for a scope
    /// refusal.
    pub fn required_scopes(&self) -> Option<&[String]> {
        match self {
            Denied::InsufficientScope { required, .. } => Some(required),
            _ => None,
        }
    }

    /// The upstream and audit target a refusal names when it was decided
    /// after routing (a drift block): the target is the exposed name, or
    /// for a resource its URI's scheme (never the URI).
    pub fn routed(&self) -> Option<(&str, String)> {
        match self {
            Denied::DriftBlocked {
                kind: ListKind::Resources,
                name,
                upstream,
                ..
            } => Some((upstream, audit::resource_kind(name))),
            Denied::DriftBlocked { name, upstream, .. } => Some((upstream, name.clone())),
            _ => None,
        }
    }

    /// What the audit log and the metrics record for it.
    pub fn decision(&self) -> Decision {
        match self {
            Denied::DriftBlocked { .. } => Decision::BlockedDrift,
            Denied::RateLimited { .. } => Decision::RateLimited,
            Denied::InsufficientScope { .. } => Decision::RefusedScope,
            Denied::SensitiveElicitation | Denied::UnsafeElicitationUrl(_) => {
                Decision::RefusedElicitation
            }
            Denied::ReadTooLarge { .. } => Decision::RefusedSize,
            Denied::Upstream(failure) => failure.decision(),
            // Refused before routing, or in a way no step claims: an
            // unknown name, bad params, a question the client could not
            // answer.
            _ => Decision::Invalid,
        }
    }
}

impl From<RpcError> for Denied {
    /// A core rule's refusal of the params (see [`Denied::Params`]).
    fn from(error: RpcError) -> Denied {
        Denied::Params(error)
    }
}

impl From<UpstreamFailure> for Denied {
    fn from(failure: UpstreamFailure) -> Denied {
        Denied::Upstream(failure)
    }
}

#[cfg(test)]
mod tests;
