//! The detectors: one verdict each, from [`Observations`] alone.
//!
//! A rule that does not apply to what the server is (a 2026-07-28 result
//! shape on a 2025-11-25 server, an HTTP header on stdio) passes with a
//! note saying so; a rule that applies but that nothing observed can decide
//! is `could-not-judge`, with the reason. Evidence names methods, tools and
//! fields, and sizes; it never quotes a payload.
//!
//! This module holds the list of detectors, the dispatch from a detector
//! to its rule and the helpers verdicts are made with; each rule family
//! has its own file.

use serde_json::Value;

use super::observe::Observations;
use super::{Detector, Finding, Verdict};
use crate::protocol::Era;

mod auth;
mod boundary;
mod envelope;
mod lists;
mod load;
mod poisoning;
mod resources;
mod s1;
mod s11;
mod s12;
mod s13;
mod s14;
mod s2;
mod s3;
mod s4;
mod s7;
mod session;
mod transport;

pub use load::is_rate_limit_refusal;
pub use s7::server_info;

macro_rules! detectors {
    ($($name:ident = $id:literal, $rule:literal, $title:literal, $fix:literal;)*) => {
        $(
            #[doc = $title]
            pub const $name: Detector = Detector { id: $id, rule: $rule, title: $title, fix: $fix };
        )*
        /// Every detector, in report order.
        pub const DETECTORS: &[Detector] = &[$($name),*];
    };
}

detectors! {
    STDIO_DECLARED = "S-1/stdio-declared", "S-1", "the manifest declares a stdio transport",
        "declare \"transport\": {\"type\": \"stdio\", ...} in mcp.json (HTTP may be added)";
    MIN_PROTOCOL = "S-1/min-protocol-version", "S-1", "the manifest's minProtocolVersion is at least 2025-06-18",
        "set \"minProtocolVersion\" to \"2025-06-18\" or later in mcp.json";
    RESULT_TYPE = "S-2/result-type", "S-2", "2026-07-28 results carry resultType",
        "add \"resultType\": \"complete\" (or \"input_required\") to every result";
    CACHE_HINTS = "S-3/cache-hints", "S-3", "2026-07-28 list and read results carry ttlMs and cacheScope",
        "add \"ttlMs\" and \"cacheScope\" to tools/list, resources/list, resources/templates/list, prompts/list and resources/read results";
    DISCOVER = "S-4/discover", "S-4", "a server that claims 2026-07-28 answers server/discover with supportedVersions, capabilities, ttlMs, cacheScope and resultType",
        "answer server/discover with supportedVersions, capabilities, ttlMs, cacheScope and resultType";
    RESOURCE_SERVER = "S-5/resource-server", "S-5", "behind auth, a 401 names resource_metadata in WWW-Authenticate and that RFC 9728 document is valid",
        "answer 401 with WWW-Authenticate: Bearer resource_metadata=\"...\" and serve the protected resource metadata (resource, authorization_servers) there";
    LIST_CHANGED = "S-6/list-changed", "S-6", "a server with tools declares tools.listChanged",
        "declare \"tools\": {\"listChanged\": true} and send notifications/tools/list_changed when the tool set changes";
    LIST_CHANGED_SENT = "S-6/list-changed-sent", "S-6", "a tool list that a call changed was announced with notifications/tools/list_changed",
        "send notifications/tools/list_changed whenever the tool set changes (added, removed, or a schema changed)";
    VERSION = "S-7/version", "S-7", "the server's version is observable before auth",
        "put \"version\" in serverInfo and, over HTTP, in an unauthenticated GET /health";
    MANIFEST_VERSION = "S-7/manifest-version", "S-7", "the manifest's version is the served serverInfo.version",
        "publish the version you serve: mcp.json \"version\" must equal serverInfo.version";
    TOKEN_AUDIENCE = "S-8/token-audience", "S-8", "tokens are validated for their audience and never passed upstream",
        "validate aud before serving a request, and call upstream APIs with the server's own credentials";
    CONSENT = "S-9/consent", "S-9", "a proxy asks each client's consent before relaying to a third-party authorization server",
        "keep a per-client consent registry, checked and stored before any redirect upstream";
    SSRF = "S-10/ssrf", "S-10", "outbound fetches go only to allowed destinations",
        "allowlist outbound destinations, resolve and check every address, follow no redirect";
    OUTPUT_SCHEMA = "S-11/output-schema", "S-11", "structured results match the tool's outputSchema (isError results excepted)",
        "declare an outputSchema for every tool that returns structuredContent, and return content that matches it";
    ERROR_CODES = "S-11/error-codes", "S-11", "protocol errors are JSON-RPC errors with codes outside the reserved band",
        "answer an unknown tool with a JSON-RPC error (-32602), and use codes outside -32020..-32099 unless the spec defines them";
    INVALID_CURSOR = "S-12/invalid-cursor", "S-12", "a cursor the server never issued is refused with -32602",
        "validate cursors and answer an unknown one with -32602 Invalid params";
    OPAQUE_CURSOR = "S-12/opaque-cursor", "S-12", "list cursors are opaque (no segment decodes to a number or JSON)",
        "seal list cursors (an AEAD, or a random key into server-side state) so that no part of them decodes to a position";
    CATALOG = "S-12/pagination", "S-12", "every list can be read to its end (no cycle, repeat or duplicate)",
        "end each list with a page without nextCursor; never repeat a cursor or an entry";
    PROGRESS = "S-13/progress", "S-13", "progress names only an active request's progressToken, increasing",
        "send notifications/progress with the request's progressToken, a progress value that increases, and none after the response";
    CANCELLATION = "S-13/cancellation", "S-13", "after notifications/cancelled for a request, the server stays up and answers the next request",
        "treat notifications/cancelled as fire-and-forget: stop the work (or ignore an unknown or finished id), send no error, keep serving";
    INITIALIZE_UNCANCELLABLE = "S-13/init-uncancellable", "S-13", "an initialize followed by notifications/cancelled naming it is still answered and its session served",
        "ignore notifications/cancelled for initialize: answer it and serve the session it opens";
    OUTBOUND_TIMEOUT = "S-13/outbound-timeout", "S-13", "every request the server sends carries a timeout that progress does not extend, and its cancellations name only its own active requests",
        "bound each request you send (to a client or an upstream) by a configured timeout whatever progress arrives, and cancel only ids you sent and still wait for";
    VERSION_ECHO = "S-14/version-echo", "S-14", "version negotiation answers with a version the server supports",
        "answer initialize with the requested version when supported, else your latest supported version";
    UNKNOWN_VERSION = "S-14/unknown-version", "S-14", "an unknown protocol version is not served as if it were known",
        "answer an unknown version with a supported one (initialize) or -32022 with data.supported (2026-07-28)";
    VERSIONED_CAPABILITIES = "S-14/capabilities", "S-14", "the capabilities served exist in the negotiated version",
        "declare only the capabilities of the negotiated protocol version";
    COMPLETION_INPUTS = "S-15/completion-inputs", "S-15", "completion/complete for a prompt that does not exist is refused",
        "validate completion/complete's ref and argument, and answer an unknown one with -32602";
    COMPLETION_RATE = "S-15/completion-rate-limit", "S-15", "completion/complete is rate limited (--allow-load)",
        "rate-limit completion/complete like tool calls";
    LOCAL_AUTH = "S-16/http-auth", "S-16", "HTTP on a non-loopback address asks for credentials",
        "require an authorization token on an HTTP listener that is not loopback (or serve stdio only)";
    AUTHORIZATION_SERVERS = "S-17/authorization-servers", "S-17", "the PRM names authorization servers whose metadata carries their own issuer",
        "name authorization_servers in the protected resource metadata; each must publish RFC 8414 metadata whose issuer is its own URL";
    SESSION_IDS = "S-18/session-ids", "S-18", "session ids are unpredictable (long, distinct, not sequential)",
        "draw session ids from a secure random generator (at least 128 bits)";
    SESSION_BINDING = "S-18/session-binding", "S-18", "a session is refused to another principal (two credentials)",
        "bind each session to the principal that opened it and refuse it to any other";
    AUTHORIZATION_URL = "S-19/authorization-url", "S-19", "authorization URLs are opened only if http(s), never through a shell",
        "allowlist http/https before opening an authorization URL, with the platform's native opener";
    SCOPES = "S-20/scopes", "S-20", "scopes_supported names no wildcard scope, and insufficient_scope challenges name the scopes",
        "publish specific scopes (no *, all, full-access) and name the missing scope in insufficient_scope challenges";
    SANDBOX = "S-21/sandbox", "S-21", "a proxy sandboxes the stdio servers it starts (sluice doctor --config for sluice)",
        "run stdio children in a sandbox, log each, and gate dangerous commands";
    ORIGIN = "S-22/origin", "S-22", "a foreign Origin is refused with 403",
        "validate Origin against an allowlist and answer 403 before dispatching";
    VERSION_HEADER = "S-23/version-header", "S-23", "an unsupported MCP-Protocol-Version header is refused with 400",
        "answer 400 Bad Request to an invalid or unsupported MCP-Protocol-Version header";
    CALL_RATE = "S-24/rate-limit", "S-24", "tool calls are rate limited (--allow-load)",
        "rate-limit tools/call (a token bucket or a sliding window per caller)";
    URI_VALIDATION = "S-25/uri-validation", "S-25", "resources/read refuses a path traversal and an unknown scheme",
        "validate a resource URI (form, scheme allowlist, no ..) before reading it, and answer a bad one with a JSON-RPC error";
    BLOB_MIME = "S-25/blob-mime", "S-25", "binary contents are base64 with a valid MIME type",
        "encode binary resource contents as base64 with a type/subtype mimeType";
    CACHE_SCOPE = "S-26/cache-scope", "S-26", "a tools/list that differs by principal is cacheScope private (two credentials)",
        "serve \"cacheScope\": \"private\" on lists whose content depends on the caller";
    ELICITATION = "S-27/elicitation", "S-27", "elicitations asked during calls request nothing sensitive",
        "never ask for credentials, secrets, financial or health data through elicitation";
    LIMIT_BOUNDED = "envelope/limit-bounded", "envelope", "list tools take a limit with a maximum of 200 at most (default 20), enforce it, and offer fields lite/full",
        "give list tools a `limit` argument (default 20, \"maximum\" 200 at most) refusing or clamping larger values, and `fields` as lite/full";
    SILENT_CAP = "envelope/silent-cap", "envelope", "list tools never drop rows without a cursor",
        "when a page is cut, return a nextCursor to the rest";
    SHAPE = "envelope/shape", "envelope", "list tools answer an envelope, not a bare array",
        "answer {\"items\": [...], \"nextCursor\": ...} instead of a bare array";
    TOOL_CURSOR = "envelope/opaque-cursor", "envelope", "list tools' cursors are opaque (no segment decodes to a number or JSON)",
        "seal the cursor instead of exposing offsets or backend cursors";
    PAGE_BYTES = "envelope/page-bytes", "envelope", "a list tool's page stays under 50,000 bytes",
        "cap a page at 50,000 bytes (keep the largest prefix of rows that fits, with a cursor to the rest)";
    READ_BUDGET = "boundary/read-budget", "boundary", "read-only results fit the read budget",
        "bound read results (paginate, project fields, or refuse with a fixed error) below the read budget";
    SECRETS = "boundary/secrets", "boundary", "results carry no credentials",
        "never return credentials in results; redact them at the source";
    TOOL_NAMES = "poisoning/names", "poisoning", "tool names are 1 to 128 characters of A-Za-z0-9_.- (MCP 2025-11-25)",
        "rename tools to 1-128 characters of letters, digits, _ - and . (no spaces, controls or invisible characters)";
    DEFINITIONS = "poisoning/definitions", "poisoning", "tool definitions describe the tool, with no instructions aimed at the model",
        "remove what addresses the model (hidden instructions, invisible characters, URLs, exfiltration-shaped parameters) from descriptions and schemas";
}

/// The rules judged from outside by no detector, and why.
const NOT_OBSERVABLE: [(&str, &str); 6] = [
    (
        "S-8/token-audience",
        "not observable from outside: whether a token minted for another audience is accepted needs the authorization server to mint one, and what the server sends upstream is seen only by the upstream",
    ),
    (
        "S-13/outbound-timeout",
        "not observable from outside: the server's timeout on its own requests (sampling, elicitation, upstream calls) and the ids its cancellations name are its choices, which no answer of the doctor provokes in a bounded time (progress tokens it names are judged by S-13/progress)",
    ),
    (
        "S-9/consent",
        "not observable from outside: a proxy's consent page is reached only through a third-party OAuth flow the doctor does not run",
    ),
    (
        "S-10/ssrf",
        "not observable from outside: the server's outbound fetches go where it decides, out of the doctor's sight",
    ),
    (
        "S-19/authorization-url",
        "not observable from outside: a rule for the code that opens authorization URLs (a client or a proxy's browser step), which answers no request",
    ),
    (
        "S-21/sandbox",
        "not observable from outside: the processes a proxy starts are not visible to its clients (sluice doctor --config judges sluice's own configuration)",
    ),
];

/// The verdict of a detector that looked at `judged` things: any evidence
/// fails it, nothing looked at cannot be judged (`nothing` says why), else
/// it passes, with `note`.
fn tally(judged: usize, evidence: Vec<String>, nothing: &str, note: Option<String>) -> Verdict {
    if !evidence.is_empty() {
        fail(evidence)
    } else if judged == 0 {
        cannot(nothing)
    } else {
        Verdict::Pass { note }
    }
}

fn pass() -> Verdict {
    Verdict::Pass { note: None }
}

fn pass_note(note: impl Into<String>) -> Verdict {
    Verdict::Pass {
        note: Some(note.into()),
    }
}

fn fail(evidence: Vec<String>) -> Verdict {
    Verdict::Fail { evidence }
}

fn cannot(reason: impl Into<String>) -> Verdict {
    Verdict::CouldNotJudge {
        reason: reason.into(),
    }
}

/// Not observable on this run: nothing the doctor could do provoked what
/// the rule is about (unlike [`NOT_OBSERVABLE`], which no run can see).
fn unseen(reason: impl Into<String>) -> Verdict {
    Verdict::NotObservable {
        reason: reason.into(),
    }
}

/// Every detector's verdict on `obs`.
pub fn judge(obs: &Observations) -> Vec<Finding> {
    DETECTORS
        .iter()
        .map(|d| d.finding(verdict(d, obs)))
        .collect()
}

/// Why the detector `id` cannot be judged from outside, if it cannot.
pub fn not_observable(id: &str) -> Option<&'static str> {
    NOT_OBSERVABLE
        .iter()
        .find(|(rule, _)| *rule == id)
        .map(|(_, why)| *why)
}

/// The reason given by every detector that needed the server when it could
/// not be reached; the report says why once ([`super::Report::unreachable`]).
pub const NOT_REACHED: &str = "the server was not reached";

fn verdict(d: &Detector, obs: &Observations) -> Verdict {
    if let Some(reason) = not_observable(d.id) {
        return Verdict::NotObservable {
            reason: reason.to_owned(),
        };
    }
    // Static rules read the manifest only.
    match d.id {
        "S-1/stdio-declared" => return s1::stdio_declared(obs),
        "S-1/min-protocol-version" => return s1::min_protocol(obs),
        _ => {}
    }
    if obs.connect_error.is_some() {
        return cannot(NOT_REACHED);
    }
    match d.id {
        "S-7/manifest-version" => s7::manifest_version(obs),
        "S-2/result-type" => s2::result_type(obs),
        "S-3/cache-hints" => s3::cache_hints(obs),
        "S-4/discover" => s4::discover(obs),
        "S-5/resource-server" => auth::resource_server(obs),
        "S-6/list-changed" => lists::list_changed(obs),
        "S-6/list-changed-sent" => lists::list_changed_sent(obs),
        "S-7/version" => s7::version(obs),
        "S-11/output-schema" => s11::output_schema(obs),
        "S-11/error-codes" => s11::error_codes(obs),
        "S-12/invalid-cursor" => s12::invalid_cursor(obs),
        "S-12/opaque-cursor" => s12::opaque_cursor(obs),
        "S-12/pagination" => s12::pagination(obs),
        "S-13/progress" => s13::progress(obs),
        "S-13/cancellation" => s13::cancellation(obs),
        "S-13/init-uncancellable" => s13::initialize_uncancellable(obs),
        "S-14/version-echo" => s14::version_echo(obs),
        "S-14/unknown-version" => s14::unknown_version(obs),
        "S-14/capabilities" => s14::capabilities(obs),
        "S-15/completion-inputs" => load::completion_inputs(obs),
        "S-15/completion-rate-limit" => load::completion_rate(obs),
        "S-16/http-auth" => auth::http_auth(obs),
        "S-17/authorization-servers" => auth::authorization_servers(obs),
        "S-18/session-ids" => session::session_ids(obs),
        "S-18/session-binding" => session::session_binding(obs),
        "S-20/scopes" => auth::scopes(obs),
        "S-22/origin" => transport::origin(obs),
        "S-23/version-header" => transport::version_header(obs),
        "S-24/rate-limit" => load::call_rate(obs),
        "S-25/uri-validation" => resources::uri_validation(obs),
        "S-25/blob-mime" => resources::blob_mime(obs),
        "S-26/cache-scope" => lists::cache_scope(obs),
        "S-27/elicitation" => resources::elicitation(obs),
        "envelope/limit-bounded" => envelope::limit_bounded(obs),
        "envelope/silent-cap" => envelope::silent_cap(obs),
        "envelope/shape" => envelope::shape(obs),
        "envelope/opaque-cursor" => envelope::tool_cursor(obs),
        "envelope/page-bytes" => envelope::page_bytes(obs),
        "boundary/read-budget" => boundary::read_budget(obs),
        "boundary/secrets" => boundary::secrets(obs),
        "poisoning/names" => poisoning::names(obs),
        "poisoning/definitions" => poisoning::definitions(obs),
        _ => cannot("unknown detector"),
    }
}

/// The manifest's `field`: a static rule cannot be judged without a
/// manifest, and fails when the field is missing.
fn manifest_field<'a>(obs: &'a Observations, field: &str) -> Result<&'a Value, Verdict> {
    let manifest = obs
        .manifest
        .as_ref()
        .ok_or_else(|| cannot("static rule: pass --manifest mcp.json to judge it"))?;
    manifest
        .get(field)
        .ok_or_else(|| fail(vec![format!("mcp.json has no \"{field}\"")]))
}

/// `Err` with a passing note when the server speaks a legacy version: a
/// rule about 2026-07-28 results does not apply to it.
fn modern(obs: &Observations) -> Result<(), Verdict> {
    match obs.era {
        Some(Era::Modern) => Ok(()),
        _ => Err(pass_note(format!(
            "not applicable: the server speaks {}",
            obs.protocol_version
                .as_deref()
                .unwrap_or("a legacy version")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Report;
    use crate::doctor::observe::{Call, CatalogOutcome, ListToolProbe, Outcome, Transport};
    use serde_json::json;

    fn report(obs: &Observations) -> Report {
        Report::new("t".into(), "stdio", None, None, judge(obs))
    }

    fn verdict_of<'a>(r: &'a Report, id: &str) -> &'a Verdict {
        let finding = r.findings.iter().find(|f| f.id == id);
        &finding.unwrap_or_else(|| panic!("no finding {id}")).verdict
    }

    fn is(v: &Verdict, kind: &str) -> bool {
        matches!(
            (v, kind),
            (Verdict::Pass { .. }, "pass")
                | (Verdict::Fail { .. }, "fail")
                | (Verdict::CouldNotJudge { .. }, "could-not-judge")
        )
    }

    fn connected() -> Observations {
        Observations {
            transport: Some(Transport::Stdio),
            era: Some(Era::Legacy),
            protocol_version: Some("2025-11-25".into()),
            catalog: Some(CatalogOutcome::Complete { counts: Vec::new() }),
            read_budget: 1 << 20,
            ..Observations::default()
        }
    }

    #[test]
    fn every_rule_of_the_standard_is_judged_in_order() {
        let rules: Vec<&str> = DETECTORS
            .iter()
            .map(|d| d.rule)
            .filter(|r| r.starts_with("S-"))
            .collect::<Vec<_>>()
            .into_iter()
            .fold(Vec::new(), |mut acc, r| {
                if acc.last() != Some(&r) {
                    acc.push(r);
                }
                acc
            });
        let want: Vec<String> = (1..=27).map(|n| format!("S-{n}")).collect();
        assert_eq!(rules, want);
        // The S- detectors come first, and each id names its rule.
        let first_other = DETECTORS.iter().position(|d| !d.rule.starts_with("S-"));
        assert!(
            DETECTORS[first_other.unwrap_or(0)..]
                .iter()
                .all(|d| !d.rule.starts_with("S-"))
        );
        for d in DETECTORS {
            assert!(d.id.starts_with(&format!("{}/", d.rule)), "{}", d.id);
        }
        for (id, _) in NOT_OBSERVABLE {
            assert!(DETECTORS.iter().any(|d| d.id == id), "{id}");
        }
        // Unreached, every finding is still there, in order, and the
        // not-observable ones say so rather than "not reached".
        let obs = Observations {
            connect_error: Some("connection refused".into()),
            ..Observations::default()
        };
        let findings = judge(&obs);
        let ids: Vec<&str> = findings.iter().map(|f| f.id).collect();
        let all: Vec<&str> = DETECTORS.iter().map(|d| d.id).collect();
        assert_eq!(ids, all);
        let n_o = findings
            .iter()
            .filter(|f| matches!(f.verdict, Verdict::NotObservable { .. }))
            .count();
        assert_eq!(n_o, NOT_OBSERVABLE.len());
    }

    #[test]
    fn a_list_tool_that_was_not_called_is_not_judged_by_its_calls() {
        let mut obs = connected();
        obs.tools = vec![
            json!({"name": "list_items", "inputSchema": {"type": "object",
            "properties": {"limit": {"type": "integer"}}}}),
        ];
        obs.not_called = vec![(
            "list_items".into(),
            "not annotated readOnlyHint: true".into(),
        )];
        let r = report(&obs);
        for id in [
            "envelope/silent-cap",
            "envelope/shape",
            "envelope/opaque-cursor",
            "envelope/page-bytes",
        ] {
            assert!(
                is(verdict_of(&r, id), "could-not-judge"),
                "{id}: {:?}",
                verdict_of(&r, id)
            );
        }
        // The schema alone is enough to see an unbounded limit.
        assert!(is(verdict_of(&r, "envelope/limit-bounded"), "fail"));
        // An unread catalog judges no tool at all.
        obs.catalog = None;
        let r = report(&obs);
        assert!(is(
            verdict_of(&r, "envelope/limit-bounded"),
            "could-not-judge"
        ));
        assert!(is(verdict_of(&r, "S-11/output-schema"), "could-not-judge"));
    }

    #[test]
    fn transport_failures_and_caps_are_not_the_servers_fault() {
        let mut obs = connected();
        obs.unknown_tool = Some(Outcome::Failed("HTTP 401 without a JSON-RPC answer".into()));
        obs.invalid_cursor = Some(Outcome::Failed("timeout".into()));
        obs.catalog = Some(CatalogOutcome::Incomplete {
            list: crate::discovery::ListKind::Tools,
            reason: "the list was not read before the deadline".into(),
            fault: false,
        });
        let r = report(&obs);
        for id in ["S-11/error-codes", "S-12/invalid-cursor", "S-12/pagination"] {
            assert!(
                is(verdict_of(&r, id), "could-not-judge"),
                "{id}: {:?}",
                verdict_of(&r, id)
            );
        }
        obs.catalog = Some(CatalogOutcome::Incomplete {
            list: crate::discovery::ListKind::Tools,
            reason: "the upstream's cursors form a cycle".into(),
            fault: true,
        });
        assert!(is(verdict_of(&report(&obs), "S-12/pagination"), "fail"));
    }

    #[test]
    fn pages_are_measured_once_and_oversized_reads_count() {
        let mut obs = connected();
        let tool = json!({"name": "list_items", "annotations": {"readOnlyHint": true},
            "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer", "maximum": 50}}}});
        obs.tools = vec![tool.clone()];
        // 33 KB of rows, sent as structured content and again as text: the
        // page is under 50,000 bytes even though the result is not.
        let rows: Vec<Value> = (0..100)
            .map(|i| json!({"id": i, "body": "x".repeat(300)}))
            .collect();
        let page = json!({"items": rows});
        let result = json!({"structuredContent": page, "content": [{"type": "text", "text": page.to_string()}]});
        obs.list_tools = vec![ListToolProbe {
            tool: "list_items".into(),
            definition: tool.clone(),
            first: Some(Outcome::Result(result)),
            cursors: vec!["7".into()],
            ..ListToolProbe::default()
        }];
        obs.calls = vec![Call {
            tool: "list_items".into(),
            definition: tool,
            outcome: Outcome::TooLarge,
            progress: Vec::new(),
        }];
        let r = report(&obs);
        assert!(
            is(verdict_of(&r, "envelope/page-bytes"), "pass"),
            "{:?}",
            verdict_of(&r, "envelope/page-bytes")
        );
        // A cursor seen on any page, not just the first, is judged.
        assert!(is(verdict_of(&r, "envelope/opaque-cursor"), "fail"));
        // An answer too large to read is over the read budget.
        assert!(is(verdict_of(&r, "boundary/read-budget"), "fail"));
    }
}

/// The detectors judged on recorded observations only (no fixture can
/// play them: auth, a non-loopback listener, a second principal, a
/// negotiated version the fixture does not pick, a load burst), each both
/// ways.
#[cfg(test)]
mod recorded {
    use super::*;
    use crate::doctor::observe::{Burst, HttpProbes, Outcome, SecondPrincipal, Transport};
    use serde_json::json;

    fn kind(obs: &Observations, id: &str) -> &'static str {
        let d = DETECTORS.iter().find(|d| d.id == id).copied();
        match verdict(&d.unwrap_or_else(|| panic!("{id}")), obs) {
            Verdict::Pass { .. } => "pass",
            Verdict::Fail { .. } => "fail",
            Verdict::CouldNotJudge { .. } => "could-not-judge",
            Verdict::NotObservable { .. } => "not-observable",
        }
    }

    const URL: &str = "https://mcp.example/mcp";

    fn behind_auth() -> Observations {
        let prm = json!({"resource": URL, "authorization_servers": ["https://as.example"],
            "scopes_supported": ["mcp:tools"]});
        Observations {
            transport: Some(Transport::Http),
            era: Some(Era::Legacy),
            url: Some(URL.into()),
            http: Some(HttpProbes {
                unauthenticated: Some(401),
                challenge: Some(format!(
                    "Bearer realm=\"mcp\", resource_metadata=\"{URL}/.well-known\""
                )),
                resource_metadata: Some(("m".into(), 200, Some(prm))),
                issuer_metadata: vec![(
                    "https://as.example".into(),
                    200,
                    Some(json!({"issuer": "https://as.example"})),
                )],
                ..HttpProbes::default()
            }),
            ..Observations::default()
        }
    }

    fn http(obs: &mut Observations) -> &mut HttpProbes {
        obs.http.as_mut().unwrap_or_else(|| unreachable!())
    }

    #[test]
    fn resource_server_authorization_servers_and_scopes() {
        let good = behind_auth();
        for id in [
            "S-5/resource-server",
            "S-17/authorization-servers",
            "S-20/scopes",
            "S-16/http-auth",
        ] {
            assert_eq!(kind(&good, id), "pass", "{id}");
        }
        let mut bad = behind_auth();
        http(&mut bad).challenge = Some("Bearer realm=\"mcp\"".into());
        assert_eq!(kind(&bad, "S-5/resource-server"), "fail");
        // Half OAuth fails; bearer tokens with no OAuth at all (no
        // resource_metadata, no document) cannot be judged: whether the
        // server is multi-tenant is not visible.
        let mut named_but_missing = behind_auth();
        http(&mut named_but_missing).resource_metadata = Some(("m".into(), 404, None));
        assert_eq!(kind(&named_but_missing, "S-5/resource-server"), "fail");
        let mut api_keys = behind_auth();
        http(&mut api_keys).challenge = Some("Bearer realm=\"mcp\"".into());
        http(&mut api_keys).resource_metadata = Some(("m".into(), 404, None));
        assert_eq!(kind(&api_keys, "S-5/resource-server"), "could-not-judge");
        let mut bad = behind_auth();
        if let Some((_, _, Some(doc))) = &mut http(&mut bad).resource_metadata {
            doc["resource"] = json!("https://other.example/mcp");
            doc["scopes_supported"] = json!(["mcp:tools", "*"]);
        }
        assert_eq!(kind(&bad, "S-5/resource-server"), "fail");
        assert_eq!(kind(&bad, "S-20/scopes"), "fail");
        // A refused call's challenge names the scope it lacks, or fails.
        let mut scoped = behind_auth();
        let challenge = |scope: &str| {
            Some(format!(
                "Bearer realm=\"mcp\", error=\"insufficient_scope\"{scope}"
            ))
        };
        http(&mut scoped).refused_calls = vec![("t".into(), challenge(", scope=\"files:write\""))];
        assert_eq!(kind(&scoped, "S-20/scopes"), "pass");
        http(&mut scoped).refused_calls = vec![("t".into(), challenge(""))];
        assert_eq!(kind(&scoped, "S-20/scopes"), "fail");
        let mut bad = behind_auth();
        http(&mut bad).issuer_metadata[0].2 = Some(json!({"issuer": "https://evil.example"}));
        assert_eq!(kind(&bad, "S-17/authorization-servers"), "fail");
        if let Some((_, _, Some(doc))) = &mut http(&mut bad).resource_metadata {
            doc["authorization_servers"] = json!([]);
        }
        assert_eq!(kind(&bad, "S-17/authorization-servers"), "fail");
        // Without auth, the OAuth rules do not apply; S-16 judges the address.
        let mut open = behind_auth();
        http(&mut open).unauthenticated = None;
        assert_eq!(kind(&open, "S-5/resource-server"), "pass");
        assert_eq!(kind(&open, "S-16/http-auth"), "fail");
        open.url = Some("http://127.0.0.1:8080/mcp".into());
        assert_eq!(kind(&open, "S-16/http-auth"), "pass");
    }

    #[test]
    fn sessions_and_a_second_principal() {
        let mut obs = behind_auth();
        obs.credentials = true;
        http(&mut obs).session_ids = (0..5)
            .map(|i| format!("u1:{:032x}", 0x9e37_79b9_7f4a_7c15_u128 * (i + 7)))
            .collect();
        assert_eq!(kind(&obs, "S-18/session-ids"), "pass");
        assert_eq!(kind(&obs, "S-18/session-binding"), "could-not-judge");
        obs.second = Some(SecondPrincipal::default());
        http(&mut obs).cross_principal = Some(404);
        assert_eq!(kind(&obs, "S-18/session-binding"), "pass");
        http(&mut obs).cross_principal = Some(200);
        assert_eq!(kind(&obs, "S-18/session-binding"), "fail");
        http(&mut obs).session_ids = vec!["sess-0001".into(), "sess-0002".into()];
        assert_eq!(kind(&obs, "S-18/session-ids"), "fail");
        // S-26: a list that depends on who asks is private.
        let mut modern = behind_auth();
        modern.era = Some(Era::Modern);
        let list = |names: &[&str], scope: &str| {
            let tools: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
            json!({"tools": tools, "cacheScope": scope})
        };
        modern.served = vec![(
            "tools/list".into(),
            Outcome::Result(list(&["a", "b"], "public")),
        )];
        assert_eq!(kind(&modern, "S-26/cache-scope"), "could-not-judge");
        modern.second = Some(SecondPrincipal {
            tools_list: Some(Outcome::Result(list(&["a"], "public"))),
        });
        assert_eq!(kind(&modern, "S-26/cache-scope"), "fail");
        modern.served = vec![(
            "tools/list".into(),
            Outcome::Result(list(&["a", "b"], "private")),
        )];
        modern.second = Some(SecondPrincipal {
            tools_list: Some(Outcome::Result(list(&["a"], "private"))),
        });
        assert_eq!(kind(&modern, "S-26/cache-scope"), "pass");
    }

    #[test]
    fn versioned_capabilities_completions_and_load() {
        let mut obs = Observations {
            transport: Some(Transport::Stdio),
            era: Some(Era::Legacy),
            protocol_version: Some("2025-06-18".into()),
            handshake: Some(json!({"capabilities": {"tools": {}, "completions": {}, "tasks": {}}})),
            ..Observations::default()
        };
        assert_eq!(kind(&obs, "S-14/capabilities"), "fail");
        obs.protocol_version = Some("2025-11-25".into());
        assert_eq!(kind(&obs, "S-14/capabilities"), "pass");
        obs.bad_completion = Some(Outcome::Result(json!({"completion": {"values": ["x"]}})));
        assert_eq!(kind(&obs, "S-15/completion-inputs"), "fail");
        obs.bad_completion = Some(Outcome::Error(
            json!({"code": -32602, "message": "no such prompt"}),
        ));
        assert_eq!(kind(&obs, "S-15/completion-inputs"), "pass");
        assert_eq!(kind(&obs, "S-24/rate-limit"), "could-not-judge");
        obs.allow_load = true;
        obs.call_burst = Some(Burst {
            sent: 30,
            limited: 0,
        });
        obs.completion_burst = Some(Burst {
            sent: 30,
            limited: 28,
        });
        assert_eq!(kind(&obs, "S-24/rate-limit"), "fail");
        assert_eq!(kind(&obs, "S-15/completion-rate-limit"), "pass");
        let limited = Outcome::Error(
            json!({"code": -32011, "message": "rate limited: too many calls",
            "data": {"retryAfterMs": 100}}),
        );
        assert!(is_rate_limit_refusal(&limited));
        assert!(!is_rate_limit_refusal(&Outcome::Error(
            json!({"code": -32602, "message": "bad"})
        )));
    }

    #[test]
    fn discover_is_a_cacheable_result_and_is_error_results_are_not_schema_checked() {
        let mut obs = Observations {
            transport: Some(Transport::Stdio),
            era: Some(Era::Modern),
            discover: Some(Outcome::Result(
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {}}),
            )),
            ..Observations::default()
        };
        assert_eq!(kind(&obs, "S-4/discover"), "fail");
        obs.discover = Some(Outcome::Result(json!({"supportedVersions": ["2026-07-28"],
            "capabilities": {}, "ttlMs": 0, "cacheScope": "public", "resultType": "complete"})));
        assert_eq!(kind(&obs, "S-4/discover"), "pass");
        // sluice's read-budget refusal: isError with structuredContent of
        // its own, not the tool's outputSchema.
        let tool = json!({"name": "t", "outputSchema": {"type": "object", "required": ["rows"]}});
        obs.catalog = Some(crate::doctor::observe::CatalogOutcome::Complete { counts: Vec::new() });
        obs.tools = vec![tool.clone()];
        obs.calls = vec![crate::doctor::observe::Call {
            tool: "t".into(),
            definition: tool,
            outcome: Outcome::Result(json!({"isError": true,
                "structuredContent": {"error": "over the read budget"}})),
            progress: Vec::new(),
        }];
        assert_eq!(kind(&obs, "S-11/output-schema"), "could-not-judge");
    }
}
