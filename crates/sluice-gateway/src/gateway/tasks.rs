//! The tasks sluice carries, as the gateway holds them: the key that seals
//! their ids and the record of who owns which (`sluice_core::tasks` and
//! `sluice_core::tasks::record` decide; this only stores and seals).

use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use sluice_core::jsonrpc;
use sluice_core::method::notification;
use sluice_core::tasks::record::{Listed, TaskRecord};
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

    /// Records the task `created` started by the legacy session `session`.
    pub(crate) fn created(&self, session: u64, task: TaskRef, created: &Value) {
        let evicted = self.record().record(session, task, created, now_ms());
        if !evicted.is_empty() {
            tracing::debug!(
                evicted = evicted.len(),
                "task record full: the oldest tasks are no longer listed"
            );
        }
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
    /// `None` when no session owns the task.
    pub(super) fn status(&self, upstream: &str, mut params: Value) -> Option<ClientEvent> {
        let route = self.record().status(upstream, &params, now_ms())?;
        self.seal_ids(&mut params, &route.task);
        Some(ClientEvent::TaskStatus {
            session: route.session,
            message: jsonrpc::notification(notification::TASK_STATUS, params),
        })
    }
}
