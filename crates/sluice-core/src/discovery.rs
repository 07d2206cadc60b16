//! The pagination walk over one upstream list, as a state machine.
//!
//! The shell asks [`Walk::start`] what to fetch, sends the request, and feeds
//! each answer back with [`Walk::handle_page`] (or [`Walk::handle_error`],
//! [`Walk::handle_timeout`]). The walk answers with a [`Step`]: fetch the
//! next cursor, the list is complete, or the read is incomplete and why.
//!
//! The rules, so that a partial list is never taken for a whole one: only an
//! absent `nextCursor` ends a list; `""` is a valid cursor and an empty page
//! does not end the walk. A repeated or cyclic cursor, a non-string cursor,
//! a duplicate entry, a malformed or error page, or a cap ends it as
//! `Incomplete`, and nothing of a partial read is returned. Reasons are
//! fixed strings: they never carry upstream data or cursor values.

use std::collections::HashSet;

use serde_json::Value;

use crate::jsonrpc;
pub use crate::method::ListKind;

/// Everything one upstream lists, each list in upstream order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpstreamCatalog {
    /// `tools/list` entries.
    pub tools: Vec<Value>,
    /// `resources/list` entries.
    pub resources: Vec<Value>,
    /// `resources/templates/list` entries.
    pub resource_templates: Vec<Value>,
    /// `prompts/list` entries.
    pub prompts: Vec<Value>,
}

/// Caps on one walk. The time cap is the shell's deadline: it calls
/// [`Walk::handle_timeout`] when it passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    /// Most pages read before the walk gives up.
    pub max_pages: usize,
    /// Most entries accepted before the walk gives up.
    pub max_items: usize,
}

/// What the shell does next.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a walk step says what to fetch next or how the walk ended"]
pub enum Step {
    /// Request the list with this cursor (`None`: no cursor, the first page).
    Fetch(Option<String>),
    /// Every page was read; the entries in upstream order.
    Complete(Vec<Value>),
    /// The read did not finish; nothing of it may be used.
    Incomplete(IncompleteReason),
}

/// Why a walk did not finish. The text of each is fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IncompleteReason {
    /// `nextCursor` equal to the cursor just used.
    #[error("the upstream repeated the cursor it was just given")]
    RepeatedCursor,
    /// `nextCursor` equal to a cursor used earlier in this walk.
    #[error("the upstream's cursors form a cycle")]
    CursorCycle,
    /// `nextCursor` present but not a string.
    #[error("the upstream sent a cursor that is not a string")]
    NonStringCursor,
    /// The same name or URI on two pages (or twice on one).
    #[error("the upstream listed the same entry twice")]
    DuplicateEntry,
    /// A page without the list array, or an entry without its key.
    #[error("the upstream sent a malformed page")]
    MalformedPage,
    /// The upstream answered a page with an error.
    #[error("the upstream answered a page with an error")]
    ErrorPage,
    /// More pages than [`WalkLimits::max_pages`].
    #[error("the list has more pages than the page cap")]
    PageCap,
    /// More entries than [`WalkLimits::max_items`].
    #[error("the list has more entries than the entry cap")]
    ItemCap,
    /// The shell's deadline passed.
    #[error("the list was not read before the deadline")]
    Timeout,
}

/// The outcome of reading an upstream's whole catalog: every list it
/// offers to the end, or nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum CatalogRead {
    /// Every offered list was read to its last page.
    Complete(UpstreamCatalog),
    /// One list did not finish; the whole read is discarded.
    Incomplete {
        /// The list that did not finish.
        list: ListKind,
        /// Why.
        reason: IncompleteReason,
    },
}

/// What the shell does next in a [`CatalogWalk`].
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a catalog step says what to fetch next or how the read ended"]
pub enum CatalogStep {
    /// Request `list.method()` with this cursor (`None`: the first page).
    Fetch {
        /// Which list.
        list: ListKind,
        /// The cursor to send.
        cursor: Option<String>,
    },
    /// The read ended.
    Done(CatalogRead),
}

/// A read of every list an upstream offers, one [`Walk`] after another.
/// The shell enforces the time cap by calling
/// [`CatalogWalk::handle_timeout`] when its deadline passes.
#[derive(Debug)]
pub struct CatalogWalk {
    limits: WalkLimits,
    pending: std::vec::IntoIter<ListKind>,
    walk: Option<Walk>,
    first_page: bool,
    catalog: UpstreamCatalog,
    /// Pages answered so far, over every list.
    pages: usize,
}

/// How far a catalog read has got, for a progress line: pages answered
/// and entries kept so far, over every list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadProgress {
    /// Pages the upstream answered.
    pub pages: usize,
    /// Entries kept.
    pub items: usize,
}

/// One walk over one list.
#[derive(Debug)]
pub struct Walk {
    kind: ListKind,
    limits: WalkLimits,
    items: Vec<Value>,
    keys: HashSet<String>,
    seen_cursors: HashSet<String>,
    last_cursor: Option<String>,
    pages: usize,
    finished: bool,
}

// === impl UpstreamCatalog ===

impl UpstreamCatalog {
    /// The list of one kind.
    pub fn list(&self, kind: ListKind) -> &[Value] {
        match kind {
            ListKind::Tools => &self.tools,
            ListKind::Resources => &self.resources,
            ListKind::ResourceTemplates => &self.resource_templates,
            ListKind::Prompts => &self.prompts,
        }
    }

    /// The list of one kind, to fill.
    pub fn list_mut(&mut self, kind: ListKind) -> &mut Vec<Value> {
        match kind {
            ListKind::Tools => &mut self.tools,
            ListKind::Resources => &mut self.resources,
            ListKind::ResourceTemplates => &mut self.resource_templates,
            ListKind::Prompts => &mut self.prompts,
        }
    }
}

// === impl WalkLimits ===

impl Default for WalkLimits {
    /// Large enough for a 100,000-entry catalog at small page sizes.
    fn default() -> Self {
        WalkLimits {
            max_pages: 10_000,
            max_items: 100_000,
        }
    }
}

// === impl CatalogWalk ===

impl CatalogWalk {
    /// A read of the lists whose capability `offers` says the upstream
    /// declares.
    pub fn new(offers: impl Fn(&str) -> bool, limits: WalkLimits) -> Self {
        let lists: Vec<ListKind> = ListKind::ALL
            .into_iter()
            .filter(|k| offers(k.capability()))
            .collect();
        CatalogWalk {
            limits,
            pending: lists.into_iter(),
            walk: None,
            first_page: true,
            catalog: UpstreamCatalog::default(),
            pages: 0,
        }
    }

    /// How far the read has got.
    pub fn progress(&self) -> ReadProgress {
        let kept: usize = ListKind::ALL
            .into_iter()
            .map(|k| self.catalog.list(k).len())
            .sum();
        let walking = self.walk.as_ref().map_or(0, |w| w.items.len());
        ReadProgress {
            pages: self.pages,
            items: kept + walking,
        }
    }

    /// The first step.
    pub fn start(&mut self) -> CatalogStep {
        self.next_list()
    }

    /// Feeds the result of the last fetch.
    pub fn handle_page(&mut self, page: Value) -> CatalogStep {
        self.first_page = false;
        self.pages += 1;
        let step = match &mut self.walk {
            Some(walk) => walk.handle_page(page),
            None => Step::Incomplete(IncompleteReason::MalformedPage),
        };
        self.follow(step)
    }

    /// The upstream answered the last fetch with a JSON-RPC error of this
    /// code. A server that offers resources but no templates may answer
    /// `resources/templates/list` with "method not found": it has none.
    pub fn handle_error(&mut self, code: i64) -> CatalogStep {
        let kind = self.walk.as_ref().map(Walk::kind);
        if self.first_page
            && kind == Some(ListKind::ResourceTemplates)
            && code == jsonrpc::METHOD_NOT_FOUND
        {
            return self.follow(Step::Complete(Vec::new()));
        }
        self.fail_with(Walk::handle_error)
    }

    /// The last fetch failed without an answer (the connection broke).
    pub fn handle_failure(&mut self) -> CatalogStep {
        self.fail_with(Walk::handle_error)
    }

    /// The shell's deadline passed.
    pub fn handle_timeout(&mut self) -> CatalogStep {
        self.fail_with(Walk::handle_timeout)
    }

    fn fail_with(&mut self, f: impl FnOnce(&mut Walk) -> Step) -> CatalogStep {
        let step = match &mut self.walk {
            Some(walk) => f(walk),
            None => Step::Incomplete(IncompleteReason::MalformedPage),
        };
        self.follow(step)
    }

    fn follow(&mut self, step: Step) -> CatalogStep {
        let list = self.walk.as_ref().map_or(ListKind::Tools, Walk::kind);
        match step {
            Step::Fetch(cursor) => CatalogStep::Fetch { list, cursor },
            Step::Complete(items) => {
                *self.catalog.list_mut(list) = items;
                self.next_list()
            }
            Step::Incomplete(reason) => {
                self.pending = Vec::new().into_iter();
                self.walk = None;
                self.catalog = UpstreamCatalog::default();
                CatalogStep::Done(CatalogRead::Incomplete { list, reason })
            }
        }
    }

    fn next_list(&mut self) -> CatalogStep {
        match self.pending.next() {
            Some(list) => {
                let walk = Walk::new(list, self.limits);
                let step = walk.start();
                self.walk = Some(walk);
                self.first_page = true;
                self.follow(step)
            }
            None => {
                self.walk = None;
                CatalogStep::Done(CatalogRead::Complete(std::mem::take(&mut self.catalog)))
            }
        }
    }
}

// === impl Walk ===

impl Walk {
    /// A walk that has not fetched anything yet.
    pub fn new(kind: ListKind, limits: WalkLimits) -> Self {
        Walk {
            kind,
            limits,
            items: Vec::new(),
            keys: HashSet::new(),
            seen_cursors: HashSet::new(),
            last_cursor: None,
            pages: 0,
            finished: false,
        }
    }

    /// Which list this walk reads.
    pub fn kind(&self) -> ListKind {
        self.kind
    }

    /// The first step: fetch without a cursor.
    pub fn start(&self) -> Step {
        Step::Fetch(None)
    }

    /// Feeds the result of the last fetch.
    pub fn handle_page(&mut self, result: Value) -> Step {
        if self.finished {
            return Step::Incomplete(IncompleteReason::MalformedPage);
        }
        self.pages += 1;
        let Value::Object(mut page) = result else {
            return self.fail(IncompleteReason::MalformedPage);
        };
        let Some(Value::Array(entries)) = page.remove(self.kind.field()) else {
            return self.fail(IncompleteReason::MalformedPage);
        };
        for entry in entries {
            let Some(key) = entry.get(self.kind.key()).and_then(Value::as_str) else {
                return self.fail(IncompleteReason::MalformedPage);
            };
            if !self.keys.insert(key.to_owned()) {
                return self.fail(IncompleteReason::DuplicateEntry);
            }
            if self.items.len() == self.limits.max_items {
                return self.fail(IncompleteReason::ItemCap);
            }
            self.items.push(entry);
        }
        match page.remove("nextCursor") {
            None | Some(Value::Null) => {
                self.finished = true;
                Step::Complete(std::mem::take(&mut self.items))
            }
            Some(Value::String(cursor)) => {
                if self.last_cursor.as_deref() == Some(cursor.as_str()) {
                    return self.fail(IncompleteReason::RepeatedCursor);
                }
                if !self.seen_cursors.insert(cursor.clone()) {
                    return self.fail(IncompleteReason::CursorCycle);
                }
                if self.pages >= self.limits.max_pages {
                    return self.fail(IncompleteReason::PageCap);
                }
                self.last_cursor = Some(cursor.clone());
                Step::Fetch(Some(cursor))
            }
            Some(_) => self.fail(IncompleteReason::NonStringCursor),
        }
    }

    /// The upstream answered the last fetch with an error.
    pub fn handle_error(&mut self) -> Step {
        self.fail(IncompleteReason::ErrorPage)
    }

    /// The shell's deadline for this walk passed.
    pub fn handle_timeout(&mut self) -> Step {
        self.fail(IncompleteReason::Timeout)
    }

    fn fail(&mut self, reason: IncompleteReason) -> Step {
        self.finished = true;
        self.items.clear();
        Step::Incomplete(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Drives a walk over scripted pages (cursor -> page), bounded so that a
    /// bug in the walk fails the test instead of hanging it.
    fn drive(kind: ListKind, limits: WalkLimits, script: impl Fn(Option<&str>) -> Value) -> Step {
        let mut walk = Walk::new(kind, limits);
        let mut step = walk.start();
        for _ in 0..10_000 {
            match step {
                Step::Fetch(cursor) => step = walk.handle_page(script(cursor.as_deref())),
                done => return done,
            }
        }
        panic!("walk did not end within the step bound");
    }

    fn tools(names: &[&str]) -> Value {
        Value::Array(names.iter().map(|n| json!({"name": n})).collect())
    }

    #[test]
    fn empty_string_cursor_and_empty_pages_do_not_end_the_list() {
        let step = drive(ListKind::Tools, WalkLimits::default(), |c| match c {
            None => json!({"tools": tools(&["a"]), "nextCursor": ""}),
            Some("") => json!({"tools": [], "nextCursor": "2"}),
            Some("2") => json!({"tools": tools(&["b"])}),
            _ => json!({}),
        });
        assert_eq!(
            step,
            Step::Complete(vec![json!({"name":"a"}), json!({"name":"b"})])
        );
    }

    #[test]
    fn repeated_cursor_is_incomplete() {
        let step = drive(ListKind::Tools, WalkLimits::default(), |c| match c {
            None => json!({"tools": tools(&["a"]), "nextCursor": "x"}),
            _ => json!({"tools": [], "nextCursor": "x"}),
        });
        assert_eq!(step, Step::Incomplete(IncompleteReason::RepeatedCursor));
    }

    #[test]
    fn cycle_is_incomplete() {
        let step = drive(ListKind::Prompts, WalkLimits::default(), |c| match c {
            None => json!({"prompts": [], "nextCursor": "1"}),
            Some("1") => json!({"prompts": [], "nextCursor": "2"}),
            _ => json!({"prompts": [], "nextCursor": "1"}),
        });
        assert_eq!(step, Step::Incomplete(IncompleteReason::CursorCycle));
    }

    #[test]
    fn bad_pages_are_incomplete() {
        let cases = [
            (
                json!({"tools": [], "nextCursor": 5}),
                IncompleteReason::NonStringCursor,
            ),
            (
                json!({"tools": [{"name": "a"}, {"name": "a"}]}),
                IncompleteReason::DuplicateEntry,
            ),
            (
                json!({"tools": [{"title": "no name"}]}),
                IncompleteReason::MalformedPage,
            ),
            (json!({"nope": []}), IncompleteReason::MalformedPage),
            (json!([]), IncompleteReason::MalformedPage),
        ];
        for (page, reason) in cases {
            let step = drive(ListKind::Tools, WalkLimits::default(), |_| page.clone());
            assert_eq!(step, Step::Incomplete(reason), "page {page}");
        }
    }

    #[test]
    fn caps_end_the_walk() {
        let limits = WalkLimits {
            max_pages: 3,
            max_items: 100,
        };
        let step = drive(ListKind::Tools, limits, |c| {
            let n: u32 = c.map_or(0, |c| c.parse().unwrap_or(0));
            json!({"tools": [{"name": format!("t{n}")}], "nextCursor": (n + 1).to_string()})
        });
        assert_eq!(step, Step::Incomplete(IncompleteReason::PageCap));
        let limits = WalkLimits {
            max_pages: 100,
            max_items: 2,
        };
        let step = drive(
            ListKind::Tools,
            limits,
            |_| json!({"tools": tools(&["a", "b", "c"])}),
        );
        assert_eq!(step, Step::Incomplete(IncompleteReason::ItemCap));
    }

    #[test]
    fn progress_counts_pages_and_kept_entries_over_every_list() {
        let mut walk = CatalogWalk::new(|c| c == "tools" || c == "prompts", WalkLimits::default());
        assert_eq!(walk.progress(), ReadProgress::default());
        let _ = walk.start();
        let tools = |names: &[&str], next: Option<&str>| {
            let tools: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
            match next {
                Some(c) => json!({"tools": tools, "nextCursor": c}),
                None => json!({"tools": tools}),
            }
        };
        let _ = walk.handle_page(tools(&["a", "b"], Some("1")));
        assert_eq!(walk.progress(), ReadProgress { pages: 1, items: 2 });
        let _ = walk.handle_page(tools(&["c"], None));
        assert_eq!(walk.progress(), ReadProgress { pages: 2, items: 3 });
        let done = walk.handle_page(json!({"prompts": [{"name": "p"}]}));
        assert!(matches!(done, CatalogStep::Done(CatalogRead::Complete(_))));
        assert_eq!(walk.progress().pages, 3);
    }

    #[test]
    fn errors_and_timeouts_discard_the_read() {
        let mut walk = Walk::new(ListKind::Resources, WalkLimits::default());
        let _ = walk.start();
        let step = walk.handle_page(json!({"resources": [{"uri": "a://1"}], "nextCursor": "n"}));
        assert_eq!(step, Step::Fetch(Some("n".into())));
        assert_eq!(
            walk.handle_error(),
            Step::Incomplete(IncompleteReason::ErrorPage)
        );
        let mut walk = Walk::new(ListKind::Resources, WalkLimits::default());
        assert_eq!(
            walk.handle_timeout(),
            Step::Incomplete(IncompleteReason::Timeout)
        );
    }

    #[test]
    fn reasons_carry_no_upstream_data() {
        let step = drive(
            ListKind::Tools,
            WalkLimits::default(),
            |_| json!({"tools": [], "nextCursor": "SECRET-CURSOR"}),
        );
        let Step::Incomplete(reason) = step else {
            panic!("expected incomplete")
        };
        assert!(!reason.to_string().contains("SECRET"));
    }

    /// Drives a catalog read: `answer(list, cursor)` is a page or an error
    /// code.
    fn drive_catalog(
        offers: &[&str],
        answer: impl Fn(ListKind, Option<&str>) -> Result<Value, i64>,
    ) -> CatalogRead {
        let mut read = CatalogWalk::new(|c| offers.contains(&c), WalkLimits::default());
        let mut step = read.start();
        for _ in 0..10_000 {
            match step {
                CatalogStep::Fetch { list, cursor } => {
                    step = match answer(list, cursor.as_deref()) {
                        Ok(page) => read.handle_page(page),
                        Err(code) => read.handle_error(code),
                    }
                }
                CatalogStep::Done(done) => return done,
            }
        }
        panic!("catalog read did not end within the step bound");
    }

    #[test]
    fn catalog_read_covers_offered_lists_only() {
        let read = drive_catalog(&["tools", "prompts"], |list, cursor| match (list, cursor) {
            (ListKind::Tools, None) => Ok(json!({"tools": tools(&["a"]), "nextCursor": "2"})),
            (ListKind::Tools, Some("2")) => Ok(json!({"tools": tools(&["b"])})),
            (ListKind::Prompts, None) => Ok(json!({"prompts": [{"name": "p"}]})),
            _ => Err(-32603),
        });
        let CatalogRead::Complete(catalog) = read else {
            panic!("expected complete: {read:?}")
        };
        assert_eq!(catalog.tools.len(), 2);
        assert_eq!(catalog.prompts.len(), 1);
        assert!(catalog.resources.is_empty());
    }

    #[test]
    fn templates_method_not_found_means_none_but_other_errors_fail() {
        let answer = |code: i64| {
            move |list: ListKind, _: Option<&str>| match list {
                ListKind::Resources => Ok(json!({"resources": [{"uri": "a://1"}]})),
                _ => Err(code),
            }
        };
        let read = drive_catalog(&["resources"], answer(jsonrpc::METHOD_NOT_FOUND));
        assert!(matches!(read, CatalogRead::Complete(c) if c.resources.len() == 1));
        let read = drive_catalog(&["resources"], answer(-32603));
        assert_eq!(
            read,
            CatalogRead::Incomplete {
                list: ListKind::ResourceTemplates,
                reason: IncompleteReason::ErrorPage
            }
        );
        // Method-not-found on tools/list is an error page, not "no tools".
        let read = drive_catalog(&["tools"], |_, _| Err(jsonrpc::METHOD_NOT_FOUND));
        assert!(matches!(
            read,
            CatalogRead::Incomplete {
                list: ListKind::Tools,
                ..
            }
        ));
    }

    #[test]
    fn a_failure_in_a_later_list_discards_the_earlier_ones() {
        let read = drive_catalog(&["tools", "prompts"], |list, _| match list {
            ListKind::Tools => Ok(json!({"tools": tools(&["a"])})),
            _ => Ok(json!({"prompts": [], "nextCursor": 7})),
        });
        assert_eq!(
            read,
            CatalogRead::Incomplete {
                list: ListKind::Prompts,
                reason: IncompleteReason::NonStringCursor
            }
        );
    }

    proptest! {
        /// Any list split into pages of any sizes, with distinct cursors,
        /// is read back whole and in order.
        #[test]
        fn any_paging_reads_every_entry_once(n in 0usize..300, sizes in proptest::collection::vec(0usize..20, 1..40)) {
            prop_assume!(sizes.iter().any(|s| *s > 0));
            let names: Vec<String> = (0..n).map(|i| format!("tool{i}")).collect();
            let mut pages: Vec<Vec<String>> = Vec::new();
            let mut rest = names.as_slice();
            for s in sizes.iter().cycle() {
                if rest.is_empty() { break; }
                let take = (*s).min(rest.len());
                pages.push(rest[..take].to_vec());
                rest = &rest[take..];
            }
            if pages.is_empty() { pages.push(Vec::new()); }
            let last = pages.len() - 1;
            let step = drive(ListKind::Tools, WalkLimits::default(), |c| {
                let i: usize = c.map_or(0, |c| c.trim_start_matches('p').parse().unwrap_or(0));
                let entries: Vec<Value> = pages[i].iter().map(|n| json!({"name": n})).collect();
                if i == last { json!({"tools": entries}) }
                else { json!({"tools": entries, "nextCursor": format!("p{}", i + 1)}) }
            });
            let Step::Complete(items) = step else { panic!("expected complete") };
            let got: Vec<String> = items.iter().filter_map(|v| v["name"].as_str().map(String::from)).collect();
            prop_assert_eq!(got, names);
        }

        /// Pages linked by random cursors, including `""`, empty pages,
        /// self-links and cycles of every length: the walk always ends; it
        /// is complete exactly when following the cursors from the first
        /// page never comes back to a page, and then it holds every entry
        /// once, in order.
        #[test]
        fn random_cursor_graphs_never_loop_or_return_partial_reads(
            sizes in proptest::collection::vec(0usize..4, 1..12),
            links in proptest::collection::vec(proptest::option::of(0usize..12), 12),
            empty_cursor_page in 0usize..12,
        ) {
            let n = sizes.len();
            let cursor_of = |i: usize| if i == empty_cursor_page { String::new() } else { format!("c{i}") };
            let next = |i: usize| links[i].map(|j| j % n);
            let page = |i: usize| {
                let entries: Vec<Value> = (0..sizes[i]).map(|j| json!({"name": format!("p{i}e{j}")})).collect();
                match next(i) {
                    Some(j) => json!({"tools": entries, "nextCursor": cursor_of(j)}),
                    None => json!({"tools": entries}),
                }
            };
            let step = drive(ListKind::Tools, WalkLimits::default(), |c| {
                let i = c.map_or(0, |c| (0..n).find(|&i| cursor_of(i) == c).unwrap_or(0));
                page(i)
            });
            // The path the cursors describe, stopping at the first revisit.
            let mut path = vec![0];
            let mut revisits = false;
            while let Some(j) = next(*path.last().unwrap_or(&0)) {
                if path.contains(&j) { revisits = true; break; }
                path.push(j);
            }
            match step {
                Step::Complete(items) => {
                    prop_assert!(!revisits, "a looping sequence was read as complete");
                    let expected: Vec<Value> = path.iter()
                        .flat_map(|&i| (0..sizes[i]).map(move |j| json!({"name": format!("p{i}e{j}")})))
                        .collect();
                    prop_assert_eq!(items, expected);
                }
                Step::Incomplete(_) => prop_assert!(revisits, "a well-formed sequence was read as incomplete"),
                Step::Fetch(_) => prop_assert!(false, "drive returns only final steps"),
            }
        }
    }
}
