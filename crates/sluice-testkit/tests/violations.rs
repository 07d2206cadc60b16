//! `--violate` and `--list-tool` end to end, over stdio and HTTP: each broken rule is broken
//! with its flag and kept without it.
#![allow(clippy::unwrap_used)]

mod common;

use common::{HttpFixture, StdioFixture, modern, modern_meta};
use serde_json::{Value, json};

fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

const MODERN_HEADERS: [(&str, &str); 1] = [("MCP-Protocol-Version", "2026-07-28")];

/// `initialize` over HTTP (with `headers`); the response.
fn initialize(fx: &HttpFixture, headers: &[(&str, &str)]) -> common::HttpResp {
    let init = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    fx.post(headers, &init)
}

// --- HTTP --------------------------------------------------------------------------------------

#[test]
fn health_names_the_version_unless_no_version() {
    let fx = HttpFixture::spawn(&[]);
    let resp = fx.request_at("GET", "/health", &[], None);
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(resp.json(), json!({"status": "ok", "version": "0.1.0"}));

    let fx = HttpFixture::spawn(&["--violate", "no-version"]);
    let resp = fx.request_at("GET", "/health", &[], None);
    assert_eq!((resp.status, resp.json()), (200, json!({"status": "ok"})));
    let discover = fx.post(
        &MODERN_HEADERS,
        &rpc(json!(1), "server/discover", modern(json!({}))),
    );
    let info = &discover.json()["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(info, &json!({"name": "sluice-fixture"}));
}

#[test]
fn foreign_origin_is_403_unless_no_origin_check() {
    let evil = [
        ("Origin", "http://evil.example"),
        ("MCP-Protocol-Version", "2026-07-28"),
    ];
    let local = [
        ("Origin", "http://localhost:8080"),
        ("MCP-Protocol-Version", "2026-07-28"),
    ];
    let list = rpc(json!(1), "tools/list", modern(json!({})));

    let fx = HttpFixture::spawn(&[]);
    assert_eq!(fx.post(&evil, &list).status, 403);
    assert_eq!(initialize(&fx, &evil[..1]).status, 403);
    assert_eq!(fx.post(&local, &list).status, 200);

    let fx = HttpFixture::spawn(&["--violate", "no-origin-check"]);
    let resp = fx.post(&evil, &list);
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.json()["result"]["tools"].as_array().map(Vec::len),
        Some(16)
    );
    assert_eq!(initialize(&fx, &evil[..1]).status, 200);
}

#[test]
fn unknown_version_header_is_400_unless_unchecked() {
    let bogus = ("MCP-Protocol-Version", "1999-01-01");
    let list = rpc(json!(2), "tools/list", modern(json!({})));
    let legacy_list = rpc(json!(3), "tools/list", json!({}));

    let fx = HttpFixture::spawn(&[]);
    // 2026: the header differs from the body's version.
    let resp = fx.post(&[bogus], &list);
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["code"], -32020);
    // 2025: unknown on a session request, or on initialize.
    assert_eq!(initialize(&fx, &[bogus]).status, 400);
    let sid = initialize(&fx, &[])
        .header("mcp-session-id")
        .unwrap()
        .to_owned();
    let resp = fx.post(&[("Mcp-Session-Id", &sid), bogus], &legacy_list);
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["code"], -32600);
    let known = ("MCP-Protocol-Version", "2025-11-25");
    assert_eq!(
        fx.post(&[("Mcp-Session-Id", &sid), known], &legacy_list)
            .status,
        200
    );

    let fx = HttpFixture::spawn(&["--violate", "no-version-header-check"]);
    let resp = fx.post(&[bogus], &list);
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["result"]["resultType"], "complete");
    assert_eq!(initialize(&fx, &[bogus]).status, 200);
    let sid = initialize(&fx, &[])
        .header("mcp-session-id")
        .unwrap()
        .to_owned();
    let resp = fx.post(&[("Mcp-Session-Id", &sid), bogus], &legacy_list);
    assert_eq!(resp.status, 200);
    assert!(resp.json()["result"]["tools"].is_array());
}

#[test]
fn unknown_meta_version_is_served_with_echo_unknown_version() {
    let old = ("MCP-Protocol-Version", "1999-01-01");
    let mut params = json!({});
    params["_meta"] = modern_meta(json!({"io.modelcontextprotocol/protocolVersion": "1999-01-01"}));
    let list = rpc(json!(1), "tools/list", params);

    let fx = HttpFixture::spawn(&[]);
    let resp = fx.post(&[old], &list);
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["code"], -32022);
    let init = rpc(
        json!(2),
        "initialize",
        json!({"protocolVersion": "1999-01-01", "capabilities": {}}),
    );
    let resp = fx.post(&[], &init);
    assert_eq!(resp.json()["result"]["protocolVersion"], "2025-11-25");

    let fx = HttpFixture::spawn(&["--violate", "echo-unknown-version"]);
    let resp = fx.post(&[old], &list);
    assert_eq!(resp.status, 200);
    assert!(resp.json()["result"]["tools"].is_array());
    let resp = fx.post(&[], &init);
    assert_eq!(resp.json()["result"]["protocolVersion"], "1999-01-01");
}

/// A 2026 `tools/call` of `list_items` with progressToken `"p"` over HTTP: the SSE messages.
fn list_items_with_progress(args: &[&str]) -> Vec<Value> {
    let fx = HttpFixture::spawn(args);
    let params = json!({"name": "list_items", "arguments": {"limit": 3},
                        "_meta": modern_meta(json!({"progressToken": "p"}))});
    let resp = fx.post(&MODERN_HEADERS, &rpc(json!(1), "tools/call", params));
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    resp.sse_data()
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn read_only_list_items_reports_progress_over_http() {
    let events = list_items_with_progress(&["--list-tool", "good"]);
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[0]["params"],
        json!({"progressToken": "p", "progress": 1, "total": 2})
    );
    assert_eq!(
        events[1]["params"],
        json!({"progressToken": "p", "progress": 2, "total": 2})
    );
    let result = &events[2]["result"];
    assert_eq!(
        result["structuredContent"]["items"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );

    let events = list_items_with_progress(&["--list-tool", "good", "--violate", "bad-progress"]);
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[0]["params"],
        json!({"progressToken": "p-not-yours", "progress": 2, "total": 2})
    );
    assert_eq!(events[1]["params"]["progress"], 1);
}

// --- stdio -------------------------------------------------------------------------------------

fn call(fx: &mut StdioFixture, name: &str, args: Value) -> Value {
    fx.result(
        "tools/call",
        modern(json!({"name": name, "arguments": args})),
    )
}

/// The page a `list_items` result carries: `structuredContent`, or the text block's JSON.
fn page_of(result: &Value) -> Value {
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    match result.get("structuredContent") {
        Some(s) => {
            assert_eq!(&text, s, "text block mirrors structuredContent");
            s.clone()
        }
        None => text,
    }
}

fn rows(page: &Value) -> usize {
    page["items"].as_array().map_or(0, Vec::len)
}

#[test]
fn list_tool_modes_over_stdio() {
    // good: listed 17th, read-only; drains 120 items with opaque cursors; limit > 50 refused.
    let mut fx = StdioFixture::spawn(&["--list-tool", "good"]);
    let tools = fx.result("tools/list", modern(json!({})));
    let tools = tools["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 17);
    assert_eq!(tools[16]["name"], "list_items");
    assert_eq!(tools[16]["annotations"]["readOnlyHint"], true);
    let mut args = json!({"limit": 50});
    let mut seen = 0;
    for pages in 1.. {
        let page = page_of(&call(&mut fx, "list_items", args.clone()));
        seen += rows(&page);
        match page.get("nextCursor") {
            Some(c) => {
                assert!(c.as_str().unwrap().starts_with("lc1."));
                args["cursor"] = c.clone();
            }
            None => {
                assert_eq!((pages, seen), (3, 120));
                break;
            }
        }
    }
    assert_eq!(
        call(&mut fx, "list_items", json!({"limit": 51}))["isError"],
        true
    );
    let bad = json!({"name": "list_items", "arguments": {"cursor": "forged"}});
    assert_eq!(fx.error_code("tools/call", modern(bad)), -32602);

    let mut fx = StdioFixture::spawn(&["--list-tool", "unbounded"]);
    let page = page_of(&call(&mut fx, "list_items", json!({"limit": 1000})));
    assert_eq!((rows(&page), page.get("nextCursor")), (120, None));

    let mut fx = StdioFixture::spawn(&["--list-tool", "silent-cap"]);
    let page = page_of(&call(&mut fx, "list_items", json!({})));
    assert_eq!((rows(&page), page.get("nextCursor")), (10, None));

    let mut fx = StdioFixture::spawn(&["--list-tool", "flat"]);
    let result = call(&mut fx, "list_items", json!({}));
    assert!(result.get("structuredContent").is_none());
    assert_eq!(page_of(&result).as_array().map(Vec::len), Some(20));

    let mut fx = StdioFixture::spawn(&["--list-tool", "raw-cursor"]);
    let page = page_of(&call(&mut fx, "list_items", json!({})));
    assert_eq!(page["nextCursor"], "eyJvZmZzZXQiOjIwfQ==");

    let mut fx = StdioFixture::spawn(&["--list-tool", "big-page"]);
    let page = page_of(&call(&mut fx, "list_items", json!({})));
    assert_eq!(rows(&page), 20);
    assert!(page.to_string().len() > 50_000);
}

#[test]
fn result_shape_violations_over_stdio() {
    let mut fx = StdioFixture::spawn(&["--violate", "result-type,cache-hints,no-version"]);
    let list = fx.result("tools/list", modern(json!({})));
    for key in ["resultType", "ttlMs", "cacheScope"] {
        assert!(list.get(key).is_none(), "{key}: {list}");
    }
    let discover = fx.result("server/discover", modern(json!({})));
    assert!(discover.get("resultType").is_none());
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "sluice-fixture"})
    );

    let mut fx = StdioFixture::spawn(&["--violate", "reserved-code"]);
    let unknown = json!({"name": "nope", "arguments": {}});
    assert_eq!(fx.error_code("tools/call", modern(unknown.clone())), -32050);
    let mut fx = StdioFixture::spawn(&["--violate", "unknown-tool-result"]);
    assert_eq!(fx.result("tools/call", modern(unknown))["isError"], true);
}

#[test]
fn protocol_cursor_violations_over_stdio() {
    let mut fx = StdioFixture::spawn(&["--page-size", "4", "--violate", "raw-cursor"]);
    let page = fx.result("tools/list", modern(json!({})));
    assert_eq!(page["nextCursor"], "4");
    let page = fx.result("tools/list", modern(json!({"cursor": "12"})));
    assert_eq!(page["tools"][0]["name"], "reflect");
    assert!(page.get("nextCursor").is_none());

    let mut fx = StdioFixture::spawn(&["--page-size", "4", "--violate", "accept-any-cursor"]);
    let page = fx.result("tools/list", modern(json!({"cursor": "never-issued"})));
    assert_eq!(page["tools"][0]["name"], "echo");
    let mut fx = StdioFixture::spawn(&["--page-size", "4"]);
    let bogus = modern(json!({"cursor": "never-issued"}));
    assert_eq!(fx.error_code("tools/list", bogus), -32602);
}

#[test]
fn read_only_tools_leak_and_bloat_over_stdio() {
    let mut fx = StdioFixture::spawn(&["--violate", "big-read,secret"]);
    let big = call(&mut fx, "read_big", json!({"bytes": 1}));
    let text = big["content"][0]["text"].as_str().unwrap();
    assert!(text.len() > 2 * 1024 * 1024);
    assert!(text.contains("AKIAIOSFODNN7EXAMPLE") && text.contains("ghp_"));
    let lossless = call(&mut fx, "lossless", json!({}));
    assert!(
        lossless["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("AKIAIOSFODNN7EXAMPLE")
    );

    let mut fx = StdioFixture::spawn(&["--violate", "output-schema"]);
    let tools = fx.result("tools/list", modern(json!({})));
    assert_eq!(
        tools["tools"][0]["outputSchema"]["required"],
        json!(["text"])
    );
    let echo = call(&mut fx, "echo", json!({"text": "a"}));
    assert_eq!(echo["structuredContent"], json!({"text": 42}));

    let mut fx = StdioFixture::spawn(&[]);
    let big = call(&mut fx, "read_big", json!({"bytes": 1}));
    assert_eq!(big["content"][0]["text"], "x");
}
