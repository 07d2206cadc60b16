//! The read budget and secret redaction through the real binary: a
//! trusted read-only tool's oversized result is refused whole with nothing
//! of it; a mutation's result passes whole; the boundary is exact to the
//! byte; secrets never reach the client; an upstream message over the
//! transport ceiling is discarded without being buffered.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};

/// A legacy client on stdio, over a legacy fixture: results pass without
/// any era shaping, so what the client reads is exactly what sluice
/// measured.
async fn legacy_sluice(extra: &str, upstream: &str) -> StdioSluice {
    let config = format!("{extra}\n{upstream}");
    let mut s = StdioSluice::start(&config).await;
    s.initialize(json!({})).await;
    s
}

fn fixture(trusted: bool, extra_args: &[&str]) -> String {
    let mut args = vec!["--era", "legacy"];
    args.extend_from_slice(extra_args);
    format!("{}trusted = {trusted}\n", fixture_upstream("fx", &args))
}

fn compact_len(v: &Value) -> usize {
    serde_json::to_string(v).unwrap().len()
}

fn assert_tool_refusal(answer: &Value, limit: usize) {
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    assert_eq!(
        result["structuredContent"]["error"]["code"],
        "MCP_READ_RESPONSE_TOO_LARGE"
    );
    assert_eq!(
        result["structuredContent"]["responseBudget"]["limitBytes"],
        limit
    );
    assert_eq!(
        result["structuredContent"]["responseBudget"]["measurement"],
        "above-limit"
    );
    let text = answer.to_string();
    assert!(!text.contains("xxxx"), "a byte of the payload leaked");
    // Nothing else: the refusal is the same whatever was refused.
    let mut fixed = result.clone();
    fixed.as_object_mut().unwrap().remove("_meta");
    assert_eq!(fixed, sluice_refusal(limit));
}

/// The refusal sluice documents, with only the limit variable.
fn sluice_refusal(limit: usize) -> Value {
    json!({
        "content": [{"type": "text", "text": "The result was withheld whole: it is larger than the read budget this gateway allows (mcp_read_response_max_bytes). Nothing of it was returned. Request less data and call again."}],
        "structuredContent": {
            "error": {"code": "MCP_READ_RESPONSE_TOO_LARGE", "category": "client", "retriable": false,
                      "recoveryHint": "Request less data: narrow the query, a smaller range or page, or fewer fields, then call again."},
            "responseBudget": {"limitBytes": limit, "measurement": "above-limit", "scope": "mcp-read-result"},
            "status": "response-too-large",
        },
        "isError": true,
    })
}

#[tokio::test]
async fn a_read_only_tool_is_refused_whole_and_a_mutation_passes_whole() {
    let mut s = legacy_sluice("", &fixture(true, &[])).await;
    let answer = s.call(1, "fx__read_big", json!({"bytes": 2_000_000})).await;
    assert_tool_refusal(&answer, 1_048_576);
    assert!(!answer.to_string().contains("2000000"), "the size leaked");
    // A destructive tool's result is never withheld, whatever its size.
    let answer = s.call(2, "fx__big", json!({"bytes": 2_000_000})).await;
    let text = first_text(&answer);
    assert_eq!(text.len(), 2_000_000);
    assert!(text.bytes().all(|b| b == b'x'));
}

#[tokio::test]
async fn a_read_only_hint_counts_only_from_a_trusted_upstream() {
    let mut s = legacy_sluice("", &fixture(false, &[])).await;
    let answer = s.call(1, "fx__read_big", json!({"bytes": 2_000_000})).await;
    assert_eq!(
        first_text(&answer).len(),
        2_000_000,
        "untrusted hint: mutation-capable"
    );
    drop(s);
    // The config may name a tool read-only whatever the upstream says.
    let listed = format!("{}read_only_tools = [\"big\"]\n", fixture(false, &[]));
    let mut s = legacy_sluice("", &listed).await;
    let answer = s.call(1, "fx__big", json!({"bytes": 2_000_000})).await;
    assert_tool_refusal(&answer, 1_048_576);
}

#[tokio::test]
async fn the_boundary_is_exact_to_the_byte() {
    let limit = 65_536;
    let mut s = legacy_sluice(
        &format!("[limits]\nmcp_read_response_max_bytes = {limit}\n"),
        &fixture(true, &[]),
    )
    .await;
    let small = s.call(1, "fx__read_big", json!({"bytes": 10})).await;
    let overhead = compact_len(&small["result"]) - 10;
    let at = limit - overhead;
    let answer = s.call(2, "fx__read_big", json!({"bytes": at})).await;
    assert_eq!(compact_len(&answer["result"]), limit);
    assert_eq!(first_text(&answer).len(), at);
    let answer = s.call(3, "fx__read_big", json!({"bytes": at + 1})).await;
    assert_tool_refusal(&answer, limit);
}

#[tokio::test]
async fn per_tool_budgets_override_the_global_one() {
    let upstream = format!(
        "{}tool_read_budget = {{ read_big = 131072 }}\n",
        fixture(true, &[])
    );
    let mut s = legacy_sluice("[limits]\nmcp_read_response_max_bytes = 65536\n", &upstream).await;
    let answer = s.call(1, "fx__read_big", json!({"bytes": 100_000})).await;
    assert_eq!(first_text(&answer).len(), 100_000);
    let answer = s.call(2, "fx__read_big", json!({"bytes": 140_000})).await;
    assert_tool_refusal(&answer, 131_072);
    let answer = s
        .call(3, "fx__reflect", json!({"text": "y".repeat(70_000)}))
        .await;
    assert_tool_refusal(&answer, 65_536);
}

#[tokio::test]
async fn resources_and_prompts_are_refused_with_fixed_data_and_no_uri() {
    let mut s = legacy_sluice("", &fixture(true, &[])).await;
    let answer = s
        .request(1, "resources/read", json!({"uri": "fixture://big/2000000"}))
        .await;
    let error = &answer["error"];
    assert_eq!(error["code"], -32602, "{answer}");
    assert_eq!(error["data"]["surface"], "resource");
    assert_eq!(
        error["data"]["error"]["code"],
        "MCP_READ_RESPONSE_TOO_LARGE"
    );
    assert_eq!(error["data"]["responseBudget"]["limitBytes"], 1_048_576);
    let text = answer.to_string();
    assert!(
        !text.contains("fixture://") && !text.contains("2000000") && !text.contains("xxxx"),
        "{text}"
    );
    let answer = s
        .request(
            2,
            "prompts/get",
            json!({"name": "fx__big_prompt", "arguments": {"bytes": "2000000"}}),
        )
        .await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(answer["error"]["data"]["surface"], "prompt");
    let text = answer.to_string();
    assert!(
        !text.contains("big_prompt") && !text.contains("2000000"),
        "{text}"
    );
    // Under the budget both pass.
    let answer = s
        .request(3, "resources/read", json!({"uri": "fixture://big/1000"}))
        .await;
    assert_eq!(
        answer["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .len(),
        1000
    );
}

#[tokio::test]
async fn binary_content_is_bounded_by_its_raw_ceiling() {
    let limit = 65_536;
    let ceiling = (limit - 4_096) / 4 * 3;
    let mut s = legacy_sluice(
        &format!("[limits]\nmcp_read_response_max_bytes = {limit}\n"),
        &fixture(true, &[]),
    )
    .await;
    let answer = s
        .call(1, "fx__reflect", json!({"image_bytes": ceiling}))
        .await;
    let data = answer["result"]["content"][0]["data"].as_str().unwrap();
    assert_eq!(
        data.len(),
        ceiling / 3 * 4,
        "{}",
        &answer.to_string()[..200]
    );
    // Three more raw bytes: the JSON would still fit, the raw ceiling does not.
    let answer = s
        .call(2, "fx__reflect", json!({"image_bytes": ceiling + 3}))
        .await;
    assert!(compact_len(&json!({"data": "A".repeat((ceiling + 3) / 3 * 4)})) < limit);
    assert_tool_refusal(&answer, limit);
}

#[tokio::test]
async fn secrets_never_reach_the_client() {
    // SAFETY of the values: all fake.
    let env_secret = "env-named-secret-value-42";
    let upstream_credential = "fixture-credential-0123456789";
    let upstream = format!(
        "{}env = {{ API_TOKEN = \"{upstream_credential}\" }}\n",
        fixture(true, &[])
    );
    let config = format!("[redaction]\nsecret_env = [\"SLUICE_TEST_SECRET\"]\n\n{upstream}");
    let (dir, path) = write_config(&config);
    let mut child = tokio::process::Command::new(sluice_bin())
        .args(["serve", "--stdio", "--config"])
        .arg(&path)
        .env("SLUICE_LOG", "warn")
        .env("SLUICE_TEST_SECRET", env_secret)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stdout.take().unwrap()));
    let mut send = async |m: Value| {
        let mut line = m.to_string();
        line.push('\n');
        tokio::io::AsyncWriteExt::write_all(&mut stdin, line.as_bytes())
            .await
            .unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})).await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let github = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let structured = json!({
        "db": {"password": "correct-horse-battery", "url": "postgres://app:s3cr3t-pw@db.example.com/prod"},
        "items": [{"name": "a", "sessionToken": "tok-1234567890"}, {"name": "b", "note": format!("key {github}")}],
        "count": 2,
    });
    let text = format!(
        "Authorization: Bearer abc.def-123456 and {env_secret} and {upstream_credential} and AKIAABCDEFGHIJKLMNOP"
    );
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fx__reflect", "arguments": {"text": text, "structured": structured}}})).await;
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fx__reflect", "arguments": {"error": format!("failed with password={env_secret}")}}})).await;
    // Everything sluice writes, until the answers to 1 and 2 are in.
    let mut answers: Vec<String> = Vec::new();
    let answered = |lines: &[String], id: i64| {
        lines.iter().any(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|m| m["id"] == id && m.get("method").is_none())
        })
    };
    while !(answered(&answers, 1) && answered(&answers, 2)) {
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        answers.push(line);
    }
    let all = answers.join("\n");
    for secret in [
        env_secret,
        upstream_credential,
        github,
        "correct-horse-battery",
        "s3cr3t-pw",
        "tok-1234567890",
        "abc.def-123456",
        "AKIAABCDEFGHIJKLMNOP",
    ] {
        assert!(!all.contains(secret), "{secret} reached the client: {all}");
    }
    let by_id = |id: i64| -> Value {
        answers
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|m| m["id"] == id && m.get("method").is_none())
            .unwrap()
    };
    let result = by_id(1);
    let sc = &result["result"]["structuredContent"];
    assert_eq!(sc["db"]["password"], "[redacted]");
    assert_eq!(
        sc["db"]["url"],
        "postgres://app:[redacted]@db.example.com/prod"
    );
    assert_eq!(sc["items"][0]["sessionToken"], "[redacted]");
    assert_eq!(sc["items"][0]["name"], "a");
    assert_eq!(sc["count"], 2);
    let error = by_id(2);
    assert_eq!(error["error"]["message"], "failed with password=[redacted]");
    drop(dir);
}

#[tokio::test]
async fn a_projection_returns_only_what_the_operator_keeps() {
    let mut s = legacy_sluice(
        "[[policy.project]]\ntool = \"fx__reflect\"\nkeep = [\"$.summary\", \"$.messages[*].reply_ms\"]\n",
        &fixture(true, &[]),
    )
    .await;
    let structured = json!({
        "summary": {"participants": 2},
        "messages": [{"author_id": "1234", "content": "hello there", "reply_ms": 10}],
    });
    let answer = s
        .call(
            1,
            "fx__reflect",
            json!({"text": "alice said hello there", "structured": structured}),
        )
        .await;
    let result = &answer["result"];
    assert_eq!(
        result["structuredContent"],
        json!({"summary": {"participants": 2}, "messages": [{"reply_ms": 10}]})
    );
    let text = answer.to_string();
    for leaked in ["alice", "hello there", "1234"] {
        assert!(!text.contains(leaked), "{leaked}: {text}");
    }
}

fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn a_hundred_megabyte_answer_is_never_buffered() {
    let mut s = legacy_sluice("", &fixture(true, &[])).await;
    let pid = s.child.id().unwrap();
    let answer = s
        .call(1, "fx__huge_read", json!({"bytes": 100_000_000}))
        .await;
    assert_tool_refusal(&answer, 1_048_576);
    let answer = s
        .call(2, "fx__huge_write", json!({"bytes": 100_000_000}))
        .await;
    assert_eq!(answer["error"]["code"], -32007, "{answer}");
    assert_eq!(answer["error"]["data"]["upstream"], "fx");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("could not be relayed"),
        "{answer}"
    );
    // The connection survives: the next call is answered.
    let answer = s.call(3, "fx__echo", json!({"text": "still here"})).await;
    assert_eq!(first_text(&answer), "still here");
    // The transport ceiling is 16 MiB; 200 MB went by.
    let peak = peak_rss_kib(pid);
    println!("sluice peak RSS after two 100 MB answers: {peak} KiB");
    assert!(
        peak < 80 * 1024,
        "peak RSS {peak} KiB grew with the message"
    );
}

/// Progress messages are upstream text too: redacted like results.
#[tokio::test]
async fn secrets_in_progress_messages_are_redacted() {
    let mut s = legacy_sluice("", &fixture(true, &[])).await;
    let github = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let answer = s
        .request(
            1,
            "tools/call",
            json!({"name": "fx__progress", "arguments": {"steps": 2, "message": format!("pushing with {github}")},
                   "_meta": {"progressToken": "p1"}}),
        )
        .await;
    assert_eq!(first_text(&answer), "done");
    let progress: Vec<&Value> = s
        .seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 2, "{:?}", s.seen);
    for p in progress {
        assert_eq!(p["params"]["progressToken"], "p1");
        assert_eq!(p["params"]["message"], "pushing with [redacted]");
    }
}
