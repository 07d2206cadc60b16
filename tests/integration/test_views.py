"""`[[view]]` over the example's four real servers (server-everything, mcp-server-time,
server-memory, server-filesystem), seen through sluice by real clients:

* the Python SDK, at `/mcp/<view>` in both eras and on `serve --stdio --view`: every list shows
  exactly the entries the view's globs select from the whole catalog (at `/mcp`), renamed and
  re-described as configured; calls inside the view work by the view's names; a call outside it
  fails exactly as a name that exists nowhere;
* the inspector CLI (`tools/list` at `/mcp/<view>`): the same tool names.

The expectation is computed from the whole catalog with the view's own rule (`fnmatch` on the
exposed name or URI: the globs here use only `*`), so the test holds whatever the servers list.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

import harness as H
from conftest import write_config

UPSTREAMS = ("everything", "time", "memory", "filesystem")
INCLUDE = ["time__*", "everything__echo", "everything__get-sum", "memory__read_graph", "filesystem__list_*",
           "demo://resource/static/document/*"]
EXCLUDE = ["time__convert_time", "filesystem__list_allowed_directories"]
RENAME = {"memory__read_graph": "graph"}
DESCRIPTIONS = {"everything__echo": "Say the message back."}
VIEW_TOML = f"""
[[view]]
name = "research"
include = {json.dumps(INCLUDE)}
exclude = {json.dumps(EXCLUDE)}
rename = {{ "memory__read_graph" = "graph" }}
descriptions = {{ "everything__echo" = "Say the message back." }}
"""
KEYS = {"tools": "name", "prompts": "name", "resources": "uri", "resource_templates": "uriTemplate"}


def in_view(key: str) -> bool:
    return any(fnmatch.fnmatchcase(key, g) for g in INCLUDE) and not any(fnmatch.fnmatchcase(key, g) for g in EXCLUDE)


def expected(whole: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for kind, items in whole.items():
        key = KEYS[kind]
        shown = []
        for item in items:
            if not in_view(item[key]):
                continue
            item = dict(item)
            if item[key] in DESCRIPTIONS:
                item["description"] = DESCRIPTIONS[item[key]]
            if kind in ("tools", "prompts"):
                item["name"] = RENAME.get(item["name"], item["name"])
            shown.append(item)
        out[kind] = shown
    return out


async def observe(server: Any, mode: str) -> dict[str, Any]:
    """Every list drained, two calls inside the view and three outside it."""
    out: dict[str, Any] = {}
    with anyio.fail_after(H.CONNECT_TIMEOUT + 12 * H.OP_TIMEOUT):
        async with H.make_client(server, mode) as client:
            out["lists"] = {kind: (await H.drain(client, kind)).items for kind in KEYS}
            with anyio.fail_after(H.OP_TIMEOUT):
                out["graph"] = H.dump(await client.call_tool("graph", {}))
                out["sum"] = H.dump(await client.call_tool("everything__get-sum", {"a": 2, "b": 3}))
            out["refused"] = {}
            for name in ("zz__nothing", "time__convert_time", "memory__read_graph", "everything__get-env"):
                outcome = await H.attempt(lambda name=name: client.call_tool(name, {}))
                out["refused"][name] = outcome
    return out


async def observe_whole(url: str) -> dict[str, list[dict[str, Any]]]:
    with anyio.fail_after(H.CONNECT_TIMEOUT + 4 * H.OP_TIMEOUT):
        async with H.make_client(url, "legacy") as client:
            return {kind: (await H.drain(client, kind)).items for kind in KEYS}


def refusal_text(outcome: H.Outcome, name: str) -> str:
    """What a refused call says, with its name taken out, so two refusals can be compared."""
    assert not outcome.ok, f"{name}: expected a refusal, got {outcome.value}"
    return (outcome.error or "").replace(name, "NAME")


def check(seen: dict[str, Any], want: dict[str, list[dict[str, Any]]], ctx: str) -> None:
    for kind in KEYS:
        got = [(i[KEYS[kind]], i.get("description")) for i in seen["lists"][kind]]
        exp = [(i[KEYS[kind]], i.get("description")) for i in want[kind]]
        assert got == exp, f"{kind}: got {got}\nwant {exp}\n{ctx}"
    assert not seen["graph"].get("isError"), f"{seen['graph']} {ctx}"
    assert "5" in json.dumps(seen["sum"]["content"]), f"{seen['sum']} {ctx}"
    nowhere = refusal_text(seen["refused"]["zz__nothing"], "zz__nothing")
    for name in ("time__convert_time", "memory__read_graph", "everything__get-env"):
        assert refusal_text(seen["refused"][name], name) == nowhere, f"{name} {ctx}"


@pytest.fixture
def views_setup(tmp_path: Path, peers: Path, sluice_bin: Path, sluice_servers: Any) -> Any:
    ups = H.Workspace(tmp_path / "ws").upstreams()
    cfg = write_config(tmp_path / "sluice.toml", [ups[n] for n in UPSTREAMS])
    with cfg.open("a", encoding="utf-8") as f:
        f.write(VIEW_TOML)
    srv = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", set(UPSTREAMS))
    whole = anyio.run(observe_whole, srv.url)
    return cfg, srv, whole


@pytest.mark.parametrize("mode", ["legacy", H.MODERN])
def test_the_sdk_sees_exactly_the_view_over_http(views_setup: Any, mode: str) -> None:
    _, srv, whole = views_setup
    want = expected(whole)
    assert want["tools"] and len(want["tools"]) < len(whole["tools"]), want
    assert {t["name"] for t in want["tools"]} >= {"graph", "time__get_current_time", "everything__echo"}, want
    seen = anyio.run(observe, f"{srv.url}/research", mode)
    check(seen, want, f"(mode {mode})\n--- sluice stderr ---\n{srv.stderr_tail()}")


def test_the_sdk_sees_exactly_the_view_over_stdio(views_setup: Any) -> None:
    cfg, srv, whole = views_setup
    server = StdioServerParameters(
        command=str(H.SLUICE_BIN), args=["serve", "--stdio", "--view", "research", "--config", str(cfg)],
        env={**os.environ, "SLUICE_LOG": "warn"})
    seen = anyio.run(observe, stdio_client(server), "legacy")
    check(seen, expected(whole), "(stdio)")


def test_the_inspector_lists_exactly_the_view(views_setup: Any, tmp_path: Path) -> None:
    _, srv, whole = views_setup
    argv = [str(H.NODE22), str(H.INSPECTOR_JS), "--cli", "--format", "json", "-q", "--protocol-era", "legacy",
            "--method", "tools/list", "--server-url", f"{srv.url}/research", "--transport", "http"]
    env = {**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "inspector-catalog.json")}
    p = subprocess.run(argv, capture_output=True, text=True, timeout=90, env=env, cwd=tmp_path)
    assert p.returncode == 0, f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    names = [t["name"] for t in json.loads(p.stdout)["result"]["tools"]]
    assert names == [t["name"] for t in expected(whole)["tools"]], names
