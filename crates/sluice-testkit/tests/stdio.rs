//! The fixture over stdio, driven as a child process.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{SUBSCRIPTION_ID, StdioFixture, WAIT, drain, modern, modern_meta};
use serde_json::{Value, json};

/// The exact `lossless` result (see `src/tools.rs`).
const LOSSLESS: &str = r#"{"content":[{"type":"text","text":"kept","x-extra":1},{"type":"hologram","frames":[1,2,3]}],"structuredContent":{"big":123456789012345678901234567890,"exp":1e400,"float":1.50,"neg":-0},"x-vendor":{"nested":[true,null]},"_meta":{"x.example/trace":"abc"},"isError":false}"#;

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

fn tool_call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

// --- eras ------------------------------------------------------------------------------------

#[test]
fn discover_modern() {
    let mut fx = StdioFixture::spawn(&[]);
    let result = fx.result("server/discover", modern(json!({})));
    let expected = json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {"listChanged": true}, "resources": {}, "prompts": {}},
        "ttlMs": 0,
        "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "sluice-fixture", "version": "0.1.0"}}
    });
    assert_eq!(result, expected);
}

#[test]
fn discover_in_legacy_era_is_method_not_found() {
    let mut fx = StdioFixture::spawn(&["--era", "legacy"]);
    assert_eq!(fx.error_code("server/discover", modern(json!({}))), -32601);
}

#[test]
fn initialize_legacy_echoes_known_versions() {
    let mut fx = StdioFixture::spawn(&[]);
    let r = fx.initialize("2025-06-18");
    assert_eq!(r["protocolVersion"], "2025-06-18");
    assert_eq!(r["serverInfo"]["name"], "sluice-fixture");
    assert_eq!(r["capabilities"]["tools"]["listChanged"], true);
    assert!(r.get("resultType").is_none());
    assert_eq!(fx.result("ping", json!({})), json!({}));

    let mut fx = StdioFixture::spawn(&["--era", "legacy"]);
    assert_eq!(fx.initialize("2024-01-01")["protocolVersion"], "2025-11-25");
}

#[test]
fn initialize_on_modern_only_is_unsupported_version() {
    let mut fx = StdioFixture::spawn(&["--era", "modern"]);
    let resp = fx.call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(resp["error"]["code"], -32022);
    assert_eq!(resp["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(resp["error"]["data"]["requested"], "2025-11-25");
}

#[test]
fn modern_requires_meta_version() {
    let mut fx = StdioFixture::spawn(&["--era", "modern"]);
    assert_eq!(fx.error_code("tools/list", json!({})), -32602);
    let bad = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1900-01-01"}});
    let resp = fx.call("tools/list", bad);
    assert_eq!(resp["error"]["code"], -32022);
    assert_eq!(resp["error"]["data"]["requested"], "1900-01-01");
    // Removed in 2026.
    assert_eq!(fx.error_code("ping", modern(json!({}))), -32601);
}

#[test]
fn dual_shapes_results_per_request() {
    let mut fx = StdioFixture::spawn(&[]);
    let m = fx.result("tools/list", modern(json!({})));
    assert_eq!(m["resultType"], "complete");
    assert_eq!(m["ttlMs"], 0);
    assert_eq!(m["cacheScope"], "public");
    let echo = fx.result(
        "tools/call",
        modern(tool_call("echo", json!({"text": "hi"}))),
    );
    assert_eq!(
        echo,
        json!({"content": [{"type": "text", "text": "hi"}], "resultType": "complete"})
    );

    fx.initialize("2025-11-25");
    let l = fx.result("tools/list", json!({}));
    assert!(l.get("resultType").is_none() && l.get("ttlMs").is_none());
    assert_eq!(l["tools"].as_array().unwrap().len(), 16);
    let echo = fx.result("tools/call", tool_call("echo", json!({"text": "hi"})));
    assert_eq!(echo, json!({"content": [{"type": "text", "text": "hi"}]}));
}

#[test]
fn unknown_things() {
    let mut fx = StdioFixture::spawn(&["--resources", "2"]);
    fx.initialize("2025-11-25");
    assert_eq!(fx.error_code("nope/nothing", json!({})), -32601);
    assert_eq!(
        fx.error_code("tools/call", tool_call("no_such_tool", json!({}))),
        -32602
    );
    assert_eq!(
        fx.error_code("prompts/get", json!({"name": "nope"})),
        -32602
    );
    assert_eq!(
        fx.error_code("resources/read", json!({"uri": "fixture://res/0002"})),
        -32002
    );
    let modern_read = modern(json!({"uri": "fixture://res/0002"}));
    assert_eq!(fx.error_code("resources/read", modern_read), -32602);
    fx.send_line("{not json");
    assert_eq!(fx.recv()["error"]["code"], -32700);
}

// --- catalog -----------------------------------------------------------------------------------

#[test]
fn tools_resources_prompts() {
    let mut fx = StdioFixture::spawn(&["--tools", "3", "--resources", "4"]);
    fx.initialize("2025-11-25");
    let tools = fx.result("tools/list", json!({}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let expected = [
        "echo",
        "lossless",
        "crash",
        "hang",
        "garbage",
        "progress",
        "sample",
        "add_tool",
        "big",
        "slow",
        "header_echo",
        "read_big",
        "reflect",
        "huge_read",
        "huge_write",
        "elicit",
        "gen_0000",
        "gen_0001",
        "gen_0002",
    ];
    assert_eq!(names, expected);
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["inputSchema"].is_object())
    );
    assert_eq!(
        text_of(&fx.result("tools/call", tool_call("gen_0001", json!({})))),
        "gen_0001"
    );

    let res = fx.result("resources/list", json!({}));
    assert_eq!(res["resources"][3]["uri"], "fixture://res/0003");
    let read = fx.result("resources/read", json!({"uri": "fixture://res/0003"}));
    assert_eq!(read["contents"][0]["text"], "resource 0003");
    let templ = fx.result("resources/templates/list", json!({}));
    assert_eq!(
        templ["resourceTemplates"][0]["uriTemplate"],
        "fixture://item/{id}"
    );
    let item = fx.result(
        "resources/read",
        modern(json!({"uri": "fixture://item/42"})),
    );
    assert_eq!(item["contents"][0]["text"], "item 42");
    assert_eq!(item["ttlMs"], 0);

    let prompts = fx.result("prompts/list", json!({}));
    assert_eq!(prompts["prompts"][0]["name"], "greet");
    let greet = fx.result(
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": "Ada"}}),
    );
    assert_eq!(greet["messages"][0]["content"]["text"], "Hello, Ada");
}

#[test]
fn lossless_tool_definition_keeps_unknown_fields() {
    let mut fx = StdioFixture::spawn(&[]);
    let tools = fx.result("tools/list", modern(json!({})));
    let def = &tools["tools"][1];
    assert_eq!(def["name"], "lossless");
    assert_eq!(def["execution"], json!({"taskSupport": "optional"}));
    assert_eq!(def["x-future"], json!({"a": 1}));
    assert_eq!(def["annotations"]["x-hint"], true);
    assert!(def["_meta"].is_object());
}

// --- pagination --------------------------------------------------------------------------------

#[test]
fn pagination_drains_everything() {
    let mut fx = StdioFixture::spawn(&["--tools", "25", "--resources", "12", "--page-size", "7"]);
    let cursor_params = |c: Option<&Value>| match c {
        Some(c) => modern(json!({"cursor": c})),
        None => modern(json!({})),
    };
    let (pages, tools) = drain(&mut fx, "tools/list", "tools", 100, cursor_params);
    assert_eq!((pages, tools.len()), (6, 41)); // 16 fixed + 25 generated, 7 per page
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 41);

    let (pages, res) = drain(&mut fx, "resources/list", "resources", 100, cursor_params);
    assert_eq!((pages, res.len()), (2, 12));
    let (pages, prompts) = drain(&mut fx, "prompts/list", "prompts", 100, cursor_params);
    assert_eq!((pages, prompts.len()), (1, 2));

    // Legacy lists paginate the same way.
    let legacy = |c: Option<&Value>| match c {
        Some(c) => json!({"cursor": c}),
        None => json!({}),
    };
    let (pages, tools) = drain(&mut fx, "tools/list", "tools", 100, legacy);
    assert_eq!((pages, tools.len()), (6, 41));
}

#[test]
fn invalid_cursor_is_invalid_params() {
    let mut fx = StdioFixture::spawn(&["--page-size", "3"]);
    assert_eq!(
        fx.error_code("tools/list", modern(json!({"cursor": "bogus"}))),
        -32602
    );
    assert_eq!(
        fx.error_code("tools/list", modern(json!({"cursor": 1}))),
        -32602
    );
    assert_eq!(
        fx.error_code("tools/list", modern(json!({"cursor": ""}))),
        -32602
    );
}

fn first_pages(args: &[&str], n: usize) -> Vec<Value> {
    let mut fx = StdioFixture::spawn(args);
    let mut cursor: Option<Value> = None;
    let mut pages = Vec::new();
    for _ in 0..n {
        let params = match &cursor {
            Some(c) => modern(json!({"cursor": c})),
            None => modern(json!({})),
        };
        let page = fx.result("tools/list", params);
        cursor = page.get("nextCursor").cloned();
        pages.push(page);
        if cursor.is_none() {
            break;
        }
    }
    pages
}

#[test]
fn cursor_mode_repeat() {
    let pages = first_pages(&["--page-size", "4", "--cursor-mode", "repeat"], 6);
    assert_eq!(pages.len(), 6, "never ends");
    let first = &pages[0]["nextCursor"];
    assert!(first.is_string());
    assert!(pages.iter().all(|p| &p["nextCursor"] == first));
}

#[test]
fn cursor_mode_cycle() {
    let pages = first_pages(&["--page-size", "3", "--cursor-mode", "cycle"], 8);
    assert_eq!(pages.len(), 8, "never ends");
    assert_eq!(pages[2]["nextCursor"], pages[0]["nextCursor"]);
    assert_eq!(pages[3]["tools"], pages[1]["tools"]);
    assert_eq!(pages[4]["tools"], pages[2]["tools"]);
}

#[test]
fn cursor_mode_empty_string() {
    let pages = first_pages(
        &[
            "--tools",
            "2",
            "--page-size",
            "5",
            "--cursor-mode",
            "empty-string",
        ],
        10,
    );
    assert_eq!(pages[0]["nextCursor"], "");
    assert_eq!(pages.len(), 4, "18 tools in pages of 5");
    assert_eq!(pages[1]["tools"][0]["name"], "progress");
    let total: usize = pages
        .iter()
        .map(|p| p["tools"].as_array().unwrap().len())
        .sum();
    assert_eq!(total, 18);
}

#[test]
fn cursor_mode_non_string() {
    let pages = first_pages(&["--page-size", "4", "--cursor-mode", "non-string"], 10);
    assert!(pages[0]["nextCursor"].is_number());
    assert_eq!(pages.len(), 4);
    let total: usize = pages
        .iter()
        .map(|p| p["tools"].as_array().unwrap().len())
        .sum();
    assert_eq!(total, 16);
}

#[test]
fn cursor_mode_needs_page_size() {
    let status = std::process::Command::new(common::BIN)
        .args(["--cursor-mode", "repeat"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
}

#[test]
fn hang_page_never_answers_but_blocks_nothing() {
    let mut fx = StdioFixture::spawn(&["--page-size", "4", "--hang-page", "2"]);
    for _ in 0..2 {
        // Every walk hangs at page 2 again.
        let first = fx.result("tools/list", modern(json!({})));
        assert_eq!(first["tools"][0]["name"], "echo");
        let cursor = first["nextCursor"].clone();
        let hung = fx.request("tools/list", modern(json!({"cursor": cursor})));
        let ping = fx.request("ping", json!({}));
        let echo = fx.request(
            "tools/call",
            modern(tool_call("echo", json!({"text": "after"}))),
        );
        // Each request is its own task: the two answers may come in either order.
        let mut answered: Vec<u64> = [fx.recv(), fx.recv()]
            .iter()
            .map(|r| r["id"].as_u64().unwrap())
            .collect();
        answered.sort_unstable();
        assert_eq!(answered, [ping, echo]);
        assert_eq!(
            fx.line(Duration::from_millis(300)),
            None,
            "page 2 is not answered"
        );
        fx.notify("notifications/cancelled", json!({"requestId": hung}));
    }
    assert_eq!(
        fx.line(Duration::from_millis(200)),
        None,
        "nor after cancel"
    );
}

#[test]
fn page_faults_need_page_size() {
    for flag in ["--fail-page", "--hang-page"] {
        let status = std::process::Command::new(common::BIN)
            .args([flag, "2"])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(2), "{flag}");
    }
}

// --- tools -------------------------------------------------------------------------------------

#[test]
fn lossless_bytes_are_exact() {
    let mut fx = StdioFixture::spawn(&[]);
    fx.send_line(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lossless"}}"#);
    let line = fx.line(WAIT).unwrap();
    assert_eq!(
        line,
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{LOSSLESS}}}"#)
    );

    let params = modern(json!({"name": "lossless"}));
    fx.send(&json!({"jsonrpc": "2.0", "id": "m", "method": "tools/call", "params": params}));
    let line = fx.line(WAIT).unwrap();
    let body = LOSSLESS.strip_suffix('}').unwrap();
    let expected =
        format!(r#"{{"jsonrpc":"2.0","id":"m","result":{body},"resultType":"complete"}}}}"#);
    assert_eq!(line, expected);
}

#[test]
fn crash_tool_exits_with_3() {
    let mut fx = StdioFixture::spawn(&[]);
    assert_eq!(
        text_of(&fx.result(
            "tools/call",
            modern(tool_call("echo", json!({"text": "a"})))
        )),
        "a"
    );
    fx.request("tools/call", modern(tool_call("crash", json!({}))));
    let status = fx.wait_exit(WAIT).expect("fixture exits");
    assert_eq!(status.code(), Some(3));
    assert_eq!(fx.line(Duration::from_millis(200)), None, "no answer");
}

#[test]
fn start_crash_exits_with_3() {
    let mut fx = StdioFixture::spawn(&["--start", "crash"]);
    assert_eq!(fx.wait_exit(WAIT).expect("exits").code(), Some(3));
}

#[test]
fn start_hang_never_answers() {
    let mut fx = StdioFixture::spawn(&["--start", "hang"]);
    fx.request("server/discover", modern(json!({})));
    fx.request("initialize", json!({"protocolVersion": "2025-11-25"}));
    assert_eq!(fx.line(Duration::from_millis(500)), None);
    fx.close_stdin();
    assert_eq!(fx.wait_exit(WAIT).expect("exits on EOF").code(), Some(0));
}

#[test]
fn start_garbage_then_normal() {
    let mut fx = StdioFixture::spawn(&["--start", "garbage"]);
    let mut garbage = 0;
    let id = fx.request("server/discover", modern(json!({})));
    loop {
        let line = fx.line(WAIT).expect("line");
        match serde_json::from_str::<Value>(&line) {
            Ok(v) if v["id"] == json!(id) => break,
            Ok(v) => panic!("unexpected message {v}"),
            Err(_) => garbage += 1,
        }
    }
    assert!(garbage >= 1);
}

#[test]
fn garbage_tool_writes_a_non_json_line() {
    let mut fx = StdioFixture::spawn(&[]);
    fx.request("tools/call", modern(tool_call("garbage", json!({}))));
    assert_eq!(fx.line(WAIT).as_deref(), Some("this is not json"));
    assert_eq!(text_of(&fx.recv()["result"]), "after garbage");
}

#[test]
fn hang_does_not_block_and_cancel_stops_work() {
    let mut fx = StdioFixture::spawn(&[]);
    let hang = fx.request("tools/call", modern(tool_call("hang", json!({}))));
    let slow = fx.request("tools/call", modern(tool_call("slow", json!({"ms": 1000}))));
    let echo = fx.request(
        "tools/call",
        modern(tool_call("echo", json!({"text": "still here"}))),
    );
    let resp = fx.recv();
    assert_eq!(
        resp["id"],
        json!(echo),
        "echo answers while hang and slow are pending"
    );
    fx.notify(
        "notifications/cancelled",
        json!({"requestId": slow, "reason": "test"}),
    );
    fx.notify("notifications/cancelled", json!({"requestId": hang}));
    assert_eq!(
        fx.line(Duration::from_millis(1300)),
        None,
        "cancelled requests are not answered"
    );
    let again = fx.request("tools/call", modern(tool_call("slow", json!({"ms": 1}))));
    assert_eq!(fx.recv()["id"], json!(again));
}

#[test]
fn progress_notifications_then_done() {
    let mut fx = StdioFixture::spawn(&[]);
    let mut params = tool_call("progress", json!({"steps": 3, "delay_ms": 20}));
    params["_meta"] = modern_meta(json!({"progressToken": "tok"}));
    let id = fx.request("tools/call", params);
    let (resp, others) = fx.response_with_others(id);
    assert_eq!(text_of(&resp["result"]), "done");
    let progress: Vec<(Value, Value)> = others
        .iter()
        .map(|n| {
            assert_eq!(n["method"], "notifications/progress");
            assert_eq!(n["params"]["progressToken"], "tok");
            assert_eq!(n["params"]["total"], 3);
            (
                n["params"]["progress"].clone(),
                n["params"]["total"].clone(),
            )
        })
        .collect();
    assert_eq!(progress.len(), 3);
    assert_eq!(
        progress
            .iter()
            .map(|p| p.0.as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );

    // Without a token: no notifications, same answer.
    let id = fx.request(
        "tools/call",
        modern(tool_call("progress", json!({"steps": 2, "delay_ms": 1}))),
    );
    let (resp, others) = fx.response_with_others(id);
    assert_eq!(text_of(&resp["result"]), "done");
    assert!(others.is_empty());
}

#[test]
fn sample_asks_the_client() {
    let mut fx = StdioFixture::spawn(&[]);
    fx.initialize("2025-11-25");
    let id = fx.request(
        "tools/call",
        tool_call("sample", json!({"prompt": "say hi"})),
    );
    let req = fx.recv();
    assert_eq!(req["method"], "sampling/createMessage");
    assert_eq!(req["params"]["messages"][0]["content"]["text"], "say hi");
    assert_eq!(req["params"]["maxTokens"], 50);
    fx.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "hi!"}, "model": "m"}}));
    assert_eq!(text_of(&fx.response(id)["result"]), "hi!");

    let id = fx.request(
        "tools/call",
        tool_call("sample", json!({"prompt": "again"})),
    );
    let req = fx.recv();
    fx.send(
        &json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -1, "message": "denied"}}),
    );
    let resp = fx.response(id);
    assert_eq!(resp["result"]["isError"], true);
}

#[test]
fn sample_modern_uses_mrtr() {
    let mut fx = StdioFixture::spawn(&[]);
    assert_eq!(
        fx.error_code(
            "tools/call",
            modern(tool_call("sample", json!({"prompt": "p"})))
        ),
        -32021
    );
    let mut params = tool_call("sample", json!({"prompt": "p"}));
    params["_meta"] =
        modern_meta(json!({"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}));
    let r = fx.result("tools/call", params.clone());
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(
        r["inputRequests"]["sample"]["method"],
        "sampling/createMessage"
    );
    params["inputResponses"] = json!({"sample": {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m"}});
    let r = fx.result("tools/call", params);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(text_of(&r), "yo");
}

#[test]
fn elicit_asks_the_client() {
    let mut fx = StdioFixture::spawn(&[]);
    fx.initialize("2025-11-25");
    let id = fx.request(
        "tools/call",
        tool_call("elicit", json!({"message": "your name?"})),
    );
    let req = fx.recv();
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["params"]["message"], "your name?");
    assert_eq!(
        req["params"]["requestedSchema"]["required"],
        json!(["answer"])
    );
    fx.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {
        "action": "accept", "content": {"answer": "Ada"}}}));
    assert_eq!(
        text_of(&fx.response(id)["result"]),
        r#"action=accept content={"answer":"Ada"}"#
    );

    let id = fx.request(
        "tools/call",
        tool_call("elicit", json!({"message": "again"})),
    );
    let req = fx.recv();
    fx.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "decline"}}));
    assert_eq!(
        text_of(&fx.response(id)["result"]),
        "action=decline content=null"
    );

    let id = fx.request(
        "tools/call",
        tool_call("elicit", json!({"message": "once more"})),
    );
    let req = fx.recv();
    fx.send(
        &json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -1, "message": "denied"}}),
    );
    assert_eq!(fx.response(id)["result"]["isError"], true);
}

#[test]
fn elicit_modern_uses_mrtr() {
    let mut fx = StdioFixture::spawn(&[]);
    assert_eq!(
        fx.error_code(
            "tools/call",
            modern(tool_call("elicit", json!({"message": "m"})))
        ),
        -32021
    );
    let mut params = tool_call("elicit", json!({"message": "m"}));
    params["_meta"] =
        modern_meta(json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}));
    let r = fx.result("tools/call", params.clone());
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(r["inputRequests"]["elicit"]["method"], "elicitation/create");
    assert_eq!(r["inputRequests"]["elicit"]["params"]["message"], "m");
    params["inputResponses"] =
        json!({"elicit": {"action": "accept", "content": {"answer": "yes"}}});
    let r = fx.result("tools/call", params);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(text_of(&r), r#"action=accept content={"answer":"yes"}"#);
}

#[test]
fn add_tool_announces_list_changed() {
    let mut fx = StdioFixture::spawn(&[]);
    fx.initialize("2025-11-25");
    let id = fx.request("tools/call", tool_call("add_tool", json!({})));
    let (resp, others) = fx.response_with_others(id);
    assert_eq!(text_of(&resp["result"]), "ok");
    // The notification is queued before the response on the same stream.
    assert_eq!(
        others,
        [json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})]
    );
    let tools = fx.result("tools/list", json!({}));
    assert_eq!(
        tools["tools"].as_array().unwrap().last().unwrap()["name"],
        "added_0"
    );
    assert_eq!(
        text_of(&fx.result("tools/call", tool_call("added_0", json!({})))),
        "added_0"
    );
}

#[test]
fn big_slow_and_bad_arguments() {
    let mut fx = StdioFixture::spawn(&[]);
    let big = fx.result(
        "tools/call",
        modern(tool_call("big", json!({"bytes": 100_000}))),
    );
    let text = text_of(&big);
    assert_eq!(text.len(), 100_000);
    assert!(text.bytes().all(|b| b == b'x'));
    let slow = fx.result("tools/call", modern(tool_call("slow", json!({"ms": 5}))));
    assert_eq!(text_of(&slow), "slept");
    let bad = fx.result("tools/call", modern(tool_call("echo", json!({"text": 5}))));
    assert_eq!(bad["isError"], true);
}

#[test]
fn exits_on_stdin_eof() {
    let mut fx = StdioFixture::spawn(&[]);
    fx.request("tools/call", modern(tool_call("hang", json!({}))));
    fx.close_stdin();
    assert_eq!(fx.wait_exit(WAIT).expect("exits on EOF").code(), Some(0));
}

// --- subscriptions/listen ----------------------------------------------------------------------

fn listen(filter: Value) -> Value {
    modern(json!({"notifications": filter}))
}

fn ack(id: Value, honoured: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": honoured, "_meta": {SUBSCRIPTION_ID: id}}
    })
}

fn tools_changed(id: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {SUBSCRIPTION_ID: id}}
    })
}

#[test]
fn listen_acks_then_tags_list_changed_until_cancelled() {
    let mut fx = StdioFixture::spawn(&[]);
    // Only the *ListChanged keys set to true are honoured.
    let tools = fx.request(
        "subscriptions/listen",
        listen(json!({"toolsListChanged": true, "promptsListChanged": true,
                      "resourcesListChanged": false, "resourceSubscriptions": ["file:///x"]})),
    );
    assert_eq!(
        fx.recv(),
        ack(
            json!(tools),
            json!({"toolsListChanged": true, "promptsListChanged": true})
        )
    );
    // A string id is echoed as a string; this listen does not ask for tools.
    fx.send(
        &json!({"jsonrpc": "2.0", "id": "prompts", "method": "subscriptions/listen",
                    "params": listen(json!({"promptsListChanged": true}))}),
    );
    assert_eq!(
        fx.recv(),
        ack(json!("prompts"), json!({"promptsListChanged": true}))
    );
    // An empty filter is acknowledged with an empty subset.
    let none = fx.request("subscriptions/listen", modern(json!({})));
    assert_eq!(fx.recv(), ack(json!(none), json!({})));

    // The open listens do not block other requests; add_tool notifies only the tools listener.
    let add = fx.request("tools/call", modern(tool_call("add_tool", json!({}))));
    let (resp, others) = fx.response_with_others(add);
    assert_eq!(text_of(&resp["result"]), "ok");
    assert_eq!(others, [tools_changed(json!(tools))]);
    let names = fx.result("tools/list", modern(json!({})));
    assert_eq!(
        names["tools"].as_array().unwrap().last().unwrap()["name"],
        "added_0"
    );
    assert_eq!(
        fx.line(Duration::from_millis(300)),
        None,
        "listens are never answered"
    );

    // After cancellation the subscription gets nothing more, and no response.
    fx.notify("notifications/cancelled", json!({"requestId": tools}));
    let add = fx.request("tools/call", modern(tool_call("add_tool", json!({}))));
    let (resp, others) = fx.response_with_others(add);
    assert_eq!(text_of(&resp["result"]), "ok");
    assert_eq!(others, Vec::<Value>::new());
    assert_eq!(fx.line(Duration::from_millis(300)), None);

    // A new listen works again, with its own id.
    let again = fx.request(
        "subscriptions/listen",
        listen(json!({"toolsListChanged": true})),
    );
    assert_eq!(
        fx.recv(),
        ack(json!(again), json!({"toolsListChanged": true}))
    );
    let add = fx.request("tools/call", modern(tool_call("add_tool", json!({}))));
    let (_, others) = fx.response_with_others(add);
    assert_eq!(others, [tools_changed(json!(again))]);
}

#[test]
fn listen_with_legacy_add_tool_and_eras() {
    let mut fx = StdioFixture::spawn(&[]);
    let tools = fx.request(
        "subscriptions/listen",
        listen(json!({"toolsListChanged": true})),
    );
    assert_eq!(
        fx.recv(),
        ack(json!(tools), json!({"toolsListChanged": true}))
    );
    // A legacy add_tool in the same process: the legacy notification as before, plus the tagged
    // one for the listener (the catalog is shared).
    fx.initialize("2025-11-25");
    let add = fx.request("tools/call", tool_call("add_tool", json!({})));
    let (_, mut others) = fx.response_with_others(add);
    others.sort_by_key(|n| n.get("params").is_some());
    assert_eq!(
        others,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            tools_changed(json!(tools)),
        ]
    );
    // Legacy requests know no subscriptions/listen; a malformed filter is invalid params.
    assert_eq!(
        fx.error_code("subscriptions/listen", json!({"notifications": {}})),
        -32601
    );
    assert_eq!(
        fx.error_code("subscriptions/listen", listen(json!([]))),
        -32602
    );

    let mut fx = StdioFixture::spawn(&["--era", "legacy"]);
    fx.initialize("2025-11-25");
    assert_eq!(
        fx.error_code(
            "subscriptions/listen",
            listen(json!({"toolsListChanged": true}))
        ),
        -32601
    );
}

#[test]
fn header_echo_works_without_headers() {
    let mut fx = StdioFixture::spawn(&[]);
    let tools = fx.result("tools/list", modern(json!({})));
    let def = &tools["tools"][10];
    assert_eq!(def["name"], "header_echo");
    assert_eq!(
        def["inputSchema"],
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "note": {"type": "string"}
        }, "required": ["region"]})
    );
    let args = json!({"region": "eu west", "count": 3, "note": "n"});
    let r = fx.result("tools/call", modern(tool_call("header_echo", args.clone())));
    assert_eq!(r["resultType"], "complete");
    assert_eq!(text_of(&r), "region=eu west count=3 params=");
    let r = fx.result(
        "tools/call",
        modern(tool_call("header_echo", json!({"region": "x"}))),
    );
    assert_eq!(text_of(&r), "region=x count=- params=");
    let r = fx.result(
        "tools/call",
        modern(tool_call("header_echo", json!({"count": 3}))),
    );
    assert_eq!(r["isError"], true);

    fx.initialize("2025-11-25");
    let r = fx.result("tools/call", tool_call("header_echo", args));
    assert_eq!(text_of(&r), "region=eu west count=3 params=");
}

// --- legacy resource subscriptions ------------------------------------------------------------

/// Reads a resource and returns its only text content.
fn read_text(fx: &mut StdioFixture, uri: &str) -> String {
    let r = fx.result("resources/read", json!({"uri": uri}));
    let contents = r["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "one content: {r}");
    assert_eq!(contents[0]["uri"], uri);
    contents[0]["text"].as_str().unwrap().to_owned()
}

#[test]
fn legacy_resource_subscriptions() {
    let mut fx = StdioFixture::spawn(&["--resources", "2"]);
    let init = fx.initialize("2025-11-25");
    assert_eq!(
        init["capabilities"]["resources"],
        json!({"subscribe": true})
    );
    let uri = "fixture://res/0001";
    assert_eq!(
        fx.result("resources/subscribe", json!({"uri": uri})),
        json!({})
    );
    assert_eq!(
        fx.result("resources/subscribe", json!({"uri": uri})),
        json!({})
    );
    assert_eq!(
        read_text(&mut fx, "fixture://subscriptions"),
        r#"{"subscribed":["fixture://res/0001"],"subscribe_calls":2,"unsubscribe_calls":0}"#
    );

    // A touch of a subscribed URI: the notification comes first on stdout, then the answer.
    let id = fx.request("resources/read", json!({"uri": "fixture://touch/0001"}));
    let (resp, others) = fx.response_with_others(id);
    assert_eq!(resp["result"]["contents"][0]["text"], "touched");
    assert_eq!(
        others,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": uri}})
        ]
    );
    // Touching something else announces nothing.
    assert_eq!(read_text(&mut fx, "fixture://touch/0000"), "not subscribed");

    assert_eq!(
        fx.result("resources/unsubscribe", json!({"uri": uri})),
        json!({})
    );
    assert_eq!(
        read_text(&mut fx, "fixture://subscriptions"),
        r#"{"subscribed":[],"subscribe_calls":2,"unsubscribe_calls":1}"#
    );
    let id = fx.request("resources/read", json!({"uri": "fixture://touch/0001"}));
    let (resp, others) = fx.response_with_others(id);
    assert_eq!(resp["result"]["contents"][0]["text"], "not subscribed");
    assert_eq!(others, Vec::<Value>::new());
    assert_eq!(
        fx.line(Duration::from_millis(200)),
        None,
        "no late notification"
    );

    // A repeated unsubscribe still counts; a missing uri is invalid params (and counted too).
    assert_eq!(
        fx.result("resources/unsubscribe", json!({"uri": uri})),
        json!({})
    );
    assert_eq!(fx.error_code("resources/subscribe", json!({})), -32602);
    assert_eq!(
        read_text(&mut fx, "fixture://subscriptions"),
        r#"{"subscribed":[],"subscribe_calls":3,"unsubscribe_calls":2}"#
    );

    // The observation resources are not listed.
    let listed = fx.result("resources/list", json!({}));
    assert_eq!(listed["resources"].as_array().unwrap().len(), 2);
    let templates = fx.result("resources/templates/list", json!({}));
    assert_eq!(templates["resourceTemplates"].as_array().unwrap().len(), 2);
}

#[test]
fn resource_subscriptions_are_gone_in_the_modern_era() {
    let mut fx = StdioFixture::spawn(&[]);
    let uri = json!({"uri": "fixture://res/0000"});
    assert_eq!(
        fx.error_code("resources/subscribe", modern(uri.clone())),
        -32601
    );
    assert_eq!(fx.error_code("resources/unsubscribe", modern(uri)), -32601);
    // Nothing was counted; the state is still readable.
    let r = fx.result(
        "resources/read",
        modern(json!({"uri": "fixture://subscriptions"})),
    );
    assert_eq!(
        r["contents"][0]["text"],
        r#"{"subscribed":[],"subscribe_calls":0,"unsubscribe_calls":0}"#
    );

    let mut fx = StdioFixture::spawn(&["--era", "modern"]);
    let uri = json!({"uri": "fixture://res/0000"});
    assert_eq!(fx.error_code("resources/subscribe", modern(uri)), -32601);
}
