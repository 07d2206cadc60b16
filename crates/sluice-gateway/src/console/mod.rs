//! The web console under `/ui/` (`[console]`): upstream health, the
//! catalog, drift review and approval, the audit log and recent call
//! rates, as server-rendered pages with no script.
//!
//! Here the gateway's state is turned into the core's view models
//! ([`sluice_core::console`]) and rendered (`pages`); the HTTP side
//! (admission, forms, headers) is `downstream::http`'s. Approvals go
//! through [`Gateway::approve`](crate::Gateway), the same decision as
//! `sluice lock`.

pub(crate) mod pages;

use std::path::PathBuf;

use maud::Markup;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;
use sluice_core::audit::{self, AuditArgs, plan_reading};
use sluice_core::config::ConsoleListener;
use sluice_core::console::{
    CatalogQuery, CatalogRow, RATE_WINDOWS_MS, catalog_rows, drift_entries, rates,
};
use sluice_core::discovery::ListKind;

use crate::gateway::Gateway;
use crate::ops::audit::AuditStore;
use pages::{Nav, Notice};

/// The stylesheet, embedded: the console works offline.
pub(crate) const CSS: &str = include_str!("console.css");

/// Rows a catalog page shows, and drifted entries (each with two
/// definitions) a drift page shows: a page stays well under 100 KB
/// however large the catalog or the drift.
pub(crate) const CATALOG_PAGE_ROWS: usize = 100;
/// See [`CATALOG_PAGE_ROWS`].
pub(crate) const DRIFT_PAGE_ENTRIES: usize = 10;

/// What the console needs beyond the gateway: where `sluice.lock` is, and
/// the audit store to read.
pub struct Console {
    lockfile: PathBuf,
    audit: Option<AuditStore>,
}

impl Console {
    /// A console that approves into `lockfile` and reads `audit` (none: no
    /// audit log is kept).
    pub fn new(lockfile: PathBuf, audit: Option<AuditStore>) -> Console {
        Console { lockfile, audit }
    }

    /// Where approvals are written.
    pub(crate) fn lockfile(&self) -> &std::path::Path {
        &self.lockfile
    }
}

/// The listener the console is served on, when `[console]` is enabled.
pub fn served_on(gateway: &Gateway) -> Option<ConsoleListener> {
    let console = &gateway.live().config.console;
    console.enabled.then_some(console.listener)
}

/// `path?k=v&...`, each value percent-encoded.
pub(crate) fn link(path: &str, pairs: &[(&str, String)]) -> String {
    let query: Vec<String> = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", utf8_percent_encode(v, NON_ALPHANUMERIC)))
        .collect();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

/// The catalog page's query string.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CatalogParams {
    q: Option<String>,
    upstream: Option<String>,
    view: Option<String>,
    offset: Option<usize>,
}

/// The drift page's query string.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct DriftParams {
    pub(crate) offset: Option<usize>,
}

/// One entry's query string.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct EntryParams {
    upstream: Option<String>,
    list: Option<String>,
    key: Option<String>,
}

/// The audit page's query string: `sluice audit`'s flags.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AuditParams {
    pub(crate) since: Option<String>,
    pub(crate) upstream: Option<String>,
    pub(crate) decision: Option<String>,
    pub(crate) view: Option<String>,
    pub(crate) limit: Option<usize>,
    pub(crate) cursor: Option<String>,
}

impl AuditParams {
    /// The link to the page after, with the same filters.
    pub(crate) fn next_link(&self, cursor: &str) -> String {
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        link(
            "/ui/audit",
            &[
                ("since", text(&self.since)),
                ("upstream", text(&self.upstream)),
                ("decision", text(&self.decision)),
                ("view", text(&self.view)),
                (
                    "limit",
                    self.limit.map(|l| l.to_string()).unwrap_or_default(),
                ),
                ("cursor", cursor.to_owned()),
            ],
        )
    }
}

/// An empty form field is no filter.
fn given(value: &Option<String>) -> Option<String> {
    value.clone().filter(|v| !v.trim().is_empty())
}

fn given_str(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.trim().is_empty())
}

// === the pages, from the gateway's state ===

/// The upstreams page: each upstream's status, its last error redacted.
pub(crate) fn upstreams_page(gateway: &Gateway) -> Markup {
    let live = gateway.live();
    let rows: Vec<_> = live
        .upstreams
        .iter()
        .map(|u| {
            let mut status = u.status();
            if let Some(error) = status.last_error.take() {
                let mut text = serde_json::Value::String(error);
                live.redactor.redact(&mut text);
                status.last_error = text.as_str().map(str::to_owned);
            }
            (u.name().to_owned(), status)
        })
        .collect();
    pages::upstreams(&rows)
}

/// The catalog's rows that `query` selects.
fn catalog(gateway: &Gateway, query: &CatalogQuery) -> Vec<CatalogRow> {
    let live = gateway.live();
    gateway.with_reads(|reads| {
        catalog_rows(
            reads,
            live.lock.as_ref(),
            &live.naming,
            &live.config.views,
            query,
        )
    })
}

/// The catalog page, filtered.
pub(crate) fn catalog_page(gateway: &Gateway, params: &CatalogParams) -> Markup {
    let live = gateway.live();
    let query = CatalogQuery {
        upstream: given(&params.upstream),
        view: given(&params.view),
        text: given(&params.q),
    };
    let rows = catalog(gateway, &query);
    let upstreams = live.upstream_names();
    let views: Vec<String> = live.config.views.iter().map(|v| v.name.clone()).collect();
    pages::catalog(
        &rows,
        params.offset.unwrap_or_default(),
        &query,
        &upstreams,
        &views,
    )
}

/// One catalog entry's page; `None` when no held read lists it.
pub(crate) fn entry_page(gateway: &Gateway, params: &EntryParams) -> Option<Markup> {
    let upstream = given(&params.upstream)?;
    let kind = ListKind::ALL
        .into_iter()
        .find(|k| Some(k.field()) == params.list.as_deref())?;
    let key = params.key.as_deref()?;
    let query = CatalogQuery {
        upstream: Some(upstream),
        ..CatalogQuery::default()
    };
    let rows = catalog(gateway, &query);
    rows.iter()
        .find(|r| r.entry.kind == kind && r.entry.key == key)
        .map(pages::entry)
}

/// The drift page; `csrf` is the forms' token when this request may
/// approve, else `read_only` says why not.
pub(crate) fn drift_page(
    gateway: &Gateway,
    offset: usize,
    csrf: Option<&str>,
    read_only: Option<&str>,
    message: Option<&Notice>,
) -> Markup {
    let live = gateway.live();
    let entries = gateway.with_reads(|reads| drift_entries(reads, live.lock.as_ref()));
    pages::drift(
        &entries,
        offset,
        live.lock.is_some(),
        csrf,
        read_only,
        message,
    )
}

/// The audit page, read from the store `sluice audit` reads.
pub(crate) async fn audit_page(
    gateway: &Gateway,
    console: &Console,
    params: &AuditParams,
    now_ms: u64,
) -> Markup {
    let args = AuditArgs {
        since: given_str(&params.since),
        upstream: given_str(&params.upstream),
        decision: given_str(&params.decision),
        view: given_str(&params.view),
        limit: params.limit,
        cursor: given_str(&params.cursor),
    };
    let error = |text: String| Notice { text, error: true };
    let Some(store) = &console.audit else {
        let none = error("No audit log is kept ([state] audit = false).".into());
        return pages::audit(&[], params, None, Some(&none));
    };
    let reading = match plan_reading(&args, &gateway.cursors, now_ms) {
        Ok(reading) => reading,
        Err(e) => return pages::audit(&[], params, None, Some(&error(e.to_string()))),
    };
    let rows = match store.read(&reading.query).await {
        Ok(rows) => rows,
        Err(e) => return pages::audit(&[], params, None, Some(&error(e.to_string()))),
    };
    let page = audit::audit_page(&reading, &rows, &gateway.cursors, now_ms);
    let next = page.value.get("nextCursor").and_then(|c| c.as_str());
    pages::audit(&rows[..page.rows], params, next, None)
}

/// The metrics page, from the recent calls.
pub(crate) fn metrics_page(gateway: &Gateway, now_ms: u64) -> Markup {
    let windows: Vec<_> = gateway.ops.recent.with(|samples| {
        RATE_WINDOWS_MS
            .iter()
            .map(|&window| (window, rates(samples, now_ms, window)))
            .collect()
    });
    pages::metrics(&windows)
}

/// A page that says `text`.
pub(crate) fn message_page(title: &str, current: Nav, text: &str) -> Markup {
    pages::message(title, current, text)
}
