"""Auth on sluice's HTTP endpoint (issue 7), against the real binary.

* ``[auth] mode = "oauth"``: sluice is an OAuth 2.1 resource server. A fake authorization server
  (``authserver.FakeAuthServer``: RFC 8414 + OIDC metadata, a JWKS with an RSA and an EC key, a
  counter of JWKS fetches) mints the tokens. Checked: the 401 challenge, the protected resource
  metadata (PRM) at both paths, /health without a token, every kind of bad token (401
  ``invalid_token``), good RS256 and ES256 tokens through a whole session with the official
  ``mcp`` 2.3.0 client in both eras, key rotation (one refetch), a flood of unknown kids (a bounded
  number of fetches), an authorization server whose metadata names another issuer, per-tool scopes
  (``[[auth.require]]``: 403 ``insufficient_scope``, JSON-RPC -32012).
* ``mode = "bearer"``: static tokens per principal (env and file); a legacy session is bound to the
  principal that opened it (another principal gets 404).
* token passthrough: an HTTP upstream that records every header it receives never sees the
  client's token, only its own configured ``Authorization``.
* bind: a non-loopback ``listen`` without auth is a configuration error (exit 78).

The upstream is ``sluice-fixture`` (crates/sluice-testkit) on stdio: its ``echo`` tool returns its
``text`` argument as one text block. Raw requests go through ``http.client`` (no proxy, no
redirects); every network wait has a timeout. The sluice port is chosen before start (a free
port, then ``--listen 127.0.0.1:PORT``) so that ``[auth] resource`` can name it.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import threading
import time
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import harness as H
from authserver import FakeAuthServer
from conftest import SluiceServer, descendants, kill_leftovers, toml_str, wait_gone

FIXTURE_BIN = Path(os.environ.get("SLUICE_FIXTURE_BIN") or H.REPO / "target" / "debug" / "sluice-fixture")
HTTP_TIMEOUT = 10.0  # one raw HTTP exchange with sluice
EXIT_CONFIG = 78
LEGACY_VERSION = "2025-11-25"
MODERN = H.MODERN
ECHO_TEXT = 'auth héllo ✓ "quoted"'
WILDCARD_SCOPES = {"*", "all", "full-access", "full_access", "admin", "root"}
SCOPES_SUPPORTED = ["mcp:tools", "echo:call"]
REQUIRED_SCOPES = ["mcp:tools"]
UPSTREAM_OWN_SECRET = "upstream-own-secret"
REFETCH_WINDOW = 10.0  # spec: an unknown kid triggers at most one JWKS refetch per 10 s per issuer


def cargo_version() -> str:
    with open(H.REPO / "Cargo.toml", "rb") as f:
        return tomllib.load(f)["workspace"]["package"]["version"]


@pytest.fixture(scope="session")
def fixture_bin() -> Path:
    if not (FIXTURE_BIN.is_file() and os.access(FIXTURE_BIN, os.X_OK)):
        pytest.fail(f"sluice-fixture not found at {FIXTURE_BIN} (cargo build -p sluice-testkit)", pytrace=False)
    return FIXTURE_BIN


# ------------------------------------------------------------------------------------------------
# Raw HTTP
# ------------------------------------------------------------------------------------------------


@dataclass
class Resp:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        values = self.all(name)
        return ", ".join(values) if values else None

    def all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]

    @property
    def content_type(self) -> str:
        return (self.header("content-type") or "").lower()

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages of the body (a JSON body, or the data of each SSE event)."""
        text = self.body.decode("utf-8", errors="replace")
        if "text/event-stream" in self.content_type:
            out = []
            for event in re.split(r"\r?\n\r?\n", text):
                data = "\n".join(line[5:].lstrip(" ") for line in event.splitlines() if line.startswith("data:"))
                if data.strip():
                    out.append(json.loads(data))
            return out
        return [json.loads(text)] if text.strip() else []

    def rpc(self, request_id: Any = None) -> dict[str, Any]:
        """The answer to `request_id` (or the only/last answer)."""
        msgs = [m for m in self.messages() if "result" in m or "error" in m]
        for m in msgs:
            if request_id is not None and m.get("id") == request_id:
                return m
        if not msgs:
            raise AssertionError(f"no JSON-RPC answer in: {self}")
        return msgs[-1]

    def __str__(self) -> str:
        hdrs = "; ".join(f"{k}: {v}" for k, v in self.headers)
        return f"HTTP {self.status} [{hdrs}] {self.body[:2000]!r}"


def request(port: int, method: str, path: str, *, body: Any = None, headers: dict[str, str] | None = None,
            read_body: bool = True, timeout: float = HTTP_TIMEOUT) -> Resp:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode("utf-8"))
        hdrs = dict(headers or {})
        if data is not None:
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        raw = r.read() if read_body else b""
        return Resp(r.status, list(r.getheaders()), raw)
    finally:
        conn.close()


def auth_header(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


def legacy_post(port: int, token: str | None, method: str, params: dict[str, Any] | None = None, *,
                session: str | None = None, request_id: int = 1, extra: dict[str, str] | None = None) -> Resp:
    headers = {"Accept": "application/json, text/event-stream", **auth_header(token), **(extra or {})}
    if session is not None:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = LEGACY_VERSION
    msg = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
    return request(port, "POST", "/mcp", body=msg, headers=headers)


def initialize_params() -> dict[str, Any]:
    return {"protocolVersion": LEGACY_VERSION, "capabilities": {},
            "clientInfo": {"name": "sluice-it-auth", "version": "0"}}


def legacy_open(port: int, token: str | None) -> tuple[Resp, str | None]:
    """initialize + notifications/initialized. Returns (initialize's answer, session id)."""
    r = legacy_post(port, token, "initialize", initialize_params(), request_id=0)
    sid = r.header("mcp-session-id")
    if r.status == 200 and sid:
        headers = {"Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid,
                   "MCP-Protocol-Version": LEGACY_VERSION, **auth_header(token)}
        note = request(port, "POST", "/mcp", body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers=headers)
        assert note.status == 202, f"notifications/initialized: {note}"
    return r, sid


def modern_post(port: int, token: str | None, method: str, params: dict[str, Any] | None = None, *,
                request_id: int = 1, extra: dict[str, str] | None = None) -> Resp:
    """A stateless 2026-07-28 request (headers mirror the body, `_meta` present)."""
    p = dict(params or {})
    p["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/clientInfo": {"name": "sluice-it-auth", "version": "0"}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": method, **auth_header(token), **(extra or {})}
    if method in ("tools/call", "prompts/get"):
        headers["Mcp-Name"] = p["name"]
    msg = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": p}
    return request(port, "POST", "/mcp", body=msg, headers=headers)


def echo_call(port: int, token: str | None, era: str, text: str = ECHO_TEXT, *, tool: str = "fx__echo",
              request_id: int = 7) -> Resp:
    """One tools/call of the fixture's echo in the given era (legacy: opens a session first)."""
    params = {"name": tool, "arguments": {"text": text}}
    if era == "legacy":
        init, sid = legacy_open(port, token)
        assert init.status == 200 and sid, f"initialize failed: {init}"
        return legacy_post(port, token, "tools/call", params, session=sid, request_id=request_id)
    return modern_post(port, token, "tools/call", params, request_id=request_id)


def result_texts(answer: dict[str, Any]) -> list[str]:
    return [c.get("text") for c in answer.get("result", {}).get("content", []) if c.get("type") == "text"]


# --- WWW-Authenticate --------------------------------------------------------------------------

_PARAM = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*"((?:[^"\\]|\\.)*)"')


def challenge(r: Resp) -> tuple[str, dict[str, str]]:
    """(the raw WWW-Authenticate value, its auth-params). Asserts one Bearer challenge."""
    values = r.all("www-authenticate")
    assert len(values) == 1, f"expected exactly one WWW-Authenticate header: {r}"
    raw = values[0]
    assert raw.startswith("Bearer "), f"not a Bearer challenge: {raw!r}"
    return raw, {k: v for k, v in _PARAM.findall(raw[len("Bearer "):])}


def assert_unauthorized_body(r: Resp) -> None:
    assert "application/json" in r.content_type, str(r)
    doc = json.loads(r.body)
    assert doc.get("jsonrpc") == "2.0", doc
    assert "id" in doc and doc["id"] is None, doc
    assert doc["error"]["code"] == -32600, doc
    assert doc["error"]["message"].startswith("Unauthorized"), doc


def find_key(doc: Any, key: str) -> bool:
    if isinstance(doc, dict):
        return key in doc or any(find_key(v, key) for v in doc.values())
    if isinstance(doc, list):
        return any(find_key(v, key) for v in doc)
    return False


# ------------------------------------------------------------------------------------------------
# Configs and sluice
# ------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(toml_str(x) for x in items) + "]"


def server_block(listen: str | None = None) -> str:
    lines = ["[server]", f"separator = {toml_str(H.SEPARATOR)}", 'request_timeout = "60s"']
    if listen is not None:
        lines.append(f"listen = {toml_str(listen)}")
    return "\n".join(lines) + "\n"


def fixture_upstream(name: str = "fx") -> str:
    return f'\n[[upstream]]\nname = {toml_str(name)}\ncommand = {toml_str(str(FIXTURE_BIN))}\nargs = []\n'


def http_upstream(name: str, url: str, *, headers: dict[str, str] | None = None, allow_private: bool = True) -> str:
    text = f"\n[[upstream]]\nname = {toml_str(name)}\nurl = {toml_str(url)}\n"
    if allow_private:
        text += "allow_private = true\n"
    if headers:
        text += "headers = { " + ", ".join(f"{toml_str(k)} = {toml_str(v)}" for k, v in headers.items()) + " }\n"
    return text


def require_blocks(requires: list[tuple[str, str | None, list[str]]]) -> str:
    text = ""
    for upstream, tool, scopes in requires:
        text += f"\n[[auth.require]]\nupstream = {toml_str(upstream)}\n"
        if tool is not None:
            text += f"tool = {toml_str(tool)}\n"
        text += f"scopes = {toml_list(scopes)}\n"
    return text


def oauth_block(resource: str, issuer: str, *, jwks_url: str | None = None, allow_private: bool = True,
                scopes_supported: list[str] | None = None, required_scopes: list[str] | None = None,
                requires: list[tuple[str, str | None, list[str]]] | None = None) -> str:
    text = (
        "\n[auth]\n"
        'mode = "oauth"\n'
        f"resource = {toml_str(resource)}\n"
        f"scopes_supported = {toml_list(scopes_supported if scopes_supported is not None else SCOPES_SUPPORTED)}\n"
        f"required_scopes = {toml_list(required_scopes if required_scopes is not None else REQUIRED_SCOPES)}\n"
        "\n[[auth.issuer]]\n"
        f"issuer = {toml_str(issuer)}\n"
    )
    if jwks_url is not None:
        text += f"jwks_url = {toml_str(jwks_url)}\n"
    if allow_private:
        text += "allow_private = true\n"
    return text + require_blocks(requires or [])


@dataclass
class BearerToken:
    principal: str
    value: str
    env: str | None = None
    file: str | None = None
    scopes: list[str] | None = None


def bearer_block(tokens: list[BearerToken], requires: list[tuple[str, str | None, list[str]]] | None = None) -> str:
    text = '\n[auth]\nmode = "bearer"\n'
    for t in tokens:
        text += f"\n[[auth.token]]\nprincipal = {toml_str(t.principal)}\n"
        if t.env:
            text += f"env = {toml_str(t.env)}\n"
        if t.file:
            text += f"file = {toml_str(t.file)}\n"
        if t.scopes is not None:
            text += f"scopes = {toml_list(t.scopes)}\n"
    return text + require_blocks(requires or [])


@dataclass
class Gateway:
    srv: SluiceServer
    port: int
    config: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def resource_metadata(self) -> str:
        return f"http://127.0.0.1:{self.port}/.well-known/oauth-protected-resource/mcp"

    def log_text(self) -> str:
        try:
            return self.srv.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


@contextmanager
def running_sluice(tmp: Path, make_config: Any, names: set[str], env: dict[str, str] | None = None,
                   token: Any = None) -> Iterator[Gateway]:
    """Pick a free port, write the config `make_config(port)`, start `sluice serve --listen
    127.0.0.1:PORT`, wait until the named upstreams are ready (seen with the credential
    `token(port)` when given: /health shows the upstreams only to a verified caller); stop (and
    check) it at the end."""
    attempts = 3
    srv: SluiceServer | None = None
    for attempt in range(attempts):
        port = free_port()
        cfg = tmp / "sluice.toml"
        cfg.write_text(make_config(port), encoding="utf-8")
        srv = SluiceServer(["serve", "--config", str(cfg), "--listen", f"127.0.0.1:{port}"],
                           tmp / "sluice.log", env=env)
        try:
            srv.start()
        except RuntimeError as e:
            # Someone took the port between our probe and sluice's bind: try another one.
            if "cannot listen" in str(e) and attempt + 1 < attempts:
                continue
            raise
        break
    assert srv is not None and srv.port == port, f"sluice listens on {srv.port if srv else None}, not {port}"
    if token is not None:
        srv.health_token = token(port)
    try:
        doc = srv.wait_healthy(names) or {}
        if "upstreams" in doc:
            ups = doc["upstreams"] or {}
            not_ready = {n: ups.get(n) for n in names if (ups.get(n) or {}).get("state") != "ready"}
        else:
            not_ready = {} if doc.get("status") == "ok" else {"status": doc.get("status")}
        assert not not_ready, f"upstreams not ready: {not_ready}\n--- sluice stderr ---\n{srv.stderr_tail()}"
        yield Gateway(srv, port, cfg)
    finally:
        srv.stop()


@contextmanager
def auth_server(**kw: Any) -> Iterator[FakeAuthServer]:
    a = FakeAuthServer(**kw).start()
    try:
        yield a
    finally:
        a.stop()


async def _mcp_session(url: str, token: str, mode: str, text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with anyio.fail_after(H.CONNECT_TIMEOUT + 3 * H.OP_TIMEOUT):
        timeout = httpx2.Timeout(H.OP_TIMEOUT, read=H.OP_TIMEOUT * 3)
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=mode, cache=None, read_timeout_seconds=H.OP_TIMEOUT) as client:
                out["version"] = client.protocol_version
                out["tools"] = [t["name"] for t in (await H.drain(client, "tools")).items]
                with anyio.fail_after(H.OP_TIMEOUT):
                    result = await client.call_tool("fx__echo", {"text": text})
                out["is_error"] = bool(result.is_error)
                out["texts"] = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    return out


def mcp_session(url: str, token: str, mode: str, text: str = ECHO_TEXT) -> dict[str, Any]:
    return anyio.run(_mcp_session, url, token, mode, text)


def run_bounded(args: list[str], timeout: float = 20.0, env: dict[str, str] | None = None) -> tuple[int | None, str]:
    """Run the sluice binary; returns (exit code or None if it had to be stopped, stderr). A run
    that does not end in time is stopped with SIGTERM (then SIGKILL) with all it started."""
    proc = subprocess.Popen([str(H.SLUICE_BIN), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, err.decode("utf-8", "replace") + out.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        kids = descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate(timeout=10)
        kill_leftovers(wait_gone(kids, 10))
        return None, err.decode("utf-8", "replace") + out.decode("utf-8", "replace")


# ================================================================================================
# mode = "oauth": one sluice for the read-only checks
# ================================================================================================


@dataclass
class OAuthEnv:
    gw: Gateway
    a: FakeAuthServer
    down_port: int
    sent_tokens: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return self.gw.port

    @property
    def resource(self) -> str:
        return self.gw.url


@pytest.fixture(scope="module")
def oauth(tmp_path_factory: pytest.TempPathFactory, sluice_bin: Path, fixture_bin: Path) -> Iterator[OAuthEnv]:
    tmp = tmp_path_factory.mktemp("oauth")
    down_port = free_port()  # nothing listens there: an upstream that never comes up
    with auth_server() as a:

        def config(port: int) -> str:
            return (server_block() + oauth_block(f"http://127.0.0.1:{port}/mcp", a.issuer)
                    + fixture_upstream("fx") + http_upstream("down", f"http://127.0.0.1:{down_port}/mcp"))

        def token(port: int) -> str:
            return a.valid_rs256(f"http://127.0.0.1:{port}/mcp")

        with running_sluice(tmp, config, {"fx"}, token=token) as gw:
            yield OAuthEnv(gw, a, down_port)


@pytest.mark.parametrize("how", ["post-initialize", "post-modern-tools-list", "get", "delete"])
def test_oauth_no_token_is_401_with_challenge(oauth: OAuthEnv, how: str) -> None:
    port = oauth.port
    if how == "post-initialize":
        r = legacy_post(port, None, "initialize", initialize_params())
    elif how == "post-modern-tools-list":
        r = modern_post(port, None, "tools/list")
    elif how == "get":
        r = request(port, "GET", "/mcp", headers={"Accept": "text/event-stream"})
    else:
        r = request(port, "DELETE", "/mcp", headers={"Mcp-Session-Id": "0" * 32})
    assert r.status == 401, str(r)
    raw, params = challenge(r)
    assert params.get("realm") == "mcp", raw
    assert params.get("resource_metadata") == oauth.gw.resource_metadata, raw
    assert params.get("resource_metadata", "").endswith("/.well-known/oauth-protected-resource/mcp"), raw
    assert params.get("scope") == " ".join(REQUIRED_SCOPES), raw
    assert "error" not in params, f"no token was sent, so no error code (RFC 6750 3.1): {raw}"
    assert_unauthorized_body(r)


@pytest.mark.parametrize("value", ["Basic dXNlcjpwYXNzd29yZA==", "Bearer", "Bearer ", "Token abc.def.ghi"])
def test_oauth_malformed_authorization_is_401(oauth: OAuthEnv, value: str) -> None:
    r = modern_post(oauth.port, None, "tools/list", extra={"Authorization": value})
    assert r.status == 401, str(r)
    raw, params = challenge(r)
    assert params.get("realm") == "mcp", raw
    assert params.get("resource_metadata") == oauth.gw.resource_metadata, raw
    assert_unauthorized_body(r)


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"])
def test_oauth_protected_resource_metadata(oauth: OAuthEnv, path: str) -> None:
    r = request(oauth.port, "GET", path)  # no token: the PRM is how a client learns where to get one
    assert r.status == 200, str(r)
    assert "application/json" in r.content_type, str(r)
    doc = json.loads(r.body)
    assert doc["resource"] == oauth.resource, doc
    assert doc["authorization_servers"] == [oauth.a.issuer], doc
    assert doc["scopes_supported"] == SCOPES_SUPPORTED, doc
    assert doc["bearer_methods_supported"] == ["header"], doc
    assert not (set(doc["scopes_supported"]) & WILDCARD_SCOPES), doc


def test_oauth_health_needs_no_token_and_tells_no_secrets(oauth: OAuthEnv) -> None:
    valid = {"Authorization": f"Bearer {oauth.a.valid_rs256(oauth.resource)}"}
    # Give the unreachable upstream time to fail (so a last_error exists inside sluice).
    deadline = time.monotonic() + 15
    doc: dict[str, Any] = {}
    while time.monotonic() < deadline:
        doc = json.loads(request(oauth.port, "GET", "/health", headers=valid).body)
        if ((doc.get("upstreams") or {}).get("down") or {}).get("state") == "failed":
            break
        time.sleep(0.2)
    assert doc["upstreams"]["down"]["state"] == "failed", doc
    # Without a verified credential: the status and the version, and nothing else (S-7).
    for headers in ({}, {"Authorization": "Bearer not-a-valid-token"}):
        r = request(oauth.port, "GET", "/health", headers=headers)
        assert r.status == 200, str(r)
        assert json.loads(r.body) == {"status": "degraded", "version": cargo_version()}, r.body
    # With one, each upstream's state, and the failed one's (redacted) last error.
    r = request(oauth.port, "GET", "/health", headers=valid)
    doc = json.loads(r.body)
    assert set(doc["upstreams"]) == {"fx", "down"}, doc
    assert doc["upstreams"]["fx"]["state"] == "ready", doc
    assert find_key(doc, "last_error"), doc


@pytest.mark.parametrize("kind", FakeAuthServer.BAD_KINDS)
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_oauth_bad_token_is_401_invalid_token(oauth: OAuthEnv, kind: str, era: str) -> None:
    token = oauth.a.bad_token(kind, oauth.resource)
    oauth.sent_tokens.append(token)
    if era == "legacy":
        r = legacy_post(oauth.port, token, "initialize", initialize_params())
    else:
        r = modern_post(oauth.port, token, "tools/call", {"name": "fx__echo", "arguments": {"text": "x"}})
    assert r.status == 401, f"{kind}: {r}"
    raw, params = challenge(r)
    assert params.get("error") == "invalid_token", raw
    assert params.get("realm") == "mcp", raw
    assert params.get("resource_metadata") == oauth.gw.resource_metadata, raw
    assert params.get("scope") == " ".join(REQUIRED_SCOPES), raw
    assert_unauthorized_body(r)
    assert token not in r.body.decode("utf-8", "replace") and token not in raw, "the token is echoed back"
    assert r.header("mcp-session-id") is None, str(r)


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_oauth_valid_token_full_session_with_mcp_client(oauth: OAuthEnv, alg: str, mode: str) -> None:
    a = oauth.a
    token = a.valid_rs256(oauth.resource) if alg == "RS256" else a.valid_es256(oauth.resource)
    oauth.sent_tokens.append(token)
    out = mcp_session(oauth.gw.url, token, mode)
    assert out["version"] == (LEGACY_VERSION if mode == "legacy" else MODERN), out
    assert "fx__echo" in out["tools"], out
    assert out["is_error"] is False, out
    assert out["texts"] == [ECHO_TEXT], out


@pytest.mark.parametrize("variant", ["aud_list", "scp_array", "exp_within_skew", "extra_scopes"])
def test_oauth_valid_token_variants_raw(oauth: OAuthEnv, variant: str) -> None:
    a, res = oauth.a, oauth.resource
    now = int(time.time())
    if variant == "aud_list":
        token = a.valid_rs256(["https://another-resource.example.com", res])
    elif variant == "scp_array":
        token = a.sign(a.claims(res, scope=None, scp=["mcp:tools"]), a.ec)
    elif variant == "exp_within_skew":  # expired 5 s ago; clock_skew defaults to 60 s
        token = a.valid_rs256(res, exp=now - 5, iat=now - 600, nbf=now - 600)
    else:
        token = a.valid_es256(res, scope="openid mcp:tools profile")
    oauth.sent_tokens.append(token)
    r = echo_call(oauth.port, token, "modern")
    assert r.status == 200, str(r)
    answer = r.rpc(7)
    assert answer.get("id") == 7 and "error" not in answer, answer
    assert result_texts(answer) == [ECHO_TEXT], answer


def test_oauth_valid_token_raw_legacy_session(oauth: OAuthEnv) -> None:
    token = oauth.a.valid_rs256(oauth.resource)
    oauth.sent_tokens.append(token)
    init, sid = legacy_open(oauth.port, token)
    assert init.status == 200, str(init)
    assert sid, str(init)
    assert init.rpc(0)["result"]["protocolVersion"] == LEGACY_VERSION, init.rpc(0)
    listed = legacy_post(oauth.port, token, "tools/list", session=sid, request_id=2)
    assert listed.status == 200, str(listed)
    names = [t["name"] for t in listed.rpc(2)["result"]["tools"]]
    assert "fx__echo" in names, names
    called = legacy_post(oauth.port, token, "tools/call", {"name": "fx__echo", "arguments": {"text": ECHO_TEXT}},
                         session=sid, request_id=3)
    assert called.status == 200, str(called)
    assert result_texts(called.rpc(3)) == [ECHO_TEXT], called.rpc(3)
    # The same session without the token: refused, whatever the session id.
    r = legacy_post(oauth.port, None, "tools/list", session=sid, request_id=4)
    assert r.status == 401, str(r)


def test_oauth_missing_required_scope_is_403(oauth: OAuthEnv) -> None:
    token = oauth.a.valid_rs256(oauth.resource, scope="openid profile")
    oauth.sent_tokens.append(token)
    r = modern_post(oauth.port, token, "tools/list")
    assert r.status == 403, str(r)
    raw, params = challenge(r)
    assert params.get("error") == "insufficient_scope", raw
    assert params.get("scope") == " ".join(REQUIRED_SCOPES), raw
    assert params.get("resource_metadata") == oauth.gw.resource_metadata, raw


def test_oauth_session_is_bound_to_its_subject(oauth: OAuthEnv) -> None:
    a = oauth.a
    alice = a.valid_rs256(oauth.resource, subject="alice")
    bob = a.valid_es256(oauth.resource, subject="bob")
    oauth.sent_tokens += [alice, bob]
    init, sid = legacy_open(oauth.port, alice)
    assert init.status == 200 and sid, str(init)
    r = legacy_post(oauth.port, bob, "tools/list", session=sid, request_id=2)
    assert r.status == 404, f"bob used alice's session: {r}"
    r = legacy_post(oauth.port, alice, "tools/list", session=sid, request_id=3)
    assert r.status == 200 and "fx__echo" in [t["name"] for t in r.rpc(3)["result"]["tools"]], str(r)


def test_oauth_foreign_origin_is_403_before_auth(oauth: OAuthEnv) -> None:
    token = oauth.a.valid_rs256(oauth.resource)
    oauth.sent_tokens.append(token)
    evil = {"Origin": "https://evil.example.com"}
    r = modern_post(oauth.port, token, "tools/list", extra=evil)
    assert r.status == 403, str(r)
    r = request(oauth.port, "GET", "/health", headers=evil)
    assert r.status == 403, str(r)
    r = modern_post(oauth.port, token, "tools/list", extra={"Origin": f"http://localhost:{oauth.port}"})
    assert r.status == 200, str(r)


def test_oauth_tokens_never_reach_the_log(oauth: OAuthEnv) -> None:
    a, res = oauth.a, oauth.resource
    extra = [a.valid_rs256(res), a.valid_es256(res), *a.bad_tokens(res).values()]
    for t in extra:
        modern_post(oauth.port, t, "tools/list")
    oauth.sent_tokens += extra
    log = oauth.gw.log_text()
    assert log, "no sluice log"
    # JWTs: the signature part is the secret-bearing piece; no token may appear whole or signed.
    leaked = [t[:40] for t in oauth.sent_tokens if t in log or (t.count(".") == 2 and t.rsplit(".", 1)[1]
                                                                 and t.rsplit(".", 1)[1] in log)]
    assert not leaked, f"tokens in sluice's log: {leaked}"


# ================================================================================================
# mode = "oauth": keys, discovery, per-tool scopes (a sluice each)
# ================================================================================================


def test_oauth_key_rotation_is_picked_up_with_one_refetch(tmp_path: Path, sluice_bin: Path, fixture_bin: Path) -> None:
    with auth_server() as a:
        cfg = lambda port: server_block() + oauth_block(f"http://127.0.0.1:{port}/mcp", a.issuer) + fixture_upstream()  # noqa: E731
        with running_sluice(tmp_path, cfg, {"fx"}) as gw:
            r = echo_call(gw.port, a.valid_rs256(gw.url), "modern")
            assert r.status == 200, f"the first valid token: {r}"
            before = a.fetches()
            assert before >= 1, a.all_fetches()
            # The spec bounds refetches to one per 10 s per issuer; whether sluice's first fetch
            # opens that window is not said, so let the window pass before the rotation (a real
            # rotation comes long after sluice first fetched the keys).
            last = a.last_fetch()
            assert last is not None
            time.sleep(max(0.0, REFETCH_WINDOW + 0.5 - (time.monotonic() - last)))
            new_key = a.rotate()
            r = echo_call(gw.port, a.sign(a.claims(gw.url), new_key), "modern")
            assert r.status == 200, f"a token signed with the rotated-in key: {r}"
            assert result_texts(r.rpc(7)) == [ECHO_TEXT], r.rpc(7)
            assert a.fetches() - before == 1, f"JWKS fetches before {before}, now {a.all_fetches()}"
            # Now cached: the next token with that kid needs no fetch.
            r = echo_call(gw.port, a.sign(a.claims(gw.url), new_key), "modern", request_id=8)
            assert r.status == 200, str(r)
            assert a.fetches() - before == 1, a.all_fetches()
            # The old keys still work.
            assert echo_call(gw.port, a.valid_es256(gw.url), "modern").status == 200


def test_oauth_unknown_kid_flood_fetches_jwks_at_most_twice(tmp_path: Path, sluice_bin: Path,
                                                            fixture_bin: Path) -> None:
    with auth_server() as a:
        cfg = lambda port: server_block() + oauth_block(f"http://127.0.0.1:{port}/mcp", a.issuer) + fixture_upstream()  # noqa: E731
        with running_sluice(tmp_path, cfg, {"fx"}) as gw:
            r = echo_call(gw.port, a.valid_rs256(gw.url), "modern")
            assert r.status == 200, str(r)
            before = a.fetches()
            # Past the refetch window of the first fetch, so the flood can (and may once) refetch.
            last = a.last_fetch()
            assert last is not None, a.all_fetches()
            time.sleep(max(0.0, REFETCH_WINDOW + 0.5 - (time.monotonic() - last)))
            tokens = [a.unknown_kid(gw.url) for _ in range(20)]

            def one(tok: str) -> Resp:
                return modern_post(gw.port, tok, "tools/list")

            with ThreadPoolExecutor(max_workers=10) as pool:  # 10 at once ...
                results = list(pool.map(one, tokens[:10]))
            results += [one(t) for t in tokens[10:]]  # ... then 10 one after the other
            statuses = [x.status for x in results]
            assert statuses == [401] * 20, [str(x) for x in results if x.status != 401]
            for x in results:
                assert challenge(x)[1].get("error") == "invalid_token", str(x)
            fetched = a.fetches() - before
            assert fetched <= 2, f"{fetched} JWKS fetches for 20 unknown-kid tokens ({a.all_fetches()})"
            # The flood broke nothing.
            assert echo_call(gw.port, a.valid_es256(gw.url), "modern").status == 200


def test_oauth_metadata_naming_another_issuer_is_not_trusted(tmp_path: Path, sluice_bin: Path,
                                                             fixture_bin: Path) -> None:
    with auth_server(metadata_issuer="https://impostor.example.com") as a:
        cfg = lambda port: server_block() + oauth_block(f"http://127.0.0.1:{port}/mcp", a.issuer) + fixture_upstream()  # noqa: E731
        with running_sluice(tmp_path, cfg, {"fx"}) as gw:
            for token in (a.valid_rs256(gw.url), a.valid_es256(gw.url)):
                r = modern_post(gw.port, token, "tools/list")
                assert r.status == 401, f"accepted a token whose keys came from mismatched metadata: {r}"
                raw, params = challenge(r)
                assert params.get("error") == "invalid_token", raw
            assert a.fetches() == 0, f"the mismatched metadata's jwks_uri was fetched: {a.all_fetches()}"
            r = request(gw.port, "GET", "/health")
            assert r.status == 200 and json.loads(r.body)["status"] == "ok", str(r)


def test_oauth_explicit_jwks_url_skips_discovery(tmp_path: Path, sluice_bin: Path, fixture_bin: Path) -> None:
    # The metadata is wrong, but with jwks_url configured sluice never needs it.
    with auth_server(metadata_issuer="https://impostor.example.com") as a:
        def cfg(port: int) -> str:
            return (server_block() + oauth_block(f"http://127.0.0.1:{port}/mcp", a.issuer, jwks_url=a.jwks_url)
                    + fixture_upstream())

        with running_sluice(tmp_path, cfg, {"fx"}) as gw:
            r = echo_call(gw.port, a.valid_rs256(gw.url), "modern")
            assert r.status == 200, str(r)
            assert result_texts(r.rpc(7)) == [ECHO_TEXT], r.rpc(7)
            fetched = a.all_fetches()
            assert fetched.get(a.JWKS_PATH, 0) >= 1, fetched
            assert fetched.get(a.RFC8414_PATH, 0) == 0 and fetched.get(a.OIDC_PATH, 0) == 0, fetched


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory, sluice_bin: Path, fixture_bin: Path) -> Iterator[OAuthEnv]:
    tmp = tmp_path_factory.mktemp("scoped")
    with auth_server() as a:

        def config(port: int) -> str:
            return (server_block()
                    + oauth_block(f"http://127.0.0.1:{port}/mcp", a.issuer, requires=[("fx", "echo", ["echo:call"])])
                    + fixture_upstream("fx"))

        with running_sluice(tmp, config, {"fx"}) as gw:
            yield OAuthEnv(gw, a, 0)


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_scope_required_by_tool_is_403_without_it(scoped: OAuthEnv, era: str) -> None:
    token = scoped.a.valid_rs256(scoped.resource, scope="mcp:tools")
    r = echo_call(scoped.port, token, era)
    assert r.status == 403, str(r)
    raw, params = challenge(r)
    assert params.get("error") == "insufficient_scope", raw
    assert params.get("scope") == "echo:call", raw
    assert params.get("resource_metadata") == scoped.gw.resource_metadata, raw
    answer = r.rpc(7)
    assert answer.get("id") == 7, answer
    assert answer["error"]["code"] == -32012, answer
    assert answer["error"].get("data", {}).get("requiredScopes") == ["echo:call"], answer
    assert ECHO_TEXT not in r.body.decode("utf-8", "replace"), "the tool ran anyway"


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_scope_required_by_tool_other_tools_need_only_required_scopes(scoped: OAuthEnv, era: str) -> None:
    # `lossless` has no [[auth.require]]: mcp:tools is enough.
    token = scoped.a.valid_rs256(scoped.resource, scope="mcp:tools")
    params = {"name": "fx__lossless", "arguments": {}}
    if era == "legacy":
        init, sid = legacy_open(scoped.port, token)
        assert init.status == 200 and sid, str(init)
        r = legacy_post(scoped.port, token, "tools/call", params, session=sid, request_id=5)
    else:
        r = modern_post(scoped.port, token, "tools/call", params, request_id=5)
    assert r.status == 200, str(r)
    assert "result" in r.rpc(5), r.rpc(5)


@pytest.mark.parametrize("claim", ["scope", "scp"])
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_scope_required_by_tool_granted(scoped: OAuthEnv, claim: str, era: str) -> None:
    a = scoped.a
    if claim == "scope":
        token = a.valid_rs256(scoped.resource, scope="mcp:tools echo:call")
    else:
        token = a.sign(a.claims(scoped.resource, scope=None, scp=["mcp:tools", "echo:call"]), a.ec)
    r = echo_call(scoped.port, token, era)
    assert r.status == 200, str(r)
    assert result_texts(r.rpc(7)) == [ECHO_TEXT], r.rpc(7)


# ================================================================================================
# mode = "bearer"
# ================================================================================================


@dataclass
class BearerEnv:
    gw: Gateway
    alice: str
    bob: str
    carol: str

    @property
    def port(self) -> int:
        return self.gw.port


@pytest.fixture(scope="module")
def bearer(tmp_path_factory: pytest.TempPathFactory, sluice_bin: Path, fixture_bin: Path) -> Iterator[BearerEnv]:
    tmp = tmp_path_factory.mktemp("bearer")
    alice, bob, carol = ("it-" + who + "-" + secrets.token_urlsafe(24) for who in ("alice", "bob", "carol"))
    (tmp / "carol.token").write_text(carol + "\n", encoding="utf-8")
    tokens = [
        BearerToken("alice", alice, env="SLUICE_IT_TOKEN_ALICE", scopes=["echo:call"]),
        BearerToken("bob", bob, env="SLUICE_IT_TOKEN_BOB"),
        BearerToken("carol", carol, file="carol.token"),
    ]
    env = {"SLUICE_IT_TOKEN_ALICE": alice, "SLUICE_IT_TOKEN_BOB": bob}

    def config(port: int) -> str:
        return server_block() + bearer_block(tokens, requires=[("fx", "echo", ["echo:call"])]) + fixture_upstream("fx")

    with running_sluice(tmp, config, {"fx"}, env=env, token=lambda _port: alice) as gw:
        yield BearerEnv(gw, alice, bob, carol)


def test_bearer_no_token_is_401(bearer: BearerEnv) -> None:
    r = legacy_post(bearer.port, None, "initialize", initialize_params())
    assert r.status == 401, str(r)
    raw, params = challenge(r)
    assert params.get("realm") == "mcp", raw
    assert "error" not in params, raw
    assert "resource_metadata" not in params, f"no PRM in bearer mode, so no pointer to one: {raw}"
    assert_unauthorized_body(r)


@pytest.mark.parametrize("which", ["random", "alice-one-char-changed", "alice-prefix", "alice-plus-suffix",
                                   "alice-with-trailing-junk"])
def test_bearer_wrong_token_is_401(bearer: BearerEnv, which: str) -> None:
    a = bearer.alice
    extra: dict[str, str] = {}
    token: str | None
    if which == "random":
        token = "it-nobody-" + secrets.token_urlsafe(24)
    elif which == "alice-one-char-changed":
        token = a[:-1] + ("A" if a[-1] != "A" else "B")
    elif which == "alice-prefix":
        token = a[:-4]
    elif which == "alice-plus-suffix":
        token = a + "x"
    else:
        token, extra = None, {"Authorization": f"Bearer {a} junk"}
    r = legacy_post(bearer.port, token, "initialize", initialize_params(), extra=extra)
    assert r.status == 401, str(r)
    raw, params = challenge(r)
    assert params.get("realm") == "mcp", raw
    assert params.get("error") == "invalid_token", raw
    assert_unauthorized_body(r)
    assert r.header("mcp-session-id") is None, str(r)


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"])
def test_bearer_has_no_protected_resource_metadata(bearer: BearerEnv, path: str) -> None:
    r = request(bearer.port, "GET", path)
    assert r.status == 404, str(r)


def test_bearer_health_needs_no_token(bearer: BearerEnv) -> None:
    r = request(bearer.port, "GET", "/health")
    assert r.status == 200, str(r)
    assert json.loads(r.body) == {"status": "ok", "version": cargo_version()}, r.body
    r = request(bearer.port, "GET", "/health", headers={"Authorization": f"Bearer {bearer.bob}"})
    doc = json.loads(r.body)
    assert doc["version"] == cargo_version() and doc["upstreams"]["fx"]["state"] == "ready", doc


def test_bearer_session_is_bound_to_its_principal(bearer: BearerEnv) -> None:
    port = bearer.port
    init, sid = legacy_open(port, bearer.alice)
    assert init.status == 200 and sid, str(init)
    # bob, with a valid token of his own, presents alice's session: as if it did not exist.
    r = legacy_post(port, bearer.bob, "tools/list", session=sid, request_id=2)
    assert r.status == 404, f"bob used alice's session: {r}"
    r = legacy_post(port, bearer.bob, "tools/call", {"name": "fx__lossless", "arguments": {}}, session=sid,
                    request_id=3)
    assert r.status == 404, f"bob called a tool in alice's session: {r}"
    r = request(port, "GET", "/mcp", read_body=False, timeout=5,
                headers={"Accept": "text/event-stream", "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY_VERSION,
                         **auth_header(bearer.bob)})
    assert r.status == 404, f"bob opened alice's notification stream: {r}"
    r = request(port, "DELETE", "/mcp", headers={"Mcp-Session-Id": sid, **auth_header(bearer.bob)})
    assert r.status == 404, f"bob ended alice's session: {r}"
    # Without any token: 401, not a hint about the session.
    r = legacy_post(port, None, "tools/list", session=sid, request_id=4)
    assert r.status == 401, str(r)
    # alice is unaffected: her session still lists and calls.
    r = legacy_post(port, bearer.alice, "tools/list", session=sid, request_id=5)
    assert r.status == 200, str(r)
    assert "fx__echo" in [t["name"] for t in r.rpc(5)["result"]["tools"]], r.rpc(5)
    r = legacy_post(port, bearer.alice, "tools/call", {"name": "fx__echo", "arguments": {"text": ECHO_TEXT}},
                    session=sid, request_id=6)
    assert r.status == 200, str(r)
    assert result_texts(r.rpc(6)) == [ECHO_TEXT], r.rpc(6)
    # And alice can end it herself.
    r = request(port, "DELETE", "/mcp", headers={"Mcp-Session-Id": sid, **auth_header(bearer.alice)})
    assert r.status == 200, str(r)


def test_bearer_file_token_works(bearer: BearerEnv) -> None:
    r = modern_post(bearer.port, bearer.carol, "tools/list")
    assert r.status == 200, str(r)
    assert "fx__echo" in [t["name"] for t in r.rpc(1)["result"]["tools"]], r.rpc(1)


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_bearer_tool_scope(bearer: BearerEnv, era: str) -> None:
    r = echo_call(bearer.port, bearer.bob, era)
    assert r.status == 403, str(r)
    raw, params = challenge(r)
    assert params.get("error") == "insufficient_scope", raw
    assert params.get("scope") == "echo:call", raw
    answer = r.rpc(7)
    assert answer["error"]["code"] == -32012, answer
    assert answer["error"].get("data", {}).get("requiredScopes") == ["echo:call"], answer
    r = echo_call(bearer.port, bearer.alice, era)
    assert r.status == 200, str(r)
    assert result_texts(r.rpc(7)) == [ECHO_TEXT], r.rpc(7)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_bearer_full_session_with_mcp_client(bearer: BearerEnv, mode: str) -> None:
    out = mcp_session(bearer.gw.url, bearer.alice, mode)
    assert "fx__echo" in out["tools"], out
    assert out["texts"] == [ECHO_TEXT] and out["is_error"] is False, out


# ================================================================================================
# Token passthrough: the client's token never reaches an upstream
# ================================================================================================


class Recorder:
    """A legacy (2025-11-25) Streamable HTTP MCP server that records every request's headers.

    It answers `server/discover` with -32601 (so sluice falls back to `initialize`), mints a
    session on `initialize`, lists one tool `whoami` and answers its calls with a fixed text. GET
    is 405 (no notification stream), DELETE 200.
    """

    SESSION = "recorder-session-1"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[str, list[tuple[str, str]], bytes]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _record(self) -> bytes:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                with owner.lock:
                    owner.requests.append((self.command, list(self.headers.items()), body))
                return body

            def _json(self, status: int, doc: Any, extra: dict[str, str] | None = None) -> None:
                data = json.dumps(doc).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _empty(self, status: int) -> None:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                self._record()
                self._empty(405)

            def do_DELETE(self) -> None:  # noqa: N802
                self._record()
                self._empty(200)

            def do_POST(self) -> None:  # noqa: N802
                body = self._record()
                try:
                    msg = json.loads(body)
                except ValueError:
                    self._json(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
                    return
                method, rid = msg.get("method"), msg.get("id")
                if rid is None or method is None:  # a notification or a response
                    self._empty(202)
                    return
                if method == "initialize":
                    result = {"protocolVersion": LEGACY_VERSION, "capabilities": {"tools": {}},
                              "serverInfo": {"name": "recorder", "version": "1.0.0"}}
                    self._json(200, {"jsonrpc": "2.0", "id": rid, "result": result}, {"Mcp-Session-Id": owner.SESSION})
                elif method == "tools/list":
                    tool = {"name": "whoami", "description": "Says hello.",
                            "inputSchema": {"type": "object", "properties": {}}}
                    self._json(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool]}})
                elif method == "tools/call":
                    result = {"content": [{"type": "text", "text": "hello from the recorder"}], "isError": False}
                    self._json(200, {"jsonrpc": "2.0", "id": rid, "result": result})
                elif method == "ping":
                    self._json(200, {"jsonrpc": "2.0", "id": rid, "result": {}})
                else:
                    self._json(200, {"jsonrpc": "2.0", "id": rid,
                                     "error": {"code": -32601, "message": f"Method not found: {method}"}})

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> Recorder:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def snapshot(self) -> list[tuple[str, list[tuple[str, str]], bytes]]:
        with self.lock:
            return list(self.requests)


async def _passthrough_session(url: str, token: str, mode: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with anyio.fail_after(H.CONNECT_TIMEOUT + 3 * H.OP_TIMEOUT):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=httpx2.Timeout(H.OP_TIMEOUT, read=H.OP_TIMEOUT * 3)) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None,
                              read_timeout_seconds=H.OP_TIMEOUT) as client:
                out["tools"] = [t["name"] for t in (await H.drain(client, "tools")).items]
                with anyio.fail_after(H.OP_TIMEOUT):
                    result = await client.call_tool("rec__whoami", {})
                out["texts"] = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    return out


@pytest.mark.parametrize("own_header", [True, False], ids=["upstream-has-own-auth", "upstream-has-no-auth"])
@pytest.mark.parametrize("auth_mode", ["bearer", "oauth"])
def test_client_token_never_reaches_the_upstream(tmp_path: Path, sluice_bin: Path, auth_mode: str,
                                                 own_header: bool) -> None:
    own = f"Bearer {UPSTREAM_OWN_SECRET}"
    expected_auth = [own] if own_header else []
    with Recorder() as rec, auth_server() as a:
        client_token = "it-client-" + secrets.token_urlsafe(24)
        env = {"SLUICE_IT_TOKEN_CLIENT": client_token}

        def config(port: int) -> str:
            if auth_mode == "bearer":
                auth = bearer_block([BearerToken("client", client_token, env="SLUICE_IT_TOKEN_CLIENT")])
            else:
                auth = oauth_block(f"http://127.0.0.1:{port}/mcp", a.issuer)
            headers = {"Authorization": own} if own_header else None
            return server_block() + auth + http_upstream("rec", rec.url, headers=headers)

        with running_sluice(tmp_path, config, {"rec"}, env=env) as gw:
            if auth_mode == "oauth":
                client_token = a.valid_rs256(gw.url)
            before = len(rec.snapshot())
            results = {mode: anyio.run(_passthrough_session, gw.url, client_token, mode) for mode in ("legacy", MODERN)}
            for mode, out in results.items():
                assert "rec__whoami" in out["tools"], (mode, out)
                assert out["texts"] == ["hello from the recorder"], (mode, out)
            # Plus raw requests carrying the token in every way a client might.
            r = modern_post(gw.port, client_token, "tools/call", {"name": "rec__whoami", "arguments": {}})
            assert r.status == 200, str(r)
            seen = rec.snapshot()

    assert len(seen) > before, "the recorder saw nothing"
    calls = [(m, h, b) for m, h, b in seen[before:] if m == "POST" and b"tools/call" in b]
    assert len(calls) >= 3, f"expected the three tools/call to reach the upstream, saw {len(calls)}"
    secret_part = client_token.rsplit(".", 1)[-1]
    for method, headers, body in seen:
        for k, v in headers:
            assert client_token not in v and secret_part not in v, f"client token in upstream header {k}: {v[:60]}"
        assert client_token.encode() not in body and secret_part.encode() not in body, f"client token in a {method} body"
        auths = [v for k, v in headers if k.lower() == "authorization"]
        assert auths == expected_auth, f"{method}: the upstream got Authorization {auths!r}, expected {expected_auth!r}"


# ================================================================================================
# Binding beyond loopback needs auth
# ================================================================================================


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "10.1.2.3:8787", "0.0.0.0:8787"])
def test_config_check_refuses_public_listen_without_auth(tmp_path: Path, sluice_bin: Path, listen: str) -> None:
    cfg = tmp_path / "sluice.toml"
    cfg.write_text(server_block(listen) + fixture_upstream(), encoding="utf-8")
    code, out = run_bounded(["config", "check", "--config", str(cfg)])
    assert code == EXIT_CONFIG, f"exit {code}: {out}"
    assert "server.listen" in out and "auth" in out, out


@pytest.mark.parametrize("listen", ["127.0.0.1:0", "[::1]:0"])
def test_config_check_accepts_loopback_without_auth(tmp_path: Path, sluice_bin: Path, listen: str) -> None:
    cfg = tmp_path / "sluice.toml"
    cfg.write_text(server_block(listen) + fixture_upstream(), encoding="utf-8")
    code, out = run_bounded(["config", "check", "--config", str(cfg)])
    assert code == 0, f"exit {code}: {out}"


def test_config_check_accepts_public_listen_with_auth(tmp_path: Path, sluice_bin: Path) -> None:
    cfg = tmp_path / "sluice.toml"
    token = BearerToken("alice", "x", env="SLUICE_IT_TOKEN_ALICE")
    cfg.write_text(server_block("0.0.0.0:0") + bearer_block([token]) + fixture_upstream(), encoding="utf-8")
    code, out = run_bounded(["config", "check", "--config", str(cfg)],
                            env={"SLUICE_IT_TOKEN_ALICE": "it-alice-" + secrets.token_urlsafe(24)})
    assert code == 0, f"exit {code}: {out}"


def test_serve_refuses_public_listen_without_auth(tmp_path: Path, sluice_bin: Path, fixture_bin: Path) -> None:
    cfg = tmp_path / "sluice.toml"
    cfg.write_text(server_block("0.0.0.0:0") + fixture_upstream(), encoding="utf-8")
    code, out = run_bounded(["serve", "--config", str(cfg)])
    assert code == EXIT_CONFIG, f"exit {code}: {out}"
    assert "server.listen" in out and "auth" in out, out
    assert "listening on" not in out, out


def test_serve_refuses_public_listen_flag_without_auth(tmp_path: Path, sluice_bin: Path, fixture_bin: Path) -> None:
    # The config is fine (loopback); `--listen` overrides it with a public address.
    cfg = tmp_path / "sluice.toml"
    cfg.write_text(server_block("127.0.0.1:0") + fixture_upstream(), encoding="utf-8")
    code, out = run_bounded(["serve", "--config", str(cfg), "--listen", "0.0.0.0:0"])
    assert code == EXIT_CONFIG, f"exit {code}: {out}"
    assert "listening on" not in out, out
    assert "auth" in out, out


@pytest.mark.parametrize("wildcard", ["*", "all", "full-access"])
def test_config_check_refuses_wildcard_scopes(tmp_path: Path, sluice_bin: Path, wildcard: str) -> None:
    cfg = tmp_path / "sluice.toml"
    text = server_block() + oauth_block("https://mcp.example.com/mcp", "https://auth.example.com",
                                        allow_private=False, scopes_supported=["mcp:tools", wildcard])
    cfg.write_text(text + fixture_upstream(), encoding="utf-8")
    code, out = run_bounded(["config", "check", "--config", str(cfg)])
    assert code == EXIT_CONFIG, f"exit {code}: {out}"
    assert "scopes_supported" in out, out


def test_config_check_accepts_oauth(tmp_path: Path, sluice_bin: Path) -> None:
    cfg = tmp_path / "sluice.toml"
    text = server_block() + oauth_block("https://mcp.example.com/mcp", "https://auth.example.com", allow_private=False,
                                        requires=[("fx", "echo", ["echo:call"])])
    cfg.write_text(text + fixture_upstream(), encoding="utf-8")
    code, out = run_bounded(["config", "check", "--config", str(cfg)])
    assert code == 0, f"exit {code}: {out}"
