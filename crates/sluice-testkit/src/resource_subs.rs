//! Legacy (2025-11-25) resource subscriptions: `resources/subscribe` / `resources/unsubscribe`
//! (params `{uri}`, result `{}`), and two unlisted resources to observe and drive them.
//!
//! The fixture keeps one process-wide set of subscribed URIs (shared by every connection and
//! session) and counts every subscribe and unsubscribe call received, repeats included, so a test
//! can see how often a gateway called upstream. Neither URI below is in `resources/list` or the
//! templates; `resources/read` answers them anyway (in both eras):
//!
//! - `fixture://subscriptions` reads as the compact JSON
//!   `{"subscribed":[<sorted URIs>],"subscribe_calls":N,"unsubscribe_calls":M}`.
//! - `fixture://touch/<rest>`: if `fixture://res/<rest>` is subscribed, sends
//!   `notifications/resources/updated` `{uri: "fixture://res/<rest>"}` to the reading connection's
//!   unsolicited stream (legacy stdio: stdout; legacy HTTP: the session's GET stream, if open;
//!   modern requests have none, so nothing is sent) and reads as `touched`; otherwise it reads as
//!   `not subscribed`.
//!
//! The 2026-07-28 era removed these methods: there they are -32601 (see `protocol`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::jsonrpc::RpcError;
use crate::peer::{Peer, lock};

/// The resource reading as the subscription state.
pub const SUBSCRIPTIONS_URI: &str = "fixture://subscriptions";
/// Prefix of the resources that announce an update of `fixture://res/<rest>`.
pub const TOUCH_PREFIX: &str = "fixture://touch/";
/// What a touch of a subscribed URI reads as.
pub const TOUCHED: &str = "touched";
/// What a touch of an unsubscribed URI reads as.
pub const NOT_SUBSCRIBED: &str = "not subscribed";

#[derive(Default)]
struct State {
    uris: BTreeSet<String>,
    subscribe_calls: u64,
    unsubscribe_calls: u64,
}

/// The process-wide subscription set and call counters.
#[derive(Default)]
pub struct ResourceSubs {
    state: Mutex<State>,
}

impl ResourceSubs {
    /// `resources/subscribe` (`subscribe = true`) or `resources/unsubscribe`. The call is counted
    /// before `params.uri` is checked (-32602 unless it is a string). Any URI is accepted;
    /// subscribing twice or unsubscribing an unsubscribed URI is not an error.
    pub fn handle(&self, subscribe: bool, params: &Value) -> Result<Value, RpcError> {
        let mut st = lock(&self.state);
        if subscribe {
            st.subscribe_calls += 1;
        } else {
            st.unsubscribe_calls += 1;
        }
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("params.uri must be a string"))?;
        if subscribe {
            st.uris.insert(uri.to_owned());
        } else {
            st.uris.remove(uri);
        }
        Ok(json!({}))
    }

    /// The text of an unlisted resource (`None` if `uri` is not one). A touch notifies `peer`.
    pub fn read(&self, uri: &str, peer: Option<&Arc<Peer>>) -> Option<String> {
        if uri == SUBSCRIPTIONS_URI {
            return Some(self.snapshot());
        }
        let rest = uri.strip_prefix(TOUCH_PREFIX)?;
        let target = format!("fixture://res/{rest}");
        if !lock(&self.state).uris.contains(&target) {
            return Some(NOT_SUBSCRIBED.to_owned());
        }
        if let Some(peer) = peer {
            peer.notify(json!({
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": target},
            }));
        }
        Some(TOUCHED.to_owned())
    }

    /// `{"subscribed":[...],"subscribe_calls":N,"unsubscribe_calls":M}`, compact.
    fn snapshot(&self) -> String {
        let st = lock(&self.state);
        json!({
            "subscribed": st.uris.iter().collect::<Vec<_>>(),
            "subscribe_calls": st.subscribe_calls,
            "unsubscribe_calls": st.unsubscribe_calls,
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn counts_every_call_and_sorts_uris() {
        let subs = ResourceSubs::default();
        for uri in [
            "fixture://res/0002",
            "fixture://res/0001",
            "fixture://res/0002",
        ] {
            assert_eq!(subs.handle(true, &json!({"uri": uri})).unwrap(), json!({}));
        }
        assert_eq!(
            subs.handle(true, &json!({})).err().map(|e| e.code),
            Some(-32602)
        );
        subs.handle(false, &json!({"uri": "fixture://res/0009"}))
            .unwrap();
        assert_eq!(
            subs.read(SUBSCRIPTIONS_URI, None).unwrap(),
            r#"{"subscribed":["fixture://res/0001","fixture://res/0002"],"subscribe_calls":4,"unsubscribe_calls":1}"#
        );
        assert_eq!(subs.read("fixture://touch/0001", None).unwrap(), TOUCHED);
        assert_eq!(
            subs.read("fixture://touch/0003", None).unwrap(),
            NOT_SUBSCRIBED
        );
        assert_eq!(subs.read("fixture://res/0001", None), None);
    }
}
