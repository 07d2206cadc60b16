//! `subscriptions/listen` (2026-07-28): acknowledge the filter, then send
//! the `list_changed` notifications it asked for, of the catalog the
//! request sees (its view's, or the whole federation's), and the
//! `notifications/tasks` of the tasks it named (the tasks extension;
//! `sluice_core::tasks::listen` decides which, and what each upstream is
//! asked), until the client closes the stream.

use serde_json::{Value, json};
use sluice_core::jsonrpc;
use sluice_core::method::{ListKind, notification};
use sluice_core::payload::Payload;
use sluice_core::policy::{Denied, answer};
use sluice_core::protocol::{self, Era};
use sluice_core::tasks::{self, listen::TaskListen};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

use super::calls::admit_tool;
use crate::client::{ClientEvent, RequestCtx};
use crate::gateway::{Gateway, Snapshot};
use crate::ops::metrics;
use crate::upstream;

/// The filter keys a listen stream may ask for, and the list each names.
const FILTERS: [(&str, ListKind); 3] = [
    ("toolsListChanged", ListKind::Tools),
    ("promptsListChanged", ListKind::Prompts),
    ("resourcesListChanged", ListKind::Resources),
];

/// The upstream streams a client stream opened for its tasks: they end
/// with it.
struct UpstreamStreams(Vec<AbortHandle>);

impl Drop for UpstreamStreams {
    fn drop(&mut self) {
        for stream in &self.0 {
            stream.abort();
        }
    }
}

impl Gateway {
    pub(super) async fn listen(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        params: Value,
    ) -> Result<Value, Denied> {
        let Some(link) = &ctx.link else {
            return Err(Denied::invalid_params(
                "subscriptions/listen needs a stream",
            ));
        };
        let filter = params
            .get("notifications")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut tasks = self.task_listen(ctx, snap, &filter)?;
        let wants = |key: &str| filter.get(key).and_then(Value::as_bool) == Some(true);
        let mut honoured = serde_json::Map::new();
        for (key, _) in FILTERS {
            if wants(key) {
                honoured.insert(key.into(), true.into());
            }
        }
        if !tasks.is_empty() {
            honoured.insert(tasks::listen::FILTER_KEY.into(), json!(tasks.honoured()));
        }
        let meta = json!({protocol::META_SUBSCRIPTION_ID: ctx.request_id});
        let end = || Ok(json!({"_meta": meta}));
        // Before the upstream streams open: nothing they tell is missed.
        let mut events = self.subscribe();
        let ack = jsonrpc::notification(
            notification::SUBSCRIPTIONS_ACKNOWLEDGED,
            json!({"notifications": honoured, "_meta": meta}),
        );
        if !link.notify(ack).await {
            return end();
        }
        let _upstream_streams = self.open_task_streams(snap, &tasks);
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                () = link.closed() => return end(),
                () = self.shutting_down() => return end(),
            };
            let note = match event {
                // Only what this stream's catalog (its view's) shows.
                Ok(ClientEvent::ListChanged { view, method }) if view == ctx.view => {
                    let key = FILTERS
                        .iter()
                        .find(|(_, kind)| kind.list_changed() == method)
                        .map_or("resourcesListChanged", |(key, _)| key);
                    if !honoured.contains_key(key) {
                        continue;
                    }
                    jsonrpc::notification(method, json!({"_meta": meta}))
                }
                Ok(ClientEvent::TaskUpdate { upstream, params }) => {
                    match self.task_note(ctx, &mut tasks, &upstream, &params) {
                        Some(note) => note,
                        None => continue,
                    }
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return end(),
            };
            if !link.notify(note).await {
                return end();
            }
        }
    }

    /// The tasks a listen filter names that sluice honours: ids that open
    /// for the caller, whose tool the caller may still call, on an
    /// upstream connected now that runs 2026-07-28 tasks.
    fn task_listen(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        filter: &Value,
    ) -> Result<TaskListen, Denied> {
        let ids = tasks::listen::requested_ids(filter, &ctx.client_capabilities)?;
        let principal = ctx.principal.key();
        let opened = ids.into_iter().filter_map(|id| {
            let task = self.hub.tasks.open(Some(&json!(id)), &principal).ok()?;
            admit_tool(ctx, snap, &task.upstream, &task.tool, &task.exposed).ok()?;
            Some((id.to_owned(), task))
        });
        Ok(TaskListen::new(opened, |name| {
            snap.upstream(name)
                .ok()
                .and_then(|up| up.connection().ok())
                .is_some_and(|conn| {
                    let description = conn.description();
                    description.era == Era::Modern
                        && tasks::upstream_runs_tasks(Era::Modern, &description.capabilities)
                })
        }))
    }

    /// One upstream stream for each upstream whose tasks `tasks` names.
    fn open_task_streams(&self, snap: &Snapshot, tasks: &TaskListen) -> UpstreamStreams {
        let streams = tasks
            .upstream_filters()
            .into_iter()
            .filter_map(|(name, filter)| {
                let conn = snap.upstream(&name).ok()?.connection().ok()?;
                Some(upstream::listen_for_tasks(&name, &conn, filter))
            })
            .collect();
        UpstreamStreams(streams)
    }

    /// An upstream's `notifications/tasks` as this stream sends it, if the
    /// stream asked for the task: through the tool's boundary as a
    /// `tasks/get` answer is (a result the read budget refuses is not
    /// sent: `tasks/get` answers the refusal), its ids sealed for the
    /// caller, tagged with the client's subscription id.
    fn task_note(
        &self,
        ctx: &RequestCtx,
        tasks: &mut TaskListen,
        upstream: &str,
        params: &Value,
    ) -> Option<Value> {
        let task = tasks.accept(upstream, params)?.clone();
        // Now's configuration: the stream may outlive a reload.
        let snap = self.snapshot(ctx.view.as_deref());
        let up = snap.upstream(&task.upstream).ok()?;
        let boundary = super::tasks::task_boundary(&snap, &up, &task);
        let bound = answer::bound(&boundary, upstream, Ok(params.clone().into()));
        metrics::redactions(&bound.redactions);
        // A tree goes through the boundary as a tree.
        let Ok(Payload::Tree(mut params)) = bound.answer else {
            metrics::task_status_dropped(upstream);
            return None;
        };
        self.hub.tasks.seal_ids(&mut params, &task);
        let params = tasks::listen::for_stream(params, &ctx.request_id);
        Some(jsonrpc::notification(notification::TASKS, params))
    }
}
