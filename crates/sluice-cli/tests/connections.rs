//! Client connections as a hostile client holds them, through the real
//! binary: half a header and then silence (slowloris), idle keep-alive
//! connections, a trickled body, floods over the caps in all and per
//! client, and a flood under a small descriptor limit, after which an
//! upstream must still respawn and other clients still be served.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::process::Command;

/// A generous bound on how long sluice may take to act on a timeout of
/// about a second; only a hang exceeds it.
const PATIENCE: Duration = Duration::from_secs(20);

fn connections(keys: &str) -> String {
    format!(
        "[server.connections]\n{keys}\n{}",
        fixture_upstream("fx", &[])
    )
}

fn addr(base: &str) -> SocketAddr {
    base.trim_start_matches("http://").parse().unwrap()
}

/// A connection to `to` from the loopback address `from` (127.0.0.x),
/// which sluice counts as a client of its own.
async fn connect_from(from: [u8; 4], to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    socket.connect(to).await.unwrap()
}

/// Whether sluice closes `stream` (EOF or reset) within [`PATIENCE`];
/// bytes it sends first are returned with the verdict.
async fn closed(stream: &mut TcpStream) -> (bool, String) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return (false, String::from_utf8_lossy(&seen).into_owned()),
            Ok(Ok(0) | Err(_)) => return (true, String::from_utf8_lossy(&seen).into_owned()),
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

/// Whether `stream` is still open and silent after `wait`.
async fn still_open(stream: &mut TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 64];
    tokio::time::timeout(wait, stream.read(&mut buf))
        .await
        .is_err()
}

/// `GET /health` on a connection of its own from `from`: the status line
/// and the body.
async fn health_from(from: [u8; 4], to: SocketAddr) -> (String, String) {
    let mut stream = connect_from(from, to).await;
    let request = format!("GET /health HTTP/1.1\r\nHost: {to}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

/// Opens `n` connections from `from`, then sees which sluice holds
/// (silent) and which it refuses: the held ones, and the refused count.
async fn flood_from(from: [u8; 4], to: SocketAddr, n: usize) -> (Vec<TcpStream>, usize) {
    let mut checks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let mut stream = connect_from(from, to).await;
        checks.spawn(async move {
            let held = still_open(&mut stream, Duration::from_secs(3)).await;
            (held, stream)
        });
    }
    let mut held = Vec::new();
    let mut refused = 0;
    while let Some(checked) = checks.join_next().await {
        match checked.unwrap() {
            (true, stream) => held.push(stream),
            (false, _) => refused += 1,
        }
    }
    (held, refused)
}

/// A 2026-07-28 `tools/call` of `name` with `{"text": "back"}` through
/// `client`: the answer.
async fn modern_call(client: &reqwest::Client, url: &str, id: i64, name: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name, "arguments": {"text": "back"}, "_meta": modern_meta(json!({}))}});
    let resp = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    messages(resp).await.pop().expect("an answer")
}

/// A 503 from sluice's connection cap: its reason.
fn refusal_reason(answer: &str) -> String {
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{answer}"
    );
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    let body: Value = serde_json::from_str(body).unwrap();
    body["error"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_heads_are_closed_at_the_header_timeout_and_idle_ones_at_theirs() {
    let s = HttpSluice::start(&connections(
        "header_read_timeout = \"1s\"\nidle_timeout = \"60s\"",
    ))
    .await;
    let to = addr(&s.base);
    let mut slow = Vec::new();
    for _ in 0..50 {
        let mut stream = TcpStream::connect(to).await.unwrap();
        stream
            .write_all(format!("POST /mcp HTTP/1.1\r\nHost: {to}\r\nX-Half").as_bytes())
            .await
            .unwrap();
        slow.push(stream);
    }
    let mut idle = TcpStream::connect(to).await.unwrap();
    for stream in &mut slow {
        let (closed, sent) = closed(stream).await;
        assert!(closed, "a half header kept its connection open");
        assert_eq!(sent, "", "a slow head is closed without an answer");
    }
    // The idle connection sent nothing: it is under the idle timeout,
    // which the header timeout does not shorten.
    assert!(still_open(&mut idle, Duration::from_secs(2)).await);
    // And the listener serves a fresh client.
    let (status, body) = health_from([127, 0, 0, 1], to).await;
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_keep_alive_connection_is_closed_but_never_mid_request() {
    let s = HttpSluice::start(&connections("idle_timeout = \"1s\"")).await;
    let to = addr(&s.base);
    // One request, then silence on a keep-alive connection.
    let mut stream = TcpStream::connect(to).await.unwrap();
    let request = format!("GET /health HTTP/1.1\r\nHost: {to}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let (closed_after, answer) = closed(&mut stream).await;
    assert!(closed_after, "an idle keep-alive connection stayed open");
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    // A call that outlasts the idle timeout is answered whole.
    let r = s.call(1, "fx__slow", json!({"ms": 2500})).await;
    assert_eq!(first_text(&r), "slept", "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trickled_body_is_answered_408_and_closed() {
    let s = HttpSluice::start(&connections("body_read_timeout = \"1s\"")).await;
    let to = addr(&s.base);
    let mut stream = TcpStream::connect(to).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {to}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (closed_after, answer) = closed(&mut stream).await;
    assert!(closed_after, "{answer}");
    let (status, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(
        status.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{answer}"
    );
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "id": null, "error": {
            "code": -32600,
            "message": "Request Timeout: the body did not arrive within 1s"
        }})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_over_the_caps_get_503_with_the_reason_and_slots_come_back() {
    let s = HttpSluice::start(&connections("max = 7\nmax_per_client = 5")).await;
    let to = addr(&s.base);
    let (a, b, c) = ([127, 0, 0, 1], [127, 0, 0, 2], [127, 0, 0, 3]);
    // Connections count from accept: wait until each is held before the next.
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(connect_from(a, to).await);
    }
    let mut sixth = connect_from(a, to).await;
    let (_, answer) = closed(&mut sixth).await;
    assert_eq!(
        refusal_reason(&answer),
        "this client has 5 connections open, the limit per client; close some first"
    );
    // Another client still gets in, up to the cap in all.
    for _ in 0..2 {
        held.push(connect_from(b, to).await);
    }
    let mut over = connect_from(c, to).await;
    let (_, answer) = closed(&mut over).await;
    assert_eq!(
        refusal_reason(&answer),
        "sluice has 7 connections open, its limit; retry later"
    );
    // Closing them gives the slots back.
    drop(held);
    let mut status = String::new();
    for _ in 0..100 {
        status = health_from(a, to).await.0;
        if status == "HTTP/1.1 200 OK" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, "HTTP/1.1 200 OK");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_under_a_small_descriptor_limit_leaves_room_to_respawn_and_serve() {
    let (dir, path) = write_config(&connections("max_per_client = 150\nfd_reserve = 100"));
    // 300 descriptors: the cap comes to 300 - 100 - 16 = 184.
    let command = format!(
        "ulimit -n 300 && exec {} serve --listen 127.0.0.1:0 --config {}",
        sluice_bin(),
        path.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &command])
        .env("SLUICE_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = listening_url(&mut child).await;
    let to = addr(url.trim_end_matches("/mcp"));
    let (flood, refused) = flood_from([127, 0, 0, 1], to, 250).await;
    assert_eq!((flood.len(), refused), (150, 100));
    // The rest of the cap, and no more, for anyone else.
    let (rest, refused) = flood_from([127, 0, 0, 3], to, 50).await;
    assert_eq!((rest.len(), refused), (34, 16));
    drop(rest);
    // Another client is served, and an upstream that crashes comes back:
    // its pipes and process need descriptors the flood could not take.
    let other = reqwest::Client::builder()
        .local_address(Some([127, 0, 0, 2].into()))
        .build()
        .unwrap();
    let crashed = modern_call(&other, &url, 1, "fx__crash").await;
    assert_eq!(crashed["error"]["code"], json!(-32004), "{crashed}");
    let mut answer = Value::Null;
    for id in 2..200 {
        answer = modern_call(&other, &url, id, "fx__echo").await;
        if answer["result"].is_object() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        answer["result"]["content"][0]["text"],
        json!("back"),
        "{answer}"
    );
    drop(flood);
    drop(dir);
}
