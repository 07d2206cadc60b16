//! The fixture server's state: its configuration, the tool list as configured, and the little
//! mutable state it keeps (added tools, catalog reads, subscriptions, list-tool cursors). What a
//! request does with it is `protocol`'s dispatch and the modules it calls.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::catalog;
use crate::jsonrpc::method;
use crate::list_tool;
use crate::listen::Subscriptions;
use crate::resource_subs::ResourceSubs;
use crate::{Config, Violation};

/// The fixture server: configuration plus the little mutable state it has.
pub struct Fixture {
    pub cfg: Config,
    /// How many tools `add_tool` has registered.
    added: AtomicUsize,
    /// How many times page 1 of tools/list has been served (`--drift-each-read`).
    first_page_reads: AtomicUsize,
    /// The tool list, built once per `added` count: a 10,000-tool catalog
    /// is not rebuilt for each of its pages.
    tools: Mutex<(usize, Arc<Vec<Value>>)>,
    /// Open `subscriptions/listen` requests.
    pub subs: Subscriptions,
    /// Legacy `resources/subscribe` state (process-wide).
    pub resource_subs: ResourceSubs,
    /// The opaque cursors `list_items` (`--list-tool`) has issued.
    pub list_cursors: list_tool::Cursors,
    /// The last `initialize` request's id.
    initialize_id: Mutex<Option<Value>>,
    /// Whether a `notifications/cancelled` named it.
    initialize_cancelled: AtomicBool,
}

impl Fixture {
    pub fn new(cfg: Config) -> Self {
        let tools = Mutex::new((0, Arc::new(build_tools(&cfg, 0))));
        Self {
            cfg,
            tools,
            added: AtomicUsize::new(0),
            first_page_reads: AtomicUsize::new(0),
            subs: Subscriptions::default(),
            resource_subs: ResourceSubs::default(),
            list_cursors: list_tool::Cursors::default(),
            initialize_id: Mutex::new(None),
            initialize_cancelled: AtomicBool::new(false),
        }
    }

    /// Remembers the `initialize` request's id (before the request is handled: a cancellation
    /// read after it names a known id).
    pub fn initialize_requested(&self, id: &Value) {
        *self
            .initialize_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(id.clone());
    }

    /// `--violate cancellable-initialize`: a cancellation of the `initialize` is honoured.
    pub fn cancel_initialize(&self, id: &Value) {
        let named = self
            .initialize_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            == Some(id);
        if named && self.cfg.violates(Violation::CancellableInitialize) {
            self.initialize_cancelled.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the session's `initialize` was taken as cancelled.
    pub fn initialize_was_cancelled(&self) -> bool {
        self.initialize_cancelled.load(Ordering::Relaxed)
    }

    /// Appends a request to the `--record` file, if any.
    pub fn record(&self, msg: &Value, traceparent: Option<&str>) {
        let Some(path) = &self.cfg.record else { return };
        let line = json!({
            "method": method(msg),
            "params": msg.get("params").cloned().unwrap_or(Value::Null),
            "traceparent": traceparent,
        });
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()));
        if let Err(e) = appended {
            eprintln!("sluice-fixture: cannot record to {}: {e}", path.display());
        }
    }

    /// Every tool, in list order.
    pub fn tools(&self) -> Arc<Vec<Value>> {
        let added = self.added.load(Ordering::SeqCst);
        let mut cached = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if cached.0 != added {
            *cached = (added, Arc::new(build_tools(&self.cfg, added)));
        }
        Arc::clone(&cached.1)
    }

    /// `serverInfo` (without `version` under `--violate no-version`).
    pub fn server_info(&self) -> Value {
        if self.cfg.violates(Violation::NoVersion) {
            json!({"name": "sluice-fixture"})
        } else {
            server_info()
        }
    }

    /// Registers one more `added_N` tool and tells the open `subscriptions/listen` streams that
    /// asked for `toolsListChanged` (none under `--violate silent-list-change`); returns its
    /// name. (Legacy list_changed is the caller's job.)
    pub fn add_tool(&self) -> String {
        let name = catalog::added_name(self.added.fetch_add(1, Ordering::SeqCst));
        if !self.cfg.violates(Violation::SilentListChange) {
            self.subs.tools_changed();
        }
        name
    }

    /// Whether `name` is a generated or added tool.
    pub fn has_dynamic_tool(&self, name: &str) -> bool {
        let gen_ok = name
            .strip_prefix("gen_")
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|i| i < self.cfg.tools && catalog::gen_name(i) == name);
        let added_ok = name
            .strip_prefix("added_")
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|i| {
                i < self.added.load(Ordering::SeqCst) && catalog::added_name(i) == name
            });
        gen_ok || added_ok
    }

    /// Counts a catalog read if `page_number` is 1 (a read of tools/list starts there, whoever
    /// reads) and returns how many there have been (`--drift-each-read`).
    pub fn note_catalog_read(&self, page_number: usize) -> usize {
        if page_number == 1 {
            self.first_page_reads.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            self.first_page_reads.load(Ordering::SeqCst)
        }
    }
}

/// The whole tool list as configured: the fixed tools, `list_items` (`--list-tool`), then the
/// generated and added ones, then `--tool-named` ones; `echo` changed by `--violate
/// output-schema`.
fn build_tools(cfg: &Config, added: usize) -> Vec<Value> {
    let mut tools = catalog::all_tools(cfg.tools, added, cfg.varied_descriptions);
    if let Some(mode) = cfg.list_tool {
        let at = catalog::fixed_tool_count().min(tools.len());
        tools.insert(at, list_tool::definition(mode));
    }
    if cfg.violates(Violation::OutputSchema) {
        catalog::declare_echo_output_schema(&mut tools);
    }
    // So that a checker that calls only read-only tools sees its elicitation.
    if cfg.violates(Violation::SensitiveElicitation)
        && let Some(elicit) = tools.iter_mut().find(|t| t["name"] == "elicit")
    {
        elicit["annotations"] = json!({"readOnlyHint": true});
    }
    // So that a checker that calls non-destructive tools changes the tool list (S-6).
    if cfg.callable_add_tool
        && let Some(add) = tools.iter_mut().find(|t| t["name"] == "add_tool")
    {
        add["annotations"] = json!({"readOnlyHint": false, "destructiveHint": false});
    }
    tools.extend(cfg.tools_named.iter().map(|name| {
        catalog::tool(
            name,
            "A tool named on the command line (--tool-named).",
            &[],
        )
    }));
    tools
}

fn server_info() -> Value {
    json!({"name": "sluice-fixture", "version": env!("CARGO_PKG_VERSION")})
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::era::Era;
    use crate::testutil::{call, error_code, fixture, legacy_req, modern_req, result};

    #[tokio::test]
    async fn list_tool_is_listed_after_the_fixed_tools_and_called() {
        let names = |fx: &Fixture| -> Vec<String> {
            fx.tools()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        };
        let plain = fixture(&["--tools", "1"]);
        assert_eq!(names(&plain).len(), 17);
        assert!(!names(&plain).contains(&"list_items".to_owned()));
        let fx = Arc::new(fixture(&["--tools", "1", "--list-tool", "good"]));
        let listed = names(&fx);
        assert_eq!(listed.len(), 18);
        assert_eq!(
            (listed[16].as_str(), listed[17].as_str()),
            ("list_items", "gen_0000")
        );
        assert_eq!(fx.tools()[16]["annotations"]["readOnlyHint"], true);
        let unbounded = fixture(&["--list-tool", "unbounded"]);
        let limit = &unbounded.tools()[16]["inputSchema"]["properties"]["limit"];
        assert!(limit.get("maximum").is_none());

        // Called through tools/call, in both eras.
        let page = result(
            &fx,
            Era::Modern,
            modern_req("tools/call", call("list_items", json!({}))),
        )
        .await;
        assert_eq!(page["resultType"], "complete");
        let items = page["structuredContent"]["items"].as_array().unwrap();
        assert_eq!((items.len(), &items[0]["id"]), (20, &json!("item-000")));
        let cursor = page["structuredContent"]["nextCursor"].clone();
        let next = legacy_req("tools/call", call("list_items", json!({"cursor": cursor})));
        let next = result(&fx, Era::Legacy, next).await;
        assert_eq!(next["structuredContent"]["items"][0]["id"], "item-020");
        let bad = modern_req("tools/call", call("list_items", json!({"cursor": "nope"})));
        assert_eq!(error_code(&fx, Era::Modern, bad).await, -32602);
        // Without --list-tool it is an unknown tool.
        let plain = Arc::new(plain);
        let msg = modern_req("tools/call", call("list_items", json!({})));
        assert_eq!(error_code(&plain, Era::Modern, msg).await, -32602);
    }
}
