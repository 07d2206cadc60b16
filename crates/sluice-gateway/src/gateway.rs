//! The gateway: upstream supervisors, the published catalog, and the events
//! every connected client may need.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_core::boundary::redact::{MIN_EXACT_SECRET, Redactor};
use sluice_core::catalog::drift::{self, Approval, Diff, OnDrift};
use sluice_core::catalog::lockfile::{LockedUpstream, Lockfile};
use sluice_core::catalog::{Federation, UpstreamCatalog};
use sluice_core::config::Config;
use sluice_core::discovery::ListKind;
use sluice_core::envelope::Cursors;
use sluice_core::naming::Naming;
use sluice_core::session_token::SessionKey;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::Auth;
use crate::bridge::Bridge;
use crate::ops::Ops;
use crate::ratelimit::RateLimits;
use crate::upstream::{self, Settings, Upstream, UpstreamEvent, UpstreamStatus};

/// sluice's name in `serverInfo` and `clientInfo`.
pub const NAME: &str = "sluice";
/// sluice's version, the crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A running gateway.
pub struct Gateway {
    pub(crate) config: Config,
    pub(crate) bridge: Bridge,
    pub(crate) upstreams: Vec<Arc<Upstream>>,
    pub(crate) hub: Arc<Hub>,
    /// Seals the cursors of every list sluice pages.
    pub(crate) cursors: Cursors,
    /// Seals legacy session ids, which carry their session to any replica
    /// that shares the cursor secret.
    pub(crate) session_key: SessionKey,
    /// Who HTTP clients are (`[auth]`).
    pub auth: Auth,
    /// The tool-call rate limiters.
    pub(crate) rate_limits: Arc<RateLimits>,
    /// Where metrics and audit rows go.
    pub(crate) ops: Ops,
    shutdown: CancellationToken,
    tracker: TaskTracker,
}

/// What clients share: the federated catalog and the event feed.
pub(crate) struct Hub {
    /// The secret rules every answer and notification goes through.
    pub(crate) redactor: Redactor,
    order: Vec<String>,
    naming: Naming,
    /// The approved catalogs; `None` runs unpinned.
    lock: Option<Lockfile>,
    on_drift: OnDrift,
    /// What each upstream contributes, from its last complete read.
    approvals: Mutex<HashMap<String, Approval>>,
    federation: RwLock<Arc<Federation>>,
    events: broadcast::Sender<ClientEvent>,
    /// How many upstreams finished their first connection attempt.
    settled: watch::Sender<usize>,
    /// Resource subscriptions held upstream: (upstream, URI) -> how many
    /// client sessions want it. An upstream connection is shared, so it is
    /// subscribed once and unsubscribed when the last session lets go.
    subscriptions: Mutex<HashMap<(String, String), usize>>,
    /// One lock per (upstream, URI), held across each change sent upstream,
    /// so that a subscribe and an unsubscribe for the same URI reach the
    /// upstream in the order their counts changed.
    subscription_locks: Mutex<HashMap<(String, String), OrderLock>>,
    /// The `subscriptions/listen` streams that hold resource subscriptions
    /// on modern upstreams, by (upstream, URI).
    resource_listens: Mutex<HashMap<(String, String), tokio::task::AbortHandle>>,
}

/// What publishing a complete read found.
pub(crate) struct Published {
    /// The drift from the approved catalog (empty when unpinned).
    pub(crate) diff: Diff,
    /// Whether a lockfile is in force.
    pub(crate) pinned: bool,
}

/// Orders the changes sent upstream for one subscription.
pub(crate) type OrderLock = Arc<tokio::sync::Mutex<()>>;

/// Something to tell connected clients about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClientEvent {
    /// The federated list changed: the notification method to send.
    ListChanged(&'static str),
    /// `notifications/resources/updated` params from an upstream.
    ResourceUpdated(Value),
    /// A log message from an upstream that no request could take.
    Log(Value),
}

// === impl Gateway ===

/// Keeps the rate limiters' memory bounded by the recently active keys.
async fn forget_idle_rates(limits: Arc<RateLimits>, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(60)) => limits.forget_idle(),
            () = shutdown.cancelled() => return,
        }
    }
}

impl Gateway {
    /// Starts one supervisor per upstream and returns at once; upstreams
    /// connect in the background. With a lockfile, clients see only what it
    /// approves (`[catalog] on_drift` says what happens to the rest);
    /// without one, sluice runs unpinned.
    /// `cursor_secret` seals list cursors and (through a derived key)
    /// legacy session ids: keep it across restarts (the CLI stores it in the
    /// state directory) so that cursors stay valid, and give every replica
    /// the same one so that each takes up the others' cursors and sessions.
    /// `ops` says where audit rows go (metrics go to the process's
    /// recorder, when one is installed).
    pub fn start(
        config: Config,
        lock: Option<Lockfile>,
        cursor_secret: [u8; 32],
        ops: Ops,
    ) -> Arc<Gateway> {
        let settings = settings(&config);
        let secrets = config.known_secrets();
        let short = secrets
            .iter()
            .filter(|s| s.len() < MIN_EXACT_SECRET)
            .count();
        if short > 0 {
            tracing::warn!(
                "{short} configured secret value(s) are shorter than {MIN_EXACT_SECRET} characters and are not redacted by value (too likely to match ordinary text)"
            );
        }
        let redactor = Redactor::new(secrets, &config.redaction.secret_keys);
        let (events, _) = broadcast::channel(1024);
        let hub = Arc::new(Hub {
            redactor,
            order: config.upstreams.iter().map(|u| u.name.clone()).collect(),
            naming: config.naming(),
            lock,
            on_drift: config.catalog.on_drift,
            approvals: Mutex::new(HashMap::new()),
            federation: RwLock::new(Arc::new(Federation::default())),
            events,
            settled: watch::Sender::new(0),
            subscriptions: Mutex::new(HashMap::new()),
            subscription_locks: Mutex::new(HashMap::new()),
            resource_listens: Mutex::new(HashMap::new()),
        });
        let upstreams: Vec<Arc<Upstream>> = config
            .upstreams
            .iter()
            .map(|u| Arc::new(Upstream::new(u.clone())))
            .collect();
        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        for up in &upstreams {
            tracker.spawn(upstream::supervise(
                Arc::clone(up),
                Arc::clone(&hub),
                settings.clone(),
                shutdown.clone(),
            ));
        }
        tracker.close();
        let rate_limits = Arc::new(RateLimits::new(&config));
        tokio::spawn(forget_idle_rates(
            Arc::clone(&rate_limits),
            shutdown.clone(),
        ));
        Arc::new(Gateway {
            bridge: Bridge::new(config.server.request_timeout),
            cursors: Cursors::new(cursor_secret),
            session_key: SessionKey::derive(&cursor_secret),
            auth: Auth::new(&config.auth),
            rate_limits,
            ops,
            config,
            upstreams,
            hub,
            shutdown,
            tracker,
        })
    }

    /// A legacy session ended (DELETE, expiry, a second `initialize`): its
    /// resource subscriptions are released, upstream too when it was the
    /// last (on their own tasks: nothing waits for the upstream).
    pub fn end_session(&self, session: &crate::downstream::ClientSession) {
        session.closed.cancel();
        for (uri, upstream) in session.take_subscriptions() {
            if self.hub.release_subscription(&upstream, &uri) {
                self.unsubscribe_upstream(&upstream, &uri);
            }
        }
    }

    /// Stops every upstream (children get SIGTERM, then SIGKILL after the
    /// grace period) and waits for them.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tracker.wait().await;
    }

    /// Resolves when shutdown has begun.
    pub async fn shutting_down(&self) {
        self.shutdown.cancelled().await;
    }

    /// Waits until every upstream has finished its first connection attempt
    /// (connected and read, or failed), at most `limit`. Requests that need
    /// the catalog wait for this, so a client that connects at once does not
    /// see an empty catalog just because upstreams are still starting.
    pub async fn settled(&self, limit: Duration) {
        let n = self.upstreams.len();
        let mut rx = self.hub.settled.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|settled| *settled >= n)).await;
    }

    /// `/health`, which anyone who reaches the listener may read, before
    /// any auth (S-7): status, version, and each upstream's state, era,
    /// catalog counts and approval. With `[auth]` on, not the last error,
    /// which may name an internal address; without, the listener is
    /// loopback-only and open to every local process anyway, and the error
    /// (redacted) is what an operator needs.
    pub fn health(&self) -> Value {
        let upstreams: serde_json::Map<String, Value> = self
            .upstreams
            .iter()
            .map(|u| {
                let mut status = self.status_value(&u.status());
                if self.auth.is_on()
                    && let Some(obj) = status.as_object_mut()
                {
                    obj.remove("last_error");
                }
                (u.name().to_owned(), status)
            })
            .collect();
        let all_ready = self.upstreams.iter().all(|u| u.status().state == "ready");
        json!({
            "status": if all_ready { "ok" } else { "degraded" },
            "version": VERSION,
            "upstreams": upstreams,
        })
    }

    /// An upstream's status as clients and `/health` see it: its last error
    /// may quote the upstream, so it is redacted like any upstream text.
    pub(crate) fn status_value(&self, status: &UpstreamStatus) -> Value {
        let mut value = serde_json::to_value(status).unwrap_or(Value::Null);
        if let Some(error) = value.get_mut("last_error") {
            self.hub.redactor.redact(error);
        }
        value
    }

    /// Each upstream's status, in config order.
    pub fn upstream_statuses(&self) -> Vec<(String, UpstreamStatus)> {
        self.upstreams
            .iter()
            .map(|u| (u.name().to_owned(), u.status()))
            .collect()
    }

    pub(crate) fn upstream(&self, name: &str) -> Option<&Arc<Upstream>> {
        self.upstreams.iter().find(|u| u.name() == name)
    }

    pub(crate) fn federation(&self) -> Arc<Federation> {
        self.hub.federation()
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ClientEvent> {
        self.hub.events.subscribe()
    }

    /// sluice's own `serverInfo`.
    pub(crate) fn server_info(&self) -> Value {
        json!({"name": NAME, "version": VERSION})
    }
}

/// What every upstream connection of this gateway shares.
fn settings(config: &Config) -> Settings {
    Settings::new(config, json!({"name": NAME, "version": VERSION}))
}

/// Reads the catalog of each named upstream once (all at once), as
/// `sluice lock` and `sluice check` need: connect, walk every list to its
/// end, disconnect. Results come in config order.
pub async fn read_catalogs(
    config: &Config,
    names: &[String],
) -> Vec<(
    String,
    Result<sluice_core::discovery::CatalogRead, drift::NotEstablished>,
)> {
    let settings = settings(config);
    let mut reads = tokio::task::JoinSet::new();
    for (i, up) in config
        .upstreams
        .iter()
        .filter(|u| names.contains(&u.name))
        .enumerate()
    {
        let (up, settings) = (up.clone(), settings.clone());
        reads.spawn(async move {
            (
                i,
                up.name.clone(),
                upstream::read_once(&up, &settings).await,
            )
        });
    }
    let mut out = Vec::new();
    while let Some(done) = reads.join_next().await {
        match done {
            Ok(read) => out.push(read),
            Err(e) => tracing::error!("a catalog read task failed: {e}"),
        }
    }
    out.sort_by_key(|(i, _, _)| *i);
    out.into_iter()
        .map(|(_, name, read)| (name, read))
        .collect()
}

// === impl Hub ===

impl Hub {
    pub(crate) fn federation(&self) -> Arc<Federation> {
        Arc::clone(
            &self
                .federation
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Publishes an upstream's complete catalog, as approved by the
    /// lockfile, and tells clients which federated lists changed. A drift
    /// verdict is logged when it differs from the last one, not on every
    /// read.
    pub(crate) fn publish(&self, upstream: &str, catalog: UpstreamCatalog) -> Published {
        let unlocked = LockedUpstream::default();
        let approved = self
            .lock
            .as_ref()
            .map(|lock| lock.upstreams.get(upstream).unwrap_or(&unlocked));
        let approval = drift::approve(approved, &catalog, self.on_drift);
        let published = Published {
            diff: approval.diff.clone(),
            pinned: approved.is_some(),
        };
        // The new federation replaces the old one while the approvals are
        // still locked: two upstreams publishing at once must not let the
        // older build overwrite the newer.
        let (old, new, previous) = {
            let mut approvals = self
                .approvals
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let previous = approvals
                .insert(upstream.to_owned(), approval)
                .map(|a| a.diff);
            let ordered: Vec<(&str, &Approval)> = self
                .order
                .iter()
                .filter_map(|name| approvals.get(name).map(|a| (name.as_str(), a)))
                .collect();
            let mut fed = Federation::build(
                ordered.iter().map(|(name, a)| (*name, &a.served)),
                &self.naming,
            );
            for (name, a) in &ordered {
                fed.withhold(name, &self.naming, &a.withheld);
            }
            let new = Arc::new(fed);
            let old = std::mem::replace(
                &mut *self
                    .federation
                    .write()
                    .unwrap_or_else(PoisonError::into_inner),
                Arc::clone(&new),
            );
            (old, new, previous)
        };
        if approved.is_some() && previous.as_ref() != Some(&published.diff) {
            let not_in_lock = self
                .lock
                .as_ref()
                .is_some_and(|lock| !lock.upstreams.contains_key(upstream));
            self.log_verdict(upstream, not_in_lock, &published.diff);
        }
        for collision in new.collisions() {
            tracing::warn!(
                list = collision.kind.method(),
                key = %collision.key,
                kept = %collision.kept,
                hidden = %collision.hidden,
                "two upstreams offer the same entry; the first in the config is served"
            );
        }
        let mut changed: Vec<&'static str> = Vec::new();
        for kind in ListKind::ALL {
            if old.list(kind) != new.list(kind) {
                let method = list_changed_method(kind);
                if !changed.contains(&method) {
                    changed.push(method);
                }
            }
        }
        for method in changed {
            let _ = self.events.send(ClientEvent::ListChanged(method));
        }
        published
    }

    fn log_verdict(&self, upstream: &str, not_in_lock: bool, diff: &Diff) {
        if diff.is_empty() {
            tracing::info!(upstream, "catalog matches sluice.lock");
            return;
        }
        let action = match self.on_drift {
            OnDrift::Block => "withheld from clients, and calls to them are refused",
            OnDrift::Warn => "served anyway (on_drift = \"warn\"), changed ones as approved",
        };
        if not_in_lock {
            tracing::warn!(
                upstream,
                "upstream is not in sluice.lock: its {} entries are unapproved and {action}; run `sluice lock --upstream {upstream}` to approve them",
                diff.added.len()
            );
            return;
        }
        tracing::warn!(
            upstream,
            "catalog drifted from sluice.lock ({} added, {} removed, {} changed); these entries are {action}:\n{diff}",
            diff.added.len(),
            diff.removed.len(),
            diff.changed.len()
        );
    }

    /// Whether a lockfile is in force (only approved entries are served).
    pub(crate) fn is_pinned(&self) -> bool {
        self.lock.is_some()
    }

    /// Forgets the listen streams of an upstream whose connection ended
    /// (they ended with it; a reconnect starts them again).
    pub(crate) fn forget_resource_listens(&self, upstream: &str) {
        self.resource_listens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(up, _), task| {
                if up == upstream {
                    task.abort();
                }
                up != upstream
            });
    }

    /// Keeps the task whose listen stream holds a resource subscription (a
    /// previous one, from before a reconnect, is ended).
    pub(crate) fn start_resource_listen(
        &self,
        upstream: &str,
        uri: &str,
        task: tokio::task::AbortHandle,
    ) {
        let key = (upstream.to_owned(), uri.to_owned());
        let mut listens = self
            .resource_listens
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = listens.insert(key, task) {
            old.abort();
        }
    }

    /// Ends the listen stream of a resource subscription; `false` when
    /// there was none (a legacy upstream: send `resources/unsubscribe`).
    pub(crate) fn end_resource_listen(&self, upstream: &str, uri: &str) -> bool {
        let key = (upstream.to_owned(), uri.to_owned());
        let task = self
            .resource_listens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        // Aborting drops the request, which cancels it upstream.
        task.map(|t| t.abort()).is_some()
    }

    /// One more session wants `uri` on `upstream`; `true` for the first
    /// (sluice must subscribe upstream).
    pub(crate) fn acquire_subscription(&self, upstream: &str, uri: &str) -> bool {
        let mut subs = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let n = subs
            .entry((upstream.to_owned(), uri.to_owned()))
            .or_insert(0);
        *n += 1;
        *n == 1
    }

    /// One session less wants it; `true` for the last (sluice must
    /// unsubscribe upstream).
    pub(crate) fn release_subscription(&self, upstream: &str, uri: &str) -> bool {
        let mut subs = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key = (upstream.to_owned(), uri.to_owned());
        match subs.get_mut(&key) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                subs.remove(&key);
                true
            }
            None => false,
        }
    }

    /// How many sessions want `uri` on `upstream`.
    pub(crate) fn subscription_count(&self, upstream: &str, uri: &str) -> usize {
        let subs = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        subs.get(&(upstream.to_owned(), uri.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// The lock that orders changes to one upstream subscription.
    pub(crate) fn subscription_lock(
        &self,
        upstream: &str,
        uri: &str,
    ) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self
            .subscription_locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Drop the locks nobody holds or wants any more, so the map stays
        // as small as the set of subscribed URIs.
        locks.retain(|_, l| Arc::strong_count(l) > 1 || l.try_lock().is_err());
        Arc::clone(
            locks
                .entry((upstream.to_owned(), uri.to_owned()))
                .or_default(),
        )
    }

    /// The URIs some session wants on `upstream`: to subscribe again after
    /// it reconnects.
    pub(crate) fn subscribed(&self, upstream: &str) -> Vec<String> {
        let subs = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        subs.keys()
            .filter(|(u, _)| u == upstream)
            .map(|(_, uri)| uri.clone())
            .collect()
    }

    /// One upstream finished its first connection attempt.
    pub(crate) fn mark_settled(&self) {
        self.settled.send_modify(|n| *n += 1);
    }

    pub(crate) fn upstream_event(&self, upstream: &str, event: UpstreamEvent) {
        let event = match event {
            // A URI routes the update: it is not upstream text to redact.
            UpstreamEvent::ResourceUpdated(params) => ClientEvent::ResourceUpdated(params),
            UpstreamEvent::Log(mut params) => {
                crate::ops::metrics::redactions(&self.redactor.redact(&mut params));
                // Say which upstream logged, unless it named itself.
                if let Some(obj) = params.as_object_mut() {
                    obj.entry("logger").or_insert_with(|| upstream.into());
                }
                ClientEvent::Log(params)
            }
            UpstreamEvent::ListChanged(_) => return,
        };
        let _ = self.events.send(event);
    }
}

fn list_changed_method(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "notifications/tools/list_changed",
        ListKind::Prompts => "notifications/prompts/list_changed",
        ListKind::Resources | ListKind::ResourceTemplates => "notifications/resources/list_changed",
    }
}
