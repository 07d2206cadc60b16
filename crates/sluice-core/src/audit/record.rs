//! The audit log's rows: what one record holds, and where a stored row sits
//! in the newest-first order.

use serde::{Deserialize, Serialize};

use super::decision::{Decision, SizeBucket};

/// What a request targets, as the audit log names it: a routed tool or
/// prompt by its exposed name, a resource only by its URI's scheme (the
/// rest of a URI may carry identifiers or data).
pub fn resource_kind(uri: &str) -> String {
    match uri.split_once(':') {
        Some((scheme, _))
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            format!("{}:", scheme.to_ascii_lowercase())
        }
        _ => "(not a URI)".to_owned(),
    }
}

/// One row of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When the request arrived, in milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// Who asked: the principal's key (issuer and name).
    pub principal: String,
    /// The `[[view]]` the request came through (`/mcp/<name>`, `serve
    /// --stdio --view`); `None`: the whole federation.
    pub view: Option<String>,
    /// The MCP method (`tools/call`, `prompts/get`, `resources/read`, ...).
    pub method: String,
    /// The upstream it was routed to, when it was routed.
    pub upstream: Option<String>,
    /// The exposed tool or prompt name, or the resource's URI scheme;
    /// `None` when the request named nothing sluice serves.
    pub target: Option<String>,
    /// What sluice decided.
    pub decision: Decision,
    /// The JSON-RPC error code the client received, if it got an error.
    pub code: Option<i64>,
    /// From arrival to answer, in microseconds.
    pub duration_us: i64,
    /// The size of the answer the client received, when it got a result.
    pub size: Option<SizeBucket>,
}

/// A stored row: the record and the id the store gave it (increasing in
/// the order rows were written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    /// The store's id.
    pub id: i64,
    /// What was recorded.
    pub record: AuditRecord,
}

/// Where a row sits in the order `sluice audit` reads, newest first: by
/// time, then by id among rows of the same millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowKey {
    /// The row's `time_ms`.
    pub time_ms: i64,
    /// The row's id.
    pub id: i64,
}

impl AuditRow {
    /// Its place in the newest-first order.
    pub fn key(&self) -> RowKey {
        RowKey {
            time_ms: self.record.time_ms,
            id: self.id,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_resource_is_named_by_its_scheme_only() {
        assert_eq!(resource_kind("file:///etc/secret-plans.txt"), "file:");
        assert_eq!(resource_kind("HTTPS://x.example/?token=abc"), "https:");
        assert_eq!(resource_kind("demo+x://a"), "demo+x:");
        assert_eq!(resource_kind("no scheme here"), "(not a URI)");
        assert_eq!(resource_kind(":x"), "(not a URI)");
    }

    #[test]
    fn a_record_serializes_without_anything_but_its_fields() {
        let record = AuditRecord {
            time_ms: 1,
            principal: "local".into(),
            view: Some("narrow".into()),
            method: "tools/call".into(),
            upstream: Some("fs".into()),
            target: Some("fs__read".into()),
            decision: Decision::RefusedSize,
            code: None,
            duration_us: 10,
            size: Some(SizeBucket::Under16K),
        };
        let v = serde_json::to_value(&record).unwrap();
        assert_eq!(v["decision"], "refused_size");
        assert_eq!(v["view"], "narrow");
        assert_eq!(v["size"], "<16KiB");
        assert_eq!(serde_json::from_value::<AuditRecord>(v).unwrap(), record);
    }
}
