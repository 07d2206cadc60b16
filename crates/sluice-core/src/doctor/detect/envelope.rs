//! The envelope rules for a server's list-style tools: a bounded `limit`,
//! no silent cap, an envelope rather than a bare array, opaque cursors,
//! pages under 50,000 bytes.

use serde_json::Value;

use super::{cannot, fail, pass, pass_note, tally};
use crate::boundary::budget;
use crate::doctor::Verdict;
use crate::doctor::observe::{CatalogOutcome, Observations, Outcome};
use crate::doctor::plan::{self, PageShape};
use crate::envelope::DEFAULT_PAGE_BYTES;

/// The largest page a list tool may allow (sluice's own envelope's).
const MAX_LIMIT: u64 = crate::envelope::MAX_LIMIT as u64;
/// The page size of a list tool called without a limit.
const DEFAULT_LIMIT: u64 = crate::envelope::DEFAULT_LIMIT as u64;

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

pub(super) fn limit_bounded(obs: &Observations) -> Verdict {
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
                if max > MAX_LIMIT {
                    evidence.push(format!(
                        "{name}: `{arg}` allows up to {max} rows (at most {MAX_LIMIT})"
                    ));
                }
                if let Some(default) = schema.pointer(&format!("/properties/{arg}/default"))
                    && default.as_u64() != Some(DEFAULT_LIMIT)
                {
                    evidence.push(format!(
                        "{name}: `{arg}` defaults to {default}, not {DEFAULT_LIMIT}"
                    ));
                }
                let probe = obs.list_tools.iter().find(|p| p.tool == name);
                if let Some(Outcome::Result(r)) = probe.and_then(|p| p.first.as_ref())
                    && let Some(rows) = plan::page_view(r).rows
                    && rows as u64 > DEFAULT_LIMIT
                {
                    evidence.push(format!(
                        "{name}: without `{arg}`, a page has {rows} rows (the default is {DEFAULT_LIMIT})"
                    ));
                }
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
    for tool in &tools {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        if let Some(fields) = tool.pointer("/inputSchema/properties/fields") {
            let values: Vec<&str> = fields
                .get("enum")
                .and_then(Value::as_array)
                .map(|e| e.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !(values.contains(&"lite") && values.contains(&"full")) {
                evidence.push(format!("{name}: `fields` does not offer lite and full"));
            }
        }
    }
    if evidence.is_empty() {
        pass()
    } else {
        fail(evidence)
    }
}

pub(super) fn silent_cap(obs: &Observations) -> Verdict {
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

pub(super) fn shape(obs: &Observations) -> Verdict {
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

pub(super) fn tool_cursor(obs: &Observations) -> Verdict {
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

pub(super) fn page_bytes(obs: &Observations) -> Verdict {
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
