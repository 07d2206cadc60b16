//! Task status on a 2026-07-28 `subscriptions/listen` stream (the tasks
//! extension, SEP-2663, "Task Status Notifications"): the client names
//! the tasks it wants to hear of in `notifications.taskIds`, the server
//! acknowledges the ones it agrees to, and each `notifications/tasks` on
//! the stream carries a task's whole state, as `tasks/get` would answer.
//!
//! Through sluice the ids are sealed ([`super::TaskIds`]) and the tasks
//! run on upstreams that each know only their own ids. A [`TaskListen`]
//! is one client stream's part in it, decided here without I/O:
//!
//! - which of the ids it asked for sluice honours (those that open for
//!   the caller and whose upstream runs 2026-07-28 tasks; the rest are
//!   left out of the acknowledgement, as the extension allows);
//! - which `subscriptions/listen` filter each upstream gets
//!   ([`TaskListen::upstream_filters`]), with the upstream's ids;
//! - which upstream `notifications/tasks` the stream takes
//!   ([`TaskListen::accept`]): a task it asked for, once per state (two
//!   client streams about one task each open their own upstream stream,
//!   and the upstream tells each of them).

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use super::{EXTENSION, TaskRef};
use crate::method::TaskMethod;
use crate::policy::Denied;
use crate::protocol::{self, Era};

/// The filter key that names tasks (SEP-2663).
pub const FILTER_KEY: &str = "taskIds";

/// The most task ids one listen stream may name: each costs an entry in
/// the stream's state and a place in an upstream's filter.
pub const MAX_TASK_IDS: usize = 64;

/// The task ids a listen request's `notifications` filter names, in the
/// order given, duplicates removed. A filter that names tasks must come
/// from a client that declared the extension on the request (`-32021`
/// otherwise, as the extension requires); a malformed or oversized list is
/// `-32602`.
pub fn requested_ids<'a>(
    filter: &'a Value,
    client_capabilities: &Value,
) -> Result<Vec<&'a str>, Denied> {
    let Some(ids) = filter.get(FILTER_KEY) else {
        return Ok(Vec::new());
    };
    let malformed = || {
        Denied::invalid_params(format!(
            "notifications.{FILTER_KEY} must be an array of at most {MAX_TASK_IDS} task id strings"
        ))
    };
    let ids = ids.as_array().ok_or_else(malformed)?;
    if ids.len() > MAX_TASK_IDS {
        return Err(malformed());
    }
    let mut seen = Vec::with_capacity(ids.len());
    for id in ids {
        let id = id.as_str().ok_or_else(malformed)?;
        if !seen.contains(&id) {
            seen.push(id);
        }
    }
    if !seen.is_empty() {
        super::check_declared(Era::Modern, client_capabilities)?;
    }
    Ok(seen)
}

/// One client listen stream's tasks.
#[derive(Debug, Default)]
pub struct TaskListen {
    /// By upstream and the upstream's task id: the client's id and the
    /// task it opened to.
    wanted: HashMap<(String, String), (String, TaskRef)>,
    /// By the same key: the last state passed on (status and
    /// `lastUpdatedAt`), so that a state told twice goes out once.
    last: HashMap<(String, String), (String, String)>,
}

// === impl TaskListen ===

impl TaskListen {
    /// A stream about the tasks the client's ids opened to (`client id`,
    /// task), keeping those `runs_tasks` says their upstream serves.
    pub fn new(
        opened: impl IntoIterator<Item = (String, TaskRef)>,
        runs_tasks: impl Fn(&str) -> bool,
    ) -> Self {
        let wanted = opened
            .into_iter()
            .filter(|(_, task)| runs_tasks(&task.upstream))
            .map(|(client, task)| ((task.upstream.clone(), task.id.clone()), (client, task)))
            .collect();
        TaskListen {
            wanted,
            last: HashMap::new(),
        }
    }

    /// Whether the stream is about any task.
    pub fn is_empty(&self) -> bool {
        self.wanted.is_empty()
    }

    /// The client's ids sluice honours, for the acknowledgement, sorted.
    pub fn honoured(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .wanted
            .values()
            .map(|(client, _)| client.clone())
            .collect();
        ids.sort();
        ids
    }

    /// The `subscriptions/listen` params each upstream gets: its own ids
    /// of the tasks asked for, sorted.
    pub fn upstream_filters(&self) -> BTreeMap<String, Value> {
        let mut ids: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for (upstream, id) in self.wanted.keys() {
            ids.entry(upstream.clone()).or_default().push(id);
        }
        ids.into_iter()
            .map(|(upstream, mut ids)| {
                ids.sort_unstable();
                (upstream, json!({"notifications": {FILTER_KEY: ids}}))
            })
            .collect()
    }

    /// Whether `upstream`'s `notifications/tasks` (its params) goes on
    /// this stream: the task it names when the stream asked for it and
    /// this state was not passed on already.
    pub fn accept(&mut self, upstream: &str, params: &Value) -> Option<&TaskRef> {
        let id = params.get(TaskMethod::ID_FIELD).and_then(Value::as_str)?;
        let key = (upstream.to_owned(), id.to_owned());
        let (_, task) = self.wanted.get(&key)?;
        let field = |k: &str| params.get(k).and_then(Value::as_str).unwrap_or_default();
        let state = (
            field("status").to_owned(),
            field("lastUpdatedAt").to_owned(),
        );
        if self.last.get(&key) == Some(&state) {
            return None;
        }
        self.last.insert(key, state);
        Some(task)
    }
}

/// An upstream's `notifications/tasks` params as the client's stream
/// carries them: the upstream's subscription id (its stream with sluice)
/// replaced by the client's (`subscription`), other `_meta` kept. Task ids
/// are sealed by the caller ([`super::reseal`]).
pub fn for_stream(mut params: Value, subscription: &Value) -> Value {
    if let Some(meta) = crate::jsonrpc::meta_mut(&mut params) {
        meta.insert(protocol::META_SUBSCRIPTION_ID.into(), subscription.clone());
    }
    params
}

/// The capabilities sluice declares on its own listen request to an
/// upstream about tasks: the extension, which the upstream requires of a
/// filter that names tasks.
pub fn upstream_capabilities() -> Value {
    json!({"extensions": {EXTENSION: {}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(upstream: &str, id: &str) -> TaskRef {
        TaskRef {
            upstream: upstream.into(),
            id: id.into(),
            tool: "slow_compute".into(),
            exposed: format!("{upstream}__slow_compute"),
            principal: "alice".into(),
        }
    }

    fn declared() -> Value {
        json!({"extensions": {EXTENSION: {}}})
    }

    #[test]
    fn a_filter_names_tasks_only_with_the_extension_and_within_bounds() {
        let filter = json!({"toolsListChanged": true, FILTER_KEY: ["a", "b", "a"]});
        assert_eq!(requested_ids(&filter, &declared()), Ok(vec!["a", "b"]));
        assert_eq!(
            requested_ids(&filter, &json!({})),
            Err(Denied::MissingExtension(EXTENSION))
        );
        // No task named: nothing to declare.
        assert_eq!(
            requested_ids(&json!({"toolsListChanged": true}), &json!({})),
            Ok(vec![])
        );
        assert_eq!(
            requested_ids(&json!({FILTER_KEY: []}), &json!({})),
            Ok(vec![])
        );
        let too_many: Vec<String> = (0..=MAX_TASK_IDS).map(|i| i.to_string()).collect();
        for bad in [json!("a"), json!([1]), json!([null]), json!(too_many)] {
            let filter = json!({FILTER_KEY: bad});
            let err = requested_ids(&filter, &declared());
            assert_eq!(
                err.map_err(|e| e.to_rpc().code),
                Err(crate::jsonrpc::INVALID_PARAMS),
                "{bad}"
            );
        }
        let at_cap: Vec<String> = (0..MAX_TASK_IDS).map(|i| i.to_string()).collect();
        let filter = json!({FILTER_KEY: at_cap});
        assert_eq!(
            requested_ids(&filter, &declared()).map(|v| v.len()),
            Ok(MAX_TASK_IDS)
        );
    }

    #[test]
    fn each_upstream_is_asked_for_its_own_ids_and_a_legacy_one_for_none() {
        let listen = TaskListen::new(
            [
                ("sealed-2".to_owned(), task("b", "t2")),
                ("sealed-1".to_owned(), task("a", "t1")),
                ("sealed-3".to_owned(), task("a", "t0")),
                ("sealed-4".to_owned(), task("legacy", "t9")),
            ],
            |upstream| upstream != "legacy",
        );
        assert_eq!(listen.honoured(), ["sealed-1", "sealed-2", "sealed-3"]);
        let filters = listen.upstream_filters();
        assert_eq!(filters.len(), 2);
        assert_eq!(
            filters["a"],
            json!({"notifications": {FILTER_KEY: ["t0", "t1"]}})
        );
        assert_eq!(filters["b"], json!({"notifications": {FILTER_KEY: ["t2"]}}));
        assert!(TaskListen::new([("x".to_owned(), task("legacy", "t"))], |_| false).is_empty());
    }

    #[test]
    fn a_stream_takes_its_own_tasks_once_per_state() {
        let mut listen = TaskListen::new([("sealed-1".to_owned(), task("a", "t1"))], |_| true);
        let working = json!({"taskId": "t1", "status": "working", "lastUpdatedAt": "T1"});
        assert_eq!(listen.accept("a", &working), Some(&task("a", "t1")));
        // The same state again (told on another upstream stream): once.
        assert_eq!(listen.accept("a", &working), None);
        let done = json!({"taskId": "t1", "status": "completed", "lastUpdatedAt": "T2",
            "result": {"content": []}});
        assert!(listen.accept("a", &done).is_some());
        // Another upstream's task of the same id, an unknown task, no id.
        assert_eq!(listen.accept("b", &working), None);
        assert_eq!(
            listen.accept("a", &json!({"taskId": "t7", "status": "working"})),
            None
        );
        assert_eq!(listen.accept("a", &json!({"status": "working"})), None);
    }

    #[test]
    fn the_client_stream_id_replaces_the_upstreams() {
        let params = json!({"taskId": "t1", "status": "working",
            "_meta": {protocol::META_SUBSCRIPTION_ID: 7, "trace": "x"}});
        let shaped = for_stream(params, &json!("listen-1"));
        assert_eq!(
            shaped["_meta"],
            json!({protocol::META_SUBSCRIPTION_ID: "listen-1", "trace": "x"})
        );
        let bare = for_stream(json!({"taskId": "t1"}), &json!(3));
        assert_eq!(bare["_meta"], json!({protocol::META_SUBSCRIPTION_ID: 3}));
    }
}
