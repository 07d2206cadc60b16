//! The boundary rules: read-only results fit the read budget, and no
//! result carries credentials.

use serde_json::Value;

use super::tally;
use crate::boundary::budget;
use crate::boundary::redact::Redactor;
use crate::doctor::Verdict;
use crate::doctor::observe::{Call, Observations, Outcome};

fn is_read_only(call: &Call) -> bool {
    call.definition
        .pointer("/annotations/readOnlyHint")
        .and_then(Value::as_bool)
        == Some(true)
}

pub(super) fn read_budget(obs: &Observations) -> Verdict {
    let mut judged = 0;
    let mut evidence = Vec::new();
    for call in obs.calls.iter().filter(|c| is_read_only(c)) {
        match &call.outcome {
            Outcome::Result(r) => {
                judged += 1;
                if budget::measure(r, obs.read_budget.saturating_add(1)) > obs.read_budget {
                    evidence.push(format!(
                        "{}: its result is over the read budget of {} bytes",
                        call.tool, obs.read_budget
                    ));
                }
            }
            Outcome::TooLarge => {
                judged += 1;
                evidence.push(format!(
                    "{}: its result is over the transport ceiling (not even read)",
                    call.tool
                ));
            }
            Outcome::Error(_) | Outcome::Failed(_) => {}
        }
    }
    tally(
        judged,
        evidence,
        "no read-only tool answered",
        Some(format!("{judged} read-only results measured")),
    )
}

pub(super) fn secrets(obs: &Observations) -> Verdict {
    // Value patterns only: a key named `token` in a result is not a leak
    // by itself, a GitHub token is.
    let redactor = Redactor::new(Vec::new(), &[] as &[&str]);
    let mut any = 0;
    let mut evidence = Vec::new();
    let results = obs
        .calls
        .iter()
        .filter_map(|c| c.outcome.result().map(|r| (c.tool.as_str(), r)))
        .chain(
            obs.served
                .iter()
                .filter_map(|(m, o)| o.result().map(|r| (m.as_str(), r))),
        );
    for (what, r) in results {
        any += 1;
        let mut copy = r.clone();
        let found = redactor.redact(&mut copy).pattern;
        if found > 0 {
            evidence.push(format!("{what}: {found} credential pattern match(es)"));
        }
    }
    tally(
        any,
        evidence,
        "no result was served",
        Some(format!("{any} results scanned")),
    )
}
