//! The two protocol eras: their versions and `_meta` keys, and how a result is shaped for each
//! (2026-07-28 results carry `resultType`, cacheable ones caching hints; 2025-x results are left
//! alone).

use serde_json::{Value, json};

use crate::jsonrpc::Payload;

/// The 2026 protocol version.
pub const MODERN_VERSION: &str = "2026-07-28";
/// Legacy versions `initialize` accepts (the first is the one offered otherwise).
pub const LEGACY_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// `_meta` key carrying the protocol version of a modern request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key carrying the client capabilities of a modern request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The era a single request is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28: stateless, `resultType` on every result, caching hints on lists.
    Modern,
    /// 2025-x: `initialize` handshake, server→client requests allowed.
    Legacy,
}

/// Adds `resultType: "complete"` to a modern result (appended, and only if absent so that an
/// `input_required` result stays one). Legacy results are left alone.
pub fn complete(mut result: Value, era: Era) -> Value {
    if era == Era::Modern
        && let Some(obj) = result.as_object_mut()
        && !obj.contains_key("resultType")
    {
        obj.insert("resultType".into(), json!("complete"));
    }
    result
}

/// [`complete`] for a [`Payload`]: raw text (and a bulk result's tail) gets
/// `"resultType":"complete"` spliced in before its closing brace.
pub fn complete_payload(payload: Payload, era: Era) -> Payload {
    match payload {
        Payload::Json(v) => Payload::Json(complete(v, era)),
        Payload::Raw(raw) if era == Era::Modern => Payload::Raw(splice_result_type(&raw)),
        Payload::Bulk(mut bulk) if era == Era::Modern => {
            bulk.tail = splice_result_type(&bulk.tail);
            Payload::Bulk(bulk)
        }
        other => other,
    }
}

/// `raw` (JSON text ending with an object's closing brace) with `"resultType":"complete"` as
/// the object's last member.
fn splice_result_type(raw: &str) -> String {
    let body = raw.trim_end();
    let body = body.strip_suffix('}').unwrap_or(body).trim_end();
    let sep = if body.ends_with('{') { "" } else { "," };
    format!(r#"{body}{sep}"resultType":"complete"}}"#)
}

/// Like [`complete`], plus the caching hints `ttlMs: 0, cacheScope: "public"`.
pub fn cacheable(result: Value, era: Era) -> Value {
    let mut result = complete(result, era);
    if era == Era::Modern
        && let Some(obj) = result.as_object_mut()
    {
        obj.insert("ttlMs".into(), json!(0));
        obj.insert("cacheScope".into(), json!("public"));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bulk::{Bulk, ReplyText};

    #[test]
    fn raw_payload_gets_result_type_spliced() {
        let Payload::Raw(r) = complete_payload(Payload::Raw(r#"{"a":1e400}"#.into()), Era::Modern)
        else {
            panic!("not raw")
        };
        assert_eq!(r, r#"{"a":1e400,"resultType":"complete"}"#);
        let Payload::Raw(r) = complete_payload(Payload::Raw("{}".into()), Era::Modern) else {
            panic!("not raw")
        };
        assert_eq!(r, r#"{"resultType":"complete"}"#);
    }

    #[test]
    fn bulk_payload_gets_result_type_in_its_tail() {
        let bulk = || Payload::Bulk(Bulk::text_result(3));
        let Payload::Bulk(modern) = complete_payload(bulk(), Era::Modern) else {
            panic!("not bulk")
        };
        assert_eq!(
            ReplyText::Bulk(modern).into_string(),
            r#"{"content":[{"type":"text","text":"xxx"}],"resultType":"complete"}"#
        );
        let Payload::Bulk(legacy) = complete_payload(bulk(), Era::Legacy) else {
            panic!("not bulk")
        };
        assert_eq!(legacy, Bulk::text_result(3));
    }

    #[test]
    fn complete_keeps_input_required() {
        let r = complete(json!({"resultType": "input_required"}), Era::Modern);
        assert_eq!(r["resultType"], "input_required");
        let r = complete(json!({"a": 1}), Era::Legacy);
        assert!(r.get("resultType").is_none());
    }
}
