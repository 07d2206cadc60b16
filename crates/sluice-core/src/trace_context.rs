//! W3C Trace Context (`traceparent`) as MCP carries it: in a 2026-07-28
//! request's `params._meta` (the one `_meta` key without a reserved
//! prefix), or in the HTTP header of the same name otherwise.
//!
//! sluice continues the client's trace: its spans are children of the
//! client's, and the request it sends upstream carries sluice's own
//! `traceparent` (or the client's unchanged when sluice records no spans).
//! A malformed value is ignored, as the W3C spec asks: sluice then starts
//! a trace of its own.

use serde_json::Value;

/// The `_meta` keys (and HTTP header names) of trace context.
pub const TRACEPARENT: &str = "traceparent";
/// See [`TRACEPARENT`].
pub const TRACESTATE: &str = "tracestate";

/// A parsed `traceparent` (version 00).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace, never all zeros.
    pub trace_id: [u8; 16],
    /// The caller's span, never all zeros.
    pub parent_id: [u8; 8],
    /// Trace flags; bit 0 is "sampled".
    pub flags: u8,
}

impl TraceParent {
    /// Parses `00-<32 hex>-<16 hex>-<2 hex>`. Lowercase hex only, as the
    /// spec requires; a future version's longer value is read by its
    /// first four fields.
    pub fn parse(text: &str) -> Option<TraceParent> {
        let mut parts = text.trim().split('-');
        let version = parts.next()?;
        let (trace, parent, flags) = (parts.next()?, parts.next()?, parts.next()?);
        let version = hex::<1>(version)?[0];
        // Version ff is invalid; version 00 has exactly four fields.
        if version == 0xff || (version == 0 && parts.next().is_some()) {
            return None;
        }
        let trace_id = hex::<16>(trace)?;
        let parent_id = hex::<8>(parent)?;
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceParent {
            trace_id,
            parent_id,
            flags: hex::<1>(flags)?[0],
        })
    }

    /// Whether the caller recorded its span (and wants the trace kept).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The same trace, continued by the span `span_id`.
    pub fn child(&self, span_id: [u8; 8]) -> TraceParent {
        TraceParent {
            parent_id: span_id,
            ..*self
        }
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        to_hex(&self.trace_id)
    }
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            to_hex(&self.trace_id),
            to_hex(&self.parent_id),
            self.flags
        )
    }
}

/// The trace context of a request's params, if its `_meta` has a valid
/// `traceparent`.
pub fn from_params(params: &Value) -> Option<TraceParent> {
    params
        .pointer("/_meta/traceparent")
        .and_then(Value::as_str)
        .and_then(TraceParent::parse)
}

/// Puts HTTP trace headers into `params._meta`, unless `_meta` already
/// has a `traceparent` (the per-request value wins over the transport's).
/// A malformed header is dropped; `tracestate` travels only with a valid
/// `traceparent`.
pub fn adopt_headers(params: &mut Value, traceparent: Option<&str>, tracestate: Option<&str>) {
    let Some(parent) = traceparent.and_then(TraceParent::parse) else {
        return;
    };
    if from_params(params).is_some() {
        return;
    }
    let Some(obj) = params.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    meta.insert(TRACEPARENT.into(), parent.to_string().into());
    match tracestate {
        Some(state) if !state.is_empty() && state.len() <= 512 => {
            meta.insert(TRACESTATE.into(), state.into());
        }
        _ => {
            meta.remove(TRACESTATE);
        }
    }
}

fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let bytes = text.as_bytes();
    if bytes.len() != 2 * N {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const SAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_spec_example_parses_and_prints_back() {
        let tp = TraceParent::parse(SAMPLE).unwrap();
        assert_eq!(tp.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(tp.sampled());
        assert_eq!(tp.to_string(), SAMPLE);
        let child = tp.child([1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            child.to_string(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-01"
        );
    }

    #[test]
    fn malformed_values_are_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
        // A future version may append fields.
        let future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
        assert!(TraceParent::parse(future).is_some());
    }

    #[test]
    fn headers_go_into_meta_unless_meta_has_its_own() {
        let mut params = json!({"name": "t"});
        adopt_headers(&mut params, Some(SAMPLE), Some("vendor=x"));
        assert_eq!(params["_meta"]["traceparent"], SAMPLE);
        assert_eq!(params["_meta"]["tracestate"], "vendor=x");

        let own = "00-11111111111111111111111111111111-2222222222222222-00";
        let mut params = json!({"_meta": {"traceparent": own, "progressToken": 1}});
        adopt_headers(&mut params, Some(SAMPLE), None);
        assert_eq!(params["_meta"]["traceparent"], own);

        let mut params = json!({"name": "t"});
        adopt_headers(&mut params, Some("garbage"), Some("vendor=x"));
        assert_eq!(params, json!({"name": "t"}));
        assert_eq!(from_params(&params), None);
    }

    proptest! {
        #[test]
        fn any_valid_context_round_trips(trace in any::<[u8; 16]>(), parent in any::<[u8; 8]>(), flags in any::<u8>()) {
            prop_assume!(trace != [0; 16] && parent != [0; 8]);
            let tp = TraceParent { trace_id: trace, parent_id: parent, flags };
            prop_assert_eq!(TraceParent::parse(&tp.to_string()), Some(tp));
        }
    }
}
