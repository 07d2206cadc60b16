//! The tasks surface (`tasks/get`, `tasks/result`, `tasks/cancel`,
//! `tasks/update`): the client's sealed task id names the upstream, its
//! own id and the tool (`sluice_core::tasks`); the request goes there with
//! the upstream's id, through the tool's scopes and boundary, and the ids
//! in the answer are sealed again. `tasks/list` pages the session's own
//! tasks from sluice's record (`sluice_core::tasks::record`), each row the
//! owning upstream's `tasks/get` of it.

use futures::future::join_all;
use serde_json::{Value, json};
use sluice_core::envelope::{Position, Shape, build_page};
use sluice_core::method::Method;
use sluice_core::policy::{Denied, answer};
use sluice_core::protocol::Era;
use sluice_core::tasks::{self, TaskMethod, TaskRef, record};

use super::calls::{admit_tool, spend_method_rate, with_name};
use super::forward::Forward;
use crate::bridge::now_ms;
use crate::client::RequestCtx;
use crate::gateway::{Gateway, Snapshot};

impl Gateway {
    /// One request of the tasks surface.
    pub(super) async fn task(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        method: TaskMethod,
        params: Value,
    ) -> Result<Value, Denied> {
        if !method.in_era(ctx.era) {
            return Err(Denied::MethodNotFound(method.name().to_owned()));
        }
        tasks::check_declared(ctx.era, &ctx.client_capabilities)?;
        if method == TaskMethod::List {
            return self.list_tasks(ctx, snap, &params).await;
        }
        let task = self
            .hub
            .tasks
            .open(params.get(TaskMethod::ID_FIELD), &ctx.principal.key())?;
        ctx.trail.routed(&task.upstream, Some(&task.exposed));
        spend_method_rate(ctx, snap, &task.upstream, Method::Task(method)).await?;
        self.about_task(ctx, snap, method, &task, &params).await
    }

    /// `method` about `task`, at its upstream, through the tool's scopes and
    /// boundary; a terminal status in the answer ends the task's entry in
    /// the record.
    async fn about_task(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        method: TaskMethod,
        task: &TaskRef,
        params: &Value,
    ) -> Result<Value, Denied> {
        let upstream = snap.upstream(&task.upstream)?;
        admit_tool(ctx, snap, &task.upstream, &task.tool, &task.exposed)?;
        let boundary = task_boundary(snap, &upstream, task);
        let upstream_params = with_name(params, TaskMethod::ID_FIELD, &task.id);
        let mut answer = Forward {
            ctx,
            snap,
            upstream: &upstream,
            method: Method::Task(method),
            client_params: params,
            boundary: &boundary,
        }
        .run_tree(self, upstream_params)
        .await?;
        self.hub.tasks.observed(task, &answer);
        self.hub.tasks.seal_ids(&mut answer, task);
        Ok(answer)
    }

    /// `tasks/list` (2025-11-25): the caller's session's tasks, oldest
    /// first, a page at a time; each row is what the owning upstream's
    /// `tasks/get` says of the task now. sluice lists from its record
    /// rather than asking each upstream's `tasks/list`, which would list
    /// every client's tasks on the shared connection (a page of it would
    /// be filtered down to nothing while the caller's rows sit pages
    /// further), and a page costs one `tasks/get` per row it shows. A
    /// task the upstream no longer knows leaves the record; one it cannot
    /// answer for now is left out of the page. A request without a
    /// session (nothing records its tasks) gets an empty list.
    async fn list_tasks(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        params: &Value,
    ) -> Result<Value, Denied> {
        let surface = TaskMethod::List.name();
        self.admit_list(ctx, snap, surface).await?;
        let Some(session) = &ctx.session else {
            return Ok(json!({"tasks": []}));
        };
        let listed = self.hub.tasks.listed(session.id, &ctx.principal.key());
        // Cursors are the session's: another's does not open.
        let filter = json!({"session": session.id});
        let now = now_ms();
        let key = |i: usize| listed[i].key.as_str();
        let start = self.page_start(
            surface,
            &filter,
            listed.len(),
            key,
            params.get("cursor"),
            now,
        )?;
        let catalog = &snap.live.config.catalog;
        let end = listed
            .len()
            .min(start.saturating_add(catalog.list_page_size));
        let rows = join_all(listed[start..end].iter().map(|row| async move {
            let get = json!({TaskMethod::ID_FIELD: self.hub.tasks.seal(&row.task)});
            match self
                .about_task(ctx, snap, TaskMethod::Get, &row.task, &get)
                .await
            {
                Ok(status) => Some(status),
                Err(denied) => {
                    if record::is_gone(&denied) {
                        self.hub.tasks.forget(&row.task);
                    }
                    None
                }
            }
        }))
        .await;
        // Each row shown, with where a page that ends after it resumes.
        let (window, after): (Vec<Value>, Vec<usize>) = rows
            .into_iter()
            .zip(start..end)
            .filter_map(|(row, i)| row.map(|row| (row, i)))
            .unzip();
        let shape = Shape {
            field: "tasks",
            capped_flag: false,
        };
        if window.is_empty() {
            return Ok(json!({"tasks": []}));
        }
        let page = build_page(
            &window,
            end < listed.len(),
            catalog.list_page_bytes,
            shape,
            |n| {
                let last = after[n - 1];
                let position = Position {
                    offset: last + 1,
                    last_key: listed[last].key.clone(),
                };
                self.cursors.issue(surface, &filter, &position, now)
            },
        );
        Ok(page.value)
    }

    /// The params of a `tools/call` as `upstream_era`'s upstream gets them:
    /// `params.task` only where it crosses (`tasks::keeps_task_request`).
    pub(super) fn task_request(
        &self,
        ctx: &RequestCtx,
        upstream: &crate::upstream::Upstream,
        params: &mut Value,
    ) {
        let keeps = upstream.connection().is_ok_and(|conn| {
            let description = conn.description();
            tasks::keeps_task_request(
                ctx.era,
                description.era,
                tasks::upstream_runs_tasks(description.era, &description.capabilities),
            )
        });
        if !keeps {
            tasks::strip_task_request(params);
        }
    }

    /// A `tools/call` answer that created a task: its ids sealed for the
    /// caller, and the task recorded as the caller's legacy session's (a
    /// 2026-07-28 client has no session, and no `tasks/list`).
    pub(super) fn created_task(&self, ctx: &RequestCtx, answer: &mut Value, task: TaskRef) {
        if let Some(session) = &ctx.session
            && let Some(id) = tasks::created_id(answer)
        {
            let owned = TaskRef {
                id: id.to_owned(),
                ..task.clone()
            };
            self.hub.task_created(session.id, owned, answer);
        }
        self.hub.tasks.seal_ids(answer, &task);
    }

    /// What sluice declares of tasks to a client of `era` speaking
    /// `version`: from the upstreams connected now.
    pub(super) fn tasks_capability(&self, era: Era, version: &str) -> Option<Value> {
        let live = self.live();
        let descriptions: Vec<_> = live
            .upstreams
            .iter()
            .filter_map(|u| u.connection().ok())
            .filter(|c| c.description().era == era)
            .collect();
        tasks::served_capability(
            era,
            version,
            descriptions.iter().map(|c| &c.description().capabilities),
        )
    }
}

/// What an answer about `task` goes through: the boundary of the tool
/// call that started it (its result is that call's result).
pub(super) fn task_boundary<'a>(
    snap: &'a Snapshot,
    upstream: &'a crate::upstream::Upstream,
    task: &TaskRef,
) -> sluice_core::boundary::Boundary<'a> {
    answer::tool_boundary(
        &snap.live.config,
        &upstream.config,
        &snap.live.redactor,
        &task.tool,
        &task.exposed,
        snap.federation.tool(&task.exposed),
    )
}
