//! Helpers of the unit tests that serve requests through the whole dispatch.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use clap::Parser;
use serde_json::{Value, json};

use crate::Config;
use crate::era::{Era, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN_VERSION};
use crate::fixture::Fixture;
use crate::peer::{Out, ReqCtx};

/// A fixture configured by `args` (the command line after the program name).
pub fn fixture(args: &[&str]) -> Fixture {
    let argv = std::iter::once("sluice-fixture").chain(args.iter().copied());
    let cfg = Config::try_parse_from(argv).unwrap();
    cfg.check_combinations().unwrap();
    Fixture::new(cfg)
}

/// A request in the 2026 era (its `_meta` names `version`).
pub fn modern_req_v(method: &str, mut params: Value, version: &str) -> Value {
    params["_meta"] = json!({
        META_PROTOCOL_VERSION: version,
        META_CLIENT_CAPABILITIES: {}
    });
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// A request in the 2026 era, at the version the fixture speaks.
pub fn modern_req(method: &str, params: Value) -> Value {
    modern_req_v(method, params, MODERN_VERSION)
}

/// A request in the 2025 era (no `_meta`).
pub fn legacy_req(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// Serves `msg` in `era`: the response, and the notifications sent before it.
pub async fn serve(fx: &Arc<Fixture>, era: Era, msg: Value) -> (Value, Vec<Value>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let ctx = ReqCtx {
        era,
        out: tx,
        peer: None,
        tracker: None,
        param_headers: Vec::new(),
    };
    let reply = fx.handle(msg, ctx).await.unwrap();
    let mut notes = Vec::new();
    while let Ok(Out::Msg(m)) = rx.try_recv() {
        notes.push(m);
    }
    let resp = serde_json::from_str(&reply.text.into_string()).unwrap();
    (resp, notes)
}

/// The result `msg` is answered with (it must not be an error).
pub async fn result(fx: &Arc<Fixture>, era: Era, msg: Value) -> Value {
    let (resp, _) = serve(fx, era, msg).await;
    assert!(resp.get("error").is_none(), "unexpected error: {resp}");
    resp["result"].clone()
}

/// The JSON-RPC error code `msg` is answered with.
pub async fn error_code(fx: &Arc<Fixture>, era: Era, msg: Value) -> i64 {
    let (resp, _) = serve(fx, era, msg).await;
    resp["error"]["code"].as_i64().unwrap()
}

/// `tools/call` params.
pub fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

/// The text of a result's first content block.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}
