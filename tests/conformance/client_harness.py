"""Client under test for `conformance client`: sluice's upstream connector.

    conformance client --command "<python> tests/conformance/client_harness.py" --scenario S
    # the suite runs:  <python> client_harness.py <mock server URL>   with MCP_CONFORMANCE_SCENARIO=S

The suite's mock MCP server (Streamable HTTP, 2025-x) is configured as sluice's only upstream
(`[[upstream]] name = "mock"`, `url = <URL>`, `prefix = false`, so tool names are unchanged),
sluice is started as `sluice serve --stdio --config <that file>` by the official Python SDK
(`mcp` 2.3.0) client, and the scenario's action is performed *through* sluice. The suite then
judges what the mock server saw, i.e. what sluice's upstream connector did:

  initialize                           connect, list tools (the mock offers none)
  tools_call                           call add_numbers {a: 5, b: 3}
  sse-retry                            call test_reconnection (its answer needs an SSE resume:
                                       retry 500 ms, GET + Last-Event-ID)
  elicitation-sep1034-client-defaults  call test_client_elicitation_defaults; the upstream's
                                       elicitation/create is relayed by sluice to this client,
                                       which answers `accept` with each property's `default`
                                       (SEP-1034: the client fills in defaults), relayed back
  auth/*                               the mock is OAuth-protected: the upstream gets
                                       `auth = "oauth"` (with the scenario's pre-registered
                                       client from MCP_CONFORMANCE_CONTEXT, and a client ID
                                       metadata document URL); `sluice login mock --no-browser`
                                       is run and this harness plays the browser (it follows
                                       the printed URL to the mock authorization server, whose
                                       authorize endpoint approves at once, then takes its
                                       redirect to sluice's loopback listener). Then it lists
                                       the tools through sluice and calls each. When sluice
                                       answers -32013 (a login, or a step-up to more scopes, is
                                       needed) the harness logs in again, as a user told so
                                       would, and retries; -32014 (sluice stopped asking, the
                                       upstream refusing what a login grants) ends the run.
                                       Discovery, registration, PKCE, scopes, the token request
                                       and the retry limit are all sluice's.

Exit 0 only when the scenario's action succeeded through sluice with the expected answer;
otherwise 1 with the reason. sluice's stderr is copied to this process's stderr at the end
(the suite shows it, and saves it as stderr.txt with -o).

Environment:
  MCP_CONFORMANCE_SCENARIO  set by the suite (required)
  SLUICE_BIN                sluice binary (default <repo>/target/debug/sluice)
  HARNESS_MODE              client mode towards sluice: legacy (default) | auto | 2026-07-28
                            (legacy: sluice relays elicitation/create to the client as is;
                             auto/2026-07-28: sluice bridges it as an MRTR input_required result)
  HARNESS_TIMEOUT           seconds for the whole run (default 25, under the suite's 30 s)
  HARNESS_WAIT              seconds to wait for the upstream's tool to appear (default 10)
  SLUICE_LOG                passed to sluice (default "info")
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import subprocess
import urllib.error
import urllib.request

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult

REPO = Path(__file__).resolve().parents[2]
T0 = time.monotonic()

# scenario -> (tool to call or None, arguments, text the answer must start with)
SCENARIOS: dict[str, tuple[str | None, dict[str, Any], str | None]] = {
    "initialize": (None, {}, None),
    "tools_call": ("add_numbers", {"a": 5, "b": 3}, "The sum of 5 and 3 is 8"),
    "sse-retry": ("test_reconnection", {}, "Reconnection test completed successfully"),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}, "Elicitation completed"),
}


# The client ID metadata document URL the suite expects (auth/basic-cimd); the mock
# authorization server never fetches it.
CIMD_URL = "https://conformance-test.local/client-metadata.json"
LOGIN_REQUIRED, LOGIN_REFUSED = -32013, -32014


def log(msg: str) -> None:
    print(f"[harness +{time.monotonic() - T0:6.2f}s] {msg}", file=sys.stderr, flush=True)


ELICITATIONS: list[dict[str, Any]] = []


async def elicit_with_defaults(_ctx: Any, params: Any) -> ElicitResult:
    """What a form client does when the user accepts without typing: every property that has
    a `default` is filled in with it (SEP-1034). Records what arrived through sluice."""
    schema = getattr(params, "requested_schema", None) or {}
    ELICITATIONS.append({"message": getattr(params, "message", None), "requestedSchema": schema})
    log(f"elicitation/create through sluice: {json.dumps(ELICITATIONS[-1], sort_keys=True)}")
    content = {k: p["default"] for k, p in (schema.get("properties") or {}).items() if isinstance(p, dict) and "default" in p}
    log(f"answering accept with {json.dumps(content, sort_keys=True)}")
    return ElicitResult(action="accept", content=content)


def oauth_config(scenario: str) -> str:
    """`auth = "oauth"` and `[upstream.oauth]` for an auth/* scenario, else nothing."""
    if not scenario.startswith("auth/"):
        return ""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    table = f"client_metadata_url = {json.dumps(CIMD_URL)}\n"
    if context.get("client_id"):
        table += f"client_id = {json.dumps(context['client_id'])}\n"
    if context.get("client_secret"):
        table += 'client_secret = "${CONFORMANCE_CLIENT_SECRET}"\n'
    return 'auth = "oauth"\n[upstream.oauth]\n' + table


def write_config(work: Path, url: str, scenario: str) -> Path:
    cfg = work / "sluice.toml"
    cfg.write_text(
        "[server]\n"
        'request_timeout = "15s"\n'
        'startup_timeout = "10s"\n'
        'shutdown_grace = "1s"\n'
        "\n[state]\n"
        f"dir = {json.dumps(str(work / 'state'))}\n"
        "\n[[upstream]]\n"
        'name = "mock"\n'
        f"url = {json.dumps(url)}\n"
        "allow_private = true\n"
        "prefix = false\n"
        + oauth_config(scenario)
    )
    return cfg


def sluice_env() -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"),
           "SLUICE_LOG": os.environ.get("SLUICE_LOG", "info")}
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    if context.get("client_secret"):
        env["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
    return env


def login(sluice: str, cfg: Path, errlog: Any) -> str | None:
    """`sluice login mock --no-browser`, with this process as the browser; None when it
    logged in, else why not."""
    proc = subprocess.Popen(
        [sluice, "login", "mock", "--no-browser", "--timeout", "20s", "--config", str(cfg)],
        stdout=subprocess.PIPE, stderr=errlog, text=True, env=sluice_env(), cwd=str(cfg.parent),
    )
    assert proc.stdout is not None
    url = None
    for line in proc.stdout:
        if line.startswith("http://") or line.startswith("https://"):
            url = line.strip()
            break
    if url is None:
        proc.wait(timeout=20)
        return f"sluice login printed no URL (exit {proc.returncode})"
    log(f"authorization URL from sluice login: {url[:160]}")
    # The browser: the mock authorization server approves at once and redirects to sluice.
    status, location = get_without_redirect(url)
    if status not in (301, 302, 303, 307, 308) or not location:
        proc.kill()
        return f"the authorization endpoint answered {status}, not a redirect"
    with urllib.request.urlopen(location, timeout=10) as page:
        log(f"redirect to sluice ({location.split('?')[0]}): {page.status} {page.read()[-120:]!r}")
    out = proc.stdout.read()
    proc.wait(timeout=20)
    log(f"sluice login exit {proc.returncode}: {out.strip()}")
    return None if proc.returncode == 0 else f"sluice login failed (exit {proc.returncode})"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def get_without_redirect(url: str) -> tuple[int, str | None]:
    """GET `url`; its status and Location, a redirect not followed."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(url, timeout=10) as r:
            return r.status, r.headers.get("location")
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("location")


def auth_state(sluice: str, cfg: Path) -> str:
    """What `sluice auth status --json` says of the mock."""
    out = subprocess.run([sluice, "auth", "status", "--json", "--config", str(cfg)], capture_output=True,
                         text=True, env=sluice_env(), cwd=str(cfg.parent), timeout=20)
    try:
        return json.loads(out.stdout)["upstreams"][0]["state"]
    except (ValueError, KeyError, IndexError):
        return f"unknown ({out.stdout.strip()} {out.stderr.strip()})"


async def run_auth(scenario: str, client: Client, sluice: str, cfg: Path, errlog: Any) -> str | None:
    """List and call the mock's tools through sluice, logging in again when sluice says a
    login is needed."""
    for attempt in range(6):
        names = [t.name for t in await list_all_tools(client)]
        if not names:
            state = auth_state(sluice, cfg)
            log(f"no tools through sluice yet; sluice auth status: {state}")
            if state == "step_up_given_up":
                return None if scenario == "auth/scope-retry-limit" else "sluice gave up a step-up"
            if state in ("login_required", "not_logged_in"):
                if (reason := login(sluice, cfg, errlog)) is not None:
                    return reason
            await anyio.sleep(1.0)
            continue
        log(f"tools through sluice: {names}")
        try:
            for name in names:
                result = await client.call_tool(name, {})
                log(f"{name} -> isError={result.is_error} {[getattr(c, 'text', None) for c in result.content]}")
            return None
        except MCPError as e:
            log(f"call refused through sluice: {e.error.code} {e.error.message}")
            if e.error.code == LOGIN_REQUIRED:
                if (reason := login(sluice, cfg, errlog)) is not None:
                    return reason
                continue
            if e.error.code == LOGIN_REFUSED and scenario == "auth/scope-retry-limit":
                return None
            return f"tool call failed: {e.error.code} {e.error.message}"
    return "still not through after 6 attempts"


async def list_all_tools(client: Client) -> list[Any]:
    tools, cursor = [], None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


async def run(scenario: str, url: str, sluice: str, mode: str, errlog: Any, work: Path) -> str | None:
    """Returns None on success, else the reason for failing."""
    is_auth = scenario.startswith("auth/")
    tool, args, expect = SCENARIOS.get(scenario, (None, {}, None))
    cfg = write_config(work, url, scenario)
    log(f"scenario {scenario}: upstream {url}, sluice {sluice}, client mode {mode}")
    if is_auth and (reason := await anyio.to_thread.run_sync(login, sluice, cfg, errlog)) is not None:
        return reason
    params = StdioServerParameters(command=sluice, args=["serve", "--stdio", "--config", str(cfg)], env=sluice_env(), cwd=str(work))
    async with Client(
        stdio_client(params, errlog=errlog),
        mode=mode,
        cache=None,
        read_timeout_seconds=20,
        elicitation_callback=elicit_with_defaults,
    ) as client:
        log(f"connected to sluice, negotiated {client.session.protocol_version}")
        if is_auth:
            return await run_auth(scenario, client, sluice, cfg, errlog)
        wait = float(os.environ.get("HARNESS_WAIT", "10"))
        deadline = time.monotonic() + wait
        while True:
            names = [t.name for t in await list_all_tools(client)]
            if tool is None or tool in names:
                break
            if time.monotonic() > deadline:
                return f"tool {tool!r} not listed by sluice after {wait:.0f}s (listed: {names})"
            await anyio.sleep(0.2)
        log(f"tools through sluice: {names}")
        if tool is None:
            return None
        result = await client.call_tool(tool, args)
        texts = [getattr(c, "text", None) for c in result.content]
        log(f"{tool} -> isError={result.is_error} content={texts}")
        if result.is_error:
            return f"{tool} returned isError: {texts}"
        if not any(isinstance(t, str) and t.startswith(expect) for t in texts):
            return f"{tool} answered {texts}, expected a text starting with {expect!r}"
        if scenario.startswith("elicitation") and not ELICITATIONS:
            return "the tool completed but no elicitation/create reached the client"
    return None


def main() -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(sys.argv) < 2 or (scenario not in SCENARIOS and not scenario.startswith("auth/")):
        log(f"usage: MCP_CONFORMANCE_SCENARIO={{{','.join(SCENARIOS)}}} {sys.argv[0]} URL (got {scenario!r})")
        return 2
    url = sys.argv[-1]
    sluice = os.environ.get("SLUICE_BIN") or str(REPO / "target/debug/sluice")
    sluice = str(Path(sluice).resolve())
    mode = os.environ.get("HARNESS_MODE", "legacy")
    timeout = float(os.environ.get("HARNESS_TIMEOUT", "25"))
    with tempfile.TemporaryDirectory(prefix="sluice-client-conf.") as tmp:
        work = Path(tmp)
        errpath = work / "sluice.stderr"
        with open(errpath, "w+") as errlog:
            reason: str | None

            async def bounded() -> str | None:
                with anyio.fail_after(timeout):
                    return await run(scenario, url, sluice, mode, errlog, work)

            try:
                reason = anyio.run(bounded)
            except TimeoutError:
                reason = f"timed out after {timeout:.0f}s"
            except BaseException as e:  # noqa: BLE001 - report anything (ExceptionGroup included)
                reason = f"{type(e).__name__}: {e}"
            errlog.flush()
            text = errpath.read_text(errors="replace")
        print("----- sluice stderr -----", file=sys.stderr)
        print(text.rstrip(), file=sys.stderr)
        print("----- end of sluice stderr -----", file=sys.stderr, flush=True)
    if reason:
        log(f"FAIL {scenario}: {reason}")
        return 1
    log(f"OK {scenario}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
