//! S-11: structured results match the tool's `outputSchema`, and protocol
//! errors are JSON-RPC errors with codes outside the reserved band.

use serde_json::Value;

use super::{cannot, fail, pass, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{CatalogOutcome, Observations, Outcome};

pub(super) fn output_schema(obs: &Observations) -> Verdict {
    if !matches!(obs.catalog, Some(CatalogOutcome::Complete { .. })) {
        return cannot("the tool list could not be read completely");
    }
    let declares = obs.tools.iter().any(|t| t.get("outputSchema").is_some());
    let mut checked = 0;
    let mut evidence = Vec::new();
    for call in &obs.calls {
        // An MRTR round is no tool result yet, and an execution error
        // (isError) is not held to the outputSchema.
        let Some(result) = call.outcome.result().filter(|r| {
            r.get("resultType").and_then(Value::as_str) != Some("input_required")
                && r.get("isError") != Some(&Value::Bool(true))
        }) else {
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
                evidence.extend(schema_mismatch(&call.tool, content, schema));
            }
            (None, Some(_)) => evidence.push(format!(
                "{}: declares an outputSchema but returned no structuredContent",
                call.tool
            )),
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

/// Why `content`, a tool's structured result, does not match `schema`, its
/// `outputSchema` (`None`: it does).
fn schema_mismatch(tool: &str, content: &Value, schema: &Value) -> Option<String> {
    match jsonschema::validator_for(schema) {
        Ok(validator) => validator.iter_errors(content).next().map(|e| {
            format!(
                // The schema's path only: the instance's may name the
                // payload's own keys.
                "{tool}: structuredContent does not match outputSchema (schema {})",
                e.schema_path().as_str()
            )
        }),
        Err(_) => Some(format!("{tool}: outputSchema is not a valid JSON Schema")),
    }
}

/// Codes the spec itself allocated in its reserved band.
const SPEC_CODES: [i64; 4] = [-32020, -32021, -32022, -32042];

pub(super) fn error_codes(obs: &Observations) -> Verdict {
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
