//! Every list sluice serves, a page at a time: the MCP lists (`tools/list`,
//! ...) and, in progressive mode, the meta-tools that list servers and
//! tools. The page rules (limit, fields, byte cap, sealed cursors) are
//! `sluice_core::envelope`'s; this module feeds them the catalog.

use serde_json::{Value, json};
use sluice_core::boundary::budget;
use sluice_core::config::CatalogMode;
use sluice_core::discovery::ListKind;
use sluice_core::envelope::{
    DEFAULT_LIMIT, Fields, Position, Shape, build_page, parse_fields, parse_limit, resume_at,
};
use sluice_core::jsonrpc::RpcError;
use sluice_core::progressive::{self, DESCRIBE_TOOL, LIST_SERVERS, LIST_TOOLS};

use crate::bridge::now_ms;
use crate::gateway::Gateway;
use crate::rescue;

/// The rows of one list: what identifies each, in list order, and how to
/// build the row at an index (only the rows of the page are built).
struct Rows<F> {
    keys: Vec<String>,
    row: F,
}

impl Gateway {
    /// One page of an MCP list. Progressive mode lists the meta-tools in
    /// place of the tools.
    pub(crate) fn list(&self, kind: ListKind, params: &Value) -> Result<Value, RpcError> {
        let live = self.live();
        let catalog = &live.config.catalog;
        let rows = if kind == ListKind::Tools && catalog.mode == CatalogMode::Progressive {
            progressive::meta_tools()
        } else {
            self.federation().list(kind).to_vec()
        };
        let keys = rows
            .iter()
            .map(|r| {
                r.get(kind.key())
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        let shape = Shape {
            field: kind.field(),
            capped_flag: false,
        };
        self.page(
            kind.method(),
            &json!({}),
            Rows {
                keys,
                row: |i: usize| rows[i].clone(),
            },
            params.get("cursor"),
            catalog.list_page_size,
            catalog.list_page_bytes,
            shape,
        )
    }

    /// A call of a meta-tool other than `sluice_call_tool`; `None` when
    /// `name` is not one.
    pub(crate) fn meta_call(&self, name: &str, args: &Value) -> Option<Result<Value, RpcError>> {
        let answer = match name {
            LIST_SERVERS => self.list_servers(args),
            LIST_TOOLS => self.list_tools(args),
            DESCRIBE_TOOL => self.describe_tool(args),
            _ => return None,
        };
        Some(answer.map(progressive::tool_result))
    }

    fn list_servers(&self, args: &Value) -> Result<Value, RpcError> {
        let limit = parse_limit(args.get("limit"), DEFAULT_LIMIT)?;
        let fields = parse_fields(args.get("fields"), Fields::Lite)?;
        let statuses = self.upstream_statuses();
        let keys = statuses.iter().map(|(name, _)| name.clone()).collect();
        self.page(
            LIST_SERVERS,
            &json!({}),
            Rows {
                keys,
                row: |i: usize| {
                    let (name, status) = &statuses[i];
                    let status = self.status_value(status);
                    progressive::server_row(name, &status, fields)
                },
            },
            args.get("cursor"),
            limit,
            self.live().config.catalog.page_bytes,
            items(),
        )
    }

    fn list_tools(&self, args: &Value) -> Result<Value, RpcError> {
        let limit = parse_limit(args.get("limit"), DEFAULT_LIMIT)?;
        let fields = parse_fields(args.get("fields"), Fields::Lite)?;
        let filter = progressive::tool_filter(args)?;
        let fed = self.federation();
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
        let keys = matching.iter().map(|(name, _, _)| name.clone()).collect();
        self.page(
            LIST_TOOLS,
            &filter,
            Rows {
                keys,
                row: |i: usize| {
                    let (_, tool, route) = &matching[i];
                    let read_only = self.is_read_only(&route.upstream, &route.name, Some(tool));
                    progressive::tool_row(tool, &route.upstream, read_only, fields)
                },
            },
            args.get("cursor"),
            limit,
            self.live().config.catalog.page_bytes,
            items(),
        )
    }

    fn describe_tool(&self, args: &Value) -> Result<Value, RpcError> {
        let Some(name) = args.get("name").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params(
                "arguments.name must be a tool's name",
            ));
        };
        let fed = self.federation();
        match (fed.tool(name), fed.route_tool(name)) {
            (Some(tool), Some(route)) => {
                let read_only = self.is_read_only(&route.upstream, &route.name, Some(tool));
                Ok(progressive::tool_row(
                    tool,
                    &route.upstream,
                    read_only,
                    Fields::Full,
                ))
            }
            _ => Err(match fed.withheld(ListKind::Tools, name) {
                Some(withheld) => rescue::drift_blocked("tool", name, withheld),
                None => RpcError::invalid_params(format!("Unknown tool: {name}")),
            }),
        }
    }

    /// Whether a tool's results are reads (see `budget::is_read_only`).
    pub(crate) fn is_read_only(
        &self,
        upstream: &str,
        name: &str,
        definition: Option<&Value>,
    ) -> bool {
        let Some(up) = self.upstream(upstream) else {
            return false;
        };
        let listed = up.config.read_only_tools.iter().any(|t| t == name);
        budget::is_read_only(definition, up.config.trusted, listed)
    }

    /// Pages `rows`: from the start, or after the position a valid cursor
    /// names.
    #[allow(clippy::too_many_arguments)]
    fn page<F: Fn(usize) -> Value>(
        &self,
        surface: &str,
        filter: &Value,
        rows: Rows<F>,
        cursor: Option<&Value>,
        limit: usize,
        max_bytes: usize,
        shape: Shape,
    ) -> Result<Value, RpcError> {
        let now = now_ms();
        let keys: Vec<&str> = rows.keys.iter().map(String::as_str).collect();
        let start = match cursor {
            None | Some(Value::Null) => 0,
            Some(token) => {
                let position = self.cursors.open(token, surface, filter, now)?;
                resume_at(&keys, &position)
            }
        };
        let end = keys.len().min(start.saturating_add(limit));
        let window: Vec<Value> = (start..end).map(&rows.row).collect();
        let page = build_page(&window, end < keys.len(), max_bytes, shape, |n| {
            let position = Position {
                offset: start + n,
                last_key: keys
                    .get(start + n - 1)
                    .copied()
                    .unwrap_or_default()
                    .to_owned(),
            };
            self.cursors.issue(surface, filter, &position, now)
        });
        Ok(page.value)
    }
}

fn items() -> Shape {
    Shape {
        field: "items",
        capped_flag: true,
    }
}
