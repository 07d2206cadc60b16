//! sluice's login pages for principals (`[auth]` on): how a principal logs
//! in for itself to an `auth = "oauth"` upstream, from the URL of a
//! `-32013` (`sluice_core::upstream_auth::web` says the rules).
//!
//! - `GET /oauth/login/<upstream>?ticket=…`: the consent page (who, which
//!   upstream, where the tokens come back), never framed; it sets the
//!   consent cookie its form echoes.
//! - `POST /oauth/login/<upstream>`: the principal allows; the login starts
//!   (discovery, registration, PKCE) and the browser goes to the
//!   authorization server with the flow cookie set.
//! - `GET /oauth/callback`: the login is taken once, by the browser that
//!   started it, and kept in the vault under the principal.
//!
//! No bearer token reaches these routes (a browser has none): the ticket
//! says who, the cookies say which browser.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Form, Router};
use maud::{DOCTYPE, Markup, html};
use serde::Deserialize;
use sluice_core::config::{UpstreamConfig, UpstreamTransport};
use sluice_core::upstream_auth::VaultKey;
use sluice_core::upstream_auth::web::{
    CALLBACK_PATH, CONSENT_COOKIE, FLOW_COOKIE, FLOW_TTL_MS, LOGIN_PATH, callback_url, cookie,
    set_cookie,
};

use super::HttpState;
use crate::upstream::oauth::login::{self, Callback, CallbackQuery};
use crate::upstream::oauth::now_ms;

/// Nothing from elsewhere, no script, never framed (S-9: clickjacking). No
/// `form-action`: browsers apply it to the redirect a form's answer makes,
/// and the consent form's answer is the redirect to the authorization
/// server, on an origin known only then.
const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'";

/// The login routes, to merge into the MCP listener's router.
pub(super) fn routes() -> Router<Arc<HttpState>> {
    Router::new()
        .route(
            &format!("{LOGIN_PATH}{{upstream}}"),
            get(consent_page).post(consent_given),
        )
        .route(CALLBACK_PATH, get(callback))
}

#[derive(Deserialize)]
struct TicketQuery {
    ticket: String,
}

#[derive(Deserialize)]
struct ConsentForm {
    ticket: String,
    consent: String,
}

/// A page with the login pages' security headers, and cookies to set.
fn page(status: StatusCode, markup: Markup, cookies: &[String]) -> Response {
    let mut response = (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        markup.0,
    )
        .into_response();
    for c in cookies {
        if let Ok(value) = c.parse() {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

fn shell(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { (title) } }
            body style="font-family: sans-serif; max-width: 40em; margin: 3em auto" { (body) }
        }
    }
}

fn refusal(status: StatusCode, why: &str) -> Response {
    let body = html! { h1 { "sluice: no login" } p { (why) } };
    page(status, shell("sluice login", body), &[])
}

/// The upstream `name`, when it logs in with OAuth.
fn oauth_upstream(state: &HttpState, name: &str) -> Option<UpstreamConfig> {
    state
        .gateway
        .live()
        .config
        .upstreams
        .iter()
        .find(|u| u.name == name)
        .filter(|u| matches!(u.transport, UpstreamTransport::Http { oauth: Some(_), .. }))
        .cloned()
}

fn cookie_of<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| cookie(h, name))
}

async fn consent_page(
    State(state): State<Arc<HttpState>>,
    Path(upstream): Path<String>,
    Query(query): Query<TicketQuery>,
) -> Response {
    let logins = &state.gateway.web_logins;
    let ticket = match logins.tickets.open(&query.ticket, &upstream, now_ms()) {
        Ok(ticket) => ticket,
        Err(e) => return refusal(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let Some(config) = oauth_upstream(&state, &upstream) else {
        return refusal(StatusCode::NOT_FOUND, "no such upstream logs in here");
    };
    let UpstreamTransport::Http { url, oauth, .. } = &config.transport else {
        return refusal(StatusCode::NOT_FOUND, "no such upstream logs in here");
    };
    let nonce: [u8; 16] = rand::random();
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let consent = logins.tickets.consent_token(&query.ticket, &nonce);
    let public_url = state.gateway.live().config.server.public_url();
    let scopes = oauth
        .as_ref()
        .map(|o| o.scopes.join(" "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "those the upstream asks for".to_owned());
    let body = html! {
        h1 { "Connect " (upstream) " for " (ticket.principal) "?" }
        p { "sluice will log in to the MCP server " code { (url) } " for the sluice principal "
            strong { (ticket.principal) } " only, and use the tokens for that principal's calls." }
        ul {
            li { "Scopes asked for: " code { (scopes) } }
            li { "Tokens come back to: " code { (callback_url(&public_url)) } }
        }
        p { "Allow only if you asked for this login yourself, as " (ticket.principal) "." }
        form method="post" action={ (LOGIN_PATH) (upstream) } {
            input type="hidden" name="ticket" value=(query.ticket);
            input type="hidden" name="consent" value=(consent);
            button type="submit" { "Allow and continue to the server's login" }
        }
    };
    let cookie = set_cookie(CONSENT_COOKIE, &consent, FLOW_TTL_MS / 1000);
    page(StatusCode::OK, shell("sluice login", body), &[cookie])
}

async fn consent_given(
    State(state): State<Arc<HttpState>>,
    Path(upstream): Path<String>,
    headers: HeaderMap,
    Form(form): Form<ConsentForm>,
) -> Response {
    let gateway = &state.gateway;
    let logins = &gateway.web_logins;
    let ticket = match logins.tickets.open(&form.ticket, &upstream, now_ms()) {
        Ok(ticket) => ticket,
        Err(e) => return refusal(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    if let Err(e) = logins.tickets.check_consent(
        &form.ticket,
        &form.consent,
        cookie_of(&headers, CONSENT_COOKIE),
    ) {
        return refusal(StatusCode::FORBIDDEN, &e.to_string());
    }
    let (Some(config), Some(vault)) = (oauth_upstream(&state, &upstream), gateway.vault()) else {
        return refusal(StatusCode::NOT_FOUND, "no such upstream logs in here");
    };
    let key = VaultKey {
        principal: ticket.principal.clone(),
        upstream: upstream.clone(),
    };
    let redirect_uri = callback_url(&gateway.live().config.server.public_url());
    let begun = match login::begin(&config, &vault, &key, &redirect_uri, &[]).await {
        Ok(begun) => begun,
        Err(e) => return refusal(StatusCode::BAD_GATEWAY, &e.to_string()),
    };
    let (Some(flow_state), auth_url) = (begun.state(), begun.auth_url.clone()) else {
        return refusal(
            StatusCode::BAD_GATEWAY,
            "the authorization URL has no state",
        );
    };
    if let Err(e) = logins
        .start(&flow_state, &ticket.principal, &upstream, now_ms(), begun)
        .await
    {
        return refusal(StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
    }
    let mut response = Redirect::to(&auth_url).into_response();
    for c in [
        set_cookie(FLOW_COOKIE, &flow_state, FLOW_TTL_MS / 1000),
        set_cookie(CONSENT_COOKIE, "", 0),
    ] {
        if let Ok(value) = c.parse() {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

async fn callback(
    State(state): State<Arc<HttpState>>,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let Some(flow_state) = query.state.clone() else {
        return refusal(StatusCode::BAD_REQUEST, "the redirect carried no state");
    };
    let gateway = &state.gateway;
    let finished = match gateway
        .web_logins
        .finish(&flow_state, cookie_of(&headers, FLOW_COOKIE), now_ms())
        .await
    {
        Ok(finished) => finished,
        Err(e) => return refusal(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let clear = set_cookie(FLOW_COOKIE, "", 0);
    let refused = query.refusal();
    let code = match (query.code, refused) {
        (Some(code), None) => code,
        (_, why) => {
            let why = format!(
                "the authorization server refused: {}",
                why.unwrap_or_else(|| "no code came back".into())
            );
            return page(
                StatusCode::BAD_REQUEST,
                shell("sluice login", html! { p { (why) } }),
                &[clear],
            );
        }
    };
    let Some(vault) = gateway.vault() else {
        return refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            "this sluice keeps no logins",
        );
    };
    let callback = Callback {
        code,
        state: flow_state,
        iss: query.iss,
    };
    match finished.value.finish(&vault, &callback).await {
        Ok(done) => {
            let body = html! {
                h1 { "Logged in" }
                p { "sluice logged " strong { (finished.principal) } " in to " (finished.upstream)
                    " (scope " code { (done.granted.join(" ")) } "). You can close this tab and call the tool again." }
            };
            page(StatusCode::OK, shell("sluice login", body), &[clear])
        }
        Err(e) => page(
            StatusCode::BAD_GATEWAY,
            shell("sluice login", html! { p { (e.to_string()) } }),
            &[clear],
        ),
    }
}
