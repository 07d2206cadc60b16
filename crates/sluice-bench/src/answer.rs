//! Reading answers cheaply: the id, and whether the call failed.
//!
//! A load generator needs two facts from each answer: which request it answers (`id`) and
//! whether it is a failure (`error`, or a result with `"isError": true`). [`parse`]
//! deserializes a small struct that skips everything else with [`IgnoredAny`]: the tool's
//! content is scanned, never built into a `serde_json::Value` or copied into `String`s.
//!
//! Over HTTP an answer may come as `text/event-stream`; [`SseScanner`] takes the body chunk by
//! chunk and hands back the `data:` event that carries the awaited id (notifications and
//! comments on the stream are skipped).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, Visitor};

/// What an answer says about its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The JSON-RPC id it answers.
    pub id: u64,
    /// `true` for a result that is not `"isError": true`; `false` for a JSON-RPC error, a
    /// tool error, or a response with neither `result` nor `error`.
    pub ok: bool,
}

/// A JSON-RPC id, read only if it is a non-negative integer (the only ids this client sends).
struct Id(u64);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative integer id")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                u64::try_from(v)
                    .map(Id)
                    .map_err(|_| E::custom("negative id"))
            }
        }
        // Not `deserialize_any`: with serde_json's `arbitrary_precision` a number would then
        // arrive as a map holding its digits.
        d.deserialize_u64(V)
    }
}

/// The top-level fields of a `result` this client looks at.
#[derive(Deserialize)]
struct ResultHead {
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
}

/// A JSON-RPC message from the server, reduced to what matters here.
#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    id: Option<Id>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default)]
    result: Option<ResultHead>,
}

/// Reads one JSON-RPC message. `None` for anything that is not a response to one of this
/// client's requests: invalid JSON, a notification, a server-to-client request, a response
/// whose id is null or not an integer.
pub fn parse(bytes: &[u8]) -> Option<Answer> {
    let wire: Wire = serde_json::from_slice(bytes).ok()?;
    if wire.method.is_some() {
        return None;
    }
    let id = wire.id?.0;
    let ok = wire.error.is_none() && wire.result.is_some_and(|r| !r.is_error.unwrap_or(false));
    Some(Answer { id, ok })
}

/// Finds the answer with a given id in an SSE body fed chunk by chunk.
#[derive(Debug, Default)]
pub struct SseScanner {
    /// Bytes received and not yet consumed as complete lines.
    pending: Vec<u8>,
    /// The `data` of the event being read (lines joined with `\n`).
    data: Vec<u8>,
    /// Whether the event being read has any `data:` line.
    has_data: bool,
}

impl SseScanner {
    /// Forgets any previous body (keeping the buffers' capacity).
    pub fn reset(&mut self) {
        self.pending.clear();
        self.data.clear();
        self.has_data = false;
    }

    /// Feeds a chunk; returns the answer to `id` once its event is complete.
    pub fn push(&mut self, chunk: &[u8], id: u64) -> Option<Answer> {
        self.pending.extend_from_slice(chunk);
        let mut start = 0;
        let mut found = None;
        while let Some(nl) = memchr(b'\n', &self.pending[start..]) {
            let end = start + nl;
            let line = &self.pending[start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            start = end + 1;
            if line.is_empty() {
                if let Some(answer) = self.dispatch(id) {
                    found = Some(answer);
                    break;
                }
            } else if let Some(value) = line.strip_prefix(b"data:") {
                let value = value.strip_prefix(b" ").unwrap_or(value);
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            // `id:`, `event:`, `retry:` and `:` comments do not matter here.
        }
        self.pending.drain(..start);
        found
    }

    /// The end of the body: an unterminated last event still counts.
    pub fn finish(&mut self, id: u64) -> Option<Answer> {
        if !self.pending.is_empty()
            && let Some(answer) = self.push(b"\n", id)
        {
            return Some(answer);
        }
        self.dispatch(id)
    }

    /// Ends the current event; returns its answer if it is the one awaited.
    fn dispatch(&mut self, id: u64) -> Option<Answer> {
        let answer = if self.has_data {
            parse(&self.data).filter(|a| a.id == id)
        } else {
            None
        };
        self.data.clear();
        self.has_data = false;
        answer
    }
}

/// The first index of `needle` in `hay`.
fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// A message's text for an error report, cut to a readable length.
pub fn describe(bytes: &[u8]) -> String {
    const MAX_CHARS: usize = 300;
    let text = String::from_utf8_lossy(bytes.trim_ascii());
    if text.chars().count() <= MAX_CHARS {
        text.into_owned()
    } else {
        let mut cut: String = text.chars().take(MAX_CHARS).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_errors_and_tool_errors() {
        let ok = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}"#;
        assert_eq!(parse(ok), Some(Answer { id: 7, ok: true }));
        let plain = br#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#;
        assert_eq!(parse(plain), Some(Answer { id: 8, ok: true }));
        let tool_err = br#"{"jsonrpc":"2.0","id":9,"result":{"isError":true,"content":[]}}"#;
        assert_eq!(parse(tool_err), Some(Answer { id: 9, ok: false }));
        let rpc_err = br#"{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"x"}}"#;
        assert_eq!(parse(rpc_err), Some(Answer { id: 10, ok: false }));
        let neither = br#"{"jsonrpc":"2.0","id":11}"#;
        assert_eq!(parse(neither), Some(Answer { id: 11, ok: false }));
    }

    #[test]
    fn big_ids_and_nested_is_error_are_read_right() {
        let big = br#"{"id":18446744073709551615,"result":{"structuredContent":{"isError":true}}}"#;
        assert_eq!(
            parse(big),
            Some(Answer {
                id: u64::MAX,
                ok: true
            })
        );
    }

    #[test]
    fn not_an_answer_to_us() {
        assert_eq!(parse(b"not json"), None);
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#),
            None
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}"#),
            None
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#),
            None
        );
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#), None);
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":-1,"result":{}}"#), None);
    }

    #[test]
    fn sse_skips_notifications_and_finds_the_answer_across_chunks() {
        let body = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n\
                    : keep-alive\n\n\
                    id: s-2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\n\
                    data: \"result\":{\"isError\":true}}\n\n";
        for split in 0..body.len() {
            let mut sse = SseScanner::default();
            let (a, b) = body.as_bytes().split_at(split);
            let got = sse.push(a, 5).or_else(|| sse.push(b, 5));
            assert_eq!(got, Some(Answer { id: 5, ok: false }), "split at {split}");
        }
    }

    #[test]
    fn sse_last_event_without_blank_line_and_other_ids() {
        let mut sse = SseScanner::default();
        assert_eq!(sse.push(b"data: {\"id\":4,\"result\":{}}\n\n", 5), None);
        assert_eq!(sse.push(b"data: {\"id\":5,\"result\":{}}", 5), None);
        assert_eq!(sse.finish(5), Some(Answer { id: 5, ok: true }));
    }
}
