//! S-2: 2026-07-28 results carry `resultType`.

use serde_json::Value;

use super::{modern, tally};
use crate::doctor::Verdict;
use crate::doctor::observe::Observations;

pub(super) fn result_type(obs: &Observations) -> Verdict {
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
