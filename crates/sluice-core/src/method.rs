//! The MCP methods sluice knows, parsed once from the wire, and what each
//! one is to sluice: which list it reads, which field names its target,
//! whether it reaches an upstream, whether its result may pause for the
//! client's input.
//!
//! Everything else is [`Method::Other`]: sluice does not serve it, and the
//! name the client sent is kept by the caller for the error message.

use crate::protocol::Era;

/// The four paginated MCP lists (ordered as sluice reads them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListKind {
    /// `tools/list`, entries keyed by `name`.
    Tools,
    /// `resources/list`, entries keyed by `uri`.
    Resources,
    /// `resources/templates/list`, entries keyed by `uriTemplate`.
    ResourceTemplates,
    /// `prompts/list`, entries keyed by `name`.
    Prompts,
}

/// A client-to-server request method, as sluice routes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `initialize` (2025-x only).
    Initialize,
    /// `ping`.
    Ping,
    /// `server/discover` (2026-07-28).
    Discover,
    /// `tools/call`.
    CallTool,
    /// `prompts/get`.
    GetPrompt,
    /// `resources/read`.
    ReadResource,
    /// `resources/subscribe` (2025-x only).
    Subscribe,
    /// `resources/unsubscribe` (2025-x only).
    Unsubscribe,
    /// `completion/complete`.
    Complete,
    /// `logging/setLevel` (2025-x only).
    SetLogLevel,
    /// `subscriptions/listen` (2026-07-28).
    Listen,
    /// One of the four lists.
    List(ListKind),
    /// A method of the tasks surface (see [`crate::tasks`]).
    Task(TaskMethod),
    /// A method sluice does not serve.
    Other,
}

/// A request an upstream sends to the client during a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerRequest {
    /// `sampling/createMessage`.
    CreateMessage,
    /// `elicitation/create`.
    Elicit,
    /// `roots/list`.
    ListRoots,
}

/// A method of the tasks surface (see [`crate::tasks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskMethod {
    /// `tasks/get`: the task's status (2026: and its result, when done).
    Get,
    /// `tasks/result`: the task's result (2025-11-25 only).
    Result,
    /// `tasks/cancel`.
    Cancel,
    /// `tasks/update`: answers for a task waiting on input (2026-07-28 only).
    Update,
    /// `tasks/list`: the caller's tasks (2025-11-25 only).
    List,
}

/// Notification methods sluice reads or writes.
pub mod notification {
    /// Progress of a request, by the caller's `progressToken`.
    pub const PROGRESS: &str = "notifications/progress";
    /// A log message.
    pub const MESSAGE: &str = "notifications/message";
    /// The client cancelled a request.
    pub const CANCELLED: &str = "notifications/cancelled";
    /// A subscribed resource changed.
    pub const RESOURCE_UPDATED: &str = "notifications/resources/updated";
    /// The acknowledgement of `subscriptions/listen` (2026-07-28).
    pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
    /// A task's status changed (2025-11-25).
    pub const TASK_STATUS: &str = "notifications/tasks/status";
    /// A task's status changed (2026-07-28, the tasks extension, on a
    /// `subscriptions/listen` stream that names the task).
    pub const TASKS: &str = "notifications/tasks";
}

// === impl ListKind ===

impl ListKind {
    /// All four, in the order sluice reads them.
    pub const ALL: [ListKind; 4] = [
        ListKind::Tools,
        ListKind::Resources,
        ListKind::ResourceTemplates,
        ListKind::Prompts,
    ];

    /// The JSON-RPC method.
    pub fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Resources => "resources/list",
            ListKind::ResourceTemplates => "resources/templates/list",
            ListKind::Prompts => "prompts/list",
        }
    }

    /// The result field holding the entries.
    pub fn field(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
            ListKind::Prompts => "prompts",
        }
    }

    /// The entry field that identifies an entry.
    pub fn key(self) -> &'static str {
        match self {
            ListKind::Tools | ListKind::Prompts => "name",
            ListKind::Resources => "uri",
            ListKind::ResourceTemplates => "uriTemplate",
        }
    }

    /// The server capability that offers this list.
    pub fn capability(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources | ListKind::ResourceTemplates => "resources",
            ListKind::Prompts => "prompts",
        }
    }

    /// What one entry is called in messages: `tool`, `resource`, ...
    pub fn noun(self) -> &'static str {
        match self {
            ListKind::Tools => "tool",
            ListKind::Resources => "resource",
            ListKind::ResourceTemplates => "resource template",
            ListKind::Prompts => "prompt",
        }
    }

    /// The notification that says this federated list changed.
    pub fn list_changed(self) -> &'static str {
        match self {
            ListKind::Tools => "notifications/tools/list_changed",
            ListKind::Resources | ListKind::ResourceTemplates => {
                "notifications/resources/list_changed"
            }
            ListKind::Prompts => "notifications/prompts/list_changed",
        }
    }
}

// === impl Method ===

impl Method {
    /// Every method sluice serves (not [`Method::Other`]).
    pub const SERVED: [Method; 20] = [
        Method::Initialize,
        Method::Ping,
        Method::Discover,
        Method::CallTool,
        Method::GetPrompt,
        Method::ReadResource,
        Method::Subscribe,
        Method::Unsubscribe,
        Method::Complete,
        Method::SetLogLevel,
        Method::Listen,
        Method::List(ListKind::Tools),
        Method::List(ListKind::Resources),
        Method::List(ListKind::ResourceTemplates),
        Method::List(ListKind::Prompts),
        Method::Task(TaskMethod::Get),
        Method::Task(TaskMethod::Result),
        Method::Task(TaskMethod::Cancel),
        Method::Task(TaskMethod::Update),
        Method::Task(TaskMethod::List),
    ];

    /// The method a wire name stands for.
    pub fn parse(name: &str) -> Method {
        Method::SERVED
            .into_iter()
            .find(|m| m.name() == Some(name))
            .unwrap_or(Method::Other)
    }

    /// The wire name (`None` for [`Method::Other`]).
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::Discover => "server/discover",
            Method::CallTool => "tools/call",
            Method::GetPrompt => "prompts/get",
            Method::ReadResource => "resources/read",
            Method::Subscribe => "resources/subscribe",
            Method::Unsubscribe => "resources/unsubscribe",
            Method::Complete => "completion/complete",
            Method::SetLogLevel => "logging/setLevel",
            Method::Listen => "subscriptions/listen",
            Method::List(kind) => kind.method(),
            Method::Task(method) => method.name(),
            Method::Other => return None,
        })
    }

    /// Methods 2026-07-28 removed: a modern request for one is `-32601`,
    /// even though sluice serves them to legacy clients.
    pub fn removed_in_modern(self) -> bool {
        matches!(
            self,
            Method::Initialize
                | Method::Ping
                | Method::SetLogLevel
                | Method::Subscribe
                | Method::Unsubscribe
        )
    }

    /// Whether every request of this method is a decision worth an audit
    /// row: it reaches an upstream, or is refused on the way.
    pub fn is_audited(self) -> bool {
        matches!(
            self,
            Method::CallTool
                | Method::Task(_)
                | Method::GetPrompt
                | Method::ReadResource
                | Method::Subscribe
                | Method::Unsubscribe
                | Method::Complete
        )
    }

    /// Whether this method's result may be `input_required` (an MRTR
    /// round), so that sluice may park a call of it for the client.
    pub fn is_bridgeable(self) -> bool {
        matches!(
            self,
            Method::CallTool | Method::GetPrompt | Method::ReadResource
        )
    }

    /// Whether sluice answers it from its own catalog (caching hints then
    /// describe sluice's catalog, not an upstream's answer).
    pub fn serves_catalog(self) -> bool {
        matches!(self, Method::List(_) | Method::Discover)
    }

    /// Whether the request waits for the upstreams' first catalog reads:
    /// everything but the liveness and discovery probes.
    pub fn waits_for_catalog(self) -> bool {
        !matches!(self, Method::Ping | Method::Discover)
    }

    /// The params field that names the request's target, which 2026-07-28
    /// HTTP mirrors in the `Mcp-Name` header.
    pub fn name_field(self) -> Option<&'static str> {
        match self {
            Method::CallTool | Method::GetPrompt => Some("name"),
            Method::ReadResource => Some("uri"),
            // SEP-2663, Streamable HTTP routing headers (`tasks/result` and
            // `tasks/list` are legacy only: no such header, and a 2026
            // request of either is answered as an unknown method).
            Method::Task(TaskMethod::Result | TaskMethod::List) => None,
            Method::Task(_) => Some(TaskMethod::ID_FIELD),
            _ => None,
        }
    }
}

// === impl TaskMethod ===

impl TaskMethod {
    /// All five.
    pub const ALL: [TaskMethod; 5] = [
        TaskMethod::Get,
        TaskMethod::Result,
        TaskMethod::Cancel,
        TaskMethod::Update,
        TaskMethod::List,
    ];

    /// The params field holding the task id (also what 2026-07-28 HTTP
    /// mirrors in `Mcp-Name`, SEP-2663).
    pub const ID_FIELD: &'static str = "taskId";

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            TaskMethod::Get => "tasks/get",
            TaskMethod::Result => "tasks/result",
            TaskMethod::Cancel => "tasks/cancel",
            TaskMethod::Update => "tasks/update",
            TaskMethod::List => "tasks/list",
        }
    }

    /// Whether a client of `era` may call it: `tasks/result` went away in
    /// 2026-07-28 (the result is inlined in `tasks/get`) and so did
    /// `tasks/list`; `tasks/update` came with it.
    pub fn in_era(self, era: Era) -> bool {
        match self {
            TaskMethod::Get | TaskMethod::Cancel => true,
            TaskMethod::Result | TaskMethod::List => era == Era::Legacy,
            TaskMethod::Update => era == Era::Modern,
        }
    }

    /// Whether its answer carries the tool's result, which then goes
    /// through the tool's boundary (read budget, redaction) as a call's
    /// answer does.
    pub fn carries_result(self) -> bool {
        matches!(self, TaskMethod::Get | TaskMethod::Result)
    }
}

// === impl ServerRequest ===

impl ServerRequest {
    /// All three.
    pub const ALL: [ServerRequest; 3] = [
        ServerRequest::CreateMessage,
        ServerRequest::Elicit,
        ServerRequest::ListRoots,
    ];

    /// The request a wire name stands for.
    pub fn parse(name: &str) -> Option<ServerRequest> {
        ServerRequest::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            ServerRequest::CreateMessage => "sampling/createMessage",
            ServerRequest::Elicit => "elicitation/create",
            ServerRequest::ListRoots => "roots/list",
        }
    }

    /// The client capability that must be declared for the client to be
    /// asked.
    pub fn capability(self) -> &'static str {
        match self {
            ServerRequest::CreateMessage => "sampling",
            ServerRequest::Elicit => "elicitation",
            ServerRequest::ListRoots => "roots",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_method_parses_back_from_its_name() {
        for method in Method::SERVED {
            let name = method.name().expect("served methods have names");
            assert_eq!(Method::parse(name), method, "{name}");
        }
        assert_eq!(Method::parse("tools/frobnicate"), Method::Other);
        assert_eq!(Method::parse(""), Method::Other);
        assert_eq!(Method::Other.name(), None);
    }

    #[test]
    fn the_properties_of_the_forwarded_methods() {
        let audited: Vec<_> = Method::SERVED
            .into_iter()
            .filter(|m| m.is_audited())
            .collect();
        assert_eq!(
            audited,
            [
                Method::CallTool,
                Method::GetPrompt,
                Method::ReadResource,
                Method::Subscribe,
                Method::Unsubscribe,
                Method::Complete,
                Method::Task(TaskMethod::Get),
                Method::Task(TaskMethod::Result),
                Method::Task(TaskMethod::Cancel),
                Method::Task(TaskMethod::Update),
                Method::Task(TaskMethod::List),
            ]
        );
        assert!(Method::CallTool.is_bridgeable() && !Method::Complete.is_bridgeable());
        assert!(Method::Ping.removed_in_modern() && !Method::Discover.removed_in_modern());
        assert!(!Method::Ping.waits_for_catalog() && Method::CallTool.waits_for_catalog());
        assert_eq!(Method::ReadResource.name_field(), Some("uri"));
        assert_eq!(Method::Complete.name_field(), None);
    }

    #[test]
    fn lists_and_server_requests_round_trip() {
        for kind in ListKind::ALL {
            assert_eq!(Method::parse(kind.method()), Method::List(kind));
        }
        for request in ServerRequest::ALL {
            assert_eq!(ServerRequest::parse(request.name()), Some(request));
        }
        assert_eq!(ServerRequest::parse("tools/call"), None);
    }
}
