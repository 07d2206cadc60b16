//! The audit log: one row per decision (`sluice_core::audit::AuditRecord`).

use sluice_core::audit::AuditRecord;

/// Where audit rows go. Recording never waits: a request is never slowed
/// or failed by its audit row (rows that cannot be queued are counted as
/// dropped in the metrics).
pub trait AuditSink: Send + Sync {
    /// Queues one row.
    fn record(&self, record: AuditRecord);
}
