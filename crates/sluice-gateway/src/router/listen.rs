//! `subscriptions/listen` (2026-07-28): acknowledge the filter, then send
//! the `list_changed` notifications it asked for, of the catalog the
//! request sees (its view's, or the whole federation's), until the client
//! closes the stream.

use serde_json::{Value, json};
use sluice_core::jsonrpc;
use sluice_core::method::{ListKind, notification};
use sluice_core::policy::Denied;
use sluice_core::protocol;
use tokio::sync::broadcast;

use crate::client::ClientEvent;
use crate::client::RequestCtx;
use crate::gateway::Gateway;

/// The filter keys a listen stream may ask for, and the list each names.
const FILTERS: [(&str, ListKind); 3] = [
    ("toolsListChanged", ListKind::Tools),
    ("promptsListChanged", ListKind::Prompts),
    ("resourcesListChanged", ListKind::Resources),
];

impl Gateway {
    pub(super) async fn listen(&self, ctx: &RequestCtx, params: Value) -> Result<Value, Denied> {
        let Some(link) = &ctx.link else {
            return Err(Denied::invalid_params(
                "subscriptions/listen needs a stream",
            ));
        };
        let filter = params
            .get("notifications")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let wants = |key: &str| filter.get(key).and_then(Value::as_bool) == Some(true);
        let mut honoured = serde_json::Map::new();
        for (key, _) in FILTERS {
            if wants(key) {
                honoured.insert(key.into(), true.into());
            }
        }
        let meta = json!({protocol::META_SUBSCRIPTION_ID: ctx.request_id});
        let end = || Ok(json!({"_meta": meta}));
        let mut events = self.subscribe();
        let ack = jsonrpc::notification(
            notification::SUBSCRIPTIONS_ACKNOWLEDGED,
            json!({"notifications": honoured, "_meta": meta}),
        );
        if !link.notify(ack).await {
            return end();
        }
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                () = link.closed() => return end(),
                () = self.shutting_down() => return end(),
            };
            let method = match event {
                // Only what this stream's catalog (its view's) shows.
                Ok(ClientEvent::ListChanged { view, method }) if view == ctx.view => method,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return end(),
            };
            let key = FILTERS
                .iter()
                .find(|(_, kind)| kind.list_changed() == method)
                .map_or("resourcesListChanged", |(key, _)| key);
            if honoured.contains_key(key) {
                let note = jsonrpc::notification(method, json!({"_meta": meta}));
                if !link.notify(note).await {
                    return end();
                }
            }
        }
    }
}
