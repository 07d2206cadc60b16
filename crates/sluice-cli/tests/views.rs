//! `[[view]]` through the real binary: `/mcp/<name>` and `serve --stdio
//! --view NAME` show exactly the view's entries, renamed and re-described
//! as configured, and answer anything outside it as unknown; a client on a
//! view hears `list_changed` only when the view changed.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};

/// Two fixtures; `narrow` shows two tools (one renamed), one resource and
/// no prompt.
fn config() -> String {
    format!(
        r#"{}
{}
[[view]]
name = "narrow"
include = ["a__echo", "a__add_tool", "b__big", "fixture://res/0001"]
exclude = ["a__add_tool"]
rename = {{ "b__big" = "make_text" }}
descriptions = {{ "a__echo" = "Say it back." }}
"#,
        fixture_upstream("a", &[]),
        fixture_upstream("b", &["--resources", "2"])
    )
}

async fn answer(sluice: &HttpSluice, id: i64, method: &str, params: Value) -> Value {
    messages(sluice.modern(id, method, params).await)
        .await
        .pop()
        .unwrap()
}

/// The error of an answer with its name taken out, to compare refusals of
/// two different names.
fn error_shape(answer: &Value, name: &str) -> String {
    answer["error"].to_string().replace(name, "NAME")
}

#[tokio::test]
async fn a_view_over_http_shows_exactly_its_entries_and_nothing_else_exists() {
    let whole = HttpSluice::start(&config()).await;
    whole
        .wait_health(|h| {
            h["upstreams"]["a"]["catalog"] == "complete"
                && h["upstreams"]["b"]["catalog"] == "complete"
        })
        .await;
    let all = names(&answer(&whole, 1, "tools/list", json!({})).await, "tools");
    assert_eq!(all.len(), 32, "{all:?}");
    let mut view = whole;
    view.url = format!("{}/narrow", view.url);

    let tools = answer(&view, 2, "tools/list", json!({})).await;
    let listed = tools["result"]["tools"].as_array().unwrap();
    let shown: Vec<(&str, &str)> = listed
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(shown[0], ("a__echo", "Say it back."));
    assert_eq!(shown[1].0, "make_text");
    assert_eq!(shown.len(), 2, "{shown:?}");
    let resources = answer(&view, 3, "resources/list", json!({})).await;
    assert_eq!(names(&resources, "resources"), ["res-0001"]);
    let templates = answer(&view, 4, "resources/templates/list", json!({})).await;
    assert_eq!(templates["result"]["resourceTemplates"], json!([]));
    let prompts = answer(&view, 5, "prompts/list", json!({})).await;
    assert_eq!(prompts["result"]["prompts"], json!([]));

    // Calls inside the view go through, by the view's names.
    assert_eq!(
        first_text(&view.call(6, "make_text", json!({"bytes": 3})).await),
        "xxx"
    );
    assert_eq!(
        first_text(&view.call(7, "a__echo", json!({"text": "hi"})).await),
        "hi"
    );
    let read = answer(
        &view,
        8,
        "resources/read",
        json!({"uri": "fixture://res/0001"}),
    )
    .await;
    assert!(read["result"]["contents"].is_array(), "{read}");

    // Outside it: answered exactly as a name that exists nowhere.
    let nowhere = view.call(9, "zz__nothing", json!({})).await;
    assert_eq!(nowhere["error"]["code"], -32602, "{nowhere}");
    for (id, hidden) in [(10, "a__crash"), (11, "b__big"), (12, "a__add_tool")] {
        let refused = view.call(id, hidden, json!({})).await;
        assert_eq!(
            error_shape(&refused, hidden),
            error_shape(&nowhere, "zz__nothing"),
            "{hidden}"
        );
    }
    let unknown_uri = answer(
        &view,
        13,
        "resources/read",
        json!({"uri": "fixture://nowhere/1"}),
    )
    .await;
    for (id, uri) in [(14, "fixture://res/0000"), (15, "fixture://item/5")] {
        let refused = answer(&view, id, "resources/read", json!({"uri": uri})).await;
        assert_eq!(
            error_shape(&refused, uri),
            error_shape(&unknown_uri, "fixture://nowhere/1"),
            "{uri}"
        );
    }
    let prompt = answer(
        &view,
        16,
        "prompts/get",
        json!({"name": "a__greet", "arguments": {"name": "x"}}),
    )
    .await;
    assert!(prompt["error"].is_object(), "{prompt}");

    // A view that is not configured is not a path sluice serves.
    let missing = reqwest::Client::new()
        .post(view.url.replace("/narrow", "/nope"))
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn serve_stdio_view_shows_the_view() {
    let (_dir, path) = write_config(&config());
    let mut sluice = StdioSluice::start_with(&path, &["--view", "narrow"]).await;
    sluice.initialize(json!({})).await;
    let tools = sluice.request(2, "tools/list", json!({})).await;
    assert_eq!(names(&tools, "tools"), ["a__echo", "make_text"]);
    let refused = sluice.call(3, "a__crash", json!({})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        first_text(&sluice.call(4, "make_text", json!({"bytes": 2})).await),
        "xx"
    );
}

#[test]
fn an_unknown_view_on_the_command_line_is_a_usage_error() {
    let (_dir, path) = write_config(&config());
    let out = std::process::Command::new(sluice_bin())
        .args(["serve", "--stdio", "--view", "wide", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("no [[view]] named \"wide\" in the config (configured: narrow)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A 2026-07-28 `subscriptions/listen` for tools on `sluice`'s URL; its
/// stream, past the acknowledgement.
async fn listen_for_tools(sluice: &HttpSluice, id: i64) -> SseReader {
    let params = json!({"notifications": {"toolsListChanged": true}});
    let mut events = SseReader::new(sluice.modern(id, "subscriptions/listen", params).await);
    let ack = events.next().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    events
}

/// A legacy session opened on `sluice`'s URL; its GET stream.
async fn legacy_stream(sluice: &HttpSluice) -> SseReader {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let resp = sluice.post(&init, &[]).await;
    assert_eq!(resp.status(), 200);
    let session = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    SseReader::new(sluice.open_stream(&session, &[]).await)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_on_a_view_hears_list_changed_only_when_its_view_changed() {
    let config = format!(
        "{}[[view]]\nname = \"added\"\ninclude = [\"a__added_*\"]\n\
         [[view]]\nname = \"echo\"\ninclude = [\"a__echo\"]\n",
        fixture_upstream("a", &[])
    );
    let mut sluice = HttpSluice::start(&config).await;
    sluice
        .wait_health(|h| h["upstreams"]["a"]["catalog"] == "complete")
        .await;
    let whole = sluice.url.clone();
    let (added, echo) = (format!("{whole}/added"), format!("{whole}/echo"));
    sluice.url.clone_from(&added);
    assert!(names(&answer(&sluice, 1, "tools/list", json!({})).await, "tools").is_empty());
    // On each: a 2026-07-28 listen stream and a legacy session's stream.
    let mut on_added = [
        listen_for_tools(&sluice, 2).await,
        legacy_stream(&sluice).await,
    ];
    sluice.url.clone_from(&echo);
    let mut on_echo = [
        listen_for_tools(&sluice, 3).await,
        legacy_stream(&sluice).await,
    ];
    sluice.url.clone_from(&whole);
    let mut on_whole = [
        listen_for_tools(&sluice, 4).await,
        legacy_stream(&sluice).await,
    ];

    // A tool appears upstream, inside `added` only.
    let r = sluice.call(5, "a__add_tool", json!({})).await;
    assert!(r.get("result").is_some(), "{r}");
    for events in on_added.iter_mut().chain(&mut on_whole) {
        let note = events.next().await;
        assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    }
    sluice.url = added;
    assert_eq!(
        names(&answer(&sluice, 6, "tools/list", json!({})).await, "tools"),
        ["a__added_0"]
    );
    // `echo` shows the same as before: its client hears nothing (the
    // others were told at once, by the same change).
    for events in &mut on_echo {
        let heard =
            tokio::time::timeout(std::time::Duration::from_millis(300), events.next()).await;
        assert!(heard.is_err(), "the echo view heard {:?}", heard.ok());
    }
}
