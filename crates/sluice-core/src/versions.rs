//! What exists in which protocol version, so that nothing a client's
//! version lacks reaches it: sluice speaks to each client in that client's
//! version while its upstreams speak theirs, and an upstream of one
//! version says things another version has no word for.
//!
//! | feature | 2025-06-18 | 2025-11-25 | 2026-07-28 | where applied |
//! |---|---|---|---|---|
//! | `Tool.execution` (`taskSupport`) | no | yes | no (tasks are an extension; the field is gone) | list entries ([`shape_entry`]) |
//! | `icons` on tools, resources, templates, prompts | no | yes | yes | list entries ([`shape_entry`]) |
//! | the `tasks` capability (tasks in core) | no | yes | no (the extension instead) | `tasks::served_capability` |
//! | URL-mode elicitation | no | yes | yes | by capability: a client declares `elicitation.url` only in a version that has it (`elicitation::mode_declared`) |
//!
//! Versions are dates, so they order as strings; a version sluice does not
//! know is taken as the newest it knows of its era (2026-07-28 for a
//! modern request, whose version sluice checked on admission).

use serde_json::Value;

use crate::method::ListKind;
use crate::protocol;

/// A protocol feature that not every version has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// `Tool.execution`.
    ToolExecution,
    /// `icons` on list entries.
    Icons,
    /// The core `tasks` capability and methods of 2025-11-25.
    CoreTasks,
}

/// The first version with `feature`, and the first without it again.
fn span(feature: Feature) -> (&'static str, Option<&'static str>) {
    match feature {
        Feature::ToolExecution | Feature::CoreTasks => {
            ("2025-11-25", Some(protocol::MODERN_VERSION))
        }
        Feature::Icons => ("2025-11-25", None),
    }
}

/// Whether a client speaking `version` has `feature`.
pub fn has(version: &str, feature: Feature) -> bool {
    let (since, until) = span(feature);
    version >= since && until.is_none_or(|until| version < until)
}

/// The fields of a `kind` entry and the feature each belongs to.
fn entry_fields(kind: ListKind) -> &'static [(&'static str, Feature)] {
    match kind {
        ListKind::Tools => &[
            ("execution", Feature::ToolExecution),
            ("icons", Feature::Icons),
        ],
        ListKind::Resources | ListKind::ResourceTemplates | ListKind::Prompts => {
            &[("icons", Feature::Icons)]
        }
    }
}

/// A list entry as a client speaking `version` may see it: without the
/// fields its version lacks.
pub fn shape_entry(kind: ListKind, version: &str, entry: &mut Value) {
    if let Some(obj) = entry.as_object_mut() {
        for (field, feature) in entry_fields(kind) {
            if !has(version, *feature) {
                obj.remove(*field);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const V06: &str = "2025-06-18";
    const V11: &str = "2025-11-25";
    const V26: &str = "2026-07-28";

    #[test]
    fn every_pair_of_feature_and_version() {
        let table = [
            (Feature::ToolExecution, [false, true, false]),
            (Feature::Icons, [false, true, true]),
            (Feature::CoreTasks, [false, true, false]),
        ];
        for (feature, expected) in table {
            for (version, want) in [V06, V11, V26].into_iter().zip(expected) {
                assert_eq!(has(version, feature), want, "{feature:?} in {version}");
            }
        }
        // Every version sluice serves is in the table above.
        let mut served: Vec<&str> = protocol::LEGACY_VERSIONS.to_vec();
        served.push(protocol::MODERN_VERSION);
        served.sort_unstable();
        assert_eq!(served, [V06, V11, V26]);
    }

    #[test]
    fn entries_lose_what_the_version_lacks_and_nothing_else() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "optional"}, "icons": [{"src": "https://x.example/i.png"}],
            "x-future": 1});
        let seen = |kind, version, entry: &Value| {
            let mut entry = entry.clone();
            shape_entry(kind, version, &mut entry);
            entry
        };
        assert_eq!(seen(ListKind::Tools, V11, &tool), tool);
        assert_eq!(
            seen(ListKind::Tools, V26, &tool),
            json!({"name": "t", "inputSchema": {"type": "object"},
                "icons": [{"src": "https://x.example/i.png"}], "x-future": 1})
        );
        assert_eq!(
            seen(ListKind::Tools, V06, &tool),
            json!({"name": "t", "inputSchema": {"type": "object"}, "x-future": 1})
        );
        let prompt = json!({"name": "p", "icons": [], "execution": {}});
        // `execution` is a tool's field: on a prompt it is the upstream's own data.
        assert_eq!(seen(ListKind::Prompts, V26, &prompt), prompt);
        assert_eq!(
            seen(ListKind::Prompts, V06, &prompt),
            json!({"name": "p", "execution": {}})
        );
    }
}
