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

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use serde_json::{Map, Value};
use sluice_core::headers;
use sluice_core::jsonrpc;
use sluice_core::payload::Payload;
use sluice_core::policy::UpstreamFailure;
use sluice_core::protocol::{self, Era};
use sluice_core::trace_context;
use sse_stream::SseByteStream;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::oauth::{Retry, UpstreamAuth};
use super::wire::{Inbound, Outgoing, Received, Unreadable, Wire};
use crate::outbound;
use crate::pending::Answer;

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

/// The longest a legacy connection waits for its GET stream to open
/// before it serves calls anyway.
const GET_STREAM_OPEN_WAIT: Duration = Duration::from_secs(2);

/// Where a polled SSE answer stands between its streams.
struct Polling {
    /// The id of the last event seen: where to resume.
    last_event: Option<String>,
    /// How long to wait before resuming.
    retry: Duration,
    /// Resumptions in a row that brought no event.
    idle_resumes: u32,
}

pub(crate) struct HttpWire {
    /// The upstream's name, for the log.
    name: Arc<str>,
    client: reqwest::Client,
    url: String,
    configured: HeaderMap,
    max_message: usize,
    session: Mutex<Option<HeaderValue>>,
    version: Mutex<Option<HeaderValue>>,
    /// `auth = "oauth"`: the login whose token every request carries.
    auth: Option<UpstreamAuth>,
}

impl HttpWire {
    /// A wire to `checked`, the upstream's URL as the outbound guard
    /// passed it: connections go to the checked addresses only, and
    /// redirects are not followed (SECURITY.md, S-10). Header names or
    /// values that HTTP cannot carry are a configuration error, reported
    /// with the header's name only.
    pub(crate) fn new(
        name: Arc<str>,
        checked: &outbound::Checked,
        headers: &BTreeMap<String, String>,
        max_message: usize,
        auth: Option<UpstreamAuth>,
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
            name,
            client,
            url: checked.url.to_string(),
            configured,
            max_message,
            session: Mutex::new(None),
            version: Mutex::new(None),
            auth,
        })
    }

    /// The login's `Authorization` value, when the upstream has one: the
    /// login of `on_behalf_of` (`""`: sluice's own).
    async fn authorization(
        &self,
        on_behalf_of: &str,
    ) -> Result<Option<HeaderValue>, UpstreamFailure> {
        match &self.auth {
            Some(auth) => auth.authorization(on_behalf_of).await.map(Some),
            None => Ok(None),
        }
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
            Era::Modern => modern_headers(&mut h, method, name, params),
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
        (body, meta): (Bytes, Option<&Map<String, Value>>),
        authorization: Option<&HeaderValue>,
    ) -> reqwest::Result<reqwest::Response> {
        let mut headers = self.headers(era, method, name, params);
        if let Some(value) = authorization {
            headers.insert(header::AUTHORIZATION, value.clone());
        }
        // The trace context travels in `_meta` and, for HTTP-aware
        // tracing on the upstream's side, in its headers too.
        for key in [trace_context::TRACEPARENT, trace_context::TRACESTATE] {
            let value = meta
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
    async fn post_request(
        &self,
        request: Outgoing<'_>,
        inbound: &dyn Inbound,
    ) -> Result<Answer<Payload>, UpstreamFailure> {
        let Outgoing {
            era,
            id,
            method,
            name,
            headers,
            message,
            meta,
            on_behalf_of,
        } = request;
        let message = Bytes::from(message);
        let upstream = || self.name.to_string();
        let mut sent_again = false;
        let resp = loop {
            let authorization = self.authorization(on_behalf_of).await?;
            let resp = self
                .post(
                    era,
                    Some(method),
                    name,
                    headers,
                    (message.clone(), meta),
                    authorization.as_ref(),
                )
                .await
                .map_err(|_| UpstreamFailure::Lost {
                    upstream: upstream(),
                })?;
            let (Some(auth), Some(sent)) = (&self.auth, &authorization) else {
                break resp;
            };
            let status = resp.status();
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                let challenge = resp
                    .headers()
                    .get(header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok());
                match auth
                    .refused(on_behalf_of, status, challenge, sent, sent_again)
                    .await?
                {
                    Retry::Again if !sent_again => {
                        sent_again = true;
                        continue;
                    }
                    Retry::Again | Retry::NotAuth => break resp,
                }
            }
            if status.is_success() {
                auth.accepted(on_behalf_of).await;
            }
            break resp;
        };
        let status = resp.status();
        if status.is_redirection() {
            // Following it would reach an address the guard never checked.
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .unwrap_or("?");
            tracing::warn!(upstream = %self.name, "the upstream answered {status} to {to:?}; redirects are not followed");
            return Err(UpstreamFailure::Protocol {
                upstream: upstream(),
                detail: "it answered with a redirect, and redirects are not followed",
            });
        }
        if status == StatusCode::NOT_FOUND && era == Era::Legacy && self.has_session() {
            tracing::warn!(upstream = %self.name, "upstream ended our session; reconnecting");
            inbound.ended();
            return Err(UpstreamFailure::Lost {
                upstream: upstream(),
            });
        }
        if is_event_stream(resp.headers()) {
            return self.read_stream(inbound, era, id, resp).await;
        }
        self.read_body(resp, status).await
    }

    /// Reads a request's answer sent as one JSON object.
    async fn read_body(
        &self,
        resp: reqwest::Response,
        status: StatusCode,
    ) -> Result<Answer<Payload>, UpstreamFailure> {
        let upstream = || self.name.to_string();
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
        match Received::parse(&body) {
            Some(Ok(Received::Answer { answer, .. })) => Ok(answer),
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
        inbound: &dyn Inbound,
        era: Era,
        id: u64,
        resp: reqwest::Response,
    ) -> Result<Answer<Payload>, UpstreamFailure> {
        let mut resp = resp;
        let mut polling = Polling {
            last_event: None,
            retry: DEFAULT_SSE_RETRY,
            idle_resumes: 0,
        };
        loop {
            if let Some(outcome) = self.read_events(inbound, era, id, resp, &mut polling).await {
                return outcome;
            }
            // The stream ended without the answer: resumable only in the
            // legacy era.
            if era != Era::Legacy {
                return Ok(Err(None));
            }
            resp = match self.resume(&mut polling).await {
                Some(resp) => resp,
                None => return Ok(Err(None)),
            };
        }
    }

    /// Reads one event stream of request `id`'s answer, routing what comes
    /// before it; `None` when the stream ends without it.
    async fn read_events(
        &self,
        inbound: &dyn Inbound,
        era: Era,
        id: u64,
        resp: reqwest::Response,
        polling: &mut Polling,
    ) -> Option<Result<Answer<Payload>, UpstreamFailure>> {
        let exceeded = Arc::new(AtomicBool::new(false));
        let mut events = capped_events(resp, self.max_message, Arc::clone(&exceeded));
        while let Some(event) = events.next().await {
            let Ok(event) = event else {
                let upstream = self.name.to_string();
                return Some(Err(if exceeded.load(Ordering::Relaxed) {
                    UpstreamFailure::TooLarge { upstream }
                } else {
                    UpstreamFailure::Protocol {
                        upstream,
                        detail: "the event stream broke",
                    }
                }));
            };
            if let Some(event_id) = event.id.filter(|i| !i.is_empty()) {
                polling.last_event = Some(event_id);
            }
            if let Some(ms) = event.retry {
                polling.retry = Duration::from_millis(ms).clamp(MIN_SSE_RETRY, MAX_SSE_RETRY);
            }
            polling.idle_resumes = 0;
            // Priming events carry an id and empty data: nothing to route.
            let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                continue;
            };
            match Received::parse(data.as_bytes()) {
                Some(Ok(Received::Answer { id: rid, answer })) if rid.as_u64() == Some(id) => {
                    return Some(Ok(answer));
                }
                Some(Ok(message)) => inbound.message(era, message, Some(id)),
                _ => inbound.unreadable(data.as_bytes(), Unreadable::Malformed),
            }
        }
        None
    }

    /// Waits the `retry` and resumes a polled answer after its last event;
    /// `None` when it cannot be resumed (no event with an id yet, too many
    /// resumptions in a row without news, or the `GET` failed).
    async fn resume(&self, polling: &mut Polling) -> Option<reqwest::Response> {
        let last = polling.last_event.as_deref()?;
        // An upstream that keeps closing without saying anything new is
        // not polling, it is broken.
        polling.idle_resumes += 1;
        if polling.idle_resumes > MAX_IDLE_RESUMES {
            return None;
        }
        tokio::time::sleep(polling.retry).await;
        let mut headers = self.stream_headers().await;
        headers.insert("last-event-id", HeaderValue::try_from(last).ok()?);
        match self.client.get(&self.url).headers(headers).send().await {
            Ok(r) if r.status().is_success() && is_event_stream(r.headers()) => Some(r),
            _ => None,
        }
    }

    fn has_session(&self) -> bool {
        self.session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// POSTs a notification; the answer (202) carries nothing.
    async fn post_notification(&self, era: Era, message: &Value) {
        let method = message.get("method").and_then(Value::as_str);
        let authorization = match self.authorization("").await {
            Ok(value) => value,
            Err(e) => {
                tracing::debug!(upstream = %self.name, "notification not delivered: {e}");
                return;
            }
        };
        if let Err(e) = self
            .post(
                era,
                method,
                None,
                &[],
                body_of(message),
                authorization.as_ref(),
            )
            .await
        {
            tracing::debug!(upstream = %self.name, "notification not delivered: {e}");
        }
    }

    /// Ends a legacy session with DELETE (best effort).
    async fn delete_session(&self) {
        let session = self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(session) = session {
            let mut headers = self.configured.clone();
            if let Ok(Some(value)) = self.authorization("").await {
                headers.insert(header::AUTHORIZATION, value);
            }
            let _ = self
                .client
                .delete(&self.url)
                .headers(headers)
                .header("mcp-session-id", session)
                .timeout(Duration::from_secs(2))
                .send()
                .await;
        }
    }

    /// The headers of a `GET` for an event stream (with the login's token:
    /// without one, the upstream refuses the stream, and calls go on).
    async fn stream_headers(&self) -> HeaderMap {
        let mut headers = self.headers(Era::Legacy, None, None, &[]);
        if let Ok(Some(value)) = self.authorization("").await {
            headers.insert(header::AUTHORIZATION, value);
        }
        headers.remove(header::CONTENT_TYPE);
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        headers
    }

    /// Keeps the legacy GET stream open for the upstream's notifications
    /// that belong to no request (`list_changed`, `resources/updated`).
    async fn listen(
        &self,
        inbound: &dyn Inbound,
        closed: &CancellationToken,
        opened: oneshot::Sender<()>,
    ) {
        let mut failures = 0;
        let mut opened = Some(opened);
        while !closed.is_cancelled() && failures < GET_STREAM_RETRIES {
            let headers = self.stream_headers().await;
            let resp = tokio::select! {
                resp = self.client.get(&self.url).headers(headers).send() => resp,
                () = closed.cancelled() => return,
            };
            // Whatever the answer, the upstream has seen the GET.
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            match resp {
                Ok(resp) if resp.status().is_success() && is_event_stream(resp.headers()) => {
                    failures = 0;
                    let mut events =
                        capped_events(resp, self.max_message, Arc::new(AtomicBool::new(false)));
                    loop {
                        let event = tokio::select! {
                            event = events.next() => event,
                            () = closed.cancelled() => return,
                        };
                        let Some(Ok(event)) = event else { break };
                        if let Some(Some(Ok(message))) =
                            event.data.map(|d| Received::parse(d.as_bytes()))
                        {
                            inbound.message(Era::Legacy, message, None);
                        }
                    }
                }
                // 405: the upstream offers no GET stream. Fine.
                Ok(resp) if resp.status() == StatusCode::METHOD_NOT_ALLOWED => return,
                _ => failures += 1,
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

impl Wire for HttpWire {
    fn exchange<'a>(
        &'a self,
        request: Outgoing<'a>,
        inbound: &'a dyn Inbound,
    ) -> BoxFuture<'a, Result<Answer<Payload>, UpstreamFailure>> {
        Box::pin(self.post_request(request, inbound))
    }

    fn notify<'a>(&'a self, era: Era, message: &'a Value) -> BoxFuture<'a, ()> {
        Box::pin(self.post_notification(era, message))
    }

    fn reply<'a>(&'a self, era: Era, message: &'a Value) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let authorization = self.authorization("").await.ok().flatten();
            let _ = self
                .post(
                    era,
                    None,
                    None,
                    &[],
                    body_of(message),
                    authorization.as_ref(),
                )
                .await;
        })
    }

    /// A modern upstream takes the closed response stream as the
    /// cancellation; a legacy one needs the notification.
    fn cancels_by_notification(&self, era: Era) -> bool {
        era == Era::Legacy
    }

    fn names_the_request(&self) -> bool {
        true
    }

    fn negotiated(&self, version: &str) {
        *self.version.lock().unwrap_or_else(PoisonError::into_inner) =
            HeaderValue::try_from(version).ok();
    }

    /// Waits at most [`GET_STREAM_OPEN_WAIT`] for the stream: a 2025-x
    /// server sends what relates to no request only on it, and drops it
    /// while it is not open (a tool's elicitation without a related
    /// request, sent before the stream is there, would be lost).
    fn open_notifications(
        self: Arc<Self>,
        inbound: Arc<dyn Inbound>,
        closed: CancellationToken,
    ) -> BoxFuture<'static, ()> {
        let (opened, is_open) = oneshot::channel();
        tokio::spawn(async move { self.listen(&*inbound, &closed, opened).await });
        Box::pin(async move {
            let _ = tokio::time::timeout(GET_STREAM_OPEN_WAIT, is_open).await;
        })
    }

    fn end_session(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.delete_session())
    }
}

/// The SEP-2243 headers of a modern request: its version, method and
/// name, and the `Mcp-Param-*` headers its tool's schema asks for.
fn modern_headers(
    h: &mut HeaderMap,
    method: Option<&str>,
    name: Option<&str>,
    params: &[(String, String)],
) {
    h.insert(
        "mcp-protocol-version",
        HeaderValue::from_static(protocol::MODERN_VERSION),
    );
    if let Some(method) = method.and_then(|m| HeaderValue::try_from(m).ok()) {
        h.insert("mcp-method", method);
    }
    if let Some(name) = name.and_then(|n| HeaderValue::try_from(headers::encode_value(n)).ok()) {
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

/// A message of sluice's own as a POST body, with its params' `_meta`.
fn body_of(message: &Value) -> (Bytes, Option<&Map<String, Value>>) {
    // Serializing a `Value` cannot fail: its keys are strings.
    let body = serde_json::to_vec(message).unwrap_or_default();
    let meta = message.get("params").and_then(jsonrpc::meta);
    (Bytes::from(body), meta)
}
