//! `--list-tool MODE`: the read-only list-style tool `list_items`, over a fixed backing set of
//! [`ITEMS`] items `{"id": "item-000", "title": "Item 0", "body": "..."}`.
//!
//! It pages with the arguments `limit` (rows per page) and `cursor` (a previous page's
//! `nextCursor`) and answers `structuredContent` `{"items": [...], "nextCursor": "..."}` (no
//! `nextCursor` on the last page), with the same JSON in its text block. [`ListToolMode::Good`]
//! is how a list tool should behave; each other mode breaks one thing (see [`ListToolMode`]).
//! Progress, when asked for, is sent by `tools::call`.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::ListToolMode;
use crate::bulk;
use crate::jsonrpc::RpcError;
use crate::peer::lock;

/// The tool's name.
pub const NAME: &str = "list_items";
/// How many items there are.
pub const ITEMS: usize = 120;
/// Rows per page when `limit` is absent.
pub const DEFAULT_LIMIT: u64 = 20;
/// The schema's `maximum` for `limit` (every mode but `unbounded`).
pub const MAX_LIMIT: u64 = 50;
/// `silent-cap`: the most rows a page ever has.
pub const SILENT_CAP: usize = 10;
/// Bytes in an item's `body` (every mode but `big-page`).
pub const BODY_BYTES: usize = 200;
/// Bytes in an item's `body` in `big-page` mode.
pub const BIG_BODY_BYTES: usize = 5_000;

/// The tool's definition in `mode`.
pub fn definition(mode: ListToolMode) -> Value {
    let mut limit = json!({
        "type": "integer",
        "minimum": 1,
        "description": format!("Rows per page (default {DEFAULT_LIMIT}).")
    });
    if mode != ListToolMode::Unbounded {
        limit["maximum"] = json!(MAX_LIMIT);
    }
    let mut tool = json!({
        "name": NAME,
        "description": format!("Read-only; lists the fixture's {ITEMS} items, `limit` per page, from `cursor` (the `nextCursor` of the previous page; none on the last page). Reports progress when the request has a progressToken."),
        "inputSchema": {
            "type": "object",
            "properties": {
                "limit": limit,
                "cursor": {"type": "string", "description": "The `nextCursor` of the previous page."}
            }
        },
        "annotations": {"readOnlyHint": true}
    });
    // A bare array cannot be described as the 2025 object-rooted `outputSchema`.
    if mode != ListToolMode::Flat
        && let Some(obj) = tool.as_object_mut()
    {
        obj.insert("outputSchema".into(), output_schema());
    }
    tool
}

/// The `outputSchema` of a page.
fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "title": {"type": "string"},
                        "body": {"type": "string"}
                    },
                    "required": ["id", "title", "body"]
                }
            },
            "nextCursor": {"type": "string"}
        },
        "required": ["items"]
    })
}

/// Item `i`: `{"id": "item-007", "title": "Item 7", "body": <BODY_BYTES or BIG_BODY_BYTES>}`.
pub fn item(i: usize, mode: ListToolMode) -> Value {
    let len = if mode == ListToolMode::BigPage {
        BIG_BODY_BYTES
    } else {
        BODY_BYTES
    };
    let sentence = format!("Body of item {i}, padding to a fixed size. ");
    let mut body = sentence.repeat(len.div_ceil(sentence.len()));
    // ASCII only, so any length is a character boundary.
    body.truncate(len);
    json!({"id": format!("item-{i:03}"), "title": format!("Item {i}"), "body": body})
}

/// The opaque cursors of `good` (and every mode but `raw-cursor`): a random string per offset,
/// made the first time that offset is needed and kept for the life of the process, so a page's
/// cursor is stable but says nothing about the position.
#[derive(Default)]
pub struct Cursors {
    book: Mutex<Book>,
}

#[derive(Default)]
struct Book {
    by_offset: HashMap<usize, String>,
    by_cursor: HashMap<String, usize>,
}

impl Cursors {
    /// The cursor leading to `offset`.
    fn issue(&self, offset: usize) -> String {
        let mut book = lock(&self.book);
        if let Some(c) = book.by_offset.get(&offset) {
            return c.clone();
        }
        // 16 random bytes, base64url without padding; the `.` makes it no base64 at all.
        let raw = bulk::base64(&rand::random::<[u8; 16]>());
        let cursor = format!(
            "lc1.{}",
            raw.trim_end_matches('=')
                .replace('+', "-")
                .replace('/', "_")
        );
        book.by_offset.insert(offset, cursor.clone());
        book.by_cursor.insert(cursor.clone(), offset);
        cursor
    }

    /// The offset `cursor` leads to, if it is one this process issued.
    fn resolve(&self, cursor: &str) -> Option<usize> {
        lock(&self.book).by_cursor.get(cursor).copied()
    }
}

/// `raw-cursor`'s cursor: standard base64 of `{"offset":N}`.
pub fn raw_cursor(offset: usize) -> String {
    bulk::base64(json!({ "offset": offset }).to_string().as_bytes())
}

/// A tool execution error (`isError: true`).
fn tool_error(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// Runs `list_items` in `mode` with `args`. A bad `limit` is a tool error (`isError`); a cursor
/// that is not one of ours is JSON-RPC -32602.
pub fn call(cursors: &Cursors, mode: ListToolMode, args: &Value) -> Result<Value, RpcError> {
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => n,
            _ => {
                return Ok(tool_error(
                    "`limit` must be an integer of at least 1".into(),
                ));
            }
        },
    };
    if mode != ListToolMode::Unbounded && limit > MAX_LIMIT {
        return Ok(tool_error(format!("`limit` must be at most {MAX_LIMIT}")));
    }
    let invalid = || RpcError::invalid_params("Invalid cursor");
    let offset = match args.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) if mode == ListToolMode::RawCursor => {
            // Any well-formed offset is honoured, issued or not: that is what a raw cursor is.
            (0..=ITEMS)
                .find(|o| raw_cursor(*o) == *c)
                .ok_or_else(invalid)?
        }
        Some(Value::String(c)) => cursors.resolve(c).ok_or_else(invalid)?,
        Some(_) => return Err(invalid()),
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let (rows, truncated) = if mode == ListToolMode::SilentCap && limit > SILENT_CAP {
        (SILENT_CAP, true)
    } else {
        (limit, false)
    };
    let end = offset.saturating_add(rows).min(ITEMS);
    let items: Vec<Value> = (offset..end).map(|i| item(i, mode)).collect();
    if mode == ListToolMode::Flat {
        let text = Value::Array(items).to_string();
        return Ok(json!({"content": [{"type": "text", "text": text}]}));
    }
    let mut page = json!({ "items": items });
    if end < ITEMS && !truncated {
        page["nextCursor"] = json!(match mode {
            ListToolMode::RawCursor => raw_cursor(end),
            _ => cursors.issue(end),
        });
    }
    Ok(json!({
        "content": [{"type": "text", "text": page.to_string()}],
        "structuredContent": page
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Calls `list_items` and returns (page, whole result).
    fn page(cursors: &Cursors, mode: ListToolMode, args: Value) -> (Value, Value) {
        let r = call(cursors, mode, &args).unwrap();
        assert!(r.get("isError").is_none(), "{r}");
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        match r.get("structuredContent") {
            Some(s) => {
                assert_eq!(&text, s, "the text block mirrors structuredContent");
                (s.clone(), r)
            }
            None => (text, r),
        }
    }

    fn ids(page: &Value) -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Follows the cursor from page 1 with `limit`; (pages, ids, every cursor).
    fn walk(mode: ListToolMode, limit: u64) -> (usize, Vec<String>, Vec<String>) {
        let cursors = Cursors::default();
        let mut all = Vec::new();
        let mut seen = Vec::new();
        let mut args = json!({ "limit": limit });
        for n in 1..=500 {
            let (p, _) = page(&cursors, mode, args.clone());
            all.extend(ids(&p));
            match p.get("nextCursor") {
                None => return (n, all, seen),
                Some(c) => {
                    seen.push(c.as_str().unwrap().to_owned());
                    args["cursor"] = c.clone();
                }
            }
        }
        panic!("no end")
    }

    #[test]
    fn items_are_numbered_with_fixed_size_bodies() {
        let it = item(7, ListToolMode::Good);
        assert_eq!(it["id"], "item-007");
        assert_eq!(it["title"], "Item 7");
        assert_eq!(it["body"].as_str().unwrap().len(), BODY_BYTES);
        assert_eq!(item(119, ListToolMode::Good)["id"], "item-119");
        let big = item(0, ListToolMode::BigPage);
        assert_eq!(big["body"].as_str().unwrap().len(), BIG_BODY_BYTES);
    }

    #[test]
    fn good_pages_with_opaque_cursors_and_a_bounded_limit() {
        let def = definition(ListToolMode::Good);
        assert_eq!(def["annotations"], json!({"readOnlyHint": true}));
        assert_eq!(def["inputSchema"]["properties"]["limit"]["maximum"], 50);
        assert_eq!(def["inputSchema"]["properties"]["limit"]["minimum"], 1);
        assert_eq!(def["inputSchema"]["properties"]["cursor"]["type"], "string");
        assert_eq!(def["outputSchema"]["required"], json!(["items"]));

        let cursors = Cursors::default();
        let (first, _) = page(&cursors, ListToolMode::Good, json!({}));
        assert_eq!(ids(&first).len(), 20, "default limit");
        assert_eq!(ids(&first)[0], "item-000");
        let cursor = first["nextCursor"].as_str().unwrap();
        assert!(cursor.starts_with("lc1.") && cursor.len() == 26, "{cursor}");
        // Stable: page 1 again gives the same cursor.
        let (again, _) = page(&cursors, ListToolMode::Good, json!({}));
        assert_eq!(again["nextCursor"], first["nextCursor"]);

        let (pages, all, seen) = walk(ListToolMode::Good, 7);
        assert_eq!((pages, all.len()), (18, ITEMS));
        let expected: Vec<String> = (0..ITEMS).map(|i| format!("item-{i:03}")).collect();
        assert_eq!(all, expected);
        assert!(seen.iter().all(|c| c.starts_with("lc1.")));

        // Above the maximum: a tool error; a cursor we never issued: -32602.
        let over = call(&cursors, ListToolMode::Good, &json!({"limit": 51})).unwrap();
        assert_eq!(over["isError"], true);
        for bad in [
            json!("lc1.nope"),
            json!("20"),
            json!(3),
            json!(raw_cursor(20)),
        ] {
            let e = call(&cursors, ListToolMode::Good, &json!({ "cursor": bad }));
            assert_eq!(e.err().map(|e| e.code), Some(-32602), "{bad}");
        }
        let zero = call(&cursors, ListToolMode::Good, &json!({"limit": 0})).unwrap();
        assert_eq!(zero["isError"], true);
    }

    #[test]
    fn unbounded_honours_any_limit() {
        let def = definition(ListToolMode::Unbounded);
        assert!(
            def["inputSchema"]["properties"]["limit"]
                .get("maximum")
                .is_none()
        );
        let (p, _) = page(
            &Cursors::default(),
            ListToolMode::Unbounded,
            json!({"limit": 1000}),
        );
        assert_eq!(ids(&p).len(), ITEMS);
        assert!(p.get("nextCursor").is_none());
        // Good refuses the same call.
        let good = call(
            &Cursors::default(),
            ListToolMode::Good,
            &json!({"limit": 1000}),
        );
        assert_eq!(good.unwrap()["isError"], true);
    }

    #[test]
    fn silent_cap_truncates_without_a_cursor() {
        let cursors = Cursors::default();
        let (p, _) = page(&cursors, ListToolMode::SilentCap, json!({}));
        assert_eq!(ids(&p).len(), SILENT_CAP);
        assert!(p.get("nextCursor").is_none(), "more exist, yet no cursor");
        let (p, _) = page(&cursors, ListToolMode::SilentCap, json!({"limit": 10}));
        assert_eq!(ids(&p).len(), 10);
        assert!(
            p.get("nextCursor").is_some(),
            "a limit up to 10 pages normally"
        );
        let (_, all, _) = walk(ListToolMode::SilentCap, 1);
        assert_eq!(
            all.len(),
            ITEMS,
            "draining with limit 1 still sees everything"
        );
        // Good gives 20 and a cursor for the same call.
        let (g, _) = page(&cursors, ListToolMode::Good, json!({}));
        assert_eq!((ids(&g).len(), g.get("nextCursor").is_some()), (20, true));
    }

    #[test]
    fn flat_is_a_bare_array_in_text_only() {
        let def = definition(ListToolMode::Flat);
        assert!(def.get("outputSchema").is_none());
        let (p, r) = page(&Cursors::default(), ListToolMode::Flat, json!({}));
        assert!(r.get("structuredContent").is_none());
        let rows = p.as_array().unwrap();
        assert_eq!(rows.len(), 20);
        assert_eq!(rows[0]["id"], "item-000");
    }

    #[test]
    fn raw_cursor_is_base64_of_the_offset() {
        let (p, _) = page(&Cursors::default(), ListToolMode::RawCursor, json!({}));
        let c = p["nextCursor"].as_str().unwrap();
        assert_eq!(c, "eyJvZmZzZXQiOjIwfQ==", "base64 of {{\"offset\":20}}");
        assert_eq!(c, bulk::base64(br#"{"offset":20}"#));
        // A forged offset is honoured.
        let forged = json!({ "cursor": raw_cursor(100) });
        let (p, _) = page(&Cursors::default(), ListToolMode::RawCursor, forged);
        assert_eq!(ids(&p)[0], "item-100");
        assert!(p.get("nextCursor").is_none());
        let (_, all, _) = walk(ListToolMode::RawCursor, 20);
        assert_eq!(all.len(), ITEMS);
        let bad = call(
            &Cursors::default(),
            ListToolMode::RawCursor,
            &json!({"cursor": "x"}),
        );
        assert_eq!(bad.err().map(|e| e.code), Some(-32602));
    }

    #[test]
    fn big_page_exceeds_fifty_kilobytes() {
        let (_, r) = page(&Cursors::default(), ListToolMode::BigPage, json!({}));
        assert!(r["structuredContent"].to_string().len() > 50_000);
        let (_, g) = page(&Cursors::default(), ListToolMode::Good, json!({}));
        assert!(g["structuredContent"].to_string().len() < 10_000);
    }
}
