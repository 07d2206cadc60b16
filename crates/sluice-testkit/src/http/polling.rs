//! `--sse-polling` (2025-11-25 SSE polling, SEP-1699): a polled legacy `tools/call` answered
//! with only a priming event, its later events buffered per stream until the client resumes
//! with `GET /mcp` + `Last-Event-ID`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::{App, event_stream, param_header_names, rpc_error, sse_event};
use crate::era::Era;
use crate::jsonrpc::{RpcError, method};
use crate::peer::{Peer, ReqCtx, lock};
use crate::protocol::spawn_request;

/// Header a client resumes an SSE stream with.
pub const LAST_EVENT_ID_HEADER: &str = "last-event-id";
/// `retry` (milliseconds) announced on a priming event (`--sse-polling`).
const POLL_RETRY_MS: u64 = 100;
/// Tools whose legacy `tools/call` is answered by polling under `--sse-polling`.
const POLLED_TOOLS: [&str; 2] = ["slow", "progress"];

/// What a polled POST stream has produced after its priming event.
#[derive(Default)]
struct PollBuf {
    /// Event `<stream>-<n>` (n ≥ 1) is `events[n - 1]`, framed with its `id` line.
    events: Vec<String>,
    /// Nothing more comes: the final response is buffered, or the work ended without one
    /// (cancelled, session deleted).
    done: bool,
}

/// A polled POST stream (`--sse-polling`): the session it belongs to and its events.
pub struct Polled {
    pub session: String,
    buf: watch::Sender<PollBuf>,
}

/// Whether `--sse-polling` applies to this legacy request.
pub fn is_polled(app: &App, msg: &Value) -> bool {
    app.fx.cfg.sse_polling
        && method(msg) == "tools/call"
        && msg
            .pointer("/params/name")
            .and_then(Value::as_str)
            .is_some_and(|name| POLLED_TOOLS.contains(&name))
}

/// `--sse-polling`: starts a legacy request (tracked by the session, so only
/// `notifications/cancelled` or DELETE stops it) and answers with just a priming event, ending
/// the response. What the request emits is buffered for `GET` + `Last-Event-ID` ([`resume`]).
pub fn answer_polled(
    app: &App,
    msg: Value,
    sid: &str,
    peer: &Arc<Peer>,
    headers: &HeaderMap,
) -> Response {
    let stream = format!("{:016x}", rand::random::<u64>());
    let polled = Arc::new(Polled {
        session: sid.to_owned(),
        buf: watch::Sender::new(PollBuf::default()),
    });
    lock(&app.polled).insert(stream.clone(), Arc::clone(&polled));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let ctx = ReqCtx {
        era: Era::Legacy,
        out: tx,
        peer: Some(Arc::clone(peer)),
        tracker: None,
        param_headers: param_header_names(headers),
    };
    spawn_request(&app.fx, msg, ctx, Some(peer));
    let prefix = stream.clone();
    tokio::spawn(async move {
        let mut n: u64 = 0;
        // Ends when the response is buffered or the work is gone (every sender dropped).
        while let Some(item) = rx.recv().await {
            n += 1;
            // Built whole: only `slow` and `progress` are polled, and they are small.
            let (event, end) = sse_event(item);
            let event = event.into_string();
            polled.buf.send_modify(|b| {
                b.events.push(format!("id: {prefix}-{n}\n{event}"));
                b.done = end;
            });
            if end {
                return;
            }
        }
        polled.buf.send_modify(|b| b.done = true);
    });
    eprintln!("sluice-fixture: polled stream {stream}: primed, response closed");
    event_stream(Body::from(format!(
        "id: {stream}-0\nretry: {POLL_RETRY_MS}\ndata: \n\n"
    )))
}

/// `GET` + `Last-Event-ID: <stream>-<n>` (`--sse-polling`): replays the events of that stream
/// after `n`, then the ones still to come, and ends after the final response. 400 if no polled
/// stream of this session has sent that id.
pub fn resume(app: &App, sid: &str, last: &HeaderValue) -> Response {
    let found = last
        .to_str()
        .ok()
        .and_then(|l| l.rsplit_once('-'))
        .and_then(|(stream, n)| {
            let polled = lock(&app.polled).get(stream).cloned()?;
            Some((polled, n.parse::<usize>().ok()?))
        })
        .filter(|(polled, n)| polled.session == sid && *n <= polled.buf.borrow().events.len());
    let Some((polled, next)) = found else {
        let err = RpcError::new(-32600, "Unknown Last-Event-ID");
        return rpc_error(StatusCode::BAD_REQUEST, &Value::Null, &err);
    };
    // `next` is the index in `events` of the first event to send (event `<stream>-<n + 1>`).
    let rx = polled.buf.subscribe();
    let events = futures::stream::unfold((rx, next), |(mut rx, next)| async move {
        let event = {
            let buf = rx
                .wait_for(|b| b.events.len() > next || b.done)
                .await
                .ok()?;
            buf.events.get(next).cloned()?
        };
        Some((Ok::<_, Infallible>(event), (rx, next + 1)))
    });
    event_stream(Body::from_stream(events))
}
