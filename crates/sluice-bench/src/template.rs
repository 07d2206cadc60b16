//! Request bodies rendered once, with a hole for the JSON-RPC id.
//!
//! Every call of a run sends the same request except for its `id`, so the body is serialized
//! once, at start-up, as two byte strings: everything before the id (`{"jsonrpc":"2.0","id":`)
//! and everything after it (`,"method":...}` plus, on stdio, the line's `\n`). A call writes
//! prefix, id digits ([`itoa`]) and suffix into a buffer it reuses: no `serde_json::Value`, no
//! serializer, and (once the buffer has grown) no allocation on the send path.

use serde_json::{Map, Value, json};
use sluice_core::protocol::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, MODERN_VERSION,
};

/// The legacy protocol version this client asks for in `initialize`.
pub const LEGACY_VERSION: &str = "2025-11-25";

/// `clientInfo` of every request (modern `_meta`) and of `initialize` (legacy).
fn client_info() -> Value {
    json!({"name": "sluice-bench", "version": env!("CARGO_PKG_VERSION")})
}

/// The protocol era a run speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Era {
    /// 2026-07-28: no handshake, `_meta` on every request, MCP headers on every POST.
    Modern,
    /// 2025-11-25: `initialize` + `notifications/initialized` first (per process or session).
    Legacy,
}

impl Era {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }
}

/// The method a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    /// `tools/call` of `--tool` with `--args`.
    #[value(name = "tools/call")]
    ToolsCall,
    /// `tools/list` (first page, no cursor).
    #[value(name = "tools/list")]
    ToolsList,
}

impl Method {
    /// The JSON-RPC method name.
    pub fn name(self) -> &'static str {
        match self {
            Method::ToolsCall => "tools/call",
            Method::ToolsList => "tools/list",
        }
    }
}

/// A request body with its id left out: `prefix ID suffix`.
#[derive(Debug, Clone)]
pub struct Template {
    prefix: Vec<u8>,
    suffix: Vec<u8>,
}

impl Template {
    /// Renders `{"jsonrpc":"2.0","id":ID,"method":METHOD,"params":PARAMS}`; `line` appends `\n`
    /// (stdio framing).
    pub fn new(method: &str, params: Option<Value>, line: bool) -> Template {
        let mut rest = Map::new();
        rest.insert("method".into(), Value::String(method.into()));
        if let Some(params) = params {
            rest.insert("params".into(), params);
        }
        // `{"method":...}` without its opening brace becomes `,"method":...}`.
        let rest = Value::Object(rest).to_string();
        let mut suffix = Vec::with_capacity(rest.len() + 1);
        suffix.push(b',');
        suffix.extend_from_slice(&rest.as_bytes()[1..]);
        if line {
            suffix.push(b'\n');
        }
        Template {
            prefix: br#"{"jsonrpc":"2.0","id":"#.to_vec(),
            suffix,
        }
    }

    /// The request a run measures: `method` in `era`, with `tool` and `args` for `tools/call`.
    pub fn measured(
        era: Era,
        method: Method,
        tool: &str,
        args: &Map<String, Value>,
        line: bool,
    ) -> Template {
        let mut params = Map::new();
        if method == Method::ToolsCall {
            params.insert("name".into(), Value::String(tool.into()));
            params.insert("arguments".into(), Value::Object(args.clone()));
        }
        if era == Era::Modern {
            params.insert(
                "_meta".into(),
                json!({
                    META_PROTOCOL_VERSION: MODERN_VERSION,
                    META_CLIENT_CAPABILITIES: {},
                    META_CLIENT_INFO: client_info(),
                }),
            );
        }
        Template::new(method.name(), Some(Value::Object(params)), line)
    }

    /// The legacy `initialize` request.
    pub fn initialize(line: bool) -> Template {
        let params = json!({
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": client_info(),
        });
        Template::new("initialize", Some(params), line)
    }

    /// Appends the request with `id` to `buf` (several requests may share one buffer, one
    /// write).
    pub fn render(&self, buf: &mut Vec<u8>, id: u64) {
        buf.extend_from_slice(&self.prefix);
        buf.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
        buf.extend_from_slice(&self.suffix);
    }
}

/// The legacy `notifications/initialized` notification, with `\n` when `line`.
pub fn initialized_notification(line: bool) -> Vec<u8> {
    let mut out = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
    if line {
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(buf: &[u8]) -> Value {
        serde_json::from_slice(buf).expect("valid JSON")
    }

    #[test]
    fn modern_call_carries_meta_and_the_id() {
        let args = json!({"text": "hello"});
        let args = args.as_object().expect("object");
        let t = Template::measured(Era::Modern, Method::ToolsCall, "echo", args, true);
        let mut buf = Vec::new();
        t.render(&mut buf, 12345);
        assert_eq!(buf.last(), Some(&b'\n'));
        let v = parse(&buf);
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["id"], 12345);
        assert_eq!(v["method"], "tools/call");
        assert_eq!(v["params"]["name"], "echo");
        assert_eq!(v["params"]["arguments"]["text"], "hello");
        let meta = &v["params"]["_meta"];
        assert_eq!(meta[META_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(meta[META_CLIENT_CAPABILITIES], json!({}));
        assert_eq!(meta[META_CLIENT_INFO]["name"], "sluice-bench");
        // The buffer is reused: a shorter id leaves nothing of the longer one behind.
        buf.clear();
        t.render(&mut buf, 7);
        assert_eq!(parse(&buf)["id"], 7);
        // Rendering appends: a batch is one line per request.
        t.render(&mut buf, 8);
        let lines: Vec<Value> = buf
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(parse)
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["id"], 8);
    }

    #[test]
    fn legacy_list_has_no_meta_and_no_newline() {
        let t = Template::measured(Era::Legacy, Method::ToolsList, "echo", &Map::new(), false);
        let mut buf = Vec::new();
        t.render(&mut buf, 0);
        assert_ne!(buf.last(), Some(&b'\n'));
        let v = parse(&buf);
        assert_eq!(v["method"], "tools/list");
        assert_eq!(v["params"], json!({}));
    }

    #[test]
    fn initialize_asks_for_2025_11_25() {
        let mut buf = Vec::new();
        Template::initialize(true).render(&mut buf, 0);
        let v = parse(&buf);
        assert_eq!(v["params"]["protocolVersion"], "2025-11-25");
        assert_eq!(v["params"]["capabilities"], json!({}));
        assert!(parse(&initialized_notification(true)).get("id").is_none());
    }
}
