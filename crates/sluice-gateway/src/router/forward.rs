//! One forwarded request, driven to its answer by the request's own task
//! (a [`Flight`]), with what the upstream sends meanwhile relayed
//! to the client (progress, logs, questions), MRTR rounds answered or
//! bridged, and the outcome passed through the call's boundary.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use sluice_core::boundary::Boundary;
use sluice_core::boundary::budget;
use sluice_core::carried;
use sluice_core::headers;
use sluice_core::method::Method;
use sluice_core::payload::Payload;
use sluice_core::policy::rounds::{self, MAX_INPUT_ROUNDS, Round};
use sluice_core::policy::{Denied, UpstreamFailure, answer};
use sluice_core::protocol::{self, Era};
use tracing::Instrument;

use crate::bridge::{Flight, Question};
use crate::client::RequestCtx;
use crate::gateway::{Gateway, Snapshot};
use crate::offload;
use crate::ops::{metrics, trace};
use crate::upstream::{Related, Upstream};

/// The level of log messages asked of a modern upstream for a legacy client
/// that never called `logging/setLevel`.
const DEFAULT_LOG_LEVEL: &str = "info";

/// A request on its way to `upstream`.
pub(super) struct Forward<'a> {
    pub(super) ctx: &'a RequestCtx,
    pub(super) snap: &'a Snapshot,
    pub(super) upstream: &'a Upstream,
    pub(super) method: Method,
    /// The params as the client sent them: they bind an MRTR state to what
    /// the client asked, and name the tool for its headers.
    pub(super) client_params: &'a Value,
    pub(super) boundary: &'a Boundary<'a>,
}

/// Sets one `_meta` key of request params.
fn set_meta(params: &mut Value, key: &str, value: Value) {
    if let Some(obj) = params.as_object_mut()
        && let Some(meta) = obj
            .entry("_meta")
            .or_insert_with(|| json!({}))
            .as_object_mut()
    {
        meta.insert(key.to_owned(), value);
    }
}

impl Forward<'_> {
    /// Forwards `params` (as the upstream must see them) and drives the
    /// call through its MRTR rounds to the client's answer.
    pub(super) async fn run(self, gateway: &Gateway, mut params: Value) -> Result<Payload, Denied> {
        let ctx = self.ctx;
        let conn = if gateway.bridge.is_resumption(ctx, self.method, &params) {
            None
        } else {
            Some(self.upstream.connection()?)
        };
        // A legacy client gets log messages unless it lowered the level; a
        // modern upstream sends them only for requests that carry a level.
        if let Some(conn) = &conn
            && ctx.era == Era::Legacy
            && conn.description().era == Era::Modern
        {
            let level = ctx
                .session
                .as_ref()
                .and_then(|s| s.log_level())
                .unwrap_or_else(|| DEFAULT_LOG_LEVEL.to_owned());
            set_meta(&mut params, protocol::META_LOG_LEVEL, level.into());
        }
        let method = self.method.name().unwrap_or_default();
        let span = match &conn {
            Some(_) => trace::upstream_span(self.upstream.name(), method, &mut params),
            None => tracing::Span::none(),
        };
        let policy = self.snap.live.config.sensitive_elicitation;
        for _ in 0..MAX_INPUT_ROUNDS {
            let flight = match &conn {
                None => gateway.bridge.resume(ctx, method, self.client_params)?,
                Some(conn) => Flight::start(
                    Arc::clone(conn),
                    method,
                    params.clone(),
                    ctx,
                    self.snap.live.config.server.request_timeout,
                    self.param_headers(&params),
                ),
            };
            // A result kept as text is a plain answer (`answer::bound`).
            let result = match self.drive(gateway, flight).instrument(span.clone()).await? {
                Payload::Tree(result) => result,
                text @ Payload::Text(_) => return Ok(text),
            };
            if conn.is_some() {
                self.log_refused_questions(&result);
            }
            match rounds::next_round(policy, ctx.era, conn.is_some(), &result) {
                Round::Answer => return Ok(Payload::Tree(result)),
                Round::Retry(declined) => rounds::answer_round(&mut params, &result, declined),
                Round::Refuse(denied) => return Err(denied),
                // A modern upstream asking a legacy client something: ask
                // it directly, then retry with its answers.
                Round::AskClient(declined) => {
                    let answers = self.ask_legacy_client(&result, declined).await?;
                    rounds::answer_round(&mut params, &result, answers);
                }
            }
        }
        Err(Denied::TooManyRounds(MAX_INPUT_ROUNDS))
    }

    /// [`Forward::run`] for a caller that reads the result's tree.
    pub(super) async fn run_tree(self, gateway: &Gateway, params: Value) -> Result<Value, Denied> {
        let upstream = self.upstream.name();
        self.run(gateway, params)
            .await?
            .into_tree()
            .map_err(|_| Denied::Upstream(UpstreamFailure::nested_too_deeply(upstream)))
    }

    /// The `Mcp-Param-*` headers for a tool call to a modern HTTP upstream:
    /// those the tool's schema asks for, computed from the arguments, and
    /// any others the client sent (an intermediary forwards what it does not
    /// recognize; MCP 2026-07-28, Transports, Streamable HTTP headers).
    fn param_headers(&self, params: &Value) -> Vec<(String, String)> {
        if self.method != Method::CallTool {
            return Vec::new();
        }
        let exposed = self
            .client_params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let schema = self
            .snap
            .federation
            .tool(exposed)
            .and_then(|t| t.get("inputSchema"))
            .unwrap_or(&Value::Null);
        let carried = self.ctx.carried.as_deref();
        let argument = |path: &[String]| carried::argument(params, carried, path);
        let declared = headers::declared(schema).unwrap_or_default();
        let mut out: Vec<(String, String)> = headers::values(&declared, argument)
            .into_iter()
            .map(|m| (m.header, m.value))
            .collect();
        // The client's own headers for declared arguments are replaced by
        // the computed ones (or dropped, for an absent argument); the rest
        // are forwarded.
        for (name, value) in &self.ctx.param_headers {
            let is_declared = declared.iter().any(|d| {
                name.eq_ignore_ascii_case(&format!("{}{}", headers::PARAM_HEADER_PREFIX, d.name))
            });
            if !is_declared {
                out.push((name.clone(), value.clone()));
            }
        }
        out
    }

    /// A legacy client's answers to an upstream's `inputRequests`, with
    /// those sluice gave itself (`answers`).
    async fn ask_legacy_client(
        &self,
        result: &Value,
        mut answers: Map<String, Value>,
    ) -> Result<Map<String, Value>, Denied> {
        let ctx = self.ctx;
        let requests = result.get("inputRequests").and_then(Value::as_object);
        for (key, request) in requests.into_iter().flatten() {
            if answers.contains_key(key) {
                continue;
            }
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let question = request.get("params").cloned().unwrap_or(Value::Null);
            let link = ctx.link.as_ref().filter(|l| {
                rounds::client_may_be_asked(
                    ctx.era,
                    &ctx.client_capabilities,
                    l.takes_requests(),
                    method,
                    &question,
                )
            });
            let Some(link) = link else {
                return Err(Denied::ClientLacksCapability(method.to_owned()));
            };
            let timeout = self.snap.live.config.server.request_timeout;
            let answer = link.request(method, question, timeout).await?;
            answers.insert(key.clone(), answer);
        }
        Ok(answers)
    }

    /// Answers a question an upstream asked in flight that sluice refuses
    /// (a form asking for a secret, an unsafe elicitation URL) with the
    /// refusal; anything else is passed on.
    fn screen(&self, item: Related) -> Option<Related> {
        match item {
            Related::Request {
                method,
                params,
                reply,
            } => match self.refusal(&method, &params) {
                Some(denied) => {
                    let _ = reply.send(Err(denied.to_rpc()));
                    None
                }
                None => Some(Related::Request {
                    method,
                    params,
                    reply,
                }),
            },
            other => Some(other),
        }
    }

    /// Logs each question of an upstream's round that sluice refuses
    /// (S-27: every refusal is logged, whatever the round's verdict).
    fn log_refused_questions(&self, result: &Value) {
        if !rounds::is_input_required(result) {
            return;
        }
        let requests = result.get("inputRequests").and_then(Value::as_object);
        for request in requests.into_iter().flat_map(Map::values) {
            let method = request.get("method").and_then(Value::as_str);
            let params = request.get("params").unwrap_or(&Value::Null);
            if let Some(method) = method {
                self.refusal(method, params);
            }
        }
    }

    /// Why sluice refuses a question (S-27, the elicitation URL guard);
    /// logged when it does.
    fn refusal(&self, method: &str, params: &Value) -> Option<Denied> {
        let policy = self.snap.live.config.sensitive_elicitation;
        let refusal = rounds::refusal(policy, method, params);
        match &refusal {
            Some(Denied::SensitiveElicitation) => tracing::warn!(
                fields = ?rounds::sensitive_fields(policy, method, params),
                "refused an upstream's elicitation that asks for sensitive data ([policy] sensitive_elicitation = \"refuse\")"
            ),
            Some(denied) => tracing::warn!("refused an upstream's question: {denied}"),
            None => {}
        }
        refusal
    }

    /// Drives a flight until the upstream answers, relaying what it sends
    /// meanwhile; a modern client's questions end the drive with an
    /// `input_required` result and the flight parked.
    async fn drive(&self, gateway: &Gateway, mut flight: Flight) -> Result<Payload, Denied> {
        let ctx = self.ctx;
        let token = self.client_params.pointer("/_meta/progressToken").cloned();
        let upstream_started = tokio::time::Instant::now();
        let may_park = |method: &str, question: &Value| {
            rounds::may_park(
                ctx.era,
                self.method,
                &ctx.client_capabilities,
                method,
                question,
            )
        };
        loop {
            tokio::select! {
                // What the upstream sent before its answer goes out first.
                biased;
                Some(item) = flight.related.recv() => {
                    let Some(item) = self.screen(item) else { continue };
                    let Related::Request { method, params: q, reply } = item else {
                        self.relay(item, token.as_ref()).await;
                        continue;
                    };
                    if !may_park(&method, &q) {
                        self.relay(Related::Request { method, params: q, reply }, None).await;
                        continue;
                    }
                    // Questions sent together are asked together.
                    let mut questions: Vec<Question> = vec![(method, q, reply)];
                    while let Ok(item) = flight.related.try_recv() {
                        let Some(item) = self.screen(item) else { continue };
                        match item {
                            Related::Request { method, params: q, reply } if may_park(&method, &q) => {
                                questions.push((method, q, reply));
                            }
                            other => self.relay(other, token.as_ref()).await,
                        }
                    }
                    let method = self.method.name().unwrap_or_default();
                    let asking = gateway.bridge.park(ctx, method, self.client_params, flight, questions);
                    ctx.trail.upstream_took(upstream_started.elapsed());
                    return self.bounded(gateway, Ok(Payload::Tree(asking)));
                }
                outcome = flight.answer.wait() => {
                    while let Ok(item) = flight.related.try_recv() {
                        self.relay(item, token.as_ref()).await;
                    }
                    ctx.trail.upstream_took(upstream_started.elapsed());
                    return match outcome {
                        Some(outcome) => self.bounded(gateway, outcome),
                        None => Err(Denied::ForwardLost),
                    };
                }
            }
        }
    }

    /// An upstream's outcome through the boundary (`policy::answer::bound`),
    /// counted and sized for the request's record.
    fn bounded(
        &self,
        gateway: &Gateway,
        outcome: Result<Payload, UpstreamFailure>,
    ) -> Result<Payload, Denied> {
        let _policy = trace::policy_span().entered();
        let upstream = self.upstream.name();
        let bound = match outcome {
            // A large answer: its walk may take long.
            Ok(text @ Payload::Text(_)) => {
                offload::heavy(|| answer::bound(self.boundary, upstream, Ok(text)))
            }
            outcome => answer::bound(self.boundary, upstream, outcome),
        };
        if let Ok(result) = &bound.answer
            && gateway.ops.sizes_answers()
        {
            let size = bound.measured.unwrap_or_else(|| match result {
                Payload::Tree(result) => budget::measure(result, usize::MAX - 1),
                Payload::Text(text) => text.get().len(),
            });
            self.ctx.trail.sized(size);
        }
        metrics::redactions(&bound.redactions);
        if bound.redactions.total() > 0 {
            tracing::debug!(
                exact = bound.redactions.exact,
                key = bound.redactions.key,
                pattern = bound.redactions.pattern,
                "secrets redacted from an answer"
            );
        }
        bound.answer
    }

    /// Relays one related message to the client; progress carries the
    /// client's `token` (and is dropped when the request has none).
    async fn relay(&self, item: Related, token: Option<&Value>) {
        let ctx = self.ctx;
        let redactor = &self.snap.live.redactor;
        match item {
            Related::Notification(message) => {
                let (message, redactions) =
                    answer::relayed_notification(redactor, message, token, ctx.wants_logs);
                metrics::redactions(&redactions);
                if let (Some(message), Some(link)) = (message, &ctx.link) {
                    let _ = link.notify(message).await;
                }
            }
            Related::Request {
                method,
                mut params,
                reply,
            } => {
                // Every question an upstream asks passes here or through
                // `drive`'s park: both refuse what `rounds::refusal` refuses.
                if let Some(denied) = self.refusal(&method, &params) {
                    let _ = reply.send(Err(denied.to_rpc()));
                    return;
                }
                // What an upstream asks a client (a sampling prompt, an
                // elicitation message) is upstream text too.
                metrics::redactions(&redactor.redact(&mut params));
                let takes_requests = ctx.link.as_ref().is_some_and(|l| l.takes_requests());
                let can = rounds::client_may_be_asked(
                    ctx.era,
                    &ctx.client_capabilities,
                    takes_requests,
                    &method,
                    &params,
                );
                let link = ctx.link.clone().filter(|_| can);
                let Some(link) = link else {
                    // A modern client is asked only in MRTR rounds (`drive`
                    // parks the questions it may answer); anything else
                    // cannot be put to this client.
                    let _ = reply.send(Err(Denied::ClientCannotAnswer(method).to_rpc()));
                    return;
                };
                // The client's answer may take long: wait for it on its own
                // task so the upstream's answer keeps flowing meanwhile.
                let timeout = self.snap.live.config.server.request_timeout;
                tokio::spawn(async move {
                    let answer = link.request(&method, params, timeout).await;
                    let _ = reply.send(answer.map_err(|denied| denied.to_rpc()));
                });
            }
        }
    }
}
