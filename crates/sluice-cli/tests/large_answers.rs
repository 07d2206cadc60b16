//! Answers of 256 KiB and more, which sluice carries as their text from
//! the upstream to the client (`sluice_core::payload`), through the real
//! binary: redacted, measured and shaped exactly as a small answer is, and
//! at a cost in memory of a small multiple of their size whatever their
//! shape.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};

const GITHUB_TOKEN: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

/// A row with a secret under a secret key and one in its text.
fn row(i: usize) -> Value {
    json!({"id": i % 7, "password": "hunter2", "note": format!("token {GITHUB_TOKEN}"), "ratio": 1.50})
}

fn config() -> String {
    format!(
        "{}trusted = true\n",
        fixture_upstream("fx", &["--era", "legacy"])
    )
}

/// The rows of a `reflect` answer, and its raw text.
fn rows(answer: &Value) -> &Vec<Value> {
    answer["result"]["structuredContent"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("rows in {answer}"))
}

/// What a client reads of `count` rows through sluice must be what it reads
/// of one row, `count` times: the same redactions, the same fields.
fn assert_redacted_alike(small: &Value, large: &Value, large_text: &str, count: usize) {
    let one = &rows(small)[0];
    assert_eq!(one["password"], "[redacted]", "{small}");
    assert!(!one["note"].as_str().unwrap().contains(GITHUB_TOKEN));
    let rows = rows(large);
    assert_eq!(rows.len(), count);
    for (i, row) in rows.iter().enumerate() {
        let mut expected = one.clone();
        expected["id"] = json!(i % 7);
        assert_eq!(row, &expected, "row {i}");
    }
    for secret in [GITHUB_TOKEN, "hunter2"] {
        assert!(!large_text.contains(secret), "{secret} reached the client");
    }
    // The same top-level fields, shaped the same, and the same text block.
    let keys = |v: &Value| {
        let mut keys: Vec<String> = v["result"].as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(small), keys(large));
    let text: Value =
        serde_json::from_str(large["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["rows"].as_array().unwrap().len(), count);
    assert!(text.to_string().matches("[redacted]").count() >= count * 2);
}

#[tokio::test]
async fn a_large_answer_is_redacted_and_shaped_as_a_small_one_over_stdio() {
    let mut s = StdioSluice::start(&config()).await;
    s.initialize(json!({})).await;
    let small = s
        .call(1, "fx__reflect", json!({"structured": {"rows": [row(0)]}}))
        .await;
    // About 600 KiB of answer: over the size from which it is text.
    let count = 4000;
    let many: Vec<Value> = (0..count).map(row).collect();
    s.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "fx__reflect", "arguments": {"structured": {"rows": many}}}}))
        .await;
    let line = s.recv_line().await;
    assert!(line.len() > 256 * 1024, "{} bytes", line.len());
    let large: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(large["id"], 2);
    assert_redacted_alike(&small, &large, &line, count);
    // A legacy client gets no modern fields.
    assert!(large["result"].get("resultType").is_none());
}

#[tokio::test]
async fn a_large_answer_is_redacted_and_shaped_as_a_small_one_over_http() {
    let s = HttpSluice::start(&config()).await;
    let small = s
        .call(1, "fx__reflect", json!({"structured": {"rows": [row(0)]}}))
        .await;
    let count = 4000;
    let many: Vec<Value> = (0..count).map(row).collect();
    let params = json!({"name": "fx__reflect", "arguments": {"structured": {"rows": many}}});
    let response = s.modern(2, "tools/call", params).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let large: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(large["id"], 2);
    assert_redacted_alike(&small, &large, &body, count);
    // A modern client's result is shaped for it, as a small one is.
    assert_eq!(large["result"]["resultType"], "complete");
    assert_eq!(
        large["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
        small["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]
    );
}

/// A read-only tool's large answer is measured over its text: refused whole
/// over the budget, passed under it.
#[tokio::test]
async fn a_large_read_is_measured_over_its_text() {
    // The default budget: 1 MiB.
    let mut s = StdioSluice::start(&config()).await;
    s.initialize(json!({})).await;
    let under = s.call(1, "fx__huge_read", json!({"bytes": 600_000})).await;
    let text = first_text(&under);
    assert_eq!(text.len(), 600_000, "{}", &text[..64.min(text.len())]);
    let over = s
        .call(2, "fx__huge_read", json!({"bytes": 2_000_000}))
        .await;
    assert_eq!(over["result"]["isError"], true, "{over}");
    assert_eq!(
        over["result"]["structuredContent"]["error"]["code"],
        "MCP_READ_RESPONSE_TOO_LARGE"
    );
    assert!(!over.to_string().contains("xxxx"));
}

/// 14 MiB of `{"k":1}`: 1.8 million tiny objects, the costliest shape per
/// byte as a tree (about 70 times its size). Carried as text, sluice's
/// peak memory grows by at most four times the answer.
#[tokio::test]
async fn a_large_answer_of_tiny_objects_costs_a_small_multiple_of_its_size() {
    let mut s = StdioSluice::start(&config()).await;
    s.initialize(json!({})).await;
    let pid = s.child.id().unwrap();
    let answer = s.call(1, "fx__echo", json!({"text": "warm"})).await;
    assert_eq!(first_text(&answer), "warm");
    let before = status_kib(pid, "VmRSS:");
    let bytes: u64 = 14 << 20;
    s.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "fx__huge_write", "arguments": {"bytes": bytes, "shape": "objects"}}}))
        .await;
    let line = s.recv_line().await;
    let peak = status_kib(pid, "VmHWM:");
    let answer: Value = serde_json::from_str(&line).unwrap();
    let objects = answer["result"]["structuredContent"]["a"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", &line[..200.min(line.len())]));
    let expected = usize::try_from(bytes).unwrap() / r#"{"k":1},"#.len();
    assert_eq!(objects.len(), expected);
    assert!(objects.iter().all(|o| o == &json!({"k": 1})));
    let grown = peak.saturating_sub(before);
    let size_kib = u64::try_from(line.len()).unwrap() / 1024;
    println!(
        "RSS {before} KiB before, peak {peak} KiB: grew {grown} KiB for a {size_kib} KiB answer"
    );
    assert!(
        grown <= 4 * size_kib,
        "grew {grown} KiB for a {size_kib} KiB answer"
    );
    // And the next call is served.
    let answer = s.call(3, "fx__echo", json!({"text": "after"})).await;
    assert_eq!(first_text(&answer), "after");
}
