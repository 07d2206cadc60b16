//! How a server keeps clients' copies of its lists right: S-6 (a tool set
//! that can change is announced: `tools.listChanged` declared) and S-26
//! (a list that depends on the caller is not cached as public).

use serde_json::Value;

use super::{cannot, fail, modern, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{Observations, Outcome};

/// The capabilities the handshake declared.
pub(super) fn capabilities(obs: &Observations) -> Option<&Value> {
    obs.handshake.as_ref()?.get("capabilities")
}

pub(super) fn list_changed(obs: &Observations) -> Verdict {
    let Some(caps) = capabilities(obs) else {
        return cannot("the handshake declared no capabilities");
    };
    match caps.get("tools") {
        None => pass_note("not applicable: no tools capability"),
        Some(tools) if tools.get("listChanged") == Some(&Value::Bool(true)) => {
            pass_note("tools.listChanged declared")
        }
        Some(_) => fail(vec![
            "capabilities.tools does not declare listChanged: a change of the tool set cannot be announced"
                .into(),
        ]),
    }
}

fn tool_names(result: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = result
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    names.sort_unstable();
    names
}

pub(super) fn cache_scope(obs: &Observations) -> Verdict {
    if let Err(v) = modern(obs) {
        return v;
    }
    let Some(second) = &obs.second else {
        return cannot("needs a second principal: pass --second-bearer-env VAR");
    };
    let first = obs
        .served
        .iter()
        .find(|(m, _)| m == "tools/list")
        .and_then(|(_, o)| o.result());
    let (Some(first), Some(Outcome::Result(other))) = (first, &second.tools_list) else {
        return cannot("tools/list was not served to both principals");
    };
    if tool_names(first) == tool_names(other) {
        return pass_note("both principals are served the same tools");
    }
    let public: Vec<String> = [("first", first), ("second", other)]
        .iter()
        .filter(|(_, r)| r.get("cacheScope").and_then(Value::as_str) != Some("private"))
        .map(|(who, _)| {
            format!("tools/list differs by principal but the {who} principal's is not cacheScope private")
        })
        .collect();
    if public.is_empty() {
        pass_note("tools/list differs by principal and is cacheScope private")
    } else {
        fail(public)
    }
}
