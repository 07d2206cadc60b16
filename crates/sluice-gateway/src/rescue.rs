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

pub use sluice_core::policy::denied::{
    ANSWER_TOO_LARGE, DRIFT_BLOCKED, INSUFFICIENT_SCOPE, RATE_LIMITED, UPSTREAM_LOST,
    UPSTREAM_PROTOCOL, UPSTREAM_TIMEOUT, UPSTREAM_UNAVAILABLE,
};

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
