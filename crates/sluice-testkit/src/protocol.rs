//! Request dispatch: a request's era checked, the request routed to its method's handler, the
//! result shaped for the era (and broken as `--violate` says) and serialized; client
//! notifications; one task per request.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::Violation;
use crate::bulk::ReplyText;
use crate::catalog;
use crate::era::{Era, cacheable, complete, complete_payload};
use crate::fixture::Fixture;
use crate::jsonrpc::{Payload, RpcError, error_response, method, response};
use crate::peer::{Out, Peer, Reply, ReqCtx};

/// Methods whose 2026 results carry caching hints that `--violate cache-hints` strips
/// (`server/discover` keeps its own).
const HINTED_METHODS: [&str; 5] = [
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "resources/read",
];

impl Fixture {
    /// Handles a client notification. `notifications/cancelled` stops the named request (without
    /// answering it; a `subscriptions/listen` ends at once); everything else
    /// (`notifications/initialized`, ...) is accepted and ignored.
    pub fn handle_notification(&self, msg: &Value, peer: &Peer) {
        if method(msg) == "notifications/cancelled"
            && let Some(id) = msg.get("params").and_then(|p| p.get("requestId"))
        {
            if self.cfg.violates(Violation::CancelCrash) {
                std::process::exit(3);
            }
            self.cancel_initialize(id);
            self.subs.cancel(peer, id);
            peer.cancel(id);
        }
    }

    /// Handles one request and returns the JSON-RPC response to send, or `None` for none.
    /// Tools like `hang` make this never return; `crash` exits the process.
    pub async fn handle(self: &Arc<Self>, msg: Value, ctx: ReqCtx) -> Option<Reply> {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let result = match ctx.era {
            Era::Modern => match self.check_modern_envelope(&msg) {
                Ok(()) => self
                    .modern(&msg, &ctx)
                    .await
                    .map(|p| self.break_modern_result(method(&msg), p)),
                Err(e) => Err(e),
            },
            // `--violate cancellable-initialize`: the session is taken as never opened.
            Era::Legacy if self.initialize_was_cancelled() => Err(RpcError::new(
                -32600,
                "fixture: the session's initialize was cancelled",
            )),
            Era::Legacy => self.legacy(&msg, &ctx).await,
        };
        Some(match result {
            Ok(Payload::Json(r)) => Reply {
                text: ReplyText::Whole(response(&id, r).to_string()),
                error_code: None,
            },
            Ok(Payload::Raw(raw)) => Reply {
                text: ReplyText::Whole(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{raw}}}"#)),
                error_code: None,
            },
            // `id` before `result`, like the others: a reader can route it before the bulk.
            Ok(Payload::Bulk(bulk)) => Reply {
                text: ReplyText::Bulk(
                    bulk.wrap(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#), "}"),
                ),
                error_code: None,
            },
            Err(e) => Reply {
                text: ReplyText::Whole(error_response(&id, &e).to_string()),
                error_code: Some(e.code),
            },
        })
    }

    /// `--violate result-type` and `--violate cache-hints` applied to a 2026 result of
    /// `method`. (A raw or bulk `tools/call` result never got its `resultType` spliced in.)
    fn break_modern_result(&self, method: &str, payload: Payload) -> Payload {
        let Payload::Json(mut result) = payload else {
            return payload;
        };
        if let Some(obj) = result.as_object_mut() {
            if self.cfg.violates(Violation::ResultType) {
                obj.shift_remove("resultType");
            }
            if self.cfg.violates(Violation::CacheHints) && HINTED_METHODS.contains(&method) {
                obj.shift_remove("ttlMs");
                obj.shift_remove("cacheScope");
            }
        }
        Payload::Json(result)
    }

    /// Methods of the 2026 era.
    async fn modern(self: &Arc<Self>, msg: &Value, ctx: &ReqCtx) -> Result<Payload, RpcError> {
        let params = msg.get("params").cloned().unwrap_or_else(|| json!({}));
        match method(msg) {
            "server/discover" => Ok(self.discover().into()),
            "tools/call" => {
                let payload = crate::tools::call(self, &params, ctx).await?;
                if self.cfg.violates(Violation::ResultType) {
                    Ok(payload)
                } else {
                    Ok(complete_payload(payload, Era::Modern))
                }
            }
            // Acknowledges, then stays open (no response) until cancelled.
            "subscriptions/listen" => {
                let id = msg.get("id").cloned().unwrap_or(Value::Null);
                self.subs.listen(&id, &params, ctx).await
            }
            m => self.common(m, &params, ctx).await.map(Payload::from),
        }
    }

    /// Methods of the 2025 era.
    async fn legacy(self: &Arc<Self>, msg: &Value, ctx: &ReqCtx) -> Result<Payload, RpcError> {
        let params = msg.get("params").cloned().unwrap_or_else(|| json!({}));
        match method(msg) {
            "initialize" => Ok(self.initialize(&params).into()),
            "ping" => Ok(json!({}).into()),
            "tools/call" => crate::tools::call(self, &params, ctx).await,
            // Removed in 2026 (they fall through to -32601 there).
            "resources/subscribe" => self.resource_subs.handle(true, &params).map(Payload::from),
            "resources/unsubscribe" => self.resource_subs.handle(false, &params).map(Payload::from),
            m => self.common(m, &params, ctx).await.map(Payload::from),
        }
    }

    /// Methods that behave the same in both eras apart from result shaping.
    async fn common(&self, method: &str, params: &Value, ctx: &ReqCtx) -> Result<Value, RpcError> {
        let era = ctx.era;
        let cursor = params.get("cursor");
        match method {
            "tools/list" => self.tools_list(cursor, era).await,
            "resources/list" => {
                let resources = catalog::all_resources(self.cfg.resources);
                self.list("resources", &resources, cursor, era)
            }
            "resources/templates/list" => {
                self.list("resourceTemplates", &catalog::all_templates(), cursor, era)
            }
            "prompts/list" => self.list("prompts", &catalog::all_prompts(), cursor, era),
            "resources/read" => {
                let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
                // The unlisted `fixture://subscriptions` and `fixture://touch/*` first.
                let text = self
                    .resource_subs
                    .read(uri, ctx.peer.as_ref())
                    .or_else(|| catalog::read_resource(uri, self.cfg.resources))
                    // `--violate read-any-uri`: whatever was asked for is "read".
                    .or_else(|| self.cfg.violates(Violation::ReadAnyUri).then(String::new));
                match text {
                    Some(text) => Ok(cacheable(
                        json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}),
                        era,
                    )),
                    None => {
                        // 2025 uses -32002 Resource not found; 2026 uses -32602.
                        let code = if era == Era::Modern { -32602 } else { -32002 };
                        Err(RpcError::new(code, "Resource not found")
                            .with_data(json!({"uri": uri})))
                    }
                }
            }
            "prompts/get" => {
                let name = params.get("name").and_then(Value::as_str).unwrap_or("");
                let empty = json!({});
                let args = params.get("arguments").unwrap_or(&empty);
                Ok(complete(catalog::get_prompt(name, args)?, era))
            }
            m => Err(RpcError::method_not_found(m)),
        }
    }
}

/// Spawns the handling of one request; its response (if any) is sent on `ctx.out` as
/// [`Out::Response`]. If `tracker` is given the work is registered there for cancellation.
pub fn spawn_request(
    fx: &Arc<Fixture>,
    msg: Value,
    mut ctx: ReqCtx,
    tracker: Option<&Arc<Peer>>,
) -> tokio::task::JoinHandle<()> {
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let method_is_initialize = method(&msg) == "initialize";
    if method_is_initialize {
        fx.initialize_requested(&id);
    }
    ctx.tracker = tracker.cloned();
    let fx = Arc::clone(fx);
    let work = async move {
        let out = ctx.out.clone();
        if let Some(resp) = fx.handle(msg, ctx).await {
            let _ = out.send(Out::Response(resp));
        }
    };
    // `initialize` is never cancelled (MCP 2025-06-18 `basic/utilities/cancellation`): it is
    // not tracked, so no `notifications/cancelled` can stop it.
    match tracker {
        Some(peer) if !method_is_initialize => peer.spawn_tracked(&id, work),
        _ => tokio::spawn(work),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::testutil::{call, error_code, fixture, legacy_req, modern_req, result, serve, text};

    #[tokio::test]
    async fn bulk_response_puts_the_id_first() {
        let fx = Arc::new(fixture(&[]));
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let ctx = ReqCtx {
            era: Era::Legacy,
            out: tx,
            peer: None,
            tracker: None,
            param_headers: Vec::new(),
        };
        let msg = json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call",
                         "params": {"name": "huge_write", "arguments": {"bytes": 2}}});
        let reply = fx.handle(msg, ctx).await.unwrap();
        assert!(matches!(reply.text, ReplyText::Bulk(_)));
        assert_eq!(
            reply.text.into_string(),
            r#"{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"xx"}]}}"#
        );
    }

    #[tokio::test]
    async fn result_type_is_stripped_from_every_modern_result() {
        let requests = [
            modern_req("server/discover", json!({})),
            modern_req("tools/list", json!({})),
            modern_req("prompts/list", json!({})),
            modern_req("resources/read", json!({"uri": "fixture://item/a"})),
            modern_req("tools/call", call("echo", json!({"text": "a"}))),
            // Raw and bulk results (spliced otherwise).
            modern_req("tools/call", call("lossless", json!({}))),
            modern_req("tools/call", call("huge_read", json!({"bytes": 3}))),
        ];
        let plain = Arc::new(fixture(&[]));
        let broken = Arc::new(fixture(&["--violate", "result-type"]));
        for msg in requests {
            let good = result(&plain, Era::Modern, msg.clone()).await;
            assert_eq!(good["resultType"], "complete", "{msg}");
            let bad = result(&broken, Era::Modern, msg.clone()).await;
            assert!(bad.get("resultType").is_none(), "{msg}: {bad}");
        }
        // Only that rule: caching hints stay.
        let list = result(&broken, Era::Modern, modern_req("tools/list", json!({}))).await;
        assert_eq!(
            (&list["ttlMs"], &list["cacheScope"]),
            (&json!(0), &json!("public"))
        );
        let echo = modern_req("tools/call", call("echo", json!({"text": "a"})));
        let echo = result(&broken, Era::Modern, echo).await;
        assert_eq!(echo, json!({"content": [{"type": "text", "text": "a"}]}));
    }

    #[tokio::test]
    async fn cache_hints_are_stripped_from_lists_and_reads() {
        let hinted = [
            modern_req("tools/list", json!({})),
            modern_req("resources/list", json!({})),
            modern_req("resources/templates/list", json!({})),
            modern_req("prompts/list", json!({})),
            modern_req("resources/read", json!({"uri": "fixture://item/a"})),
        ];
        let plain = Arc::new(fixture(&[]));
        let broken = Arc::new(fixture(&["--violate", "cache-hints"]));
        for msg in hinted {
            let good = result(&plain, Era::Modern, msg.clone()).await;
            assert!(good.get("ttlMs").is_some() && good.get("cacheScope").is_some());
            let bad = result(&broken, Era::Modern, msg.clone()).await;
            assert!(bad.get("ttlMs").is_none(), "{msg}: {bad}");
            assert!(bad.get("cacheScope").is_none(), "{msg}: {bad}");
            assert_eq!(bad["resultType"], "complete", "only the hints go");
        }
        let discover = modern_req("server/discover", json!({}));
        let discover = result(&broken, Era::Modern, discover).await;
        assert_eq!(discover["ttlMs"], 0, "server/discover keeps its hints");
    }

    #[tokio::test]
    async fn output_schema_echo_answers_a_mismatch() {
        let echo_call = || modern_req("tools/call", call("echo", json!({"text": "a"})));
        let plain = Arc::new(fixture(&[]));
        assert_eq!(
            plain.tools()[0],
            json!({"name": "echo", "description": "Echoes `text` back as a text block.",
                   "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                   "required": ["text"]}})
        );
        let r = result(&plain, Era::Modern, echo_call()).await;
        assert!(r.get("structuredContent").is_none());
        assert_eq!(text(&r), "a");

        let broken = Arc::new(fixture(&["--violate", "output-schema"]));
        let def = &broken.tools()[0];
        assert_eq!(
            def["outputSchema"],
            json!({"type": "object", "properties": {"text": {"type": "string"}},
                   "required": ["text"]})
        );
        assert_eq!(def["annotations"]["readOnlyHint"], true);
        let r = result(&broken, Era::Modern, echo_call()).await;
        assert_eq!(r["structuredContent"], json!({"text": 42}));
        assert!(
            r["structuredContent"]["text"].is_number(),
            "does not match the schema"
        );
        assert_eq!(text(&r), r#"{"text":42}"#);
    }

    #[tokio::test]
    async fn unknown_tool_codes() {
        for era in [Era::Modern, Era::Legacy] {
            let msg = || match era {
                Era::Modern => modern_req("tools/call", call("no_such_tool", json!({}))),
                Era::Legacy => legacy_req("tools/call", call("no_such_tool", json!({}))),
            };
            let plain = Arc::new(fixture(&[]));
            assert_eq!(error_code(&plain, era, msg()).await, -32602);
            let reserved = Arc::new(fixture(&["--violate", "reserved-code"]));
            assert_eq!(error_code(&reserved, era, msg()).await, -32050);
            for args in [
                &["--violate", "unknown-tool-result"][..],
                &["--violate", "unknown-tool-result,reserved-code"],
            ] {
                let as_result = Arc::new(fixture(args));
                let r = result(&as_result, era, msg()).await;
                assert_eq!(r["isError"], true);
                assert_eq!(text(&r), "Unknown tool: no_such_tool");
            }
        }
    }

    #[tokio::test]
    async fn big_read_and_secret_change_read_only_answers() {
        let read_big = || modern_req("tools/call", call("read_big", json!({"bytes": 1})));
        let lossless = || modern_req("tools/call", call("lossless", json!({})));
        let has_secrets = |t: &str| {
            let token_ok = t.split("ghp_").nth(1).is_some_and(|rest| {
                rest.len() >= 36 && rest.bytes().take(36).all(|b| b.is_ascii_alphanumeric())
            });
            t.contains("AKIAIOSFODNN7EXAMPLE") && token_ok
        };
        let plain = Arc::new(fixture(&[]));
        assert_eq!(text(&result(&plain, Era::Modern, read_big()).await), "x");
        assert_eq!(text(&result(&plain, Era::Modern, lossless()).await), "kept");

        let big = Arc::new(fixture(&["--violate", "big-read"]));
        let r = result(&big, Era::Modern, read_big()).await;
        assert_eq!(text(&r).len(), 2 * 1024 * 1024);
        assert!(!has_secrets(text(&r)));

        let leaky = Arc::new(fixture(&["--violate", "secret"]));
        for msg in [read_big(), lossless()] {
            let r = result(&leaky, Era::Modern, msg.clone()).await;
            assert!(has_secrets(text(&r)), "{msg}");
        }
        assert!(text(&result(&leaky, Era::Modern, read_big()).await).starts_with("x "));
        // `ghp_` is followed by exactly 36 alphanumerics.
        let token = crate::tools::FAKE_SECRETS.split("ghp_").nth(1).unwrap();
        assert_eq!(token.len(), 36);
        assert!(token.bytes().all(|b| b.is_ascii_alphanumeric()));
    }

    /// The (token, progress) of each progress notification.
    fn progress_of(notes: &[Value]) -> Vec<(Value, u64)> {
        notes
            .iter()
            .map(|n| {
                assert_eq!(n["method"], "notifications/progress");
                let p = &n["params"];
                (p["progressToken"].clone(), p["progress"].as_u64().unwrap())
            })
            .collect()
    }

    #[tokio::test]
    async fn bad_progress_uses_another_token_and_counts_down() {
        let with_token = |name: &str, args: Value| {
            let mut msg = modern_req("tools/call", call(name, args));
            msg["params"]["_meta"]["progressToken"] = json!("t");
            msg
        };
        let progress = || with_token("progress", json!({"steps": 3, "delay_ms": 0}));
        let list = || with_token("list_items", json!({}));
        let plain = Arc::new(fixture(&["--list-tool", "good"]));
        let (_, notes) = serve(&plain, Era::Modern, progress()).await;
        let t = json!("t");
        assert_eq!(
            progress_of(&notes),
            [(t.clone(), 1), (t.clone(), 2), (t.clone(), 3)]
        );
        let (resp, notes) = serve(&plain, Era::Modern, list()).await;
        assert_eq!(progress_of(&notes), [(t.clone(), 1), (t.clone(), 2)]);
        assert!(resp["result"]["structuredContent"]["items"].is_array());
        // No token, no progress.
        let quiet = modern_req("tools/call", call("list_items", json!({})));
        assert!(serve(&plain, Era::Modern, quiet).await.1.is_empty());

        let broken = Arc::new(fixture(&[
            "--list-tool",
            "good",
            "--violate",
            "bad-progress",
        ]));
        let wrong = json!("t-not-yours");
        let (_, notes) = serve(&broken, Era::Modern, progress()).await;
        assert_eq!(
            progress_of(&notes),
            [(wrong.clone(), 3), (wrong.clone(), 2), (wrong.clone(), 1)]
        );
        let (_, notes) = serve(&broken, Era::Modern, list()).await;
        assert_eq!(progress_of(&notes), [(wrong.clone(), 2), (wrong, 1)]);
    }
}
