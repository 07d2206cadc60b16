//! List pagination: cutting a protocol list into pages, the cursors that lead from one page to
//! the next, and the deliberately broken cursor modes (`--cursor-mode`, `--violate raw-cursor`).

use serde_json::{Value, json};

use crate::CursorMode;
use crate::jsonrpc::RpcError;

/// What an offset is XORed with, so that consecutive cursors do not look consecutive.
const CURSOR_KEY: u32 = 0x5bd1_e995;
/// The cursor's digits: letters only, none of which starts base64 of a digit or of `{` (a
/// checker that decodes cursors finds neither a number nor JSON in them).
const CURSOR_DIGITS: &[u8; 20] = b"ghijklmnopqrstuvwxyz";
/// Digits per cursor (20^8 > 2^32).
const CURSOR_WIDTH: usize = 8;

/// Encodes a list offset as an opaque cursor: `fx1.` and the scrambled offset in base 20.
fn encode(offset: usize) -> String {
    let mut n = u64::from(u32::try_from(offset).unwrap_or(u32::MAX) ^ CURSOR_KEY);
    let mut digits = [b'g'; CURSOR_WIDTH];
    for d in digits.iter_mut().rev() {
        *d = CURSOR_DIGITS[(n % 20) as usize];
        n /= 20;
    }
    format!("fx1.{}", String::from_utf8_lossy(&digits))
}

/// Decodes an opaque cursor; `None` if it was not one of ours.
fn decode(cursor: &str) -> Option<usize> {
    let digits = cursor.strip_prefix("fx1.")?;
    if digits.len() != CURSOR_WIDTH {
        return None;
    }
    let mut n: u64 = 0;
    for b in digits.bytes() {
        let d = CURSOR_DIGITS.iter().position(|c| *c == b)?;
        n = n * 20 + d as u64;
    }
    let scrambled = u32::try_from(n).ok()?;
    usize::try_from(scrambled ^ CURSOR_KEY).ok()
}

/// How list cursors spell an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorEncoding {
    /// Opaque strings (`fx1.<8 letters>`), the default.
    Opaque,
    /// Plain decimal offsets (`"4"`, `"8"`, ...): `--violate raw-cursor`.
    RawOffset,
}

impl CursorEncoding {
    fn encode(self, offset: usize) -> String {
        match self {
            CursorEncoding::Opaque => encode(offset),
            CursorEncoding::RawOffset => offset.to_string(),
        }
    }

    fn decode(self, cursor: &str) -> Option<usize> {
        match self {
            CursorEncoding::Opaque => decode(cursor),
            // Canonical decimal only, so that `"04"` is not another spelling of `"4"`.
            CursorEncoding::RawOffset => cursor
                .parse::<usize>()
                .ok()
                .filter(|n| n.to_string() == cursor),
        }
    }
}

/// One page of a list: its items and the `nextCursor` to report (`None` = last page).
pub struct Page {
    pub items: Vec<Value>,
    pub next: Option<Value>,
    /// Which page this is (1-based), derived from the cursor rather than from a request count,
    /// so that page faults (`--fail-page`, ...) hit every walk of the list at the same page.
    pub number: usize,
}

/// [`paginate_with`] with opaque cursors (what the tests below mostly need).
#[cfg(test)]
pub fn paginate(
    items: &[Value],
    cursor: Option<&Value>,
    page_size: Option<usize>,
    mode: CursorMode,
    cycle_length: usize,
) -> Result<Page, RpcError> {
    paginate_with(
        items,
        cursor,
        page_size,
        mode,
        cycle_length,
        CursorEncoding::Opaque,
    )
}

/// Cuts `items` into the page selected by `cursor`, behaving as `mode` says (`cycle_length` is
/// only used by [`CursorMode::Cycle`]), with cursors spelled as `encoding` says.
///
/// Without a page size everything is one page (and any cursor is ignored). An unknown cursor is
/// `-32602 Invalid cursor`.
pub fn paginate_with(
    items: &[Value],
    cursor: Option<&Value>,
    page_size: Option<usize>,
    mode: CursorMode,
    cycle_length: usize,
    encoding: CursorEncoding,
) -> Result<Page, RpcError> {
    let encode = |offset: usize| encoding.encode(offset);
    let decode = |cursor: &str| encoding.decode(cursor);
    let Some(size) = page_size else {
        return Ok(Page {
            items: items.to_vec(),
            next: None,
            number: 1,
        });
    };
    let len = items.len();
    let invalid = || RpcError::invalid_params("Invalid cursor");
    let offset = match (cursor, mode) {
        (None | Some(Value::Null), _) => 0,
        // The empty string is a valid cursor in this mode: it is page 1's nextCursor.
        (Some(Value::String(s)), CursorMode::EmptyString) if s.is_empty() => size.min(len),
        (Some(Value::Number(n)), CursorMode::NonString) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(invalid)?,
        (Some(Value::String(s)), _) => decode(s).ok_or_else(invalid)?,
        (Some(_), _) => return Err(invalid()),
    };
    if offset > len {
        return Err(invalid());
    }
    let end = (offset + size).min(len);
    let page_index = offset / size;
    let normal_next = (end < len).then_some(end);
    let next = match mode {
        CursorMode::Normal => normal_next.map(|o| Value::String(encode(o))),
        CursorMode::Repeat => Some(Value::String(encode(size.min(len)))),
        // Page L+1 (index L) leads back to page 2: a cycle of L pages.
        CursorMode::Cycle if page_index == cycle_length => {
            Some(Value::String(encode(size.min(len))))
        }
        CursorMode::Cycle => normal_next.map(|o| Value::String(encode(o))),
        CursorMode::EmptyString if offset == 0 && cursor.is_none_or(Value::is_null) => {
            normal_next.map(|_| Value::String(String::new()))
        }
        CursorMode::EmptyString => normal_next.map(|o| Value::String(encode(o))),
        CursorMode::NonString => normal_next.map(|o| json!(o)),
    };
    let items = items[offset..end].to_vec();
    Ok(Page {
        items,
        next,
        number: page_index + 1,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn items(n: usize) -> Vec<Value> {
        (0..n).map(|i| json!(i)).collect()
    }

    fn drain(n: usize, size: usize, mode: CursorMode, max_pages: usize) -> (usize, Vec<Value>) {
        let mut cursor: Option<Value> = None;
        let mut seen = Vec::new();
        for pages in 1..=max_pages {
            let page = paginate(&items(n), cursor.as_ref(), Some(size), mode, 2).unwrap();
            seen.extend(page.items);
            match page.next {
                None => return (pages, seen),
                Some(c) => cursor = Some(c),
            }
        }
        (max_pages, seen)
    }

    #[test]
    fn normal_drains_everything_once() {
        let (pages, seen) = drain(23, 5, CursorMode::Normal, 100);
        assert_eq!(pages, 5);
        assert_eq!(seen, items(23));
    }

    #[test]
    fn exact_multiple_has_no_empty_last_page() {
        let (pages, seen) = drain(10, 5, CursorMode::Normal, 100);
        assert_eq!(pages, 2);
        assert_eq!(seen.len(), 10);
    }

    #[test]
    fn no_page_size_is_one_page() {
        let page = paginate(&items(7), None, None, CursorMode::Normal, 2).unwrap();
        assert_eq!(page.items.len(), 7);
        assert!(page.next.is_none());
    }

    #[test]
    fn empty_string_mode_is_complete() {
        let first = paginate(&items(12), None, Some(5), CursorMode::EmptyString, 2).unwrap();
        assert_eq!(first.next, Some(json!("")));
        let (pages, seen) = drain(12, 5, CursorMode::EmptyString, 100);
        assert_eq!(pages, 3);
        assert_eq!(seen, items(12));
    }

    #[test]
    fn repeat_and_cycle_never_end() {
        assert_eq!(drain(30, 5, CursorMode::Repeat, 50).0, 50);
        assert_eq!(drain(30, 5, CursorMode::Cycle, 50).0, 50);
    }

    /// The `nextCursor`s of the first `n` pages of 30 items in pages of 5, with their numbers.
    fn cycle_cursors(cycle_length: usize, n: usize) -> Vec<(usize, Value)> {
        let mut cursor: Option<Value> = None;
        let mut seen = Vec::new();
        for _ in 0..n {
            let page = paginate(
                &items(30),
                cursor.as_ref(),
                Some(5),
                CursorMode::Cycle,
                cycle_length,
            )
            .unwrap();
            cursor = page.next;
            seen.push((page.number, cursor.clone().unwrap()));
        }
        seen
    }

    #[test]
    fn cycle_length_sets_the_cycle() {
        let c = |page: usize| json!(encode((page - 1) * 5));
        // Default: page 3 returns page 1's cursor (c2), as before --cycle-length existed.
        let two = [(1, c(2)), (2, c(3)), (3, c(2)), (2, c(3)), (3, c(2))];
        assert_eq!(cycle_cursors(2, 5), two);
        let three = [(1, c(2)), (2, c(3)), (3, c(4)), (4, c(2)), (2, c(3))];
        assert_eq!(cycle_cursors(3, 5), three);
    }

    #[test]
    fn page_numbers_follow_the_cursor() {
        let page = |cursor: Value| {
            paginate(&items(12), Some(&cursor), Some(5), CursorMode::Normal, 2)
                .unwrap()
                .number
        };
        assert_eq!(page(json!(encode(5))), 2);
        assert_eq!(page(json!(encode(10))), 3);
        assert_eq!(page(Value::Null), 1);
    }

    #[test]
    fn raw_offset_cursors_are_plain_decimals() {
        let page = |cursor: Option<Value>, encoding| {
            paginate_with(
                &items(12),
                cursor.as_ref(),
                Some(5),
                CursorMode::Normal,
                2,
                encoding,
            )
        };
        let first = page(None, CursorEncoding::RawOffset).unwrap();
        assert_eq!(first.next, Some(json!("5")));
        let second = page(first.next, CursorEncoding::RawOffset).unwrap();
        assert_eq!((second.number, second.next), (2, Some(json!("10"))));
        let last = page(Some(json!("10")), CursorEncoding::RawOffset).unwrap();
        assert_eq!((last.items.len(), last.next), (2, None));
        for bad in ["05", "fx1.5", "-5", "13"] {
            let err = page(Some(json!(bad)), CursorEncoding::RawOffset).err();
            assert_eq!(err.map(|e| e.code), Some(-32602), "{bad}");
        }
        // The default stays opaque, and does not take raw offsets.
        let opaque = page(None, CursorEncoding::Opaque).unwrap();
        assert_eq!(opaque.next, Some(json!(encode(5))));
        assert!(page(Some(json!("5")), CursorEncoding::Opaque).is_err());
    }

    #[test]
    fn bad_cursors_are_invalid_params() {
        for bad in [json!("nope"), json!(""), json!(3), json!("fx1.ff")] {
            let err = paginate(&items(10), Some(&bad), Some(5), CursorMode::Normal, 2)
                .err()
                .unwrap();
            assert_eq!(err.code, -32602, "cursor {bad}");
        }
    }
}
