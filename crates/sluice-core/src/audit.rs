//! What sluice records about each decision it takes on a client's request:
//! the audit log's rows and the outcome labels of its metrics.
//!
//! A record names who asked, which upstream and which tool (or only the
//! scheme of a resource URI), what sluice decided and why, how long it took
//! and how large the answer was, as a bucket. It never holds arguments,
//! results, error messages or secret values: nothing a client or an upstream
//! wrote, except the names the catalog routes by.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What became of one request, as the audit log and the metrics name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Passed, and the upstream answered with a result.
    Ok,
    /// Passed; the upstream's result says the tool failed (`isError`).
    ToolError,
    /// A read whose answer was larger than the read budget, withheld whole.
    RefusedSize,
    /// A call to an entry withheld because it drifted from `sluice.lock`.
    BlockedDrift,
    /// Over its principal's rate limit (S-24).
    RateLimited,
    /// The principal lacks a scope the call needs (S-20).
    RefusedScope,
    /// An elicitation asking for sensitive data ended the call (S-27).
    RefusedElicitation,
    /// Refused before routing: unknown entry, malformed params.
    Invalid,
    /// The upstream answered with an error, was unavailable, lost the
    /// connection, or sent something that is not JSON-RPC.
    UpstreamError,
    /// The upstream did not answer within `server.request_timeout`.
    Timeout,
}

impl Decision {
    /// Every decision, in declaration order.
    pub const ALL: [Decision; 10] = [
        Decision::Ok,
        Decision::ToolError,
        Decision::RefusedSize,
        Decision::BlockedDrift,
        Decision::RateLimited,
        Decision::RefusedScope,
        Decision::RefusedElicitation,
        Decision::Invalid,
        Decision::UpstreamError,
        Decision::Timeout,
    ];

    /// The snake_case name used in the audit log, metric labels and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Ok => "ok",
            Decision::ToolError => "tool_error",
            Decision::RefusedSize => "refused_size",
            Decision::BlockedDrift => "blocked_drift",
            Decision::RateLimited => "rate_limited",
            Decision::RefusedScope => "refused_scope",
            Decision::RefusedElicitation => "refused_elicitation",
            Decision::Invalid => "invalid",
            Decision::UpstreamError => "upstream_error",
            Decision::Timeout => "timeout",
        }
    }

    /// The decision named `name` (as [`Decision::as_str`] spells it).
    pub fn parse(name: &str) -> Option<Decision> {
        Decision::ALL.into_iter().find(|d| d.as_str() == name)
    }

    /// The decision for a result the upstream sent and sluice passed: a
    /// tool result with `isError: true` is a tool error.
    pub fn of_result(result: &Value) -> Decision {
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            Decision::ToolError
        } else {
            Decision::Ok
        }
    }
}

/// The size of an answer as compact JSON, in buckets a factor of 16 apart:
/// enough to tell a flood from a trickle without recording exact sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SizeBucket {
    /// Under 1 KiB.
    Under1K,
    /// 1 KiB to under 16 KiB.
    Under16K,
    /// 16 KiB to under 256 KiB.
    Under256K,
    /// 256 KiB to under 4 MiB.
    Under4M,
    /// 4 MiB or more.
    Over4M,
}

impl SizeBucket {
    /// The bucket of `bytes`.
    pub fn of(bytes: usize) -> SizeBucket {
        match bytes {
            0..1_024 => SizeBucket::Under1K,
            1_024..16_384 => SizeBucket::Under16K,
            16_384..262_144 => SizeBucket::Under256K,
            262_144..4_194_304 => SizeBucket::Under4M,
            _ => SizeBucket::Over4M,
        }
    }

    /// Its name in the audit log: the bucket's upper bound.
    pub fn as_str(self) -> &'static str {
        match self {
            SizeBucket::Under1K => "<1KiB",
            SizeBucket::Under16K => "<16KiB",
            SizeBucket::Under256K => "<256KiB",
            SizeBucket::Under4M => "<4MiB",
            SizeBucket::Over4M => ">=4MiB",
        }
    }

    /// The bucket named `name`.
    pub fn parse(name: &str) -> Option<SizeBucket> {
        [
            SizeBucket::Under1K,
            SizeBucket::Under16K,
            SizeBucket::Under256K,
            SizeBucket::Under4M,
            SizeBucket::Over4M,
        ]
        .into_iter()
        .find(|b| b.as_str() == name)
    }
}

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

impl Serialize for SizeBucket {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SizeBucket {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        SizeBucket::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown size bucket {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn every_decision_round_trips_through_its_name() {
        for d in Decision::ALL {
            assert_eq!(Decision::parse(d.as_str()), Some(d));
            assert_eq!(
                serde_json::to_value(d).unwrap(),
                Value::String(d.as_str().into())
            );
        }
        assert_eq!(Decision::parse("OK"), None);
    }

    #[test]
    fn a_tool_error_is_told_from_a_result() {
        assert_eq!(Decision::of_result(&json!({"content": []})), Decision::Ok);
        assert_eq!(
            Decision::of_result(&json!({"content": [], "isError": true})),
            Decision::ToolError
        );
        assert_eq!(
            Decision::of_result(&json!({"isError": "yes"})),
            Decision::Ok
        );
    }

    #[test]
    fn sizes_fall_in_buckets_a_factor_of_16_apart() {
        let cases = [
            (0, SizeBucket::Under1K),
            (1_023, SizeBucket::Under1K),
            (1_024, SizeBucket::Under16K),
            (16_383, SizeBucket::Under16K),
            (16_384, SizeBucket::Under256K),
            (262_144, SizeBucket::Under4M),
            (4_194_303, SizeBucket::Under4M),
            (4_194_304, SizeBucket::Over4M),
            (usize::MAX, SizeBucket::Over4M),
        ];
        for (bytes, bucket) in cases {
            assert_eq!(SizeBucket::of(bytes), bucket, "{bytes} bytes");
            assert_eq!(SizeBucket::parse(bucket.as_str()), Some(bucket));
        }
    }

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
        assert_eq!(v["size"], "<16KiB");
        assert_eq!(serde_json::from_value::<AuditRecord>(v).unwrap(), record);
    }
}
