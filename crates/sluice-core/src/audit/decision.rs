//! What sluice decided about a request, and the size bucket of its answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::payload::Payload;

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
    /// The call paused for the client's input (an MRTR round: the answer
    /// is `input_required`); the retry that answers it is a record of its
    /// own.
    InputRequired,
    /// The client cancelled the request or went away before its answer;
    /// what the upstream did with it is unknown.
    Cancelled,
}

impl Decision {
    /// Every decision, in declaration order.
    pub const ALL: [Decision; 12] = [
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
        Decision::InputRequired,
        Decision::Cancelled,
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
            Decision::InputRequired => "input_required",
            Decision::Cancelled => "cancelled",
        }
    }

    /// The decision named `name` (as [`Decision::as_str`] spells it).
    pub fn parse(name: &str) -> Option<Decision> {
        Decision::ALL.into_iter().find(|d| d.as_str() == name)
    }

    /// The decision for a result the upstream sent and sluice passed: a
    /// tool result with `isError: true` is a tool error, an
    /// `input_required` result a paused call.
    pub fn of_result(result: &Payload) -> Decision {
        let (result_type, is_error) = match result {
            Payload::Tree(result) => (
                result.get("resultType").cloned(),
                result.get("isError").cloned(),
            ),
            Payload::Text(_) => {
                let head = result.head();
                (head.result_type, head.is_error)
            }
        };
        if result_type.as_ref().and_then(Value::as_str) == Some("input_required") {
            Decision::InputRequired
        } else if is_error.as_ref().and_then(Value::as_bool) == Some(true) {
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
        for (result, decision) in [
            (json!({"content": [], "isError": true}), Decision::ToolError),
            (
                json!({"resultType": "input_required"}),
                Decision::InputRequired,
            ),
            (json!({"content": []}), Decision::Ok),
        ] {
            let text = serde_json::value::to_raw_value(&result).expect("json");
            assert_eq!(Decision::of_result(&Payload::Text(text)), decision);
        }
        assert_eq!(
            Decision::of_result(&Payload::Tree(json!({"content": []}))),
            Decision::Ok
        );
        assert_eq!(
            Decision::of_result(&Payload::Tree(json!({"content": [], "isError": true}))),
            Decision::ToolError
        );
        assert_eq!(
            Decision::of_result(&Payload::Tree(json!({"isError": "yes"}))),
            Decision::Ok
        );
        assert_eq!(
            Decision::of_result(&Payload::Tree(
                json!({"resultType": "input_required", "inputRequests": {}})
            )),
            Decision::InputRequired
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
}
