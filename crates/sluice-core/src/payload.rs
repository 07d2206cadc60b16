//! A JSON value as sluice carries it: a tree, or the text it came as.
//!
//! A `serde_json::Value` costs tens of bytes a value, so an upstream's
//! large answer of tiny objects would take a hundred times its size as a
//! tree. A result above [`CARRIED_AS_TEXT_FROM`] bytes is therefore kept as
//! its text from the transport to the client: redacted and measured over
//! its text ([`crate::boundary::Boundary::result_text`]), shaped for the
//! client's era by its top-level fields only
//! ([`crate::protocol::shape_result_text`]), and written out as it is.
//! Whatever must read a tree (an MRTR round, a task's creation) reads one
//! made of it ([`Payload::into_tree`]).
//!
//! The helpers at the end walk one level of a JSON text, borrowing keys and
//! values from it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// The size from which an upstream's answer is carried as text: below it,
/// a tree of any shape costs less than the fixed baseline.
pub const CARRIED_AS_TEXT_FROM: usize = 256 * 1024;

/// A JSON value: a tree, or its text (always one valid JSON document).
#[derive(Debug, Clone)]
pub enum Payload {
    /// Parsed.
    Tree(Value),
    /// As it came (or as sluice rewrote it), unparsed.
    Text(Box<RawValue>),
}

/// The top-level fields of a result that sluice reads or rewrites, read
/// from its text; every other field is skipped without being built.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ResultHead {
    /// `resultType` (2026-07-28).
    #[serde(rename = "resultType")]
    pub result_type: Option<Value>,
    /// `isError` (a tool's failure).
    #[serde(rename = "isError")]
    pub is_error: Option<Value>,
    /// `ttlMs` (2026-07-28 caching hint).
    #[serde(rename = "ttlMs")]
    pub ttl_ms: Option<Value>,
    /// `cacheScope` (2026-07-28 caching hint).
    #[serde(rename = "cacheScope")]
    pub cache_scope: Option<Value>,
    /// `_meta`.
    #[serde(rename = "_meta")]
    pub meta: Option<Value>,
    /// `task` (2025-11-25: the task a call created).
    pub task: Option<Value>,
}

// === impl Payload ===

impl Payload {
    /// The value as a tree, parsed if it is text.
    pub fn into_tree(self) -> Result<Value, serde_json::Error> {
        match self {
            Payload::Tree(value) => Ok(value),
            Payload::Text(text) => serde_json::from_str(text.get()),
        }
    }

    /// The tree, when it is one.
    pub fn as_tree(&self) -> Option<&Value> {
        match self {
            Payload::Tree(value) => Some(value),
            Payload::Text(_) => None,
        }
    }

    /// The tree, when it is one, to change in place.
    pub fn as_tree_mut(&mut self) -> Option<&mut Value> {
        match self {
            Payload::Tree(value) => Some(value),
            Payload::Text(_) => None,
        }
    }

    /// The fields of [`ResultHead`], however the value is held (all absent
    /// when it is not an object).
    pub fn head(&self) -> ResultHead {
        match self {
            Payload::Tree(value) => {
                let field = |key: &str| value.get(key).cloned();
                ResultHead {
                    result_type: field("resultType"),
                    is_error: field("isError"),
                    ttl_ms: field("ttlMs"),
                    cache_scope: field("cacheScope"),
                    meta: field("_meta"),
                    task: field("task"),
                }
            }
            Payload::Text(text) => ResultHead::of(text),
        }
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::Tree(value)
    }
}

impl Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Payload::Tree(value) => value.serialize(serializer),
            Payload::Text(text) => text.serialize(serializer),
        }
    }
}

/// Whole values are compared, however each is held.
impl PartialEq for Payload {
    fn eq(&self, other: &Payload) -> bool {
        match (self, other) {
            (Payload::Tree(a), Payload::Tree(b)) => a == b,
            (Payload::Text(a), Payload::Text(b)) => a.get() == b.get(),
            (Payload::Tree(tree), Payload::Text(text))
            | (Payload::Text(text), Payload::Tree(tree)) => {
                serde_json::from_str::<Value>(text.get()).is_ok_and(|t| &t == tree)
            }
        }
    }
}

// === impl ResultHead ===

impl ResultHead {
    /// The head of a result's text; an object whose head cannot be read so
    /// (a repeated field) reads as one that asks for something
    /// (`resultType: "unreadable"`), so that it is handled as a tree.
    pub fn of(text: &RawValue) -> ResultHead {
        ResultHead::read(text).unwrap_or_else(|| ResultHead {
            result_type: Some("unreadable".into()),
            ..ResultHead::default()
        })
    }

    /// The head of a result's text; `None` when a field of it is repeated.
    pub fn read(text: &RawValue) -> Option<ResultHead> {
        if !text.get().starts_with('{') {
            return Some(ResultHead::default());
        }
        serde_json::from_str(text.get()).ok()
    }

    /// Whether the result is a final answer with nothing for sluice to act
    /// on: no MRTR round, no task (`resultType` absent or `"complete"`, no
    /// `task`).
    pub fn is_plain(&self) -> bool {
        let complete = match &self.result_type {
            None => true,
            Some(kind) => kind.as_str() == Some("complete"),
        };
        complete && self.task.is_none()
    }
}

// --- one level of a JSON text ---

/// Calls `each` with every element of the array `raw`, in order.
pub(crate) fn each_element<'de>(
    raw: &'de RawValue,
    each: impl FnMut(&'de RawValue) -> Result<(), serde_json::Error>,
) -> Result<(), serde_json::Error> {
    struct Elements<F>(F);
    impl<'de, F: FnMut(&'de RawValue) -> Result<(), serde_json::Error>> Visitor<'de> for Elements<F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array")
        }
        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
            while let Some(item) = seq.next_element::<&'de RawValue>()? {
                (self.0)(item).map_err(de::Error::custom)?;
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    de::Deserializer::deserialize_seq(&mut de, Elements(each))?;
    de.end()
}

/// Calls `each` with every field of the object `raw`, in order.
pub(crate) fn each_field<'de>(
    raw: &'de RawValue,
    each: impl FnMut(Cow<'de, str>, &'de RawValue) -> Result<(), serde_json::Error>,
) -> Result<(), serde_json::Error> {
    struct Fields<F>(F);
    impl<'de, F> Visitor<'de> for Fields<F>
    where
        F: FnMut(Cow<'de, str>, &'de RawValue) -> Result<(), serde_json::Error>,
    {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
            while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                let value = map.next_value::<&'de RawValue>()?;
                (self.0)(key, value).map_err(de::Error::custom)?;
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    de::Deserializer::deserialize_map(&mut de, Fields(each))?;
    de.end()
}

/// An object key, borrowed from the text when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(json: &str) -> Payload {
        Payload::Text(RawValue::from_string(json.to_owned()).expect("json"))
    }

    #[test]
    fn text_goes_out_as_it_came() {
        let spelled = r#"{"b":1.50,"a":[1e3,"\u00e9"],"unknown":{"x":null}}"#;
        let out = serde_json::to_string(&text(spelled)).expect("serializes");
        assert_eq!(out, spelled);
        assert_eq!(
            text(spelled),
            Payload::Tree(serde_json::from_str(spelled).expect("json"))
        );
    }

    #[test]
    fn the_head_is_read_from_the_text_as_from_the_tree() {
        let json = r#"{"content":[{"type":"text","text":"x"}],"isError":true,"_meta":{"k":1}}"#;
        let from_text = text(json).head();
        let from_tree = Payload::Tree(serde_json::from_str(json).expect("json")).head();
        assert_eq!(from_text.is_error, Some(json!(true)));
        assert_eq!(from_text.meta, Some(json!({"k": 1})));
        assert_eq!(from_tree.is_error, from_text.is_error);
        assert_eq!(from_tree.meta, from_text.meta);
        assert!(from_text.is_plain());
    }

    #[test]
    fn rounds_tasks_and_unreadable_heads_are_not_plain() {
        for json in [
            r#"{"resultType":"input_required","inputRequests":{}}"#,
            r#"{"task":{"taskId":"t"}}"#,
            r#"{"resultType":"complete","resultType":"input_required"}"#,
        ] {
            assert!(!text(json).head().is_plain(), "{json}");
        }
        assert!(text(r#"{"resultType":"complete"}"#).head().is_plain());
        assert!(text("[1,2]").head().is_plain());
    }
}
