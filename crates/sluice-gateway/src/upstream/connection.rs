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
//! - `list_changed`, `resources/updated` and task statuses become
//!   [`UpstreamEvent`]s for the supervisor.
//!
//! A request that is dropped before its answer (timeout, client gone,
//! client cancellation) sends `notifications/cancelled` upstream.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_core::carried::{self, Carried};
use sluice_core::jsonrpc::{self, RpcError};
use sluice_core::method::{Method, notification};
use sluice_core::payload::Payload;
use sluice_core::policy::{Denied, UpstreamFailure};
use sluice_core::protocol::{self, Era};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::wire::{Inbound, Outgoing, Received, Unreadable, Wire};
use crate::pending::{Answer, Pending};

/// After this many timeouts in a row with no answer in between, the upstream
/// is taken as hung and its connection is closed (the supervisor restarts it).
const HUNG_AFTER_TIMEOUTS: u32 = 3;

/// How long a relayed server-to-client request may wait for the client.
const RELAY_TIMEOUT: Duration = Duration::from_secs(300);

/// What a request declares when it declares no client capabilities.
static NO_CAPABILITIES: LazyLock<Value> = LazyLock::new(|| json!({}));

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
    /// A task's status (`notifications/tasks/status`, 2025-11-25): its
    /// params, naming the upstream's task id. Never a request's: whatever
    /// stream carried it, only the task's owner may hear it.
    TaskStatus(Value),
    /// A task's whole state (2026-07-28's `notifications/tasks`, on a
    /// listen stream sluice opened for client streams that asked for it).
    TaskUpdate(Value),
}

/// One request to send.
pub(crate) struct Call<'a> {
    pub(crate) method: &'a str,
    pub(crate) params: Value,
    /// What the client's large request left as text, put back into
    /// `params` as they are written.
    pub(crate) carried: Option<Arc<Carried>>,
    /// Declared to a modern upstream on this request.
    pub(crate) client_capabilities: &'a Value,
    /// Receives the request's progress, logging and server-to-client
    /// requests.
    pub(crate) related: Option<RelatedSink>,
    /// The longest the answer is waited for.
    pub(crate) timeout: Duration,
    /// Extra HTTP headers (`Mcp-Param-*`) for a modern HTTP upstream.
    pub(crate) headers: &'a [(String, String)],
    /// Whose login the token of an `auth = "oauth"` upstream is (`""`:
    /// sluice's own).
    pub(crate) on_behalf_of: &'a str,
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

/// The protocol state of one connection, shared by its handle, the
/// transport's readers and each request's guard.
pub(crate) struct Shared {
    name: Arc<str>,
    pending: Pending<Payload>,
    /// Requests whose answer the transport could not read (too large, or
    /// not valid JSON-RPC), by how they failed.
    unreadable: Mutex<HashMap<u64, UpstreamFailure>>,
    /// The connection was closed because the upstream hung: what the
    /// requests it fails are told.
    hung: AtomicBool,
    /// Shared with the tasks that relay the upstream's requests.
    routes: Arc<Mutex<Routes>>,
    events: mpsc::Sender<UpstreamEvent>,
    closed: CancellationToken,
    wire: Arc<dyn Wire>,
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
    shared: &'a Shared,
    id: u64,
    era: Era,
    token: Option<String>,
    answered: bool,
}

// === impl Call ===

impl<'a> Call<'a> {
    /// A request of sluice's own: no client capabilities, nothing related,
    /// no extra headers.
    pub(crate) fn new(method: &'a str, params: Value, timeout: Duration) -> Self {
        Call {
            method,
            params,
            carried: None,
            client_capabilities: &NO_CAPABILITIES,
            related: None,
            timeout,
            headers: &[],
            on_behalf_of: "",
        }
    }
}

// === impl Connection ===

impl Connection {
    pub(crate) fn new(shared: Arc<Shared>, description: ServerDescription) -> Self {
        Connection {
            shared,
            description,
        }
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
        self.shared.is_closed()
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
        self.call(Call {
            method,
            params,
            carried: None,
            client_capabilities,
            related,
            timeout,
            headers,
            on_behalf_of: "",
        })
        .await
    }

    /// Sends one request in the connection's era and waits for its answer,
    /// as a tree.
    pub(crate) async fn call(&self, call: Call<'_>) -> Result<Value, UpstreamFailure> {
        self.shared.request(self.description.era, call).await
    }

    /// [`Connection::call`], with a large result kept as its text.
    pub(crate) async fn carry(&self, call: Call<'_>) -> Result<Payload, UpstreamFailure> {
        self.shared.carry(self.description.era, call).await
    }

    /// How the child exited, for a stdio upstream that did.
    pub(crate) async fn exit_status(&self) -> Option<std::process::ExitStatus> {
        self.shared.wire.exit_status().await
    }

    /// Ends the connection: closes the transport and, for a child, sends
    /// SIGTERM then SIGKILL after `grace`.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.shared.close();
        self.shared.wire.terminate(grace).await;
        self.shared.wire.end_session().await;
    }
}

// === impl Shared ===

impl Shared {
    pub(crate) fn new(
        name: Arc<str>,
        wire: Arc<dyn Wire>,
        events: mpsc::Sender<UpstreamEvent>,
        client_info: Value,
    ) -> Arc<Self> {
        Arc::new(Shared {
            name,
            pending: Pending::default(),
            unreadable: Mutex::new(HashMap::new()),
            hung: AtomicBool::new(false),
            routes: Arc::default(),
            events,
            closed: CancellationToken::new(),
            wire,
            timeouts_in_a_row: AtomicU32::new(0),
            received: AtomicU64::new(0),
            stray_progress: AtomicU64::new(0),
            client_info,
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn wire(&self) -> &Arc<dyn Wire> {
        &self.wire
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Marks the connection gone and wakes every waiter.
    pub(crate) fn close(&self) {
        self.closed.cancel();
        self.pending.fail_all();
    }

    /// A legacy upstream's notifications that belong to no request come
    /// on their own stream over HTTP: opens it for as long as the
    /// connection lives, and waits until it is open.
    pub(crate) async fn open_notifications(self: &Arc<Self>) {
        let inbound: Arc<dyn Inbound> = Arc::clone(self) as Arc<dyn Inbound>;
        Arc::clone(&self.wire)
            .open_notifications(inbound, self.closed.clone())
            .await;
    }

    fn lock_routes(&self) -> MutexGuard<'_, Routes> {
        lock(&self.routes)
    }

    fn lost(&self) -> UpstreamFailure {
        let upstream = self.name.to_string();
        if self.hung.load(Ordering::Relaxed) {
            UpstreamFailure::Restarted {
                upstream,
                after_timeouts: HUNG_AFTER_TIMEOUTS,
            }
        } else {
            UpstreamFailure::Lost { upstream }
        }
    }

    /// Sends one request in `era` and waits for its answer, as a tree.
    pub(crate) async fn request(&self, era: Era, call: Call<'_>) -> Result<Value, UpstreamFailure> {
        let answer = self.carry(era, call).await?;
        answer
            .into_tree()
            .map_err(|_| UpstreamFailure::nested_too_deeply(&self.name))
    }

    /// Sends one request in `era` and waits for its answer, a large result
    /// kept as its text.
    pub(crate) async fn carry(&self, era: Era, call: Call<'_>) -> Result<Payload, UpstreamFailure> {
        if self.is_closed() {
            return Err(self.lost());
        }
        let Call {
            method,
            mut params,
            carried,
            client_capabilities,
            related,
            timeout,
            headers,
            on_behalf_of,
        } = call;
        protocol::shape_upstream_params(era, &mut params, client_capabilities, &self.client_info);
        let (id, answer) = self.pending.register();
        let mut guard = self.track(id, era, &mut params, related);
        let name = name_of(method, &params);
        let message = carried::request_text(&json!(id), method, &params, carried.as_deref());
        let request = Outgoing {
            era,
            id,
            method,
            name: name.as_deref(),
            headers,
            message,
            meta: jsonrpc::meta(&params),
            on_behalf_of,
        };
        let outcome = self.answer(request, answer, timeout).await?;
        guard.answered = true;
        self.timeouts_in_a_row.store(0, Ordering::Relaxed);
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(Some(error))) => Err(UpstreamFailure::Rpc(error)),
            Ok(Err(None)) => Err(self.take_unreadable(id).unwrap_or_else(|| self.lost())),
            Err(e) => Err(e),
        }
    }

    /// Registers where request `id`'s related traffic goes: its progress
    /// token and its sink. The guard undoes it.
    fn track(
        &self,
        id: u64,
        era: Era,
        params: &mut Value,
        related: Option<RelatedSink>,
    ) -> RequestGuard<'_> {
        let token = self.route_progress(id, params, related.as_ref());
        if let Some(sink) = related {
            self.lock_routes().inflight.push((id, sink));
        }
        RequestGuard {
            shared: self,
            id,
            era,
            token,
            answered: false,
        }
    }

    /// Sends the request and waits for its answer, at most `timeout`: the
    /// transport's outcome (`Err` only for a timeout).
    async fn answer(
        &self,
        request: Outgoing<'_>,
        answer: oneshot::Receiver<Answer<Payload>>,
        timeout: Duration,
    ) -> Result<Result<Answer<Payload>, UpstreamFailure>, UpstreamFailure> {
        let received_before = self.received.load(Ordering::Relaxed);
        let exchange = async {
            tokio::select! {
                // The answer normally comes on the request's own HTTP
                // response; over stdio, or from a 2025-11-25 server that
                // sends it on its GET stream instead, it comes through
                // `Inbound::message`, which resolves the pending entry.
                outcome = self.wire.exchange(request, self) => outcome,
                answer = answer => Ok(answer.unwrap_or(Err(None))),
                // Over HTTP nothing else wakes a request when the
                // connection ends (a reconnect, shutdown): it must not
                // wait on.
                () = self.closed.cancelled() => Ok(Err(None)),
            }
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(outcome) => Ok(outcome),
            Err(_) => {
                if self.received.load(Ordering::Relaxed) == received_before {
                    self.note_timeout();
                } else {
                    self.timeouts_in_a_row.store(0, Ordering::Relaxed);
                }
                Err(UpstreamFailure::Timeout {
                    upstream: self.name.to_string(),
                    after: timeout,
                })
            }
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
            self.hung.store(true, Ordering::Relaxed);
            self.close();
        }
    }

    fn take_unreadable(&self, id: u64) -> Option<UpstreamFailure> {
        self.lock_unreadable().remove(&id)
    }

    fn lock_unreadable(&self) -> MutexGuard<'_, HashMap<u64, UpstreamFailure>> {
        self.unreadable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The sink of the request whose response stream carried a message.
    fn related(&self, stream: Option<u64>) -> Option<RelatedSink> {
        let id = stream?;
        let routes = self.lock_routes();
        let (_, sink) = routes.inflight.iter().find(|(i, _)| *i == id)?;
        Some(sink.clone())
    }

    fn dispatch_notification(&self, method: String, params: Value, stream: Option<u64>) {
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
            notification::TASK_STATUS => {
                let _ = self.events.try_send(UpstreamEvent::TaskStatus(params));
            }
            notification::TASKS => {
                let _ = self.events.try_send(UpstreamEvent::TaskUpdate(params));
            }
            // The upstream acknowledging a cancellation sluice relayed, or
            // cancelling its own server-to-client request, or confirming
            // sluice's own listen stream: nothing to route.
            "notifications/cancelled" | "notifications/subscriptions/acknowledged" => {}
            _ => {
                let message = jsonrpc::notification(&method, params.clone());
                let sink = self
                    .related(stream)
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
        if !request && self.wire.names_the_request() {
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
        &self,
        era: Era,
        id: Value,
        method: String,
        params: Value,
        stream: Option<u64>,
    ) {
        let (asker, sink) = match self.related(stream) {
            Some(sink) => (None, Some(sink)),
            None => match self.guess_related(true) {
                Some((asker, sink)) => (Some(asker), Some(sink)),
                None => (None, None),
            },
        };
        if let Some(asker) = asker {
            *self.lock_routes().asking.entry(asker).or_insert(0) += 1;
        }
        let routes = Arc::clone(&self.routes);
        let wire = Arc::clone(&self.wire);
        tokio::spawn(async move {
            let outcome = if method == "ping" {
                Ok(json!({}))
            } else {
                ask_client(method, params, sink).await
            };
            if let Some(asker) = asker {
                let mut routes = lock(&routes);
                if let Some(n) = routes.asking.get_mut(&asker) {
                    *n -= 1;
                    if *n == 0 {
                        routes.asking.remove(&asker);
                    }
                }
            }
            wire.reply(era, &jsonrpc::response(id, outcome)).await;
        });
    }
}

impl Inbound for Shared {
    /// Routes one message the upstream sent.
    fn message(&self, era: Era, message: Received, stream: Option<u64>) {
        self.received.fetch_add(1, Ordering::Relaxed);
        match message {
            Received::Answer { id, answer } => {
                self.timeouts_in_a_row.store(0, Ordering::Relaxed);
                if !self.pending.resolve(&id, answer) {
                    tracing::debug!(upstream = %self.name, "answer to a request no one waits for; dropped");
                }
            }
            Received::Notification { method, params } => {
                self.dispatch_notification(method, params, stream)
            }
            Received::Request { id, method, params } => {
                self.relay_request(era, id, method, params, stream)
            }
        }
    }

    /// When its first bytes show an answer to one of sluice's requests,
    /// that request fails now, as too large or malformed, instead of at
    /// its timeout. Nothing is guessed: an unreadable request or
    /// notification from the upstream, or one whose id comes too late,
    /// fails nothing (the request it may answer times out).
    fn unreadable(&self, prefix: &[u8], why: Unreadable) {
        self.received.fetch_add(1, Ordering::Relaxed);
        let Some(id) = jsonrpc::peek_id(prefix).and_then(|id| id.as_u64()) else {
            tracing::warn!(upstream = %self.name, "upstream sent a message that is {why} and answers no request sluice can place; discarded");
            return;
        };
        let upstream = self.name.to_string();
        let failure = match why {
            Unreadable::TooLarge => UpstreamFailure::TooLarge { upstream },
            Unreadable::Malformed => UpstreamFailure::Protocol {
                upstream,
                detail: "the answer is not a valid JSON-RPC response",
            },
        };
        tracing::warn!(upstream = %self.name, "upstream answered a request with a message that is {why}; the request fails");
        self.lock_unreadable().insert(id, failure);
        if !self.pending.resolve(&json!(id), Err(None)) {
            self.lock_unreadable().remove(&id);
        }
    }

    fn ended(&self) {
        self.close();
    }
}

/// Relays a server-to-client request to the client behind `sink` and waits
/// for its answer.
async fn ask_client(
    method: String,
    params: Value,
    sink: Option<RelatedSink>,
) -> Result<Value, RpcError> {
    let Some(sink) = sink else {
        return Err(Denied::MethodNotFound(method).to_rpc());
    };
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
        _ => Err(Denied::NoClientAnswered(method).to_rpc()),
    }
}

fn lock(routes: &Mutex<Routes>) -> MutexGuard<'_, Routes> {
    routes.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The value of the `Mcp-Name` header for the methods that carry one.
fn name_of(method: &str, params: &Value) -> Option<String> {
    let field = Method::parse(method).name_field()?;
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
        if self.answered || self.shared.is_closed() {
            return;
        }
        // Dropped unanswered: the client cancelled, went away, or the
        // timeout passed. Tell the upstream to stop (MCP specification,
        // Cancellation); a modern HTTP upstream takes the closed response
        // stream as the cancellation.
        if !self.shared.wire.cancels_by_notification(self.era) {
            return;
        }
        let wire = Arc::clone(&self.shared.wire);
        let era = self.era;
        let cancel = jsonrpc::notification(
            "notifications/cancelled",
            json!({"requestId": self.id, "reason": "cancelled by the client or timed out"}),
        );
        tokio::spawn(async move { wire.notify(era, &cancel).await });
    }
}
