//! The legacy sessions of the HTTP transport: those held here, by id; the
//! take-up of a sealed id another replica (or this one, before a restart)
//! minted; the ids of sessions ended here, which must not bring them back;
//! and the expiry of idle sessions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::Rng;
use serde_json::Value;
use sha2::{Digest, Sha256};
use sluice_core::access::Principal;
use sluice_core::policy::Denied;
use sluice_core::session_token::{SessionClaims, SessionKey};

use crate::client::ClientSession;
use crate::gateway::Gateway;
use crate::ops::metrics;

/// The most ended session ids remembered; past it the soonest to expire
/// anyway is forgotten first.
const MAX_ENDED_SESSIONS: usize = 100_000;

/// The session table.
#[derive(Default)]
pub(super) struct Sessions {
    held: Mutex<HashMap<String, Arc<ClientSession>>>,
    /// Sessions ended here (DELETE, idle), by [`id_hash`], with when their
    /// id stops opening anyway (ms since the epoch): their id must not
    /// bring them back.
    ended: Mutex<HashMap<[u8; 16], u64>>,
}

impl Sessions {
    fn lock_held(&self) -> MutexGuard<'_, HashMap<String, Arc<ClientSession>>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_ended(&self) -> MutexGuard<'_, HashMap<[u8; 16], u64>> {
        self.ended.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session `id` names, if `principal` opened it: held here, or
    /// taken up from its id.
    pub(super) fn find(
        &self,
        gateway: &Gateway,
        id: &str,
        principal: &Arc<Principal>,
    ) -> Result<Arc<ClientSession>, Denied> {
        match self.lock_held().get(id) {
            // Someone else's session is answered as an unknown one: its id
            // is no key to it (S-18).
            Some(session) if session.principal.key() == principal.key() => {
                return Ok(Arc::clone(session));
            }
            Some(_) => return Err(Denied::SessionNotFound),
            None => {}
        }
        self.take_up(gateway, id, principal)
    }

    /// Rebuilds a session another replica (or this one, before a restart)
    /// opened, from its id.
    fn take_up(
        &self,
        gateway: &Gateway,
        id: &str,
        principal: &Arc<Principal>,
    ) -> Result<Arc<ClientSession>, Denied> {
        let claims = self
            .admissible(gateway, id, principal)
            .ok_or(Denied::SessionNotFound)?;
        let mut held = self.lock_held();
        // Another request may have taken it up meanwhile, or a DELETE
        // ended it (it marks the id ended under this same lock).
        if let Some(session) = held.get(id) {
            return Ok(Arc::clone(session));
        }
        if self.lock_ended().contains_key(&id_hash(id)) {
            return Err(Denied::SessionNotFound);
        }
        if held.len() >= gateway.live().config.server.max_sessions {
            return Err(Denied::TooManySessions);
        }
        let session = ClientSession::new(
            claims.protocol_version,
            claims.client_capabilities,
            Arc::clone(principal),
            claims.view.map(Arc::from),
        );
        session.forward_events(gateway.subscribe());
        held.insert(id.to_owned(), Arc::clone(&session));
        metrics::sessions_open(held.len());
        tracing::debug!("took up a legacy session from its id");
        Ok(session)
    }

    /// The claims of `id` if it may open a session for `principal`: sealed
    /// with this deployment's key, for the same principal, young enough,
    /// and not ended here.
    fn admissible(
        &self,
        gateway: &Gateway,
        id: &str,
        principal: &Principal,
    ) -> Option<SessionClaims> {
        if self.lock_ended().contains_key(&id_hash(id)) {
            return None;
        }
        let claims = gateway.session_key.open(id).ok()?;
        let max_age_ms = max_age_ms(gateway);
        (claims.principal == principal.key() && !claims.expired(now_ms(), max_age_ms))
            .then_some(claims)
    }

    /// `initialize`: a new session for `principal`, its result and its id.
    pub(super) fn open(
        &self,
        gateway: &Gateway,
        params: &Value,
        principal: Arc<Principal>,
        view: Option<Arc<str>>,
    ) -> Result<(Value, String), Denied> {
        if self.lock_held().len() >= gateway.live().config.server.max_sessions {
            return Err(Denied::TooManySessions);
        }
        let (result, session) = gateway.initialize(params, principal, view);
        let id = new_session_id(&gateway.session_key, &session);
        let mut held = self.lock_held();
        held.insert(id.clone(), session);
        metrics::sessions_open(held.len());
        Ok((result, id))
    }

    /// `DELETE`: ends the session `id` names, if `principal` opened it;
    /// `false` when there is no such session.
    pub(super) fn end(&self, gateway: &Gateway, id: &str, principal: &Principal) -> bool {
        let (held, removed) = {
            let mut sessions = self.lock_held();
            let held = sessions
                .get(id)
                .map(|s| s.principal.key() == principal.key());
            let removed = if held == Some(true) {
                // Marked ended before it leaves the map, under the map's
                // lock: a request taking it up from its id meanwhile sees
                // either.
                self.remember_ended(gateway, id);
                sessions.remove(id)
            } else {
                None
            };
            metrics::sessions_open(sessions.len());
            (held, removed)
        };
        match (held, removed) {
            (_, Some(session)) => {
                gateway.end_session(&session);
                true
            }
            // Not held here: ended here, which is all this replica can do
            // (the others that hold it keep it until it idles out).
            (None, None) if self.admissible(gateway, id, principal).is_some() => {
                self.remember_ended(gateway, id);
                true
            }
            _ => false,
        }
    }

    /// Remembers that the session `id` names ended here, so that its id
    /// does not bring it back (it opens nowhere after `session_max_age`).
    fn remember_ended(&self, gateway: &Gateway, id: &str) {
        let now = now_ms();
        let until = now.saturating_add(max_age_ms(gateway));
        let mut ended = self.lock_ended();
        if ended.len() >= MAX_ENDED_SESSIONS {
            ended.retain(|_, until| *until > now);
        }
        if ended.len() >= MAX_ENDED_SESSIONS
            && let Some(soonest) = ended
                .iter()
                .min_by_key(|(_, until)| **until)
                .map(|(k, _)| *k)
        {
            ended.remove(&soonest);
        }
        ended.insert(id_hash(id), until);
    }

    /// Shutdown: every session's background tasks and GET stream end.
    pub(super) fn close_all(&self) {
        for (_, session) in self.lock_held().drain() {
            session.closed.cancel();
        }
    }

    /// Closes sessions idle for `session_idle_timeout`, until shutdown.
    pub(super) async fn expire_idle(&self, gateway: &Gateway) {
        let limit = gateway.live().config.server.session_idle_timeout;
        let every = (limit / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = gateway.shutting_down() => return,
            }
            let expired: Vec<Arc<ClientSession>> = {
                let mut held = self.lock_held();
                let idle: Vec<String> = held
                    .iter()
                    .filter(|(_, session)| session.idle_for(limit))
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in &idle {
                    self.remember_ended(gateway, id);
                }
                let expired = idle.iter().filter_map(|id| held.remove(id)).collect();
                metrics::sessions_open(held.len());
                expired
            };
            let now = now_ms();
            self.lock_ended().retain(|_, until| *until > now);
            if !expired.is_empty() {
                tracing::info!("closing {} idle legacy session(s)", expired.len());
            }
            for session in expired {
                gateway.end_session(&session);
            }
        }
    }
}

/// `session_max_age`, in ms.
fn max_age_ms(gateway: &Gateway) -> u64 {
    let max_age = gateway.live().config.server.session_max_age;
    u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX)
}

/// What an ended session is remembered by (not the id itself: a memory dump
/// should not hand out ids).
fn id_hash(id: &str) -> [u8; 16] {
    let digest = Sha256::digest(id.as_bytes());
    let mut out = [0; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

fn now_ms() -> u64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX)
}

/// A fresh session id for `session`, which `principal` opened.
fn new_session_id(key: &SessionKey, session: &ClientSession) -> String {
    let claims = SessionClaims {
        session_nonce: rand::rng().random(),
        principal: session.principal.key(),
        protocol_version: session.protocol_version.clone(),
        client_capabilities: session.client_capabilities.clone(),
        issued_at_ms: now_ms(),
        view: session.view.as_deref().map(str::to_owned),
    };
    key.seal(&claims, rand::rng().random())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn session_ids_are_sealed_visible_ascii_and_never_repeat() {
        let key = SessionKey::derive(&[3; 32]);
        let principal = Arc::new(Principal::named("alice"));
        let session =
            ClientSession::new("2025-06-18".into(), json!({"roots": {}}), principal, None);
        let a = new_session_id(&key, &session);
        assert!(a.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{a}");
        assert_ne!(a, new_session_id(&key, &session));
        let claims = key.open(&a).unwrap();
        assert_eq!(claims.principal, "alice");
        assert_eq!(claims.protocol_version, "2025-06-18");
        assert_eq!(claims.client_capabilities, json!({"roots": {}}));
        assert_ne!(
            claims.session_nonce,
            key.open(&new_session_id(&key, &session))
                .unwrap()
                .session_nonce
        );
    }
}
