//! S-7: the server's version is observable before auth, and is the one
//! the manifest publishes.

use serde_json::Value;

use super::{fail, manifest_field, pass, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{Observations, Outcome, Transport};
use crate::protocol;

/// `serverInfo` of a handshake result: top level (`initialize`) or in
/// `_meta` (2026-07-28 results).
pub fn server_info(result: &Value) -> Option<&Value> {
    result.get("serverInfo").or_else(|| {
        result
            .get("_meta")
            .and_then(|m| m.get(protocol::META_SERVER_INFO))
    })
}

fn served_version(obs: &Observations) -> Option<&str> {
    let discovered = obs.discover.as_ref().and_then(Outcome::result);
    obs.handshake
        .iter()
        .chain(discovered)
        .filter_map(server_info)
        .find_map(|info| info.get("version"))
        .and_then(Value::as_str)
}

pub(super) fn manifest_version(obs: &Observations) -> Verdict {
    let declared = match manifest_field(obs, "version") {
        Ok(v) => v.as_str().unwrap_or_default(),
        Err(v) => return v,
    };
    match served_version(obs) {
        Some(served) if served == declared => pass(),
        Some(served) => fail(vec![format!(
            "mcp.json version {declared:?} but serverInfo.version is {served:?}"
        )]),
        None => fail(vec!["serverInfo has no version to compare".into()]),
    }
}

pub(super) fn version(obs: &Observations) -> Verdict {
    let served = served_version(obs).filter(|v| !v.is_empty());
    let health = obs.http.as_ref().and_then(|h| h.health.as_ref());
    match obs.transport {
        Some(Transport::Http) => {
            let health_version = health
                .filter(|(status, _)| *status == 200)
                .and_then(|(_, body)| body.as_ref())
                .and_then(|b| b.get("version"))
                .and_then(Value::as_str);
            match (health_version, served) {
                (Some(h), Some(s)) if h != s => fail(vec![format!(
                    "GET /health version {h:?} differs from serverInfo.version {s:?}"
                )]),
                (Some(_), _) => pass_note("GET /health answers the version without credentials"),
                (None, Some(_)) if obs.http.as_ref().is_some_and(|h| h.unauthenticated.is_some()) => {
                    fail(vec!["the version is only behind auth: GET /health gives none and every MCP request needs credentials".into()])
                }
                (None, Some(_)) => pass_note("serverInfo.version (no GET /health)"),
                (None, None) => fail(vec!["no version in serverInfo, and none at GET /health".into()]),
            }
        }
        _ => match served {
            Some(_) => pass(),
            None => fail(vec!["serverInfo has no version".into()]),
        },
    }
}
