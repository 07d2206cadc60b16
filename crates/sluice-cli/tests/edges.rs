//! Strict edges, through the real binary, each with the exact input that
//! once got through: two credentials, an absolute-form target naming
//! another host, a body that is not declared JSON, non-object arguments,
//! huge ids and method names quoted back, an upstream answer with both
//! `result` and `error` or nested too deep, and a hang-restart's effect on
//! the calls in flight.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `head` (the request line and header fields) and `body` on a
/// connection of its own, as written; the status and the JSON body.
async fn raw(base: &str, head: &str, body: &str) -> (u16, Value) {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// The request line and fields of a legacy POST to `/mcp` at `base`'s
/// authority.
fn post_head(base: &str, extra: &str) -> String {
    let host = base.trim_start_matches("http://");
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream{extra}"
    )
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

fn refusal(code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
}

#[tokio::test(flavor = "multi_thread")]
async fn two_credentials_are_refused_in_either_order() {
    let config = format!(
        "[auth]\nmode = \"bearer\"\n[[auth.token]]\nprincipal = \"alice\"\nfile = \"alice.token\"\n{}",
        fixture_upstream("fx", &[])
    );
    let (dir, path) = write_config(&config);
    std::fs::write(
        dir.path().join("alice.token"),
        "alice-token-0123456789abcdef",
    )
    .unwrap();
    let s = HttpSluice::start_at(dir, &path).await;
    let good = "\r\nAuthorization: Bearer alice-token-0123456789abcdef";
    let bad = "\r\nAuthorization: Bearer not-a-token";
    let json = "\r\nContent-Type: application/json";
    let expected = refusal(
        -32600,
        "Bad Request: more than one Authorization header; send one credential",
    );
    for pair in [format!("{good}{bad}"), format!("{bad}{good}")] {
        let head = post_head(&s.base, &format!("{json}{pair}"));
        assert_eq!(raw(&s.base, &head, INIT).await, (400, expected.clone()));
    }
    // One good credential is served; one bad one is 401.
    let (status, body) = raw(&s.base, &post_head(&s.base, &format!("{json}{good}")), INIT).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["serverInfo"]["name"], "sluice");
    let (status, _) = raw(&s.base, &post_head(&s.base, &format!("{json}{bad}")), INIT).await;
    assert_eq!(status, 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_request_target_the_host_and_the_media_type_are_checked() {
    let s = HttpSluice::start(&fixture_upstream("fx", &[])).await;
    let host = s.base.trim_start_matches("http://").to_owned();
    let json = "\r\nContent-Type: application/json";
    // An absolute-form target naming another host, whatever Host says.
    let head = format!(
        "POST http://evil.example/mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream{json}"
    );
    let misdirected = refusal(
        -32600,
        "Misdirected Request: the request target names another host than Host",
    );
    assert_eq!(raw(&s.base, &head, INIT).await, (421, misdirected));
    // The same target naming this host is served.
    let head = format!(
        "POST http://{host}/mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream{json}"
    );
    let (status, body) = raw(&s.base, &head, INIT).await;
    assert_eq!(status, 200, "{body}");
    // Two Host fields.
    let head = post_head(&s.base, &format!("{json}\r\nHost: {host}"));
    let two_hosts = refusal(-32600, "Bad Request: more than one Host header");
    assert_eq!(raw(&s.base, &head, INIT).await, (400, two_hosts));
    // A body not declared as JSON, or declared as nothing.
    let unsupported = refusal(
        -32600,
        "Unsupported Media Type: send the message with Content-Type: application/json",
    );
    for declared in [
        "\r\nContent-Type: text/plain",
        "",
        "\r\nContent-Type: application/jsonx",
    ] {
        let head = post_head(&s.base, declared);
        assert_eq!(raw(&s.base, &head, INIT).await, (415, unsupported.clone()));
    }
    let head = post_head(&s.base, "\r\nContent-Type: Application/JSON; charset=utf-8");
    assert_eq!(raw(&s.base, &head, INIT).await.0, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn arguments_that_are_not_an_object_are_invalid_params() {
    let s = HttpSluice::start(&fixture_upstream("fx", &[])).await;
    for arguments in [json!("x"), json!([1]), json!(7)] {
        let answer = s.call(3, "fx__echo", arguments.clone()).await;
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": 3, "error": {
                "code": -32602, "message": "params.arguments must be an object"}}),
            "{arguments}"
        );
    }
    let prompt = s
        .modern(
            4,
            "prompts/get",
            json!({"name": "fx__greet", "arguments": {"name": 1}}),
        )
        .await;
    let answer = messages(prompt).await.pop().unwrap();
    assert_eq!(
        answer["error"],
        json!({"code": -32602, "message": "params.arguments must be an object of strings"})
    );
    // `null` counts as absent.
    let answer = s.call(5, "fx__echo", Value::Null).await;
    assert_eq!(
        answer["result"]["isError"], true,
        "echo without text: {answer}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_names_and_ids_are_not_quoted_back() {
    let mut s = StdioSluice::start(&fixture_upstream("fx", &[])).await;
    s.initialize(json!({})).await;
    let method = "m".repeat(1 << 20);
    let answer = s.request(2, &method, json!({})).await;
    let message = answer["error"]["message"].as_str().unwrap();
    assert_eq!(message, format!("Method not found: {}…", "m".repeat(64)));
    let name = "n".repeat(1 << 20);
    let answer = s.call(3, &name, json!({})).await;
    let message = answer["error"]["message"].as_str().unwrap();
    assert_eq!(message, format!("Unknown tool: {}…", "n".repeat(64)));
    // An id longer than 256 bytes is refused, not echoed.
    let id = "i".repeat(4 << 20);
    s.send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
        .await;
    let answer: Value = serde_json::from_str(&s.recv_line().await).unwrap();
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
            "message": "Invalid request: the id must be a string or an integer of at most 256 bytes"}})
    );
    let answer = s.request(4, "ping", json!({})).await;
    assert_eq!(answer["result"], json!({}), "the session goes on");
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_answers_fail_their_call_at_once() {
    for (violation, detail) in [
        ("result-and-error", "result and error"),
        ("deep-answer", "nested too deep"),
    ] {
        // An answer that waited out the timeout would be -32003.
        let config = format!(
            "[server]\nrequest_timeout = \"30s\"\n{}",
            fixture_upstream("fx", &["--violate", violation])
        );
        let s = HttpSluice::start(&config).await;
        let answer = s.call(2, "fx__echo", json!({"text": "hi"})).await;
        assert_eq!(
            answer["error"],
            json!({"code": -32005,
                "message": "upstream \"fx\" sent a malformed answer: the answer is not a valid JSON-RPC response",
                "data": {"upstream": "fx"}}),
            "{detail}: {answer}"
        );
        // The upstream is still up: its other tools answer.
        let answer = s.call(3, "fx__lossless", json!({})).await;
        assert!(answer.get("result").is_some(), "{detail}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hang_restart_says_so_to_the_calls_it_ends() {
    let config = format!(
        "[server]\nrequest_timeout = \"2s\"\n{}",
        fixture_upstream("fx", &[])
    );
    let s = std::sync::Arc::new(HttpSluice::start(&config).await);
    let call = |id: i64, tool: &'static str, arguments: Value| {
        let s = std::sync::Arc::clone(&s);
        tokio::spawn(async move { s.call(id, tool, arguments).await })
    };
    // Two hung calls time out, one after the other; a third is sent, then,
    // a quarter of the timeout later, a slow call: when the third times out
    // (the third in a row with no answer), the slow one is in flight.
    for id in 1..=2 {
        let hung = call(id, "fx__hang", json!({})).await.unwrap();
        assert_eq!(hung["error"]["code"], -32003, "{hung}");
    }
    let third = call(3, "fx__hang", json!({}));
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let slow = call(10, "fx__slow", json!({"ms": 30_000}));
    assert_eq!(third.await.unwrap()["error"]["code"], -32003);
    let ended = slow.await.unwrap();
    assert_eq!(
        ended["error"],
        json!({"code": -32004,
            "message": "upstream \"fx\" was restarted while this request was in flight: 3 requests in a row timed out with no answer from it. The request was not retried (it may have taken effect)",
            "data": {"upstream": "fx", "restarted": true}}),
        "{ended}"
    );
    // The restarted upstream serves again.
    s.wait_health(|h| {
        let fx = &h["upstreams"]["fx"];
        fx["restarts"] == 1 && fx["state"] == "ready"
    })
    .await;
    let answer = s.call(20, "fx__echo", json!({"text": "back"})).await;
    assert_eq!(first_text(&answer), "back", "{answer}");
}
