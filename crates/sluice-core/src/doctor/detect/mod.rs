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

mod boundary;
mod envelope;
mod poisoning;
mod s1;
mod s11;
mod s12;
mod s13;
mod s14;
mod s2;
mod s3;
mod s4;
mod s7;
mod transport;

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
    TOOL_NAMES = "poisoning/names", "poisoning", "tool names are 1 to 128 characters of A-Za-z0-9_.- (MCP 2025-11-25)",
        "rename tools to 1-128 characters of letters, digits, _ - and . (no spaces, controls or invisible characters)";
    DEFINITIONS = "poisoning/definitions", "poisoning", "tool definitions describe the tool, with no instructions aimed at the model",
        "remove what addresses the model (hidden instructions, invisible characters, URLs, exfiltration-shaped parameters) from descriptions and schemas";
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
        "S-1/stdio-declared" => return s1::stdio_declared(obs),
        "S-1/min-protocol-version" => return s1::min_protocol(obs),
        _ => {}
    }
    if let Some(error) = &obs.connect_error {
        return cannot(format!("no session could be opened: {error}"));
    }
    match d.id {
        "S-7/manifest-version" => s7::manifest_version(obs),
        "S-2/result-type" => s2::result_type(obs),
        "S-3/cache-hints" => s3::cache_hints(obs),
        "S-4/discover" => s4::discover(obs),
        "S-7/version" => s7::version(obs),
        "S-11/output-schema" => s11::output_schema(obs),
        "S-11/error-codes" => s11::error_codes(obs),
        "S-12/invalid-cursor" => s12::invalid_cursor(obs),
        "S-12/opaque-cursor" => s12::opaque_cursor(obs),
        "S-12/pagination" => s12::pagination(obs),
        "S-13/progress" => s13::progress(obs),
        "S-14/version-echo" => s14::version_echo(obs),
        "S-14/unknown-version" => s14::unknown_version(obs),
        "S-22/origin" => transport::origin(obs),
        "S-23/version-header" => transport::version_header(obs),
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
