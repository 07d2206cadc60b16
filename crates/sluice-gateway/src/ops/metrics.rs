//! The Prometheus metrics (`GET /metrics`), recorded through the `metrics`
//! facade and rendered by `metrics-exporter-prometheus`.
//!
//! Label values are only what the operator configured or the approved
//! catalog routes by: upstream names, `[[view]]` names (a request names a
//! view only when one is configured by that name), exposed tool and prompt
//! names, resource URI schemes, methods, and the fixed outcome names of
//! [`Decision`]. A name a client made up (an unknown tool) is recorded as
//! no target; arguments, principals and session ids never appear.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `sluice_calls_total` | counter | `method`, `view`, `upstream`, `target`, `outcome` |
//! | `sluice_call_duration_seconds` | histogram | `method`, `view`, `upstream` (arrival to answer) |
//! | `sluice_upstream_duration_seconds` | histogram | `method`, `view`, `upstream` (the upstream's share) |
//!
//! `view` is empty for a request on the whole federation (`/mcp`).
//! | `sluice_redactions_total` | counter | `kind` (`exact`, `key`, `pattern`) |
//! | `sluice_discovery_reads_total` | counter | `upstream`, `verdict` (`complete`, `incomplete`) |
//! | `sluice_discovery_duration_seconds` | histogram | `upstream` |
//! | `sluice_catalog_drift_entries` | gauge | `upstream` (entries that differ from `sluice.lock`) |
//! | `sluice_upstream_up` | gauge | `upstream` (1 ready, 0 otherwise) |
//! | `sluice_upstream_restarts_total` | counter | `upstream` |
//! | `sluice_sessions_open` | gauge | (legacy HTTP sessions) |
//! | `sluice_audit_rows_dropped_total` | counter | (rows the audit writer could not take) |
//! | `sluice_config_reloads_total` | counter | `result` (`applied`, `rejected`) |

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};
use sluice_core::audit::Decision;
use sluice_core::boundary::redact::Redactions;

/// Latency buckets, in seconds: 100 µs to 2 min.
const LATENCY_BUCKETS: [f64; 16] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
    30.0, 120.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process's metrics recorder (once; later calls return the
/// same handle). Until it is installed, recording costs nothing.
pub fn install() -> Result<&'static PrometheusHandle, BuildError> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle);
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &LATENCY_BUCKETS)?
        .install_recorder()?;
    describe();
    Ok(HANDLE.get_or_init(|| handle))
}

/// The metrics in Prometheus text format, when the recorder is installed.
pub fn render() -> Option<String> {
    HANDLE.get().map(PrometheusHandle::render)
}

/// Drains histogram buffers; run it now and then so that memory stays
/// flat between scrapes.
pub fn upkeep() {
    if let Some(handle) = HANDLE.get() {
        handle.run_upkeep();
    }
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "sluice_calls_total",
        "Requests that reach an upstream or are refused on the way, by outcome"
    );
    describe_histogram!(
        "sluice_call_duration_seconds",
        Unit::Seconds,
        "Time from a request's arrival to its answer, through sluice"
    );
    describe_histogram!(
        "sluice_upstream_duration_seconds",
        Unit::Seconds,
        "Time the upstream took to answer"
    );
    describe_counter!(
        "sluice_redactions_total",
        "Secrets redacted from answers and notifications, by rule kind"
    );
    describe_counter!(
        "sluice_discovery_reads_total",
        "Catalog reads, by verdict (an incomplete read never changes the served catalog)"
    );
    describe_histogram!(
        "sluice_discovery_duration_seconds",
        Unit::Seconds,
        "Time one whole catalog read took"
    );
    describe_gauge!(
        "sluice_catalog_drift_entries",
        "Entries of an upstream's last complete read that differ from sluice.lock"
    );
    describe_gauge!(
        "sluice_upstream_up",
        "1 when the upstream is connected and its catalog read, else 0"
    );
    describe_counter!(
        "sluice_upstream_restarts_total",
        "Times an upstream's connection ended and was started again"
    );
    describe_gauge!("sluice_sessions_open", "Legacy HTTP sessions open");
    describe_counter!(
        "sluice_task_status_dropped_total",
        "Task status notifications from an upstream that reached no client: no session owns the task, or the read budget refused the result it carried"
    );
    describe_counter!(
        "sluice_audit_rows_dropped_total",
        "Audit rows lost because the writer's queue was full or the store failed"
    );
    describe_counter!(
        "sluice_config_reloads_total",
        "Configuration reloads, applied or rejected"
    );
}

/// One answered request.
pub(crate) fn call(
    method: &str,
    view: Option<&str>,
    upstream: Option<&str>,
    target: Option<&str>,
    outcome: Decision,
    elapsed: Duration,
    upstream_time: Option<Duration>,
) {
    let method = method.to_owned();
    let view = view.unwrap_or_default().to_owned();
    let upstream = upstream.unwrap_or_default().to_owned();
    counter!(
        "sluice_calls_total",
        "method" => method.clone(),
        "view" => view.clone(),
        "upstream" => upstream.clone(),
        "target" => target.unwrap_or_default().to_owned(),
        "outcome" => outcome.as_str(),
    )
    .increment(1);
    histogram!(
        "sluice_call_duration_seconds",
        "method" => method.clone(),
        "view" => view.clone(),
        "upstream" => upstream.clone(),
    )
    .record(elapsed.as_secs_f64());
    if let Some(took) = upstream_time {
        histogram!(
            "sluice_upstream_duration_seconds",
            "method" => method,
            "view" => view,
            "upstream" => upstream,
        )
        .record(took.as_secs_f64());
    }
}

/// Secrets redacted from one answer or notification.
pub(crate) fn redactions(counts: &Redactions) {
    for (kind, n) in [
        ("exact", counts.exact),
        ("key", counts.key),
        ("pattern", counts.pattern),
    ] {
        if n > 0 {
            counter!("sluice_redactions_total", "kind" => kind).increment(n as u64);
        }
    }
}

/// One catalog read of `upstream` ended, complete or not.
pub(crate) fn discovery(upstream: &str, complete: bool, took: Duration) {
    let verdict = if complete { "complete" } else { "incomplete" };
    counter!(
        "sluice_discovery_reads_total",
        "upstream" => upstream.to_owned(),
        "verdict" => verdict,
    )
    .increment(1);
    histogram!("sluice_discovery_duration_seconds", "upstream" => upstream.to_owned())
        .record(took.as_secs_f64());
}

/// How many entries of `upstream`'s last complete read differ from the lock.
pub(crate) fn drift(upstream: &str, entries: usize) {
    gauge!("sluice_catalog_drift_entries", "upstream" => upstream.to_owned()).set(entries as f64);
}

/// `upstream` is ready (`true`) or not.
pub(crate) fn upstream_up(upstream: &str, up: bool) {
    gauge!("sluice_upstream_up", "upstream" => upstream.to_owned()).set(if up { 1.0 } else { 0.0 });
}

/// `upstream`'s connection ended and will be started again.
pub(crate) fn upstream_restarted(upstream: &str) {
    counter!("sluice_upstream_restarts_total", "upstream" => upstream.to_owned()).increment(1);
}

/// The number of open legacy HTTP sessions.
pub(crate) fn sessions_open(n: usize) {
    gauge!("sluice_sessions_open").set(n as f64);
}

/// `upstream` sent a status no client gets (no session owns the task, or
/// its result was refused): dropped.
pub(crate) fn task_status_dropped(upstream: &str) {
    counter!("sluice_task_status_dropped_total", "upstream" => upstream.to_owned()).increment(1);
}

/// An audit row was lost.
pub fn audit_row_dropped() {
    counter!("sluice_audit_rows_dropped_total").increment(1);
}

/// A configuration reload was applied or rejected.
pub fn config_reload(applied: bool) {
    let result = if applied { "applied" } else { "rejected" };
    counter!("sluice_config_reloads_total", "result" => result).increment(1);
}
