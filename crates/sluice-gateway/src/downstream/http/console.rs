//! The console's routes under `/ui/`: behind `console_admission` (the
//! Host and Origin rules of `/mcp`, its own origin admitted, then
//! `[auth]`), each page with a strict Content-Security-Policy. A change
//! (an approval) also needs the console's access rule and a form token
//! that verifies; both are the core's ([`sluice_core::console`]).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{Extension, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router, middleware};
use maud::Markup;
use serde::Deserialize;
use sluice_core::access::Principal;
use sluice_core::console::{self, ApprovalForm, ReadOnly, Refusal};

use super::{HttpState, admission};
use crate::console::pages::{Nav, Notice};
use crate::console::{self as pages, AuditParams, CSS, CatalogParams, DriftParams, EntryParams};
use crate::gateway::ApproveError;

/// No script, no inline style, nothing from elsewhere, never framed.
const CSP: &str = "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The console's routes, to merge into a listener's router.
pub(super) fn routes(state: &Arc<HttpState>) -> Router<Arc<HttpState>> {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(upstreams))
        .route("/ui/console.css", get(stylesheet))
        .route("/ui/catalog", get(catalog))
        .route("/ui/catalog/entry", get(entry))
        .route("/ui/drift", get(drift))
        .route("/ui/drift/approve", post(approve))
        .route("/ui/audit", get(audit))
        .route("/ui/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(state),
            admission::console_admission,
        ))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A page, with the console's security headers.
fn page(status: StatusCode, markup: &Markup) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            // Not `no-referrer`: with it a browser posts the forms with `Origin:
            // null`, which is no origin the console can admit.
            (header::REFERRER_POLICY, "same-origin"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        markup.0.clone(),
    )
        .into_response()
}

async fn stylesheet() -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/css; charset=utf-8"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        CSS,
    )
        .into_response()
}

async fn upstreams(State(state): State<Arc<HttpState>>) -> Response {
    page(StatusCode::OK, &pages::upstreams_page(&state.gateway))
}

async fn catalog(
    State(state): State<Arc<HttpState>>,
    Query(params): Query<CatalogParams>,
) -> Response {
    page(
        StatusCode::OK,
        &pages::catalog_page(&state.gateway, &params),
    )
}

async fn entry(State(state): State<Arc<HttpState>>, Query(params): Query<EntryParams>) -> Response {
    match pages::entry_page(&state.gateway, &params) {
        Some(markup) => page(StatusCode::OK, &markup),
        None => page(
            StatusCode::NOT_FOUND,
            &pages::message_page(
                "No such entry",
                Nav::Catalog,
                "No upstream's last complete read lists this entry.",
            ),
        ),
    }
}

/// Whether this principal may change anything through this listener.
fn access(state: &HttpState, principal: &Principal) -> Result<(), ReadOnly> {
    let live = state.gateway.live();
    console::access(
        &live.config.console,
        live.auth.is_on(),
        principal,
        state.loopback,
    )
}

/// Whether this request may approve: `Ok` with a fresh form token, or
/// why it is read-only.
fn may_change(state: &HttpState, principal: &Principal) -> Result<String, Refusal> {
    access(state, principal)?;
    Ok(state.gateway.csrf.issue(&principal.key(), now_ms()))
}

fn drift_response(
    state: &HttpState,
    principal: &Principal,
    offset: usize,
    status: StatusCode,
    notice: Option<&Notice>,
) -> Response {
    let markup = match may_change(state, principal) {
        Ok(token) => pages::drift_page(&state.gateway, offset, Some(&token), None, notice),
        Err(why) => pages::drift_page(&state.gateway, offset, None, Some(&why.to_string()), notice),
    };
    page(status, &markup)
}

async fn drift(
    State(state): State<Arc<HttpState>>,
    Extension(principal): Extension<Arc<Principal>>,
    Query(params): Query<DriftParams>,
) -> Response {
    let offset = params.offset.unwrap_or_default();
    drift_response(&state, &principal, offset, StatusCode::OK, None)
}

/// The fields of an approval form.
#[derive(Debug, Default, Deserialize)]
struct ApproveFields {
    csrf: Option<String>,
    target: Option<String>,
    upstream: Option<String>,
    list: Option<String>,
    key: Option<String>,
    accept_findings: Option<String>,
}

/// What a posted approval form asks for, if this principal may ask it:
/// the access rule, then the form's token, then the form itself.
fn check_approval(
    state: &HttpState,
    principal: &Principal,
    fields: &ApproveFields,
) -> Result<console::Approval, Refusal> {
    access(state, principal)?;
    let live = state.gateway.live();
    state
        .gateway
        .csrf
        .verify(fields.csrf.as_deref(), &principal.key(), now_ms())?;
    let configured = live.upstream_names();
    let form = ApprovalForm {
        target: fields.target.as_deref(),
        upstream: fields.upstream.as_deref(),
        list: fields.list.as_deref(),
        key: fields.key.as_deref(),
        accept_findings: fields.accept_findings.is_some(),
    };
    form.approval(&configured)
}

async fn approve(
    State(state): State<Arc<HttpState>>,
    Extension(principal): Extension<Arc<Principal>>,
    Form(fields): Form<ApproveFields>,
) -> Response {
    let Some(site) = &state.console else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let checked = check_approval(&state, &principal, &fields);
    let approval = match checked {
        Ok(approval) => approval,
        Err(refusal) => {
            tracing::info!(principal = %principal.key(), "the console refused an approval: {refusal}");
            let status =
                StatusCode::from_u16(refusal.http_status()).unwrap_or(StatusCode::FORBIDDEN);
            return page(
                status,
                &pages::message_page("Not approved", Nav::Drift, &refusal.to_string()),
            );
        }
    };
    match state.gateway.approve(&approval, site.lockfile()).await {
        Ok(plan) => {
            let notice = Notice {
                text: format!(
                    "Approved into {}: {}.",
                    site.lockfile().display(),
                    crate::gateway::approval_words(&plan)
                ),
                error: false,
            };
            drift_response(&state, &principal, 0, StatusCode::OK, Some(&notice))
        }
        Err(ApproveError::Refused(refusal)) => {
            let status =
                StatusCode::from_u16(refusal.http_status()).unwrap_or(StatusCode::CONFLICT);
            let notice = Notice {
                text: refusal.to_string(),
                error: true,
            };
            drift_response(&state, &principal, 0, status, Some(&notice))
        }
        Err(e @ ApproveError::Write(_)) => {
            tracing::error!("the console could not approve: {e}");
            page(
                StatusCode::INTERNAL_SERVER_ERROR,
                &pages::message_page("Not approved", Nav::Drift, &e.to_string()),
            )
        }
    }
}

async fn audit(State(state): State<Arc<HttpState>>, Query(params): Query<AuditParams>) -> Response {
    let Some(site) = &state.console else {
        return StatusCode::NOT_FOUND.into_response();
    };
    page(
        StatusCode::OK,
        &pages::audit_page(&state.gateway, site, &params, now_ms()).await,
    )
}

async fn metrics(State(state): State<Arc<HttpState>>) -> Response {
    page(
        StatusCode::OK,
        &pages::metrics_page(&state.gateway, now_ms()),
    )
}
