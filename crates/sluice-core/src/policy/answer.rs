//! What an answer goes through on its way to the client, decided in one
//! place: which boundary applies to a call (the read-only rule, the read
//! budget, the operator's projection), what the boundary does with the
//! upstream's outcome, and what of an upstream's notification reaches the
//! client.

use serde_json::Value;
use serde_json::value::RawValue;

use crate::boundary::Boundary;
use crate::boundary::budget::{self, Surface};
use crate::boundary::redact::text::{TREE_VALUES, text_values_over};
use crate::boundary::redact::{Redactions, Redactor};
use crate::config::{Config, UpstreamConfig};
use crate::method::notification;
use crate::payload::{Payload, ResultHead};

use super::{Denied, UpstreamFailure};

/// An upstream's outcome after the boundary.
#[derive(Debug)]
#[must_use = "a bounded answer is what the client gets"]
pub struct Bound {
    /// The redacted result, or why the client gets none.
    pub answer: Result<Payload, Denied>,
    /// The secrets redacted from it.
    pub redactions: Redactions,
    /// The passed result's compact JSON length, when it was measured.
    pub measured: Option<usize>,
}

/// Whether a tool's results are reads: the config lists it as read-only,
/// or its approved definition says `readOnlyHint: true` and its upstream
/// is trusted. Everything else is mutation-capable and never refused by
/// the read budget.
pub fn is_read_only(upstream: &UpstreamConfig, tool: &str, definition: Option<&Value>) -> bool {
    let listed = upstream.read_only_tools.iter().any(|t| t == tool);
    budget::is_read_only(definition, upstream.trusted, listed)
}

/// What an answer from `upstream` goes through: redaction always; the
/// read budget (the upstream's, else the global one) when `read`.
pub fn boundary<'a>(
    config: &Config,
    upstream: &UpstreamConfig,
    redactor: &'a Redactor,
    surface: Surface,
    read: bool,
) -> Boundary<'a> {
    Boundary {
        redactor,
        limit: upstream.read_budget.unwrap_or(config.limits.read_budget),
        surface,
        read,
        projection: None,
    }
}

/// A tool call's boundary: a read only for a read-only tool, with the
/// tool's own budget and the operator's projection when configured.
/// `tool` is the upstream's name, `exposed` the client's.
pub fn tool_boundary<'a>(
    config: &'a Config,
    upstream: &UpstreamConfig,
    redactor: &'a Redactor,
    tool: &str,
    exposed: &str,
    definition: Option<&Value>,
) -> Boundary<'a> {
    let read = is_read_only(upstream, tool, definition);
    let mut boundary = boundary(config, upstream, redactor, Surface::Tool, read);
    if let Some(limit) = upstream.tool_read_budgets.get(tool) {
        boundary.limit = *limit;
    }
    boundary.projection = config
        .projections
        .iter()
        .find(|p| p.tool == exposed)
        .map(|p| &p.projection);
    boundary
}

/// How an upstream's large answer travels (one of
/// [`crate::payload::CARRIED_AS_TEXT_FROM`] bytes and more, read without a
/// tree): as its text when it holds more values than a tree should, else
/// as a tree. One long string costs about its size as a tree, and the
/// tree's way through the boundary reads it fewer times than the text's.
pub fn carried(text: Box<RawValue>) -> Payload {
    if text_values_over(text.get(), TREE_VALUES) {
        return Payload::Text(text);
    }
    match serde_json::from_str(text.get()) {
        Ok(tree) => Payload::Tree(tree),
        Err(_) => Payload::Text(text),
    }
}

/// The upstream's outcome through the boundary: a result redacted,
/// projected, and for a read measured and refused whole when too large; an
/// upstream error redacted; an answer the transport discarded for its size
/// refused as too large for a read, reported as lost for a mutation.
///
/// A result carried as text stays text when nothing needs its tree (no
/// projection, no MRTR round or task in its head, see
/// [`ResultHead::is_plain`]); otherwise it is parsed here, and one too
/// deeply nested to be read is `upstream`'s malformed answer.
pub fn bound(
    boundary: &Boundary<'_>,
    upstream: &str,
    outcome: Result<Payload, UpstreamFailure>,
) -> Bound {
    let refused = || Denied::ReadTooLarge {
        surface: boundary.surface,
        limit: boundary.limit,
    };
    let result = match outcome {
        Ok(Payload::Tree(result)) => result,
        Ok(Payload::Text(text)) => {
            let as_text = ResultHead::of(&text)
                .is_plain()
                .then(|| boundary.result_text(text.get()))
                .flatten();
            if let Some(bounded) = as_text {
                let passed = bounded.passed.map(|out| {
                    let out = String::from_utf8(out).ok()?;
                    RawValue::from_string(out).ok()
                });
                let answer = match passed {
                    None => Err(refused()),
                    Some(Some(text)) => Ok(Payload::Text(text)),
                    Some(None) => Err(malformed(upstream)),
                };
                return Bound {
                    answer,
                    redactions: bounded.redactions,
                    measured: bounded.measured,
                };
            }
            match serde_json::from_str(text.get()) {
                Ok(result) => result,
                Err(_) => {
                    return Bound {
                        answer: Err(malformed(upstream)),
                        redactions: Redactions::default(),
                        measured: None,
                    };
                }
            }
        }
        Err(UpstreamFailure::Rpc(error)) => {
            let (error, redactions) = boundary.error(error);
            return Bound {
                answer: Err(Denied::Upstream(UpstreamFailure::Rpc(error))),
                redactions,
                measured: None,
            };
        }
        Err(too_large @ UpstreamFailure::TooLarge { .. }) => {
            return Bound {
                answer: Err(if boundary.read {
                    refused()
                } else {
                    Denied::Upstream(too_large)
                }),
                redactions: Redactions::default(),
                measured: None,
            };
        }
        Err(other) => {
            return Bound {
                answer: Err(Denied::Upstream(other)),
                redactions: Redactions::default(),
                measured: None,
            };
        }
    };
    let bounded = boundary.result(result);
    Bound {
        answer: bounded.passed.map(Payload::Tree).ok_or_else(refused),
        redactions: bounded.redactions,
        measured: bounded.measured,
    }
}

/// An answer sluice could not walk (nested deeper than the redaction
/// walk goes).
fn malformed(upstream: &str) -> Denied {
    Denied::Upstream(UpstreamFailure::nested_too_deeply(upstream))
}

/// What of a notification an upstream sent during a request reaches the
/// client: its params redacted (progress messages and log data are
/// upstream text too); progress only under the client's own
/// `progressToken` (dropped when the request has none); log messages only
/// when the request wants them.
pub fn relayed_notification(
    redactor: &Redactor,
    mut message: Value,
    token: Option<&Value>,
    wants_logs: bool,
) -> (Option<Value>, Redactions) {
    let redactions = match message.get_mut("params") {
        Some(params) => redactor.redact(params),
        None => Redactions::default(),
    };
    let method = message.get("method").and_then(Value::as_str);
    if method == Some(notification::MESSAGE) && !wants_logs {
        return (None, redactions);
    }
    if method == Some(notification::PROGRESS) {
        match (token, message.pointer_mut("/params/progressToken")) {
            (Some(token), Some(slot)) => *slot = token.clone(),
            _ => return (None, redactions),
        }
    }
    (Some(message), redactions)
}

#[cfg(test)]
mod tests;
