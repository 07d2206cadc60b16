//! The detectors: one verdict each, from [`Observations`] alone.
//!
//! A rule that does not apply to what the server is (a 2026-07-28 result
//! shape on a 2025-11-25 server, an HTTP header on stdio) passes with a
//! note saying so; a rule that applies but that nothing observed can decide
//! is `could-not-judge`, with the reason. Evidence names methods, tools and
//! fields, and sizes; it never quotes a payload.

use serde_json::Value;

use super::observe::{Call, CatalogOutcome, Observations, Outcome, Transport};
use super::plan::{self, PageShape};
use super::{Detector, Finding, Verdict};
use crate::boundary::budget;
use crate::boundary::redact::Redactor;
use crate::envelope::DEFAULT_PAGE_BYTES;
use crate::protocol::{self, Era};

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
    DISCOVER = "S-4/discover", "S-4", "a server that claims 2026-07-28 answers server/discover",
        "answer server/discover with supportedVersions and capabilities";
    VERSION = "S-7/version", "S-7", "the server's version is observable before auth",
        "put \"version\" in serverInfo and, over HTTP, in an unauthenticated GET /health";
    MANIFEST_VERSION = "S-7/manifest-version", "S-7", "the manifest's version is the served serverInfo.version",
        "publish the version you serve: mcp.json \"version\" must equal serverInfo.version";
    OUTPUT_SCHEMA = "S-11/output-schema", "S-11", "structured results match the tool's outputSchema",
        "declare an outputSchema for every tool that returns structuredContent, and return content that matches it";
    ERROR_CODES = "S-11/error-codes", "S-11", "protocol errors are JSON-RPC errors with codes outside the reserved band",
        "answer an unknown tool with a JSON-RPC error (-32602), and use codes outside -32020..-32099 unless the spec defines them";
    INVALID_CURSOR = "S-12/invalid-cursor", "S-12", "a cursor the server never issued is refused with -32602",
        "validate cursors and answer an unknown one with -32602 Invalid params";
    OPAQUE_CURSOR = "S-12/opaque-cursor", "S-12", "list cursors are opaque",
        "seal or encode list cursors so that they do not expose offsets or backend positions";
    CATALOG = "S-12/pagination", "S-12", "every list can be read to its end (no cycle, repeat or duplicate)",
        "end each list with a page without nextCursor; never repeat a cursor or an entry";
    PROGRESS = "S-13/progress", "S-13", "progress is reported with the caller's progressToken, increasing",
        "send notifications/progress with the request's progressToken and a progress value that increases";
    VERSION_ECHO = "S-14/version-echo", "S-14", "version negotiation answers with a version the server supports",
        "answer initialize with the requested version when supported, else your latest supported version";
    UNKNOWN_VERSION = "S-14/unknown-version", "S-14", "an unknown protocol version is not served as if it were known",
        "answer an unknown version with a supported one (initialize) or -32022 with data.supported (2026-07-28)";
    ORIGIN = "S-22/origin", "S-22", "a foreign Origin is refused with 403",
        "validate Origin against an allowlist and answer 403 before dispatching";
    VERSION_HEADER = "S-23/version-header", "S-23", "an unsupported MCP-Protocol-Version header is refused with 400",
        "answer 400 Bad Request to an invalid or unsupported MCP-Protocol-Version header";
    LIMIT_BOUNDED = "envelope/limit-bounded", "envelope", "list tools take a limit with a maximum, and enforce it",
        "give list tools a `limit` argument with \"maximum\" (200 at most) and refuse or clamp larger values";
    SILENT_CAP = "envelope/silent-cap", "envelope", "list tools never drop rows without a cursor",
        "when a page is cut, return a nextCursor to the rest";
    SHAPE = "envelope/shape", "envelope", "list tools answer an envelope, not a bare array",
        "answer {\"items\": [...], \"nextCursor\": ...} instead of a bare array";
    TOOL_CURSOR = "envelope/opaque-cursor", "envelope", "list tools' cursors are opaque",
        "seal the cursor instead of exposing offsets or backend cursors";
    PAGE_BYTES = "envelope/page-bytes", "envelope", "a list tool's page stays under 50,000 bytes",
        "cap a page at 50,000 bytes (keep the largest prefix of rows that fits, with a cursor to the rest)";
    READ_BUDGET = "boundary/read-budget", "boundary", "read-only results fit the read budget",
        "bound read results (paginate, project fields, or refuse with a fixed error) below the read budget";
    SECRETS = "boundary/secrets", "boundary", "results carry no credentials",
        "never return credentials in results; redact them at the source";
}

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

/// Every detector's verdict on `obs`.
pub fn judge(obs: &Observations) -> Vec<Finding> {
    DETECTORS
        .iter()
        .map(|d| d.finding(verdict(d, obs)))
        .collect()
}

fn verdict(d: &Detector, obs: &Observations) -> Verdict {
    // Static rules read the manifest only.
    match d.id {
        "S-1/stdio-declared" => return stdio_declared(obs),
        "S-1/min-protocol-version" => return min_protocol(obs),
        _ => {}
    }
    if let Some(error) = &obs.connect_error {
        return cannot(format!("no session could be opened: {error}"));
    }
    match d.id {
        "S-7/manifest-version" => manifest_version(obs),
        "S-2/result-type" => result_type(obs),
        "S-3/cache-hints" => cache_hints(obs),
        "S-4/discover" => discover(obs),
        "S-7/version" => version(obs),
        "S-11/output-schema" => output_schema(obs),
        "S-11/error-codes" => error_codes(obs),
        "S-12/invalid-cursor" => invalid_cursor(obs),
        "S-12/opaque-cursor" => opaque_cursor(obs),
        "S-12/pagination" => pagination(obs),
        "S-13/progress" => progress(obs),
        "S-14/version-echo" => version_echo(obs),
        "S-14/unknown-version" => unknown_version(obs),
        "S-22/origin" => http_status(
            obs,
            |h| h.foreign_origin,
            403,
            "a POST with Origin: http://evil.example",
        ),
        "S-23/version-header" => http_status(
            obs,
            |h| h.bad_version_header,
            400,
            "a POST with MCP-Protocol-Version: 1999-01-01",
        ),
        "envelope/limit-bounded" => limit_bounded(obs),
        "envelope/silent-cap" => silent_cap(obs),
        "envelope/shape" => shape(obs),
        "envelope/opaque-cursor" => tool_cursor(obs),
        "envelope/page-bytes" => page_bytes(obs),
        "boundary/read-budget" => read_budget(obs),
        "boundary/secrets" => secrets(obs),
        _ => cannot("unknown detector"),
    }
}

fn manifest_field<'a>(obs: &'a Observations, field: &str) -> Result<&'a Value, Verdict> {
    let manifest = obs
        .manifest
        .as_ref()
        .ok_or_else(|| cannot("static rule: pass --manifest mcp.json to judge it"))?;
    manifest
        .get(field)
        .ok_or_else(|| fail(vec![format!("mcp.json has no \"{field}\"")]))
}

fn stdio_declared(obs: &Observations) -> Verdict {
    let transport = match manifest_field(obs, "transport") {
        Ok(t) => t,
        Err(v) => return v,
    };
    let kinds: Vec<&str> = match transport {
        Value::Array(list) => list
            .iter()
            .filter_map(|t| t.get("type").and_then(Value::as_str))
            .collect(),
        one => one
            .get("type")
            .and_then(Value::as_str)
            .into_iter()
            .collect(),
    };
    if kinds.contains(&"stdio") {
        pass()
    } else {
        fail(vec![format!(
            "mcp.json transport types: {kinds:?}, no \"stdio\""
        )])
    }
}

fn min_protocol(obs: &Observations) -> Verdict {
    match manifest_field(obs, "minProtocolVersion") {
        Ok(Value::String(v)) if v.as_str() >= "2025-06-18" && is_date(v) => pass(),
        Ok(v) => fail(vec![format!(
            "mcp.json minProtocolVersion is {v}, below 2025-06-18 or not a version"
        )]),
        Err(v) => v,
    }
}

fn is_date(v: &str) -> bool {
    v.len() == 10
        && v.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
}

/// `serverInfo` of a handshake result: top level (`initialize`) or in
/// `_meta` (2026-07-28 results).
pub fn server_info(result: &Value) -> Option<&Value> {
    result.get("serverInfo").or_else(|| {
        result
            .get("_meta")
            .and_then(|m| m.get(protocol::META_SERVER_INFO))
    })
}

fn served_version(obs: &Observations) -> Option<&str> {
    let discovered = obs.discover.as_ref().and_then(Outcome::result);
    obs.handshake
        .iter()
        .chain(discovered)
        .filter_map(server_info)
        .find_map(|info| info.get("version"))
        .and_then(Value::as_str)
}

fn manifest_version(obs: &Observations) -> Verdict {
    let declared = match manifest_field(obs, "version") {
        Ok(v) => v.as_str().unwrap_or_default(),
        Err(v) => return v,
    };
    match served_version(obs) {
        Some(served) if served == declared => pass(),
        Some(served) => fail(vec![format!(
            "mcp.json version {declared:?} but serverInfo.version is {served:?}"
        )]),
        None => fail(vec!["serverInfo has no version to compare".into()]),
    }
}

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

fn result_type(obs: &Observations) -> Verdict {
    if let Err(v) = modern(obs) {
        return v;
    }
    let mut seen = 0;
    let mut missing = Vec::new();
    let results = obs
        .served
        .iter()
        .map(|(m, o)| (m.as_str(), o))
        .chain(obs.calls.iter().map(|c| ("tools/call", &c.outcome)));
    for (method, outcome) in results {
        let Some(result) = outcome.result() else {
            continue;
        };
        seen += 1;
        match result.get("resultType").and_then(Value::as_str) {
            Some("complete" | "input_required") => {}
            Some(other) => missing.push(format!(
                "{method}: resultType {other:?} is not complete or input_required"
            )),
            None => missing.push(format!("{method}: no resultType")),
        }
    }
    missing.dedup();
    tally(
        seen,
        missing,
        "no result was served",
        Some(format!("{seen} results checked")),
    )
}

fn cache_hints(obs: &Observations) -> Verdict {
    if let Err(v) = modern(obs) {
        return v;
    }
    const CACHEABLE: [&str; 5] = [
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "resources/read",
    ];
    let mut checked = 0;
    let mut evidence = Vec::new();
    for (method, outcome) in &obs.served {
        let (true, Some(result)) = (CACHEABLE.contains(&method.as_str()), outcome.result()) else {
            continue;
        };
        // An MRTR round carries no hints.
        if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
            continue;
        }
        checked += 1;
        match result.get("ttlMs") {
            None => evidence.push(format!("{method}: no ttlMs")),
            Some(t) if !t.as_f64().is_some_and(|t| t >= 0.0) => {
                evidence.push(format!("{method}: ttlMs is not a number >= 0"))
            }
            Some(_) => {}
        }
        match result.get("cacheScope").and_then(Value::as_str) {
            None if result.get("cacheScope").is_none() => {
                evidence.push(format!("{method}: no cacheScope"))
            }
            Some("public" | "private") => {}
            _ => evidence.push(format!(
                "{method}: cacheScope is not \"public\" or \"private\""
            )),
        }
    }
    tally(
        checked,
        evidence,
        "no list or read result was served",
        Some(format!("{checked} list/read results checked")),
    )
}

fn claims_modern(obs: &Observations) -> bool {
    obs.era == Some(Era::Modern)
        || obs
            .manifest
            .as_ref()
            .and_then(|m| m.get("minProtocolVersion"))
            .and_then(Value::as_str)
            .is_some_and(|v| v >= protocol::MODERN_VERSION)
}

fn discover(obs: &Observations) -> Verdict {
    if !claims_modern(obs) {
        return pass_note("not applicable: the server does not claim 2026-07-28");
    }
    match &obs.discover {
        Some(Outcome::Result(r)) => {
            let mut evidence = Vec::new();
            if !r.get("supportedVersions").is_some_and(Value::is_array) {
                evidence.push("server/discover: no supportedVersions list".into());
            }
            if !r.get("capabilities").is_some_and(Value::is_object) {
                evidence.push("server/discover: no capabilities object".into());
            }
            if evidence.is_empty() {
                pass()
            } else {
                fail(evidence)
            }
        }
        Some(Outcome::Error(e)) => fail(vec![format!(
            "server/discover answered error {}",
            e.get("code").unwrap_or(&Value::Null)
        )]),
        Some(Outcome::Failed(why)) => {
            cannot(format!("server/discover got no JSON-RPC answer: {why}"))
        }
        Some(Outcome::TooLarge) => fail(vec![
            "server/discover: an answer over the transport ceiling".into(),
        ]),
        None => cannot("server/discover was not asked"),
    }
}

fn version(obs: &Observations) -> Verdict {
    let served = served_version(obs).filter(|v| !v.is_empty());
    let health = obs.http.as_ref().and_then(|h| h.health.as_ref());
    match obs.transport {
        Some(Transport::Http) => {
            let health_version = health
                .filter(|(status, _)| *status == 200)
                .and_then(|(_, body)| body.as_ref())
                .and_then(|b| b.get("version"))
                .and_then(Value::as_str);
            match (health_version, served) {
                (Some(h), Some(s)) if h != s => fail(vec![format!(
                    "GET /health version {h:?} differs from serverInfo.version {s:?}"
                )]),
                (Some(_), _) => pass_note("GET /health answers the version without credentials"),
                (None, Some(_)) if obs.http.as_ref().is_some_and(|h| h.unauthenticated.is_some()) => {
                    fail(vec!["the version is only behind auth: GET /health gives none and every MCP request needs credentials".into()])
                }
                (None, Some(_)) => pass_note("serverInfo.version (no GET /health)"),
                (None, None) => fail(vec!["no version in serverInfo, and none at GET /health".into()]),
            }
        }
        _ => match served {
            Some(_) => pass(),
            None => fail(vec!["serverInfo has no version".into()]),
        },
    }
}

fn output_schema(obs: &Observations) -> Verdict {
    if !matches!(obs.catalog, Some(CatalogOutcome::Complete { .. })) {
        return cannot("the tool list could not be read completely");
    }
    let declares = obs.tools.iter().any(|t| t.get("outputSchema").is_some());
    let mut checked = 0;
    let mut evidence = Vec::new();
    for call in &obs.calls {
        // An MRTR round is no tool result yet.
        let Some(result) = call
            .outcome
            .result()
            .filter(|r| r.get("resultType").and_then(Value::as_str) != Some("input_required"))
        else {
            continue;
        };
        let structured = result.get("structuredContent").filter(|s| !s.is_null());
        let schema = call.definition.get("outputSchema");
        match (structured, schema) {
            (Some(_), None) => evidence.push(format!(
                "{}: structuredContent without an outputSchema",
                call.tool
            )),
            (Some(content), Some(schema)) => {
                checked += 1;
                match jsonschema::validator_for(schema) {
                    Ok(validator) => {
                        if let Some(e) = validator.iter_errors(content).next() {
                            evidence.push(format!(
                                // The schema's path only: the instance's may
                                // name the payload's own keys.
                                "{}: structuredContent does not match outputSchema (schema {})",
                                call.tool,
                                e.schema_path().as_str()
                            ));
                        }
                    }
                    Err(_) => evidence.push(format!(
                        "{}: outputSchema is not a valid JSON Schema",
                        call.tool
                    )),
                }
            }
            (None, Some(_)) if result.get("isError") != Some(&Value::Bool(true)) => {
                evidence.push(format!(
                    "{}: declares an outputSchema but returned no structuredContent",
                    call.tool
                ))
            }
            _ => {}
        }
    }
    if !evidence.is_empty() {
        return fail(evidence);
    }
    match (checked, declares) {
        (0, false) => pass_note("no tool declares structured output"),
        (0, true) => cannot(
            "no tool with an outputSchema could be called (read-only ones only, unless --allow-calls)",
        ),
        (n, _) => pass_note(format!("{n} structured result(s) checked")),
    }
}

/// Codes the spec itself allocated in its reserved band.
const SPEC_CODES: [i64; 4] = [-32020, -32021, -32022, -32042];

fn error_codes(obs: &Observations) -> Verdict {
    let mut evidence = Vec::new();
    // A transport failure says nothing about the server's error codes.
    if let Some(Outcome::Failed(why)) = &obs.unknown_tool {
        return cannot(format!(
            "tools/call of an unknown tool got no JSON-RPC answer: {why}"
        ));
    }
    if let Some(Outcome::Result(_)) = &obs.unknown_tool {
        evidence.push(
            "tools/call of an unknown tool: answered with a result (isError), not a JSON-RPC error"
                .into(),
        );
    }
    let outcomes = obs
        .served
        .iter()
        .map(|(m, o)| (m.as_str(), o))
        .chain(obs.calls.iter().map(|c| ("tools/call", &c.outcome)))
        .chain(obs.unknown_tool.iter().map(|o| ("tools/call", o)))
        .chain(obs.invalid_cursor.iter().map(|o| ("tools/list", o)));
    for (method, outcome) in outcomes {
        if let Some(code) = outcome.error_code()
            && (-32099..=-32020).contains(&code)
            && !SPEC_CODES.contains(&code)
        {
            evidence.push(format!(
                "{method}: error code {code} is in the MCP-reserved band -32020..-32099"
            ));
        }
    }
    evidence.dedup();
    match (&obs.unknown_tool, evidence.is_empty()) {
        (_, false) => fail(evidence),
        (None, true) => cannot("no unknown-tool call was made"),
        (Some(_), true) => pass(),
    }
}

fn invalid_cursor(obs: &Observations) -> Verdict {
    match &obs.invalid_cursor {
        Some(o) if o.error_code() == Some(-32602) => pass(),
        Some(Outcome::Error(e)) => fail(vec![format!(
            "tools/list with an unknown cursor: error {} instead of -32602",
            e.get("code").unwrap_or(&Value::Null)
        )]),
        Some(Outcome::Result(_)) => fail(vec![
            "tools/list with an unknown cursor: served a page".into(),
        ]),
        Some(Outcome::Failed(why)) => cannot(format!(
            "tools/list with an unknown cursor got no JSON-RPC answer: {why}"
        )),
        Some(Outcome::TooLarge) => fail(vec![
            "tools/list with an unknown cursor: an answer over the transport ceiling".into(),
        ]),
        None => cannot("the server offers no tools to list"),
    }
}

fn opaque_cursor(obs: &Observations) -> Verdict {
    let exposed: Vec<String> = obs
        .cursors
        .iter()
        .filter_map(|(method, c)| {
            plan::cursor_exposes_position(c).map(|why| format!("{method}: nextCursor {why}"))
        })
        .collect();
    if !exposed.is_empty() {
        let mut exposed = exposed;
        exposed.dedup();
        return fail(exposed);
    }
    if obs.cursors.is_empty() {
        cannot("no list was long enough to page: no cursor to judge")
    } else {
        pass_note(format!("{} cursors checked", obs.cursors.len()))
    }
}

fn pagination(obs: &Observations) -> Verdict {
    match &obs.catalog {
        Some(CatalogOutcome::Complete { counts }) => pass_note(
            counts
                .iter()
                .map(|(k, n)| format!("{}: {n}", k.method()))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Some(CatalogOutcome::Incomplete {
            list,
            reason,
            fault: true,
        }) => fail(vec![format!("{}: {reason}", list.method())]),
        // A cap, a deadline or a lost connection is no proof of a broken
        // list: the walk just did not finish.
        Some(CatalogOutcome::Incomplete { list, reason, .. }) => cannot(format!(
            "{} was not read to its end: {reason}",
            list.method()
        )),
        None => cannot("the catalog was not read"),
    }
}

fn progress(obs: &Observations) -> Verdict {
    if obs.stray_progress > 0 {
        return fail(vec![format!(
            "{} notifications/progress named a progressToken no request carried",
            obs.stray_progress
        )]);
    }
    let reported: Vec<_> = obs
        .calls
        .iter()
        .filter(|c| !c.progress.is_empty())
        .collect();
    if reported.is_empty() {
        return cannot(
            "no called tool reported progress (only read-only tools are called, unless --allow-calls)",
        );
    }
    let mut evidence = Vec::new();
    for call in &reported {
        let values: Vec<f64> = call
            .progress
            .iter()
            .filter_map(|p| p.get("progress").and_then(Value::as_f64))
            .collect();
        if values.len() != call.progress.len() {
            evidence.push(format!(
                "{}: a progress notification without a numeric progress",
                call.tool
            ));
        }
        if values.windows(2).any(|w| w[1] <= w[0]) {
            evidence.push(format!(
                "{}: progress does not increase ({values:?})",
                call.tool
            ));
        }
    }
    if evidence.is_empty() {
        pass_note(format!("{} tool(s) reported progress", reported.len()))
    } else {
        fail(evidence)
    }
}

/// Every published protocol version.
const PUBLISHED_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    protocol::MODERN_VERSION,
];

fn version_echo(obs: &Observations) -> Verdict {
    match obs.era {
        // There is no negotiation to judge: sluice speaks 2026-07-28 to a
        // server only when its server/discover lists it.
        Some(Era::Modern) => pass_note(
            "not applicable: 2026-07-28 has no negotiation (server/discover lists the version)",
        ),
        _ => match obs.protocol_version.as_deref() {
            Some(v) if PUBLISHED_VERSIONS.contains(&v) => {
                pass_note(format!("initialize negotiated {v}"))
            }
            Some(v) => fail(vec![format!(
                "initialize answered protocolVersion {v:?}, not a published version"
            )]),
            None => cannot("no initialize result"),
        },
    }
}

fn unknown_version(obs: &Observations) -> Verdict {
    let Some(outcome) = &obs.unknown_version else {
        return cannot("no request with an unknown version was made");
    };
    match (obs.era, outcome) {
        (Some(Era::Modern), o) if o.error_code() == Some(-32022) => pass(),
        (Some(Era::Modern), Outcome::Result(_)) => fail(vec![
            "a request naming protocol version 1999-01-01 was served".into(),
        ]),
        (Some(Era::Modern), Outcome::Error(e)) => fail(vec![format!(
            "a request naming protocol version 1999-01-01: error {} instead of -32022",
            e.get("code").unwrap_or(&Value::Null)
        )]),
        (_, Outcome::Result(r)) => match r.get("protocolVersion").and_then(Value::as_str) {
            Some("1999-01-01") => fail(vec![
                "initialize with protocolVersion 1999-01-01 echoed it back".into(),
            ]),
            Some(_) => pass(),
            None => fail(vec![
                "initialize with protocolVersion 1999-01-01: no protocolVersion in the result"
                    .into(),
            ]),
        },
        // Refusing an unknown version outright is allowed too.
        (_, Outcome::Error(_)) => pass_note("refused with a JSON-RPC error"),
        (_, Outcome::Failed(why)) => {
            cannot(format!("the request with an unknown version failed: {why}"))
        }
        (_, Outcome::TooLarge) => cannot(
            "the answer to the request with an unknown version was over the transport ceiling",
        ),
    }
}

fn http_status(
    obs: &Observations,
    pick: impl Fn(&super::observe::HttpProbes) -> Option<u16>,
    want: u16,
    what: &str,
) -> Verdict {
    if obs.transport != Some(Transport::Http) {
        return pass_note("not applicable: stdio");
    }
    match obs.http.as_ref().and_then(pick) {
        Some(status) if status == want => pass(),
        Some(status) => fail(vec![format!("{what} got HTTP {status}, not {want}")]),
        None => cannot(format!("{what} could not be sent")),
    }
}

/// The list-style tools of a completely read catalog, or the verdict when
/// there are none (or the catalog could not be read).
fn list_tools(obs: &Observations) -> Result<Vec<&Value>, Verdict> {
    if !matches!(obs.catalog, Some(CatalogOutcome::Complete { .. })) {
        return Err(cannot("the tool list could not be read completely"));
    }
    let tools: Vec<&Value> = obs.tools.iter().filter(|t| plan::is_list_tool(t)).collect();
    if tools.is_empty() {
        return Err(pass_note("not applicable: no list-style tools"));
    }
    Ok(tools)
}

/// Why the list tools that were not probed were not (empty: all were).
fn unprobed(obs: &Observations, tools: &[&Value]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .filter(|name| !obs.list_tools.iter().any(|p| p.tool == *name))
        .map(|name| {
            let why = obs
                .not_called
                .iter()
                .find(|(n, _)| n == name)
                .map_or("not called", |(_, why)| why.as_str());
            format!("{name}: {why}")
        })
        .collect()
}

/// A probe-based envelope verdict: evidence fails; a list tool left
/// unprobed, or nothing judged, cannot be judged.
fn envelope_verdict(
    obs: &Observations,
    tools: &[&Value],
    judged: usize,
    evidence: Vec<String>,
    nothing: &str,
) -> Verdict {
    if !evidence.is_empty() {
        return fail(evidence);
    }
    let missing = unprobed(obs, tools);
    if !missing.is_empty() {
        return cannot(format!("list tools not called: {}", missing.join("; ")));
    }
    tally(judged, evidence, nothing, None)
}

fn limit_bounded(obs: &Observations) -> Verdict {
    let tools = match list_tools(obs) {
        Ok(t) => t,
        Err(v) => return v,
    };
    // The schema alone says whether a limit is bounded: judged for every
    // list tool, called or not.
    let mut evidence = Vec::new();
    for tool in &tools {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
        match plan::limit_param(schema) {
            None => evidence.push(format!("{name}: takes no limit argument")),
            Some((arg, None)) => {
                evidence.push(format!("{name}: `{arg}` has no maximum in its schema"))
            }
            Some((arg, Some(max))) => {
                let probe = obs.list_tools.iter().find(|p| p.tool == name);
                if let Some((asked, Outcome::Result(r))) = probe.and_then(|p| p.huge_limit.as_ref())
                    && r.get("isError") != Some(&Value::Bool(true))
                    && plan::page_view(r)
                        .rows
                        .is_some_and(|rows| rows as u64 > max)
                {
                    evidence.push(format!(
                        "{name}: `{arg}` = {asked} returned more than its maximum {max} rows"
                    ));
                }
            }
        }
    }
    if evidence.is_empty() {
        pass()
    } else {
        fail(evidence)
    }
}

fn silent_cap(obs: &Observations) -> Verdict {
    let tools = match list_tools(obs) {
        Ok(t) => t,
        Err(v) => return v,
    };
    let mut judged = 0;
    let mut evidence = Vec::new();
    for probe in &obs.list_tools {
        let (Some((total, true)), Some((asked, Outcome::Result(r)))) = (probe.drained, &probe.wide)
        else {
            continue;
        };
        judged += 1;
        let page = plan::page_view(r);
        if let Some(rows) = page.rows
            && page.cursor.is_none()
            && rows < total
        {
            evidence.push(format!(
                "{}: a page for limit {asked} has {rows} rows and no cursor, but {total} rows exist (paged one at a time)",
                probe.tool
            ));
        }
    }
    envelope_verdict(
        obs,
        &tools,
        judged,
        evidence,
        "no list tool could be paged one row at a time to the end",
    )
}

fn first_pages(obs: &Observations) -> impl Iterator<Item = (&str, &Value)> {
    obs.list_tools.iter().filter_map(|p| match &p.first {
        Some(Outcome::Result(r)) => Some((p.tool.as_str(), r)),
        _ => None,
    })
}

fn shape(obs: &Observations) -> Verdict {
    let tools = match list_tools(obs) {
        Ok(t) => t,
        Err(v) => return v,
    };
    let mut judged = 0;
    let mut evidence = Vec::new();
    for (tool, r) in first_pages(obs) {
        judged += 1;
        if plan::page_view(r).shape == PageShape::FlatArray {
            evidence.push(format!("{tool}: answers a bare JSON array"));
        }
    }
    envelope_verdict(obs, &tools, judged, evidence, "no list tool answered")
}

fn tool_cursor(obs: &Observations) -> Verdict {
    let tools = match list_tools(obs) {
        Ok(t) => t,
        Err(v) => return v,
    };
    let mut judged = 0;
    let mut evidence = Vec::new();
    for probe in &obs.list_tools {
        for cursor in &probe.cursors {
            judged += 1;
            if let Some(why) = plan::cursor_exposes_position(cursor) {
                evidence.push(format!("{}: the cursor {why}", probe.tool));
                break;
            }
        }
    }
    envelope_verdict(
        obs,
        &tools,
        judged,
        evidence,
        "no list tool returned a cursor",
    )
}

fn page_bytes(obs: &Observations) -> Verdict {
    let tools = match list_tools(obs) {
        Ok(t) => t,
        Err(v) => return v,
    };
    let mut judged = 0;
    let mut evidence = Vec::new();
    for (tool, r) in first_pages(obs) {
        // The page itself: servers often send it twice (structured and as
        // text), and the rule is about the envelope.
        let Some(page) = plan::page_body(r) else {
            continue;
        };
        judged += 1;
        if budget::measure(&page, DEFAULT_PAGE_BYTES + 1) > DEFAULT_PAGE_BYTES {
            evidence.push(format!(
                "{tool}: a page with its default arguments is over {DEFAULT_PAGE_BYTES} bytes"
            ));
        }
    }
    envelope_verdict(
        obs,
        &tools,
        judged,
        evidence,
        "no list tool answered with a page",
    )
}

fn is_read_only(call: &Call) -> bool {
    call.definition
        .pointer("/annotations/readOnlyHint")
        .and_then(Value::as_bool)
        == Some(true)
}

fn read_budget(obs: &Observations) -> Verdict {
    let mut judged = 0;
    let mut evidence = Vec::new();
    for call in obs.calls.iter().filter(|c| is_read_only(c)) {
        match &call.outcome {
            Outcome::Result(r) => {
                judged += 1;
                if budget::measure(r, obs.read_budget.saturating_add(1)) > obs.read_budget {
                    evidence.push(format!(
                        "{}: its result is over the read budget of {} bytes",
                        call.tool, obs.read_budget
                    ));
                }
            }
            Outcome::TooLarge => {
                judged += 1;
                evidence.push(format!(
                    "{}: its result is over the transport ceiling (not even read)",
                    call.tool
                ));
            }
            Outcome::Error(_) | Outcome::Failed(_) => {}
        }
    }
    tally(
        judged,
        evidence,
        "no read-only tool answered",
        Some(format!("{judged} read-only results measured")),
    )
}

fn secrets(obs: &Observations) -> Verdict {
    // Value patterns only: a key named `token` in a result is not a leak
    // by itself, a GitHub token is.
    let redactor = Redactor::new(Vec::new(), &[] as &[&str]);
    let mut any = 0;
    let mut evidence = Vec::new();
    let results = obs
        .calls
        .iter()
        .filter_map(|c| c.outcome.result().map(|r| (c.tool.as_str(), r)))
        .chain(
            obs.served
                .iter()
                .filter_map(|(m, o)| o.result().map(|r| (m.as_str(), r))),
        );
    for (what, r) in results {
        any += 1;
        let mut copy = r.clone();
        let found = redactor.redact(&mut copy).pattern;
        if found > 0 {
            evidence.push(format!("{what}: {found} credential pattern match(es)"));
        }
    }
    tally(
        any,
        evidence,
        "no result was served",
        Some(format!("{any} results scanned")),
    )
}
