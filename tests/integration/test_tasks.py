"""Tasks through sluice (MCP 2025-11-25, Basic, Utilities, Tasks).

server-everything runs `simulate-research-query` only as a task (`execution.taskSupport:
"required"`) and declares `tasks.requests.tools.call`. The Python SDK, speaking 2025-11-25 to sluice,
calls it with `params.task`, polls `tasks/get` to a terminal status, then reads `tasks/result`.
What the client sees of the task is sluice's: the id is sealed (it names neither the upstream nor
the upstream's own id), is the same in every answer about the task, and opens for nobody else;
the result carries the sealed id in its related-task `_meta`, and is redacted as the call's answer
would be.

Two sessions share sluice's one connection to server-everything: `tasks/list` of each shows its
own tasks only (sluice lists from its record of who started which), and the status notifications
server-everything sends as a task moves on reach only the session that owns the task, with the
id sealed for it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types
from mcp.client.extension import ClientExtension, NotificationBinding

import harness as H
from conftest import write_config

TOOL = "everything__simulate-research-query"
RELATED = "io.modelcontextprotocol/related-task"
# A github-token shape in the topic, which the research report repeats: the task's result goes
# through the tool's boundary, so it must come back redacted, as a call's answer would.
GHP = "ghp_" + "Zq8" * 12
TOPIC = f"tide pools {GHP}"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _serve_everything(tmp_path: Path, sluice_servers: Any, extra_toml: str = "") -> Any:
    """sluice in front of server-everything alone, with `extra_toml` appended to its config."""
    ws = H.Workspace(tmp_path / "ws")
    ups = {n: u for n, u in ws.upstreams().items() if n == "everything"}
    cfg = write_config(tmp_path / "sluice.toml", ups)
    with cfg.open("a", encoding="utf-8") as f:
        f.write(extra_toml)
    return sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", set(ups))


def _code(e: Exception) -> Any:
    """The JSON-RPC error code of the SDK's MCPError (else the text)."""
    return getattr(getattr(e, "error", None), "code", str(e))


async def _run_task(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with anyio.fail_after(H.CONNECT_TIMEOUT + 4 * H.OP_TIMEOUT):
        async with Client(url, mode="legacy", cache=None, read_timeout_seconds=H.OP_TIMEOUT) as client:
            out["version"] = client.protocol_version
            out["capabilities"] = client.server_capabilities.model_dump(
                by_alias=True, exclude_none=True)
            tools = {t.name: t for t in (await client.list_tools()).tools}
            out["execution"] = tools[TOOL].execution.model_dump(by_alias=True, exclude_none=True)
            # mcp 2.3.0 types a tools/call answer as CallToolResult only, so the CreateTaskResult
            # is read raw from the session's dispatcher, then validated as what it is.
            params = {"name": TOOL, "arguments": {"topic": TOPIC}, "task": {"ttl": 60_000}}
            raw_created = await client.session._dispatcher.send_raw_request(  # noqa: SLF001
                "tools/call", params, {"timeout": H.OP_TIMEOUT})
            created = types.CreateTaskResult.model_validate(raw_created)
            task_id = created.task.task_id
            out["created"] = created.model_dump(by_alias=True, exclude_none=True)
            statuses = []
            with anyio.fail_after(4 * H.OP_TIMEOUT):
                while True:
                    got = await client.session.send_request(
                        types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)),
                        types.GetTaskResult)
                    statuses.append(got.status)
                    assert got.task_id == task_id, (got.task_id, task_id)
                    if got.status in ("completed", "failed", "cancelled"):
                        break
                    await anyio.sleep(0.3)
            out["statuses"] = statuses
            # tasks/result answers the tool's CallToolResult, which the SDK's typed
            # GetTaskPayloadResult would not keep: read raw too.
            out["result"] = await client.session._dispatcher.send_raw_request(  # noqa: SLF001
                "tasks/result", {"taskId": task_id}, {"timeout": H.OP_TIMEOUT})
            # An id sluice did not seal is unknown, like a made-up one.
            for bogus in (task_id[:-2] + ("AA" if not task_id.endswith("AA") else "BB"), "not-a-task"):
                try:
                    await client.session.send_request(
                        types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=bogus)), types.GetTaskResult)
                    out.setdefault("bogus", []).append("accepted")
                except Exception as e:  # noqa: BLE001 - the SDK raises MCPError
                    out.setdefault("bogus", []).append(_code(e))
            out["task_id"] = task_id
    return out


def test_a_task_runs_through_sluice_with_a_sealed_id(tmp_path: Path, sluice_servers: Any) -> None:
    srv = _serve_everything(tmp_path, sluice_servers)
    got = anyio.run(_run_task, srv.url)
    ctx = f"{got}\n--- sluice stderr ---\n{srv.stderr_tail()}"

    assert got["version"] == "2025-11-25", ctx
    # Declared because server-everything runs tasks; `list` is sluice's own (from its record).
    assert got["capabilities"]["tasks"] == {
        "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}, ctx
    assert got["execution"] == {"taskSupport": "required"}, ctx
    task_id = got["task_id"]
    assert not UUID.search(task_id) and "everything" not in task_id, ctx
    assert got["created"]["task"]["taskId"] == task_id, ctx
    assert got["statuses"][-1] == "completed", ctx
    text = "\n".join(c.get("text", "") for c in got["result"]["content"])
    assert "tide pools" in text and "[redacted]" in text, ctx
    assert GHP not in str(got), ctx
    assert got["result"]["_meta"][RELATED]["taskId"] == task_id, ctx
    assert got["bogus"] == [-32602, -32602], ctx


class _StatusObserver(ClientExtension):
    """Keeps every `notifications/tasks/status` the session hears (mcp 2.3.0 types the
    notification but routes it to no callback: an extension's binding observes it)."""

    identifier = "dev.sluice-tests/task-status"

    def __init__(self, seen: list[dict[str, Any]]) -> None:
        self.seen = seen

    def notifications(self) -> list[NotificationBinding[Any]]:
        return [NotificationBinding(
            method="notifications/tasks/status", params_type=types.TaskStatusNotificationParams, handler=self._seen)]

    async def _seen(self, params: types.TaskStatusNotificationParams) -> None:
        self.seen.append(params.model_dump(by_alias=True, exclude_none=True))


async def _raw(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return await client.session._dispatcher.send_raw_request(  # noqa: SLF001
        method, params, {"timeout": H.OP_TIMEOUT})


async def _start_task(client: Client, topic: str) -> str:
    created = await _raw(client, "tools/call", {"name": TOOL, "arguments": {"topic": topic}, "task": {"ttl": 60_000}})
    return types.CreateTaskResult.model_validate(created).task.task_id


async def _drain_list(client: Client) -> tuple[list[str], int]:
    """Every task id `tasks/list` shows, over all its pages, and the number of pages."""
    ids: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await _raw(client, "tasks/list", {} if cursor is None else {"cursor": cursor})
        pages += 1
        ids += [t["taskId"] for t in page["tasks"]]
        cursor = page.get("nextCursor")
        if cursor is None or pages > 10:
            return ids, pages


async def _two_sessions(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {"seen": {"a": [], "b": []}}
    with anyio.fail_after(H.CONNECT_TIMEOUT + 6 * H.OP_TIMEOUT):
        async with (
            Client(url, mode="legacy", cache=None, read_timeout_seconds=H.OP_TIMEOUT,
                   extensions=[_StatusObserver(out["seen"]["a"])]) as a,
            Client(url, mode="legacy", cache=None, read_timeout_seconds=H.OP_TIMEOUT,
                   extensions=[_StatusObserver(out["seen"]["b"])]) as b,
        ):
            mine = {"a": [await _start_task(a, "tide pools"), await _start_task(a, "kelp forests")],
                    "b": [await _start_task(b, "sea otters")]}
            out["created"] = mine
            out["listed"] = {"a": await _drain_list(a), "b": await _drain_list(b)}
            # A cursor is the session's: the other session's does not open.
            first = await _raw(a, "tasks/list", {})
            try:
                await _raw(b, "tasks/list", {"cursor": first["nextCursor"]})
                out["foreign_cursor"] = "accepted"
            except Exception as e:  # noqa: BLE001 - the SDK raises MCPError
                out["foreign_cursor"] = _code(e)
            # Each session hears its own tasks reach `completed`.
            with anyio.fail_after(4 * H.OP_TIMEOUT):
                while True:
                    done = {
                        who: {n["taskId"] for n in out["seen"][who] if n["status"] == "completed"}
                        for who in ("a", "b")
                    }
                    if all(set(mine[who]) <= done[who] for who in ("a", "b")):
                        break
                    await anyio.sleep(0.2)
            # A task over leaves the record: nothing is listed any more.
            out["listed_after"] = {"a": await _drain_list(a), "b": await _drain_list(b)}
    return out


def test_each_session_lists_and_hears_only_its_own_tasks(tmp_path: Path, sluice_servers: Any) -> None:
    # One task a page, so that draining the list takes every page.
    srv = _serve_everything(tmp_path, sluice_servers, "\n[catalog]\nlist_page_size = 1\n")
    got = anyio.run(_two_sessions, srv.url)
    ctx = f"{got}\n--- sluice stderr ---\n{srv.stderr_tail()}"

    mine = got["created"]
    assert len(set(mine["a"] + mine["b"])) == 3, ctx
    # Every page drained: a's two tasks, oldest first, one a page; b's one; nobody else's.
    assert got["listed"]["a"] == (mine["a"], 2), ctx
    assert got["listed"]["b"] == (mine["b"], 1), ctx
    assert got["foreign_cursor"] == -32602, ctx
    for who in ("a", "b"):
        seen = got["seen"][who]
        # Only its own tasks, by the ids sluice sealed for it (never the upstream's).
        assert {n["taskId"] for n in seen} == set(mine[who]), ctx
        assert not any(UUID.search(n["taskId"]) for n in seen), ctx
        # Every stage reaches it, the first too: server-everything announces it before the
        # answer that creates the task, and sluice holds it until that answer names the owner.
        for task in mine[who]:
            messages = [n.get("statusMessage") for n in seen if n["taskId"] == task]
            assert "Gathering sources..." in messages, ctx
    assert got["listed_after"] == {"a": ([], 1), "b": ([], 1)}, ctx


async def _spend(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with anyio.fail_after(H.CONNECT_TIMEOUT + 4 * H.OP_TIMEOUT):
        async with Client(url, mode="legacy", cache=None, read_timeout_seconds=H.OP_TIMEOUT) as client:
            task_id = await _start_task(client, "tide pools")
            for method, params in (("tasks/get", {"taskId": task_id}), ("tasks/list", {})):
                codes: list[Any] = []
                for _ in range(4):
                    try:
                        await _raw(client, method, params)
                        codes.append("ok")
                    except Exception as e:  # noqa: BLE001 - the SDK raises MCPError
                        codes.append(_code(e))
                out[method] = codes
    return out


def test_task_methods_spend_the_callers_allowance(tmp_path: Path, sluice_servers: Any) -> None:
    srv = _serve_everything(tmp_path, sluice_servers, '\n[ratelimit]\ndefault = "3/min"\n')
    got = anyio.run(_spend, srv.url)
    ctx = f"{got}\n--- sluice stderr ---\n{srv.stderr_tail()}"
    # A burst of 3 for each method, apart from the call's own allowance (it created the task);
    # the fourth is sluice's rate refusal (-32011).
    assert got == {"tasks/get": ["ok", "ok", "ok", -32011], "tasks/list": ["ok", "ok", "ok", -32011]}, ctx
