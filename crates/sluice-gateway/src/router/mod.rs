//! The router: what sluice does with each client request, whatever the
//! transport, one concern a file.
//!
//! sluice answers the protocol's own methods itself (`server/discover`,
//! `ping`, the four lists from the federated catalog) and forwards the rest
//! to the upstream that owns the tool, prompt or resource, with names
//! translated back. Every decision on the way is `sluice_core::policy`'s,
//! taken on one `Snapshot` per request; a refusal is a
//! [`Denied`] until [`Gateway::handle`] turns it into the [`Reply`] the
//! transport writes.
//!
//! - `calls`: `tools/call` (meta-tools included) and `prompts/get`;
//! - `resources`: `resources/read`, `resources/subscribe` and
//!   `resources/unsubscribe`;
//! - `completions`: `completion/complete`;
//! - `logging`: `logging/setLevel`;
//! - `listen`: `subscriptions/listen` (2026-07-28);
//! - `tasks`: the tasks surface (`tasks/get`, ..., `tasks/list`);
//! - `lists`: every list a page at a time, and progressive mode's
//!   meta-tools;
//! - `forward`: one forwarded request driven to its answer, relaying what
//!   the upstream sends meanwhile, through the boundary.

mod calls;
mod completions;
mod forward;
mod listen;
mod lists;
mod logging;
mod resources;
mod tasks;

use std::sync::Arc;

use serde_json::{Value, json};
use sluice_core::access::Principal;
use sluice_core::audit::Decision;
use sluice_core::jsonrpc::RpcError;
use sluice_core::method::Method;
use sluice_core::payload::Payload;
use sluice_core::policy::Denied;
use sluice_core::protocol::{self, CacheHints, Era};
use tracing::Instrument;

use crate::client::{ClientSession, RequestCtx};
use crate::gateway::{Gateway, Snapshot};
use crate::offload;
use crate::ops::trace;
use crate::upstream::Upstream;

/// Caching hints on what sluice serves from its own catalog: the catalog is
/// the same for every client, and clients learn of changes through
/// `list_changed`, so they may cache it publicly; a TTL of 0 never lets a
/// cache outlive a change it was not told about.
const CATALOG_HINTS: CacheHints = CacheHints {
    ttl_ms: 0,
    public: true,
};

/// Hints on results forwarded from an upstream that gave none: sluice cannot
/// know whether they depend on who asks.
const FORWARDED_HINTS: CacheHints = CacheHints {
    ttl_ms: 0,
    public: false,
};

/// The longest a request waits for upstreams still starting.
const SETTLE_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(10);

/// What a transport writes for one request: the answer in the client's
/// era, and sluice's refusal when there was one (an HTTP answer takes its
/// status from it: `Denied::http_status`).
#[derive(Debug)]
pub struct Reply {
    /// The JSON-RPC result (a large one kept as its text) or error.
    pub answer: Result<Payload, RpcError>,
    /// Why there is no result of the upstream's, if so.
    pub refusal: Option<Denied>,
}

// === impl Snapshot ===

impl Snapshot {
    /// The running upstream `name`, for a route that names it.
    fn upstream(&self, name: &str) -> Result<Arc<Upstream>, Denied> {
        self.live
            .upstream(name)
            .cloned()
            .ok_or_else(|| Denied::NoSuchUpstream(name.to_owned()))
    }

    /// Whether only URIs the catalog lists or its templates match are
    /// routed (`policy::route::resource`'s `listed_only`): when pinned, and
    /// through a view, whose reads must stay inside it.
    fn listed_uris_only(&self, ctx: &RequestCtx) -> bool {
        self.live.lock.is_some() || ctx.view.is_some()
    }

    /// The running upstreams that have no complete catalog yet.
    fn unread(&self) -> Vec<&str> {
        self.live
            .upstreams
            .iter()
            .filter(|u| !u.has_catalog())
            .map(|u| u.name())
            .collect()
    }

    /// The connected upstreams that declare resources.
    fn offering_resources(&self) -> Vec<&str> {
        self.live
            .upstreams
            .iter()
            .filter(|u| u.connection().is_ok_and(|c| c.offers("resources")))
            .map(|u| u.name())
            .collect()
    }
}

// === impl Reply ===

impl Reply {
    /// What the audit log and the metrics record: the refusal's decision,
    /// else what the upstream's result says.
    pub(crate) fn decision(&self) -> Decision {
        match (&self.refusal, &self.answer) {
            (Some(denied), _) => denied.decision(),
            (None, Ok(result)) => Decision::of_result(result),
            // An error is always a refusal (see `Reply::new`).
            (None, Err(_)) => Decision::Invalid,
        }
    }

    /// The answer to `method` in `era`: a result shaped for the era, or the
    /// refusal converted (this is the one place a `Denied` becomes what
    /// the client reads).
    fn new(
        era: Era,
        method: Method,
        outcome: Result<Payload, Denied>,
        server_info: &Value,
    ) -> Reply {
        let hints = if method.serves_catalog() {
            CATALOG_HINTS
        } else {
            FORWARDED_HINTS
        };
        let name = method.name().unwrap_or_default();
        let shape = |mut result: Value| {
            protocol::shape_result(era, name, &mut result, hints, server_info);
            result
        };
        match outcome {
            Ok(Payload::Tree(result)) => Reply {
                answer: Ok(Payload::Tree(shape(result))),
                refusal: None,
            },
            // Text reaches here with a readable head (`answer::bound`):
            // shaping it does not fail.
            Ok(Payload::Text(text)) => {
                let shaped = offload::heavy(|| {
                    protocol::shape_result_text(era, name, text, hints, server_info)
                });
                match shaped {
                    Ok(shaped) => Reply {
                        answer: Ok(Payload::Text(shaped)),
                        refusal: None,
                    },
                    Err(_) => Reply::new(era, method, Err(Denied::ForwardLost), server_info),
                }
            }
            Err(denied) => Reply {
                answer: denied
                    .to_answer()
                    .map(|answer| Payload::Tree(shape(answer)))
                    .map_err(|e| protocol::shape_error(era, e)),
                refusal: Some(denied),
            },
        }
    }
}

impl Gateway {
    /// Handles one client request; the answer is shaped for `ctx.era`.
    pub async fn handle(&self, ctx: &RequestCtx, method: &str, params: Value) -> Reply {
        let span = trace::request_span(method, &params);
        let parsed = Method::parse(method);
        let in_flight = parsed.is_audited().then(|| {
            let view = ctx.view.as_deref();
            self.ops
                .start(method, view, &ctx.principal, &ctx.trail, &span)
        });
        let outcome = self
            .dispatch(ctx, parsed, method, params)
            .instrument(span.clone())
            .await;
        let reply = Reply::new(ctx.era, parsed, outcome, self.server_info());
        if let Some(in_flight) = in_flight {
            in_flight.answered(reply.decision(), &reply.answer);
        }
        reply
    }

    async fn dispatch(
        &self,
        ctx: &RequestCtx,
        method: Method,
        name: &str,
        params: Value,
    ) -> Result<Payload, Denied> {
        if method.waits_for_catalog() {
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
        if ctx.era == Era::Modern && method.removed_in_modern() {
            return Err(Denied::MethodNotFound(name.to_owned()));
        }
        let snap = self.snapshot(ctx.view.as_deref());
        match method {
            Method::CallTool => self.call_tool(ctx, &snap, params).await,
            Method::GetPrompt => self.get_prompt(ctx, &snap, params).await,
            Method::ReadResource => self.read_resource(ctx, &snap, params).await,
            Method::Complete => self.complete(ctx, &snap, params).await,
            _ => self
                .answer_tree(ctx, &snap, method, name, params)
                .await
                .map(Payload::Tree),
        }
    }

    /// The methods whose answers sluice reads or makes itself: always a
    /// tree.
    async fn answer_tree(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        method: Method,
        name: &str,
        params: Value,
    ) -> Result<Value, Denied> {
        match method {
            Method::Ping => Ok(json!({})),
            Method::Discover => Ok(self.discover_result()),
            Method::Subscribe => self.subscribe_resource(ctx, snap, params).await,
            Method::Unsubscribe => self.unsubscribe_resource(ctx, params),
            Method::SetLogLevel => self.set_log_level(ctx, snap, params).await,
            Method::Listen if ctx.era == Era::Modern => self.listen(ctx, snap, params).await,
            Method::List(kind) => {
                self.admit_list(ctx, snap, kind.method()).await?;
                self.list(snap, kind, &params, ctx.protocol_version())
            }
            Method::Task(task) => self.task(ctx, snap, task, params).await,
            Method::CallTool
            | Method::GetPrompt
            | Method::ReadResource
            | Method::Complete
            | Method::Initialize
            | Method::Listen
            | Method::Other => Err(Denied::MethodNotFound(name.to_owned())),
        }
    }

    /// What this request sees of the gateway (see [`Snapshot`]): taken
    /// once, passed down.
    pub(crate) fn snapshot(&self, view: Option<&str>) -> Arc<Snapshot> {
        self.hub.snapshot(view)
    }

    /// The capabilities sluice offers a client of `era` speaking `version`:
    /// everything it can route (tasks when an upstream runs them).
    pub(crate) fn server_capabilities(&self, era: Era, version: &str) -> Value {
        let mut capabilities = json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "completions": {},
            "logging": {},
        });
        if let Some(tasks) = self.tasks_capability(era, version) {
            match era {
                Era::Legacy => capabilities["tasks"] = tasks,
                Era::Modern => {
                    capabilities["extensions"] = json!({ sluice_core::tasks::EXTENSION: tasks });
                }
            }
        }
        capabilities
    }

    fn discover_result(&self) -> Value {
        json!({
            "supportedVersions": protocol::supported_versions(),
            "capabilities": self.server_capabilities(Era::Modern, protocol::MODERN_VERSION),
        })
    }

    /// A legacy `initialize` through `view`: the answer, and the session it
    /// opens (which already receives the gateway's events for its
    /// standalone stream, the `list_changed` of its view's catalog).
    pub fn initialize(
        &self,
        params: &Value,
        principal: Arc<Principal>,
        view: Option<Arc<str>>,
    ) -> (Value, Arc<ClientSession>) {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = protocol::negotiate_legacy(requested);
        let result = json!({
            "protocolVersion": version,
            "capabilities": self.server_capabilities(Era::Legacy, version),
            "serverInfo": self.server_info(),
        });
        let caps = params
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let session = ClientSession::new(version.to_owned(), caps, principal, view);
        session.forward_events(self.subscribe());
        (result, session)
    }
}
