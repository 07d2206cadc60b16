//! S-1: the manifest declares stdio and a recent enough protocol (static
//! rules: they read `mcp.json` only).

use serde_json::Value;

use super::{fail, manifest_field, pass};
use crate::doctor::Verdict;
use crate::doctor::observe::Observations;

pub(super) fn stdio_declared(obs: &Observations) -> Verdict {
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

pub(super) fn min_protocol(obs: &Observations) -> Verdict {
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
