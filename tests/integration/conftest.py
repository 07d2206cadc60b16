"""Helpers for driving the real `sluice` binary: config files, the HTTP server process (port parsed
from its stderr, /health polled), stdio launch parameters, and a teardown that terminates sluice and
checks that it, and every upstream process it started, exited.

Environment:
  SLUICE_BIN   the binary under test (default <repo>/target/debug/sluice)
  PEERS        where scripts/test-peers.sh installed the peers (default <repo>/.peers)
  SLUICE_IT_*  timeouts, see harness.py
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from typing import Any

import pytest

import harness as H

LISTENING_RE = re.compile(r"listening on http://127\.0\.0\.1:(\d+)/mcp")
STOP_TIMEOUT = float(os.environ.get("SLUICE_IT_STOP_TIMEOUT", "10"))
REAP_TIMEOUT = float(os.environ.get("SLUICE_IT_REAP_TIMEOUT", "10"))

# ------------------------------------------------------------------------------------------------
# Preconditions
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def peers() -> Path:
    missing = H.missing_peers()
    if missing:
        pytest.fail(f"test peers missing under {H.PEERS} (run scripts/test-peers.sh): {missing}", pytrace=False)
    return H.PEERS


@pytest.fixture(scope="session")
def sluice_bin() -> Path:
    b = H.SLUICE_BIN
    if not (b.is_file() and os.access(b, os.X_OK)):
        pytest.fail(f"sluice binary not found at {b} (build it, or set SLUICE_BIN)", pytrace=False)
    return b


# ------------------------------------------------------------------------------------------------
# Config files
# ------------------------------------------------------------------------------------------------


def toml_str(s: str) -> str:
    # A JSON string is a valid TOML basic string (same escapes; non-ASCII as \uXXXX).
    return json.dumps(s)


def toml_inline_table(d: dict[str, str]) -> str:
    return "{ " + ", ".join(f"{toml_str(k)} = {toml_str(v)}" for k, v in d.items()) + " }"


def write_config(
    path: Path,
    upstreams: dict[str, H.Upstream] | list[H.Upstream],
    *,
    server: dict[str, str] | None = None,
    remote: dict[str, dict[str, Any]] | None = None,
) -> Path:
    """Write a sluice.toml. `remote` maps name -> {"url": ..., "headers": {...}} for HTTP upstreams."""
    ups = list(upstreams.values()) if isinstance(upstreams, dict) else list(upstreams)
    lines = ["[server]"]
    for k, v in {"separator": H.SEPARATOR, "request_timeout": "60s", **(server or {})}.items():
        lines.append(f"{k} = {toml_str(v)}")
    for up in ups:
        lines += ["", "[[upstream]]", f"name = {toml_str(up.name)}", f"command = {toml_str(up.command)}"]
        lines.append("args = [" + ", ".join(toml_str(a) for a in up.args) + "]")
        if up.env:
            lines.append(f"env = {toml_inline_table(up.env)}")
    for name, r in (remote or {}).items():
        lines += ["", "[[upstream]]", f"name = {toml_str(name)}", f"url = {toml_str(r['url'])}"]
        # The test servers listen on loopback, which the outbound guard refuses unless allowed.
        if r.get("allow_private", True):
            lines.append("allow_private = true")
        if r.get("headers"):
            lines.append(f"headers = {toml_inline_table(r['headers'])}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_mcp_json(path: Path, upstreams: dict[str, H.Upstream] | list[H.Upstream]) -> Path:
    """Claude Desktop style {"mcpServers": {...}}."""
    ups = list(upstreams.values()) if isinstance(upstreams, dict) else list(upstreams)
    doc = {"mcpServers": {u.name: {"command": u.command, "args": list(u.args), "env": dict(u.env)} for u in ups}}
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def stdio_args(config: Path) -> list[str]:
    return ["serve", "--config", str(config), "--stdio"]


def stdio_server(config: Path, log_path: Path, *, extra_args: list[str] | None = None) -> Any:
    """A transport for `mcp.Client` that launches `sluice serve --config F --stdio`, with sluice's
    stderr (its logs) going to `log_path`."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    errlog = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed with the test session
    _OPEN_LOGS.append(errlog)
    params = StdioServerParameters(
        command=str(H.SLUICE_BIN),
        args=stdio_args(config) + (extra_args or []),
        env={"RUST_BACKTRACE": "1"},
    )
    return stdio_client(params, errlog=errlog)


_OPEN_LOGS: list[Any] = []


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    for f in _OPEN_LOGS:
        f.close()


def tail(path: Path, n: int = 40) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


# ------------------------------------------------------------------------------------------------
# Processes
# ------------------------------------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, state) from /proc."""
    table: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rfind(")") + 2 :].split()
        table[int(entry)] = (int(rest[1]), rest[0])
    return table


def descendants(pid: int) -> set[int]:
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for p, (pp, _) in table.items():
        children.setdefault(pp, []).append(p)
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def alive(pids: set[int]) -> set[int]:
    table = _proc_table()
    return {p for p in pids if p in table and table[p][1] != "Z"}


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    deadline = time.monotonic() + timeout
    left = alive(pids)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = alive(left)
    return left


def kill_leftovers(pids: set[int]) -> None:
    """Only for processes sluice started and failed to stop (collected by pid while it ran)."""
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


class SluiceServer:
    """`sluice serve ... --listen 127.0.0.1:0` as a child process.

    Its stderr is copied to `log_path` by a reader thread, which also picks the port out of the
    `listening on http://127.0.0.1:PORT/mcp` line.
    """

    def __init__(
        self, args: list[str], log_path: Path, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> None:
        self.args = [str(H.SLUICE_BIN), *args]
        self.cwd = cwd
        self.log_path = log_path
        self.env = {**os.environ, "RUST_BACKTRACE": "1", **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self._listening = threading.Event()
        self._lines: deque[str] = deque(maxlen=400)
        self._reader: threading.Thread | None = None
        self.children: set[int] = set()
        self.health_token: str | None = None
        self._children_lock = threading.Lock()
        self.last_health: dict[str, Any] | None = None

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self, timeout: float = H.CONNECT_TIMEOUT) -> SluiceServer:
        self.proc = subprocess.Popen(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
        )
        self._reader = threading.Thread(target=self._read_stderr, name="sluice-stderr", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not self._listening.wait(0.05):
            if self.proc.poll() is not None:
                self._reader.join(2)
                raise RuntimeError(
                    f"sluice exited with code {self.proc.returncode} before listening: {' '.join(self.args)}\n"
                    f"--- stderr ---\n{self.stderr_tail()}"
                )
            if time.monotonic() > deadline:
                self.stop(check=False)
                raise RuntimeError(f"sluice printed no 'listening on' line within {timeout}s\n{self.stderr_tail()}")
        return self

    def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        with open(self.log_path, "a", encoding="utf-8") as log:
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                self._lines.append(line)
                log.write(line + "\n")
                log.flush()
                if self.port is None and (m := LISTENING_RE.search(line)):
                    self.port = int(m.group(1))
                    self._listening.set()

    def stderr_tail(self, n: int = 40) -> str:
        return "\n".join(list(self._lines)[-n:])

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def note_children(self) -> set[int]:
        """Remember every process below sluice now, so a stop can check they are all gone."""
        if self.proc is not None and self.proc.poll() is None:
            found = descendants(self.proc.pid)
            with self._children_lock:
                self.children |= found
        return self.children

    def stop(self, check: bool = True) -> None:
        """SIGTERM, wait STOP_TIMEOUT, then check that sluice and all its upstreams exited.

        With check=True a failure to exit (sluice or any process it started) raises AssertionError,
        after killing the leftovers so nothing outlives the test run.
        """
        if self.proc is None:
            return
        self.note_children()
        problems = []
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                problems.append(f"sluice (pid {self.proc.pid}) still running {STOP_TIMEOUT}s after SIGTERM")
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(5)
        leftover = wait_gone(self.children, REAP_TIMEOUT)
        if leftover:
            problems.append(f"upstream processes still alive {REAP_TIMEOUT}s after sluice exited: {sorted(leftover)}")
            kill_leftovers(leftover)
        if check and problems:
            raise AssertionError("; ".join(problems) + f"\n--- sluice stderr ---\n{self.stderr_tail()}")

    # --- HTTP ------------------------------------------------------------------------------------

    def get(self, path: str, timeout: float = 5.0,
            headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
        req = urllib.request.Request(self.base + path, method="GET", headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 - loopback only
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def health(self) -> dict[str, Any]:
        # With [auth] on, only a verified caller sees the upstreams: `health_token` is one.
        headers = {"Authorization": f"Bearer {self.health_token}"} if self.health_token else None
        status, body, _ = self.get("/health", headers=headers)
        doc = json.loads(body)
        doc["_http_status"] = status
        self.last_health = doc
        return doc

    def wait_healthy(self, names: set[str], timeout: float = H.READY_TIMEOUT) -> dict[str, Any] | None:
        """Poll /health until every named upstream is "ready". Returns the last document (or None if
        /health never answered); does not raise, so the tests can report what was wrong."""
        deadline = time.monotonic() + timeout
        doc: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                break
            try:
                doc = self.health()
                if "upstreams" not in doc:
                    # [auth] is on and no health_token was given: only the summary, whose
                    # "ok" says every upstream is ready.
                    if doc.get("status") == "ok":
                        break
                else:
                    ups = doc.get("upstreams") or {}
                    if all((ups.get(n) or {}).get("state") == "ready" for n in names):
                        break
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        self.note_children()
        return doc


@pytest.fixture
def sluice_servers() -> Any:
    """Function-scoped: start SluiceServer instances through the returned callable; every one is
    stopped (and checked) at teardown."""
    started: list[SluiceServer] = []

    def start(
        config_args: list[str],
        log_path: Path,
        names: set[str],
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> SluiceServer:
        srv = SluiceServer(["serve", *config_args, "--listen", "127.0.0.1:0"], log_path, env=env, cwd=cwd)
        started.append(srv)
        srv.start()
        srv.wait_healthy(names)
        return srv

    yield start
    errors = []
    for srv in started:
        try:
            srv.stop()
        except AssertionError as e:
            errors.append(str(e))
    if errors:
        pytest.fail("\n".join(errors), pytrace=False)
