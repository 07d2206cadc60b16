//! OAuth to upstreams: the token an `auth = "oauth"` upstream gets on each
//! request, and what happens when it refuses one.
//!
//! The login itself is [`login`]'s (run by `sluice login`); a serving
//! sluice only reads the vault. [`UpstreamAuth`] keeps the login of one
//! upstream in memory, refreshes its token before it expires (and once on
//! a `401`), and turns a refusal into what `sluice_core::upstream_auth`
//! decides: a refresh, a login to ask the user for (`-32013`, the step-up
//! recorded in the vault for `sluice login` to ask for), or giving up
//! (`-32014`). While a login is awaited nothing is sent: the vault is read
//! again before each request, so that a login made meanwhile is used at
//! once.

mod guarded;
pub mod login;
pub(crate) mod web;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use http::HeaderValue;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, CredentialStore, OAuthClientConfig,
    StoredCredentials,
};
use sluice_core::policy::UpstreamFailure;
use sluice_core::upstream_auth::web::{Tickets, login_url};
use sluice_core::upstream_auth::{
    AfterUnauthorized, Challenge, LoginRecord, Readiness, StepUpVerdict, VaultKey, after_forbidden,
    after_unauthorized, login_command,
};

pub(crate) use guarded::GuardedHttp;

use crate::vault::Vault;

/// The logins of one upstream, as a serving sluice uses them: sluice's own
/// (`sluice login`, principal `""`), and with `[auth]` each principal's.
pub(crate) struct UpstreamAuth {
    upstream: String,
    url: String,
    vault: Vault,
    allow_private: bool,
    /// Where a principal logs in, with `[auth]`.
    web: Option<WebLogin>,
    /// The records last read, by vault principal, with the OAuth client
    /// built on each.
    loaded: tokio::sync::Mutex<HashMap<String, Loaded>>,
}

/// sluice's login pages, for the login URL of a `-32013`.
#[derive(Clone)]
pub(crate) struct WebLogin {
    /// `[server] public_url`.
    pub(crate) public_url: String,
    /// Seals the login tickets.
    pub(crate) tickets: Arc<Tickets>,
}

impl std::fmt::Debug for WebLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebLogin")
            .field("public_url", &self.public_url)
            .finish_non_exhaustive()
    }
}

struct Loaded {
    record: Arc<Mutex<LoginRecord>>,
    manager: AuthorizationManager,
}

/// What to do after a refusal the upstream sent.
pub(crate) enum Retry {
    /// Send the request again (with the token the vault holds now).
    Again,
    /// Not an authorization matter: pass the answer on.
    NotAuth,
}

impl UpstreamAuth {
    pub(crate) fn new(
        upstream: &str,
        url: &str,
        vault: Vault,
        allow_private: bool,
        web: Option<WebLogin>,
    ) -> Self {
        UpstreamAuth {
            upstream: upstream.to_owned(),
            url: url.to_owned(),
            vault,
            allow_private,
            web,
            loaded: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The `Authorization` value for the next request on behalf of
    /// `principal` (`""`: sluice's own login): the login's token, refreshed
    /// first when it is about to expire; or why there is none.
    pub(crate) async fn authorization(
        &self,
        principal: &str,
    ) -> Result<HeaderValue, UpstreamFailure> {
        let mut loaded = self.loaded.lock().await;
        let stale = loaded
            .get(principal)
            .is_none_or(|l| lock(&l.record).readiness() != Readiness::Ready);
        if stale {
            match self.load(principal).await? {
                Some(fresh) => loaded.insert(principal.to_owned(), fresh),
                None => loaded.remove(principal),
            };
        }
        let Some(current) = loaded.get(principal) else {
            return Err(self.login_required(principal, Vec::new()));
        };
        let readiness = lock(&current.record).readiness();
        match readiness {
            Readiness::Ready => {}
            Readiness::NeedsLogin { scopes } => {
                return Err(self.login_required(principal, scopes));
            }
            Readiness::GivenUp { scopes } => return Err(self.login_refused(principal, scopes)),
        }
        match current.manager.get_access_token().await {
            Ok(token) => {
                bearer(&token).ok_or_else(|| self.broken("the token is not a header value"))
            }
            Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {
                self.forget_tokens(current).await;
                Err(self.login_required(principal, Vec::new()))
            }
            Err(e) => {
                tracing::warn!(upstream = %self.upstream, "refreshing the OAuth token failed: {e}");
                Err(self.broken("refreshing its OAuth token failed"))
            }
        }
    }

    /// After the upstream answered `status` (401 or 403) with
    /// `www_authenticate` to a request sent for `principal` with `sent`;
    /// `refreshed` when this request was already sent again once.
    pub(crate) async fn refused(
        &self,
        principal: &str,
        status: http::StatusCode,
        www_authenticate: Option<&str>,
        sent: &HeaderValue,
        refreshed: bool,
    ) -> Result<Retry, UpstreamFailure> {
        let challenge = Challenge::parse(www_authenticate.unwrap_or(""));
        if status == http::StatusCode::FORBIDDEN && !challenge.is_insufficient_scope() {
            return Ok(Retry::NotAuth);
        }
        let mut loaded = self.loaded.lock().await;
        // A login made meanwhile (by `sluice login`) has a new token: try it.
        if let Some(fresh) = self.load(principal).await? {
            let token = fresh.manager.get_access_token().await.ok();
            let changed = token.as_deref().and_then(bearer).is_some_and(|t| t != sent);
            loaded.insert(principal.to_owned(), fresh);
            if changed && !refreshed {
                return Ok(Retry::Again);
            }
        }
        let Some(current) = loaded.get(principal) else {
            return Err(self.login_required(principal, Vec::new()));
        };
        if status == http::StatusCode::UNAUTHORIZED {
            let can_refresh = lock(&current.record).can_refresh();
            if after_unauthorized(refreshed, can_refresh) == AfterUnauthorized::Refresh {
                match current.manager.refresh_token().await {
                    Ok(_) => return Ok(Retry::Again),
                    Err(e) => {
                        tracing::info!(upstream = %self.upstream, "the OAuth token was refused and could not be refreshed: {e}")
                    }
                }
            }
            self.forget_tokens(current).await;
            return Err(self.login_required(principal, challenge.scopes));
        }
        let (verdict, step_up) = after_forbidden(&challenge, &lock(&current.record));
        let record = {
            let mut record = lock(&current.record);
            record.step_up = Some(step_up);
            record.clone()
        };
        self.save(&record).await;
        Err(match verdict {
            StepUpVerdict::Login { scopes } => self.login_required(principal, scopes),
            StepUpVerdict::GiveUp { scopes } => self.login_refused(principal, scopes),
        })
    }

    /// The upstream took a request of `principal`: a step-up it asked for
    /// is settled.
    pub(crate) async fn accepted(&self, principal: &str) {
        let loaded = self.loaded.lock().await;
        let Some(current) = loaded.get(principal) else {
            return;
        };
        let record = {
            let mut record = lock(&current.record);
            if record.step_up.is_none() {
                return;
            }
            record.step_up = None;
            record.clone()
        };
        self.save(&record).await;
    }

    /// Reads the login of `principal` from the vault and builds its OAuth
    /// client; `None` when there is no usable login.
    async fn load(&self, principal: &str) -> Result<Option<Loaded>, UpstreamFailure> {
        let key = VaultKey {
            principal: principal.to_owned(),
            upstream: self.upstream.clone(),
        };
        let record = match self.vault.load(&key).await {
            Ok(Some(record)) if record.is_for(&key, &self.url) => record,
            Ok(_) => return Ok(None),
            Err(e) => {
                tracing::warn!(upstream = %self.upstream, "the vault: {e}");
                return Err(self.broken("its login could not be read from the vault"));
            }
        };
        let record = Arc::new(Mutex::new(record));
        let manager = self.manager(&record).await.map_err(|e| {
            tracing::warn!(upstream = %self.upstream, "its login cannot be used: {e}");
            self.broken("its login in the vault cannot be used (log in again)")
        })?;
        Ok(Some(Loaded { record, manager }))
    }

    async fn manager(
        &self,
        record: &Arc<Mutex<LoginRecord>>,
    ) -> Result<AuthorizationManager, String> {
        let (metadata, client) = {
            let r = lock(record);
            (r.metadata.clone(), r.client.clone())
        };
        let http = Arc::new(GuardedHttp::new(self.allow_private));
        let mut manager = AuthorizationManager::new_with_oauth_http_client(self.url.as_str(), http)
            .await
            .map_err(|e| e.to_string())?;
        let metadata: AuthorizationMetadata =
            serde_json::from_value(metadata).map_err(|e| format!("its metadata: {e}"))?;
        manager.set_metadata(metadata);
        let mut config = OAuthClientConfig::new(client.client_id, client.redirect_uri);
        if let Some(secret) = client.client_secret {
            config = config.with_client_secret(secret);
        }
        manager
            .configure_client(config)
            .map_err(|e| e.to_string())?;
        manager.set_credential_store(VaultCredentials {
            record: Arc::clone(record),
            vault: self.vault.clone(),
        });
        Ok(manager)
    }

    async fn forget_tokens(&self, current: &Loaded) {
        let record = {
            let mut record = lock(&current.record);
            *record = record.clone().without_tokens();
            record.clone()
        };
        self.save(&record).await;
    }

    async fn save(&self, record: &LoginRecord) {
        if let Err(e) = self.vault.save(record, now_ms()).await {
            tracing::warn!(upstream = %self.upstream, "the vault: {e}");
        }
    }

    fn login_required(&self, principal: &str, scopes: Vec<String>) -> UpstreamFailure {
        UpstreamFailure::LoginRequired {
            upstream: self.upstream.clone(),
            scopes,
            login: self.how_to_log_in(principal),
        }
    }

    fn login_refused(&self, principal: &str, scopes: Vec<String>) -> UpstreamFailure {
        UpstreamFailure::LoginRefused {
            upstream: self.upstream.clone(),
            scopes,
            login: self.how_to_log_in(principal),
        }
    }

    /// `sluice login NAME` for sluice's own login; a principal's login page,
    /// with a fresh ticket, for a principal's.
    fn how_to_log_in(&self, principal: &str) -> String {
        match &self.web {
            Some(web) if !principal.is_empty() => {
                let ticket = web.tickets.issue(principal, &self.upstream, now_ms());
                login_url(&web.public_url, &self.upstream, &ticket)
            }
            _ => login_command(&self.upstream),
        }
    }

    fn broken(&self, detail: &'static str) -> UpstreamFailure {
        UpstreamFailure::Protocol {
            upstream: self.upstream.clone(),
            detail,
        }
    }
}

fn lock(record: &Mutex<LoginRecord>) -> std::sync::MutexGuard<'_, LoginRecord> {
    record.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `Bearer <token>`, marked sensitive (never logged by the HTTP stack).
fn bearer(token: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::try_from(format!("Bearer {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The OAuth client's credentials are the login record's: a refresh is
/// written back to the vault.
struct VaultCredentials {
    record: Arc<Mutex<LoginRecord>>,
    vault: Vault,
}

#[async_trait]
impl CredentialStore for VaultCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let credentials = lock(&self.record).credentials.clone();
        Ok(serde_json::from_value(credentials).ok())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let record = {
            let mut record = lock(&self.record);
            record.credentials = serde_json::to_value(&credentials)
                .map_err(|e| AuthError::InternalError(e.to_string()))?;
            record.clone()
        };
        self.vault
            .save(&record, now_ms())
            .await
            .map_err(|e| AuthError::InternalError(e.to_string()))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let record = {
            let mut record = lock(&self.record);
            *record = record.clone().without_tokens();
            record.clone()
        };
        self.vault
            .save(&record, now_ms())
            .await
            .map_err(|e| AuthError::InternalError(e.to_string()))
    }
}
