"""sluice in front of a real OAuth-protected MCP server: the Python SDK's authorization support
(`oauth_upstream.py`: the SDK's authorization server endpoints, protected resource metadata and
bearer check; an in-memory provider that approves at once).

One run, in order, as a user meets it:

1. Before any login, `sluice auth status` says so, and a client of `sluice serve` sees no tool of
   the upstream while sluice's log names the command to run.
2. `sluice login notes --no-browser` prints the authorization URL; the test is the browser (it
   follows the URL; the server redirects to sluice's loopback listener). The login is kept in the
   vault: no token issued appears in the vault's files, nor in sluice's log.
3. Through `sluice serve --stdio`, `whoami` answers with the token sluice registered for.
4. The access token lives 3 s: after it expired, a call still succeeds, because sluice refreshed it
   (the server counts one refresh grant more).
5. The server revokes every token: the next call is refused with -32013, naming `sluice login
   notes`, and `sluice auth status` says a login is needed. A new login puts it right, without
   restarting sluice.
6. `sluice logout notes` forgets it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

import harness as H
from conftest import stdio_server, tail, toml_str

HERE = Path(__file__).resolve().parent
LIFETIME = 3
LOGIN_REQUIRED = -32013


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def sluice(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(H.SLUICE_BIN), *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def login(config: Path) -> str:
    """`sluice login notes --no-browser`, with this test as the browser; sluice's output."""
    proc = subprocess.Popen([str(H.SLUICE_BIN), "login", "notes", "--no-browser", "--timeout", "30s",
                             "--config", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = next((line.strip() for line in proc.stdout if line.startswith("http")), None)
    assert url, f"no URL printed: {proc.communicate(timeout=30)}"
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        opener.open(url, timeout=10)
        raise AssertionError("the authorization endpoint did not redirect")
    except urllib.error.HTTPError as e:
        location = e.headers["location"]
    assert location.startswith("http://127.0.0.1:"), location
    with urllib.request.urlopen(location, timeout=10) as page:
        assert b"You can close this tab" in page.read()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, (out, err)
    return out


def status(config: Path) -> dict[str, Any]:
    done = sluice("auth", "status", "--json", "--config", str(config), cwd=config.parent)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["upstreams"][0]


@pytest.fixture
def notes_server(tmp_path: Path) -> Any:
    state = tmp_path / "server-state.json"
    proc = subprocess.Popen([sys.executable, str(HERE / "oauth_upstream.py"), str(state),
                             "--token-lifetime", str(LIFETIME)], stdout=subprocess.PIPE,
                            stderr=open(tmp_path / "server.log", "w"), text=True)  # noqa: SIM115
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), url
    yield url, state
    proc.terminate()
    proc.wait(timeout=10)


async def call_whoami(config: Path, log: Path, calls: list[float]) -> list[Any]:
    """Connects through sluice and calls `notes__whoami` at each offset of `calls` (seconds from
    the first call); each outcome is the parsed answer or the MCPError."""
    outcomes: list[Any] = []
    with anyio.fail_after(120):
        async with Client(stdio_server(config, log), mode="legacy", cache=None,
                          read_timeout_seconds=H.OP_TIMEOUT) as client:
            for _ in range(100):
                if "notes__whoami" in [t.name for t in (await client.list_tools()).tools]:
                    break
                await anyio.sleep(0.2)
            start = time.monotonic()
            for at in calls:
                await anyio.sleep(max(0.0, start + at - time.monotonic()))
                try:
                    result = await client.call_tool("notes__whoami", {})
                    outcomes.append(json.loads(result.content[0].text))
                except MCPError as e:
                    outcomes.append(e)
    return outcomes


def test_login_refresh_revocation_and_logout_against_a_real_oauth_server(notes_server: Any, tmp_path: Path) -> None:
    url, server_state = notes_server
    config = tmp_path / "sluice.toml"
    config.write_text(
        "[server]\nrequest_timeout = \"20s\"\n\n[[upstream]]\nname = \"notes\"\n"
        f"url = {toml_str(url)}\nallow_private = true\nauth = \"oauth\"\n",
        encoding="utf-8",
    )
    log = tmp_path / "sluice.log"

    # 1. Not logged in yet.
    assert status(config)["state"] == "not_logged_in"

    async def no_tools() -> list[str]:
        async with Client(stdio_server(config, log), mode="legacy", cache=None) as client:
            await anyio.sleep(1.0)
            return [t.name for t in (await client.list_tools()).tools]

    assert anyio.run(no_tools) == []
    assert "needs a login: run `sluice login notes`" in log.read_text(), tail(log)

    # 2. Log in; the vault holds nothing readable.
    out = login(config)
    assert "logged in to notes" in out and "client dynamic" in out, out
    issued = json.loads(server_state.read_text())["issued"]
    assert len(issued) == 2, issued  # one access and one refresh token
    vault_bytes = b"".join(p.read_bytes() for p in (tmp_path / ".sluice").glob("vault.db*"))
    assert vault_bytes, "no vault file"
    for token in issued:
        assert token.encode() not in vault_bytes, "a token is stored in the clear"
    st = status(config)
    assert (st["state"], st["scopes"], st["refreshable"]) == ("logged_in", ["notes:read"], True), st

    # 3 and 4. A call now, and one after the access token expired: refreshed on the way.
    before = json.loads(server_state.read_text())["refresh_grants"]
    outcomes = anyio.run(call_whoami, config, log, [0.0, LIFETIME + 1.5])
    assert all(isinstance(o, dict) for o in outcomes), outcomes
    assert outcomes[0]["scopes"] == ["notes:read"] and outcomes[0]["client_id"], outcomes
    assert outcomes[0] == outcomes[1], outcomes
    state = json.loads(server_state.read_text())
    assert state["refresh_grants"] >= before + 1, state
    assert state["code_grants"] == 1, state

    # 5. Revoked while sluice serves: the next call is refused with the login to run; a new
    # login (in another process, as a user would) puts it right without restarting sluice.
    revoke = urllib.request.Request(url.replace("/mcp", "/admin/revoke"), method="POST")

    async def revoked_then_relogin() -> list[Any]:
        got: list[Any] = []
        async with Client(stdio_server(config, log), mode="legacy", cache=None,
                          read_timeout_seconds=H.OP_TIMEOUT) as client:
            for _ in range(100):
                if "notes__whoami" in [t.name for t in (await client.list_tools()).tools]:
                    break
                await anyio.sleep(0.2)
            for step in ("before", "revoked", "after a new login"):
                if step == "revoked":
                    await anyio.to_thread.run_sync(lambda: urllib.request.urlopen(revoke, timeout=10))
                try:
                    got.append(json.loads((await client.call_tool("notes__whoami", {})).content[0].text))
                except MCPError as e:
                    got.append(e)
                    got.append(status(config)["state"])
                    await anyio.to_thread.run_sync(login, config)
        return got

    got = anyio.run(revoked_then_relogin)
    assert isinstance(got[0], dict), got
    refused = got[1]
    assert isinstance(refused, MCPError), got
    assert refused.error.code == LOGIN_REQUIRED, refused.error
    assert "run `sluice login notes`" in refused.error.message, refused.error
    assert refused.error.data["login"] == "sluice login notes", refused.error.data
    assert got[2] == "login_required", got
    assert isinstance(got[3], dict) and got[3]["scopes"] == ["notes:read"], got

    # No token issued ever reached sluice's log.
    text = log.read_text()
    for token in json.loads(server_state.read_text())["issued"]:
        assert token not in text, "a token was logged"

    # 6. Logged out.
    done = sluice("logout", "notes", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0 and "logged out of notes" in done.stdout, done
    assert status(config)["state"] == "not_logged_in"
    assert os.path.exists(tmp_path / ".sluice" / "vault.key")
