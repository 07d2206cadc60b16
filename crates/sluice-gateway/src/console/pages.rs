//! The console's pages, rendered with `maud` (escaped by construction)
//! from the core's view models. No script, no inline style: the strict
//! Content-Security-Policy allows neither. Every page renders from state
//! already in memory, so the first paint waits for nothing.

use maud::{DOCTYPE, Markup, html};
use sluice_core::audit::{AuditRow, format_time_ms};
use sluice_core::console::{CatalogQuery, CatalogRow, DriftEntry, FieldRow, UpstreamRates};
use sluice_core::health::UpstreamStatus;

use super::{AuditParams, CATALOG_PAGE_ROWS, DRIFT_PAGE_ENTRIES, link};
use crate::gateway::VERSION;

/// The pages, for the navigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Upstreams,
    Catalog,
    Drift,
    Audit,
    Metrics,
}

const NAV: [(Nav, &str, &str); 5] = [
    (Nav::Upstreams, "/ui/", "Upstreams"),
    (Nav::Catalog, "/ui/catalog", "Catalog"),
    (Nav::Drift, "/ui/drift", "Drift"),
    (Nav::Audit, "/ui/audit", "Audit"),
    (Nav::Metrics, "/ui/metrics", "Metrics"),
];

/// A message shown above a page's content.
pub(crate) struct Notice {
    pub(crate) text: String,
    pub(crate) error: bool,
}

/// The frame of every page; `refresh`: reload every so many seconds.
pub(crate) fn layout(title: &str, current: Nav, refresh: Option<u32>, body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                @if let Some(seconds) = refresh {
                    meta http-equiv="refresh" content=(seconds);
                }
                title { (title) " · sluice" }
                link rel="stylesheet" href="/ui/console.css";
            }
            body {
                a.skip href="#main" { "Skip to the content" }
                header {
                    span.brand { "sluice" }
                    nav aria-label="Console" {
                        ul {
                            @for (nav, href, label) in NAV {
                                li {
                                    @if nav == current {
                                        a href=(href) aria-current="page" { (label) }
                                    } @else {
                                        a href=(href) { (label) }
                                    }
                                }
                            }
                        }
                    }
                }
                main #main { (body) }
                footer.note { p { "sluice " (VERSION) } }
            }
        }
    }
}

fn notice(notice: Option<&Notice>) -> Markup {
    html! {
        @if let Some(n) = notice {
            @if n.error {
                p.notice.error role="alert" { (n.text) }
            } @else {
                p.notice role="status" { (n.text) }
            }
        }
    }
}

/// The upstreams, refreshed every few seconds.
pub(crate) fn upstreams(rows: &[(String, UpstreamStatus)]) -> Markup {
    let ready = rows.iter().filter(|(_, s)| s.is_ready()).count();
    let body = html! {
        h1 { "Upstreams" }
        p.summary { (rows.len()) " upstreams, " (ready) " ready. This page refreshes every 5 seconds." }
        div.table-wrap {
            table {
                caption.note { "State, protocol, catalog and approval of each upstream" }
                thead { tr {
                    th scope="col" { "Upstream" } th scope="col" { "State" } th scope="col" { "Era" }
                    th scope="col" { "Version" } th.num scope="col" { "Restarts" }
                    th scope="col" { "Catalog" } th.num scope="col" { "Tools" } th.num scope="col" { "Resources" }
                    th.num scope="col" { "Templates" } th.num scope="col" { "Prompts" }
                    th scope="col" { "Approval" } th scope="col" { "Last error" }
                } }
                tbody {
                    @for (name, s) in rows {
                        tr {
                            th scope="row" { (name) }
                            td class=(format!("state-{}", s.state.as_str())) { (s.state.as_str()) }
                            td { (s.era.as_ref().map(word).unwrap_or_default()) }
                            td { (s.protocol_version.clone().unwrap_or_default()) }
                            td.num { (s.restarts) }
                            td { (word(&s.catalog)) }
                            td.num { (s.tools) } td.num { (s.resources) }
                            td.num { (s.resource_templates) } td.num { (s.prompts) }
                            td class=(format!("state-{}", word(&s.approval))) {
                                (word(&s.approval))
                                @if let Some(d) = &s.drift {
                                    " (" (d.added) " added, " (d.removed) " removed, " (d.changed) " changed) "
                                    a href="/ui/drift" { "review" }
                                }
                            }
                            td { (s.last_error.clone().unwrap_or_default()) }
                        }
                    }
                }
            }
        }
    };
    layout("Upstreams", Nav::Upstreams, Some(5), &body)
}

/// A serialized enum's word (its serde name).
fn word<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// The catalog: filters, then one page of rows.
pub(crate) fn catalog(
    rows: &[CatalogRow],
    offset: usize,
    query: &CatalogQuery,
    upstreams: &[String],
    views: &[String],
) -> Markup {
    let shown = &rows[offset.min(rows.len())..(offset + CATALOG_PAGE_ROWS).min(rows.len())];
    let filters = |more: &[(&str, String)]| {
        let mut pairs: Vec<(&str, String)> = [
            ("q", query.text.clone()),
            ("upstream", query.upstream.clone()),
            ("view", query.view.clone()),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
        pairs.extend(more.iter().cloned());
        link("/ui/catalog", &pairs)
    };
    let body = html! {
        h1 { "Catalog" }
        form.filters method="get" action="/ui/catalog" role="search" {
            label { "Search" input type="search" name="q" value=(query.text.clone().unwrap_or_default()); }
            label { "Upstream"
                select name="upstream" {
                    option value="" { "all" }
                    @for u in upstreams {
                        option value=(u) selected[query.upstream.as_deref() == Some(u.as_str())] { (u) }
                    }
                }
            }
            label { "View"
                select name="view" {
                    option value="" { "whole catalog" }
                    @for v in views {
                        option value=(v) selected[query.view.as_deref() == Some(v.as_str())] { (v) }
                    }
                }
            }
            button type="submit" { "Filter" }
        }
        p.summary #count { (rows.len()) " entries" @if rows.len() > shown.len() { ", " (offset + 1) " to " (offset + shown.len()) " shown" } "." }
        div.table-wrap {
            table {
                thead { tr {
                    th scope="col" { "Upstream" } th scope="col" { "List" } th scope="col" { "Name or URI" }
                    th scope="col" { "State" } th scope="col" { "Findings" } th scope="col" { "Description" }
                } }
                tbody {
                    @for r in shown {
                        tr {
                            td { (r.upstream) }
                            td { (r.entry.kind.field()) }
                            th scope="row" {
                                a href=(link("/ui/catalog/entry", &[("upstream", r.upstream.clone()), ("list", r.entry.kind.field().to_owned()), ("key", r.entry.key.clone())])) { (r.exposed) }
                            }
                            td class=(format!("state-{}", r.state.as_str())) { (r.state.as_str()) }
                            td { (r.findings.join(", ")) }
                            td { (truncate(&r.description, 160)) }
                        }
                    }
                }
            }
        }
        nav aria-label="Pages" {
            @if offset > 0 {
                a href=(filters(&[("offset", offset.saturating_sub(CATALOG_PAGE_ROWS).to_string())])) { "Previous page" } " "
            }
            @if offset + shown.len() < rows.len() {
                a href=(filters(&[("offset", (offset + CATALOG_PAGE_ROWS).to_string())])) { "Next page" }
            }
        }
    };
    layout("Catalog", Nav::Catalog, None, &body)
}

fn truncate(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// One catalog entry: its definition, state and findings.
pub(crate) fn entry(row: &CatalogRow) -> Markup {
    let body = html! {
        h1 { (row.entry.noun()) " " (row.exposed) }
        dl {
            dt { "Upstream" } dd { (row.upstream) }
            dt { "Name or URI upstream" } dd { (row.entry.key) }
            dt { "State" } dd class=(format!("state-{}", row.state.as_str())) { (row.state.as_str()) }
            dt { "Findings" } dd { @if row.findings.is_empty() { "none" } @else { (row.findings.join(", ")) } }
        }
        h2 { "Definition" }
        pre { (row.definition) }
    };
    layout(&row.exposed, Nav::Catalog, None, &body)
}

/// Drift: each drifted entry, approved beside current, with its forms.
/// `csrf`: the token of the forms, when this request may approve;
/// otherwise `read_only` says why not.
pub(crate) fn drift(
    entries: &[DriftEntry],
    offset: usize,
    pinned: bool,
    csrf: Option<&str>,
    read_only: Option<&str>,
    message: Option<&Notice>,
) -> Markup {
    let mut upstreams: Vec<&str> = entries.iter().map(|e| e.upstream.as_str()).collect();
    upstreams.dedup();
    let shown =
        &entries[offset.min(entries.len())..(offset + DRIFT_PAGE_ENTRIES).min(entries.len())];
    let body = html! {
        h1 { "Drift" }
        (notice(message))
        @if !pinned {
            p.notice { "No lockfile: sluice runs unpinned and serves catalogs as read. Approve everything to write sluice.lock." }
        }
        @if let Some(why) = read_only {
            p.notice { "Read-only: " (why) "." }
        }
        p.summary #count {
            (entries.len()) " drifted entries in " (upstreams.len()) " upstreams."
            @if shown.len() < entries.len() { " " (offset + 1) " to " (offset + shown.len()) " shown." }
        }
        @if let Some(token) = csrf {
            (approve_form(token, "all", None, None, "Approve everything"))
            @for u in &upstreams {
                (approve_form(token, "upstream", Some(u), None, &format!("Approve all of {u}")))
            }
        }
        @for e in shown {
            section.entry aria-labelledby=(entry_anchor(e)) {
                h2 id=(entry_anchor(e)) {
                    (e.upstream) ": " (e.entry) " "
                    span class=(format!("state-{}", e.drift.as_str())) { "(" (e.drift.as_str()) ")" }
                }
                @if !e.findings.is_empty() {
                    p { "Findings not accepted: " (e.findings.join(", ")) }
                }
                (fields_table(&e.fields))
                @if let Some(token) = csrf {
                    (approve_form(token, "entry", Some(&e.upstream), Some(e), "Approve this entry"))
                }
            }
        }
        nav aria-label="Pages" {
            @if offset > 0 {
                a href=(link("/ui/drift", &[("offset", offset.saturating_sub(DRIFT_PAGE_ENTRIES).to_string())])) { "Previous page" } " "
            }
            @if offset + shown.len() < entries.len() {
                a href=(link("/ui/drift", &[("offset", (offset + DRIFT_PAGE_ENTRIES).to_string())])) { "Next page" }
            }
        }
    };
    layout("Drift", Nav::Drift, None, &body)
}

fn entry_anchor(e: &DriftEntry) -> String {
    let key: String = e
        .entry
        .key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("drift-{}-{}-{key}", e.upstream, e.entry.kind.field())
}

fn fields_table(rows: &[FieldRow]) -> Markup {
    html! {
        div.table-wrap {
            table {
                thead { tr {
                    th scope="col" { "Field" } th scope="col" { "Approved" } th scope="col" { "Current" }
                } }
                tbody {
                    @for r in rows {
                        tr class=[r.changed.then_some("changed")] {
                            th scope="row" { (r.field) @if r.changed { " (changed)" } }
                            td { @if let Some(v) = &r.approved { pre { (v) } } @else { span.note { "absent" } } }
                            td { @if let Some(v) = &r.current { pre { (v) } } @else { span.note { "absent" } } }
                        }
                    }
                }
            }
        }
    }
}

fn approve_form(
    token: &str,
    target: &str,
    upstream: Option<&str>,
    entry: Option<&DriftEntry>,
    label: &str,
) -> Markup {
    html! {
        form.approve method="post" action="/ui/drift/approve" {
            input type="hidden" name="csrf" value=(token);
            input type="hidden" name="target" value=(target);
            @if let Some(u) = upstream { input type="hidden" name="upstream" value=(u); }
            @if let Some(e) = entry {
                input type="hidden" name="list" value=(e.entry.kind.field());
                input type="hidden" name="key" value=(e.entry.key);
            }
            label { input type="checkbox" name="accept_findings" value="on"; " accept findings" }
            button type="submit" { (label) }
        }
    }
}

/// The audit log: filters, a page of rows, the next page's link.
pub(crate) fn audit(
    rows: &[AuditRow],
    params: &AuditParams,
    next: Option<&str>,
    message: Option<&Notice>,
) -> Markup {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let body = html! {
        h1 { "Audit log" }
        (notice(message))
        form.filters method="get" action="/ui/audit" {
            label { "Since (1h, 7d, or RFC 3339)" input type="text" name="since" value=(text(&params.since)); }
            label { "Upstream" input type="text" name="upstream" value=(text(&params.upstream)); }
            label { "Decision" input type="text" name="decision" value=(text(&params.decision)); }
            label { "View" input type="text" name="view" value=(text(&params.view)); }
            label { "Rows" input type="number" min="1" max="200" name="limit" value=(params.limit.map(|l| l.to_string()).unwrap_or_default()); }
            button type="submit" { "Filter" }
        }
        p.summary #count { (rows.len()) " rows on this page, newest first." }
        div.table-wrap {
            table {
                thead { tr {
                    th scope="col" { "Time" } th scope="col" { "Principal" } th scope="col" { "View" }
                    th scope="col" { "Method" } th scope="col" { "Upstream" } th scope="col" { "Target" }
                    th scope="col" { "Decision" } th.num scope="col" { "Code" } th.num scope="col" { "Duration" }
                    th scope="col" { "Size" }
                } }
                tbody {
                    @for row in rows {
                        @let r = &row.record;
                        tr {
                            td { (format_time_ms(r.time_ms)) }
                            td { (r.principal) }
                            td { (r.view.clone().unwrap_or_default()) }
                            td { (r.method) }
                            td { (r.upstream.clone().unwrap_or_default()) }
                            td { (r.target.clone().unwrap_or_default()) }
                            td { (r.decision.as_str()) }
                            td.num { (r.code.map(|c| c.to_string()).unwrap_or_default()) }
                            td.num { (format!("{:.1} ms", r.duration_us as f64 / 1000.0)) }
                            td { (r.size.map_or("", |s| s.as_str())) }
                        }
                    }
                }
            }
        }
        @if let Some(cursor) = next {
            nav aria-label="Pages" {
                a href=(params.next_link(cursor)) { "Next page" }
            }
        }
    };
    layout("Audit", Nav::Audit, None, &body)
}

/// Calls per second, errors and latency per upstream, per window.
pub(crate) fn metrics(windows: &[(u64, Vec<UpstreamRates>)]) -> Markup {
    let body = html! {
        h1 { "Metrics" }
        p.summary { "Requests answered by this process, by upstream. This page refreshes every 10 seconds; /metrics has the Prometheus totals." }
        @for (window_ms, rows) in windows {
            h2 { "Last " (window_ms / 60_000) " minute" @if *window_ms > 60_000 { "s" } }
            @if rows.is_empty() {
                p.note { "No requests." }
            } @else {
                div.table-wrap {
                    table {
                        thead { tr {
                            th scope="col" { "Upstream" } th.num scope="col" { "Calls" } th.num scope="col" { "Calls/s" }
                            th.num scope="col" { "Errors" } th.num scope="col" { "p50" } th.num scope="col" { "p99" }
                        } }
                        tbody {
                            @for r in rows {
                                tr {
                                    th scope="row" { (r.upstream) }
                                    td.num { (r.calls) }
                                    td.num { (format!("{:.2}", r.per_second)) }
                                    td.num { (r.errors) }
                                    td.num { (format!("{:.1} ms", r.p50_ms)) }
                                    td.num { (format!("{:.1} ms", r.p99_ms)) }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    layout("Metrics", Nav::Metrics, Some(10), &body)
}

/// A page that only says something (a refusal, a missing entry).
pub(crate) fn message(title: &str, current: Nav, text: &str) -> Markup {
    let body = html! {
        h1 { (title) }
        p.notice.error role="alert" { (text) }
    };
    layout(title, current, None, &body)
}

#[cfg(test)]
mod tests {
    use sluice_core::catalog::drift::{DriftKind, EntryId};
    use sluice_core::console::{EntryState, FieldRow};
    use sluice_core::discovery::ListKind;

    use super::*;

    const HOSTILE: &str = "<script>alert(1)</script>\" onmouseover=\"x";

    #[test]
    fn what_upstreams_wrote_is_escaped_everywhere_it_is_shown() {
        let row = CatalogRow {
            upstream: "evil".into(),
            entry: EntryId {
                kind: ListKind::Tools,
                key: HOSTILE.into(),
            },
            exposed: format!("evil__{HOSTILE}"),
            description: HOSTILE.into(),
            state: EntryState::Unpinned,
            findings: vec![],
            definition: HOSTILE.into(),
        };
        let drifted = DriftEntry {
            upstream: "evil".into(),
            entry: row.entry.clone(),
            drift: DriftKind::Changed,
            fields: vec![FieldRow {
                field: "description",
                approved: Some(HOSTILE.into()),
                current: Some(HOSTILE.into()),
                changed: true,
            }],
            findings: vec![HOSTILE.into()],
        };
        let pages = [
            catalog(
                std::slice::from_ref(&row),
                0,
                &CatalogQuery::default(),
                &[],
                &[],
            ),
            entry(&row),
            drift(&[drifted], 0, true, Some(HOSTILE), None, None),
        ];
        for page in pages {
            let html = page.into_string();
            assert!(!html.contains("<script"), "{html}");
            assert!(!html.contains("\" onmouseover"), "{html}");
            assert!(html.contains("&lt;script&gt;"), "{html}");
        }
    }

    #[test]
    fn every_page_names_its_place_in_the_navigation() {
        let html = metrics(&[(60_000, vec![])]).into_string();
        assert!(html.contains(r#"<a href="/ui/metrics" aria-current="page">Metrics</a>"#));
        assert!(html.contains(r#"<meta http-equiv="refresh" content="10">"#));
        assert!(html.contains("No requests."));
        assert_eq!(html.matches("aria-current").count(), 1);
    }
}
