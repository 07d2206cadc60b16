"""Scale-out (issue 10): two `sluice serve` replicas on different ports, one real Redis.

* ``[ratelimit] backend = "redis"`` with a global 5/min: a client alternating between the replicas
  gets exactly 5 calls through in total; the 6th, on either replica, is refused with HTTP 429 and
  JSON-RPC -32011; another principal has its own 5.
* one audit table: both replicas write their decisions to the same PostgreSQL database
  (``[state] url``): after the rate-limit scenario it holds exactly one row per call, from both.
* legacy sessions: the official ``mcp`` 2.3.0 client in legacy mode, behind a round-robin proxy that
  sends each HTTP request to the next replica, opens its session on one replica and goes on on the
  other (each id carries its session, sealed with the shared ``cursor_secret``); another principal
  holding the id gets 404 on both.

The servers come from ``scripts/services.sh start`` (run by scripts/test.sh), which exports
``SLUICE_TEST_REDIS_URL`` and ``SLUICE_TEST_POSTGRES_URL``. Without them, or when they do not
answer, these tests fail: they are never skipped.

"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import socket
import subprocess
import time
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import harness as H
from conftest import toml_str

FIXTURE_BIN = Path(os.environ.get("SLUICE_FIXTURE_BIN") or H.REPO / "target" / "debug" / "sluice-fixture")
HTTP_TIMEOUT = 10.0
LEGACY_VERSION = "2025-11-25"
ALICE = "alice-token-" + secrets.token_hex(12)
BOB = "bob-token-" + secrets.token_hex(12)
RATE = 5  # calls per minute, per principal and tool, across all replicas
RATE_LIMITED = -32011


# ------------------------------------------------------------------------------------------------
# The services
# ------------------------------------------------------------------------------------------------


def _service_url(var: str) -> str:
    url = os.environ.get(var)
    if not url:
        pytest.fail(f"{var} is not set: start the test services first, eval \"$(scripts/services.sh start)\"",
                    pytrace=False)
    return url


def _redis_ping(url: str) -> None:
    u = urlparse(url)
    try:
        with socket.create_connection((u.hostname or "127.0.0.1", u.port or 6379), timeout=5) as s:
            s.sendall(b"PING\r\n")
            answer = s.recv(64)
    except OSError as e:
        pytest.fail(f"Redis at {url} does not answer ({e}): run scripts/services.sh start", pytrace=False)
    if not answer.startswith(b"+PONG"):
        pytest.fail(f"Redis at {url} answered {answer!r} to PING", pytrace=False)


def _postgres_reachable(url: str) -> None:
    u = urlparse(url)
    try:
        socket.create_connection((u.hostname or "127.0.0.1", u.port or 5432), timeout=5).close()
    except OSError as e:
        pytest.fail(f"PostgreSQL at {url} does not accept connections ({e}): run scripts/services.sh start",
                    pytrace=False)


@pytest.fixture(scope="module")
def redis_url() -> str:
    url = _service_url("SLUICE_TEST_REDIS_URL")
    _redis_ping(url)
    _postgres_reachable(_service_url("SLUICE_TEST_POSTGRES_URL"))
    return url


@pytest.fixture(scope="module")
def fixture_bin() -> Path:
    if not (FIXTURE_BIN.is_file() and os.access(FIXTURE_BIN, os.X_OK)):
        pytest.fail(f"sluice-fixture not found at {FIXTURE_BIN} (cargo build -p sluice-testkit)", pytrace=False)
    return FIXTURE_BIN


# ------------------------------------------------------------------------------------------------
# Two replicas
# ------------------------------------------------------------------------------------------------


def psql(url: str, sql: str) -> list[list[str]]:
    """Rows of `sql` run by the real PostgreSQL client, as lists of fields."""
    done = subprocess.run(["psql", url, "-XAtF", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        pytest.fail(f"psql failed on {sql!r}: {done.stderr}", pytrace=False)
    return [line.split("\t") for line in done.stdout.splitlines() if line]


@pytest.fixture
def audit_db() -> Iterator[str]:
    """A fresh PostgreSQL database for one test's audit rows, dropped after it."""
    server = _service_url("SLUICE_TEST_POSTGRES_URL")
    name = f"sluice_it_{secrets.token_hex(6)}"
    psql(server, f"CREATE DATABASE {name}")
    yield urlparse(server)._replace(path=f"/{name}").geturl()
    psql(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def replica_config(path: Path, fixture: Path, secret: str, key_prefix: str) -> Path:
    path.write_text(
        "\n".join([
            "[state]",
            f"cursor_secret = {toml_str(secret)}",
            # Both replicas write their audit rows to one database.
            'url = "${SCALEOUT_AUDIT_URL}"',
            "[auth]",
            'mode = "bearer"',
            "[[auth.token]]",
            'principal = "alice"',
            'env = "SCALEOUT_ALICE_TOKEN"',
            "[[auth.token]]",
            'principal = "bob"',
            'env = "SCALEOUT_BOB_TOKEN"',
            "[ratelimit]",
            f'default = "{RATE}/min"',
            'backend = "redis"',
            # Expanded from the environment, as a URL with a password would be.
            'redis_url = "${SLUICE_TEST_REDIS_URL}"',
            f"key_prefix = {toml_str(key_prefix)}",
            "[[upstream]]",
            'name = "fx"',
            f"command = {toml_str(str(fixture))}",
            'args = ["--era", "legacy"]',
        ]) + "\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def replicas(redis_url: str, audit_db: str, fixture_bin: Path, sluice_bin: Path, sluice_servers: Any,
             tmp_path: Path) -> list[Any]:
    """Two replicas sharing a cursor secret, a Redis key space and an audit database (fresh for
    each test)."""
    secret = secrets.token_hex(32)
    prefix = f"sluice-it:{secrets.token_hex(6)}:"
    env = {"SCALEOUT_ALICE_TOKEN": ALICE, "SCALEOUT_BOB_TOKEN": BOB, "SLUICE_TEST_REDIS_URL": redis_url,
           "SCALEOUT_AUDIT_URL": audit_db}
    out = []
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        config = replica_config(d / "sluice.toml", fixture_bin, secret, prefix)
        srv = sluice_servers(["--config", str(config)], d / "sluice.log", {"fx"}, env=env)
        out.append(srv)
    assert out[0].port != out[1].port
    return out


# ------------------------------------------------------------------------------------------------
# Raw HTTP
# ------------------------------------------------------------------------------------------------


def post(port: int, token: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
    try:
        conn.request("POST", "/mcp", body=json.dumps(body).encode(), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token}", **headers})
        r = conn.getresponse()
        raw = r.read().decode("utf-8", "replace")
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if "text/event-stream" in hdrs.get("content-type", ""):
            datas = [line[5:].strip() for line in raw.splitlines() if line.startswith("data:")]
            answers = [json.loads(d) for d in datas if '"id"' in d]
            doc = answers[-1] if answers else None
        else:
            doc = json.loads(raw) if raw.strip() else None
        return r.status, hdrs, doc
    finally:
        conn.close()


def modern_echo(port: int, token: str, text: str, request_id: int) -> tuple[int, dict[str, str], Any]:
    params = {"name": "fx__echo", "arguments": {"text": text},
              "_meta": {"io.modelcontextprotocol/protocolVersion": H.MODERN,
                        "io.modelcontextprotocol/clientCapabilities": {},
                        "io.modelcontextprotocol/clientInfo": {"name": "sluice-it-scaleout", "version": "0"}}}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return post(port, token, body, {"MCP-Protocol-Version": H.MODERN, "Mcp-Method": "tools/call",
                                    "Mcp-Name": "fx__echo"})


# ------------------------------------------------------------------------------------------------
# A round-robin load balancer
# ------------------------------------------------------------------------------------------------


class RoundRobin:
    """Sends each HTTP request to the next replica, streaming the answer back (SSE included), and
    records (method, JSON-RPC method, replica index, status) for every request."""

    HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "proxy-connection"}

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.turn = 0
        self.lock = threading.Lock()
        self.log: list[tuple[str, str | None, int, int]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: every answer ends with its connection, so a stream needs no re-chunking.
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                with proxy.lock:
                    index = proxy.turn % len(proxy.ports)
                    proxy.turn += 1
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                rpc_method = None
                if body:
                    try:
                        rpc_method = json.loads(body).get("method")
                    except (ValueError, AttributeError):
                        pass
                headers = {k: v for k, v in self.headers.items() if k.lower() not in RoundRobin.HOP}
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.ports[index], timeout=H.OP_TIMEOUT * 3)
                try:
                    upstream.request(self.command, "/mcp", body=body, headers=headers)
                    r = upstream.getresponse()
                    with proxy.lock:
                        proxy.log.append((self.command, rpc_method, index, r.status))
                    self.send_response(r.status)
                    for k, v in r.getheaders():
                        if k.lower() not in RoundRobin.HOP:
                            self.send_header(k, v)
                    self.end_headers()
                    while chunk := r.read1(65536):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except OSError:
                    pass  # the client or the replica went away: nothing left to relay
                finally:
                    upstream.close()

            do_GET = do_POST = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="round-robin", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/mcp"

    def __enter__(self) -> RoundRobin:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------------


def test_a_global_rate_limit_holds_across_replicas(replicas: list[Any], audit_db: str) -> None:
    ports = [r.port for r in replicas]
    outcomes = []
    for i in range(RATE + 3):
        port = ports[i % 2]
        status, headers, doc = modern_echo(port, ALICE, f"call {i}", 100 + i)
        outcomes.append((i % 2, status, headers, doc))
    passed = [o for o in outcomes if o[1] == 200 and "result" in o[3]]
    refused = [o for o in outcomes if o[1] == 429]
    assert len(passed) == RATE, outcomes
    assert {o[0] for o in passed} == {0, 1}, "both replicas served calls"
    assert [o[3]["result"]["content"][0]["text"] for o in passed] == [f"call {i}" for i in range(RATE)]
    # The 6th and later, on either replica, are refused by sluice itself.
    assert len(refused) == 3 and {o[0] for o in refused} == {0, 1}, outcomes
    for _, _, headers, doc in refused:
        assert doc["error"]["code"] == RATE_LIMITED, doc
        # One call every 12 s after a burst of 5 per minute.
        assert 0 < doc["error"]["data"]["retryAfterMs"] <= 12_000, doc
        assert 1 <= int(headers["retry-after"]) <= 12, headers
    # bob's allowance is his own, and global too.
    bob = [modern_echo(ports[i % 2], BOB, "bob", 200 + i)[0] for i in range(RATE + 1)]
    assert bob == [200] * RATE + [429], bob

    # One audit table: a row for each of the 14 calls, 7 decided by each replica (rows are
    # written in batches at most 200 ms late).
    expected = [["alice", "ok", str(RATE)], ["alice", "rate_limited", "3"],
                ["bob", "ok", str(RATE)], ["bob", "rate_limited", "1"]]
    query = ("SELECT principal, decision, count(*) FROM audit_log "
             "WHERE method = 'tools/call' AND upstream = 'fx' AND target = 'fx__echo' "
             "GROUP BY principal, decision ORDER BY principal, decision")
    deadline = time.monotonic() + 10
    while (rows := psql(audit_db, query)) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert rows == expected
    # Nothing of the calls' content is in the table.
    dump = "\n".join("\t".join(r) for r in psql(audit_db, "SELECT a::text FROM audit_log a"))
    assert len(dump.splitlines()) == 2 * RATE + 4
    for absent in ("call 0", ALICE, BOB):
        assert absent not in dump, absent


async def _legacy_session_through(url: str, token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with anyio.fail_after(H.CONNECT_TIMEOUT + 4 * H.OP_TIMEOUT):
        timeout = httpx2.Timeout(H.OP_TIMEOUT, read=H.OP_TIMEOUT * 3)
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None,
                              read_timeout_seconds=H.OP_TIMEOUT) as client:
                out["version"] = client.protocol_version
                out["tools"] = [t["name"] for t in (await H.drain(client, "tools")).items]
                texts = []
                for i in range(3):
                    result = await client.call_tool("fx__echo", {"text": f"legacy {i}"})
                    texts.append([c.text for c in result.content if getattr(c, "type", None) == "text"])
                out["texts"] = texts
    return out


def test_a_legacy_session_goes_on_across_replicas(replicas: list[Any]) -> None:
    with RoundRobin([r.port for r in replicas]) as lb:
        out = anyio.run(_legacy_session_through, lb.url, ALICE)
        log = list(lb.log)
    assert out["version"] == LEGACY_VERSION, out
    assert "fx__echo" in out["tools"], out
    assert out["texts"] == [["legacy 0"], ["legacy 1"], ["legacy 2"]], out
    # initialize on one replica, the session's later requests on both, none refused.
    posts = [(rpc, index, status) for method, rpc, index, status in log if method == "POST"]
    assert posts[0][0] == "initialize", log
    served_by = {index for rpc, index, _ in posts if rpc not in (None, "initialize")}
    assert served_by == {0, 1}, log
    assert all(status < 400 for _, _, status in posts), log


def test_a_legacy_session_id_is_no_key_for_another_principal_on_any_replica(replicas: list[Any]) -> None:
    a, b = (r.port for r in replicas)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                       "clientInfo": {"name": "sluice-it-scaleout", "version": "0"}}}
    status, headers, _ = post(a, ALICE, init, {})
    sid = headers.get("mcp-session-id")
    assert status == 200 and sid, headers
    assert "alice" not in sid
    session = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY_VERSION}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "fx__echo", "arguments": {"text": "mine"}}}
    for port in (b, a):
        status, _, doc = post(port, BOB, call, session)
        assert status == 404, doc
    status, _, doc = post(b, ALICE, call, session)
    assert status == 200 and doc["result"]["content"][0]["text"] == "mine", doc
