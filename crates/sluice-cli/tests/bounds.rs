//! Memory bounds of what sluice holds per client, read from /proc: a
//! session keeps no more of `initialize` than the few bytes it uses,
//! however much the client declared.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};

/// Resident memory of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// An `initialize` whose capabilities carry `padding` bytes of
/// `experimental`, beside the ones sluice acts on.
fn fat_initialize(id: i64, padding: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "experimental": {"blob": "x".repeat(padding)},
            "elicitation": {"form": {}},
            "roots": {"listChanged": true},
        },
        "clientInfo": {"name": "fat", "version": "0"},
    }})
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_do_not_hold_what_initialize_declared_beyond_what_they_use() {
    const PADDING: usize = 1 << 20;
    let s = HttpSluice::start(&fixture_upstream("fx", &[])).await;
    let pid = s.child.id().unwrap();
    let mut sessions = Vec::new();
    let open = |id| {
        let s = &s;
        async move {
            let resp = s.post(&fat_initialize(id, PADDING), &[]).await;
            assert_eq!(resp.status(), 200);
            resp.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned()
        }
    };
    for id in 0..5 {
        sessions.push(open(id).await);
    }
    let warm = rss_kib(pid);
    for id in 5..45 {
        sessions.push(open(id).await);
    }
    let grown = rss_kib(pid).saturating_sub(warm);
    // Holding 40 more declarations whole would be 40 MiB at the least; a
    // session keeps a few hundred bytes of them.
    assert!(grown < 16 * 1024, "RSS grew {grown} KiB over 40 sessions");
    // And the sessions work.
    let session = &sessions[44];
    let headers = [("mcp-session-id", session.as_str())];
    let _ = s
        .post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            &headers,
        )
        .await;
    let list = s
        .post(
            &json!({"jsonrpc": "2.0", "id": 100, "method": "tools/list"}),
            &headers,
        )
        .await;
    let answer = messages(list).await.pop().unwrap();
    assert!(!names(&answer, "tools").is_empty(), "{answer}");
}

/// A 2 MiB answer of a quarter of a million tiny objects (the costliest
/// shape per byte, `scripts/bench-isolation.py`'s) arrives whole over both
/// transports, and a call to another upstream made meanwhile is answered.
#[tokio::test(flavor = "multi_thread")]
async fn a_large_answer_of_tiny_objects_arrives_whole_over_both_transports() {
    const BYTES: u64 = 2 << 20;
    let count = usize::try_from(BYTES).unwrap() / r#"{"k":1},"#.len();
    let config = format!(
        "{}{}",
        fixture_upstream("fx", &[]),
        fixture_upstream("fy", &[])
    );
    let arguments = json!({"bytes": BYTES, "shape": "objects"});
    let whole = |answer: &Value, how: &str| {
        let items = answer["result"]["structuredContent"]["a"]
            .as_array()
            .unwrap_or_else(|| panic!("{how}: no array in {}", &answer.to_string()[..200]));
        assert_eq!(items.len(), count, "{how}");
        assert!(items.iter().all(|i| *i == json!({"k": 1})), "{how}");
        assert_eq!(answer["result"]["content"], json!([]), "{how}");
    };

    let http = std::sync::Arc::new(HttpSluice::start(&config).await);
    let big = {
        let http = std::sync::Arc::clone(&http);
        let arguments = arguments.clone();
        tokio::spawn(async move { http.call(1, "fx__huge_write", arguments).await })
    };
    let echo = http.call(2, "fy__echo", json!({"text": "meanwhile"})).await;
    assert_eq!(echo["result"]["content"][0]["text"], "meanwhile", "{echo}");
    whole(&big.await.unwrap(), "http");

    let mut stdio = StdioSluice::start(&config).await;
    whole(&stdio.call(3, "fx__huge_write", arguments).await, "stdio");
    let echo = stdio.call(4, "fy__echo", json!({"text": "after"})).await;
    assert_eq!(echo["result"]["content"][0]["text"], "after", "{echo}");
}
