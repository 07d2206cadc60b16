//! What an entry's definition is, and its digest.
//!
//! The definition is the part of an entry that tells a model or its user
//! what the entry does and how to use it; a change to any of it is drift.
//! Fields that vary without the entry changing meaning (a resource's
//! `size`, `_meta`) are not part of it. Each kind has its own fields:
//!
//! | list               | fields                                                                              |
//! |--------------------|-------------------------------------------------------------------------------------|
//! | tools              | name, title, description, inputSchema, outputSchema, annotations, execution, icons  |
//! | resources          | uri, name, title, description, mimeType, icons                                      |
//! | resource templates | uriTemplate, name, title, description, mimeType, icons                              |
//! | prompts            | name, title, description, arguments, icons                                          |
//!
//! `execution` (whether a tool runs as a task, MCP 2025-11-25 `Tool`) and
//! `icons` (what a user picks an entry by) joined in lockfile format 2
//! ([`Format::V2`]); an upstream approved under format 1 is compared on the
//! fields it was approved with ([`Format::V1`]), so upgrading sluice never
//! turns an approved entry into drift.

use serde_json::{Map, Value};

use crate::canonical;
use crate::discovery::ListKind;

/// Which fields define an entry: the lockfile format an approval was
/// written under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Lockfile format 1: without `execution` and `icons`.
    V1,
    /// Lockfile format 2, what this sluice writes.
    #[default]
    V2,
}

/// The fields that define an entry of `kind` under `format`: format 1's,
/// then what format 2 added.
pub fn fields(kind: ListKind, format: Format) -> impl Iterator<Item = &'static str> + Clone {
    let format_1: &'static [&'static str] = match kind {
        ListKind::Tools => &[
            "name",
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        ],
        ListKind::Resources => &["uri", "name", "title", "description", "mimeType"],
        ListKind::ResourceTemplates => &["uriTemplate", "name", "title", "description", "mimeType"],
        ListKind::Prompts => &["name", "title", "description", "arguments"],
    };
    let added: &'static [&'static str] = match (format, kind) {
        (Format::V1, _) => &[],
        (Format::V2, ListKind::Tools) => &["execution", "icons"],
        (Format::V2, _) => &["icons"],
    };
    format_1.iter().chain(added).copied()
}

/// The canonical definition of an entry: its defining fields that are
/// present, in canonical form (see [`crate::canonical`]).
pub fn definition(kind: ListKind, format: Format, entry: &Value) -> Value {
    let mut out = Map::new();
    for field in fields(kind, format) {
        if let Some(value) = entry.get(field) {
            out.insert(field.to_owned(), value.clone());
        }
    }
    canonical::canonical(&Value::Object(out))
}

/// The digest of an entry's definition.
pub fn digest(kind: ListKind, format: Format, entry: &Value) -> String {
    canonical::digest(&definition(kind, format, entry))
}

/// The defining fields whose values differ between two entries, in the
/// order of [`fields`].
pub fn changed_fields(
    kind: ListKind,
    format: Format,
    old: &Value,
    new: &Value,
) -> Vec<&'static str> {
    let (old, new) = (definition(kind, format, old), definition(kind, format, new));
    fields(kind, format)
        .filter(|f| old.get(*f) != new.get(*f))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_defining_fields_count() {
        let a = json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "_meta": {"x": 1}, "x-future": 1});
        let b = json!({"inputSchema": {"type": "object"}, "description": "d", "name": "t", "_meta": {"x": 2}});
        let v2 = Format::V2;
        assert_eq!(
            digest(ListKind::Tools, v2, &a),
            digest(ListKind::Tools, v2, &b)
        );
        assert_eq!(
            definition(ListKind::Tools, v2, &a),
            json!({"description": "d", "inputSchema": {"type": "object"}, "name": "t"})
        );
        let size_changed = (
            json!({"uri": "a://1", "name": "one", "size": 10}),
            json!({"uri": "a://1", "name": "one", "size": 11}),
        );
        assert_eq!(
            digest(ListKind::Resources, v2, &size_changed.0),
            digest(ListKind::Resources, v2, &size_changed.1)
        );
    }

    #[test]
    fn every_defining_field_is_drift() {
        let base = json!({
            "name": "t", "title": "T", "description": "d",
            "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true},
            "execution": {"taskSupport": "optional"},
            "icons": [{"src": "https://example.com/t.png"}]
        });
        let v2 = Format::V2;
        for field in fields(ListKind::Tools, v2) {
            let mut changed = base.clone();
            changed[field] = json!("something else");
            assert_ne!(
                digest(ListKind::Tools, v2, &base),
                digest(ListKind::Tools, v2, &changed),
                "{field}"
            );
            assert_eq!(
                changed_fields(ListKind::Tools, v2, &base, &changed),
                vec![field]
            );
        }
        // Removing an optional field is a change too.
        let mut without = base.clone();
        without.as_object_mut().map(|o| o.remove("annotations"));
        assert_eq!(
            changed_fields(ListKind::Tools, v2, &base, &without),
            vec!["annotations"]
        );
    }

    #[test]
    fn task_support_and_icons_are_drift_from_format_2_only() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "forbidden"}});
        let mut required = tool.clone();
        required["execution"]["taskSupport"] = json!("required");
        required["icons"] = json!([{"src": "https://example.com/other.png"}]);
        assert_eq!(
            changed_fields(ListKind::Tools, Format::V2, &tool, &required),
            vec!["execution", "icons"]
        );
        assert!(changed_fields(ListKind::Tools, Format::V1, &tool, &required).is_empty());
        assert_eq!(
            digest(ListKind::Tools, Format::V1, &tool),
            digest(ListKind::Tools, Format::V1, &required)
        );
        for kind in ListKind::ALL {
            assert!(fields(kind, Format::V2).any(|f| f == "icons"), "{kind:?}");
            assert!(!fields(kind, Format::V1).any(|f| f == "icons"), "{kind:?}");
            // Format 2 only adds fields: what format 1 approved is still defining.
            let v2: Vec<_> = fields(kind, Format::V2).collect();
            assert!(
                fields(kind, Format::V1).all(|f| v2.contains(&f)),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn number_spelling_is_not_drift() {
        let a = json!({"name": "p", "arguments": [{"name": "n", "required": true}]});
        let b: Value =
            serde_json::from_str(r#"{"arguments":[{"required":true,"name":"n"}],"name":"p"}"#)
                .expect("json");
        assert_eq!(
            digest(ListKind::Prompts, Format::V2, &a),
            digest(ListKind::Prompts, Format::V2, &b)
        );
        let c: Value =
            serde_json::from_str(r#"{"name":"t","inputSchema":{"maximum":1.0}}"#).expect("json");
        let d: Value =
            serde_json::from_str(r#"{"name":"t","inputSchema":{"maximum":1}}"#).expect("json");
        assert!(changed_fields(ListKind::Tools, Format::V2, &c, &d).is_empty());
    }
}
