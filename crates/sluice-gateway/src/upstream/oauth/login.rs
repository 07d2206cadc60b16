//! `sluice login UPSTREAM`: the OAuth authorization code flow with PKCE
//! against an upstream's authorization server, with a loopback redirect.
//!
//! 1. The upstream is asked, without a token, to `initialize`: its `401`
//!    challenge seeds discovery (RFC 9728 protected resource metadata, then
//!    RFC 8414 or OpenID Connect metadata, with the 2025-03-26 fallbacks).
//! 2. sluice picks how to be a client ([`registration`]): pre-registered,
//!    a client ID metadata document, or dynamic registration.
//! 3. It listens on `127.0.0.1` for the redirect, hands the authorization
//!    URL to the caller (who prints it and may open a browser), takes
//!    exactly one callback, checks its `state` (and `iss`, RFC 9207),
//!    exchanges the code (with the PKCE verifier and the RFC 8707
//!    `resource`), and keeps the login in the vault.
//!
//! Every URL on the way passes the outbound guard ([`GuardedHttp`]).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::response::Html;
use axum::routing::get;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, CredentialStore,
    InMemoryCredentialStore, OAuthClientConfig,
};
use serde::Deserialize;
use sluice_core::config::{UpstreamConfig, UpstreamOAuth, UpstreamTransport};
use sluice_core::outbound::browser::{self, BrowserUrlError};
use sluice_core::upstream_auth::{
    ClientIdentity, LoginRecord, Registration, StepUp, VaultKey, legacy_issuer_acceptable,
    login_scopes, registration, step_up_after_login,
};
use tokio::net::TcpListener;
use tokio::sync::{Mutex, mpsc};

use super::{GuardedHttp, now_ms};
use crate::outbound;
use crate::vault::{Vault, VaultError};

/// The client name sluice registers with.
const CLIENT_NAME: &str = "sluice";

/// Why a login did not happen.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The upstream is not an HTTP upstream with `auth = "oauth"`.
    #[error(
        "upstream {0:?} has no `auth = \"oauth\"` (only an HTTP upstream with it is logged in to)"
    )]
    NotOAuth(String),
    /// The loopback redirect could not listen.
    #[error("cannot listen on 127.0.0.1 for the redirect: {0}")]
    Listen(std::io::Error),
    /// Discovery, registration or the token request failed.
    #[error("{step}: {detail}")]
    OAuth {
        /// Which step.
        step: &'static str,
        /// What went wrong.
        detail: String,
    },
    /// The authorization server sent the user back with an error.
    #[error("the authorization server refused: {0}")]
    Refused(String),
    /// The authorization URL may not be opened in a browser (S-19).
    #[error("the authorization server's URL is not safe to open: {0}")]
    UnsafeUrl(BrowserUrlError),
    /// No callback came in time.
    #[error("no redirect came back within {0:?}: the login was not completed in the browser")]
    Timeout(Duration),
    /// The vault could not keep it.
    #[error(transparent)]
    Vault(#[from] VaultError),
}

/// What a login got.
#[derive(Debug)]
pub struct LoggedIn {
    /// The scopes asked for (empty: none named).
    pub scopes: Vec<String>,
    /// The scopes granted.
    pub granted: Vec<String>,
    /// How sluice was a client.
    pub registration: Registration,
    /// When the access token expires (ms since the epoch), if said.
    pub expires_at_ms: Option<i64>,
}

/// Logs in to `upstream`, keeping the login in `vault`; `extra_scopes`
/// are asked for beside the configured ones and a pending step-up's.
/// `show` gets the authorization URL to open.
pub async fn login(
    upstream: &UpstreamConfig,
    vault: &Vault,
    extra_scopes: &[String],
    wait: Duration,
    show: impl FnOnce(&str),
) -> Result<LoggedIn, LoginError> {
    let port = match &upstream.transport {
        UpstreamTransport::Http {
            oauth: Some(oauth), ..
        } => oauth.redirect_port.unwrap_or(0),
        _ => return Err(LoginError::NotOAuth(upstream.name.clone())),
    };
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(LoginError::Listen)?;
    let port = listener.local_addr().map_err(LoginError::Listen)?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let key = VaultKey::operator(&upstream.name);
    let begun = begin(upstream, vault, &key, &redirect_uri, extra_scopes).await?;
    show(&begun.auth_url);
    let callback = one_callback(listener, &upstream.name, wait).await?;
    begun.finish(vault, &callback).await
}

/// A login whose authorization URL is out, waiting for its callback.
pub(crate) struct Begun {
    /// The URL the user opens.
    pub(crate) auth_url: String,
    key: VaultKey,
    url: String,
    manager: AuthorizationManager,
    credentials: InMemoryCredentialStore,
    metadata: AuthorizationMetadata,
    client: OAuthClientConfig,
    how: Registration,
    scopes: Vec<String>,
    redirect_uri: String,
    pending: Option<StepUp>,
}

/// Discovers, registers and builds the authorization URL of a login of
/// `key` to `upstream` whose redirect comes back to `redirect_uri`.
pub(crate) async fn begin(
    upstream: &UpstreamConfig,
    vault: &Vault,
    key: &VaultKey,
    redirect_uri: &str,
    extra_scopes: &[String],
) -> Result<Begun, LoginError> {
    let UpstreamTransport::Http {
        url,
        allow_private,
        oauth: Some(oauth),
        ..
    } = &upstream.transport
    else {
        return Err(LoginError::NotOAuth(upstream.name.clone()));
    };
    let previous = match vault.load(key).await {
        Ok(record) => record.filter(|r| r.is_for(key, url)),
        // A record that does not open is replaced.
        Err(VaultError::Sealed { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let pending = previous.and_then(|r| r.step_up);
    let configured: Vec<String> = oauth.scopes.iter().chain(extra_scopes).cloned().collect();
    let wanted = login_scopes(&configured, pending.as_ref());

    let challenge = probe(url, *allow_private).await;
    let http = Arc::new(GuardedHttp::new(*allow_private));
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url.as_str(), http)
        .await
        .map_err(oauth_error("the upstream URL"))?;
    let credentials = InMemoryCredentialStore::new();
    manager.set_credential_store(credentials.clone());
    let metadata = match manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
    {
        Ok(resolution) => resolution.metadata,
        Err(AuthError::AuthorizationServerMismatch {
            received_issuer, ..
        }) if legacy_issuer_acceptable(url, &received_issuer) => {
            tracing::warn!(
                upstream = %upstream.name,
                "its authorization server metadata names the issuer {received_issuer:?}, not the origin it was found at; taken, being on the MCP server's own origin (2025-03-26 discovery)"
            );
            legacy_metadata(url, *allow_private).await?
        }
        Err(e) => return Err(oauth_error("discovering the authorization server")(e)),
    };
    manager.set_metadata(metadata.clone());
    let scopes = if wanted.is_empty() {
        manager.select_scopes(None, &[])
    } else {
        wanted
    };
    let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let supports_documents = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    let how = registration(
        oauth.client_id.is_some(),
        oauth.client_metadata_url.is_some(),
        supports_documents,
        metadata.registration_endpoint.is_some(),
    )
    .map_err(|detail| LoginError::OAuth {
        step: "registering sluice as a client",
        detail: detail.to_owned(),
    })?;
    let client = client_config(&mut manager, how, oauth, redirect_uri, &scope_refs).await?;
    let auth_url = manager
        .get_authorization_url(&scope_refs)
        .await
        .map_err(oauth_error("building the authorization URL"))?;
    browser_safe(&auth_url, *allow_private)?;
    Ok(Begun {
        auth_url,
        key: key.clone(),
        url: url.clone(),
        manager,
        credentials,
        metadata,
        client,
        how,
        scopes,
        redirect_uri: redirect_uri.to_owned(),
        pending,
    })
}

impl Begun {
    /// The `state` of its authorization URL.
    pub(crate) fn state(&self) -> Option<String> {
        let url = reqwest::Url::parse(&self.auth_url).ok()?;
        url.query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
    }

    /// Exchanges the callback's code and keeps the login in `vault`.
    pub(crate) async fn finish(
        self,
        vault: &Vault,
        callback: &Callback,
    ) -> Result<LoggedIn, LoginError> {
        self.manager
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.state,
                callback.iss.as_deref(),
            )
            .await
            .map_err(oauth_error("exchanging the code for a token"))?;
        let stored = self
            .credentials
            .load()
            .await
            .ok()
            .flatten()
            .ok_or_else(|| LoginError::OAuth {
                step: "exchanging the code for a token",
                detail: "no token was kept".into(),
            })?;
        let record = LoginRecord {
            format: LoginRecord::FORMAT,
            upstream: self.key.upstream.clone(),
            principal: self.key.principal.clone(),
            url: self.url,
            client: ClientIdentity {
                client_id: self.client.client_id,
                client_secret: self.client.client_secret,
                registration: self.how.as_str().to_owned(),
                redirect_uri: self.redirect_uri,
            },
            metadata: serde_json::to_value(&self.metadata).unwrap_or_default(),
            credentials: serde_json::to_value(&stored).unwrap_or_default(),
            step_up: step_up_after_login(self.pending.as_ref()),
            logged_in_at_ms: now_ms(),
        };
        vault.save(&record, record.logged_in_at_ms).await?;
        Ok(LoggedIn {
            granted: record.granted_scopes(),
            expires_at_ms: record.expires_at_ms(),
            scopes: self.scopes,
            registration: self.how,
        })
    }
}

/// Configures the client as `how` says, registering it when dynamic.
async fn client_config(
    manager: &mut AuthorizationManager,
    how: Registration,
    oauth: &UpstreamOAuth,
    redirect_uri: &str,
    scopes: &[&str],
) -> Result<OAuthClientConfig, LoginError> {
    let configured = |client_id: &str| {
        let mut config = OAuthClientConfig::new(client_id, redirect_uri);
        if let Some(secret) = &oauth.client_secret {
            config = config.with_client_secret(secret.clone());
        }
        config
    };
    let config = match (how, &oauth.client_id, &oauth.client_metadata_url) {
        (Registration::Preregistered, Some(id), _) => configured(id),
        (Registration::MetadataDocument, _, Some(url)) => {
            OAuthClientConfig::new(url.as_str(), redirect_uri)
        }
        _ => {
            return manager
                .register_client(CLIENT_NAME, redirect_uri, scopes)
                .await
                .map_err(oauth_error("registering sluice as a client"));
        }
    };
    manager
        .configure_client(config.clone())
        .map_err(oauth_error("configuring the client"))?;
    Ok(config)
}

/// S-19: the authorization URL is opened only when `https` (or `http` to
/// a loopback host), without credentials, and not into a private network
/// unless the upstream is allowed one (`allow_private`).
fn browser_safe(url: &str, allow_private: bool) -> Result<(), LoginError> {
    match browser::check(url) {
        Ok(()) => Ok(()),
        Err(BrowserUrlError::Private { .. }) if allow_private => Ok(()),
        Err(e) => Err(LoginError::UnsafeUrl(e)),
    }
}

fn oauth_error<E: std::fmt::Display>(step: &'static str) -> impl FnOnce(E) -> LoginError {
    move |e| LoginError::OAuth {
        step,
        detail: e.to_string(),
    }
}

/// The upstream's `WWW-Authenticate` challenge to a tokenless
/// `initialize`, if it sends one (an upstream that lets `initialize`
/// through is discovered from its well-known metadata instead).
async fn probe(url: &str, allow_private: bool) -> Option<String> {
    let checked = outbound::resolve_checked(url, allow_private).await.ok()?;
    let builder = reqwest::Client::builder().timeout(Duration::from_secs(15));
    let client = outbound::pinned_client(builder, &checked).ok()?;
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let response = client
        .post(checked.url.clone())
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .ok()?;
    let status = response.status();
    (status == http::StatusCode::UNAUTHORIZED || status == http::StatusCode::FORBIDDEN)
        .then(|| response.headers().get(http::header::WWW_AUTHENTICATE))
        .flatten()
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The 2025-03-26 metadata at the server's origin, read as it is (see
/// [`legacy_issuer_acceptable`]).
async fn legacy_metadata(
    url: &str,
    allow_private: bool,
) -> Result<AuthorizationMetadata, LoginError> {
    let failed = |detail: String| LoginError::OAuth {
        step: "discovering the authorization server",
        detail,
    };
    let checked = outbound::resolve_checked(url, allow_private)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut at = checked.url.clone();
    at.set_path("/.well-known/oauth-authorization-server");
    at.set_query(None);
    let builder = reqwest::Client::builder().timeout(Duration::from_secs(15));
    let fetched = async {
        let client = outbound::pinned_client(builder, &checked)?;
        client
            .get(at)
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await
    };
    let body = fetched.await.map_err(|e| failed(e.to_string()))?;
    serde_json::from_slice(&body).map_err(|e| failed(e.to_string()))
}

/// The query of the redirect back to sluice (RFC 6749 section 4.1.2, with
/// RFC 9207's `iss`).
#[derive(Debug, Deserialize)]
pub(crate) struct CallbackQuery {
    pub(crate) code: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) iss: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) error_description: Option<String>,
}

impl CallbackQuery {
    /// The authorization server's refusal, in words, if it sent one.
    pub(crate) fn refusal(&self) -> Option<String> {
        let error = self.error.as_ref()?;
        Some(match &self.error_description {
            Some(d) => format!("{error}: {d}"),
            None => error.clone(),
        })
    }
}

/// A redirect that carries a code.
pub(crate) struct Callback {
    pub(crate) code: String,
    pub(crate) state: String,
    pub(crate) iss: Option<String>,
}

type Outcome = Result<Callback, LoginError>;

/// What the callback route holds: where its one outcome goes (taken by
/// the first callback), and the upstream's name for the page.
struct CallbackSlot {
    outcome: Mutex<Option<mpsc::Sender<Outcome>>>,
    upstream: String,
}

/// Serves the loopback redirect until one callback comes (it is single
/// use: a second one finds the listener gone) or `wait` passes.
async fn one_callback(
    listener: TcpListener,
    upstream: &str,
    wait: Duration,
) -> Result<Callback, LoginError> {
    let (tx, mut rx) = mpsc::channel::<Outcome>(1);
    let state = Arc::new(CallbackSlot {
        outcome: Mutex::new(Some(tx)),
        upstream: upstream.to_owned(),
    });
    let app = Router::new()
        .route("/callback", get(callback))
        .with_state(state);
    let server = axum::serve(listener, app);
    let outcome = tokio::select! {
        outcome = rx.recv() => outcome,
        _ = server => None,
        () = tokio::time::sleep(wait) => return Err(LoginError::Timeout(wait)),
    };
    outcome.unwrap_or(Err(LoginError::Timeout(wait)))
}

async fn callback(
    State(slot): State<Arc<CallbackSlot>>,
    Query(query): Query<CallbackQuery>,
) -> Html<String> {
    let upstream = &slot.upstream;
    let Some(tx) = slot.outcome.lock().await.take() else {
        return page("This login link was already used.");
    };
    let refused = query.refusal();
    let outcome = match (query, refused) {
        (_, Some(why)) => Err(LoginError::Refused(why)),
        (
            CallbackQuery {
                code: Some(code),
                state: Some(state),
                iss,
                ..
            },
            None,
        ) => Ok(Callback { code, state, iss }),
        _ => Err(LoginError::Refused("the redirect carried no code".into())),
    };
    let message = match &outcome {
        Ok(_) => format!("sluice received the login to {upstream}. You can close this tab."),
        Err(e) => format!("sluice could not log in to {upstream}: {e}"),
    };
    let _ = tx.send(outcome).await;
    page(&message)
}

fn page(message: &str) -> Html<String> {
    let page = maud::html! {
        (maud::DOCTYPE)
        meta charset="utf-8";
        title { "sluice login" }
        p { (message) }
    };
    Html(page.into_string())
}
