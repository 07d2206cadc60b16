"""A real upstream killed in the middle of a call, through sluice over HTTP.

server-everything is running `trigger-long-running-operation` for a client when its process is
killed (SIGKILL, no goodbye). The client must get an error naming the upstream at once (not
wait for its timeout), the other upstream must keep answering meanwhile, and sluice must bring
the killed one back on its own.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness as H
from conftest import descendants, write_config

UPSTREAMS = ("everything", "time")


def _everything_pid(server_pid: int) -> int:
    for pid in descendants(server_pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.endswith(b"server-everything/dist/index.js") for arg in cmdline):
            return pid
    raise AssertionError("no server-everything process below sluice")


async def _kill_mid_call(url: str, server_pid: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with anyio.fail_after(H.CONNECT_TIMEOUT + 60):
        async with H.make_client(url, "legacy") as client:

            async def long_call() -> None:
                started = time.monotonic()
                try:
                    await client.call_tool("everything__trigger-long-running-operation", {"duration": 20, "steps": 20})
                    out["long"] = "completed"
                except Exception as e:  # the SDK raises McpError for a JSON-RPC error
                    out["long"] = "error"
                    out["long_error"] = repr(e)
                out["long_seconds"] = time.monotonic() - started

            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call)
                await anyio.sleep(1.5)
                victim = _everything_pid(server_pid)
                os.kill(victim, signal.SIGKILL)
                out["victim"] = victim
                # The other upstream answers while everything is down.
                r = await client.call_tool("time__convert_time", {
                    "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
                out["time_ok"] = not r.is_error

            # The killed upstream comes back: poll a cheap call (bounded).
            deadline = time.monotonic() + 30
            while True:
                try:
                    r = await client.call_tool("everything__get-sum", {"a": 20, "b": 22})
                    out["back"] = r.content[0].text
                    break
                except Exception as e:
                    out["last_while_down"] = repr(e)
                    if time.monotonic() > deadline:
                        out["back"] = None
                        break
                    await anyio.sleep(0.2)
    return out


def test_killed_upstream_fails_its_call_and_comes_back(tmp_path: Path, sluice_servers: Any) -> None:
    ws = H.Workspace(tmp_path / "ws")
    ups = {n: u for n, u in ws.upstreams().items() if n in UPSTREAMS}
    cfg = write_config(tmp_path / "sluice.toml", ups)
    srv = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", set(ups))
    out = anyio.run(_kill_mid_call, srv.url, srv.pid)
    assert out["long"] == "error", out
    assert "everything" in out["long_error"], out
    assert out["long_seconds"] < 10, f"the call waited instead of failing at once: {out}"
    assert out["time_ok"], out
    assert out["back"] == "The sum of 20 and 22 is 42.", out
    health = srv.health()
    assert health["upstreams"]["everything"]["state"] == "ready", health
    assert health["upstreams"]["everything"]["restarts"] >= 1, health
    assert health["upstreams"]["time"]["restarts"] == 0, health
