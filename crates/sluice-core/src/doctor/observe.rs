//! What the doctor saw: the raw answers it got, recorded by the shell and
//! judged by [`super::detect`]. Nothing here is interpreted yet.

use serde_json::Value;

use crate::discovery::ListKind;
use crate::protocol::Era;

/// How the server was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A child process on stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A JSON-RPC result.
    Result(Value),
    /// A JSON-RPC error object (`code`, `message`, `data`).
    Error(Value),
    /// An answer larger than the transport ceiling, dropped unread.
    TooLarge,
    /// No JSON-RPC answer: a timeout, a lost connection, an HTTP error.
    Failed(String),
}

/// One tool call the doctor made.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The tool's name.
    pub tool: String,
    /// The tool's definition as listed.
    pub definition: Value,
    /// The answer.
    pub outcome: Outcome,
    /// The `params` of each `notifications/progress` received for it.
    pub progress: Vec<Value>,
}

/// One list-style tool's probes ([`super::plan::is_list_tool`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListToolProbe {
    /// The tool's name.
    pub tool: String,
    /// Its definition.
    pub definition: Value,
    /// The call with the schema's arguments and no limit.
    pub first: Option<Outcome>,
    /// A call asking for far more rows than the schema's `maximum`.
    pub huge_limit: Option<(u64, Outcome)>,
    /// Rows counted by following the cursor with `limit: 1`, and whether
    /// the walk reached a page without a cursor.
    pub drained: Option<(usize, bool)>,
    /// A call with the largest limit the schema allows, capped at 200.
    pub wide: Option<(u64, Outcome)>,
    /// Every cursor the tool returned, on any of these calls.
    pub cursors: Vec<String>,
}

/// What sluice's catalog walk made of the server's lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogOutcome {
    /// Every offered list was read to its end.
    Complete {
        /// Entries per list read.
        counts: Vec<(ListKind, usize)>,
    },
    /// A list could not be read completely.
    Incomplete {
        /// Which.
        list: ListKind,
        /// The walk's fixed reason (a cycle, a repeated cursor, ...).
        reason: String,
        /// Whether the reason is the server's fault (a cycle, a duplicate,
        /// an error page) rather than a cap or a deadline.
        fault: bool,
    },
}

/// HTTP-only probes, made with raw requests.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HttpProbes {
    /// `GET /health` without credentials: status and JSON body.
    pub health: Option<(u16, Option<Value>)>,
    /// The status of a POST carrying `Origin: http://evil.example`.
    pub foreign_origin: Option<u16>,
    /// The status of a POST carrying `MCP-Protocol-Version: 1999-01-01`.
    pub bad_version_header: Option<u16>,
    /// The status of a first request without credentials, when the server
    /// wants them (401): then the probes behind auth could not run.
    pub unauthenticated: Option<u16>,
    /// The `WWW-Authenticate` header of that 401, if it had one.
    pub challenge: Option<String>,
    /// The protected resource metadata (RFC 9728) the challenge named, or
    /// the well-known one: `(url, status, JSON body)`.
    pub resource_metadata: Option<(String, u16, Option<Value>)>,
    /// Each authorization server's metadata (RFC 8414, else OpenID
    /// discovery): `(issuer named by the PRM, status, JSON body)`.
    pub issuer_metadata: Vec<(String, u16, Option<Value>)>,
    /// The `Mcp-Session-Id`s of a few sessions opened one after another
    /// (legacy servers only).
    pub session_ids: Vec<String>,
    /// The status of a request in a session opened by the first principal
    /// but sent with the second one's credentials.
    pub cross_principal: Option<u16>,
    /// The `WWW-Authenticate` header of each 403 a refused tool call got
    /// when sent again raw (2026-07-28 stateless, 2025 in a session of its
    /// own): `(tool, header)`.
    pub refused_calls: Vec<(String, Option<String>)>,
}

/// The fire-and-forget cancellation probe (S-13): a request, then
/// `notifications/cancelled` for it (over 2026-07-28 HTTP: its response
/// stream closed, which is the cancellation there), then a `ping`.
#[derive(Debug, Clone, PartialEq)]
pub struct CancelProbe {
    /// The method cancelled.
    pub method: String,
    /// The cancelled request's answer, if one came (allowed: the server
    /// may have finished first).
    pub cancelled: Option<Outcome>,
    /// The request sent after the cancellation (`ping`; `server/discover`
    /// in 2026-07-28, which has no `ping`).
    pub next_method: String,
    /// Its answer.
    pub next: Outcome,
}

/// The probe of an `initialize` followed at once by
/// `notifications/cancelled` naming it (S-13: `initialize` is never
/// cancelled), on a fresh stdio process.
#[derive(Debug, Clone, PartialEq)]
pub struct InitializeCancelProbe {
    /// The answer to that `initialize`.
    pub initialize: Outcome,
    /// The `ping` sent after `notifications/initialized`, when the
    /// `initialize` was answered.
    pub next: Option<Outcome>,
}

/// What a second principal (`--second-bearer-env`) was served.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SecondPrincipal {
    /// Its first `tools/list` page, or why none came.
    pub tools_list: Option<Outcome>,
}

/// `--allow-load`: a burst of requests, and how many were refused as over
/// a rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burst {
    /// Requests sent.
    pub sent: usize,
    /// Refused as rate limited (JSON-RPC error or HTTP 429).
    pub limited: usize,
}

/// Everything the doctor observed about one server.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observations {
    /// How it was reached.
    pub transport: Option<Transport>,
    /// Why no session could be opened, if none could.
    pub connect_error: Option<String>,
    /// The era spoken.
    pub era: Option<Era>,
    /// The protocol version negotiated.
    pub protocol_version: Option<String>,
    /// The handshake result (`server/discover` or `initialize`).
    pub handshake: Option<Value>,
    /// A `server/discover` request's answer (asked of every server).
    pub discover: Option<Outcome>,
    /// The answer to a request naming an unknown protocol version
    /// (`initialize` for a legacy server, `_meta` for a modern one).
    pub unknown_version: Option<Outcome>,
    /// The catalog walk.
    pub catalog: Option<CatalogOutcome>,
    /// The listed tools.
    pub tools: Vec<Value>,
    /// The first page of each offered list, and one `resources/read`, as
    /// served: `(method, outcome)`.
    pub served: Vec<(String, Outcome)>,
    /// Every `nextCursor` the protocol lists gave: `(method, cursor)`.
    pub cursors: Vec<(String, String)>,
    /// `tools/list` with a cursor the server never issued.
    pub invalid_cursor: Option<Outcome>,
    /// `tools/call` of a tool that does not exist.
    pub unknown_tool: Option<Outcome>,
    /// The tool calls made.
    pub calls: Vec<Call>,
    /// Tools not called, and why.
    pub not_called: Vec<(String, String)>,
    /// The list-style tools' probes.
    pub list_tools: Vec<ListToolProbe>,
    /// Over HTTP.
    pub http: Option<HttpProbes>,
    /// `--manifest`, parsed.
    pub manifest: Option<Value>,
    /// The read budget results are measured against.
    pub read_budget: usize,
    /// Progress notifications that named a token no request carried.
    pub stray_progress: u64,
    /// The tool list read again after the calls, when a call was made.
    pub tools_after_calls: Option<Vec<Value>>,
    /// How many `notifications/tools/list_changed` arrived, up to that
    /// second read.
    pub tools_list_changed: u64,
    /// The fire-and-forget cancellation probe.
    pub cancellation: Option<CancelProbe>,
    /// The cancelled `initialize` probe (stdio, 2025 era only; `None`
    /// where it cannot be sent).
    pub initialize_cancelled: Option<InitializeCancelProbe>,
    /// The URL, over HTTP.
    pub url: Option<String>,
    /// Whether the doctor sent credentials (`--header`, `--bearer-env`).
    pub credentials: bool,
    /// What the second principal saw, when one was given.
    pub second: Option<SecondPrincipal>,
    /// `resources/read` of URIs no server should serve: `(what, outcome)`
    /// (a path traversal, an unknown scheme).
    pub bad_reads: Vec<(String, Outcome)>,
    /// `completion/complete` for a prompt that does not exist.
    pub bad_completion: Option<Outcome>,
    /// The params of each elicitation asked during a call (`message`,
    /// `requestedSchema`).
    pub elicitations: Vec<Value>,
    /// `--allow-load`: bursts of `completion/complete` and of a read-only
    /// tool's calls.
    pub completion_burst: Option<Burst>,
    /// The tool calls' burst.
    pub call_burst: Option<Burst>,
    /// Whether `--allow-load` was given.
    pub allow_load: bool,
}

impl Outcome {
    /// The result, if it is one.
    pub fn result(&self) -> Option<&Value> {
        match self {
            Outcome::Result(v) => Some(v),
            _ => None,
        }
    }

    /// The error's code, if it is a JSON-RPC error.
    pub fn error_code(&self) -> Option<i64> {
        match self {
            Outcome::Error(e) => e.get("code").and_then(Value::as_i64),
            _ => None,
        }
    }
}
