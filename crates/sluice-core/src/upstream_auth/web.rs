//! A principal's own login to an upstream, through the pages sluice serves
//! under `/oauth/` when it has `[auth]`: each principal's tokens are its
//! own (a token vault), never another principal's, never sluice's.
//!
//! 1. A call of a principal who has no login to an `auth = "oauth"`
//!    upstream fails with `-32013` and a login URL:
//!    `<public_url>/oauth/login/<upstream>?ticket=<ticket>`, the ticket
//!    sealing who and what for, valid [`TICKET_TTL_MS`].
//! 2. `GET` of that URL shows the consent page (S-9): the principal, the
//!    upstream and its URL, the authorization server, the scopes, the
//!    redirect URI; never in a frame. It sets the consent cookie
//!    ([`CONSENT_COOKIE`]), whose value the form carries back (a cross-site
//!    `POST` does not carry a `SameSite=Lax` cookie).
//! 3. `POST` (the principal allows): the consent is kept in the vault, then
//!    the authorization starts; its `state` is recorded in [`LoginFlows`]
//!    and set in the flow cookie ([`FLOW_COOKIE`]), bound to this browser.
//! 4. `GET /oauth/callback`: the flow is taken (once: a second callback
//!    with the same `state` finds none) only with the browser's flow
//!    cookie naming the same `state`, and before it expires.
//!
//! The cookies are `__Host-` (no `Domain`, `Path=/`, `Secure`), `HttpOnly`
//! and `SameSite=Lax`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::access::Principal;
use crate::seal::SealKey;

/// How long a login URL stays valid.
pub const TICKET_TTL_MS: i64 = 10 * 60 * 1000;
/// How long a started login may take to come back.
pub const FLOW_TTL_MS: i64 = 10 * 60 * 1000;
/// The most logins under way at once (the oldest expired ones go first).
pub const MAX_FLOWS: usize = 1024;
/// The cookie that binds a started login to the browser that started it.
pub const FLOW_COOKIE: &str = "__Host-sluice-login";
/// The cookie of the consent page, echoed by its form.
pub const CONSENT_COOKIE: &str = "__Host-sluice-consent";
/// The path of the redirect back to sluice.
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// Where the login pages are, before the upstream's name.
pub const LOGIN_PATH: &str = "/oauth/login/";

/// Whose vault entry a principal's logins are under: its name, qualified by
/// its issuer when it has one (the same `sub` from two issuers is two
/// principals).
pub fn vault_principal(principal: &Principal) -> String {
    match &principal.issuer {
        Some(issuer) => format!("{issuer}#{}", principal.name),
        None => principal.name.clone(),
    }
}

/// Whose login a client's request to an `auth = "oauth"` upstream uses:
/// its principal's when principals are told apart (`[auth]`, over HTTP:
/// `scoped`), else sluice's own (`""`).
pub fn on_behalf_of(scoped: bool, principal: &Principal) -> String {
    if scoped {
        vault_principal(principal)
    } else {
        String::new()
    }
}

/// Who may log in to what, sealed in a login URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginTicket {
    /// The vault principal ([`vault_principal`]).
    pub principal: String,
    /// The upstream.
    pub upstream: String,
    /// Until when (ms since the epoch).
    pub expires_at_ms: i64,
}

/// Why a ticket or a consent form is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TicketError {
    /// Not a ticket sluice sealed, or for another upstream.
    #[error("this login link is not valid")]
    Invalid,
    /// Past its time.
    #[error("this login link has expired: call the tool again for a new one")]
    Expired,
    /// The consent form did not come from the page sluice served to this
    /// browser.
    #[error("this consent form did not come from the page sluice showed in this browser")]
    Forged,
}

/// Seals and opens login tickets and consent tokens.
pub struct Tickets {
    tickets: SealKey,
    consents: SealKey,
}

impl Tickets {
    /// Keys derived from sluice's secret.
    pub fn new(secret: [u8; 32]) -> Tickets {
        Tickets {
            tickets: SealKey::new(secret, "lt.".into(), "sluice upstream login ticket"),
            consents: SealKey::new(secret, "lc.".into(), "sluice upstream login consent"),
        }
    }

    /// A ticket for `principal` to log in to `upstream`, from `now_ms`.
    pub fn issue(&self, principal: &str, upstream: &str, now_ms: i64) -> String {
        let ticket = LoginTicket {
            principal: principal.to_owned(),
            upstream: upstream.to_owned(),
            expires_at_ms: now_ms.saturating_add(TICKET_TTL_MS),
        };
        self.tickets.seal(&json!(ticket))
    }

    /// The ticket `sealed` is, for `upstream`, still valid at `now_ms`.
    pub fn open(
        &self,
        sealed: &str,
        upstream: &str,
        now_ms: i64,
    ) -> Result<LoginTicket, TicketError> {
        let ticket: LoginTicket = self
            .tickets
            .open(sealed)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok())
            .ok_or(TicketError::Invalid)?;
        if ticket.upstream != upstream {
            return Err(TicketError::Invalid);
        }
        if now_ms > ticket.expires_at_ms {
            return Err(TicketError::Expired);
        }
        Ok(ticket)
    }

    /// The consent page's token for `ticket`, with a `nonce` of the
    /// page's own: set as [`CONSENT_COOKIE`] and carried by the form.
    pub fn consent_token(&self, ticket: &str, nonce: &str) -> String {
        self.consents
            .seal(&json!({"ticket": ticket, "nonce": nonce}))
    }

    /// Whether a consent `POST` is the form of the page served to this
    /// browser: the form's token equals the cookie's, and it seals this
    /// ticket.
    pub fn check_consent(
        &self,
        ticket: &str,
        form_token: &str,
        cookie_token: Option<&str>,
    ) -> Result<(), TicketError> {
        if cookie_token != Some(form_token) {
            return Err(TicketError::Forged);
        }
        let sealed_for = self
            .consents
            .open(form_token)
            .ok()
            .and_then(|v| v.get("ticket").and_then(|t| t.as_str().map(str::to_owned)));
        match sealed_for {
            Some(t) if t == ticket => Ok(()),
            _ => Err(TicketError::Forged),
        }
    }
}

/// The login URL of `upstream`, at `public_url`, for `ticket`.
pub fn login_url(public_url: &str, upstream: &str, ticket: &str) -> String {
    format!(
        "{}{LOGIN_PATH}{upstream}?ticket={ticket}",
        public_url.trim_end_matches('/')
    )
}

/// The redirect URI of logins through sluice's pages: one exact string.
pub fn callback_url(public_url: &str) -> String {
    format!("{}{CALLBACK_PATH}", public_url.trim_end_matches('/'))
}

/// A `Set-Cookie` value: `__Host-`, `Secure`, `HttpOnly`, `SameSite=Lax`,
/// `Path=/`, for `max_age_s` seconds (0 clears it).
pub fn set_cookie(name: &str, value: &str, max_age_s: i64) -> String {
    format!("{name}={value}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age={max_age_s}")
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

/// Why a callback is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FlowError {
    /// No login under way has this `state` (never started, already
    /// finished, or expired and dropped).
    #[error("no login is under way for this link (it was used already, or has expired)")]
    Unknown,
    /// The browser is not the one that started it.
    #[error("this login was started in another browser")]
    OtherBrowser,
    /// It came back too late.
    #[error("this login took too long: start it again")]
    Expired,
    /// Too many logins under way.
    #[error("too many logins are under way; try again in a few minutes")]
    Full,
}

/// One login under way.
#[derive(Debug)]
struct Flow<T> {
    principal: String,
    upstream: String,
    expires_at_ms: i64,
    value: T,
}

/// The logins under way, by `state`: bounded, each taken once.
#[derive(Debug)]
pub struct LoginFlows<T> {
    flows: HashMap<String, Flow<T>>,
}

impl<T> Default for LoginFlows<T> {
    fn default() -> Self {
        LoginFlows {
            flows: HashMap::new(),
        }
    }
}

/// A login taken back at its callback.
#[derive(Debug, PartialEq, Eq)]
pub struct Finished<T> {
    /// The vault principal it is for.
    pub principal: String,
    /// The upstream.
    pub upstream: String,
    /// What the shell kept for it.
    pub value: T,
}

impl<T> LoginFlows<T> {
    /// Records a login started at `now_ms` under `state`.
    pub fn start(
        &mut self,
        state: &str,
        principal: &str,
        upstream: &str,
        now_ms: i64,
        value: T,
    ) -> Result<(), FlowError> {
        self.flows.retain(|_, f| f.expires_at_ms >= now_ms);
        if self.flows.len() >= MAX_FLOWS {
            return Err(FlowError::Full);
        }
        self.flows.insert(
            state.to_owned(),
            Flow {
                principal: principal.to_owned(),
                upstream: upstream.to_owned(),
                expires_at_ms: now_ms.saturating_add(FLOW_TTL_MS),
                value,
            },
        );
        Ok(())
    }

    /// Takes the login of `state` for a callback from a browser whose flow
    /// cookie is `cookie_state`. Taken whatever the verdict: a `state` is
    /// used once, even by a refused callback.
    pub fn finish(
        &mut self,
        state: &str,
        cookie_state: Option<&str>,
        now_ms: i64,
    ) -> Result<Finished<T>, FlowError> {
        let flow = self.flows.remove(state).ok_or(FlowError::Unknown)?;
        if cookie_state != Some(state) {
            return Err(FlowError::OtherBrowser);
        }
        if now_ms > flow.expires_at_ms {
            return Err(FlowError::Expired);
        }
        Ok(Finished {
            principal: flow.principal,
            upstream: flow.upstream,
            value: flow.value,
        })
    }

    /// How many are under way.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn a_ticket_opens_for_its_upstream_until_it_expires() {
        let tickets = Tickets::new([4; 32]);
        let t = tickets.issue("alice", "docs", 1_000);
        let opened = tickets.open(&t, "docs", 1_000 + TICKET_TTL_MS).unwrap();
        assert_eq!(
            (opened.principal.as_str(), opened.upstream.as_str()),
            ("alice", "docs")
        );
        assert_eq!(
            tickets.open(&t, "docs", 1_001 + TICKET_TTL_MS),
            Err(TicketError::Expired)
        );
        assert_eq!(tickets.open(&t, "other", 1_000), Err(TicketError::Invalid));
        let mut forged = t.clone();
        forged.push('x');
        assert_eq!(
            tickets.open(&forged, "docs", 1_000),
            Err(TicketError::Invalid)
        );
        // Another sluice's ticket does not open here.
        let elsewhere = Tickets::new([5; 32]).issue("alice", "docs", 1_000);
        assert_eq!(
            tickets.open(&elsewhere, "docs", 1_000),
            Err(TicketError::Invalid)
        );
        let url = login_url("https://sluice.example.com/", "docs", &t);
        assert_eq!(
            url,
            format!("https://sluice.example.com/oauth/login/docs?ticket={t}")
        );
        assert_eq!(
            callback_url("https://sluice.example.com"),
            "https://sluice.example.com/oauth/callback"
        );
    }

    #[test]
    fn a_consent_needs_the_cookie_of_the_page_and_its_ticket() {
        let tickets = Tickets::new([4; 32]);
        let t = tickets.issue("alice", "docs", 0);
        let token = tickets.consent_token(&t, "n1");
        assert_eq!(tickets.check_consent(&t, &token, Some(&token)), Ok(()));
        // A cross-site POST carries no cookie.
        assert_eq!(
            tickets.check_consent(&t, &token, None),
            Err(TicketError::Forged)
        );
        // Another page's token, or another ticket's.
        let other = tickets.consent_token(&t, "n2");
        assert_eq!(
            tickets.check_consent(&t, &token, Some(&other)),
            Err(TicketError::Forged)
        );
        let t2 = tickets.issue("mallory", "docs", 0);
        let theirs = tickets.consent_token(&t2, "n3");
        assert_eq!(
            tickets.check_consent(&t, &theirs, Some(&theirs)),
            Err(TicketError::Forged)
        );
    }

    #[test]
    fn a_flow_is_taken_once_by_its_own_browser_in_time() {
        let mut flows = LoginFlows::default();
        flows.start("s1", "alice", "docs", 0, 7).unwrap();
        flows.start("s2", "bob", "docs", 0, 8).unwrap();
        assert_eq!(
            flows.finish("s1", Some("other"), 1),
            Err(FlowError::OtherBrowser)
        );
        // Refused, and gone: the state was used.
        assert_eq!(flows.finish("s1", Some("s1"), 1), Err(FlowError::Unknown));
        let done = flows.finish("s2", Some("s2"), 1).unwrap();
        assert_eq!((done.principal.as_str(), done.value), ("bob", 8));
        assert_eq!(flows.finish("s2", Some("s2"), 1), Err(FlowError::Unknown));
        flows.start("s3", "alice", "docs", 0, 9).unwrap();
        assert_eq!(
            flows.finish("s3", Some("s3"), FLOW_TTL_MS + 1),
            Err(FlowError::Expired)
        );
        assert!(flows.is_empty());
    }

    #[test]
    fn flows_are_bounded_and_expired_ones_make_room() {
        let mut flows = LoginFlows::default();
        for i in 0..MAX_FLOWS {
            flows.start(&format!("s{i}"), "p", "u", 0, ()).unwrap();
        }
        assert_eq!(
            flows.start("one-more", "p", "u", 0, ()),
            Err(FlowError::Full)
        );
        assert_eq!(flows.len(), MAX_FLOWS);
        flows.start("later", "p", "u", FLOW_TTL_MS + 1, ()).unwrap();
        assert_eq!(flows.len(), 1);
    }

    #[test]
    fn cookies_are_host_prefixed_secure_httponly_lax() {
        let c = set_cookie(FLOW_COOKIE, "abc", 600);
        assert_eq!(
            c,
            "__Host-sluice-login=abc; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=600"
        );
        assert_eq!(
            cookie("a=1; __Host-sluice-login=abc; b=2", FLOW_COOKIE),
            Some("abc")
        );
        assert_eq!(cookie("a=1", FLOW_COOKIE), None);
    }

    #[test]
    fn principals_of_two_issuers_are_two_vault_principals() {
        let p = |issuer: Option<&str>| Principal {
            issuer: issuer.map(str::to_owned),
            name: "alice".into(),
            scopes: BTreeSet::new(),
        };
        assert_eq!(vault_principal(&p(None)), "alice");
        assert_eq!(vault_principal(&p(Some("https://a"))), "https://a#alice");
        assert_ne!(
            vault_principal(&p(Some("https://a"))),
            vault_principal(&p(Some("https://b")))
        );
        assert_eq!(on_behalf_of(true, &p(None)), "alice");
        assert_eq!(on_behalf_of(false, &p(None)), "");
    }
}
