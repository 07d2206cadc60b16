//! The protocol list methods (`tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list`): pagination as configured, and the discovery faults of `tools/list`.

use std::num::NonZeroUsize;

use serde_json::{Map, Value};

use crate::era::{Era, cacheable};
use crate::fixture::Fixture;
use crate::jsonrpc::RpcError;
use crate::pagination::{self, CursorEncoding, Page};
use crate::{CursorMode, Violation};

impl Fixture {
    /// `tools/list`: the page `cursor` designates ([`Fixture::tools_page`]).
    pub async fn tools_list(&self, cursor: Option<&Value>, era: Era) -> Result<Value, RpcError> {
        match self.tools_page(cursor)? {
            Some(page) => Ok(list_result("tools", page, era)),
            // Every request runs in its own task on both transports, so this holds up
            // nothing else; `notifications/cancelled` (or a closed modern HTTP response)
            // aborts the task without an answer.
            None => std::future::pending().await,
        }
    }

    /// Another protocol list: the page of `items` that `cursor` designates, under `key`.
    pub fn list(
        &self,
        key: &str,
        items: &[Value],
        cursor: Option<&Value>,
        era: Era,
    ) -> Result<Value, RpcError> {
        let page = self.paginate(items, cursor, CursorMode::Normal)?;
        Ok(list_result(key, page, era))
    }

    fn page_size(&self) -> Option<usize> {
        self.cfg.page_size.map(NonZeroUsize::get)
    }

    /// The page of a protocol list that `cursor` designates (cursors spelled as
    /// `--violate raw-cursor` says). Under `--violate accept-any-cursor` a cursor we never
    /// issued is page 1 instead of -32602.
    fn paginate(
        &self,
        items: &[Value],
        cursor: Option<&Value>,
        mode: CursorMode,
    ) -> Result<Page, RpcError> {
        let encoding = if self.cfg.violates(Violation::RawCursor) {
            CursorEncoding::RawOffset
        } else {
            CursorEncoding::Opaque
        };
        let page = |cursor| {
            pagination::paginate_with(
                items,
                cursor,
                self.page_size(),
                mode,
                self.cfg.cycle_length,
                encoding,
            )
        };
        match page(cursor) {
            Err(_) if self.cfg.violates(Violation::AcceptAnyCursor) => page(None),
            other => other,
        }
    }

    /// The page of tools/list that `cursor` designates, with the discovery faults applied
    /// (`--fail-page`, `--duplicate-tool`, `--drift-each-read`, `--description-suffix`).
    /// `Ok(None)`: this page is never answered (`--hang-page`).
    fn tools_page(&self, cursor: Option<&Value>) -> Result<Option<Page>, RpcError> {
        let tools = self.tools();
        let first_tool = tools.first().cloned();
        let mut page = self.paginate(&tools, cursor, self.cfg.cursor_mode)?;
        let is = |flag: Option<NonZeroUsize>| flag.map(NonZeroUsize::get) == Some(page.number);
        if is(self.cfg.hang_page) {
            return Ok(None);
        }
        if is(self.cfg.fail_page) {
            let message = format!("fixture: page {} fails on purpose", page.number);
            return Err(RpcError::new(-32603, message));
        }
        if self.cfg.duplicate_tool
            && page.next.is_none()
            && let Some(first) = first_tool
        {
            page.items.push(first);
        }
        let mut suffix = self
            .cfg
            .description_suffix
            .as_ref()
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        if self.cfg.drift_each_read {
            let reads = self.note_catalog_read(page.number);
            suffix.push_str(&format!(" (read {reads})"));
        }
        if !suffix.is_empty() {
            for tool in page.items.iter_mut().filter(|t| t["name"] == "echo") {
                if let Some(Value::String(description)) = tool.get_mut("description") {
                    description.push_str(&suffix);
                }
            }
        }
        Ok(Some(page))
    }
}

/// A list result: the page's items under `key`, plus `nextCursor` unless it is the last page.
fn list_result(key: &str, page: Page, era: Era) -> Value {
    let mut result = Map::new();
    result.insert(key.into(), Value::Array(page.items));
    if let Some(next) = page.next {
        result.insert("nextCursor".into(), next);
    }
    cacheable(Value::Object(result), era)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::testutil::{fixture, modern_req, result};

    /// How a walk of tools/list ended.
    #[derive(Debug)]
    enum End {
        /// A page without `nextCursor`.
        Last,
        Error(RpcError),
        Hang,
        /// Still going after the maximum number of pages.
        GaveUp,
    }

    /// Walks tools/list from page 1 like a client would, for at most `max` pages: the pages
    /// answered, and how the walk ended.
    fn walk(fx: &Fixture, max: usize) -> (Vec<Page>, End) {
        let mut pages: Vec<Page> = Vec::new();
        while pages.len() < max {
            let cursor = pages.last().and_then(|p| p.next.as_ref());
            let page = match fx.tools_page(cursor) {
                Ok(Some(page)) => page,
                Ok(None) => return (pages, End::Hang),
                Err(e) => return (pages, End::Error(e)),
            };
            let last = page.next.is_none();
            pages.push(page);
            if last {
                return (pages, End::Last);
            }
        }
        (pages, End::GaveUp)
    }

    fn tool_names(pages: &[Page]) -> Vec<&str> {
        pages
            .iter()
            .flat_map(|p| &p.items)
            .map(|t| t["name"].as_str().unwrap())
            .collect()
    }

    fn echo_description(page: &Page) -> &str {
        let echo = page.items.iter().find(|t| t["name"] == "echo").unwrap();
        echo["description"].as_str().unwrap()
    }

    #[test]
    fn fail_page_fails_every_walk_at_that_page() {
        let fx = fixture(&["--page-size", "3", "--fail-page", "3"]);
        for _ in 0..2 {
            let (pages, end) = walk(&fx, 10);
            assert_eq!(pages.len(), 2);
            let End::Error(e) = end else {
                panic!("expected an error, got {end:?}")
            };
            assert_eq!(e.code, -32603);
            assert_eq!(e.message, "fixture: page 3 fails on purpose");
        }
        // A page beyond the list never fails: the walk just ends.
        let fx = fixture(&["--page-size", "3", "--fail-page", "9"]);
        assert!(matches!(walk(&fx, 10), (pages, End::Last) if pages.len() == 6));
    }

    #[test]
    fn hang_page_hangs_every_walk_at_that_page() {
        let fx = fixture(&["--page-size", "4", "--hang-page", "2"]);
        for _ in 0..2 {
            assert!(matches!(walk(&fx, 10), (pages, End::Hang) if pages.len() == 1));
        }
    }

    #[test]
    fn page_faults_follow_the_cursor_in_a_cycle() {
        // Pages 2 and 3 repeat; page 3 fails on the first pass already.
        let fx = fixture(&[
            "--page-size",
            "2",
            "--cursor-mode",
            "cycle",
            "--fail-page",
            "3",
        ]);
        assert!(matches!(walk(&fx, 10), (pages, End::Error(_)) if pages.len() == 2));
        let fx = fixture(&["--page-size", "2", "--cursor-mode", "cycle"]);
        assert!(matches!(walk(&fx, 10), (_, End::GaveUp)));
    }

    #[test]
    fn duplicate_tool_repeats_the_first_tool_on_the_last_page() {
        let fx = fixture(&["--page-size", "4", "--duplicate-tool"]);
        let (pages, end) = walk(&fx, 10);
        assert!(matches!(end, End::Last));
        let names = tool_names(&pages);
        assert_eq!(names.len(), 17, "16 tools + the duplicate");
        assert_eq!(names.iter().filter(|n| **n == "echo").count(), 2);
        assert_eq!(pages.len(), 4);
        assert_eq!(pages[3].items.last(), pages[0].items.first());

        let fx = fixture(&["--duplicate-tool"]);
        let (pages, _) = walk(&fx, 10);
        let names = tool_names(&pages);
        assert_eq!((pages.len(), names.len()), (1, 17));
        assert_eq!((names[0], names[16]), ("echo", "echo"));

        let (pages, _) = walk(&fixture(&[]), 10);
        assert_eq!(
            tool_names(&pages).len(),
            16,
            "no duplicate without the flag"
        );
    }

    #[test]
    fn drift_each_read_changes_the_description_per_read() {
        let fx = fixture(&["--page-size", "4", "--drift-each-read"]);
        let (first, _) = walk(&fx, 10);
        let (second, _) = walk(&fx, 10);
        let base = "Echoes `text` back as a text block.";
        assert_eq!(echo_description(&first[0]), format!("{base} (read 1)"));
        assert_eq!(echo_description(&second[0]), format!("{base} (read 2)"));
        // Only the echo tool drifts.
        assert_eq!(first[0].items[1..], second[0].items[1..]);
        assert_eq!(first[1].items, second[1].items);
    }

    #[test]
    fn description_suffix_is_appended() {
        let fx = fixture(&["--description-suffix", "(v2)"]);
        let (pages, _) = walk(&fx, 1);
        let expected = "Echoes `text` back as a text block. (v2)";
        assert_eq!(echo_description(&pages[0]), expected);

        let fx = fixture(&["--description-suffix", "(v2)", "--drift-each-read"]);
        let (pages, _) = walk(&fx, 1);
        assert_eq!(echo_description(&pages[0]), format!("{expected} (read 1)"));

        let (pages, _) = walk(&fixture(&[]), 1);
        let plain = "Echoes `text` back as a text block.";
        assert_eq!(echo_description(&pages[0]), plain);
    }

    #[tokio::test]
    async fn raw_cursor_spells_offsets_in_every_protocol_list() {
        let fx = fixture(&["--page-size", "4", "--violate", "raw-cursor"]);
        let (pages, end) = walk(&fx, 10);
        assert!(matches!(end, End::Last));
        let cursors: Vec<&Value> = pages.iter().filter_map(|p| p.next.as_ref()).collect();
        assert_eq!(cursors, [&json!("4"), &json!("8"), &json!("12")]);
        assert_eq!(tool_names(&pages).len(), 16);

        let fx = Arc::new(fixture(&[
            "--resources",
            "6",
            "--page-size",
            "4",
            "--violate",
            "raw-cursor",
        ]));
        let r = result(&fx, Era::Modern, modern_req("resources/list", json!({}))).await;
        assert_eq!(r["nextCursor"], "4");

        let (pages, _) = walk(&fixture(&["--page-size", "4"]), 10);
        let next = pages[0]
            .next
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert!(
            next.starts_with("fx1.") && !next.contains('4'),
            "opaque by default: {next}"
        );
    }

    #[tokio::test]
    async fn accept_any_cursor_serves_page_one() {
        let plain = fixture(&["--page-size", "4"]);
        for bogus in [json!("bogus"), json!(""), json!(7)] {
            let err = plain.tools_page(Some(&bogus)).err().map(|e| e.code);
            assert_eq!(err, Some(-32602), "{bogus}");
        }
        let fx = fixture(&["--page-size", "4", "--violate", "accept-any-cursor"]);
        let first = fx.tools_page(None).unwrap().unwrap();
        for bogus in [json!("bogus"), json!(""), json!(7)] {
            let page = fx.tools_page(Some(&bogus)).unwrap().unwrap();
            assert_eq!((page.number, &page.items), (1, &first.items), "{bogus}");
        }
        // Real cursors still work.
        let (pages, end) = walk(&fx, 10);
        assert!(matches!(end, End::Last) && pages.len() == 4);
        let fx = Arc::new(fixture(&[
            "--page-size",
            "1",
            "--violate",
            "accept-any-cursor",
        ]));
        let msg = modern_req("prompts/list", json!({"cursor": "bogus"}));
        let r = result(&fx, Era::Modern, msg).await;
        assert_eq!(r["prompts"][0]["name"], "greet");
    }
}
