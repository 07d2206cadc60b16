//! The hub: what every client and supervisor shares. The snapshot in force
//! (generation and federated catalog, swapped as one), the approvals of
//! each upstream's last complete read, the client event feed, and the
//! supervisors' reports applied in order.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::Value;
use sluice_core::catalog::Federation;
use sluice_core::catalog::UpstreamCatalog;
use sluice_core::catalog::drift::{Approval, Diff};
use sluice_core::catalog::poisoning;
use sluice_core::catalog::view::{list_changes, view_list_changes};
use sluice_core::health::{CatalogCounts, UpstreamStatus};
use sluice_core::tasks::TaskRef;
use tokio::sync::{broadcast, mpsc, watch};

use super::{Live, settings};
use crate::client::ClientEvent;
use crate::upstream::{self, Change, Connection, Report, Settings, Upstream, UpstreamEvent};

/// What clients share: the configuration in force, the federated catalog
/// and the event feed.
pub(crate) struct Hub {
    /// The generation in force and the federated catalog, swapped as one.
    pub(super) snapshot: ArcSwap<Snapshot>,
    /// What the upstream connections made from now on share.
    pub(super) settings: watch::Sender<Settings>,
    /// What each upstream contributes, from its last complete read.
    pub(super) approvals: Mutex<HashMap<String, Approved>>,
    pub(super) events: broadcast::Sender<ClientEvent>,
    /// How many upstreams finished their first connection attempt.
    pub(super) settled: watch::Sender<usize>,
    /// Resource subscriptions held upstream: (upstream, URI) -> how many
    /// client sessions want it. An upstream connection is shared, so it is
    /// subscribed once and unsubscribed when the last session lets go.
    pub(super) subscriptions: Mutex<HashMap<(String, String), usize>>,
    /// One lock per (upstream, URI), held across each change sent upstream,
    /// so that a subscribe and an unsubscribe for the same URI reach the
    /// upstream in the order their counts changed.
    pub(super) subscription_locks: Mutex<HashMap<(String, String), OrderLock>>,
    /// The `subscriptions/listen` streams that hold resource subscriptions
    /// on modern upstreams, by (upstream, URI).
    pub(super) resource_listens: Mutex<HashMap<(String, String), tokio::task::AbortHandle>>,
    /// Task ids and who owns each task.
    pub(crate) tasks: super::tasks::Tasks,
}

/// An upstream's last complete read and what the lockfile lets through of
/// it; the read is kept so that a new lockfile can judge it again.
pub(super) struct Approved {
    pub(super) catalog: UpstreamCatalog,
    pub(super) approval: Approval,
}

/// What publishing a complete read found.
pub(super) struct Published {
    /// The drift from the approved catalog (empty when unpinned).
    pub(super) diff: Diff,
    /// Whether a lockfile is in force.
    pub(super) pinned: bool,
}

/// Orders the changes sent upstream for one subscription.
pub(crate) type OrderLock = Arc<tokio::sync::Mutex<()>>;

/// What one request sees of the gateway, taken once when it starts: the
/// generation in force (configuration, upstreams, redactor, naming,
/// lockfile, rate limits, auth) and the federated catalog built under it.
/// A reload or a catalog read replaces the whole snapshot at once, so no
/// request sees a configuration with another's catalog.
pub(crate) struct Snapshot {
    pub(crate) live: Arc<Live>,
    /// The catalog this request sees: the whole federation, or its view's.
    pub(crate) federation: Arc<Federation>,
    /// Each `[[view]]`'s part of the federation, by name.
    pub(crate) views: Arc<BTreeMap<String, Arc<Federation>>>,
}

// === impl Hub ===

impl Hub {
    /// The configuration, upstreams and policies in force.
    pub(crate) fn live(&self) -> Arc<Live> {
        Arc::clone(&self.snapshot.load().live)
    }

    /// What a request sees (see [`Snapshot`]) through `view`, or the
    /// whole catalog. A view that is not (or no longer) configured shows
    /// nothing.
    pub(crate) fn snapshot(&self, view: Option<&str>) -> Arc<Snapshot> {
        let whole = self.snapshot.load_full();
        let Some(view) = view else {
            return whole;
        };
        Arc::new(Snapshot {
            live: Arc::clone(&whole.live),
            federation: whole.views.get(view).cloned().unwrap_or_default(),
            views: Arc::clone(&whole.views),
        })
    }

    /// Whether `[[view]]` `name` is configured.
    pub(crate) fn has_view(&self, name: &str) -> bool {
        self.snapshot.load().views.contains_key(name)
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
        let (live, old, new, previous, published, findings) = {
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
            let findings = approval.unpinned_findings.clone();
            let previous = approvals
                .insert(name.to_owned(), Approved { catalog, approval })
                .map(|a| (a.approval.diff, a.approval.unpinned_findings));
            let (old, new) = self.rebuild(&live, &approvals);
            (live, old, new, previous, published, findings)
        };
        let (previous_diff, previous_findings) = previous.unzip();
        if previous_diff.as_ref() != Some(&published.diff) {
            live.log_verdict(name, &published.diff);
        }
        if previous_findings.as_ref() != Some(&findings) && !findings.is_empty() {
            tracing::warn!(
                upstream = name,
                "unpinned, so served as read, but the poisoning scan found, in {} entries (review them with `sluice lock`):\n{}",
                findings.len(),
                poisoning::lines(&findings)
            );
        }
        self.announce(&old, &new);
        Some(published)
    }

    /// Puts a reloaded generation in force: forgets the reads of the
    /// upstreams in `ending` (stopped or restarted), judges every other
    /// upstream's last complete read again under the new lockfile, and
    /// tells clients which federated lists changed.
    pub(super) fn replace(&self, live: Arc<Live>, ending: &[&String]) {
        let (old, new, verdicts) = {
            let mut approvals = self
                .approvals
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let (vault, tickets) = {
                let current = self.settings.borrow();
                (
                    current.vault.clone(),
                    current.web_login.as_ref().map(|w| Arc::clone(&w.tickets)),
                )
            };
            self.settings
                .send_replace(settings(&live.config, &live.redactor, vault, tickets));
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
        live: &Arc<Live>,
        approvals: &HashMap<String, Approved>,
    ) -> (Arc<Snapshot>, Arc<Snapshot>) {
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
        let views = live
            .config
            .views
            .iter()
            .map(|v| (v.name.clone(), Arc::new(fed.view(v))))
            .collect();
        let new = Arc::new(Snapshot {
            live: Arc::clone(live),
            federation: Arc::new(fed),
            views: Arc::new(views),
        });
        let old = self.snapshot.swap(Arc::clone(&new));
        (old, new)
    }

    /// Tells the clients of the whole federation and of each view which of
    /// their lists differ between two snapshots (`catalog::view` decides),
    /// and operators which entries collide in the new one.
    fn announce(&self, old: &Snapshot, new: &Snapshot) {
        for collision in new.federation.collisions() {
            tracing::warn!(
                list = collision.kind.method(),
                key = %collision.key,
                kept = %collision.kept,
                hidden = %collision.hidden,
                "two upstreams offer the same entry; the first in the config is served"
            );
        }
        let whole = list_changes(&old.federation, &new.federation);
        let views = view_list_changes(&old.views, &new.views);
        let changes = std::iter::once((None, whole)).chain(
            views
                .into_iter()
                .map(|(name, m)| (Some(Arc::from(name)), m)),
        );
        for (view, methods) in changes {
            for method in methods {
                let view = view.clone();
                let _ = self.events.send(ClientEvent::ListChanged { view, method });
            }
        }
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
    fn serve(&self, up: &Upstream, mut catalog: UpstreamCatalog) {
        super::catalogs::redact(up.name(), &mut catalog, &self.live().redactor);
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

    /// Records the task a legacy session's call created; a status of it
    /// the upstream sent before the answer goes to the session now.
    pub(crate) fn task_created(&self, session: u64, task: TaskRef, created: &Value) {
        if let Some(event) = self.tasks.created(session, task, created) {
            let _ = self.events.send(event);
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
            UpstreamEvent::TaskStatus(mut params) => {
                crate::ops::metrics::redactions(&self.live().redactor.redact(&mut params));
                let event = self.tasks.status(upstream, params);
                for unclaimed in self.tasks.take_unclaimed() {
                    crate::ops::metrics::task_status_dropped(&unclaimed);
                }
                match event {
                    Some(event) => event,
                    None => return,
                }
            }
            // Each listen stream that asked for the task bounds and seals
            // it for its own client (`router::listen`).
            UpstreamEvent::TaskUpdate(params) => ClientEvent::TaskUpdate {
                upstream: upstream.into(),
                params: Arc::new(params),
            },
            UpstreamEvent::ListChanged(_) => return,
        };
        let _ = self.events.send(event);
    }
}

/// Applies the supervisors' reports in the order they were sent, until
/// the gateway and every supervisor are gone.
pub(super) async fn apply_reports(hub: Arc<Hub>, mut reports: mpsc::Receiver<Report>) {
    while let Some(report) = reports.recv().await {
        hub.apply(report);
    }
}

/// Shows what the lockfile made of an upstream's last complete read.
fn record_approval(up: &Upstream, published: &Published) {
    let diff = &published.diff;
    crate::ops::metrics::drift(up.name(), diff.len());
    up.update(|s| s.judged(diff, published.pinned));
}
