//! S-4: a server that claims 2026-07-28 answers `server/discover`.

use serde_json::Value;

use super::{cannot, fail, pass, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{Observations, Outcome};
use crate::protocol::{self, Era};

fn claims_modern(obs: &Observations) -> bool {
    obs.era == Some(Era::Modern)
        || obs
            .manifest
            .as_ref()
            .and_then(|m| m.get("minProtocolVersion"))
            .and_then(Value::as_str)
            .is_some_and(|v| v >= protocol::MODERN_VERSION)
}

pub(super) fn discover(obs: &Observations) -> Verdict {
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
            // DiscoverResult extends CacheableResult (S-2, S-3).
            if !r.get("ttlMs").is_some_and(Value::is_u64) {
                evidence.push("server/discover: no ttlMs (a non-negative integer)".into());
            }
            if !matches!(
                r.get("cacheScope").and_then(Value::as_str),
                Some("public" | "private")
            ) {
                evidence.push("server/discover: no cacheScope (public or private)".into());
            }
            if r.get("resultType").and_then(Value::as_str) != Some("complete") {
                evidence.push("server/discover: resultType is not \"complete\"".into());
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
