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
from test_console import ARTIFACTS, browser, click_through, text_of, visit  # noqa: F401 - browser is a fixture

HERE = Path(__file__).resolve().parent
LIFETIME = 3
LOGIN_REQUIRED = -32013


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def sluice(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(H.SLUICE_BIN), *args], capture_output=True, text=True, timeout=60, cwd=cwd,
                          env={**os.environ, **(env or {})})


def login(config: Path, env: dict[str, str] | None = None) -> str:
    """`sluice login notes --no-browser`, with this test as the browser; sluice's output."""
    proc = subprocess.Popen([str(H.SLUICE_BIN), "login", "notes", "--no-browser", "--timeout", "30s",
                             "--config", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
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


async def wait_for_whoami(client: Client) -> None:
    """Until sluice lists the upstream's tool (its catalog read after the upstream connected)."""
    for _ in range(100):
        if "notes__whoami" in [t.name for t in (await client.list_tools()).tools]:
            return
        await anyio.sleep(0.2)


async def call_whoami(config: Path, log: Path, calls: list[float]) -> list[Any]:
    """Connects through sluice and calls `notes__whoami` at each offset of `calls` (seconds from
    the first call); each outcome is the parsed answer or the MCPError."""
    outcomes: list[Any] = []
    with anyio.fail_after(120):
        async with Client(stdio_server(config, log), mode="legacy", cache=None,
                          read_timeout_seconds=H.OP_TIMEOUT) as client:
            await wait_for_whoami(client)
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
            await wait_for_whoami(client)
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


class Browser:
    """A browser's part of a login through sluice's pages: it keeps cookies per origin
    (sent back only to the origin that set them, as `__Host-` cookies are), follows no redirect
    by itself, and reads pages."""

    def __init__(self) -> None:
        self.cookies: dict[str, dict[str, str]] = {}
        self.opener = urllib.request.build_opener(_NoRedirect)

    def request(self, url: str, data: dict[str, str] | None = None) -> tuple[int, dict[str, str], str, list[str]]:
        from urllib.parse import urlencode, urlsplit

        origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
        jar = self.cookies.setdefault(origin, {})
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items())} if jar else {}
        body = urlencode(data).encode() if data is not None else None
        req = urllib.request.Request(url, data=body, headers=headers, method="POST" if data is not None else "GET")
        try:
            resp = self.opener.open(req, timeout=30)
        except urllib.error.HTTPError as e:
            resp = e
        set_cookies = resp.headers.get_all("Set-Cookie") or []
        for c in set_cookies:
            name, _, rest = c.partition("=")
            value = rest.split(";", 1)[0]
            if "Max-Age=0" in c:
                jar.pop(name, None)
            else:
                jar[name] = value
        return resp.status, dict(resp.headers), resp.read().decode("utf-8", "replace"), set_cookies


TOKENS = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdef"}
TOKEN_ENV = {"ALICE_TOKEN": TOKENS["alice"], "BOB_TOKEN": TOKENS["bob"]}


def principals_gateway(url: str, tmp_path: Path, sluice_servers: Any) -> tuple[Path, int]:
    """sluice over HTTP with [auth] (alice and bob) in front of the OAuth server, after
    sluice's own login (which reads the catalog): its config and port."""
    config = tmp_path / "sluice.toml"
    config.write_text(
        "[server]\nrequest_timeout = \"20s\"\n"
        "\n[auth]\nmode = \"bearer\"\n"
        "[[auth.token]]\nprincipal = \"alice\"\nenv = \"ALICE_TOKEN\"\n"
        "[[auth.token]]\nprincipal = \"bob\"\nenv = \"BOB_TOKEN\"\n"
        "\n[[upstream]]\nname = \"notes\"\n"
        f"url = {toml_str(url)}\nallow_private = true\nauth = \"oauth\"\n",
        encoding="utf-8",
    )
    login(config, TOKEN_ENV)
    srv = sluice_servers(["--config", str(config)], tmp_path / "sluice.log", {"notes"}, env=TOKEN_ENV,
                         cwd=tmp_path)
    return config, srv.port


async def call_as(port: int, who: str) -> Any:
    """`notes__whoami` through sluice as `who`: the parsed answer, or the MCPError."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKENS[who]}"},
                                  timeout=httpx2.Timeout(H.OP_TIMEOUT)) as http:
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http),
                          mode="legacy", cache=None) as client:
            try:
                return json.loads((await client.call_tool("notes__whoami", {})).content[0].text)
            except MCPError as e:
                return e


def test_each_principal_logs_in_for_itself_through_sluices_pages(
        notes_server: Any, tmp_path: Path, sluice_servers: Any) -> None:
    """With [auth], alice's calls use alice's login, never sluice's own nor bob's: her first
    call names her login page; the consent page, the server's authorization and the callback
    (single use, bound to her browser) put a login under her name in the vault."""
    url, server_state = notes_server
    config, port = principals_gateway(url, tmp_path, sluice_servers)
    operator_client = json.loads(server_state.read_text())
    env = TOKEN_ENV

    async def call(who: str) -> Any:
        return await call_as(port, who)

    first = anyio.run(call, "alice")
    assert isinstance(first, MCPError) and first.error.code == LOGIN_REQUIRED, first
    page_url = first.error.data["login"]
    assert page_url.startswith(f"http://127.0.0.1:{port}/oauth/login/notes?ticket="), page_url
    assert page_url in first.error.message, first.error.message

    browser = Browser()
    status_, headers, body, cookies = browser.request(page_url)
    assert status_ == 200, body
    assert "alice" in body and url in body and f"http://127.0.0.1:{port}/oauth/callback" in body, body
    assert "frame-ancestors 'none'" in headers["content-security-policy"], headers
    assert headers["x-frame-options"] == "DENY", headers
    assert any(c.startswith("__Host-sluice-consent=") and "Secure" in c and "HttpOnly" in c
               and "SameSite=Lax" in c and "Path=/" in c for c in cookies), cookies
    import re
    form = dict(re.findall(r'name="(ticket|consent)" value="([^"]+)"', body))
    assert set(form) == {"ticket", "consent"}, body

    # A cross-site POST carries no consent cookie: refused, nothing started.
    forged = Browser()
    assert forged.request(page_url.split("?")[0], form)[0] == 403
    before = json.loads(server_state.read_text())["authorizations"]
    assert before == operator_client["authorizations"]

    # Allow: to the authorization server, with the flow cookie set.
    status_, headers, _, cookies = browser.request(page_url.split("?")[0], form)
    assert status_ in (302, 303), status_
    assert any(c.startswith("__Host-sluice-login=") for c in cookies), cookies
    status_, headers, _, _ = browser.request(headers["location"])
    assert status_ in (302, 307), status_
    callback = headers["location"]
    assert callback.startswith(f"http://127.0.0.1:{port}/oauth/callback?"), callback
    # The callback from another browser (no flow cookie) is refused, and burns the state.
    stolen = Browser().request(callback)
    assert stolen[0] == 400 and "another browser" in stolen[2], stolen[2]
    # So alice starts again, and this time her own browser comes back.
    status_, _, body, _ = browser.request(page_url)
    form = dict(re.findall(r'name="(ticket|consent)" value="([^"]+)"', body))
    status_, headers, _, _ = browser.request(page_url.split("?")[0], form)
    status_, headers, _, _ = browser.request(headers["location"])
    status_, _, body, _ = browser.request(headers["location"])
    assert status_ == 200 and "Logged in" in body and "alice" in body, body
    # Used once: the same callback again finds no login under way.
    replay = browser.request(headers["location"])
    assert replay[0] == 400, replay

    alice = anyio.run(call, "alice")
    assert isinstance(alice, dict), alice
    bob = anyio.run(call, "bob")
    assert isinstance(bob, MCPError) and bob.error.code == LOGIN_REQUIRED, bob
    assert "/oauth/login/notes?ticket=" in bob.error.data["login"]
    # alice's token is her own login's client (registered at her consent), not sluice's own.
    client_ids = json.loads(server_state.read_text())["client_ids"]
    assert alice["client_id"] == client_ids[-1] != client_ids[0], (alice, client_ids)
    # sluice auth status shows each principal's login beside sluice's own.
    rows = json.loads(sluice("auth", "status", "--json", "--config", str(config), cwd=tmp_path,
                             env=env).stdout)["upstreams"]
    states = {(r.get("principal", ""), r["state"]) for r in rows}
    assert {("", "logged_in"), ("alice", "logged_in")} <= states, rows
    assert not any(r.get("principal") == "bob" for r in rows), rows
    # No token ever reached sluice's log.
    text = (tmp_path / "sluice.log").read_text()
    for token in json.loads(server_state.read_text())["issued"]:
        assert token not in text, "a token was logged"


def test_a_principal_logs_in_through_the_consent_page_in_chromium(
        notes_server: Any, tmp_path: Path, sluice_servers: Any, browser: Any) -> None:
    """The same login as a person makes it, in headless Chromium: the link from the error, the
    consent page, the Allow button; Chromium keeps the __Host- cookies of sluice's origin
    (http://127.0.0.1, a secure context), follows the authorization server's redirect back, and
    lands on sluice's "Logged in" page. Then alice's call goes through."""
    from selenium.webdriver.common.by import By

    url, _ = notes_server
    _, port = principals_gateway(url, tmp_path, sluice_servers)
    first = anyio.run(call_as, port, "alice")
    assert isinstance(first, MCPError) and first.error.code == LOGIN_REQUIRED, first
    visit(browser, first.error.data["login"], "oauth-consent")
    assert "Connect notes for alice?" in text_of(browser, "h1"), browser.page_source
    button = browser.find_element(By.CSS_SELECTOR, "form button[type=submit]")
    click_through(browser, button)
    browser.save_screenshot(str(ARTIFACTS / "oauth-logged-in.png"))
    assert text_of(browser, "h1") == "Logged in", browser.page_source
    assert "sluice logged alice in to notes" in text_of(browser, "p"), browser.page_source
    alice = anyio.run(call_as, port, "alice")
    assert isinstance(alice, dict) and alice["scopes"] == ["notes:read"], alice
