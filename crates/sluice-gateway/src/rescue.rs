//! The one place where a gateway failure becomes a JSON-RPC error.
//!
//! sluice's own codes live in `-32000..-32019` (DESIGN decision 9). Each
//! error names the upstream by its configured name and says what happened,
//! never how the upstream is reached (no command line, URL or header).
//!
//! | code     | meaning                                                        |
//! |----------|----------------------------------------------------------------|
//! | `-32001` | the upstream is not available (starting, failed, restarting)   |
//! | `-32003` | the upstream did not answer within `server.request_timeout`    |
//! | `-32004` | the upstream's connection was lost during the request          |
//! | `-32005` | the upstream sent an answer that is not valid JSON-RPC         |
//! | `-32006` | the gateway is shutting down                                   |
//! | `-32007` | a mutation-capable call's answer exceeded the transport ceiling: its outcome could not be relayed |
//! | `-32010` | the entry is withheld: it drifted from `sluice.lock` (`on_drift = "block"`) |
//!
//! Errors the upstream itself returns are passed through unchanged (apart
//! from the era translation of `-32002`, see `sluice_core::protocol`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::json;
use sluice_core::catalog::WithheldRoute;
use sluice_core::catalog::drift::DriftKind;
use sluice_core::jsonrpc::RpcError;

/// The upstream is not available.
pub const UPSTREAM_UNAVAILABLE: i64 = -32001;
/// The upstream did not answer in time.
pub const UPSTREAM_TIMEOUT: i64 = -32003;
/// The upstream's connection was lost during the request.
pub const UPSTREAM_LOST: i64 = -32004;
/// The upstream's answer was not valid JSON-RPC.
pub const UPSTREAM_PROTOCOL: i64 = -32005;
/// sluice is shutting down.
pub const SHUTTING_DOWN: i64 = -32006;
/// The upstream's answer exceeded the transport ceiling and was discarded.
pub const ANSWER_TOO_LARGE: i64 = -32007;

/// A call to an entry withheld because it drifted from `sluice.lock`.
pub const DRIFT_BLOCKED: i64 = -32010;

/// A tool call over its principal's rate limit (S-24).
pub const RATE_LIMITED: i64 = -32011;
/// A tool call whose principal lacks a scope the call needs (S-20).
pub const INSUFFICIENT_SCOPE: i64 = -32012;

/// sluice's own refusal of a request, recorded where the transport can
/// see it: an HTTP answer gets its status (429, 403) from this, never from
/// an error code an upstream could send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Over the rate limit; the next call passes after this long.
    RateLimited(Duration),
    /// The caller lacks these scopes.
    InsufficientScope(Vec<String>),
}

/// Where a request's handling records sluice's refusal of it.
#[derive(Debug, Clone, Default)]
pub struct RefusalSlot(Arc<OnceLock<Refused>>);

impl RefusalSlot {
    /// Records the refusal (the first one stands).
    pub fn set(&self, refused: Refused) {
        let _ = self.0.set(refused);
    }

    /// The refusal, if the request was refused by sluice.
    pub fn get(&self) -> Option<&Refused> {
        self.0.get()
    }
}

/// The error for a call over the rate limit: `data.retryAfterMs` says
/// when the next call would pass.
pub fn rate_limited(tool: &str, wait: Duration) -> RpcError {
    let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
    RpcError::new(
        RATE_LIMITED,
        format!("rate limited: too many calls of {tool:?}; retry in {ms} ms"),
    )
    .with_data(json!({"retryAfterMs": ms}))
}

/// The error for a call that needs scopes the caller's token lacks.
pub fn insufficient_scope(tool: &str, required: &[String]) -> RpcError {
    RpcError::new(
        INSUFFICIENT_SCOPE,
        format!(
            "insufficient scope: calling {tool:?} needs the scope(s) {}",
            required.join(" ")
        ),
    )
    .with_data(json!({"requiredScopes": required}))
}

/// The error for a call to a withheld entry. `what` is `tool`, `prompt` or
/// `resource`; `name` is what the client asked for.
pub fn drift_blocked(what: &str, name: &str, route: &WithheldRoute) -> RpcError {
    let why = match route.drift {
        DriftKind::Changed => "its definition changed since it was approved in sluice.lock",
        DriftKind::Added => "it is not approved in sluice.lock",
        DriftKind::Removed => "its upstream no longer lists it",
    };
    RpcError::new(
        DRIFT_BLOCKED,
        format!(
            "{what} {name:?} is blocked: {why}. Review the drift with `sluice check`; approve it with `sluice lock`"
        ),
    )
    .with_data(json!({"upstream": route.upstream, "drift": route.drift.as_str()}))
}

/// The error for a call to a tool or prompt of an upstream whose catalog
/// has never been read completely: nothing of it is served yet.
pub fn catalog_pending(upstream: &str) -> RpcError {
    RpcError::new(
        UPSTREAM_UNAVAILABLE,
        format!(
            "upstream {upstream:?} has no complete catalog yet: its tools and prompts are not served until a read of its lists finishes (see /health)"
        ),
    )
    .with_data(json!({"upstream": upstream}))
}

/// Why a request to an upstream did not produce the upstream's own answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UpstreamError {
    /// Not connected: starting, failed or restarting.
    #[error("upstream {upstream:?} is not available ({state})")]
    Unavailable {
        /// The upstream's name.
        upstream: String,
        /// Its state, in words.
        state: &'static str,
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
    /// The answer could not be read as JSON-RPC.
    #[error("upstream {upstream:?} sent a malformed answer: {detail}")]
    Protocol {
        /// The upstream's name.
        upstream: String,
        /// What was wrong, in fixed words.
        detail: &'static str,
    },
    /// The answer was larger than the transport ceiling; it was discarded
    /// unread (the router turns this into a refusal for a read).
    #[error(
        "upstream {upstream:?} answered with a message larger than transport_max_message_bytes; it was discarded, so the outcome of this call could not be relayed (it may have taken effect)"
    )]
    TooLarge {
        /// The upstream's name.
        upstream: String,
    },
    /// The upstream answered with a JSON-RPC error.
    #[error("upstream error: {0}")]
    Rpc(RpcError),
    /// sluice is shutting down.
    #[error("sluice is shutting down")]
    ShuttingDown,
}

impl UpstreamError {
    /// The JSON-RPC error a client receives.
    pub fn to_rpc(&self) -> RpcError {
        let (code, upstream) = match self {
            UpstreamError::Rpc(e) => return e.clone(),
            UpstreamError::ShuttingDown => {
                return RpcError::new(SHUTTING_DOWN, self.to_string());
            }
            UpstreamError::Unavailable { upstream, .. } => (UPSTREAM_UNAVAILABLE, upstream),
            UpstreamError::Timeout { upstream, .. } => (UPSTREAM_TIMEOUT, upstream),
            UpstreamError::Lost { upstream } => (UPSTREAM_LOST, upstream),
            UpstreamError::Protocol { upstream, .. } => (UPSTREAM_PROTOCOL, upstream),
            UpstreamError::TooLarge { upstream } => (ANSWER_TOO_LARGE, upstream),
        };
        RpcError::new(code, self.to_string()).with_data(json!({"upstream": upstream}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_own_code_and_names_the_upstream() {
        let up = || "git".to_owned();
        let cases = [
            (
                UpstreamError::Unavailable {
                    upstream: up(),
                    state: "restarting",
                },
                UPSTREAM_UNAVAILABLE,
            ),
            (
                UpstreamError::Timeout {
                    upstream: up(),
                    after: Duration::from_secs(60),
                },
                UPSTREAM_TIMEOUT,
            ),
            (UpstreamError::Lost { upstream: up() }, UPSTREAM_LOST),
            (
                UpstreamError::Protocol {
                    upstream: up(),
                    detail: "not JSON",
                },
                UPSTREAM_PROTOCOL,
            ),
        ];
        let mut codes = Vec::new();
        for (err, code) in cases {
            let rpc = err.to_rpc();
            assert_eq!(rpc.code, code);
            assert!((-32019..=-32000).contains(&rpc.code));
            assert_eq!(rpc.data, Some(json!({"upstream": "git"})));
            assert!(rpc.message.contains("\"git\""), "{}", rpc.message);
            codes.push(code);
        }
        codes.dedup();
        assert_eq!(codes.len(), 4);
        let passthrough = RpcError::new(-32602, "Unknown tool");
        assert_eq!(
            UpstreamError::Rpc(passthrough.clone()).to_rpc(),
            passthrough
        );
    }
}
