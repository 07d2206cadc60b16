//! The logins under way through sluice's own pages (`/oauth/...`), with
//! `[auth]`: each waits, by its `state`, for its callback. The rules (who,
//! how long, once, which browser) are `sluice_core::upstream_auth::web`'s;
//! this only holds them.

use std::sync::Arc;

use sluice_core::upstream_auth::web::{Finished, FlowError, LoginFlows, Tickets};
use tokio::sync::Mutex;

use super::login::Begun;

/// The login tickets' keys and the logins under way.
pub(crate) struct WebLogins {
    pub(crate) tickets: Arc<Tickets>,
    flows: Mutex<LoginFlows<Begun>>,
}

impl WebLogins {
    pub(crate) fn new(tickets: Arc<Tickets>) -> Self {
        WebLogins {
            tickets,
            flows: Mutex::new(LoginFlows::default()),
        }
    }

    /// Keeps `begun` under `state` until its callback.
    pub(crate) async fn start(
        &self,
        state: &str,
        principal: &str,
        upstream: &str,
        now_ms: i64,
        begun: Begun,
    ) -> Result<(), FlowError> {
        self.flows
            .lock()
            .await
            .start(state, principal, upstream, now_ms, begun)
    }

    /// Takes the login of `state` back, for a browser whose flow cookie is
    /// `cookie_state`.
    pub(crate) async fn finish(
        &self,
        state: &str,
        cookie_state: Option<&str>,
        now_ms: i64,
    ) -> Result<Finished<Begun>, FlowError> {
        self.flows.lock().await.finish(state, cookie_state, now_ms)
    }
}
