//! Protocol eras, version negotiation, and era shaping of results.
//!
//! MCP has two eras (MCP 2026-07-28, `basic/versioning`): **modern**
//! (2026-07-28: no handshake, the version and client capabilities travel in
//! every request's `_meta`, stateless HTTP) and **legacy** (2025-11-25 and
//! earlier: an `initialize` handshake scoped to a session or a process).
//! sluice speaks both on both sides and translates between them, so a result
//! is shaped for the era of the client that reads it, whatever the era of
//! the upstream that made it.

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::jsonrpc::{self, RpcError};
use crate::payload::{ResultHead, each_field};

/// The one modern protocol version.
pub const MODERN_VERSION: &str = "2026-07-28";
/// The legacy versions sluice negotiates with its clients, newest first.
/// 2025-06-18 is the floor (S-14): a 2025-03-26 client is answered with
/// 2025-11-25, as for any version sluice does not speak, and may then
/// disconnect. 2025-03-26 has no `outputSchema`, `structuredContent`,
/// elicitation or `MCP-Protocol-Version` header, and sluice would have to
/// strip them from every answer to serve it honestly. (An *upstream* that
/// answers 2025-03-26 is still used.)
pub const LEGACY_VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

/// `_meta` key: the protocol version of a modern request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities on a modern request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's self-description.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the server's self-description on modern results.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key: the log level a modern request asks for.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key: the id of a `subscriptions/listen` stream.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The per-request protocol fields of `_meta` (MCP 2026-07-28, Basic, `_meta`):
/// what a legacy peer got in its handshake instead. Other reserved keys
/// (a task's `io.modelcontextprotocol/related-task`, 2025-11-25) are data
/// of both eras and stay.
const PER_REQUEST_META: [&str; 6] = [
    META_PROTOCOL_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_SERVER_INFO,
    META_LOG_LEVEL,
    META_SUBSCRIPTION_ID,
];

/// The results that carry `ttlMs` and `cacheScope` in the modern era
/// (MCP 2026-07-28, `server/utilities/caching`).
const CACHEABLE_METHODS: [&str; 6] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Which era a peer speaks; serialized as `modern` or `legacy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// 2026-07-28.
    Modern,
    /// 2025-11-25 or 2025-06-18 (an upstream may also speak 2025-03-26).
    Legacy,
}

/// The versions sluice supports, in the order `server/discover` lists them.
pub fn supported_versions() -> Vec<&'static str> {
    std::iter::once(MODERN_VERSION)
        .chain(LEGACY_VERSIONS)
        .collect()
}

/// Whether `version` is a legacy version sluice speaks.
pub fn is_legacy_version(version: &str) -> bool {
    LEGACY_VERSIONS.contains(&version)
}

/// The version the transport specification has a server assume when a
/// 2025-x request carries no `MCP-Protocol-Version` (MCP 2025-06-18,
/// Transports § Protocol Version Header).
pub const ASSUMED_LEGACY_VERSION: &str = "2025-03-26";

/// Whether a 2025-x request's `MCP-Protocol-Version` header may name
/// `version`: a version sluice negotiates, or 2025-03-26, which clients
/// send in sessions that negotiated a later one (the conformance suite
/// among them). The header is only checked; the session's negotiated
/// version shapes every answer.
pub fn is_legacy_header_version(version: &str) -> bool {
    is_legacy_version(version) || version == ASSUMED_LEGACY_VERSION
}

/// The answer to a legacy `initialize`: the client's version when sluice
/// speaks it, else sluice's newest legacy version (the client then decides).
pub fn negotiate_legacy(requested: Option<&str>) -> &'static str {
    LEGACY_VERSIONS
        .iter()
        .find(|v| Some(**v) == requested)
        .copied()
        .unwrap_or(LEGACY_VERSIONS[0])
}

/// What a modern request declares about itself in `_meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModernRequestMeta {
    /// The client's capabilities on this request.
    pub client_capabilities: Value,
}

/// Reads the era of one request from its params.
///
/// A request whose `_meta` names a protocol version is modern; anything else
/// is legacy traffic: a dual-era server picks the era by how the client
/// opens (MCP 2026-07-28, `basic/versioning` § Backward Compatibility).
pub fn request_era(params: &Value) -> Era {
    match jsonrpc::meta(params).and_then(|m| m.get(META_PROTOCOL_VERSION)) {
        Some(_) => Era::Modern,
        None => Era::Legacy,
    }
}

/// Whether a request may receive `notifications/message`: a legacy client
/// set its level once with `logging/setLevel`; a modern request must ask in
/// its own `_meta`, else the server MUST NOT send any (MCP 2026-07-28,
/// `basic/index` § `_meta`).
pub fn wants_log_messages(era: Era, params: &Value) -> bool {
    match era {
        Era::Legacy => true,
        Era::Modern => jsonrpc::meta(params).is_some_and(|m| m.contains_key(META_LOG_LEVEL)),
    }
}

/// Validates the per-request `_meta` of a modern request.
///
/// An unsupported version is `-32022` with the supported list; a missing
/// required field is `-32602` (MCP 2026-07-28, `basic/index` § `_meta`).
pub fn check_modern_meta(params: &Value) -> Result<ModernRequestMeta, RpcError> {
    let meta = jsonrpc::meta(params)
        .ok_or_else(|| RpcError::invalid_params("missing _meta on a 2026-07-28 request"))?;
    let version = meta.get(META_PROTOCOL_VERSION);
    match version.and_then(Value::as_str) {
        Some(MODERN_VERSION) => {}
        Some(other) => return Err(unsupported_version(other)),
        None => {
            return Err(RpcError::invalid_params(format!(
                "_meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
            )));
        }
    }
    match meta.get(META_CLIENT_CAPABILITIES) {
        Some(caps @ Value::Object(_)) => Ok(ModernRequestMeta {
            client_capabilities: caps.clone(),
        }),
        _ => Err(RpcError::invalid_params(format!(
            "_meta[\"{META_CLIENT_CAPABILITIES}\"] is required and must be an object"
        ))),
    }
}

/// `-32022` naming what sluice supports and what was asked.
pub fn unsupported_version(requested: &str) -> RpcError {
    RpcError::new(
        jsonrpc::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
    )
    .with_data(json!({"supported": supported_versions(), "requested": jsonrpc::excerpt(requested)}))
}

/// Caching hints sluice puts on a cacheable result that has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    /// `ttlMs`.
    pub ttl_ms: u64,
    /// `cacheScope`: `true` for `"public"`.
    pub public: bool,
}

/// Shapes a result for the era of the client that will read it.
///
/// - Modern: `resultType` defaults to `"complete"` (a legacy upstream never
///   sends it); the cacheable results get `ttlMs`/`cacheScope` when absent;
///   `_meta` names sluice as the server, since the client talks to sluice.
/// - Legacy: the modern-only fields are removed (they are protocol fields of
///   another version, not data), and so is the upstream's serverInfo.
///
/// Every other field is left as it came.
pub fn shape_result(
    era: Era,
    method: &str,
    result: &mut Value,
    hints: CacheHints,
    server_info: &Value,
) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    match era {
        Era::Modern => {
            obj.entry("resultType").or_insert_with(|| "complete".into());
            let complete = obj.get("resultType").and_then(Value::as_str) == Some("complete");
            if complete && CACHEABLE_METHODS.contains(&method) {
                fill_cache_hints(obj, hints);
            }
            let meta = obj
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(META_SERVER_INFO.into(), server_info.clone());
            }
        }
        Era::Legacy => {
            for key in ["resultType", "ttlMs", "cacheScope"] {
                obj.remove(key);
            }
            strip_reserved_meta(obj);
        }
    }
}

/// The top-level fields [`shape_result`] reads or writes.
const SHAPED_FIELDS: [&str; 4] = ["resultType", "ttlMs", "cacheScope", "_meta"];

/// [`shape_result`] of a result carried as text
/// ([`crate::payload::Payload::Text`]): the
/// shaped fields are read from the text, shaped as a tree of only them, and
/// written where they were (new ones last, as a tree would append them);
/// every other field is copied as it came.
pub fn shape_result_text(
    era: Era,
    method: &str,
    text: Box<RawValue>,
    hints: CacheHints,
    server_info: &Value,
) -> Result<Box<RawValue>, serde_json::Error> {
    if !text.get().starts_with('{') {
        return Ok(text);
    }
    let Some(head) = ResultHead::read(&text) else {
        // A repeated shaped field: shaped as a tree, which keeps the last.
        let mut tree: Value = serde_json::from_str(text.get())?;
        shape_result(era, method, &mut tree, hints, server_info);
        return serde_json::value::to_raw_value(&tree);
    };
    let mut shaped = Map::new();
    for (key, value) in
        SHAPED_FIELDS
            .into_iter()
            .zip([head.result_type, head.ttl_ms, head.cache_scope, head.meta])
    {
        if let Some(value) = value {
            shaped.insert(key.to_owned(), value);
        }
    }
    let head = Value::Object(shaped);
    let mut shaped_value = head.clone();
    shape_result(era, method, &mut shaped_value, hints, server_info);
    if shaped_value == head {
        // Nothing to change (a legacy client, an upstream that sent no
        // modern fields): the text goes on as it is.
        return Ok(text);
    }
    let Value::Object(mut shaped) = shaped_value else {
        return Ok(text);
    };
    let mut out = String::with_capacity(text.get().len() + 256);
    out.push('{');
    let field = |out: &mut String, key: &str, value: &str| {
        if out.len() > 1 {
            out.push(',');
        }
        // A key is a string: writing one cannot fail.
        out.push_str(&serde_json::to_string(key).unwrap_or_default());
        out.push(':');
        out.push_str(value);
    };
    each_field(&text, |key, value| {
        if SHAPED_FIELDS.contains(&key.as_ref()) {
            if let Some(value) = shaped.shift_remove(key.as_ref()) {
                field(&mut out, &key, &serde_json::to_string(&value)?);
            }
        } else {
            field(&mut out, &key, value.get());
        }
        Ok(())
    })?;
    for (key, value) in &shaped {
        field(&mut out, key, &serde_json::to_string(value)?);
    }
    out.push('}');
    RawValue::from_string(out)
}

fn fill_cache_hints(obj: &mut Map<String, Value>, hints: CacheHints) {
    let ttl_ok = obj
        .get("ttlMs")
        .and_then(Value::as_f64)
        .is_some_and(|t| t >= 0.0);
    if !ttl_ok {
        obj.insert("ttlMs".into(), hints.ttl_ms.into());
    }
    let scope_ok = matches!(
        obj.get("cacheScope").and_then(Value::as_str),
        Some("public" | "private")
    );
    if !scope_ok {
        let scope = if hints.public { "public" } else { "private" };
        obj.insert("cacheScope".into(), scope.into());
    }
}

/// Removes the reserved per-request keys from a `_meta` object (and the
/// object itself when that leaves it empty).
fn strip_reserved_meta(obj: &mut Map<String, Value>) {
    let Some(Value::Object(meta)) = obj.get_mut("_meta") else {
        return;
    };
    meta.retain(|k, _| !PER_REQUEST_META.contains(&k.as_str()));
    if meta.is_empty() {
        obj.remove("_meta");
    }
}

/// Shapes the params of a request for the era of the upstream it goes to.
///
/// - Modern upstream: `_meta` gets the version, the client capabilities to
///   declare, and sluice's client info.
/// - Legacy upstream: the reserved per-request keys are removed (the
///   handshake carried them), other `_meta` keys such as `progressToken` and
///   `traceparent` stay.
pub fn shape_upstream_params(
    era: Era,
    params: &mut Value,
    client_capabilities: &Value,
    client_info: &Value,
) {
    match era {
        Era::Modern => {
            if let Some(meta) = jsonrpc::meta_mut(params) {
                meta.insert(META_PROTOCOL_VERSION.into(), MODERN_VERSION.into());
                meta.insert(META_CLIENT_CAPABILITIES.into(), client_capabilities.clone());
                meta.insert(META_CLIENT_INFO.into(), client_info.clone());
            }
        }
        Era::Legacy => {
            if let Some(obj) = params.as_object_mut() {
                strip_reserved_meta(obj);
            }
        }
    }
}

/// Translates an upstream error for the client's era: modern clients get
/// `-32602` where legacy servers said `-32002` "resource not found"
/// (2026-07-28 must not send `-32002`: an unknown resource is `-32602`).
pub fn shape_error(era: Era, mut error: RpcError) -> RpcError {
    if era == Era::Modern && error.code == jsonrpc::LEGACY_RESOURCE_NOT_FOUND {
        error.code = jsonrpc::INVALID_PARAMS;
    }
    error
}

/// What the outcome of the upstream's era probe means (MCP 2026-07-28,
/// `basic/versioning` § Backward Compatibility).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeVerdict {
    /// The upstream speaks 2026-07-28.
    Modern,
    /// A modern server that does not offer 2026-07-28 (it named what it
    /// supports); sluice cannot speak to it.
    ModernUnsupported,
    /// Fall back to `initialize`.
    Legacy,
}

/// Judges the answer to a `server/discover` probe. The fallback is never
/// keyed on one error code: any error that is not a recognized modern error
/// means legacy.
pub fn judge_probe(outcome: &Result<Value, RpcError>) -> ProbeVerdict {
    match outcome {
        Ok(result) => {
            let offers_modern = result
                .get("supportedVersions")
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(MODERN_VERSION)));
            if offers_modern {
                ProbeVerdict::Modern
            } else {
                ProbeVerdict::Legacy
            }
        }
        Err(e) if e.code == jsonrpc::UNSUPPORTED_PROTOCOL_VERSION => {
            let offers_legacy = e
                .data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().filter_map(Value::as_str).any(is_legacy_version));
            if offers_legacy {
                ProbeVerdict::Legacy
            } else {
                ProbeVerdict::ModernUnsupported
            }
        }
        Err(e)
            if e.code == jsonrpc::HEADER_MISMATCH
                || e.code == jsonrpc::MISSING_CLIENT_CAPABILITY =>
        {
            ProbeVerdict::Modern
        }
        Err(_) => ProbeVerdict::Legacy,
    }
}

/// The most bytes (compact JSON) of a client's declared capabilities a
/// session keeps whole. Also what a sealed session id carries.
pub const MAX_CLIENT_CAPABILITIES_BYTES: usize = 4096;

/// The capabilities a client may declare that sluice acts on or passes on.
const KNOWN_CLIENT_CAPABILITIES: [&str; 5] =
    ["roots", "sampling", "elicitation", "tasks", "extensions"];

/// What a session keeps of the capabilities a client declared: all of
/// them when they are small (every client seen), else only the known ones,
/// each with its details only if they are small too. A session lives long,
/// so what it holds must not scale with what a client chose to send:
/// 4 MiB of `experimental` in each of many `initialize`s is held as `{}`.
pub fn retained_capabilities(declared: Value) -> Value {
    let limit = MAX_CLIENT_CAPABILITIES_BYTES;
    if crate::boundary::budget::measure(&declared, limit) <= limit {
        return declared;
    }
    let Value::Object(declared) = declared else {
        return json!({});
    };
    let each = limit / (2 * KNOWN_CLIENT_CAPABILITIES.len());
    let kept: Map<String, Value> = declared
        .into_iter()
        .filter(|(key, _)| KNOWN_CLIENT_CAPABILITIES.contains(&key.as_str()))
        .map(|(key, value)| {
            let small = value.is_object() && crate::boundary::budget::measure(&value, each) <= each;
            (key, if small { value } else { json!({}) })
        })
        .collect();
    Value::Object(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> Value {
        json!({"name": "sluice", "version": "0"})
    }
    const HINTS: CacheHints = CacheHints {
        ttl_ms: 0,
        public: false,
    };

    #[test]
    fn era_follows_meta() {
        assert_eq!(request_era(&Value::Null), Era::Legacy);
        assert_eq!(
            request_era(&json!({"_meta": {"progressToken": 1}})),
            Era::Legacy
        );
        assert_eq!(
            request_era(&json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}})),
            Era::Modern
        );
    }

    #[test]
    fn log_messages_only_when_asked_in_the_modern_era() {
        assert!(wants_log_messages(Era::Legacy, &Value::Null));
        assert!(!wants_log_messages(Era::Modern, &json!({"_meta": {}})));
        assert!(wants_log_messages(
            Era::Modern,
            &json!({"_meta": {META_LOG_LEVEL: "info"}})
        ));
    }

    #[test]
    fn modern_meta_checks() {
        let ok =
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}});
        assert!(check_modern_meta(&ok).is_ok());
        let old =
            json!({"_meta": {META_PROTOCOL_VERSION: "1900-01-01", META_CLIENT_CAPABILITIES: {}}});
        let e = check_modern_meta(&old).expect_err("old version");
        assert_eq!(e.code, -32022);
        assert_eq!(
            e.data,
            Some(
                json!({"supported": ["2026-07-28","2025-11-25","2025-06-18"], "requested": "1900-01-01"})
            )
        );
        let no_caps = json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        assert_eq!(check_modern_meta(&no_caps).expect_err("caps").code, -32602);
    }

    #[test]
    fn legacy_negotiation_echoes_or_offers_newest() {
        assert_eq!(negotiate_legacy(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate_legacy(Some("2024-11-05")), "2025-11-25");
        assert_eq!(
            negotiate_legacy(Some("2025-03-26")),
            "2025-11-25",
            "below the floor"
        );
        assert!(!is_legacy_version("2025-03-26"));
        assert!(
            is_legacy_header_version("2025-03-26"),
            "still taken in the header"
        );
        assert!(!is_legacy_header_version("2024-11-05"));
        assert_eq!(negotiate_legacy(None), "2025-11-25");
    }

    #[test]
    fn modern_shaping_adds_protocol_fields_and_keeps_the_rest() {
        let mut r = json!({"tools": [], "x-extra": 1, "_meta": {"k": "v"}});
        shape_result(Era::Modern, "tools/list", &mut r, HINTS, &info());
        assert_eq!(
            serde_json::to_string(&r).expect("ser"),
            r#"{"tools":[],"x-extra":1,"_meta":{"k":"v","io.modelcontextprotocol/serverInfo":{"name":"sluice","version":"0"}},"resultType":"complete","ttlMs":0,"cacheScope":"private"}"#
        );
        // A call result is not cacheable; an upstream's own hints are kept.
        let mut r = json!({"content": []});
        shape_result(Era::Modern, "tools/call", &mut r, HINTS, &info());
        assert!(r.get("ttlMs").is_none());
        let mut r = json!({"contents": [], "ttlMs": 5000, "cacheScope": "public"});
        shape_result(Era::Modern, "resources/read", &mut r, HINTS, &info());
        assert_eq!(r["ttlMs"], json!(5000));
        assert_eq!(r["cacheScope"], json!("public"));
        // An input_required result carries no hints.
        let mut r = json!({"resultType": "input_required", "requestState": "s"});
        shape_result(Era::Modern, "resources/read", &mut r, HINTS, &info());
        assert!(r.get("ttlMs").is_none());
    }

    #[test]
    fn legacy_shaping_removes_modern_fields_only() {
        let mut r = json!({"content": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {}, "x.example/k": 1}});
        shape_result(Era::Legacy, "tools/call", &mut r, HINTS, &info());
        assert_eq!(r, json!({"content": [], "_meta": {"x.example/k": 1}}));
        // A task's result names its task (2025-11-25): data, kept.
        let related = json!({"io.modelcontextprotocol/related-task": {"taskId": "t1"}});
        let mut r = json!({"content": [], "_meta": related});
        shape_result(Era::Legacy, "tasks/result", &mut r, HINTS, &info());
        assert_eq!(r["_meta"], related);
    }

    #[test]
    fn shaping_over_text_is_shaping_over_the_tree() {
        let results = [
            r#"{"tools":[],"x-extra":1.50,"_meta":{"k":"v"}}"#,
            r#"{"content":[{"type":"text","text":"\u00e9"}],"isError":false}"#,
            r#"{"contents":[],"ttlMs":5000,"cacheScope":"public","resultType":"complete"}"#,
            r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{},"x.example/k":1},"content":[],"ttlMs":0}"#,
            r#"{"resultType":"input_required","requestState":"s"}"#,
            r#"{"resultType":"complete","resultType":"input_required"}"#,
            r#"[1,2]"#,
        ];
        for json in results {
            for era in [Era::Modern, Era::Legacy] {
                for method in ["tools/call", "resources/read", "tools/list"] {
                    let text = RawValue::from_string(json.to_owned()).expect("json");
                    let shaped =
                        shape_result_text(era, method, text, HINTS, &info()).expect("shapes");
                    let mut tree: Value = serde_json::from_str(json).expect("json");
                    shape_result(era, method, &mut tree, HINTS, &info());
                    let from_text: Value = serde_json::from_str(shaped.get()).expect("json");
                    assert_eq!(from_text, tree, "{json} {era:?} {method}");
                }
            }
        }
        // Fields keep their places; the ones shaping adds come last.
        let text = RawValue::from_string(r#"{"a":1,"_meta":{},"b":2.50}"#.into()).expect("json");
        let shaped =
            shape_result_text(Era::Modern, "tools/call", text, HINTS, &info()).expect("shapes");
        assert_eq!(
            shaped.get(),
            r#"{"a":1,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"sluice","version":"0"}},"b":2.50,"resultType":"complete"}"#
        );
    }

    #[test]
    fn upstream_params_get_the_upstream_era() {
        let mut p = json!({"name": "t", "_meta": {"progressToken": 3}});
        shape_upstream_params(Era::Modern, &mut p, &json!({}), &info());
        assert_eq!(p["_meta"][META_PROTOCOL_VERSION], json!("2026-07-28"));
        assert_eq!(p["_meta"]["progressToken"], json!(3));
        shape_upstream_params(Era::Legacy, &mut p, &json!({}), &info());
        assert_eq!(p, json!({"name": "t", "_meta": {"progressToken": 3}}));
        let mut p = Value::Null;
        shape_upstream_params(Era::Modern, &mut p, &json!({}), &info());
        assert!(p["_meta"].is_object());
    }

    #[test]
    fn probe_is_never_keyed_on_one_code() {
        assert_eq!(
            judge_probe(&Ok(json!({"supportedVersions": ["2026-07-28"]}))),
            ProbeVerdict::Modern
        );
        for code in [-32601, -32602, -32600, -32000, -32603] {
            assert_eq!(
                judge_probe(&Err(RpcError::new(code, "x"))),
                ProbeVerdict::Legacy
            );
        }
        let modern_other =
            RpcError::new(-32022, "x").with_data(json!({"supported": ["2027-01-01"]}));
        assert_eq!(
            judge_probe(&Err(modern_other)),
            ProbeVerdict::ModernUnsupported
        );
        let dual = RpcError::new(-32022, "x").with_data(json!({"supported": ["2025-11-25"]}));
        assert_eq!(judge_probe(&Err(dual)), ProbeVerdict::Legacy);
    }

    #[test]
    fn resource_not_found_is_translated_for_modern_clients() {
        let e = RpcError::new(-32002, "Resource not found");
        assert_eq!(shape_error(Era::Modern, e.clone()).code, -32602);
        assert_eq!(shape_error(Era::Legacy, e).code, -32002);
    }

    #[test]
    fn a_session_keeps_small_capabilities_whole_and_bounds_big_ones() {
        let small =
            json!({"roots": {"listChanged": true}, "sampling": {}, "experimental": {"x": 1}});
        assert_eq!(retained_capabilities(small.clone()), small);
        let big = json!({
            "experimental": {"blob": "x".repeat(4 << 20)},
            "elicitation": {"form": {}, "url": {}},
            "sampling": {"padding": "y".repeat(100_000)},
            "roots": {"listChanged": true},
            "unknown": {},
        });
        let kept = retained_capabilities(big);
        assert_eq!(
            kept,
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": true}})
        );
        assert!(
            serde_json::to_string(&kept).map_or(0, |t| t.len()) <= MAX_CLIENT_CAPABILITIES_BYTES
        );
        assert_eq!(retained_capabilities(json!("x".repeat(5000))), json!({}));
    }
}
