//! The fixture's catalog: tools, resources, resource templates and prompts (their pagination is
//! `pagination`).

use serde_json::{Value, json};

use crate::bulk;
use crate::jsonrpc::RpcError;

/// The `lossless` tool's definition, kept as raw JSON: besides the standard fields it carries
/// fields a gateway does not know (`execution`, `x-future`, `annotations.x-hint`, `_meta`) and
/// must pass through unchanged.
const LOSSLESS_TOOL: &str = r#"{"name":"lossless","description":"Returns a result full of unknown fields and unusual number spellings that a proxy must pass through byte for byte.","inputSchema":{"type":"object","properties":{}},"outputSchema":{"type":"object"},"execution":{"taskSupport":"optional"},"x-future":{"a":1},"annotations":{"readOnlyHint":true,"x-hint":true},"_meta":{"x.example/tool":"lossless"}}"#;

/// An input schema with the given properties, all listed as required.
fn schema(props: &[(&str, &str)]) -> Value {
    let mut properties = serde_json::Map::new();
    for (name, ty) in props {
        properties.insert((*name).to_owned(), json!({"type": ty}));
    }
    let required: Vec<&str> = props.iter().map(|(n, _)| *n).collect();
    if required.is_empty() {
        json!({"type": "object", "properties": properties})
    } else {
        json!({"type": "object", "properties": properties, "required": required})
    }
}

/// A plain tool definition.
pub fn tool(name: &str, description: &str, props: &[(&str, &str)]) -> Value {
    json!({"name": name, "description": description, "inputSchema": schema(props)})
}

/// The fixed tools, always present and always in this order.
fn fixed_tools() -> Vec<Value> {
    let lossless = serde_json::from_str(LOSSLESS_TOOL).unwrap_or(Value::Null);
    vec![
        tool(
            "echo",
            "Echoes `text` back as a text block.",
            &[("text", "string")],
        ),
        lossless,
        tool(
            "crash",
            "Exits the server process (code 3) without answering.",
            &[],
        ),
        tool("hang", "Never answers (until cancelled).", &[]),
        tool(
            "garbage",
            "Writes a non-JSON line on the output stream, then answers normally.",
            &[],
        ),
        json!({
            "name": "progress",
            "description": "Sends `steps` progress notifications, one every `delay_ms` (each with `message` when given), if the request has a progressToken; then answers \"done\".",
            "inputSchema": {"type": "object", "properties": {
                "steps": {"type": "integer", "minimum": 0},
                "delay_ms": {"type": "integer", "minimum": 0},
                "message": {"type": "string"}
            }}
        }),
        tool(
            "sample",
            "Asks the client for an LLM completion of `prompt` (legacy: sampling/createMessage; modern: an MRTR input request) and returns its text.",
            &[("prompt", "string")],
        ),
        tool(
            "add_tool",
            "Registers one more tool `added_N` and announces it with notifications/tools/list_changed.",
            &[],
        ),
        tool(
            "big",
            "Returns a text block of `bytes` 'x' characters.",
            &[("bytes", "integer")],
        ),
        tool(
            "slow",
            "Sleeps `ms` milliseconds, then answers \"slept\".",
            &[("ms", "integer")],
        ),
        json!({
            "name": "header_echo",
            "description": "Echoes `region`, `count` and the names of the Mcp-Param-* headers received. Over 2026 HTTP, `region` and `count` must be mirrored in Mcp-Param-Region / Mcp-Param-Count (else 400 + -32020).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "count": {"type": "integer", "x-mcp-header": "Count"},
                    "note": {"type": "string"}
                },
                "required": ["region"]
            }
        }),
        // Read budget and redaction (see `tools::call` and `bulk`).
        json!({
            "name": "read_big",
            "description": "Read-only `big`: returns one text block of exactly `bytes` 'x' characters.",
            "inputSchema": schema(&[("bytes", "integer")]),
            "annotations": {"readOnlyHint": true}
        }),
        json!({
            "name": "reflect",
            "description": "Read-only; sends back what it is given, to pass any data through a gateway (all arguments optional; `isError` is never set). `text`: a text block with that text. `structured` (any JSON): returned unchanged as `structuredContent`, and also serialized as a text block (after the `text` block). `image_bytes`: an image block (mimeType image/png) whose base64 `data` decodes to exactly that many bytes (the first bytes of the PNG signature, then byte i = i mod 251). `error`: instead of a result, a JSON-RPC error -32603 with that message. A wrongly typed argument is a JSON-RPC error -32602.",
            "inputSchema": {"type": "object", "properties": {
                "text": {"type": "string"},
                "structured": {},
                "image_bytes": {"type": "integer", "minimum": 0},
                "error": {"type": "string"}
            }},
            "annotations": {"readOnlyHint": true}
        }),
        json!({
            "name": "huge_read",
            "description": "Read-only; returns one text block of `bytes` 'x' characters, written out in 64 KiB chunks as it is produced and never built whole in memory (100 MB is fine). Stops quietly if the client stops reading.",
            "inputSchema": schema(&[("bytes", "integer")]),
            "annotations": {"readOnlyHint": true}
        }),
        json!({
            "name": "huge_write",
            "description": "Destructive (not read-only) twin of `huge_read`: returns one text block of `bytes` 'x' characters, written out in 64 KiB chunks as it is produced and never built whole in memory (100 MB is fine). Stops quietly if the client stops reading.",
            "inputSchema": schema(&[("bytes", "integer")]),
            "annotations": {"destructiveHint": true, "readOnlyHint": false}
        }),
        tool(
            "elicit",
            "Asks the client for input about `message` (legacy: elicitation/create; modern: an MRTR input request) and returns its answer as `action=<action> content=<content as JSON>`.",
            &[("message", "string")],
        ),
    ]
}

/// How many fixed tools there are (extra tools such as `list_items` come right after them).
pub fn fixed_tool_count() -> usize {
    fixed_tools().len()
}

/// The `echo` tool's `outputSchema` under `--violate output-schema`.
pub fn echo_output_schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
}

/// Makes `echo` (in `tools`) declare [`echo_output_schema`] and `readOnlyHint: true`
/// (`--violate output-schema`; the tool then answers structured content that does not match).
pub fn declare_echo_output_schema(tools: &mut [Value]) {
    for echo in tools.iter_mut().filter(|t| t["name"] == "echo") {
        if let Some(obj) = echo.as_object_mut() {
            obj.insert("outputSchema".into(), echo_output_schema());
            obj.insert("annotations".into(), json!({"readOnlyHint": true}));
        }
    }
}

/// Name of generated tool `i`.
pub fn gen_name(i: usize) -> String {
    format!("gen_{i:04}")
}

/// Name of the `i`-th tool registered by `add_tool` (0-based).
pub fn added_name(i: usize) -> String {
    format!("added_{i}")
}

/// The length of generated tool `i`'s description with
/// `--varied-descriptions`: from 10 bytes (tool 0) up to 20,000, spread by a
/// stride that visits the whole range.
pub fn varied_description_len(i: usize) -> usize {
    10 + (i * 7_919) % 19_991
}

/// A description of exactly `len` bytes that starts by naming the tool.
fn sized_description(i: usize, len: usize) -> String {
    let mut text = format!("Generated tool {i}. ");
    while text.len() < len {
        text.push_str("It answers with its own name. ");
    }
    text.truncate(len);
    text
}

/// The whole tool list: fixed tools, then `gen_*`, then `added_*`.
pub fn all_tools(generated: usize, added: usize, varied_descriptions: bool) -> Vec<Value> {
    let mut tools = fixed_tools();
    tools.extend((0..generated).map(|i| {
        let description = if varied_descriptions {
            sized_description(i, varied_description_len(i))
        } else {
            "A generated tool (catalog padding); answers with its own name.".to_owned()
        };
        tool(&gen_name(i), &description, &[])
    }));
    tools.extend((0..added).map(|i| {
        tool(
            &added_name(i),
            "A tool registered at run time by add_tool; answers with its own name.",
            &[],
        )
    }));
    tools
}

/// URI of text resource `i`.
pub fn resource_uri(i: usize) -> String {
    format!("fixture://res/{i:04}")
}

/// The text resources.
pub fn all_resources(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json!({"uri": resource_uri(i), "name": format!("res-{i:04}"), "mimeType": "text/plain"})
        })
        .collect()
}

/// The resource templates: `fixture://item/{id}`, then `fixture://big/{bytes}`.
pub fn all_templates() -> Vec<Value> {
    vec![
        json!({
            "uriTemplate": "fixture://item/{id}",
            "name": "item",
            "description": "Any item id; reads as \"item {id}\".",
            "mimeType": "text/plain"
        }),
        json!({
            "uriTemplate": "fixture://big/{bytes}",
            "name": "big",
            "description": "Reads as one text content of exactly `bytes` 'x' characters (`bytes` in plain decimal: no sign, no leading zeros).",
            "mimeType": "text/plain"
        }),
    ]
}

/// The prompts: `greet`, then `big_prompt`.
pub fn all_prompts() -> Vec<Value> {
    vec![
        json!({
            "name": "greet",
            "description": "Greets someone by name.",
            "arguments": [{"name": "name", "description": "Who to greet", "required": true}]
        }),
        json!({
            "name": "big_prompt",
            "description": "One user message whose text is exactly `bytes` 'x' characters.",
            "arguments": [{"name": "bytes", "description": "How many 'x' characters (a decimal string, or an integer)", "required": true}]
        }),
    ]
}

/// `prompts/get`: the prompt `name` rendered with `args` (without era shaping). Unknown
/// prompts and missing or invalid arguments are `-32602`.
///
/// - `greet` (`name`): one user message "Hello, {name}".
/// - `big_prompt` (`bytes`): one user message of exactly `bytes` 'x' characters. Prompt
///   arguments are strings in MCP, so `bytes` is a decimal string; a JSON integer is accepted
///   too.
pub fn get_prompt(name: &str, args: &Value) -> Result<Value, RpcError> {
    let missing = |arg: &str| RpcError::invalid_params(format!("Missing required argument: {arg}"));
    let message = |text: String| json!({"role": "user", "content": {"type": "text", "text": text}});
    match name {
        "greet" => {
            let who = args
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| missing("name"))?;
            Ok(json!({"description": "A greeting", "messages": [message(format!("Hello, {who}"))]}))
        }
        "big_prompt" => {
            let bytes = match args.get("bytes") {
                None | Some(Value::Null) => return Err(missing("bytes")),
                Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
                Some(v) => v.as_u64(),
            }
            .ok_or_else(|| {
                RpcError::invalid_params("Argument `bytes` must be a non-negative integer")
            })?;
            let text = bulk::xs_string(bytes)
                .ok_or_else(|| RpcError::invalid_params("Argument `bytes` is too large"))?;
            Ok(
                json!({"description": format!("{bytes} 'x' characters"), "messages": [message(text)]}),
            )
        }
        _ => Err(RpcError::invalid_params(format!("Unknown prompt: {name}"))),
    }
}

/// Text of a readable resource URI (`fixture://res/NNNN` within range, `fixture://item/ID`, or
/// `fixture://big/N`: N 'x' characters, N in plain decimal).
pub fn read_resource(uri: &str, resources: usize) -> Option<String> {
    if let Some(rest) = uri.strip_prefix("fixture://res/") {
        let i: usize = rest.parse().ok()?;
        return (i < resources && resource_uri(i) == uri).then(|| format!("resource {rest}"));
    }
    if let Some(id) = uri.strip_prefix("fixture://item/") {
        return (!id.is_empty()).then(|| format!("item {id}"));
    }
    if let Some(rest) = uri.strip_prefix("fixture://big/") {
        let n: u64 = rest.parse().ok()?;
        return (n.to_string() == rest)
            .then(|| bulk::xs_string(n))
            .flatten();
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn varied_descriptions_span_ten_bytes_to_twenty_kilobytes() {
        let tools = all_tools(537, 0, true);
        let lens: Vec<usize> = tools[16..]
            .iter()
            .map(|t| t["description"].as_str().unwrap().len())
            .collect();
        assert_eq!(lens[0], 10);
        assert!(*lens.iter().max().unwrap() > 19_000);
        assert!(lens.iter().all(|l| (10..=20_000).contains(l)));
        assert_eq!(lens[5], varied_description_len(5));
    }

    #[test]
    fn tool_order_is_fixed_then_generated_then_added() {
        let names: Vec<String> = all_tools(2, 1, false)
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        let expected = [
            "echo",
            "lossless",
            "crash",
            "hang",
            "garbage",
            "progress",
            "sample",
            "add_tool",
            "big",
            "slow",
            "header_echo",
            "read_big",
            "reflect",
            "huge_read",
            "huge_write",
            "elicit",
            "gen_0000",
            "gen_0001",
            "added_0",
        ];
        assert_eq!(names, expected);
        assert!(
            all_tools(0, 0, false)
                .iter()
                .all(|t| t["inputSchema"]["type"] == "object")
        );
    }

    #[test]
    fn echo_output_schema_is_declared_only_when_asked() {
        let mut tools = all_tools(0, 0, false);
        let plain = tools[0].clone();
        assert!(plain.get("outputSchema").is_none() && plain.get("annotations").is_none());
        declare_echo_output_schema(&mut tools);
        assert_eq!(tools[0]["outputSchema"], echo_output_schema());
        assert_eq!(tools[0]["annotations"], json!({"readOnlyHint": true}));
        assert_eq!(tools[1..], all_tools(0, 0, false)[1..], "only echo changes");
        assert_eq!(fixed_tool_count(), 16);
    }

    #[test]
    fn resources_read_by_uri() {
        assert_eq!(
            read_resource("fixture://res/0002", 3).as_deref(),
            Some("resource 0002")
        );
        assert_eq!(read_resource("fixture://res/0003", 3), None);
        assert_eq!(read_resource("fixture://res/2", 3), None);
        assert_eq!(
            read_resource("fixture://item/abc", 0).as_deref(),
            Some("item abc")
        );
        assert_eq!(read_resource("file:///etc/passwd", 3), None);
    }

    #[test]
    fn big_template_reads_exactly_n_xs() {
        let templates = all_templates();
        let uris: Vec<&str> = templates
            .iter()
            .map(|t| t["uriTemplate"].as_str().unwrap())
            .collect();
        assert_eq!(uris, ["fixture://item/{id}", "fixture://big/{bytes}"]);
        for n in [0, 1, 65_536, 200_001] {
            let text = read_resource(&format!("fixture://big/{n}"), 0).unwrap();
            assert_eq!(text.len(), n);
            assert!(text.bytes().all(|b| b == b'x'));
        }
        for bad in ["", "-1", "+1", "007", "1e3", "x", "99999999999999999999999"] {
            assert_eq!(
                read_resource(&format!("fixture://big/{bad}"), 0),
                None,
                "{bad}"
            );
        }
    }

    #[test]
    fn prompts_greet_and_big() {
        let names: Vec<Value> = all_prompts().iter().map(|p| p["name"].clone()).collect();
        assert_eq!(names, [json!("greet"), json!("big_prompt")]);
        let text = |r: &Value| {
            r["messages"][0]["content"]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        let greet = get_prompt("greet", &json!({"name": "Ada"})).unwrap();
        assert_eq!(text(&greet), "Hello, Ada");
        for args in [json!({"bytes": "70000"}), json!({"bytes": 70_000})] {
            let big = get_prompt("big_prompt", &args).unwrap();
            let messages = big["messages"].as_array().unwrap();
            assert_eq!(messages.len(), 1);
            assert_eq!(messages[0]["role"], "user");
            assert_eq!(messages[0]["content"]["type"], "text");
            let t = text(&big);
            assert_eq!(t.len(), 70_000);
            assert!(t.bytes().all(|b| b == b'x'));
        }
        assert_eq!(
            text(&get_prompt("big_prompt", &json!({"bytes": "0"})).unwrap()),
            ""
        );
        for bad in [
            json!({}),
            json!({"bytes": "-1"}),
            json!({"bytes": "ten"}),
            json!({"bytes": 1.5}),
        ] {
            let err = get_prompt("big_prompt", &bad).err().unwrap();
            assert_eq!(err.code, -32602, "{bad}");
        }
        assert_eq!(get_prompt("nope", &json!({})).err().unwrap().code, -32602);
    }

    #[test]
    fn read_budget_tools_are_annotated() {
        let tools = all_tools(0, 0, false);
        assert_eq!(tools.len(), 16);
        let annotations = |name: &str| {
            let tool = tools.iter().find(|t| t["name"] == name).unwrap();
            tool.get("annotations").cloned()
        };
        let read_only = json!({"readOnlyHint": true});
        for name in ["read_big", "reflect", "huge_read"] {
            assert_eq!(annotations(name).as_ref(), Some(&read_only), "{name}");
        }
        let destructive = annotations("huge_write").unwrap();
        assert_eq!(
            destructive.to_string(),
            r#"{"destructiveHint":true,"readOnlyHint":false}"#
        );
        assert_eq!(annotations("big"), None, "big stays mutation-capable");
    }
}
