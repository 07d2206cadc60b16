//! Transport-independent protocol handling: message classification, per-request era choice,
//! envelope validation, method dispatch and result shaping.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};

use crate::bulk::{Bulk, ReplyText};
use crate::catalog::{self, CursorEncoding};
use crate::list_tool;
use crate::listen::Subscriptions;
use crate::peer::{Out, OutTx, Peer, Reply};
use crate::resource_subs::ResourceSubs;
use crate::{Config, CursorMode, EraMode, Violation};

/// The 2026 protocol version.
pub const MODERN_VERSION: &str = "2026-07-28";
/// Legacy versions `initialize` accepts (the first is the one offered otherwise).
pub const LEGACY_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// `_meta` key carrying the protocol version of a modern request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key carrying the client capabilities of a modern request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The era a single request is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28: stateless, `resultType` on every result, caching hints on lists.
    Modern,
    /// 2025-x: `initialize` handshake, server→client requests allowed.
    Legacy,
}

/// A JSON-RPC error.
#[derive(Debug, Clone)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(-32601, "Method not found").with_data(json!({"method": method}))
    }

    /// The JSON-RPC error object.
    pub fn to_value(&self) -> Value {
        let mut err = json!({"code": self.code, "message": self.message});
        if let (Some(data), Some(obj)) = (&self.data, err.as_object_mut()) {
            obj.insert("data".into(), data.clone());
        }
        err
    }
}

/// A JSON-RPC success response.
pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC error response.
pub fn error_response(id: &Value, err: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": err.to_value()})
}

/// A result as produced by a handler.
#[derive(Debug, Clone)]
pub enum Payload {
    /// A JSON value (serialized by serde_json).
    Json(Value),
    /// Raw JSON text of an object, written out verbatim. serde_json (even with
    /// `arbitrary_precision`) rewrites exponents (`1e400` → `1e+400`), so results that must
    /// keep every byte are kept as text.
    Raw(String),
    /// Raw JSON text of an object too big to build whole (`huge_read`, `huge_write`): written
    /// out in chunks as it is produced.
    Bulk(Bulk),
}

impl From<Value> for Payload {
    fn from(v: Value) -> Self {
        Payload::Json(v)
    }
}

/// What kind of JSON-RPC message an incoming value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    /// A response to one of our server→client requests.
    Response,
    /// Not a JSON-RPC message we understand (answered with -32600).
    Invalid,
}

/// Classifies an incoming message.
pub fn classify(msg: &Value) -> Kind {
    let Some(obj) = msg.as_object() else {
        return Kind::Invalid;
    };
    match (
        obj.get("method").map(Value::is_string),
        obj.contains_key("id"),
    ) {
        (Some(true), true) => Kind::Request,
        (Some(true), false) => Kind::Notification,
        (None, true) if obj.contains_key("result") || obj.contains_key("error") => Kind::Response,
        _ => Kind::Invalid,
    }
}

/// The method of a message ("" if none).
pub fn method(msg: &Value) -> &str {
    msg.get("method").and_then(Value::as_str).unwrap_or("")
}

/// `params._meta` of a message, if any.
pub fn meta(msg: &Value) -> Option<&Map<String, Value>> {
    msg.get("params")?.get("_meta")?.as_object()
}

/// `params._meta.progressToken`, if any.
pub fn progress_token(msg: &Value) -> Option<&Value> {
    meta(msg)?.get("progressToken").filter(|t| !t.is_null())
}

/// Everything a request handler may use to talk to the client besides its final answer.
#[derive(Clone)]
pub struct ReqCtx {
    pub era: Era,
    /// The stream related to this request: progress, server→client requests, garbage lines and
    /// (sent by the spawner) the final response. On stdio this is stdout itself.
    pub out: OutTx,
    /// The connection/session, for server→client requests and unsolicited notifications.
    /// `None` for modern requests (stateless: no server-initiated requests, and list_changed is
    /// only delivered on `subscriptions/listen` streams, see `listen`).
    pub peer: Option<Arc<Peer>>,
    /// The connection this request is registered with for `notifications/cancelled` (stdio, and
    /// legacy HTTP sessions), whatever the era. Set by [`spawn_request`].
    pub tracker: Option<Arc<Peer>>,
    /// Names (lowercase, sorted, unique) of the `Mcp-Param-*` headers of the HTTP request;
    /// empty on stdio.
    pub param_headers: Vec<String>,
}

/// The fixture server: configuration plus the little mutable state it has.
pub struct Fixture {
    pub cfg: Config,
    /// How many tools `add_tool` has registered.
    added: AtomicUsize,
    /// How many times page 1 of tools/list has been served (`--drift-each-read`).
    first_page_reads: AtomicUsize,
    /// The tool list, built once per `added` count: a 10,000-tool catalog
    /// is not rebuilt for each of its pages.
    tools: Mutex<(usize, Arc<Vec<Value>>)>,
    /// Open `subscriptions/listen` requests.
    pub subs: Subscriptions,
    /// Legacy `resources/subscribe` state (process-wide).
    pub resource_subs: ResourceSubs,
    /// The opaque cursors `list_items` (`--list-tool`) has issued.
    pub list_cursors: list_tool::Cursors,
}

/// Methods whose 2026 results carry caching hints that `--violate cache-hints` strips
/// (`server/discover` keeps its own).
const HINTED_METHODS: [&str; 5] = [
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "resources/read",
];

impl Fixture {
    pub fn new(cfg: Config) -> Self {
        let tools = Mutex::new((0, Arc::new(build_tools(&cfg, 0))));
        Self {
            cfg,
            tools,
            added: AtomicUsize::new(0),
            first_page_reads: AtomicUsize::new(0),
            subs: Subscriptions::default(),
            resource_subs: ResourceSubs::default(),
            list_cursors: list_tool::Cursors::default(),
        }
    }

    /// Appends a request to the `--record` file, if any.
    pub fn record(&self, msg: &Value, traceparent: Option<&str>) {
        let Some(path) = &self.cfg.record else { return };
        let line = json!({
            "method": method(msg),
            "params": msg.get("params").cloned().unwrap_or(Value::Null),
            "traceparent": traceparent,
        });
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()));
        if let Err(e) = appended {
            eprintln!("sluice-fixture: cannot record to {}: {e}", path.display());
        }
    }

    /// Every tool, in list order.
    fn tools(&self) -> Arc<Vec<Value>> {
        let added = self.added.load(Ordering::SeqCst);
        let mut cached = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if cached.0 != added {
            *cached = (added, Arc::new(build_tools(&self.cfg, added)));
        }
        Arc::clone(&cached.1)
    }

    fn page_size(&self) -> Option<usize> {
        self.cfg.page_size.map(NonZeroUsize::get)
    }

    /// The page of a protocol list that `cursor` designates (cursors spelled as
    /// `--violate raw-cursor` says). Under `--violate accept-any-cursor` a cursor we never
    /// issued is page 1 instead of -32602.
    fn paginate(
        &self,
        items: &[Value],
        cursor: Option<&Value>,
        mode: CursorMode,
    ) -> Result<catalog::Page, RpcError> {
        let encoding = if self.cfg.violates(Violation::RawCursor) {
            CursorEncoding::RawOffset
        } else {
            CursorEncoding::Opaque
        };
        let page = |cursor| {
            catalog::paginate_with(
                items,
                cursor,
                self.page_size(),
                mode,
                self.cfg.cycle_length,
                encoding,
            )
        };
        match page(cursor) {
            Err(_) if self.cfg.violates(Violation::AcceptAnyCursor) => page(None),
            other => other,
        }
    }

    /// `serverInfo` (without `version` under `--violate no-version`).
    pub fn server_info(&self) -> Value {
        if self.cfg.violates(Violation::NoVersion) {
            json!({"name": "sluice-fixture"})
        } else {
            server_info()
        }
    }

    /// Registers one more `added_N` tool and tells the open `subscriptions/listen` streams that
    /// asked for `toolsListChanged`; returns its name. (Legacy list_changed is the caller's job.)
    pub fn add_tool(&self) -> String {
        let name = catalog::added_name(self.added.fetch_add(1, Ordering::SeqCst));
        self.subs.tools_changed();
        name
    }

    /// Whether `name` is a generated or added tool.
    pub fn has_dynamic_tool(&self, name: &str) -> bool {
        let gen_ok = name
            .strip_prefix("gen_")
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|i| i < self.cfg.tools && catalog::gen_name(i) == name);
        let added_ok = name
            .strip_prefix("added_")
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|i| {
                i < self.added.load(Ordering::SeqCst) && catalog::added_name(i) == name
            });
        gen_ok || added_ok
    }

    /// The era a request is served in. Dual: `initialize` opens legacy, `server/discover` and
    /// anything with a `_meta` protocol version is modern, everything else is legacy.
    pub fn era_of(&self, msg: &Value) -> Era {
        match self.cfg.era {
            EraMode::Modern => Era::Modern,
            EraMode::Legacy => Era::Legacy,
            EraMode::Dual => {
                let m = method(msg);
                if m == "initialize" {
                    Era::Legacy
                } else if m == "server/discover"
                    || meta(msg).is_some_and(|m| m.contains_key(META_PROTOCOL_VERSION))
                {
                    Era::Modern
                } else {
                    Era::Legacy
                }
            }
        }
    }

    /// Versions named in `-32022` errors.
    fn supported_versions(&self) -> Vec<&'static str> {
        let mut v = vec![MODERN_VERSION];
        if self.cfg.era == EraMode::Dual {
            v.extend(LEGACY_VERSIONS);
        }
        v
    }

    /// Checks the per-request `_meta` of a modern request: the protocol version must be present
    /// (else -32602) and supported (else -32022). `initialize` sent to a modern-only server also
    /// gets -32022, naming the supported versions.
    pub fn check_modern_envelope(&self, msg: &Value) -> Result<(), RpcError> {
        let unsupported = |requested: Value| {
            RpcError::new(-32022, "Unsupported protocol version")
                .with_data(json!({"supported": self.supported_versions(), "requested": requested}))
        };
        if method(msg) == "initialize" {
            let requested = msg
                .get("params")
                .and_then(|p| p.get("protocolVersion"))
                .cloned()
                .unwrap_or(Value::Null);
            return Err(unsupported(requested));
        }
        match meta(msg).and_then(|m| m.get(META_PROTOCOL_VERSION)) {
            None => Err(RpcError::invalid_params(format!(
                "Missing params._meta[\"{META_PROTOCOL_VERSION}\"]"
            ))),
            Some(Value::String(v)) if v == MODERN_VERSION => Ok(()),
            // `--violate echo-unknown-version`: served as if it were supported.
            Some(_) if self.cfg.violates(Violation::EchoUnknownVersion) => Ok(()),
            Some(other) => Err(unsupported(other.clone())),
        }
    }

    /// Handles a client notification. `notifications/cancelled` stops the named request (without
    /// answering it; a `subscriptions/listen` ends at once); everything else
    /// (`notifications/initialized`, ...) is accepted and ignored.
    pub fn handle_notification(&self, msg: &Value, peer: &Peer) {
        if method(msg) == "notifications/cancelled"
            && let Some(id) = msg.get("params").and_then(|p| p.get("requestId"))
        {
            self.subs.cancel(peer, id);
            peer.cancel(id);
        }
    }

    /// Handles one request and returns the JSON-RPC response to send, or `None` for none.
    /// Tools like `hang` make this never return; `crash` exits the process.
    pub async fn handle(self: &Arc<Self>, msg: Value, ctx: ReqCtx) -> Option<Reply> {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let result = match ctx.era {
            Era::Modern => match self.check_modern_envelope(&msg) {
                Ok(()) => self
                    .modern(&msg, &ctx)
                    .await
                    .map(|p| self.break_modern_result(method(&msg), p)),
                Err(e) => Err(e),
            },
            Era::Legacy => self.legacy(&msg, &ctx).await,
        };
        Some(match result {
            Ok(Payload::Json(r)) => Reply {
                text: ReplyText::Whole(response(&id, r).to_string()),
                error_code: None,
            },
            Ok(Payload::Raw(raw)) => Reply {
                text: ReplyText::Whole(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{raw}}}"#)),
                error_code: None,
            },
            // `id` before `result`, like the others: a reader can route it before the bulk.
            Ok(Payload::Bulk(bulk)) => Reply {
                text: ReplyText::Bulk(
                    bulk.wrap(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#), "}"),
                ),
                error_code: None,
            },
            Err(e) => Reply {
                text: ReplyText::Whole(error_response(&id, &e).to_string()),
                error_code: Some(e.code),
            },
        })
    }

    /// `--violate result-type` and `--violate cache-hints` applied to a 2026 result of
    /// `method`. (A raw or bulk `tools/call` result never got its `resultType` spliced in.)
    fn break_modern_result(&self, method: &str, payload: Payload) -> Payload {
        let Payload::Json(mut result) = payload else {
            return payload;
        };
        if let Some(obj) = result.as_object_mut() {
            if self.cfg.violates(Violation::ResultType) {
                obj.shift_remove("resultType");
            }
            if self.cfg.violates(Violation::CacheHints) && HINTED_METHODS.contains(&method) {
                obj.shift_remove("ttlMs");
                obj.shift_remove("cacheScope");
            }
        }
        Payload::Json(result)
    }

    /// Methods of the 2026 era.
    async fn modern(self: &Arc<Self>, msg: &Value, ctx: &ReqCtx) -> Result<Payload, RpcError> {
        let params = msg.get("params").cloned().unwrap_or_else(|| json!({}));
        match method(msg) {
            "server/discover" => Ok(cacheable(
                json!({
                    "supportedVersions": [MODERN_VERSION],
                    "capabilities": capabilities(Era::Modern),
                    "_meta": {"io.modelcontextprotocol/serverInfo": self.server_info()},
                }),
                Era::Modern,
            )
            .into()),
            "tools/call" => {
                let payload = crate::tools::call(self, &params, ctx).await?;
                if self.cfg.violates(Violation::ResultType) {
                    Ok(payload)
                } else {
                    Ok(complete_payload(payload, Era::Modern))
                }
            }
            // Acknowledges, then stays open (no response) until cancelled.
            "subscriptions/listen" => {
                let id = msg.get("id").cloned().unwrap_or(Value::Null);
                self.subs.listen(&id, &params, ctx).await
            }
            m => self.common(m, &params, ctx).await.map(Payload::from),
        }
    }

    /// Methods of the 2025 era.
    async fn legacy(self: &Arc<Self>, msg: &Value, ctx: &ReqCtx) -> Result<Payload, RpcError> {
        let params = msg.get("params").cloned().unwrap_or_else(|| json!({}));
        match method(msg) {
            "initialize" => {
                let requested = params.get("protocolVersion").and_then(Value::as_str);
                // `--violate echo-unknown-version`: whatever was asked for is "agreed".
                let echo_any = self.cfg.violates(Violation::EchoUnknownVersion);
                let version = requested
                    .filter(|v| echo_any || LEGACY_VERSIONS.contains(v))
                    .unwrap_or(LEGACY_VERSIONS[0]);
                let version = if self.cfg.violates(Violation::BadVersionEcho) {
                    "2024-99-99"
                } else {
                    version
                };
                Ok(json!({
                    "protocolVersion": version,
                    "capabilities": capabilities(Era::Legacy),
                    "serverInfo": self.server_info(),
                })
                .into())
            }
            "ping" => Ok(json!({}).into()),
            "tools/call" => crate::tools::call(self, &params, ctx).await,
            // Removed in 2026 (they fall through to -32601 there).
            "resources/subscribe" => self.resource_subs.handle(true, &params).map(Payload::from),
            "resources/unsubscribe" => self.resource_subs.handle(false, &params).map(Payload::from),
            m => self.common(m, &params, ctx).await.map(Payload::from),
        }
    }

    /// The page of tools/list that `cursor` designates, with the discovery faults applied
    /// (`--fail-page`, `--duplicate-tool`, `--drift-each-read`, `--description-suffix`).
    /// `Ok(None)`: this page is never answered (`--hang-page`).
    fn tools_page(&self, cursor: Option<&Value>) -> Result<Option<catalog::Page>, RpcError> {
        let tools = self.tools();
        let first_tool = tools.first().cloned();
        let mut page = self.paginate(&tools, cursor, self.cfg.cursor_mode)?;
        let is = |flag: Option<NonZeroUsize>| flag.map(NonZeroUsize::get) == Some(page.number);
        if is(self.cfg.hang_page) {
            return Ok(None);
        }
        if is(self.cfg.fail_page) {
            let message = format!("fixture: page {} fails on purpose", page.number);
            return Err(RpcError::new(-32603, message));
        }
        if self.cfg.duplicate_tool
            && page.next.is_none()
            && let Some(first) = first_tool
        {
            page.items.push(first);
        }
        let mut suffix = self
            .cfg
            .description_suffix
            .as_ref()
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        if self.cfg.drift_each_read {
            // Counted per served page 1, i.e. per catalog read, whoever reads.
            let reads = if page.number == 1 {
                self.first_page_reads.fetch_add(1, Ordering::SeqCst) + 1
            } else {
                self.first_page_reads.load(Ordering::SeqCst)
            };
            suffix.push_str(&format!(" (read {reads})"));
        }
        if !suffix.is_empty() {
            for tool in page.items.iter_mut().filter(|t| t["name"] == "echo") {
                if let Some(Value::String(description)) = tool.get_mut("description") {
                    description.push_str(&suffix);
                }
            }
        }
        Ok(Some(page))
    }

    /// Methods that behave the same in both eras apart from result shaping.
    async fn common(&self, method: &str, params: &Value, ctx: &ReqCtx) -> Result<Value, RpcError> {
        let era = ctx.era;
        let cursor = params.get("cursor");
        let list = |key: &str, items: Vec<Value>| {
            let page = self.paginate(&items, cursor, CursorMode::Normal)?;
            Ok(list_result(key, page, era))
        };
        match method {
            "tools/list" => match self.tools_page(cursor)? {
                Some(page) => Ok(list_result("tools", page, era)),
                // Every request runs in its own task on both transports, so this holds up
                // nothing else; `notifications/cancelled` (or a closed modern HTTP response)
                // aborts the task without an answer.
                None => std::future::pending().await,
            },
            "resources/list" => list("resources", catalog::all_resources(self.cfg.resources)),
            "resources/templates/list" => list("resourceTemplates", catalog::all_templates()),
            "prompts/list" => list("prompts", catalog::all_prompts()),
            "resources/read" => {
                let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
                // The unlisted `fixture://subscriptions` and `fixture://touch/*` first.
                let text = self
                    .resource_subs
                    .read(uri, ctx.peer.as_ref())
                    .or_else(|| catalog::read_resource(uri, self.cfg.resources));
                match text {
                    Some(text) => Ok(cacheable(
                        json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}),
                        era,
                    )),
                    None => {
                        // 2025 uses -32002 Resource not found; 2026 uses -32602.
                        let code = if era == Era::Modern { -32602 } else { -32002 };
                        Err(RpcError::new(code, "Resource not found")
                            .with_data(json!({"uri": uri})))
                    }
                }
            }
            "prompts/get" => {
                let name = params.get("name").and_then(Value::as_str).unwrap_or("");
                let empty = json!({});
                let args = params.get("arguments").unwrap_or(&empty);
                Ok(complete(catalog::get_prompt(name, args)?, era))
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

/// A list result: the page's items under `key`, plus `nextCursor` unless it is the last page.
fn list_result(key: &str, page: catalog::Page, era: Era) -> Value {
    let mut result = Map::new();
    result.insert(key.into(), Value::Array(page.items));
    if let Some(next) = page.next {
        result.insert("nextCursor".into(), next);
    }
    cacheable(Value::Object(result), era)
}

/// Capabilities advertised in `server/discover` (modern) and `initialize` (legacy, which also
/// supports `resources/subscribe`).
fn capabilities(era: Era) -> Value {
    let resources = match era {
        Era::Modern => json!({}),
        Era::Legacy => json!({"subscribe": true}),
    };
    json!({"tools": {"listChanged": true}, "resources": resources, "prompts": {}})
}

/// The whole tool list as configured: the fixed tools, `list_items` (`--list-tool`), then the
/// generated and added ones; `echo` changed by `--violate output-schema`.
fn build_tools(cfg: &Config, added: usize) -> Vec<Value> {
    let mut tools = catalog::all_tools(cfg.tools, added, cfg.varied_descriptions);
    if let Some(mode) = cfg.list_tool {
        let at = catalog::fixed_tool_count().min(tools.len());
        tools.insert(at, list_tool::definition(mode));
    }
    if cfg.violates(Violation::OutputSchema) {
        catalog::declare_echo_output_schema(&mut tools);
    }
    tools
}

fn server_info() -> Value {
    json!({"name": "sluice-fixture", "version": env!("CARGO_PKG_VERSION")})
}

/// Adds `resultType: "complete"` to a modern result (appended, and only if absent so that an
/// `input_required` result stays one). Legacy results are left alone.
pub fn complete(mut result: Value, era: Era) -> Value {
    if era == Era::Modern
        && let Some(obj) = result.as_object_mut()
        && !obj.contains_key("resultType")
    {
        obj.insert("resultType".into(), json!("complete"));
    }
    result
}

/// [`complete`] for a [`Payload`]: raw text (and a bulk result's tail) gets
/// `"resultType":"complete"` spliced in before its closing brace.
pub fn complete_payload(payload: Payload, era: Era) -> Payload {
    match payload {
        Payload::Json(v) => Payload::Json(complete(v, era)),
        Payload::Raw(raw) if era == Era::Modern => Payload::Raw(splice_result_type(&raw)),
        Payload::Bulk(mut bulk) if era == Era::Modern => {
            bulk.tail = splice_result_type(&bulk.tail);
            Payload::Bulk(bulk)
        }
        other => other,
    }
}

/// `raw` (JSON text ending with an object's closing brace) with `"resultType":"complete"` as
/// the object's last member.
fn splice_result_type(raw: &str) -> String {
    let body = raw.trim_end();
    let body = body.strip_suffix('}').unwrap_or(body).trim_end();
    let sep = if body.ends_with('{') { "" } else { "," };
    format!(r#"{body}{sep}"resultType":"complete"}}"#)
}

/// Like [`complete`], plus the caching hints `ttlMs: 0, cacheScope: "public"`.
fn cacheable(result: Value, era: Era) -> Value {
    let mut result = complete(result, era);
    if era == Era::Modern
        && let Some(obj) = result.as_object_mut()
    {
        obj.insert("ttlMs".into(), json!(0));
        obj.insert("cacheScope".into(), json!("public"));
    }
    result
}

/// Spawns the handling of one request; its response (if any) is sent on `ctx.out` as
/// [`Out::Response`]. If `tracker` is given the work is registered there for cancellation.
pub fn spawn_request(
    fx: &Arc<Fixture>,
    msg: Value,
    mut ctx: ReqCtx,
    tracker: Option<&Arc<Peer>>,
) -> tokio::task::JoinHandle<()> {
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    ctx.tracker = tracker.cloned();
    let fx = Arc::clone(fx);
    let work = async move {
        let out = ctx.out.clone();
        if let Some(resp) = fx.handle(msg, ctx).await {
            let _ = out.send(Out::Response(resp));
        }
    };
    match tracker {
        Some(peer) => peer.spawn_tracked(&id, work),
        None => tokio::spawn(work),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use clap::Parser;

    use super::*;

    #[test]
    fn classify_messages() {
        assert_eq!(
            classify(&json!({"jsonrpc":"2.0","id":1,"method":"x"})),
            Kind::Request
        );
        assert_eq!(
            classify(&json!({"jsonrpc":"2.0","method":"x"})),
            Kind::Notification
        );
        assert_eq!(
            classify(&json!({"jsonrpc":"2.0","id":1,"result":{}})),
            Kind::Response
        );
        assert_eq!(
            classify(&json!({"jsonrpc":"2.0","id":1,"error":{}})),
            Kind::Response
        );
        assert_eq!(classify(&json!([1])), Kind::Invalid);
        assert_eq!(classify(&json!({"id":1})), Kind::Invalid);
    }

    #[test]
    fn raw_payload_gets_result_type_spliced() {
        let Payload::Raw(r) = complete_payload(Payload::Raw(r#"{"a":1e400}"#.into()), Era::Modern)
        else {
            panic!("not raw")
        };
        assert_eq!(r, r#"{"a":1e400,"resultType":"complete"}"#);
        let Payload::Raw(r) = complete_payload(Payload::Raw("{}".into()), Era::Modern) else {
            panic!("not raw")
        };
        assert_eq!(r, r#"{"resultType":"complete"}"#);
    }

    #[test]
    fn bulk_payload_gets_result_type_in_its_tail() {
        let bulk = || Payload::Bulk(Bulk::text_result(3));
        let Payload::Bulk(modern) = complete_payload(bulk(), Era::Modern) else {
            panic!("not bulk")
        };
        assert_eq!(
            ReplyText::Bulk(modern).into_string(),
            r#"{"content":[{"type":"text","text":"xxx"}],"resultType":"complete"}"#
        );
        let Payload::Bulk(legacy) = complete_payload(bulk(), Era::Legacy) else {
            panic!("not bulk")
        };
        assert_eq!(legacy, Bulk::text_result(3));
    }

    #[tokio::test]
    async fn bulk_response_puts_the_id_first() {
        let fx = Arc::new(fixture(&[]));
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let ctx = ReqCtx {
            era: Era::Legacy,
            out: tx,
            peer: None,
            tracker: None,
            param_headers: Vec::new(),
        };
        let msg = json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call",
                         "params": {"name": "huge_write", "arguments": {"bytes": 2}}});
        let reply = fx.handle(msg, ctx).await.unwrap();
        assert!(matches!(reply.text, ReplyText::Bulk(_)));
        assert_eq!(
            reply.text.into_string(),
            r#"{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"xx"}]}}"#
        );
    }

    #[test]
    fn serde_json_rewrites_exponents() {
        // Why `Payload::Raw` exists: even with arbitrary_precision, `1e400` does not survive.
        let v: Value = serde_json::from_str(r#"{"x":1e400,"y":1.50,"z":-0}"#).unwrap();
        assert_eq!(v.to_string(), r#"{"x":1e+400,"y":1.50,"z":-0}"#);
    }

    fn fixture(args: &[&str]) -> Fixture {
        let argv = std::iter::once("sluice-fixture").chain(args.iter().copied());
        let cfg = Config::try_parse_from(argv).unwrap();
        cfg.check_combinations().unwrap();
        Fixture::new(cfg)
    }

    /// How a walk of tools/list ended.
    #[derive(Debug)]
    enum End {
        /// A page without `nextCursor`.
        Last,
        Error(RpcError),
        Hang,
        /// Still going after the maximum number of pages.
        GaveUp,
    }

    /// Walks tools/list from page 1 like a client would, for at most `max` pages: the pages
    /// answered, and how the walk ended.
    fn walk(fx: &Fixture, max: usize) -> (Vec<catalog::Page>, End) {
        let mut pages: Vec<catalog::Page> = Vec::new();
        while pages.len() < max {
            let cursor = pages.last().and_then(|p| p.next.as_ref());
            let page = match fx.tools_page(cursor) {
                Ok(Some(page)) => page,
                Ok(None) => return (pages, End::Hang),
                Err(e) => return (pages, End::Error(e)),
            };
            let last = page.next.is_none();
            pages.push(page);
            if last {
                return (pages, End::Last);
            }
        }
        (pages, End::GaveUp)
    }

    fn tool_names(pages: &[catalog::Page]) -> Vec<&str> {
        pages
            .iter()
            .flat_map(|p| &p.items)
            .map(|t| t["name"].as_str().unwrap())
            .collect()
    }

    fn echo_description(page: &catalog::Page) -> &str {
        let echo = page.items.iter().find(|t| t["name"] == "echo").unwrap();
        echo["description"].as_str().unwrap()
    }

    #[test]
    fn fail_page_fails_every_walk_at_that_page() {
        let fx = fixture(&["--page-size", "3", "--fail-page", "3"]);
        for _ in 0..2 {
            let (pages, end) = walk(&fx, 10);
            assert_eq!(pages.len(), 2);
            let End::Error(e) = end else {
                panic!("expected an error, got {end:?}")
            };
            assert_eq!(e.code, -32603);
            assert_eq!(e.message, "fixture: page 3 fails on purpose");
        }
        // A page beyond the list never fails: the walk just ends.
        let fx = fixture(&["--page-size", "3", "--fail-page", "9"]);
        assert!(matches!(walk(&fx, 10), (pages, End::Last) if pages.len() == 6));
    }

    #[test]
    fn hang_page_hangs_every_walk_at_that_page() {
        let fx = fixture(&["--page-size", "4", "--hang-page", "2"]);
        for _ in 0..2 {
            assert!(matches!(walk(&fx, 10), (pages, End::Hang) if pages.len() == 1));
        }
    }

    #[test]
    fn page_faults_follow_the_cursor_in_a_cycle() {
        // Pages 2 and 3 repeat; page 3 fails on the first pass already.
        let fx = fixture(&[
            "--page-size",
            "2",
            "--cursor-mode",
            "cycle",
            "--fail-page",
            "3",
        ]);
        assert!(matches!(walk(&fx, 10), (pages, End::Error(_)) if pages.len() == 2));
        let fx = fixture(&["--page-size", "2", "--cursor-mode", "cycle"]);
        assert!(matches!(walk(&fx, 10), (_, End::GaveUp)));
    }

    #[test]
    fn duplicate_tool_repeats_the_first_tool_on_the_last_page() {
        let fx = fixture(&["--page-size", "4", "--duplicate-tool"]);
        let (pages, end) = walk(&fx, 10);
        assert!(matches!(end, End::Last));
        let names = tool_names(&pages);
        assert_eq!(names.len(), 17, "16 tools + the duplicate");
        assert_eq!(names.iter().filter(|n| **n == "echo").count(), 2);
        assert_eq!(pages.len(), 4);
        assert_eq!(pages[3].items.last(), pages[0].items.first());

        let fx = fixture(&["--duplicate-tool"]);
        let (pages, _) = walk(&fx, 10);
        let names = tool_names(&pages);
        assert_eq!((pages.len(), names.len()), (1, 17));
        assert_eq!((names[0], names[16]), ("echo", "echo"));

        let (pages, _) = walk(&fixture(&[]), 10);
        assert_eq!(
            tool_names(&pages).len(),
            16,
            "no duplicate without the flag"
        );
    }

    #[test]
    fn drift_each_read_changes_the_description_per_read() {
        let fx = fixture(&["--page-size", "4", "--drift-each-read"]);
        let (first, _) = walk(&fx, 10);
        let (second, _) = walk(&fx, 10);
        let base = "Echoes `text` back as a text block.";
        assert_eq!(echo_description(&first[0]), format!("{base} (read 1)"));
        assert_eq!(echo_description(&second[0]), format!("{base} (read 2)"));
        // Only the echo tool drifts.
        assert_eq!(first[0].items[1..], second[0].items[1..]);
        assert_eq!(first[1].items, second[1].items);
    }

    #[test]
    fn description_suffix_is_appended() {
        let fx = fixture(&["--description-suffix", "(v2)"]);
        let (pages, _) = walk(&fx, 1);
        let expected = "Echoes `text` back as a text block. (v2)";
        assert_eq!(echo_description(&pages[0]), expected);

        let fx = fixture(&["--description-suffix", "(v2)", "--drift-each-read"]);
        let (pages, _) = walk(&fx, 1);
        assert_eq!(echo_description(&pages[0]), format!("{expected} (read 1)"));

        let (pages, _) = walk(&fixture(&[]), 1);
        let plain = "Echoes `text` back as a text block.";
        assert_eq!(echo_description(&pages[0]), plain);
    }

    #[test]
    fn discovery_flag_requirements() {
        let parse = |args: &[&str]| {
            let argv = std::iter::once("sluice-fixture").chain(args.iter().copied());
            Config::try_parse_from(argv).map_err(|e| e.kind())
        };
        use clap::error::ErrorKind;
        for flag in ["--fail-page", "--hang-page"] {
            assert_eq!(
                parse(&[flag, "2"]).err(),
                Some(ErrorKind::MissingRequiredArgument)
            );
            assert!(parse(&[flag, "0", "--page-size", "2"]).is_err());
            assert!(parse(&[flag, "2", "--page-size", "2"]).is_ok());
        }
        assert!(
            parse(&[
                "--cursor-mode",
                "cycle",
                "--page-size",
                "2",
                "--cycle-length",
                "1"
            ])
            .is_err()
        );
        let cfg = parse(&["--page-size", "2", "--cycle-length", "3"]).unwrap();
        assert!(
            cfg.check_combinations().is_err(),
            "needs --cursor-mode cycle"
        );
        let cfg = parse(&["--page-size", "2"]).unwrap();
        assert_eq!(cfg.cycle_length, crate::DEFAULT_CYCLE_LENGTH);
        assert!(cfg.check_combinations().is_ok());
    }

    // --- --violate and --list-tool ------------------------------------------------------

    /// A request in the 2026 era (its `_meta` names `version`).
    fn modern_req_v(method: &str, mut params: Value, version: &str) -> Value {
        params["_meta"] = json!({
            META_PROTOCOL_VERSION: version,
            META_CLIENT_CAPABILITIES: {}
        });
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    }

    fn modern_req(method: &str, params: Value) -> Value {
        modern_req_v(method, params, MODERN_VERSION)
    }

    fn legacy_req(method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    }

    /// Serves `msg` in `era`: the response, and the notifications sent before it.
    async fn serve(fx: &Arc<Fixture>, era: Era, msg: Value) -> (Value, Vec<Value>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let ctx = ReqCtx {
            era,
            out: tx,
            peer: None,
            tracker: None,
            param_headers: Vec::new(),
        };
        let reply = fx.handle(msg, ctx).await.unwrap();
        let mut notes = Vec::new();
        while let Ok(Out::Msg(m)) = rx.try_recv() {
            notes.push(m);
        }
        let resp = serde_json::from_str(&reply.text.into_string()).unwrap();
        (resp, notes)
    }

    async fn result(fx: &Arc<Fixture>, era: Era, msg: Value) -> Value {
        let (resp, _) = serve(fx, era, msg).await;
        assert!(resp.get("error").is_none(), "unexpected error: {resp}");
        resp["result"].clone()
    }

    async fn error_code(fx: &Arc<Fixture>, era: Era, msg: Value) -> i64 {
        let (resp, _) = serve(fx, era, msg).await;
        resp["error"]["code"].as_i64().unwrap()
    }

    fn call(name: &str, args: Value) -> Value {
        json!({"name": name, "arguments": args})
    }

    fn text(result: &Value) -> &str {
        result["content"][0]["text"].as_str().unwrap()
    }

    #[test]
    fn violate_is_repeatable_and_comma_delimited() {
        let argv = [
            "sluice-fixture",
            "--violate",
            "result-type,cache-hints",
            "--violate",
            "secret",
        ];
        let cfg = Config::try_parse_from(argv).unwrap();
        assert_eq!(
            cfg.violate,
            [
                Violation::ResultType,
                Violation::CacheHints,
                Violation::Secret
            ]
        );
        assert!(cfg.violates(Violation::Secret) && !cfg.violates(Violation::BigRead));
        assert!(Config::try_parse_from(["sluice-fixture", "--violate", "nope"]).is_err());
        assert!(
            Config::try_parse_from(["sluice-fixture"])
                .unwrap()
                .violate
                .is_empty()
        );
        // The cursor violations need pages to show.
        for rule in ["accept-any-cursor", "raw-cursor"] {
            let cfg = Config::try_parse_from(["sluice-fixture", "--violate", rule]).unwrap();
            assert!(cfg.check_combinations().is_err(), "{rule}");
            let paged = ["sluice-fixture", "--violate", rule, "--page-size", "3"];
            let cfg = Config::try_parse_from(paged).unwrap();
            assert!(cfg.check_combinations().is_ok(), "{rule}");
        }
    }

    #[tokio::test]
    async fn result_type_is_stripped_from_every_modern_result() {
        let requests = [
            modern_req("server/discover", json!({})),
            modern_req("tools/list", json!({})),
            modern_req("prompts/list", json!({})),
            modern_req("resources/read", json!({"uri": "fixture://item/a"})),
            modern_req("tools/call", call("echo", json!({"text": "a"}))),
            // Raw and bulk results (spliced otherwise).
            modern_req("tools/call", call("lossless", json!({}))),
            modern_req("tools/call", call("huge_read", json!({"bytes": 3}))),
        ];
        let plain = Arc::new(fixture(&[]));
        let broken = Arc::new(fixture(&["--violate", "result-type"]));
        for msg in requests {
            let good = result(&plain, Era::Modern, msg.clone()).await;
            assert_eq!(good["resultType"], "complete", "{msg}");
            let bad = result(&broken, Era::Modern, msg.clone()).await;
            assert!(bad.get("resultType").is_none(), "{msg}: {bad}");
        }
        // Only that rule: caching hints stay.
        let list = result(&broken, Era::Modern, modern_req("tools/list", json!({}))).await;
        assert_eq!(
            (&list["ttlMs"], &list["cacheScope"]),
            (&json!(0), &json!("public"))
        );
        let echo = modern_req("tools/call", call("echo", json!({"text": "a"})));
        let echo = result(&broken, Era::Modern, echo).await;
        assert_eq!(echo, json!({"content": [{"type": "text", "text": "a"}]}));
    }

    #[tokio::test]
    async fn cache_hints_are_stripped_from_lists_and_reads() {
        let hinted = [
            modern_req("tools/list", json!({})),
            modern_req("resources/list", json!({})),
            modern_req("resources/templates/list", json!({})),
            modern_req("prompts/list", json!({})),
            modern_req("resources/read", json!({"uri": "fixture://item/a"})),
        ];
        let plain = Arc::new(fixture(&[]));
        let broken = Arc::new(fixture(&["--violate", "cache-hints"]));
        for msg in hinted {
            let good = result(&plain, Era::Modern, msg.clone()).await;
            assert!(good.get("ttlMs").is_some() && good.get("cacheScope").is_some());
            let bad = result(&broken, Era::Modern, msg.clone()).await;
            assert!(bad.get("ttlMs").is_none(), "{msg}: {bad}");
            assert!(bad.get("cacheScope").is_none(), "{msg}: {bad}");
            assert_eq!(bad["resultType"], "complete", "only the hints go");
        }
        let discover = modern_req("server/discover", json!({}));
        let discover = result(&broken, Era::Modern, discover).await;
        assert_eq!(discover["ttlMs"], 0, "server/discover keeps its hints");
    }

    #[tokio::test]
    async fn no_version_drops_the_server_info_version() {
        let init = || {
            legacy_req(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
            )
        };
        let discover = || modern_req("server/discover", json!({}));
        let info = "/_meta/io.modelcontextprotocol~1serverInfo";
        let plain = Arc::new(fixture(&[]));
        let r = result(&plain, Era::Legacy, init()).await;
        assert_eq!(r["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
        let r = result(&plain, Era::Modern, discover()).await;
        assert_eq!(
            r.pointer(info).unwrap()["version"],
            env!("CARGO_PKG_VERSION")
        );

        let broken = Arc::new(fixture(&["--violate", "no-version"]));
        let r = result(&broken, Era::Legacy, init()).await;
        assert_eq!(r["serverInfo"], json!({"name": "sluice-fixture"}));
        let r = result(&broken, Era::Modern, discover()).await;
        assert_eq!(r.pointer(info).unwrap(), &json!({"name": "sluice-fixture"}));
    }

    #[tokio::test]
    async fn output_schema_echo_answers_a_mismatch() {
        let echo_call = || modern_req("tools/call", call("echo", json!({"text": "a"})));
        let plain = Arc::new(fixture(&[]));
        assert_eq!(
            plain.tools()[0],
            json!({"name": "echo", "description": "Echoes `text` back as a text block.",
                   "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                   "required": ["text"]}})
        );
        let r = result(&plain, Era::Modern, echo_call()).await;
        assert!(r.get("structuredContent").is_none());
        assert_eq!(text(&r), "a");

        let broken = Arc::new(fixture(&["--violate", "output-schema"]));
        let def = &broken.tools()[0];
        assert_eq!(
            def["outputSchema"],
            json!({"type": "object", "properties": {"text": {"type": "string"}},
                   "required": ["text"]})
        );
        assert_eq!(def["annotations"]["readOnlyHint"], true);
        let r = result(&broken, Era::Modern, echo_call()).await;
        assert_eq!(r["structuredContent"], json!({"text": 42}));
        assert!(
            r["structuredContent"]["text"].is_number(),
            "does not match the schema"
        );
        assert_eq!(text(&r), r#"{"text":42}"#);
    }

    #[tokio::test]
    async fn unknown_tool_codes() {
        for era in [Era::Modern, Era::Legacy] {
            let msg = || match era {
                Era::Modern => modern_req("tools/call", call("no_such_tool", json!({}))),
                Era::Legacy => legacy_req("tools/call", call("no_such_tool", json!({}))),
            };
            let plain = Arc::new(fixture(&[]));
            assert_eq!(error_code(&plain, era, msg()).await, -32602);
            let reserved = Arc::new(fixture(&["--violate", "reserved-code"]));
            assert_eq!(error_code(&reserved, era, msg()).await, -32050);
            for args in [
                &["--violate", "unknown-tool-result"][..],
                &["--violate", "unknown-tool-result,reserved-code"],
            ] {
                let as_result = Arc::new(fixture(args));
                let r = result(&as_result, era, msg()).await;
                assert_eq!(r["isError"], true);
                assert_eq!(text(&r), "Unknown tool: no_such_tool");
            }
        }
    }

    #[tokio::test]
    async fn echo_unknown_version_agrees_to_anything() {
        let init = legacy_req(
            "initialize",
            json!({"protocolVersion": "1999-01-01", "capabilities": {}}),
        );
        let list = modern_req_v("tools/list", json!({}), "1999-01-01");
        let plain = Arc::new(fixture(&[]));
        let r = result(&plain, Era::Legacy, init.clone()).await;
        assert_eq!(r["protocolVersion"], "2025-11-25");
        assert_eq!(error_code(&plain, Era::Modern, list.clone()).await, -32022);

        let broken = Arc::new(fixture(&["--violate", "echo-unknown-version"]));
        let r = result(&broken, Era::Legacy, init).await;
        assert_eq!(r["protocolVersion"], "1999-01-01");
        let r = result(&broken, Era::Modern, list).await;
        assert_eq!(r["tools"].as_array().map(Vec::len), Some(16));
        // A supported version is still answered as such.
        let init = legacy_req(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
        );
        assert_eq!(
            result(&broken, Era::Legacy, init).await["protocolVersion"],
            "2025-06-18"
        );
    }

    #[tokio::test]
    async fn big_read_and_secret_change_read_only_answers() {
        let read_big = || modern_req("tools/call", call("read_big", json!({"bytes": 1})));
        let lossless = || modern_req("tools/call", call("lossless", json!({})));
        let has_secrets = |t: &str| {
            let token_ok = t.split("ghp_").nth(1).is_some_and(|rest| {
                rest.len() >= 36 && rest.bytes().take(36).all(|b| b.is_ascii_alphanumeric())
            });
            t.contains("AKIAIOSFODNN7EXAMPLE") && token_ok
        };
        let plain = Arc::new(fixture(&[]));
        assert_eq!(text(&result(&plain, Era::Modern, read_big()).await), "x");
        assert_eq!(text(&result(&plain, Era::Modern, lossless()).await), "kept");

        let big = Arc::new(fixture(&["--violate", "big-read"]));
        let r = result(&big, Era::Modern, read_big()).await;
        assert_eq!(text(&r).len(), 2 * 1024 * 1024);
        assert!(!has_secrets(text(&r)));

        let leaky = Arc::new(fixture(&["--violate", "secret"]));
        for msg in [read_big(), lossless()] {
            let r = result(&leaky, Era::Modern, msg.clone()).await;
            assert!(has_secrets(text(&r)), "{msg}");
        }
        assert!(text(&result(&leaky, Era::Modern, read_big()).await).starts_with("x "));
        // `ghp_` is followed by exactly 36 alphanumerics.
        let token = crate::tools::FAKE_SECRETS.split("ghp_").nth(1).unwrap();
        assert_eq!(token.len(), 36);
        assert!(token.bytes().all(|b| b.is_ascii_alphanumeric()));
    }

    /// The (token, progress) of each progress notification.
    fn progress_of(notes: &[Value]) -> Vec<(Value, u64)> {
        notes
            .iter()
            .map(|n| {
                assert_eq!(n["method"], "notifications/progress");
                let p = &n["params"];
                (p["progressToken"].clone(), p["progress"].as_u64().unwrap())
            })
            .collect()
    }

    #[tokio::test]
    async fn bad_progress_uses_another_token_and_counts_down() {
        let with_token = |name: &str, args: Value| {
            let mut msg = modern_req("tools/call", call(name, args));
            msg["params"]["_meta"]["progressToken"] = json!("t");
            msg
        };
        let progress = || with_token("progress", json!({"steps": 3, "delay_ms": 0}));
        let list = || with_token("list_items", json!({}));
        let plain = Arc::new(fixture(&["--list-tool", "good"]));
        let (_, notes) = serve(&plain, Era::Modern, progress()).await;
        let t = json!("t");
        assert_eq!(
            progress_of(&notes),
            [(t.clone(), 1), (t.clone(), 2), (t.clone(), 3)]
        );
        let (resp, notes) = serve(&plain, Era::Modern, list()).await;
        assert_eq!(progress_of(&notes), [(t.clone(), 1), (t.clone(), 2)]);
        assert!(resp["result"]["structuredContent"]["items"].is_array());
        // No token, no progress.
        let quiet = modern_req("tools/call", call("list_items", json!({})));
        assert!(serve(&plain, Era::Modern, quiet).await.1.is_empty());

        let broken = Arc::new(fixture(&[
            "--list-tool",
            "good",
            "--violate",
            "bad-progress",
        ]));
        let wrong = json!("t-not-yours");
        let (_, notes) = serve(&broken, Era::Modern, progress()).await;
        assert_eq!(
            progress_of(&notes),
            [(wrong.clone(), 3), (wrong.clone(), 2), (wrong.clone(), 1)]
        );
        let (_, notes) = serve(&broken, Era::Modern, list()).await;
        assert_eq!(progress_of(&notes), [(wrong.clone(), 2), (wrong, 1)]);
    }

    #[tokio::test]
    async fn list_tool_is_listed_after_the_fixed_tools_and_called() {
        let names = |fx: &Fixture| -> Vec<String> {
            fx.tools()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        };
        let plain = fixture(&["--tools", "1"]);
        assert_eq!(names(&plain).len(), 17);
        assert!(!names(&plain).contains(&"list_items".to_owned()));
        let fx = Arc::new(fixture(&["--tools", "1", "--list-tool", "good"]));
        let listed = names(&fx);
        assert_eq!(listed.len(), 18);
        assert_eq!(
            (listed[16].as_str(), listed[17].as_str()),
            ("list_items", "gen_0000")
        );
        assert_eq!(fx.tools()[16]["annotations"]["readOnlyHint"], true);
        let unbounded = fixture(&["--list-tool", "unbounded"]);
        let limit = &unbounded.tools()[16]["inputSchema"]["properties"]["limit"];
        assert!(limit.get("maximum").is_none());

        // Called through tools/call, in both eras.
        let page = result(
            &fx,
            Era::Modern,
            modern_req("tools/call", call("list_items", json!({}))),
        )
        .await;
        assert_eq!(page["resultType"], "complete");
        let items = page["structuredContent"]["items"].as_array().unwrap();
        assert_eq!((items.len(), &items[0]["id"]), (20, &json!("item-000")));
        let cursor = page["structuredContent"]["nextCursor"].clone();
        let next = legacy_req("tools/call", call("list_items", json!({"cursor": cursor})));
        let next = result(&fx, Era::Legacy, next).await;
        assert_eq!(next["structuredContent"]["items"][0]["id"], "item-020");
        let bad = modern_req("tools/call", call("list_items", json!({"cursor": "nope"})));
        assert_eq!(error_code(&fx, Era::Modern, bad).await, -32602);
        // Without --list-tool it is an unknown tool.
        let plain = Arc::new(plain);
        let msg = modern_req("tools/call", call("list_items", json!({})));
        assert_eq!(error_code(&plain, Era::Modern, msg).await, -32602);
    }

    #[tokio::test]
    async fn raw_cursor_spells_offsets_in_every_protocol_list() {
        let fx = fixture(&["--page-size", "4", "--violate", "raw-cursor"]);
        let (pages, end) = walk(&fx, 10);
        assert!(matches!(end, End::Last));
        let cursors: Vec<&Value> = pages.iter().filter_map(|p| p.next.as_ref()).collect();
        assert_eq!(cursors, [&json!("4"), &json!("8"), &json!("12")]);
        assert_eq!(tool_names(&pages).len(), 16);

        let fx = Arc::new(fixture(&[
            "--resources",
            "6",
            "--page-size",
            "4",
            "--violate",
            "raw-cursor",
        ]));
        let r = result(&fx, Era::Modern, modern_req("resources/list", json!({}))).await;
        assert_eq!(r["nextCursor"], "4");

        let (pages, _) = walk(&fixture(&["--page-size", "4"]), 10);
        assert_eq!(pages[0].next, Some(json!("fx1.4")), "opaque by default");
    }

    #[tokio::test]
    async fn accept_any_cursor_serves_page_one() {
        let plain = fixture(&["--page-size", "4"]);
        for bogus in [json!("bogus"), json!(""), json!(7)] {
            let err = plain.tools_page(Some(&bogus)).err().map(|e| e.code);
            assert_eq!(err, Some(-32602), "{bogus}");
        }
        let fx = fixture(&["--page-size", "4", "--violate", "accept-any-cursor"]);
        let first = fx.tools_page(None).unwrap().unwrap();
        for bogus in [json!("bogus"), json!(""), json!(7)] {
            let page = fx.tools_page(Some(&bogus)).unwrap().unwrap();
            assert_eq!((page.number, &page.items), (1, &first.items), "{bogus}");
        }
        // Real cursors still work.
        let (pages, end) = walk(&fx, 10);
        assert!(matches!(end, End::Last) && pages.len() == 4);
        let fx = Arc::new(fixture(&[
            "--page-size",
            "1",
            "--violate",
            "accept-any-cursor",
        ]));
        let msg = modern_req("prompts/list", json!({"cursor": "bogus"}));
        let r = result(&fx, Era::Modern, msg).await;
        assert_eq!(r["prompts"][0]["name"], "greet");
    }

    #[test]
    fn complete_keeps_input_required() {
        let r = complete(json!({"resultType": "input_required"}), Era::Modern);
        assert_eq!(r["resultType"], "input_required");
        let r = complete(json!({"a": 1}), Era::Legacy);
        assert!(r.get("resultType").is_none());
    }
}
