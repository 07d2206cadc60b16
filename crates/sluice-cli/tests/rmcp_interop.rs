//! sluice against the official Rust SDK (`rmcp` 3.11.0) as real peers: an
//! rmcp server as an upstream, and rmcp clients of both lifecycles
//! (`initialize` and `server/discover`) over stdio and Streamable HTTP.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

use common::*;
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, GetPromptRequestParams, GetPromptResult,
    Implementation, PaginatedRequestParams, PromptMessage, ProtocolVersion,
    ReadResourceRequestParams, Role, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{
    ClientCacheConfig, ClientLifecycleMode, ClientServiceExt, Json, ServerHandler, ServiceError,
    ServiceExt, prompt, prompt_handler, prompt_router, tool, tool_handler, tool_router,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Bounds every await: a bug fails the test instead of hanging it.
async fn within<F: Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {WAIT:?}"))
}

// === an rmcp server, used as an upstream ===

#[derive(serde::Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct AddArgs {
    /// The left operand.
    a: i64,
    /// The right operand.
    b: i64,
}

#[derive(serde::Serialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Sum {
    sum: i64,
}

#[derive(serde::Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct EchoArgs {
    text: String,
}

#[derive(serde::Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct GreetArgs {
    name: String,
}

#[derive(Clone)]
struct RsServer {
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

impl RsServer {
    fn new() -> Self {
        RsServer {
            tool_router: Self::tool_router(),
            prompt_router: Self::prompt_router(),
        }
    }
}

#[tool_router]
impl RsServer {
    #[tool(description = "Adds a and b; the sum is structured content.")]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Json<Sum> {
        Json(Sum { sum: a + b })
    }

    #[tool(description = "Echoes text back.")]
    async fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

#[prompt_router]
impl RsServer {
    #[prompt(description = "Greets someone by name.")]
    async fn greet(
        &self,
        Parameters(GreetArgs { name }): Parameters<GreetArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!("Please greet {name}."),
        )]
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for RsServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new("rs-upstream", "1.0.0"))
    }
}

/// The rmcp server behind rmcp's own Streamable HTTP service in axum, on a
/// free loopback port. Dropping it stops the server.
struct RsHttp {
    url: String,
    stop: CancellationToken,
}

impl Drop for RsHttp {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn start_rs_http() -> RsHttp {
    let stop = CancellationToken::new();
    let service: StreamableHttpService<RsServer, LocalSessionManager> = StreamableHttpService::new(
        || Ok(RsServer::new()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = within("bind", tokio::net::TcpListener::bind("127.0.0.1:0"))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let token = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { token.cancelled_owned().await })
            .await;
    });
    RsHttp {
        url: format!("http://{addr}/mcp"),
        stop,
    }
}

// === rmcp clients ===

type Client = RunningService<RoleClient, ClientConfig>;

#[derive(Clone, Copy, Debug)]
enum Lifecycle {
    /// `initialize` (rmcp's plain `serve`): 2025-11-25.
    Initialize,
    /// `server/discover` and per-request `_meta`: 2026-07-28.
    Discover,
}

impl Lifecycle {
    fn expected_version(self) -> ProtocolVersion {
        match self {
            Lifecycle::Initialize => ProtocolVersion::V_2025_11_25,
            Lifecycle::Discover => ProtocolVersion::V_2026_07_28,
        }
    }
}

fn client_config() -> ClientConfig {
    let mut config = ClientConfig::default();
    config.client_info = Implementation::new("sluice-rmcp-interop", "0");
    config
}

/// Connects an rmcp client over `transport` in `lifecycle`, with the
/// response cache off so every list really reaches the server.
async fn connect<T, E, A>(transport: T, lifecycle: Lifecycle) -> Client
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client = match lifecycle {
        Lifecycle::Initialize => within("initialize", client_config().serve(transport)).await,
        Lifecycle::Discover => {
            within(
                "server/discover",
                client_config().serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                ),
            )
            .await
        }
    }
    .unwrap_or_else(|e| panic!("rmcp client ({lifecycle:?}) failed to connect: {e:?}"));
    within(
        "cache config",
        client
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled()),
    )
    .await;
    client
}

fn http_transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(
        url.to_owned(),
    ))
}

/// Every tool, page by page, with a guard against cursor loops; also returns
/// the number of pages read.
async fn all_tools(client: &Client) -> (Vec<Tool>, usize) {
    let mut tools = Vec::new();
    let mut seen = BTreeSet::new();
    let mut cursor: Option<String> = None;
    for page in 1..=100 {
        let params = cursor
            .clone()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let result = within("tools/list", client.peer().list_tools(params))
            .await
            .unwrap_or_else(|e| panic!("tools/list page {page} (cursor {cursor:?}): {e:?}"));
        tools.extend(result.tools);
        match result.next_cursor {
            None => return (tools, page),
            Some(next) => {
                assert!(seen.insert(next.clone()), "cursor {next:?} came twice");
                cursor = Some(next);
            }
        }
    }
    panic!("tools/list did not end within 100 pages");
}

async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    within(
        name,
        client
            .peer()
            .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)),
    )
    .await
    .unwrap_or_else(|e| panic!("tools/call {name}: {e:?}"))
}

async fn get_prompt(client: &Client, name: &str, arguments: Value) -> GetPromptResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    within(
        name,
        client
            .peer()
            .get_prompt(GetPromptRequestParams::new(name).with_arguments(arguments)),
    )
    .await
    .unwrap_or_else(|e| panic!("prompts/get {name}: {e:?}"))
}

fn negotiated(client: &Client) -> ProtocolVersion {
    client.peer().peer_info().unwrap().protocol_version.clone()
}

async fn close(client: Client) {
    let _ = within("close", client.cancel()).await;
}

// === raw 2026-07-28 requests (to compare the wire, not rmcp's typed view) ===

/// A 2026-07-28 POST to `url`; returns the JSON-RPC response (JSON or SSE).
async fn modern_raw(url: &str, id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = modern_meta(json!({}));
    let mut req = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        req = req.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let resp = within(method, req.body(body.to_string()).send())
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{method} to {url}");
    let text = within(method, resp.text()).await.unwrap();
    // SSE data lines (skipping empty priming events), or one JSON body.
    let mut found: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    if found.is_empty() {
        found.push(serde_json::from_str(&text).unwrap());
    }
    found
        .into_iter()
        .find(|m| m.get("method").is_none() && m["id"] == json!(id))
        .unwrap_or_else(|| panic!("no response to {method} in {text}"))
}

/// A result as sluice serves it to a 2026-07-28 client carries
/// `_meta.io.modelcontextprotocol/serverInfo` naming sluice (the client talks
/// to sluice, not to the upstream). Checks that, then removes it (and a
/// `_meta` it leaves empty), so the rest can be compared with the upstream's.
fn strip_sluice_server_info(result: &mut Value) {
    let obj = result.as_object_mut().unwrap();
    let meta = obj
        .get_mut("_meta")
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no _meta in a modern result"));
    let info = meta
        .remove("io.modelcontextprotocol/serverInfo")
        .expect("serverInfo in _meta");
    assert_eq!(info["name"], json!("sluice"));
    if meta.is_empty() {
        obj.remove("_meta");
    }
}

/// An rmcp client's typed result through sluice equals the one the rmcp
/// server gave directly (for 2026-07-28, up to sluice's serverInfo).
fn assert_same<T: serde::Serialize>(lifecycle: Lifecycle, via: &T, direct: &T, what: &str) {
    let mut via = serde_json::to_value(via).unwrap();
    let direct = serde_json::to_value(direct).unwrap();
    if matches!(lifecycle, Lifecycle::Discover) {
        strip_sluice_server_info(&mut via);
    }
    assert_eq!(via, direct, "{lifecycle:?}: {what} via sluice vs direct");
}

// === 1. an rmcp server as an upstream ===

#[tokio::test(flavor = "multi_thread")]
async fn rmcp_server_as_an_http_upstream() {
    let rs = start_rs_http().await;
    let config = format!(
        "[server]\nrequest_timeout = \"10s\"\n[[upstream]]\nname = \"rs\"\nurl = \"{}\"\nallow_private = true\n",
        rs.url
    );
    let s = HttpSluice::start(&config).await;
    let h = s
        .wait_health(|h| {
            h["upstreams"]["rs"]["state"] == json!("ready")
                && h["upstreams"]["rs"]["catalog"] == json!("complete")
        })
        .await;
    assert_eq!(h["upstreams"]["rs"]["era"], json!("modern"), "{h}");
    assert_eq!(h["upstreams"]["rs"]["tools"], json!(2), "{h}");

    // The wire: the same results through sluice as from rmcp directly.
    let direct = modern_raw(&rs.url, 1, "tools/list", json!({})).await;
    let via = modern_raw(&s.url, 1, "tools/list", json!({})).await;
    let direct_tools = direct["result"]["tools"].as_array().unwrap().clone();
    let via_tools = via["result"]["tools"].as_array().unwrap().clone();
    assert_eq!(direct_tools.len(), 2, "{direct}");
    assert_eq!(via_tools.len(), 2, "{via}");
    for tool in &direct_tools {
        let mut renamed = tool.clone();
        renamed["name"] = json!(format!("rs__{}", tool["name"].as_str().unwrap()));
        assert!(
            via_tools.contains(&renamed),
            "{renamed} missing from {via_tools:?}"
        );
    }

    let calls = [
        ("add", json!({"a": 40, "b": 2})),
        ("echo", json!({"text": "héllo, rmcp"})),
    ];
    for (i, (tool, arguments)) in calls.iter().enumerate() {
        let id = 10 + i as i64;
        let direct = modern_raw(
            &rs.url,
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
        .await;
        let mut via = modern_raw(
            &s.url,
            id,
            "tools/call",
            json!({"name": format!("rs__{tool}"), "arguments": arguments}),
        )
        .await;
        assert!(direct.get("result").is_some(), "{direct}");
        strip_sluice_server_info(&mut via["result"]);
        assert_eq!(via, direct, "tools/call {tool}: via sluice vs direct");
    }
    let direct_add = modern_raw(
        &rs.url,
        20,
        "tools/call",
        json!({"name": "add", "arguments": {"a": 40, "b": 2}}),
    )
    .await;
    assert_eq!(
        direct_add["result"]["structuredContent"],
        json!({"sum": 42})
    );

    let direct = modern_raw(
        &rs.url,
        30,
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": "Ada"}}),
    )
    .await;
    let mut via = modern_raw(
        &s.url,
        30,
        "prompts/get",
        json!({"name": "rs__greet", "arguments": {"name": "Ada"}}),
    )
    .await;
    assert_eq!(
        direct["result"]["messages"][0]["content"]["text"],
        json!("Please greet Ada.")
    );
    strip_sluice_server_info(&mut via["result"]);
    assert_eq!(via, direct, "prompts/get via sluice vs direct");

    // rmcp clients of both lifecycles: sluice looks like the rmcp server
    // itself, up to the namespace.
    for lifecycle in [Lifecycle::Initialize, Lifecycle::Discover] {
        let direct = connect(http_transport(&rs.url), lifecycle).await;
        let via = connect(http_transport(&s.url), lifecycle).await;
        assert_eq!(negotiated(&direct), lifecycle.expected_version());
        assert_eq!(negotiated(&via), lifecycle.expected_version());

        let (mut direct_tools, _) = all_tools(&direct).await;
        let (via_tools, _) = all_tools(&via).await;
        for t in &mut direct_tools {
            t.name = format!("rs__{}", t.name).into();
        }
        direct_tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut via_sorted = via_tools.clone();
        via_sorted.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(via_sorted, direct_tools, "{lifecycle:?}: tools/list");

        let d = call(&direct, "add", json!({"a": 40, "b": 2})).await;
        let v = call(&via, "rs__add", json!({"a": 40, "b": 2})).await;
        assert_eq!(d.structured_content, Some(json!({"sum": 42})));
        assert_same(lifecycle, &v, &d, "rs__add");

        let d = call(&direct, "echo", json!({"text": "round trip"})).await;
        let v = call(&via, "rs__echo", json!({"text": "round trip"})).await;
        assert_eq!(
            serde_json::to_value(&d.content).unwrap(),
            json!([{"type": "text", "text": "round trip"}])
        );
        assert_same(lifecycle, &v, &d, "rs__echo");

        let d = get_prompt(&direct, "greet", json!({"name": "Ada"})).await;
        let v = get_prompt(&via, "rs__greet", json!({"name": "Ada"})).await;
        assert_same(lifecycle, &v, &d, "rs__greet");

        close(direct).await;
        close(via).await;
    }
}

// === 2. rmcp clients of sluice, both lifecycles, stdio and HTTP ===

fn fixture_config() -> String {
    format!(
        "[server]\nrequest_timeout = \"10s\"\n{}",
        fixture_upstream(
            "fx",
            &["--tools", "25", "--page-size", "7", "--resources", "12"]
        )
    )
}

/// What every rmcp client must see of sluice in front of the fixture.
async fn exercise(client: Client, lifecycle: Lifecycle) {
    assert_eq!(negotiated(&client), lifecycle.expected_version());

    let (tools, _pages) = all_tools(&client).await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(names.len(), 41, "{names:?}");
    assert_eq!(unique.len(), 41, "no tool twice: {names:?}");
    assert!(names.iter().all(|n| n.starts_with("fx__")), "{names:?}");
    for i in 0..25 {
        assert!(unique.contains(format!("fx__gen_{i:04}").as_str()));
    }
    // rmcp's own walk agrees.
    let all = within("list_all_tools", client.peer().list_all_tools())
        .await
        .unwrap();
    assert_eq!(all, tools);

    let text = format!("hello from rmcp ({lifecycle:?})");
    let r = call(&client, "fx__echo", json!({"text": text})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert_eq!(
        serde_json::to_value(&r.content).unwrap(),
        json!([{"type": "text", "text": text}])
    );

    // An unknown tool is a protocol error, -32602.
    let err = within(
        "tools/call fx__nope",
        client
            .peer()
            .call_tool(CallToolRequestParams::new("fx__nope")),
    )
    .await
    .expect_err("fx__nope does not exist");
    match err {
        ServiceError::McpError(e) => assert_eq!(e.code.0, -32602, "{e:?}"),
        other => panic!("fx__nope: {other:?}"),
    }

    // Prompts: namespaced, routed back.
    let prompts = within("prompts/list", client.peer().list_all_prompts())
        .await
        .unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["fx__greet", "fx__big_prompt"]);
    let r = get_prompt(&client, "fx__greet", json!({"name": "Ada"})).await;
    assert_eq!(
        serde_json::to_value(&r.messages).unwrap(),
        json!([{"role": "user", "content": {"type": "text", "text": "Hello, Ada"}}])
    );

    // Resources keep their URIs; every page arrives, in order.
    let resources = within("resources/list", client.peer().list_all_resources())
        .await
        .unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    let want: Vec<String> = (0..12).map(|i| format!("fixture://res/{i:04}")).collect();
    assert_eq!(uris, want);
    let templates = within(
        "resources/templates/list",
        client.peer().list_all_resource_templates(),
    )
    .await
    .unwrap();
    assert_eq!(templates.len(), 2);
    assert_eq!(templates[0].uri_template, "fixture://item/{id}");
    assert_eq!(templates[1].uri_template, "fixture://big/{bytes}");
    for (uri, text) in [
        ("fixture://res/0003", "resource 0003"),
        ("fixture://item/abc", "item abc"),
    ] {
        let r = within(
            uri,
            client
                .peer()
                .read_resource(ReadResourceRequestParams::new(uri)),
        )
        .await
        .unwrap_or_else(|e| panic!("resources/read {uri}: {e:?}"));
        assert_eq!(
            serde_json::to_value(&r.contents).unwrap(),
            json!([{"uri": uri, "mimeType": "text/plain", "text": text}])
        );
    }
    close(client).await;
}

async fn over_stdio(lifecycle: Lifecycle) {
    let (_dir, path) = write_config(&fixture_config());
    let mut cmd = tokio::process::Command::new(sluice_bin());
    cmd.args(["serve", "--stdio", "--config"])
        .arg(&path)
        .env("SLUICE_LOG", "warn");
    let transport = TokioChildProcess::new(cmd).unwrap();
    let client = connect(transport, lifecycle).await;
    exercise(client, lifecycle).await;
}

async fn over_http(lifecycle: Lifecycle) {
    let s = HttpSluice::start(&fixture_config()).await;
    s.wait_health(|h| {
        h["upstreams"]["fx"]["state"] == json!("ready")
            && h["upstreams"]["fx"]["catalog"] == json!("complete")
    })
    .await;
    let client = connect(http_transport(&s.url), lifecycle).await;
    exercise(client, lifecycle).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rmcp_initialize_client_over_stdio() {
    over_stdio(Lifecycle::Initialize).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rmcp_discover_client_over_stdio() {
    over_stdio(Lifecycle::Discover).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rmcp_initialize_client_over_http() {
    over_http(Lifecycle::Initialize).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rmcp_discover_client_over_http() {
    over_http(Lifecycle::Discover).await;
}
