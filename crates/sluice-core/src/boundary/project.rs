//! Metadata-only projections of a tool's `structuredContent`
//! (`[[policy.project]]`), applied before measurement.
//!
//! An operator can make a tool return aggregates and nothing else: `keep`
//! lists the only paths that survive, `drop` the paths removed. Because a
//! tool's text blocks usually repeat its structured content, a projected
//! result's `content` is replaced by one text block holding the projected
//! JSON: nothing outside the projection reaches the client.
//!
//! Paths are a small JSONPath subset: `$` (the whole value), `.key`,
//! `[N]` (one array element) and `[*]` (every element), e.g.
//! `$.summary.total` or `$.channels[*].message_count`.

use serde_json::{Map, Value};

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An object key.
    Key(String),
    /// One array element.
    Index(usize),
    /// Every array element.
    All,
}

/// What a projection does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Projection {
    /// Keep only these paths.
    Keep(Vec<Vec<Step>>),
    /// Remove these paths.
    Drop(Vec<Vec<Step>>),
}

/// Parses a path; the error says what is wrong.
pub fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let Some(mut rest) = path.strip_prefix('$') else {
        return Err(format!("{path:?}: a path starts with `$`"));
    };
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let key = &after[..end];
            if key.is_empty() {
                return Err(format!("{path:?}: an empty key after `.`"));
            }
            steps.push(Step::Key(key.to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let Some(close) = after.find(']') else {
                return Err(format!("{path:?}: `[` without `]`"));
            };
            let inner = &after[..close];
            steps.push(match inner {
                "*" => Step::All,
                n => Step::Index(
                    n.parse()
                        .map_err(|_| format!("{path:?}: `[{n}]` is neither `[*]` nor an index"))?,
                ),
            });
            rest = &after[close + 1..];
        } else {
            return Err(format!(
                "{path:?}: expected `.key`, `[N]` or `[*]` at {rest:?}"
            ));
        }
    }
    Ok(steps)
}

// === impl Projection ===

impl Projection {
    /// Projects a tool result in place: `structuredContent` per the paths,
    /// and `content` replaced by the projected JSON as one text block. A
    /// result without `structuredContent` keeps no content at all under
    /// `keep` (nothing was selected), and is unchanged under `drop`.
    pub fn apply(&self, result: &mut Value) {
        let Some(obj) = result.as_object_mut() else {
            return;
        };
        let projected = match (self, obj.get("structuredContent")) {
            (Projection::Keep(paths), Some(sc)) => {
                keep(sc, paths).unwrap_or(Value::Object(Map::new()))
            }
            (Projection::Keep(_), None) => Value::Object(Map::new()),
            (Projection::Drop(paths), Some(sc)) => {
                let mut sc = sc.clone();
                for path in paths {
                    drop_path(&mut sc, path);
                }
                sc
            }
            (Projection::Drop(_), None) => return,
        };
        let text = projected.to_string();
        obj.insert("structuredContent".into(), projected);
        obj.insert(
            "content".into(),
            serde_json::json!([{"type": "text", "text": text}]),
        );
    }
}

/// The parts of `value` that the paths select, with the structure that
/// leads to them; `None` when no path selects anything.
fn keep(value: &Value, paths: &[Vec<Step>]) -> Option<Value> {
    if paths.iter().any(Vec::is_empty) {
        return Some(value.clone());
    }
    match value {
        Value::Object(obj) => {
            let mut out = Map::new();
            for (k, v) in obj {
                let rest: Vec<Vec<Step>> = paths
                    .iter()
                    .filter(|p| p.first() == Some(&Step::Key(k.clone())))
                    .map(|p| p[1..].to_vec())
                    .collect();
                if rest.is_empty() {
                    continue;
                }
                if let Some(kept) = keep(v, &rest) {
                    out.insert(k.clone(), kept);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let rest: Vec<Vec<Step>> = paths
                    .iter()
                    .filter(|p| {
                        matches!(p.first(), Some(Step::All)) || p.first() == Some(&Step::Index(i))
                    })
                    .map(|p| p[1..].to_vec())
                    .collect();
                if rest.is_empty() {
                    continue;
                }
                if let Some(kept) = keep(item, &rest) {
                    out.push(kept);
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => None,
    }
}

fn drop_path(value: &mut Value, path: &[Step]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match (first, value) {
        (Step::Key(k), Value::Object(obj)) => {
            if rest.is_empty() {
                obj.shift_remove(k);
            } else if let Some(v) = obj.get_mut(k) {
                drop_path(v, rest);
            }
        }
        (Step::Index(i), Value::Array(items)) => {
            if rest.is_empty() {
                if *i < items.len() {
                    items.remove(*i);
                }
            } else if let Some(v) = items.get_mut(*i) {
                drop_path(v, rest);
            }
        }
        (Step::All, Value::Array(items)) => {
            if rest.is_empty() {
                items.clear();
            } else {
                for v in items {
                    drop_path(v, rest);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(ps: &[&str]) -> Vec<Vec<Step>> {
        ps.iter()
            .map(|p| parse_path(p).unwrap_or_default())
            .collect()
    }

    fn activity() -> Value {
        json!({
            "content": [{"type": "text", "text": "ada: hello; bob: hi"}],
            "structuredContent": {
                "summary": {"participants": 2, "replies": 1},
                "messages": [
                    {"author_id": "123", "content": "hello", "reply_ms": 10},
                    {"author_id": "456", "content": "hi", "reply_ms": 20},
                ],
                "nextCursor": "abc",
            }
        })
    }

    #[test]
    fn keep_returns_only_the_selected_paths_and_no_other_text() {
        let p = Projection::Keep(paths(&["$.summary", "$.messages[*].reply_ms"]));
        let mut r = activity();
        p.apply(&mut r);
        assert_eq!(
            r["structuredContent"],
            json!({"summary": {"participants": 2, "replies": 1}, "messages": [{"reply_ms": 10}, {"reply_ms": 20}]})
        );
        let all = r.to_string();
        for leaked in ["ada", "hello", "123", "456", "abc"] {
            assert!(!all.contains(leaked), "{leaked} leaked: {all}");
        }
        assert_eq!(r["content"][0]["text"], r["structuredContent"].to_string());
    }

    #[test]
    fn drop_removes_the_paths() {
        let p = Projection::Drop(paths(&[
            "$.messages[*].content",
            "$.messages[*].author_id",
            "$.nextCursor",
        ]));
        let mut r = activity();
        p.apply(&mut r);
        assert_eq!(
            r["structuredContent"],
            json!({"summary": {"participants": 2, "replies": 1}, "messages": [{"reply_ms": 10}, {"reply_ms": 20}]})
        );
        assert!(!r.to_string().contains("hello"));
    }

    #[test]
    fn paths_parse_or_say_why() {
        assert_eq!(
            parse_path("$.a[*].b[2]"),
            Ok(vec![
                Step::Key("a".into()),
                Step::All,
                Step::Key("b".into()),
                Step::Index(2)
            ])
        );
        assert_eq!(parse_path("$"), Ok(vec![]));
        for bad in ["a.b", "$.", "$.a[", "$.a[x]", "$a"] {
            assert!(parse_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keep_without_structured_content_returns_nothing() {
        let p = Projection::Keep(paths(&["$.summary"]));
        let mut r = json!({"content": [{"type": "text", "text": "secret prose"}]});
        p.apply(&mut r);
        assert_eq!(
            r,
            json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {}})
        );
    }
}
