//! Pages for every list sluice owns, so that no answer of sluice's own
//! outgrows the context of the model that reads it.
//!
//! - `limit`: an integer from 1 to [`MAX_LIMIT`]; anything else (0, 201,
//!   2.5, `"20"`) is `-32602` naming the range, before any data is read.
//! - `fields`: `"lite"` (a few display fields a row) or `"full"`.
//! - A byte cap: the serialized page stays within `max_bytes` by keeping the
//!   **largest prefix** of rows that fits (never by halving), at least one
//!   row. `isCapped: true` says the cap cut the page, and `nextCursor`
//!   points right after the last row returned, so draining the pages gives
//!   every row exactly once.
//! - Envelope `{items, nextCursor?, isCapped?}`: never a bare array; the end
//!   is an absent `nextCursor`. (The MCP lists keep their own field name,
//!   `tools`, ..., and carry no `isCapped`.)
//! - Cursors are opaque: a versioned payload, encrypted and sealed
//!   ([`crate::seal`]),
//!   bound to the surface and the filter that made them, and valid for
//!   [`CURSOR_TTL_MS`]. Anything else is `-32602` "invalid cursor".

use serde_json::{Map, Value, json};

use crate::canonical;
use crate::jsonrpc::{self, RpcError};
use crate::seal::SealKey;

/// The largest `limit`.
pub const MAX_LIMIT: usize = 200;
/// The `limit` when none is given.
pub const DEFAULT_LIMIT: usize = 20;
/// The default byte cap of one page.
pub const DEFAULT_PAGE_BYTES: usize = 50_000;
/// How long a cursor stays valid (one hour).
pub const CURSOR_TTL_MS: u64 = 3_600_000;

/// How much of each row a page carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fields {
    /// An id plus a few display fields (at most 6 in all).
    Lite,
    /// The whole entry.
    Full,
}

/// Where the next page starts: after the row at `offset - 1`, whose key was
/// `last_key` (so a page still resumes right when rows were added or
/// removed before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// Rows returned so far.
    pub offset: usize,
    /// The key of the last row returned.
    pub last_key: String,
}

/// The shape of a page: the field holding the rows, and whether the page
/// says `isCapped`.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// `items` for sluice's own lists; `tools`, ... for the MCP lists.
    pub field: &'static str,
    /// Whether `isCapped: true` is written when the cap cut the page.
    pub capped_flag: bool,
}

/// A page, ready to send, and where it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The envelope.
    pub value: Value,
    /// Rows in it.
    pub rows: usize,
    /// Whether the byte cap cut it.
    pub capped: bool,
}

/// Seals and opens cursors.
#[derive(Clone)]
pub struct Cursors {
    key: SealKey,
}

/// The `-32602` for a bad cursor. Fixed text: nothing of the cursor.
pub fn invalid_cursor() -> RpcError {
    RpcError::invalid_params("invalid cursor")
}

/// Reads `limit`: absent gives `default`; an integer from 1 to [`MAX_LIMIT`]
/// passes; anything else is `-32602` naming the range.
pub fn parse_limit(value: Option<&Value>, default: usize) -> Result<usize, RpcError> {
    let Some(value) = value else {
        return Ok(default);
    };
    value
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (1..=MAX_LIMIT).contains(n))
        .ok_or_else(|| {
            RpcError::invalid_params(format!(
                "limit must be an integer from 1 to {MAX_LIMIT} (got {})",
                jsonrpc::excerpt(value)
            ))
        })
}

/// Reads `fields`: `"lite"` or `"full"`, `default` when absent.
pub fn parse_fields(value: Option<&Value>, default: Fields) -> Result<Fields, RpcError> {
    match value {
        None => Ok(default),
        Some(v) if v == "lite" => Ok(Fields::Lite),
        Some(v) if v == "full" => Ok(Fields::Full),
        Some(v) => Err(RpcError::invalid_params(format!(
            "fields must be \"lite\" or \"full\" (got {})",
            jsonrpc::excerpt(v)
        ))),
    }
}

// === impl Cursors ===

impl Cursors {
    /// Cursors sealed with a 32-byte secret.
    pub fn new(secret: [u8; 32]) -> Self {
        Cursors {
            key: SealKey::new(secret, String::new(), "sluice list cursor v1"),
        }
    }

    /// A cursor for `position` on `surface` under `filter`.
    pub fn issue(&self, surface: &str, filter: &Value, position: &Position, now_ms: u64) -> String {
        self.key.seal(&json!({
            "v": 1,
            "s": surface,
            "f": filter_digest(filter),
            "o": position.offset,
            "k": position.last_key,
            "x": now_ms.saturating_add(CURSOR_TTL_MS),
        }))
    }

    /// The position a cursor names, if it is valid for this surface and
    /// filter and not expired.
    pub fn open(
        &self,
        token: &Value,
        surface: &str,
        filter: &Value,
        now_ms: u64,
    ) -> Result<Position, RpcError> {
        let token = token.as_str().ok_or_else(invalid_cursor)?;
        let payload = self.key.open(token).map_err(|_| invalid_cursor())?;
        let matches = payload["v"] == 1
            && payload["s"] == surface
            && payload["f"] == filter_digest(filter)
            && payload["x"].as_u64().is_some_and(|x| now_ms <= x);
        if !matches {
            return Err(invalid_cursor());
        }
        Ok(Position {
            offset: payload["o"]
                .as_u64()
                .and_then(|o| usize::try_from(o).ok())
                .ok_or_else(invalid_cursor)?,
            last_key: payload["k"].as_str().ok_or_else(invalid_cursor)?.to_owned(),
        })
    }
}

fn filter_digest(filter: &Value) -> String {
    let digest = canonical::digest(filter);
    digest.chars().skip("sha256:".len()).take(16).collect()
}

/// Where a page starts in a list of `len` rows (`key(i)`: row i's key)
/// when it resumes after `position`: right after the row it names, found
/// where it was (one comparison, so that a page costs what the page holds,
/// whatever the list's length) or, if rows moved, by its key; past the end
/// when it is gone and the offset is too.
pub fn resume_at<'k>(len: usize, key: impl Fn(usize) -> &'k str, position: &Position) -> usize {
    let last = position.last_key.as_str();
    if let Some(i) = position.offset.checked_sub(1)
        && i < len
        && key(i) == last
    {
        return position.offset;
    }
    match (0..len).find(|&i| key(i) == last) {
        Some(i) => i + 1,
        None => position.offset.min(len),
    }
}

/// Builds a page from `window`, the rows from where the page starts, at
/// most `limit` of them (`more_after`: rows follow the window). Keeps the
/// largest prefix whose envelope fits `max_bytes` (at least one row).
/// `cursor(n)` makes the `nextCursor` for a page of the first `n` rows; it
/// is called for the candidates only, largest first (sealing a cursor costs
/// far more than measuring a row), so once or twice per page.
pub fn build_page(
    window: &[Value],
    more_after: bool,
    max_bytes: usize,
    shape: Shape,
    mut cursor: impl FnMut(usize) -> String,
) -> Page {
    // `{"<field>":[` and `]}`.
    let fixed = shape.field.len() + 7;
    // ends[i]: the bytes of the first i + 1 rows, commas included. Once the
    // rows alone are over, no longer prefix can fit.
    let mut ends = Vec::with_capacity(window.len());
    let mut items_len = 0usize;
    for (i, row) in window.iter().enumerate() {
        items_len += compact_len(row) + usize::from(i > 0);
        ends.push(items_len);
        if fixed + items_len > max_bytes {
            break;
        }
    }
    let mut chosen = (0, None, false);
    for n in (1..=ends.len()).rev() {
        let rows_fit = fixed + ends[n - 1] <= max_bytes;
        if !rows_fit && n > 1 {
            continue;
        }
        let capped = n < window.len();
        let next = (capped || more_after).then(|| cursor(n));
        let extra = next.as_ref().map_or(0, |c| {
            ",\"nextCursor\":".len() + compact_len(&Value::from(c.as_str()))
        }) + if capped && shape.capped_flag {
            ",\"isCapped\":true".len()
        } else {
            0
        };
        // The first row goes out even alone over the cap: a page is never
        // empty while rows remain.
        if fixed + ends[n - 1] + extra <= max_bytes || n == 1 {
            chosen = (n, next, capped);
            break;
        }
    }
    let (n, next, capped) = chosen;
    let mut envelope = Map::new();
    envelope.insert(shape.field.into(), Value::Array(window[..n].to_vec()));
    if let Some(next) = next {
        envelope.insert("nextCursor".into(), next.into());
    }
    if capped && shape.capped_flag {
        envelope.insert("isCapped".into(), true.into());
    }
    Page {
        value: Value::Object(envelope),
        rows: n,
        capped,
    }
}

fn compact_len(value: &Value) -> usize {
    crate::boundary::budget::measure(value, usize::MAX - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ITEMS: Shape = Shape {
        field: "items",
        capped_flag: true,
    };

    fn rows(sizes: &[usize]) -> Vec<Value> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, s)| json!({"name": format!("r{i}"), "d": "x".repeat(*s)}))
            .collect()
    }

    /// Drains every page; returns the names in order and the pages.
    fn drain(rows: &[Value], limit: usize, max: usize) -> (Vec<String>, Vec<Page>) {
        let cursors = Cursors::new([7; 32]);
        let keys: Vec<&str> = rows
            .iter()
            .map(|r| r["name"].as_str().unwrap_or(""))
            .collect();
        let filter = json!({});
        let mut start = 0;
        let mut names = Vec::new();
        let mut pages = Vec::new();
        for _ in 0..=rows.len() {
            let end = rows.len().min(start + limit);
            let page = build_page(&rows[start..end], end < rows.len(), max, ITEMS, |n| {
                let pos = Position {
                    offset: start + n,
                    last_key: keys[start + n - 1].to_owned(),
                };
                cursors.issue("test", &filter, &pos, 0)
            });
            for r in page.value["items"].as_array().into_iter().flatten() {
                names.push(r["name"].as_str().unwrap_or("").to_owned());
            }
            let next = page.value.get("nextCursor").cloned();
            pages.push(page);
            match next {
                None => return (names, pages),
                Some(c) => {
                    let pos = cursors.open(&c, "test", &filter, 1).expect("own cursor");
                    start = resume_at(keys.len(), |i| keys[i], &pos);
                }
            }
        }
        panic!("more pages than rows");
    }

    #[test]
    fn limits_outside_the_range_are_refused() {
        for bad in [
            json!(0),
            json!(201),
            json!(-1),
            json!(2.5),
            json!("20"),
            json!(null),
        ] {
            let e = parse_limit(Some(&bad), 20).expect_err("refused");
            assert_eq!(e.code, -32602);
            assert!(e.message.contains("from 1 to 200"), "{}", e.message);
        }
        assert_eq!(parse_limit(None, 20), Ok(20));
        assert_eq!(parse_limit(Some(&json!(200)), 20), Ok(200));
        assert_eq!(
            parse_fields(Some(&json!("full")), Fields::Lite),
            Ok(Fields::Full)
        );
        assert!(parse_fields(Some(&json!("all")), Fields::Lite).is_err());
    }

    #[test]
    fn the_cap_keeps_the_largest_prefix_and_resumes_after_it() {
        // 10 rows of ~1 KB under a 3,500-byte cap: 3 a page, not 1 or 2.
        let rows = rows(&[1_000; 10]);
        let (names, pages) = drain(&rows, 20, 3_500);
        assert_eq!(names.len(), 10);
        assert_eq!(pages[0].rows, 3);
        assert_eq!(pages[0].value["isCapped"], true);
        for p in &pages {
            assert!(compact_len(&p.value) <= 3_500, "{}", compact_len(&p.value));
        }
        // The last page ends the list: no cursor, not capped.
        let last = pages.last().expect("at least one page");
        assert!(last.value.get("nextCursor").is_none());
        assert!(last.value.get("isCapped").is_none());
    }

    #[test]
    fn a_row_over_the_cap_is_still_returned_alone() {
        let rows = rows(&[10, 5_000, 10]);
        let (names, pages) = drain(&rows, 20, 1_000);
        assert_eq!(names, vec!["r0", "r1", "r2"]);
        assert_eq!(pages[1].rows, 1);
        assert_eq!(pages[1].value["isCapped"], true);
    }

    #[test]
    fn cursors_are_bound_and_sealed() {
        let c = Cursors::new([1; 32]);
        let pos = Position {
            offset: 5,
            last_key: "r4".into(),
        };
        let filter = json!({"server": "git"});
        let token = Value::from(c.issue("sluice_list_tools", &filter, &pos, 1_000));
        assert_eq!(c.open(&token, "sluice_list_tools", &filter, 1_000), Ok(pos));
        let bad = [
            c.open(&token, "sluice_list_servers", &filter, 1_000),
            c.open(
                &token,
                "sluice_list_tools",
                &json!({"server": "web"}),
                1_000,
            ),
            c.open(
                &token,
                "sluice_list_tools",
                &filter,
                1_000 + CURSOR_TTL_MS + 1,
            ),
            Cursors::new([2; 32]).open(&token, "sluice_list_tools", &filter, 1_000),
            c.open(&json!(5), "sluice_list_tools", &filter, 1_000),
        ];
        for b in bad {
            assert_eq!(b.err().map(|e| e.message), Some("invalid cursor".into()));
        }
        // One flipped byte anywhere.
        let s = token.as_str().unwrap_or_default();
        for i in 0..s.len() {
            let mut bytes = s.as_bytes().to_vec();
            bytes[i] ^= 0x01;
            if let Ok(flipped) = String::from_utf8(bytes) {
                assert!(
                    c.open(&json!(flipped), "sluice_list_tools", &filter, 1_000)
                        .is_err(),
                    "byte {i}"
                );
            }
        }
    }

    #[test]
    fn a_resumed_page_follows_its_last_row_when_rows_move() {
        let keys = ["a", "b", "c", "d"];
        let pos = Position {
            offset: 2,
            last_key: "b".into(),
        };
        let at = |keys: &[&'static str]| resume_at(keys.len(), |i| keys[i], &pos);
        assert_eq!(at(&keys), 2);
        // A row was added before: "b" is now third.
        assert_eq!(at(&["z", "a", "b", "c"]), 3);
        // "b" is gone: resume at the same offset.
        assert_eq!(at(&["a", "c", "d"]), 2);
        // The list shrank under the offset.
        assert_eq!(at(&["a"]), 1);
    }

    proptest! {
        /// Any row sizes, any limit, any cap: every row exactly once, in
        /// order, and every page within the cap unless it is one row.
        #[test]
        fn draining_yields_every_row_once(
            sizes in proptest::collection::vec(0usize..3_000, 0..60),
            limit in 1usize..=200,
            max in 200usize..20_000,
        ) {
            let rows = rows(&sizes);
            let (names, pages) = drain(&rows, limit, max);
            let expected: Vec<String> = (0..rows.len()).map(|i| format!("r{i}")).collect();
            prop_assert_eq!(names, expected);
            for p in &pages {
                prop_assert!(p.rows <= limit);
                prop_assert!(p.rows == 1 || compact_len(&p.value) <= max, "{} > {max}", compact_len(&p.value));
                prop_assert!(p.rows >= 1 || rows.is_empty());
            }
        }

        /// The page is the largest prefix whose whole envelope fits, found
        /// by trying every prefix (cursors of varying length included).
        #[test]
        fn the_page_is_the_largest_prefix_that_fits(
            sizes in proptest::collection::vec(0usize..2_000, 1..40),
            more_after in any::<bool>(),
            max in 100usize..20_000,
        ) {
            let rows = rows(&sizes);
            let shape = Shape { field: "items", capped_flag: true };
            let cursor = |n: usize| "c".repeat(n % 7 * 30 + 1);
            let page = build_page(&rows, more_after, max, shape, cursor);
            let envelope = |n: usize| {
                let capped = n < rows.len();
                let mut e = json!({"items": rows[..n].to_vec()});
                if capped || more_after {
                    e["nextCursor"] = cursor(n).into();
                }
                if capped {
                    e["isCapped"] = true.into();
                }
                compact_len(&e)
            };
            let best = (1..=rows.len()).rev().find(|n| envelope(*n) <= max).unwrap_or(1);
            prop_assert_eq!(page.rows, best);
        }
    }
}
