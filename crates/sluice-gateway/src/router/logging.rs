//! `logging/setLevel` (2025-x): the level goes to every connected legacy
//! upstream that offers logging; 2026-07-28 upstreams take it per request
//! in `_meta` (see `forward`).

use serde_json::{Value, json};
use sluice_core::method::Method;
use sluice_core::policy::Denied;
use sluice_core::protocol::Era;

use crate::client::RequestCtx;
use crate::gateway::{Gateway, Snapshot};
use crate::upstream::Call;

/// The levels of RFC 5424 that MCP logging uses.
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

impl Gateway {
    pub(super) async fn set_log_level(
        &self,
        ctx: &RequestCtx,
        snap: &Snapshot,
        params: Value,
    ) -> Result<Value, Denied> {
        let Some(level) = params
            .get("level")
            .and_then(Value::as_str)
            .filter(|l| LEVELS.contains(l))
        else {
            return Err(Denied::invalid_params(format!(
                "params.level must be one of {}",
                LEVELS.join(", ")
            )));
        };
        if let Some(session) = &ctx.session {
            session.set_log_level(level);
        }
        let method = Method::SetLogLevel.name().unwrap_or_default();
        let timeout = snap.live.config.server.request_timeout;
        for up in &snap.live.upstreams {
            let Ok(conn) = up.connection() else { continue };
            if conn.description().era == Era::Legacy && conn.offers("logging") {
                let call = Call {
                    carried: ctx.carried.clone(),
                    ..Call::new(method, params.clone(), timeout)
                };
                let _ = conn.call(call).await;
            }
        }
        Ok(json!({}))
    }
}
