//! S-14: version negotiation answers with a version the server supports,
//! and an unknown version is not served as if it were known.

use serde_json::Value;

use super::{cannot, fail, pass, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{Observations, Outcome};
use crate::protocol::{self, Era};

/// Every published protocol version.
const PUBLISHED_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    protocol::MODERN_VERSION,
];

pub(super) fn version_echo(obs: &Observations) -> Verdict {
    match obs.era {
        // There is no negotiation to judge: sluice speaks 2026-07-28 to a
        // server only when its server/discover lists it.
        Some(Era::Modern) => pass_note(
            "not applicable: 2026-07-28 has no negotiation (server/discover lists the version)",
        ),
        _ => match obs.protocol_version.as_deref() {
            Some(v) if PUBLISHED_VERSIONS.contains(&v) => {
                pass_note(format!("initialize negotiated {v}"))
            }
            Some(v) => fail(vec![format!(
                "initialize answered protocolVersion {v:?}, not a published version"
            )]),
            None => cannot("no initialize result"),
        },
    }
}

pub(super) fn unknown_version(obs: &Observations) -> Verdict {
    let Some(outcome) = &obs.unknown_version else {
        return cannot("no request with an unknown version was made");
    };
    match (obs.era, outcome) {
        (Some(Era::Modern), o) if o.error_code() == Some(-32022) => pass(),
        (Some(Era::Modern), Outcome::Result(_)) => fail(vec![
            "a request naming protocol version 1999-01-01 was served".into(),
        ]),
        (Some(Era::Modern), Outcome::Error(e)) => fail(vec![format!(
            "a request naming protocol version 1999-01-01: error {} instead of -32022",
            e.get("code").unwrap_or(&Value::Null)
        )]),
        (_, Outcome::Result(r)) => match r.get("protocolVersion").and_then(Value::as_str) {
            Some("1999-01-01") => fail(vec![
                "initialize with protocolVersion 1999-01-01 echoed it back".into(),
            ]),
            Some(_) => pass(),
            None => fail(vec![
                "initialize with protocolVersion 1999-01-01: no protocolVersion in the result"
                    .into(),
            ]),
        },
        // Refusing an unknown version outright is allowed too.
        (_, Outcome::Error(_)) => pass_note("refused with a JSON-RPC error"),
        (_, Outcome::Failed(why)) => {
            cannot(format!("the request with an unknown version failed: {why}"))
        }
        (_, Outcome::TooLarge) => cannot(
            "the answer to the request with an unknown version was over the transport ceiling",
        ),
    }
}

/// Server capabilities that later revisions added, with the revision that
/// added each: a server that negotiated an older one must not declare it.
const ADDED_CAPABILITIES: [(&str, &str); 2] =
    [("completions", "2025-03-26"), ("tasks", "2025-11-25")];

pub(super) fn capabilities(obs: &Observations) -> Verdict {
    if obs.era == Some(Era::Modern) {
        return pass_note(
            "not applicable: 2026-07-28 lists its capabilities per version in server/discover",
        );
    }
    let (Some(version), Some(caps)) = (
        obs.protocol_version.as_deref(),
        obs.handshake.as_ref().and_then(|h| h.get("capabilities")),
    ) else {
        return cannot("no initialize result with capabilities");
    };
    // Dates in ISO form compare as strings.
    let evidence: Vec<String> = ADDED_CAPABILITIES
        .iter()
        .filter(|(name, since)| caps.get(*name).is_some() && version < *since)
        .map(|(name, since)| {
            format!("initialize negotiated {version} but declares {name}, added in {since}")
        })
        .collect();
    if evidence.is_empty() {
        pass_note(format!("every capability exists in {version}"))
    } else {
        fail(evidence)
    }
}
