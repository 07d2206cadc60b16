//! The tasks surface (`tasks/get`, `tasks/result`, `tasks/cancel`,
//! `tasks/update`): the client's sealed task id names the upstream, its
//! own id and the tool (`sluice_core::tasks`); the request goes there with
//! the upstream's id, through the tool's scopes and boundary, and the ids
//! in the answer are sealed again.

use serde_json::Value;
use sluice_core::method::Method;
use sluice_core::policy::{Denied, answer};
use sluice_core::protocol::Era;
use sluice_core::tasks::{self, TaskMethod, TaskRef};

use super::calls::{admit_tool, with_name};
use super::forward::Forward;
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
        let task = self
            .task_ids
            .open(params.get(TaskMethod::ID_FIELD), &ctx.principal.key())?;
        let upstream = snap.upstream(&task.upstream)?;
        ctx.trail.routed(&task.upstream, Some(&task.exposed));
        admit_tool(ctx, snap, &task.upstream, &task.tool, &task.exposed)?;
        let boundary = answer::tool_boundary(
            &snap.live.config,
            &upstream.config,
            &snap.live.redactor,
            &task.tool,
            &task.exposed,
            snap.federation.tool(&task.exposed),
        );
        let upstream_params = with_name(&params, TaskMethod::ID_FIELD, &task.id);
        let mut answer = Forward {
            ctx,
            snap,
            upstream: &upstream,
            method: Method::Task(method),
            client_params: &params,
            boundary: &boundary,
        }
        .run(self, upstream_params)
        .await?;
        self.seal_task_ids(&mut answer, &task);
        Ok(answer)
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

    /// Seals every task id in an upstream's answer about `task` (the
    /// upstream's id becomes the client's).
    pub(super) fn seal_task_ids(&self, answer: &mut Value, task: &TaskRef) {
        tasks::reseal(answer, &mut |id| {
            self.task_ids.seal(&TaskRef {
                id: id.to_owned(),
                ..task.clone()
            })
        });
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
