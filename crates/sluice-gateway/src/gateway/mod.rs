//! The gateway: upstream supervisors, the published catalog, and the events
//! every connected client may need.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::{Value, json};
use sluice_core::boundary::redact::{MIN_EXACT_SECRET, Redactor};
use sluice_core::catalog::drift::{self, Approval, Diff, OnDrift};
use sluice_core::catalog::lockfile::{LockedUpstream, Lockfile};
use sluice_core::catalog::{Federation, UpstreamCatalog};
use sluice_core::config::Config;
use sluice_core::console::CsrfKey;
use sluice_core::envelope::Cursors;
use sluice_core::health::{self, HealthDetail};
use sluice_core::naming::Naming;
use sluice_core::session_token::SessionKey;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::Auth;
use crate::bridge::Bridge;
use crate::client::ClientEvent;
use crate::ops::Ops;
use crate::ratelimit::RateLimits;
use crate::upstream::oauth::web::WebLogins;
use crate::upstream::{Report, Settings, Supervisor, Upstream};
use crate::vault::Vault;
use sluice_core::upstream_auth::web::Tickets;

mod approve;
mod catalogs;
mod hub;
mod reload;
mod subscriptions;
mod tasks;

pub(crate) use approve::approval_words;
pub use approve::{ApproveError, write_lockfile};
pub use catalogs::{ReadEvent, read_catalogs};
use hub::apply_reports;
pub(crate) use hub::{Hub, Snapshot};
pub use reload::ReloadReport;

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
    /// Seals the console's form tokens.
    pub(crate) csrf: CsrfKey,
    /// Held while the console approves into the lockfile.
    approving: tokio::sync::Mutex<()>,
    /// The principals' logins to OAuth upstreams under way (`/oauth/...`).
    pub(crate) web_logins: WebLogins,
}

/// What a reload replaces, swapped as one: whoever reads it sees one
/// configuration throughout.
pub(crate) struct Live {
    /// The configuration in force.
    pub(crate) config: Config,
    /// The running upstreams, in config order.
    pub(crate) upstreams: Vec<Arc<Upstream>>,
    /// The secret rules every answer and notification goes through.
    pub(crate) redactor: Arc<Redactor>,
    pub(crate) naming: Naming,
    /// The approved catalogs; `None` runs unpinned.
    pub(crate) lock: Option<Lockfile>,
    /// The tool-call rate limiters.
    pub(crate) rate_limits: Arc<RateLimits>,
    /// Who HTTP clients are (`[auth]`).
    pub(crate) auth: Arc<Auth>,
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
    /// recorder, when one is installed); `vault` holds the logins of
    /// `auth = "oauth"` upstreams (`sluice login`).
    pub fn start(
        config: Config,
        lock: Option<Lockfile>,
        cursor_secret: [u8; 32],
        ops: Ops,
        vault: Option<Vault>,
    ) -> Arc<Gateway> {
        let shutdown = CancellationToken::new();
        let tickets = Arc::new(Tickets::new(cursor_secret));
        let upstreams: Vec<Arc<Upstream>> = config
            .upstreams
            .iter()
            .map(|u| Arc::new(Upstream::new(u.clone(), shutdown.child_token())))
            .collect();
        let (events, _) = broadcast::channel(1024);
        let live = Live {
            redactor: Arc::new(redactor(&config)),
            naming: config.naming(),
            rate_limits: Arc::new(RateLimits::new(&config)),
            auth: Arc::new(Auth::new(&config.auth)),
            upstreams: upstreams.clone(),
            lock,
            config,
        };
        let hub = Arc::new(Hub {
            settings: watch::Sender::new(settings(
                &live.config,
                &live.redactor,
                vault,
                Some(Arc::clone(&tickets)),
            )),
            snapshot: ArcSwap::from_pointee(Snapshot {
                live: Arc::new(live),
                federation: Arc::new(Federation::default()),
                views: Arc::default(),
            }),
            approvals: Mutex::new(HashMap::new()),
            events,
            settled: watch::Sender::new(0),
            subscriptions: Mutex::new(HashMap::new()),
            subscription_locks: Mutex::new(HashMap::new()),
            resource_listens: Mutex::new(HashMap::new()),
            tasks: tasks::Tasks::new(cursor_secret),
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
            csrf: CsrfKey::derive(&cursor_secret),
            approving: tokio::sync::Mutex::new(()),
            web_logins: WebLogins::new(Arc::clone(&tickets)),
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

    /// `/health`: status and version, and with [`HealthDetail::Upstreams`]
    /// each upstream's state, era, catalog counts, approval and last error
    /// (redacted); who sees which is `health::health_detail`'s (S-7).
    pub fn health(&self, detail: HealthDetail) -> Value {
        let live = self.live();
        let all_ready = live.upstreams.iter().all(|u| u.status().is_ready());
        let mut health = json!({
            "status": if all_ready { "ok" } else { "degraded" },
            "version": VERSION,
        });
        if detail == HealthDetail::Upstreams {
            let upstreams: serde_json::Map<String, Value> = live
                .upstreams
                .iter()
                .map(|u| {
                    (
                        u.name().to_owned(),
                        health::shown(&u.status(), &live.redactor),
                    )
                })
                .collect();
            health["upstreams"] = Value::Object(upstreams);
        }
        health
    }

    pub(crate) fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        self.live().upstream(name).cloned()
    }

    /// The configuration, upstreams and policies in force.
    /// The vault of OAuth logins, when an upstream needs one.
    pub(crate) fn vault(&self) -> Option<Vault> {
        self.hub.settings.borrow().vault.clone()
    }

    pub(crate) fn live(&self) -> Arc<Live> {
        self.hub.live()
    }

    /// Who HTTP clients are (`[auth]` in force).
    pub fn auth(&self) -> Arc<Auth> {
        Arc::clone(&self.live().auth)
    }

    /// The catalog a request through `view` (or none) sees.
    pub(crate) fn federation(&self, view: Option<&str>) -> Arc<Federation> {
        Arc::clone(&self.hub.snapshot(view).federation)
    }

    /// Whether `[[view]]` `name` is configured.
    pub(crate) fn has_view(&self, name: &str) -> bool {
        self.hub.has_view(name)
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ClientEvent> {
        self.hub.events.subscribe()
    }

    /// sluice's own `serverInfo`, built once: every modern answer carries
    /// it.
    pub(crate) fn server_info(&self) -> &'static Value {
        static SERVER_INFO: LazyLock<Value> =
            LazyLock::new(|| json!({"name": NAME, "version": VERSION}));
        &SERVER_INFO
    }
}

/// What every upstream connection of this gateway shares.
pub(super) fn settings(
    config: &Config,
    redactor: &Arc<Redactor>,
    vault: Option<Vault>,
    tickets: Option<Arc<Tickets>>,
) -> Settings {
    Settings::new(
        config,
        json!({"name": NAME, "version": VERSION}),
        Arc::clone(redactor),
        vault,
        tickets,
    )
}

/// The redaction rules of `config`, after a warning about secrets too short
/// to redact by value.
pub(super) fn redactor(config: &Config) -> Redactor {
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
