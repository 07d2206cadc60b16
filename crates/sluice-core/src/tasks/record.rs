//! Who owns which task: the bounded record behind `tasks/list` and the
//! routing of `notifications/tasks/status` (MCP 2025-11-25, Basic,
//! Utilities, Tasks).
//!
//! An upstream's connection is shared by every client of sluice, so its
//! `tasks/list` would list everyone's tasks, and its status notifications
//! name nobody. sluice records each task a legacy session created
//! (the upstream and its id -> the session, its principal and the sealed
//! id's [`TaskRef`]), and decides from it:
//!
//! - which tasks a session's `tasks/list` shows ([`TaskRecord::listed`]):
//!   its own only, oldest first, a stable order that pages resume in;
//! - which session a status notification goes to ([`TaskRecord::status`]):
//!   the owner, or nobody when the task is not recorded. A status can
//!   come before the answer that creates its task (server-everything
//!   announces its first stage so): the latest of each unknown task is
//!   held [`EARLY_HOLD_MS`] ([`EARLY_CAP`] at most), and goes to the owner
//!   once the answer records the task ([`TaskRecord::record`]).
//!
//! The record is bounded: [`SESSION_CAP`] tasks a session and
//! [`TOTAL_CAP`] in all (the oldest goes first), and an entry goes when
//! its task reaches a terminal status or outlives its TTL (the upstream's
//! `ttl`, at most [`MAX_TTL_MS`]). A task that left the record still
//! answers `tasks/get` and `tasks/result` by its sealed id.

use std::collections::BTreeMap;

use serde_json::Value;

use super::TaskRef;
use crate::jsonrpc::INVALID_PARAMS;
use crate::method::TaskMethod;
use crate::policy::{Denied, UpstreamFailure};

/// The most tasks one session has in the record.
pub const SESSION_CAP: usize = 32;
/// The most tasks in the record, all sessions together.
pub const TOTAL_CAP: usize = 4_096;
/// The longest a task stays recorded (one day): a task whose TTL is
/// unlimited (`null`), absent or longer is kept this long.
pub const MAX_TTL_MS: u64 = 86_400_000;

/// How long a status for a task not (yet) recorded is held, waiting for
/// the answer that creates it.
pub const EARLY_HOLD_MS: u64 = 5_000;
/// The most such statuses held at once (the oldest goes first).
pub const EARLY_CAP: usize = 256;

/// The statuses after which a task changes no more.
pub const TERMINAL: [&str; 3] = ["completed", "failed", "cancelled"];

/// Whether `status` is terminal.
pub fn is_terminal(status: &str) -> bool {
    TERMINAL.contains(&status)
}

/// The tasks each legacy session created.
#[derive(Debug, Default)]
pub struct TaskRecord {
    /// By the upstream and its own task id (what a notification names).
    entries: BTreeMap<(String, String), Entry>,
    /// The next entry's place in creation order.
    next: u64,
    /// Statuses of tasks not recorded yet, by the same key: the latest of
    /// each, and when it came.
    early: BTreeMap<(String, String), (Value, u64)>,
    /// The upstreams of statuses that no session claimed (held too long,
    /// pushed out, or naming no task), for the caller to count.
    unclaimed: Vec<String>,
}

/// What recording a task did.
#[derive(Debug, Default, PartialEq)]
pub struct Recorded {
    /// The tasks that made room, if any were still live.
    pub evicted: Vec<TaskRef>,
    /// A status the upstream sent before the answer that created the
    /// task: its params and where they go now.
    pub early: Option<(StatusRoute, Value)>,
}

#[derive(Debug, Clone)]
struct Entry {
    task: TaskRef,
    session: u64,
    seq: u64,
    expires_at_ms: u64,
}

/// One row of a session's list: its key (stable, for cursors) and the
/// task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The row's key in the list's order.
    pub key: String,
    /// The task.
    pub task: TaskRef,
}

/// Where a status notification goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusRoute {
    /// The owning session.
    pub session: u64,
    /// The task, to seal its id for the owner.
    pub task: TaskRef,
}

/// How long the task an upstream's answer created lives, in ms: its
/// `task.ttl` (2025-11-25) or `ttlMs` (2026-07-28), at most
/// [`MAX_TTL_MS`].
pub fn ttl_ms(created: &Value) -> u64 {
    created
        .pointer("/task/ttl")
        .or_else(|| created.get("ttlMs"))
        .and_then(Value::as_u64)
        .map_or(MAX_TTL_MS, |ttl| ttl.min(MAX_TTL_MS))
}

/// The status an answer about a task gives (`task.status` when created,
/// `status` otherwise).
pub fn status_of(answer: &Value) -> Option<&str> {
    answer
        .pointer("/task/status")
        .or_else(|| answer.get("status"))
        .and_then(Value::as_str)
}

/// Whether an upstream's refusal of a `tasks/get` says the task is gone:
/// `-32602`, an invalid or unknown `taskId` (MCP 2025-11-25, Tasks, Error
/// Handling). Any other failure (down, slow) says nothing of the task.
pub fn is_gone(denied: &Denied) -> bool {
    matches!(denied, Denied::Upstream(UpstreamFailure::Rpc(e)) if e.code == INVALID_PARAMS)
}

// === impl TaskRecord ===

impl TaskRecord {
    /// Records the task `created` (an upstream's answer) started by
    /// `session` at `now_ms`, unless it is already over. Makes room first:
    /// expired entries go, then the session's oldest at
    /// [`SESSION_CAP`], then the oldest of all at [`TOTAL_CAP`]. A status
    /// of the task held from before goes to `session` now.
    pub fn record(
        &mut self,
        session: u64,
        task: TaskRef,
        created: &Value,
        now_ms: u64,
    ) -> Recorded {
        self.expire(now_ms);
        let key = (task.upstream.clone(), task.id.clone());
        let early = self.early.remove(&key).map(|(params, _)| params);
        if status_of(created).is_some_and(is_terminal) {
            return Recorded::default();
        }
        let mut evicted = Vec::new();
        if self.of_session(session).count() >= SESSION_CAP
            && let Some(key) = self.oldest(|e| e.session == session)
        {
            evicted.extend(self.entries.remove(&key).map(|e| e.task));
        }
        if self.entries.len() >= TOTAL_CAP
            && let Some(key) = self.oldest(|_| true)
        {
            evicted.extend(self.entries.remove(&key).map(|e| e.task));
        }
        let entry = Entry {
            expires_at_ms: now_ms.saturating_add(ttl_ms(created)),
            seq: self.next,
            session,
            task,
        };
        self.next += 1;
        let route = StatusRoute {
            session,
            task: entry.task.clone(),
        };
        self.entries.insert(key.clone(), entry);
        let early = early.map(|params| {
            if status_of(&params).is_some_and(is_terminal) {
                self.entries.remove(&key);
            }
            (route, params)
        });
        Recorded { evicted, early }
    }

    /// Where a status notification from `upstream` goes (`params`: the
    /// notification's, a task naming the upstream's id): to the owning
    /// session, or nowhere yet when the task is not recorded: then it is
    /// held a while for the answer that may create it (a task never
    /// created through sluice, evicted, expired or over is never
    /// claimed). A terminal status still goes to the owner, and ends the
    /// entry.
    pub fn status(&mut self, upstream: &str, params: &Value, now_ms: u64) -> Option<StatusRoute> {
        self.expire(now_ms);
        let Some(id) = params.get(TaskMethod::ID_FIELD).and_then(Value::as_str) else {
            self.unclaimed.push(upstream.to_owned());
            return None;
        };
        let key = (upstream.to_owned(), id.to_owned());
        let Some(entry) = self.entries.get(&key) else {
            self.hold(key, params.clone(), now_ms);
            return None;
        };
        let route = StatusRoute {
            session: entry.session,
            task: entry.task.clone(),
        };
        if status_of(params).is_some_and(is_terminal) {
            self.entries.remove(&key);
        }
        Some(route)
    }

    /// What an answer about `task` said of it (a `tasks/get`, a
    /// `tasks/cancel`): a terminal status ends its entry.
    pub fn observed(&mut self, task: &TaskRef, answer: &Value) {
        if status_of(answer).is_some_and(is_terminal) {
            self.entries
                .remove(&(task.upstream.clone(), task.id.clone()));
        }
    }

    /// Forgets `task` (its upstream no longer knows it).
    pub fn forget(&mut self, task: &TaskRef) {
        self.entries
            .remove(&(task.upstream.clone(), task.id.clone()));
    }

    /// Forgets every task of `session` (it ended).
    pub fn end_session(&mut self, session: u64) {
        self.entries.retain(|_, e| e.session != session);
    }

    /// The live tasks of `session` opened by `principal`, oldest first:
    /// nobody else's, whatever shares the upstream.
    pub fn listed(&mut self, session: u64, principal: &str, now_ms: u64) -> Vec<Listed> {
        self.expire(now_ms);
        let mut rows: Vec<&Entry> = self
            .of_session(session)
            .filter(|e| e.task.principal == principal)
            .collect();
        rows.sort_by_key(|e| e.seq);
        rows.into_iter()
            .map(|e| Listed {
                key: format!("{:020}", e.seq),
                task: e.task.clone(),
            })
            .collect()
    }

    /// How many tasks are recorded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no task is recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The upstreams of the statuses no session claimed since last asked.
    pub fn take_unclaimed(&mut self) -> Vec<String> {
        std::mem::take(&mut self.unclaimed)
    }

    fn hold(&mut self, key: (String, String), params: Value, now_ms: u64) {
        if self.early.len() >= EARLY_CAP
            && !self.early.contains_key(&key)
            && let Some(oldest) = self
                .early
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
        {
            self.early.remove(&oldest);
            self.unclaimed.push(oldest.0);
        }
        // The latest state is what the owner needs; an older one is moot.
        self.early.insert(key, (params, now_ms));
    }

    fn expire(&mut self, now_ms: u64) {
        self.entries.retain(|_, e| now_ms < e.expires_at_ms);
        let unclaimed = &mut self.unclaimed;
        self.early.retain(|(upstream, _), (_, at)| {
            let held = now_ms.saturating_sub(*at) < EARLY_HOLD_MS;
            if !held {
                unclaimed.push(upstream.clone());
            }
            held
        });
    }

    fn of_session(&self, session: u64) -> impl Iterator<Item = &Entry> {
        self.entries.values().filter(move |e| e.session == session)
    }

    fn oldest(&self, which: impl Fn(&Entry) -> bool) -> Option<(String, String)> {
        self.entries
            .iter()
            .filter(|(_, e)| which(e))
            .min_by_key(|(_, e)| e.seq)
            .map(|(k, _)| k.clone())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn task(upstream: &str, id: &str, principal: &str) -> TaskRef {
        TaskRef {
            upstream: upstream.into(),
            id: id.into(),
            tool: "simulate-research-query".into(),
            exposed: format!("{upstream}__simulate-research-query"),
            principal: principal.into(),
        }
    }

    fn created(ttl: Value) -> Value {
        json!({"task": {"taskId": "ignored", "status": "working", "ttl": ttl}})
    }

    /// Records a task of a minute's TTL.
    fn add(record: &mut TaskRecord, session: u64, task: TaskRef, now_ms: u64) -> Vec<TaskRef> {
        record
            .record(session, task, &created(json!(60_000)), now_ms)
            .evicted
    }

    fn ids(rows: &[Listed]) -> Vec<&str> {
        rows.iter().map(|r| r.task.id.as_str()).collect()
    }

    #[test]
    fn a_session_lists_its_own_tasks_only_oldest_first() {
        let mut record = TaskRecord::default();
        // Two sessions of one principal on one upstream, and another
        // principal's session: the upstream ids could even collide
        // across upstreams.
        add(&mut record, 1, task("everything", "a1", "anon"), 0);
        add(&mut record, 2, task("everything", "b1", "anon"), 0);
        add(&mut record, 1, task("other", "a2", "anon"), 1);
        add(&mut record, 3, task("everything", "c1", "bob"), 1);
        add(&mut record, 1, task("everything", "b1x", "anon"), 2);
        let one = record.listed(1, "anon", 3);
        assert_eq!(ids(&one), ["a1", "a2", "b1x"]);
        assert!(one.windows(2).all(|w| w[0].key < w[1].key), "{one:?}");
        assert_eq!(ids(&record.listed(2, "anon", 3)), ["b1"]);
        assert_eq!(ids(&record.listed(3, "bob", 3)), ["c1"]);
        // A session's tasks are its principal's: another principal on the
        // same session number sees none.
        assert!(record.listed(3, "anon", 3).is_empty());
        assert!(record.listed(9, "anon", 3).is_empty());
        assert_eq!(record.len(), 5);
        record.end_session(1);
        assert_eq!(record.len(), 2);
        assert!(record.listed(1, "anon", 3).is_empty());
    }

    #[test]
    fn a_status_goes_to_its_owner_and_a_terminal_one_ends_the_entry() {
        let mut record = TaskRecord::default();
        add(&mut record, 1, task("everything", "t1", "anon"), 0);
        add(&mut record, 2, task("everything", "t2", "anon"), 0);
        let working = json!({"taskId": "t2", "status": "working", "statusMessage": "Gathering"});
        assert_eq!(
            record.status("everything", &working, 10),
            Some(StatusRoute {
                session: 2,
                task: task("everything", "t2", "anon")
            })
        );
        // The same id on another upstream is another task: unknown.
        assert_eq!(record.status("other", &working, 10), None);
        assert_eq!(
            record.status(
                "everything",
                &json!({"taskId": "t9", "status": "working"}),
                10
            ),
            None
        );
        assert_eq!(
            record.status("everything", &json!({"status": "working"}), 10),
            None
        );
        let done = json!({"taskId": "t2", "status": "completed"});
        assert_eq!(
            record.status("everything", &done, 11).map(|r| r.session),
            Some(2)
        );
        assert_eq!(record.status("everything", &done, 12), None);
        assert!(record.listed(2, "anon", 12).is_empty());
        // A tasks/get that says it is over ends it too; a working one does not.
        let t1 = task("everything", "t1", "anon");
        record.observed(&t1, &json!({"taskId": "t1", "status": "input_required"}));
        assert_eq!(record.len(), 1);
        record.observed(&t1, &json!({"taskId": "t1", "status": "cancelled"}));
        assert!(record.is_empty());
        // An answer that created a task already over records nothing.
        let over = json!({"task": {"taskId": "t3", "status": "failed"}});
        record.record(1, task("everything", "t3", "anon"), &over, 20);
        assert!(record.is_empty());
    }

    #[test]
    fn entries_expire_with_their_ttl_capped_at_a_day() {
        assert_eq!(ttl_ms(&created(json!(60_000))), 60_000);
        assert_eq!(ttl_ms(&created(Value::Null)), MAX_TTL_MS);
        assert_eq!(ttl_ms(&created(json!(u64::MAX))), MAX_TTL_MS);
        assert_eq!(
            ttl_ms(&json!({"resultType": "task", "ttlMs": 5_000})),
            5_000
        );
        assert_eq!(ttl_ms(&json!({"task": {}})), MAX_TTL_MS);
        let mut record = TaskRecord::default();
        record.record(1, task("u", "short", "anon"), &created(json!(1_000)), 100);
        record.record(1, task("u", "long", "anon"), &created(Value::Null), 100);
        assert_eq!(ids(&record.listed(1, "anon", 1_099)), ["short", "long"]);
        assert_eq!(ids(&record.listed(1, "anon", 1_100)), ["long"]);
        let status = json!({"taskId": "short", "status": "working"});
        assert_eq!(record.status("u", &status, 1_100), None);
        assert!(record.listed(1, "anon", 100 + MAX_TTL_MS).is_empty());
    }

    #[test]
    fn the_record_is_bounded_per_session_and_in_all() {
        let mut record = TaskRecord::default();
        for i in 0..SESSION_CAP {
            let evicted = add(&mut record, 1, task("u", &format!("t{i}"), "anon"), 0);
            assert!(evicted.is_empty());
        }
        let evicted = add(&mut record, 1, task("u", "newest", "anon"), 0);
        assert_eq!(evicted, [task("u", "t0", "anon")]);
        let rows = record.listed(1, "anon", 0);
        assert_eq!(rows.len(), SESSION_CAP);
        assert_eq!(rows[0].task.id, "t1");
        assert_eq!(rows[SESSION_CAP - 1].task.id, "newest");
        // Another session is not evicted by this one's tasks.
        add(&mut record, 2, task("u", "other", "anon"), 0);
        assert_eq!(ids(&record.listed(2, "anon", 0)), ["other"]);

        let mut full = TaskRecord::default();
        for i in 0..TOTAL_CAP {
            let session = u64::try_from(i / SESSION_CAP).unwrap_or_default();
            add(&mut full, session, task("u", &format!("t{i}"), "anon"), 0);
        }
        assert_eq!(full.len(), TOTAL_CAP);
        let evicted = add(&mut full, 9_999, task("u", "last", "anon"), 0);
        assert_eq!(evicted, [task("u", "t0", "anon")]);
        assert_eq!(full.len(), TOTAL_CAP);
    }

    #[test]
    fn a_status_before_the_creating_answer_is_held_for_the_owner() {
        let mut record = TaskRecord::default();
        let first = json!({"taskId": "t1", "status": "working", "statusMessage": "stage 1"});
        let second = json!({"taskId": "t1", "status": "working", "statusMessage": "stage 2"});
        // server-everything: the first stages before the answer that creates the task.
        assert_eq!(record.status("everything", &first, 0), None);
        assert_eq!(record.status("everything", &second, 10), None);
        assert!(record.take_unclaimed().is_empty(), "held, not dropped");
        let recorded = record.record(
            4,
            task("everything", "t1", "anon"),
            &created(json!(60_000)),
            20,
        );
        let route = StatusRoute {
            session: 4,
            task: task("everything", "t1", "anon"),
        };
        assert_eq!(
            recorded.early,
            Some((route, second)),
            "the latest, to the owner"
        );
        assert_eq!(record.len(), 1);
        // An early terminal status ends the entry it is delivered for.
        let done = json!({"taskId": "t2", "status": "completed"});
        assert_eq!(record.status("everything", &done, 30), None);
        let t2 = task("everything", "t2", "anon");
        let recorded = record.record(4, t2, &created(json!(60_000)), 40);
        assert!(recorded.early.is_some());
        assert_eq!(record.len(), 1);
        // Held too long: unclaimed, and not delivered to a later task of that id.
        let stray = json!({"taskId": "t3", "status": "working"});
        assert_eq!(record.status("other", &stray, 100), None);
        let later = 100 + EARLY_HOLD_MS;
        let t3 = task("other", "t3", "anon");
        assert_eq!(
            record.record(4, t3, &created(json!(60_000)), later).early,
            None
        );
        assert_eq!(record.take_unclaimed(), ["other"]);
        // A status naming no task is unclaimed at once.
        assert_eq!(
            record.status("u", &json!({"status": "working"}), later),
            None
        );
        assert_eq!(record.take_unclaimed(), ["u"]);
    }

    #[test]
    fn at_most_early_cap_statuses_are_held() {
        let mut record = TaskRecord::default();
        for i in 0..=EARLY_CAP as u64 {
            let status = json!({"taskId": format!("t{i}"), "status": "working"});
            assert_eq!(record.status("u", &status, i), None);
        }
        assert_eq!(record.take_unclaimed(), ["u"], "the oldest went");
        let t0 = record.record(1, task("u", "t0", "anon"), &created(json!(60_000)), 300);
        assert_eq!(t0.early, None);
        let newest = format!("t{EARLY_CAP}");
        let kept = record.record(1, task("u", &newest, "anon"), &created(json!(60_000)), 300);
        assert!(kept.early.is_some());
    }

    #[test]
    fn only_an_unknown_task_id_says_a_task_is_gone() {
        let unknown = crate::jsonrpc::RpcError::invalid_params("Failed to retrieve task");
        assert!(is_gone(&Denied::Upstream(UpstreamFailure::Rpc(unknown))));
        let internal = crate::jsonrpc::RpcError {
            code: crate::jsonrpc::INTERNAL_ERROR,
            message: "boom".into(),
            data: None,
        };
        assert!(!is_gone(&Denied::Upstream(UpstreamFailure::Rpc(internal))));
        let lost = UpstreamFailure::Lost {
            upstream: "everything".into(),
        };
        assert!(!is_gone(&Denied::Upstream(lost)));
        // sluice's own -32602 (a bad sealed id) is not the upstream's word.
        assert!(!is_gone(&Denied::invalid_params("unknown taskId")));
    }

    #[test]
    fn terminal_statuses() {
        for status in TERMINAL {
            assert!(is_terminal(status));
        }
        assert!(!is_terminal("working") && !is_terminal("input_required"));
        assert_eq!(status_of(&created(json!(1))), Some("working"));
        assert_eq!(
            status_of(&json!({"status": "completed"})),
            Some("completed")
        );
        assert_eq!(status_of(&json!({"content": []})), None);
    }
}
