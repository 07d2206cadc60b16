//! Upstreams: connecting, reading catalogs, and keeping each one alive.
//!
//! Each configured upstream gets one supervisor task ([`supervise`]) that
//! connects (spawn or HTTP), probes the era (`server/discover`, then
//! `initialize`), reads its catalog to the last page, publishes it, and
//! re-reads it on `list_changed`. When the connection ends (crash, hang,
//! session lost) every request in flight fails at once with an error naming
//! the upstream, and the supervisor reconnects with exponential backoff. One
//! upstream's trouble never reaches another's task.

mod connection;
mod http;
mod stdio;

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use sluice_core::catalog::drift::{Diff, NotEstablished};
use sluice_core::config::{Config, UpstreamConfig, UpstreamTransport};
use sluice_core::discovery::{CatalogRead, CatalogStep, CatalogWalk, WalkLimits};
use sluice_core::jsonrpc;
use sluice_core::protocol::{self, Era, ProbeVerdict};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) use connection::{Connection, Related, UpstreamEvent};
use connection::{ServerDescription, Shared, Wire};

use crate::gateway::{Hub, Published};
use crate::ops::metrics;
use crate::outbound;
use sluice_core::policy::UpstreamFailure;

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
    status: Mutex<UpstreamStatus>,
}

/// What `/health` shows of an upstream. Nothing secret, no address.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct UpstreamStatus {
    /// `starting`, `ready`, `restarting`, `failed` or `stopped`.
    pub state: &'static str,
    /// `modern` or `legacy`, once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub era: Option<&'static str>,
    /// The negotiated protocol version, once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// How many times it was reconnected.
    pub restarts: u32,
    /// The last failure, in sluice's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The catalog: `none` (never read completely), `complete`, or `stale`
    /// (the last complete read is served; a newer read did not finish).
    pub catalog: &'static str,
    /// Entry counts of the served catalog.
    pub tools: usize,
    /// Resources served.
    pub resources: usize,
    /// Resource templates served.
    pub resource_templates: usize,
    /// Prompts served.
    pub prompts: usize,
    /// The served catalog against `sluice.lock`: `pending` (no complete
    /// read yet), `unpinned` (no lockfile), `unchanged` or `drifted`.
    pub approval: &'static str,
    /// What drifted, when `approval` is `drifted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftCounts>,
}

/// How many entries drifted, by kind of drift.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct DriftCounts {
    /// Listed but not approved.
    pub added: usize,
    /// Approved but no longer listed.
    pub removed: usize,
    /// Listed with a definition other than the approved one.
    pub changed: usize,
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
}

// === impl Settings ===

impl Settings {
    pub(crate) fn new(config: &Config, client_info: Value) -> Self {
        Settings {
            request_timeout: config.server.request_timeout,
            startup_timeout: config.server.startup_timeout,
            shutdown_grace: config.server.shutdown_grace,
            max_message_bytes: config.limits.transport_max_message_bytes,
            client_info,
            catalog_limits: config.catalog.limits,
            catalog_read_timeout: config.catalog.read_timeout,
            refresh_interval: config.catalog.refresh_interval,
        }
    }
}

// === impl Upstream ===

impl Upstream {
    pub(crate) fn new(config: UpstreamConfig, stop: CancellationToken) -> Self {
        Upstream {
            config,
            stop,
            connection: RwLock::new(None),
            status: Mutex::new(UpstreamStatus {
                state: "starting",
                era: None,
                protocol_version: None,
                restarts: 0,
                last_error: None,
                catalog: "none",
                tools: 0,
                resources: 0,
                resource_templates: 0,
                prompts: 0,
                approval: "pending",
                drift: None,
            }),
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
            != "none"
    }

    pub(crate) fn status(&self) -> UpstreamStatus {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn update(&self, f: impl FnOnce(&mut UpstreamStatus)) {
        let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut status);
        metrics::upstream_up(self.name(), status.state == "ready");
    }

    /// Shows what the lockfile made of its last complete read.
    pub(crate) fn record_approval(&self, published: &Published) {
        let diff = &published.diff;
        metrics::drift(
            self.name(),
            diff.added.len() + diff.removed.len() + diff.changed.len(),
        );
        self.update(|s| {
            s.approval = match (diff, published.pinned) {
                (_, false) => "unpinned",
                (d, true) if d.is_empty() => "unchanged",
                _ => "drifted",
            };
            s.drift = (!diff.is_empty()).then(|| drift_counts(diff));
        });
    }

    fn set_connection(&self, conn: Option<Arc<Connection>>) {
        *self
            .connection
            .write()
            .unwrap_or_else(PoisonError::into_inner) = conn;
    }
}

/// Counts an upstream's first connection attempt once, however it ends:
/// connected and read, failed, or stopped before either.
struct FirstAttempt<'a> {
    hub: &'a Hub,
    pending: bool,
}

impl FirstAttempt<'_> {
    fn done(&mut self) {
        if std::mem::take(&mut self.pending) {
            self.hub.mark_settled();
        }
    }
}

impl Drop for FirstAttempt<'_> {
    fn drop(&mut self) {
        self.done();
    }
}

/// Keeps one upstream connected until its `stop` token is cancelled. Each
/// connection takes the settings in force when it is made.
pub(crate) async fn supervise(up: Arc<Upstream>, hub: Arc<Hub>) {
    let mut backoff = BACKOFF_MIN;
    let mut first_attempt = FirstAttempt {
        hub: &hub,
        pending: true,
    };
    loop {
        let settings = hub.settings();
        let (events_tx, mut events) = mpsc::channel(256);
        let started = Instant::now();
        let conn = match connect(&up.config, &settings, events_tx, &up.stop).await {
            Ok(conn) => Arc::new(conn),
            Err(_) if up.stop.is_cancelled() => break,
            Err(reason) => {
                tracing::warn!(upstream = up.name(), "upstream failed to start: {reason}");
                up.update(|s| {
                    s.state = "failed";
                    s.last_error = Some(reason);
                });
                first_attempt.done();
                if !wait_backoff(&mut backoff, &up.stop).await {
                    break;
                }
                continue;
            }
        };
        let desc = conn.description().clone();
        tracing::info!(
            upstream = up.name(),
            era = era_name(desc.era),
            version = %desc.protocol_version,
            "upstream connected"
        );
        up.set_connection(Some(Arc::clone(&conn)));
        up.update(|s| {
            s.state = "ready";
            s.era = Some(era_name(desc.era));
            s.protocol_version = Some(desc.protocol_version.clone());
        });
        resubscribe(&up, &hub, &conn, &settings);
        let mut reads = ReadSchedule::new(&settings);
        let Some(complete) = refresh_or_stop(&up, &hub, &conn, &settings, &up.stop).await else {
            return stop(&up, &conn, &settings).await;
        };
        reads.after_read(complete);
        first_attempt.done();

        loop {
            let refresh_at = reads.next;
            let refresh_due = async {
                match refresh_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = up.stop.cancelled() => return stop(&up, &conn, &settings).await,
                () = conn.closed() => break,
                Some(event) = events.recv() => match event {
                    UpstreamEvent::ListChanged(_) => reads.list_changed(),
                    other => hub.upstream_event(up.name(), other),
                },
                () = refresh_due => {
                    let Some(complete) = refresh_or_stop(&up, &hub, &conn, &settings, &up.stop).await else {
                        return stop(&up, &conn, &settings).await;
                    };
                    reads.after_read(complete);
                }
            }
        }

        // The connection ended: requests in flight already failed, and
        // its listen streams with them.
        up.set_connection(None);
        hub.forget_resource_listens(up.name());
        let reason = match exit_status(&conn).await {
            Some(status) => format!("the process exited ({status})"),
            None => "the connection was lost".to_owned(),
        };
        tracing::warn!(
            upstream = up.name(),
            "upstream disconnected: {reason}; reconnecting"
        );
        metrics::upstream_restarted(up.name());
        up.update(|s| {
            s.state = "restarting";
            s.restarts += 1;
            s.last_error = Some(reason);
        });
        conn.shutdown(settings.shutdown_grace).await;
        if started.elapsed() > HEALTHY_AFTER {
            backoff = BACKOFF_MIN;
        }
        if !wait_backoff(&mut backoff, &up.stop).await {
            break;
        }
    }
    up.update(|s| s.state = "stopped");
}

/// The upstream is stopped (sluice shuts down, or a reload removes or
/// restarts it): ends the connection (a child gets SIGTERM, then SIGKILL
/// after the grace period).
async fn stop(up: &Upstream, conn: &Connection, settings: &Settings) {
    conn.shutdown(settings.shutdown_grace).await;
    up.set_connection(None);
    up.update(|s| s.state = "stopped");
}

async fn exit_status(conn: &Connection) -> Option<std::process::ExitStatus> {
    match conn.wire() {
        Wire::Stdio(stdio) => {
            // The reader saw EOF; give the process a moment to be reaped.
            for _ in 0..10 {
                if let Some(status) = stdio.exit_status().await {
                    return Some(status);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            None
        }
        Wire::Http(_) => None,
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

/// Subscriptions clients hold survive a reconnect: subscribe again, all at
/// once and on their own tasks (each bounded by the request timeout; a
/// connection that ends ends them).
fn resubscribe(up: &Upstream, hub: &Hub, conn: &Arc<Connection>, settings: &Settings) {
    for uri in hub.subscribed(up.name()) {
        subscribe_resource(up.name(), hub, conn, &uri, settings.request_timeout);
    }
}

/// Subscribes `conn` to updates of `uri` on its own task. A legacy upstream
/// takes `resources/subscribe`; a modern one has no such method and sends
/// updates on a `subscriptions/listen` stream that names the URI
/// (MCP-NOTES §4.4), kept open until [`Hub::end_resource_listen`] (which
/// cancels it upstream).
pub(crate) fn subscribe_resource(
    upstream: &str,
    hub: &Hub,
    conn: &Arc<Connection>,
    uri: &str,
    timeout: Duration,
) {
    let c = Arc::clone(conn);
    let name = upstream.to_owned();
    let target = uri.to_owned();
    let modern = conn.description().era == Era::Modern;
    // No one holds it any more (an unsubscribe came between a reconnect's
    // snapshot and now): nothing to start.
    if hub.subscription_count(upstream, uri) == 0 {
        return;
    }
    let task = tokio::spawn(async move {
        let (method, params, lifetime) = if modern {
            let filter = json!({"notifications": {"resourceSubscriptions": [target]}});
            ("subscriptions/listen", filter, LISTEN_LIFETIME)
        } else {
            ("resources/subscribe", json!({"uri": target}), timeout)
        };
        let outcome = c
            .request(method, params, &json!({}), None, lifetime, &[])
            .await;
        if let Err(e) = outcome
            && !c.is_closed()
        {
            tracing::warn!(upstream = %name, "could not subscribe to a resource: {e}");
        }
    });
    if modern {
        hub.start_resource_listen(upstream, uri, task.abort_handle());
    }
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

/// Reads the catalog unless shutdown comes first (`None`); `Some(true)`
/// when the read was complete. A connection lost meanwhile ends the read at
/// once (its requests fail).
async fn refresh_or_stop(
    up: &Upstream,
    hub: &Hub,
    conn: &Connection,
    settings: &Settings,
    shutdown: &CancellationToken,
) -> Option<bool> {
    tokio::select! {
        complete = refresh_catalog(up, hub, conn, settings) => Some(complete),
        () = shutdown.cancelled() => None,
    }
}

/// Reads the whole catalog and publishes it, or keeps the previous one
/// (marked stale) when the read did not finish. `true` when complete.
async fn refresh_catalog(up: &Upstream, hub: &Hub, conn: &Connection, settings: &Settings) -> bool {
    let started = Instant::now();
    let read = read_catalog(conn, settings).await;
    metrics::discovery(
        up.name(),
        matches!(read, CatalogRead::Complete(_)),
        started.elapsed(),
    );
    match read {
        CatalogRead::Complete(catalog) => {
            let counts = [
                catalog.tools.len(),
                catalog.resources.len(),
                catalog.resource_templates.len(),
                catalog.prompts.len(),
            ];
            let Some(published) = hub.publish(up, catalog) else {
                // A reload took this upstream out of service meanwhile.
                return true;
            };
            up.record_approval(&published);
            up.update(|s| {
                s.catalog = "complete";
                // What went wrong before is over: the upstream is serving.
                s.last_error = None;
                [s.tools, s.resources, s.resource_templates, s.prompts] = counts;
            });
            true
        }
        CatalogRead::Incomplete { list, reason } => {
            let reason = NotEstablished::Incomplete { list, reason };
            tracing::warn!(
                upstream = up.name(),
                "catalog not established: {reason}; the previous catalog (if any) stays served, and the read is retried"
            );
            up.update(|s| {
                if s.catalog == "complete" {
                    s.catalog = "stale";
                }
                s.last_error = Some(reason.to_string());
            });
            false
        }
    }
}

fn drift_counts(diff: &Diff) -> DriftCounts {
    DriftCounts {
        added: diff.added.len(),
        removed: diff.removed.len(),
        changed: diff.changed.len(),
    }
}

/// Reads every list the upstream offers, each to its last page, within
/// the catalog read timeout.
pub(crate) async fn read_catalog(conn: &Connection, settings: &Settings) -> CatalogRead {
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
        let answer = conn
            .request(
                list.method(),
                params,
                &json!({}),
                None,
                settings.request_timeout.min(remaining),
                &[],
            )
            .await;
        step = match answer {
            Ok(page) => walk.handle_page(page),
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
    let read = read_catalog(&conn, settings).await;
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
    let shared = match &config.transport {
        UpstreamTransport::Stdio {
            command,
            args,
            env,
            cwd,
            rlimit,
        } => {
            let spec = stdio::ChildSpec {
                command,
                args,
                env,
                cwd: cwd.as_ref(),
                rlimit,
            };
            let spawned = stdio::spawn(&name, &spec)
                .map_err(|e| format!("could not start {command:?}: {e}"))?;
            let (wire, readers) = spawned.into_parts();
            let shared = Shared::new(
                name,
                Wire::Stdio(wire),
                events,
                settings.client_info.clone(),
            );
            readers.start(Arc::clone(&shared), settings.max_message_bytes);
            shared
        }
        UpstreamTransport::Http {
            url,
            headers,
            allow_private,
        } => {
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
            let wire = http::HttpWire::new(&checked, headers, settings.max_message_bytes)?;
            Shared::new(
                name,
                Wire::Http(Arc::new(wire)),
                events,
                settings.client_info.clone(),
            )
        }
    };
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
            if let Wire::Stdio(stdio) = &shared.wire {
                stdio.terminate(&shared.name, settings.shutdown_grace).await;
            }
            return Err(reason);
        }
    };
    match (description.era, &shared.wire) {
        (Era::Legacy, Wire::Http(wire)) => wire.listen(Arc::clone(&shared)),
        (Era::Legacy, Wire::Stdio(_)) => {}
        (Era::Modern, _) => listen_for_changes(&shared, &description.capabilities),
    }
    Ok(Connection::new(shared, description))
}

/// A modern upstream tells of catalog changes only on a
/// `subscriptions/listen` stream (MCP-NOTES §4.4): open one for the lists
/// it says can change. It lives as long as the connection; what arrives on
/// it is routed like any notification, so `list_changed` triggers a re-read.
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
        let outcome = shared
            .request(
                Era::Modern,
                "subscriptions/listen",
                json!({"notifications": filter}),
                &json!({}),
                None,
                LISTEN_LIFETIME,
                &[],
            )
            .await;
        if let Err(e) = outcome
            && !shared.closed.is_cancelled()
        {
            tracing::warn!(upstream = %shared.name, "subscriptions/listen ended: {e}; catalog changes will be seen on reconnect");
        }
    });
}

/// Probes the era, then (legacy) runs `initialize` (MCP-NOTES §1.3).
async fn handshake(shared: &Arc<Shared>, settings: &Settings) -> Result<ServerDescription, String> {
    let probe = shared
        .request(
            Era::Modern,
            "server/discover",
            json!({}),
            &json!({}),
            None,
            // Half the start budget at most, so that `initialize` still
            // has time after a probe that is never answered.
            PROBE_TIMEOUT.min(settings.startup_timeout / 2),
            &[],
        )
        .await;
    let verdict = match &probe {
        Ok(result) => protocol::judge_probe(&Ok(result.clone())),
        Err(UpstreamFailure::Rpc(e)) => protocol::judge_probe(&Err(e.clone())),
        Err(UpstreamFailure::Lost { .. }) if shared.closed.is_cancelled() => {
            return Err("the upstream exited during the handshake".into());
        }
        // A timeout, an HTTP error without a JSON-RPC body, ...: legacy.
        Err(_) => ProbeVerdict::Legacy,
    };
    match verdict {
        ProbeVerdict::Modern => {
            let result = probe.unwrap_or_default();
            Ok(ServerDescription {
                era: Era::Modern,
                protocol_version: protocol::MODERN_VERSION.to_owned(),
                capabilities: result
                    .get("capabilities")
                    .cloned()
                    .unwrap_or_else(|| json!({})),
                handshake: result,
            })
        }
        ProbeVerdict::ModernUnsupported => {
            Err("the upstream supports no protocol version sluice speaks".into())
        }
        ProbeVerdict::Legacy => initialize(shared, settings).await,
    }
}

async fn initialize(
    shared: &Arc<Shared>,
    settings: &Settings,
) -> Result<ServerDescription, String> {
    // sluice declares sampling and elicitation so that upstreams can use
    // them through it (relayed to clients that support them). Not roots:
    // an upstream would replace its configured scope with the roots of
    // whichever client happened to answer.
    let params = json!({
        "protocolVersion": protocol::LEGACY_VERSIONS[0],
        "capabilities": {"sampling": {}, "elicitation": {}},
        "clientInfo": settings.client_info,
    });
    let result = shared
        .request(
            Era::Legacy,
            "initialize",
            params,
            &json!({}),
            None,
            settings.startup_timeout,
            &[],
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
    if let Wire::Http(wire) = &shared.wire {
        wire.set_legacy_version(&version);
    }
    shared
        .notify(
            Era::Legacy,
            &jsonrpc::notification("notifications/initialized", Value::Null),
        )
        .await;
    Ok(ServerDescription {
        era: Era::Legacy,
        protocol_version: version,
        capabilities: result
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({})),
        handshake: result,
    })
}
