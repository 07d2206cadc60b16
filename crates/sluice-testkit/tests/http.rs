//! The fixture over Streamable HTTP, driven with a tiny raw HTTP/1.1 client.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{HttpFixture, SUBSCRIPTION_ID, modern, modern_meta};
use serde_json::{Value, json};

fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

const MODERN_HEADERS: [(&str, &str); 1] = [("MCP-Protocol-Version", "2026-07-28")];

#[test]
fn modern_call_is_stateless_json() {
    let fx = HttpFixture::spawn(&[]);
    let params = modern(json!({"name": "echo", "arguments": {"text": "hi"}}));
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
    ];
    let resp = fx.post(&headers, &rpc(json!(1), "tools/call", params));
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(resp.header("mcp-session-id"), None);
    assert_eq!(
        resp.json(),
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": "hi"}], "resultType": "complete"}})
    );

    let discover = fx.post(
        &MODERN_HEADERS,
        &rpc(json!(2), "server/discover", modern(json!({}))),
    );
    assert_eq!(
        discover.json()["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
}

#[test]
fn modern_errors_have_http_statuses() {
    let fx = HttpFixture::spawn(&[]);
    // Missing _meta (and no session): 400 + -32602.
    let resp = fx.post(&[], &rpc(json!(1), "tools/list", json!({})));
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["code"], -32602);
    // Unsupported version: 400 + -32022.
    let bad = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1900-01-01"}});
    let resp = fx.post(&[], &rpc(json!(2), "tools/list", bad));
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["code"], -32022);
    // Header/body mismatch: 400 + -32020.
    let resp = fx.post(
        &[("Mcp-Method", "tools/call")],
        &rpc(json!(3), "tools/list", modern(json!({}))),
    );
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["code"], -32020);
    // Unknown method: 404 + -32601.
    let resp = fx.post(&MODERN_HEADERS, &rpc(json!(4), "nope", modern(json!({}))));
    assert_eq!(resp.status, 404);
    assert_eq!(resp.json()["error"]["code"], -32601);
    // Foreign origin: 403.
    let resp = fx.post(
        &[("Origin", "https://evil.example")],
        &rpc(json!(5), "tools/list", modern(json!({}))),
    );
    assert_eq!(resp.status, 403);
}

#[test]
fn hang_page_never_answers_but_blocks_nothing() {
    let fx = HttpFixture::spawn(&["--page-size", "4", "--hang-page", "2"]);
    let first = fx.post(
        &MODERN_HEADERS,
        &rpc(json!(1), "tools/list", modern(json!({}))),
    );
    let cursor = first.json()["result"]["nextCursor"].clone();
    let page2 = rpc(json!(2), "tools/list", modern(json!({"cursor": cursor})));
    let mut hung = fx.send("POST", &MODERN_HEADERS, Some(&page2.to_string()));

    let echo = modern(json!({"name": "echo", "arguments": {"text": "after"}}));
    let resp = fx.post(&MODERN_HEADERS, &rpc(json!(3), "tools/call", echo));
    assert_eq!(resp.json()["result"]["content"][0]["text"], "after");
    let again = fx.post(
        &MODERN_HEADERS,
        &rpc(json!(4), "tools/list", modern(json!({}))),
    );
    assert_eq!(again.json()["result"]["nextCursor"], cursor);

    hung.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 1];
    let err = std::io::Read::read(&mut hung, &mut buf).expect_err("no response to page 2");
    assert!(matches!(
        err.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    ));
}

#[test]
fn modern_progress_is_sse() {
    let fx = HttpFixture::spawn(&[]);
    let params = json!({
        "name": "progress",
        "arguments": {"steps": 2, "delay_ms": 10},
        "_meta": modern_meta(json!({"progressToken": 9}))
    });
    let resp = fx.post(&MODERN_HEADERS, &rpc(json!("p"), "tools/call", params));
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    let events: Vec<Value> = resp
        .sse_data()
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[0]["params"],
        json!({"progressToken": 9, "progress": 1, "total": 2})
    );
    assert_eq!(events[1]["params"]["progress"], 2);
    assert_eq!(events[2]["id"], "p");
    assert_eq!(events[2]["result"]["content"][0]["text"], "done");
}

#[test]
fn legacy_session_lifecycle_and_sampling() {
    let fx = HttpFixture::spawn(&["--era", "dual"]);
    let init = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let resp = fx.post(&[], &init);
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["result"]["protocolVersion"], "2025-11-25");
    let sid = resp
        .header("mcp-session-id")
        .expect("session id")
        .to_owned();
    assert!(sid.len() >= 16 && sid.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    let session = [
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];

    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(fx.post(&session, &note).status, 202);
    let list = fx.post(&session, &rpc(json!(2), "tools/list", json!({})));
    assert_eq!(list.status, 200);
    assert!(list.json()["result"].get("resultType").is_none());

    // Without or with an unknown session id.
    assert_eq!(
        fx.post(
            &[("MCP-Protocol-Version", "2025-11-25")],
            &rpc(json!(3), "ping", json!({}))
        )
        .status,
        400
    );
    assert_eq!(
        fx.post(
            &[("Mcp-Session-Id", "nope")],
            &rpc(json!(3), "ping", json!({}))
        )
        .status,
        404
    );

    // Sampling: the request arrives on the POST's SSE stream, the answer is a separate POST.
    let call = rpc(
        json!(4),
        "tools/call",
        json!({"name": "sample", "arguments": {"prompt": "hey"}}),
    );
    let mut stream = fx.open("POST", &session, Some(&call.to_string()));
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let req = stream.next_json();
    assert_eq!(req["method"], "sampling/createMessage");
    assert_eq!(req["params"]["messages"][0]["content"]["text"], "hey");
    let answer = json!({"jsonrpc": "2.0", "id": req["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}});
    assert_eq!(fx.post(&session, &answer).status, 202);
    let resp = stream.next_json();
    assert_eq!(resp["id"], 4);
    assert_eq!(resp["result"]["content"][0]["text"], "hello");
    assert_eq!(stream.next_data(), None, "stream ends after the response");

    // list_changed goes to the session's GET stream.
    let mut get = fx.open(
        "GET",
        &[
            ("Mcp-Session-Id", sid.as_str()),
            ("Accept", "text/event-stream"),
        ],
        None,
    );
    assert_eq!(get.status, 200);
    // (Its headers have arrived, so the server has registered the stream.)
    let add = fx.post(
        &session,
        &rpc(json!(5), "tools/call", json!({"name": "add_tool"})),
    );
    assert_eq!(add.json()["result"]["content"][0]["text"], "ok");
    assert_eq!(
        get.next_json()["method"],
        "notifications/tools/list_changed"
    );

    // DELETE ends the session.
    assert_eq!(fx.request("DELETE", &session, None).status, 200);
    assert_eq!(
        fx.post(&session, &rpc(json!(6), "ping", json!({}))).status,
        404
    );
}

#[test]
fn get_without_session_is_405_and_modern_only_rejects_initialize() {
    let fx = HttpFixture::spawn(&["--era", "modern"]);
    assert_eq!(fx.request("GET", &[], None).status, 405);
    let init = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
    );
    let resp = fx.post(&[], &init);
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["code"], -32022);
    assert_eq!(resp.header("mcp-session-id"), None);
}

#[test]
fn lossless_bytes_survive_http() {
    let fx = HttpFixture::spawn(&[]);
    let resp = fx.post(
        &MODERN_HEADERS,
        &rpc(json!(1), "tools/call", modern(json!({"name": "lossless"}))),
    );
    assert!(resp.body.contains(r#""structuredContent":{"big":123456789012345678901234567890,"exp":1e400,"float":1.50,"neg":-0}"#));
    assert!(
        resp.body
            .ends_with(r#""isError":false,"resultType":"complete"}}"#)
    );
}

#[test]
fn listen_is_an_sse_stream_of_tagged_notifications() {
    let fx = HttpFixture::spawn(&[]);
    let listen_headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
        ("Accept", "text/event-stream"),
    ];
    let open = |id: Value, filter: Value| {
        let msg = rpc(
            id,
            "subscriptions/listen",
            modern(json!({"notifications": filter})),
        );
        let stream = fx.open("POST", &listen_headers, Some(&msg.to_string()));
        assert_eq!(stream.status, 200);
        assert_eq!(stream.header("content-type"), Some("text/event-stream"));
        assert_eq!(stream.header("mcp-session-id"), None);
        stream
    };
    let ack = |id: Value, honoured: Value| {
        json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": honoured, "_meta": {SUBSCRIPTION_ID: id}}
        })
    };
    let tools_changed = |id: Value| {
        json!({
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID: id}}
        })
    };
    let add_tool = |id: u64| {
        let headers = [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "add_tool"),
        ];
        let resp = fx.post(
            &headers,
            &rpc(json!(id), "tools/call", modern(json!({"name": "add_tool"}))),
        );
        assert_eq!(resp.status, 200);
        assert_eq!(resp.json()["result"]["content"][0]["text"], "ok");
    };

    let mut tools = open(
        json!("t-1"),
        json!({"toolsListChanged": true, "resourcesListChanged": true, "promptsListChanged": false}),
    );
    assert_eq!(
        tools.next_json(),
        ack(
            json!("t-1"),
            json!({"toolsListChanged": true, "resourcesListChanged": true})
        )
    );
    let mut prompts = open(json!(7), json!({"promptsListChanged": true}));
    assert_eq!(
        prompts.next_json(),
        ack(json!(7), json!({"promptsListChanged": true}))
    );

    // add_tool in a separate POST (the open listens do not block it).
    add_tool(1);
    assert_eq!(tools.next_json(), tools_changed(json!("t-1")));
    assert!(
        prompts.idle_for(Duration::from_millis(300)),
        "a listen without toolsListChanged gets nothing"
    );
    assert!(
        tools.idle_for(Duration::from_millis(100)),
        "the listen stays open without a response"
    );

    // Closing the stream ends the subscription; the others carry on.
    drop(tools);
    let mut again = open(json!("t-2"), json!({"toolsListChanged": true}));
    assert_eq!(
        again.next_json(),
        ack(json!("t-2"), json!({"toolsListChanged": true}))
    );
    add_tool(2);
    assert_eq!(again.next_json(), tools_changed(json!("t-2")));
    assert!(prompts.idle_for(Duration::from_millis(300)));
    let list = fx.post(
        &MODERN_HEADERS,
        &rpc(json!(3), "tools/list", modern(json!({}))),
    );
    let names: Vec<Value> = list.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert!(names.ends_with(&[json!("added_0"), json!("added_1")]));
}

/// POSTs a modern `tools/call` of `header_echo` with the SEP-2243 request headers plus `extra`.
fn header_echo(fx: &HttpFixture, id: u64, args: Value, extra: &[(&str, &str)]) -> common::HttpResp {
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "header_echo"),
    ];
    headers.extend_from_slice(extra);
    let params = modern(json!({"name": "header_echo", "arguments": args}));
    fx.post(&headers, &rpc(json!(id), "tools/call", params))
}

fn echo_text(resp: &common::HttpResp) -> String {
    assert_eq!(resp.status, 200, "body: {}", resp.body);
    let body = resp.json();
    assert_eq!(body["result"]["resultType"], "complete");
    body["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn assert_header_mismatch(resp: &common::HttpResp, id: u64) {
    assert_eq!(resp.status, 400, "body: {}", resp.body);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let body = resp.json();
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], id);
    assert_eq!(body["error"]["code"], -32020);
    assert!(body["error"]["message"].is_string());
    assert!(body.get("result").is_none());
}

#[test]
fn header_echo_modern_with_matching_headers() {
    let fx = HttpFixture::spawn(&[]);
    let args = json!({"region": "eu-west", "count": 3, "note": "n"});
    // Header names are case-insensitive.
    let resp = header_echo(
        &fx,
        1,
        args,
        &[("Mcp-Param-Region", "eu-west"), ("MCP-PARAM-COUNT", "3")],
    );
    assert_eq!(
        echo_text(&resp),
        "region=eu-west count=3 params=mcp-param-count,mcp-param-region"
    );
    // Only `region`: no Count header expected; a null count needs none either.
    let resp = header_echo(
        &fx,
        2,
        json!({"region": "eu-west"}),
        &[("mcp-param-region", "eu-west")],
    );
    assert_eq!(
        echo_text(&resp),
        "region=eu-west count=- params=mcp-param-region"
    );
    let resp = header_echo(
        &fx,
        3,
        json!({"region": "x", "count": null}),
        &[("Mcp-Param-Region", "x")],
    );
    assert_eq!(echo_text(&resp), "region=x count=- params=mcp-param-region");
    // Integers are compared numerically.
    let resp = header_echo(
        &fx,
        4,
        json!({"region": "x", "count": 3}),
        &[("Mcp-Param-Region", "x"), ("Mcp-Param-Count", "03")],
    );
    assert_eq!(
        echo_text(&resp),
        "region=x count=3 params=mcp-param-count,mcp-param-region"
    );
}

#[test]
fn header_echo_modern_missing_header_is_400() {
    let fx = HttpFixture::spawn(&[]);
    let resp = header_echo(&fx, 1, json!({"region": "eu-west"}), &[]);
    assert_header_mismatch(&resp, 1);
    let resp = header_echo(
        &fx,
        2,
        json!({"region": "eu-west", "count": 3}),
        &[("Mcp-Param-Region", "eu-west")],
    );
    assert_header_mismatch(&resp, 2);
}

#[test]
fn header_echo_modern_mismatched_header_is_400() {
    let fx = HttpFixture::spawn(&[]);
    let args = json!({"region": "eu-west", "count": 3});
    let resp = header_echo(
        &fx,
        1,
        args.clone(),
        &[("Mcp-Param-Region", "us-east"), ("Mcp-Param-Count", "3")],
    );
    assert_header_mismatch(&resp, 1);
    let resp = header_echo(
        &fx,
        2,
        args.clone(),
        &[("Mcp-Param-Region", "eu-west"), ("Mcp-Param-Count", "4")],
    );
    assert_header_mismatch(&resp, 2);
    // The value must decode: broken base64 is a mismatch, not a literal.
    let resp = header_echo(
        &fx,
        3,
        args,
        &[
            ("Mcp-Param-Region", "=?base64?%%%?="),
            ("Mcp-Param-Count", "3"),
        ],
    );
    assert_header_mismatch(&resp, 3);
}

#[test]
fn header_echo_modern_accepts_base64_values() {
    let fx = HttpFixture::spawn(&[]);
    let resp = header_echo(
        &fx,
        1,
        json!({"region": "eu west", "count": 3}),
        &[
            ("Mcp-Param-Region", "=?base64?ZXUgd2VzdA==?="),
            ("Mcp-Param-Count", "3"),
        ],
    );
    assert_eq!(
        echo_text(&resp),
        "region=eu west count=3 params=mcp-param-count,mcp-param-region"
    );
    // Non-ASCII and leading/trailing spaces need the encoding.
    let resp = header_echo(
        &fx,
        2,
        json!({"region": " Zürich "}),
        &[("Mcp-Param-Region", "=?base64?IFrDvHJpY2gg?=")],
    );
    assert_eq!(
        echo_text(&resp),
        "region= Zürich  count=- params=mcp-param-region"
    );
}

#[test]
fn header_echo_lists_unrecognized_param_headers() {
    let fx = HttpFixture::spawn(&[]);
    let resp = header_echo(
        &fx,
        1,
        json!({"region": "eu west", "count": 3}),
        &[
            ("Mcp-Param-Region", "eu west"),
            ("Mcp-Param-Extra", "whatever"),
            ("Mcp-Param-Count", "3"),
        ],
    );
    assert_eq!(
        echo_text(&resp),
        "region=eu west count=3 params=mcp-param-count,mcp-param-extra,mcp-param-region"
    );
}

#[test]
fn header_echo_legacy_http_is_not_checked() {
    let fx = HttpFixture::spawn(&["--era", "dual"]);
    let init = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let resp = fx.post(&[], &init);
    let sid = resp
        .header("mcp-session-id")
        .expect("session id")
        .to_owned();
    let call = rpc(
        json!(2),
        "tools/call",
        json!({"name": "header_echo", "arguments": {"region": "r", "count": 1}}),
    );
    let resp = fx.post(
        &[("Mcp-Session-Id", sid.as_str()), ("Mcp-Param-Other", "1")],
        &call,
    );
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.json()["result"]["content"][0]["text"],
        "region=r count=1 params=mcp-param-other"
    );
}

#[test]
fn legacy_resource_subscriptions_notify_the_get_stream() {
    let fx = HttpFixture::spawn(&["--era", "dual", "--resources", "1"]);
    let init = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let resp = fx.post(&[], &init);
    assert_eq!(
        resp.json()["result"]["capabilities"]["resources"],
        json!({"subscribe": true})
    );
    let sid = resp
        .header("mcp-session-id")
        .expect("session id")
        .to_owned();
    let session = [("Mcp-Session-Id", sid.as_str())];
    let read = |id: u64, uri: &str| {
        let resp = fx.post(
            &session,
            &rpc(json!(id), "resources/read", json!({"uri": uri})),
        );
        assert_eq!(resp.status, 200);
        resp.json()["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let uri = "fixture://res/0000";

    // Subscribed without a GET stream open: the touch still answers, the notification is dropped.
    let sub = fx.post(
        &session,
        &rpc(json!(2), "resources/subscribe", json!({"uri": uri})),
    );
    assert_eq!(sub.json()["result"], json!({}));
    assert_eq!(read(3, "fixture://touch/0000"), "touched");

    let mut get = fx.open(
        "GET",
        &[
            ("Mcp-Session-Id", sid.as_str()),
            ("Accept", "text/event-stream"),
        ],
        None,
    );
    assert_eq!(get.status, 200);
    assert_eq!(read(4, "fixture://touch/0000"), "touched");
    assert_eq!(
        get.next_json(),
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"uri": uri}})
    );

    let unsub = fx.post(
        &session,
        &rpc(json!(5), "resources/unsubscribe", json!({"uri": uri})),
    );
    assert_eq!(unsub.json()["result"], json!({}));
    assert_eq!(read(6, "fixture://touch/0000"), "not subscribed");
    assert!(get.idle_for(Duration::from_millis(300)), "no notification");
    assert_eq!(
        read(7, "fixture://subscriptions"),
        r#"{"subscribed":[],"subscribe_calls":1,"unsubscribe_calls":1}"#
    );

    // Modern HTTP: removed methods are -32601 (HTTP 404).
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "resources/subscribe"),
    ];
    let resp = fx.post(
        &headers,
        &rpc(json!(8), "resources/subscribe", modern(json!({"uri": uri}))),
    );
    assert_eq!(resp.status, 404);
    assert_eq!(resp.json()["error"]["code"], -32601);
}

/// `initialize` in the legacy era; returns the session id.
fn legacy_session(fx: &HttpFixture) -> String {
    let init = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let resp = fx.post(&[], &init);
    assert_eq!(resp.status, 200, "body: {}", resp.body);
    resp.header("mcp-session-id")
        .expect("session id")
        .to_owned()
}

/// A polled POST's body: exactly one priming event (id `<stream>-0`, `retry: 100`, empty data),
/// already ended. Returns its id.
fn priming_id(resp: &common::HttpResp) -> String {
    assert_eq!(resp.status, 200, "body: {}", resp.body);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    let events = resp.sse_events();
    assert_eq!(events.len(), 1, "only the priming event: {}", resp.body);
    let priming = &events[0];
    assert_eq!(priming.retry, Some(100));
    assert_eq!(priming.data.as_deref(), Some(""));
    let id = priming.id.clone().expect("priming event id");
    let (stream, n) = id.rsplit_once('-').expect("<stream>-<n>");
    assert!(!stream.is_empty());
    assert_eq!(n, "0");
    id
}

/// `GET /mcp` resuming after `last` (read to the end of the body).
fn resume(fx: &HttpFixture, sid: &str, last: &str) -> common::HttpResp {
    fx.request(
        "GET",
        &[
            ("Mcp-Session-Id", sid),
            ("Accept", "text/event-stream"),
            ("Last-Event-ID", last),
        ],
        None,
    )
}

#[test]
fn sse_polling_slow_is_primed_then_resumed_with_last_event_id() {
    let fx = HttpFixture::spawn(&["--era", "legacy", "--sse-polling"]);
    let sid = legacy_session(&fx);
    let session = [
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let call = rpc(
        json!("s-7"),
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 200}}),
    );
    let resp = fx.post(&session, &call);
    let primed = priming_id(&resp);
    let stream = primed.rsplit_once('-').unwrap().0.to_owned();

    // The resumption waits for the tool, sends the response as event 1 and ends.
    let resumed = resume(&fx, &sid, &primed);
    assert_eq!(resumed.status, 200, "body: {}", resumed.body);
    assert_eq!(resumed.header("content-type"), Some("text/event-stream"));
    let events = resumed.sse_events();
    assert_eq!(events.len(), 1, "{}", resumed.body);
    assert_eq!(
        events[0].id.as_deref(),
        Some(format!("{stream}-1").as_str())
    );
    let answer = events[0].json();
    assert_eq!(answer["id"], "s-7");
    assert_eq!(answer["result"]["content"][0]["text"], "slept");

    // Resuming again from the priming id replays it; from the response's id, nothing is left.
    assert_eq!(resume(&fx, &sid, &primed).sse_events(), events);
    let after = resume(&fx, &sid, &format!("{stream}-1"));
    assert_eq!(after.status, 200);
    assert_eq!(after.sse_events(), vec![]);

    // Unknown ids, ids never sent, and another session's stream are 400.
    for bad in [
        "nope",
        "nope-0",
        &format!("{stream}-2"),
        &format!("{stream}-x"),
    ] {
        assert_eq!(resume(&fx, &sid, bad).status, 400, "{bad}");
    }
    let other = legacy_session(&fx);
    assert_eq!(resume(&fx, &other, &primed).status, 400);

    // Without Last-Event-ID a GET is still the session's stream for unsolicited notifications.
    let mut get = fx.open(
        "GET",
        &[
            ("Mcp-Session-Id", sid.as_str()),
            ("Accept", "text/event-stream"),
        ],
        None,
    );
    assert_eq!(get.status, 200);
    let add = fx.post(
        &session,
        &rpc(json!(3), "tools/call", json!({"name": "add_tool"})),
    );
    assert_eq!(add.header("content-type"), Some("application/json"));
    assert_eq!(
        get.next_json()["method"],
        "notifications/tools/list_changed"
    );

    // Other tools are answered on the POST as usual.
    let echo = fx.post(
        &session,
        &rpc(
            json!(4),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        ),
    );
    assert_eq!(echo.json()["result"]["content"][0]["text"], "hi");

    // DELETE forgets the session's streams.
    assert_eq!(fx.request("DELETE", &session, None).status, 200);
    assert_eq!(resume(&fx, &sid, &primed).status, 404);
}

#[test]
fn sse_polling_progress_is_buffered_until_resumed() {
    let fx = HttpFixture::spawn(&["--era", "dual", "--sse-polling"]);
    let sid = legacy_session(&fx);
    let session = [("Mcp-Session-Id", sid.as_str())];
    let call = rpc(
        json!(9),
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 2, "delay_ms": 20},
               "_meta": {"progressToken": "tok"}}),
    );
    let primed = priming_id(&fx.post(&session, &call));
    let stream = primed.rsplit_once('-').unwrap().0.to_owned();

    let resumed = resume(&fx, &sid, &primed);
    assert_eq!(resumed.status, 200, "body: {}", resumed.body);
    let events = resumed.sse_events();
    let ids: Vec<String> = events.iter().map(|e| e.id.clone().unwrap()).collect();
    assert_eq!(
        ids,
        [1, 2, 3].map(|n| format!("{stream}-{n}")),
        "{}",
        resumed.body
    );
    for (i, event) in events[..2].iter().enumerate() {
        assert_eq!(
            event.json(),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "tok", "progress": i + 1, "total": 2}})
        );
    }
    let answer = events[2].json();
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["result"]["content"][0]["text"], "done");

    // Resuming after the first progress event replays only the rest.
    let rest = resume(&fx, &sid, &format!("{stream}-1")).sse_events();
    assert_eq!(rest, events[1..]);
}

#[test]
fn without_sse_polling_the_post_carries_the_result() {
    let fx = HttpFixture::spawn(&["--era", "legacy"]);
    let sid = legacy_session(&fx);
    let session = [("Mcp-Session-Id", sid.as_str())];
    let slow = fx.post(
        &session,
        &rpc(
            json!(2),
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 50}}),
        ),
    );
    assert_eq!(slow.status, 200);
    assert_eq!(slow.header("content-type"), Some("application/json"));
    assert_eq!(slow.json()["result"]["content"][0]["text"], "slept");

    let progress = fx.post(
        &session,
        &rpc(
            json!(3),
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 2, "delay_ms": 10},
                   "_meta": {"progressToken": 1}}),
        ),
    );
    assert_eq!(progress.header("content-type"), Some("text/event-stream"));
    let events = progress.sse_events();
    assert_eq!(events.len(), 3, "{}", progress.body);
    assert!(events.iter().all(|e| e.id.is_none() && e.retry.is_none()));
    assert_eq!(events[2].json()["id"], 3);
    assert_eq!(events[2].json()["result"]["content"][0]["text"], "done");

    // Last-Event-ID means nothing here: the GET is the session's stream.
    let mut get = fx.open(
        "GET",
        &[
            ("Mcp-Session-Id", sid.as_str()),
            ("Accept", "text/event-stream"),
            ("Last-Event-ID", "whatever-0"),
        ],
        None,
    );
    assert_eq!(get.status, 200);
    assert!(get.idle_for(Duration::from_millis(200)), "stays open");
}
