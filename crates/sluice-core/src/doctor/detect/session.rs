//! S-18: session ids are unpredictable and bound to the principal that
//! opened them. Only a legacy Streamable HTTP server has sessions: stdio
//! and 2026-07-28 (sessionless) are not applicable.

use super::{cannot, fail, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{HttpProbes, Observations, Transport};
use crate::protocol::Era;

/// The fewest characters the part of a session id that varies from one
/// session to the next must have (16 hex digits: 64 bits).
const MIN_VARYING_CHARS: usize = 16;

fn sessions(obs: &Observations) -> Result<&HttpProbes, Verdict> {
    if obs.transport != Some(Transport::Http) {
        return Err(pass_note("not applicable: stdio"));
    }
    if obs.era == Some(Era::Modern) {
        return Err(pass_note("not applicable: 2026-07-28 has no sessions"));
    }
    obs.http
        .as_ref()
        .ok_or_else(|| cannot("the HTTP probes could not be sent"))
}

/// The part of each id between what all of them share at the start and at
/// the end (a `<user>:` prefix binds a session; it is not randomness).
fn varying_parts(ids: &[String]) -> Vec<&str> {
    let first = ids[0].as_bytes();
    let prefix = ids
        .iter()
        .map(|id| {
            first
                .iter()
                .zip(id.as_bytes())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .min()
        .unwrap_or(0);
    let suffix = ids
        .iter()
        .map(|id| {
            first
                .iter()
                .rev()
                .zip(id.as_bytes().iter().rev())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .min()
        .unwrap_or(0);
    ids.iter()
        .map(|id| {
            let end = id.len().saturating_sub(suffix).max(prefix);
            id.get(prefix..end).unwrap_or_default()
        })
        .collect()
}

pub(super) fn session_ids(obs: &Observations) -> Verdict {
    let http = match sessions(obs) {
        Ok(h) => h,
        Err(v) => return v,
    };
    let ids = &http.session_ids;
    if ids.is_empty() {
        if http.unauthenticated.is_some() && !obs.credentials {
            return cannot("sessions are behind auth: pass --bearer-env VAR or --header");
        }
        return pass_note("no Mcp-Session-Id issued: the server keeps no sessions");
    }
    if ids.len() < 2 {
        return cannot("only one session could be opened");
    }
    let mut evidence = Vec::new();
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    if distinct.len() < ids.len() {
        evidence.push(format!(
            "{} sessions opened, {} distinct ids",
            ids.len(),
            distinct.len()
        ));
    }
    let varying = varying_parts(ids);
    let shortest = varying.iter().map(|v| v.chars().count()).min().unwrap_or(0);
    if shortest < MIN_VARYING_CHARS {
        evidence.push(format!(
            "only {shortest} characters of the session id vary from one session to the next (at least {MIN_VARYING_CHARS} wanted)"
        ));
    }
    let numbers: Vec<u128> = varying.iter().filter_map(|v| v.parse().ok()).collect();
    if numbers.len() == ids.len() && numbers.windows(2).all(|w| w[1].abs_diff(w[0]) < 1_000_000) {
        evidence.push("session ids are numbers that follow one another".into());
    }
    if evidence.is_empty() {
        pass_note(format!(
            "{} sessions: distinct ids, at least {shortest} varying characters",
            ids.len()
        ))
    } else {
        fail(evidence)
    }
}

pub(super) fn session_binding(obs: &Observations) -> Verdict {
    let http = match sessions(obs) {
        Ok(h) => h,
        Err(v) => return v,
    };
    if obs.second.is_none() {
        return cannot("needs a second principal: pass --second-bearer-env VAR");
    }
    if http.session_ids.is_empty() {
        return pass_note("no Mcp-Session-Id issued: the server keeps no sessions");
    }
    match http.cross_principal {
        Some(status) if (200..300).contains(&status) => fail(vec![format!(
            "a session opened by the first principal served the second one (HTTP {status})"
        )]),
        Some(status) => pass_note(format!(
            "the second principal is refused the first one's session (HTTP {status})"
        )),
        None => cannot("the session could not be tried with the second principal"),
    }
}
