//! S-12: list cursors are validated and opaque, and every list can be read
//! to its end.

use serde_json::Value;

use super::{cannot, fail, pass, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{CatalogOutcome, Observations, Outcome};
use crate::doctor::plan;

pub(super) fn invalid_cursor(obs: &Observations) -> Verdict {
    match &obs.invalid_cursor {
        Some(o) if o.error_code() == Some(-32602) => pass(),
        Some(Outcome::Error(e)) => fail(vec![format!(
            "tools/list with an unknown cursor: error {} instead of -32602",
            e.get("code").unwrap_or(&Value::Null)
        )]),
        Some(Outcome::Result(_)) => fail(vec![
            "tools/list with an unknown cursor: served a page".into(),
        ]),
        Some(Outcome::Failed(why)) => cannot(format!(
            "tools/list with an unknown cursor got no JSON-RPC answer: {why}"
        )),
        Some(Outcome::TooLarge) => fail(vec![
            "tools/list with an unknown cursor: an answer over the transport ceiling".into(),
        ]),
        None => cannot("the server offers no tools to list"),
    }
}

pub(super) fn opaque_cursor(obs: &Observations) -> Verdict {
    let exposed: Vec<String> = obs
        .cursors
        .iter()
        .filter_map(|(method, c)| {
            plan::cursor_exposes_position(c).map(|why| format!("{method}: nextCursor {why}"))
        })
        .collect();
    if !exposed.is_empty() {
        let mut exposed = exposed;
        exposed.dedup();
        return fail(exposed);
    }
    if obs.cursors.is_empty() {
        cannot("no list was long enough to page: no cursor to judge")
    } else {
        pass_note(format!("{} cursors checked", obs.cursors.len()))
    }
}

pub(super) fn pagination(obs: &Observations) -> Verdict {
    match &obs.catalog {
        Some(CatalogOutcome::Complete { counts }) => pass_note(
            counts
                .iter()
                .map(|(k, n)| format!("{}: {n}", k.method()))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Some(CatalogOutcome::Incomplete {
            list,
            reason,
            fault: true,
        }) => fail(vec![format!("{}: {reason}", list.method())]),
        // A cap, a deadline or a lost connection is no proof of a broken
        // list: the walk just did not finish.
        Some(CatalogOutcome::Incomplete { list, reason, .. }) => cannot(format!(
            "{} was not read to its end: {reason}",
            list.method()
        )),
        None => cannot("the catalog was not read"),
    }
}
