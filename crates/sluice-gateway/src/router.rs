//! The router: what sluice does with each client request, whatever the
//! transport.
//!
//! sluice answers the protocol's own methods itself (`server/discover`,
//! `ping`, the four lists from the federated catalog) and forwards the rest
//! to the upstream that owns the tool, prompt or resource, with names
//! translated back. Every result is shaped for the client's era on the way
//! out.

use std::sync::Arc;

use serde_json::{Value, json};
use sluice_core::access::{self, Principal};
use sluice_core::discovery::ListKind;
use sluice_core::headers;
use sluice_core::jsonrpc::{self, RpcError};
use sluice_core::protocol::{self, CacheHints, Era};
use tokio::sync::broadcast;

use crate::bridge::{self, Flight, Question};
use crate::downstream::{ClientSession, RequestCtx};
use sluice_core::boundary::Boundary;
use sluice_core::boundary::budget::Surface;
use sluice_core::config::{CatalogMode, SensitiveElicitation};
use sluice_core::elicitation;
use sluice_core::health::CatalogState;
use sluice_core::outbound::Url;
use sluice_core::progressive;

use crate::gateway::{ClientEvent, Gateway, Live};
use crate::ops::{self, metrics, trace};
use crate::rescue::{self, Refused};
use crate::upstream::{Related, Upstream};
use sluice_core::audit::{self, Decision};
use sluice_core::boundary::budget;
use sluice_core::policy::UpstreamFailure;
use tracing::Instrument;

/// Caching hints on what sluice serves from its own catalog: the catalog is
/// the same for every client (no per-user auth yet), and clients learn of
/// changes through `list_changed`, so they may cache it publicly; a TTL of 0
/// never lets a cache outlive a change it was not told about.
const CATALOG_HINTS: CacheHints = CacheHints {
    ttl_ms: 0,
    public: true,
};
/// The most MRTR rounds one request may take.
const MAX_INPUT_ROUNDS: usize = 10;

/// The level of log messages asked of a modern upstream for a legacy client
/// that never called `logging/setLevel`.
const DEFAULT_LOG_LEVEL: &str = "info";

/// Sets one `_meta` key of request params.
fn set_meta(params: &mut Value, key: &str, value: Value) {
    if let Some(obj) = params.as_object_mut()
        && let Some(meta) = obj
            .entry("_meta")
            .or_insert_with(|| json!({}))
            .as_object_mut()
    {
        meta.insert(key.to_owned(), value);
    }
}

/// The longest a request waits for upstreams still starting.
const SETTLE_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(10);

/// The error for an elicitation sluice will not pass on (S-27).
fn sensitive_elicitation_refused() -> RpcError {
    RpcError::invalid_params(
        "sluice refused an elicitation that asks for sensitive data (a credential, payment or identity field); collect secrets through configuration or URL-mode elicitation",
    )
}

/// Puts one round's `answers` and the upstream's `requestState` into the
/// retry's params (MRTR).
fn answer_round(params: &mut Value, result: &Value, answers: serde_json::Map<String, Value>) {
    if let Some(obj) = params.as_object_mut() {
        obj.insert("inputResponses".into(), Value::Object(answers));
        match result.get("requestState") {
            Some(state) => obj.insert("requestState".into(), state.clone()),
            None => obj.remove("requestState"),
        };
    }
}

/// Hints on results forwarded from an upstream that gave none: sluice cannot
/// know whether they depend on who asks.
const FORWARDED_HINTS: CacheHints = CacheHints {
    ttl_ms: 0,
    public: false,
};

impl Gateway {
    /// Handles one client request; the result is shaped for `ctx.era`.
    pub async fn handle(
        &self,
        ctx: &RequestCtx,
        method: &str,
        params: Value,
    ) -> Result<Value, RpcError> {
        let span = trace::request_span(method, &params);
        self.handle_in(ctx, method, params, &span)
            .instrument(span.clone())
            .await
    }

    async fn handle_in(
        &self,
        ctx: &RequestCtx,
        method: &str,
        params: Value,
        span: &tracing::Span,
    ) -> Result<Value, RpcError> {
        let in_flight = ops::AUDITED_METHODS
            .contains(&method)
            .then(|| self.ops.start(method, &ctx.principal, &ctx.trail, span));
        if !matches!(method, "ping" | "server/discover") {
            // A client that connects at once waits for the upstreams' first
            // reads, but a hung upstream must not hold everyone for long.
            let limit = self
                .live()
                .config
                .server
                .startup_timeout
                .min(SETTLE_WAIT_MAX);
            self.settled(limit).await;
        }
        let outcome = match method {
            _ if ctx.era == Era::Modern && protocol::removed_in_modern(method) => {
                Err(RpcError::method_not_found(method))
            }
            "ping" => Ok(json!({})),
            "server/discover" => Ok(self.discover_result()),
            "tools/call" => self.call_tool(ctx, params).await,
            "prompts/get" => {
                self.call_named(ctx, ListKind::Prompts, method, params)
                    .await
            }
            "resources/read" => self.read_resource(ctx, params).await,
            "resources/subscribe" | "resources/unsubscribe" => {
                self.subscribe_resource(ctx, method, params).await
            }
            "completion/complete" => self.complete(ctx, params).await,
            "logging/setLevel" => self.set_log_level(ctx, params).await,
            "subscriptions/listen" if ctx.era == Era::Modern => self.listen(ctx, params).await,
            _ => match ListKind::from_method(method) {
                Some(kind) => self.list(kind, &params),
                None => Err(RpcError::method_not_found(method)),
            },
        };
        let hints = if ListKind::from_method(method).is_some() || method == "server/discover" {
            CATALOG_HINTS
        } else {
            FORWARDED_HINTS
        };
        let answer = match outcome {
            Ok(mut result) => {
                protocol::shape_result(ctx.era, method, &mut result, hints, &self.server_info());
                Ok(result)
            }
            Err(e) => Err(protocol::shape_error(ctx.era, e)),
        };
        if let Some(in_flight) = in_flight {
            in_flight.answered(&answer);
        }
        answer
    }

    /// The capabilities sluice offers: everything it can route.
    pub(crate) fn server_capabilities(&self) -> Value {
        json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "completions": {},
            "logging": {},
        })
    }

    fn discover_result(&self) -> Value {
        json!({
            "supportedVersions": protocol::supported_versions(),
            "capabilities": self.server_capabilities(),
        })
    }

    /// A legacy `initialize`: the answer, and the session it opens (which
    /// already receives the gateway's events for its standalone stream).
    pub fn initialize(
        &self,
        params: &Value,
        principal: Arc<Principal>,
    ) -> (Value, Arc<ClientSession>) {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = protocol::negotiate_legacy(requested);
        let result = json!({
            "protocolVersion": version,
            "capabilities": self.server_capabilities(),
            "serverInfo": self.server_info(),
        });
        let caps = params
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let session = ClientSession::new(version.to_owned(), caps, principal);
        session.forward_events(self.subscribe());
        (result, session)
    }

    /// `tools/call`: a meta-tool in progressive mode, else a tool by its
    /// namespaced name. `sluice_call_tool` is a direct call of the tool it
    /// names, through the same policies.
    async fn call_tool(&self, ctx: &RequestCtx, mut params: Value) -> Result<Value, RpcError> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if self.live().config.catalog.mode == CatalogMode::Progressive
            && progressive::is_meta_tool(name)
        {
            let args = params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({}));
            if let Some(answer) = self.meta_call(name, &args) {
                return answer;
            }
            // sluice_call_tool: the inner call replaces the outer one.
            let Some(inner) = args.get("name").and_then(Value::as_str) else {
                return Err(RpcError::invalid_params(
                    "arguments.name must be a tool's name",
                ));
            };
            if let Some(obj) = params.as_object_mut() {
                obj.insert("name".into(), inner.into());
                obj.insert(
                    "arguments".into(),
                    args.get("arguments").cloned().unwrap_or_else(|| json!({})),
                );
            }
        }
        self.call_named(ctx, ListKind::Tools, "tools/call", params)
            .await
    }

    /// `tools/call` and `prompts/get`: route by the namespaced name, restore
    /// the upstream's name, forward.
    async fn call_named(
        &self,
        ctx: &RequestCtx,
        kind: ListKind,
        method: &str,
        mut params: Value,
    ) -> Result<Value, RpcError> {
        let what = if kind == ListKind::Tools {
            "tool"
        } else {
            "prompt"
        };
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params(format!(
                "params.name must be the {what}'s name"
            )));
        };
        let fed = self.federation();
        let route = match kind {
            ListKind::Tools => fed.route_tool(name),
            _ => fed.route_prompt(name),
        };
        let Some(route) = route.cloned() else {
            if let Some(withheld) = fed.withheld(kind, name) {
                ctx.trail.routed(&withheld.upstream, Some(name));
                ctx.trail.decide(Decision::BlockedDrift);
                return Err(rescue::drift_blocked(what, name, withheld));
            }
            if let Some(pending) = self.pending_owner(name) {
                return Err(rescue::catalog_pending(&pending));
            }
            return Err(RpcError::invalid_params(format!("Unknown {what}: {name}")));
        };
        let client_params = params.clone();
        if let Some(obj) = params.as_object_mut() {
            obj.insert("name".into(), route.name.clone().into());
        }
        let upstream = self.upstream_named(&route.upstream)?;
        let exposed = client_params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        ctx.trail.routed(&route.upstream, Some(exposed));
        if kind == ListKind::Tools {
            // A retry that answers a round sluice itself parked is the same
            // call, counted once; any other retry cannot be told from a
            // new call and is counted again.
            let resumed = self.bridge.is_resumption(ctx, method, &client_params);
            self.admit_call(ctx, &route.upstream, &route.name, exposed, !resumed)
                .await?;
        } else {
            self.admit_upstream(ctx, &route.upstream)?;
        }
        let live = self.live();
        let boundary = match kind {
            ListKind::Tools => self.tool_boundary(&live, &upstream, exposed, &route.name),
            _ => self.boundary(&live, &upstream, Surface::Prompt, true),
        };
        self.forward(ctx, &upstream, method, &client_params, params, &boundary)
            .await
    }

    /// A tool call's admission: the scopes `[[auth.require]]` asks for
    /// (S-20), then, when `count`, the rate limit (S-24), counted only for
    /// calls that are allowed at all.
    async fn admit_call(
        &self,
        ctx: &RequestCtx,
        upstream: &str,
        tool: &str,
        exposed: &str,
        count: bool,
    ) -> Result<(), RpcError> {
        self.check_scopes(ctx, upstream, Some(tool), exposed)?;
        if !count {
            return Ok(());
        }
        self.live()
            .rate_limits
            .check(&ctx.principal.key(), upstream, tool, exposed)
            .await
            .map_err(|wait| {
                tracing::debug!(principal = %ctx.principal.name, tool = exposed, "rate limited");
                ctx.trail.decide(Decision::RateLimited);
                ctx.refusal.set(Refused::RateLimited(wait));
                rescue::rate_limited(exposed, wait)
            })
    }

    /// A prompt, resource or completion request's admission: the scopes
    /// `[[auth.require]]` asks for every use of `upstream`.
    fn admit_upstream(&self, ctx: &RequestCtx, upstream: &str) -> Result<(), RpcError> {
        self.check_scopes(ctx, upstream, None, upstream)
    }

    fn check_scopes(
        &self,
        ctx: &RequestCtx,
        upstream: &str,
        tool: Option<&str>,
        what: &str,
    ) -> Result<(), RpcError> {
        if !ctx.scoped {
            return Ok(());
        }
        let _policy = trace::policy_span().entered();
        let required = access::required_scopes(&self.live().config.auth.require, upstream, tool);
        if ctx.principal.missing(&required).is_empty() {
            return Ok(());
        }
        tracing::info!(
            principal = %ctx.principal.name,
            target = what,
            request = %ctx.request_id,
            "refused: insufficient scope (needs {})",
            required.join(" ")
        );
        ctx.trail.decide(Decision::RefusedScope);
        ctx.refusal
            .set(Refused::InsufficientScope(required.clone()));
        Err(rescue::insufficient_scope(what, &required))
    }

    /// What a client's answer from `upstream` goes through: redaction
    /// always; the read budget when `read`.
    fn boundary<'a>(
        &self,
        live: &'a Live,
        upstream: &Upstream,
        surface: Surface,
        read: bool,
    ) -> Boundary<'a> {
        Boundary {
            redactor: &live.redactor,
            limit: upstream
                .config
                .read_budget
                .unwrap_or(live.config.limits.read_budget),
            surface,
            read,
            projection: None,
        }
    }

    /// A tool call's boundary: a read only for a read-only tool (its
    /// approved definition says so and its upstream is trusted, or the
    /// config lists it), with its own budget and projection if configured.
    fn tool_boundary<'a>(
        &self,
        live: &'a Live,
        upstream: &Upstream,
        exposed: &str,
        name: &str,
    ) -> Boundary<'a> {
        let up = &upstream.config;
        let fed = self.federation();
        let read = self.is_read_only(&up.name, name, fed.tool(exposed));
        let mut boundary = self.boundary(live, upstream, Surface::Tool, read);
        if let Some(limit) = up.tool_read_budgets.get(name) {
            boundary.limit = *limit;
        }
        boundary.projection = live
            .config
            .projections
            .iter()
            .find(|p| p.tool == exposed)
            .map(|p| &p.projection);
        boundary
    }

    async fn read_resource(&self, ctx: &RequestCtx, params: Value) -> Result<Value, RpcError> {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params(
                "params.uri must be the resource's URI",
            ));
        };
        // S-25: only a well-formed absolute URI (RFC 3986) is passed on.
        if Url::parse(uri).is_err() {
            return Err(RpcError::invalid_params(
                "params.uri is not an absolute URI (RFC 3986)",
            ));
        }
        let upstream = self.resource_owner(ctx, uri)?;
        self.admit_upstream(ctx, upstream.name())?;
        let live = self.live();
        let boundary = self.boundary(&live, &upstream, Surface::Resource, true);
        self.forward(
            ctx,
            &upstream,
            "resources/read",
            &params.clone(),
            params,
            &boundary,
        )
        .await
    }

    async fn subscribe_resource(
        &self,
        ctx: &RequestCtx,
        method: &str,
        params: Value,
    ) -> Result<Value, RpcError> {
        let Some(uri) = params.get("uri").and_then(Value::as_str).map(String::from) else {
            return Err(RpcError::invalid_params(
                "params.uri must be the resource's URI",
            ));
        };
        // A subscription lives in a session: without one (a 2026-07-28
        // request, where the method is gone, or a client that skipped
        // initialize) there is nothing to hold it, and forwarding would let
        // anyone undo other clients' subscriptions on the shared upstream.
        let Some(session) = &ctx.session else {
            return Err(RpcError::method_not_found(method));
        };
        if method == "resources/unsubscribe" {
            // The upstream that holds it is the one recorded, even if the
            // catalog has moved on since.
            let Some(held) = session.unsubscribe(&uri) else {
                return Ok(json!({}));
            };
            if self.hub.release_subscription(&held, &uri) {
                self.unsubscribe_upstream(&held, &uri);
            }
            return Ok(json!({}));
        }
        let upstream = self.resource_owner(ctx, &uri)?;
        self.admit_upstream(ctx, upstream.name())?;
        let name = upstream.name();
        let lock = self.hub.subscription_lock(name, &uri);
        let _ordered = lock.lock().await;
        if !session.subscribe(&uri, name) {
            return Ok(json!({}));
        }
        if !self.hub.acquire_subscription(name, &uri) {
            return Ok(json!({}));
        }
        // A modern upstream has no resources/subscribe: a listen stream
        // naming the URI holds the subscription instead.
        if let Ok(conn) = upstream.connection()
            && conn.description().era == Era::Modern
        {
            // The session may have ended meanwhile: its subscriptions were
            // released without this one.
            if session.closed.is_cancelled() {
                session.unsubscribe(&uri);
                self.hub.release_subscription(name, &uri);
                return Ok(json!({}));
            }
            self.hub.subscribe_resource(
                name,
                &conn,
                &uri,
                self.live().config.server.request_timeout,
            );
            return Ok(json!({}));
        }
        let live = self.live();
        let boundary = self.boundary(&live, &upstream, Surface::Resource, false);
        let result = self
            .forward(ctx, &upstream, method, &params.clone(), params, &boundary)
            .await;
        // Undo what this request did if it failed, or if the session ended
        // meanwhile (its subscriptions were already released without this
        // one).
        if (result.is_err() || session.closed.is_cancelled())
            && session.unsubscribe(&uri).is_some()
            && self.hub.release_subscription(name, &uri)
            && result.is_ok()
        {
            self.unsubscribe_upstream(name, &uri);
        }
        result
    }

    /// Sends `resources/unsubscribe` upstream on its own task: a slow or
    /// hung upstream must not hold the client (or a session's end) up.
    pub(crate) fn unsubscribe_upstream(&self, upstream: &str, uri: &str) {
        let conn = self.upstream(upstream).and_then(|u| u.connection().ok());
        let timeout = self.live().config.server.request_timeout;
        let hub = Arc::clone(&self.hub);
        let (upstream, uri) = (upstream.to_owned(), uri.to_owned());
        tokio::spawn(async move {
            let lock = hub.subscription_lock(&upstream, &uri);
            let _ordered = lock.lock().await;
            // A session may have subscribed again meanwhile: then the
            // upstream subscription is still wanted.
            if hub.subscription_count(&upstream, &uri) > 0 {
                return;
            }
            // A modern upstream's subscription is its listen stream.
            if hub.end_resource_listen(&upstream, &uri) {
                return;
            }
            let Some(conn) = conn else {
                return;
            };
            let params = json!({"uri": uri});
            let _ = conn
                .request(
                    "resources/unsubscribe",
                    params,
                    &json!({}),
                    None,
                    timeout,
                    &[],
                )
                .await;
        });
    }

    /// The upstream whose namespace a tool or prompt name is in, when that
    /// upstream has no complete catalog yet (so the name may well exist).
    fn pending_owner(&self, exposed: &str) -> Option<String> {
        let live = self.live();
        live.upstreams
            .iter()
            .filter(|u| {
                u.status().catalog == CatalogState::None && live.naming.is_prefixed(u.name())
            })
            .map(|u| u.name())
            .find(|up| exposed.starts_with(&live.naming.prefix(up)))
            .map(str::to_owned)
    }

    /// The upstream that serves a URI: the one that lists it, else the
    /// first with a matching template, else the only upstream that offers
    /// resources at all.
    /// The upstream that serves `uri`, recorded on the request's trail.
    /// The trail names the URI by its scheme only, and only when the
    /// approved catalog lists it: a scheme the client made up is never a
    /// metric label or an audit target.
    fn resource_owner(&self, ctx: &RequestCtx, uri: &str) -> Result<Arc<Upstream>, RpcError> {
        let fed = self.federation();
        let kind = audit::resource_kind(uri);
        if let Some(withheld) = fed.withheld_resource(uri) {
            ctx.trail.routed(&withheld.upstream, Some(&kind));
            ctx.trail.decide(Decision::BlockedDrift);
            return Err(rescue::drift_blocked("resource", uri, withheld));
        }
        if let Some(owner) = fed.route_resource(uri) {
            ctx.trail.routed(owner, Some(&kind));
            return self.upstream_named(owner);
        }
        // Pinned, a URI no approved entry or template covers is not served:
        // guessing its upstream would reach unapproved resources.
        if self.hub.is_pinned() {
            return Err(
                RpcError::new(jsonrpc::LEGACY_RESOURCE_NOT_FOUND, "Resource not found")
                    .with_data(json!({"uri": uri})),
            );
        }
        let live = self.live();
        let mut offering = live
            .upstreams
            .iter()
            .filter(|u| u.connection().is_ok_and(|c| c.offers("resources")));
        match (offering.next(), offering.next()) {
            (Some(only), None) => {
                ctx.trail.routed(only.name(), None);
                Ok(Arc::clone(only))
            }
            _ => Err(
                RpcError::new(jsonrpc::LEGACY_RESOURCE_NOT_FOUND, "Resource not found")
                    .with_data(json!({"uri": uri})),
            ),
        }
    }

    async fn complete(&self, ctx: &RequestCtx, mut params: Value) -> Result<Value, RpcError> {
        let reference = params.get("ref").cloned().unwrap_or(Value::Null);
        let fed = self.federation();
        let upstream = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = reference
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let route = fed.route_prompt(name).cloned().ok_or_else(|| {
                    match fed.withheld(ListKind::Prompts, name) {
                        Some(withheld) => {
                            ctx.trail.routed(&withheld.upstream, Some(name));
                            ctx.trail.decide(Decision::BlockedDrift);
                            rescue::drift_blocked("prompt", name, withheld)
                        }
                        None => RpcError::invalid_params(format!("Unknown prompt: {name}")),
                    }
                })?;
                ctx.trail.routed(&route.upstream, Some(name));
                if let Some(r) = params.get_mut("ref").and_then(Value::as_object_mut) {
                    r.insert("name".into(), route.name.clone().into());
                }
                self.upstream_named(&route.upstream)?
            }
            Some("ref/resource") => {
                let uri = reference
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                match fed.template_owner(uri) {
                    Some(owner) => {
                        // `uri` is a template the catalog lists.
                        ctx.trail.routed(owner, Some(&audit::resource_kind(uri)));
                        self.upstream_named(owner)?
                    }
                    None => self.resource_owner(ctx, uri)?,
                }
            }
            _ => {
                return Err(RpcError::invalid_params(
                    "params.ref must be a ref/prompt or ref/resource",
                ));
            }
        };
        self.admit_upstream(ctx, upstream.name())?;
        let live = self.live();
        let boundary = self.boundary(&live, &upstream, Surface::Prompt, false);
        self.forward(
            ctx,
            &upstream,
            "completion/complete",
            &params.clone(),
            params,
            &boundary,
        )
        .await
    }

    /// Sets the level on every connected legacy upstream that offers
    /// logging (2026-07-28 moved the level into each request's `_meta`).
    async fn set_log_level(&self, ctx: &RequestCtx, params: Value) -> Result<Value, RpcError> {
        const LEVELS: [&str; 8] = [
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency",
        ];
        let Some(level) = params
            .get("level")
            .and_then(Value::as_str)
            .filter(|l| LEVELS.contains(l))
        else {
            return Err(RpcError::invalid_params(format!(
                "params.level must be one of {}",
                LEVELS.join(", ")
            )));
        };
        // Modern upstreams take the level per request: it goes with each of
        // this session's requests (see `forward`).
        if let Some(session) = &ctx.session {
            session.set_log_level(level);
        }
        for up in &self.live().upstreams {
            let Ok(conn) = up.connection() else { continue };
            if conn.description().era == Era::Legacy && conn.offers("logging") {
                let _ = conn
                    .request(
                        "logging/setLevel",
                        params.clone(),
                        &json!({}),
                        None,
                        self.live().config.server.request_timeout,
                        &[],
                    )
                    .await;
            }
        }
        Ok(json!({}))
    }

    /// `subscriptions/listen` (2026-07-28): acknowledge the filter, then
    /// send the `list_changed` notifications it asked for until the client
    /// closes the stream.
    async fn listen(&self, ctx: &RequestCtx, params: Value) -> Result<Value, RpcError> {
        let Some(link) = &ctx.link else {
            return Err(RpcError::invalid_params(
                "subscriptions/listen needs a stream",
            ));
        };
        let filter = params
            .get("notifications")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let wants = |key: &str| filter.get(key).and_then(Value::as_bool) == Some(true);
        let mut honoured = serde_json::Map::new();
        for key in [
            "toolsListChanged",
            "promptsListChanged",
            "resourcesListChanged",
        ] {
            if wants(key) {
                honoured.insert(key.into(), true.into());
            }
        }
        let meta = json!({protocol::META_SUBSCRIPTION_ID: ctx.request_id});
        let mut events = self.subscribe();
        let ack = jsonrpc::notification(
            "notifications/subscriptions/acknowledged",
            json!({"notifications": honoured, "_meta": meta}),
        );
        if !link.notify(ack).await {
            return Ok(json!({"_meta": meta}));
        }
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                () = link.closed() => return Ok(json!({"_meta": meta})),
                () = self.shutting_down() => return Ok(json!({"_meta": meta})),
            };
            let method = match event {
                Ok(ClientEvent::ListChanged(method)) => method,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return Ok(json!({"_meta": meta})),
            };
            let key = match method {
                "notifications/tools/list_changed" => "toolsListChanged",
                "notifications/prompts/list_changed" => "promptsListChanged",
                _ => "resourcesListChanged",
            };
            if honoured.contains_key(key) {
                let note = jsonrpc::notification(method, json!({"_meta": meta}));
                if !link.notify(note).await {
                    return Ok(json!({"_meta": meta}));
                }
            }
        }
    }

    fn upstream_named(&self, name: &str) -> Result<Arc<Upstream>, RpcError> {
        self.upstream(name).ok_or_else(|| {
            RpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!("no upstream named {name:?}"),
            )
        })
    }

    /// Forwards one request and relays what the upstream sends about it
    /// (progress, logging, server-to-client requests) to the client, until
    /// the answer comes or the request timeout passes.
    /// Forwards a request (`params` as the upstream must see it; the
    /// client's own `client_params` bind an MRTR state to what the client
    /// asked).
    async fn forward(
        &self,
        ctx: &RequestCtx,
        upstream: &Upstream,
        method: &str,
        client_params: &Value,
        mut params: Value,
        boundary: &Boundary<'_>,
    ) -> Result<Value, RpcError> {
        let conn = if self.bridge.is_resumption(ctx, method, &params) {
            None
        } else {
            Some(upstream.connection().map_err(|e| {
                ctx.trail.decide(Decision::UpstreamError);
                e.to_rpc()
            })?)
        };
        // A legacy client gets log messages unless it lowered the level; a
        // modern upstream sends them only for requests that carry a level.
        if let Some(conn) = &conn
            && ctx.era == Era::Legacy
            && conn.description().era == Era::Modern
        {
            let level = ctx
                .session
                .as_ref()
                .and_then(|s| s.log_level())
                .unwrap_or_else(|| DEFAULT_LOG_LEVEL.to_owned());
            set_meta(&mut params, protocol::META_LOG_LEVEL, level.into());
        }
        let span = match &conn {
            Some(_) => trace::upstream_span(upstream.name(), method, &mut params),
            None => tracing::Span::none(),
        };
        for _ in 0..MAX_INPUT_ROUNDS {
            let flight = match &conn {
                None => self.bridge.resume(ctx, method, client_params)?,
                Some(conn) => Flight::start(
                    Arc::clone(conn),
                    method,
                    params.clone(),
                    ctx,
                    self.live().config.server.request_timeout,
                    self.param_headers(ctx, method, client_params, &params),
                ),
            };
            let result = self
                .drive(ctx, method, client_params, flight, boundary)
                .instrument(span.clone())
                .await?;
            // A modern upstream asking a legacy client something: ask it
            // directly, then retry with its answers (MRTR, the other way).
            let input_required =
                result.get("resultType").and_then(Value::as_str) == Some("input_required");
            // A modern upstream's questions: the sensitive ones are
            // declined here, never shown (S-27).
            let declined = if input_required && conn.is_some() {
                self.decline_sensitive(&result)
            } else {
                serde_json::Map::new()
            };
            let asked = result
                .get("inputRequests")
                .and_then(Value::as_object)
                .map_or(0, serde_json::Map::len);
            if !declined.is_empty() && declined.len() == asked {
                answer_round(&mut params, &result, declined);
                continue;
            }
            if !declined.is_empty() && ctx.era == Era::Modern {
                ctx.trail.decide(Decision::RefusedElicitation);
                return Err(sensitive_elicitation_refused());
            }
            if !(input_required && ctx.era == Era::Legacy && conn.is_some()) {
                return Ok(result);
            }
            self.answer_for_legacy_client(ctx, &result, &mut params, declined)
                .await?;
        }
        Err(RpcError::new(
            jsonrpc::INTERNAL_ERROR,
            format!("the upstream asked for input more than {MAX_INPUT_ROUNDS} times"),
        ))
    }

    /// The `Mcp-Param-*` headers for a tool call to a modern HTTP upstream:
    /// those the tool's schema asks for, computed from the arguments, and
    /// any others the client sent (an intermediary forwards what it does not
    /// recognize; MCP-NOTES §4.4).
    fn param_headers(
        &self,
        ctx: &RequestCtx,
        method: &str,
        client_params: &Value,
        params: &Value,
    ) -> Vec<(String, String)> {
        if method != "tools/call" {
            return Vec::new();
        }
        let fed = self.federation();
        let exposed = client_params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let schema = fed
            .tool(exposed)
            .and_then(|t| t.get("inputSchema"))
            .unwrap_or(&Value::Null);
        let arguments = params.get("arguments").unwrap_or(&Value::Null);
        let declared = headers::declared(schema).unwrap_or_default();
        let mut out: Vec<(String, String)> = headers::values(&declared, arguments)
            .into_iter()
            .map(|m| (m.header, m.value))
            .collect();
        // The client's own headers for declared arguments are replaced by
        // the computed ones (or dropped, for an absent argument); the rest
        // are forwarded.
        for (name, value) in &ctx.param_headers {
            let is_declared = declared.iter().any(|d| {
                name.eq_ignore_ascii_case(&format!("{}{}", headers::PARAM_HEADER_PREFIX, d.name))
            });
            if !is_declared {
                out.push((name.clone(), value.clone()));
            }
        }
        out
    }

    /// Puts a legacy client's answers to an upstream's `inputRequests` into
    /// the retry's params, with the upstream's `requestState` echoed;
    /// `answers` already holds those sluice gave itself.
    async fn answer_for_legacy_client(
        &self,
        ctx: &RequestCtx,
        result: &Value,
        params: &mut Value,
        mut answers: serde_json::Map<String, Value>,
    ) -> Result<(), RpcError> {
        let requests = result.get("inputRequests").and_then(Value::as_object);
        for (key, request) in requests.into_iter().flatten() {
            if answers.contains_key(key) {
                continue;
            }
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let link = ctx
                .link
                .as_ref()
                .filter(|l| l.takes_requests() && bridge::declared(ctx, method));
            let Some(link) = link else {
                return Err(RpcError::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!(
                        "the upstream needs {method:?} from the client, which did not declare it"
                    ),
                ));
            };
            let question = request.get("params").cloned().unwrap_or(Value::Null);
            let answer = link
                .request(method, question, self.live().config.server.request_timeout)
                .await?;
            answers.insert(key.clone(), answer);
        }
        answer_round(params, result, answers);
        Ok(())
    }

    /// The upstream's `inputRequests` that are sensitive elicitations,
    /// answered `decline` (empty when the operator allows them).
    fn decline_sensitive(&self, result: &Value) -> serde_json::Map<String, Value> {
        let requests = result.get("inputRequests").and_then(Value::as_object);
        requests
            .into_iter()
            .flatten()
            .filter(|(_, request)| {
                let method = request.get("method").and_then(Value::as_str);
                let params = request.get("params").unwrap_or(&Value::Null);
                method.is_some_and(|m| self.is_sensitive_elicitation(m, params))
            })
            .map(|(key, _)| (key.clone(), json!({"action": "decline"})))
            .collect()
    }

    /// Whether a question from an upstream asks for a secret and must not
    /// reach the client (S-27); logged when it does.
    fn is_sensitive_elicitation(&self, method: &str, params: &Value) -> bool {
        if method != "elicitation/create"
            || self.live().config.sensitive_elicitation == SensitiveElicitation::Allow
        {
            return false;
        }
        let fields = elicitation::sensitive_fields(params);
        if !fields.is_empty() {
            tracing::warn!(
                ?fields,
                "refused an upstream's elicitation that asks for sensitive data ([policy] sensitive_elicitation = \"refuse\")"
            );
        }
        !fields.is_empty()
    }

    /// Answers a sensitive elicitation an upstream asked in flight with an
    /// error; anything else is passed on.
    fn screen(&self, item: Related) -> Option<Related> {
        match item {
            Related::Request {
                method,
                params,
                reply,
            } if self.is_sensitive_elicitation(&method, &params) => {
                let _ = reply.send(Err(sensitive_elicitation_refused()));
                None
            }
            other => Some(other),
        }
    }

    /// Drives a flight until the upstream answers, relaying what it sends
    /// meanwhile; a modern client's questions end the drive with an
    /// `input_required` result and the flight parked.
    async fn drive(
        &self,
        ctx: &RequestCtx,
        call: &str,
        params: &Value,
        mut flight: Flight,
        boundary: &Boundary<'_>,
    ) -> Result<Value, RpcError> {
        let may_park = ctx.era == Era::Modern && bridge::bridgeable(call);
        let token = params.pointer("/_meta/progressToken").cloned();
        let upstream_started = tokio::time::Instant::now();
        loop {
            tokio::select! {
                // What the upstream sent before its answer goes out first.
                biased;
                Some(item) = flight.related.recv() => {
                    let Some(item) = self.screen(item) else { continue };
                    let Related::Request { method, params: q, reply } = item else {
                        self.relay(ctx, item, token.as_ref()).await;
                        continue;
                    };
                    if !(may_park && bridge::declared(ctx, &method)) {
                        self.relay(ctx, Related::Request { method, params: q, reply }, None).await;
                        continue;
                    }
                    // Questions sent together are asked together.
                    let mut questions: Vec<Question> = vec![(method, q, reply)];
                    while let Ok(item) = flight.related.try_recv() {
                        let Some(item) = self.screen(item) else { continue };
                        match item {
                            Related::Request { method, params: q, reply } if bridge::declared(ctx, &method) => {
                                questions.push((method, q, reply));
                            }
                            other => self.relay(ctx, other, token.as_ref()).await,
                        }
                    }
                    let asking = self.bridge.park(ctx, call, params, flight, questions);
                    ctx.trail.upstream_took(upstream_started.elapsed());
                    return self.bounded(ctx, boundary, Ok(asking));
                }
                outcome = &mut flight.done => {
                    while let Ok(item) = flight.related.try_recv() {
                        self.relay(ctx, item, token.as_ref()).await;
                    }
                    ctx.trail.upstream_took(upstream_started.elapsed());
                    return match outcome {
                        Ok(outcome) => self.bounded(ctx, boundary, outcome),
                        Err(_) => Err(RpcError::new(jsonrpc::INTERNAL_ERROR, "the forwarded call ended without an answer")),
                    };
                }
            }
        }
    }

    /// An upstream's answer through the boundary: redacted, measured when a
    /// read, refused whole when too large.
    fn bounded(
        &self,
        ctx: &RequestCtx,
        boundary: &Boundary<'_>,
        outcome: Result<Value, UpstreamFailure>,
    ) -> Result<Value, RpcError> {
        let _policy = trace::policy_span().entered();
        let trail = &ctx.trail;
        let mut measured = None;
        let (answer, redactions) = match outcome {
            Ok(result) => {
                let bounded = boundary.result(result);
                if bounded.refused {
                    trail.decide(Decision::RefusedSize);
                }
                measured = bounded.measured;
                (bounded.answer, bounded.redactions)
            }
            Err(UpstreamFailure::Rpc(error)) => {
                trail.decide(Decision::UpstreamError);
                let (error, counts) = boundary.error(error);
                (Err(error), counts)
            }
            Err(too_large @ UpstreamFailure::TooLarge { .. }) => {
                let answer = boundary.oversized();
                trail.decide(if answer.is_some() {
                    Decision::RefusedSize
                } else {
                    Decision::UpstreamError
                });
                (
                    answer.unwrap_or_else(|| Err(too_large.to_rpc())),
                    Default::default(),
                )
            }
            Err(timeout @ UpstreamFailure::Timeout { .. }) => {
                trail.decide(Decision::Timeout);
                (Err(timeout.to_rpc()), Default::default())
            }
            Err(other) => {
                trail.decide(Decision::UpstreamError);
                (Err(other.to_rpc()), Default::default())
            }
        };
        if let Ok(result) = &answer
            && self.ops.sizes_answers()
        {
            trail.sized(measured.unwrap_or_else(|| budget::measure(result, usize::MAX - 1)));
        }
        metrics::redactions(&redactions);
        if redactions.total() > 0 {
            tracing::debug!(
                exact = redactions.exact,
                key = redactions.key,
                pattern = redactions.pattern,
                "secrets redacted from an answer"
            );
        }
        answer
    }

    /// Relays one related message to the client; progress carries the
    /// client's `token` (and is dropped when the request has none).
    async fn relay(&self, ctx: &RequestCtx, item: Related, token: Option<&Value>) {
        match item {
            Related::Notification(mut message) => {
                // Progress messages and log data are upstream text too.
                if let Some(params) = message.get_mut("params") {
                    metrics::redactions(&self.live().redactor.redact(params));
                }
                if message.get("method").and_then(Value::as_str) == Some("notifications/progress") {
                    match (token, message.pointer_mut("/params/progressToken")) {
                        (Some(token), Some(slot)) => *slot = token.clone(),
                        _ => return,
                    }
                }
                let is_log =
                    message.get("method").and_then(Value::as_str) == Some("notifications/message");
                if is_log && !ctx.wants_logs {
                    return;
                }
                if let Some(link) = &ctx.link {
                    let _ = link.notify(message).await;
                }
            }
            Related::Request {
                method,
                mut params,
                reply,
            } => {
                // Every question an upstream asks passes here or through
                // `drive`'s park: both refuse a form that asks for a secret.
                if self.is_sensitive_elicitation(&method, &params) {
                    let _ = reply.send(Err(sensitive_elicitation_refused()));
                    return;
                }
                // What an upstream asks a client (a sampling prompt, an
                // elicitation message) is upstream text too.
                metrics::redactions(&self.live().redactor.redact(&mut params));
                let declared = match method.as_str() {
                    "sampling/createMessage" => "sampling",
                    "elicitation/create" => "elicitation",
                    "roots/list" => "roots",
                    _ => "",
                };
                let can = ctx.era == Era::Legacy
                    && ctx
                        .client_capabilities
                        .get(declared)
                        .is_some_and(|c| !c.is_null())
                    && ctx.link.as_ref().is_some_and(|l| l.takes_requests());
                let link = ctx.link.clone().filter(|_| can);
                let Some(link) = link else {
                    // A modern client takes such requests only as MRTR
                    // rounds, which sluice does not bridge yet.
                    let _ = reply.send(Err(RpcError::new(
                        jsonrpc::METHOD_NOT_FOUND,
                        format!("the client cannot answer {method} through sluice"),
                    )));
                    return;
                };
                // The client's answer may take long: wait for it on its own
                // task so the upstream's answer keeps flowing meanwhile.
                let timeout = self.live().config.server.request_timeout;
                tokio::spawn(async move {
                    let _ = reply.send(link.request(&method, params, timeout).await);
                });
            }
        }
    }
}
