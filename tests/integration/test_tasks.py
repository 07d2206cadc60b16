"""A task-augmented `tools/call` through sluice (MCP 2025-11-25, Basic, Utilities, Tasks).

server-everything runs `simulate-research-query` only as a task (`execution.taskSupport:
"required"`) and declares `tasks.requests.tools.call`. The Python SDK, speaking 2025-11-25 to sluice,
calls it with `params.task`, polls `tasks/get` to a terminal status, then reads `tasks/result`.
What the client sees of the task is sluice's: the id is sealed (it names neither the upstream nor
the upstream's own id), is the same in every answer about the task, and opens for nobody else;
the result carries the sealed id in its related-task `_meta`, and is redacted as the call's answer
would be.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types

import harness as H
from conftest import write_config

TOOL = "everything__simulate-research-query"
RELATED = "io.modelcontextprotocol/related-task"
# A github-token shape in the topic, which the research report repeats: the task's result goes
# through the tool's boundary, so it must come back redacted, as a call's answer would.
GHP = "ghp_" + "Zq8" * 12
TOPIC = f"tide pools {GHP}"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


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
                    out.setdefault("bogus", []).append(getattr(getattr(e, "error", None), "code", str(e)))
            out["task_id"] = task_id
    return out


def test_a_task_runs_through_sluice_with_a_sealed_id(tmp_path: Path, sluice_servers: Any) -> None:
    ws = H.Workspace(tmp_path / "ws")
    ups = {n: u for n, u in ws.upstreams().items() if n == "everything"}
    cfg = write_config(tmp_path / "sluice.toml", ups)
    srv = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", set(ups))
    got = anyio.run(_run_task, srv.url)
    ctx = f"{got}\n--- sluice stderr ---\n{srv.stderr_tail()}"

    assert got["version"] == "2025-11-25", ctx
    # Declared because server-everything runs tasks; never `list` (sluice does not serve tasks/list).
    assert got["capabilities"]["tasks"] == {"cancel": {}, "requests": {"tools": {"call": {}}}}, ctx
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
