//! The JSON-RPC 2.0 envelope as the fixture sees it: errors, responses, what a handler returns,
//! and what kind of message an incoming value is.

use serde_json::{Map, Value, json};

use crate::bulk::Bulk;

/// A JSON-RPC error.
#[derive(Debug, Clone)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(-32601, "Method not found").with_data(json!({"method": method}))
    }

    /// The JSON-RPC error object.
    pub fn to_value(&self) -> Value {
        let mut err = json!({"code": self.code, "message": self.message});
        if let (Some(data), Some(obj)) = (&self.data, err.as_object_mut()) {
            obj.insert("data".into(), data.clone());
        }
        err
    }
}

/// A JSON-RPC success response.
pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC error response.
pub fn error_response(id: &Value, err: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": err.to_value()})
}

/// A result as produced by a handler.
#[derive(Debug, Clone)]
pub enum Payload {
    /// A JSON value (serialized by serde_json).
    Json(Value),
    /// Raw JSON text of an object, written out verbatim. serde_json (even with
    /// `arbitrary_precision`) rewrites exponents (`1e400` → `1e+400`), so results that must
    /// keep every byte are kept as text.
    Raw(String),
    /// Raw JSON text of an object too big to build whole (`huge_read`, `huge_write`): written
    /// out in chunks as it is produced.
    Bulk(Bulk),
}

impl From<Value> for Payload {
    fn from(v: Value) -> Self {
        Payload::Json(v)
    }
}

/// What kind of JSON-RPC message an incoming value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    /// A response to one of our server→client requests.
    Response,
    /// Not a JSON-RPC message we understand (answered with -32600).
    Invalid,
}

/// Classifies an incoming message.
pub fn classify(msg: &Value) -> Kind {
    let Some(obj) = msg.as_object() else {
        return Kind::Invalid;
    };
    match (
        obj.get("method").map(Value::is_string),
        obj.contains_key("id"),
    ) {
        (Some(true), true) => Kind::Request,
        (Some(true), false) => Kind::Notification,
        (None, true) if obj.contains_key("result") || obj.contains_key("error") => Kind::Response,
        _ => Kind::Invalid,
    }
}

/// The method of a message ("" if none).
pub fn method(msg: &Value) -> &str {
    msg.get("method").and_then(Value::as_str).unwrap_or("")
}

/// `params._meta` of a message, if any.
pub fn meta(msg: &Value) -> Option<&Map<String, Value>> {
    msg.get("params")?.get("_meta")?.as_object()
}

/// `params._meta.progressToken`, if any.
pub fn progress_token(msg: &Value) -> Option<&Value> {
    meta(msg)?.get("progressToken").filter(|t| !t.is_null())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn classify_messages() {
        assert_eq!(
            classify(&json!({"jsonrpc":"2.0","id":1,"method":"x"})),
            Kind::Request
        );
        assert_eq!(
            classify(&json!({"jsonrpc":"2.0","method":"x"})),
            Kind::Notification
        );
        assert_eq!(
            classify(&json!({"jsonrpc":"2.0","id":1,"result":{}})),
            Kind::Response
        );
        assert_eq!(
            classify(&json!({"jsonrpc":"2.0","id":1,"error":{}})),
            Kind::Response
        );
        assert_eq!(classify(&json!([1])), Kind::Invalid);
        assert_eq!(classify(&json!({"id":1})), Kind::Invalid);
    }

    #[test]
    fn serde_json_rewrites_exponents() {
        // Why `Payload::Raw` exists: even with arbitrary_precision, `1e400` does not survive.
        let v: Value = serde_json::from_str(r#"{"x":1e400,"y":1.50,"z":-0}"#).unwrap();
        assert_eq!(v.to_string(), r#"{"x":1e+400,"y":1.50,"z":-0}"#);
    }
}
