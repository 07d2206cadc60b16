//! Completions and rate limits: S-15 (completion inputs validated, and
//! completions rate limited) and S-24 (tool calls rate limited). A rate
//! limit is only seen by sending a burst of requests, which the doctor
//! does only with `--allow-load`.

use super::lists::capabilities;
use super::{cannot, fail, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{Burst, Observations, Outcome};

fn declares(obs: &Observations, capability: &str) -> bool {
    capabilities(obs).and_then(|c| c.get(capability)).is_some()
}

pub(super) fn completion_inputs(obs: &Observations) -> Verdict {
    if !declares(obs, "completions") {
        return pass_note("not applicable: no completions capability");
    }
    match &obs.bad_completion {
        Some(Outcome::Error(_)) => pass_note("refused with a JSON-RPC error"),
        Some(Outcome::Result(_)) | Some(Outcome::TooLarge) => fail(vec![
            "completion/complete for a prompt that does not exist was answered".into(),
        ]),
        Some(Outcome::Failed(why)) => {
            cannot(format!("completion/complete got no JSON-RPC answer: {why}"))
        }
        None => cannot("completion/complete was not asked"),
    }
}

fn rate_limited(obs: &Observations, burst: Option<Burst>, what: &str) -> Verdict {
    if !obs.allow_load {
        return cannot(format!(
            "a rate limit on {what} is probed only with --allow-load (a burst of requests)"
        ));
    }
    match burst {
        None => cannot(format!("no burst of {what} could be sent")),
        Some(Burst { sent, limited: 0 }) => fail(vec![format!(
            "{sent} {what} sent in a burst, none refused as rate limited"
        )]),
        Some(Burst { sent, limited }) => {
            pass_note(format!("{limited} of {sent} {what} in a burst refused"))
        }
    }
}

pub(super) fn completion_rate(obs: &Observations) -> Verdict {
    if !declares(obs, "completions") {
        return pass_note("not applicable: no completions capability");
    }
    rate_limited(obs, obs.completion_burst, "completion/complete requests")
}

pub(super) fn call_rate(obs: &Observations) -> Verdict {
    if !declares(obs, "tools") {
        return pass_note("not applicable: no tools capability");
    }
    rate_limited(obs, obs.call_burst, "tools/call requests")
}

/// Whether `outcome` refuses a request as over a rate limit: a JSON-RPC
/// error that says so (or carries `data.retryAfterMs`), or HTTP 429.
pub fn is_rate_limit_refusal(outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Error(e) => {
            let message = e
                .get("message")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_ascii_lowercase();
            message.contains("rate limit")
                || message.contains("too many requests")
                || e.pointer("/data/retryAfterMs").is_some()
        }
        Outcome::Failed(why) => why.contains("HTTP 429"),
        _ => false,
    }
}
