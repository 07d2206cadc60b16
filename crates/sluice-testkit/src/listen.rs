//! `subscriptions/listen` (2026-07-28): the modern way to receive change notifications.
//!
//! A listen request names the notifications it wants (`params.notifications`, all opt-in). The
//! fixture first sends `notifications/subscriptions/acknowledged` with the subset it honours
//! (every `*ListChanged` key set to `true`; `resourceSubscriptions` is not supported), then keeps
//! the request open without ever answering it. While it is open, every catalog change
//! (`add_tool`) sends `notifications/tools/list_changed` on the request's stream to each listener
//! that asked for `toolsListChanged`. Every notification carries
//! `_meta["io.modelcontextprotocol/subscriptionId"]` = the JSON-RPC id of the listen request.
//!
//! The subscription ends when its request's work is dropped: HTTP, the client closes the SSE
//! response stream; stdio, `notifications/cancelled` (which also removes the subscription at once,
//! so nothing more is sent for it even before the aborted task has been dropped); or exit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::jsonrpc::{Payload, RpcError};
use crate::peer::{Out, OutTx, Peer, ReqCtx, id_key, lock};

/// `_meta` key tagging every notification of a subscription with the listen request's id.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The filter keys the fixture honours when set to `true`.
const LIST_CHANGED_KEYS: [&str; 3] = [
    "toolsListChanged",
    "promptsListChanged",
    "resourcesListChanged",
];

/// One open listen request.
struct Listener {
    /// The JSON-RPC id of the listen request (the subscription id).
    id: Value,
    /// The request's stream (stdout on stdio, the POST's SSE response over HTTP).
    out: OutTx,
    /// The connection tracking the request for `notifications/cancelled` (stdio), if any.
    tracker: Option<Arc<Peer>>,
    /// The honoured filter (`{"toolsListChanged": true, ...}`).
    honoured: Map<String, Value>,
}

impl Listener {
    fn wants(&self, key: &str) -> bool {
        self.honoured.get(key) == Some(&Value::Bool(true))
    }
}

/// All open listen requests of the process.
#[derive(Default)]
pub struct Subscriptions {
    open: Mutex<HashMap<u64, Listener>>,
    next: AtomicU64,
}

/// Removes a subscription when its request's work ends (cancelled, aborted or dropped).
struct Registration<'a> {
    subs: &'a Subscriptions,
    key: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if lock(&self.subs.open).remove(&self.key).is_some() {
            eprintln!("sluice-fixture: subscription {} closed", self.key);
        }
    }
}

/// The subset of a listen filter the fixture honours; `-32602` if it is not an object.
pub fn honoured_filter(params: &Value) -> Result<Map<String, Value>, RpcError> {
    let filter = match params.get("notifications") {
        None | Some(Value::Null) => return Ok(Map::new()),
        Some(Value::Object(f)) => f,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params.notifications must be an object",
            ));
        }
    };
    Ok(LIST_CHANGED_KEYS
        .iter()
        .filter(|k| filter.get(**k) == Some(&Value::Bool(true)))
        .map(|k| ((*k).to_owned(), Value::Bool(true)))
        .collect())
}

impl Subscriptions {
    /// Serves one `subscriptions/listen` request: acknowledges it on `ctx.out`, then stays open
    /// (never returns) until the work is dropped. Errors only for a malformed filter.
    pub async fn listen(
        &self,
        id: &Value,
        params: &Value,
        ctx: &ReqCtx,
    ) -> Result<Payload, RpcError> {
        let honoured = honoured_filter(params)?;
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let ack = json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "notifications": honoured,
                "_meta": {META_SUBSCRIPTION_ID: id},
            }
        });
        let _registration = {
            // Queue the ack and register under one lock: no change notification can overtake
            // the ack, and a change made after the client has seen the ack reaches this stream.
            let mut open = lock(&self.open);
            let _ = ctx.out.send(Out::Msg(ack));
            open.insert(
                key,
                Listener {
                    id: id.clone(),
                    out: ctx.out.clone(),
                    tracker: ctx.tracker.clone(),
                    honoured,
                },
            );
            Registration { subs: self, key }
        };
        eprintln!("sluice-fixture: subscription {key} open (listen id {id})");
        std::future::pending().await
    }

    /// Sends `notifications/tools/list_changed` to every open subscription that asked for it.
    pub fn tools_changed(&self) {
        self.broadcast("toolsListChanged", "notifications/tools/list_changed");
    }

    fn broadcast(&self, filter_key: &str, method: &str) {
        let mut open = lock(&self.open);
        // A stream whose receiver is gone (HTTP client disconnected) is dropped here at once.
        open.retain(|_, l| !l.out.is_closed());
        for l in open.values().filter(|l| l.wants(filter_key)) {
            let note = json!({
                "jsonrpc": "2.0",
                "method": method,
                "params": {"_meta": {META_SUBSCRIPTION_ID: l.id}},
            });
            let _ = l.out.send(Out::Msg(note));
        }
    }

    /// `notifications/cancelled` from `peer` for `request_id`: ends that subscription now (its
    /// task is aborted separately and may be dropped a little later).
    pub fn cancel(&self, peer: &Peer, request_id: &Value) {
        let key = id_key(request_id);
        lock(&self.open).retain(|_, l| {
            let same_peer = l
                .tracker
                .as_ref()
                .is_some_and(|t| std::ptr::eq(Arc::as_ptr(t), peer));
            !(same_peer && id_key(&l.id) == key)
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn honours_only_list_changed_keys_set_true() {
        let f = honoured_filter(&json!({"notifications": {
            "toolsListChanged": true, "promptsListChanged": false,
            "resourcesListChanged": "yes", "resourceSubscriptions": ["file:///x"]}}))
        .unwrap();
        assert_eq!(Value::Object(f), json!({"toolsListChanged": true}));
        assert!(honoured_filter(&json!({})).unwrap().is_empty());
        assert_eq!(
            honoured_filter(&json!({"notifications": []}))
                .err()
                .map(|e| e.code),
            Some(-32602)
        );
    }
}
