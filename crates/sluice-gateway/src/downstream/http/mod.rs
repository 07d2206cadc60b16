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
//!
//! # Layout
//!
//! The rules are the core's ([`sluice_core::policy::admission`]); here they
//! meet the wire:
//!
//! - `listener`: the accept loop: the connection caps and the head, idle
//!   and body timeouts of [`sluice_core::connection`].
//! - `admission`: the layer before any body is read (the core's header
//!   rules over the request's `HeaderMap`, then `[auth]`).
//! - `sessions`: the legacy session table: take-up of sealed ids, ended
//!   ids, idle expiry.
//! - `dispatch`: `POST` (2026-07-28, `initialize`, 2025-x), `GET` and
//!   `DELETE` of `/mcp`.
//! - `encode`: JSON and SSE answers, and the one place a
//!   [`Denied`] becomes an HTTP response.
//! - `console`: the web console's routes under `/ui/` (pages from
//!   [`crate::console`]).

mod admission;
mod console;
mod dispatch;
mod encode;
mod listener;
mod oauth;
mod sessions;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;
use sluice_core::config::{AuthMode, ConsoleListener, MCP_PATH, UpstreamTransport};
use sluice_core::policy::Denied;
use sluice_core::protocol::Era;
use tokio::net::TcpListener;

use crate::console::{Console, served_on};
use crate::gateway::Gateway;
use sessions::Sessions;

/// Where the Prometheus metrics are served.
pub const METRICS_PATH: &str = "/metrics";
/// Where RFC 9728 metadata is published (root; path-inserted below it).
const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What every handler of the HTTP transport shares.
struct HttpState {
    gateway: Arc<Gateway>,
    /// The legacy sessions held here, and those ended here.
    sessions: Sessions,
    /// Bound to a loopback address: only local `Host` names are accepted.
    loopback: bool,
    /// The web console, when this listener serves it.
    console: Option<Arc<Console>>,
}

/// Serves MCP at `http://<listener>/mcp` and `/health` until shutdown,
/// and the web console under `/ui/` when `[console]` puts it here.
pub async fn serve(
    gateway: Arc<Gateway>,
    listener: TcpListener,
    console: Option<Arc<Console>>,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let console = console.filter(|_| served_on(&gateway) == Some(ConsoleListener::Main));
    let state = Arc::new(HttpState {
        gateway: Arc::clone(&gateway),
        sessions: Sessions::default(),
        loopback: local.ip().is_loopback(),
        console,
    });
    let expiring = Arc::clone(&state);
    tokio::spawn(async move {
        expiring.sessions.expire_idle(&expiring.gateway).await;
    });
    // `/mcp/<view>` is the same endpoint through one `[[view]]`.
    let mcp = get(dispatch::get_mcp)
        .post(dispatch::post_mcp)
        .delete(dispatch::delete_mcp)
        // Admission runs before any handler reads the body.
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            admission::admission,
        ));
    let mut app = Router::new()
        .route(MCP_PATH, mcp.clone())
        .route(&format!("{MCP_PATH}/{{view}}"), mcp)
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
                admission::admission,
            )),
        );
    }
    if state.console.is_some() {
        app = app.merge(console::routes(&state));
    }
    // The principals' login pages, with [auth] and an OAuth upstream.
    let config = &gateway.live().config;
    let logins_here = config.auth.mode != AuthMode::None
        && config
            .upstreams
            .iter()
            .any(|u| matches!(u.transport, UpstreamTransport::Http { oauth: Some(_), .. }));
    if logins_here {
        app = app.merge(oauth::routes());
    }
    let app = app.with_state(Arc::clone(&state));
    let shutdown_state = Arc::clone(&state);
    let limits = gateway.live().config.server.connections;
    listener::serve(listener, app, limits, async move {
        shutdown_state.gateway.shutting_down().await;
        // Dropping the sessions ends their GET streams, so the server
        // can drain.
        shutdown_state.sessions.close_all();
    })
    .await
}

impl HttpState {
    /// The answer to a request refused in `era` (its id `id`).
    fn refuse(&self, era: Era, id: Value, denied: Denied) -> Response {
        encode::refusal(&self.gateway.auth(), era, id, denied)
    }

    /// The answer to a message refused before its era is known: before the
    /// body is read, or a body that is no request. No such refusal's status
    /// depends on the era, and it answers no id.
    fn refuse_early(&self, denied: Denied) -> Response {
        self.refuse(Era::Legacy, Value::Null, denied)
    }
}

async fn health(State(state): State<Arc<HttpState>>, uri: Uri, headers: HeaderMap) -> Response {
    // No auth here (the version must be readable before it, S-7), but no
    // DNS rebinding either: a web page must not read the upstreams' states
    // through the user's browser.
    if let Err(denied) = admission::check_transport(&state, &uri, &headers) {
        return state.refuse_early(denied);
    }
    let detail = admission::health_detail(&state, &headers).await;
    encode::json_response(StatusCode::OK, &state.gateway.health(detail), None)
}

/// Serves `GET /metrics`, without auth, on a listener of its own
/// (`[metrics] listen`), under the same connection bounds as `/mcp`; and
/// the web console under `/ui/` (behind its admission, `[auth]`
/// included) when `[console] listener = "metrics"`.
pub async fn serve_metrics(
    listener: TcpListener,
    limits: sluice_core::connection::ConnectionLimits,
    console: Option<(Arc<Gateway>, Arc<Console>)>,
) -> std::io::Result<()> {
    let console =
        console.filter(|(gateway, _)| served_on(gateway) == Some(ConsoleListener::Metrics));
    let Some((gateway, console)) = console else {
        let app = Router::new().route(METRICS_PATH, get(render_metrics));
        return listener::serve(listener, app, limits, std::future::pending()).await;
    };
    let state = Arc::new(HttpState {
        loopback: listener.local_addr()?.ip().is_loopback(),
        gateway,
        sessions: Sessions::default(),
        console: Some(console),
    });
    let app = Router::new()
        .route(METRICS_PATH, get(render_metrics))
        .merge(console::routes(&state))
        .with_state(Arc::clone(&state));
    listener::serve(listener, app, limits, std::future::pending()).await
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
async fn resource_metadata(
    State(state): State<Arc<HttpState>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if let Err(denied) = admission::check_transport(&state, &uri, &headers) {
        return state.refuse_early(denied);
    }
    match state.gateway.auth().resource_metadata() {
        Some(doc) => encode::json_response(StatusCode::OK, &doc, None),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
