//! The S-13 cancellation probes, sent raw so that the cancellation always
//! goes out, whether or not the request was answered first (the connector
//! cancels only what is still in flight): a request, its
//! `notifications/cancelled` (over 2026-07-28 HTTP, its response stream
//! closed: that is the cancellation there), then a request that must be
//! answered; and, on a fresh stdio process of the 2025 era, an
//! `initialize` cancelled at once, which must still be answered and its
//! session served.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_core::doctor::observe::{CancelProbe, InitializeCancelProbe, Outcome};
use sluice_core::protocol::{self, Era};

use super::http::{As, Endpoint, initialize_message, modern_message};
use super::raw_stdio::RawProcess;

/// How long a cancelled request's answer is waited for once the next
/// request is answered (an answer is allowed, not expected).
const CANCELLED_GRACE: Duration = Duration::from_millis(500);
/// How long the request to cancel is given before its cancellation.
const BEFORE_CANCEL: Duration = Duration::from_millis(50);

/// The request cancelled and the one sent after it, for an era and
/// whether the server offers tools.
struct Plan {
    cancelled: &'static str,
    next: &'static str,
}

impl Plan {
    fn new(era: Era, tools: bool) -> Plan {
        // 2026-07-28 has no ping; server/discover is always answerable.
        let next = match era {
            Era::Legacy => "ping",
            Era::Modern => "server/discover",
        };
        Plan {
            cancelled: if tools { "tools/list" } else { next },
            next,
        }
    }

    fn message(&self, era: Era, method: &str, id: u64) -> Value {
        let mut m = match era {
            Era::Legacy => json!({"jsonrpc": "2.0", "method": method, "params": {}}),
            Era::Modern => modern_message(method, protocol::MODERN_VERSION),
        };
        m["id"] = json!(id);
        m
    }

    fn probe(&self, cancelled: Option<Outcome>, next: Outcome) -> CancelProbe {
        CancelProbe {
            method: self.cancelled.to_owned(),
            cancelled,
            next_method: self.next.to_owned(),
            next,
        }
    }
}

fn cancelled_message(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "sluice doctor: cancellation probe"}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// On a fresh process: (2025 era) `initialize` and `initialized`, then
/// request 2, its cancellation, and request 3.
pub(super) async fn stdio(
    command: &str,
    args: &[String],
    era: Era,
    tools: bool,
    timeout: Duration,
) -> CancelProbe {
    let plan = Plan::new(era, tools);
    let exchange = async {
        let mut process = RawProcess::start(command, args)?;
        let answer = async {
            if era == Era::Legacy {
                process
                    .send(&initialize_message(protocol::LEGACY_VERSIONS[0]))
                    .await?;
                process.answer(&json!(1)).await?;
                process.send(&initialized()).await?;
            }
            process.send(&plan.message(era, plan.cancelled, 2)).await?;
            process.send(&cancelled_message(2)).await?;
            process.send(&plan.message(era, plan.next, 3)).await?;
            process.answer(&json!(3)).await
        }
        .await;
        process.kill().await;
        answer
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok((next, others))) => {
            let cancelled = others.into_iter().find(|(id, _)| *id == json!(2));
            plan.probe(cancelled.map(|(_, o)| o), next)
        }
        Ok(Err(e)) => plan.probe(None, Outcome::Failed(e)),
        Err(_) => plan.probe(
            None,
            Outcome::Failed(format!("no answer within {timeout:?}")),
        ),
    }
}

/// On a fresh process of the 2025 era: `initialize` followed at once by
/// its cancellation; once answered, `initialized` and a `ping`.
pub(super) async fn stdio_initialize(
    command: &str,
    args: &[String],
    timeout: Duration,
) -> InitializeCancelProbe {
    let exchange = async {
        let mut process = RawProcess::start(command, args)?;
        let probe = async {
            process
                .send(&initialize_message(protocol::LEGACY_VERSIONS[0]))
                .await?;
            process.send(&cancelled_message(1)).await?;
            let (initialize, _) = process.answer(&json!(1)).await?;
            if initialize.result().is_none() {
                return Ok(InitializeCancelProbe {
                    initialize,
                    next: None,
                });
            }
            process.send(&initialized()).await?;
            let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
            process.send(&ping).await?;
            let next = match process.answer(&json!(2)).await {
                Ok((next, _)) => next,
                Err(e) => Outcome::Failed(e),
            };
            Ok(InitializeCancelProbe {
                initialize,
                next: Some(next),
            })
        }
        .await;
        process.kill().await;
        probe
    };
    let failed = |why: String| InitializeCancelProbe {
        initialize: Outcome::Failed(why),
        next: None,
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok(probe)) => probe,
        Ok(Err(e)) => failed(e),
        Err(_) => failed(format!("no answer within {timeout:?}")),
    }
}

/// Over HTTP: in a fresh 2025 session, request 2 with its cancellation
/// posted beside it; in 2026-07-28, request 2's response stream closed
/// unread. Then request 3.
pub(super) async fn http(endpoint: &Endpoint<'_>, era: Era, tools: bool) -> CancelProbe {
    let plan = Plan::new(era, tools);
    let headers_for = |method: &'static str, session: Option<&str>| -> Vec<(String, String)> {
        match (era, session) {
            (Era::Modern, _) => vec![
                (
                    "mcp-protocol-version".into(),
                    protocol::MODERN_VERSION.into(),
                ),
                ("mcp-method".into(), method.into()),
            ],
            (Era::Legacy, Some(s)) => vec![
                ("mcp-session-id".into(), s.into()),
                (
                    "mcp-protocol-version".into(),
                    protocol::LEGACY_VERSIONS[0].into(),
                ),
            ],
            (Era::Legacy, None) => Vec::new(),
        }
    };
    let session = match era {
        Era::Modern => None,
        Era::Legacy => {
            let init = initialize_message(protocol::LEGACY_VERSIONS[0]);
            match endpoint.post(As::First, &init, &[]).await {
                Ok(a) if a.outcome.result().is_some() => a.session,
                Ok(a) => return plan.probe(None, a.outcome),
                Err(e) => return plan.probe(None, Outcome::Failed(e)),
            }
        }
    };
    let sid = session.as_deref();
    let send = |message: Value, headers: Vec<(String, String)>| async move {
        let h: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        endpoint.post(As::First, &message, &h).await
    };
    let outcome = |answer: Result<super::http::RawAnswer, String>| {
        answer.map_or_else(Outcome::Failed, |a| a.outcome)
    };
    if era == Era::Legacy {
        let _ = send(initialized(), headers_for(plan.next, sid)).await;
    }
    let mut request = Box::pin(send(
        plan.message(era, plan.cancelled, 2),
        headers_for(plan.cancelled, sid),
    ));
    let mut cancelled = tokio::time::timeout(BEFORE_CANCEL, &mut request)
        .await
        .ok()
        .map(outcome);
    // The cancellation: a notification beside the request (2025), or the
    // request's stream closed (2026-07-28).
    let follow = async {
        if era == Era::Legacy {
            let _ = send(cancelled_message(2), headers_for(plan.next, sid)).await;
        }
        send(plan.message(era, plan.next, 3), headers_for(plan.next, sid)).await
    };
    let next = if era == Era::Modern || cancelled.is_some() {
        drop(request);
        follow.await
    } else {
        tokio::pin!(follow);
        let next = tokio::select! {
            answer = &mut request => {
                cancelled = Some(outcome(answer));
                follow.await
            }
            next = &mut follow => next,
        };
        if cancelled.is_none()
            && let Ok(answer) = tokio::time::timeout(CANCELLED_GRACE, &mut request).await
        {
            cancelled = Some(outcome(answer));
        }
        next
    };
    endpoint.end_session(As::First, sid).await;
    // A stream closed without an answer is no answer.
    let cancelled = cancelled.filter(|o| !matches!(o, Outcome::Failed(_)));
    plan.probe(cancelled, outcome(next))
}
