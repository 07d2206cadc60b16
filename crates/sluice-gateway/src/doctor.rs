//! `sluice doctor`'s shell: connect to a server the way sluice connects to
//! an upstream, make the requests the plan allows, record what comes back
//! as [`Observations`], and let `sluice_core::doctor` judge.
//!
//! Besides the session the upstream connector opens, a few probes need a
//! raw request the connector would never send: a handshake naming an
//! unknown protocol version (on a fresh process or HTTP request), and over
//! HTTP the probes of [`http`]. The credentials given (`--header`,
//! `--bearer-env`) ride on every request but the unauthenticated probes,
//! and are redacted from everything the report says.

mod cancel;
mod http;
mod raw_stdio;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_core::boundary::redact::{DEFAULT_SECRET_KEYS, Redactor};
use sluice_core::config::{Config, Source, UpstreamConfig, UpstreamTransport};
use sluice_core::discovery::{CatalogRead, IncompleteReason, ListKind, ReadProgress};
use sluice_core::doctor::observe::{
    Burst, Call, CatalogOutcome, ListToolProbe, Observations, Outcome, SecondPrincipal, Transport,
};
use sluice_core::doctor::{Report, ServerName, Verdict, detect, plan};
use sluice_core::jsonrpc::RpcError;
use sluice_core::protocol::Era;
use sluice_core::sandbox::Sandboxing;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::gateway::{NAME, VERSION};
use crate::upstream::{self, Connection, Related, Settings, UpstreamEvent};
use http::{As, Endpoint, UNKNOWN_VERSION};
use raw_stdio::raw_stdio;
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
    /// Send bursts of requests to see rate limits (`--allow-load`).
    pub allow_load: bool,
    /// Headers sent with every request but the unauthenticated probes
    /// (`--header`, and `Authorization: Bearer` from `--bearer-env`).
    pub headers: Vec<(String, String)>,
    /// A second principal's headers (`--second-bearer-env`).
    pub second_headers: Option<Vec<(String, String)>>,
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
/// A cursor no server issued.
const BOGUS_CURSOR: &str = "sluice-doctor-not-a-cursor";
/// A prompt no server has.
const BOGUS_PROMPT: &str = "sluice-doctor-no-such-prompt";
/// How many requests a burst sends (`--allow-load`).
const BURST: usize = 30;

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
    let redactor = credentials_redactor(options);
    let scrub = |text: &mut String| {
        let mut value = Value::String(std::mem::take(text));
        redactor.redact(&mut value);
        *text = value.as_str().unwrap_or_default().to_owned();
    };
    let mut findings = detect::judge(&obs);
    for f in &mut findings {
        match &mut f.verdict {
            Verdict::Pass { note: Some(text) }
            | Verdict::CouldNotJudge { reason: text }
            | Verdict::NotObservable { reason: text } => scrub(text),
            Verdict::Fail { evidence } => evidence.iter_mut().for_each(&scrub),
            Verdict::Pass { note: None } => {}
        }
    }
    let mut unreachable = obs.connect_error.clone();
    if let Some(cause) = &mut unreachable {
        scrub(cause);
    }
    Report::new(
        target,
        transport,
        obs.protocol_version.clone(),
        server,
        findings,
    )
    .with_unreachable(unreachable)
    .with_not_called(&obs.not_called)
}

/// A redactor of the credentials given, and of what looks like one.
fn credentials_redactor(options: &Options) -> Redactor {
    let values = options
        .headers
        .iter()
        .chain(options.second_headers.iter().flatten())
        .flat_map(|(_, v)| {
            // The token alone, too: an error may quote it without "Bearer".
            let token = v.split_once(' ').map(|(_, t)| t.to_owned());
            [Some(v.clone()), token]
        })
        .flatten();
    Redactor::new(values, DEFAULT_SECRET_KEYS)
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
        url: match &options.target {
            Target::Http { url } => Some(url.clone()),
            Target::Stdio { .. } => None,
        },
        credentials: !options.headers.is_empty(),
        allow_load: options.allow_load,
        ..Observations::default()
    };
    let endpoint = match &options.target {
        Target::Http { url } => Some(Endpoint {
            url,
            timeout: options.timeout,
            auth: &options.headers,
            second: options.second_headers.as_deref(),
        }),
        Target::Stdio { .. } => None,
    };
    let settings = settings(options);
    let config = upstream_config(&options.target, &options.headers);
    let (events, mut drain) = mpsc::channel(64);
    // The tool list's change notifications are counted (S-6); the rest is
    // dropped.
    let list_changed = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&list_changed);
    tokio::spawn(async move {
        while let Some(event) = drain.recv().await {
            if matches!(&event, UpstreamEvent::ListChanged(m) if m == "notifications/tools/list_changed")
            {
                counted.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let conn = match upstream::connect(&config, &settings, events, &CancellationToken::new()).await
    {
        Ok(conn) => conn,
        Err(e) => {
            // A raw request tells the real cause (refused, DNS, TLS,
            // timeout, 401) where the connector's error may not.
            let cause = match &endpoint {
                Some(endpoint) => http::unreachable_cause(endpoint).await,
                None => None,
            };
            obs.connect_error = Some(cause.unwrap_or(e));
            return obs;
        }
    };
    let description = conn.description();
    if let Some(endpoint) = &endpoint {
        obs.http = Some(http::http_probes(endpoint, description.era).await);
        if endpoint.second.is_some() {
            obs.second = Some(SecondPrincipal {
                tools_list: match description.era {
                    Era::Modern => Some(http::second_tools_list(endpoint).await),
                    Era::Legacy => None,
                },
            });
        }
    }
    obs.era = Some(description.era);
    obs.protocol_version = Some(description.protocol_version.clone());
    obs.handshake = Some(description.handshake.clone());
    obs.discover = Some(match description.era {
        Era::Modern => Outcome::Result(description.handshake.clone()),
        Era::Legacy => request(&conn, "server/discover", json!({}), options.timeout).await,
    });
    obs.unknown_version = Some(match &options.target {
        Target::Stdio { command, args } => {
            raw_stdio(
                command,
                args,
                &unknown_version_message(description.era),
                options.timeout,
            )
            .await
        }
        Target::Http { .. } => match &endpoint {
            Some(endpoint) => unknown_version_http(endpoint, description.era).await,
            None => Outcome::Failed("no endpoint".into()),
        },
    });
    cancellation_probes(options, &endpoint, &mut obs, conn.offers("tools")).await;
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
    if conn.offers("resources") {
        bad_reads(&conn, &mut obs, options.timeout).await;
    }
    if conn.offers("completions") {
        let bogus = completion_params(BOGUS_PROMPT);
        obs.bad_completion =
            Some(request(&conn, "completion/complete", bogus, options.timeout).await);
    }
    call_tools(&conn, &mut obs, options).await;
    if !obs.calls.is_empty() && conn.offers("tools") {
        // A call may have changed the tool list: read it again (S-6).
        if let CatalogRead::Complete(after) =
            upstream::read_catalog(&conn, &settings, &|_| {}).await
        {
            obs.tools_after_calls = Some(after.list(ListKind::Tools).to_vec());
        }
        obs.tools_list_changed = list_changed.load(Ordering::Relaxed);
    }
    if let Some(endpoint) = &endpoint {
        refused_calls(endpoint, description.era, &mut obs).await;
    }
    if options.allow_load {
        load(&conn, &mut obs, options.timeout).await;
    }
    obs.stray_progress = conn.stray_progress();
    conn.shutdown(Duration::from_secs(2)).await;
    obs
}

/// S-13's probes: a cancelled request, and (stdio, 2025 era) a cancelled
/// `initialize`.
async fn cancellation_probes(
    options: &Options,
    endpoint: &Option<Endpoint<'_>>,
    obs: &mut Observations,
    tools: bool,
) {
    let era = obs.era.unwrap_or(Era::Legacy);
    match (&options.target, endpoint) {
        (Target::Stdio { command, args }, _) => {
            obs.cancellation =
                Some(cancel::stdio(command, args, era, tools, options.timeout).await);
            if era == Era::Legacy {
                obs.initialize_cancelled =
                    Some(cancel::stdio_initialize(command, args, options.timeout).await);
            }
        }
        (Target::Http { .. }, Some(endpoint)) => {
            obs.cancellation = Some(cancel::http(endpoint, era, tools).await);
        }
        (Target::Http { .. }, None) => {}
    }
}

/// Each refused tool call sent again raw, for the challenge of a 403 (S-20:
/// an `insufficient_scope` challenge names the scopes).
async fn refused_calls(endpoint: &Endpoint<'_>, era: Era, obs: &mut Observations) {
    let refused: Vec<(String, Value)> = obs
        .calls
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Error(_) | Outcome::Failed(_)))
        .map(|c| {
            let schema = c.definition.get("inputSchema").unwrap_or(&Value::Null);
            (
                c.tool.clone(),
                plan::arguments_for(schema).unwrap_or(json!({})),
            )
        })
        .collect();
    for (tool, arguments) in refused {
        if let Some((403, challenge)) = http::raw_call(endpoint, era, &tool, &arguments).await
            && let Some(probes) = obs.http.as_mut()
        {
            probes.refused_calls.push((tool, challenge));
        }
    }
}

/// The URI of the first resource listed, if any.
fn first_resource(obs: &Observations) -> Option<String> {
    obs.served
        .iter()
        .find(|(m, _)| m == "resources/list")
        .and_then(|(_, o)| o.result())
        .and_then(|r| r.pointer("/resources/0/uri"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn completion_params(prompt: &str) -> Value {
    json!({"ref": {"type": "ref/prompt", "name": prompt}, "argument": {"name": "a", "value": ""}})
}

/// `resources/read` of a path traversal beside the first listed resource,
/// and of a scheme no server has.
async fn bad_reads(conn: &Connection, obs: &mut Observations, timeout: Duration) {
    let first = first_resource(obs);
    let mut probes = vec![(
        "an unknown scheme".to_owned(),
        "sluice-doctor-unknown:///etc/passwd".to_owned(),
    )];
    if let Some(uri) = first {
        let traversal = format!("{}/../../../../../../etc/passwd", uri.trim_end_matches('/'));
        probes.insert(0, ("a path traversal".to_owned(), traversal));
    }
    for (what, uri) in probes {
        let answer = request(conn, "resources/read", json!({"uri": uri}), timeout).await;
        obs.bad_reads.push((what, answer));
    }
}

/// `--allow-load`: [`BURST`] requests at once of `completion/complete`
/// (the first prompt's first argument) and of the first tool called.
async fn load(conn: &Connection, obs: &mut Observations, timeout: Duration) {
    let burst = |method: &'static str, params: Value| async move {
        let answers = futures::future::join_all(
            (0..BURST).map(|_| request(conn, method, params.clone(), timeout)),
        )
        .await;
        Burst {
            sent: BURST,
            limited: answers
                .iter()
                .filter(|a| detect::is_rate_limit_refusal(a))
                .count(),
        }
    };
    if conn.offers("completions") {
        let prompt = obs
            .served
            .iter()
            .find(|(m, _)| m == "prompts/list")
            .and_then(|(_, o)| o.result())
            .and_then(|r| r.pointer("/prompts/0/name"))
            .and_then(Value::as_str)
            .unwrap_or(BOGUS_PROMPT)
            .to_owned();
        obs.completion_burst = Some(burst("completion/complete", completion_params(&prompt)).await);
    }
    let called = obs.calls.first().map(|c| {
        let schema = c.definition.get("inputSchema").unwrap_or(&Value::Null);
        json!({"name": c.tool, "arguments": plan::arguments_for(schema).unwrap_or(json!({}))})
    });
    if let Some(params) = called {
        obs.call_burst = Some(burst("tools/call", params).await);
    }
}

fn settings(options: &Options) -> Settings {
    let timeout = options.timeout;
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
            std::sync::Arc::new(credentials_redactor(options)),
            None,
            None,
        ),
        Err(_) => unreachable!("an empty configuration is valid"),
    };
    settings.request_timeout = timeout;
    settings.startup_timeout = timeout.max(Duration::from_secs(5));
    settings.catalog_read_timeout = timeout.saturating_mul(6);
    settings
}

fn upstream_config(target: &Target, headers: &[(String, String)]) -> UpstreamConfig {
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
            headers: headers.iter().cloned().collect(),
            allow_private: true,
            oauth: None,
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
    if let Some(uri) = first_resource(obs) {
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
        let (outcome, progress, asked) = call(conn, name, &arguments, i, options.timeout).await;
        obs.elicitations.extend(asked);
        // 2026-07-28 asks within the result (MRTR), not with a request.
        let rounds = outcome
            .result()
            .and_then(|r| r.get("inputRequests"))
            .and_then(Value::as_object);
        obs.elicitations.extend(
            rounds
                .into_iter()
                .flat_map(|m| m.values())
                .filter(|r| r.get("method").and_then(Value::as_str) == Some("elicitation/create"))
                .map(|r| r.get("params").cloned().unwrap_or(Value::Null)),
        );
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

/// One `tools/call` with a progress token; the answer, the progress
/// notifications that came with it, and the params of each elicitation
/// asked meanwhile.
async fn call(
    conn: &Connection,
    name: &str,
    arguments: &Value,
    n: usize,
    timeout: Duration,
) -> (Outcome, Vec<Value>, Vec<Value>) {
    let (tx, mut rx) = mpsc::channel(256);
    let params = json!({"name": name, "arguments": arguments,
        "_meta": {"progressToken": format!("sluice-doctor-{n}")}});
    // Elicitation is declared so that a server may ask (S-27); every
    // question is declined.
    let capabilities = json!({"elicitation": {}});
    let answer = conn.request("tools/call", params, &capabilities, Some(tx), timeout, &[]);
    tokio::pin!(answer);
    let mut progress = Vec::new();
    let mut asked = Vec::new();
    let mut take = |item: Related, progress: &mut Vec<Value>| match item {
        Related::Notification(m)
            if m.get("method").and_then(Value::as_str) == Some("notifications/progress") =>
        {
            progress.push(m.get("params").cloned().unwrap_or(Value::Null));
        }
        // A question (sampling, elicitation) is declined at once, so the
        // call goes on instead of waiting for an answer that never comes.
        Related::Request {
            method,
            params,
            reply,
        } if method == "elicitation/create" => {
            asked.push(params);
            let _ = reply.send(Ok(json!({"action": "decline"})));
        }
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
    (outcome(answer), progress, asked)
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
fn unknown_version_message(era: Era) -> Value {
    match era {
        Era::Legacy => http::initialize_message(UNKNOWN_VERSION),
        Era::Modern => http::modern_message("tools/list", UNKNOWN_VERSION),
    }
}

async fn unknown_version_http(endpoint: &Endpoint<'_>, era: Era) -> Outcome {
    let headers = match era {
        Era::Legacy => vec![],
        Era::Modern => vec![
            ("mcp-protocol-version", UNKNOWN_VERSION),
            ("mcp-method", "tools/list"),
        ],
    };
    match endpoint
        .post(As::First, &unknown_version_message(era), &headers)
        .await
    {
        Ok(answer) => {
            endpoint
                .end_session(As::First, answer.session.as_deref())
                .await;
            answer.outcome
        }
        Err(e) => Outcome::Failed(e),
    }
}
