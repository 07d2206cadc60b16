//! The fixture's catalog (tools, resources, resource templates, prompts) and list pagination,
//! including the deliberately broken cursor modes.

use serde_json::{Value, json};

use crate::CursorMode;
use crate::bulk;
use crate::protocol::RpcError;

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
fn tool(name: &str, description: &str, props: &[(&str, &str)]) -> Value {
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

/// Encodes a list offset as an opaque cursor.
fn encode(offset: usize) -> String {
    format!("fx1.{offset:x}")
}

/// Decodes an opaque cursor; `None` if it was not one of ours.
fn decode(cursor: &str) -> Option<usize> {
    usize::from_str_radix(cursor.strip_prefix("fx1.")?, 16).ok()
}

/// How list cursors spell an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorEncoding {
    /// Opaque strings (`fx1.<hex>`), the default.
    Opaque,
    /// Plain decimal offsets (`"4"`, `"8"`, ...): `--violate raw-cursor`.
    RawOffset,
}

impl CursorEncoding {
    fn encode(self, offset: usize) -> String {
        match self {
            CursorEncoding::Opaque => encode(offset),
            CursorEncoding::RawOffset => offset.to_string(),
        }
    }

    fn decode(self, cursor: &str) -> Option<usize> {
        match self {
            CursorEncoding::Opaque => decode(cursor),
            // Canonical decimal only, so that `"04"` is not another spelling of `"4"`.
            CursorEncoding::RawOffset => cursor
                .parse::<usize>()
                .ok()
                .filter(|n| n.to_string() == cursor),
        }
    }
}

/// One page of a list: its items and the `nextCursor` to report (`None` = last page).
pub struct Page {
    pub items: Vec<Value>,
    pub next: Option<Value>,
    /// Which page this is (1-based), derived from the cursor rather than from a request count,
    /// so that page faults (`--fail-page`, ...) hit every walk of the list at the same page.
    pub number: usize,
}

/// [`paginate_with`] with opaque cursors (what the tests below mostly need).
#[cfg(test)]
pub fn paginate(
    items: &[Value],
    cursor: Option<&Value>,
    page_size: Option<usize>,
    mode: CursorMode,
    cycle_length: usize,
) -> Result<Page, RpcError> {
    paginate_with(
        items,
        cursor,
        page_size,
        mode,
        cycle_length,
        CursorEncoding::Opaque,
    )
}

/// Cuts `items` into the page selected by `cursor`, behaving as `mode` says (`cycle_length` is
/// only used by [`CursorMode::Cycle`]), with cursors spelled as `encoding` says.
///
/// Without a page size everything is one page (and any cursor is ignored). An unknown cursor is
/// `-32602 Invalid cursor`.
pub fn paginate_with(
    items: &[Value],
    cursor: Option<&Value>,
    page_size: Option<usize>,
    mode: CursorMode,
    cycle_length: usize,
    encoding: CursorEncoding,
) -> Result<Page, RpcError> {
    let encode = |offset: usize| encoding.encode(offset);
    let decode = |cursor: &str| encoding.decode(cursor);
    let Some(size) = page_size else {
        return Ok(Page {
            items: items.to_vec(),
            next: None,
            number: 1,
        });
    };
    let len = items.len();
    let invalid = || RpcError::invalid_params("Invalid cursor");
    let offset = match (cursor, mode) {
        (None | Some(Value::Null), _) => 0,
        // The empty string is a valid cursor in this mode: it is page 1's nextCursor.
        (Some(Value::String(s)), CursorMode::EmptyString) if s.is_empty() => size.min(len),
        (Some(Value::Number(n)), CursorMode::NonString) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(invalid)?,
        (Some(Value::String(s)), _) => decode(s).ok_or_else(invalid)?,
        (Some(_), _) => return Err(invalid()),
    };
    if offset > len {
        return Err(invalid());
    }
    let end = (offset + size).min(len);
    let page_index = offset / size;
    let normal_next = (end < len).then_some(end);
    let next = match mode {
        CursorMode::Normal => normal_next.map(|o| Value::String(encode(o))),
        CursorMode::Repeat => Some(Value::String(encode(size.min(len)))),
        // Page L+1 (index L) leads back to page 2: a cycle of L pages.
        CursorMode::Cycle if page_index == cycle_length => {
            Some(Value::String(encode(size.min(len))))
        }
        CursorMode::Cycle => normal_next.map(|o| Value::String(encode(o))),
        CursorMode::EmptyString if offset == 0 && cursor.is_none_or(Value::is_null) => {
            normal_next.map(|_| Value::String(String::new()))
        }
        CursorMode::EmptyString => normal_next.map(|o| Value::String(encode(o))),
        CursorMode::NonString => normal_next.map(|o| json!(o)),
    };
    let items = items[offset..end].to_vec();
    Ok(Page {
        items,
        next,
        number: page_index + 1,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn items(n: usize) -> Vec<Value> {
        (0..n).map(|i| json!(i)).collect()
    }

    fn drain(n: usize, size: usize, mode: CursorMode, max_pages: usize) -> (usize, Vec<Value>) {
        let mut cursor: Option<Value> = None;
        let mut seen = Vec::new();
        for pages in 1..=max_pages {
            let page = paginate(&items(n), cursor.as_ref(), Some(size), mode, 2).unwrap();
            seen.extend(page.items);
            match page.next {
                None => return (pages, seen),
                Some(c) => cursor = Some(c),
            }
        }
        (max_pages, seen)
    }

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
    fn normal_drains_everything_once() {
        let (pages, seen) = drain(23, 5, CursorMode::Normal, 100);
        assert_eq!(pages, 5);
        assert_eq!(seen, items(23));
    }

    #[test]
    fn exact_multiple_has_no_empty_last_page() {
        let (pages, seen) = drain(10, 5, CursorMode::Normal, 100);
        assert_eq!(pages, 2);
        assert_eq!(seen.len(), 10);
    }

    #[test]
    fn no_page_size_is_one_page() {
        let page = paginate(&items(7), None, None, CursorMode::Normal, 2).unwrap();
        assert_eq!(page.items.len(), 7);
        assert!(page.next.is_none());
    }

    #[test]
    fn empty_string_mode_is_complete() {
        let first = paginate(&items(12), None, Some(5), CursorMode::EmptyString, 2).unwrap();
        assert_eq!(first.next, Some(json!("")));
        let (pages, seen) = drain(12, 5, CursorMode::EmptyString, 100);
        assert_eq!(pages, 3);
        assert_eq!(seen, items(12));
    }

    #[test]
    fn repeat_and_cycle_never_end() {
        assert_eq!(drain(30, 5, CursorMode::Repeat, 50).0, 50);
        assert_eq!(drain(30, 5, CursorMode::Cycle, 50).0, 50);
    }

    /// The `nextCursor`s of the first `n` pages of 30 items in pages of 5, with their numbers.
    fn cycle_cursors(cycle_length: usize, n: usize) -> Vec<(usize, Value)> {
        let mut cursor: Option<Value> = None;
        let mut seen = Vec::new();
        for _ in 0..n {
            let page = paginate(
                &items(30),
                cursor.as_ref(),
                Some(5),
                CursorMode::Cycle,
                cycle_length,
            )
            .unwrap();
            cursor = page.next;
            seen.push((page.number, cursor.clone().unwrap()));
        }
        seen
    }

    #[test]
    fn cycle_length_sets_the_cycle() {
        let c = |page: usize| json!(encode((page - 1) * 5));
        // Default: page 3 returns page 1's cursor (c2), as before --cycle-length existed.
        let two = [(1, c(2)), (2, c(3)), (3, c(2)), (2, c(3)), (3, c(2))];
        assert_eq!(cycle_cursors(2, 5), two);
        let three = [(1, c(2)), (2, c(3)), (3, c(4)), (4, c(2)), (2, c(3))];
        assert_eq!(cycle_cursors(3, 5), three);
    }

    #[test]
    fn page_numbers_follow_the_cursor() {
        let page = |cursor: Value| {
            paginate(&items(12), Some(&cursor), Some(5), CursorMode::Normal, 2)
                .unwrap()
                .number
        };
        assert_eq!(page(json!(encode(5))), 2);
        assert_eq!(page(json!(encode(10))), 3);
        assert_eq!(page(Value::Null), 1);
    }

    #[test]
    fn raw_offset_cursors_are_plain_decimals() {
        let page = |cursor: Option<Value>, encoding| {
            paginate_with(
                &items(12),
                cursor.as_ref(),
                Some(5),
                CursorMode::Normal,
                2,
                encoding,
            )
        };
        let first = page(None, CursorEncoding::RawOffset).unwrap();
        assert_eq!(first.next, Some(json!("5")));
        let second = page(first.next, CursorEncoding::RawOffset).unwrap();
        assert_eq!((second.number, second.next), (2, Some(json!("10"))));
        let last = page(Some(json!("10")), CursorEncoding::RawOffset).unwrap();
        assert_eq!((last.items.len(), last.next), (2, None));
        for bad in ["05", "fx1.5", "-5", "13"] {
            let err = page(Some(json!(bad)), CursorEncoding::RawOffset).err();
            assert_eq!(err.map(|e| e.code), Some(-32602), "{bad}");
        }
        // The default stays opaque, and does not take raw offsets.
        let opaque = page(None, CursorEncoding::Opaque).unwrap();
        assert_eq!(opaque.next, Some(json!(encode(5))));
        assert!(page(Some(json!("5")), CursorEncoding::Opaque).is_err());
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
    fn bad_cursors_are_invalid_params() {
        for bad in [json!("nope"), json!(""), json!(3), json!("fx1.ff")] {
            let err = paginate(&items(10), Some(&bad), Some(5), CursorMode::Normal, 2)
                .err()
                .unwrap();
            assert_eq!(err.code, -32602, "cursor {bad}");
        }
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
