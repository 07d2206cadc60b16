//! The tasks sluice carries, as the gateway holds them: the key that seals
//! their ids and the record of who owns which (`sluice_core::tasks` and
//! `sluice_core::tasks::record` decide; this only stores and seals).

use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use sluice_core::jsonrpc;
use sluice_core::method::notification;
use sluice_core::tasks::record::{Listed, StatusRoute, TaskRecord};
use sluice_core::tasks::{self, TaskIds, TaskRef};

use crate::bridge::now_ms;
use crate::client::ClientEvent;

/// Task ids and their owners.
pub(crate) struct Tasks {
    ids: TaskIds,
    record: Mutex<TaskRecord>,
}

// === impl Tasks ===

impl Tasks {
    pub(super) fn new(secret: [u8; 32]) -> Self {
        Tasks {
            ids: TaskIds::new(secret),
            record: Mutex::new(TaskRecord::default()),
        }
    }

    fn record(&self) -> MutexGuard<'_, TaskRecord> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The task a client's id names, if sluice sealed it for `principal`.
    pub(crate) fn open(
        &self,
        token: Option<&Value>,
        principal: &str,
    ) -> Result<TaskRef, sluice_core::policy::Denied> {
        self.ids.open(token, principal)
    }

    /// The id a client sees for `task`.
    pub(crate) fn seal(&self, task: &TaskRef) -> String {
        self.ids.seal(task)
    }

    /// Seals every task id in an upstream's answer about `task` (the
    /// upstream's id becomes the client's).
    pub(crate) fn seal_ids(&self, answer: &mut Value, task: &TaskRef) {
        tasks::reseal(answer, &mut |id| {
            self.ids.seal(&TaskRef {
                id: id.to_owned(),
                ..task.clone()
            })
        });
    }

    /// Records the task `created` started by the legacy session `session`;
    /// the event for a status of it the upstream sent before `created`
    /// (held since; already redacted), if any.
    pub(super) fn created(
        &self,
        session: u64,
        task: TaskRef,
        created: &Value,
    ) -> Option<ClientEvent> {
        let recorded = self.record().record(session, task, created, now_ms());
        if !recorded.evicted.is_empty() {
            tracing::debug!(
                evicted = recorded.evicted.len(),
                "task record full: the oldest tasks are no longer listed"
            );
        }
        let (route, params) = recorded.early?;
        Some(self.status_event(route, params))
    }

    /// The live tasks of `session` opened by `principal`, oldest first.
    pub(crate) fn listed(&self, session: u64, principal: &str) -> Vec<Listed> {
        self.record().listed(session, principal, now_ms())
    }

    /// What an answer about `task` said (a terminal status ends its entry).
    pub(crate) fn observed(&self, task: &TaskRef, answer: &Value) {
        self.record().observed(task, answer);
    }

    /// `task` is gone upstream.
    pub(crate) fn forget(&self, task: &TaskRef) {
        self.record().forget(task);
    }

    /// The legacy session `session` ended.
    pub(crate) fn end_session(&self, session: u64) {
        self.record().end_session(session);
    }

    /// A status notification from `upstream` (`params` already redacted),
    /// as the event for its owner's session with the id sealed for it;
    /// `None` when no session owns the task now (it is held a while for
    /// the answer that may create it: `sluice_core::tasks::record`).
    pub(super) fn status(&self, upstream: &str, params: Value) -> Option<ClientEvent> {
        let route = self.record().status(upstream, &params, now_ms())?;
        Some(self.status_event(route, params))
    }

    /// The upstreams of the statuses no session claimed since last asked.
    pub(super) fn take_unclaimed(&self) -> Vec<String> {
        self.record().take_unclaimed()
    }

    fn status_event(&self, route: StatusRoute, mut params: Value) -> ClientEvent {
        self.seal_ids(&mut params, &route.task);
        ClientEvent::TaskStatus {
            session: route.session,
            message: jsonrpc::notification(notification::TASK_STATUS, params),
        }
    }
}
