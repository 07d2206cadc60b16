//! S-13: progress is reported with the caller's `progressToken`,
//! increasing, and names no request that is not active: a token no request
//! carried, or one whose request was already answered, is a stale id.
//! Cancellation is fire-and-forget (the server keeps serving; an answer to
//! the cancelled request is allowed, MCP 2025-06-18
//! `basic/utilities/cancellation`), and `initialize` is never cancelled.

use serde_json::Value;

use super::{cannot, fail, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{Observations, Outcome, Transport};
use crate::protocol::Era;

/// Why `outcome`, the answer to `method` sent after a cancellation, shows
/// a server that stopped serving; `None` for a result.
fn not_served(method: &str, outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Result(_) => None,
        Outcome::Error(_) => Some(format!(
            "{method} was answered error {}",
            outcome
                .error_code()
                .map_or_else(|| "without a code".to_owned(), |c| c.to_string())
        )),
        Outcome::TooLarge => Some(format!("{method}'s answer was too large to read")),
        Outcome::Failed(why) => Some(format!("{method} got no answer ({why})")),
    }
}

pub(super) fn cancellation(obs: &Observations) -> Verdict {
    let Some(probe) = &obs.cancellation else {
        return cannot("the cancellation probe could not be sent");
    };
    if let Some(why) = not_served(&probe.next_method, &probe.next) {
        return fail(vec![format!(
            "after notifications/cancelled for {}, {why}",
            probe.method
        )]);
    }
    let answered = match &probe.cancelled {
        Some(_) => "; the cancelled request was answered too (allowed)",
        None => "",
    };
    pass_note(format!(
        "{} cancelled, then {} answered{answered}",
        probe.method, probe.next_method
    ))
}

pub(super) fn initialize_uncancellable(obs: &Observations) -> Verdict {
    if obs.era == Some(Era::Modern) {
        return pass_note("not applicable: 2026-07-28 has no initialize");
    }
    if obs.transport == Some(Transport::Http) {
        // The session id a notification must carry comes with the
        // initialize's answer: a cancellation cannot race it.
        return pass_note(
            "not applicable over HTTP: a notification reaches the session only once initialize is answered",
        );
    }
    let Some(probe) = &obs.initialize_cancelled else {
        return cannot("the cancelled-initialize probe could not be sent");
    };
    if let Some(why) = not_served("initialize", &probe.initialize) {
        return fail(vec![format!(
            "with notifications/cancelled naming it, {why}"
        )]);
    }
    match &probe.next {
        None => cannot("no ping was sent after the initialize"),
        Some(next) => match not_served("ping", next) {
            Some(why) => fail(vec![format!(
                "after an initialize followed by notifications/cancelled naming it, {why}"
            )]),
            None => {
                pass_note("initialize answered despite the cancellation, and its session served")
            }
        },
    }
}

pub(super) fn progress(obs: &Observations) -> Verdict {
    if obs.stray_progress > 0 {
        return fail(vec![format!(
            "{} notifications/progress named a progressToken no active request carried",
            obs.stray_progress
        )]);
    }
    let reported: Vec<_> = obs
        .calls
        .iter()
        .filter(|c| !c.progress.is_empty())
        .collect();
    if reported.is_empty() {
        return cannot(
            "no called tool reported progress (only read-only tools are called, unless --allow-calls)",
        );
    }
    let mut evidence = Vec::new();
    for call in &reported {
        let values: Vec<f64> = call
            .progress
            .iter()
            .filter_map(|p| p.get("progress").and_then(Value::as_f64))
            .collect();
        if values.len() != call.progress.len() {
            evidence.push(format!(
                "{}: a progress notification without a numeric progress",
                call.tool
            ));
        }
        if values.windows(2).any(|w| w[1] <= w[0]) {
            evidence.push(format!(
                "{}: progress does not increase ({values:?})",
                call.tool
            ));
        }
    }
    if evidence.is_empty() {
        pass_note(format!("{} tool(s) reported progress", reported.len()))
    } else {
        fail(evidence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::observe::{CancelProbe, InitializeCancelProbe};
    use serde_json::json;

    fn stdio_legacy() -> Observations {
        Observations {
            transport: Some(Transport::Stdio),
            era: Some(Era::Legacy),
            ..Observations::default()
        }
    }

    fn probe(cancelled: Option<Outcome>, next: Outcome) -> CancelProbe {
        CancelProbe {
            method: "tools/list".into(),
            cancelled,
            next_method: "ping".into(),
            next,
        }
    }

    #[test]
    fn a_cancellation_is_fire_and_forget() {
        let mut obs = stdio_legacy();
        assert!(matches!(cancellation(&obs), Verdict::CouldNotJudge { .. }));
        obs.cancellation = Some(probe(None, Outcome::Result(json!({}))));
        assert_eq!(
            cancellation(&obs),
            pass_note("tools/list cancelled, then ping answered")
        );
        // Answering the cancelled request anyway is allowed.
        obs.cancellation = Some(probe(
            Some(Outcome::Result(json!({"tools": []}))),
            Outcome::Result(json!({})),
        ));
        assert_eq!(
            cancellation(&obs),
            pass_note(
                "tools/list cancelled, then ping answered; the cancelled request was answered too (allowed)"
            )
        );
        obs.cancellation = Some(probe(
            None,
            Outcome::Failed("the process closed its output".into()),
        ));
        assert_eq!(
            cancellation(&obs),
            fail(vec![
                "after notifications/cancelled for tools/list, ping got no answer (the process closed its output)"
                    .into()
            ])
        );
        obs.cancellation = Some(probe(
            None,
            Outcome::Error(json!({"code": -32603, "message": "x"})),
        ));
        assert_eq!(
            cancellation(&obs),
            fail(vec![
                "after notifications/cancelled for tools/list, ping was answered error -32603"
                    .into()
            ])
        );
    }

    #[test]
    fn initialize_is_never_cancelled() {
        let mut obs = stdio_legacy();
        assert!(matches!(
            initialize_uncancellable(&obs),
            Verdict::CouldNotJudge { .. }
        ));
        obs.initialize_cancelled = Some(InitializeCancelProbe {
            initialize: Outcome::Result(json!({"protocolVersion": "2025-11-25"})),
            next: Some(Outcome::Result(json!({}))),
        });
        assert!(matches!(
            initialize_uncancellable(&obs),
            Verdict::Pass { .. }
        ));
        obs.initialize_cancelled = Some(InitializeCancelProbe {
            initialize: Outcome::Result(json!({"protocolVersion": "2025-11-25"})),
            next: Some(Outcome::Error(
                json!({"code": -32600, "message": "not initialized"}),
            )),
        });
        assert_eq!(
            initialize_uncancellable(&obs),
            fail(vec![
                "after an initialize followed by notifications/cancelled naming it, ping was answered error -32600"
                    .into()
            ])
        );
        obs.initialize_cancelled = Some(InitializeCancelProbe {
            initialize: Outcome::Failed("no answer within 10s".into()),
            next: None,
        });
        assert_eq!(
            initialize_uncancellable(&obs),
            fail(vec![
                "with notifications/cancelled naming it, initialize got no answer (no answer within 10s)"
                    .into()
            ])
        );
        // Where it cannot race: 2026-07-28, and HTTP.
        obs.era = Some(Era::Modern);
        assert!(matches!(
            initialize_uncancellable(&obs),
            Verdict::Pass { .. }
        ));
        obs.era = Some(Era::Legacy);
        obs.transport = Some(Transport::Http);
        assert!(matches!(
            initialize_uncancellable(&obs),
            Verdict::Pass { .. }
        ));
    }
}
