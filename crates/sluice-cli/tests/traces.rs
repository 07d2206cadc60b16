//! Trace context through sluice: a client's `traceparent` (HTTP header
//! for a legacy client, `_meta` for a 2026-07-28 one) reaches the upstream
//! in `_meta`, and an HTTP upstream in its header too. Built without the
//! `otel` feature sluice adds no span of its own, so the value arrives
//! unchanged; with it, sluice's spans are exported over OTLP/HTTP as
//! children of the client's, and the upstream gets the upstream span.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

fn traceparent(trace: &str, span: &str) -> String {
    format!("00-{trace}-{span}-01")
}

/// The requests an upstream recorded (`sluice-fixture --record`) for
/// `method`, as (params, traceparent header).
fn recorded(path: &Path, method: &str) -> Vec<(Value, Value)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["method"] == method)
        .map(|r| (r["params"].clone(), r["traceparent"].clone()))
        .collect()
}

/// Two upstreams that record what they receive: `st` over stdio, `ht`
/// over HTTP; `extra` is more config.
async fn traced_sluice(
    extra: &str,
) -> (
    HttpSluice,
    tempfile::TempDir,
    tokio::process::Child,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let records = tempfile::tempdir().unwrap();
    let st = records.path().join("st.jsonl");
    let ht = records.path().join("ht.jsonl");
    let (http_child, url) = http_fixture(&["--record", ht.to_str().unwrap()]).await;
    let config = format!(
        "{extra}{}[[upstream]]\nname = \"ht\"\nurl = \"{url}\"\nallow_private = true\n",
        fixture_upstream("st", &["--record", st.to_str().unwrap()])
    );
    let s = HttpSluice::start(&config).await;
    s.wait_health(|h| h["status"] == "ok").await;
    (s, records, http_child, st, ht)
}

/// A legacy session, and one call in it with `traceparent` as a header.
async fn legacy_call(s: &HttpSluice, tool: &str, header: &str) -> Value {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let resp = s.post(&init, &[]).await;
    let session = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": {"text": "hi"}}});
    let resp = s
        .post(
            &call,
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-06-18"),
                ("traceparent", header),
                ("tracestate", "vendor=abc"),
            ],
        )
        .await;
    messages(resp).await.pop().unwrap()
}

/// A 2026-07-28 call with `traceparent` in `_meta`.
async fn modern_call(s: &HttpSluice, tool: &str, traceparent: &str) -> Value {
    let params = json!({"name": tool, "arguments": {"text": "hi"},
        "_meta": {"traceparent": traceparent}});
    messages(s.modern(3, "tools/call", params).await)
        .await
        .pop()
        .unwrap()
}

#[cfg(not(feature = "otel"))]
#[tokio::test(flavor = "multi_thread")]
async fn the_clients_trace_context_reaches_every_upstream_unchanged() {
    let (s, _records, _child, st, ht) = traced_sluice("").await;
    let from_client = traceparent(CLIENT_TRACE, CLIENT_SPAN);

    // Legacy client, header → the stdio upstream's `_meta`.
    let answer = legacy_call(&s, "st__echo", &from_client).await;
    assert_eq!(first_text(&answer), "hi", "{answer}");
    let calls = recorded(&st, "tools/call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0["_meta"]["traceparent"], from_client.as_str());
    assert_eq!(calls[0].0["_meta"]["tracestate"], "vendor=abc");

    // Modern client, `_meta` → the HTTP upstream's `_meta` and header.
    let other = traceparent("11111111111111111111111111111111", "2222222222222222");
    let answer = modern_call(&s, "ht__echo", &other).await;
    assert_eq!(first_text(&answer), "hi", "{answer}");
    let calls = recorded(&ht, "tools/call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0["_meta"]["traceparent"], other.as_str());
    assert_eq!(calls[0].1, other.as_str());

    // A malformed header is dropped, not passed on.
    legacy_call(&s, "st__echo", "00-not-a-trace-01").await;
    let calls = recorded(&st, "tools/call");
    assert_eq!(calls.len(), 2);
    assert!(
        calls[1].0["_meta"].get("traceparent").is_none(),
        "{calls:?}"
    );
}

#[cfg(not(feature = "otel"))]
#[tokio::test]
async fn an_otlp_endpoint_without_the_otel_feature_is_refused_at_start() {
    let (_dir, path) = write_config("[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n");
    let out = std::process::Command::new(sluice_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("built without the `otel` feature"),
        "{stderr}"
    );
}

#[cfg(feature = "otel")]
mod otel {
    use std::sync::{Arc, Mutex};

    use axum::body::Bytes;
    use axum::routing::post;

    use super::*;

    /// An OTLP/HTTP collector that keeps every body it is sent.
    async fn collector() -> (String, Arc<Mutex<Vec<Bytes>>>) {
        let bodies: Arc<Mutex<Vec<Bytes>>> = Arc::default();
        let kept = Arc::clone(&bodies);
        let app = axum::Router::new().route(
            "/v1/traces",
            post(move |body: Bytes| {
                let kept = Arc::clone(&kept);
                async move {
                    kept.lock().unwrap().push(body);
                    ""
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, bodies)
    }

    fn unhex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn sluices_spans_continue_the_clients_trace_and_the_upstream_continues_sluices() {
        let (endpoint, bodies) = collector().await;
        let (mut s, _records, _child, st, ht) = traced_sluice(&format!(
            "[telemetry]\notlp_endpoint = \"{endpoint}\"\nservice_name = \"sluice-under-test\"\n"
        ))
        .await;
        let from_client = traceparent(CLIENT_TRACE, CLIENT_SPAN);
        legacy_call(&s, "st__echo", &from_client).await;
        let other = traceparent("11111111111111111111111111111111", "2222222222222222");
        modern_call(&s, "ht__echo", &other).await;

        // The upstreams got the same traces, continued by sluice's spans.
        let st_calls = recorded(&st, "tools/call");
        let ht_calls = recorded(&ht, "tools/call");
        let sent_st = st_calls[0].0["_meta"]["traceparent"].as_str().unwrap();
        let sent_ht = ht_calls[0].0["_meta"]["traceparent"].as_str().unwrap();
        assert_eq!(ht_calls[0].1, sent_ht, "the header and _meta agree");
        let fields = |tp: &str| tp.split('-').map(str::to_owned).collect::<Vec<_>>();
        let (st_fields, ht_fields) = (fields(sent_st), fields(sent_ht));
        assert_eq!(st_fields[1], CLIENT_TRACE);
        assert_ne!(
            st_fields[2], CLIENT_SPAN,
            "sluice's own span, not the client's"
        );
        assert_eq!(ht_fields[1], "11111111111111111111111111111111");
        assert_ne!(ht_fields[2], "2222222222222222");

        // Shutting down flushes the exporter.
        let pid = s.child.id().unwrap().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        tokio::time::timeout(WAIT, s.child.wait())
            .await
            .unwrap()
            .unwrap();
        let exported: Vec<u8> = bodies.lock().unwrap().concat();
        for name in [
            "mcp.request",
            "mcp.upstream",
            "sluice.policy",
            "sluice-under-test",
        ] {
            assert!(contains(&exported, name.as_bytes()), "{name} not exported");
        }
        // Both traces, the client's spans as parents, and the spans whose
        // ids the upstreams received.
        for id in [
            CLIENT_TRACE,
            CLIENT_SPAN,
            "11111111111111111111111111111111",
            "2222222222222222",
            &st_fields[2],
            &ht_fields[2],
        ] {
            assert!(contains(&exported, &unhex(id)), "{id} not exported");
        }
    }
}
