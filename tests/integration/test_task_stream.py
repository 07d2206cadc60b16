"""2026-07-28 task status through sluice on a `subscriptions/listen` stream (the tasks extension,
SEP-2663, "Task Status Notifications").

The upstream is the conformance fixture (`tests/conformance/server.py`, the Python SDK with our
tasks extension), which sends `notifications/tasks` on a listen stream whose filter names
`taskIds`: the current state when the stream opens, then every change. Two principals (bearer
tokens) each start a task over raw 2026-07-28 HTTP, then listen. Checked, on the whole stream:

* the acknowledgement names exactly the caller's own sealed ids: another principal's id, a
  made-up one and an upstream's raw id are left out;
* every `notifications/tasks` names the caller's sealed id (never the upstream's), carries the
  client's subscription id, and the stream ends with the task's `completed` state whose result is
  what `tasks/get` answers, with the github token in it redacted (the tool's boundary);
* each state comes once, also with two streams about the same task (each opens its own upstream
  stream, and the upstream tells both); nothing of the other principal's task is heard;
* a filter naming tasks without the extension declared is -32021; a malformed one -32602.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from pathlib import Path
from typing import Any

import httpx2

import harness as H
from conftest import write_config

EXT = "io.modelcontextprotocol/tasks"
SUB_ID = "io.modelcontextprotocol/subscriptionId"
TOOL = "fx__slow_compute"
GHP = "ghp_" + "Tq4" * 12
FIXTURE = H.Upstream(
    "fx", str(H.VENV / "bin" / "python"), (str(H.REPO / "tests" / "conformance" / "server.py"), "--stdio"),
    modern=True,
)
TOKENS = {"alice": "alice-token-" + "a" * 24, "bob": "bob-token-" + "b" * 24}


def _meta(extension: bool) -> dict[str, Any]:
    caps = {"extensions": {EXT: {}}} if extension else {}
    return {"io.modelcontextprotocol/protocolVersion": H.MODERN,
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "sluice-it-task-stream", "version": "0"}}


def _headers(who: str, method: str, name: str | None = None) -> dict[str, str]:
    h = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": H.MODERN,
         "Mcp-Method": method, "Authorization": f"Bearer {TOKENS[who]}"}
    if name is not None:
        h["Mcp-Name"] = name
    return h


def _frames(body: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response: a JSON body or the `data:` lines of an SSE one."""
    body = body.strip()
    if body.startswith("{"):
        return [json.loads(body)]
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:") and line[5:].strip()]


def _post(url: str, who: str, rid: int, method: str, params: dict[str, Any], *, extension: bool = True,
          name: str | None = None) -> dict[str, Any]:
    msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": _meta(extension)}}
    r = httpx2.post(url, json=msg, headers=_headers(who, method, name), timeout=H.OP_TIMEOUT)
    answers = [f for f in _frames(r.text) if f.get("id") == rid]
    assert answers, f"{method}: HTTP {r.status_code} {r.text[:400]}"
    return answers[0]


class Stream:
    """A `subscriptions/listen` POST whose SSE response is read on a thread into a queue."""

    def __init__(self, url: str, who: str, rid: Any, notifications: dict[str, Any]) -> None:
        self.frames: queue.Queue[dict[str, Any]] = queue.Queue()
        self.client = httpx2.Client(timeout=httpx2.Timeout(H.OP_TIMEOUT, read=None))
        msg = {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen",
               "params": {"notifications": notifications, "_meta": _meta(True)}}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._read, args=(url, who, msg), daemon=True)
        self.thread.start()

    def _read(self, url: str, who: str, msg: dict[str, Any]) -> None:
        try:
            with self.client.stream("POST", url, json=msg, headers=_headers(who, "subscriptions/listen")) as r:
                for line in r.iter_lines():
                    if self.stop.is_set():
                        return
                    if line.startswith("data:") and line[5:].strip():
                        self.frames.put(json.loads(line[5:]))
        except Exception as e:  # noqa: BLE001 - a closed stream ends the reader; the test reads what came
            if not self.stop.is_set():
                self.frames.put({"reader_error": repr(e)})

    def until(self, done: Any, timeout: float = H.OP_TIMEOUT) -> list[dict[str, Any]]:
        """Every frame up to and including the first for which `done(frame)` holds."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"the stream did not get there in {timeout}s: {seen}"
            try:
                frame = self.frames.get(timeout=left)
            except queue.Empty:
                continue
            assert "reader_error" not in frame, f"{frame} after {seen}"
            seen.append(frame)
            if done(frame):
                return seen

    def close(self) -> None:
        self.stop.set()
        self.client.close()


def _start(url: str, who: str, rid: int, seconds: float) -> str:
    answer = _post(url, who, rid, "tools/call",
                   {"name": TOOL, "arguments": {"seconds": seconds, "label": f"{who} {GHP}"}}, name=TOOL)
    result = answer["result"]
    assert result["resultType"] == "task" and result["status"] == "working", answer
    return result["taskId"]


def test_task_status_reaches_the_listen_stream_of_its_own_principal_only(
    tmp_path: Path, sluice_servers: Any
) -> None:
    cfg = write_config(tmp_path / "sluice.toml", [FIXTURE])
    with cfg.open("a", encoding="utf-8") as f:
        f.write('\n[auth]\nmode = "bearer"\n')
        for who in TOKENS:
            f.write(f'\n[[auth.token]]\nprincipal = "{who}"\nenv = "TOKEN_{who.upper()}"\n')
    env = {f"TOKEN_{who.upper()}": token for who, token in TOKENS.items()}
    srv = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", {"fx"}, env=env)
    url = f"http://127.0.0.1:{srv.port}/mcp"

    mine = _start(url, "alice", 1, 3.0)
    theirs = _start(url, "bob", 2, 0.5)
    assert mine != theirs and len(mine) > 40, "sealed ids, one per task"

    # Without the extension on the request, or with a malformed filter: refused before any stream.
    refused = _post(url, "alice", 3, "subscriptions/listen", {"notifications": {"taskIds": [mine]}},
                    extension=False)
    assert refused["error"]["code"] == -32021, refused
    assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}, refused
    malformed = _post(url, "alice", 4, "subscriptions/listen", {"notifications": {"taskIds": mine}})
    assert malformed["error"]["code"] == -32602, malformed

    # Two streams about the same task: each opens its own upstream stream, and the upstream tells
    # both; each client stream still hears each state once.
    stream = Stream(url, "alice", "listen-a", {"taskIds": [mine, theirs, "made-up", mine]})
    twin = Stream(url, "alice", "listen-b", {"taskIds": [mine]})
    completed = lambda f: f.get("method") == "notifications/tasks" and f["params"]["status"] == "completed"  # noqa: E731
    try:
        frames = stream.until(completed)
        twin_frames = twin.until(completed)
    finally:
        stream.close()
        twin.close()
    twin_states = [(f["params"]["status"], f["params"]["lastUpdatedAt"]) for f in twin_frames[1:]]
    assert len(twin_states) == len(set(twin_states)), f"a state told twice: {twin_states}"
    assert all(f["params"]["_meta"][SUB_ID] == "listen-b" for f in twin_frames), twin_frames

    ack, *notes = frames
    assert ack["method"] == "notifications/subscriptions/acknowledged", frames
    assert ack["params"] == {"notifications": {"taskIds": [mine]}, "_meta": {SUB_ID: "listen-a"}}, ack
    assert notes and all(n["method"] == "notifications/tasks" for n in notes), notes
    for n in notes:
        assert n["params"]["taskId"] == mine, n
        assert n["params"]["_meta"][SUB_ID] == "listen-a", n
    states = [(n["params"]["status"], n["params"]["lastUpdatedAt"]) for n in notes]
    assert len(states) == len(set(states)), f"a state told twice: {states}"
    assert states[0][0] == "working" and states[-1][0] == "completed", states

    text = json.dumps(frames)
    assert GHP not in text, "the task's result goes through the tool's boundary"
    assert theirs not in text and "bob" not in text, "nothing of the other principal's task"

    # The completed state on the stream is what tasks/get answers now (both through sluice).
    got = _post(url, "alice", 5, "tasks/get", {"taskId": mine}, name=mine)["result"]
    told = {k: v for k, v in notes[-1]["params"].items() if k != "_meta"}
    assert {k: v for k, v in got.items() if k not in ("_meta", "resultType")} == told, (got, told)
    assert told["result"]["content"] == [
        {"type": "text", "text": "slow_compute alice [redacted] done after 3.0s"}], told
