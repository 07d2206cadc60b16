//! Upstreams: connecting, reading catalogs, and keeping each one alive.
//!
//! Each configured upstream gets one supervisor task ([`Supervisor`]) that
//! connects (spawn or HTTP), probes the era (`server/discover`, then
//! `initialize`), reads its catalog to the last page, and re-reads it on
//! `list_changed`. When the connection ends (crash, hang, session lost)
//! every request in flight fails at once with an error naming the upstream,
//! and the supervisor reconnects with exponential backoff. One upstream's
//! trouble never reaches another's task.
//!
//! A supervisor decides nothing for clients: it sends [`Report`]s (a
//! complete read, a lost connection, an event) to whoever runs it, which
//! publishes the catalog, changes the [`Upstream`]'s status and tells
//! clients. Requests go straight to the [`Connection`], never through the
//! supervisor.
//!
//! - `connection`: the protocol state of one connection (ids, pending
//!   answers, progress routes, relayed server-to-client requests);
//! - `wire`: the seam between a connection and its transport;
//! - `stdio`, `http`: the two transports, which only move bytes.

mod child;
mod connection;
mod http;
pub(crate) mod oauth;
mod sandbox;
mod stdio;
mod wire;

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_core::boundary::redact::Redactor;
use sluice_core::catalog::UpstreamCatalog;
use sluice_core::catalog::drift::NotEstablished;
use sluice_core::config::{AuthMode, Config, UpstreamConfig, UpstreamTransport};
use sluice_core::discovery::{CatalogRead, CatalogStep, CatalogWalk, ReadProgress, WalkLimits};
use sluice_core::health::{CatalogState, UpstreamStatus};
use sluice_core::jsonrpc;
use sluice_core::policy::UpstreamFailure;
use sluice_core::protocol::{self, Era, ProbeVerdict};
use sluice_core::upstream_auth::web::Tickets;
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) use connection::{Call, Connection, Related, UpstreamEvent};
use connection::{ServerDescription, Shared};
use wire::{Inbound, Wire};

use crate::ops::metrics;
use crate::outbound;
use crate::vault::Vault;

/// The longest a `server/discover` probe waits before falling back to
/// `initialize` (some legacy servers never answer an unknown method).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// A listen stream is not a call: it has no timeout worth the name.
const LISTEN_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);
/// `list_changed` notifications closer together than this are read once.
const REFRESH_DEBOUNCE: Duration = Duration::from_millis(100);
/// First and largest delay between reconnections.
const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A connection that lived this long resets the backoff.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// One configured upstream and what is known of it.
pub(crate) struct Upstream {
    pub(crate) config: UpstreamConfig,
    /// Stops this upstream's supervisor: cancelled with the whole gateway,
    /// or alone by a reload that removes or restarts it.
    pub(crate) stop: CancellationToken,
    connection: RwLock<Option<Arc<Connection>>>,
    /// Changed by whoever applies the supervisor's [`Report`]s.
    status: Mutex<UpstreamStatus>,
}

/// Settings every upstream shares.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) request_timeout: Duration,
    pub(crate) startup_timeout: Duration,
    pub(crate) shutdown_grace: Duration,
    pub(crate) max_message_bytes: usize,
    pub(crate) client_info: Value,
    pub(crate) catalog_limits: WalkLimits,
    pub(crate) catalog_read_timeout: Duration,
    /// `Duration::ZERO`: re-read only on `list_changed`.
    pub(crate) refresh_interval: Duration,
    /// The redaction rules, for what an upstream writes to its stderr
    /// (logged by sluice).
    pub(crate) redactor: Arc<Redactor>,
    /// Where the OAuth logins of `auth = "oauth"` upstreams are kept.
    pub(crate) vault: Option<Vault>,
    /// With `[auth]`: where each principal logs in to such an upstream
    /// (sluice's login pages, their tickets).
    pub(crate) web_login: Option<oauth::WebLogin>,
}

/// What happened to an upstream, as its supervisor tells whoever runs it
/// (the gateway, which applies each in the order they were sent).
pub(crate) struct Report {
    pub(crate) upstream: Arc<Upstream>,
    pub(crate) change: Change,
}

/// What a [`Report`] says.
pub(crate) enum Change {
    /// A connection attempt failed: why, in sluice's words. Another
    /// follows the backoff.
    Failed(String),
    /// Connected and handshaken: what clients subscribed to is subscribed
    /// again on `conn`, each subscription bounded by `request_timeout`.
    Connected {
        conn: Arc<Connection>,
        request_timeout: Duration,
    },
    /// A complete catalog read, to publish.
    Read(UpstreamCatalog),
    /// A catalog read that did not finish: the previous one (if any) stays
    /// served, and the read is retried.
    NotEstablished(NotEstablished),
    /// Something for clients: `resources/updated`, or a log message no
    /// request took.
    Event(UpstreamEvent),
    /// The first connection attempt is over (connected and read, failed,
    /// or stopped before either): reported once, after what it published.
    Settled,
    /// The connection ended: why. Requests in flight failed with it, and
    /// its listen streams; the supervisor reconnects.
    Lost(String),
    /// The supervisor ended.
    Stopped,
}

/// Keeps one upstream connected until its `stop` token is cancelled, and
/// reports what happens to it. Each connection takes the settings in force
/// when it is made.
pub(crate) struct Supervisor {
    up: Arc<Upstream>,
    settings: watch::Receiver<Settings>,
    reports: mpsc::Sender<Report>,
    /// [`Change::Settled`] is still to be reported.
    unsettled: bool,
}

/// How one connection ended.
enum Ended {
    /// It could not be made.
    Failed,
    /// It was lost.
    Lost,
    /// The upstream was stopped.
    Stopped,
}

// === impl Settings ===

impl Settings {
    pub(crate) fn new(
        config: &Config,
        client_info: Value,
        redactor: Arc<Redactor>,
        vault: Option<Vault>,
        tickets: Option<Arc<Tickets>>,
    ) -> Self {
        // Each principal logs in for itself only when principals are told
        // apart (`[auth]`).
        let web_login = tickets
            .filter(|_| config.auth.mode != AuthMode::None)
            .map(|tickets| oauth::WebLogin {
                public_url: config.server.public_url(),
                tickets,
            });
        Settings {
            request_timeout: config.server.request_timeout,
            startup_timeout: config.server.startup_timeout,
            shutdown_grace: config.server.shutdown_grace,
            max_message_bytes: config.limits.transport_max_message_bytes,
            client_info,
            catalog_limits: config.catalog.limits,
            catalog_read_timeout: config.catalog.read_timeout,
            refresh_interval: config.catalog.refresh_interval,
            redactor,
            vault,
            web_login,
        }
    }
}

// === impl Upstream ===

impl Upstream {
    pub(crate) fn new(config: UpstreamConfig, stop: CancellationToken) -> Self {
        Upstream {
            status: Mutex::new(UpstreamStatus::new(&config.transport)),
            config,
            stop,
            connection: RwLock::new(None),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    /// The live connection, or why there is none.
    pub(crate) fn connection(&self) -> Result<Arc<Connection>, UpstreamFailure> {
        let conn = self
            .connection
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match conn {
            Some(conn) if !conn.is_closed() => Ok(conn),
            _ => Err(UpstreamFailure::Unavailable {
                upstream: self.config.name.clone(),
                state: self.status().state,
            }),
        }
    }

    /// Whether a read of its catalog has finished at least once.
    pub(crate) fn has_catalog(&self) -> bool {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .catalog
            != CatalogState::None
    }

    pub(crate) fn status(&self) -> UpstreamStatus {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Changes the status (and the `up` gauge with it).
    pub(crate) fn update(&self, f: impl FnOnce(&mut UpstreamStatus)) {
        let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut status);
        metrics::upstream_up(self.name(), status.is_ready());
    }

    fn set_connection(&self, conn: Option<Arc<Connection>>) {
        *self
            .connection
            .write()
            .unwrap_or_else(PoisonError::into_inner) = conn;
    }
}

impl Drop for Supervisor {
    /// A supervisor that ends without reporting its first attempt (it
    /// panicked, or its task was aborted) still counts as settled, so that
    /// no request waits for it the whole settle limit.
    fn drop(&mut self) {
        if self.unsettled {
            let _ = self.reports.try_send(Report {
                upstream: Arc::clone(&self.up),
                change: Change::Settled,
            });
        }
    }
}

// === impl Supervisor ===

impl Supervisor {
    /// A supervisor for `up`, connecting with what `settings` holds at
    /// each connection and sending its reports to `reports`.
    pub(crate) fn new(
        up: Arc<Upstream>,
        settings: watch::Receiver<Settings>,
        reports: mpsc::Sender<Report>,
    ) -> Self {
        Supervisor {
            up,
            settings,
            reports,
            unsettled: true,
        }
    }

    /// Connects, serves and reconnects with backoff until stopped.
    pub(crate) async fn run(mut self) {
        let mut backoff = BACKOFF_MIN;
        loop {
            let settings = self.settings.borrow().clone();
            let started = Instant::now();
            match self.connection(&settings).await {
                Ended::Stopped => break,
                Ended::Failed => {}
                Ended::Lost if started.elapsed() > HEALTHY_AFTER => backoff = BACKOFF_MIN,
                Ended::Lost => {}
            }
            if !wait_backoff(&mut backoff, &self.up.stop).await {
                break;
            }
        }
        self.settle().await;
        self.report(Change::Stopped).await;
    }

    async fn report(&self, change: Change) {
        let report = Report {
            upstream: Arc::clone(&self.up),
            change,
        };
        // Whoever runs supervisors drains their reports until the last
        // one is gone.
        let _ = self.reports.send(report).await;
    }

    /// Reports the first connection attempt over, once.
    async fn settle(&mut self) {
        if std::mem::take(&mut self.unsettled) {
            self.report(Change::Settled).await;
        }
    }

    /// Makes one connection and serves it until it ends.
    async fn connection(&mut self, settings: &Settings) -> Ended {
        let up = Arc::clone(&self.up);
        let (events_tx, events) = mpsc::channel(256);
        let conn = match connect(&up.config, settings, events_tx, &up.stop).await {
            Ok(conn) => Arc::new(conn),
            Err(_) if up.stop.is_cancelled() => return Ended::Stopped,
            Err(reason) => {
                tracing::warn!(upstream = up.name(), "upstream failed to start: {reason}");
                self.report(Change::Failed(reason)).await;
                self.settle().await;
                return Ended::Failed;
            }
        };
        let desc = conn.description();
        tracing::info!(
            upstream = up.name(),
            era = era_name(desc.era),
            version = %desc.protocol_version,
            "upstream connected"
        );
        up.set_connection(Some(Arc::clone(&conn)));
        self.report(Change::Connected {
            conn: Arc::clone(&conn),
            request_timeout: settings.request_timeout,
        })
        .await;
        let ended = self.serve(&conn, settings, events).await;
        up.set_connection(None);
        match ended {
            // sluice shuts down, or a reload removes or restarts the
            // upstream: a child gets SIGTERM, then SIGKILL after the grace
            // period.
            Ended::Stopped => conn.shutdown(settings.shutdown_grace).await,
            _ => self.lost(&conn, settings).await,
        }
        ended
    }

    /// Reads the catalog, then re-reads it when due and passes the
    /// connection's events on, until the connection ends or the upstream
    /// is stopped.
    async fn serve(
        &mut self,
        conn: &Connection,
        settings: &Settings,
        mut events: mpsc::Receiver<UpstreamEvent>,
    ) -> Ended {
        let mut reads = ReadSchedule::new(settings);
        let Some(complete) = self.refresh(conn, settings).await else {
            return Ended::Stopped;
        };
        reads.after_read(complete);
        self.settle().await;
        loop {
            tokio::select! {
                () = self.up.stop.cancelled() => return Ended::Stopped,
                () = conn.closed() => return Ended::Lost,
                Some(event) = events.recv() => match event {
                    UpstreamEvent::ListChanged(_) => reads.list_changed(),
                    other => self.report(Change::Event(other)).await,
                },
                () = reads.due() => {
                    let Some(complete) = self.refresh(conn, settings).await else {
                        return Ended::Stopped;
                    };
                    reads.after_read(complete);
                }
            }
        }
    }

    /// The connection ended: requests in flight already failed, and its
    /// listen streams with them.
    async fn lost(&self, conn: &Connection, settings: &Settings) {
        let reason = match conn.exit_status().await {
            Some(status) => format!("the process exited ({status})"),
            None => "the connection was lost".to_owned(),
        };
        tracing::warn!(
            upstream = self.up.name(),
            "upstream disconnected: {reason}; reconnecting"
        );
        metrics::upstream_restarted(self.up.name());
        self.report(Change::Lost(reason)).await;
        conn.shutdown(settings.shutdown_grace).await;
    }

    /// Reads the catalog unless the upstream is stopped first (`None`);
    /// `Some(true)` when the read was complete. A connection lost meanwhile
    /// ends the read at once (its requests fail).
    async fn refresh(&self, conn: &Connection, settings: &Settings) -> Option<bool> {
        tokio::select! {
            complete = self.read(conn, settings) => Some(complete),
            () = self.up.stop.cancelled() => None,
        }
    }

    /// Reads the whole catalog and reports it; `true` when complete.
    async fn read(&self, conn: &Connection, settings: &Settings) -> bool {
        let started = Instant::now();
        let read = read_catalog(conn, settings, &|_| {}).await;
        metrics::discovery(
            self.up.name(),
            matches!(read, CatalogRead::Complete(_)),
            started.elapsed(),
        );
        match read {
            CatalogRead::Complete(catalog) => {
                self.report(Change::Read(catalog)).await;
                true
            }
            CatalogRead::Incomplete { list, reason } => {
                let reason = NotEstablished::Incomplete { list, reason };
                tracing::warn!(
                    upstream = self.up.name(),
                    "catalog not established: {reason}; the previous catalog (if any) stays served, and the read is retried"
                );
                self.report(Change::NotEstablished(reason)).await;
                false
            }
        }
    }
}

/// Sleeps the backoff (doubling it for next time); `false` on shutdown.
async fn wait_backoff(backoff: &mut Duration, shutdown: &CancellationToken) -> bool {
    let delay = *backoff;
    *backoff = (*backoff * 2).min(BACKOFF_MAX);
    tokio::select! {
        () = tokio::time::sleep(delay) => true,
        () = shutdown.cancelled() => false,
    }
}

fn era_name(era: Era) -> &'static str {
    match era {
        Era::Modern => "modern",
        Era::Legacy => "legacy",
    }
}

/// Subscribes `conn` to updates of `uri` on its own task. A legacy upstream
/// takes `resources/subscribe`; a modern one has no such method and sends
/// updates on a `subscriptions/listen` stream that names the URI (MCP
/// 2026-07-28, `subscriptions/listen`): the task's handle is returned then,
/// and aborting it ends the stream (which cancels it upstream).
pub(crate) fn subscribe_resource(
    upstream: &str,
    conn: &Arc<Connection>,
    uri: &str,
    timeout: Duration,
) -> Option<AbortHandle> {
    let c = Arc::clone(conn);
    let name = upstream.to_owned();
    let target = uri.to_owned();
    let modern = conn.description().era == Era::Modern;
    let task = tokio::spawn(async move {
        let (method, params, lifetime) = if modern {
            let filter = json!({"notifications": {"resourceSubscriptions": [target]}});
            ("subscriptions/listen", filter, LISTEN_LIFETIME)
        } else {
            ("resources/subscribe", json!({"uri": target}), timeout)
        };
        let outcome = c.call(Call::new(method, params, lifetime)).await;
        if let Err(e) = outcome
            && !c.is_closed()
        {
            tracing::warn!(upstream = %name, "could not subscribe to a resource: {e}");
        }
    });
    modern.then(|| task.abort_handle())
}

/// Opens a `subscriptions/listen` stream at a modern upstream for the
/// tasks `filter` names (its own ids; `sluice_core::tasks::listen`), on its
/// own task: what arrives on it is routed like any `notifications/tasks`.
/// Aborting the returned handle ends the stream (which cancels it
/// upstream); a connection that ends ends it too.
pub(crate) fn listen_for_tasks(
    upstream: &str,
    conn: &Arc<Connection>,
    filter: Value,
) -> AbortHandle {
    let c = Arc::clone(conn);
    let name = upstream.to_owned();
    let task = tokio::spawn(async move {
        let capabilities = sluice_core::tasks::listen::upstream_capabilities();
        let outcome = c
            .request(
                "subscriptions/listen",
                filter,
                &capabilities,
                None,
                LISTEN_LIFETIME,
                &[],
            )
            .await;
        if let Err(e) = outcome
            && !c.is_closed()
        {
            tracing::warn!(upstream = %name, "task status stream ended: {e}; tasks/get still answers");
        }
    });
    task.abort_handle()
}

/// When the catalog is read next: on `list_changed` (debounced), on the
/// refresh interval, and after an incomplete read with its own backoff, so
/// an upstream that cannot list is retried without being hammered.
struct ReadSchedule {
    next: Option<Instant>,
    interval: Duration,
    retry: Duration,
}

impl ReadSchedule {
    fn new(settings: &Settings) -> Self {
        ReadSchedule {
            next: None,
            interval: settings.refresh_interval,
            retry: BACKOFF_MIN,
        }
    }

    /// Resolves when the next read is due (never, when none is).
    fn due(&self) -> impl Future<Output = ()> + use<> {
        let next = self.next;
        async move {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        }
    }

    fn after_read(&mut self, complete: bool) {
        let now = Instant::now();
        if complete {
            self.retry = BACKOFF_MIN;
            self.next = (!self.interval.is_zero()).then(|| now + self.interval);
        } else {
            self.next = Some(now + self.retry);
            self.retry = (self.retry * 2).min(BACKOFF_MAX);
        }
    }

    fn list_changed(&mut self) {
        let soon = Instant::now() + REFRESH_DEBOUNCE;
        self.next = Some(self.next.map_or(soon, |at| at.min(soon)));
    }
}

/// Reads every list the upstream offers, each to its last page, within
/// the catalog read timeout; `on_page` hears how far it got after each
/// page (for a progress line).
pub(crate) async fn read_catalog(
    conn: &Connection,
    settings: &Settings,
    on_page: &(dyn Fn(ReadProgress) + Sync),
) -> CatalogRead {
    let deadline = Instant::now() + settings.catalog_read_timeout;
    let mut walk = CatalogWalk::new(|c| conn.offers(c), settings.catalog_limits);
    let mut step = walk.start();
    loop {
        let (list, cursor) = match step {
            CatalogStep::Fetch { list, cursor } => (list, cursor),
            CatalogStep::Done(read) => return read,
        };
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            step = walk.handle_timeout();
            continue;
        }
        let params = match cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let timeout = settings.request_timeout.min(remaining);
        let answer = conn.call(Call::new(list.method(), params, timeout)).await;
        step = match answer {
            Ok(page) => {
                let step = walk.handle_page(page);
                on_page(walk.progress());
                step
            }
            Err(UpstreamFailure::Rpc(e)) => walk.handle_error(e.code),
            Err(UpstreamFailure::Timeout { .. }) => walk.handle_timeout(),
            Err(_) => walk.handle_failure(),
        };
    }
}

/// Connects to one upstream, reads its catalog once and disconnects: what
/// `sluice lock` and `sluice check` need.
pub(crate) async fn read_once(
    config: &UpstreamConfig,
    settings: &Settings,
    on_page: &(dyn Fn(ReadProgress) + Sync),
) -> Result<CatalogRead, NotEstablished> {
    let (events, mut drain) = mpsc::channel(256);
    // Nothing listens to this upstream's notifications: drop them.
    tokio::spawn(async move { while drain.recv().await.is_some() {} });
    let never = CancellationToken::new();
    let conn = match connect(config, settings, events, &never).await {
        Ok(conn) => conn,
        Err(detail) => {
            tracing::warn!(upstream = %config.name, "could not connect: {detail}");
            return Err(NotEstablished::Unreachable);
        }
    };
    let read = read_catalog(&conn, settings, on_page).await;
    conn.shutdown(settings.shutdown_grace).await;
    Ok(read)
}

/// Connects and completes the handshake within `startup_timeout`; on any
/// failure the child (if any) is ended before returning.
pub(crate) async fn connect(
    config: &UpstreamConfig,
    settings: &Settings,
    events: mpsc::Sender<UpstreamEvent>,
    shutdown: &CancellationToken,
) -> Result<Connection, String> {
    let name: Arc<str> = Arc::from(config.name.as_str());
    let (wire, readers) = open_wire(&name, &config.transport, settings).await?;
    let shared = Shared::new(name, wire, events, settings.client_info.clone());
    if let Some(readers) = readers {
        readers.start(
            Arc::clone(&shared) as Arc<dyn Inbound>,
            settings.max_message_bytes,
        );
    }
    let handshake = tokio::select! {
        h = tokio::time::timeout(settings.startup_timeout, handshake(&shared, settings)) => h.unwrap_or_else(|_| {
            Err(format!("did not finish its handshake within {:?}", settings.startup_timeout))
        }),
        () = shutdown.cancelled() => Err("sluice is shutting down".to_owned()),
    };
    let description = match handshake {
        Ok(description) => description,
        Err(reason) => {
            // Nothing else will end this child: its reader holds the
            // connection alive until the process is gone.
            shared.close();
            shared.wire().terminate(settings.shutdown_grace).await;
            return Err(reason);
        }
    };
    match description.era {
        Era::Legacy => shared.open_notifications().await,
        Era::Modern => listen_for_changes(&shared, &description.capabilities),
    }
    Ok(Connection::new(shared, description))
}

/// The transport to an upstream: a spawned child (with its readers, to
/// start once there is a connection to deliver to), or an HTTP client for
/// its checked address.
async fn open_wire(
    name: &Arc<str>,
    transport: &UpstreamTransport,
    settings: &Settings,
) -> Result<(Arc<dyn Wire>, Option<stdio::StdioReaders>), String> {
    match transport {
        UpstreamTransport::Stdio {
            command,
            args,
            env,
            cwd,
            rlimit,
            sandbox,
        } => {
            let spec = child::ChildSpec {
                command,
                args,
                env,
                cwd: cwd.as_ref(),
                rlimit,
                sandbox,
                redactor: &settings.redactor,
            };
            let (wire, readers) = stdio::spawn(name, &spec)
                .map_err(|e| format!("could not start {command:?}: {e}"))?;
            Ok((Arc::new(wire), Some(readers)))
        }
        UpstreamTransport::Http {
            url,
            headers,
            allow_private,
            oauth,
        } => {
            let auth = match (oauth, &settings.vault) {
                (None, _) => None,
                (Some(_), Some(vault)) => Some(oauth::UpstreamAuth::new(
                    name,
                    url,
                    vault.clone(),
                    *allow_private,
                    settings.web_login.clone(),
                )),
                (Some(_), None) => {
                    return Err(
                        "it needs a login, and this sluice has no vault to keep logins in"
                            .to_owned(),
                    );
                }
            };
            let checked = tokio::time::timeout(
                settings.startup_timeout,
                outbound::resolve_checked(url, *allow_private),
            )
            .await
            .map_err(|_| {
                format!(
                    "resolving {url} took longer than {:?}",
                    settings.startup_timeout
                )
            })?
            .map_err(|e| e.to_string())?;
            let wire = http::HttpWire::new(
                Arc::clone(name),
                &checked,
                headers,
                settings.max_message_bytes,
                auth,
            )?;
            Ok((Arc::new(wire), None))
        }
    }
}

/// A modern upstream tells of catalog changes only on a
/// `subscriptions/listen` stream (MCP 2026-07-28, `subscriptions/listen`):
/// open one for the lists it says can change. It lives as long as the
/// connection; what arrives on it is routed like any notification, so
/// `list_changed` triggers a re-read.
fn listen_for_changes(shared: &Arc<Shared>, capabilities: &Value) {
    let mut filter = serde_json::Map::new();
    for (capability, key) in [
        ("tools", "toolsListChanged"),
        ("prompts", "promptsListChanged"),
        ("resources", "resourcesListChanged"),
    ] {
        let changes = capabilities
            .get(capability)
            .and_then(|c| c.get("listChanged"))
            .and_then(Value::as_bool);
        if changes == Some(true) {
            filter.insert(key.into(), true.into());
        }
    }
    if filter.is_empty() {
        return;
    }
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let listen = Call::new(
            "subscriptions/listen",
            json!({"notifications": filter}),
            LISTEN_LIFETIME,
        );
        let outcome = shared.request(Era::Modern, listen).await;
        if let Err(e) = outcome
            && !shared.is_closed()
        {
            tracing::warn!(
                upstream = shared.name(),
                "subscriptions/listen ended: {e}; catalog changes will be seen on reconnect"
            );
        }
    });
}

/// Probes the era with `server/discover`, then (legacy) runs `initialize`
/// (MCP specification, Lifecycle: Initialization).
async fn handshake(shared: &Shared, settings: &Settings) -> Result<ServerDescription, String> {
    // Half the start budget at most, so that `initialize` still has time
    // after a probe that is never answered.
    let timeout = PROBE_TIMEOUT.min(settings.startup_timeout / 2);
    let probe = shared
        .request(
            Era::Modern,
            Call::new("server/discover", json!({}), timeout),
        )
        .await;
    let verdict = match &probe {
        Ok(result) => protocol::judge_probe(&Ok(result.clone())),
        Err(UpstreamFailure::Rpc(e)) => protocol::judge_probe(&Err(e.clone())),
        Err(UpstreamFailure::Lost { .. }) if shared.is_closed() => {
            return Err("the upstream exited during the handshake".into());
        }
        // A timeout, an HTTP error without a JSON-RPC body, ...: legacy.
        Err(_) => ProbeVerdict::Legacy,
    };
    match verdict {
        ProbeVerdict::Modern => {
            let result = probe.unwrap_or_default();
            Ok(described(
                Era::Modern,
                protocol::MODERN_VERSION.to_owned(),
                result,
            ))
        }
        ProbeVerdict::ModernUnsupported => {
            Err("the upstream supports no protocol version sluice speaks".into())
        }
        ProbeVerdict::Legacy => initialize(shared, settings).await,
    }
}

async fn initialize(shared: &Shared, settings: &Settings) -> Result<ServerDescription, String> {
    // sluice declares sampling and elicitation, both of its modes, so that
    // upstreams can use them through it (relayed to the clients that
    // declared them; the connection is shared, so the upstream cannot be
    // told per client). Not roots: an upstream would replace its
    // configured scope with the roots of whichever client happened to
    // answer.
    let params = json!({
        "protocolVersion": protocol::LEGACY_VERSIONS[0],
        "capabilities": {"sampling": {}, "elicitation": {"form": {}, "url": {}}},
        "clientInfo": settings.client_info,
    });
    let result = shared
        .request(
            Era::Legacy,
            Call::new("initialize", params, settings.startup_timeout),
        )
        .await
        .map_err(|e| match e {
            UpstreamFailure::Rpc(e) => format!("initialize was refused: {}", e.message),
            UpstreamFailure::Lost { .. } => "the upstream exited during the handshake".into(),
            other => format!("initialize failed: {other}"),
        })?;
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or("the initialize result has no protocolVersion")?
        .to_owned();
    shared.wire().negotiated(&version);
    let initialized = jsonrpc::notification("notifications/initialized", Value::Null);
    shared.wire().notify(Era::Legacy, &initialized).await;
    Ok(described(Era::Legacy, version, result))
}

/// What a handshake's `result` says of the upstream.
fn described(era: Era, protocol_version: String, result: Value) -> ServerDescription {
    ServerDescription {
        era,
        protocol_version,
        capabilities: result
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({})),
        handshake: result,
    }
}
