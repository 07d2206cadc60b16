//! Forwarding one call, and bridging a legacy upstream's mid-call questions
//! to a 2026-07-28 client as MRTR rounds.
//!
//! A forwarded call (a [`Flight`]) is driven by the request's own task:
//! notifications are relayed as they come, and the answer ends the drive.
//! When the upstream asks the client something (sampling, elicitation,
//! roots):
//!
//! - a legacy client that declared the capability is asked directly, on the
//!   request's stream;
//! - a modern client that declared it gets an `input_required` result. The
//!   flight is **parked** under a random handle, and the client receives a
//!   sealed `requestState` naming it (see `sluice_core::request_state`).
//!   Its retry carries the answers in `inputResponses`; sluice opens the
//!   state, hands the answers to the upstream, and drives the same flight
//!   on. A state opens once: the parked flight is taken on use.
//! - anyone else: the upstream gets an error for its question.
//!
//! A parked flight runs on a task of its own, keeping the upstream call's
//! timeout; one that no retry claims within the request timeout is dropped,
//! which cancels the upstream call. Parked flights live in this
//! process: with several replicas, a retry must reach the same one.

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::FutureExt;
use rand::Rng;
use serde_json::{Map, Value, json};
use sluice_core::jsonrpc::RpcError;
use sluice_core::method::Method;
use sluice_core::payload::Payload;
use sluice_core::policy::Denied;
use sluice_core::request_state::{self, ParkedCall, StateKey};
use sluice_core::upstream_auth::web::on_behalf_of;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::client::RequestCtx;
use crate::upstream::{Call, Connection, Related};
use sluice_core::policy::UpstreamFailure;

/// One forwarded call in progress.
pub(crate) struct Flight {
    /// What the upstream sends about the call before its answer.
    pub(crate) related: mpsc::Receiver<Related>,
    /// The upstream's answer, on its way.
    pub(crate) answer: Answer,
}

/// What the upstream answered, or why it did not.
type Outcome = Result<Payload, UpstreamFailure>;

/// A call's answer: polled by the request that drives it (no task of its
/// own), or, once parked for a client's input, on a task of its own so that
/// the upstream call keeps its timeout while nobody drives it. Dropping
/// either drops the upstream request, which cancels it upstream.
pub(crate) enum Answer {
    /// Driven by the request's own task.
    Inline(Pin<Box<dyn Future<Output = Outcome> + Send>>),
    /// Running on its own task while parked.
    Detached {
        done: oneshot::Receiver<Outcome>,
        _task: AbortOnDrop,
    },
}

/// Aborting the task drops the upstream request, which cancels it upstream.
pub(crate) struct AbortOnDrop(JoinHandle<()>);

struct Parked {
    flight: Flight,
    /// Who asked: only the same principal may answer (its `key`).
    principal: String,
    /// Answers owed to the upstream, by `inputRequests` key.
    replies: Vec<(String, oneshot::Sender<Result<Value, RpcError>>)>,
    expires: Instant,
}

/// The parked flights and the key that seals their states.
pub(crate) struct Bridge {
    key: StateKey,
    parked: Mutex<HashMap<String, Parked>>,
    ttl: Duration,
}

/// A question from the upstream: method, params, and where the answer goes.
pub(crate) type Question = (String, Value, oneshot::Sender<Result<Value, RpcError>>);

/// The params an MRTR state binds: all the client sent, with what a large
/// request left as text (the only place such a request is read whole, and
/// only for a call an upstream asked a question in).
fn bound_params<'a>(ctx: &RequestCtx, params: &'a Value) -> Cow<'a, Value> {
    match &ctx.carried {
        Some(carried) => Cow::Owned(carried.whole(params)),
        None => Cow::Borrowed(params),
    }
}

// === impl Flight ===

impl Flight {
    /// Starts `method` on `conn`; it runs as the caller drives it.
    /// `headers` are the `Mcp-Param-*` headers for a modern HTTP upstream.
    pub(crate) fn start(
        conn: std::sync::Arc<Connection>,
        method: &str,
        params: Value,
        ctx: &RequestCtx,
        timeout: Duration,
        headers: Vec<(String, String)>,
    ) -> Flight {
        let (tx, related) = mpsc::channel(64);
        let method = method.to_owned();
        let caps = ctx.client_capabilities.clone();
        let principal = on_behalf_of(ctx.scoped, &ctx.principal);
        let carried = ctx.carried.clone();
        let answer = Box::pin(async move {
            conn.carry(Call {
                method: &method,
                params,
                carried,
                client_capabilities: &caps,
                related: Some(tx),
                timeout,
                headers: &headers,
                on_behalf_of: &principal,
            })
            .await
        });
        Flight {
            related,
            answer: Answer::Inline(answer),
        }
    }

    /// The same flight, running on its own task from now on (it is being
    /// parked: nobody drives it until the client answers).
    fn detach(self) -> Flight {
        let answer = match self.answer {
            Answer::Inline(answer) => {
                let (done_tx, done) = oneshot::channel();
                let task = tokio::spawn(async move {
                    let _ = done_tx.send(answer.await);
                });
                Answer::Detached {
                    done,
                    _task: AbortOnDrop(task),
                }
            }
            detached @ Answer::Detached { .. } => detached,
        };
        Flight {
            related: self.related,
            answer,
        }
    }
}

// === impl Answer ===

impl Answer {
    /// Waits for the upstream's answer; `None` when the call panicked (on
    /// its task, or inline: a bug in forwarding fails this call only, as
    /// it did on a task of its own). Cancel-safe: dropping the wait keeps
    /// the call.
    pub(crate) async fn wait(&mut self) -> Option<Outcome> {
        match self {
            Answer::Inline(answer) => AssertUnwindSafe(answer.as_mut()).catch_unwind().await.ok(),
            Answer::Detached { done, .. } => done.await.ok(),
        }
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

// === impl Bridge ===

impl Bridge {
    pub(crate) fn new(ttl: Duration) -> Self {
        Bridge {
            key: StateKey::new(rand::rng().random()),
            parked: Mutex::new(HashMap::new()),
            ttl,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether this request is a retry of a call this sluice parked (a
    /// modern upstream's own state, or another sluice's, is forwarded).
    pub(crate) fn is_resumption(&self, ctx: &RequestCtx, method: Method, params: &Value) -> bool {
        ctx.era == sluice_core::protocol::Era::Modern
            && method.is_bridgeable()
            && params
                .get("requestState")
                .and_then(Value::as_str)
                .is_some_and(|s| self.key.issued(s))
    }

    /// Parks a flight with its questions; returns the `input_required`
    /// result for the client.
    pub(crate) fn park(
        &self,
        ctx: &RequestCtx,
        method: &str,
        params: &Value,
        flight: Flight,
        questions: Vec<Question>,
    ) -> Value {
        let handle: [u8; 16] = rand::rng().random();
        let handle: String = handle.iter().map(|b| format!("{b:02x}")).collect();
        let state = self.key.seal(&ParkedCall {
            handle: handle.clone(),
            method: method.to_owned(),
            params_digest: request_state::params_digest(&bound_params(ctx, params)),
            expires_at_ms: now_ms().saturating_add(self.ttl.as_millis() as u64),
        });
        let mut requests = Map::new();
        let mut replies = Vec::new();
        for (method, params, reply) in questions {
            let key = format!("sluice-{}", replies.len() + 1);
            requests.insert(key.clone(), json!({"method": method, "params": params}));
            replies.push((key, reply));
        }
        let mut parked = self.lock();
        let now = Instant::now();
        parked.retain(|_, p| p.expires > now);
        parked.insert(
            handle,
            Parked {
                flight: flight.detach(),
                principal: ctx.principal.key(),
                replies,
                expires: now + self.ttl,
            },
        );
        json!({"resultType": "input_required", "inputRequests": requests, "requestState": state})
    }

    /// Opens a retry's state, gives the upstream the client's answers, and
    /// returns the flight to drive on.
    pub(crate) fn resume(
        &self,
        ctx: &RequestCtx,
        method: &str,
        params: &Value,
    ) -> Result<Flight, Denied> {
        let token = params
            .get("requestState")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let call = self
            .key
            .open(token, method, &bound_params(ctx, params), now_ms())
            .map_err(|e| Denied::invalid_params(e.to_string()))?;
        let parked = {
            let mut parked = self.lock();
            let now = Instant::now();
            parked.retain(|_, p| p.expires > now);
            // Another principal's state is no key to the call (its owner
            // may still answer it).
            let owned = parked
                .get(&call.handle)
                .is_some_and(|p| p.principal == ctx.principal.key());
            if owned {
                parked.remove(&call.handle)
            } else {
                None
            }
        };
        let parked = parked.ok_or_else(|| {
            Denied::invalid_params(
                "requestState refers to no open call: already answered, or expired",
            )
        })?;
        let answers = params.get("inputResponses").and_then(Value::as_object);
        for (key, reply) in parked.replies {
            // The upstream is told its question went unanswered.
            let answer = answers.and_then(|a| a.get(&key)).cloned().ok_or_else(|| {
                Denied::invalid_params(format!("the client gave no answer for {key}")).to_rpc()
            });
            let _ = reply.send(answer);
        }
        Ok(parked.flight)
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
