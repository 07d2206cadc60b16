//! `sluice doctor`'s shell: connect to a server the way sluice connects to
//! an upstream, make the requests the plan allows, record what comes back
//! as [`Observations`], and let `sluice_core::doctor` judge.
//!
//! Besides the session the upstream connector opens, a few probes need a
//! raw request the connector would never send: a handshake naming an
//! unknown protocol version (on a fresh process or HTTP request), and over
//! HTTP a foreign `Origin`, a bad `MCP-Protocol-Version` and an
//! unauthenticated `GET /health`.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use serde_json::{Value, json};
use sluice_core::boundary::redact::{DEFAULT_SECRET_KEYS, Redactor};
use sluice_core::config::{Config, Source, UpstreamConfig, UpstreamTransport};
use sluice_core::discovery::{CatalogRead, IncompleteReason, ListKind, ReadProgress};
use sluice_core::doctor::observe::{
    Call, CatalogOutcome, HttpProbes, ListToolProbe, Observations, Outcome, Transport,
};
use sluice_core::doctor::{Report, ServerName, detect, plan};
use sluice_core::jsonrpc::RpcError;
use sluice_core::protocol::{self, Era};
use sluice_core::sandbox::Sandboxing;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec};
use tokio_util::sync::CancellationToken;

use crate::gateway::{NAME, VERSION};
use crate::upstream::{self, Connection, Related, Settings};
use sluice_core::policy::UpstreamFailure;

/// The server to examine.
#[derive(Debug, Clone)]
pub enum Target {
    /// A command speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The MCP URL.
        url: String,
    },
}

/// How to examine it.
#[derive(Debug, Clone)]
pub struct Options {
    /// The server.
    pub target: Target,
    /// Also call tools annotated `destructiveHint: false`.
    pub allow_calls: bool,
    /// The parsed `--manifest`.
    pub manifest: Option<Value>,
    /// The read budget results are measured against.
    pub read_budget: usize,
    /// The most one request may take.
    pub timeout: Duration,
    /// The most the tool calls may take in all; tools left when it is
    /// spent are not called (and said so).
    pub budget: Duration,
    /// Hears how far the catalog read has got after each page.
    pub on_page: OnPage,
}

/// What hears the catalog read's progress (a progress line), or nothing.
#[derive(Clone, Default)]
pub struct OnPage(Option<Arc<dyn Fn(ReadProgress) + Send + Sync>>);

impl OnPage {
    /// Calls `hear` after each page.
    pub fn new(hear: impl Fn(ReadProgress) + Send + Sync + 'static) -> OnPage {
        OnPage(Some(Arc::new(hear)))
    }

    fn heard(&self, progress: ReadProgress) {
        if let Some(hear) = &self.0 {
            hear(progress);
        }
    }
}

impl std::fmt::Debug for OnPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "OnPage(..)"
        } else {
            "OnPage(none)"
        })
    }
}

/// The most tools called (a server with hundreds is judged on the first).
const MAX_CALLS: usize = 50;
/// The most pages followed when collecting a list's cursors.
const CURSOR_PAGES: usize = 5;
/// The most pages walked one row at a time through a list tool.
const DRAIN_PAGES: usize = 200;
/// The largest answer a raw probe reads.
const RAW_MAX_BYTES: usize = 16 * 1024 * 1024;
/// A cursor no server issued.
const BOGUS_CURSOR: &str = "sluice-doctor-not-a-cursor";
/// A protocol version no one speaks.
const UNKNOWN_VERSION: &str = "1999-01-01";

/// Examines the server and judges it.
pub async fn examine(options: &Options) -> Report {
    let obs = observe(options).await;
    let server = obs
        .handshake
        .as_ref()
        .and_then(detect::server_info)
        .map(|info| ServerName {
            name: info
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            version: info
                .get("version")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        });
    let (target, transport) = (describe(&options.target), transport_name(&options.target));
    Report::new(
        target,
        transport,
        obs.protocol_version.clone(),
        server,
        detect::judge(&obs),
    )
    .with_not_called(&obs.not_called)
}

fn transport_name(target: &Target) -> &'static str {
    match target {
        Target::Stdio { .. } => "stdio",
        Target::Http { .. } => "http",
    }
}

/// The target as the report names it, without what may be a secret: a
/// URL's credentials and query, a command line's credential patterns and
/// `KEY=value` pairs under secret names.
fn describe(target: &Target) -> String {
    let text = match target {
        Target::Stdio { command, args } => {
            let mut words = vec![command.clone()];
            words.extend(args.iter().cloned());
            words.join(" ")
        }
        Target::Http { url } => match sluice_core::outbound::Url::parse(url) {
            Ok(mut u) => {
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.set_query(None);
                u.to_string()
            }
            Err(_) => url.clone(),
        },
    };
    let redactor = Redactor::new(Vec::new(), DEFAULT_SECRET_KEYS);
    let mut value = Value::String(text);
    redactor.redact(&mut value);
    value.as_str().unwrap_or_default().to_owned()
}

async fn observe(options: &Options) -> Observations {
    let mut obs = Observations {
        transport: Some(match options.target {
            Target::Stdio { .. } => Transport::Stdio,
            Target::Http { .. } => Transport::Http,
        }),
        manifest: options.manifest.clone(),
        read_budget: options.read_budget,
        ..Observations::default()
    };
    let settings = settings(options.timeout);
    let config = upstream_config(&options.target);
    let (events, mut drain) = mpsc::channel(64);
    tokio::spawn(async move { while drain.recv().await.is_some() {} });
    let conn = match upstream::connect(&config, &settings, events, &CancellationToken::new()).await
    {
        Ok(conn) => conn,
        Err(e) => {
            obs.connect_error = Some(e);
            // S-7 and S-22 are still judged from what HTTP says.
            if let Target::Http { url } = &options.target {
                obs.http = Some(http_probes(url, Era::Legacy, options.timeout).await);
            }
            return obs;
        }
    };
    if let Target::Http { url } = &options.target {
        let era = conn.description().era;
        obs.http = Some(http_probes(url, era, options.timeout).await);
    }
    let description = conn.description();
    obs.era = Some(description.era);
    obs.protocol_version = Some(description.protocol_version.clone());
    obs.handshake = Some(description.handshake.clone());
    obs.discover = Some(match description.era {
        Era::Modern => Outcome::Result(description.handshake.clone()),
        Era::Legacy => request(&conn, "server/discover", json!({}), options.timeout).await,
    });
    obs.unknown_version =
        Some(unknown_version(&options.target, description.era, options.timeout).await);
    let read = upstream::read_catalog(&conn, &settings, &|p| options.on_page.heard(p)).await;
    obs.catalog = Some(match &read {
        CatalogRead::Complete(catalog) => CatalogOutcome::Complete {
            counts: ListKind::ALL
                .iter()
                .map(|k| (*k, catalog.list(*k).len()))
                .collect(),
        },
        CatalogRead::Incomplete { list, reason } => CatalogOutcome::Incomplete {
            list: *list,
            reason: reason.to_string(),
            fault: !matches!(
                reason,
                IncompleteReason::PageCap | IncompleteReason::ItemCap | IncompleteReason::Timeout
            ),
        },
    });
    if let CatalogRead::Complete(catalog) = &read {
        obs.tools = catalog.list(ListKind::Tools).to_vec();
    }
    serve_lists(&conn, &mut obs, options.timeout).await;
    if conn.offers("tools") {
        let bogus = json!({"cursor": BOGUS_CURSOR});
        obs.invalid_cursor = Some(request(&conn, "tools/list", bogus, options.timeout).await);
        let unknown = json!({"name": "sluice-doctor-no-such-tool", "arguments": {}});
        obs.unknown_tool = Some(request(&conn, "tools/call", unknown, options.timeout).await);
    }
    call_tools(&conn, &mut obs, options).await;
    obs.stray_progress = conn.stray_progress();
    conn.shutdown(Duration::from_secs(2)).await;
    obs
}

fn settings(timeout: Duration) -> Settings {
    // The defaults of an empty sluice.toml, with the doctor's timeout.
    let defaults = Config::from_toml(
        Source {
            name: "(doctor)",
            text: "",
        },
        &|_| None,
    );
    let client_info = json!({"name": format!("{NAME}-doctor"), "version": VERSION});
    let mut settings = match defaults {
        Ok(config) => Settings::new(
            &config,
            client_info,
            std::sync::Arc::new(Redactor::new(Vec::new(), DEFAULT_SECRET_KEYS)),
        ),
        Err(_) => unreachable!("an empty configuration is valid"),
    };
    settings.request_timeout = timeout;
    settings.startup_timeout = timeout.max(Duration::from_secs(5));
    settings.catalog_read_timeout = timeout.saturating_mul(6);
    settings
}

fn upstream_config(target: &Target) -> UpstreamConfig {
    let transport = match target {
        Target::Stdio { command, args } => UpstreamTransport::Stdio {
            command: command.clone(),
            args: args.clone(),
            env: Default::default(),
            cwd: None,
            rlimit: Default::default(),
            // The operator runs the server under examination by hand.
            sandbox: Sandboxing::None,
        },
        // The operator typed the URL: a local server is the usual case.
        Target::Http { url } => UpstreamTransport::Http {
            url: url.clone(),
            headers: Default::default(),
            allow_private: true,
        },
    };
    UpstreamConfig {
        name: "target".into(),
        transport,
        trusted: false,
        read_only_tools: Vec::new(),
        read_budget: None,
        tool_read_budgets: Default::default(),
        prefixed: false,
        rate_limit: None,
        tool_rate_limits: Default::default(),
    }
}

async fn request(conn: &Connection, method: &str, params: Value, timeout: Duration) -> Outcome {
    outcome(
        conn.request(method, params, &json!({}), None, timeout, &[])
            .await,
    )
}

fn outcome(answer: Result<Value, UpstreamFailure>) -> Outcome {
    match answer {
        Ok(result) => Outcome::Result(result),
        Err(UpstreamFailure::Rpc(e)) => Outcome::Error(error_value(&e)),
        Err(UpstreamFailure::TooLarge { .. }) => Outcome::TooLarge,
        Err(other) => Outcome::Failed(other.to_string()),
    }
}

fn error_value(e: &RpcError) -> Value {
    let mut v = json!({"code": e.code, "message": e.message});
    if let Some(data) = &e.data {
        v["data"] = data.clone();
    }
    v
}

/// The first pages of each offered list (and a few more, for their
/// cursors), and one `resources/read`.
async fn serve_lists(conn: &Connection, obs: &mut Observations, timeout: Duration) {
    for kind in ListKind::ALL {
        if !conn.offers(kind.capability()) {
            continue;
        }
        let mut cursor: Option<String> = None;
        for page in 0..CURSOR_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let answer = request(conn, kind.method(), params, timeout).await;
            let next = answer
                .result()
                .and_then(|r| r.get("nextCursor"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            if page == 0 {
                obs.served.push((kind.method().to_owned(), answer));
            }
            match next {
                Some(c) => {
                    obs.cursors.push((kind.method().to_owned(), c.clone()));
                    cursor = Some(c);
                }
                None => break,
            }
        }
    }
    let first_resource = obs
        .served
        .iter()
        .find(|(m, _)| m == "resources/list")
        .and_then(|(_, o)| o.result())
        .and_then(|r| r.pointer("/resources/0/uri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(uri) = first_resource {
        let read = request(conn, "resources/read", json!({"uri": uri}), timeout).await;
        obs.served.push(("resources/read".into(), read));
    }
}

/// Calls what the plan allows, and probes the list tools.
async fn call_tools(conn: &Connection, obs: &mut Observations, options: &Options) {
    let tools = obs.tools.clone();
    let mut called = 0;
    let deadline = tokio::time::Instant::now() + options.budget;
    for (i, tool) in tools.iter().enumerate() {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        if let Err(why) = plan::may_call(tool, options.allow_calls) {
            obs.not_called.push((name.to_owned(), why.to_owned()));
            continue;
        }
        let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
        let Some(arguments) = plan::arguments_for(schema) else {
            obs.not_called.push((
                name.to_owned(),
                "its input schema asks for what the doctor cannot make up".into(),
            ));
            continue;
        };
        if called == MAX_CALLS {
            obs.not_called.push((
                name.to_owned(),
                format!("only the first {MAX_CALLS} callable tools are called"),
            ));
            continue;
        }
        if tokio::time::Instant::now() >= deadline {
            obs.not_called.push((
                name.to_owned(),
                format!("the calls' time budget ({:?}) was spent", options.budget),
            ));
            continue;
        }
        called += 1;
        let (outcome, progress) = call(conn, name, &arguments, i, options.timeout).await;
        // Paging a tool calls it many times: read-only tools only, even
        // with --allow-calls.
        let read_only = tool.pointer("/annotations/readOnlyHint") == Some(&Value::Bool(true));
        if plan::is_list_tool(tool) && read_only {
            let probe = probe_list_tool(conn, tool, &arguments, &outcome, options.timeout).await;
            obs.list_tools.push(probe);
        }
        obs.calls.push(Call {
            tool: name.to_owned(),
            definition: tool.clone(),
            outcome,
            progress,
        });
    }
}

/// One `tools/call` with a progress token; the answer and the progress
/// notifications that came with it.
async fn call(
    conn: &Connection,
    name: &str,
    arguments: &Value,
    n: usize,
    timeout: Duration,
) -> (Outcome, Vec<Value>) {
    let (tx, mut rx) = mpsc::channel(256);
    let params = json!({"name": name, "arguments": arguments,
        "_meta": {"progressToken": format!("sluice-doctor-{n}")}});
    let no_capabilities = json!({});
    let answer = conn.request(
        "tools/call",
        params,
        &no_capabilities,
        Some(tx),
        timeout,
        &[],
    );
    tokio::pin!(answer);
    let mut progress = Vec::new();
    let take = |item: Related, progress: &mut Vec<Value>| match item {
        Related::Notification(m)
            if m.get("method").and_then(Value::as_str) == Some("notifications/progress") =>
        {
            progress.push(m.get("params").cloned().unwrap_or(Value::Null));
        }
        // A question (sampling, elicitation) is declined at once, so the
        // call goes on instead of waiting for an answer that never comes.
        Related::Request { reply, .. } => {
            let _ = reply.send(Err(RpcError::new(
                -32601,
                "sluice doctor answers no questions",
            )));
        }
        Related::Notification(_) => {}
    };
    let answer = loop {
        tokio::select! {
            answer = &mut answer => break answer,
            Some(item) = rx.recv() => take(item, &mut progress),
        }
    };
    while let Ok(item) = rx.try_recv() {
        take(item, &mut progress);
    }
    (outcome(answer), progress)
}

async fn probe_list_tool(
    conn: &Connection,
    tool: &Value,
    arguments: &Value,
    first: &Outcome,
    timeout: Duration,
) -> ListToolProbe {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
    let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
    let mut probe = ListToolProbe {
        tool: name.to_owned(),
        definition: tool.clone(),
        first: Some(first.clone()),
        ..ListToolProbe::default()
    };
    probe
        .cursors
        .extend(first.result().and_then(|r| plan::page_view(r).cursor));
    let Some((limit, max)) = plan::limit_param(schema) else {
        return probe;
    };
    let with = |extra: &[(&str, Value)]| {
        let mut args = arguments.clone();
        if let Some(obj) = args.as_object_mut() {
            for (k, v) in extra {
                obj.insert((*k).to_owned(), v.clone());
            }
        }
        json!({"name": name, "arguments": args})
    };
    if let Some(max) = max {
        let huge = (max.saturating_mul(10)).max(1000);
        let answer = request(conn, "tools/call", with(&[(limit, json!(huge))]), timeout).await;
        probe.huge_limit = Some((huge, answer));
    }
    let wide = max.unwrap_or(200).min(200);
    let answer = request(conn, "tools/call", with(&[(limit, json!(wide))]), timeout).await;
    probe
        .cursors
        .extend(answer.result().and_then(|r| plan::page_view(r).cursor));
    probe.wide = Some((wide, answer));
    let Some(cursor_arg) = plan::cursor_param(schema) else {
        return probe;
    };
    let mut total = 0;
    let mut cursor: Option<String> = None;
    for _ in 0..DRAIN_PAGES {
        let mut extra = vec![(limit, json!(1))];
        if let Some(c) = &cursor {
            extra.push((cursor_arg, json!(c)));
        }
        let answer = request(conn, "tools/call", with(&extra), timeout).await;
        let Some(result) = answer
            .result()
            .filter(|r| r.get("isError") != Some(&json!(true)))
        else {
            return probe;
        };
        let page = plan::page_view(result);
        total += page.rows.unwrap_or(0);
        match page.cursor {
            Some(c) if Some(&c) != cursor.as_ref() => {
                probe.cursors.push(c.clone());
                cursor = Some(c);
            }
            Some(_) => return probe,
            None => {
                probe.drained = Some((total, true));
                return probe;
            }
        }
    }
    probe.drained = Some((total, false));
    probe
}

/// A handshake (legacy) or a request (modern) naming an unknown version,
/// sent raw: the connector would never send one.
async fn unknown_version(target: &Target, era: Era, timeout: Duration) -> Outcome {
    let message = match era {
        Era::Legacy => initialize_message(UNKNOWN_VERSION),
        Era::Modern => modern_message("tools/list", UNKNOWN_VERSION),
    };
    match target {
        Target::Stdio { command, args } => raw_stdio(command, args, &message, timeout).await,
        Target::Http { url } => {
            let headers = match era {
                Era::Legacy => vec![],
                Era::Modern => vec![
                    ("mcp-protocol-version", UNKNOWN_VERSION),
                    ("mcp-method", "tools/list"),
                ],
            };
            match raw_post(url, &message, &headers, timeout).await {
                Ok(answer) => {
                    end_session(url, answer.session.as_deref(), timeout).await;
                    answer.outcome
                }
                Err(e) => Outcome::Failed(e),
            }
        }
    }
}

fn client_info() -> Value {
    json!({"name": format!("{NAME}-doctor"), "version": VERSION})
}

fn initialize_message(version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": client_info()}})
}

fn modern_message(method: &str, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": {
        protocol::META_PROTOCOL_VERSION: version,
        protocol::META_CLIENT_CAPABILITIES: {},
        protocol::META_CLIENT_INFO: client_info()}}})
}

/// Starts the command afresh (in its own process group, killed with it,
/// its spawn logged like an upstream's), sends one message, reads its
/// answer: at most [`RAW_MAX_BYTES`] a line, within `timeout`.
async fn raw_stdio(command: &str, args: &[String], message: &Value, timeout: Duration) -> Outcome {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for inherited in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(inherited) {
            cmd.env(inherited, v);
        }
    }
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let exchange = async {
        let mut child = wrapped
            .spawn()
            .map_err(|e| format!("could not start {command:?}: {e}"))?;
        tracing::info!(command, args = ?args, pid = ?child.id(), "spawned the server for a raw probe");
        let mut stdin = child.stdin().take().ok_or("no stdin")?;
        let stdout = child.stdout().take().ok_or("no stdout")?;
        let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        stdin.write_all(&line).await.map_err(|e| e.to_string())?;
        stdin.flush().await.map_err(|e| e.to_string())?;
        let mut lines = FramedRead::new(stdout, LinesCodec::new_with_max_length(RAW_MAX_BYTES));
        while let Some(line) = lines.next().await {
            let line = line.map_err(|e| e.to_string())?;
            if let Ok(answer) = serde_json::from_str::<Value>(&line)
                && answer.get("id") == message.get("id")
            {
                let _ = Box::into_pin(child.kill()).await;
                return Ok(answer_outcome(&answer));
            }
        }
        Err("the process closed its output without answering".to_owned())
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => Outcome::Failed(e),
        Err(_) => Outcome::Failed(format!("no answer within {timeout:?}")),
    }
}

/// A JSON-RPC answer, or `Failed` for a body that is not one (an auth
/// server's `{"error": "invalid_token"}` is no JSON-RPC error).
fn answer_outcome(answer: &Value) -> Outcome {
    if answer.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Outcome::Failed("the answer is not JSON-RPC 2.0".into());
    }
    match (answer.get("result"), answer.get("error")) {
        (Some(r), _) => Outcome::Result(r.clone()),
        (_, Some(e)) => Outcome::Error(e.clone()),
        _ => Outcome::Failed("an answer with neither result nor error".into()),
    }
}

/// A client for raw probes: no redirect, no proxy, bounded in time.
fn raw_client(timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .map_err(|e| e.without_url().to_string())
}

/// What a raw POST got back.
struct RawAnswer {
    status: u16,
    outcome: Outcome,
    /// The `Mcp-Session-Id` it opened, if any.
    session: Option<String>,
}

/// POSTs one message; the status and the JSON-RPC answer (from a JSON body
/// or the SSE stream), read up to [`RAW_MAX_BYTES`].
async fn raw_post(
    url: &str,
    message: &Value,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<RawAnswer, String> {
    let client = raw_client(timeout)?;
    let mut req = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut resp = req
        .body(message.to_string())
        .send()
        .await
        .map_err(|e| format!("the POST failed: {}", e.without_url()))?;
    let status = resp.status().as_u16();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        if body.len() + chunk.len() > RAW_MAX_BYTES {
            break;
        }
        body.extend_from_slice(&chunk);
        // An SSE answer ends with the response; stop at the first one.
        if sse && String::from_utf8_lossy(&body).contains("\"id\"") && body.ends_with(b"\n\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&body);
    let answer = if sse {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id") == message.get("id"))
    } else {
        serde_json::from_str::<Value>(&text).ok()
    };
    let outcome = match answer {
        Some(a) => answer_outcome(&a),
        None => Outcome::Failed(format!("HTTP {status} without a JSON-RPC answer")),
    };
    Ok(RawAnswer {
        status,
        outcome,
        session,
    })
}

/// Ends a legacy session a probe opened (best effort).
async fn end_session(url: &str, session: Option<&str>, timeout: Duration) {
    let (Some(session), Ok(client)) = (session, raw_client(timeout)) else {
        return;
    };
    let _ = client
        .delete(url)
        .header("mcp-session-id", session)
        .send()
        .await;
}

/// The HTTP-only probes: `/health`, a foreign `Origin`, a bad version
/// header, and whether the endpoint wants credentials. The `Origin` rides
/// on a request the server would otherwise serve (`initialize` for a legacy
/// server, `server/discover` for a modern one), so that a refusal can only
/// be about the `Origin`.
async fn http_probes(url: &str, era: Era, timeout: Duration) -> HttpProbes {
    let mut probes = HttpProbes::default();
    let origin = url
        .find("://")
        .and_then(|i| url[i + 3..].find('/').map(|j| &url[..i + 3 + j]))
        .unwrap_or(url);
    if let Ok(client) = raw_client(timeout)
        && let Ok(mut resp) = client.get(format!("{origin}/health")).send().await
    {
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            if body.len() + chunk.len() > RAW_MAX_BYTES {
                break;
            }
            body.extend_from_slice(&chunk);
        }
        probes.health = Some((status, serde_json::from_slice::<Value>(&body).ok()));
    }
    let init = initialize_message(protocol::LEGACY_VERSIONS[0]);
    let discover = modern_message("server/discover", protocol::MODERN_VERSION);
    let modern_headers = [
        ("mcp-protocol-version", protocol::MODERN_VERSION),
        ("mcp-method", "server/discover"),
    ];
    match era {
        Era::Modern => {
            if let Ok(a) = raw_post(url, &discover, &modern_headers, timeout).await
                && a.status == 401
            {
                probes.unauthenticated = Some(401);
            }
        }
        Era::Legacy => {
            if let Ok(a) = raw_post(url, &init, &[], timeout).await {
                end_session(url, a.session.as_deref(), timeout).await;
                if a.status == 401 {
                    probes.unauthenticated = Some(401);
                }
            }
        }
    }
    let foreign = ("origin", "http://evil.example");
    let probe = match era {
        Era::Modern => {
            let headers = [modern_headers[0], modern_headers[1], foreign];
            raw_post(url, &discover, &headers, timeout).await
        }
        Era::Legacy => raw_post(url, &init, &[foreign], timeout).await,
    };
    if let Ok(a) = probe {
        end_session(url, a.session.as_deref(), timeout).await;
        probes.foreign_origin = Some(a.status);
    }
    probes.bad_version_header = bad_version_header(url, era, timeout).await;
    probes
}

/// A request that is right in every way but its `MCP-Protocol-Version`
/// header (1999-01-01): a modern `tools/list` whose `_meta` names 2026-07-28,
/// or a legacy `tools/list` in a freshly opened session.
async fn bad_version_header(url: &str, era: Era, timeout: Duration) -> Option<u16> {
    match era {
        Era::Modern => {
            let list = modern_message("tools/list", protocol::MODERN_VERSION);
            let headers = [
                ("mcp-protocol-version", UNKNOWN_VERSION),
                ("mcp-method", "tools/list"),
            ];
            raw_post(url, &list, &headers, timeout)
                .await
                .ok()
                .map(|a| a.status)
        }
        Era::Legacy => {
            let init = initialize_message(protocol::LEGACY_VERSIONS[0]);
            let opened = raw_post(url, &init, &[], timeout).await.ok()?;
            let session = opened.session?;
            let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
            let headers = [
                ("mcp-session-id", session.as_str()),
                ("mcp-protocol-version", UNKNOWN_VERSION),
            ];
            let status = raw_post(url, &list, &headers, timeout)
                .await
                .ok()
                .map(|a| a.status);
            end_session(url, Some(&session), timeout).await;
            status
        }
    }
}
