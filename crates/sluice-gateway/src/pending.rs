//! The table of requests sent to a peer and not yet answered.
//!
//! Both directions use it: sluice's requests to an upstream, and the
//! server-to-client requests sluice relays to a downstream client (sampling,
//! elicitation). Ids are sluice's own integers, so a peer's answer is matched
//! to exactly one waiter whatever id the original sender used.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use sluice_core::jsonrpc::RpcError;
#[cfg(doc)]
use sluice_core::payload::Payload;
use tokio::sync::oneshot;

/// What a waiter receives: the peer's result or error, or `Err(None)` when
/// the peer went away first. An upstream's result is a [`Payload`] (a large
/// one stays text); a client's is a tree.
pub(crate) type Answer<T = Value> = Result<T, Option<RpcError>>;

#[derive(Debug)]
pub(crate) struct Pending<T = Value> {
    next_id: AtomicU64,
    waiters: Mutex<HashMap<u64, oneshot::Sender<Answer<T>>>>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            next_id: AtomicU64::new(0),
            waiters: Mutex::default(),
        }
    }
}

impl<T> Pending<T> {
    /// Allocates an id and a receiver for its answer.
    pub(crate) fn register(&self) -> (u64, oneshot::Receiver<Answer<T>>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, tx);
        (id, rx)
    }

    /// Delivers an answer; `false` when no one waits for that id (a late
    /// answer to a cancelled request, or an id sluice never sent).
    pub(crate) fn resolve(&self, id: &Value, answer: Answer<T>) -> bool {
        let Some(id) = id.as_u64() else {
            return false;
        };
        match self.lock().remove(&id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Stops waiting for an id (the caller gave up).
    pub(crate) fn forget(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// The peer is gone: every waiter learns it now instead of at its
    /// timeout.
    pub(crate) fn fail_all(&self) {
        for (_, tx) in self.lock().drain() {
            let _ = tx.send(Err(None));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Answer<T>>>> {
        // A panic while holding this lock cannot leave the map inconsistent
        // (every operation is one insert or remove), so poisoning is ignored.
        self.waiters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn answers_reach_their_waiter_once() {
        let p = Pending::<Value>::default();
        let (a, rx_a) = p.register();
        let (b, rx_b) = p.register();
        assert_ne!(a, b);
        assert!(p.resolve(&json!(b), Ok(json!("B"))));
        assert!(!p.resolve(&json!(b), Ok(json!("again"))));
        assert!(!p.resolve(&json!("not ours"), Ok(json!(1))));
        p.fail_all();
        assert_eq!(rx_b.await.ok(), Some(Ok(json!("B"))));
        assert_eq!(rx_a.await.ok(), Some(Err(None)));
    }
}
