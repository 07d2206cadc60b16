//! Resource subscriptions held upstream for client sessions: counted per
//! (upstream, URI) so a shared connection subscribes once, ordered per URI,
//! and (for 2026-07-28 upstreams) held by listen streams.

use std::sync::{Arc, PoisonError};

use super::hub::Hub;

impl Hub {
    /// Forgets the listen streams of an upstream whose connection ended
    /// (they ended with it; a reconnect starts them again).
    pub(super) fn forget_resource_listens(&self, upstream: &str) {
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
    pub(super) fn start_resource_listen(
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
    pub(super) fn subscribed(&self, upstream: &str) -> Vec<String> {
        let subs = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        subs.keys()
            .filter(|(u, _)| u == upstream)
            .map(|(_, uri)| uri.clone())
            .collect()
    }
}
