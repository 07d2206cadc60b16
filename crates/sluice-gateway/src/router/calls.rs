//! `tools/call` and `prompts/get`: route by the namespaced name, check the
//! caller, restore the upstream's name, forward through the call's
//! boundary.

use serde_json::Value;
use sluice_core::boundary::budget::Surface;
use sluice_core::method::{ListKind, Method};
use sluice_core::payload::Payload;
use sluice_core::policy::{Denied, admit, answer, route};
use sluice_core::tasks::{self, TaskRef};

use super::forward::Forward;
use crate::client::RequestCtx;
use crate::gateway::{Gateway, Snapshot};
use crate::ops::trace;

impl Gateway {
    /// `tools/call`: a meta-tool in progressive mode, else a tool by its
    /// namespaced name. `sluice_call_tool` is a direct call of the tool it
    /// names, through the same policies.
    pub(super) async fn call_tool(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        mut params: Value,
    ) -> Result<Payload, Denied> {
        match route::tool_call(snap.live.config.catalog.mode, &params)? {
            route::ToolCall::Tool => {}
            route::ToolCall::Direct(inner) => params = inner,
            route::ToolCall::Meta { name, arguments } => {
                self.admit_list(ctx, snap, &name).await?;
                return self.meta_call(snap, &name, &arguments).map(Payload::Tree);
            }
        }
        let (exposed, route) = self.route_named(ctx, snap, ListKind::Tools, &params)?;
        let upstream = snap.upstream(&route.upstream)?;
        ctx.trail.routed(&route.upstream, Some(&exposed));
        let config = &snap.live.config;
        admit_tool(ctx, snap, &route.upstream, &route.name, &exposed)?;
        let resumed = self.bridge.is_resumption(ctx, Method::CallTool, &params);
        if admit::counts_against_rate(resumed) {
            let scope = admit::rate_scope(config, &route.upstream, &route.name);
            let key = admit::rate_key(&ctx.principal, &exposed);
            spend_rate(
                ctx,
                snap,
                scope,
                (&route.upstream, &route.name),
                key,
                &exposed,
            )
            .await?;
        }
        let boundary = answer::tool_boundary(
            config,
            &upstream.config,
            &snap.live.redactor,
            &route.name,
            &exposed,
            snap.federation.tool(&exposed),
        );
        let mut upstream_params = with_name(&params, "name", &route.name);
        self.task_request(ctx, &upstream, &mut upstream_params);
        let mut answer = Forward {
            ctx,
            snap,
            upstream: &upstream,
            method: Method::CallTool,
            client_params: &params,
            boundary: &boundary,
        }
        .run(self, upstream_params)
        .await?;
        // A task's creation is never carried as text (`answer::bound`).
        if let Some(created) = answer.as_tree_mut()
            && tasks::created_task(created)
        {
            let task = TaskRef {
                upstream: route.upstream,
                id: String::new(),
                tool: route.name,
                exposed,
                principal: ctx.principal.key(),
            };
            self.created_task(ctx, created, task);
        }
        Ok(answer)
    }

    /// `prompts/get`: the prompt by its namespaced name, read through the
    /// read budget.
    pub(super) async fn get_prompt(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        params: Value,
    ) -> Result<Payload, Denied> {
        route::check_arguments(ListKind::Prompts, &params)?;
        let (exposed, route) = self.route_named(ctx, snap, ListKind::Prompts, &params)?;
        let upstream = snap.upstream(&route.upstream)?;
        ctx.trail.routed(&route.upstream, Some(&exposed));
        self.admit_upstream(ctx, snap, &route.upstream, Method::GetPrompt)
            .await?;
        let boundary = answer::boundary(
            &snap.live.config,
            &upstream.config,
            &snap.live.redactor,
            Surface::Prompt,
            true,
        );
        let upstream_params = with_name(&params, "name", &route.name);
        Forward {
            ctx,
            snap,
            upstream: &upstream,
            method: Method::GetPrompt,
            client_params: &params,
            boundary: &boundary,
        }
        .run(self, upstream_params)
        .await
    }

    /// The route of a tool or prompt call; a drift block is recorded on
    /// the request's trail under the withheld entry's upstream (a route is
    /// recorded by the caller once its upstream is found).
    fn route_named(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        kind: ListKind,
        params: &Value,
    ) -> Result<(String, sluice_core::catalog::Route), Denied> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(Denied::invalid_params(format!(
                "params.name must be the {}'s name",
                kind.noun()
            )));
        };
        let routed = route::named(&snap.federation, &snap.live.naming, kind, name, || {
            snap.unread()
        });
        match routed {
            Ok(route) => Ok((name.to_owned(), route.clone())),
            Err(denied) => {
                if let Some((upstream, target)) = denied.routed() {
                    ctx.trail.routed(upstream, Some(&target));
                }
                Err(denied)
            }
        }
    }

    /// A prompt, resource or completion request's admission: the scopes
    /// `[[auth.require]]` asks for every use of `upstream`, then the
    /// caller's allowance for `method` on it.
    pub(super) async fn admit_upstream(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        upstream: &str,
        method: Method,
    ) -> Result<(), Denied> {
        {
            let _policy = trace::policy_span().entered();
            admit::scopes(
                ctx.scoped,
                &snap.live.config.auth.require,
                &ctx.principal,
                upstream,
                None,
                upstream,
            )
            .inspect_err(|denied| log_scope_refusal(ctx, upstream, denied))?;
        }
        spend_method_rate(ctx, snap, upstream, method).await
    }
}

/// Spends the caller's allowance for `method` on `upstream`
/// (`policy::admit::method_rate`): a prompt, resource or completion
/// request, or one about a task.
pub(super) async fn spend_method_rate(
    ctx: &RequestCtx,
    snap: &Snapshot,
    upstream: &str,
    method: Method,
) -> Result<(), Denied> {
    let name = method.name().unwrap_or_default();
    let (scope, key) = admit::method_rate(&snap.live.config, &ctx.principal, upstream, name);
    spend_rate(ctx, snap, scope, (upstream, ""), key, name).await
}

impl Gateway {
    /// A page of a list sluice serves itself (an MCP list), or a call of a
    /// meta-tool (which lists or describes what sluice holds): spends the
    /// caller's allowance for that list or meta-tool.
    pub(super) async fn admit_list(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        list: &str,
    ) -> Result<(), Denied> {
        let (scope, key) = admit::list_rate(&ctx.principal, list);
        spend_rate(ctx, snap, scope, ("", ""), key, list).await
    }
}

/// The scopes `[[auth.require]]` asks for a use of `tool` (the upstream's
/// name; `exposed`, the client's) on `upstream` (S-20): a call, or a
/// request about the call's task.
pub(super) fn admit_tool(
    ctx: &RequestCtx,
    snap: &Snapshot,
    upstream: &str,
    tool: &str,
    exposed: &str,
) -> Result<(), Denied> {
    let _policy = trace::policy_span().entered();
    admit::scopes(
        ctx.scoped,
        &snap.live.config.auth.require,
        &ctx.principal,
        upstream,
        Some(tool),
        exposed,
    )
    .inspect_err(|denied| log_scope_refusal(ctx, exposed, denied))
}

/// Spends one of the caller's allowance under `scope` (`at` names the
/// upstream and, for a tool's own rate, the tool); over it, the refusal
/// names `target`, as the client named what it called.
async fn spend_rate(
    ctx: &RequestCtx,
    snap: &Snapshot,
    scope: admit::RateScope,
    at: (&str, &str),
    key: (String, String),
    target: &str,
) -> Result<(), Denied> {
    let (upstream, tool) = at;
    match snap
        .live
        .rate_limits
        .check(scope, upstream, tool, key)
        .await
    {
        Ok(()) => Ok(()),
        Err(wait) => {
            tracing::debug!(principal = %ctx.principal.name, target, "rate limited");
            Err(Denied::RateLimited {
                tool: target.to_owned(),
                retry_after: wait,
            })
        }
    }
}

/// A scope refusal is logged with who and what (S-20).
fn log_scope_refusal(ctx: &RequestCtx, target: &str, denied: &Denied) {
    if let Some(required) = denied.required_scopes() {
        tracing::info!(
            principal = %ctx.principal.name,
            target,
            request = %ctx.request_id,
            "refused: insufficient scope (needs {})",
            required.join(" ")
        );
    }
}

/// `params` with `field` set to `value` (the upstream's own name for what
/// the client named).
pub(super) fn with_name(params: &Value, field: &str, value: &str) -> Value {
    let mut params = params.clone();
    if let Some(obj) = params.as_object_mut() {
        obj.insert(field.into(), value.into());
    }
    params
}
