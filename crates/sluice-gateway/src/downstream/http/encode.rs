//! What goes back on the wire: a JSON answer, an SSE stream, and the one
//! place a [`Denied`] becomes an HTTP response ([`refusal`]: its status
//! from [`Denied::http_status`], `Retry-After` for a rate limit,
//! `WWW-Authenticate` for a missing or bad token or a missing scope).

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use serde_json::Value;
use sluice_core::jsonrpc;
use sluice_core::payload::Payload;
use sluice_core::policy::Denied;
use sluice_core::policy::admission::field;
use sluice_core::protocol::Era;

use crate::auth::{Auth, Refusal as Refusal401};

/// How often an SSE stream with nothing to say sends a comment, which also
/// tells sluice when the client is gone.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A refusal's answer to the request `id` of `era`: its JSON-RPC error (or
/// a read-only tool's `isError` result), with the status and headers the
/// refusal calls for.
pub(super) fn refusal(auth: &Auth, era: Era, id: Value, denied: Denied) -> Response {
    let (status, extra) = status_and_headers(auth, era, Some(&denied));
    let body = jsonrpc::response(id, denied.to_answer());
    with_headers(json_response(status, &body, None), extra)
}

/// The router's plain JSON answer (already in the client's era), with the
/// status and headers its refusal calls for: only sluice's own refusals,
/// never an upstream's error code, give 429 and 403.
pub(super) fn answer_response(
    auth: &Auth,
    era: Era,
    answer: Payload,
    refused: Option<&Denied>,
) -> Response {
    let (status, extra) = status_and_headers(auth, era, refused);
    let body = match answer {
        Payload::Tree(answer) => serde_json::to_vec(&answer).unwrap_or_default(),
        // Its text is the body: no copy.
        Payload::Text(text) => Box::<str>::from(text).into_string().into_bytes(),
    };
    with_headers(json_body(status, body, None), extra)
}

/// What a refusal sets besides the body: the status from
/// [`Denied::http_status`], `Retry-After`, `WWW-Authenticate`.
fn status_and_headers(
    auth: &Auth,
    era: Era,
    denied: Option<&Denied>,
) -> (StatusCode, Vec<(HeaderName, String)>) {
    let Some(denied) = denied else {
        return (StatusCode::OK, Vec::new());
    };
    let status =
        StatusCode::from_u16(denied.http_status(era)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut extra: Vec<(HeaderName, String)> = Vec::new();
    if let Some(secs) = denied.retry_after_secs() {
        extra.push((header::RETRY_AFTER, secs.to_string()));
    }
    if let Some(refusal) = challenge(denied) {
        extra.push((header::WWW_AUTHENTICATE, auth.challenge(&refusal)));
    }
    (status, extra)
}

fn with_headers(mut response: Response, extra: Vec<(HeaderName, String)>) -> Response {
    for (name, value) in extra {
        if let Ok(value) = HeaderValue::try_from(value) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// The `[auth]` refusal whose challenge a refusal carries, if any.
fn challenge(denied: &Denied) -> Option<Refusal401> {
    match denied {
        Denied::Unauthorized(None) => Some(Refusal401::Missing),
        Denied::Unauthorized(Some(why)) => Some(Refusal401::Invalid(why.clone())),
        Denied::TokenLacksScopes(scopes) => Some(Refusal401::Insufficient(scopes.clone())),
        other => other
            .required_scopes()
            .map(|scopes| Refusal401::Insufficient(scopes.to_vec())),
    }
}

// --- bodies ---

/// `body` as `application/json`, with the session id a new session gets.
pub(super) fn json_response(
    status: StatusCode,
    body: &Value,
    session: Option<HeaderValue>,
) -> Response {
    json_body(
        status,
        serde_json::to_vec(body).unwrap_or_default(),
        session,
    )
}

/// JSON bytes as `application/json`.
fn json_body(status: StatusCode, bytes: Vec<u8>, session: Option<HeaderValue>) -> Response {
    let mut response = (status, Body::from(bytes)).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(session) = session {
        h.insert(field::SESSION_ID, session);
    }
    response
}

/// `messages` as an SSE stream, unbuffered by proxies.
pub(super) fn sse_response(messages: impl Stream<Item = Payload> + Send + 'static) -> Response {
    let events = messages.map(|m| {
        Ok::<_, Infallible>(Event::default().data(serde_json::to_string(&m).unwrap_or_default()))
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn auth() -> Auth {
        Auth::new(&sluice_core::config::AuthConfig::default())
    }

    async fn body(response: Response) -> Value {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        serde_json::from_slice(&bytes).expect("JSON")
    }

    #[test]
    fn only_sluices_own_refusals_set_429_and_403() {
        let auth = auth();
        // An upstream's error that happens to use sluice's codes is
        // relayed as it is, with 200: its data chooses no challenge.
        for code in [-32011, -32012] {
            let answer = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "x",
                "data": {"requiredScopes": ["admin:all"], "retryAfterMs": 5}}});
            let relayed = Denied::Upstream(sluice_core::policy::UpstreamFailure::Rpc(
                sluice_core::jsonrpc::RpcError::new(code, "x"),
            ));
            let r = answer_response(&auth, Era::Modern, answer.clone().into(), Some(&relayed));
            assert_eq!(r.status(), StatusCode::OK);
            assert!(r.headers().get(header::WWW_AUTHENTICATE).is_none());
            assert!(r.headers().get(header::RETRY_AFTER).is_none());
        }
        let answer = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32011, "message": "x"}});
        let limited = Denied::RateLimited {
            tool: "t".into(),
            retry_after: Duration::from_millis(1500),
        };
        let r = answer_response(&auth, Era::Legacy, answer.clone().into(), Some(&limited));
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
        let scoped = Denied::InsufficientScope {
            target: "t".into(),
            required: vec!["files:write".into()],
        };
        let r = answer_response(&auth, Era::Modern, answer.clone().into(), Some(&scoped));
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            r.headers()[header::WWW_AUTHENTICATE],
            "Bearer realm=\"mcp\", error=\"insufficient_scope\", error_description=\"the token lacks a scope this operation needs\", scope=\"files:write\""
        );
    }

    #[tokio::test]
    async fn a_denied_sets_its_status_and_headers() {
        let auth = auth();
        let limited = Denied::RateLimited {
            tool: "a__t".into(),
            retry_after: Duration::from_millis(1500),
        };
        let r = refusal(&auth, Era::Legacy, json!(1), limited);
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
        assert!(r.headers().get(header::WWW_AUTHENTICATE).is_none());
        assert_eq!(body(r).await["error"]["code"], -32011);
        let scoped = Denied::InsufficientScope {
            target: "a__t".into(),
            required: vec!["files:write".into()],
        };
        let r = refusal(&auth, Era::Modern, json!(1), scoped);
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            r.headers()[header::WWW_AUTHENTICATE],
            "Bearer realm=\"mcp\", error=\"insufficient_scope\", error_description=\"the token lacks a scope this operation needs\", scope=\"files:write\""
        );
        let missing = refusal(&auth, Era::Legacy, Value::Null, Denied::Unauthorized(None));
        assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            missing.headers()[header::WWW_AUTHENTICATE],
            auth.challenge(&Refusal401::Missing)
        );
        let answer = body(missing).await;
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
                "message": "Unauthorized: send Authorization: Bearer <token>"}})
        );
        // A transport refusal: its status, no challenge.
        let r = refusal(&auth, Era::Legacy, Value::Null, Denied::SessionNotFound);
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert!(r.headers().get(header::WWW_AUTHENTICATE).is_none());
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
    }
}
