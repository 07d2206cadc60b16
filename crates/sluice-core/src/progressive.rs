//! Progressive discovery: instead of its whole catalog, sluice can list
//! four meta-tools (`[catalog] mode = "progressive"`), so that an agent in
//! front of hundreds of tools pages through short rows and asks for the
//! full definition of the few it needs.
//!
//! | meta-tool              | what it does                                                        |
//! |------------------------|---------------------------------------------------------------------|
//! | `sluice_list_servers`  | one row per upstream: state, era, counts                             |
//! | `sluice_list_tools`    | one row per tool, filtered by `server` and a text `query`            |
//! | `sluice_describe_tool` | one tool's whole definition                                          |
//! | `sluice_call_tool`     | calls a tool by name, through every policy a direct call meets       |
//!
//! The two list meta-tools take `limit` (1..200), `cursor` and `fields`
//! and return the [`crate::envelope`] page as `structuredContent` and as
//! text.
//!
//! Lite rows (at most 6 fields): a tool is `name`, `server`, `title`,
//! `readOnly` and `summary` (the first sentence of its description, at most
//! 120 characters); a server is `name`, `state`, `era`, `tools`, `catalog`
//! and `approval`. Full rows carry the whole definition or status.

use serde_json::{Map, Value, json};

use crate::envelope::{Fields, MAX_LIMIT};
use crate::jsonrpc::{self, RpcError};

/// `sluice_list_servers`.
pub const LIST_SERVERS: &str = "sluice_list_servers";
/// `sluice_list_tools`.
pub const LIST_TOOLS: &str = "sluice_list_tools";
/// `sluice_describe_tool`.
pub const DESCRIBE_TOOL: &str = "sluice_describe_tool";
/// `sluice_call_tool`.
pub const CALL_TOOL: &str = "sluice_call_tool";

/// The longest summary in a lite tool row.
pub const SUMMARY_CHARS: usize = 120;

/// The meta-tools' definitions, as `tools/list` shows them.
pub fn meta_tools() -> Vec<Value> {
    let page_input = |extra: Value| {
        let mut props = json!({
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 20,
                      "description": "Rows in this page (1 to 200)."},
            "cursor": {"type": "string", "description": "The nextCursor of the previous page."},
            "fields": {"type": "string", "enum": ["lite", "full"], "default": "lite",
                       "description": "lite: a few fields a row; full: the whole entry."},
        });
        if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        json!({"type": "object", "properties": props, "additionalProperties": false})
    };
    let envelope = json!({
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "object"}},
            "nextCursor": {"type": "string"},
            "isCapped": {"type": "boolean", "const": true},
        },
        "required": ["items"],
    });
    let read_only = json!({"readOnlyHint": true, "openWorldHint": false});
    vec![
        json!({
            "name": LIST_SERVERS,
            "title": "List servers",
            "description": "Lists the MCP servers behind this gateway, a page at a time: name, state, protocol era, tool count, catalog and approval state.",
            "inputSchema": page_input(json!({})),
            "outputSchema": envelope,
            "annotations": read_only,
        }),
        json!({
            "name": LIST_TOOLS,
            "title": "List tools",
            "description": "Lists the tools of every server behind this gateway, a page at a time. Filter by server and by text in the name or description. Lite rows give the name to use with sluice_describe_tool and sluice_call_tool.",
            "inputSchema": page_input(json!({
                "server": {"type": "string", "description": "Only this server's tools."},
                "query": {"type": "string", "description": "Only tools whose name or description contains this text (case-insensitive)."},
            })),
            "outputSchema": envelope,
            "annotations": read_only,
        }),
        json!({
            "name": DESCRIBE_TOOL,
            "title": "Describe a tool",
            "description": "Returns one tool's whole definition: description, input and output schemas, annotations.",
            "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "description": "The tool's name, as sluice_list_tools gives it."}}, "required": ["name"], "additionalProperties": false},
            "annotations": read_only,
        }),
        json!({
            "name": CALL_TOOL,
            "title": "Call a tool",
            "description": "Calls a tool by name with its arguments, exactly as calling it directly would.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The tool's name, as sluice_list_tools gives it."},
                "arguments": {"type": "object", "description": "The tool's arguments, per its inputSchema."},
            }, "required": ["name"], "additionalProperties": false},
        }),
    ]
}

/// Whether `name` is one of the meta-tools.
pub fn is_meta_tool(name: &str) -> bool {
    [LIST_SERVERS, LIST_TOOLS, DESCRIBE_TOOL, CALL_TOOL].contains(&name)
}

/// The filter of a `sluice_list_tools` call, as it binds cursors. A filter
/// that is present but not a string is `-32602`: ignoring it would return
/// the unfiltered list as if it were filtered.
pub fn tool_filter(args: &Value) -> Result<Value, RpcError> {
    let text = |key: &str| match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(RpcError::invalid_params(format!(
            "{key} must be a string (got {})",
            jsonrpc::excerpt(other)
        ))),
    };
    Ok(json!({
        "server": text("server")?,
        "query": text("query")?.map(|q| q.to_lowercase()),
    }))
}

/// Whether a tool passes a [`tool_filter`].
pub fn tool_matches(filter: &Value, tool: &Value, server: &str) -> bool {
    if let Some(wanted) = filter["server"].as_str()
        && wanted != server
    {
        return false;
    }
    match filter["query"].as_str() {
        None => true,
        Some(q) => ["name", "title", "description"].iter().any(|f| {
            tool.get(*f)
                .and_then(Value::as_str)
                .is_some_and(|s| s.to_lowercase().contains(q))
        }),
    }
}

/// One `sluice_list_tools` row.
pub fn tool_row(tool: &Value, server: &str, read_only: bool, fields: Fields) -> Value {
    let mut row = Map::new();
    row.insert(
        "name".into(),
        tool.get("name").cloned().unwrap_or(Value::Null),
    );
    row.insert("server".into(), server.into());
    if let Some(title) = tool.get("title") {
        row.insert("title".into(), title.clone());
    }
    row.insert("readOnly".into(), read_only.into());
    match fields {
        Fields::Lite => {
            let description = tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            row.insert("summary".into(), summary(description).into());
        }
        Fields::Full => {
            for f in ["description", "inputSchema", "outputSchema", "annotations"] {
                if let Some(v) = tool.get(f) {
                    row.insert(f.into(), v.clone());
                }
            }
        }
    }
    Value::Object(row)
}

/// One `sluice_list_servers` row from an upstream's status (as `/health`
/// shows it).
pub fn server_row(name: &str, status: &Value, fields: Fields) -> Value {
    let mut row = Map::new();
    row.insert("name".into(), name.into());
    match fields {
        Fields::Lite => {
            for f in ["state", "era", "tools", "catalog", "approval"] {
                if let Some(v) = status.get(f) {
                    row.insert(f.into(), v.clone());
                }
            }
        }
        Fields::Full => {
            if let Some(obj) = status.as_object() {
                row.extend(obj.clone());
            }
        }
    }
    Value::Object(row)
}

/// The first sentence (or line) of a description, at most
/// [`SUMMARY_CHARS`] characters, cut at a word with `…` when longer.
pub fn summary(description: &str) -> String {
    let first_line = description.trim().lines().next().unwrap_or("");
    let sentence = match first_line.find(". ") {
        Some(end) => &first_line[..=end],
        None => first_line,
    };
    if sentence.chars().count() <= SUMMARY_CHARS {
        return sentence.trim_end().to_owned();
    }
    let cut: String = sentence.chars().take(SUMMARY_CHARS - 1).collect();
    let at_word = cut.rfind(' ').map_or(cut.as_str(), |i| &cut[..i]);
    format!("{}…", at_word.trim_end())
}

/// A meta-tool's result: the value as `structuredContent` and as text.
pub fn tool_result(value: Value) -> Value {
    json!({
        "content": [{"type": "text", "text": value.to_string()}],
        "structuredContent": value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lite_rows_have_at_most_six_fields() {
        let tool = json!({"name": "git__log", "title": "Log", "description": "Shows the log. Many details follow here.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}});
        let lite = tool_row(&tool, "git", true, Fields::Lite);
        assert_eq!(
            lite,
            json!({"name": "git__log", "server": "git", "title": "Log", "readOnly": true, "summary": "Shows the log."})
        );
        let full = tool_row(&tool, "git", true, Fields::Full);
        assert_eq!(full["inputSchema"], json!({"type": "object"}));
        let status = json!({"state": "ready", "era": "modern", "tools": 3, "catalog": "complete", "approval": "unpinned", "restarts": 0, "protocol_version": "2026-07-28"});
        let row = server_row("git", &status, Fields::Lite);
        assert!(row.as_object().map_or(0, |o| o.len()) <= 6);
        assert_eq!(server_row("git", &status, Fields::Full)["restarts"], 0);
    }

    #[test]
    fn summaries_are_short_and_cut_at_a_word() {
        assert_eq!(summary("One. Two."), "One.");
        assert_eq!(summary("first line\nsecond"), "first line");
        let long = "word ".repeat(100);
        let s = summary(&long);
        assert!(s.chars().count() <= SUMMARY_CHARS);
        assert!(s.ends_with("word…"), "{s}");
    }

    #[test]
    fn filters_match_server_and_text() {
        let tool = json!({"name": "git__log", "description": "Shows the commit LOG"});
        let f = tool_filter(&json!({"server": "git", "query": "Commit"})).unwrap_or_default();
        assert!(tool_matches(&f, &tool, "git"));
        assert!(!tool_matches(&f, &tool, "web"));
        let push = tool_filter(&json!({"query": "push"})).unwrap_or_default();
        assert!(!tool_matches(&push, &tool, "git"));
        let all = tool_filter(&json!({})).unwrap_or_default();
        assert!(tool_matches(&all, &tool, "any"));
        assert_eq!(
            tool_filter(&json!({"server": 5})).map_err(|e| e.code),
            Err(-32602)
        );
    }

    #[test]
    fn list_meta_tools_cap_their_limit() {
        for t in meta_tools()
            .iter()
            .filter(|t| t["name"] == LIST_TOOLS || t["name"] == LIST_SERVERS)
        {
            assert_eq!(t["inputSchema"]["properties"]["limit"]["maximum"], 200);
            assert_eq!(t["outputSchema"]["required"], json!(["items"]));
        }
        assert!(
            meta_tools()
                .iter()
                .all(|t| is_meta_tool(t["name"].as_str().unwrap_or("")))
        );
    }
}
