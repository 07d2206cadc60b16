//! Streamable HTTP transport at `POST /mcp` on 127.0.0.1.
//!
//! - Modern requests (`_meta` protocol version) are stateless. The answer is `application/json`
//!   unless the request asked for progress or the handler emits something before its response
//!   (e.g. `garbage`), in which case it is `text/event-stream` with those messages then the
//!   response. Closing the response stream cancels the work (2026 semantics). A
//!   `subscriptions/listen` is always `text/event-stream`: its acknowledgement and change
//!   notifications are events on it, and it stays open until the client closes it.
//! - The answer of `huge_read` / `huge_write` (both eras) is produced and written in 64 KiB
//!   chunks as the connection takes them (a chunked `application/json` body, or one SSE event if
//!   progress was asked for); a client that goes away stops it.
//! - Modern `tools/call` of `header_echo` must mirror its `x-mcp-header` arguments in
//!   `Mcp-Param-*` headers (SEP-2243), else 400 + -32020 (see `tools::check_param_headers`).
//!   Every request (both eras) hands the names of its `Mcp-Param-*` headers to the tools.
//! - Legacy: `initialize` creates a session (`Mcp-Session-Id`, random); later requests must carry
//!   it (400 without, 404 if unknown), `DELETE /mcp` ends it, `GET /mcp` opens the session's
//!   stream for unsolicited notifications. Server→client requests (`sample`) go on the POST's SSE
//!   stream and the client answers with a POST whose body is the JSON-RPC response (202).
//!   A disconnect is not a cancellation; `notifications/cancelled` is.
//! - Legacy with `--sse-polling` (2025-11-25 SSE polling, SEP-1699; see `polling`): a `tools/call` of `slow` or
//!   `progress` is answered `text/event-stream` with only a priming event
//!   (`id: <stream>-0`, `retry: 100`, empty `data`), then the response ends. The tool keeps
//!   running; what it emits (progress, then the final response) is buffered per stream as
//!   events `<stream>-1`, `<stream>-2`, .... `GET /mcp` with `Last-Event-ID: <stream>-<n>`
//!   replays that stream's events after `n`, waits for the rest and ends after the final
//!   response (a later resume may replay them again). An id that is not one of the session's
//!   streams, or beyond what was sent, is 400. A GET without `Last-Event-ID` is the session's
//!   stream as usual.
//! - Every POST: a foreign `Origin` is 403 (unless `--violate no-origin-check`), and an
//!   `MCP-Protocol-Version` header naming a version the fixture does not know, or (2026) one that
//!   differs from the body's `_meta` version, is 400 (unless
//!   `--violate no-version-header-check`).
//! - `GET /health`: `{"status":"ok","version":"<serverInfo version>"}` (no `version` under
//!   `--violate no-version`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::bulk::ReplyText;
use crate::era::{Era, LEGACY_VERSIONS, META_PROTOCOL_VERSION, MODERN_VERSION};
use crate::fixture::Fixture;
use crate::jsonrpc::{Kind, RpcError, classify, error_response, meta, method, progress_token};
use crate::peer::{AbortOnDrop, Out, Peer, ReqCtx, lock};
use crate::protocol::spawn_request;
use crate::{EraMode, StartMode, Violation};

mod polling;

use polling::{LAST_EVENT_ID_HEADER, Polled, answer_polled, is_polled, resume};

/// Name of the session header (matched case-insensitively).
const SESSION_HEADER: &str = "mcp-session-id";
/// Prefix of the SEP-2243 per-argument headers (lowercase).
const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// Shared HTTP state: the fixture, the live legacy sessions and (`--sse-polling`) the polled
/// POST streams by stream id.
struct App {
    fx: Arc<Fixture>,
    sessions: Mutex<HashMap<String, Arc<Peer>>>,
    polled: Mutex<HashMap<String, Arc<Polled>>>,
    /// Sessions opened so far (`--violate sequential-sessions` numbers them with it).
    opened: std::sync::atomic::AtomicU64,
}

impl App {
    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Peer>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Binds 127.0.0.1:`port`, prints `listening on http://127.0.0.1:PORT/mcp` on stderr, serves.
pub async fn run(fx: Arc<Fixture>, port: u16) -> io::Result<()> {
    if fx.cfg.start == StartMode::Garbage {
        for line in crate::stdio::GARBAGE_BANNER {
            println!("{line}");
        }
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();
    eprintln!("listening on http://127.0.0.1:{port}/mcp");
    let app = Arc::new(App {
        fx,
        sessions: Mutex::new(HashMap::new()),
        polled: Mutex::new(HashMap::new()),
        opened: std::sync::atomic::AtomicU64::new(0),
    });
    let router = Router::new()
        .route("/mcp", post(post_mcp).get(get_mcp).delete(delete_mcp))
        .route("/health", get(health))
        .layer(DefaultBodyLimit::max(64 * 1024 * 1024))
        .with_state(app);
    axum::serve(listener, router).await
}

/// A JSON body with the given status.
fn json_response(status: StatusCode, body: &Value) -> Response {
    json_text_response(status, body.to_string())
}

/// An already serialized JSON body with the given status.
fn json_text_response(status: StatusCode, body: String) -> Response {
    let mut resp = (status, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A JSON-RPC error response (`id` null when unknown) with the given HTTP status.
fn rpc_error(status: StatusCode, id: &Value, err: &RpcError) -> Response {
    json_response(status, &error_response(id, err))
}

/// A bodiless response.
fn status_only(status: StatusCode) -> Response {
    status.into_response()
}

/// One SSE event for an outgoing item, and whether it ends the stream. A bulk response stays
/// bulk (one `data:` line written in chunks: the JSON has no newline).
fn sse_event(item: Out) -> (ReplyText, bool) {
    match item {
        Out::Msg(v) => (
            ReplyText::Whole(format!("event: message\ndata: {v}\n\n")),
            false,
        ),
        Out::Response(r) => (r.text.wrap("event: message\ndata: ", "\n\n"), true),
        // Deliberately not JSON; still framed as an SSE event so the stream stays parseable.
        Out::Raw(s) => (ReplyText::Whole(format!("data: {s}\n\n")), false),
        Out::Exit(code) => std::process::exit(code),
    }
}

/// A body that is `text` written in its chunks, produced as the connection takes them: a bulk
/// response is never whole in memory, and production stops when the client goes away (hyper
/// drops the body).
fn chunked_body(text: ReplyText) -> Body {
    Body::from_stream(futures::stream::iter(
        text.chunks().map(Ok::<_, Infallible>),
    ))
}

/// A `text/event-stream` response carrying `first` (if any) and then whatever arrives on `rx`,
/// ending after the final response (or when every sender is gone). `guard` lives as long as the
/// stream: dropping the body (client disconnect) drops it.
fn sse_response(
    first: Option<Out>,
    rx: mpsc::UnboundedReceiver<Out>,
    guard: Option<AbortOnDrop>,
) -> Response {
    struct St {
        first: Option<Out>,
        rx: mpsc::UnboundedReceiver<Out>,
        _guard: Option<AbortOnDrop>,
        done: bool,
    }
    let state = St {
        first,
        rx,
        _guard: guard,
        done: false,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        let item = match st.first.take() {
            Some(item) => item,
            None => st.rx.recv().await?,
        };
        let (event, end) = sse_event(item);
        st.done = end;
        Some((event, st))
    })
    .flat_map(|event| futures::stream::iter(event.chunks().map(Ok::<_, Infallible>)));
    event_stream(Body::from_stream(stream))
}

/// A `text/event-stream` response with `body`.
fn event_stream(body: Body) -> Response {
    let mut resp = Response::new(body);
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

/// Runs one request and turns what it emits into an HTTP response: JSON if the response is
/// the first thing it emits and progress was not requested, SSE otherwise.
async fn answer(
    app: &App,
    msg: Value,
    era: Era,
    peer: Option<&Arc<Peer>>,
    session_id: Option<&str>,
    headers: &HeaderMap,
) -> Response {
    let wants_sse = progress_token(&msg).is_some();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let ctx = ReqCtx {
        era,
        out: tx,
        peer: peer.cloned(),
        tracker: None,
        param_headers: param_header_names(headers),
    };
    // Modern: the work lives as long as the HTTP exchange. Legacy: it is tracked by the session
    // for notifications/cancelled and survives a disconnect.
    let guard = match era {
        Era::Modern => Some(AbortOnDrop(spawn_request(&app.fx, msg, ctx, None))),
        Era::Legacy => {
            spawn_request(&app.fx, msg, ctx, peer);
            None
        }
    };
    let mut resp = if wants_sse {
        sse_response(None, rx, guard)
    } else {
        match rx.recv().await {
            Some(Out::Response(r)) => {
                // Modern: an unknown method is HTTP 404 and a missing client capability 400
                // (both with the JSON-RPC body); other errors ride on 200.
                let status = match (era, r.error_code) {
                    (Era::Modern, Some(-32601)) => StatusCode::NOT_FOUND,
                    (Era::Modern, Some(-32021)) => StatusCode::BAD_REQUEST,
                    _ => StatusCode::OK,
                };
                match r.text {
                    ReplyText::Whole(text) => json_text_response(status, text),
                    // Streamed as it is produced (huge_read, huge_write).
                    bulk => {
                        let mut resp = Response::new(chunked_body(bulk));
                        *resp.status_mut() = status;
                        resp.headers_mut().insert(
                            header::CONTENT_TYPE,
                            HeaderValue::from_static("application/json"),
                        );
                        resp
                    }
                }
            }
            Some(Out::Exit(code)) => std::process::exit(code),
            Some(first) => sse_response(Some(first), rx, guard),
            // Cancelled before answering.
            None => status_only(StatusCode::ACCEPTED),
        }
    };
    if let Some(sid) = session_id
        && let Ok(v) = HeaderValue::from_str(sid)
    {
        resp.headers_mut().insert(SESSION_HEADER, v);
    }
    resp
}

/// The names of the request's `Mcp-Param-*` headers: lowercase, sorted, unique.
fn param_header_names(headers: &HeaderMap) -> Vec<String> {
    let mut names: Vec<String> = headers
        .keys()
        .map(|k| k.as_str().to_ascii_lowercase())
        .filter(|k| k.starts_with(PARAM_HEADER_PREFIX))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Rejects a foreign `Origin` (DNS rebinding protection): only loopback origins are allowed.
fn origin_ok(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let host = origin
        .split_once("://")
        .map_or(origin, |(_, rest)| rest)
        .trim_end_matches('/');
    let host = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    matches!(host, "127.0.0.1" | "localhost" | "::1")
}

/// Why a request has no usable legacy session.
enum NoSession {
    /// No `Mcp-Session-Id` header: 400.
    Missing,
    /// An id we never issued or already deleted: 404 (the client must re-initialize).
    Unknown,
}

impl NoSession {
    fn into_response(self) -> Response {
        match self {
            NoSession::Missing => {
                let err = RpcError::new(-32600, "Missing Mcp-Session-Id (initialize first)");
                rpc_error(StatusCode::BAD_REQUEST, &Value::Null, &err)
            }
            NoSession::Unknown => status_only(StatusCode::NOT_FOUND),
        }
    }
}

/// The session a request names.
fn session(app: &App, headers: &HeaderMap) -> Result<(String, Arc<Peer>), NoSession> {
    let sid = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or(NoSession::Missing)?;
    match app.sessions().get(sid) {
        Some(peer) => Ok((sid.to_owned(), Arc::clone(peer))),
        None => Err(NoSession::Unknown),
    }
}

/// Checks the 2026 request headers that are present against the body: `MCP-Protocol-Version`
/// must equal the `_meta` version (unless `check_version` is false:
/// `--violate no-version-header-check`) and `Mcp-Method` the method (else 400 + -32020).
/// Missing headers are tolerated (the fixture is lenient there).
fn check_modern_headers(
    headers: &HeaderMap,
    msg: &Value,
    check_version: bool,
) -> Result<(), RpcError> {
    let mismatch = |what: &str| RpcError::new(-32020, format!("Header mismatch: {what}"));
    if check_version && let Some(v) = headers.get("mcp-protocol-version") {
        let body = meta(msg)
            .and_then(|m| m.get(META_PROTOCOL_VERSION))
            .and_then(Value::as_str);
        if body.is_some() && v.to_str().ok() != body {
            return Err(mismatch("MCP-Protocol-Version"));
        }
    }
    if let Some(v) = headers.get("mcp-method")
        && v.to_str().ok() != Some(method(msg))
    {
        return Err(mismatch("Mcp-Method"));
    }
    Ok(())
}

/// Checks the `MCP-Protocol-Version` header of a legacy request, if present: it must name a
/// version the fixture knows (2025-06-18 and later: "an invalid or unsupported value MUST get
/// 400 Bad Request"; the body is -32600, not a 2026 error code, so a dual-era client does not
/// take the fixture for a 2026 server).
fn check_legacy_version_header(headers: &HeaderMap) -> Result<(), RpcError> {
    let Some(v) = headers.get("mcp-protocol-version") else {
        return Ok(());
    };
    let known = v
        .to_str()
        .is_ok_and(|v| v == MODERN_VERSION || LEGACY_VERSIONS.contains(&v));
    if known {
        Ok(())
    } else {
        let shown = String::from_utf8_lossy(v.as_bytes()).into_owned();
        Err(RpcError::new(
            -32600,
            format!("Unsupported MCP-Protocol-Version: {shown}"),
        ))
    }
}

/// `GET /health`: `{"status":"ok","version":...}`, the version being `serverInfo`'s (absent
/// under `--violate no-version`).
async fn health(State(app): State<Arc<App>>) -> Response {
    let mut body = serde_json::json!({"status": "ok"});
    if let Some(version) = app.fx.server_info().get("version") {
        body["version"] = version.clone();
    }
    json_response(StatusCode::OK, &body)
}

/// `POST /mcp`: one JSON-RPC message.
async fn post_mcp(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    let check_version_header = !app.fx.cfg.violates(Violation::NoVersionHeaderCheck);
    let legacy_version_header = || {
        if check_version_header {
            check_legacy_version_header(&headers)
        } else {
            Ok(())
        }
    };
    if !app.fx.cfg.violates(Violation::NoOriginCheck) && !origin_ok(&headers) {
        let err = RpcError::new(-32600, "Forbidden origin");
        return rpc_error(StatusCode::FORBIDDEN, &Value::Null, &err);
    }
    if app.fx.cfg.start == StartMode::Hang {
        return std::future::pending().await;
    }
    let msg: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            let err = RpcError::new(-32700, format!("Parse error: {e}"));
            return rpc_error(StatusCode::BAD_REQUEST, &Value::Null, &err);
        }
    };
    match classify(&msg) {
        Kind::Invalid => {
            let id = msg.get("id").cloned().unwrap_or(Value::Null);
            let err = RpcError::new(-32600, "Invalid Request");
            rpc_error(StatusCode::BAD_REQUEST, &id, &err)
        }
        // Client notifications and responses only mean something inside a legacy session;
        // modern clients have none to send over HTTP, so they are accepted and ignored.
        Kind::Notification | Kind::Response => {
            if headers.contains_key(SESSION_HEADER) && app.fx.cfg.era != EraMode::Modern {
                let (_, peer) = match session(&app, &headers) {
                    Ok(s) => s,
                    Err(e) => return e.into_response(),
                };
                if classify(&msg) == Kind::Response {
                    peer.deliver(msg);
                } else {
                    app.fx.handle_notification(&msg, &peer);
                }
            }
            status_only(StatusCode::ACCEPTED)
        }
        Kind::Request => {
            let traceparent = headers.get("traceparent").and_then(|v| v.to_str().ok());
            app.fx.record(&msg, traceparent);
            let id = msg.get("id").cloned().unwrap_or(Value::Null);
            match app.fx.era_of(&msg) {
                Era::Modern => {
                    let checked = check_modern_headers(&headers, &msg, check_version_header)
                        .and_then(|()| app.fx.check_modern_envelope(&msg))
                        .and_then(|()| crate::tools::check_param_headers(&msg, &headers));
                    if let Err(err) = checked {
                        return rpc_error(StatusCode::BAD_REQUEST, &id, &err);
                    }
                    answer(&app, msg, Era::Modern, None, None, &headers).await
                }
                Era::Legacy if method(&msg) == "initialize" => {
                    if let Err(err) = legacy_version_header() {
                        return rpc_error(StatusCode::BAD_REQUEST, &id, &err);
                    }
                    let n = app
                        .opened
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                        + 1;
                    let sid = if app.fx.cfg.violates(Violation::SequentialSessions) {
                        n.to_string()
                    } else {
                        format!("{:032x}", rand::random::<u128>())
                    };
                    let peer = Peer::new();
                    app.sessions().insert(sid.clone(), Arc::clone(&peer));
                    eprintln!("sluice-fixture: new legacy session {sid}");
                    answer(&app, msg, Era::Legacy, Some(&peer), Some(&sid), &headers).await
                }
                Era::Legacy
                    if app.fx.cfg.era == EraMode::Dual && !headers.contains_key(SESSION_HEADER) =>
                {
                    // Could be either era gone wrong; -32602 is not a "modern" error code, so a
                    // dual-era client falls back to `initialize`, as it should.
                    let err = RpcError::invalid_params(format!(
                        "Missing params._meta[\"{META_PROTOCOL_VERSION}\"] (2026) or Mcp-Session-Id (2025; initialize first)"
                    ));
                    rpc_error(StatusCode::BAD_REQUEST, &id, &err)
                }
                Era::Legacy => {
                    let (sid, peer) = match session(&app, &headers) {
                        Ok(s) => s,
                        Err(e) => return e.into_response(),
                    };
                    if let Err(err) = legacy_version_header() {
                        return rpc_error(StatusCode::BAD_REQUEST, &id, &err);
                    }
                    if is_polled(&app, &msg) {
                        answer_polled(&app, msg, &sid, &peer, &headers)
                    } else {
                        answer(&app, msg, Era::Legacy, Some(&peer), None, &headers).await
                    }
                }
            }
        }
    }
}

/// `GET /mcp`: a legacy session's stream for unsolicited notifications (list_changed,
/// resources/updated); 405 without a session or on a modern-only server. With `--sse-polling`
/// and `Last-Event-ID`, the resumption of a polled POST stream instead ([`resume`]).
async fn get_mcp(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if app.fx.cfg.era == EraMode::Modern || !headers.contains_key(SESSION_HEADER) {
        return status_only(StatusCode::METHOD_NOT_ALLOWED);
    }
    match session(&app, &headers) {
        Ok((sid, peer)) => {
            if app.fx.cfg.sse_polling
                && let Some(last) = headers.get(LAST_EVENT_ID_HEADER)
            {
                return resume(&app, &sid, last);
            }
            let (tx, rx) = mpsc::unbounded_channel();
            peer.set_notify(Some(tx));
            sse_response(None, rx, None)
        }
        Err(e) => e.into_response(),
    }
}

/// `DELETE /mcp`: ends a legacy session (its in-flight work is aborted).
async fn delete_mcp(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if app.fx.cfg.era == EraMode::Modern || !headers.contains_key(SESSION_HEADER) {
        return status_only(StatusCode::METHOD_NOT_ALLOWED);
    }
    match session(&app, &headers) {
        Ok((sid, peer)) => {
            app.sessions().remove(&sid);
            lock(&app.polled).retain(|_, polled| polled.session != sid);
            peer.cancel_all();
            eprintln!("sluice-fixture: session {sid} deleted");
            status_only(StatusCode::OK)
        }
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_origin(origin: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(origin) {
            h.insert(header::ORIGIN, v);
        }
        h
    }

    #[test]
    fn origins() {
        assert!(origin_ok(&HeaderMap::new()));
        assert!(origin_ok(&with_origin("http://localhost:3000")));
        assert!(origin_ok(&with_origin("http://127.0.0.1")));
        assert!(origin_ok(&with_origin("http://[::1]:8080")));
        assert!(!origin_ok(&with_origin("https://evil.example")));
        assert!(!origin_ok(&with_origin("http://localhost.evil.example")));
    }

    #[test]
    fn header_mismatch() {
        let msg = json!({"jsonrpc":"2.0","id":1,"method":"tools/list",
            "params":{"_meta":{META_PROTOCOL_VERSION:"2026-07-28"}}});
        let mut h = HeaderMap::new();
        assert!(check_modern_headers(&h, &msg, true).is_ok());
        h.insert("mcp-method", HeaderValue::from_static("tools/list"));
        h.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2026-07-28"),
        );
        assert!(check_modern_headers(&h, &msg, true).is_ok());
        h.insert("mcp-method", HeaderValue::from_static("tools/call"));
        assert_eq!(
            check_modern_headers(&h, &msg, true).err().map(|e| e.code),
            Some(-32020)
        );
    }
}
