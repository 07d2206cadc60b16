//! The JSON-RPC 2.0 envelope, over `serde_json::Value`.
//!
//! sluice never parses a payload into a typed model on the data path: a
//! message is classified by its envelope (`id`, `method`, `result`, `error`)
//! and everything else stays a `Value`, so fields sluice does not know about
//! reach the other side exactly as they came.

use std::fmt::{self, Display, Write as _};

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::payload::Payload;

/// The longest `id` sluice takes, in bytes of its JSON text: an id is
/// kept while its request is in flight and echoed in its answer, so its
/// size is bounded like the rest of what a peer may make sluice hold.
pub const MAX_ID_BYTES: usize = 256;

/// The most bytes of a peer's input that one of sluice's own error
/// messages quotes (a method name, an entry's name, a value it refused).
pub const QUOTE_MAX_BYTES: usize = 64;

/// Parse error: the bytes were not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON was not a valid JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// Unknown method, or a method whose capability is not offered.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid params: unknown tool or prompt, bad cursor, missing `_meta`,
/// resource not found (2026-07-28).
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// Legacy (2025-x) "resource not found"; 2026-07-28 uses `-32602` instead.
pub const LEGACY_RESOURCE_NOT_FOUND: i64 = -32002;
/// 2026-07-28 `HeaderMismatch`: HTTP headers disagree with the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28 `MissingRequiredClientCapability`.
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28 `UnsupportedProtocolVersion`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// One JSON-RPC message, classified by its envelope.
///
/// The id is kept as the `Value` the peer sent (string or number), because a
/// response must echo it exactly.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request: it has an `id` and a `method`.
    Request {
        /// The peer's id, echoed in the response.
        id: Value,
        /// The method name.
        method: String,
        /// The params (`Value::Null` when absent).
        params: Value,
    },
    /// A notification: a `method` and no `id`.
    Notification {
        /// The method name.
        method: String,
        /// The params (`Value::Null` when absent).
        params: Value,
    },
    /// A response: an `id` and either `result` or `error`.
    Response {
        /// The id of the request this answers.
        id: Value,
        /// The outcome.
        outcome: Result<Value, RpcError>,
    },
}

/// A JSON-RPC error object. `data` passes through untouched.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The integer code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional structured detail.
    pub data: Option<Value>,
}

/// Why a value is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// A JSON array: batching was removed from MCP in 2025-06-18.
    #[error("JSON-RPC batches are not supported")]
    Batch,
    /// Not an object, wrong `jsonrpc` version, or no `method`/`result`/`error`.
    #[error("not a JSON-RPC 2.0 message")]
    NotJsonRpc,
    /// An `id` that is neither a string nor an integer, or longer than
    /// [`MAX_ID_BYTES`].
    #[error("the id must be a string or an integer of at most 256 bytes")]
    BadId,
    /// A response with both `result` and `error`: neither can be trusted.
    #[error("a response must have a result or an error, not both")]
    ResultAndError,
    /// `params` present but not an object.
    #[error("params must be an object")]
    BadParams,
}

// === impl Message ===

impl Message {
    /// Classifies a parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self, EnvelopeError> {
        let mut obj = match value {
            Value::Object(obj) => obj,
            Value::Array(_) => return Err(EnvelopeError::Batch),
            _ => return Err(EnvelopeError::NotJsonRpc),
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(EnvelopeError::NotJsonRpc);
        }
        let id = obj.remove("id");
        if let Some(id) = &id
            && !is_valid_id(id)
        {
            return Err(EnvelopeError::BadId);
        }
        if let Some(method) = obj.remove("method") {
            let Value::String(method) = method else {
                return Err(EnvelopeError::NotJsonRpc);
            };
            let params = obj.remove("params").unwrap_or(Value::Null);
            if !(params.is_object() || params.is_null()) {
                return Err(EnvelopeError::BadParams);
            }
            return Ok(match id {
                Some(id) => Message::Request { id, method, params },
                None => Message::Notification { method, params },
            });
        }
        let id = id.ok_or(EnvelopeError::NotJsonRpc)?;
        if obj.contains_key("result") && obj.contains_key("error") {
            return Err(EnvelopeError::ResultAndError);
        }
        if let Some(result) = obj.remove("result") {
            return Ok(Message::Response {
                id,
                outcome: Ok(result),
            });
        }
        match obj.remove("error") {
            Some(error) => Ok(Message::Response {
                id,
                outcome: Err(RpcError::from_value(error)),
            }),
            None => Err(EnvelopeError::NotJsonRpc),
        }
    }

    /// Parses and classifies raw bytes; a parse failure is `None`.
    pub fn parse(bytes: &[u8]) -> Option<Result<Self, EnvelopeError>> {
        serde_json::from_slice::<Value>(bytes)
            .ok()
            .map(Message::from_value)
    }

    /// The wire form of this message.
    pub fn into_value(self) -> Value {
        match self {
            Message::Request { id, method, params } => request(id, &method, params),
            Message::Notification { method, params } => notification(&method, params),
            Message::Response { id, outcome } => response(id, outcome),
        }
    }
}

pub(crate) fn is_valid_id(id: &Value) -> bool {
    match id {
        // Its JSON text is at least as long as the string.
        Value::String(s) => s.len() + 2 <= MAX_ID_BYTES,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// Builds a request.
pub fn request(id: Value, method: &str, params: Value) -> Value {
    let mut msg = Map::new();
    msg.insert("jsonrpc".into(), "2.0".into());
    msg.insert("id".into(), id);
    msg.insert("method".into(), method.into());
    if !params.is_null() {
        msg.insert("params".into(), params);
    }
    Value::Object(msg)
}

/// Builds a notification.
pub fn notification(method: &str, params: Value) -> Value {
    let mut msg = Map::new();
    msg.insert("jsonrpc".into(), "2.0".into());
    msg.insert("method".into(), method.into());
    if !params.is_null() {
        msg.insert("params".into(), params);
    }
    Value::Object(msg)
}

/// Builds a response. An error response to an unknown id uses `null`.
pub fn response(id: Value, outcome: Result<Value, RpcError>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_value()}),
    }
}

/// A successful response whose result is kept as its text
/// ([`crate::payload`]): how a large answer is read.
#[derive(Debug)]
pub struct TextAnswer {
    /// The id of the request this answers.
    pub id: Value,
    /// The result, as it came.
    pub result: Box<RawValue>,
}

impl TextAnswer {
    /// Reads a message as a successful response without a tree of its
    /// result. `None` for anything else (a request, an error, a repeated
    /// field, not JSON-RPC): [`Message::parse`] then classifies it whole.
    pub fn parse(bytes: &[u8]) -> Option<TextAnswer> {
        #[derive(serde::Deserialize)]
        struct Envelope<'a> {
            #[serde(borrow)]
            jsonrpc: Option<&'a RawValue>,
            id: Option<Value>,
            result: Option<Box<RawValue>>,
            #[serde(borrow)]
            method: Option<&'a RawValue>,
            #[serde(borrow)]
            error: Option<&'a RawValue>,
        }
        let envelope: Envelope<'_> = serde_json::from_slice(bytes).ok()?;
        let version = envelope.jsonrpc.map(RawValue::get);
        if version != Some("\"2.0\"") || envelope.method.is_some() || envelope.error.is_some() {
            return None;
        }
        Some(TextAnswer {
            id: envelope.id.filter(is_valid_id)?,
            result: envelope.result?,
        })
    }
}

/// [`response`] of a result however it is held: a result kept as text
/// makes a response kept as text, written once at its final size.
pub fn response_payload(id: Value, outcome: Result<Payload, RpcError>) -> Payload {
    match outcome {
        Ok(Payload::Text(result)) => {
            let id = id.to_string();
            let result = result.get();
            let mut message = String::with_capacity(result.len() + id.len() + 32);
            message.push_str(r#"{"jsonrpc":"2.0","id":"#);
            message.push_str(&id);
            message.push_str(r#","result":"#);
            message.push_str(result);
            message.push('}');
            match RawValue::from_string(message) {
                Ok(message) => Payload::Text(message),
                // A valid id and a valid result make a valid message.
                Err(_) => Payload::Tree(response(
                    Value::Null,
                    Err(RpcError::new(INTERNAL_ERROR, "unwritable result")),
                )),
            }
        }
        Ok(Payload::Tree(result)) => Payload::Tree(response(id, Ok(result))),
        Err(error) => Payload::Tree(response(id, Err(error))),
    }
}

// === impl RpcError ===

impl RpcError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds structured data.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32602` with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(INVALID_PARAMS, message)
    }

    /// `-32601` for a method sluice does not serve.
    pub fn method_not_found(method: &str) -> Self {
        RpcError::new(
            METHOD_NOT_FOUND,
            format!("Method not found: {}", excerpt(method)),
        )
    }

    /// Reads an error object leniently: a peer that sends a malformed error
    /// still produced an error, and it must not become a success.
    pub fn from_value(value: Value) -> Self {
        let Value::Object(mut obj) = value else {
            return RpcError::new(INTERNAL_ERROR, "malformed error from peer");
        };
        let code = obj
            .get("code")
            .and_then(Value::as_i64)
            .unwrap_or(INTERNAL_ERROR);
        let message = match obj.remove("message") {
            Some(Value::String(message)) => message,
            _ => String::from("error"),
        };
        RpcError {
            code,
            message,
            data: obj.remove("data"),
        }
    }

    /// The wire form.
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("code".into(), self.code.into());
        obj.insert("message".into(), self.message.clone().into());
        if let Some(data) = &self.data {
            obj.insert("data".into(), data.clone());
        }
        Value::Object(obj)
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// `value` as one of sluice's error messages quotes a peer's input: its
/// first [`QUOTE_MAX_BYTES`] bytes, and `…` where it was cut. A value is
/// written only that far (a 4 MiB argument costs no 4 MiB message).
pub fn excerpt(value: &(impl Display + ?Sized)) -> String {
    let mut out = Excerpt::default();
    if write!(out, "{value}").is_err() {
        out.text.push('…');
    }
    out.text
}

/// A text as [`excerpt`] cuts it, in double quotes with its control
/// characters escaped (Rust's `{:?}`), `…` after the quote when cut.
pub fn quoted(text: &str) -> String {
    let end = text.floor_char_boundary(QUOTE_MAX_BYTES);
    let more = if end < text.len() { "…" } else { "" };
    format!("{:?}{more}", &text[..end])
}

/// A writer that keeps [`QUOTE_MAX_BYTES`] and fails past them, which
/// stops the value's `Display` there.
#[derive(Default)]
struct Excerpt {
    text: String,
}

impl fmt::Write for Excerpt {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = QUOTE_MAX_BYTES - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
            return Ok(());
        }
        self.text.push_str(&s[..s.floor_char_boundary(room)]);
        Err(fmt::Error)
    }
}

/// The `_meta` object of a request's params, if any.
pub fn meta(params: &Value) -> Option<&Map<String, Value>> {
    params.get("_meta").and_then(Value::as_object)
}

/// The `_meta` object of a params object, created when absent. Returns `None`
/// only when params or `_meta` is not an object (a malformed request).
pub fn meta_mut(params: &mut Value) -> Option<&mut Map<String, Value>> {
    if params.is_null() {
        *params = Value::Object(Map::new());
    }
    let obj = params.as_object_mut()?;
    obj.entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
}

/// The `id` of a JSON-RPC *response* from the first bytes of its text, for
/// a message too large to read whole: its answer must still reach the
/// request it belongs to. Scans the top-level members until it has seen
/// both an `id` and a `result` or `error` key (serializers put `id` first);
/// `None` when the prefix shows a request or notification (`method`) or
/// ends first: then no request is failed on a guess.
pub fn peek_id(prefix: &[u8]) -> Option<Value> {
    let mut p = Peek { s: prefix, i: 0 };
    p.ws();
    p.eat(b'{')?;
    let mut id: Option<Value> = None;
    let mut is_response = false;
    loop {
        p.ws();
        let key_start = p.i;
        p.string()?;
        let key = &prefix[key_start..p.i];
        match key {
            b"\"method\"" => return None,
            b"\"result\"" | b"\"error\"" => is_response = true,
            _ => {}
        }
        if is_response && let Some(id) = &id {
            return Some(id.clone());
        }
        p.ws();
        p.eat(b':')?;
        p.ws();
        let value_start = p.i;
        p.value()?;
        if key == b"\"id\"" {
            id = serde_json::from_slice(&prefix[value_start..p.i])
                .ok()
                .filter(|v: &Value| v.is_number() || v.is_string());
            if is_response {
                return id;
            }
        }
        p.ws();
        p.eat(b',')?;
    }
}

/// A forward-only scanner over a possibly truncated JSON text.
struct Peek<'a> {
    s: &'a [u8],
    i: usize,
}

impl Peek<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.s.get(self.i) == Some(&b)).then(|| self.i += 1)
    }

    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.s.get(self.i)? {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                _ => self.i += 1,
            }
        }
    }

    /// Skips one value; `None` when the text ends inside it.
    fn value(&mut self) -> Option<()> {
        match self.s.get(self.i)? {
            b'"' => self.string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.s.get(self.i)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                let start = self.i;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
                {
                    self.i += 1;
                }
                // A scalar cut by the end of the prefix is not a value.
                (self.i > start && self.i < self.s.len()).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_each_kind() {
        let req = Message::from_value(json!({"jsonrpc":"2.0","id":1,"method":"ping"}));
        assert_eq!(
            req,
            Ok(Message::Request {
                id: json!(1),
                method: "ping".into(),
                params: Value::Null
            })
        );
        let note = Message::from_value(json!({"jsonrpc":"2.0","method":"n","params":{"a":1}}));
        assert!(matches!(note, Ok(Message::Notification { .. })));
        let ok = Message::from_value(json!({"jsonrpc":"2.0","id":"x","result":{}}));
        assert!(matches!(ok, Ok(Message::Response { outcome: Ok(_), .. })));
        let err = Message::from_value(
            json!({"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"m","data":[1]}}),
        );
        assert_eq!(
            err,
            Ok(Message::Response {
                id: json!("x"),
                outcome: Err(RpcError::new(-32601, "m").with_data(json!([1])))
            })
        );
    }

    #[test]
    fn rejects_what_is_not_jsonrpc() {
        assert_eq!(Message::from_value(json!([{}])), Err(EnvelopeError::Batch));
        assert_eq!(
            Message::from_value(json!({"id":1,"method":"x"})),
            Err(EnvelopeError::NotJsonRpc)
        );
        assert_eq!(
            Message::from_value(json!({"jsonrpc":"2.0","id":1.5,"method":"x"})),
            Err(EnvelopeError::BadId)
        );
        assert_eq!(
            Message::from_value(json!({"jsonrpc":"2.0","id":1,"method":"x","params":[1]})),
            Err(EnvelopeError::BadParams)
        );
        assert_eq!(
            Message::from_value(json!({"jsonrpc":"2.0","id":1})),
            Err(EnvelopeError::NotJsonRpc)
        );
        assert!(Message::parse(b"not json").is_none());
    }

    #[test]
    fn a_response_with_both_result_and_error_is_neither() {
        let both = json!({"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"m"}});
        assert_eq!(
            Message::from_value(both),
            Err(EnvelopeError::ResultAndError)
        );
        // Its id can still be read, so its request can fail at once.
        let text = br#"{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"m"}}"#;
        assert_eq!(peek_id(text), Some(json!(3)));
    }

    #[test]
    fn ids_are_bounded() {
        let at_most = "i".repeat(MAX_ID_BYTES - 2);
        let request = |id: &str| json!({"jsonrpc":"2.0","id":id,"method":"ping"});
        assert!(Message::from_value(request(&at_most)).is_ok());
        let longer = format!("{at_most}i");
        assert_eq!(
            Message::from_value(request(&longer)),
            Err(EnvelopeError::BadId)
        );
        let number = json!({"jsonrpc":"2.0","id":u64::MAX,"method":"ping"});
        assert!(Message::from_value(number).is_ok());
    }

    #[test]
    fn error_messages_quote_a_bounded_excerpt() {
        assert_eq!(excerpt("tools/list"), "tools/list");
        let cut = excerpt(&"m".repeat(1 << 20));
        assert_eq!(cut, format!("{}…", "m".repeat(QUOTE_MAX_BYTES)));
        // A value's text is written only as far as the excerpt goes.
        let big = json!({"a": "x".repeat(1 << 20)});
        assert_eq!(
            excerpt(&big),
            format!("{{\"a\":\"{}…", "x".repeat(QUOTE_MAX_BYTES - 6))
        );
        // Cut on a character boundary, never inside one.
        let wide = "é".repeat(100);
        assert_eq!(
            excerpt(&wide),
            format!("{}…", "é".repeat(QUOTE_MAX_BYTES / 2))
        );
        assert_eq!(quoted("a\nb"), "\"a\\nb\"");
        assert_eq!(quoted(&"q".repeat(65)), format!("\"{}\"…", "q".repeat(64)));
        assert_eq!(
            RpcError::method_not_found(&"z".repeat(100)).message,
            format!("Method not found: {}…", "z".repeat(64))
        );
    }

    #[test]
    fn round_trip_keeps_unknown_fields_and_big_numbers() {
        let text = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"hologram","x":1}],"big":123456789012345678901234567890,"exp":1e400,"_meta":{"k":"v"}}}"#;
        let msg = Message::parse(text.as_bytes())
            .expect("json")
            .expect("jsonrpc");
        let back = serde_json::to_string(&msg.into_value()).expect("serialize");
        // Digits are kept exactly; only an exponent's sign is spelled out.
        assert_eq!(back, text.replace("1e400", "1e+400"));
    }

    #[test]
    fn malformed_error_objects_stay_errors() {
        let e = RpcError::from_value(json!("boom"));
        assert_eq!(e.code, INTERNAL_ERROR);
        let e = RpcError::from_value(json!({"code": "x"}));
        assert_eq!(e.code, INTERNAL_ERROR);
    }

    #[test]
    fn peek_id_finds_the_id_before_a_huge_result() {
        let cases: [(&str, Option<Value>); 7] = [
            (
                r#"{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"xxxx"#,
                Some(json!(42)),
            ),
            (
                r#"{ "jsonrpc" : "2.0", "id" : "a\"b", "result": "#,
                Some(json!("a\"b")),
            ),
            (
                r#"{"result":{"a":[1,{"id":7}],"s":"}"},"id":9,"jsonrpc":"2.0"}"#,
                Some(json!(9)),
            ),
            (r#"{"jsonrpc":"2.0","result":{"content":"xxxxxxxx"#, None),
            (r#"{"jsonrpc":"2.0","id":12"#, None),
            (r#"{"jsonrpc":"2.0","id":null,"error":{}}"#, None),
            (r#"not json"#, None),
        ];
        for (text, want) in cases {
            assert_eq!(peek_id(text.as_bytes()), want, "{text}");
        }
    }
}
