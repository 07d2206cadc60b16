"""Process lifecycle and CLI surface of the real sluice binary: shutdown reaps every upstream (stdio
EOF and HTTP SIGTERM), `config check`, `serve --mcp-json`, and an HTTP (url) upstream."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness as H
from conftest import (
    REAP_TIMEOUT,
    STOP_TIMEOUT,
    alive,
    descendants,
    kill_leftovers,
    stdio_args,
    wait_gone,
    write_config,
    write_mcp_json,
)

# everything2025 ignores stdin EOF: sluice has to escalate to a signal for it.
LIFECYCLE_UPSTREAMS = ("everything", "everything2025", "time")


def _subset(ws: H.Workspace, names: tuple[str, ...]) -> dict[str, H.Upstream]:
    ups = ws.upstreams()
    return {n: ups[n] for n in names}


class JsonRpcPipe:
    """Raw newline-delimited JSON-RPC to `sluice serve --stdio` (no SDK in between)."""

    def __init__(self, args: list[str], log_path: Path) -> None:
        self.log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [str(H.SLUICE_BIN), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def response(self, id_: int, timeout: float = H.OP_TIMEOUT) -> dict[str, Any]:
        """The response with this id (notifications and server requests before it are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no response to request {id_} within {timeout}s")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"sluice closed stdout before answering request {id_} (rc {self.proc.poll()})")
            msg = json.loads(line)
            if msg.get("id") == id_ and ("result" in msg or "error" in msg):
                return msg

    def close(self) -> None:
        if self.proc.poll() is None:
            leftovers = descendants(self.proc.pid)
            self.proc.kill()
            self.proc.wait(10)
            kill_leftovers(alive(leftovers))
        self.log.close()


def test_stdio_exits_on_eof_and_reaps_upstreams(tmp_path: Path, peers: Path, sluice_bin: Path) -> None:
    ws = H.Workspace(tmp_path / "ws")
    cfg = write_config(tmp_path / "sluice.toml", _subset(ws, LIFECYCLE_UPSTREAMS))
    pipe = JsonRpcPipe(stdio_args(cfg), tmp_path / "sluice.log")
    children: set[int] = set()
    try:
        pipe.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}})
        init = pipe.response(1)
        assert "result" in init, init
        pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # Wait until every upstream contributes tools, so all upstream processes exist.
        deadline = time.monotonic() + H.READY_TIMEOUT
        next_id = 2
        while True:
            pipe.send({"jsonrpc": "2.0", "id": next_id, "method": "tools/list", "params": {}})
            res = pipe.response(next_id)
            next_id += 1
            names = {t["name"].split(H.SEPARATOR, 1)[0] for t in res.get("result", {}).get("tools", [])}
            if set(LIFECYCLE_UPSTREAMS) <= names or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        children = descendants(pipe.proc.pid)
        assert len(children) >= len(LIFECYCLE_UPSTREAMS), f"expected upstream processes under sluice, saw {children}"
        assert pipe.proc.stdin is not None
        pipe.proc.stdin.close()  # EOF: the downstream is gone
        try:
            rc = pipe.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"sluice --stdio still running {STOP_TIMEOUT}s after stdin EOF", pytrace=False)
        assert rc == 0, f"sluice --stdio exited with {rc} after EOF"
        leftover = wait_gone(children, REAP_TIMEOUT)
        assert not leftover, f"upstream processes outlived sluice: {sorted(leftover)}"
    finally:
        kill_leftovers(alive(children))
        pipe.close()


def test_http_sigterm_reaps_upstreams(tmp_path: Path, peers: Path, sluice_bin: Path, sluice_servers: Any) -> None:
    ws = H.Workspace(tmp_path / "ws")
    cfg = write_config(tmp_path / "sluice.toml", _subset(ws, LIFECYCLE_UPSTREAMS))
    srv = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", set(LIFECYCLE_UPSTREAMS))
    doc = srv.last_health or {}
    states = {n: (i or {}).get("state") for n, i in (doc.get("upstreams") or {}).items()}
    assert states == {n: "ready" for n in LIFECYCLE_UPSTREAMS}, doc
    children = srv.note_children()
    assert len(children) >= len(LIFECYCLE_UPSTREAMS), f"expected upstream processes under sluice, saw {children}"
    srv.stop()  # SIGTERM; raises if sluice or any upstream is still alive afterwards
    assert srv.proc is not None and srv.proc.returncode is not None


# ------------------------------------------------------------------------------------------------
# config check
# ------------------------------------------------------------------------------------------------


def _config_check(cfg: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(H.SLUICE_BIN), "config", "check", "--config", str(cfg)],
        capture_output=True, text=True, timeout=15, stdin=subprocess.DEVNULL,
    )


def test_config_check_accepts_valid_config(tmp_path: Path, peers: Path, sluice_bin: Path) -> None:
    ws = H.Workspace(tmp_path / "ws")
    cfg = write_config(tmp_path / "sluice.toml", ws.upstreams())
    r = _config_check(cfg)
    assert r.returncode == 0, f"rc {r.returncode}\n{r.stderr}"


def test_config_check_reports_every_problem(tmp_path: Path, sluice_bin: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(
        "\n".join([
            "[[upstream]]", 'name = "Bad Name!"', 'command = "node"', "",
            "[[upstream]]", 'name = "dup"', 'command = "node"', "",
            "[[upstream]]", 'name = "dup"', 'command = "node"', "",
        ]) + "\n",
        encoding="utf-8",
    )
    r = _config_check(cfg)
    assert r.returncode == 78, f"rc {r.returncode}\nstderr:\n{r.stderr}"
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) >= 2, f"expected one line per problem (2), got:\n{r.stderr}"
    assert "Bad Name!" in r.stderr, r.stderr
    assert "dup" in r.stderr, r.stderr


# ------------------------------------------------------------------------------------------------
# serve --mcp-json, and a url (Streamable HTTP) upstream
# ------------------------------------------------------------------------------------------------


async def _tools_and_call(url: str, tool: str, args: dict[str, Any]) -> tuple[set[str], dict[str, Any]]:
    """List tools (every page) and call one, through sluice over HTTP."""
    with anyio.fail_after(H.CONNECT_TIMEOUT + 4 * H.OP_TIMEOUT):
        async with H.make_client(url, "legacy") as client:
            listing = await H.drain(client, "tools")
            with anyio.fail_after(H.OP_TIMEOUT):
                result = await client.call_tool(tool, args)
    return {i["name"] for i in listing.items}, H.dump(result)


async def _direct_call(up: H.Upstream, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(H.CONNECT_TIMEOUT + H.OP_TIMEOUT):
        async with H.make_client(H.stdio_transport(up), up.direct_mode("legacy")) as client:
            with anyio.fail_after(H.OP_TIMEOUT):
                return H.dump(await client.call_tool(tool, args))


def test_serve_mcp_json(tmp_path: Path, peers: Path, sluice_bin: Path, sluice_servers: Any) -> None:
    ws = H.Workspace(tmp_path / "ws")
    ups = _subset(ws, ("everything", "time"))
    mcp_json = write_mcp_json(tmp_path / "claude_desktop_config.json", ups)
    srv = sluice_servers(["--mcp-json", str(mcp_json)], tmp_path / "sluice.log", set(ups))
    args = {"source_timezone": "Asia/Tokyo", "time": "23:15", "target_timezone": "Europe/London"}
    names, through = anyio.run(_tools_and_call, srv.url, f"time{H.SEPARATOR}convert_time", args)
    assert {n.split(H.SEPARATOR, 1)[0] for n in names} == {"everything", "time"}, sorted(names)
    direct = anyio.run(_direct_call, ups["time"], "convert_time", args)
    op = H.Op("time", "call", "convert_time")
    assert H.essential(op, through) == H.essential(op, direct)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_remote_http_upstream(tmp_path: Path, peers: Path, sluice_bin: Path, sluice_servers: Any) -> None:
    """An upstream given by url (server-everything in streamableHttp mode), with a header whose
    value comes from sluice's environment."""
    port = _free_port()
    log = open(tmp_path / "everything-http.log", "w", encoding="utf-8")  # noqa: SIM115
    upstream = subprocess.Popen(
        [H.NODE, str(H.EVERYTHING_JS), "streamableHttp"], env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + H.CONNECT_TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or upstream.poll() is not None:
                    pytest.fail(f"server-everything (streamableHttp) did not listen on {port}", pytrace=False)
                time.sleep(0.1)
        cfg = write_config(
            tmp_path / "sluice.toml", [],
            remote={"remote": {"url": f"http://127.0.0.1:{port}/mcp",
                               "headers": {"Authorization": "Bearer ${SLUICE_IT_TOKEN}"}}},
        )
        srv = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", {"remote"},
                             env={"SLUICE_IT_TOKEN": "it-token"})
        names, through = anyio.run(_tools_and_call, srv.url, f"remote{H.SEPARATOR}get-sum", {"a": 2, "b": 40})
        assert "remote__get-sum" in names, sorted(names)
        assert through["content"] == [{"type": "text", "text": "The sum of 2 and 40 is 42."}], through
    finally:
        upstream.terminate()
        try:
            upstream.wait(10)
        except subprocess.TimeoutExpired:
            upstream.kill()
            upstream.wait(10)
        log.close()
