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

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
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


def write_config(work: Path, url: str) -> Path:
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
    )
    return cfg


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
    tool, args, expect = SCENARIOS[scenario]
    cfg = write_config(work, url)
    log(f"scenario {scenario}: upstream {url}, sluice {sluice}, client mode {mode}")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"),
           "SLUICE_LOG": os.environ.get("SLUICE_LOG", "info")}
    params = StdioServerParameters(command=sluice, args=["serve", "--stdio", "--config", str(cfg)], env=env, cwd=str(work))
    async with Client(
        stdio_client(params, errlog=errlog),
        mode=mode,
        cache=None,
        read_timeout_seconds=20,
        elicitation_callback=elicit_with_defaults,
    ) as client:
        log(f"connected to sluice, negotiated {client.session.protocol_version}")
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
    if len(sys.argv) < 2 or scenario not in SCENARIOS:
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
