//! S-13: progress is reported with the caller's `progressToken`,
//! increasing, and names no request that is not active: a token no request
//! carried, or one whose request was already answered, is a stale id.

use serde_json::Value;

use super::{cannot, fail, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::Observations;

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
