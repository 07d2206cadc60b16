//! The spans of a request: `mcp.request` for each downstream request,
//! with `sluice.policy` (admission, the answer's boundary) and
//! `mcp.upstream` (the forwarded call) as children.
//!
//! Spans are ordinary `tracing` spans; with the `otel` feature and an
//! OpenTelemetry layer installed (`sluice serve` with `[telemetry]`), they
//! are exported, the request span continues the client's `traceparent`,
//! and the upstream span's context is what the upstream receives. Without
//! it, the client's `traceparent` reaches the upstream unchanged.

use serde_json::Value;
use sluice_core::trace_context;
use tracing::Span;
use tracing::field::Empty;

/// The span of one downstream request, a child of the client's trace.
pub(crate) fn request_span(method: &str, params: &Value) -> Span {
    let span = tracing::info_span!(
        "mcp.request",
        otel.kind = "server",
        rpc.method = method,
        mcp.upstream = Empty,
        mcp.target = Empty,
        mcp.outcome = Empty,
    );
    if let Some(parent) = trace_context::from_params(params) {
        otel::continue_trace(&span, parent);
    }
    span
}

/// The span of sluice's own checks on a request or an answer.
pub(crate) fn policy_span() -> Span {
    tracing::info_span!("sluice.policy")
}

/// The span of a call forwarded to `upstream`; `params` get its trace
/// context, so that the upstream's spans are its children.
pub(crate) fn upstream_span(upstream: &str, method: &str, params: &mut Value) -> Span {
    let span = tracing::info_span!(
        "mcp.upstream",
        otel.kind = "client",
        rpc.method = method,
        mcp.upstream = upstream,
    );
    if let Some(ours) = otel::context_of(&span)
        && let Some(meta) = params
            .as_object_mut()
            .map(|p| {
                p.entry("_meta")
                    .or_insert_with(|| Value::Object(Default::default()))
            })
            .and_then(Value::as_object_mut)
    {
        meta.insert(trace_context::TRACEPARENT.into(), ours.to_string().into());
    }
    span
}

#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use sluice_core::trace_context::TraceParent;
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    pub(super) fn continue_trace(span: &Span, parent: TraceParent) {
        let remote = SpanContext::new(
            TraceId::from_bytes(parent.trace_id),
            SpanId::from_bytes(parent.parent_id),
            TraceFlags::new(parent.flags),
            true,
            TraceState::default(),
        );
        let cx = opentelemetry::Context::new().with_remote_span_context(remote);
        // Fails only when no OpenTelemetry layer records this span.
        let _ = span.set_parent(cx);
    }

    pub(super) fn context_of(span: &Span) -> Option<TraceParent> {
        let cx = span.context();
        let ours = cx.span().span_context().clone();
        ours.is_valid().then(|| TraceParent {
            trace_id: ours.trace_id().to_bytes(),
            parent_id: ours.span_id().to_bytes(),
            flags: ours.trace_flags().to_u8(),
        })
    }
}

#[cfg(not(feature = "otel"))]
mod otel {
    use sluice_core::trace_context::TraceParent;
    use tracing::Span;

    /// Without OpenTelemetry there is no span context to link.
    pub(super) fn continue_trace(_span: &Span, _parent: TraceParent) {}

    /// Without OpenTelemetry sluice adds no span to the trace: the client's
    /// `traceparent` goes upstream unchanged.
    pub(super) fn context_of(_span: &Span) -> Option<TraceParent> {
        None
    }
}
