//! Client requests of 256 KiB and more, which sluice reads by the members
//! it needs and carries the rest as text (`sluice_core::carried`), through
//! the real binary: what reaches the upstream is what the client sent, and
//! a hostile request costs a small multiple of its size whatever its shape,
//! refused or served.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};

/// `n` tiny objects (`{"k":1}`): the costliest shape per byte as a tree.
fn tiny_objects(n: usize) -> Value {
    Value::Array(vec![json!({"k": 1}); n])
}

/// The fixture, with every line sluice writes to it copied to `log`.
fn logged_fixture(log: &std::path::Path) -> String {
    let script = format!(
        "tee -a '{}' | '{}' --era legacy",
        log.display(),
        fixture_bin()
    );
    format!(
        "[[upstream]]\nname = \"fx\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nallow_dangerous = true\ntrusted = true\n"
    )
}

#[tokio::test]
async fn a_large_request_reaches_the_upstream_as_the_client_sent_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("upstream-stdin.log");
    let mut s = StdioSluice::start(&logged_fixture(&log)).await;
    s.initialize(json!({})).await;
    let rows: Vec<String> = (0..3000)
        .map(|i| format!(r#"{{"id":{i},"note":"plain","ratio":1.50,"big":12345678901234567890}}"#))
        .collect();
    let rows = format!("[{}]", rows.join(","));
    let extra = tiny_objects(20_000);
    let vendor = tiny_objects(20_000);
    // Key order, an unknown member, an unknown `_meta` key, number
    // spellings (`1.50`): all must reach the upstream as sent.
    let params = format!(
        r#"{{"name":"fx__reflect","x-extra":{extra},"arguments":{{"text":"hi","structured":{{"rows":{rows}}}}},"_meta":{{"vendor.example/k":{vendor},"progressToken":5}}}}"#
    );
    let line = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{params}}}"#);
    assert!(line.len() > 256 * 1024, "{} bytes", line.len());
    s.send_raw(&line).await;
    let answer = s.response(2).await;
    let rows: Value = serde_json::from_str(&rows).unwrap();
    assert_eq!(answer["result"]["structuredContent"]["rows"], rows);
    assert_eq!(first_text(&answer), "hi");

    #[allow(clippy::disallowed_methods)] // the fixture's copy of its input
    let sent = std::fs::read_to_string(&log).unwrap();
    let request = sent
        .lines()
        .find(|l| l.contains(r#""method":"tools/call""#))
        .expect("the call reached the upstream");
    // The params' text, member by member, as the client wrote it.
    let raw = request
        .split_once(r#","params":"#)
        .map(|(_, rest)| rest.strip_suffix('}').unwrap())
        .unwrap();
    assert!(
        raw.starts_with(&format!(
            r#"{{"name":"reflect","x-extra":{extra},"arguments":{{"text":"hi","structured":{{"rows":[{{"id":0,"note":"plain","ratio":1.50,"big":12345678901234567890}}"#
        )),
        "{}",
        &raw[raw.find("\"arguments\"").unwrap_or(0)..][..160]
    );
    let forwarded: Value = serde_json::from_str(raw).unwrap();
    let mut expected: Value = serde_json::from_str(&params).unwrap();
    expected["name"] = json!("reflect");
    // sluice's own progress token stands for the client's.
    let token = &forwarded["_meta"]["progressToken"];
    assert!(token.as_str().unwrap().starts_with("sluice-"), "{token}");
    expected["_meta"]["progressToken"] = token.clone();
    assert_eq!(forwarded, expected);
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&forwarded), ["name", "x-extra", "arguments", "_meta"]);
    assert_eq!(
        keys(&forwarded["_meta"]),
        ["vendor.example/k", "progressToken"]
    );
}

/// 14 MiB of tiny objects in a request's params: 1.8 million values, which
/// as a tree would take about 170 times their size. Refused for want of a
/// session, answered by sluice itself, or forwarded, sluice's peak memory
/// grows by at most four times the request.
#[tokio::test]
async fn a_large_request_of_tiny_objects_costs_a_small_multiple_of_its_size() {
    let s = HttpSluice::start(&fixture_upstream("fx", &[])).await;
    let pid = s.child.id().unwrap();
    let answer = s.call(1, "fx__echo", json!({"text": "warm"})).await;
    assert_eq!(first_text(&answer), "warm");
    let bulk = tiny_objects((14 << 20) / r#"{"k":1},"#.len());
    let size_kib = u64::try_from(bulk.to_string().len()).unwrap() / 1024;
    let bound = |what: &str, before: u64| {
        let grown = status_kib(pid, "VmHWM:").saturating_sub(before);
        println!("{what}: RSS grew {grown} KiB for a {size_kib} KiB request");
        assert!(
            grown <= 4 * size_kib,
            "{what}: grew {grown} KiB for a {size_kib} KiB request"
        );
    };

    // A legacy request without a session: refused, having cost its read.
    let before = status_kib(pid, "VmRSS:");
    let refused = s
        .post(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "fx__echo", "a": bulk}}),
            &[],
        )
        .await;
    assert_eq!(refused.status(), 400);
    let refused = messages(refused).await.pop().unwrap();
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    bound("refused", before);

    // A list: answered by sluice.
    let before = status_kib(pid, "VmRSS:");
    let listed = s.modern(3, "tools/list", json!({"a": bulk})).await;
    assert_eq!(listed.status(), 200);
    let listed = messages(listed).await.pop().unwrap();
    assert!(
        listed["result"]["tools"].as_array().unwrap().len() > 10,
        "{listed}"
    );
    bound("list", before);

    // A call whose arguments are the bulk: forwarded whole.
    let before = status_kib(pid, "VmRSS:");
    let echoed = s
        .call(4, "fx__echo", json!({"text": "served", "a": bulk}))
        .await;
    assert_eq!(first_text(&echoed), "served", "{echoed}");
    bound("call", before);

    // And the next call is served.
    let answer = s.call(5, "fx__echo", json!({"text": "after"})).await;
    assert_eq!(first_text(&answer), "after");
}
