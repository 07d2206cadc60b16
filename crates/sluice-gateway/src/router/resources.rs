//! `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
//!
//! A subscription lives in a legacy session and is held upstream once per
//! (upstream, URI), however many sessions want it: the hub counts them.

use std::sync::Arc;

use serde_json::{Value, json};
use sluice_core::boundary::budget::Surface;
use sluice_core::method::Method;
use sluice_core::payload::Payload;
use sluice_core::policy::{Denied, answer, route};
use sluice_core::protocol::Era;

use super::forward::Forward;
use crate::client::{ClientSession, RequestCtx};
use crate::gateway::{Gateway, Snapshot};
use crate::upstream::Upstream;

impl Gateway {
    pub(super) async fn read_resource(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        params: Value,
    ) -> Result<Payload, Denied> {
        let uri = uri_of(&params)?;
        route::check_uri(uri)?;
        let upstream = self.resource_owner(ctx, snap, uri)?;
        self.admit_upstream(ctx, snap, upstream.name(), Method::ReadResource)
            .await?;
        let boundary = answer::boundary(
            &snap.live.config,
            &upstream.config,
            &snap.live.redactor,
            Surface::Resource,
            true,
        );
        Forward {
            ctx,
            snap,
            upstream: &upstream,
            method: Method::ReadResource,
            client_params: &params,
            boundary: &boundary,
        }
        .run(self, params.clone())
        .await
    }

    pub(super) async fn subscribe_resource(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        params: Value,
    ) -> Result<Value, Denied> {
        let uri = uri_of(&params)?.to_owned();
        let session = route::subscription_session(Method::Subscribe, ctx.session.as_ref())?;
        let upstream = self.resource_owner(ctx, snap, &uri)?;
        self.admit_upstream(ctx, snap, upstream.name(), Method::Subscribe)
            .await?;
        let name = upstream.name();
        let lock = self.hub.subscription_lock(name, &uri);
        let _ordered = lock.lock().await;
        if !session.subscribe(&uri, name) || !self.hub.acquire_subscription(name, &uri) {
            return Ok(json!({}));
        }
        // A modern upstream has no resources/subscribe: a listen stream
        // naming the URI holds the subscription instead.
        if let Ok(conn) = upstream.connection()
            && conn.description().era == Era::Modern
        {
            // The session may have ended meanwhile: its subscriptions were
            // released without this one.
            if session.closed.is_cancelled() {
                session.unsubscribe(&uri);
                self.hub.release_subscription(name, &uri);
                return Ok(json!({}));
            }
            let timeout = snap.live.config.server.request_timeout;
            self.hub.subscribe_resource(name, &conn, &uri, timeout);
            return Ok(json!({}));
        }
        let boundary = answer::boundary(
            &snap.live.config,
            &upstream.config,
            &snap.live.redactor,
            Surface::Resource,
            false,
        );
        let result = Forward {
            ctx,
            snap,
            upstream: &upstream,
            method: Method::Subscribe,
            client_params: &params,
            boundary: &boundary,
        }
        .run_tree(self, params.clone())
        .await;
        // Undo what this request did if it failed, or if the session ended
        // meanwhile (its subscriptions were already released without this
        // one).
        if (result.is_err() || session.closed.is_cancelled())
            && session.unsubscribe(&uri).is_some()
            && self.hub.release_subscription(name, &uri)
            && result.is_ok()
        {
            self.unsubscribe_upstream(name, &uri);
        }
        result
    }

    /// The upstream that holds it is the one recorded, even if the catalog
    /// has moved on since.
    pub(super) fn unsubscribe_resource(
        &self,
        ctx: &RequestCtx,
        params: Value,
    ) -> Result<Value, Denied> {
        let uri = uri_of(&params)?;
        let session = route::subscription_session(Method::Unsubscribe, ctx.session.as_ref())?;
        if let Some(held) = session.unsubscribe(uri)
            && self.hub.release_subscription(&held, uri)
        {
            self.unsubscribe_upstream(&held, uri);
        }
        Ok(json!({}))
    }

    /// A legacy session ended (DELETE, expiry, a second `initialize`): its
    /// resource subscriptions are released, upstream too when it was the
    /// last (on their own tasks: nothing waits for the upstream), and its
    /// tasks leave the record (they still answer by their ids).
    pub fn end_session(&self, session: &ClientSession) {
        session.closed.cancel();
        self.hub.tasks.end_session(session.id);
        for (uri, upstream) in session.take_subscriptions() {
            if self.hub.release_subscription(&upstream, &uri) {
                self.unsubscribe_upstream(&upstream, &uri);
            }
        }
    }

    /// Sends `resources/unsubscribe` upstream on its own task: a slow or
    /// hung upstream must not hold the client (or a session's end) up.
    pub(crate) fn unsubscribe_upstream(&self, upstream: &str, uri: &str) {
        let conn = self.upstream(upstream).and_then(|u| u.connection().ok());
        let timeout = self.live().config.server.request_timeout;
        let hub = Arc::clone(&self.hub);
        let (upstream, uri) = (upstream.to_owned(), uri.to_owned());
        tokio::spawn(async move {
            let lock = hub.subscription_lock(&upstream, &uri);
            let _ordered = lock.lock().await;
            // A session may have subscribed again meanwhile: then the
            // upstream subscription is still wanted.
            if hub.subscription_count(&upstream, &uri) > 0 {
                return;
            }
            // A modern upstream's subscription is its listen stream.
            if hub.end_resource_listen(&upstream, &uri) {
                return;
            }
            let Some(conn) = conn else {
                return;
            };
            let method = Method::Unsubscribe.name().unwrap_or_default();
            let params = json!({"uri": uri});
            let _ = conn
                .request(method, params, &json!({}), None, timeout, &[])
                .await;
        });
    }

    /// The upstream that serves `uri` (`policy::route::resource`), recorded
    /// on the request's trail by the URI's scheme only, and only when the
    /// approved catalog lists it.
    pub(super) fn resource_owner(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        uri: &str,
    ) -> Result<Arc<Upstream>, Denied> {
        let listed_only = snap.listed_uris_only(ctx);
        let routed = route::resource(&snap.federation, listed_only, uri, || {
            snap.offering_resources()
        });
        self.routed_to(ctx, snap, routed)
    }

    /// The upstream of a resource route, with the route on the trail.
    pub(super) fn routed_to(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        routed: Result<route::ResourceRoute<'_>, Denied>,
    ) -> Result<Arc<Upstream>, Denied> {
        match routed {
            Ok(route) => {
                ctx.trail.routed(route.upstream, route.target.as_deref());
                snap.upstream(route.upstream)
            }
            Err(denied) => {
                if let Some((upstream, target)) = denied.routed() {
                    ctx.trail.routed(upstream, Some(&target));
                }
                Err(denied)
            }
        }
    }
}

fn uri_of(params: &Value) -> Result<&str, Denied> {
    params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| Denied::invalid_params("params.uri must be the resource's URI"))
}
