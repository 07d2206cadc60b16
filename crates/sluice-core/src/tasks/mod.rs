//! Tasks: a `tools/call` the upstream runs in the background, which the
//! client follows by task id (MCP 2025-11-25, Basic, Utilities, Tasks;
//! in 2026-07-28 the extension `io.modelcontextprotocol/tasks`, SEP-2663).
//!
//! Task ids are the upstream's, unique only on its own connection, and
//! that connection is shared by every client of sluice. So a client never
//! sees one: sluice hands out a sealed id ([`TaskIds`], like list cursors)
//! naming the upstream, its task id, the tool (whose boundary its result
//! goes through) and the principal who started it. An id opens only for
//! that principal; anyone else's, a stale key's or a made-up one is
//! `-32602`, as an unknown task id is. Where task ids sit in results and
//! params is [`reseal`] and [`TaskMethod::ID_FIELD`].
//!
//! What crosses (the rules between eras):
//!
//! | client    | upstream  | what happens                                                    |
//! |-----------|-----------|-----------------------------------------------------------------|
//! | 2025-11-25 | 2025-11-25 with `tasks.requests.tools.call` | `params.task` passes; the task is followed with `tasks/get`, `tasks/result`, `tasks/cancel` |
//! | 2026-07-28 | 2026-07-28 with the extension | the client's per-request capabilities reach the upstream, which may answer `resultType: "task"`; followed with `tasks/get`, `tasks/update`, `tasks/cancel` |
//! | 2026-07-28 | legacy    | `params.task` is removed ([`strip_task_request`]): 2026 has no such param, and a legacy task's shape is not the extension's; the call runs as an ordinary one |
//! | legacy    | 2026-07-28 | the client's capabilities carry no extension, so the upstream runs the call as an ordinary one (or refuses a task-only tool with `-32021`) |
//! | any       | without tasks | `params.task` is removed; the call runs as an ordinary one |
//!
//! `tasks/list` (2025-11-25) and `notifications/tasks/status` are served
//! from sluice's own record of who started which task ([`record`]): a
//! session lists its own tasks only, and a status goes to the session that
//! owns the task, with the id sealed for it. 2026-07-28 has no
//! `tasks/list`; its `notifications/tasks` come on a `subscriptions/listen`
//! stream that names the tasks by id ([`listen`]): sluice opens one at each
//! upstream concerned, with the upstream's ids.

pub mod listen;
pub mod record;

use serde_json::{Map, Value, json};

pub use crate::method::TaskMethod;
use crate::policy::Denied;
use crate::protocol::Era;
use crate::seal::SealKey;
use crate::versions::{self, Feature};

/// The 2026-07-28 extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` key that names a message's task (2025-11-25).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A task as sluice knows it: inside the sealed id it hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRef {
    /// The upstream that runs it.
    pub upstream: String,
    /// The upstream's own task id.
    pub id: String,
    /// The tool, by the upstream's name for it.
    pub tool: String,
    /// The tool, by the name the client called (its boundary and scopes
    /// are those of the call).
    pub exposed: String,
    /// Who started it ([`crate::access::Principal::key`]).
    pub principal: String,
}

/// Seals and opens the task ids clients see.
pub struct TaskIds {
    key: SealKey,
}

// === impl TaskIds ===

impl TaskIds {
    /// Task ids sealed with a 32-byte secret.
    pub fn new(secret: [u8; 32]) -> Self {
        TaskIds {
            key: SealKey::new(secret, String::new(), "sluice task id v1"),
        }
    }

    /// The id a client sees for `task`.
    pub fn seal(&self, task: &TaskRef) -> String {
        self.key.seal(&json!({
            "u": task.upstream,
            "i": task.id,
            "t": task.tool,
            "e": task.exposed,
            "p": task.principal,
        }))
    }

    /// The task a client's id names, if it is one sluice sealed for
    /// `principal`.
    pub fn open(&self, token: Option<&Value>, principal: &str) -> Result<TaskRef, Denied> {
        let unknown = || Denied::invalid_params("unknown taskId");
        let token = token.and_then(Value::as_str).ok_or_else(|| {
            Denied::invalid_params(format!("params.{} must be a string", TaskMethod::ID_FIELD))
        })?;
        let payload = self.key.open(token).map_err(|_| unknown())?;
        let field = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_owned);
        let task = TaskRef {
            upstream: field("u").ok_or_else(unknown)?,
            id: field("i").ok_or_else(unknown)?,
            tool: field("t").ok_or_else(unknown)?,
            exposed: field("e").ok_or_else(unknown)?,
            principal: field("p").ok_or_else(unknown)?,
        };
        if task.principal != principal {
            return Err(unknown());
        }
        Ok(task)
    }
}

/// A 2026-07-28 request of the tasks surface must declare the extension
/// (SEP-2663; `-32021` otherwise). A legacy client declared its tasks at
/// `initialize`, and needs nothing per request.
pub fn check_declared(era: Era, client_capabilities: &Value) -> Result<(), Denied> {
    let declared = client_capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(|c| !c.is_null());
    if era == Era::Modern && !declared {
        return Err(Denied::MissingExtension(EXTENSION));
    }
    Ok(())
}

/// Replaces every task id in an upstream's answer with `seal(id)`: a
/// 2025-11-25 `CreateTaskResult` (`task.taskId`), a task (`taskId`, as
/// 2026-07-28's `CreateTaskResult` and every `tasks/get`), and the
/// related-task `_meta` of a result, at the top and inlined (`result`).
pub fn reseal(answer: &mut Value, seal: &mut impl FnMut(&str) -> String) {
    let Some(obj) = answer.as_object_mut() else {
        return;
    };
    reseal_field(obj, seal);
    if let Some(Value::Object(task)) = obj.get_mut("task") {
        reseal_field(task, seal);
    }
    if let Some(Value::Object(meta)) = obj.get_mut("_meta")
        && let Some(Value::Object(related)) = meta.get_mut(RELATED_TASK)
    {
        reseal_field(related, seal);
    }
    if let Some(inlined @ Value::Object(_)) = obj.get_mut("result") {
        reseal(inlined, seal);
    }
}

fn reseal_field(obj: &mut Map<String, Value>, seal: &mut impl FnMut(&str) -> String) {
    if let Some(Value::String(id)) = obj.get_mut(TaskMethod::ID_FIELD) {
        *id = seal(id);
    }
}

/// Whether an answer to `tools/call` created a task (then its id must be
/// sealed before the client sees it).
pub fn created_task(answer: &Value) -> bool {
    answer.get("resultType").and_then(Value::as_str) == Some("task")
        || answer.pointer("/task/taskId").is_some_and(Value::is_string)
}

/// The upstream's id of the task an answer to `tools/call` created
/// (`task.taskId` in 2025-11-25, `taskId` in 2026-07-28).
pub fn created_id(answer: &Value) -> Option<&str> {
    answer
        .pointer("/task/taskId")
        .or_else(|| answer.get(TaskMethod::ID_FIELD))
        .and_then(Value::as_str)
}

/// Whether an upstream runs tools as tasks for clients of its era: a
/// legacy one declares `tasks.requests.tools.call`, a modern one the
/// extension.
pub fn upstream_runs_tasks(era: Era, capabilities: &Value) -> bool {
    match era {
        Era::Legacy => capabilities
            .pointer("/tasks/requests/tools/call")
            .is_some_and(|c| !c.is_null()),
        Era::Modern => capabilities
            .get("extensions")
            .and_then(|e| e.get(EXTENSION))
            .is_some_and(|c| !c.is_null()),
    }
}

/// Whether a `tools/call` to an upstream of `upstream_era` keeps its
/// `params.task`: only from a legacy client to a legacy upstream that runs
/// tasks (see the table above).
pub fn keeps_task_request(client: Era, upstream_era: Era, upstream_runs_tasks: bool) -> bool {
    client == Era::Legacy && upstream_era == Era::Legacy && upstream_runs_tasks
}

/// Removes `params.task` from a `tools/call`'s params.
pub fn strip_task_request(params: &mut Value) {
    if let Some(obj) = params.as_object_mut() {
        obj.remove("task");
    }
}

/// What sluice declares of tasks to a client of `era` speaking `version`,
/// given the capabilities of the upstreams of that era that are
/// connected: the legacy `tasks` capability (`list`, served from sluice's
/// record; `cancel` only when every such upstream cancels), or the 2026
/// extension. `None` when no upstream runs
/// tasks, or the client's version has none (2025-06-18 and before).
pub fn served_capability<'a>(
    era: Era,
    version: &str,
    upstreams: impl IntoIterator<Item = &'a Value>,
) -> Option<Value> {
    if era == Era::Legacy && !versions::has(version, Feature::CoreTasks) {
        return None;
    }
    let running: Vec<&Value> = upstreams
        .into_iter()
        .filter(|caps| upstream_runs_tasks(era, caps))
        .collect();
    if running.is_empty() {
        return None;
    }
    Some(match era {
        Era::Modern => json!({}),
        Era::Legacy => {
            let cancels = running
                .iter()
                .all(|caps| caps.pointer("/tasks/cancel").is_some_and(|c| !c.is_null()));
            // `list` whatever the upstreams say: sluice lists from its record.
            let mut tasks = json!({"list": {}, "requests": {"tools": {"call": {}}}});
            if cancels {
                tasks["cancel"] = json!({});
            }
            tasks
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(principal: &str) -> TaskRef {
        TaskRef {
            upstream: "everything".into(),
            id: "786512e2-9e0d-44bd-8f29-789f320fe840".into(),
            tool: "simulate-research-query".into(),
            exposed: "everything__simulate-research-query".into(),
            principal: principal.into(),
        }
    }

    #[test]
    fn an_id_opens_for_its_principal_only_and_says_nothing() {
        let ids = TaskIds::new([3; 32]);
        let sealed = ids.seal(&task("alice"));
        for secret in ["everything", "786512e2", "simulate", "alice"] {
            assert!(!sealed.contains(secret), "{sealed}");
        }
        assert_eq!(ids.seal(&task("alice")), sealed, "one task, one id");
        assert_eq!(ids.open(Some(&json!(sealed)), "alice"), Ok(task("alice")));
        let unknown = Denied::invalid_params("unknown taskId");
        assert_eq!(ids.open(Some(&json!(sealed)), "bob"), Err(unknown.clone()));
        let other_key = TaskIds::new([4; 32]);
        assert_eq!(
            other_key.open(Some(&json!(sealed)), "alice"),
            Err(unknown.clone())
        );
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap_or_default();
        assert_eq!(
            ids.open(Some(&json!(tampered)), "alice"),
            Err(unknown.clone())
        );
        assert_eq!(ids.open(Some(&json!("786512e2")), "alice"), Err(unknown));
        assert_eq!(
            ids.open(Some(&json!(7)), "alice")
                .map_err(|e| e.to_rpc().code),
            Err(crate::jsonrpc::INVALID_PARAMS)
        );
        assert!(ids.open(None, "alice").is_err());
    }

    #[test]
    fn every_place_a_task_id_sits_is_resealed() {
        let mut seal = |id: &str| format!("sealed({id})");
        let mut legacy_created =
            json!({"task": {"taskId": "t1", "status": "working", "ttl": 60000}});
        reseal(&mut legacy_created, &mut seal);
        assert_eq!(legacy_created["task"]["taskId"], "sealed(t1)");
        let mut modern_created = json!({"resultType": "task", "taskId": "t2", "status": "working"});
        reseal(&mut modern_created, &mut seal);
        assert_eq!(modern_created["taskId"], "sealed(t2)");
        let mut legacy_result = json!({"content": [], "_meta": {RELATED_TASK: {"taskId": "t3"}}});
        reseal(&mut legacy_result, &mut seal);
        assert_eq!(legacy_result["_meta"][RELATED_TASK]["taskId"], "sealed(t3)");
        let mut modern_get = json!({"resultType": "complete", "taskId": "t4", "status": "completed",
            "result": {"content": [{"type": "text", "text": "taskId"}], "_meta": {RELATED_TASK: {"taskId": "t4"}}}});
        reseal(&mut modern_get, &mut seal);
        assert_eq!(modern_get["taskId"], "sealed(t4)");
        assert_eq!(
            modern_get["result"]["_meta"][RELATED_TASK]["taskId"],
            "sealed(t4)"
        );
        assert_eq!(modern_get["result"]["content"][0]["text"], "taskId");
        assert!(created_task(&legacy_created) && created_task(&modern_created));
        let legacy = json!({"task": {"taskId": "t1", "status": "working"}});
        assert_eq!(created_id(&legacy), Some("t1"));
        assert_eq!(
            created_id(&json!({"resultType": "task", "taskId": "t2"})),
            Some("t2")
        );
        assert_eq!(created_id(&json!({"content": []})), None);
        assert!(!created_task(
            &json!({"content": [], "resultType": "complete"})
        ));
    }

    #[test]
    fn what_crosses_between_eras() {
        let legacy_tasks =
            json!({"tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}});
        let legacy_no_cancel = json!({"tasks": {"requests": {"tools": {"call": {}}}}});
        let modern_tasks = json!({"extensions": {EXTENSION: {}}});
        let plain = json!({"tools": {}});
        assert!(upstream_runs_tasks(Era::Legacy, &legacy_tasks));
        assert!(!upstream_runs_tasks(Era::Modern, &legacy_tasks));
        assert!(upstream_runs_tasks(Era::Modern, &modern_tasks));
        assert!(!upstream_runs_tasks(Era::Legacy, &modern_tasks));
        // Never `list`: an upstream's `tasks.list` would list every client's
        // tasks; sluice serves tasks/list from its record whatever the upstream.
        let (v11, v06, v26) = ("2025-11-25", "2025-06-18", "2026-07-28");
        assert_eq!(
            served_capability(Era::Legacy, v11, [&legacy_tasks, &plain]),
            Some(json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}))
        );
        assert_eq!(
            served_capability(Era::Legacy, v11, [&legacy_tasks, &legacy_no_cancel]),
            Some(json!({"list": {}, "requests": {"tools": {"call": {}}}}))
        );
        // 2025-06-18 has no tasks at all.
        assert_eq!(served_capability(Era::Legacy, v06, [&legacy_tasks]), None);
        assert_eq!(
            served_capability(Era::Legacy, v11, [&plain, &modern_tasks]),
            None
        );
        assert_eq!(
            served_capability(Era::Modern, v26, [&modern_tasks]),
            Some(json!({}))
        );
        assert_eq!(served_capability(Era::Modern, v26, [&legacy_tasks]), None);
        for (client, upstream, runs, keeps) in [
            (Era::Legacy, Era::Legacy, true, true),
            (Era::Legacy, Era::Legacy, false, false),
            (Era::Modern, Era::Legacy, true, false),
            (Era::Legacy, Era::Modern, true, false),
            (Era::Modern, Era::Modern, true, false),
        ] {
            assert_eq!(
                keeps_task_request(client, upstream, runs),
                keeps,
                "{client:?} -> {upstream:?}"
            );
        }
        let mut params = json!({"name": "t", "task": {"ttl": 1000}});
        strip_task_request(&mut params);
        assert_eq!(params, json!({"name": "t"}));
    }

    #[test]
    fn a_modern_request_declares_the_extension() {
        let declared = json!({"extensions": {EXTENSION: {}}});
        assert_eq!(check_declared(Era::Modern, &declared), Ok(()));
        assert_eq!(
            check_declared(Era::Modern, &json!({"elicitation": {}})),
            Err(Denied::MissingExtension(EXTENSION))
        );
        assert_eq!(check_declared(Era::Legacy, &json!({})), Ok(()));
        let rpc = Denied::MissingExtension(EXTENSION).to_rpc();
        assert_eq!(rpc.code, crate::jsonrpc::MISSING_CLIENT_CAPABILITY);
        assert_eq!(
            rpc.data,
            Some(json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}))
        );
    }

    #[test]
    fn methods_by_era() {
        assert!(TaskMethod::Result.in_era(Era::Legacy) && !TaskMethod::Result.in_era(Era::Modern));
        assert!(TaskMethod::Update.in_era(Era::Modern) && !TaskMethod::Update.in_era(Era::Legacy));
        assert!(TaskMethod::List.in_era(Era::Legacy) && !TaskMethod::List.in_era(Era::Modern));
        assert_eq!(
            crate::method::Method::Task(TaskMethod::List).name_field(),
            None
        );
        for m in [TaskMethod::Get, TaskMethod::Cancel] {
            assert!(m.in_era(Era::Legacy) && m.in_era(Era::Modern));
        }
        assert!(TaskMethod::Get.carries_result() && !TaskMethod::Cancel.carries_result());
    }
}
