//! The read budget: how large a read result may be before it is refused.
//!
//! A *read* result (a read-only tool's result, `resources/read`,
//! `prompts/get`, and any `input_required` result, since nothing has
//! happened yet) is measured as the compact UTF-8 JSON of the whole
//! result, after redaction. Within the budget it passes unchanged; above
//! it, it is refused whole with a fixed refusal that carries nothing of the
//! result: no size, no preview, no digest, no identifier.
//!
//! Results of mutation-capable tools are never measured: the mutation may
//! have happened, and its outcome must reach the client whole.

use serde_json::{Map, Value, json};

use crate::jsonrpc::{self, RpcError};

/// The smallest configurable budget (64 KiB).
pub const MIN_READ_BUDGET: usize = 65_536;
/// The largest configurable budget (8 MiB).
pub const MAX_READ_BUDGET: usize = 8_388_608;
/// The default budget (1 MiB).
pub const DEFAULT_READ_BUDGET: usize = 1_048_576;

/// The fixed code of every refusal.
pub const REFUSAL_CODE: &str = "MCP_READ_RESPONSE_TOO_LARGE";

/// Bytes kept for the JSON around binary data when deriving the raw-byte
/// ceiling of a binary result.
pub const ENVELOPE_RESERVE: usize = 4_096;

const RECOVERY_HINT: &str = "Request less data: narrow the query, a smaller range or page, or fewer fields, then call again.";
const REFUSAL_TEXT: &str = "The result was withheld whole: it is larger than the read budget this gateway allows (mcp_read_response_max_bytes). Nothing of it was returned. Request less data and call again.";

/// Which read was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// `tools/call` of a read-only tool.
    Tool,
    /// `resources/read`.
    Resource,
    /// `prompts/get`.
    Prompt,
}

// === impl Surface ===

impl Surface {
    /// `tool`, `resource` or `prompt`.
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Tool => "tool",
            Surface::Resource => "resource",
            Surface::Prompt => "prompt",
        }
    }
}

/// The length of `value` as compact JSON, counting at most `limit + 1`
/// bytes (enough to know it is over).
pub fn measure(value: &Value, limit: usize) -> usize {
    struct Counter {
        n: usize,
        stop: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.n += buf.len();
            if self.n > self.stop {
                // Stops the serializer: the rest cannot bring it back under.
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { n: 0, stop: limit };
    let _ = serde_json::to_writer(&mut counter, value);
    counter.n.min(limit.saturating_add(1))
}

/// Whether a read result may pass: its binary payloads fit the raw-byte
/// ceiling derived from `limit`, and its compact JSON fits `limit`.
pub fn admits(result: &Value, limit: usize) -> bool {
    admitted_size(result, limit).is_some()
}

/// The compact JSON length of a read result that may pass ([`admits`]);
/// `None` when it may not.
pub fn admitted_size(result: &Value, limit: usize) -> Option<usize> {
    if binary_bytes(result) > binary_ceiling(limit) {
        return None;
    }
    Some(measure(result, limit)).filter(|n| *n <= limit)
}

/// The most raw (decoded) bytes of binary content a result may carry
/// under `limit`: the budget less the envelope reserve, less base64's 4/3.
pub fn binary_ceiling(limit: usize) -> usize {
    limit.saturating_sub(ENVELOPE_RESERVE) / 4 * 3
}

/// The decoded size of the binary payloads in a result (`data` of image
/// and audio blocks, `blob` of resource contents), from their base64
/// lengths, without decoding them.
pub fn binary_bytes(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.iter().map(binary_bytes).sum(),
        Value::Object(obj) => {
            let binary = matches!(
                obj.get("type").and_then(Value::as_str),
                Some("image" | "audio")
            );
            obj.iter()
                .map(|(k, v)| match v {
                    Value::String(s) if k == "blob" || (binary && k == "data") => s.len() / 4 * 3,
                    other => binary_bytes(other),
                })
                .sum()
        }
        _ => 0,
    }
}

/// A tool's refusal: a valid `CallToolResult` with `isError: true`, one
/// fixed text block, and fixed `structuredContent`. The only variable is
/// the configured limit.
pub fn tool_refusal(limit: usize) -> Value {
    json!({
        "content": [{"type": "text", "text": REFUSAL_TEXT}],
        "structuredContent": refusal_data(limit, None),
        "isError": true,
    })
}

/// A resource or prompt refusal: `-32602` with the same fixed data and the
/// surface; never the URI, the name or the arguments.
pub fn read_refusal(limit: usize, surface: Surface) -> RpcError {
    RpcError::new(
        jsonrpc::INVALID_PARAMS,
        "The result was withheld whole: it is larger than the read budget (mcp_read_response_max_bytes)",
    )
    .with_data(refusal_data(limit, Some(surface)))
}

fn refusal_data(limit: usize, surface: Option<Surface>) -> Value {
    let mut data = Map::new();
    data.insert(
        "error".into(),
        json!({
            "code": REFUSAL_CODE,
            "category": "client",
            "retriable": false,
            "recoveryHint": RECOVERY_HINT,
        }),
    );
    data.insert(
        "responseBudget".into(),
        json!({"limitBytes": limit, "measurement": "above-limit", "scope": "mcp-read-result"}),
    );
    data.insert("status".into(), "response-too-large".into());
    if let Some(surface) = surface {
        data.insert("surface".into(), surface.as_str().into());
    }
    Value::Object(data)
}

/// Whether a tool counts as read-only: only when its approved definition
/// says `readOnlyHint: true` and its upstream is trusted, or the config
/// names it read-only. Every other tool is mutation-capable (the safe
/// direction: a mutation's outcome is never withheld).
pub fn is_read_only(definition: Option<&Value>, upstream_trusted: bool, listed: bool) -> bool {
    let hinted = definition
        .and_then(|d| d.pointer("/annotations/readOnlyHint"))
        .and_then(Value::as_bool)
        == Some(true);
    listed || (upstream_trusted && hinted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boundary_is_exact_to_the_byte() {
        let limit = MIN_READ_BUDGET;
        // {"content":[{"type":"text","text":"..."}]} has 38 bytes around the text.
        let at = |n: usize| json!({"content": [{"type": "text", "text": "x".repeat(n)}]});
        let overhead = serde_json::to_string(&at(0)).map(|s| s.len()).unwrap_or(0);
        assert_eq!(measure(&at(limit - overhead), limit), limit);
        assert!(admits(&at(limit - overhead), limit));
        assert!(!admits(&at(limit - overhead + 1), limit));
        assert_eq!(measure(&at(limit * 4), limit), limit + 1);
    }

    #[test]
    fn multibyte_text_is_measured_in_utf8_bytes() {
        let v = json!("é");
        assert_eq!(measure(&v, 100), 4); // quotes + 2 bytes
    }

    #[test]
    fn refusals_carry_nothing_of_the_result() {
        let r = tool_refusal(DEFAULT_READ_BUDGET);
        assert_eq!(r["isError"], true);
        assert_eq!(r["structuredContent"]["error"]["code"], REFUSAL_CODE);
        assert_eq!(
            r["structuredContent"]["responseBudget"]["limitBytes"],
            1_048_576
        );
        assert_eq!(
            r["structuredContent"]["responseBudget"]["measurement"],
            "above-limit"
        );
        // Two refusals with the same limit are identical, whatever was refused.
        assert_eq!(r, tool_refusal(DEFAULT_READ_BUDGET));
        let e = read_refusal(MIN_READ_BUDGET, Surface::Resource);
        assert_eq!(e.code, -32602);
        let data = e.data.unwrap_or_default();
        assert_eq!(data["surface"], "resource");
        assert_eq!(data["error"]["code"], REFUSAL_CODE);
        assert_eq!(
            data.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>()),
            Some(vec![
                "error".into(),
                "responseBudget".into(),
                "status".into(),
                "surface".into()
            ])
        );
    }

    #[test]
    fn binary_content_has_a_raw_ceiling() {
        let limit = MIN_READ_BUDGET;
        let ceiling = binary_ceiling(limit);
        assert_eq!(ceiling, (65_536 - 4_096) / 4 * 3);
        let image = |raw: usize| json!({"content": [{"type": "image", "mimeType": "image/png", "data": "A".repeat(raw / 3 * 4)}]});
        assert_eq!(binary_bytes(&image(ceiling)), ceiling);
        assert!(admits(&image(ceiling), limit));
        assert!(!admits(&image(ceiling + 3), limit));
    }

    #[test]
    fn read_only_needs_trust_or_config() {
        let hinted = json!({"name": "t", "annotations": {"readOnlyHint": true}});
        let plain = json!({"name": "t"});
        assert!(is_read_only(Some(&hinted), true, false));
        assert!(!is_read_only(Some(&hinted), false, false));
        assert!(!is_read_only(Some(&plain), true, false));
        assert!(is_read_only(Some(&plain), false, true));
        assert!(!is_read_only(None, true, false));
    }
}
