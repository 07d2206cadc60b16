//! sluice over stdio, against fixture upstreams that paginate, crash, hang,
//! write garbage, report progress and ask for sampling.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::*;
use serde_json::{Value, json};

fn two_upstreams() -> String {
    format!(
        "[server]\nrequest_timeout = \"2s\"\n{}{}",
        fixture_upstream(
            "fx",
            &["--tools", "25", "--page-size", "7", "--resources", "12"]
        ),
        fixture_upstream(
            "leg",
            &["--era", "legacy", "--tools", "3", "--page-size", "2"]
        ),
    )
}

fn expected_tools(upstream: &str, generated: usize) -> BTreeSet<String> {
    FIXED_TOOLS
        .iter()
        .map(|t| format!("{upstream}__{t}"))
        .chain((0..generated).map(|i| format!("{upstream}__gen_{i:04}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_page_of_every_upstream_is_served_once_and_calls_route_back() {
    let mut s = StdioSluice::start(&two_upstreams()).await;
    s.initialize(json!({})).await;

    let tools = s.request(1, "tools/list", json!({})).await;
    let got: Vec<String> = names(&tools, "tools");
    let unique: BTreeSet<String> = got.iter().cloned().collect();
    assert_eq!(got.len(), unique.len(), "no tool twice");
    let mut want = expected_tools("fx", 25);
    want.extend(expected_tools("leg", 3));
    assert_eq!(unique, want);
    assert!(tools["result"].get("nextCursor").is_none());

    let resources = s.request(2, "resources/list", json!({})).await;
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    let want: Vec<String> = (0..12).map(|i| format!("fixture://res/{i:04}")).collect();
    assert_eq!(uris, want);

    let prompts = s.request(3, "prompts/list", json!({})).await;
    assert_eq!(
        names(&prompts, "prompts"),
        [
            "fx__greet",
            "fx__big_prompt",
            "leg__greet",
            "leg__big_prompt"
        ]
    );

    // Calls reach the right upstream under the original name.
    let r = s.call(4, "fx__echo", json!({"text": "to fx"})).await;
    assert_eq!(first_text(&r), "to fx");
    let r = s.call(5, "leg__gen_0002", json!({})).await;
    assert!(r.get("result").is_some(), "{r}");
    let r = s
        .request(
            6,
            "prompts/get",
            json!({"name": "leg__greet", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert!(
        r["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Ada"),
        "{r}"
    );
    let r = s
        .request(7, "resources/read", json!({"uri": "fixture://res/0011"}))
        .await;
    assert_eq!(r["result"]["contents"][0]["text"], json!("resource 0011"));
    // A URI no list names is routed by the first matching template.
    let r = s
        .request(8, "resources/read", json!({"uri": "fixture://item/abc"}))
        .await;
    assert_eq!(r["result"]["contents"][0]["text"], json!("item abc"));

    // Unknown names are -32602, and name the tool.
    let r = s.call(9, "nope__echo", json!({})).await;
    assert_eq!(r["error"]["code"], json!(-32602));
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nope__echo")
    );
    let r = s.request(10, "no/such/method", json!({})).await;
    assert_eq!(r["error"]["code"], json!(-32601));

    assert!(s.finish().await.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn results_and_definitions_pass_through_losslessly() {
    let mut s = StdioSluice::start(&fixture_upstream("fx", &["--era", "legacy"])).await;
    s.initialize(json!({})).await;
    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fx__lossless", "arguments": {}}}))
        .await;
    let line = loop {
        let line = s.recv_line().await;
        if line.contains("\"id\":1") {
            break line;
        }
    };
    // Key order, unknown fields and content types, big integers, number
    // spellings and _meta arrive as the upstream wrote them. serde_json
    // spells an exponent's sign out (1e400 -> 1e+400): same number.
    let upstream = r#"{"content":[{"type":"text","text":"kept","x-extra":1},{"type":"hologram","frames":[1,2,3]}],"structuredContent":{"big":123456789012345678901234567890,"exp":1e400,"float":1.50,"neg":-0},"x-vendor":{"nested":[true,null]},"_meta":{"x.example/trace":"abc"},"isError":false}"#;
    let expected = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
        upstream.replace("1e400", "1e+400")
    );
    assert_eq!(line, expected);

    let tools = s.request(2, "tools/list", json!({})).await;
    let lossless = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == json!("fx__lossless"))
        .unwrap()
        .clone();
    assert_eq!(lossless["execution"], json!({"taskSupport": "optional"}));
    assert_eq!(lossless["x-future"], json!({"a": 1}));
    assert_eq!(lossless["annotations"]["x-hint"], json!(true));
    assert_eq!(lossless["_meta"], json!({"x.example/tool": "lossless"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn modern_clients_get_modern_results_from_a_legacy_upstream() {
    let mut s = StdioSluice::start(&fixture_upstream("leg", &["--era", "legacy"])).await;
    let meta = modern_meta(json!({}));
    let d = s
        .request(1, "server/discover", json!({"_meta": meta}))
        .await;
    let r = &d["result"];
    assert_eq!(r["resultType"], json!("complete"));
    assert_eq!(
        r["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18"])
    );
    assert!(r["ttlMs"].is_u64() && r["cacheScope"].is_string());
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        json!("sluice")
    );
    let list = s.request(2, "tools/list", json!({"_meta": meta})).await;
    assert_eq!(list["result"]["resultType"], json!("complete"));
    assert_eq!(list["result"]["ttlMs"], json!(0));
    assert_eq!(list["result"]["cacheScope"], json!("public"));
    let call = s.call_modern(3, "leg__echo", json!({"text": "x"})).await;
    assert_eq!(call["result"]["resultType"], json!("complete"));
    assert_eq!(first_text(&call), "x");
    let read = s
        .request(
            4,
            "resources/read",
            json!({"uri": "fixture://nope", "_meta": meta}),
        )
        .await;
    assert_eq!(
        read["error"]["code"],
        json!(-32602),
        "-32002 becomes -32602 for modern clients: {read}"
    );
    // Unsupported version and missing capabilities.
    let mut bad = meta.clone();
    bad["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = s.request(5, "tools/list", json!({"_meta": bad})).await;
    assert_eq!(r["error"]["code"], json!(-32022));
    assert_eq!(r["error"]["data"]["requested"], json!("2099-01-01"));
    let mut bad = meta.clone();
    bad.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let r = s.request(6, "tools/list", json!({"_meta": bad})).await;
    assert_eq!(r["error"]["code"], json!(-32602));
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_clients_get_no_modern_fields_from_a_modern_upstream() {
    let mut s = StdioSluice::start(&fixture_upstream("mod", &["--era", "modern"])).await;
    s.initialize(json!({})).await;
    let list = s.request(1, "tools/list", json!({})).await;
    assert!(list["result"].get("resultType").is_none());
    assert!(list["result"].get("ttlMs").is_none());
    let call = s.call(2, "mod__echo", json!({"text": "y"})).await;
    assert_eq!(
        call["result"],
        json!({"content": [{"type": "text", "text": "y"}]})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_call_fails_that_call_and_the_upstream_comes_back() {
    let mut s = StdioSluice::start(&two_upstreams()).await;
    s.initialize(json!({})).await;
    let r = s.call(1, "fx__crash", json!({})).await;
    assert_eq!(r["error"]["code"], json!(-32004), "{r}");
    assert_eq!(r["error"]["data"], json!({"upstream": "fx"}));
    assert!(r["error"]["message"].as_str().unwrap().contains("\"fx\""));
    // The other upstream never noticed.
    let r = s.call(2, "leg__echo", json!({"text": "still here"})).await;
    assert_eq!(first_text(&r), "still here");
    // The crashed one is restarted with backoff and serves again.
    let mut id = 100;
    loop {
        id += 1;
        let r = s.call(id, "fx__echo", json!({"text": "back"})).await;
        if first_text(&r) == "back" {
            break;
        }
        assert_eq!(
            r["error"]["code"],
            json!(-32001),
            "only 'unavailable' while restarting: {r}"
        );
        assert!(id < 200, "fx did not come back");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hung_call_times_out_while_the_rest_keeps_serving() {
    let mut s = StdioSluice::start(&two_upstreams()).await;
    s.initialize(json!({})).await;
    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fx__hang", "arguments": {}}}))
        .await;
    // Answered while the hang is pending, on both upstreams.
    let r = s.call(2, "fx__echo", json!({"text": "fx"})).await;
    assert_eq!(first_text(&r), "fx");
    let r = s.call(3, "leg__echo", json!({"text": "leg"})).await;
    assert_eq!(first_text(&r), "leg");
    assert!(
        s.seen.iter().all(|m| !is_response(m, 1)),
        "the hang is not answered early"
    );
    let r = s.response(1).await;
    assert_eq!(r["error"]["code"], json!(-32003), "{r}");
    assert_eq!(r["error"]["data"], json!({"upstream": "fx"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_on_stdout_is_skipped() {
    let mut s = StdioSluice::start(&fixture_upstream("fx", &["--start", "garbage"])).await;
    s.initialize(json!({})).await;
    let r = s.call(1, "fx__garbage", json!({})).await;
    assert_eq!(first_text(&r), "after garbage");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_that_cannot_start_does_not_stop_the_others() {
    let config = format!(
        "{}{}",
        fixture_upstream("dead", &["--start", "crash"]),
        fixture_upstream("ok", &[])
    );
    let mut s = StdioSluice::start(&config).await;
    s.initialize(json!({})).await;
    let tools = s.request(1, "tools/list", json!({})).await;
    let got: BTreeSet<String> = names(&tools, "tools").into_iter().collect();
    assert_eq!(got, expected_tools("ok", 0));
    let r = s.call(2, "ok__echo", json!({"text": "fine"})).await;
    assert_eq!(first_text(&r), "fine");
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_reaches_the_client_with_its_own_token() {
    let mut s = StdioSluice::start(&fixture_upstream("fx", &[])).await;
    s.initialize(json!({})).await;
    let r = s
        .request(
            1,
            "tools/call",
            json!({"name": "fx__progress", "arguments": {"steps": 3, "delay_ms": 10}, "_meta": {"progressToken": "tok-1"}}),
        )
        .await;
    assert_eq!(first_text(&r), "done");
    let progress: Vec<&Value> = s
        .seen
        .iter()
        .filter(|m| m["method"] == json!("notifications/progress"))
        .collect();
    assert_eq!(progress.len(), 3, "{:?}", s.seen);
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["params"]["progressToken"], json!("tok-1"));
        assert_eq!(p["params"]["progress"], json!(i + 1));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_from_a_legacy_upstream_reaches_a_legacy_client() {
    let mut s = StdioSluice::start(&fixture_upstream("leg", &["--era", "legacy"])).await;
    s.initialize(json!({"sampling": {}})).await;
    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "leg__sample", "arguments": {"prompt": "ping?"}}}))
        .await;
    let request = loop {
        let m = s.recv().await;
        if m.get("id").is_some() {
            break m;
        }
        assert!(
            m["method"].as_str().unwrap().ends_with("list_changed"),
            "{m}"
        );
    };
    assert_eq!(
        request["method"],
        json!("sampling/createMessage"),
        "{request}"
    );
    assert_eq!(
        request["params"]["messages"][0]["content"]["text"],
        json!("ping?")
    );
    s.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "pong!"}, "model": "test", "stopReason": "endTurn"}}))
        .await;
    let r = s.response(1).await;
    assert!(first_text(&r).contains("pong!"), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_without_sampling_gets_a_refusal_not_a_hang() {
    let mut s = StdioSluice::start(&fixture_upstream("leg", &["--era", "legacy"])).await;
    s.initialize(json!({})).await;
    let r = s.call(1, "leg__sample", json!({"prompt": "x"})).await;
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_gets_no_answer_and_others_continue() {
    let mut s = StdioSluice::start(&fixture_upstream("fx", &[])).await;
    s.initialize(json!({})).await;
    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fx__slow", "arguments": {"ms": 1500}}}))
        .await;
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "test"}}))
        .await;
    // Past the slow call's natural end, still no answer for id 1.
    tokio::time::sleep(std::time::Duration::from_millis(2000)).await;
    let r = s.request(2, "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    assert!(s.seen.iter().all(|m| !is_response(m, 1)), "{:?}", s.seen);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_changed_upstream_refreshes_the_catalog_and_tells_the_client() {
    let mut s = StdioSluice::start(&fixture_upstream("leg", &["--era", "legacy"])).await;
    s.initialize(json!({})).await;
    let before = s.request(10, "tools/list", json!({})).await;
    assert!(!names(&before, "tools").contains(&"leg__added_0".to_owned()));
    s.seen.clear();
    let r = s.call(1, "leg__add_tool", json!({})).await;
    assert!(r.get("result").is_some(), "{r}");
    // Each list_changed is followed by a re-list; the new tool must show
    // up after one of them (a list_changed from start-up may come first).
    let mut id = 100;
    loop {
        let changed = s
            .seen
            .iter()
            .position(|m| m["method"] == json!("notifications/tools/list_changed"));
        match changed {
            Some(pos) => {
                s.seen.remove(pos);
            }
            None => {
                let m = s.recv().await;
                s.seen.push(m);
                continue;
            }
        }
        id += 1;
        let tools = s.request(id, "tools/list", json!({})).await;
        if names(&tools, "tools").contains(&"leg__added_0".to_owned()) {
            break;
        }
        assert!(id < 110, "the new tool never appeared");
    }
    let r = s.call(3, "leg__added_0", json!({})).await;
    assert!(r.get("result").is_some(), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_incomplete_catalog_read_serves_nothing_rather_than_a_partial_list() {
    let config = format!(
        "{}{}",
        fixture_upstream(
            "loop",
            &[
                "--tools",
                "30",
                "--page-size",
                "5",
                "--cursor-mode",
                "cycle"
            ]
        ),
        fixture_upstream("ok", &[])
    );
    let mut s = StdioSluice::start(&config).await;
    s.initialize(json!({})).await;
    let tools = s.request(1, "tools/list", json!({})).await;
    let got: BTreeSet<String> = names(&tools, "tools").into_iter().collect();
    assert_eq!(
        got,
        expected_tools("ok", 0),
        "no tool of the cycling upstream is served"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_string_cursor_is_followed() {
    let config = fixture_upstream(
        "e",
        &[
            "--tools",
            "6",
            "--page-size",
            "4",
            "--cursor-mode",
            "empty-string",
        ],
    );
    let mut s = StdioSluice::start(&config).await;
    s.initialize(json!({})).await;
    let tools = s.request(1, "tools/list", json!({})).await;
    let got: BTreeSet<String> = names(&tools, "tools").into_iter().collect();
    assert_eq!(got, expected_tools("e", 6));
}

impl StdioSluice {
    async fn call_modern(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        let params = json!({"name": name, "arguments": arguments, "_meta": modern_meta(json!({}))});
        self.request(id, "tools/call", params).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_over_the_transport_ceiling_is_never_buffered() {
    // Writing and discarding 17 MiB takes the debug fixture more than 2 s
    // on a loaded machine: a timeout here would hide what is tested.
    let config = two_upstreams().replace("request_timeout = \"2s\"", "request_timeout = \"60s\"");
    let mut s = StdioSluice::start(&config).await;
    s.initialize(json!({})).await;
    // State that only this fixture process has: a tool added at run time.
    // A restarted fixture would not know it.
    let r = s.call(1, "fx__add_tool", json!({})).await;
    assert!(r.get("result").is_some(), "{r}");
    let mut id = 100;
    loop {
        let tools = s.request(id, "tools/list", json!({})).await;
        if names(&tools, "tools").contains(&"fx__added_0".to_owned()) {
            break;
        }
        assert!(id < 200, "the added tool never appeared");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        id += 1;
    }
    // 17 MiB of text: past the 16 MiB ceiling. sluice keeps the first
    // bytes to find the request, discards the rest and answers that one
    // call: `big` is mutation-capable (no annotations), so its outcome is
    // unknown and it fails with -32007, naming the upstream.
    let r = s
        .call(2, "fx__big", json!({"bytes": 17 * 1024 * 1024}))
        .await;
    let shown = r.to_string();
    let shown = &shown[..500.min(shown.len())];
    assert_eq!(r["error"]["code"], json!(-32007), "{shown}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("larger than transport_max_message_bytes"),
        "{message}"
    );
    assert!(
        message.contains("the outcome of this call could not be relayed"),
        "{message}"
    );
    assert_eq!(r["error"]["data"]["upstream"], json!("fx"), "{shown}");
    // The other upstream was never affected.
    let r = s.call(3, "leg__echo", json!({"text": "ok"})).await;
    assert_eq!(first_text(&r), "ok");
    // The connection stays up: the next call to fx succeeds at once (no
    // retry), served by the same fixture process (it still has the tool
    // added above), so there was no restart.
    let r = s.call(4, "fx__big", json!({"bytes": 1000})).await;
    assert_eq!(first_text(&r).len(), 1000, "{r}");
    let r = s.call(5, "fx__added_0", json!({})).await;
    assert_eq!(first_text(&r), "added_0", "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_modern_client_answers_a_legacy_upstreams_sampling_through_mrtr() {
    let mut s = StdioSluice::start(&fixture_upstream("leg", &["--era", "legacy"])).await;
    let params = |extra: Value| {
        let mut p = json!({"name": "leg__sample", "arguments": {"prompt": "bridge me"},
            "_meta": modern_meta(json!({"sampling": {}}))});
        if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
            p.extend(extra.clone());
        }
        p
    };
    let first = s.request(1, "tools/call", params(json!({}))).await;
    let r = &first["result"];
    assert_eq!(r["resultType"], json!("input_required"), "{first}");
    let question = &r["inputRequests"]["sluice-1"];
    assert_eq!(question["method"], json!("sampling/createMessage"));
    assert_eq!(
        question["params"]["messages"][0]["content"]["text"],
        json!("bridge me")
    );
    let state = r["requestState"].as_str().unwrap().to_owned();
    assert!(state.starts_with("sluice1."));

    let answer = json!({"sluice-1": {"role": "assistant", "content": {"type": "text", "text": "bridged!"},
        "model": "m", "stopReason": "endTurn"}});
    let retry = params(json!({"inputResponses": answer, "requestState": state}));
    let done = s.request(2, "tools/call", retry.clone()).await;
    assert_eq!(done["result"]["resultType"], json!("complete"), "{done}");
    assert!(first_text(&done).contains("bridged!"), "{done}");

    // A state opens once.
    let replay = s.request(3, "tools/call", retry).await;
    assert_eq!(replay["error"]["code"], json!(-32602), "{replay}");
    // A tampered state is refused, naming no part of it. (A state of
    // another key, such as an inner sluice's, is forwarded instead.)
    let mut forged = state.clone().into_bytes();
    let inside = forged.len() - 10;
    forged[inside] = if forged[inside] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    let bad = s
        .request(
            4,
            "tools/call",
            params(json!({"inputResponses": answer, "requestState": forged})),
        )
        .await;
    assert_eq!(bad["error"]["code"], json!(-32602));
    assert!(
        !bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("sluice1.")
    );
    // Bound to the call: the state of one call does not resume another.
    let other = s.request(5, "tools/call", params(json!({}))).await;
    let other_state = other["result"]["requestState"].as_str().unwrap().to_owned();
    let mut different = params(json!({"inputResponses": answer, "requestState": other_state}));
    different["arguments"]["prompt"] = json!("something else");
    let mismatch = s.request(6, "tools/call", different).await;
    assert_eq!(mismatch["error"]["code"], json!(-32602), "{mismatch}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_modern_client_that_cannot_sample_gets_the_upstreams_own_refusal() {
    let mut s = StdioSluice::start(&fixture_upstream("leg", &["--era", "legacy"])).await;
    let r = s
        .call_modern(1, "leg__sample", json!({"prompt": "x"}))
        .await;
    assert_eq!(r["result"]["resultType"], json!("complete"), "{r}");
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_client_answers_a_modern_upstreams_input_request() {
    let mut s = StdioSluice::start(&fixture_upstream("mod", &["--era", "modern"])).await;
    s.initialize(json!({"sampling": {}})).await;
    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "mod__sample", "arguments": {"prompt": "from a modern server"}}}))
        .await;
    let request = loop {
        let m = s.recv().await;
        if m.get("id").is_some() {
            break m;
        }
    };
    assert_eq!(
        request["method"],
        json!("sampling/createMessage"),
        "{request}"
    );
    s.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "legacy answer"}, "model": "m", "stopReason": "endTurn"}}))
        .await;
    let r = s.response(1).await;
    assert!(first_text(&r).contains("legacy answer"), "{r}");
    assert!(r["result"].get("resultType").is_none(), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_state_binds_the_tool_the_client_named() {
    let config = format!(
        "{}{}",
        fixture_upstream("a", &["--era", "legacy"]),
        fixture_upstream("b", &["--era", "legacy"])
    );
    let mut s = StdioSluice::start(&config).await;
    let call = |name: &str, extra: Value| {
        let mut p = json!({"name": name, "arguments": {"prompt": "same"}, "_meta": modern_meta(json!({"sampling": {}}))});
        if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
            p.extend(extra.clone());
        }
        p
    };
    let first = s
        .request(1, "tools/call", call("a__sample", json!({})))
        .await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"sluice-1": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}});
    let other = s
        .request(
            2,
            "tools/call",
            call(
                "b__sample",
                json!({"inputResponses": answer, "requestState": state}),
            ),
        )
        .await;
    assert_eq!(
        other["error"]["code"],
        json!(-32602),
        "a's state must not resume a call to b: {other}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_closing_ends_sluice_even_with_a_listen_open() {
    let mut s = StdioSluice::start(&fixture_upstream("fx", &[])).await;
    s.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {"_meta": modern_meta(json!({})), "notifications": {"toolsListChanged": true}}}),
    )
    .await;
    let ack = s.recv().await;
    assert_eq!(
        ack["method"],
        json!("notifications/subscriptions/acknowledged"),
        "{ack}"
    );
    let status = s.finish().await;
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn two_questions_from_a_stdio_upstream_reach_the_calls_that_asked() {
    let mut s = StdioSluice::start(&fixture_upstream("leg", &["--era", "legacy"])).await;
    s.initialize(json!({"sampling": {}})).await;
    let mut questions = Vec::new();
    for (id, prompt) in [(1, "first"), (2, "second")] {
        s.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "leg__sample", "arguments": {"prompt": prompt}}}))
            .await;
        // The first call waits on its question while the second asks.
        let q = loop {
            let m = s.recv().await;
            if m["method"] == json!("sampling/createMessage") {
                break m;
            }
            s.seen.push(m);
        };
        questions.push(q);
    }
    // Answer in reverse order, echoing each question's prompt.
    for q in questions.iter().rev() {
        let prompt = q["params"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap();
        s.send(
            json!({"jsonrpc": "2.0", "id": q["id"], "result": {"role": "assistant",
            "content": {"type": "text", "text": format!("answer to {prompt}")}, "model": "m"}}),
        )
        .await;
    }
    for (id, prompt) in [(1, "first"), (2, "second")] {
        let r = s.response(id).await;
        assert!(
            first_text(&r).contains(&format!("answer to {prompt}")),
            "call {id}: {r}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn endless_stderr_without_newlines_is_not_buffered() {
    let script = format!(
        "head -c 64000000 /dev/zero | tr '\\0' x >&2; exec {}",
        fixture_bin()
    );
    let config = format!(
        "[[upstream]]\nname = \"noisy\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nallow_dangerous = true\n"
    );
    let mut s = StdioSluice::start(&config).await;
    s.initialize(json!({})).await;
    let r = s
        .call(1, "noisy__echo", json!({"text": "still fine"}))
        .await;
    assert_eq!(first_text(&r), "still fine");
    let pid = s.child.id().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap();
    // 64 MB went through stderr; sluice's peak memory stays far below it.
    assert!(peak_kib < 48 * 1024, "sluice's peak RSS was {peak_kib} KiB");
}
