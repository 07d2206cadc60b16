//! The read-budget and redaction helpers: `read_big`, `reflect`, `huge_read` / `huge_write`
//! (streamed answers that never sit whole in the fixture's memory), the `fixture://big/{bytes}`
//! template and the `big_prompt` prompt, over stdio and HTTP.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use common::{BIN, HttpFixture, Skim, StdioFixture, WAIT, base64_decode, modern, peak_rss_kib};
use serde_json::{Value, json};

/// Peak RSS the fixture may reach while answering 50 MB or more: far below the answer's size,
/// so a response built whole in memory (or buffered by the transport) fails the test.
const SMALL_RSS_KIB: u64 = 30 * 1024;

const MB50: usize = 50_000_000;

fn tool_call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The exact response line of `huge_read` / `huge_write` for `xs` 'x' characters.
fn huge_response(id: u64, xs: usize, modern: bool) -> String {
    let result_type = if modern {
        r#","resultType":"complete""#
    } else {
        ""
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{}"}}]{result_type}}}}}"#,
        "x".repeat(xs)
    )
}

fn tool<'a>(tools: &'a Value, name: &str) -> &'a Value {
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[test]
fn tools_are_listed_with_their_annotations() {
    let mut fx = StdioFixture::spawn(&[]);
    let tools = fx.result("tools/list", modern(json!({})));
    assert_eq!(tools["tools"].as_array().unwrap().len(), 16);
    for name in ["read_big", "reflect", "huge_read"] {
        assert_eq!(
            tool(&tools, name)["annotations"],
            json!({"readOnlyHint": true})
        );
    }
    let destructive = &tool(&tools, "huge_write")["annotations"];
    assert_eq!(
        destructive.to_string(),
        r#"{"destructiveHint":true,"readOnlyHint":false}"#
    );
    assert!(tool(&tools, "big").get("annotations").is_none());
    for name in ["read_big", "huge_read", "huge_write"] {
        assert_eq!(
            tool(&tools, name)["inputSchema"]["required"],
            json!(["bytes"])
        );
    }
}

#[test]
fn read_big_returns_exactly_n_xs() {
    let mut fx = StdioFixture::spawn(&[]);
    for n in [0, 1, 100_000] {
        let r = fx.result(
            "tools/call",
            modern(tool_call("read_big", json!({"bytes": n}))),
        );
        assert_eq!(r["content"].as_array().unwrap().len(), 1);
        let text = r["content"][0]["text"].as_str().unwrap();
        assert_eq!(text.len(), n);
        assert!(text.bytes().all(|b| b == b'x'));
    }
    let bad = fx.result(
        "tools/call",
        modern(tool_call("read_big", json!({"bytes": "10"}))),
    );
    assert_eq!(bad["isError"], true);
}

#[test]
fn reflect_round_trips_any_data() {
    let mut fx = StdioFixture::spawn(&[]);
    fx.initialize("2025-11-25");
    let nested = json!({
        "secret": "sk-live-0123456789abcdef",
        "list": [1, -0, 1.50, 123456789012345678901234567890u128, null, true, "two", {"deep": [[[]]]}],
        "obj": {"z": 1, "a": {"b": {"c": {"d": "e"}}}},
        "unicode": "h\u{e9}llo \u{1f600}",
        "empty": {}
    });
    let r = fx.result(
        "tools/call",
        tool_call(
            "reflect",
            json!({"text": "token=abc123", "structured": nested, "image_bytes": 1000}),
        ),
    );
    assert_eq!(r["structuredContent"], nested);
    // Key order and number spellings survive too.
    assert_eq!(r["structuredContent"].to_string(), nested.to_string());
    let content = r["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert_eq!(content[0], json!({"type": "text", "text": "token=abc123"}));
    assert_eq!(content[1]["type"], "text");
    let serialized: Value = serde_json::from_str(content[1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(serialized, nested);
    assert_eq!(content[2]["type"], "image");
    assert_eq!(content[2]["mimeType"], "image/png");
    let image = base64_decode(content[2]["data"].as_str().unwrap());
    assert_eq!(image.len(), 1000);
    assert_eq!(
        image[..8],
        [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n']
    );
    assert!(
        image
            .iter()
            .enumerate()
            .skip(8)
            .all(|(i, b)| *b == (i % 251) as u8)
    );
    assert!(r.get("isError").is_none());

    // Every image size decodes to exactly that many bytes.
    for n in [0usize, 1, 2, 3, 4, 7, 8, 9, 65_537] {
        let r = fx.result(
            "tools/call",
            modern(tool_call("reflect", json!({"image_bytes": n}))),
        );
        assert_eq!(r["content"].as_array().unwrap().len(), 1, "{n}");
        let image = base64_decode(r["content"][0]["data"].as_str().unwrap());
        assert_eq!(image.len(), n);
    }

    // Any JSON is structured content, even a scalar or an array.
    for value in [json!([1, [2, {"3": 4}]]), json!("s"), json!(7), json!(null)] {
        let r = fx.result(
            "tools/call",
            modern(tool_call("reflect", json!({"structured": value}))),
        );
        assert_eq!(r["structuredContent"], value);
        assert_eq!(r["content"][0]["text"], value.to_string());
        assert!(r.get("isError").is_none());
    }

    let nothing = fx.result("tools/call", tool_call("reflect", json!({})));
    assert_eq!(nothing, json!({"content": []}));

    let resp = fx.call(
        "tools/call",
        modern(tool_call(
            "reflect",
            json!({"error": "db password is hunter2"}),
        )),
    );
    assert!(resp.get("result").is_none());
    assert_eq!(
        resp["error"],
        json!({"code": -32603, "message": "db password is hunter2"})
    );
    assert_eq!(
        fx.error_code("tools/call", tool_call("reflect", json!({"text": 5}))),
        -32602
    );
}

#[test]
fn huge_answers_are_exact_over_stdio() {
    let mut fx = StdioFixture::spawn(&[]);
    // Across chunk boundaries, both eras, both tools.
    for (n, tool) in [
        (0, "huge_read"),
        (65_536, "huge_write"),
        (200_001, "huge_read"),
    ] {
        let id = fx.request("tools/call", modern(tool_call(tool, json!({"bytes": n}))));
        assert_eq!(fx.line(WAIT).unwrap(), huge_response(id, n, true));
    }
    fx.initialize("2025-11-25");
    let id = fx.request(
        "tools/call",
        tool_call("huge_write", json!({"bytes": 70_000})),
    );
    assert_eq!(fx.line(WAIT).unwrap(), huge_response(id, 70_000, false));
    let bad = fx.result("tools/call", tool_call("huge_read", json!({})));
    assert_eq!(bad["isError"], true);
}

#[test]
fn huge_write_50mb_over_stdio_keeps_rss_small() {
    let mut fx = StdioFixture::spawn(&[]);
    let id = fx.request(
        "tools/call",
        modern(tool_call("huge_write", json!({"bytes": MB50}))),
    );
    let line = fx.line(WAIT * 6).expect("the huge line");
    let expected_head =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#);
    let expected_tail = r#""}],"resultType":"complete"}}"#;
    assert_eq!(line.len(), expected_head.len() + MB50 + expected_tail.len());
    assert!(line.starts_with(&expected_head));
    assert!(line.ends_with(expected_tail));
    let xs = &line[expected_head.len()..line.len() - expected_tail.len()];
    assert!(xs.bytes().all(|b| b == b'x'));
    drop(line);
    // The fixture still answers, and never held the answer in memory.
    let echo = fx.result(
        "tools/call",
        modern(tool_call("echo", json!({"text": "after"}))),
    );
    assert_eq!(echo["content"][0]["text"], "after");
    let peak = peak_rss_kib(fx.pid());
    assert!(peak < SMALL_RSS_KIB, "fixture peak RSS {peak} KiB");
}

#[test]
fn huge_over_stdio_stops_quietly_when_the_client_stops_reading() {
    let mut child = Command::new(BIN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let call = rpc(
        json!(1),
        "tools/call",
        modern(tool_call("huge_read", json!({"bytes": 1_000_000_000u64}))),
    );
    writeln!(stdin, "{call}").unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut head = vec![0u8; 1 << 20];
    stdout.read_exact(&mut head).unwrap();
    assert!(head.starts_with(br#"{"jsonrpc":"2.0","id":1,"result":"#));
    drop(stdout);
    // Its stdout is gone: it stops (exiting quietly) long before writing a gigabyte.
    let deadline = std::time::Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "still writing");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn big_template_and_prompt_return_exactly_n_chars() {
    let mut fx = StdioFixture::spawn(&[]);
    let templates = fx.result("resources/templates/list", modern(json!({})));
    let templates = templates["resourceTemplates"].as_array().unwrap();
    assert_eq!(templates.len(), 2);
    assert_eq!(templates[0]["uriTemplate"], "fixture://item/{id}");
    assert_eq!(templates[1]["uriTemplate"], "fixture://big/{bytes}");
    assert_eq!(templates[1]["mimeType"], "text/plain");

    for n in [0usize, 5, 1_000_003] {
        let uri = format!("fixture://big/{n}");
        let r = fx.result("resources/read", modern(json!({"uri": uri})));
        let contents = r["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 1);
        assert_eq!(contents[0]["uri"], uri.as_str());
        assert_eq!(contents[0]["mimeType"], "text/plain");
        let text = contents[0]["text"].as_str().unwrap();
        assert_eq!(text.len(), n);
        assert!(text.bytes().all(|b| b == b'x'));
    }
    assert_eq!(
        fx.error_code(
            "resources/read",
            modern(json!({"uri": "fixture://big/12abc"}))
        ),
        -32602
    );

    let prompts = fx.result("prompts/list", modern(json!({})));
    let names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["greet", "big_prompt"]);
    assert_eq!(
        prompts["prompts"][1]["arguments"],
        json!([{"name": "bytes", "description": "How many 'x' characters (a decimal string, or an integer)", "required": true}])
    );
    for n in [0usize, 1_000_003] {
        let r = fx.result(
            "prompts/get",
            modern(json!({"name": "big_prompt", "arguments": {"bytes": n.to_string()}})),
        );
        let messages = r["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0]["role"], "user");
        assert_eq!(messages[0]["content"]["type"], "text");
        let text = messages[0]["content"]["text"].as_str().unwrap();
        assert_eq!(text.len(), n);
        assert!(text.bytes().all(|b| b == b'x'));
    }
    assert_eq!(
        fx.error_code(
            "prompts/get",
            modern(json!({"name": "big_prompt", "arguments": {}}))
        ),
        -32602
    );
}

// --- HTTP --------------------------------------------------------------------------------------

const MODERN_HEADERS: [(&str, &str); 1] = [("MCP-Protocol-Version", "2026-07-28")];

/// Checks a skimmed `huge_*` body.
fn assert_huge_body(skim: &Skim, id: u64, xs: usize, modern: bool) {
    let expected = huge_response(id, 0, modern);
    let (head, tail) = expected.split_at(expected.find(r#""}]"#).unwrap());
    assert_eq!(skim.len, expected.len() + xs);
    let framing_xs = expected.bytes().filter(|b| *b == b'x').count(); // "text"
    assert_eq!(skim.xs, framing_xs + xs);
    assert_eq!(&skim.head_str()[..head.len()], head);
    assert!(skim.tail_str().ends_with(tail), "{}", skim.tail_str());
}

#[test]
fn huge_read_50mb_over_modern_http_is_streamed_with_small_rss() {
    let fx = HttpFixture::spawn(&[]);
    let body = rpc(
        json!(7),
        "tools/call",
        modern(tool_call("huge_read", json!({"bytes": MB50}))),
    )
    .to_string();
    let mut stream = fx.open("POST", &MODERN_HEADERS, Some(&body));
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("application/json"));
    let skim = stream.skim_to_end(256);
    assert_huge_body(&skim, 7, MB50, true);
    let peak = peak_rss_kib(fx.pid());
    assert!(peak < SMALL_RSS_KIB, "fixture peak RSS {peak} KiB");
}

#[test]
fn huge_write_over_legacy_http_and_sse() {
    let fx = HttpFixture::spawn(&[]);
    let init = fx.post(
        &[],
        &rpc(
            json!(1),
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}),
        ),
    );
    let sid = init.header("mcp-session-id").unwrap().to_owned();
    let headers = [
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let body = rpc(
        json!(2),
        "tools/call",
        tool_call("huge_write", json!({"bytes": 300_000})),
    )
    .to_string();
    let mut stream = fx.open("POST", &headers, Some(&body));
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("application/json"));
    assert_eq!(stream.read_to_end(), huge_response(2, 300_000, false));

    // Asking for progress makes it an SSE stream: one event, the same response as its data.
    let params = json!({"name": "huge_read", "arguments": {"bytes": 100_000},
                        "_meta": {"progressToken": "p"}});
    let sse = fx.post(&headers, &rpc(json!(3), "tools/call", params));
    assert_eq!(sse.header("content-type"), Some("text/event-stream"));
    assert_eq!(sse.sse_data(), [huge_response(3, 100_000, false)]);
}

#[test]
fn huge_over_http_stops_quietly_when_the_client_goes_away() {
    let fx = HttpFixture::spawn(&[]);
    let body = rpc(
        json!(1),
        "tools/call",
        modern(tool_call("huge_write", json!({"bytes": 1_000_000_000u64}))),
    )
    .to_string();
    let mut reader = BufReader::new(fx.send("POST", &MODERN_HEADERS, Some(&body)));
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.contains(" 200 "), "{status}");
    let mut some = vec![0u8; 1 << 20];
    reader.read_exact(&mut some).unwrap();
    drop(reader);
    // The server is still fine, and did not buffer what the client did not read.
    let echo = fx.post(
        &MODERN_HEADERS,
        &rpc(
            json!(2),
            "tools/call",
            modern(tool_call("echo", json!({"text": "still here"}))),
        ),
    );
    assert_eq!(echo.json()["result"]["content"][0]["text"], "still here");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let peak = peak_rss_kib(fx.pid());
    assert!(peak < SMALL_RSS_KIB, "fixture peak RSS {peak} KiB");
}

#[test]
fn reflect_error_over_http() {
    let fx = HttpFixture::spawn(&[]);
    let resp = fx.post(
        &MODERN_HEADERS,
        &rpc(
            json!(1),
            "tools/call",
            modern(tool_call("reflect", json!({"error": "boom"}))),
        ),
    );
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.json(),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}})
    );
}
