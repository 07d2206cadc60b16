//! Transport-independent protocol handling: message classification, per-request era choice,
//! envelope validation, method dispatch and result shaping.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};

use crate::bulk::{Bulk, ReplyText};
use crate::catalog;
use crate::listen::Subscriptions;
use crate::peer::{Out, OutTx, Peer, Reply};
use crate::resource_subs::ResourceSubs;
use crate::{Config, CursorMode, EraMode};

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
}

impl Fixture {
    pub fn new(cfg: Config) -> Self {
        let tools = Mutex::new((
            0,
            Arc::new(catalog::all_tools(cfg.tools, 0, cfg.varied_descriptions)),
        ));
        Self {
            cfg,
            tools,
            added: AtomicUsize::new(0),
            first_page_reads: AtomicUsize::new(0),
            subs: Subscriptions::default(),
            resource_subs: ResourceSubs::default(),
        }
    }

    /// Every tool, in list order.
    fn tools(&self) -> Arc<Vec<Value>> {
        let added = self.added.load(Ordering::SeqCst);
        let mut cached = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if cached.0 != added {
            *cached = (
                added,
                Arc::new(catalog::all_tools(
                    self.cfg.tools,
                    added,
                    self.cfg.varied_descriptions,
                )),
            );
        }
        Arc::clone(&cached.1)
    }

    fn page_size(&self) -> Option<usize> {
        self.cfg.page_size.map(NonZeroUsize::get)
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
                Ok(()) => self.modern(&msg, &ctx).await,
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

    /// Methods of the 2026 era.
    async fn modern(self: &Arc<Self>, msg: &Value, ctx: &ReqCtx) -> Result<Payload, RpcError> {
        let params = msg.get("params").cloned().unwrap_or_else(|| json!({}));
        match method(msg) {
            "server/discover" => Ok(cacheable(
                json!({
                    "supportedVersions": [MODERN_VERSION],
                    "capabilities": capabilities(Era::Modern),
                    "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
                }),
                Era::Modern,
            )
            .into()),
            "tools/call" => Ok(complete_payload(
                crate::tools::call(self, &params, ctx).await?,
                Era::Modern,
            )),
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
                let version = requested
                    .filter(|v| LEGACY_VERSIONS.contains(v))
                    .unwrap_or(LEGACY_VERSIONS[0]);
                Ok(json!({
                    "protocolVersion": version,
                    "capabilities": capabilities(Era::Legacy),
                    "serverInfo": server_info(),
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
        let mut page = catalog::paginate(
            &tools,
            cursor,
            self.page_size(),
            self.cfg.cursor_mode,
            self.cfg.cycle_length,
        )?;
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
            let page = catalog::paginate(
                &items,
                cursor,
                self.page_size(),
                CursorMode::Normal,
                self.cfg.cycle_length,
            )?;
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

    #[test]
    fn complete_keeps_input_required() {
        let r = complete(json!({"resultType": "input_required"}), Era::Modern);
        assert_eq!(r["resultType"], "input_required");
        let r = complete(json!({"a": 1}), Era::Legacy);
        assert!(r.get("resultType").is_none());
    }
}
