//! How a server keeps clients' copies of its lists right: S-6 (a tool set
//! that can change is announced: `tools.listChanged` declared, and the
//! notification sent when a call changed the list) and S-26 (a list that
//! depends on the caller is not cached as public).

use serde_json::Value;

use super::{cannot, fail, modern, pass_note, unseen};
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

/// The sorted names of `tools`.
fn names(tools: &[Value]) -> Vec<&str> {
    let mut names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    names.sort_unstable();
    names
}

pub(super) fn list_changed_sent(obs: &Observations) -> Verdict {
    let declared = capabilities(obs)
        .and_then(|c| c.get("tools"))
        .and_then(|t| t.get("listChanged"))
        == Some(&Value::Bool(true));
    if !declared {
        return pass_note(
            "not applicable: tools.listChanged is not declared (S-6/list-changed judges that)",
        );
    }
    let Some(after) = &obs.tools_after_calls else {
        return unseen(
            "no tool was called, so nothing changed the tool list: whether a change would be announced cannot be seen (--allow-calls calls tools annotated destructiveHint: false)",
        );
    };
    let (before, after) = (names(&obs.tools), names(after));
    if before == after {
        return unseen(format!(
            "none of the {} call(s) made changed the tool list: whether a change would be announced cannot be seen",
            obs.calls.len()
        ));
    }
    if obs.tools_list_changed > 0 {
        pass_note(format!(
            "the tool list changed during the calls ({} tools, then {}) and notifications/tools/list_changed arrived",
            before.len(),
            after.len()
        ))
    } else {
        fail(vec![format!(
            "the tool list changed during the calls ({} tools, then {}) but no notifications/tools/list_changed arrived",
            before.len(),
            after.len()
        )])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::observe::Call;
    use serde_json::json;

    fn tools(names: &[&str]) -> Vec<Value> {
        names.iter().map(|n| json!({"name": n})).collect()
    }

    fn declared(list_changed: bool) -> Observations {
        Observations {
            handshake: Some(json!({"capabilities": {"tools": {"listChanged": list_changed}}})),
            tools: tools(&["a", "b"]),
            calls: vec![Call {
                tool: "a".into(),
                definition: json!({"name": "a"}),
                outcome: Outcome::Result(json!({})),
                progress: Vec::new(),
            }],
            ..Observations::default()
        }
    }

    fn kind(v: &Verdict) -> &'static str {
        match v {
            Verdict::Pass { .. } => "pass",
            Verdict::Fail { .. } => "fail",
            Verdict::CouldNotJudge { .. } => "could-not-judge",
            Verdict::NotObservable { .. } => "not-observable",
        }
    }

    #[test]
    fn a_changed_tool_list_is_announced() {
        let mut obs = declared(true);
        // Nothing called, or nothing changed: not seen, never a pass.
        assert_eq!(kind(&list_changed_sent(&obs)), "not-observable");
        obs.tools_after_calls = Some(tools(&["b", "a"]));
        assert_eq!(kind(&list_changed_sent(&obs)), "not-observable");
        obs.tools_after_calls = Some(tools(&["a", "b", "c"]));
        assert_eq!(
            list_changed_sent(&obs),
            fail(vec![
                "the tool list changed during the calls (2 tools, then 3) but no notifications/tools/list_changed arrived"
                    .into()
            ])
        );
        obs.tools_list_changed = 1;
        assert_eq!(kind(&list_changed_sent(&obs)), "pass");
        // A tool removed counts as a change too.
        obs.tools_after_calls = Some(tools(&["a"]));
        obs.tools_list_changed = 0;
        assert_eq!(kind(&list_changed_sent(&obs)), "fail");
        // Not declared: S-6/list-changed judges that, this does not apply.
        let mut obs = declared(false);
        obs.tools_after_calls = Some(tools(&["a"]));
        assert_eq!(kind(&list_changed_sent(&obs)), "pass");
    }
}
