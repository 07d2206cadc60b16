//! What a server reads and asks for: S-25 (resource URIs validated before
//! they are read; binary contents base64 with a valid MIME type) and S-27
//! (no elicitation asks for sensitive data: the gateway's own judgement,
//! [`crate::elicitation::sensitive_fields`]).

use base64::Engine;
use serde_json::Value;

use super::lists::capabilities;
use super::{cannot, fail, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{Observations, Outcome};
use crate::elicitation;

pub(super) fn uri_validation(obs: &Observations) -> Verdict {
    if capabilities(obs).and_then(|c| c.get("resources")).is_none() {
        return pass_note("not applicable: no resources capability");
    }
    if obs.bad_reads.is_empty() {
        return cannot("no resources/read probe was made");
    }
    let mut evidence = Vec::new();
    for (what, outcome) in &obs.bad_reads {
        match outcome {
            Outcome::Error(_) => {}
            Outcome::Result(_) | Outcome::TooLarge => {
                evidence.push(format!("resources/read of {what} was served"))
            }
            Outcome::Failed(why) => {
                return cannot(format!(
                    "resources/read of {what} got no JSON-RPC answer: {why}"
                ));
            }
        }
    }
    if evidence.is_empty() {
        pass_note(format!(
            "{} bad URIs refused with a JSON-RPC error",
            obs.bad_reads.len()
        ))
    } else {
        fail(evidence)
    }
}

/// Whether `mime` is `type/subtype` (RFC 6838 names, parameters allowed).
fn valid_mime(mime: &str) -> bool {
    let essence = mime.split(';').next().unwrap_or_default().trim();
    let name = |s: &str| {
        !s.is_empty()
            && s.len() <= 127
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    matches!(essence.split_once('/'), Some((t, s)) if name(t) && name(s))
}

/// The binary blocks of a result: `(where, base64 text, mimeType)`.
fn binaries<'a>(method: &'a str, result: &'a Value) -> Vec<(&'a str, &'a str, Option<&'a str>)> {
    let mut out = Vec::new();
    for key in ["contents", "content"] {
        for block in result
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let data = block
                .get("blob")
                .or_else(|| block.get("data"))
                .and_then(Value::as_str);
            if let Some(data) = data {
                let mime = block.get("mimeType").and_then(Value::as_str);
                out.push((method, data, mime));
            }
        }
    }
    out
}

pub(super) fn blob_mime(obs: &Observations) -> Verdict {
    let results = obs
        .served
        .iter()
        .filter_map(|(m, o)| o.result().map(|r| (m.as_str(), r)))
        .chain(
            obs.calls
                .iter()
                .filter_map(|c| c.outcome.result().map(|r| (c.tool.as_str(), r))),
        );
    let mut checked = 0;
    let mut evidence = Vec::new();
    for (place, result) in results {
        for (place, data, mime) in binaries(place, result) {
            checked += 1;
            match mime {
                None => evidence.push(format!("{place}: binary content without a mimeType")),
                Some(m) if !valid_mime(m) => {
                    evidence.push(format!("{place}: mimeType is not type/subtype"))
                }
                Some(_) => {}
            }
            if base64::engine::general_purpose::STANDARD
                .decode(data)
                .is_err()
            {
                evidence.push(format!("{place}: binary content is not base64"));
            }
        }
    }
    evidence.dedup();
    if !evidence.is_empty() {
        fail(evidence)
    } else if checked == 0 {
        cannot("no binary content was served to the doctor")
    } else {
        pass_note(format!("{checked} binary block(s) checked"))
    }
}

pub(super) fn elicitation(obs: &Observations) -> Verdict {
    if obs.calls.is_empty() {
        return cannot("no tool was called, so no elicitation could be seen");
    }
    let evidence: Vec<String> = obs
        .elicitations
        .iter()
        .flat_map(elicitation::sensitive_fields)
        .map(|f| format!("an elicitation asks for field {f:?}, which names sensitive data"))
        .collect();
    if !evidence.is_empty() {
        return fail(evidence);
    }
    pass_note(format!(
        "{} elicitation(s) during {} call(s), none asking for sensitive data",
        obs.elicitations.len(),
        obs.calls.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mime_types() {
        assert!(valid_mime("image/png"));
        assert!(valid_mime("text/plain; charset=utf-8"));
        assert!(!valid_mime("png"));
        assert!(!valid_mime("image/"));
    }

    #[test]
    fn sensitive_elicitations_fail() {
        let mut obs = Observations {
            calls: vec![crate::doctor::observe::Call {
                tool: "t".into(),
                definition: json!({}),
                outcome: Outcome::Result(json!({"content": []})),
                progress: Vec::new(),
            }],
            ..Observations::default()
        };
        obs.elicitations = vec![json!({"message": "Your name?", "requestedSchema": {
            "properties": {"name": {"type": "string"}}}})];
        assert!(matches!(elicitation(&obs), Verdict::Pass { .. }));
        obs.elicitations
            .push(json!({"message": "Log in", "requestedSchema": {
            "properties": {"pw": {"type": "string", "title": "Your Password"}}}}));
        assert!(matches!(elicitation(&obs), Verdict::Fail { .. }));
    }
}
