//! `tools/call`: what each fixture tool does, and the misbehaviour it exists to provoke
//! (`param_headers`: the SEP-2243 `x-mcp-header` arguments of `header_echo`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::bulk::{self, Bulk};
use crate::era::{Era, META_CLIENT_CAPABILITIES};
use crate::fixture::Fixture;
use crate::jsonrpc::{Payload, RpcError};
use crate::list_tool;
use crate::peer::{Out, ReqCtx};
use crate::{DEEP_ANSWER_DEPTH, Violation};

mod param_headers;

pub use param_headers::check_param_headers;
use param_headers::header_echo;

/// The exact result of the `lossless` tool, as raw JSON, written out verbatim (the modern era
/// splices `"resultType":"complete"` in before the final brace). It is deliberately *not*
/// round-tripped through `serde_json::Value`: even with `preserve_order` + `arbitrary_precision`
/// that keeps key order, the big integer, `1.50` and `-0`, but rewrites `1e400` as `1e+400`.
/// A gateway that must be byte-exact has to do better than `Value` for exponents.
pub const LOSSLESS_RESULT: &str = r#"{"content":[{"type":"text","text":"kept","x-extra":1},{"type":"hologram","frames":[1,2,3]}],"structuredContent":{"big":123456789012345678901234567890,"exp":1e400,"float":1.50,"neg":-0},"x-vendor":{"nested":[true,null]},"_meta":{"x.example/trace":"abc"},"isError":false}"#;

/// The fake secrets `--violate secret` puts in read-only tools' text: an AWS access key id (the
/// documentation example) and a GitHub personal access token shape (`ghp_` + 36 alphanumerics).
pub const FAKE_SECRETS: &str = "AKIAIOSFODNN7EXAMPLE ghp_FixtureFakeToken0123456789abcdefghij";

/// What `read_big` returns under `--violate big-read`, whatever it is asked: 2 MiB.
pub const BIG_READ_BYTES: u64 = 2 * 1024 * 1024;

/// The `echo` result under `--violate output-schema`: `structuredContent` whose `text` is a
/// number although the declared `outputSchema` says string (mirrored in the text block).
fn mismatched_echo() -> Value {
    let structured = json!({"text": 42});
    json!({
        "content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured
    })
}

/// A successful result with one text block.
fn text(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}]})
}

/// A tool-level error (`isError: true`) with one text block.
fn tool_error(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}], "isError": true})
}

/// An unsigned integer argument, `default` if absent; a tool error if present but not one.
fn uint_arg(args: &Value, name: &str, default: Option<u64>) -> Result<u64, Value> {
    match args.get(name) {
        None | Some(Value::Null) => {
            default.ok_or_else(|| tool_error(format!("missing integer argument `{name}`")))
        }
        Some(v) => v
            .as_u64()
            .ok_or_else(|| tool_error(format!("argument `{name}` must be a non-negative integer"))),
    }
}

/// A string argument; a tool error if missing or not a string.
fn str_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, Value> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| tool_error(format!("missing string argument `{name}`")))
}

/// Runs `tools/call`. Returns the (era-neutral) result; unknown tools are `-32602`.
pub async fn call(fx: &Arc<Fixture>, params: &Value, ctx: &ReqCtx) -> Result<Payload, RpcError> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let empty = json!({});
    let args = params.get("arguments").unwrap_or(&empty);
    let violates = |rule| fx.cfg.violates(rule);
    // `--list-tool`: a read-only list tool (progress first, when asked for).
    if let (list_tool::NAME, Some(mode)) = (name, fx.cfg.list_tool) {
        if let Some(token) = progress_token(params) {
            for i in 1..=LIST_PROGRESS_STEPS {
                let bad = violates(Violation::BadProgress);
                send_progress(ctx, &token, i, LIST_PROGRESS_STEPS, None, bad);
            }
        }
        return list_tool::call(&fx.list_cursors, mode, args).map(Payload::from);
    }
    let result = match name {
        "echo" if violates(Violation::OutputSchema) => Ok(mismatched_echo()),
        // A raw result is written after `"result":`, so this one closes the result and adds
        // an `error` member beside it.
        "echo" if violates(Violation::ResultAndError) => {
            return Ok(Payload::Raw(
                r#"{"content":[{"type":"text","text":"both"}]},"error":{"code":-32603,"message":"both"}"#
                    .to_owned(),
            ));
        }
        "echo" if violates(Violation::DeepAnswer) => {
            let deep = format!(
                "{}{}",
                "[".repeat(DEEP_ANSWER_DEPTH),
                "]".repeat(DEEP_ANSWER_DEPTH)
            );
            return Ok(Payload::Raw(format!(r#"{{"content":[],"deep":{deep}}}"#)));
        }
        // Plain round trip.
        "echo" => str_arg(args, "text").map(text),
        // Pass-through fidelity: unknown fields, unknown content types, odd numbers.
        "lossless" if violates(Violation::Secret) => {
            let leaky = format!(r#""text":"kept {FAKE_SECRETS}""#);
            return Ok(Payload::Raw(LOSSLESS_RESULT.replacen(
                r#""text":"kept""#,
                &leaky,
                1,
            )));
        }
        "lossless" => return Ok(Payload::Raw(LOSSLESS_RESULT.to_owned())),
        // The server dies mid-call: the client must notice EOF / a dropped connection.
        "crash" => {
            eprintln!("sluice-fixture: crash tool called: exiting with code 3");
            let _ = ctx.out.send(Out::Exit(3));
            std::future::pending().await
        }
        // Never answers: timeouts, and concurrency (other requests must still be served).
        "hang" => std::future::pending().await,
        // A non-JSON line on the output stream, then a normal answer: the client should skip it.
        "garbage" => {
            let _ = ctx.out.send(Out::Raw("this is not json".into()));
            Ok(text("after garbage"))
        }
        "progress" => progress(args, params, ctx, violates(Violation::BadProgress)).await,
        "sample" => return sample(args, params, ctx).await.map(Payload::from),
        "elicit" => {
            let sensitive = violates(Violation::SensitiveElicitation);
            return elicit(args, params, ctx, sensitive)
                .await
                .map(Payload::from);
        }
        // The catalog changes at run time: list_changed notification and cache invalidation.
        "add_tool" => {
            let added = fx.add_tool();
            if let Some(peer) = ctx
                .peer
                .as_ref()
                .filter(|_| !violates(Violation::SilentListChange))
            {
                peer.notify(
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                );
            }
            eprintln!("sluice-fixture: registered tool {added}");
            Ok(text("ok"))
        }
        // Large payloads.
        "big" => uint_arg(args, "bytes", None).and_then(|n| match usize::try_from(n) {
            Ok(n) => Ok(text("x".repeat(n))),
            Err(_) => Err(tool_error("bytes too large")),
        }),
        // Latency.
        "slow" => match uint_arg(args, "ms", None) {
            Ok(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(text("slept"))
            }
            Err(e) => Err(e),
        },
        // SEP-2243 `x-mcp-header` arguments (checked over 2026 HTTP by [`check_param_headers`]).
        "header_echo" => header_echo(args, ctx),
        // Read budget: like `big`, but annotated read-only.
        "read_big" => {
            let bytes = if violates(Violation::BigRead) {
                Ok(BIG_READ_BYTES)
            } else {
                uint_arg(args, "bytes", None)
            };
            bytes.and_then(|n| {
                let mut xs = bulk::xs_string(n).ok_or_else(|| tool_error("bytes too large"))?;
                if violates(Violation::Secret) {
                    xs.push_str(&format!(" {FAKE_SECRETS}"));
                }
                Ok(text(xs))
            })
        }

        // Any data through a gateway (redaction tests).
        "reflect" => return reflect(args).map(Payload::from),
        // `shape: "objects"`: about `bytes` of tiny objects (`{"k":1}`) in
        // `structuredContent`, the costliest shape per byte to parse and walk.
        "huge_read" | "huge_write"
            if args.get("shape").and_then(Value::as_str) == Some("objects") =>
        {
            match uint_arg(args, "bytes", None) {
                Ok(n) => return Ok(Payload::Raw(bulk::tiny_objects(n))),
                Err(e) => Err(e),
            }
        }
        // Answers of any size, streamed in chunks (read-only and destructive variants).
        "huge_read" | "huge_write" => match uint_arg(args, "bytes", None) {
            Ok(n) => return Ok(Payload::Bulk(Bulk::text_result(n))),
            Err(e) => Err(e),
        },
        n if fx.has_dynamic_tool(n) => Ok(text(n)),
        // `--violate unknown-tool-result`: a protocol error passed off as a tool error.
        n if violates(Violation::UnknownToolResult) => {
            Err(tool_error(format!("Unknown tool: {n}")))
        }
        // `--violate reserved-code`: a code from the band reserved for the MCP spec.
        n if violates(Violation::ReservedCode) => {
            return Err(RpcError::new(-32050, format!("Unknown tool: {n}")));
        }
        n => return Err(RpcError::invalid_params(format!("Unknown tool: {n}"))),
    };
    // Argument errors are tool execution errors (isError), not protocol errors.
    Ok(result.unwrap_or_else(|e| e).into())
}

/// `progress`: if the request carries `_meta.progressToken`, sends `notifications/progress`
/// `{progressToken, progress: i, total: steps}` for i = 1..=steps, one every `delay_ms` (with
/// `message` in each when the argument is given); then answers "done". Without a token it just
/// takes the same time.
///
/// `bad` (`--violate bad-progress`): the notifications name another token ([`wrong_token`]) and
/// count down (`progress` = steps, ..., 1).
async fn progress(args: &Value, params: &Value, ctx: &ReqCtx, bad: bool) -> Result<Value, Value> {
    let steps = uint_arg(args, "steps", Some(3))?;
    let delay = Duration::from_millis(uint_arg(args, "delay_ms", Some(10))?);
    let message = args.get("message").and_then(Value::as_str);
    let token = progress_token(params);
    for i in 1..=steps {
        tokio::time::sleep(delay).await;
        if let Some(token) = &token {
            send_progress(ctx, token, i, steps, message, bad);
        }
    }
    Ok(text("done"))
}

/// How many progress notifications `list_items` sends when asked for progress.
const LIST_PROGRESS_STEPS: u64 = 2;

/// The request's `_meta.progressToken`, if any.
fn progress_token(params: &Value) -> Option<Value> {
    params
        .pointer("/_meta/progressToken")
        .filter(|t| !t.is_null())
        .cloned()
}

/// A token that is not `token` (`--violate bad-progress`): `<token>-not-yours`.
fn wrong_token(token: &Value) -> Value {
    match token {
        Value::String(s) => json!(format!("{s}-not-yours")),
        other => json!(format!("{other}-not-yours")),
    }
}

/// Sends step `i` of `steps` as `notifications/progress` `{progressToken, progress: i, total}`
/// (plus `message`). `bad`: another token, and `progress` counting down (`steps + 1 - i`).
fn send_progress(
    ctx: &ReqCtx,
    token: &Value,
    i: u64,
    steps: u64,
    message: Option<&str>,
    bad: bool,
) {
    let (token, progress) = if bad {
        (wrong_token(token), steps + 1 - i)
    } else {
        (token.clone(), i)
    };
    let mut note = json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": progress, "total": steps}
    });
    if let Some(message) = message {
        note["params"]["message"] = message.into();
    }
    let _ = ctx.out.send(Out::Msg(note));
}

/// `reflect`: sends back what it is given, so a test can push any data through a gateway.
///
/// All arguments are optional; absent or `null` ones (except `structured`) are ignored:
/// - `error` (string): no result; a JSON-RPC error -32603 with that message instead.
/// - `text` (string): a text block with that text (first).
/// - `structured` (any JSON, `null` included, whenever present): `structuredContent`, unchanged;
///   also serialized (compact) as a text block after the `text` block, as MCP recommends.
/// - `image_bytes` (integer): an image block (`mimeType` `image/png`, last) whose base64 `data`
///   decodes to exactly that many bytes ([`bulk::image_bytes`]).
///
/// `isError` is never set: a wrongly typed argument is a JSON-RPC error -32602.
fn reflect(args: &Value) -> Result<Value, RpcError> {
    let arg = |name: &str| args.get(name).filter(|v| !v.is_null());
    let wrong = |name: &str, what: &str| {
        RpcError::invalid_params(format!("reflect: argument `{name}` must be {what}"))
    };
    if let Some(message) = arg("error") {
        let message = message.as_str().ok_or_else(|| wrong("error", "a string"))?;
        return Err(RpcError::new(-32603, message));
    }
    let mut content = Vec::new();
    if let Some(t) = arg("text") {
        let t = t.as_str().ok_or_else(|| wrong("text", "a string"))?;
        content.push(json!({"type": "text", "text": t}));
    }
    let structured = args.get("structured");
    if let Some(s) = structured {
        content.push(json!({"type": "text", "text": s.to_string()}));
    }
    if let Some(n) = arg("image_bytes") {
        let n = n
            .as_u64()
            .ok_or_else(|| wrong("image_bytes", "a non-negative integer"))?;
        let data = bulk::image_bytes(n).ok_or_else(|| wrong("image_bytes", "smaller"))?;
        content
            .push(json!({"type": "image", "mimeType": "image/png", "data": bulk::base64(&data)}));
    }
    let mut result = json!({"content": content});
    if let (Some(s), Some(obj)) = (structured, result.as_object_mut()) {
        obj.insert("structuredContent".into(), s.clone());
    }
    Ok(result)
}

/// The sampling request the `sample` tool makes.
fn sampling_params(prompt: &str) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 50
    })
}

/// `sample`: server→client interaction.
///
/// Legacy: sends `sampling/createMessage` to the client (on stdout, or on the POST's SSE stream)
/// and answers with the text of the client's reply, or `isError` if the client returned an error.
///
/// Modern (no server→client requests exist): uses MRTR. Without `inputResponses.sample` it returns
/// `resultType: "input_required"` with `inputRequests.sample` (or `-32021` if the request did not
/// declare the `sampling` client capability); the retry's `inputResponses.sample.content.text`
/// becomes the answer.
async fn sample(args: &Value, params: &Value, ctx: &ReqCtx) -> Result<Value, RpcError> {
    let prompt = match str_arg(args, "prompt") {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    match ctx.era {
        Era::Legacy => {
            let Some(peer) = &ctx.peer else {
                return Ok(tool_error("no client connection to sample from"));
            };
            let reply = peer
                .request(&ctx.out, "sampling/createMessage", sampling_params(prompt))
                .await;
            Ok(match reply {
                Some(r) if r.get("error").is_some() => {
                    tool_error(format!("client returned an error: {}", r["error"]))
                }
                Some(r) => match r.pointer("/result/content/text").and_then(Value::as_str) {
                    Some(t) => text(t),
                    None => tool_error("client reply has no result.content.text"),
                },
                None => tool_error("client went away before answering"),
            })
        }
        Era::Modern => {
            if let Some(resp) = params.pointer("/inputResponses/sample") {
                return Ok(
                    match resp.pointer("/content/text").and_then(Value::as_str) {
                        Some(t) => text(t),
                        None => tool_error("inputResponses.sample has no content.text"),
                    },
                );
            }
            if !declares(params, "sampling") {
                return Err(RpcError::new(-32021, "Missing required client capability")
                    .with_data(json!({"requiredCapabilities": {"sampling": {}}})));
            }
            Ok(json!({
                "resultType": "input_required",
                "inputRequests": {"sample": {
                    "method": "sampling/createMessage",
                    "params": sampling_params(prompt)
                }}
            }))
        }
    }
}

/// The elicitation request the `elicit` tool makes (asking for a `password` under `--violate
/// sensitive-elicitation`).
fn elicitation_params(message: &str, sensitive: bool) -> Value {
    let field = if sensitive { "password" } else { "answer" };
    json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {field: {"type": "string"}},
            "required": [field]
        }
    })
}

/// The `elicit` tool's answer for the client's elicitation result:
/// `action=<action> content=<content as compact JSON>` (`content=null` if absent).
fn elicitation_answer(reply: &Value) -> Value {
    match reply.get("action").and_then(Value::as_str) {
        Some(action) => {
            let content = reply.get("content").unwrap_or(&Value::Null);
            text(format!("action={action} content={content}"))
        }
        None => tool_error("elicitation reply has no action"),
    }
}

/// Whether a modern request declared the client capability `name` in its `_meta`.
fn declares(params: &Value, name: &str) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .and_then(|c| c.get(name))
        .is_some()
}

/// `elicit`: server→client elicitation, the twin of [`sample`].
///
/// Legacy: sends `elicitation/create` `{message, requestedSchema}` to the client and answers
/// `action=<action> content=<content>` from its reply (`isError` if the client returned an
/// error or no `action`).
///
/// Modern: MRTR. Without `inputResponses.elicit` it returns `resultType: "input_required"` with
/// `inputRequests.elicit` (or `-32021` if the request did not declare the `elicitation` client
/// capability); the retry's `inputResponses.elicit` is answered the same way.
async fn elicit(
    args: &Value,
    params: &Value,
    ctx: &ReqCtx,
    sensitive: bool,
) -> Result<Value, RpcError> {
    let message = match str_arg(args, "message") {
        Ok(m) => m,
        Err(e) => return Ok(e),
    };
    match ctx.era {
        Era::Legacy => {
            let Some(peer) = &ctx.peer else {
                return Ok(tool_error("no client connection to elicit from"));
            };
            let reply = peer
                .request(
                    &ctx.out,
                    "elicitation/create",
                    elicitation_params(message, sensitive),
                )
                .await;
            Ok(match reply {
                Some(r) if r.get("error").is_some() => {
                    tool_error(format!("client returned an error: {}", r["error"]))
                }
                Some(r) => elicitation_answer(r.get("result").unwrap_or(&Value::Null)),
                None => tool_error("client went away before answering"),
            })
        }
        Era::Modern => {
            if let Some(resp) = params.pointer("/inputResponses/elicit") {
                return Ok(elicitation_answer(resp));
            }
            if !declares(params, "elicitation") {
                return Err(RpcError::new(-32021, "Missing required client capability")
                    .with_data(json!({"requiredCapabilities": {"elicitation": {}}})));
            }
            Ok(json!({
                "resultType": "input_required",
                "inputRequests": {"elicit": {
                    "method": "elicitation/create",
                    "params": elicitation_params(message, sensitive)
                }}
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reflect_round_trips_and_errors() {
        let nested = json!({"a": [1, {"b": null, "c": [true, "s", 1.50]}], "z": {"y": {}}, "big": 123456789012345678901234567890u128});
        let r = reflect(&json!({"text": "hi", "structured": nested})).unwrap();
        assert_eq!(r["structuredContent"], nested);
        assert_eq!(r["content"][0], json!({"type": "text", "text": "hi"}));
        let serialized: Value =
            serde_json::from_str(r["content"][1]["text"].as_str().unwrap()).unwrap();
        assert_eq!(serialized, nested);
        assert!(r.get("isError").is_none());

        let img = reflect(&json!({"image_bytes": 10})).unwrap();
        assert_eq!(img["content"].as_array().map(Vec::len), Some(1));
        assert_eq!(img["content"][0]["mimeType"], "image/png");
        assert_eq!(
            img["content"][0]["data"],
            bulk::base64(&bulk::image_bytes(10).unwrap())
        );
        assert!(img.get("structuredContent").is_none());

        assert_eq!(reflect(&json!({})).unwrap(), json!({"content": []}));
        let e = reflect(&json!({"error": "boom", "text": "ignored"}))
            .err()
            .unwrap();
        assert_eq!((e.code, e.message.as_str()), (-32603, "boom"));
        for bad in [
            json!({"text": 1}),
            json!({"image_bytes": -1}),
            json!({"error": {}}),
        ] {
            assert_eq!(reflect(&bad).err().map(|e| e.code), Some(-32602), "{bad}");
        }
    }

    #[test]
    fn lossless_result_is_valid_json() {
        let v: Result<Value, _> = serde_json::from_str(LOSSLESS_RESULT);
        assert!(v.is_ok_and(|v| v.is_object()));
    }
}
