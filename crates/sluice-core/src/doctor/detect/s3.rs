//! S-3: 2026-07-28 list and read results carry `ttlMs` and `cacheScope`.

use serde_json::Value;

use super::{modern, tally};
use crate::doctor::Verdict;
use crate::doctor::observe::Observations;

pub(super) fn cache_hints(obs: &Observations) -> Verdict {
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
