//! What the doctor may do to a server, and how it reads a list tool's page.
//!
//! The doctor calls only tools that say they are read-only
//! (`readOnlyHint: true`), unless `--allow-calls`, which adds tools that
//! say they are not destructive (`destructiveHint: false`; MCP's default is
//! destructive). A tool that may destroy something is never called. The
//! arguments are made from the input schema: the required properties only,
//! each with the smallest value its schema allows.

use base64::Engine;
use serde_json::{Map, Value, json};

/// Why a tool may not be called, or `Ok` when it may.
pub fn may_call(tool: &Value, allow_calls: bool) -> Result<(), &'static str> {
    let hint = |name: &str| {
        tool.get("annotations")
            .and_then(|a| a.get(name))
            .and_then(Value::as_bool)
    };
    if hint("readOnlyHint") == Some(true) {
        return Ok(());
    }
    // --allow-calls would not change a thing for it: no hint to offer.
    if hint("destructiveHint") == Some(true) {
        return Err("annotated destructiveHint: true, never called");
    }
    if !allow_calls {
        return Err(
            "not annotated readOnlyHint: true (pass --allow-calls to call tools annotated destructiveHint: false)",
        );
    }
    if hint("destructiveHint") == Some(false) {
        Ok(())
    } else {
        Err("may be destructive (no destructiveHint: false), never called")
    }
}

/// Arguments for a tool, made from its input schema; `None` when the schema
/// asks for something the doctor cannot make up (say, a `$ref`).
pub fn arguments_for(input_schema: &Value) -> Option<Value> {
    value_for(input_schema, 0)
}

fn value_for(schema: &Value, depth: usize) -> Option<Value> {
    // Nested schemas are followed only so deep, and arrays get at most 3
    // items: what the doctor makes stays small whatever the schema says.
    if depth > 6 {
        return None;
    }
    if let Some(v) = schema.get("const") {
        return Some(v.clone());
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return Some(first.clone());
    }
    if let Some(default) = schema.get("default") {
        return Some(default.clone());
    }
    if schema.get("$ref").is_some() {
        return None;
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => {
            let any = schema.get("anyOf").or_else(|| schema.get("oneOf"));
            return any
                .and_then(Value::as_array)
                .and_then(|alts| alts.iter().find_map(|s| value_for(s, depth + 1)))
                .or(Some(Value::Null));
        }
    };
    let number = |integer: bool| {
        let min = schema.get("minimum").and_then(Value::as_f64).unwrap_or(1.0);
        let min = schema
            .get("exclusiveMinimum")
            .and_then(Value::as_f64)
            .map_or(min, |m| m + 1.0);
        let max = schema.get("maximum").and_then(Value::as_f64);
        let v = max.map_or(min, |max| min.min(max));
        if integer {
            // The schema's bounds are small integers in practice; a
            // fraction here would be the schema's own contradiction.
            json!(v.ceil() as i64)
        } else {
            json!(v)
        }
    };
    Some(match ty {
        "string" => {
            let n = schema
                .get("minLength")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, 64);
            match schema.get("format").and_then(Value::as_str) {
                Some("uri") => json!("https://example.com/"),
                Some("date-time") => json!("2026-01-01T00:00:00Z"),
                Some("date") => json!("2026-01-01"),
                Some("email") => json!("a@example.com"),
                _ => json!("a".repeat(usize::try_from(n).unwrap_or(1))),
            }
        }
        "integer" => number(true),
        "number" => number(false),
        "boolean" => json!(false),
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            if n == 0 {
                json!([])
            } else {
                let item = value_for(schema.get("items").unwrap_or(&json!({})), depth + 1)?;
                Value::Array(vec![item; usize::try_from(n.min(3)).unwrap_or(1)])
            }
        }
        "object" => {
            let mut out = Map::new();
            let required = schema.get("required").and_then(Value::as_array);
            for name in required.into_iter().flatten().filter_map(Value::as_str) {
                let prop = schema
                    .pointer(&format!(
                        "/properties/{}",
                        name.replace('~', "~0").replace('/', "~1")
                    ))
                    .unwrap_or(&Value::Null);
                out.insert(name.to_owned(), value_for(prop, depth + 1)?);
            }
            Value::Object(out)
        }
        _ => Value::Null,
    })
}

/// Argument names a list tool takes its page size by.
const LIMIT_NAMES: [&str; 6] = [
    "limit",
    "page_size",
    "pageSize",
    "max_results",
    "maxResults",
    "count",
];
/// Argument names a list tool takes its cursor by.
const CURSOR_NAMES: [&str; 6] = [
    "cursor",
    "nextCursor",
    "next_cursor",
    "page_token",
    "pageToken",
    "after",
];
/// Result fields that hold the next page's cursor.
const NEXT_NAMES: [&str; 5] = [
    "nextCursor",
    "next_cursor",
    "cursor",
    "next",
    "nextPageToken",
];

/// Whether a tool lists things: named `list_*` (or `list-*`, `listX`), or
/// its output schema describes a page (an array beside a cursor).
pub fn is_list_tool(tool: &Value) -> bool {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
    let named = name.starts_with("list_")
        || name.starts_with("list-")
        || name
            .strip_prefix("list")
            .and_then(|rest| rest.chars().next())
            .is_some_and(char::is_uppercase);
    let paged_output = tool
        .pointer("/outputSchema/properties")
        .and_then(Value::as_object)
        .is_some_and(|props| {
            props
                .values()
                .any(|p| p.get("type") == Some(&json!("array")))
                && NEXT_NAMES.iter().any(|n| props.contains_key(*n))
        });
    named || paged_output
}

/// The page-size argument of a list tool and its schema's largest allowed
/// value (`maximum`, or `exclusiveMaximum` - 1), looking through `anyOf` /
/// `oneOf` alternatives and type lists (`Optional[int]` schemas).
pub fn limit_param(input_schema: &Value) -> Option<(&'static str, Option<u64>)> {
    let props = input_schema.get("properties")?.as_object()?;
    LIMIT_NAMES.iter().find_map(|name| {
        let p = props.get(*name)?;
        let alternatives: Vec<&Value> = match p.get("anyOf").or_else(|| p.get("oneOf")) {
            Some(Value::Array(alts)) => alts.iter().collect(),
            _ => vec![p],
        };
        let numeric: Vec<&Value> = alternatives
            .into_iter()
            .filter(|a| {
                let types: Vec<&str> = match a.get("type") {
                    Some(Value::String(t)) => vec![t.as_str()],
                    Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                types.iter().any(|t| matches!(*t, "integer" | "number"))
            })
            .collect();
        if numeric.is_empty() {
            return None;
        }
        let bound = |s: &Value| {
            let max = s.get("maximum").and_then(Value::as_f64);
            let exclusive = s
                .get("exclusiveMaximum")
                .and_then(Value::as_f64)
                .map(|m| m - 1.0);
            // Integral, non-negative bounds; a fraction rounds down.
            max.or(exclusive)
                .filter(|m| m.is_finite() && *m >= 0.0)
                .map(|m| m.floor() as u64)
        };
        Some((*name, numeric.iter().filter_map(|s| bound(s)).min()))
    })
}

/// The cursor argument of a list tool.
pub fn cursor_param(input_schema: &Value) -> Option<&'static str> {
    let props = input_schema.get("properties")?.as_object()?;
    CURSOR_NAMES
        .iter()
        .copied()
        .find(|n| props.contains_key(*n))
}

/// The shape of a list tool's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageShape {
    /// An object holding the rows (and, when there are more, a cursor).
    Envelope,
    /// A bare array: no room for a cursor or a total.
    FlatArray,
    /// Neither: text, an error, something else.
    Unknown,
}

/// A list tool's answer, read as a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageView {
    /// Its shape.
    pub shape: PageShape,
    /// Rows on the page, when found.
    pub rows: Option<usize>,
    /// The next page's cursor, when given.
    pub cursor: Option<String>,
}

/// A list tool's page itself: `structuredContent`, else the first text
/// block parsed as JSON (the same page is often in both: measure it once).
pub fn page_body(result: &Value) -> Option<Value> {
    match result.get("structuredContent") {
        Some(s) if !s.is_null() => Some(s.clone()),
        _ => result
            .pointer("/content/0/text")
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str::<Value>(t).ok()),
    }
}

/// Reads a `tools/call` result as a page ([`page_body`]).
pub fn page_view(result: &Value) -> PageView {
    match page_body(result) {
        Some(Value::Array(rows)) => PageView {
            shape: PageShape::FlatArray,
            rows: Some(rows.len()),
            cursor: None,
        },
        Some(Value::Object(obj)) => {
            const ROWS: [&str; 6] = ["items", "results", "data", "rows", "entries", "records"];
            let rows = ROWS
                .iter()
                .find_map(|k| obj.get(*k).and_then(Value::as_array))
                .or_else(|| obj.values().find_map(Value::as_array))
                .map(Vec::len);
            let cursor = NEXT_NAMES
                .iter()
                .find_map(|k| obj.get(*k))
                .and_then(|c| match c {
                    Value::String(s) if !s.is_empty() => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                });
            PageView {
                shape: if rows.is_some() {
                    PageShape::Envelope
                } else {
                    PageShape::Unknown
                },
                rows,
                cursor,
            }
        }
        _ => PageView {
            shape: PageShape::Unknown,
            rows: None,
            cursor: None,
        },
    }
}

/// How a cursor exposes the backend's position, if it does: it, or one of
/// its `.`-separated segments, is a plain number; or it or any of its `.`-
/// or `-`-separated segments is base64 (or base64url) of JSON or of a
/// number. A sealed cursor (`base64url(JSON).signature` is not one) or a
/// random key reveals nothing.
pub fn cursor_exposes_position(cursor: &str) -> Option<String> {
    let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if plain(cursor) {
        return Some("is a plain number (a raw offset)".into());
    }
    let dotted: Vec<&str> = cursor.split('.').collect();
    if dotted.len() > 1 && dotted.iter().any(|s| plain(s)) {
        return Some("has a plain number as a segment (a raw offset)".into());
    }
    // A `-` is also a base64url digit: a piece between two is only read
    // as an encoding, never as a number on its own.
    let mut candidates: Vec<&str> = vec![cursor];
    candidates.extend(dotted.iter().copied());
    for segment in &dotted {
        candidates.extend(segment.split('-'));
    }
    candidates.dedup();
    candidates
        .into_iter()
        .filter(|c| c.len() >= 2)
        .find_map(decoded_position)
}

/// What a base64 (or base64url, padded or not) `text` decodes to, if it is
/// a number (two digits or more) or a JSON object or array.
fn decoded_position(text: &str) -> Option<String> {
    let engines = [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::URL_SAFE,
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let decoded = engines
        .iter()
        .find_map(|e| e.decode(text).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok())?;
    let decoded = decoded.trim();
    if decoded.len() >= 2 && decoded.bytes().all(|b| b.is_ascii_digit()) {
        return Some("decodes (base64) to a plain number (a raw offset)".into());
    }
    match serde_json::from_str::<Value>(decoded).ok()? {
        Value::Object(obj) => Some(format!(
            "decodes (base64) to JSON naming {}",
            obj.keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Value::Array(_) => Some("decodes (base64) to a JSON array".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_read_only_tools_are_called_unless_allowed_and_never_destructive_ones() {
        let ro = json!({"name": "a", "annotations": {"readOnlyHint": true}});
        let safe = json!({"name": "b", "annotations": {"destructiveHint": false}});
        let plain = json!({"name": "c"});
        assert!(may_call(&ro, false).is_ok());
        assert!(may_call(&safe, false).is_err());
        assert!(may_call(&safe, true).is_ok());
        assert!(may_call(&plain, false).is_err());
        assert_eq!(
            may_call(&plain, true),
            Err("may be destructive (no destructiveHint: false), never called")
        );
        let destructive = json!({"name": "d", "annotations": {"destructiveHint": true}});
        assert_eq!(
            may_call(&destructive, false),
            Err("annotated destructiveHint: true, never called")
        );
    }

    #[test]
    fn arguments_are_the_smallest_valid_values_of_the_required_properties() {
        let schema = json!({"type": "object", "required": ["s", "n", "e", "b", "o", "l"],
            "properties": {
                "s": {"type": "string", "minLength": 3},
                "n": {"type": "integer", "minimum": 5, "maximum": 9},
                "e": {"type": "string", "enum": ["x", "y"]},
                "b": {"type": "boolean"},
                "o": {"type": "object", "required": ["k"], "properties": {"k": {"type": "number"}}},
                "l": {"type": "array", "minItems": 2, "items": {"type": "integer"}},
                "optional": {"type": "string"}}});
        assert_eq!(
            arguments_for(&schema),
            Some(json!({"s": "aaa", "n": 5, "e": "x", "b": false, "o": {"k": 1.0}, "l": [1, 1]}))
        );
        assert_eq!(arguments_for(&json!({"type": "object"})), Some(json!({})));
        let unknowable =
            json!({"type": "object", "required": ["r"], "properties": {"r": {"$ref": "#/x"}}});
        assert_eq!(arguments_for(&unknowable), None);
    }

    #[test]
    fn list_tools_and_their_parameters() {
        assert!(is_list_tool(&json!({"name": "list_tasks"})));
        assert!(is_list_tool(&json!({"name": "listFiles"})));
        assert!(!is_list_tool(&json!({"name": "listen"})));
        assert!(is_list_tool(
            &json!({"name": "search", "outputSchema": {"type": "object",
            "properties": {"hits": {"type": "array"}, "nextCursor": {"type": "string"}}}})
        ));
        let schema = json!({"properties": {"limit": {"type": "integer", "maximum": 200}, "cursor": {"type": "string"}}});
        assert_eq!(limit_param(&schema), Some(("limit", Some(200))));
        // pydantic's Optional[int] = Field(le=200), type lists, exclusive bounds, floats.
        let optional = json!({"properties": {"limit": {"anyOf": [{"type": "integer", "maximum": 200}, {"type": "null"}]}}});
        assert_eq!(limit_param(&optional), Some(("limit", Some(200))));
        let listed = json!({"properties": {"limit": {"type": ["integer", "null"], "exclusiveMaximum": 101}}});
        assert_eq!(limit_param(&listed), Some(("limit", Some(100))));
        let float = json!({"properties": {"limit": {"type": "integer", "maximum": 200.0}}});
        assert_eq!(limit_param(&float), Some(("limit", Some(200))));
        let open = json!({"properties": {"limit": {"type": "integer"}}});
        assert_eq!(limit_param(&open), Some(("limit", None)));
        assert_eq!(cursor_param(&schema), Some("cursor"));
        assert_eq!(
            limit_param(&json!({"properties": {"limit": {"type": "string"}}})),
            None
        );
    }

    #[test]
    fn pages_are_read_from_structured_content_or_text() {
        let env = json!({"structuredContent": {"items": [1, 2], "nextCursor": "c"}});
        assert_eq!(
            page_view(&env),
            PageView {
                shape: PageShape::Envelope,
                rows: Some(2),
                cursor: Some("c".into())
            }
        );
        let flat = json!({"content": [{"type": "text", "text": "[1,2,3]"}]});
        assert_eq!(page_view(&flat).shape, PageShape::FlatArray);
        assert_eq!(page_view(&flat).rows, Some(3));
        let prose = json!({"content": [{"type": "text", "text": "hello"}]});
        assert_eq!(page_view(&prose).shape, PageShape::Unknown);
    }

    #[test]
    fn cursors_that_expose_a_position() {
        assert!(cursor_exposes_position("40").is_some());
        let b64 = base64::engine::general_purpose::STANDARD.encode(r#"{"offset":40}"#);
        assert_eq!(
            cursor_exposes_position(&b64).as_deref(),
            Some("decodes (base64) to JSON naming offset")
        );
        // A signed but readable cursor: base64url(JSON).signature.
        let signed = format!(
            "{}.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(r#"{"v":1,"s":"tools/list","o":500,"k":"h__tool_499"}"#),
            "Zm9vYmFyYmF6cXV4"
        );
        assert_eq!(
            cursor_exposes_position(&signed).as_deref(),
            Some("decodes (base64) to JSON naming v, s, o, k")
        );
        assert!(cursor_exposes_position("page.40").is_some());
        let dashed = format!(
            "x9-{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("[3,4]")
        );
        assert!(cursor_exposes_position(&dashed).is_some());
        // Random base64url with dashes and digit runs between them.
        assert_eq!(cursor_exposes_position("q7Lr-4-Xv0pZ_aYb-kT2m"), None);
        let b64n = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("120");
        assert!(cursor_exposes_position(&b64n).is_some());
        assert_eq!(cursor_exposes_position("v1.k3J9xQ-7dfa0c1e"), None);
        assert_eq!(cursor_exposes_position("c2"), None);
    }
}
