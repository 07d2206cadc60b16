//! S-22 and S-23: what the HTTP transport refuses (a foreign `Origin`, an
//! unsupported `MCP-Protocol-Version` header). Not applicable on stdio.

use super::{cannot, fail, pass, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{HttpProbes, Observations, Transport};

/// S-22: a POST with a foreign `Origin` gets 403.
pub(super) fn origin(obs: &Observations) -> Verdict {
    http_status(
        obs,
        |h| h.foreign_origin,
        403,
        "a POST with Origin: http://evil.example",
    )
}

/// S-23: a POST with an unsupported `MCP-Protocol-Version` gets 400.
pub(super) fn version_header(obs: &Observations) -> Verdict {
    http_status(
        obs,
        |h| h.bad_version_header,
        400,
        "a POST with MCP-Protocol-Version: 1999-01-01",
    )
}

fn http_status(
    obs: &Observations,
    pick: impl Fn(&HttpProbes) -> Option<u16>,
    want: u16,
    what: &str,
) -> Verdict {
    if obs.transport != Some(Transport::Http) {
        return pass_note("not applicable: stdio");
    }
    match obs.http.as_ref().and_then(pick) {
        Some(status) if status == want => pass(),
        Some(status) => fail(vec![format!("{what} got HTTP {status}, not {want}")]),
        None => cannot(format!("{what} could not be sent")),
    }
}
