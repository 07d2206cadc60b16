//! `GET /metrics`: a scripted session through sluice, then a scrape whose
//! counts must equal the calls made, outcome by outcome and view by view;
//! the endpoint behind `[auth]`, and on its own listener.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, HashMap};

use common::*;
use serde_json::{Value, json};

const TOKEN: &str = "metrics-token-0123456789abcdef";
/// A value the redaction patterns catch; it must reach no metric.
const SECRET: &str = "password=hunter2-metrics-secret";
/// A tool name a client made up; it must not become a label value.
const MADE_UP: &str = "fx__nope-made-up-by-client";
/// A URI scheme a client made up; it must not become a label value.
const MADE_UP_SCHEME: &str = "alice-ssn-123456789";

/// One metric line's name and labels, sorted, e.g.
/// `sluice_calls_total{method="tools/call",outcome="ok",...}`.
type Series = String;

/// The scrape as series → value.
fn parse(text: &str) -> HashMap<Series, f64> {
    let mut out = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, text) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut labels: BTreeMap<&str, &str> = BTreeMap::new();
        for pair in labels_of(text) {
            let (k, v) = pair.split_once('=').unwrap();
            labels.insert(k, v.trim_matches('"'));
        }
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.insert(
            format!("{name}{{{}}}", labels.join(",")),
            value.parse().unwrap(),
        );
    }
    out
}

/// Splits `a="x",b="y,z"` at the commas between pairs.
fn labels_of(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn get(scrape: &HashMap<Series, f64>, series: &str) -> f64 {
    scrape.get(series).copied().unwrap_or_else(|| {
        let mut known: Vec<&String> = scrape.keys().filter(|k| k.starts_with("sluice_")).collect();
        known.sort();
        panic!("no series {series}; sluice's are:\n{known:#?}")
    })
}

/// The `tools/call` counter of `target` and `outcome` on the whole
/// federation.
fn calls(target: &str, outcome: &str) -> String {
    calls_through("", target, outcome)
}

/// The `tools/call` counter of `target` and `outcome` through `view`.
fn calls_through(view: &str, target: &str, outcome: &str) -> String {
    let upstream = if target.is_empty() { "" } else { "fx" };
    format!(
        "sluice_calls_total{{method=tools/call,outcome={outcome},target={target},upstream={upstream},view={view}}}"
    )
}

async fn scrape(s: &HttpSluice, token: Option<&str>) -> reqwest::Response {
    let mut req = s.client.get(format!("{}/metrics", s.base));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    req.send().await.unwrap()
}

/// A 2026-07-28 request with the token to `url`; the JSON-RPC answer.
async fn request_at(
    s: &HttpSluice,
    url: &str,
    id: i64,
    method: &str,
    name: &str,
    mut params: Value,
) -> Value {
    params["_meta"] = modern_meta(json!({}));
    let resp = s
        .client
        .post(url)
        .bearer_auth(TOKEN)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .body(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string())
        .send()
        .await
        .unwrap();
    messages(resp).await.pop().unwrap()
}

/// A 2026-07-28 request with the token on `/mcp`; the JSON-RPC answer.
async fn request(s: &HttpSluice, id: i64, method: &str, name: &str, params: Value) -> Value {
    request_at(s, &s.url, id, method, name, params).await
}

/// A 2026-07-28 `tools/call` with the token; the JSON-RPC answer.
async fn call(s: &HttpSluice, id: i64, name: &str, arguments: Value) -> Value {
    let params = json!({"name": name, "arguments": arguments});
    request(s, id, "tools/call", name, params).await
}

/// The same through `/mcp/<view>`.
async fn call_through(s: &HttpSluice, view: &str, id: i64, name: &str, arguments: Value) -> Value {
    let params = json!({"name": name, "arguments": arguments});
    let url = format!("{}/{view}", s.url);
    request_at(s, &url, id, "tools/call", name, params).await
}

/// A `resources/read`; the JSON-RPC answer.
async fn read(s: &HttpSluice, id: i64, uri: &str) -> Value {
    request(s, id, "resources/read", uri, json!({"uri": uri})).await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_scrape_counts_every_call_by_outcome_and_nothing_of_its_content() {
    let config = format!(
        "[server]\nrequest_timeout = \"1s\"\n\
         [limits]\nmcp_read_response_max_bytes = 65536\n\
         [auth]\nmode = \"bearer\"\n[[auth.token]]\nprincipal = \"carol-the-user\"\nfile = \"t.token\"\n\
         {}trusted = true\ntool_rate_limit = {{ echo = \"3/h\" }}\n\
         [[view]]\nname = \"bigs\"\ninclude = [\"fx__big\"]\n",
        fixture_upstream("fx", &["--era", "legacy", "--resources", "3"])
    );
    let (dir, path) = write_config(&config);
    std::fs::write(dir.path().join("t.token"), TOKEN).unwrap();
    let s = HttpSluice::start_at(dir, &path).await;
    s.wait_health(|h| h["status"] == "ok").await;

    // Without the token: refused like /mcp.
    assert_eq!(scrape(&s, None).await.status(), 401);

    let mut id = 0;
    let mut next = || {
        id += 1;
        id
    };
    // 3 pass, 2 are over the rate.
    for _ in 0..5 {
        call(&s, next(), "fx__echo", json!({"text": "hi"})).await;
    }
    // A small read passes; a large one is refused whole.
    call(&s, next(), "fx__read_big", json!({"bytes": 10})).await;
    let refused = call(&s, next(), "fx__read_big", json!({"bytes": 100_000})).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    // A tool error, an upstream error, a timeout, a made-up name.
    let tool_error = call(&s, next(), "fx__read_big", json!({})).await;
    assert_eq!(tool_error["result"]["isError"], true, "{tool_error}");
    let upstream_error = call(&s, next(), "fx__reflect", json!({"error": "boom"})).await;
    assert_eq!(upstream_error["error"]["code"], -32603, "{upstream_error}");
    let timeout = call(&s, next(), "fx__hang", json!({})).await;
    assert_eq!(timeout["error"]["code"], -32003, "{timeout}");
    let invalid = call(&s, next(), MADE_UP, json!({})).await;
    assert_eq!(invalid["error"]["code"], -32602, "{invalid}");
    // Through a view: its own series, whether it passes or names a tool
    // the view does not show (a label value from the config, never the
    // client's).
    let through = call_through(&s, "bigs", next(), "fx__big", json!({"bytes": 2})).await;
    assert_eq!(first_text(&through), "xx");
    let hidden = call_through(&s, "bigs", next(), "fx__echo", json!({"text": "hi"})).await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    // A secret in a result: redacted, counted by rule kind.
    let leaked = call(&s, next(), "fx__reflect", json!({"text": SECRET})).await;
    assert_eq!(first_text(&leaked), "password=[redacted]");
    // A listed resource is named by its scheme; a URI the catalog does not
    // list (the only upstream with resources gets it) by nothing.
    let listed = read(&s, next(), "fixture://res/0001").await;
    assert!(listed["result"]["contents"].is_array(), "{listed}");
    let unlisted = read(&s, next(), &format!("{MADE_UP_SCHEME}:x")).await;
    assert!(unlisted["error"].is_object(), "{unlisted}");
    // A client that gives up on a call: cancelled, not left unrecorded
    // (and not a timeout: the request was gone before the 1 s passed).
    let impatient = reqwest::Client::builder()
        .timeout(std::time::Duration::from_millis(300))
        .build()
        .unwrap();
    let params = json!({"name": "fx__hang", "arguments": {}, "_meta": modern_meta(json!({}))});
    let gave_up = impatient
        .post(&s.url)
        .bearer_auth(TOKEN)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "fx__hang")
        .body(
            json!({"jsonrpc": "2.0", "id": next(), "method": "tools/call", "params": params})
                .to_string(),
        )
        .send()
        .await;
    assert!(gave_up.is_err_and(|e| e.is_timeout()));
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;

    let resp = scrape(&s, Some(TOKEN)).await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = resp.text().await.unwrap();
    for absent in [
        SECRET,
        "hunter2",
        MADE_UP,
        MADE_UP_SCHEME,
        "carol-the-user",
        TOKEN,
        "boom",
    ] {
        assert!(
            !text.contains(absent),
            "{absent:?} is in the scrape:\n{text}"
        );
    }
    let m = parse(&text);
    let expected = [
        (calls("fx__echo", "ok"), 3.0),
        (calls("fx__echo", "rate_limited"), 2.0),
        (calls("fx__read_big", "ok"), 1.0),
        (calls("fx__read_big", "refused_size"), 1.0),
        (calls("fx__read_big", "tool_error"), 1.0),
        (calls("fx__reflect", "upstream_error"), 1.0),
        (calls("fx__reflect", "ok"), 1.0),
        (calls("fx__hang", "timeout"), 1.0),
        (calls("", "invalid"), 1.0),
        (calls("fx__hang", "cancelled"), 1.0),
        (calls_through("bigs", "fx__big", "ok"), 1.0),
        (calls_through("bigs", "", "invalid"), 1.0),
        (
            "sluice_calls_total{method=resources/read,outcome=ok,target=fixture:,upstream=fx,view=}"
                .into(),
            1.0,
        ),
        (
            "sluice_calls_total{method=resources/read,outcome=upstream_error,target=,upstream=fx,view=}"
                .into(),
            1.0,
        ),
    ];
    for (series, n) in &expected {
        assert_eq!(get(&m, series), *n, "{series}");
    }
    let all: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("sluice_calls_total{"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(all, 17.0, "every request counted once");
    // Timed through sluice: the 12 routed tool calls (the made-up name
    // has no upstream); by the upstream: the 9 answered ones that reached
    // it (not the 2 over the rate, nor the cancelled one).
    assert_eq!(
        get(
            &m,
            "sluice_call_duration_seconds_count{method=tools/call,upstream=fx,view=}"
        ),
        12.0
    );
    assert_eq!(
        get(
            &m,
            "sluice_call_duration_seconds_count{method=tools/call,upstream=,view=}"
        ),
        1.0
    );
    assert_eq!(
        get(
            &m,
            "sluice_upstream_duration_seconds_count{method=tools/call,upstream=fx,view=}"
        ),
        9.0
    );
    // Through the view: one routed call timed, one name it does not show.
    for (series, n) in [
        (
            "sluice_call_duration_seconds_count{method=tools/call,upstream=fx,view=bigs}",
            1.0,
        ),
        (
            "sluice_call_duration_seconds_count{method=tools/call,upstream=,view=bigs}",
            1.0,
        ),
        (
            "sluice_upstream_duration_seconds_count{method=tools/call,upstream=fx,view=bigs}",
            1.0,
        ),
    ] {
        assert_eq!(get(&m, series), n, "{series}");
    }
    assert_eq!(get(&m, "sluice_redactions_total{kind=pattern}"), 1.0);
    assert_eq!(get(&m, "sluice_upstream_up{upstream=fx}"), 1.0);
    assert_eq!(
        get(
            &m,
            "sluice_discovery_reads_total{upstream=fx,verdict=complete}"
        ),
        1.0
    );
    assert_eq!(
        get(&m, "sluice_discovery_duration_seconds_count{upstream=fx}"),
        1.0
    );

    // One legacy session opened: the gauge says so.
    let init = json!({"jsonrpc": "2.0", "id": 99, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let resp = s
        .post(&init, &[("authorization", &format!("Bearer {TOKEN}"))])
        .await;
    assert_eq!(resp.status(), 200);
    let m = parse(&scrape(&s, Some(TOKEN)).await.text().await.unwrap());
    assert_eq!(get(&m, "sluice_sessions_open{}"), 1.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_metrics_listener_of_its_own_serves_without_auth_and_the_mcp_one_does_not() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let config = format!(
        "[metrics]\nlisten = \"127.0.0.1:{port}\"\n{}",
        fixture_upstream("fx", &[])
    );
    let s = HttpSluice::start(&config).await;
    s.wait_health(|h| h["upstreams"]["fx"]["state"] == "ready")
        .await;
    assert_eq!(scrape(&s, None).await.status(), 404);
    let text = s
        .client
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        get(&parse(&text), "sluice_upstream_up{upstream=fx}"),
        1.0,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_can_be_turned_off() {
    let config = format!(
        "[metrics]\nenabled = false\n{}",
        fixture_upstream("fx", &[])
    );
    let s = HttpSluice::start(&config).await;
    assert_eq!(scrape(&s, None).await.status(), 404);
}
