//! A client's large request, read without a tree of what sluice does not
//! read.
//!
//! A `serde_json::Value` costs tens of bytes a value, so a request whose
//! params are a million tiny objects would take a hundred times its size as
//! a tree (the same reason as [`crate::payload`], on the other side). A
//! message of [`CARRIED_AS_TEXT_FROM`] bytes and more is therefore read by
//! its envelope, and its params member by member: the members sluice reads
//! (a method's own params, and in `_meta` the protocol's keys, the progress
//! token and the trace context) become the request's tree, the rest stay as
//! their text. A `tools/call`'s `arguments` is read as `{}` with every
//! argument kept as text (the `Mcp-Param-*` headers read the few they name
//! from it, [`argument`]); a `prompts/get`'s arguments that are
//! not strings are read as `null`, so that the call is refused as for any
//! argument that is not a string.
//!
//! [`Carried`] is what was left as text and where it goes back: writing
//! the params for an upstream ([`Carried::write_params`]) puts every
//! carried member back in its place, whatever sluice changed in the tree,
//! so nothing the client sent is lost and key order is kept. sluice only
//! ever adds, changes or removes members it reads, so a carried member
//! never meets a twin. A carried member is checked to be JSON, not decoded:
//! a string with an escaped lone surrogate (`"\ud800"`), which decoding
//! refuses in a small message, goes on as the client sent it.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::headers;
use crate::jsonrpc::{self, EnvelopeError, MAX_ID_BYTES, Message};
use crate::method::Method;
use crate::payload::{self, CARRIED_AS_TEXT_FROM};
use crate::progressive;
use crate::trace_context;

/// The params members sluice reads, for any method (MCP 2025-06-18 to
/// 2026-07-28 requests and notifications); the rest of a large request's
/// params are carried.
const READ_PARAMS: &[&str] = &[
    "_meta",
    "name",
    "arguments",
    "uri",
    "cursor",
    "ref",
    "argument",
    "context",
    "level",
    "protocolVersion",
    "capabilities",
    "clientInfo",
    "task",
    "taskId",
    "requestId",
    "reason",
    "progressToken",
    "progress",
    "total",
    "message",
    "inputResponses",
    "requestState",
    "notifications",
];

/// Whether sluice reads the `_meta` key `key`: the protocol's own
/// (`io.modelcontextprotocol/...`), the progress token, the trace context.
fn reads_meta(key: &str) -> bool {
    key.starts_with("io.modelcontextprotocol/")
        || key == "progressToken"
        || key == trace_context::TRACEPARENT
        || key == trace_context::TRACESTATE
}

/// A client's message, and what was not read of it.
#[derive(Debug)]
pub struct ClientMessage {
    /// The message, with the members sluice reads.
    pub message: Message,
    /// What its params left as text, when anything was.
    pub carried: Option<Arc<Carried>>,
}

/// What a large request's params left as text, and where each part goes.
#[derive(Debug, PartialEq)]
pub struct Carried {
    /// The message's text as the client sent it (the layout's ranges are
    /// in it).
    text: Box<str>,
    layout: Layout,
}

/// The members of one object of the params, in the client's order.
#[derive(Debug, Default, PartialEq)]
struct Layout(Vec<Segment>);

#[derive(Debug, PartialEq)]
enum Segment {
    /// A member in the tree (at its first place, when repeated).
    Read {
        key: String,
        /// Where its value's text is.
        value: Range<usize>,
        /// How the object it holds was read, when part of it is carried.
        inner: Option<Layout>,
    },
    /// Members next to each other that stay text: `"k":v,"k2":v2`, from
    /// the end of the member before them (so the range may start with
    /// whitespace and a comma).
    Carried(Range<usize>),
}

/// Reads a client's message; a parse failure is `None`. A message under
/// [`CARRIED_AS_TEXT_FROM`] bytes is parsed whole ([`Message::parse`]).
pub fn read(bytes: &[u8]) -> Option<Result<ClientMessage, EnvelopeError>> {
    read_carrying_from(bytes, CARRIED_AS_TEXT_FROM)
}

/// [`read`] of a message the caller owns: a large one is kept as it is,
/// not copied, for what it carries.
pub fn read_owned(bytes: Vec<u8>) -> Option<Result<ClientMessage, EnvelopeError>> {
    if bytes.len() < CARRIED_AS_TEXT_FROM {
        return read_whole(&bytes);
    }
    // JSON is UTF-8 throughout, also in the members skipped unread.
    read_large(String::from_utf8(bytes).ok()?)
}

/// [`read`], carrying what is not read of a message of `carry_from` bytes
/// and more (the fuzz harness reads small messages so).
pub fn read_carrying_from(
    bytes: &[u8],
    carry_from: usize,
) -> Option<Result<ClientMessage, EnvelopeError>> {
    if bytes.len() < carry_from {
        return read_whole(bytes);
    }
    read_large(std::str::from_utf8(bytes).ok()?.to_owned())
}

fn read_whole(bytes: &[u8]) -> Option<Result<ClientMessage, EnvelopeError>> {
    Message::parse(bytes).map(|m| {
        m.map(|message| ClientMessage {
            message,
            carried: None,
        })
    })
}

fn read_large(text: String) -> Option<Result<ClientMessage, EnvelopeError>> {
    let (message, layout) = match read_envelope(&text)? {
        Ok(read) => read,
        Err(e) => return Some(Err(e)),
    };
    let carried = layout.map(|layout| {
        Arc::new(Carried {
            text: text.into_boxed_str(),
            layout,
        })
    });
    Some(Ok(ClientMessage { message, carried }))
}

/// The message in `text`, and the layout of its params when part of them
/// stayed text.
fn read_envelope(text: &str) -> Option<Result<(Message, Option<Layout>), EnvelopeError>> {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        jsonrpc: Option<&'a RawValue>,
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        #[serde(borrow)]
        method: Option<&'a RawValue>,
        #[serde(borrow)]
        params: Option<&'a RawValue>,
    }
    let envelope: Envelope<'_> = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(e) if e.is_data() => {
            let batch = text.trim_ascii_start().starts_with('[');
            return Some(Err(if batch {
                EnvelopeError::Batch
            } else {
                EnvelopeError::NotJsonRpc
            }));
        }
        Err(_) => return None,
    };
    let Some(method) = envelope.method else {
        // A response (a client's answer to a question): read whole.
        return Message::parse(text.as_bytes()).map(|m| m.map(|message| (message, None)));
    };
    let base = text.as_ptr() as usize;
    Some(classify(
        envelope.jsonrpc,
        envelope.id,
        method,
        envelope.params.map(|params| (params, base)),
    ))
}

fn classify(
    version: Option<&RawValue>,
    id: Option<&RawValue>,
    method: &RawValue,
    params: Option<(&RawValue, usize)>,
) -> Result<(Message, Option<Layout>), EnvelopeError> {
    if version.map(RawValue::get) != Some("\"2.0\"") {
        return Err(EnvelopeError::NotJsonRpc);
    }
    let id = match id {
        None => None,
        Some(id) if id.get().len() > MAX_ID_BYTES => return Err(EnvelopeError::BadId),
        Some(id) => {
            let id: Value = serde_json::from_str(id.get()).map_err(|_| EnvelopeError::BadId)?;
            if !jsonrpc::is_valid_id(&id) {
                return Err(EnvelopeError::BadId);
            }
            Some(id)
        }
    };
    let method: String =
        serde_json::from_str(method.get()).map_err(|_| EnvelopeError::NotJsonRpc)?;
    let (params, layout) = match params {
        None => (Value::Null, None),
        Some((raw, _)) if raw.get() == "null" => (Value::Null, None),
        Some((raw, base)) if raw.get().starts_with('{') => {
            read_params(raw, base, Method::parse(&method)).ok_or(EnvelopeError::BadParams)?
        }
        Some(_) => return Err(EnvelopeError::BadParams),
    };
    let message = match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method, params },
    };
    Ok((message, layout))
}

/// The params' tree, and their layout when part of them stayed text
/// (`None` when nothing did). `base` is where the message's text starts:
/// the layout's ranges are in it.
fn read_params(raw: &RawValue, base: usize, method: Method) -> Option<(Value, Option<Layout>)> {
    let span = |value: &RawValue| {
        let start = value.get().as_ptr() as usize - base;
        start..start + value.get().len()
    };
    // How the arguments are read: a tool's all carried, a prompt's (which
    // must all be strings) carried but for those that are not, a
    // meta-tool's of progressive mode (which reads them) parsed.
    let arguments = match method {
        Method::CallTool if !names_meta_tool(raw) => Some(Keep::Nothing),
        Method::GetPrompt => Some(Keep::NonStrings),
        _ => None,
    };
    let mut tree = Map::new();
    let mut layout = Layout::default();
    let mut carries = false;
    let mut walk = Walk {
        prev_end: span(raw).start + 1,
        run: None,
    };
    payload::each_field(raw, |key, value| {
        let range = span(value);
        if !READ_PARAMS.contains(&key.as_ref()) {
            walk.carry(range);
            carries = true;
            return Ok(());
        }
        walk.flush(&mut layout);
        let object = value.get().starts_with('{');
        let (read, inner) = match (key.as_ref(), arguments) {
            ("_meta", _) if object => read_object(value, &span, reads_meta, Keep::Nothing)?,
            ("arguments", Some(keep)) if object => read_object(value, &span, |_| false, keep)?,
            _ => (serde_json::from_str(value.get())?, Layout::default()),
        };
        carries |= inner.carries();
        walk.prev_end = range.end;
        layout.read(key.clone(), range, inner);
        tree.insert(key.into_owned(), read);
        Ok(())
    })
    .ok()?;
    walk.flush(&mut layout);
    Some((Value::Object(tree), carries.then_some(layout)))
}

/// Whether a call's params name a meta-tool of progressive mode.
fn names_meta_tool(raw: &RawValue) -> bool {
    let mut name = None;
    let _ = payload::each_field(raw, |key, value| {
        if key == "name" {
            name = serde_json::from_str::<String>(value.get()).ok();
        }
        Ok(())
    });
    name.as_deref().is_some_and(progressive::is_meta_tool)
}

/// What an object's carried members leave in the tree.
#[derive(Clone, Copy)]
enum Keep {
    /// Nothing.
    Nothing,
    /// A `null` in place of each member that is not a string (so that a
    /// prompt's arguments are refused as they would be read whole).
    NonStrings,
}

/// The walk over one object's members: where the run of carried members
/// being gathered starts and ends.
struct Walk {
    /// Where the member before the next one ends (the `{`, at first).
    prev_end: usize,
    run: Option<Range<usize>>,
}

impl Walk {
    fn carry(&mut self, value: Range<usize>) {
        let start = self.run.take().map_or(self.prev_end, |run| run.start);
        self.run = Some(start..value.end);
        self.prev_end = value.end;
    }

    fn flush(&mut self, layout: &mut Layout) {
        if let Some(run) = self.run.take() {
            layout.0.push(Segment::Carried(run));
        }
    }
}

/// Reads the object `raw`: the members `reads` names become its tree, the
/// rest stay text.
fn read_object(
    raw: &RawValue,
    span: &impl Fn(&RawValue) -> Range<usize>,
    reads: impl Fn(&str) -> bool,
    keep: Keep,
) -> Result<(Value, Layout), serde_json::Error> {
    let mut tree = Map::new();
    let mut layout = Layout::default();
    let mut walk = Walk {
        prev_end: span(raw).start + 1,
        run: None,
    };
    payload::each_field(raw, |key, value| {
        let range = span(value);
        let refused = matches!(keep, Keep::NonStrings) && !value.get().starts_with('"');
        if !reads(&key) && !refused {
            walk.carry(range);
            return Ok(());
        }
        walk.flush(&mut layout);
        let read = if refused {
            Value::Null
        } else {
            serde_json::from_str(value.get())?
        };
        layout.read(key.clone(), range.clone(), Layout::default());
        tree.insert(key.into_owned(), read);
        walk.prev_end = range.end;
        Ok(())
    })?;
    walk.flush(&mut layout);
    Ok((Value::Object(tree), layout))
}

// === impl Layout ===

impl Layout {
    fn carries(&self) -> bool {
        self.0.iter().any(|s| matches!(s, Segment::Carried(_)))
    }

    /// Records a read member; a repeated one keeps its first place and its
    /// last value, as a tree does.
    fn read(&mut self, key: Cow<'_, str>, value: Range<usize>, inner: Layout) {
        let inner = inner.carries().then_some(inner);
        for segment in &mut self.0 {
            if let Segment::Read {
                key: k,
                value: v,
                inner: i,
            } = segment
                && *k == key
            {
                *v = value;
                *i = inner;
                return;
            }
        }
        self.0.push(Segment::Read {
            key: key.into_owned(),
            value,
            inner,
        });
    }

    fn reads(&self, key: &str) -> bool {
        self.0
            .iter()
            .any(|s| matches!(s, Segment::Read { key: k, .. } if k == key))
    }
}

// === impl Carried ===

impl Carried {
    /// The params for the upstream: `tree` (the params sluice read, as it
    /// changed them), with every carried member back in its place.
    pub fn write_params(&self, tree: &Value, out: &mut Vec<u8>) {
        write_object(out, tree.as_object(), &self.layout, &self.text);
    }

    /// The request `tree` stands for, whole, as a tree: for what must
    /// digest everything the client sent (an MRTR round's binding).
    pub fn whole(&self, tree: &Value) -> Value {
        let mut out = Vec::with_capacity(self.text.len());
        self.write_params(tree, &mut out);
        serde_json::from_slice(&out).unwrap_or(Value::Null)
    }

    /// The text of the call's `arguments`, when they were carried.
    fn arguments_text(&self) -> Option<&str> {
        self.layout.0.iter().find_map(|s| match s {
            Segment::Read {
                key,
                value,
                inner: Some(_),
            } if key == "arguments" => self.text.get(value.clone()),
            _ => None,
        })
    }
}

/// The value at `path` in a call's `arguments` that a header can carry
/// ([`headers::argument_at`]): read from their text when they were
/// carried, else from the tree.
pub fn argument(params: &Value, carried: Option<&Carried>, path: &[String]) -> Option<Value> {
    let Some(text) = carried.and_then(Carried::arguments_text) else {
        return headers::argument_at(params.get("arguments")?, path);
    };
    let mut raw: &RawValue = serde_json::from_str(text).ok()?;
    for key in path {
        let mut found = None;
        payload::each_field(raw, |k, v| {
            if k == key.as_str() {
                found = Some(v);
            }
            Ok(())
        })
        .ok()?;
        raw = found?;
    }
    if raw.get().starts_with(['{', '[']) {
        return None;
    }
    serde_json::from_str(raw.get()).ok()
}

fn write_object(out: &mut Vec<u8>, tree: Option<&Map<String, Value>>, layout: &Layout, text: &str) {
    out.push(b'{');
    let mut first = true;
    let mut separate = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    for segment in &layout.0 {
        match segment {
            Segment::Read { key, inner, .. } => {
                let value = tree.and_then(|t| t.get(key));
                match (value, inner) {
                    (Some(Value::Object(read)), Some(inner)) => {
                        separate(out);
                        write_key(out, key);
                        write_object(out, Some(read), inner, text);
                    }
                    (Some(value), _) => {
                        separate(out);
                        write_key(out, key);
                        write_value(out, value);
                    }
                    // sluice removed the member: what it did not read of
                    // it stays.
                    (None, Some(inner)) => {
                        separate(out);
                        write_key(out, key);
                        write_object(out, None, inner, text);
                    }
                    (None, None) => {}
                }
            }
            Segment::Carried(run) => {
                let members = text
                    .get(run.clone())
                    .unwrap_or_default()
                    .trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
                separate(out);
                out.extend_from_slice(members.as_bytes());
            }
        }
    }
    // Members sluice added.
    for (key, value) in tree.into_iter().flatten() {
        if !layout.reads(key) {
            separate(out);
            write_key(out, key);
            write_value(out, value);
        }
    }
    out.push(b'}');
}

fn write_key(out: &mut Vec<u8>, key: &str) {
    write_value(out, &Value::from(key));
    out.push(b':');
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    // Writing a `Value` to memory cannot fail: its keys are strings.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// A JSON-RPC request's text: `params` (with `carried` put back, when
/// given) under `id` and `method`.
pub fn request_text(
    id: &Value,
    method: &str,
    params: &Value,
    carried: Option<&Carried>,
) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Request<'a> {
        jsonrpc: &'a str,
        id: &'a Value,
        method: &'a str,
        #[serde(skip_serializing_if = "Value::is_null")]
        params: &'a Value,
    }
    let Some(carried) = carried else {
        let request = Request {
            jsonrpc: "2.0",
            id,
            method,
            params,
        };
        return serde_json::to_vec(&request).unwrap_or_default();
    };
    let mut out = Vec::with_capacity(carried.text.len() + method.len() + 64);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write_value(&mut out, id);
    out.extend_from_slice(br#","method":"#);
    write_value(&mut out, &Value::from(method));
    out.extend_from_slice(br#","params":"#);
    carried.write_params(params, &mut out);
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests;
