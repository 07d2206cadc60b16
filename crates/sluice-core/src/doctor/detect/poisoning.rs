//! The poisoning rules, from the same scan `sluice lock` gates on
//! ([`crate::catalog::poisoning`]): tool names the specification allows,
//! and tool definitions without instructions aimed at the model. Evidence
//! names the tool, the finding and where it is, never the text.

use serde_json::Value;

use super::tally;
use crate::catalog::entry::printable;
use crate::catalog::poisoning::{self, Rule};
use crate::discovery::ListKind;
use crate::doctor::Verdict;
use crate::doctor::observe::Observations;

/// `poisoning/names`: every tool name is 1 to 128 characters of
/// `A-Za-z0-9_.-`.
pub(super) fn names(obs: &Observations) -> Verdict {
    judge(obs, |rule| rule == Rule::InvalidName)
}

/// `poisoning/definitions`: no other finding in any tool's definition.
pub(super) fn definitions(obs: &Observations) -> Verdict {
    judge(obs, |rule| rule != Rule::InvalidName)
}

fn judge(obs: &Observations, counts: impl Fn(Rule) -> bool) -> Verdict {
    let mut evidence = Vec::new();
    for tool in &obs.tools {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        for f in poisoning::scan_entry(ListKind::Tools, tool) {
            if counts(f.rule) {
                evidence.push(format!("{}: {} at {}", printable(name), f.rule, f.at));
            }
        }
    }
    tally(obs.tools.len(), evidence, "the server lists no tools", None)
}
