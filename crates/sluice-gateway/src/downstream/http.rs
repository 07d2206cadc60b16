//! Serving clients over Streamable HTTP, both eras on one endpoint.
//!
//! - A POST whose request `_meta` names 2026-07-28 is served statelessly:
//!   `_meta` and the SEP-2243 headers are checked (400 with `-32022`,
//!   `-32602` or `-32020`), no session is minted, and closing the response
//!   stream cancels the request.
//! - `initialize` opens a legacy session; its later POSTs carry the id
//!   (`Mcp-Session-Id`), `GET` opens its notification stream, `DELETE` ends
//!   it, and a session idle for `session_idle_timeout` is closed so that a
//!   client that never says goodbye leaks nothing.
//! - The id is the session, sealed ([`sluice_core::session_token`]): a
//!   replica that does not hold a session an id names takes it up from the
//!   id (same principal, not older than `session_max_age`), so legacy
//!   clients survive a switch of replica. What the id does not carry stays
//!   with the replica that has it: resource subscriptions, the GET stream,
//!   the log level, requests in flight and their cancellation. An ended or
//!   expired session is remembered as such here (until its id is too old
//!   anyway), but not on the other replicas.
//! - A request is answered with `application/json` unless something must
//!   reach the client before the result (progress, logging, a relayed
//!   request), in which case the answer is an SSE stream.
//! - Before anything else: header count and size (431), then `Origin`
//!   against `[server] allowed_origins` and, on loopback, `Host` (403: DNS
//!   rebinding), then `[auth]` (401 with a `WWW-Authenticate` challenge).
//!   `/health` and the protected resource metadata need no token.
//! - A legacy session belongs to the principal that opened it: anyone else
//!   presenting its id gets 404, as for an unknown session.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{Stream, StreamExt, stream};
use rand::Rng;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sluice_core::access::Principal;
use sluice_core::config::{AllowedOrigin, MCP_PATH};
use sluice_core::headers;
use sluice_core::jsonrpc::{self, Message, RpcError};
use sluice_core::protocol::{self, Era};
use sluice_core::session_token::{SessionClaims, SessionKey};
use sluice_core::trace_context;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::stdio::envelope_message;
use super::{ClientLink, ClientSession, RequestCtx};
use crate::auth::{Auth, Refusal as Refusal401};
use crate::gateway::Gateway;
use crate::ops::metrics;
use crate::pending::Pending;
use sluice_core::policy::Denied;
use sluice_core::policy::denied::status;

/// How often an SSE stream with nothing to say sends a comment, which also
/// tells sluice when the client is gone.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The most request headers taken (hyper stops at 100 on its own).
const MAX_HEADERS: usize = 64;
/// The most bytes of request headers taken, names and values together.
const MAX_HEADER_BYTES: usize = 32 * 1024;
/// Where the Prometheus metrics are served.
pub const METRICS_PATH: &str = "/metrics";
/// Where RFC 9728 metadata is published (root; path-inserted below it).
const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The most ended session ids remembered; past it the soonest to expire
/// anyway is forgotten first.
const MAX_ENDED_SESSIONS: usize = 100_000;

struct HttpState {
    gateway: Arc<Gateway>,
    sessions: Mutex<HashMap<String, Arc<ClientSession>>>,
    /// Sessions ended here (DELETE, idle), by [`id_hash`], with when their
    /// id stops opening anyway (ms since the epoch): their id must not
    /// bring them back.
    ended: Mutex<HashMap<[u8; 16], u64>>,
    /// Bound to a loopback address: only local `Host` names are accepted.
    loopback: bool,
}

/// Serves MCP at `http://<listener>/mcp` and `/health` until shutdown.
pub async fn serve(gateway: Arc<Gateway>, listener: TcpListener) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let state = Arc::new(HttpState {
        gateway: Arc::clone(&gateway),
        sessions: Mutex::new(HashMap::new()),
        ended: Mutex::new(HashMap::new()),
        loopback: local.ip().is_loopback(),
    });
    tokio::spawn(expire_sessions(Arc::clone(&state)));
    let mut app = Router::new()
        .route(
            MCP_PATH,
            get(get_mcp)
                .post(post_mcp)
                .delete(delete_mcp)
                // Admission runs before any handler reads the body.
                .route_layer(middleware::from_fn_with_state(
                    Arc::clone(&state),
                    admission,
                )),
        )
        .route("/health", get(health))
        .route(RESOURCE_METADATA_PATH, get(resource_metadata))
        .route(
            &format!("{RESOURCE_METADATA_PATH}/{{*resource_path}}"),
            get(resource_metadata),
        )
        .layer(DefaultBodyLimit::max(
            gateway.live().config.limits.transport_max_message_bytes,
        ));
    let metrics = &gateway.live().config.metrics;
    if metrics.enabled && metrics.listen.is_none() {
        // Behind the same admission as `/mcp`: with `[auth]` on, only a
        // principal sluice knows may read the catalog's names and rates.
        app = app.route(
            METRICS_PATH,
            get(render_metrics).route_layer(middleware::from_fn_with_state(
                Arc::clone(&state),
                admission,
            )),
        );
    }
    let app = app.with_state(Arc::clone(&state));
    let shutdown_state = Arc::clone(&state);
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown_state.gateway.shutting_down().await;
        // Dropping the sessions ends their GET streams, so the server
        // can drain.
        for (_, session) in shutdown_state.lock_sessions().drain() {
            session.closed.cancel();
        }
    })
    .await
}

impl HttpState {
    fn lock_sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<ClientSession>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_ended(&self) -> MutexGuard<'_, HashMap<[u8; 16], u64>> {
        self.ended.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The legacy session a request names, if it names one and `principal`
    /// opened it: held here, or taken up from its id.
    fn session(
        &self,
        headers: &HeaderMap,
        principal: &Arc<Principal>,
    ) -> Result<Option<Arc<ClientSession>>, Refusal> {
        let Some(id) = headers.get("mcp-session-id") else {
            return Ok(None);
        };
        let id = id.to_str().unwrap_or_default();
        match self.lock_sessions().get(id) {
            // Someone else's session is answered as an unknown one: its id
            // is no key to it (S-18).
            Some(session) if session.principal.key() == principal.key() => {
                return Ok(Some(Arc::clone(session)));
            }
            Some(_) => return Err(session_not_found()),
            None => {}
        }
        self.take_up(id, principal).map(Some)
    }

    /// Rebuilds a session another replica (or this one, before a restart)
    /// opened, from its id.
    fn take_up(&self, id: &str, principal: &Arc<Principal>) -> Result<Arc<ClientSession>, Refusal> {
        let claims = self
            .admissible(id, principal)
            .ok_or_else(session_not_found)?;
        let mut sessions = self.lock_sessions();
        // Another request may have taken it up meanwhile, or a DELETE
        // ended it (it marks the id ended under this same lock).
        if let Some(session) = sessions.get(id) {
            return Ok(Arc::clone(session));
        }
        if self.lock_ended().contains_key(&id_hash(id)) {
            return Err(session_not_found());
        }
        if sessions.len() >= self.gateway.live().config.server.max_sessions {
            return Err(too_many_sessions());
        }
        let session = ClientSession::new(
            claims.protocol_version,
            claims.client_capabilities,
            Arc::clone(principal),
        );
        session.forward_events(self.gateway.subscribe());
        sessions.insert(id.to_owned(), Arc::clone(&session));
        metrics::sessions_open(sessions.len());
        tracing::debug!("took up a legacy session from its id");
        Ok(session)
    }

    /// The claims of `id` if it may open a session for `principal`: sealed
    /// with this deployment's key, for the same principal, young enough,
    /// and not ended here.
    fn admissible(&self, id: &str, principal: &Principal) -> Option<SessionClaims> {
        if self.lock_ended().contains_key(&id_hash(id)) {
            return None;
        }
        let claims = self.gateway.session_key.open(id).ok()?;
        let max_age = self.gateway.live().config.server.session_max_age;
        let max_age_ms = u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX);
        (claims.principal == principal.key() && !claims.expired(now_ms(), max_age_ms))
            .then_some(claims)
    }

    /// Remembers that the session `id` names ended here, so that its id
    /// does not bring it back (it opens nowhere after `session_max_age`).
    fn remember_ended(&self, id: &str) {
        let now = now_ms();
        let max_age = self.gateway.live().config.server.session_max_age;
        let until = now.saturating_add(u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX));
        let mut ended = self.lock_ended();
        if ended.len() >= MAX_ENDED_SESSIONS {
            ended.retain(|_, until| *until > now);
        }
        if ended.len() >= MAX_ENDED_SESSIONS
            && let Some(soonest) = ended
                .iter()
                .min_by_key(|(_, until)| **until)
                .map(|(k, _)| *k)
        {
            ended.remove(&soonest);
        }
        ended.insert(id_hash(id), until);
    }
}

fn session_not_found() -> Refusal {
    Refusal(
        StatusCode::NOT_FOUND,
        RpcError::new(
            jsonrpc::INVALID_REQUEST,
            "Session not found: initialize again",
        ),
    )
}

fn too_many_sessions() -> Refusal {
    Refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        RpcError::new(
            jsonrpc::INTERNAL_ERROR,
            "too many open sessions; try again later",
        ),
    )
}

/// What an ended session is remembered by (not the id itself: a memory dump
/// should not hand out ids).
fn id_hash(id: &str) -> [u8; 16] {
    let digest = Sha256::digest(id.as_bytes());
    let mut out = [0; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

fn now_ms() -> u64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX)
}

/// A fresh session id for `session`, which `principal` opened.
fn new_session_id(key: &SessionKey, session: &ClientSession) -> String {
    let claims = SessionClaims {
        session_nonce: rand::rng().random(),
        principal: session.principal.key(),
        protocol_version: session.protocol_version.clone(),
        client_capabilities: session.client_capabilities.clone(),
        issued_at_ms: now_ms(),
    };
    key.seal(&claims, rand::rng().random())
}

async fn expire_sessions(state: Arc<HttpState>) {
    let limit = state.gateway.live().config.server.session_idle_timeout;
    let every = (limit / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = state.gateway.shutting_down() => return,
        }
        let expired: Vec<Arc<ClientSession>> = {
            let mut sessions = state.lock_sessions();
            let idle: Vec<String> = sessions
                .iter()
                .filter(|(_, session)| session.idle_for(limit))
                .map(|(id, _)| id.clone())
                .collect();
            for id in &idle {
                state.remember_ended(id);
            }
            let expired = idle.iter().filter_map(|id| sessions.remove(id)).collect();
            metrics::sessions_open(sessions.len());
            expired
        };
        let now = now_ms();
        state.lock_ended().retain(|_, until| *until > now);
        if !expired.is_empty() {
            tracing::info!("closing {} idle legacy session(s)", expired.len());
        }
        for session in expired {
            state.gateway.end_session(&session);
        }
    }
}

async fn health(State(state): State<Arc<HttpState>>, headers: HeaderMap) -> Response {
    // No auth here (the version must be readable before it, S-7), but no
    // DNS rebinding either: a web page must not read the upstreams' states
    // through the user's browser.
    if let Err(refused) = check_transport(&state, &headers) {
        return refused.into_response();
    }
    json_response(StatusCode::OK, &state.gateway.health(), None)
}

/// Serves only `GET /metrics`, without auth, on a listener of its own
/// (`[metrics] listen`).
pub async fn serve_metrics(listener: TcpListener) -> std::io::Result<()> {
    let app = Router::new().route(METRICS_PATH, get(render_metrics));
    axum::serve(listener, app).await
}

/// The Prometheus text exposition of the process's metrics.
async fn render_metrics() -> Response {
    match crate::ops::metrics::render() {
        Some(text) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            )],
            text,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// RFC 9728 protected resource metadata (OAuth mode; 404 otherwise).
async fn resource_metadata(State(state): State<Arc<HttpState>>, headers: HeaderMap) -> Response {
    if let Err(refused) = check_transport(&state, &headers) {
        return refused.into_response();
    }
    match state.gateway.auth().resource_metadata() {
        Some(doc) => json_response(StatusCode::OK, &doc, None),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The layer in front of `/mcp`: [`admit`], then the handler with the
/// principal in the request's extensions.
async fn admission(
    State(state): State<Arc<HttpState>>,
    mut request: Request,
    next: Next,
) -> Response {
    match admit(&state, request.headers()).await {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(refused) => refused,
    }
}

/// The guards every `/mcp` request passes before its body is read:
/// headers, origin, then who is calling.
async fn admit(state: &HttpState, headers: &HeaderMap) -> Result<Arc<Principal>, Response> {
    check_transport(state, headers).map_err(IntoResponse::into_response)?;
    let authorization = headers
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or("\u{fffd}"));
    let auth = state.gateway.auth();
    match auth.authenticate(authorization).await {
        Ok(principal) => Ok(Arc::new(principal)),
        Err(refusal) => {
            let (status, message) = match &refusal {
                Refusal401::Missing => (
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: send Authorization: Bearer <token>".to_owned(),
                ),
                Refusal401::Invalid(why) => {
                    (StatusCode::UNAUTHORIZED, format!("Unauthorized: {why}"))
                }
                Refusal401::Insufficient(scopes) => (
                    StatusCode::FORBIDDEN,
                    format!(
                        "Forbidden: the token lacks the scope(s) {}",
                        scopes.join(" ")
                    ),
                ),
            };
            tracing::info!("refused an HTTP request: {message}");
            let mut response = rpc_error_response(
                status,
                Value::Null,
                RpcError::new(jsonrpc::INVALID_REQUEST, message),
            );
            if let Ok(challenge) = HeaderValue::try_from(auth.challenge(&refusal)) {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, challenge);
            }
            Err(response)
        }
    }
}

/// Header caps, then the DNS-rebinding guard.
fn check_transport(state: &HttpState, headers: &HeaderMap) -> Result<(), Refusal> {
    let bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        let e = RpcError::new(
            jsonrpc::INVALID_REQUEST,
            format!(
                "Request Header Fields Too Large: at most {MAX_HEADERS} headers and {MAX_HEADER_BYTES} bytes"
            ),
        );
        return Err(Refusal(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, e));
    }
    check_origin(
        headers,
        state.loopback,
        &state.gateway.live().config.server.allowed_origins,
    )
}

async fn post_mcp(
    State(state): State<Arc<HttpState>>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let message = match Message::parse(&body) {
        None => {
            let e = RpcError::new(jsonrpc::PARSE_ERROR, "Parse error");
            return rpc_error_response(StatusCode::BAD_REQUEST, Value::Null, e);
        }
        Some(Err(e)) => {
            let e = RpcError::new(jsonrpc::INVALID_REQUEST, envelope_message(&e));
            return rpc_error_response(StatusCode::BAD_REQUEST, Value::Null, e);
        }
        Some(Ok(message)) => message,
    };
    match message {
        Message::Request { id, method, params } => {
            // The header says so even when the body's `_meta` is missing
            // (which is then refused as invalid params, not taken as legacy).
            let modern_header = headers
                .get("mcp-protocol-version")
                .is_some_and(|v| v.as_bytes() == protocol::MODERN_VERSION.as_bytes());
            let modern = modern_header || protocol::request_era(&params) == Era::Modern;
            let mut request = Incoming {
                id,
                method,
                params,
                principal,
            };
            // One place for the trace context from here on: `_meta`.
            let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
            trace_context::adopt_headers(
                &mut request.params,
                header(trace_context::TRACEPARENT),
                header(trace_context::TRACESTATE),
            );
            if modern {
                modern_request(state, &headers, request).await
            } else if request.method == "initialize" {
                initialize(&state, request)
            } else {
                legacy_request(state, &headers, request).await
            }
        }
        Message::Notification { method, params } => match state.session(&headers, &principal) {
            Ok(session) => {
                if let Some(session) = session {
                    session.touch();
                    if method == "notifications/cancelled" {
                        session.cancel(&params);
                    }
                }
                StatusCode::ACCEPTED.into_response()
            }
            // An ended session: the client must initialize again.
            Err(refused) => refused.into_response(),
        },
        Message::Response { id, outcome } => match state.session(&headers, &principal) {
            Ok(Some(session)) => {
                session.touch();
                session.answers.resolve(&id, outcome.map_err(Some));
                StatusCode::ACCEPTED.into_response()
            }
            Ok(None) => rpc_error_response(
                StatusCode::BAD_REQUEST,
                Value::Null,
                RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    "a response needs the Mcp-Session-Id it answers in",
                ),
            ),
            Err(refused) => refused.into_response(),
        },
    }
}

/// A request that passed admission.
struct Incoming {
    id: Value,
    method: String,
    params: Value,
    principal: Arc<Principal>,
}

async fn modern_request(state: Arc<HttpState>, headers: &HeaderMap, request: Incoming) -> Response {
    let Incoming {
        id,
        method,
        params,
        principal,
    } = request;
    // Headers first: a header that contradicts the body is a mismatch,
    // whatever else is wrong with the body.
    if let Err(e) = check_modern_headers(headers, &method, &params) {
        return rpc_error_response(StatusCode::BAD_REQUEST, id, e);
    }
    let meta = match protocol::check_modern_meta(&params) {
        Ok(meta) => meta,
        Err(e) => return rpc_error_response(StatusCode::BAD_REQUEST, id, e),
    };
    if let Err(e) = check_param_headers(&state.gateway, headers, &method, &params) {
        return rpc_error_response(StatusCode::BAD_REQUEST, id, e);
    }
    let param_headers = headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with(headers::PARAM_HEADER_PREFIX))
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    let ctx = RequestCtx {
        wants_logs: protocol::wants_log_messages(Era::Modern, &params),
        param_headers,
        era: Era::Modern,
        request_id: id.clone(),
        client_capabilities: meta.client_capabilities,
        link: None,
        session: None,
        scoped: state.gateway.auth().is_on(),
        principal,
        trail: Default::default(),
    };
    respond(
        Arc::clone(&state.gateway),
        ctx,
        id,
        method,
        params,
        Cancel::OnClose,
        None,
    )
    .await
}

fn initialize(state: &HttpState, request: Incoming) -> Response {
    let Incoming {
        id,
        params,
        principal,
        ..
    } = request;
    if state.lock_sessions().len() >= state.gateway.live().config.server.max_sessions {
        let Refusal(status, e) = too_many_sessions();
        return rpc_error_response(status, id, e);
    }
    let (result, session) = state.gateway.initialize(&params, principal);
    let session_id = new_session_id(&state.gateway.session_key, &session);
    {
        let mut sessions = state.lock_sessions();
        sessions.insert(session_id.clone(), session);
        metrics::sessions_open(sessions.len());
    }
    let header = HeaderValue::try_from(session_id).ok();
    json_response(StatusCode::OK, &jsonrpc::response(id, Ok(result)), header)
}

async fn legacy_request(state: Arc<HttpState>, headers: &HeaderMap, request: Incoming) -> Response {
    let Incoming {
        id,
        method,
        params,
        principal,
    } = request;
    if let Some(version) = headers.get("mcp-protocol-version") {
        let version = version.to_str().unwrap_or_default();
        if !protocol::is_legacy_version(version) {
            let e = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                format!("Unsupported MCP-Protocol-Version: {version:?}"),
            )
            .with_data(json!({"supported": protocol::supported_versions()}));
            return rpc_error_response(StatusCode::BAD_REQUEST, id, e);
        }
    }
    let session = match state.session(headers, &principal) {
        Ok(Some(session)) => session,
        Ok(None) => {
            let e = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "Bad Request: no Mcp-Session-Id; send initialize first, or a 2026-07-28 request with _meta",
            );
            return rpc_error_response(StatusCode::BAD_REQUEST, id, e);
        }
        Err(refused) => return refused.into_response(),
    };
    session.touch();
    let cancel = session.track(&id);
    let ctx = RequestCtx {
        wants_logs: true,
        param_headers: Vec::new(),
        era: Era::Legacy,
        request_id: id.clone(),
        client_capabilities: session.client_capabilities.clone(),
        link: None,
        session: Some(Arc::clone(&session)),
        scoped: state.gateway.auth().is_on(),
        principal,
        trail: Default::default(),
    };
    let answers = Some(Arc::clone(&session.answers));
    respond(
        Arc::clone(&state.gateway),
        ctx,
        id,
        method,
        params,
        Cancel::OnNotification(cancel),
        answers,
    )
    .await
}

/// A request refused before it reached the router.
struct Refusal(StatusCode, RpcError);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        rpc_error_response(self.0, Value::Null, self.1)
    }
}

/// What cancels a request besides its own end.
enum Cancel {
    /// Modern: the client closing the response stream.
    OnClose,
    /// Legacy: `notifications/cancelled` (a disconnect is not a
    /// cancellation in 2025-x).
    OnNotification(CancellationToken),
}

/// Runs the request on its own task and answers with JSON, or with SSE as
/// soon as anything must reach the client before the result.
async fn respond(
    gateway: Arc<Gateway>,
    mut ctx: RequestCtx,
    id: Value,
    method: String,
    params: Value,
    cancel: Cancel,
    answers: Option<Arc<Pending>>,
) -> Response {
    let (tx, mut rx) = mpsc::channel::<Value>(256);
    ctx.link = Some(ClientLink::new(tx.clone(), answers));
    let era = ctx.era;
    // sluice's own refusal, for the status of a plain JSON answer: set by
    // the request's task before it sends the answer.
    let refusal: Arc<OnceLock<Denied>> = Arc::default();
    let task_refusal = Arc::clone(&refusal);
    let task_gateway = Arc::clone(&gateway);
    tokio::spawn(async move {
        let gateway = task_gateway;
        let handled = gateway.handle(&ctx, &method, params);
        let reply = match &cancel {
            Cancel::OnClose => tokio::select! {
                reply = handled => Some(reply),
                () = tx.closed() => None,
            },
            Cancel::OnNotification(token) => tokio::select! {
                reply = handled => Some(reply),
                () = token.cancelled() => None,
            },
        };
        if let Some(session) = &ctx.session {
            session.untrack(&id);
        }
        if let Some(reply) = reply {
            if let Some(denied) = reply.refusal {
                let _ = task_refusal.set(denied);
            }
            let _ = tx.send(jsonrpc::response(id, reply.answer)).await;
        }
    });
    match rx.recv().await {
        // Cancelled before anything was said: no answer is due.
        None => StatusCode::ACCEPTED.into_response(),
        Some(first) if first.get("method").is_none() => {
            answer_response(&gateway.auth(), era, &first, refusal.get())
        }
        Some(first) => {
            let rest = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) });
            sse_response(stream::once(async move { first }).chain(rest))
        }
    }
}

/// A plain JSON answer, with the HTTP status its refusal calls for
/// (`Denied::http_status`: sluice's own refusals, never an upstream's error
/// code, give 429 and 403).
fn answer_response(auth: &Auth, era: Era, answer: &Value, refused: Option<&Denied>) -> Response {
    let status = refused.map_or(status::OK, |denied| denied.http_status(era));
    let mut response = json_response(
        StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        answer,
        None,
    );
    let extra = refused.and_then(|denied| {
        if let Some(secs) = denied.retry_after_secs() {
            return Some((header::RETRY_AFTER, secs.to_string()));
        }
        let scopes = denied.required_scopes()?.to_vec();
        Some((
            header::WWW_AUTHENTICATE,
            auth.challenge(&Refusal401::Insufficient(scopes)),
        ))
    });
    if let Some((name, value)) = extra
        && let Ok(value) = HeaderValue::try_from(value)
    {
        response.headers_mut().insert(name, value);
    }
    response
}

async fn get_mcp(
    State(state): State<Arc<HttpState>>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
) -> Response {
    match state.session(&headers, &principal) {
        Ok(Some(session)) => {
            session.touch();
            let (tx, rx) = mpsc::channel::<Value>(256);
            session.set_standalone(tx);
            let closed = session.closed.clone();
            let messages =
                stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) })
                    .take_until(async move { closed.cancelled().await });
            sse_response(messages)
        }
        // No session: stateless (2026-07-28) clients have no GET stream.
        Ok(None) => StatusCode::METHOD_NOT_ALLOWED.into_response(),
        Err(refused) => refused.into_response(),
    }
}

async fn delete_mcp(
    State(state): State<Arc<HttpState>>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
) -> Response {
    let Some(id) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) else {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    };
    let (held, removed) = {
        let mut sessions = state.lock_sessions();
        let held = sessions
            .get(id)
            .map(|s| s.principal.key() == principal.key());
        let removed = if held == Some(true) {
            // Marked ended before it leaves the map, under the map's lock:
            // a request taking it up from its id meanwhile sees either.
            state.remember_ended(id);
            sessions.remove(id)
        } else {
            None
        };
        metrics::sessions_open(sessions.len());
        (held, removed)
    };
    match (held, removed) {
        (_, Some(session)) => {
            state.gateway.end_session(&session);
            StatusCode::OK.into_response()
        }
        // Not held here: ended here, which is all this replica can do (the
        // others that hold it keep it until it idles out).
        (None, None) if state.admissible(id, &principal).is_some() => {
            state.remember_ended(id);
            StatusCode::OK.into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// DNS-rebinding guard (MCP-NOTES §4.1, S-22): a present `Origin` must be
/// an allowed origin, and when bound to loopback the `Host` must be a local
/// name.
fn check_origin(
    headers: &HeaderMap,
    loopback: bool,
    allowed: &[AllowedOrigin],
) -> Result<(), Refusal> {
    let forbidden = |what: &str| {
        let e = RpcError::new(
            jsonrpc::INVALID_REQUEST,
            format!("Forbidden: {what} is not allowed"),
        );
        Refusal(StatusCode::FORBIDDEN, e)
    };
    let mut origins = headers.get_all(header::ORIGIN).iter();
    if let Some(origin) = origins.next() {
        let origin = origin.to_str().unwrap_or_default();
        // A browser sends one; two leave it unclear which one counts.
        if origins.next().is_some() || !allowed.iter().any(|a| a.admits(origin)) {
            return Err(forbidden("this Origin"));
        }
    }
    if loopback {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(strip_port);
        if !host.is_some_and(is_local_host) {
            return Err(forbidden("this Host"));
        }
    }
    Ok(())
}

fn strip_port(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
}

fn is_local_host(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// SEP-2243 (MCP-NOTES §4.4): the headers must mirror the body.
fn check_modern_headers(headers: &HeaderMap, method: &str, params: &Value) -> Result<(), RpcError> {
    let mismatch = |what: String| RpcError::new(jsonrpc::HEADER_MISMATCH, what);
    let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"));
    // The body's version, when it has one, must be the header's.
    let body_version = jsonrpc::meta(params)
        .and_then(|m| m.get(protocol::META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    match (header("mcp-protocol-version"), body_version) {
        (Some(h), Some(b)) if h != b => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header {h:?} does not match the body's {b:?}"
            )));
        }
        (Some(_), _) => {}
        (None, _) => return Err(mismatch("missing MCP-Protocol-Version header".into())),
    }
    match header("mcp-method") {
        Some(m) if m == method => {}
        Some(m) => {
            return Err(mismatch(format!(
                "Mcp-Method header {m:?} does not match the body's {method:?}"
            )));
        }
        None => return Err(mismatch("missing Mcp-Method header".into())),
    }
    let name_field = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(field) = name_field {
        let body = params.get(field).and_then(Value::as_str);
        match header("mcp-name").map(headers::decode_value) {
            Some(Some(h)) if Some(h.as_str()) == body => {}
            Some(_) => {
                return Err(mismatch(format!(
                    "Mcp-Name header does not match params.{field}"
                )));
            }
            None => return Err(mismatch("missing Mcp-Name header".into())),
        }
    }
    Ok(())
}

/// SEP-2243: each argument a tool mirrors in an `Mcp-Param-*` header must
/// come with that header, and the header must equal the argument (a server
/// that processes the body MUST check; MCP-NOTES §4.4).
fn check_param_headers(
    gateway: &Gateway,
    headers: &HeaderMap,
    method: &str,
    params: &Value,
) -> Result<(), RpcError> {
    if method != "tools/call" {
        return Ok(());
    }
    let fed = gateway.federation();
    let tool = params
        .get("name")
        .and_then(Value::as_str)
        .and_then(|n| fed.tool(n));
    let schema = tool
        .and_then(|t| t.get("inputSchema"))
        .unwrap_or(&Value::Null);
    // A tool whose declarations are invalid is unusable by clients anyway;
    // the call goes on and the upstream decides.
    let Ok(declared) = headers::declared(schema) else {
        return Ok(());
    };
    let arguments = params.get("arguments").unwrap_or(&Value::Null);
    for expected in headers::values(&declared, arguments) {
        let name = &expected.header;
        match headers.get(name.as_str()).and_then(|v| v.to_str().ok()) {
            Some(got) if headers::matches(got, &expected) => {}
            Some(_) => {
                return Err(RpcError::new(
                    jsonrpc::HEADER_MISMATCH,
                    format!("header {name} does not match its argument"),
                ));
            }
            None => {
                return Err(RpcError::new(
                    jsonrpc::HEADER_MISMATCH,
                    format!("missing header {name}"),
                ));
            }
        }
    }
    Ok(())
}

fn json_response(status: StatusCode, body: &Value, session: Option<HeaderValue>) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = (status, Body::from(bytes)).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(session) = session {
        h.insert("mcp-session-id", session);
    }
    response
}

fn rpc_error_response(status: StatusCode, id: Value, error: RpcError) -> Response {
    json_response(status, &jsonrpc::response(id, Err(error)), None)
}

fn sse_response(messages: impl Stream<Item = Value> + Send + 'static) -> Response {
    let events = messages.map(|m| {
        Ok::<_, Infallible>(Event::default().data(serde_json::to_string(&m).unwrap_or_default()))
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::try_from(*v).expect("header"));
        }
        h
    }

    #[test]
    fn origin_and_host_guard() {
        let local = sluice_core::config::ServerConfig::default().allowed_origins;
        let check = |pairs: &[(&'static str, &str)], loopback: bool| {
            check_origin(&headers(pairs), loopback, &local).is_ok()
        };
        assert!(check(&[("host", "127.0.0.1:8787")], true));
        assert!(check(&[("host", "localhost")], true));
        assert!(check(&[("host", "[::1]:80")], true));
        assert!(!check(&[("host", "evil.example.com")], true));
        assert!(check(
            &[("host", "127.0.0.1"), ("origin", "http://localhost:3000")],
            true
        ));
        assert!(check(
            &[("host", "127.0.0.1"), ("origin", "https://[::1]")],
            true
        ));
        assert!(!check(
            &[("host", "127.0.0.1"), ("origin", "http://evil.example.com")],
            true
        ));
        assert!(!check(
            &[
                ("host", "127.0.0.1"),
                ("origin", "http://localhost.evil.example.com")
            ],
            true
        ));
        assert!(!check(&[("host", "127.0.0.1"), ("origin", "null")], true));
        // Bound to a public address, Host is not checked (auth guards it).
        assert!(check(&[("host", "mcp.example.com")], false));
        // A configured allowlist replaces the default.
        let app = ["https://app.example.com", "http://localhost:*"]
            .map(|o| AllowedOrigin::parse(o).expect("origin"));
        let with = |origin: &str| {
            check_origin(
                &headers(&[("host", "127.0.0.1"), ("origin", origin)]),
                true,
                &app,
            )
            .is_ok()
        };
        assert!(with("https://app.example.com"));
        assert!(with("https://app.example.com:443"));
        assert!(!with("https://app.example.com:8443"));
        assert!(!with("http://app.example.com"));
        assert!(with("http://localhost:5173"));
        assert!(!with("http://127.0.0.1:5173"));
    }

    #[test]
    fn only_sluices_own_refusals_set_429_and_403() {
        let auth = Auth::new(&sluice_core::config::AuthConfig::default());
        // An upstream's error that happens to use sluice's codes is
        // relayed as it is, with 200: its data chooses no challenge.
        for code in [-32011, -32012] {
            let answer = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "x",
                "data": {"requiredScopes": ["admin:all"], "retryAfterMs": 5}}});
            let relayed = Denied::Upstream(sluice_core::policy::UpstreamFailure::Rpc(
                sluice_core::jsonrpc::RpcError::new(code, "x"),
            ));
            let r = answer_response(&auth, Era::Modern, &answer, Some(&relayed));
            assert_eq!(r.status(), StatusCode::OK);
            assert!(r.headers().get(header::WWW_AUTHENTICATE).is_none());
            assert!(r.headers().get(header::RETRY_AFTER).is_none());
        }
        let answer = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32011, "message": "x"}});
        let limited = Denied::RateLimited {
            tool: "t".into(),
            retry_after: Duration::from_millis(1500),
        };
        let r = answer_response(&auth, Era::Legacy, &answer, Some(&limited));
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
        let scoped = Denied::InsufficientScope {
            target: "t".into(),
            required: vec!["files:write".into()],
        };
        let r = answer_response(&auth, Era::Modern, &answer, Some(&scoped));
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            r.headers()[header::WWW_AUTHENTICATE],
            "Bearer realm=\"mcp\", error=\"insufficient_scope\", error_description=\"the token lacks a scope this operation needs\", scope=\"files:write\""
        );
    }

    #[test]
    fn two_origins_are_refused() {
        let local = sluice_core::config::ServerConfig::default().allowed_origins;
        let mut h = headers(&[("host", "127.0.0.1")]);
        h.append("origin", HeaderValue::from_static("http://localhost:1"));
        assert!(check_origin(&h, true, &local).is_ok());
        h.append("origin", HeaderValue::from_static("http://localhost:2"));
        assert!(check_origin(&h, true, &local).is_err());
    }

    #[test]
    fn modern_headers_must_mirror_the_body() {
        let p = json!({"name": "a b", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
        let ok = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "a b"),
        ]);
        assert!(check_modern_headers(&ok, "tools/call", &p).is_ok());
        let b64 = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?YSBi?="),
        ]);
        assert!(check_modern_headers(&b64, "tools/call", &p).is_ok());
        let cases = [
            headers(&[("mcp-method", "tools/call"), ("mcp-name", "a b")]),
            headers(&[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "a b"),
            ]),
            headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
                ("mcp-name", "a b"),
            ]),
            headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
            ]),
            headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "other"),
            ]),
        ];
        for h in cases {
            let e = check_modern_headers(&h, "tools/call", &p).expect_err("mismatch");
            assert_eq!(e.code, -32020, "{h:?}");
        }
    }

    #[tokio::test]
    async fn session_ids_are_sealed_visible_ascii_and_never_repeat() {
        let key = SessionKey::derive(&[3; 32]);
        let principal = Arc::new(Principal::named("alice"));
        let session = ClientSession::new("2025-06-18".into(), json!({"roots": {}}), principal);
        let a = new_session_id(&key, &session);
        assert!(a.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{a}");
        assert_ne!(a, new_session_id(&key, &session));
        let claims = key.open(&a).unwrap();
        assert_eq!(claims.principal, "alice");
        assert_eq!(claims.protocol_version, "2025-06-18");
        assert_eq!(claims.client_capabilities, json!({"roots": {}}));
        assert_ne!(
            claims.session_nonce,
            key.open(&new_session_id(&key, &session))
                .unwrap()
                .session_nonce
        );
    }
}
