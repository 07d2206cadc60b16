//! The `/mcp` handlers, once admission passed: a POSTed request goes the
//! 2026-07-28 way (stateless), opens a session (`initialize`) or runs in
//! its 2025-x session; `GET` opens a session's stream, `DELETE` ends it.

use std::sync::{Arc, OnceLock};

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::{StreamExt, stream};
use serde_json::Value;
use sluice_core::access::Principal;
use sluice_core::carried::{self, Carried};
use sluice_core::config::MCP_PATH;
use sluice_core::headers;
use sluice_core::jsonrpc::{self, Message};
use sluice_core::method::{Method, notification};
use sluice_core::payload::{CARRIED_AS_TEXT_FROM, Payload};
use sluice_core::policy::Denied;
use sluice_core::policy::admission::{self, Headers, field};
use sluice_core::policy::admit;
use sluice_core::protocol::{self, Era};
use sluice_core::trace_context;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::HttpState;
use super::admission::HeaderView;
use super::encode;
use super::listener;
use crate::client::{ClientLink, ClientSession, RequestCtx};
use crate::downstream::stdio::envelope_message;
use crate::gateway::Gateway;
use crate::offload;
use crate::pending::Pending;

pub(super) async fn post_mcp(
    State(state): State<Arc<HttpState>>,
    Extension(principal): Extension<Arc<Principal>>,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let view = match served_view(&state, &uri) {
        Ok(view) => view,
        Err(status) => return status.into_response(),
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            return match listener::slow_body(&rejection) {
                Some(denied) => state.refuse_early(denied),
                None => rejection.into_response(),
            };
        }
    };
    // A large body is kept, not copied, for what its params carry.
    let read = if body.len() >= CARRIED_AS_TEXT_FROM {
        offload::heavy(|| carried::read_owned(Vec::from(body)))
    } else {
        carried::read(&body)
    };
    let (message, carried) = match read {
        None => return state.refuse_early(Denied::ParseError),
        Some(Err(e)) => return state.refuse_early(Denied::InvalidMessage(envelope_message(&e))),
        Some(Ok(read)) => (read.message, read.carried),
    };
    let fields = HeaderView(&headers);
    match message {
        Message::Request { id, method, params } => {
            let era = admission::post_era(&fields, &params);
            let mut request = Incoming {
                id,
                method: Method::parse(&method),
                name: method,
                params,
                carried,
                principal,
                view,
            };
            // One place for the trace context from here on: `_meta`.
            trace_context::adopt_headers(
                &mut request.params,
                fields.get(trace_context::TRACEPARENT).flatten(),
                fields.get(trace_context::TRACESTATE).flatten(),
            );
            match (era, request.method) {
                (Era::Modern, _) => modern_request(state, &headers, request).await,
                (Era::Legacy, Method::Initialize) => initialize(&state, request),
                (Era::Legacy, _) => legacy_request(state, &headers, request).await,
            }
        }
        Message::Notification { method, params } => {
            match named_session(&state, &headers, &principal) {
                Ok(session) => {
                    if let Some(session) = session {
                        session.touch();
                        if method == notification::CANCELLED {
                            session.cancel(&params);
                        }
                    }
                    StatusCode::ACCEPTED.into_response()
                }
                // An ended session: the client must initialize again.
                Err(denied) => state.refuse_early(denied),
            }
        }
        Message::Response { id, outcome } => match named_session(&state, &headers, &principal) {
            Ok(Some(session)) => {
                session.touch();
                session.answers.resolve(&id, outcome.map_err(Some));
                StatusCode::ACCEPTED.into_response()
            }
            Ok(None) => state.refuse_early(Denied::ResponseWithoutSession),
            Err(denied) => state.refuse_early(denied),
        },
    }
}

/// A request that passed admission.
struct Incoming {
    id: Value,
    /// The method as the client sent it.
    name: String,
    method: Method,
    params: Value,
    /// What its params left as text, when it was large.
    carried: Option<Arc<Carried>>,
    principal: Arc<Principal>,
    /// The `[[view]]` of `/mcp/<name>`, if the request came through one.
    view: Option<Arc<str>>,
}

/// The view a request's path names: `None` for `/mcp`, the name for
/// `/mcp/<name>`, or a 404 when no `[[view]]` has that name (as for any
/// path sluice does not serve).
fn served_view(state: &HttpState, uri: &Uri) -> Result<Option<Arc<str>>, StatusCode> {
    let Some(name) = uri
        .path()
        .strip_prefix(MCP_PATH)
        .and_then(|rest| rest.strip_prefix('/'))
    else {
        return Ok(None);
    };
    if state.gateway.has_view(name) {
        Ok(Some(Arc::from(name)))
    } else {
        Err(StatusCode::NOT_FOUND)
    }
}

/// The legacy session a request names (`Mcp-Session-Id`), if it names one
/// and its principal opened it.
fn named_session(
    state: &HttpState,
    headers: &HeaderMap,
    principal: &Arc<Principal>,
) -> Result<Option<Arc<ClientSession>>, Denied> {
    // An id that is not text names no session: it is not found.
    let view = HeaderView(headers);
    let Some(id) = view.get(field::SESSION_ID) else {
        return Ok(None);
    };
    let id = id.unwrap_or_default();
    state.sessions.find(&state.gateway, id, principal).map(Some)
}

/// What every HTTP request's context starts from; the era's handler sets
/// the rest.
fn request_ctx(
    state: &HttpState,
    era: Era,
    request: &Incoming,
    client_capabilities: Value,
) -> RequestCtx {
    RequestCtx {
        wants_logs: true,
        param_headers: Vec::new(),
        era,
        request_id: request.id.clone(),
        client_capabilities,
        link: None,
        session: None,
        scoped: admit::scopes_apply(true, state.gateway.auth().is_on()),
        view: request.view.clone(),
        principal: Arc::clone(&request.principal),
        trail: Default::default(),
        carried: request.carried.clone(),
    }
}

async fn modern_request(state: Arc<HttpState>, headers: &HeaderMap, request: Incoming) -> Response {
    let admitted = {
        let fed = state.gateway.federation(request.view.as_deref());
        let view = HeaderView(headers);
        let tool = |name: &str| fed.tool(name);
        admission::admit_modern(
            &view,
            &request.name,
            request.method,
            &request.params,
            request.carried.as_deref(),
            tool,
        )
    };
    let meta = match admitted {
        Ok(meta) => meta,
        Err(denied) => return state.refuse(Era::Modern, request.id, denied),
    };
    let ctx = RequestCtx {
        wants_logs: protocol::wants_log_messages(Era::Modern, &request.params),
        param_headers: param_headers(headers),
        ..request_ctx(&state, Era::Modern, &request, meta.client_capabilities)
    };
    respond(&state.gateway, ctx, request, Cancel::OnClose, None).await
}

/// The `Mcp-Param-*` fields, which the router forwards (lowercase names).
fn param_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with(headers::PARAM_HEADER_PREFIX))
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect()
}

fn initialize(state: &HttpState, request: Incoming) -> Response {
    let Incoming {
        id,
        params,
        principal,
        view,
        ..
    } = request;
    match state
        .sessions
        .open(&state.gateway, &params, principal, view)
    {
        Ok((result, session_id)) => {
            let header = HeaderValue::try_from(session_id).ok();
            encode::json_response(StatusCode::OK, &jsonrpc::response(id, Ok(result)), header)
        }
        Err(denied) => state.refuse(Era::Legacy, id, denied),
    }
}

async fn legacy_request(state: Arc<HttpState>, headers: &HeaderMap, request: Incoming) -> Response {
    if let Err(denied) = admission::check_legacy_version(&HeaderView(headers)) {
        return state.refuse(Era::Legacy, request.id, denied);
    }
    let session = match named_session(&state, headers, &request.principal) {
        Ok(Some(session)) => session,
        Ok(None) => return state.refuse(Era::Legacy, request.id, Denied::NoSession),
        // Answered without the request's id, as every session refusal.
        Err(denied) => return state.refuse_early(denied),
    };
    session.touch();
    let cancel = session.track(&request.id);
    let ctx = RequestCtx {
        session: Some(Arc::clone(&session)),
        ..request_ctx(
            &state,
            Era::Legacy,
            &request,
            session.client_capabilities.clone(),
        )
    };
    let answers = Some(Arc::clone(&session.answers));
    respond(
        &state.gateway,
        ctx,
        request,
        Cancel::OnNotification(cancel),
        answers,
    )
    .await
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
    gateway: &Arc<Gateway>,
    mut ctx: RequestCtx,
    request: Incoming,
    cancel: Cancel,
    answers: Option<Arc<Pending>>,
) -> Response {
    let Incoming {
        id,
        name: method,
        params,
        ..
    } = request;
    let (tx, mut rx) = mpsc::channel::<Payload>(256);
    ctx.link = Some(ClientLink::new(tx.clone(), answers));
    let era = ctx.era;
    // sluice's own refusal, for the status of a plain JSON answer: set by
    // the request's task before it sends the answer.
    let refusal: Arc<OnceLock<Denied>> = Arc::default();
    let task_refusal = Arc::clone(&refusal);
    let task_gateway = Arc::clone(gateway);
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
            let _ = tx.send(jsonrpc::response_payload(id, reply.answer)).await;
        }
    });
    match rx.recv().await {
        // Cancelled before anything was said: no answer is due.
        None => StatusCode::ACCEPTED.into_response(),
        Some(first) if is_answer(&first) => {
            encode::answer_response(&gateway.auth(), era, first, refusal.get())
        }
        Some(first) => encode::sse_response(stream::once(async move { first }).chain(receive(rx))),
    }
}

/// Whether a message for the client is the request's answer (only an
/// answer is ever carried as text).
fn is_answer(message: &Payload) -> bool {
    message
        .as_tree()
        .is_none_or(|message| message.get("method").is_none())
}

/// What arrives on `rx`, as a stream.
fn receive(rx: mpsc::Receiver<Payload>) -> impl futures::Stream<Item = Payload> + Send + 'static {
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) })
}

pub(super) async fn get_mcp(
    State(state): State<Arc<HttpState>>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
) -> Response {
    match named_session(&state, &headers, &principal) {
        Ok(Some(session)) => {
            session.touch();
            let (tx, rx) = mpsc::channel::<Payload>(256);
            session.set_standalone(tx);
            let closed = session.closed.clone();
            let messages = receive(rx).take_until(async move { closed.cancelled().await });
            encode::sse_response(messages)
        }
        // No session: stateless (2026-07-28) clients have no GET stream.
        Ok(None) => StatusCode::METHOD_NOT_ALLOWED.into_response(),
        Err(denied) => state.refuse_early(denied),
    }
}

pub(super) async fn delete_mcp(
    State(state): State<Arc<HttpState>>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
) -> Response {
    // An id that is not text is no id here.
    let view = HeaderView(&headers);
    let Some(id) = view.get(field::SESSION_ID).flatten() else {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    };
    if state.sessions.end(&state.gateway, id, &principal) {
        StatusCode::OK.into_response()
    } else {
        StatusCode::NOT_FOUND.into_response()
    }
}
