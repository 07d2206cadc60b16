//! The client side of one request, whatever the transport: the
//! [`RequestCtx`] the router gets (era, declared capabilities, principal,
//! trail), the [`ClientLink`] its notifications and server-to-client
//! requests go through, the legacy [`ClientSession`] that outlives one
//! request, and the [`ClientEvent`]s every connected client may need.
//!
//! Both downstream transports build these; the router, the MRTR bridge and
//! the gateway use them, and this module uses none of them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_core::access::Principal;
use sluice_core::carried::Carried;
use sluice_core::jsonrpc;
use sluice_core::method::notification;
use sluice_core::payload::Payload;
use sluice_core::policy::Denied;
use sluice_core::protocol::{self, Era};
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::ops::Trail;
use crate::pending::Pending;

/// Something to tell connected clients about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClientEvent {
    /// A list changed for the clients of `view` (`None`: of the whole
    /// federation): the notification method to send them.
    ListChanged {
        /// Whose list changed.
        view: Option<Arc<str>>,
        /// `notifications/{tools,prompts,resources}/list_changed`.
        method: &'static str,
    },
    /// `notifications/resources/updated` params from an upstream.
    ResourceUpdated(Value),
    /// A log message from an upstream that no request could take.
    Log(Value),
    /// A task's status, for the legacy session that owns the task only
    /// (`sluice_core::tasks::record`): the whole notification, its id
    /// sealed for that session's principal.
    TaskStatus {
        /// The owning session's [`ClientSession::id`].
        session: u64,
        /// `notifications/tasks/status`.
        message: Value,
    },
    /// A task's whole state from `upstream` (2026-07-28 `notifications/tasks`
    /// params, as the upstream sent them), for the listen streams that
    /// asked for the task (`sluice_core::tasks::listen`).
    TaskUpdate {
        /// The upstream that runs the task.
        upstream: Arc<str>,
        /// The upstream's params, naming its own task id.
        params: Arc<Value>,
    },
}

/// One client request, as the router sees it.
pub struct RequestCtx {
    /// The era of this request.
    pub era: Era,
    /// The id the client gave the request.
    pub request_id: Value,
    /// What the client declared it can do (on this request if modern, at
    /// `initialize` if legacy).
    pub client_capabilities: Value,
    /// Where this request's notifications and relayed requests go.
    pub link: Option<ClientLink>,
    /// The legacy session, if any.
    pub session: Option<Arc<ClientSession>>,
    /// Whether `notifications/message` may reach the client for this
    /// request.
    pub wants_logs: bool,
    /// The `Mcp-Param-*` headers the request came with (2026-07-28 HTTP),
    /// lowercase names: an intermediary forwards the ones it does not
    /// recognize.
    pub param_headers: Vec<(String, String)>,
    /// Who sent it (rate limits are kept per principal).
    pub principal: Arc<Principal>,
    /// Whether `[[auth.require]]` applies (`policy::admit::scopes_apply`).
    pub scoped: bool,
    /// The `[[view]]` the request came through (`/mcp/<name>`, `--view`):
    /// the catalog it sees. `None`: the whole federation.
    pub view: Option<Arc<str>>,
    /// What the router learned handling it, for metrics and the audit log.
    pub trail: Trail,
    /// What a large request's params left as text
    /// (`sluice_core::carried`): put back when it is forwarded.
    pub carried: Option<Arc<Carried>>,
}

/// A way to send messages to the client while one request is open.
#[derive(Clone)]
pub struct ClientLink {
    tx: mpsc::Sender<Payload>,
    /// Cancelled when the client is gone although `tx` stays open (stdio:
    /// stdin closed, while stdout still takes the last answers).
    gone: Option<CancellationToken>,
    /// Where the client's answers to relayed requests arrive; `None` when
    /// the client cannot take server-to-client requests (modern era).
    answers: Option<Arc<Pending>>,
}

/// What a legacy client's `initialize` set up, for a session (HTTP) or a
/// process (stdio).
pub struct ClientSession {
    /// This process's number for the session: what the task record names
    /// as a task's owner.
    pub(crate) id: u64,
    /// The negotiated version.
    pub protocol_version: String,
    /// Who opened it: only the same principal may use it (S-18).
    pub principal: Arc<Principal>,
    /// The capabilities declared at `initialize`, bounded
    /// ([`sluice_core::protocol::retained_capabilities`]).
    pub client_capabilities: Value,
    /// The `[[view]]` it was opened through: its stream hears that view's
    /// `list_changed` only (`None`: the whole federation's).
    pub view: Option<Arc<str>>,
    /// The client's answers to relayed requests.
    pub(crate) answers: Arc<Pending>,
    /// Resource URIs the client subscribed to, and the upstream of each.
    subscriptions: Mutex<HashMap<String, String>>,
    /// Where notifications unrelated to a request go (the GET stream, or
    /// stdout); `None` while the client has no such stream open.
    standalone: Mutex<Option<mpsc::Sender<Payload>>>,
    /// Requests in flight, by the client's id, to cancel them.
    inflight: Mutex<HashMap<String, CancellationToken>>,
    last_seen: Mutex<Instant>,
    /// The level the client set with `logging/setLevel`.
    log_level: Mutex<Option<String>>,
    /// Ends the session's background tasks.
    pub(crate) closed: CancellationToken,
}

// === impl RequestCtx ===

impl RequestCtx {
    /// The protocol version the client speaks: a legacy session's
    /// negotiated one (the newest legacy version without a session), or
    /// 2026-07-28.
    pub fn protocol_version(&self) -> &str {
        match (&self.session, self.era) {
            (Some(session), _) => &session.protocol_version,
            (None, Era::Legacy) => protocol::LEGACY_VERSIONS[0],
            (None, Era::Modern) => protocol::MODERN_VERSION,
        }
    }
}

// === impl ClientLink ===

impl ClientLink {
    /// A link that can also carry server-to-client requests.
    pub(crate) fn new(tx: mpsc::Sender<Payload>, answers: Option<Arc<Pending>>) -> Self {
        ClientLink {
            tx,
            gone: None,
            answers,
        }
    }

    /// The same link, also closed when `gone` is cancelled.
    pub(crate) fn until(mut self, gone: CancellationToken) -> Self {
        self.gone = Some(gone);
        self
    }

    /// Sends a notification; `false` when the client is gone.
    pub(crate) async fn notify(&self, message: Value) -> bool {
        self.tx.send(message.into()).await.is_ok()
    }

    /// Resolves when the client stopped listening.
    pub(crate) async fn closed(&self) {
        match &self.gone {
            Some(gone) => tokio::select! {
                () = self.tx.closed() => {}
                () = gone.cancelled() => {}
            },
            None => self.tx.closed().await,
        }
    }

    /// Whether the link can carry server-to-client requests.
    pub(crate) fn takes_requests(&self) -> bool {
        self.answers.is_some()
    }

    /// Sends a server-to-client request and waits for the answer.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, Denied> {
        let Some(answers) = &self.answers else {
            return Err(Denied::MethodNotFound(method.to_owned()));
        };
        let (id, rx) = answers.register();
        let sent = self
            .tx
            .send(jsonrpc::request(json!(id), method, params).into())
            .await;
        if sent.is_err() {
            answers.forget(id);
            return Err(Denied::ClientGone);
        }
        let gone = async {
            match &self.gone {
                Some(gone) => gone.cancelled().await,
                None => std::future::pending().await,
            }
        };
        // A client that went away will not answer: stop waiting then.
        let answer = tokio::select! {
            answer = tokio::time::timeout(timeout, rx) => Some(answer),
            () = gone => None,
        };
        answers.forget(id);
        match answer {
            Some(Ok(Ok(Ok(result)))) => Ok(result),
            Some(Ok(Ok(Err(Some(error))))) => Err(Denied::ClientError(error)),
            Some(Err(_)) => Err(Denied::ClientTimeout(method.to_owned())),
            Some(_) | None => Err(Denied::ClientGone),
        }
    }
}

// === impl ClientSession ===

impl ClientSession {
    pub(crate) fn new(
        protocol_version: String,
        client_capabilities: Value,
        principal: Arc<Principal>,
        view: Option<Arc<str>>,
    ) -> Arc<Self> {
        // Numbers only tell this process's sessions apart.
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Arc::new(ClientSession {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            protocol_version,
            principal,
            client_capabilities: sluice_core::protocol::retained_capabilities(client_capabilities),
            view,
            answers: Arc::new(Pending::default()),
            subscriptions: Mutex::new(HashMap::new()),
            standalone: Mutex::new(None),
            inflight: Mutex::new(HashMap::new()),
            last_seen: Mutex::new(Instant::now()),
            log_level: Mutex::new(None),
            closed: CancellationToken::new(),
        })
    }

    /// Records the level of `logging/setLevel`.
    pub(crate) fn set_log_level(&self, level: &str) {
        *Self::lock(&self.log_level) = Some(level.to_owned());
    }

    /// The level the client set, if it did.
    pub(crate) fn log_level(&self) -> Option<String> {
        Self::lock(&self.log_level).clone()
    }

    fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn touch(&self) {
        *Self::lock(&self.last_seen) = Instant::now();
    }

    /// Idle: no request for `limit` and no stream open.
    pub(crate) fn idle_for(&self, limit: Duration) -> bool {
        let stream_open = Self::lock(&self.standalone)
            .as_ref()
            .is_some_and(|tx| !tx.is_closed());
        let busy = !Self::lock(&self.inflight).is_empty();
        !stream_open && !busy && Self::lock(&self.last_seen).elapsed() > limit
    }

    pub(crate) fn set_standalone(&self, tx: mpsc::Sender<Payload>) {
        *Self::lock(&self.standalone) = Some(tx);
    }

    /// Records a subscription; `false` if the client already had it.
    pub(crate) fn subscribe(&self, uri: &str, upstream: &str) -> bool {
        Self::lock(&self.subscriptions)
            .insert(uri.to_owned(), upstream.to_owned())
            .is_none()
    }

    /// Forgets a subscription; the upstream it was on, if the client had it.
    pub(crate) fn unsubscribe(&self, uri: &str) -> Option<String> {
        Self::lock(&self.subscriptions).remove(uri)
    }

    /// Every subscription, forgotten: the session is ending.
    pub(crate) fn take_subscriptions(&self) -> Vec<(String, String)> {
        Self::lock(&self.subscriptions).drain().collect()
    }

    /// Registers a request so `notifications/cancelled` can stop it.
    pub(crate) fn track(&self, id: &Value) -> CancellationToken {
        let token = CancellationToken::new();
        Self::lock(&self.inflight).insert(id.to_string(), token.clone());
        token
    }

    pub(crate) fn untrack(&self, id: &Value) {
        Self::lock(&self.inflight).remove(&id.to_string());
    }

    /// `notifications/cancelled` from the client.
    pub(crate) fn cancel(&self, params: &Value) {
        if let Some(id) = params.get("requestId")
            && let Some(token) = Self::lock(&self.inflight).remove(&id.to_string())
        {
            token.cancel();
        }
    }

    /// Forwards gateway events to the session's standalone stream until the
    /// session closes.
    pub(crate) fn forward_events(self: &Arc<Self>, mut events: broadcast::Receiver<ClientEvent>) {
        let session = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    e = events.recv() => e,
                    () = session.closed.cancelled() => return,
                };
                let message = match event {
                    Ok(ClientEvent::ListChanged { view, method }) => {
                        if view != session.view {
                            continue;
                        }
                        jsonrpc::notification(method, Value::Null)
                    }
                    Ok(ClientEvent::ResourceUpdated(params)) => {
                        let uri = params
                            .get("uri")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        if !Self::lock(&session.subscriptions).contains_key(uri) {
                            continue;
                        }
                        jsonrpc::notification(notification::RESOURCE_UPDATED, params)
                    }
                    Ok(ClientEvent::Log(params)) => {
                        jsonrpc::notification(notification::MESSAGE, params)
                    }
                    Ok(ClientEvent::TaskStatus {
                        session: owner,
                        message,
                    }) => {
                        if owner != session.id {
                            continue;
                        }
                        message
                    }
                    // A 2026-07-28 stream's, never a legacy session's.
                    Ok(ClientEvent::TaskUpdate { .. })
                    | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let tx = Self::lock(&session.standalone).clone();
                if let Some(tx) = tx {
                    let _ = tx.try_send(message.into());
                }
            }
        });
    }
}
