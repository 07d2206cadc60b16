//! What operators see of a running gateway: Prometheus metrics, the audit
//! log, and the facts both are made from.
//!
//! The router records, on each request's [`Trail`], what it learned while
//! handling it (the upstream it routed to, how long the upstream took, how
//! large the answer was). When the request is answered, the router's
//! decision (from its refusal, or the result) and the trail make one
//! observation: counted and timed in the metrics, and written as one row of
//! the audit log, both naming the `[[view]]` the request came through. The decision names come from `sluice_core::audit`;
//! nothing here holds an argument, a result or an error message.

pub mod audit;
pub mod metrics;
pub(crate) mod recent;
pub(crate) mod trace;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_core::access::Principal;
use sluice_core::audit::{AuditRecord, Decision, SizeBucket};
use sluice_core::console::CallSample;
use sluice_core::jsonrpc::RpcError;
use sluice_core::payload::Payload;
use tokio::time::Instant;

pub use audit::AuditSink;

/// Where a gateway's observations go.
#[derive(Clone, Default)]
pub struct Ops {
    /// The audit log, when one is configured.
    audit: Option<Arc<dyn AuditSink>>,
    /// The recent calls the console's metrics page shows.
    pub(crate) recent: Arc<recent::RecentCalls>,
}

/// What the router learned about one request while handling it.
#[derive(Debug, Default)]
pub struct Trail(Mutex<Facts>);

#[derive(Debug, Default)]
struct Facts {
    upstream: Option<String>,
    target: Option<String>,
    upstream_time: Option<Duration>,
    size: Option<usize>,
}

impl Trail {
    fn facts(&self) -> std::sync::MutexGuard<'_, Facts> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The request was routed to `upstream`, for `target` (an exposed
    /// tool or prompt name, or a listed resource's URI scheme; `None` for
    /// what the catalog does not list).
    pub(crate) fn routed(&self, upstream: &str, target: Option<&str>) {
        let mut facts = self.facts();
        facts.upstream = Some(upstream.to_owned());
        facts.target = target.map(str::to_owned);
    }

    /// The upstream took `elapsed` to answer (added up over MRTR rounds).
    pub(crate) fn upstream_took(&self, elapsed: Duration) {
        let mut facts = self.facts();
        *facts.upstream_time.get_or_insert(Duration::ZERO) += elapsed;
    }

    /// The answer passed to the client measured `bytes` as compact JSON.
    pub(crate) fn sized(&self, bytes: usize) {
        self.facts().size = Some(bytes);
    }
}

impl Ops {
    /// Observations go to the metrics and, when given, to `audit`.
    pub fn new(audit: Option<Arc<dyn AuditSink>>) -> Ops {
        Ops {
            audit,
            recent: Arc::default(),
        }
    }

    /// Whether answers must be measured (their size bucket goes into the
    /// audit log; measuring costs a serialization).
    pub(crate) fn sizes_answers(&self) -> bool {
        self.audit.is_some()
    }

    /// A request arrived: it is recorded once, when answered, or as
    /// cancelled if its handling is dropped first (the client went away),
    /// so that a call that reached an upstream never goes unrecorded.
    pub(crate) fn start<'a>(
        &'a self,
        method: &'a str,
        view: Option<&'a str>,
        principal: &'a Principal,
        trail: &'a Trail,
        span: &'a tracing::Span,
    ) -> InFlight<'a> {
        InFlight {
            ops: self,
            method,
            view,
            principal,
            trail,
            span,
            started: (Instant::now(), SystemTime::now()),
            recorded: false,
        }
    }

    /// Counts one request, times it, and writes its audit row; `answered`
    /// is `None` when it was cancelled.
    fn record(
        &self,
        request: &InFlight<'_>,
        answered: Option<(Decision, &Result<Payload, RpcError>)>,
    ) {
        let InFlight {
            method,
            view,
            principal,
            trail,
            span,
            started,
            ..
        } = *request;
        let elapsed = started.0.elapsed();
        let facts = std::mem::take(&mut *trail.facts());
        let decision = answered.map_or(Decision::Cancelled, |(decision, _)| decision);
        let outcome = answered.map(|(_, answer)| answer);
        span.record("mcp.outcome", decision.as_str());
        if let Some(upstream) = &facts.upstream {
            span.record("mcp.upstream", upstream.as_str());
        }
        if let Some(target) = &facts.target {
            span.record("mcp.target", target.as_str());
        }
        metrics::call(
            method,
            view,
            facts.upstream.as_deref(),
            facts.target.as_deref(),
            decision,
            elapsed,
            facts.upstream_time,
        );
        let time_ms = started
            .1
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self.recent.push(CallSample {
            at_ms: u64::try_from(time_ms).unwrap_or_default(),
            upstream: facts.upstream.clone(),
            duration_us: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            ok: decision == Decision::Ok,
        });
        let Some(audit) = &self.audit else { return };
        audit.record(AuditRecord {
            time_ms,
            principal: principal.key(),
            view: view.map(str::to_owned),
            method: method.to_owned(),
            upstream: facts.upstream,
            target: facts.target,
            decision,
            code: outcome.and_then(|o| o.as_ref().err()).map(|e| e.code),
            duration_us: i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX),
            size: outcome
                .and_then(|o| o.as_ref().ok())
                .map(|_| SizeBucket::of(facts.size.unwrap_or(0))),
        });
    }
}

/// A request being handled (see [`Ops::start`]).
pub(crate) struct InFlight<'a> {
    ops: &'a Ops,
    method: &'a str,
    view: Option<&'a str>,
    principal: &'a Principal,
    trail: &'a Trail,
    span: &'a tracing::Span,
    started: (Instant, SystemTime),
    recorded: bool,
}

impl InFlight<'_> {
    /// The request was answered with `answer`; `decision` is what sluice
    /// decided on the way.
    pub(crate) fn answered(mut self, decision: Decision, answer: &Result<Payload, RpcError>) {
        self.recorded = true;
        self.ops.record(&self, Some((decision, answer)));
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.recorded {
            self.ops.record(self, None);
        }
    }
}
