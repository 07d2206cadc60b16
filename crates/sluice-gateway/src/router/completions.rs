//! `completion/complete`: to the upstream that owns the prompt or the
//! resource template its `ref` names.

use serde_json::Value;
use sluice_core::boundary::budget::Surface;
use sluice_core::method::Method;
use sluice_core::payload::Payload;
use sluice_core::policy::{Denied, answer, route};

use super::calls::with_name;
use super::forward::Forward;
use crate::client::RequestCtx;
use crate::gateway::{Gateway, Snapshot};

impl Gateway {
    pub(super) async fn complete(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        params: Value,
    ) -> Result<Payload, Denied> {
        let reference = params.get("ref").cloned().unwrap_or(Value::Null);
        let listed_only = snap.listed_uris_only(ctx);
        let routed = route::completion(
            &snap.federation,
            &snap.live.naming,
            listed_only,
            &reference,
            || snap.offering_resources(),
        );
        let (routed, prompt) = match routed {
            Ok((route, prompt)) => (Ok(route), prompt),
            Err(denied) => (Err(denied), None),
        };
        let upstream = self.routed_to(ctx, snap, routed)?;
        let mut upstream_params = params.clone();
        if let Some(prompt) = prompt
            && let Some(r) = upstream_params.get_mut("ref")
        {
            *r = with_name(r, "name", prompt);
        }
        self.admit_upstream(ctx, snap, upstream.name(), Method::Complete)
            .await?;
        let boundary = answer::boundary(
            &snap.live.config,
            &upstream.config,
            &snap.live.redactor,
            Surface::Prompt,
            false,
        );
        Forward {
            ctx,
            snap,
            upstream: &upstream,
            method: Method::Complete,
            client_params: &params,
            boundary: &boundary,
        }
        .run(self, upstream_params)
        .await
    }
}
