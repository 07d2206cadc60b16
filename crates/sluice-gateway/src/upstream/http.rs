//! A Streamable HTTP upstream, in either era.
//!
//! Every request is its own POST. The answer comes as one JSON object or as
//! an SSE stream that may carry the request's progress, logging and (legacy)
//! server-to-client requests before the response. A modern upstream gets the
//! SEP-2243 headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`); a
//! legacy one gets its session id and negotiated version, and a GET stream
//! is kept open for its notifications. No answer is buffered past the
//! transport ceiling.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use serde_json::Value;
use sluice_core::headers;
use sluice_core::jsonrpc::Message;
use sluice_core::protocol::{self, Era};
use sluice_core::trace_context;
use sse_stream::SseByteStream;

use super::connection::{RelatedSink, Shared};
use crate::outbound;
use crate::pending::Answer;
use sluice_core::policy::UpstreamFailure;

/// How long to wait before resuming a polled SSE answer when the upstream
/// named no `retry`, and the most sluice waits whatever it named.
const DEFAULT_SSE_RETRY: Duration = Duration::from_millis(500);
const MIN_SSE_RETRY: Duration = Duration::from_millis(100);
const MAX_SSE_RETRY: Duration = Duration::from_secs(10);
/// Resumptions in a row that brought no event before giving up.
const MAX_IDLE_RESUMES: u32 = 20;

/// How many times in a row the legacy GET stream may fail before sluice
/// stops reopening it (the POST path keeps working without it).
const GET_STREAM_RETRIES: u32 = 5;

pub(crate) struct HttpWire {
    client: reqwest::Client,
    url: String,
    configured: HeaderMap,
    max_message: usize,
    session: Mutex<Option<HeaderValue>>,
    version: Mutex<Option<HeaderValue>>,
}

impl HttpWire {
    /// Builds the wire. Header names or values that HTTP cannot carry are a
    /// configuration error, reported with the header's name only.
    /// A wire to `checked`, the upstream's URL as the outbound guard
    /// passed it: connections go to the checked addresses only, and
    /// redirects are not followed (S-10).
    pub(crate) fn new(
        checked: &outbound::Checked,
        headers: &BTreeMap<String, String>,
        max_message: usize,
    ) -> Result<Self, String> {
        let mut configured = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| format!("header name {name:?} is not a valid HTTP header name"))?;
            let mut value = HeaderValue::try_from(value.as_str()).map_err(|_| {
                format!("the value of header {name} is not a valid HTTP header value")
            })?;
            value.set_sensitive(true);
            configured.insert(name, value);
        }
        let builder = reqwest::Client::builder().connect_timeout(Duration::from_secs(10));
        let client =
            outbound::pinned_client(builder, checked).map_err(|e| format!("HTTP client: {e}"))?;
        Ok(HttpWire {
            client,
            url: checked.url.to_string(),
            configured,
            max_message,
            session: Mutex::new(None),
            version: Mutex::new(None),
        })
    }

    /// Records the version a legacy handshake negotiated.
    pub(crate) fn set_legacy_version(&self, version: &str) {
        *self.version.lock().unwrap_or_else(PoisonError::into_inner) =
            HeaderValue::try_from(version).ok();
    }

    fn headers(
        &self,
        era: Era,
        method: Option<&str>,
        name: Option<&str>,
        params: &[(String, String)],
    ) -> HeaderMap {
        let mut h = self.configured.clone();
        // Computed headers always win over configured ones.
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        match era {
            Era::Modern => {
                h.insert(
                    "mcp-protocol-version",
                    HeaderValue::from_static(protocol::MODERN_VERSION),
                );
                if let Some(method) = method.and_then(|m| HeaderValue::try_from(m).ok()) {
                    h.insert("mcp-method", method);
                }
                if let Some(name) =
                    name.and_then(|n| HeaderValue::try_from(headers::encode_value(n)).ok())
                {
                    h.insert("mcp-name", name);
                }
                for (name, value) in params {
                    let header = (
                        HeaderName::try_from(name.as_str()),
                        HeaderValue::try_from(value.as_str()),
                    );
                    if let (Ok(name), Ok(value)) = header {
                        h.insert(name, value);
                    }
                }
            }
            Era::Legacy => {
                if let Some(v) = self
                    .version
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
                {
                    h.insert("mcp-protocol-version", v);
                }
                if let Some(s) = self
                    .session
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
                {
                    h.insert("mcp-session-id", s);
                }
            }
        }
        h
    }

    async fn post(
        &self,
        era: Era,
        method: Option<&str>,
        name: Option<&str>,
        params: &[(String, String)],
        message: &Value,
    ) -> reqwest::Result<reqwest::Response> {
        let body = serde_json::to_vec(message).unwrap_or_default();
        let mut headers = self.headers(era, method, name, params);
        // The trace context travels in `_meta` and, for HTTP-aware
        // tracing on the upstream's side, in its headers too.
        for key in [trace_context::TRACEPARENT, trace_context::TRACESTATE] {
            let value = message
                .get("params")
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .and_then(|v| HeaderValue::try_from(v).ok());
            if let Some(value) = value {
                headers.insert(key, value);
            }
        }
        let resp = self
            .client
            .post(&self.url)
            .headers(headers)
            .body(body)
            .send()
            .await?;
        if let Some(id) = resp.headers().get("mcp-session-id") {
            let mut session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
            if session.is_none() {
                *session = Some(id.clone());
            }
        }
        Ok(resp)
    }

    /// POSTs one request and reads its answer, routing what comes before it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn exchange(
        &self,
        shared: &Arc<Shared>,
        era: Era,
        id: u64,
        method: &str,
        name: Option<&str>,
        params: &[(String, String)],
        message: &Value,
        related: Option<&RelatedSink>,
    ) -> Result<Answer, UpstreamFailure> {
        let upstream = || shared.name.to_string();
        let resp = self
            .post(era, Some(method), name, params, message)
            .await
            .map_err(|_| UpstreamFailure::Lost {
                upstream: upstream(),
            })?;
        let status = resp.status();
        if status.is_redirection() {
            // Following it would reach an address the guard never checked.
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .unwrap_or("?");
            tracing::warn!(upstream = %shared.name, "the upstream answered {status} to {to:?}; redirects are not followed");
            return Err(UpstreamFailure::Protocol {
                upstream: upstream(),
                detail: "it answered with a redirect, and redirects are not followed",
            });
        }
        if status == StatusCode::NOT_FOUND && era == Era::Legacy && self.has_session() {
            tracing::warn!(upstream = %shared.name, "upstream ended our session; reconnecting");
            shared.close();
            return Err(UpstreamFailure::Lost {
                upstream: upstream(),
            });
        }
        if is_event_stream(resp.headers()) {
            return self.read_stream(shared, era, id, resp, related).await;
        }
        let body = match read_capped(resp, self.max_message).await {
            Ok(body) => body,
            Err(BodyError::TooLarge) => {
                return Err(UpstreamFailure::TooLarge {
                    upstream: upstream(),
                });
            }
            Err(BodyError::Broken) => {
                return Err(UpstreamFailure::Protocol {
                    upstream: upstream(),
                    detail: "the answer's body broke",
                });
            }
        };
        match Message::parse(&body) {
            Some(Ok(Message::Response { outcome, .. })) => Ok(outcome.map_err(Some)),
            _ if !status.is_success() => Err(UpstreamFailure::Protocol {
                upstream: upstream(),
                detail: "HTTP error status without a JSON-RPC answer",
            }),
            _ => Err(UpstreamFailure::Protocol {
                upstream: upstream(),
                detail: "the answer is not a JSON-RPC response",
            }),
        }
    }

    /// Reads a request's SSE answer. A 2025-11-25 upstream may close the
    /// stream before answering (SSE polling, SEP-1699) after events with
    /// ids: sluice then waits the `retry` it was given and resumes with
    /// `GET` + `Last-Event-ID` until the answer comes (the request timeout
    /// bounds the whole).
    async fn read_stream(
        &self,
        shared: &Arc<Shared>,
        era: Era,
        id: u64,
        resp: reqwest::Response,
        related: Option<&RelatedSink>,
    ) -> Result<Answer, UpstreamFailure> {
        let mut resp = resp;
        let mut last_event: Option<String> = None;
        let mut retry = DEFAULT_SSE_RETRY;
        let mut idle_resumes = 0;
        loop {
            let exceeded = Arc::new(AtomicBool::new(false));
            let mut events = capped_events(resp, self.max_message, Arc::clone(&exceeded));
            while let Some(event) = events.next().await {
                let Ok(event) = event else {
                    let upstream = shared.name.to_string();
                    return Err(if exceeded.load(Ordering::Relaxed) {
                        UpstreamFailure::TooLarge { upstream }
                    } else {
                        UpstreamFailure::Protocol {
                            upstream,
                            detail: "the event stream broke",
                        }
                    });
                };
                if let Some(event_id) = event.id.filter(|i| !i.is_empty()) {
                    last_event = Some(event_id);
                }
                if let Some(ms) = event.retry {
                    retry = Duration::from_millis(ms).clamp(MIN_SSE_RETRY, MAX_SSE_RETRY);
                }
                idle_resumes = 0;
                // Priming events carry an id and empty data: nothing to route.
                let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                    continue;
                };
                match Message::parse(data.as_bytes()) {
                    Some(Ok(Message::Response { id: rid, outcome }))
                        if rid.as_u64() == Some(id) =>
                    {
                        return Ok(outcome.map_err(Some));
                    }
                    Some(Ok(message)) => shared.dispatch(era, message, related),
                    _ => {
                        tracing::warn!(upstream = %shared.name, "upstream sent an event that is not JSON-RPC; ignored")
                    }
                }
            }
            // The stream ended without the answer: resumable only in the
            // legacy era, and only after an event with an id.
            let (Era::Legacy, Some(last)) = (era, &last_event) else {
                return Ok(Err(None));
            };
            // An upstream that keeps closing without saying anything new is
            // not polling, it is broken.
            idle_resumes += 1;
            if idle_resumes > MAX_IDLE_RESUMES {
                return Ok(Err(None));
            }
            tokio::time::sleep(retry).await;
            let mut headers = self.headers(Era::Legacy, None, None, &[]);
            headers.remove(header::CONTENT_TYPE);
            headers.insert(
                header::ACCEPT,
                HeaderValue::from_static("text/event-stream"),
            );
            let Ok(last) = HeaderValue::try_from(last.as_str()) else {
                return Ok(Err(None));
            };
            headers.insert("last-event-id", last);
            resp = match self.client.get(&self.url).headers(headers).send().await {
                Ok(r) if r.status().is_success() && is_event_stream(r.headers()) => r,
                _ => return Ok(Err(None)),
            };
        }
    }

    fn has_session(&self) -> bool {
        self.session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// POSTs a notification; the answer (202) carries nothing.
    pub(crate) async fn notify(&self, shared: &Shared, era: Era, message: &Value) {
        let method = message.get("method").and_then(Value::as_str);
        if let Err(e) = self.post(era, method, None, &[], message).await {
            tracing::debug!(upstream = %shared.name, "notification not delivered: {e}");
        }
    }

    /// POSTs the client's answer to a server-to-client request.
    pub(crate) async fn post_reply(&self, era: Era, message: &Value) {
        let _ = self.post(era, None, None, &[], message).await;
    }

    /// Ends a legacy session with DELETE (best effort).
    pub(crate) async fn end_session(&self) {
        let session = self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(session) = session {
            let _ = self
                .client
                .delete(&self.url)
                .headers(self.configured.clone())
                .header("mcp-session-id", session)
                .timeout(Duration::from_secs(2))
                .send()
                .await;
        }
    }

    /// Keeps the legacy GET stream open for the upstream's notifications
    /// that belong to no request (`list_changed`, `resources/updated`).
    pub(crate) fn listen(self: &Arc<Self>, shared: Arc<Shared>) {
        let wire = Arc::clone(self);
        tokio::spawn(async move {
            let mut failures = 0;
            while !shared.closed.is_cancelled() && failures < GET_STREAM_RETRIES {
                let mut headers = wire.headers(Era::Legacy, None, None, &[]);
                headers.remove(header::CONTENT_TYPE);
                headers.insert(
                    header::ACCEPT,
                    HeaderValue::from_static("text/event-stream"),
                );
                let resp = tokio::select! {
                    resp = wire.client.get(&wire.url).headers(headers).send() => resp,
                    () = shared.closed.cancelled() => return,
                };
                match resp {
                    Ok(resp) if resp.status().is_success() && is_event_stream(resp.headers()) => {
                        failures = 0;
                        let mut events =
                            capped_events(resp, wire.max_message, Arc::new(AtomicBool::new(false)));
                        loop {
                            let event = tokio::select! {
                                event = events.next() => event,
                                () = shared.closed.cancelled() => return,
                            };
                            let Some(Ok(event)) = event else { break };
                            if let Some(Some(Ok(message))) =
                                event.data.map(|d| Message::parse(d.as_bytes()))
                            {
                                shared.dispatch(Era::Legacy, message, None);
                            }
                        }
                    }
                    // 405: the upstream offers no GET stream. Fine.
                    Ok(resp) if resp.status() == StatusCode::METHOD_NOT_ALLOWED => return,
                    _ => failures += 1,
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// Why a body was not read whole.
enum BodyError {
    /// Longer than the transport ceiling; the rest is not read (dropping
    /// the response closes the connection).
    TooLarge,
    /// The connection broke.
    Broken,
}

async fn read_capped(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>, BodyError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|_| BodyError::Broken)? {
        if body.len() + chunk.len() > max {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// SSE events from a response, failing when more than `max` bytes arrive
/// without completing an event (so one huge event cannot exhaust memory,
/// while a long stream of small events is fine).
fn capped_events(
    resp: reqwest::Response,
    max: usize,
    exceeded: Arc<AtomicBool>,
) -> impl futures::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> {
    let since_event = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&since_event);
    let bytes = resp.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        if counter.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len() > max {
            exceeded.store(true, Ordering::Relaxed);
            return Err(std::io::Error::other("event exceeds the transport ceiling"));
        }
        Ok(chunk)
    });
    SseByteStream::new(Box::pin(bytes)).inspect(move |_| since_event.store(0, Ordering::Relaxed))
}
