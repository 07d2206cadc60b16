//! What an entry's definition is, and its digest.
//!
//! The definition is the part of an entry that tells a model what the entry
//! does and how to use it; a change to any of it is drift. Fields that vary
//! without the entry changing meaning (a resource's `size`, `_meta`,
//! `icons`) are not part of it. Each kind has its own fields:
//!
//! | list               | fields                                                              |
//! |--------------------|---------------------------------------------------------------------|
//! | tools              | name, title, description, inputSchema, outputSchema, annotations    |
//! | resources          | uri, name, title, description, mimeType                             |
//! | resource templates | uriTemplate, name, title, description, mimeType                     |
//! | prompts            | name, title, description, arguments                                 |

use serde_json::{Map, Value};

use crate::canonical;
use crate::discovery::ListKind;

/// The fields that define an entry of `kind`.
pub fn fields(kind: ListKind) -> &'static [&'static str] {
    match kind {
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
    }
}

/// The canonical definition of an entry: its defining fields that are
/// present, in canonical form (see [`crate::canonical`]).
pub fn definition(kind: ListKind, entry: &Value) -> Value {
    let mut out = Map::new();
    for &field in fields(kind) {
        if let Some(value) = entry.get(field) {
            out.insert(field.to_owned(), value.clone());
        }
    }
    canonical::canonical(&Value::Object(out))
}

/// The digest of an entry's definition.
pub fn digest(kind: ListKind, entry: &Value) -> String {
    canonical::digest(&definition(kind, entry))
}

/// The defining fields whose values differ between two entries, in the
/// order of [`fields`].
pub fn changed_fields(kind: ListKind, old: &Value, new: &Value) -> Vec<&'static str> {
    let (old, new) = (definition(kind, old), definition(kind, new));
    fields(kind)
        .iter()
        .copied()
        .filter(|f| old.get(*f) != new.get(*f))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_defining_fields_count() {
        let a = json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "_meta": {"x": 1}, "icons": []});
        let b = json!({"inputSchema": {"type": "object"}, "description": "d", "name": "t", "_meta": {"x": 2}});
        assert_eq!(digest(ListKind::Tools, &a), digest(ListKind::Tools, &b));
        assert_eq!(
            definition(ListKind::Tools, &a),
            json!({"description": "d", "inputSchema": {"type": "object"}, "name": "t"})
        );
        let size_changed = (
            json!({"uri": "a://1", "name": "one", "size": 10}),
            json!({"uri": "a://1", "name": "one", "size": 11}),
        );
        assert_eq!(
            digest(ListKind::Resources, &size_changed.0),
            digest(ListKind::Resources, &size_changed.1)
        );
    }

    #[test]
    fn every_defining_field_is_drift() {
        let base = json!({
            "name": "t", "title": "T", "description": "d",
            "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}
        });
        for field in fields(ListKind::Tools) {
            let mut changed = base.clone();
            changed[*field] = json!("something else");
            assert_ne!(
                digest(ListKind::Tools, &base),
                digest(ListKind::Tools, &changed),
                "{field}"
            );
            assert_eq!(
                changed_fields(ListKind::Tools, &base, &changed),
                vec![*field]
            );
        }
        // Removing an optional field is a change too.
        let mut without = base.clone();
        without.as_object_mut().map(|o| o.remove("annotations"));
        assert_eq!(
            changed_fields(ListKind::Tools, &base, &without),
            vec!["annotations"]
        );
    }

    #[test]
    fn number_spelling_is_not_drift() {
        let a = json!({"name": "p", "arguments": [{"name": "n", "required": true}]});
        let b: Value =
            serde_json::from_str(r#"{"arguments":[{"required":true,"name":"n"}],"name":"p"}"#)
                .expect("json");
        assert_eq!(digest(ListKind::Prompts, &a), digest(ListKind::Prompts, &b));
        let c: Value =
            serde_json::from_str(r#"{"name":"t","inputSchema":{"maximum":1.0}}"#).expect("json");
        let d: Value =
            serde_json::from_str(r#"{"name":"t","inputSchema":{"maximum":1}}"#).expect("json");
        assert!(changed_fields(ListKind::Tools, &c, &d).is_empty());
    }
}
