//! Every list sluice serves, a page at a time: the MCP lists (`tools/list`,
//! ...) and, in progressive mode, the meta-tools that list servers and
//! tools. The page rules (limit, fields, byte cap, sealed cursors) are
//! `sluice_core::envelope`'s; this module feeds them the catalog.

use serde_json::{Value, json};
use sluice_core::config::CatalogMode;
use sluice_core::envelope::{
    DEFAULT_LIMIT, Fields, Position, Shape, build_page, parse_fields, parse_limit, resume_at,
};
use sluice_core::health;
use sluice_core::method::ListKind;
use sluice_core::policy::{Denied, answer, route};
use sluice_core::progressive::{self, DESCRIBE_TOOL, LIST_SERVERS, LIST_TOOLS};
use sluice_core::versions;

use crate::bridge::now_ms;
use crate::gateway::{Gateway, Snapshot};

/// The rows of one list: how many, what identifies the row at an index,
/// and how to build it. Only the page's rows are built and only the keys a
/// cursor names are read, so a page costs what it holds, not what the list
/// does.
struct Rows<'k, K: Fn(usize) -> &'k str, F: Fn(usize) -> Value> {
    len: usize,
    key: K,
    row: F,
}

impl Gateway {
    /// One page of an MCP list, as a client speaking `version` may see it
    /// (`sluice_core::versions`). Progressive mode lists the meta-tools in
    /// place of the tools.
    pub(super) fn list(
        &self,
        snap: &Snapshot,
        kind: ListKind,
        params: &Value,
        version: &str,
    ) -> Result<Value, Denied> {
        let catalog = &snap.live.config.catalog;
        let meta_tools;
        let rows: &[Value] = if kind == ListKind::Tools && catalog.mode == CatalogMode::Progressive
        {
            meta_tools = progressive::meta_tools();
            &meta_tools
        } else {
            snap.federation.list(kind)
        };
        let shape = Shape {
            field: kind.field(),
            capped_flag: false,
        };
        self.page(
            kind.method(),
            &json!({}),
            Rows {
                len: rows.len(),
                key: |i: usize| {
                    rows[i]
                        .get(kind.key())
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                },
                row: |i: usize| {
                    let mut row = rows[i].clone();
                    versions::shape_entry(kind, version, &mut row);
                    row
                },
            },
            params.get("cursor"),
            catalog.list_page_size,
            catalog.list_page_bytes,
            shape,
        )
    }

    /// A call of a meta-tool sluice answers itself (see
    /// `policy::route::tool_call`).
    pub(super) fn meta_call(
        &self,
        snap: &Snapshot,
        name: &str,
        args: &Value,
    ) -> Result<Value, Denied> {
        let answer = match name {
            LIST_SERVERS => self.list_servers(snap, args),
            LIST_TOOLS => self.list_tools(snap, args),
            DESCRIBE_TOOL => self.describe_tool(snap, args),
            other => Err(Denied::UnknownEntry {
                kind: ListKind::Tools,
                name: other.to_owned(),
            }),
        };
        answer.map(progressive::tool_result)
    }

    fn list_servers(&self, snap: &Snapshot, args: &Value) -> Result<Value, Denied> {
        let limit = parse_limit(args.get("limit"), DEFAULT_LIMIT)?;
        let fields = parse_fields(args.get("fields"), Fields::Lite)?;
        let statuses: Vec<_> = snap
            .live
            .upstreams
            .iter()
            .map(|u| (u.name().to_owned(), u.status()))
            .collect();
        self.page(
            LIST_SERVERS,
            &json!({}),
            Rows {
                len: statuses.len(),
                key: |i: usize| statuses[i].0.as_str(),
                row: |i: usize| {
                    let (name, status) = &statuses[i];
                    let status = health::shown(status, &snap.live.redactor);
                    progressive::server_row(name, &status, fields)
                },
            },
            args.get("cursor"),
            limit,
            snap.live.config.catalog.page_bytes,
            items(),
        )
    }

    fn list_tools(&self, snap: &Snapshot, args: &Value) -> Result<Value, Denied> {
        let limit = parse_limit(args.get("limit"), DEFAULT_LIMIT)?;
        let fields = parse_fields(args.get("fields"), Fields::Lite)?;
        let filter = progressive::tool_filter(args)?;
        let fed = &snap.federation;
        let mut matching = Vec::new();
        for tool in fed.list(ListKind::Tools) {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let Some(route) = fed.route_tool(name) else {
                continue;
            };
            if progressive::tool_matches(&filter, tool, &route.upstream) {
                matching.push((name.to_owned(), tool, route));
            }
        }
        self.page(
            LIST_TOOLS,
            &filter,
            Rows {
                len: matching.len(),
                key: |i: usize| matching[i].0.as_str(),
                row: |i: usize| {
                    let (_, tool, route) = &matching[i];
                    let read_only = is_read_only(snap, &route.upstream, &route.name, Some(tool));
                    progressive::tool_row(tool, &route.upstream, read_only, fields)
                },
            },
            args.get("cursor"),
            limit,
            snap.live.config.catalog.page_bytes,
            items(),
        )
    }

    fn describe_tool(&self, snap: &Snapshot, args: &Value) -> Result<Value, Denied> {
        let Some(name) = args.get("name").and_then(Value::as_str) else {
            return Err(Denied::invalid_params(
                "arguments.name must be a tool's name",
            ));
        };
        let fed = &snap.federation;
        // Described only when served: a withheld tool is refused as drift,
        // and a tool of an upstream still reading is unknown here.
        // Describing a withheld tool is no call of it: the answer carries
        // the drift refusal's error, and the meta-tool call is recorded as
        // an invalid request.
        let route = route::named(fed, &snap.live.naming, ListKind::Tools, name, Vec::new).map_err(
            |denied| match denied {
                Denied::DriftBlocked { .. } => Denied::Params(denied.to_rpc()),
                other => other,
            },
        )?;
        let tool = fed.tool(name).ok_or_else(|| Denied::UnknownEntry {
            kind: ListKind::Tools,
            name: name.to_owned(),
        })?;
        let read_only = is_read_only(snap, &route.upstream, &route.name, Some(tool));
        Ok(progressive::tool_row(
            tool,
            &route.upstream,
            read_only,
            Fields::Full,
        ))
    }

    /// Pages `rows`: from the start, or after the position a valid cursor
    /// names.
    #[allow(clippy::too_many_arguments)]
    fn page<'k, K: Fn(usize) -> &'k str, F: Fn(usize) -> Value>(
        &self,
        surface: &str,
        filter: &Value,
        rows: Rows<'k, K, F>,
        cursor: Option<&Value>,
        limit: usize,
        max_bytes: usize,
        shape: Shape,
    ) -> Result<Value, Denied> {
        let now = now_ms();
        let start = self.page_start(surface, filter, rows.len, &rows.key, cursor, now)?;
        let end = rows.len.min(start.saturating_add(limit));
        let window: Vec<Value> = (start..end).map(&rows.row).collect();
        let page = build_page(&window, end < rows.len, max_bytes, shape, |n| {
            let position = Position {
                offset: start + n,
                last_key: (rows.key)(start + n - 1).to_owned(),
            };
            self.cursors.issue(surface, filter, &position, now)
        });
        Ok(page.value)
    }
}

impl Gateway {
    /// Where a page of a list of `len` rows (`key(i)`: row i's key)
    /// starts: the beginning, or after the position a valid cursor for
    /// `surface` and `filter` names.
    pub(super) fn page_start<'k>(
        &self,
        surface: &str,
        filter: &Value,
        len: usize,
        key: impl Fn(usize) -> &'k str,
        cursor: Option<&Value>,
        now: u64,
    ) -> Result<usize, Denied> {
        match cursor {
            None | Some(Value::Null) => Ok(0),
            Some(token) => {
                let position = self.cursors.open(token, surface, filter, now)?;
                Ok(resume_at(len, key, &position))
            }
        }
    }
}

/// Whether a tool's results are reads (`policy::answer::is_read_only`).
fn is_read_only(snap: &Snapshot, upstream: &str, tool: &str, definition: Option<&Value>) -> bool {
    snap.live
        .upstream(upstream)
        .is_some_and(|up| answer::is_read_only(&up.config, tool, definition))
}

fn items() -> Shape {
    Shape {
        field: "items",
        capped_flag: true,
    }
}
