//! The guards of the served surface and of what sluice dereferences,
//! through the real binary: Origin and Host (S-22), header caps, rate
//! limits (S-24), the outbound guard (S-10) on every spelling of a private
//! address and on redirects. OAuth and bearer auth are driven from Python
//! (`tests/integration/test_auth.py`), where tokens are minted.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// A modern POST with extra headers (Origin, Host, Authorization).
async fn modern_with(
    s: &HttpSluice,
    id: i64,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut params = params;
    params["_meta"] = modern_meta(json!({}));
    let mut req = s
        .client
        .post(&s.url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        req = req.header("mcp-name", name);
    }
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    req.body(body.to_string()).send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_origin_allowlist_replaces_the_localhost_default_and_host_is_checked() {
    let s = HttpSluice::start(&format!(
        "[server]\nallowed_origins = [\"https://app.example.com\"]\n{}",
        fixture_upstream("fx", &[])
    ))
    .await;
    let list = |extra: &'static [(&'static str, &'static str)]| {
        let s = &s;
        async move { modern_with(s, 1, "tools/list", json!({}), extra).await }
    };
    assert_eq!(list(&[]).await.status(), 200, "no Origin: not a browser");
    assert_eq!(
        list(&[("origin", "https://app.example.com")])
            .await
            .status(),
        200
    );
    // Localhost is no longer allowed once a list is configured.
    let refused = list(&[("origin", "http://localhost:3000")]).await;
    assert_eq!(refused.status(), 403);
    let body: Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
    assert_eq!(
        body["error"]["message"],
        "Forbidden: this Origin is not allowed"
    );
    assert_eq!(
        list(&[("origin", "https://app.example.com.evil.example")])
            .await
            .status(),
        403
    );
    // DNS rebinding: a foreign Host on a loopback listener.
    assert_eq!(
        list(&[
            ("host", "evil.example"),
            ("origin", "https://app.example.com")
        ])
        .await
        .status(),
        403
    );
    let health = s
        .client
        .get(format!("{}/health", s.base))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 403);
    let metadata = s
        .client
        .get(format!("{}/.well-known/oauth-protected-resource", s.base))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(metadata.status(), 403, "the metadata route is guarded too");
}

#[tokio::test(flavor = "multi_thread")]
async fn header_count_and_size_are_capped() {
    let s = HttpSluice::start(&fixture_upstream("fx", &[])).await;
    let send = |headers: Vec<(String, String)>| {
        let s = &s;
        async move {
            let mut req = s.client.get(format!("{}/health", s.base));
            for (k, v) in headers {
                req = req.header(k, v);
            }
            req.send().await.unwrap().status()
        }
    };
    let many: Vec<_> = (0..70)
        .map(|i| (format!("x-pad-{i}"), "1".to_owned()))
        .collect();
    assert_eq!(send(many).await, 431);
    assert_eq!(
        send(vec![("x-big".into(), "a".repeat(40 * 1024))]).await,
        431
    );
    let fine: Vec<_> = (0..20)
        .map(|i| (format!("x-pad-{i}"), "b".repeat(100)))
        .collect();
    assert_eq!(send(fine).await, 200);
}

/// Bearer auth with two principals whose tokens live in files beside the
/// config; `echo` allows 2 calls a second.
async fn rate_limited_sluice() -> HttpSluice {
    let config = format!(
        "[auth]\nmode = \"bearer\"\n\
         [[auth.token]]\nprincipal = \"alice\"\nfile = \"alice.token\"\n\
         [[auth.token]]\nprincipal = \"bob\"\nfile = \"bob.token\"\n\
         {}tool_rate_limit = {{ echo = \"2/s\" }}\n",
        fixture_upstream("fx", &[])
    );
    let (dir, path) = write_config(&config);
    std::fs::write(
        dir.path().join("alice.token"),
        "alice-token-0123456789abcdef\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("bob.token"), "bob-token-0123456789abcdef").unwrap();
    HttpSluice::start_at(dir, &path).await
}

const ALICE: (&str, &str) = ("authorization", "Bearer alice-token-0123456789abcdef");
const BOB: (&str, &str) = ("authorization", "Bearer bob-token-0123456789abcdef");

#[tokio::test(flavor = "multi_thread")]
async fn tool_calls_are_rate_limited_per_principal_and_tool_and_recover() {
    let s = rate_limited_sluice().await;
    let echo = json!({"name": "fx__echo", "arguments": {"text": "hi"}});
    // Without a token: 401 and a challenge, before anything is counted.
    let anonymous = modern_with(&s, 1, "tools/call", echo.clone(), &[]).await;
    assert_eq!(anonymous.status(), 401);
    assert_eq!(
        anonymous.headers()["www-authenticate"],
        "Bearer realm=\"mcp\""
    );
    for id in 2..4 {
        let ok = modern_with(&s, id, "tools/call", echo.clone(), &[ALICE]).await;
        assert_eq!(ok.status(), 200);
        let answer = messages(ok).await.pop().unwrap();
        assert_eq!(first_text(&answer), "hi", "{answer}");
    }
    let limited = modern_with(&s, 4, "tools/call", echo.clone(), &[ALICE]).await;
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.headers()["retry-after"], "1");
    let answer: Value = serde_json::from_str(&limited.text().await.unwrap()).unwrap();
    assert_eq!(answer["id"], 4);
    assert_eq!(answer["error"]["code"], -32011, "{answer}");
    let wait = answer["error"]["data"]["retryAfterMs"].as_u64().unwrap();
    assert!((1..=1000).contains(&wait), "{answer}");
    // Bob has his own allowance; another tool is not counted with echo.
    let bob = modern_with(&s, 5, "tools/call", echo.clone(), &[BOB]).await;
    assert_eq!(bob.status(), 200);
    let other = json!({"name": "fx__lossless", "arguments": {}});
    assert_eq!(
        modern_with(&s, 6, "tools/call", other, &[ALICE])
            .await
            .status(),
        200
    );
    // After the wait it said, alice may call again.
    tokio::time::sleep(Duration::from_millis(wait + 50)).await;
    let again = modern_with(&s, 7, "tools/call", echo, &[ALICE]).await;
    assert_eq!(again.status(), 200);
    let answer = messages(again).await.pop().unwrap();
    assert_eq!(first_text(&answer), "hi", "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_session_answers_only_its_own_principal() {
    let s = rate_limited_sluice().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}});
    let resp = s.post(&init, &[ALICE]).await;
    assert_eq!(resp.status(), 200);
    let session = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let headers = |who: (&'static str, &'static str)| {
        [
            who,
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ]
    };
    assert_eq!(s.post(&list, &headers(BOB)).await.status(), 404);
    let mine = s.post(&list, &headers(ALICE)).await;
    assert_eq!(mine.status(), 200);
    let answer = messages(mine).await.pop().unwrap();
    assert_eq!(names(&answer, "tools").len(), FIXED_TOOLS.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_stdio_client_is_rate_limited_too() {
    let mut s = StdioSluice::start(&format!(
        "[ratelimit]\ndefault = \"1/h\"\n{}",
        fixture_upstream("fx", &[])
    ))
    .await;
    s.initialize(json!({})).await;
    let first = s.call(2, "fx__echo", json!({"text": "a"})).await;
    assert_eq!(first_text(&first), "a", "{first}");
    let second = s.call(3, "fx__echo", json!({"text": "b"})).await;
    assert_eq!(second["error"]["code"], -32011, "{second}");
    let wait = second["error"]["data"]["retryAfterMs"].as_u64().unwrap();
    assert!(wait > 3_000_000, "about an hour: {second}");
}

#[tokio::test(flavor = "multi_thread")]
async fn completions_prompts_and_reads_are_rate_limited_like_calls() {
    let mut s = StdioSluice::start(&format!(
        "{}rate_limit = \"2/h\"\n",
        fixture_upstream("fx", &[])
    ))
    .await;
    s.initialize(json!({})).await;
    let requests = [
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "fx__greet"},
                   "argument": {"name": "name", "value": "A"}}),
        ),
        (
            "prompts/get",
            json!({"name": "fx__greet", "arguments": {"name": "Ada"}}),
        ),
        ("resources/read", json!({"uri": "fixture://item/a"})),
    ];
    let mut id = 1;
    for (method, params) in requests {
        // Two pass (whatever the upstream answers), the third is sluice's.
        for _ in 0..2 {
            id += 1;
            let answer = s.request(id, method, params.clone()).await;
            assert_ne!(answer["error"]["code"], -32011, "{method}: {answer}");
        }
        id += 1;
        let limited = s.request(id, method, params.clone()).await;
        assert_eq!(limited["error"]["code"], -32011, "{method}: {limited}");
        assert_eq!(
            limited["error"]["message"]
                .as_str()
                .map(|m| m.split(';').next()),
            Some(Some(
                format!("rate limited: too many calls of \"{method}\"").as_str()
            )),
        );
    }
    // Each method has its own allowance, and a tool call spends none of theirs.
    let call = s.call(100, "fx__echo", json!({"text": "still"})).await;
    assert_eq!(first_text(&call), "still", "{call}");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_pages_and_meta_tools_are_rate_limited_like_calls() {
    let mut s = StdioSluice::start(&format!(
        "[ratelimit]\ndefault = \"2/h\"\n{}",
        fixture_upstream("fx", &[])
    ))
    .await;
    s.initialize(json!({})).await;
    for id in 2..4 {
        let page = s.request(id, "tools/list", json!({})).await;
        assert_eq!(names(&page, "tools").len(), FIXED_TOOLS.len(), "{page}");
    }
    let limited = s.request(4, "tools/list", json!({})).await;
    assert_eq!(limited["error"]["code"], -32011, "{limited}");
    assert!(
        limited["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("rate limited: too many calls of \"tools/list\""),
        "{limited}"
    );
    // Another list, and a tool call, have allowances of their own.
    let prompts = s.request(5, "prompts/list", json!({})).await;
    assert!(prompts["result"]["prompts"].is_array(), "{prompts}");
    let call = s.call(6, "fx__echo", json!({"text": "still"})).await;
    assert_eq!(first_text(&call), "still", "{call}");
    s.finish().await;

    // Progressive mode: the meta-tools count as calls of their own.
    let mut s = StdioSluice::start(&format!(
        "[catalog]\nmode = \"progressive\"\n[ratelimit]\ndefault = \"2/h\"\n{}",
        fixture_upstream("fx", &[])
    ))
    .await;
    s.initialize(json!({})).await;
    for id in 2..4 {
        let listed = s.call(id, "sluice_list_tools", json!({})).await;
        assert!(
            listed["result"]["structuredContent"]["items"].is_array(),
            "{listed}"
        );
    }
    let limited = s.call(4, "sluice_list_tools", json!({})).await;
    assert_eq!(limited["error"]["code"], -32011, "{limited}");
}

/// A TCP listener that counts the connections it accepts.
async fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    (port, count)
}

fn sluice(args: &[&str], config: &std::path::Path) -> Output {
    std::process::Command::new(sluice_bin())
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_spelling_of_a_private_address_is_refused_before_connecting() {
    let (port, connections) = counting_listener().await;
    let urls = [
        (
            "decimal",
            format!("http://2130706433:{port}/mcp"),
            "127.0.0.0/8 (loopback)",
        ),
        (
            "hex",
            format!("http://0x7f000001:{port}/mcp"),
            "127.0.0.0/8 (loopback)",
        ),
        (
            "octal",
            format!("http://0177.0.0.1:{port}/mcp"),
            "127.0.0.0/8 (loopback)",
        ),
        (
            "short",
            format!("http://127.1:{port}/mcp"),
            "127.0.0.0/8 (loopback)",
        ),
        (
            "mapped",
            format!("http://[::ffff:127.0.0.1]:{port}/mcp"),
            "127.0.0.0/8 (loopback)",
        ),
        ("v6", format!("http://[::1]:{port}/mcp"), "::1/128"),
        ("name", format!("http://localhost:{port}/mcp"), "loopback"),
        (
            "metadata",
            "http://169.254.169.254/mcp".to_owned(),
            "169.254.0.0/16",
        ),
        (
            "gcp",
            "http://metadata.google.internal/mcp".to_owned(),
            "metadata",
        ),
        ("private", "http://10.0.0.1:9/mcp".to_owned(), "10.0.0.0/8"),
    ];
    let mut config = String::from("[server]\nstartup_timeout = \"5s\"\n");
    for (name, url, _) in &urls {
        config.push_str(&format!(
            "[[upstream]]\nname = \"{name}\"\nurl = \"{url}\"\n"
        ));
    }
    let (_dir, path) = write_config(&config);
    let out = sluice(&["lock"], &path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for (name, _, range) in &urls {
        let line = stderr
            .lines()
            .find(|l| {
                l.contains(&format!("upstream={name}"))
                    || l.contains(&format!("upstream=\"{name}\""))
            })
            .unwrap_or_else(|| panic!("nothing logged for {name}:\n{stderr}"));
        assert!(
            line.contains("refused") && line.contains(range),
            "{name}: {line}"
        );
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "a refused address was connected to"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn allow_private_lets_a_loopback_upstream_through_any_spelling() {
    let (mut fixture, url) = http_fixture(&[]).await;
    let port = url.rsplit(':').next().unwrap().trim_end_matches("/mcp");
    let (dir, path) = write_config(&format!(
        "[[upstream]]\nname = \"fx\"\nurl = \"http://2130706433:{port}/mcp\"\nallow_private = true\n"
    ));
    let out = sluice(&["lock"], &path);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("sluice.lock")).unwrap())
            .unwrap();
    assert_eq!(
        lock["upstreams"]["fx"]["tools"].as_object().unwrap().len(),
        FIXED_TOOLS.len()
    );
    fixture.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_is_not_followed() {
    let (target, connections) = counting_listener().await;
    let location = format!("http://127.0.0.1:{target}/mcp");
    let redirector = axum::Router::new().fallback(move || {
        let location = location.clone();
        async move {
            (
                axum::http::StatusCode::TEMPORARY_REDIRECT,
                [(axum::http::header::LOCATION, location)],
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, redirector).await });
    // Allowed to reach the redirector, which is on loopback; its redirect
    // must still not be followed.
    let (_dir, path) = write_config(&format!(
        "[server]\nstartup_timeout = \"5s\"\n[[upstream]]\nname = \"hop\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nallow_private = true\n"
    ));
    let out = sluice(&["lock"], &path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("redirects are not followed"), "{stderr}");
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
}
