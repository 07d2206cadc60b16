//! The gateway: upstream supervisors, the published catalog, and the events
//! every connected client may need.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::{Value, json};
use sluice_core::boundary::redact::{MIN_EXACT_SECRET, Redactor};
use sluice_core::catalog::drift::{self, Approval, Diff, OnDrift};
use sluice_core::catalog::lockfile::{LockedUpstream, Lockfile};
use sluice_core::catalog::{Federation, UpstreamCatalog};
use sluice_core::config::Config;
use sluice_core::config::reload::{self, UpstreamChanges};
use sluice_core::discovery::ListKind;
use sluice_core::envelope::Cursors;
use sluice_core::health::{CatalogCounts, UpstreamStatus};
use sluice_core::naming::Naming;
use sluice_core::session_token::SessionKey;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::Auth;
use crate::bridge::Bridge;
use crate::ops::Ops;
use crate::ratelimit::RateLimits;
use crate::upstream::{
    self, Change, Connection, Report, Settings, Supervisor, Upstream, UpstreamEvent,
};

/// sluice's name in `serverInfo` and `clientInfo`.
pub const NAME: &str = "sluice";
/// sluice's version, the crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How many supervisor reports may wait to be applied; a supervisor with
/// more to tell waits (and its upstream's events queue, then drop, behind
/// it).
const PENDING_REPORTS: usize = 256;

/// A running gateway.
pub struct Gateway {
    pub(crate) bridge: Bridge,
    pub(crate) hub: Arc<Hub>,
    /// Seals the cursors of every list sluice pages.
    pub(crate) cursors: Cursors,
    /// Seals legacy session ids, which carry their session to any replica
    /// that shares the cursor secret.
    pub(crate) session_key: SessionKey,
    /// Where metrics and audit rows go.
    pub(crate) ops: Ops,
    shutdown: CancellationToken,
    tracker: TaskTracker,
    /// Where supervisors send their reports (see [`Hub::apply`]).
    reports: mpsc::Sender<Report>,
    /// Each running upstream's supervisor task, by name. A reload holds
    /// it throughout, so reloads run one at a time.
    supervisors: tokio::sync::Mutex<HashMap<String, JoinHandle<()>>>,
    /// How many upstreams the start waits for (see [`Gateway::settled`]).
    started_with: usize,
}

/// What a reload replaces, swapped as one: whoever reads it sees one
/// configuration throughout.
pub(crate) struct Live {
    /// The configuration in force.
    pub(crate) config: Config,
    /// The running upstreams, in config order.
    pub(crate) upstreams: Vec<Arc<Upstream>>,
    /// The secret rules every answer and notification goes through.
    pub(crate) redactor: Redactor,
    pub(crate) naming: Naming,
    /// The approved catalogs; `None` runs unpinned.
    pub(crate) lock: Option<Lockfile>,
    /// The tool-call rate limiters.
    pub(crate) rate_limits: Arc<RateLimits>,
    /// Who HTTP clients are (`[auth]`).
    pub(crate) auth: Arc<Auth>,
}

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadReport {
    /// Upstreams started, stopped, restarted and left alone.
    pub upstreams: UpstreamChanges,
    /// Keys whose new value waits for a restart (they keep the old one).
    pub deferred: Vec<&'static str>,
}

/// What clients share: the configuration in force, the federated catalog
/// and the event feed.
pub(crate) struct Hub {
    live: ArcSwap<Live>,
    /// What the upstream connections made from now on share.
    settings: watch::Sender<Settings>,
    /// What each upstream contributes, from its last complete read.
    approvals: Mutex<HashMap<String, Approved>>,
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

/// An upstream's last complete read and what the lockfile lets through of
/// it; the read is kept so that a new lockfile can judge it again.
struct Approved {
    catalog: UpstreamCatalog,
    approval: Approval,
}

/// What publishing a complete read found.
struct Published {
    /// The drift from the approved catalog (empty when unpinned).
    diff: Diff,
    /// Whether a lockfile is in force.
    pinned: bool,
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
async fn forget_idle_rates(hub: Arc<Hub>, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(60)) => hub.live().rate_limits.forget_idle(),
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
        let shutdown = CancellationToken::new();
        let upstreams: Vec<Arc<Upstream>> = config
            .upstreams
            .iter()
            .map(|u| Arc::new(Upstream::new(u.clone(), shutdown.child_token())))
            .collect();
        let (events, _) = broadcast::channel(1024);
        let live = Live {
            redactor: redactor(&config),
            naming: config.naming(),
            rate_limits: Arc::new(RateLimits::new(&config)),
            auth: Arc::new(Auth::new(&config.auth)),
            upstreams: upstreams.clone(),
            lock,
            config,
        };
        let hub = Arc::new(Hub {
            settings: watch::Sender::new(settings(&live.config)),
            live: ArcSwap::from_pointee(live),
            approvals: Mutex::new(HashMap::new()),
            federation: RwLock::new(Arc::new(Federation::default())),
            events,
            settled: watch::Sender::new(0),
            subscriptions: Mutex::new(HashMap::new()),
            subscription_locks: Mutex::new(HashMap::new()),
            resource_listens: Mutex::new(HashMap::new()),
        });
        let (reports, applied) = mpsc::channel(PENDING_REPORTS);
        tokio::spawn(apply_reports(Arc::clone(&hub), applied));
        tokio::spawn(forget_idle_rates(Arc::clone(&hub), shutdown.clone()));
        let mut gateway = Gateway {
            bridge: Bridge::new(hub.live().config.server.request_timeout),
            cursors: Cursors::new(cursor_secret),
            session_key: SessionKey::derive(&cursor_secret),
            ops,
            hub,
            shutdown,
            tracker: TaskTracker::new(),
            reports,
            supervisors: tokio::sync::Mutex::new(HashMap::new()),
            started_with: upstreams.len(),
        };
        let supervisors = upstreams
            .iter()
            .map(|up| (up.name().to_owned(), gateway.supervise(up)))
            .collect();
        *gateway.supervisors.get_mut() = supervisors;
        // Closed only so that `wait` may end: reloads still spawn on it.
        gateway.tracker.close();
        Arc::new(gateway)
    }

    /// Starts `up`'s supervisor.
    fn supervise(&self, up: &Arc<Upstream>) -> JoinHandle<()> {
        let supervisor = Supervisor::new(
            Arc::clone(up),
            self.hub.settings.subscribe(),
            self.reports.clone(),
        );
        self.tracker.spawn(supervisor.run())
    }

    /// Puts a new configuration and lockfile in force without a restart:
    /// upstreams only in `config` start, those no longer in it stop (their
    /// calls in flight fail as a lost connection does), those whose
    /// `[[upstream]]` changed in any way restart, and the rest keep their
    /// connections. Every upstream's last complete read is judged again
    /// under `lock`, and clients hear `list_changed` for each list that
    /// changed. The keys of [`reload::RESTART_ONLY`] keep their running
    /// value. `config` must already be valid (as `serve` checks it).
    pub async fn reload(&self, config: Config, lock: Option<Lockfile>) -> ReloadReport {
        let mut supervisors = self.supervisors.lock().await;
        let running = self.hub.live();
        let plan = reload::plan(&running.config, config);
        for key in &plan.deferred {
            tracing::warn!(
                key,
                "{key} changed in the configuration: it takes effect at restart (the running value is kept)"
            );
        }
        let changes = plan.upstreams;
        let config = plan.config;
        let upstreams: Vec<Arc<Upstream>> = config
            .upstreams
            .iter()
            .map(|u| match running.upstream(&u.name) {
                Some(up) if changes.unchanged.contains(&u.name) => Arc::clone(up),
                _ => Arc::new(Upstream::new(u.clone(), self.shutdown.child_token())),
            })
            .collect();
        let starting: Vec<Arc<Upstream>> = upstreams
            .iter()
            .filter(|u| !changes.unchanged.iter().any(|name| name == u.name()))
            .cloned()
            .collect();
        let live = Live {
            redactor: redactor(&config),
            naming: config.naming(),
            rate_limits: if plan.rates_changed {
                Arc::new(RateLimits::new(&config))
            } else {
                Arc::clone(&running.rate_limits)
            },
            auth: if plan.auth_changed {
                Arc::new(Auth::new(&config.auth))
            } else {
                Arc::clone(&running.auth)
            },
            upstreams,
            lock,
            config,
        };
        let ending: Vec<&String> = changes.removed.iter().chain(&changes.changed).collect();
        self.hub.replace(Arc::new(live), &ending);
        for name in &ending {
            if let Some(up) = running.upstream(name) {
                up.stop.cancel();
            }
        }
        // A restarted upstream's old child is gone before its new one
        // starts: two at once might fight over what they hold.
        for name in &ending {
            if let Some(task) = supervisors.remove(*name) {
                let _ = task.await;
            }
        }
        // A removed upstream drifts no more (its `up` gauge is already 0).
        for name in &changes.removed {
            crate::ops::metrics::drift(name, 0);
        }
        for up in starting {
            supervisors.insert(up.name().to_owned(), self.supervise(&up));
        }
        crate::ops::metrics::config_reload(true);
        let report = ReloadReport {
            upstreams: changes,
            deferred: plan.deferred,
        };
        tracing::info!("configuration reloaded: {report}");
        report
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
        let n = self.started_with;
        let mut rx = self.hub.settled.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|settled| *settled >= n)).await;
    }

    /// `/health`, which anyone who reaches the listener may read, before
    /// any auth (SECURITY.md, S-7): status, version, and each upstream's
    /// state, era, catalog counts and approval. With `[auth]` on, not the
    /// last error, which may name an internal address; without, the
    /// listener is loopback-only and open to every local process anyway,
    /// and the error (redacted) is what an operator needs.
    pub fn health(&self) -> Value {
        let live = self.live();
        let upstreams: serde_json::Map<String, Value> = live
            .upstreams
            .iter()
            .map(|u| {
                let mut status = self.status_value(&u.status());
                if live.auth.is_on()
                    && let Some(obj) = status.as_object_mut()
                {
                    obj.remove("last_error");
                }
                (u.name().to_owned(), status)
            })
            .collect();
        let all_ready = live.upstreams.iter().all(|u| u.status().is_ready());
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
            self.live().redactor.redact(error);
        }
        value
    }

    /// Each upstream's status, in config order.
    pub fn upstream_statuses(&self) -> Vec<(String, UpstreamStatus)> {
        self.live()
            .upstreams
            .iter()
            .map(|u| (u.name().to_owned(), u.status()))
            .collect()
    }

    pub(crate) fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        self.live().upstream(name).cloned()
    }

    /// The configuration, upstreams and policies in force.
    pub(crate) fn live(&self) -> Arc<Live> {
        self.hub.live()
    }

    /// Who HTTP clients are (`[auth]` in force).
    pub fn auth(&self) -> Arc<Auth> {
        Arc::clone(&self.live().auth)
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

/// The redaction rules of `config`, after a warning about secrets too short
/// to redact by value.
fn redactor(config: &Config) -> Redactor {
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
    Redactor::new(secrets, &config.redaction.secret_keys)
}

// === impl Live ===

impl Live {
    pub(crate) fn upstream(&self, name: &str) -> Option<&Arc<Upstream>> {
        self.upstreams.iter().find(|u| u.name() == name)
    }

    /// An upstream's complete read as this generation's lockfile approves it.
    fn approve(&self, upstream: &str, catalog: &UpstreamCatalog) -> Approval {
        let unlocked = LockedUpstream::default();
        let approved = self
            .lock
            .as_ref()
            .map(|lock| lock.upstreams.get(upstream).unwrap_or(&unlocked));
        drift::approve(approved, catalog, self.config.catalog.on_drift)
    }

    fn log_verdict(&self, upstream: &str, diff: &Diff) {
        let Some(lock) = &self.lock else {
            return;
        };
        if diff.is_empty() {
            tracing::info!(upstream, "catalog matches sluice.lock");
            return;
        }
        let action = match self.config.catalog.on_drift {
            OnDrift::Block => "withheld from clients, and calls to them are refused",
            OnDrift::Warn => "served anyway (on_drift = \"warn\"), changed ones as approved",
        };
        if !lock.upstreams.contains_key(upstream) {
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
}

// === impl ReloadReport ===

impl std::fmt::Display for ReloadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |list: &[String]| {
            if list.is_empty() {
                "none".to_owned()
            } else {
                list.join(", ")
            }
        };
        let u = &self.upstreams;
        write!(
            f,
            "upstreams added: {}; removed: {}; restarted: {}; unchanged: {}",
            names(&u.added),
            names(&u.removed),
            names(&u.changed),
            names(&u.unchanged)
        )?;
        if !self.deferred.is_empty() {
            write!(f, "; waiting for a restart: {}", self.deferred.join(", "))?;
        }
        Ok(())
    }
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

    /// The configuration, upstreams and policies in force.
    pub(crate) fn live(&self) -> Arc<Live> {
        self.live.load_full()
    }

    /// Publishes an upstream's complete catalog, as approved by the
    /// lockfile, and tells clients which federated lists changed. A drift
    /// verdict is logged when it differs from the last one, not on every
    /// read. `None` when `upstream` is no longer in force (a reload stopped
    /// or replaced it while it read).
    fn publish(&self, upstream: &Upstream, catalog: UpstreamCatalog) -> Option<Published> {
        let name = upstream.name();
        // The new federation replaces the old one while the approvals are
        // still locked: two upstreams publishing at once must not let the
        // older build overwrite the newer, nor a reload's.
        let (live, old, new, previous, published) = {
            let mut approvals = self
                .approvals
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let live = self.live();
            if !live
                .upstreams
                .iter()
                .any(|u| std::ptr::eq(Arc::as_ptr(u), upstream))
            {
                return None;
            }
            let approval = live.approve(name, &catalog);
            let published = Published {
                diff: approval.diff.clone(),
                pinned: live.lock.is_some(),
            };
            let previous = approvals
                .insert(name.to_owned(), Approved { catalog, approval })
                .map(|a| a.approval.diff);
            let (old, new) = self.rebuild(&live, &approvals);
            (live, old, new, previous, published)
        };
        if previous.as_ref() != Some(&published.diff) {
            live.log_verdict(name, &published.diff);
        }
        self.announce(&old, &new);
        Some(published)
    }

    /// Puts a reloaded generation in force: forgets the reads of the
    /// upstreams in `ending` (stopped or restarted), judges every other
    /// upstream's last complete read again under the new lockfile, and
    /// tells clients which federated lists changed.
    fn replace(&self, live: Arc<Live>, ending: &[&String]) {
        let (old, new, verdicts) = {
            let mut approvals = self
                .approvals
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            self.live.store(Arc::clone(&live));
            self.settings.send_replace(settings(&live.config));
            approvals.retain(|name, _| !ending.contains(&name));
            let mut verdicts = Vec::new();
            for (name, approved) in approvals.iter_mut() {
                let approval = live.approve(name, &approved.catalog);
                let previous = std::mem::replace(&mut approved.approval, approval);
                let published = Published {
                    diff: approved.approval.diff.clone(),
                    pinned: live.lock.is_some(),
                };
                if let Some(up) = live.upstream(name) {
                    record_approval(up, &published);
                }
                if previous.diff != published.diff {
                    verdicts.push((name.clone(), published.diff));
                }
            }
            let (old, new) = self.rebuild(&live, &approvals);
            (old, new, verdicts)
        };
        for (name, diff) in &verdicts {
            live.log_verdict(name, diff);
        }
        self.announce(&old, &new);
    }

    /// Builds the federation of the approved reads in config order and puts
    /// it in force: the old one and the new.
    fn rebuild(
        &self,
        live: &Live,
        approvals: &HashMap<String, Approved>,
    ) -> (Arc<Federation>, Arc<Federation>) {
        let ordered: Vec<(&str, &Approval)> = live
            .config
            .upstreams
            .iter()
            .filter_map(|u| {
                approvals
                    .get(&u.name)
                    .map(|a| (u.name.as_str(), &a.approval))
            })
            .collect();
        let mut fed = Federation::build(
            ordered.iter().map(|(name, a)| (*name, &a.served)),
            &live.naming,
        );
        for (name, a) in &ordered {
            fed.withhold(name, &live.naming, &a.withheld);
        }
        let new = Arc::new(fed);
        let old = std::mem::replace(
            &mut *self
                .federation
                .write()
                .unwrap_or_else(PoisonError::into_inner),
            Arc::clone(&new),
        );
        (old, new)
    }

    /// Tells clients which lists differ between two federations, and
    /// operators which entries collide in the new one.
    fn announce(&self, old: &Federation, new: &Federation) {
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
    }

    /// Forgets the listen streams of an upstream whose connection ended
    /// (they ended with it; a reconnect starts them again).
    fn forget_resource_listens(&self, upstream: &str) {
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
    fn start_resource_listen(&self, upstream: &str, uri: &str, task: tokio::task::AbortHandle) {
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
    fn subscribed(&self, upstream: &str) -> Vec<String> {
        let subs = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        subs.keys()
            .filter(|(u, _)| u == upstream)
            .map(|(_, uri)| uri.clone())
            .collect()
    }

    /// Applies one supervisor's report: the upstream's status, the
    /// published catalog, clients' subscriptions and events.
    fn apply(&self, report: Report) {
        let Report {
            upstream: up,
            change,
        } = report;
        match change {
            Change::Failed(reason) => up.update(|s| s.failed(reason)),
            Change::Connected {
                conn,
                request_timeout,
            } => {
                let desc = conn.description();
                up.update(|s| s.connected(desc.era, desc.protocol_version.clone()));
                self.resubscribe(up.name(), &conn, request_timeout);
            }
            Change::Read(catalog) => self.serve(&up, catalog),
            Change::NotEstablished(reason) => up.update(|s| s.not_established(&reason)),
            Change::Event(event) => self.upstream_event(up.name(), event),
            // One upstream finished its first connection attempt.
            Change::Settled => self.settled.send_modify(|n| *n += 1),
            Change::Lost(reason) => {
                self.forget_resource_listens(up.name());
                up.update(|s| s.restarting(reason));
            }
            Change::Stopped => up.update(UpstreamStatus::stopped),
        }
    }

    /// Publishes an upstream's complete read and shows it in its status.
    fn serve(&self, up: &Upstream, catalog: UpstreamCatalog) {
        let counts = CatalogCounts::of(&catalog);
        // `None`: a reload took this upstream out of service meanwhile.
        if let Some(published) = self.publish(up, catalog) {
            record_approval(up, &published);
            up.update(|s| s.served(counts));
        }
    }

    /// Subscriptions clients hold survive a reconnect: subscribe again, all
    /// at once and on their own tasks (each bounded by `timeout`; a
    /// connection that ends ends them).
    fn resubscribe(&self, upstream: &str, conn: &Arc<Connection>, timeout: Duration) {
        for uri in self.subscribed(upstream) {
            self.subscribe_resource(upstream, conn, &uri, timeout);
        }
    }

    /// Subscribes `conn` to updates of `uri` on its own task (see
    /// [`upstream::subscribe_resource`]); a listen stream that holds the
    /// subscription is kept until [`Hub::end_resource_listen`].
    pub(crate) fn subscribe_resource(
        &self,
        upstream: &str,
        conn: &Arc<Connection>,
        uri: &str,
        timeout: Duration,
    ) {
        // No one holds it any more (an unsubscribe came between a
        // reconnect's snapshot and now): nothing to start.
        if self.subscription_count(upstream, uri) == 0 {
            return;
        }
        if let Some(listen) = upstream::subscribe_resource(upstream, conn, uri, timeout) {
            self.start_resource_listen(upstream, uri, listen);
        }
    }

    fn upstream_event(&self, upstream: &str, event: UpstreamEvent) {
        let event = match event {
            // A URI routes the update: it is not upstream text to redact.
            UpstreamEvent::ResourceUpdated(params) => ClientEvent::ResourceUpdated(params),
            UpstreamEvent::Log(mut params) => {
                crate::ops::metrics::redactions(&self.live().redactor.redact(&mut params));
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

/// Applies the supervisors' reports in the order they were sent, until
/// the gateway and every supervisor are gone.
async fn apply_reports(hub: Arc<Hub>, mut reports: mpsc::Receiver<Report>) {
    while let Some(report) = reports.recv().await {
        hub.apply(report);
    }
}

/// Shows what the lockfile made of an upstream's last complete read.
fn record_approval(up: &Upstream, published: &Published) {
    let diff = &published.diff;
    crate::ops::metrics::drift(
        up.name(),
        diff.added.len() + diff.removed.len() + diff.changed.len(),
    );
    up.update(|s| s.judged(diff, published.pinned));
}

fn list_changed_method(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "notifications/tools/list_changed",
        ListKind::Prompts => "notifications/prompts/list_changed",
        ListKind::Resources | ListKind::ResourceTemplates => "notifications/resources/list_changed",
    }
}
