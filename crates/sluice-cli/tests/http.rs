//! sluice over Streamable HTTP: both eras on one endpoint, the guards, the
//! session lifecycle, health, and HTTP upstreams of both eras.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

fn config(extra_server: &str, upstreams: &str) -> String {
    format!("[server]\nrequest_timeout = \"2s\"\n{extra_server}\n{upstreams}")
}

async fn body(resp: reqwest::Response) -> Value {
    messages(resp).await.pop().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn modern_requests_are_stateless_and_carry_modern_fields() {
    let s = HttpSluice::start(&config("", &fixture_upstream("fx", &["--era", "legacy"]))).await;
    let resp = s.modern(1, "tools/list", json!({})).await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers().get("mcp-session-id").is_none(),
        "no session in 2026-07-28"
    );
    assert_eq!(resp.headers()["content-type"], "application/json");
    let r = body(resp).await;
    assert_eq!(r["result"]["resultType"], json!("complete"));
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 16);
    let r = s.call(2, "fx__echo", json!({"text": "hi"})).await;
    assert_eq!(first_text(&r), "hi");
    assert_eq!(r["result"]["resultType"], json!("complete"));
    // An unknown method is 404 with -32601 in 2026-07-28.
    let resp = s.modern(3, "no/such", json!({})).await;
    assert_eq!(resp.status(), 404);
    assert_eq!(body(resp).await["error"]["code"], json!(-32601));
    // No GET stream without a session.
    let resp = s
        .client
        .get(&s.url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_switches_the_answer_to_sse() {
    let s = HttpSluice::start(&config("", &fixture_upstream("fx", &[]))).await;
    let resp = s
        .modern(
            1,
            "tools/call",
            json!({"name": "fx__progress", "arguments": {"steps": 2, "delay_ms": 10}}),
        )
        .await;
    // Without a progress token nothing precedes the result: plain JSON.
    assert_eq!(resp.headers()["content-type"], "application/json");
    let params = json!({"name": "fx__progress", "arguments": {"steps": 2, "delay_ms": 10},
        "_meta": {"progressToken": 77}});
    let resp = s.modern(2, "tools/call", params).await;
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let all = messages(resp).await;
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all[0]["params"]["progressToken"], json!(77));
    assert_eq!(all[1]["params"]["progress"], json!(2));
    assert_eq!(first_text(&all[2]), "done");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_guards_refuse_before_dispatch() {
    let s = HttpSluice::start(&config("", &fixture_upstream("fx", &[]))).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta(json!({}))}});
    let modern_headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];

    let mut h = modern_headers.to_vec();
    h.push(("origin", "http://evil.example.com"));
    assert_eq!(s.post(&list, &h).await.status(), 403);
    let resp = s
        .client
        .post(&s.url)
        .header("host", "evil.example.com")
        .body(list.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let mut h = modern_headers.to_vec();
    h.push(("origin", "http://localhost:6274"));
    assert_eq!(s.post(&list, &h).await.status(), 200);

    // Headers must mirror the body.
    let resp = s.post(&list, &[("mcp-method", "tools/list")]).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(body(resp).await["error"]["code"], json!(-32020));
    let resp = s
        .post(
            &list,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "prompts/list"),
            ],
        )
        .await;
    assert_eq!(resp.status(), 400);
    assert_eq!(body(resp).await["error"]["code"], json!(-32020));
    // Unsupported version (header and body agree): -32022 with the
    // supported list.
    let mut old = list.clone();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let future_headers: Vec<(&str, &str)> = modern_headers
        .iter()
        .map(|(k, v)| {
            if *k == "mcp-protocol-version" {
                (*k, "2099-01-01")
            } else {
                (*k, *v)
            }
        })
        .collect();
    let resp = s.post(&old, &future_headers).await;
    assert_eq!(resp.status(), 400);
    let e = body(resp).await;
    assert_eq!(e["error"]["code"], json!(-32022));
    // A header that contradicts the body is a mismatch first.
    let resp = s.post(&old, &modern_headers).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(body(resp).await["error"]["code"], json!(-32020));
    let resp = s.post(&old, &future_headers).await;
    assert_eq!(resp.status(), 400);
    let e = body(resp).await;
    assert_eq!(e["error"]["code"], json!(-32022));
    assert_eq!(e["error"]["data"]["supported"][0], json!("2026-07-28"));
    // Missing client capabilities: -32602.
    let mut no_caps = list.clone();
    no_caps["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let resp = s.post(&no_caps, &modern_headers).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(body(resp).await["error"]["code"], json!(-32602));
    // Not JSON, and batches.
    let resp = s
        .client
        .post(&s.url)
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(body(resp).await["error"]["code"], json!(-32700));
    let resp = s.post(&json!([list]), &[]).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(body(resp).await["error"]["code"], json!(-32600));
    // /health needs no auth, but a foreign Host is still refused.
    let resp = s
        .client
        .get(format!("{}/health", s.base))
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    // A notification for an ended session is 404, like a request.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        s.post(&note, &[("mcp-session-id", "gone")]).await.status(),
        404
    );
    // Legacy traffic without a session.
    let legacy = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(s.post(&legacy, &[]).await.status(), 400);
    assert_eq!(
        s.post(&legacy, &[("mcp-session-id", "not-a-session")])
            .await
            .status(),
        404
    );
}

async fn initialize(s: &HttpSluice, caps: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t", "version": "0"}}});
    let resp = s.post(&init, &[]).await;
    assert_eq!(resp.status(), 200);
    let session = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let r = body(resp).await;
    assert_eq!(r["result"]["protocolVersion"], json!("2025-11-25"));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = s
        .post(
            &note,
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        )
        .await;
    assert_eq!(resp.status(), 202);
    session
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_session_lives_from_initialize_to_delete() {
    let s = HttpSluice::start(&config("", &fixture_upstream("fx", &["--era", "modern"]))).await;
    let session = initialize(&s, json!({})).await;
    let h = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let r = body(
        s.post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            &h,
        )
        .await,
    )
    .await;
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 16);
    assert!(
        r["result"].get("resultType").is_none(),
        "legacy results carry no resultType"
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fx__echo", "arguments": {"text": "s"}}});
    assert_eq!(first_text(&body(s.post(&call, &h).await).await), "s");
    // An unsupported legacy version header is 400.
    let resp = s
        .post(
            &call,
            &[
                ("mcp-session-id", session.as_str()),
                ("mcp-protocol-version", "1999-01-01"),
            ],
        )
        .await;
    assert_eq!(resp.status(), 400);
    // The GET stream opens.
    let get = s.open_stream(&session, &[]).await;
    assert_eq!(get.status(), 200);
    drop(get);
    // DELETE ends it; then the id is unknown.
    let del = s
        .client
        .delete(&s.url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 200);
    assert_eq!(s.post(&call, &h).await.status(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_sessions_expire() {
    let s = HttpSluice::start(&config(
        "session_idle_timeout = \"1s\"",
        &fixture_upstream("fx", &[]),
    ))
    .await;
    let session = initialize(&s, json!({})).await;
    let h = [("mcp-session-id", session.as_str())];
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(s.post(&ping, &h).await.status(), 200);
    let mut expired = false;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        if s.post(&json!({"jsonrpc": "2.0", "method": "notifications/x"}), &[])
            .await
            .status()
            == 202
            && s.client
                .delete(&s.url)
                .header("mcp-session-id", &session)
                .send()
                .await
                .unwrap()
                .status()
                == 404
        {
            expired = true;
            break;
        }
    }
    assert!(expired, "an idle session must be closed");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_changed_reaches_the_legacy_get_stream() {
    let s = HttpSluice::start(&config("", &fixture_upstream("fx", &["--era", "legacy"]))).await;
    let session = initialize(&s, json!({})).await;
    let h = [("mcp-session-id", session.as_str())];
    let _ = s
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            &h,
        )
        .await;
    let get = s.open_stream(&session, &[]).await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fx__add_tool", "arguments": {}}});
    assert!(body(s.post(&call, &h).await).await.get("result").is_some());
    let mut stream = get.bytes_stream();
    use futures::StreamExt;
    let mut seen = String::new();
    tokio::time::timeout(WAIT, async {
        while let Some(chunk) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if seen.contains("notifications/tools/list_changed") {
                return;
            }
        }
    })
    .await
    .expect("list_changed on the GET stream");
}

#[tokio::test(flavor = "multi_thread")]
async fn health_shows_the_version_and_each_upstream() {
    let config = config(
        "",
        &format!(
            "{}{}",
            fixture_upstream("ok", &[]),
            fixture_upstream("dead", &["--start", "crash"])
        ),
    );
    let s = HttpSluice::start(&config).await;
    let h = s
        .wait_health(|h| {
            // Ready comes with the handshake, the catalog after its read.
            h["upstreams"]["ok"]["state"] == json!("ready")
                && h["upstreams"]["ok"]["catalog"] == json!("complete")
                && h["upstreams"]["dead"]["last_error"].is_string()
        })
        .await;
    assert_eq!(h["version"], json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(h["status"], json!("degraded"));
    assert_eq!(h["upstreams"]["ok"]["tools"], json!(16));
    assert_eq!(h["upstreams"]["ok"]["catalog"], json!("complete"));
    assert!(matches!(
        h["upstreams"]["dead"]["state"].as_str(),
        Some("failed" | "restarting" | "starting")
    ));
    // Nothing about how upstreams are reached.
    assert!(!h.to_string().contains("sluice-fixture"), "{h}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_upstreams_of_both_eras() {
    let mut modern = http_fixture(&["--era", "modern"]).await;
    let mut legacy = http_fixture(&["--era", "legacy"]).await;
    let upstreams = format!(
        "[[upstream]]\nname = \"hm\"\nurl = \"{}\"\nallow_private = true\nheaders = {{ X-Test = \"1\" }}\n[[upstream]]\nname = \"hl\"\nurl = \"{}\"\nallow_private = true\n",
        modern.1, legacy.1
    );
    let s = HttpSluice::start(&config("", &upstreams)).await;
    let h = s
        .wait_health(|h| {
            h["upstreams"]["hm"]["state"] == json!("ready")
                && h["upstreams"]["hl"]["state"] == json!("ready")
        })
        .await;
    assert_eq!(h["upstreams"]["hm"]["era"], json!("modern"));
    assert_eq!(h["upstreams"]["hl"]["era"], json!("legacy"));
    for up in ["hm", "hl"] {
        let r = s.call(1, format!("{up}__echo"), json!({"text": up})).await;
        assert_eq!(first_text(&r), up);
    }
    // Progress from an HTTP upstream's SSE answer reaches the client.
    let params = json!({"name": "hl__progress", "arguments": {"steps": 2, "delay_ms": 5},
        "_meta": {"progressToken": "p"}});
    let resp = s.modern(2, "tools/call", params).await;
    let all = messages(resp).await;
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all[0]["params"]["progressToken"], json!("p"));
    // A hung HTTP upstream times out.
    let r = s.call(3, "hm__hang", json!({})).await;
    assert_eq!(r["error"]["code"], json!(-32003));
    modern.0.kill().await.unwrap();
    legacy.0.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn modern_clients_hear_of_catalog_changes_through_subscriptions_listen() {
    let s = HttpSluice::start(&config("", &fixture_upstream("leg", &["--era", "legacy"]))).await;
    let _ = body(s.modern(1, "tools/list", json!({})).await).await;
    let listen = json!({"jsonrpc": "2.0", "id": 42, "method": "subscriptions/listen", "params": {
        "_meta": modern_meta(json!({})),
        "notifications": {"toolsListChanged": true, "resourcesListChanged": false}}});
    let resp = s
        .post(
            &listen,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "subscriptions/listen"),
            ],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let mut events = SseReader::new(resp);
    let ack = events.next().await;
    assert_eq!(
        ack["method"],
        json!("notifications/subscriptions/acknowledged")
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(42)
    );
    let r = s.call(2, "leg__add_tool", json!({})).await;
    assert!(r.get("result").is_some(), "{r}");
    let note = events.next().await;
    assert_eq!(note["method"], json!("notifications/tools/list_changed"));
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(42)
    );
    let tools = body(s.modern(3, "tools/list", json!({})).await).await;
    assert!(names(&tools, "tools").contains(&"leg__added_0".to_owned()));
}

#[tokio::test(flavor = "multi_thread")]
async fn catalog_changes_of_modern_upstreams_arrive_through_their_listen_stream() {
    let mut http_fixture = http_fixture(&["--era", "modern"]).await;
    let upstreams = format!(
        "{}[[upstream]]\nname = \"mh\"\nurl = \"{}\"\nallow_private = true\n",
        fixture_upstream("ms", &["--era", "modern"]),
        http_fixture.1
    );
    let s = HttpSluice::start(&config("", &upstreams)).await;
    for (i, up) in ["ms", "mh"].into_iter().enumerate() {
        let id = 10 * (i as i64 + 1);
        let tool = format!("{up}__added_0");
        let r = s.call(id, format!("{up}__add_tool"), json!({})).await;
        assert!(r.get("result").is_some(), "{r}");
        let mut seen = false;
        for n in 1..=100 {
            let tools = body(s.modern(id + n, "tools/list", json!({})).await).await;
            if names(&tools, "tools").contains(&tool) {
                seen = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            seen,
            "{tool} never appeared: sluice did not hear {up}'s list_changed"
        );
    }
    http_fixture.0.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_is_relayed_on_the_legacy_call_stream_and_answered_by_post() {
    let s = HttpSluice::start(&config("", &fixture_upstream("leg", &["--era", "legacy"]))).await;
    let session = initialize(&s, json!({"sampling": {}})).await;
    let h = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "leg__sample", "arguments": {"prompt": "over http?"}}});
    let resp = s.post(&call, &h).await;
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut events = SseReader::new(resp);
    let request = events.next().await;
    assert_eq!(
        request["method"],
        json!("sampling/createMessage"),
        "{request}"
    );
    assert_eq!(
        request["params"]["messages"][0]["content"]["text"],
        json!("over http?")
    );
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "yes, over http"}, "model": "m", "stopReason": "endTurn"}});
    assert_eq!(s.post(&answer, &h).await.status(), 202);
    let fin = events.next().await;
    assert_eq!(fin["id"], json!(5));
    assert!(first_text(&fin).contains("yes, over http"), "{fin}");
}

#[tokio::test(flavor = "multi_thread")]
async fn unanswered_mrtr_rounds_do_not_make_a_healthy_upstream_look_hung() {
    let s = HttpSluice::start(&format!(
        "[server]\nrequest_timeout = \"1s\"\n{}",
        fixture_upstream("leg", &["--era", "legacy"])
    ))
    .await;
    for id in 1..=4 {
        let mut params = json!({"name": "leg__sample", "arguments": {"prompt": "never answered"}});
        params["_meta"] = modern_meta(json!({"sampling": {}}));
        let resp = s
            .post(
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "leg__sample"),
                ],
            )
            .await;
        assert_eq!(
            body(resp).await["result"]["resultType"],
            json!("input_required")
        );
    }
    // Every parked call times out upstream; none of it is a hang.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let h = s.health().await;
    assert_eq!(h["upstreams"]["leg"]["restarts"], json!(0), "{h}");
    let r = s.call(9, "leg__echo", json!({"text": "ok"})).await;
    assert_eq!(first_text(&r), "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn param_headers_are_checked_coming_in_and_computed_going_out() {
    let mut upstream = http_fixture(&["--era", "modern"]).await;
    let s = HttpSluice::start(&config(
        "",
        &format!(
            "[[upstream]]\nname = \"mh\"\nurl = \"{}\"\nallow_private = true\n",
            upstream.1
        ),
    ))
    .await;
    s.wait_health(|h| h["upstreams"]["mh"]["state"] == json!("ready"))
        .await;
    let call = |region: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "mh__header_echo", "arguments": {"region": region, "count": 3},
            "_meta": modern_meta(json!({}))}})
    };
    let base = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "mh__header_echo"),
    ];

    // A modern client that mirrors its arguments: sluice checks, recomputes
    // for the upstream, and forwards the header it does not know.
    let mut h = base.to_vec();
    h.extend([
        ("mcp-param-region", "=?base64?IGV1IHdlc3Q=?="),
        ("mcp-param-count", "3"),
        ("mcp-param-extra", "1"),
    ]);
    let r = body(s.post(&call(" eu west"), &h).await).await;
    assert_eq!(
        first_text(&r),
        "region= eu west count=3 params=mcp-param-count,mcp-param-extra,mcp-param-region",
        "{r}"
    );
    // The same in a request large enough that its arguments stay text
    // (`sluice_core::carried`): read from it, both ways.
    let mut large = call(" eu west");
    large["params"]["arguments"]["note"] = json!("n".repeat(300_000));
    let r = body(s.post(&large, &h).await).await;
    assert_eq!(
        first_text(&r),
        "region= eu west count=3 params=mcp-param-count,mcp-param-extra,mcp-param-region",
        "{}",
        &r.to_string()[..300]
    );
    h[3] = ("mcp-param-region", "eu");
    let resp = s.post(&large, &h).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(body(resp).await["error"]["code"], json!(-32020));
    // Missing or different: refused by sluice itself, before the upstream.
    let mut h = base.to_vec();
    h.push(("mcp-param-count", "3"));
    let resp = s.post(&call("eu"), &h).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(body(resp).await["error"]["code"], json!(-32020));
    let mut h = base.to_vec();
    h.extend([("mcp-param-region", "us"), ("mcp-param-count", "3")]);
    let resp = s.post(&call("eu"), &h).await;
    assert_eq!(resp.status(), 400);

    // A legacy client sends no such headers; sluice computes them.
    let session = initialize(&s, json!({})).await;
    let legacy = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mh__header_echo", "arguments": {"region": "eu", "count": 7}}});
    let r = body(
        s.post(&legacy, &[("mcp-session-id", session.as_str())])
            .await,
    )
    .await;
    assert_eq!(
        first_text(&r),
        "region=eu count=7 params=mcp-param-count,mcp-param-region",
        "{r}"
    );
    upstream.0.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_subscriptions_are_shared_counted_released_and_renewed() {
    let s = HttpSluice::start(&config(
        "",
        &fixture_upstream("fx", &["--era", "legacy", "--resources", "3"]),
    ))
    .await;
    let a = initialize(&s, json!({})).await;
    let b = initialize(&s, json!({})).await;
    let rpc = |id: i64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let upstream_view = async |session: &str| -> Value {
        let r = body(
            s.post(
                &rpc(
                    90,
                    "resources/read",
                    json!({"uri": "fixture://subscriptions"}),
                ),
                &[("mcp-session-id", session)],
            )
            .await,
        )
        .await;
        serde_json::from_str(r["result"]["contents"][0]["text"].as_str().unwrap()).unwrap()
    };
    let uri = json!({"uri": "fixture://res/0001"});
    for session in [&a, &b] {
        let r = body(
            s.post(
                &rpc(1, "resources/subscribe", uri.clone()),
                &[("mcp-session-id", session.as_str())],
            )
            .await,
        )
        .await;
        assert_eq!(r["result"], json!({}), "{r}");
    }
    let view = upstream_view(&a).await;
    assert_eq!(view["subscribed"], json!(["fixture://res/0001"]));
    assert_eq!(
        view["subscribe_calls"],
        json!(1),
        "one upstream subscription for two sessions"
    );

    // An update reaches a subscribed session's GET stream.
    let get = s.open_stream(&b, &[]).await;
    let mut b_events = SseReader::new(get);
    let r = body(
        s.post(
            &rpc(2, "resources/read", json!({"uri": "fixture://touch/0001"})),
            &[("mcp-session-id", a.as_str())],
        )
        .await,
    )
    .await;
    assert_eq!(r["result"]["contents"][0]["text"], json!("touched"));
    let note = b_events.next().await;
    assert_eq!(note["method"], json!("notifications/resources/updated"));
    assert_eq!(note["params"]["uri"], json!("fixture://res/0001"));

    // A lets go: B still holds it upstream. B's session ends: released.
    let _ = body(
        s.post(
            &rpc(3, "resources/unsubscribe", uri.clone()),
            &[("mcp-session-id", a.as_str())],
        )
        .await,
    )
    .await;
    assert_eq!(upstream_view(&a).await["unsubscribe_calls"], json!(0));
    let del = s
        .client
        .delete(&s.url)
        .header("mcp-session-id", &b)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 200);
    // The upstream unsubscribe goes out on its own task (a slow upstream
    // must not hold the DELETE): wait for it, bounded.
    let mut view = upstream_view(&a).await;
    for _ in 0..100 {
        if view["unsubscribe_calls"] != json!(0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        view = upstream_view(&a).await;
    }
    assert_eq!(view["subscribed"], json!([]), "{view}");
    assert_eq!(view["unsubscribe_calls"], json!(1));

    // A subscription held across an upstream restart is renewed.
    let uri2 = json!({"uri": "fixture://res/0002"});
    let _ = body(
        s.post(
            &rpc(4, "resources/subscribe", uri2),
            &[("mcp-session-id", a.as_str())],
        )
        .await,
    )
    .await;
    let r = body(
        s.post(
            &rpc(
                5,
                "tools/call",
                json!({"name": "fx__crash", "arguments": {}}),
            ),
            &[("mcp-session-id", a.as_str())],
        )
        .await,
    )
    .await;
    assert_eq!(r["error"]["code"], json!(-32004));
    s.wait_health(|h| {
        h["upstreams"]["fx"]["state"] == json!("ready")
            && h["upstreams"]["fx"]["restarts"] == json!(1)
    })
    .await;
    // Renewed on its own task once the upstream is back: poll (bounded).
    let mut view = Value::Null;
    for _ in 0..100 {
        view = upstream_view(&a).await;
        if view["subscribed"] == json!(["fixture://res/0002"]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(view["subscribed"], json!(["fixture://res/0002"]), "{view}");
    // Without a session there is nothing to hold a subscription, and no way
    // to undo another client's.
    let r = body(
        s.modern(
            6,
            "resources/unsubscribe",
            json!({"uri": "fixture://res/0002"}),
        )
        .await,
    )
    .await;
    assert_eq!(r["error"]["code"], json!(-32601), "{r}");
    assert_eq!(
        upstream_view(&a).await["subscribed"],
        json!(["fixture://res/0002"])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_polling_legacy_upstream_is_resumed_with_last_event_id() {
    let mut upstream = http_fixture(&["--era", "legacy", "--sse-polling"]).await;
    let s = HttpSluice::start(&config(
        "",
        &format!(
            "[[upstream]]\nname = \"pl\"\nurl = \"{}\"\nallow_private = true\n",
            upstream.1
        ),
    ))
    .await;
    s.wait_health(|h| h["upstreams"]["pl"]["state"] == json!("ready"))
        .await;
    // The upstream closes the answer's stream after a priming event; sluice
    // resumes it and the client sees one plain answer.
    let r = s.call(1, "pl__slow", json!({"ms": 200})).await;
    assert_eq!(first_text(&r), "slept", "{r}");
    // Progress sent while the stream was closed arrives after the resume.
    let params = json!({"name": "pl__progress", "arguments": {"steps": 2, "delay_ms": 20},
        "_meta": {"progressToken": "poll"}});
    let all = messages(s.modern(2, "tools/call", params).await).await;
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all[0]["params"]["progressToken"], json!("poll"));
    assert_eq!(first_text(&all[2]), "done");
    upstream.0.kill().await.unwrap();
}
