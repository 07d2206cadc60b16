//! Envelope-safe lists through the real binary: a 537-tool catalog whose
//! descriptions run from 10 bytes to 20 KB, drained through
//! `sluice_list_tools` (progressive mode) and through `tools/list`, every
//! tool exactly once, every page under its byte cap; bad limits and bad
//! cursors refused with -32602.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashSet;

use common::*;
use serde_json::{Value, json};

/// 16 fixed tools + 521 generated = 537.
const GENERATED: &str = "521";
const TOTAL: usize = 537;

fn upstream() -> String {
    fixture_upstream("fx", &["--tools", GENERATED, "--varied-descriptions"])
}

fn compact_len(v: &Value) -> usize {
    serde_json::to_string(v).unwrap().len()
}

/// A meta-tool call's answer: `structuredContent`, or the JSON-RPC error.
async fn meta(s: &HttpSluice, id: i64, name: &str, args: Value) -> Result<Value, Value> {
    let answer = s.call(id, name, args).await;
    match answer.get("error") {
        Some(e) => Err(e.clone()),
        None => {
            let result = &answer["result"];
            // The text copy says the same as the structured content.
            let text: Value =
                serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(text, result["structuredContent"]);
            Ok(result["structuredContent"].clone())
        }
    }
}

/// Drains `sluice_list_tools`; returns the rows and the pages.
async fn drain_tools(
    s: &HttpSluice,
    limit: usize,
    fields: &str,
    filter: Value,
) -> (Vec<Value>, Vec<Value>) {
    let mut rows = Vec::new();
    let mut pages = Vec::new();
    let mut cursor: Option<Value> = None;
    for id in 0..2_000 {
        let mut args = json!({"limit": limit, "fields": fields});
        if let (Some(obj), Some(f)) = (args.as_object_mut(), filter.as_object()) {
            obj.extend(f.clone());
        }
        if let Some(c) = &cursor {
            args["cursor"] = c.clone();
        }
        let page = meta(s, 1_000 + id, "sluice_list_tools", args)
            .await
            .unwrap();
        rows.extend(page["items"].as_array().unwrap().iter().cloned());
        cursor = page.get("nextCursor").cloned();
        pages.push(page);
        if cursor.is_none() {
            return (rows, pages);
        }
    }
    panic!("more pages than tools");
}

fn assert_every_tool_once(rows: &[Value]) {
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    let unique: HashSet<&str> = names.iter().copied().collect();
    assert_eq!(names.len(), TOTAL, "rows");
    assert_eq!(unique.len(), TOTAL, "duplicates");
    for i in 0..521 {
        assert!(
            unique.contains(format!("fx__gen_{i:04}").as_str()),
            "gen_{i:04} missing"
        );
    }
}

async fn progressive() -> HttpSluice {
    // The drains take a page per row, more than the default rate allows
    // (pages are rate limited like calls: tests/security.rs).
    HttpSluice::start(&format!(
        "[catalog]\nmode = \"progressive\"\n[ratelimit]\ndefault = \"off\"\n\n{}",
        upstream()
    ))
    .await
}

#[tokio::test]
async fn sluice_list_tools_drains_every_tool_once_under_the_cap() {
    let s = progressive().await;
    let listed = s.modern(1, "tools/list", json!({})).await;
    let listed = messages(listed).await.pop().unwrap();
    assert_eq!(
        names(&listed, "tools"),
        vec![
            "sluice_list_servers",
            "sluice_list_tools",
            "sluice_describe_tool",
            "sluice_call_tool"
        ]
    );
    for limit in [1, 7, 20, 200] {
        for fields in ["lite", "full"] {
            let (rows, pages) = drain_tools(&s, limit, fields, json!({})).await;
            assert_every_tool_once(&rows);
            for page in &pages {
                let n = page["items"].as_array().unwrap().len();
                assert!(n <= limit && n >= 1);
                let size = compact_len(page);
                assert!(
                    n == 1 || size <= 50_000,
                    "{fields} limit {limit}: page of {n} rows is {size} bytes"
                );
                // isCapped exactly when the cap cut the page short.
                let more = page.get("nextCursor").is_some();
                let capped = page.get("isCapped") == Some(&json!(true));
                assert_eq!(
                    capped,
                    more && n < limit,
                    "{fields} limit {limit}: {n} rows, more: {more}"
                );
            }
            if fields == "lite" {
                for row in &rows {
                    assert!(row.as_object().unwrap().len() <= 6, "{row}");
                    assert!(row["summary"].as_str().unwrap().chars().count() <= 120);
                }
            } else {
                assert!(
                    rows.iter()
                        .any(|r| r["description"].as_str().unwrap().len() > 19_000)
                );
            }
        }
    }
}

#[tokio::test]
async fn bad_limits_and_cursors_are_refused_with_invalid_params() {
    let s = progressive().await;
    for bad in [json!(201), json!(0), json!(-1), json!(2.5), json!("20")] {
        let e = meta(&s, 1, "sluice_list_tools", json!({"limit": bad}))
            .await
            .unwrap_err();
        assert_eq!(e["code"], -32602, "{bad}");
        assert!(
            e["message"].as_str().unwrap().contains("from 1 to 200"),
            "{e}"
        );
    }
    let page = meta(
        &s,
        2,
        "sluice_list_tools",
        json!({"limit": 5, "server": "fx"}),
    )
    .await
    .unwrap();
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    // One byte flipped.
    let mut flipped = cursor.clone().into_bytes();
    flipped[cursor.len() / 2] ^= 0x02;
    let flipped = String::from_utf8(flipped).unwrap();
    // From another filter, or another surface.
    let other_filter = json!({"limit": 5, "server": "fx", "query": "tool", "cursor": cursor});
    let cases = [
        json!({"limit": 5, "server": "fx", "cursor": flipped}),
        json!({"limit": 5, "server": "fx", "cursor": &cursor[..cursor.len() - 4]}),
        other_filter,
        json!({"limit": 5, "cursor": cursor}),
    ];
    for args in cases {
        let e = meta(&s, 3, "sluice_list_tools", args.clone())
            .await
            .unwrap_err();
        assert_eq!(e["code"], -32602, "{args}");
        assert_eq!(e["message"], "invalid cursor");
    }
    let e = meta(&s, 4, "sluice_list_servers", json!({"cursor": cursor}))
        .await
        .unwrap_err();
    assert_eq!(e["message"], "invalid cursor");
    // The same cursor on its own filter works.
    let next = meta(
        &s,
        5,
        "sluice_list_tools",
        json!({"limit": 5, "server": "fx", "cursor": cursor}),
    )
    .await
    .unwrap();
    assert_eq!(next["items"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn a_cursor_survives_a_restart_with_the_same_key_and_not_a_new_one() {
    let config = format!("[catalog]\nmode = \"progressive\"\n\n{}", upstream());
    let (dir, path) = write_config(&config);
    let keep = dir.path().to_owned();
    let s = HttpSluice::start_at(dir, &path).await;
    let page = meta(&s, 1, "sluice_list_tools", json!({"limit": 3}))
        .await
        .unwrap();
    let cursor = page["nextCursor"].clone();
    let key_file = keep.join(".sluice").join("cursor.key");
    let key = std::fs::read_to_string(&key_file).unwrap();
    assert_eq!(key.trim().len(), 43);
    // Keep the directory alive across restarts: copy the config into a new one.
    let dir2 = tempfile::tempdir().unwrap();
    let path2 = dir2.path().join("sluice.toml");
    std::fs::write(&path2, &config).unwrap();
    std::fs::create_dir_all(dir2.path().join(".sluice")).unwrap();
    std::fs::write(dir2.path().join(".sluice/cursor.key"), &key).unwrap();
    drop(s);
    let s = HttpSluice::start_at(dir2, &path2).await;
    let next = meta(
        &s,
        2,
        "sluice_list_tools",
        json!({"limit": 3, "cursor": cursor}),
    )
    .await
    .unwrap();
    assert_eq!(next["items"][0]["name"], page_after(&page));
    drop(s);
    // A new key: the old cursor is refused.
    let dir3 = tempfile::tempdir().unwrap();
    let path3 = dir3.path().join("sluice.toml");
    std::fs::write(&path3, &config).unwrap();
    let s = HttpSluice::start_at(dir3, &path3).await;
    let e = meta(
        &s,
        3,
        "sluice_list_tools",
        json!({"limit": 3, "cursor": cursor}),
    )
    .await
    .unwrap_err();
    assert_eq!(e["code"], -32602);
}

/// The name of the tool after the last row of a page, in list order.
fn page_after(page: &Value) -> String {
    let last = page["items"].as_array().unwrap().last().unwrap()["name"]
        .as_str()
        .unwrap();
    // Fixed tools come first; the fourth is `hang`.
    assert_eq!(last, "fx__crash");
    "fx__hang".to_owned()
}

#[tokio::test]
async fn describe_and_call_go_through_the_meta_tools() {
    let s = progressive().await;
    let described = meta(&s, 1, "sluice_describe_tool", json!({"name": "fx__echo"}))
        .await
        .unwrap();
    assert_eq!(described["server"], "fx");
    assert_eq!(
        described["inputSchema"]["properties"]["text"]["type"],
        "string"
    );
    let answer = s
        .call(
            2,
            "sluice_call_tool",
            json!({"name": "fx__echo", "arguments": {"text": "through the meta-tool"}}),
        )
        .await;
    assert_eq!(first_text(&answer), "through the meta-tool");
    let e = meta(&s, 3, "sluice_describe_tool", json!({"name": "fx__nope"}))
        .await
        .unwrap_err();
    assert_eq!(e["code"], -32602);
    let servers = meta(&s, 4, "sluice_list_servers", json!({})).await.unwrap();
    let row = &servers["items"][0];
    assert_eq!(row["name"], "fx");
    assert_eq!(row["tools"], TOTAL);
    assert!(row.as_object().unwrap().len() <= 6);
    // Filters: one server, a text query.
    let (rows, _) = drain_tools(&s, 200, "lite", json!({"query": "generated tool 52"})).await;
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    // "Generated tool 52." and "... 520." (521 are generated: 0 to 520).
    assert_eq!(names, vec!["fx__gen_0052", "fx__gen_0520"]);
}

/// `tools/list` itself pages under its own cap, for modern and legacy
/// clients: every tool once.
#[tokio::test]
async fn tools_list_pages_for_modern_and_legacy_clients() {
    let config = format!("[catalog]\nlist_page_bytes = 50000\n\n{}", upstream());
    let s = HttpSluice::start(&config).await;
    let mut seen = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = messages(s.modern(10 + pages, "tools/list", params).await)
            .await
            .pop()
            .unwrap();
        let result = &page["result"];
        assert!(
            result.get("isCapped").is_none(),
            "MCP lists carry no isCapped"
        );
        let tools = result["tools"].as_array().unwrap();
        let mut bare = result.clone();
        bare.as_object_mut()
            .unwrap()
            .retain(|k, _| k == "tools" || k == "nextCursor");
        assert!(tools.len() == 1 || compact_len(&bare) <= 50_000);
        seen.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        pages += 1;
        cursor = result.get("nextCursor").cloned();
        if cursor.is_none() {
            break;
        }
    }
    assert!(pages > 10, "{pages} pages");
    assert_every_tool_once(&seen.iter().map(|n| json!({"name": n})).collect::<Vec<_>>());
    // A bad cursor on an MCP list is -32602 too.
    let bad = messages(s.modern(99, "tools/list", json!({"cursor": "nope"})).await)
        .await
        .pop()
        .unwrap();
    assert_eq!(bad["error"]["code"], -32602);

    // A legacy client (stdio) drains the same.
    let mut legacy = StdioSluice::start(&config).await;
    legacy.initialize(json!({})).await;
    let mut seen_legacy = Vec::new();
    let mut cursor: Option<Value> = None;
    for id in 1..1_000 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = legacy.request(id, "tools/list", params).await;
        seen_legacy.extend(names(&page, "tools"));
        cursor = page["result"].get("nextCursor").cloned();
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen_legacy, seen);
}

/// What a client spends to see the whole catalog: every `tools/list` page
/// in full mode, against `tools/list` plus every lite `sluice_list_tools`
/// page in progressive mode.
#[tokio::test]
async fn progressive_lite_costs_a_fraction_of_the_full_catalog() {
    let full = HttpSluice::start(&format!(
        "[catalog]\nlist_page_bytes = 50000\n\n{}",
        upstream()
    ))
    .await;
    let mut full_bytes = 0;
    let mut cursor: Option<Value> = None;
    for id in 0..1_000 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = messages(full.modern(id, "tools/list", params).await)
            .await
            .pop()
            .unwrap();
        full_bytes += compact_len(&page["result"]);
        cursor = page["result"].get("nextCursor").cloned();
        if cursor.is_none() {
            break;
        }
    }
    let s = progressive().await;
    let listed = messages(s.modern(1, "tools/list", json!({})).await)
        .await
        .pop()
        .unwrap();
    let mut lite_bytes = compact_len(&listed["result"]);
    let (_, pages) = drain_tools(&s, 200, "lite", json!({})).await;
    lite_bytes += pages.iter().map(compact_len).sum::<usize>();
    println!(
        "537 tools: full catalog {full_bytes} bytes; progressive lite {lite_bytes} bytes ({:.1}%)",
        100.0 * lite_bytes as f64 / full_bytes as f64
    );
    assert!(lite_bytes * 10 < full_bytes);
}
