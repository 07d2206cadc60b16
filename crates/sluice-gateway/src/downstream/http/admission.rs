//! The layer in front of `/mcp` (and `/metrics`, and the console's
//! `/ui/`): the core's header rules over the request's `HeaderMap`, then
//! `[auth]`, all before the body is read.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, Method, Uri};
use axum::middleware::Next;
use axum::response::Response;
use sluice_core::access::Principal;
use sluice_core::health::{self, HealthDetail};
use sluice_core::policy::Denied;
use sluice_core::policy::admission::{self, Headers};

use super::HttpState;
use crate::auth::Refusal;

/// The core's view of a request's header fields.
pub(super) struct HeaderView<'a>(pub(super) &'a HeaderMap);

impl Headers for HeaderView<'_> {
    fn get_all(&self, name: &str) -> Vec<Option<&str>> {
        self.0
            .get_all(name)
            .iter()
            .map(|value| value.to_str().ok())
            .collect()
    }

    fn count(&self) -> usize {
        self.0.len()
    }

    fn bytes(&self) -> usize {
        self.0
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len())
            .sum()
    }
}

/// The layer in front of `/mcp`: [`admit`], then the handler with the
/// principal in the request's extensions.
pub(super) async fn admission(
    State(state): State<Arc<HttpState>>,
    mut request: Request,
    next: Next,
) -> Response {
    // The request's parts, not the request: its body is not `Sync`.
    let admitted = admit(&state, request.method(), request.uri(), request.headers()).await;
    match admitted {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(denied) => state.refuse_early(denied),
    }
}

/// The guards every `/mcp` request passes before its body is read:
/// headers, target and origin, then who is calling, then (for a POST)
/// what its body is declared to be.
async fn admit(
    state: &HttpState,
    method: &Method,
    target: &Uri,
    headers: &HeaderMap,
) -> Result<Arc<Principal>, Denied> {
    check_transport(state, target, headers)?;
    let principal = authenticate(state, headers).await?;
    if method == Method::POST {
        admission::check_content_type(&HeaderView(headers))?;
    }
    Ok(principal)
}

/// Who is calling (`[auth]`), from the request's one credential.
async fn authenticate(state: &HttpState, headers: &HeaderMap) -> Result<Arc<Principal>, Denied> {
    let view = HeaderView(headers);
    let authorization = admission::credential(&view)?;
    match state.gateway.auth().authenticate(authorization).await {
        Ok(principal) => Ok(Arc::new(principal)),
        Err(refusal) => {
            let denied = unauthenticated(refusal);
            tracing::info!("refused an HTTP request: {denied}");
            Err(denied)
        }
    }
}

/// The layer in front of `/ui/`: the console's transport rules (its own
/// origin is admitted, for its forms), then `[auth]`, with the principal
/// in the request's extensions.
pub(super) async fn console_admission(
    State(state): State<Arc<HttpState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let checked = sluice_core::console::check_transport(
        &HeaderView(request.headers()),
        request.uri().authority().map(Authority::as_str),
        state.loopback,
        &state.gateway.live().config.server.allowed_origins,
    );
    let admitted = match checked {
        Ok(()) => authenticate(&state, request.headers()).await,
        Err(denied) => Err(denied),
    };
    match admitted {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(denied) => state.refuse_early(denied),
    }
}

/// How much of `/health` this caller sees: the upstreams only to one whose
/// credential verifies, when `[auth]` is on. A missing, bad or doubled
/// credential is no refusal here: it just sees less.
pub(super) async fn health_detail(state: &HttpState, headers: &HeaderMap) -> HealthDetail {
    let auth = state.gateway.auth();
    let verified = match admission::credential(&HeaderView(headers)) {
        Ok(Some(credential)) if auth.is_on() => auth.authenticate(Some(credential)).await.is_ok(),
        _ => false,
    };
    health::health_detail(auth.is_on(), verified)
}

/// Header caps, the request target against `Host`, then the
/// DNS-rebinding guard.
pub(super) fn check_transport(
    state: &HttpState,
    target: &Uri,
    headers: &HeaderMap,
) -> Result<(), Denied> {
    admission::check_transport(
        &HeaderView(headers),
        target.authority().map(Authority::as_str),
        state.loopback,
        &state.gateway.live().config.server.allowed_origins,
    )
}

/// The refusal `[auth]` makes; its challenge is rebuilt from it when it is
/// encoded (`encode::challenge`).
fn unauthenticated(refusal: Refusal) -> Denied {
    match refusal {
        Refusal::Missing => Denied::Unauthorized(None),
        Refusal::Invalid(why) => Denied::Unauthorized(Some(why)),
        Refusal::Insufficient(scopes) => Denied::TokenLacksScopes(scopes),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn the_view_reads_every_field_and_marks_what_is_not_text() {
        let mut h = HeaderMap::new();
        h.insert("host", HeaderValue::from_static("localhost"));
        h.append("origin", HeaderValue::from_static("http://localhost:1"));
        h.append(
            "origin",
            HeaderValue::from_bytes(b"http://\xffx").expect("obs-text is a valid value"),
        );
        let view = HeaderView(&h);
        assert_eq!(view.get_all("Origin"), [Some("http://localhost:1"), None]);
        assert_eq!(view.get("host"), Some(Some("localhost")));
        assert_eq!(view.get("mcp-method"), None);
        assert_eq!(view.count(), 3);
        assert_eq!(view.bytes(), 4 + 9 + 6 + 18 + 6 + 9);
    }

    #[test]
    fn auth_refusals_keep_their_words() {
        let cases = [
            (
                Refusal::Missing,
                401,
                "Unauthorized: send Authorization: Bearer <token>",
            ),
            (
                Refusal::Invalid("the token expired".into()),
                401,
                "Unauthorized: the token expired",
            ),
            (
                Refusal::Insufficient(vec!["mcp".into()]),
                403,
                "Forbidden: the token lacks the scope(s) mcp",
            ),
        ];
        for (refusal, status, message) in cases {
            let denied = unauthenticated(refusal);
            assert_eq!(
                denied.http_status(sluice_core::protocol::Era::Legacy),
                status
            );
            let rpc = denied.to_rpc();
            assert_eq!(rpc.code, sluice_core::jsonrpc::INVALID_REQUEST);
            assert_eq!(rpc.message, message);
        }
    }
}
