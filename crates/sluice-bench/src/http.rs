//! One Streamable HTTP connection: its own `reqwest::Client` (HTTP/1.1 keep-alive, a pool of
//! at most its share of the concurrency) and that many worker tasks, each with one POST in
//! flight at a time.
//!
//! Headers that never change are the client's default headers (`Accept`, `Content-Type` and,
//! in the 2026 era, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), so a call adds none of
//! its own except a legacy session's `Mcp-Session-Id` and `MCP-Protocol-Version`. The body is
//! rendered from the [`Template`] into the worker's buffer. The answer is read as JSON, or
//! from an SSE body event by event until the one carrying our id; the rest of a stream is
//! drained (briefly) so the connection can be reused.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Response, Url};
use serde_json::Value;
use sluice_core::headers::encode_value;
use sluice_core::protocol::MODERN_VERSION;

use crate::answer::{self, Answer, SseScanner};
use crate::phase::{Phase, Stats};
use crate::template::{self, Era, LEGACY_VERSION, Method, Template};

/// The id of the legacy `initialize` request.
const INITIALIZE_ID: u64 = 0;
/// How long a finished SSE stream may take to end after our answer before it is dropped
/// (dropping it closes the TCP connection instead of reusing it).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// What the workers of one connection share.
struct Shared {
    client: Client,
    url: Url,
    template: Template,
    /// Per-request headers: a legacy session's id and negotiated version.
    session_headers: Vec<(HeaderName, HeaderValue)>,
    /// The next request id.
    next_id: AtomicU64,
    /// Set at the start of each phase: the next error answer is described.
    want_detail: AtomicBool,
}

/// A Streamable HTTP connection and its workers.
pub struct HttpConn {
    shared: Arc<Shared>,
    workers: usize,
    timeout: Duration,
}

/// What the connection needs to know about the run.
pub struct HttpSpec<'a> {
    pub url: &'a Url,
    pub era: Era,
    pub method: Method,
    pub tool: &'a str,
    pub template: Template,
    /// Calls in flight on this connection (its workers, and its pool's size).
    pub workers: usize,
    pub timeout: Duration,
}

impl HttpConn {
    /// Builds the client and, for the legacy era, opens a session (`initialize`, then
    /// `notifications/initialized`).
    pub async fn open(spec: HttpSpec<'_>) -> Result<HttpConn, String> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if spec.era == Era::Modern {
            headers.insert(
                "mcp-protocol-version",
                HeaderValue::from_static(MODERN_VERSION),
            );
            headers.insert("mcp-method", HeaderValue::from_static(spec.method.name()));
            if spec.method == Method::ToolsCall {
                let name = HeaderValue::from_str(&encode_value(spec.tool))
                    .map_err(|e| format!("tool name as Mcp-Name: {e}"))?;
                headers.insert("mcp-name", name);
            }
        }
        let workers = spec.workers.max(1);
        let client = Client::builder()
            .default_headers(headers)
            .http1_only()
            .pool_max_idle_per_host(workers)
            .tcp_nodelay(true)
            .timeout(spec.timeout)
            .build()
            .map_err(|e| format!("building the HTTP client: {e}"))?;
        let session_headers = match spec.era {
            Era::Modern => Vec::new(),
            Era::Legacy => initialize(&client, spec.url).await?,
        };
        Ok(HttpConn {
            shared: Arc::new(Shared {
                client,
                url: spec.url.clone(),
                template: spec.template,
                session_headers,
                next_id: AtomicU64::new(INITIALIZE_ID + 1),
                want_detail: AtomicBool::new(true),
            }),
            workers,
            timeout: spec.timeout,
        })
    }

    /// Runs the workers until the phase is over; each keeps one call in flight. They record
    /// into one histogram per connection (a lock per call costs nothing next to an HTTP
    /// exchange, and a histogram per worker would cost memory at high concurrency).
    pub async fn run_phase(&mut self, phase: &Arc<Phase>) -> Stats {
        self.shared.want_detail.store(true, Ordering::Relaxed);
        let stats = Arc::new(Mutex::new(Stats::new(self.timeout)));
        let tasks: Vec<_> = (0..self.workers)
            .map(|_| {
                tokio::spawn(worker(
                    Arc::clone(&self.shared),
                    Arc::clone(phase),
                    Arc::clone(&stats),
                ))
            })
            .collect();
        let mut failed = None;
        for task in tasks {
            if let Err(e) = task.await {
                failed = Some(format!("a worker failed: {e}"));
            }
        }
        let mut stats = std::mem::replace(&mut *lock(&stats), Stats::new(self.timeout));
        if let Some(why) = failed {
            stats.note_error(|| why.clone());
            stats.lost = Some(why);
        }
        stats
    }

    /// Ends a legacy session (`DELETE`, best effort).
    pub async fn close(self) {
        let shared = &self.shared;
        if shared.session_headers.is_empty() {
            return;
        }
        let mut req = shared.client.delete(shared.url.clone());
        for (name, value) in &shared.session_headers {
            req = req.header(name.clone(), value.clone());
        }
        let _ = req.send().await;
    }
}

/// The statistics, even if a worker panicked while holding them.
fn lock(stats: &Mutex<Stats>) -> std::sync::MutexGuard<'_, Stats> {
    stats.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One worker: claims a call, POSTs it, waits for the answer, records it, repeats.
async fn worker(shared: Arc<Shared>, phase: Arc<Phase>, totals: Arc<Mutex<Stats>>) {
    let mut buf = Vec::with_capacity(1024);
    let mut sse = SseScanner::default();
    loop {
        let start = Instant::now();
        if !phase.claim(start) {
            break;
        }
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        buf.clear();
        shared.template.render(&mut buf, id);
        let result = call(&shared, id, Bytes::copy_from_slice(&buf), &mut sse).await;
        let mut stats = lock(&totals);
        match result {
            Ok((answer, at, detail)) => {
                stats.answered(answer.ok, at.saturating_duration_since(start));
                if let Some(detail) = detail {
                    stats.note_error(|| detail);
                }
            }
            Err(why) => {
                stats.failed();
                stats.note_error(|| why);
            }
        }
    }
}

/// One POST: the answer to `id`, when it was read, and its text if it is the phase's first
/// error answer. `Err` when there is no answer (transport error, timeout, no matching id).
async fn call(
    shared: &Shared,
    id: u64,
    body: Bytes,
    sse: &mut SseScanner,
) -> Result<(Answer, Instant, Option<String>), String> {
    let mut req = shared.client.post(shared.url.clone()).body(body);
    for (name, value) in &shared.session_headers {
        req = req.header(name.clone(), value.clone());
    }
    let mut resp = req.send().await.map_err(describe_error)?;
    let status = resp.status();
    let failed_status = !status.is_success();
    let (answer, text) = if is_event_stream(&resp) {
        sse.reset();
        let mut found = None;
        while let Some(chunk) = resp.chunk().await.map_err(describe_error)? {
            if let Some(answer) = sse.push(&chunk, id) {
                found = Some(answer);
                break;
            }
        }
        let found = found.or_else(|| sse.finish(id));
        let Some(answer) = found else {
            return Err(format!(
                "HTTP {status}: the event stream ended without the answer to id {id}"
            ));
        };
        let at = Instant::now();
        // Let the server end the stream so the connection stays reusable.
        let _ = tokio::time::timeout(DRAIN_GRACE, async {
            while let Ok(Some(_)) = resp.chunk().await {}
        })
        .await;
        return Ok(finish(shared, answer, failed_status, at, || {
            format!("HTTP {status}: an error event")
        }));
    } else {
        let bytes = resp.bytes().await.map_err(describe_error)?;
        match answer::parse(&bytes).filter(|a| a.id == id) {
            Some(answer) => (answer, bytes),
            None => {
                return Err(format!(
                    "HTTP {status}, no answer to id {id}: {}",
                    answer::describe(&bytes)
                ));
            }
        }
    };
    let at = Instant::now();
    Ok(finish(shared, answer, failed_status, at, || {
        format!("HTTP {status}: {}", answer::describe(&text))
    }))
}

/// Applies the HTTP status to an answer (a failed status is an error whatever the body says)
/// and describes it if it is the phase's first error.
fn finish(
    shared: &Shared,
    mut answer: Answer,
    failed_status: bool,
    at: Instant,
    describe: impl FnOnce() -> String,
) -> (Answer, Instant, Option<String>) {
    answer.ok &= !failed_status;
    let detail = (!answer.ok && shared.want_detail.swap(false, Ordering::Relaxed)).then(describe);
    (answer, at, detail)
}

/// Whether the response body is `text/event-stream`.
fn is_event_stream(resp: &Response) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// A transport error, with its causes.
fn describe_error(e: reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The legacy handshake: `initialize`, then `notifications/initialized`. Returns the headers
/// every later request carries: the session id (if the server issued one) and
/// `MCP-Protocol-Version` (the version the server answered with).
async fn initialize(client: &Client, url: &Url) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let mut body = Vec::new();
    Template::initialize(false).render(&mut body, INITIALIZE_ID);
    let resp = client
        .post(url.clone())
        .body(body)
        .send()
        .await
        .map_err(|e| format!("initialize: {}", describe_error(e)))?;
    let status = resp.status();
    let session = resp.headers().get("mcp-session-id").cloned();
    let sse = is_event_stream(&resp);
    let text = resp
        .bytes()
        .await
        .map_err(|e| format!("initialize: {}", describe_error(e)))?;
    let answer = messages(&text, sse)
        .into_iter()
        .find(|m| m.get("id").and_then(Value::as_u64) == Some(INITIALIZE_ID))
        .ok_or_else(|| {
            format!(
                "initialize: HTTP {status}, no answer: {}",
                answer::describe(&text)
            )
        })?;
    let version = answer
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!(
                "initialize failed (HTTP {status}): {}",
                answer::describe(&text)
            )
        })?;
    if !status.is_success() {
        return Err(format!("initialize: HTTP {status}"));
    }
    let mut headers = Vec::new();
    if let Some(session) = session {
        headers.push((HeaderName::from_static("mcp-session-id"), session));
    }
    let version =
        HeaderValue::from_str(version).unwrap_or(HeaderValue::from_static(LEGACY_VERSION));
    headers.push((HeaderName::from_static("mcp-protocol-version"), version));

    let mut req = client
        .post(url.clone())
        .body(template::initialized_notification(false));
    for (name, value) in &headers {
        req = req.header(name.clone(), value.clone());
    }
    let resp = req
        .send()
        .await
        .map_err(|e| format!("notifications/initialized: {}", describe_error(e)))?;
    if !resp.status().is_success() {
        return Err(format!("notifications/initialized: HTTP {}", resp.status()));
    }
    Ok(headers)
}

/// The JSON-RPC messages of a whole body (JSON, or the `data` of each SSE event). Used only
/// for the handshake, where speed does not matter.
fn messages(body: &[u8], sse: bool) -> Vec<Value> {
    if !sse {
        return serde_json::from_slice(body).into_iter().collect();
    }
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    let mut data = String::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                out.extend(serde_json::from_str::<Value>(&data).ok());
            }
            data.clear();
        } else if let Some(value) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_messages_from_json_and_sse() {
        let json = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}"#;
        assert_eq!(messages(json, false).len(), 1);
        let sse = b"id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n\
                    data: {\"jsonrpc\":\"2.0\",\"id\":0,\n\
                    data: \"result\":{}}";
        let msgs = messages(sse, true);
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[1]["id"], 0);
    }
}
