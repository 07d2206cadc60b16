//! One live connection to an upstream: requests out, answers and
//! notifications in, whatever the transport.
//!
//! A [`Connection`] is shared by every client whose requests go to that
//! upstream. It assigns its own ids, so clients' ids never collide, and
//! routes what the upstream sends back:
//!
//! - a response goes to the request that waits for it;
//! - `notifications/progress` goes to the request that owns the token
//!   (sluice rewrites tokens on the way out and restores them on the way
//!   back);
//! - other notifications and server-to-client requests (sampling,
//!   elicitation) go to the request they relate to: over HTTP the one whose
//!   response stream carried them; over stdio, where nothing on the wire
//!   says, the most recent request still in flight;
//! - `list_changed` and `resources/updated` become [`UpstreamEvent`]s for the
//!   supervisor.
//!
//! A request that is dropped before its answer (timeout, client gone,
//! client cancellation) sends `notifications/cancelled` upstream.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_core::jsonrpc::{self, Message, RpcError};
use sluice_core::protocol::{self, Era};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::http::HttpWire;
use super::stdio::StdioWire;
use crate::pending::{Answer, Pending};
use sluice_core::policy::UpstreamFailure;

/// After this many timeouts in a row with no answer in between, the upstream
/// is taken as hung and its connection is closed (the supervisor restarts it).
const HUNG_AFTER_TIMEOUTS: u32 = 3;

/// How long a relayed server-to-client request may wait for the client.
const RELAY_TIMEOUT: Duration = Duration::from_secs(300);

/// Something the upstream sent that belongs to one in-flight request.
#[derive(Debug)]
pub(crate) enum Related {
    /// A notification (progress with the client's own token restored,
    /// logging, ...). The value is the whole JSON-RPC message.
    Notification(Value),
    /// A server-to-client request (sampling, elicitation, roots). The
    /// client's answer goes back through `reply`.
    Request {
        method: String,
        params: Value,
        reply: oneshot::Sender<Result<Value, RpcError>>,
    },
}

/// Where a request's related traffic goes.
pub(crate) type RelatedSink = mpsc::Sender<Related>;

/// Upstream traffic that concerns the upstream as a whole.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum UpstreamEvent {
    /// A `notifications/*/list_changed`: the method name.
    ListChanged(String),
    /// `notifications/resources/updated`: its params.
    ResourceUpdated(Value),
    /// A log message that no request in flight can take.
    Log(Value),
}

/// What the handshake learned.
#[derive(Debug, Clone)]
pub(crate) struct ServerDescription {
    pub(crate) era: Era,
    pub(crate) protocol_version: String,
    pub(crate) capabilities: Value,
    /// The handshake's result as the upstream sent it (`server/discover`
    /// or `initialize`): `serverInfo` and all.
    pub(crate) handshake: Value,
}

/// One connection to one upstream.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    description: ServerDescription,
}

/// The transport underneath.
pub(crate) enum Wire {
    Stdio(StdioWire),
    Http(Arc<HttpWire>),
}

/// State shared by the connection's handle, its reader and its guards.
pub(crate) struct Shared {
    pub(crate) name: Arc<str>,
    pub(crate) pending: Pending,
    /// Requests whose answer was too large to read (stdio).
    oversized: Mutex<HashSet<u64>>,
    routes: Mutex<Routes>,
    events: mpsc::Sender<UpstreamEvent>,
    pub(crate) closed: CancellationToken,
    pub(crate) wire: Wire,
    timeouts_in_a_row: AtomicU32,
    /// Messages received so far: a timeout while the upstream kept talking
    /// (say, a question the client never answered) is not a hang.
    received: AtomicU64,
    /// Progress notifications whose token no request of ours carries.
    stray_progress: AtomicU64,
    client_info: Value,
}

#[derive(Default)]
struct Routes {
    /// sluice's progress token -> the sink of the request it belongs to.
    progress: HashMap<String, RelatedSink>,
    /// Requests in flight that can take related traffic, oldest first.
    inflight: Vec<(u64, RelatedSink)>,
    /// Requests waiting for their client to answer a relayed question, by
    /// how many questions: such a request is not the one asking a new
    /// question (stdio guessing).
    asking: HashMap<u64, usize>,
}

/// Cleans up after one request, and cancels it upstream if it is dropped
/// unanswered.
struct RequestGuard<'a> {
    shared: &'a Arc<Shared>,
    id: u64,
    era: Era,
    token: Option<String>,
    answered: bool,
}

// === impl Connection ===

impl Connection {
    pub(crate) fn new(shared: Arc<Shared>, description: ServerDescription) -> Self {
        Connection {
            shared,
            description,
        }
    }

    pub(crate) fn wire(&self) -> &Wire {
        &self.shared.wire
    }

    pub(crate) fn description(&self) -> &ServerDescription {
        &self.description
    }

    /// Whether the upstream offers a capability (`tools`, `resources`, ...).
    pub(crate) fn offers(&self, capability: &str) -> bool {
        self.description
            .capabilities
            .get(capability)
            .is_some_and(|c| !c.is_null())
    }

    /// Resolves when the connection is gone.
    pub(crate) async fn closed(&self) {
        self.shared.closed.cancelled().await;
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed.is_cancelled()
    }

    /// How many progress notifications named a token no request carried.
    pub(crate) fn stray_progress(&self) -> u64 {
        self.shared.stray_progress.load(Ordering::Relaxed)
    }

    /// Sends one request and waits for its answer, at most `timeout`.
    ///
    /// `client_capabilities` are declared to a modern upstream on this
    /// request. `related`, when given, receives the request's progress,
    /// logging and server-to-client requests. `headers` are extra HTTP
    /// headers (`Mcp-Param-*`) for a modern HTTP upstream.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        client_capabilities: &Value,
        related: Option<RelatedSink>,
        timeout: Duration,
        headers: &[(String, String)],
    ) -> Result<Value, UpstreamFailure> {
        self.shared
            .request(
                self.description.era,
                method,
                params,
                client_capabilities,
                related,
                timeout,
                headers,
            )
            .await
    }

    /// Ends the connection: closes the transport and, for a child, sends
    /// SIGTERM then SIGKILL after `grace`.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.shared.close();
        if let Wire::Stdio(stdio) = &self.shared.wire {
            stdio.terminate(&self.shared.name, grace).await;
        }
        if let Wire::Http(http) = &self.shared.wire {
            http.end_session().await;
        }
    }
}

// === impl Shared ===

impl Shared {
    pub(crate) fn new(
        name: Arc<str>,
        wire: Wire,
        events: mpsc::Sender<UpstreamEvent>,
        client_info: Value,
    ) -> Arc<Self> {
        Arc::new(Shared {
            name,
            pending: Pending::default(),
            oversized: Mutex::new(HashSet::new()),
            routes: Mutex::new(Routes::default()),
            events,
            closed: CancellationToken::new(),
            wire,
            timeouts_in_a_row: AtomicU32::new(0),
            received: AtomicU64::new(0),
            stray_progress: AtomicU64::new(0),
            client_info,
        })
    }

    /// Marks the connection gone and wakes every waiter.
    pub(crate) fn close(&self) {
        self.closed.cancel();
        self.pending.fail_all();
    }

    fn lock_routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn request(
        self: &Arc<Self>,
        era: Era,
        method: &str,
        mut params: Value,
        client_capabilities: &Value,
        related: Option<RelatedSink>,
        timeout: Duration,
        headers: &[(String, String)],
    ) -> Result<Value, UpstreamFailure> {
        if self.closed.is_cancelled() {
            return Err(UpstreamFailure::Lost {
                upstream: self.name.to_string(),
            });
        }
        protocol::shape_upstream_params(era, &mut params, client_capabilities, &self.client_info);
        let (id, rx) = self.pending.register();
        let mut guard = RequestGuard {
            shared: self,
            id,
            era,
            token: None,
            answered: false,
        };
        guard.token = self.route_progress(id, &mut params, related.as_ref());
        if let Some(sink) = &related {
            self.lock_routes().inflight.push((id, sink.clone()));
        }
        let name_header = name_of(method, &params);
        let received_before = self.received.load(Ordering::Relaxed);
        let message = jsonrpc::request(json!(id), method, params);
        let exchange = async {
            match &self.wire {
                Wire::Stdio(stdio) => {
                    if !stdio.send(&message).await {
                        return Ok(Err(None));
                    }
                    Ok(rx.await.unwrap_or(Err(None)))
                }
                Wire::Http(http) => {
                    // The answer normally comes on the request's own
                    // response; a 2025-11-25 server may send it on its GET
                    // stream instead (after closing the request's stream),
                    // where `dispatch` resolves the pending entry.
                    let exchange = http.exchange(
                        self,
                        era,
                        id,
                        method,
                        name_header.as_deref(),
                        headers,
                        &message,
                        related.as_ref(),
                    );
                    tokio::select! {
                        outcome = exchange => outcome,
                        Ok(answer) = rx => Ok(answer),
                    }
                }
            }
        };
        // Over HTTP nothing else wakes a request when the connection ends
        // (a reconnect, shutdown): it must not wait on.
        let exchange = async {
            tokio::select! {
                outcome = exchange => outcome,
                () = self.closed.cancelled() => Ok(Err(None)),
            }
        };
        let outcome = match tokio::time::timeout(timeout, exchange).await {
            Ok(outcome) => outcome,
            Err(_) => {
                if self.received.load(Ordering::Relaxed) == received_before {
                    self.note_timeout();
                } else {
                    self.timeouts_in_a_row.store(0, Ordering::Relaxed);
                }
                return Err(UpstreamFailure::Timeout {
                    upstream: self.name.to_string(),
                    after: timeout,
                });
            }
        };
        guard.answered = true;
        self.timeouts_in_a_row.store(0, Ordering::Relaxed);
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(Some(error))) => Err(UpstreamFailure::Rpc(error)),
            Ok(Err(None)) if self.take_oversized(id) => Err(UpstreamFailure::TooLarge {
                upstream: self.name.to_string(),
            }),
            Ok(Err(None)) => Err(UpstreamFailure::Lost {
                upstream: self.name.to_string(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Replaces the client's progress token with one of sluice's own (the
    /// client's is put back by the router), or removes it when there is no
    /// one to relay progress to.
    fn route_progress(
        &self,
        id: u64,
        params: &mut Value,
        related: Option<&RelatedSink>,
    ) -> Option<String> {
        let meta = params.get_mut("_meta").and_then(Value::as_object_mut)?;
        meta.remove("progressToken")?;
        let sink = related?;
        let ours = format!("sluice-{id}");
        meta.insert("progressToken".into(), ours.clone().into());
        self.lock_routes()
            .progress
            .insert(ours.clone(), sink.clone());
        Some(ours)
    }

    fn note_timeout(&self) {
        let n = self.timeouts_in_a_row.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= HUNG_AFTER_TIMEOUTS {
            tracing::warn!(
                upstream = %self.name,
                "{n} requests in a row timed out with no answer in between; restarting the upstream"
            );
            self.close();
        }
    }

    pub(crate) async fn notify(&self, era: Era, message: &Value) {
        match &self.wire {
            Wire::Stdio(stdio) => {
                let _ = stdio.send(message).await;
            }
            Wire::Http(http) => http.notify(self, era, message).await,
        }
    }

    /// A message too large to read arrived: when its first bytes show an
    /// answer to one of sluice's requests, that request fails as too large.
    /// Nothing is guessed: an oversized request or notification from the
    /// upstream, or one whose id comes too late, fails nothing (the request
    /// it may answer times out).
    pub(crate) fn fail_oversized(&self, prefix: &[u8]) {
        self.received.fetch_add(1, Ordering::Relaxed);
        let Some(id) = jsonrpc::peek_id(prefix).and_then(|id| id.as_u64()) else {
            tracing::warn!(upstream = %self.name, "the oversized message is not an answer sluice can place; discarded");
            return;
        };
        self.lock_oversized().insert(id);
        if !self.pending.resolve(&json!(id), Err(None)) {
            self.lock_oversized().remove(&id);
        }
    }

    fn take_oversized(&self, id: u64) -> bool {
        self.lock_oversized().remove(&id)
    }

    fn lock_oversized(&self) -> std::sync::MutexGuard<'_, HashSet<u64>> {
        self.oversized
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Routes one message the upstream sent. `related` is the request whose
    /// HTTP response stream carried it, if any.
    pub(crate) fn dispatch(
        self: &Arc<Self>,
        era: Era,
        message: Message,
        related: Option<&RelatedSink>,
    ) {
        self.received.fetch_add(1, Ordering::Relaxed);
        match message {
            Message::Response { id, outcome } => {
                self.timeouts_in_a_row.store(0, Ordering::Relaxed);
                let answer: Answer = outcome.map_err(Some);
                if !self.pending.resolve(&id, answer) {
                    tracing::debug!(upstream = %self.name, "answer to a request no one waits for; dropped");
                }
            }
            Message::Notification { method, params } => {
                self.dispatch_notification(method, params, related)
            }
            Message::Request { id, method, params } => {
                self.relay_request(era, id, method, params, related)
            }
        }
    }

    fn dispatch_notification(&self, method: String, params: Value, related: Option<&RelatedSink>) {
        match method.as_str() {
            "notifications/progress" => {
                // Relayed with sluice's token; the router puts back the
                // token of the client request being served now (after an
                // MRTR round, that is the retry's).
                let token = params.get("progressToken").and_then(Value::as_str);
                let routes = self.lock_routes();
                if let Some(sink) = token.and_then(|t| routes.progress.get(t)) {
                    // Progress is advisory: a client too slow to take it
                    // loses some, it never stalls the upstream's reader.
                    let _ = sink.try_send(Related::Notification(jsonrpc::notification(
                        &method, params,
                    )));
                } else {
                    self.stray_progress.fetch_add(1, Ordering::Relaxed);
                }
            }
            "notifications/tools/list_changed"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed" => {
                let _ = self.events.try_send(UpstreamEvent::ListChanged(method));
            }
            "notifications/resources/updated" => {
                let _ = self.events.try_send(UpstreamEvent::ResourceUpdated(params));
            }
            // The upstream acknowledging a cancellation sluice relayed, or
            // cancelling its own server-to-client request, or confirming
            // sluice's own listen stream: nothing to route.
            "notifications/cancelled" | "notifications/subscriptions/acknowledged" => {}
            _ => {
                let message = jsonrpc::notification(&method, params.clone());
                let sink = related
                    .cloned()
                    .or_else(|| self.guess_related(false).map(|(_, sink)| sink));
                match sink {
                    Some(sink) => {
                        let _ = sink.try_send(Related::Notification(message));
                    }
                    None if method == "notifications/message" => {
                        let _ = self.events.try_send(UpstreamEvent::Log(params));
                    }
                    None => {}
                }
            }
        }
    }

    /// Where traffic that names no request goes. Over stdio nothing says;
    /// only when exactly one request in flight is not itself waiting on its
    /// client is it surely that one's (guessing among several could hand
    /// one client's question, or log, to another). Over HTTP the stream a
    /// message came on says, and a notification on the GET stream belongs
    /// to no request; but a 2025-11-25 server may send a server-to-client
    /// *request* (`elicitation/create` during a call) on its GET stream, so
    /// a `request` gets the same one-in-flight rule there.
    fn guess_related(&self, request: bool) -> Option<(u64, RelatedSink)> {
        if !request && matches!(self.wire, Wire::Http(_)) {
            return None;
        }
        let routes = self.lock_routes();
        let mut open = routes.inflight.iter().filter(|(id, sink)| {
            !sink.is_closed() && routes.asking.get(id).is_none_or(|n| *n == 0)
        });
        match (open.next(), open.next()) {
            (Some((id, sink)), None) => Some((*id, sink.clone())),
            _ => None,
        }
    }

    /// A server-to-client request: `ping` is answered here, anything else
    /// goes to the client behind the related request, and its answer back
    /// upstream.
    fn relay_request(
        self: &Arc<Self>,
        era: Era,
        id: Value,
        method: String,
        params: Value,
        related: Option<&RelatedSink>,
    ) {
        let shared = Arc::clone(self);
        let (asker, sink) = match related {
            Some(sink) => (None, Some(sink.clone())),
            None => match self.guess_related(true) {
                Some((asker, sink)) => (Some(asker), Some(sink)),
                None => (None, None),
            },
        };
        if let Some(asker) = asker {
            *self.lock_routes().asking.entry(asker).or_insert(0) += 1;
        }
        tokio::spawn(async move {
            let outcome = if method == "ping" {
                Ok(json!({}))
            } else {
                match sink {
                    None => Err(RpcError::method_not_found(&method)),
                    Some(sink) => {
                        let (reply, answer) = oneshot::channel();
                        let sent = sink
                            .send(Related::Request {
                                method: method.clone(),
                                params,
                                reply,
                            })
                            .await;
                        match (sent, tokio::time::timeout(RELAY_TIMEOUT, answer).await) {
                            (Ok(()), Ok(Ok(outcome))) => outcome,
                            _ => Err(RpcError::new(
                                jsonrpc::INTERNAL_ERROR,
                                format!("no client answered {method}"),
                            )),
                        }
                    }
                }
            };
            if let Some(asker) = asker {
                let mut routes = shared.lock_routes();
                if let Some(n) = routes.asking.get_mut(&asker) {
                    *n -= 1;
                    if *n == 0 {
                        routes.asking.remove(&asker);
                    }
                }
            }
            shared.reply(era, id, outcome).await;
        });
    }

    async fn reply(&self, era: Era, id: Value, outcome: Result<Value, RpcError>) {
        let message = jsonrpc::response(id, outcome);
        match &self.wire {
            Wire::Stdio(stdio) => {
                let _ = stdio.send(&message).await;
            }
            Wire::Http(http) => http.post_reply(era, &message).await,
        }
    }
}

/// The value of the `Mcp-Name` header for the methods that carry one.
fn name_of(method: &str, params: &Value) -> Option<String> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    params.get(field).and_then(Value::as_str).map(String::from)
}

// === impl RequestGuard ===

impl Drop for RequestGuard<'_> {
    fn drop(&mut self) {
        self.shared.pending.forget(self.id);
        {
            let mut routes = self.shared.lock_routes();
            routes.inflight.retain(|(id, _)| *id != self.id);
            routes.asking.remove(&self.id);
            if let Some(token) = &self.token {
                routes.progress.remove(token);
            }
        }
        if self.answered || self.shared.closed.is_cancelled() {
            return;
        }
        // Dropped unanswered: the client cancelled, went away, or the
        // timeout passed. Tell the upstream to stop (MCP-NOTES §7.2).
        let shared = Arc::clone(self.shared);
        let era = self.era;
        let cancel = jsonrpc::notification(
            "notifications/cancelled",
            json!({"requestId": self.id, "reason": "cancelled by the client or timed out"}),
        );
        tokio::spawn(async move {
            match &shared.wire {
                Wire::Stdio(stdio) => {
                    let _ = stdio.send(&cancel).await;
                }
                // A modern HTTP upstream takes the closed response stream
                // as the cancellation; a legacy one needs the notification.
                Wire::Http(http) if era == Era::Legacy => http.notify(&shared, era, &cancel).await,
                Wire::Http(_) => {}
            }
        });
    }
}
