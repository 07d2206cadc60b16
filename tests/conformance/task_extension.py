"""The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for the conformance fixture.

mcp 2.3.0 ships no tasks extension, so this one is written from the "Server Implementation
Requirements" the 0.2.0-alpha.12 `tasks-*` scenarios print. 2026-07-28 requests only.

* The server decides: a request whose `_meta` client capabilities declare the extension gets a
  `CreateTaskResult` (`resultType: "task"`, flat) for the task tools; without it an optional task
  tool runs synchronously and a required one is refused with -32021 naming the extension.
* A task runs the tool's own handler in the background. A tool waiting on the client
  (`ask`) parks the task in `input_required` with its `inputRequests`; `tasks/update` delivers
  answers (possibly some of them), and the task resumes once every one has come.
* `tasks/get` inlines the result (`completed`, a tool error included as `isError`) or the
  protocol error (`failed`); `tasks/cancel` acks with an empty result and settles the task to
  `cancelled`. Unknown task ids are -32602; a request without the extension is -32021; on HTTP
  `Mcp-Name` must equal `params.taskId` (-32020). `tasks/result` and `tasks/list` are not
  served (-32601, as SEP-2663 removed them).
* `subscriptions/listen` with `notifications.taskIds` ([`TaskListenHandler`]): the ack names the
  known ones; each then gets a `notifications/tasks` with its current state at once (so a task
  that settled before the stream opened is still told) and one on every change, as `tasks/get`
  would answer. Without the extension declared on the request it is -32021. A filter that names
  no task goes to the SDK's own listen handler.
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import anyio
import mcp_types as types
from pydantic import BaseModel, Field

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, event_matches, event_to_notification

EXTENSION = "io.modelcontextprotocol/tasks"
TTL_MS = 60_000
POLL_INTERVAL_MS = 200
TERMINAL = ("completed", "failed", "cancelled")
HEADER_MISMATCH = -32020

#: Task tools, by name: whether a task is "optional" or "required" for them.
TASK_TOOLS: dict[str, str] = {}
#: Task tools that first gather input in MRTR rounds and become a task on the final round
#: (the round that brings `inputResponses` for every key they ask).
MRTR_FIRST: dict[str, tuple[str, ...]] = {}

_current: contextvars.ContextVar[Task | None] = contextvars.ContextVar("current_task", default=None)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Task:
    """One task: its status, what it waits for, and its outcome."""

    def __init__(self) -> None:
        self.task_id = str(uuid.uuid4())
        self.status = "working"
        self.created_at = self.updated_at = _now()
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.pending: dict[str, dict[str, Any]] = {}
        self.answers: dict[str, Any] = {}
        self.answered = asyncio.Event()
        self.job: asyncio.Task[None] | None = None

    def _set(self, status: str) -> None:
        self.status = status
        self.updated_at = _now()
        for watch in list(_watchers):
            watch(self)

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttlMs": TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if self.status == "input_required":
            out["inputRequests"] = dict(self.pending)
        if self.status == "completed" and self.result is not None:
            out["result"] = self.result
        if self.status == "failed" and self.error is not None:
            out["error"] = self.error
        return out

    async def ask(self, requests: dict[str, types.InputRequest]) -> dict[str, Any]:
        """Park in `input_required` until every request has an answer; the answers by key."""
        self.pending = {k: r.model_dump(by_alias=True, mode="json", exclude_none=True) for k, r in requests.items()}
        self.answered.clear()
        self._set("input_required")
        await self.answered.wait()
        self._set("working")
        return {k: self.answers[k] for k in requests}

    def answer(self, responses: dict[str, Any]) -> None:
        for key, value in responses.items():
            if key in self.pending:
                self.answers[key] = value
                del self.pending[key]
        if not self.pending:
            self.answered.set()

    async def run(self, call_next: CallNext, ctx: ServerRequestContext[Any, Any]) -> None:
        _current.set(self)
        try:
            outcome = await call_next(ctx)
            self.result = _dump(outcome)
            self._set("completed")
        except asyncio.CancelledError:
            self._set("cancelled")
        except MCPError as e:
            self.error = {"code": e.error.code, "message": e.error.message}
            self._set("failed")
        except Exception as e:  # noqa: BLE001 - any failure of the job is the task's protocol error
            self.error = {"code": types.INTERNAL_ERROR, "message": f"the task failed: {e}"}
            self._set("failed")

    def cancel(self) -> None:
        if self.status in TERMINAL:
            return
        if self.job is not None:
            self.job.cancel()
        self._set("cancelled")


_tasks: dict[str, Task] = {}
#: Open listen streams' callbacks, told of every task's change of state.
_watchers: set[Callable[[Task], None]] = set()


def current() -> Task | None:
    """The task the calling tool runs in, if any."""
    return _current.get()


def _dump(result: HandlerResult) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(result, dict):
        return result
    return {"content": []}


def _declares(ctx: ServerRequestContext[Any, Any]) -> bool:
    meta = ctx.meta or {}
    caps = meta.get("io.modelcontextprotocol/clientCapabilities") or {}
    return isinstance(caps, dict) and EXTENSION in (caps.get("extensions") or {})


def _missing_extension() -> MCPError:
    return MCPError(
        code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"this request needs the {EXTENSION} extension",
        data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )


def _task_for(ctx: ServerRequestContext[Any, Any], params: Any) -> Task:
    if not _declares(ctx):
        raise _missing_extension()
    task_id = params.task_id
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is not None:
        name = headers.get("mcp-name")
        if name != task_id:
            raise MCPError(code=HEADER_MISMATCH, message="Mcp-Name does not match params.taskId")
    task = _tasks.get(task_id)
    if task is None:
        raise MCPError(code=types.INVALID_PARAMS, message="unknown taskId")
    return task


class TaskParams(types.RequestParams):
    """`tasks/get` and `tasks/cancel` params."""

    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    """`tasks/update` params."""

    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


async def _get(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
    return _task_for(ctx, params).wire()


async def _update(ctx: ServerRequestContext[Any, Any], params: UpdateParams) -> dict[str, Any]:
    _task_for(ctx, params).answer(params.input_responses or {})
    return {}


async def _cancel(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
    _task_for(ctx, params).cancel()
    return {}


class TasksExtension(Extension):
    identifier = EXTENSION

    def methods(self) -> Sequence[MethodBinding]:
        modern = frozenset({"2026-07-28"})
        return (
            MethodBinding("tasks/get", TaskParams, _get, modern),
            MethodBinding("tasks/update", UpdateParams, _update, modern),
            MethodBinding("tasks/cancel", TaskParams, _cancel, modern),
        )

    async def intercept_tool_call(
        self,
        params: types.CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        support = TASK_TOOLS.get(params.name)
        if support is None:
            return await call_next(ctx)
        if not _declares(ctx):
            if support == "required":
                raise _missing_extension()
            return await call_next(ctx)
        gathered = params.input_responses or {}
        if any(key not in gathered for key in MRTR_FIRST.get(params.name, ())):
            return await call_next(ctx)
        task = Task()
        _tasks[task.task_id] = task
        task.job = asyncio.get_running_loop().create_task(
            task.run(call_next, ctx), context=contextvars.copy_context()
        )
        return {"resultType": "task", **task.wire()}


class TaskFilter(types.SubscriptionFilter):
    """The listen filter with the extension's `taskIds`."""

    task_ids: list[str] | None = Field(default=None, alias="taskIds")


class ListenParams(types.SubscriptionsListenRequestParams):
    """`subscriptions/listen` params whose filter may name tasks."""

    notifications: TaskFilter


class _Frame(BaseModel):
    """A notification the SDK has no type for (`send_notification` only dumps it)."""

    method: str
    params: dict[str, Any]


class TaskListenHandler:
    """`subscriptions/listen`: a filter naming tasks is served here, any other by `standard`."""

    def __init__(self, standard: Any, bus: Any) -> None:
        self._standard = standard
        self._bus = bus

    async def __call__(self, ctx: ServerRequestContext[Any, Any], params: ListenParams) -> Any:
        requested = params.notifications
        if not requested.task_ids:
            return await self._standard(ctx, params)
        if not _declares(ctx):
            raise _missing_extension()
        wanted = [t for t in dict.fromkeys(requested.task_ids) if t in _tasks]
        honored = types.SubscriptionFilter(
            tools_list_changed=True if requested.tools_list_changed else None,
            prompts_list_changed=True if requested.prompts_list_changed else None,
            resources_list_changed=True if requested.resources_list_changed else None,
            resource_subscriptions=list(requested.resource_subscriptions or ()) or None,
        )
        uris = frozenset(honored.resource_subscriptions or ())
        meta = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        send, recv = anyio.create_memory_object_stream[tuple[str, Any]](256)

        def push(item: tuple[str, Any]) -> None:
            try:
                send.send_nowait(item)
            except (anyio.WouldBlock, anyio.ClosedResourceError):
                pass  # a stream that stopped reading loses frames; tasks/get still answers

        def on_event(event: Any) -> None:
            if event_matches(honored, uris, event):
                push(("event", event))

        def on_task(task: Task) -> None:
            if task.task_id in wanted:
                push(("task", task.wire()))

        async def tell(frame: Any) -> None:
            await ctx.session.send_notification(frame, related_request_id=ctx.request_id)

        unsubscribe = self._bus.subscribe(on_event)
        _watchers.add(on_task)
        try:
            ack = honored.model_dump(by_alias=True, mode="json", exclude_none=True)
            ack["taskIds"] = wanted
            await tell(_Frame(method="notifications/subscriptions/acknowledged", params={"notifications": ack, "_meta": meta}))
            for task_id in wanted:
                push(("task", _tasks[task_id].wire()))
            async for kind, item in recv:
                if kind == "event":
                    await tell(event_to_notification(item, meta))
                else:
                    await tell(_Frame(method="notifications/tasks", params={**item, "_meta": meta}))
        finally:
            unsubscribe()
            _watchers.discard(on_task)
            send.close()
            recv.close()
        return types.SubscriptionsListenResult(_meta=meta)
