//! Two replicas of `sluice serve` sharing `[state] cursor_secret`: a legacy
//! session opened on one goes on on the other, because its id carries it
//! sealed; ids that were tampered with, cut short, sealed under another
//! secret or are too old are unknown sessions (404), and so is another
//! principal's session (S-18), on either replica.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use serde_json::{Value, json};
use sluice_core::seal;
use sluice_core::session_token::{SessionClaims, SessionKey};

const SECRET: &str = "replicas-share-this-secret-0123456789abcdef";
const ALICE: (&str, &str) = ("authorization", "Bearer alice-token-0123456789abcdef");
const BOB: (&str, &str) = ("authorization", "Bearer bob-token-0123456789abcdef");
const LEGACY: (&str, &str) = ("mcp-protocol-version", "2025-11-25");

/// A replica with bearer auth for alice and bob and the given secret.
async fn replica(cursor_secret: &str) -> HttpSluice {
    let config = format!(
        "[state]\ncursor_secret = \"{cursor_secret}\"\n\
         [auth]\nmode = \"bearer\"\n\
         [[auth.token]]\nprincipal = \"alice\"\nfile = \"alice.token\"\n\
         [[auth.token]]\nprincipal = \"bob\"\nfile = \"bob.token\"\n{}",
        fixture_upstream("fx", &["--era", "legacy"])
    );
    let (dir, path) = write_config(&config);
    std::fs::write(
        dir.path().join("alice.token"),
        "alice-token-0123456789abcdef",
    )
    .unwrap();
    std::fs::write(dir.path().join("bob.token"), "bob-token-0123456789abcdef").unwrap();
    HttpSluice::start_at(dir, &path).await
}

/// `initialize` as alice, declaring `capabilities`; the session id.
async fn open_session(s: &HttpSluice, capabilities: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": "scaleout", "version": "1"}}});
    let resp = s.post(&init, &[ALICE]).await;
    assert_eq!(resp.status(), 200);
    resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// A legacy request in `session`, as `who`.
async fn in_session(
    s: &HttpSluice,
    who: (&str, &str),
    session: &str,
    id: i64,
    method: &str,
    params: Value,
) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    s.post(&body, &[who, LEGACY, ("mcp-session-id", session)])
        .await
}

async fn status_of(s: &HttpSluice, who: (&str, &str), session: &str) -> u16 {
    in_session(s, who, session, 9, "tools/list", json!({}))
        .await
        .status()
        .as_u16()
}

async fn delete(s: &HttpSluice, who: (&str, &str), session: &str) -> u16 {
    s.client
        .delete(&s.url)
        .header(who.0, who.1)
        .header("mcp-session-id", session)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(since.as_millis()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_session_opened_on_one_replica_goes_on_on_another() {
    let a = replica(SECRET).await;
    let b = replica(SECRET).await;
    let session = open_session(&a, json!({"sampling": {}, "roots": {"listChanged": true}})).await;

    // The id says nothing readable about who opened it or what it declared.
    let bytes = URL_SAFE_NO_PAD.decode(&session).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    for hidden in ["alice", "sampling", "roots", "2025-11-25"] {
        assert!(!text.contains(hidden), "{hidden} readable in {session}");
    }

    // B never saw the session and serves it.
    let listed = in_session(&b, ALICE, &session, 2, "tools/list", json!({})).await;
    assert_eq!(listed.status(), 200);
    let listed = messages(listed).await.pop().unwrap();
    assert_eq!(names(&listed, "tools").len(), FIXED_TOOLS.len());
    let call = json!({"name": "fx__echo", "arguments": {"text": "via B"}});
    let called = in_session(&b, ALICE, &session, 3, "tools/call", call).await;
    assert_eq!(first_text(&messages(called).await.pop().unwrap()), "via B");
    // The capabilities declared on A hold on B: the upstream's sampling
    // request is relayed on the call's stream, and answered to B.
    let sample = json!({"name": "fx__sample", "arguments": {"prompt": "on B?"}});
    let resp = in_session(&b, ALICE, &session, 4, "tools/call", sample).await;
    let mut events = SseReader::new(resp);
    let relayed = events.next().await;
    assert_eq!(relayed["method"], "sampling/createMessage", "{relayed}");
    let answer = json!({"jsonrpc": "2.0", "id": relayed["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "yes, on B"},
        "model": "m", "stopReason": "endTurn"}});
    let posted = b
        .post(&answer, &[ALICE, LEGACY, ("mcp-session-id", &session)])
        .await;
    assert_eq!(posted.status(), 202);
    let done = events.next().await;
    assert_eq!(done["id"], 4);
    assert!(first_text(&done).contains("yes, on B"), "{done}");

    // Another principal holding the id gets 404 on either replica (S-18).
    for s in [&a, &b] {
        assert_eq!(status_of(s, BOB, &session).await, 404);
        assert_eq!(s.open_stream(&session, &[BOB]).await.status(), 404);
        assert_eq!(delete(s, BOB, &session).await, 404);
    }
    // alice opens the notification stream on B too.
    assert_eq!(b.open_stream(&session, &[ALICE]).await.status(), 200);

    // DELETE ends the session on the replica that receives it; the other
    // keeps serving it until it idles out (documented: ids cannot be
    // revoked across replicas).
    assert_eq!(delete(&b, ALICE, &session).await, 200);
    assert_eq!(status_of(&b, ALICE, &session).await, 404);
    assert_eq!(status_of(&a, ALICE, &session).await, 200);
    assert_eq!(delete(&a, ALICE, &session).await, 200);
    assert_eq!(status_of(&a, ALICE, &session).await, 404);
    assert_eq!(delete(&a, ALICE, &session).await, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn tampered_truncated_foreign_and_expired_ids_are_unknown_sessions() {
    let a = replica(SECRET).await;
    let b = replica(SECRET).await;
    let other_deployment = replica("another-deployment-secret-0123456789abcdef").await;
    let session = open_session(&a, json!({})).await;

    let mut tampered = session.clone().into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let truncated = &session[..session.len() - 4];
    for bad in [tampered.as_str(), truncated] {
        assert_eq!(status_of(&b, ALICE, bad).await, 404, "{bad}");
        assert_eq!(status_of(&a, ALICE, bad).await, 404, "{bad}");
    }
    assert_eq!(status_of(&other_deployment, ALICE, &session).await, 404);
    assert_eq!(
        other_deployment
            .open_stream(&session, &[ALICE])
            .await
            .status(),
        404
    );

    // Ids sealed with the shared secret, as a replica would: one issued
    // now opens, one older than session_max_age (24 h) does not.
    let key = SessionKey::derive(&seal::secret_from_passphrase(SECRET));
    let sealed = |issued_at_ms: u64, nonce: u8| {
        key.seal(
            &SessionClaims {
                session_nonce: [nonce; 16],
                principal: "alice".into(),
                protocol_version: "2025-11-25".into(),
                client_capabilities: json!({}),
                issued_at_ms,
                view: None,
            },
            rand::random(),
        )
    };
    let day = Duration::from_secs(86_400).as_millis() as u64;
    let fresh = sealed(now_ms() - day + 60_000, 1);
    assert_eq!(status_of(&b, ALICE, &fresh).await, 200);
    let expired = sealed(now_ms() - day - 60_000, 2);
    assert_eq!(status_of(&b, ALICE, &expired).await, 404);
    assert_eq!(delete(&b, ALICE, &expired).await, 404);
}
