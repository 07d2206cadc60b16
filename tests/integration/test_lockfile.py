"""`sluice lock`, `sluice check` and a pinned `sluice serve`, against real upstreams.

* server-everything 2025.12.18 pages its 100 resources 10 at a time: `sluice lock` must read every
  page, and what it approves must be exactly what a direct client drains page by page (same client
  capabilities as sluice declares upstream: sampling and elicitation, not roots).
* server-everything 2026.8.31, server-memory and mcp-server-time locked together (everything only
  with `--accept-findings`: a URL default is a poisoning-scan finding); `sluice serve` with that
  lockfile lists exactly the approved tools, with the approved definitions.
* Drift on a real server: the upstream `time` is locked, then the config points `time` at
  server-memory. `check` reports every removed and added entry; `serve` lists none of the
  unapproved tools and refuses a call to one with -32010.

Every sluice command runs under a subprocess timeout, every await under `anyio.fail_after`, and
every failure message carries sluice's output.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import harness as H
from conftest import SluiceServer, write_config

CLI_TIMEOUT = 60.0  # one `sluice lock` / `sluice check`; sluice's own read_timeout is below it
READ_TIMEOUT = "20s"
LIST_FIELDS = {"tools": "tools", "resources": "resources", "resource_templates": "resourceTemplates",
               "prompts": "prompts"}
# The defining fields of each list (crates/sluice-core/src/catalog/definition.rs).
DEFINING = {
    "tools": ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "execution", "icons"),
    "resources": ("uri", "name", "title", "description", "mimeType", "icons"),
    "resourceTemplates": ("uriTemplate", "name", "title", "description", "mimeType", "icons"),
    "prompts": ("name", "title", "description", "arguments", "icons"),
}
DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------


def write_pinned_config(path: Path, upstreams: list[H.Upstream]) -> Path:
    write_config(path, upstreams)
    with path.open("a", encoding="utf-8") as f:
        f.write(f'\n[catalog]\nread_timeout = "{READ_TIMEOUT}"\n')
    return path


def sluice(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    cmd = [str(H.SLUICE_BIN), *args, "--config", str(config)]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=CLI_TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} did not finish within {CLI_TIMEOUT}s\n"
                    f"--- stdout ---\n{e.stdout}\n--- stderr ---\n{e.stderr}", pytrace=False)


def show(p: subprocess.CompletedProcess[str]) -> str:
    return (f"`{' '.join(p.args[1:])}` exited {p.returncode}\n"
            f"--- sluice stdout ---\n{p.stdout}\n--- sluice stderr ---\n{p.stderr}")


def expect_exit(p: subprocess.CompletedProcess[str], code: int) -> None:
    assert p.returncode == code, f"expected exit {code}\n{show(p)}"


def read_lock(path: Path) -> dict[str, Any]:
    assert path.is_file(), f"no lockfile at {path}"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc.get("version") == 2, doc.get("version")
    return doc


def canonical_digest(value: Any) -> str:
    """sha256 of the canonical JSON text (keys sorted, no whitespace). Matches sluice for
    definitions whose numbers are integers, which is all these servers send."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_entries(lock: dict[str, Any]) -> int:
    """Every entry: a sha256 digest of its definition, only defining fields, no `_meta`/`size`, the
    key equal to the definition's name/uri. Returns how many entries there are."""
    problems: list[str] = []
    n = 0
    for up, lists in lock["upstreams"].items():
        assert set(lists) <= set(DEFINING), f"{up}: unexpected lists {sorted(lists)}"
        for kind, entries in lists.items():
            key_field = {"resources": "uri", "resourceTemplates": "uriTemplate"}.get(kind, "name")
            for key, entry in entries.items():
                n += 1
                where = f"{up}.{kind}.{key}"
                d = entry.get("definition")
                if not isinstance(d, dict):
                    problems.append(f"{where}: no definition")
                    continue
                if "_meta" in d or "size" in d:
                    problems.append(f"{where}: _meta/size kept: {sorted(d)}")
                if set(d) - set(DEFINING[kind]):
                    problems.append(f"{where}: non-defining fields {sorted(set(d) - set(DEFINING[kind]))}")
                if d.get(key_field) != key:
                    problems.append(f"{where}: definition {key_field} is {d.get(key_field)!r}")
                digest = entry.get("digest", "")
                if not DIGEST_RE.fullmatch(digest):
                    problems.append(f"{where}: digest {digest!r}")
                elif digest != canonical_digest(d):
                    problems.append(f"{where}: digest {digest} is not sha256 of the canonical definition")
    assert not problems, "\n".join(problems[:30])
    return n


def defining(kind: str, item: dict[str, Any]) -> dict[str, Any]:
    return {k: item[k] for k in DEFINING[kind] if k in item}


async def drain_all(client: Client) -> dict[str, H.Listing]:
    return {kind: await H.drain_or_unsupported(client, kind) for kind in H.LIST_KINDS}


async def direct_lists(up: H.Upstream) -> dict[str, H.Listing]:
    """Every list of one upstream, drained page by page by a client that declares what sluice
    declares upstream (sampling and elicitation), so capability-dependent tools match."""
    with anyio.fail_after(H.CONNECT_TIMEOUT + 4 * H.OP_TIMEOUT):
        async with Client(H.stdio_transport(up), mode="legacy", cache=None, read_timeout_seconds=H.OP_TIMEOUT,
                          sampling_callback=H._noop_sampling,
                          elicitation_callback=H._noop_elicitation) as client:
            return await drain_all(client)


def wait_health(srv: SluiceServer, want: dict[str, str], timeout: float = H.READY_TIMEOUT) -> dict[str, Any]:
    """Poll /health until each named upstream reports the wanted `approval` and a complete catalog."""
    deadline = time.monotonic() + timeout
    doc: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            doc = srv.health()
        except (OSError, ValueError):
            doc = {}
        ups = doc.get("upstreams") or {}
        if all((ups.get(n) or {}).get("approval") == a and (ups.get(n) or {}).get("catalog") == "complete"
               for n, a in want.items()):
            return doc
        if srv.proc is not None and srv.proc.poll() is not None:
            break
        time.sleep(0.1)
    pytest.fail(f"/health never showed {want}: {json.dumps(doc)}\n--- sluice stderr ---\n{srv.stderr_tail()}",
                pytrace=False)


# ------------------------------------------------------------------------------------------------
# 1. Every page of a paginating server is locked, and only what defines each entry
# ------------------------------------------------------------------------------------------------


def test_lock_reads_every_page_of_everything_2025(tmp_path: Path, peers: Path, sluice_bin: Path) -> None:
    up = H.Workspace(tmp_path / "ws").upstreams()["everything2025"]
    cfg = write_pinned_config(tmp_path / "sluice.toml", [up])
    lockfile = tmp_path / "sluice.lock"

    out = sluice("lock", config=cfg)
    expect_exit(out, 0)
    assert "everything2025: locked 12 tools, 100 resources, 1 resource template, 3 prompts (new)" in out.stdout, show(out)
    lock = read_lock(lockfile)
    assert list(lock["upstreams"]) == ["everything2025"], list(lock["upstreams"])
    locked = lock["upstreams"]["everything2025"]
    assert len(locked["resources"]) == 100, show(out)
    assert check_entries(lock) == sum(len(v) for v in locked.values())

    # The same server drained directly, page by page.
    direct = anyio.run(direct_lists, up)
    assert direct["resources"].pages > 1, f"resources came in {direct['resources'].pages} page(s)"
    assert direct["resources"].pages == 10, direct["resources"].pages
    for kind, field in LIST_FIELDS.items():
        listing = direct[kind]
        keys = [H.item_key(kind, i) for i in listing.items]
        assert not H.duplicates(keys), f"direct {kind}: duplicates {H.duplicates(keys)}"
        assert set(locked[field]) == set(keys), (
            f"{field}: only locked {sorted(set(locked[field]) - set(keys))}, "
            f"only direct {sorted(set(keys) - set(locked[field]))} ({len(keys)} direct in {listing.pages} pages)")
        # What the lockfile approves is the entry's defining fields, as the server sent them.
        diffs = [k for k, i in zip(keys, listing.items) if locked[field][k]["definition"] != defining(field, i)]
        assert not diffs, f"{field}: definitions differ from the direct listing: {diffs[:5]}"
    assert {f"test://static/resource/{n}" for n in range(1, 101)} == set(locked["resources"])

    out = sluice("check", config=cfg)
    expect_exit(out, 0)
    assert out.stdout == "everything2025: unchanged (12 tools, 100 resources, 1 resource template, 3 prompts)\n", show(out)
    out = sluice("check", "--json", config=cfg)
    expect_exit(out, 0)
    assert json.loads(out.stdout) == {
        "result": "unchanged", "upstreams": [{"name": "everything2025", "verdict": "unchanged"}]}, show(out)

    first = lockfile.read_bytes()
    out = sluice("lock", config=cfg)
    expect_exit(out, 0)
    assert "(unchanged)" in out.stdout, show(out)
    assert lockfile.read_bytes() == first, "a second `sluice lock` changed the lockfile"


# ------------------------------------------------------------------------------------------------
# 2. Several real servers: lock, check, and serve exactly what was approved
# ------------------------------------------------------------------------------------------------

SEVERAL = ("everything", "memory", "time")


async def list_through(url: str, mode: str) -> tuple[str, dict[str, H.Listing]]:
    with anyio.fail_after(H.CONNECT_TIMEOUT + 4 * H.OP_TIMEOUT):
        async with H.make_client(url, mode) as client:
            return client.protocol_version, await drain_all(client)


def test_several_servers_lock_check_and_serve_only_the_locked(
    tmp_path: Path, peers: Path, sluice_bin: Path, sluice_servers: Any
) -> None:
    ups = H.Workspace(tmp_path / "ws").upstreams()
    cfg = write_pinned_config(tmp_path / "sluice.toml", [ups[n] for n in SEVERAL])
    lockfile = tmp_path / "sluice.lock"

    # server-everything's gzip tool has a URL as a default: the poisoning scan's `url` finding.
    # `lock` refuses that upstream (exit 1, naming the entry and the finding) and locks the others.
    out = sluice("lock", config=cfg)
    expect_exit(out, 1)
    finding = "url at inputSchema.properties.data.default"
    assert "everything: not locked: the poisoning scan found, in 1 entry" in out.stdout, show(out)
    assert f"tool gzip-file-as-resource: {finding}: " in out.stdout, show(out)
    assert set(read_lock(lockfile)["upstreams"]) == {"memory", "time"}, show(out)
    # Accepted, it is recorded beside the digest, and only there.
    out = sluice("lock", "--accept-findings", config=cfg)
    expect_exit(out, 0)
    lock = read_lock(lockfile)
    assert set(lock["upstreams"]) == set(SEVERAL), show(out)
    recorded = {(n, k, t): e["findings"] for n, lists in lock["upstreams"].items()
                for k, entries in lists.items() for t, e in entries.items() if "findings" in e}
    assert recorded == {("everything", "tools", "gzip-file-as-resource"): [finding]}, recorded
    check_entries(lock)
    sizes = {n: {k: len(v) for k, v in lists.items()} for n, lists in lock["upstreams"].items()}
    for n in SEVERAL:
        assert sizes[n]["tools"] > 0, sizes
        assert f"{n}: locked {sizes[n]['tools']} tools" in out.stdout, show(out)
    assert sizes["everything"]["resources"] > 0 and sizes["memory"]["resources"] == 1, sizes

    out = sluice("check", config=cfg)
    expect_exit(out, 0)
    assert sorted(out.stdout.splitlines()) == sorted(
        f"{n}: unchanged (" + ", ".join(
            f"{c} {w}{'' if c == 1 else 's'}" for c, w in zip(
                (sizes[n]["tools"], sizes[n]["resources"], sizes[n]["resourceTemplates"], sizes[n]["prompts"]),
                ("tool", "resource", "resource template", "prompt"))) + ")"
        for n in SEVERAL), show(out)

    srv = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", set(SEVERAL))
    health = wait_health(srv, {n: "unchanged" for n in SEVERAL})
    for n in SEVERAL:
        assert health["upstreams"][n]["tools"] == sizes[n]["tools"], health
    log = srv.stderr_tail()
    assert "pinned: serving only what" in log, log

    for mode in ("legacy", H.MODERN):
        version, lists = anyio.run(list_through, srv.url, mode)
        ctx = f"(mode {mode}, negotiated {version})\n--- sluice stderr ---\n{srv.stderr_tail()}"
        tools = lists["tools"].items
        names = [t["name"] for t in tools]
        assert not H.duplicates(names), f"listed twice: {H.duplicates(names)} {ctx}"
        want = {f"{n}{H.SEPARATOR}{t}" for n in SEVERAL for t in lock["upstreams"][n]["tools"]}
        assert set(names) == want, (
            f"only listed: {sorted(set(names) - want)}, only locked: {sorted(want - set(names))} {ctx}")
        problems = []
        for t in tools:
            up, _, bare = t["name"].partition(H.SEPARATOR)
            approved = lock["upstreams"][up]["tools"][bare]["definition"]
            if t.get("description") != approved.get("description"):
                problems.append(f"{t['name']}: description {t.get('description')!r} != {approved.get('description')!r}")
            # Fields the negotiated version has not (`execution` for 2026-07-28) are approved but
            # not shown.
            absent = H.ABSENT_BY_VERSION.get(version or "", {}).get("tools", frozenset())
            if {**defining("tools", t), "name": bare} != {k: v for k, v in approved.items() if k not in absent}:
                problems.append(f"{t['name']}: served definition differs from the approved one")
        assert not problems, "\n".join(problems) + ctx
        # Resources and prompts are the locked ones too (resource URIs are not prefixed).
        uris = {r["uri"] for r in lists["resources"].items}
        assert uris == {u for n in SEVERAL for u in lock["upstreams"][n]["resources"]}, f"{sorted(uris)} {ctx}"
        prompts = {p["name"] for p in lists["prompts"].items}
        assert prompts == {f"{n}{H.SEPARATOR}{p}" for n in SEVERAL for p in lock["upstreams"][n]["prompts"]}, ctx


# ------------------------------------------------------------------------------------------------
# 3. Drift on a real server: the upstream name now runs a different server
# ------------------------------------------------------------------------------------------------


async def drifted_session(url: str, mode: str, blocked: str, removed: str, control: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with anyio.fail_after(H.CONNECT_TIMEOUT + 4 * H.OP_TIMEOUT):
        async with H.make_client(url, mode) as client:
            out["version"] = client.protocol_version
            out["tools"] = [t["name"] for t in (await H.drain(client, "tools")).items]
            out["resources"] = [r["uri"] for r in (await H.drain(client, "resources")).items]
            for key, name in (("blocked", blocked), ("removed", removed)):
                try:
                    with anyio.fail_after(H.OP_TIMEOUT):
                        r = await client.call_tool(name, {"timezone": "UTC"})
                    out[key] = {"result": H.dump(r)}
                except Exception as e:  # noqa: BLE001 - MCPError for a JSON-RPC error; checked by the test
                    err = getattr(e, "error", None)
                    out[key] = ({"code": err.code, "message": err.message, "data": err.data} if err is not None
                                else {"exception": H.describe_error(e)})
            with anyio.fail_after(H.OP_TIMEOUT):
                r = await client.call_tool(control, {"timezone": "UTC"})
            out["control"] = H.dump(r)
    return out


def test_a_different_server_behind_a_locked_name_is_drift_and_blocked(
    tmp_path: Path, peers: Path, sluice_bin: Path, sluice_servers: Any
) -> None:
    ups = H.Workspace(tmp_path / "ws").upstreams()
    time_up, memory_up = ups["time"], ups["memory"]
    # A second, untouched upstream shows that only the drifted one is held back.
    clock = H.Upstream("clock", time_up.command, time_up.args)
    cfg = tmp_path / "sluice.toml"
    write_pinned_config(cfg, [time_up, clock])
    out = sluice("lock", config=cfg)
    expect_exit(out, 0)
    lock = read_lock(tmp_path / "sluice.lock")
    time_tools = set(lock["upstreams"]["time"]["tools"])
    assert time_tools and time_tools == set(lock["upstreams"]["clock"]["tools"]), show(out)
    assert "get_current_time" in time_tools, time_tools

    # `time` now starts server-memory.
    swapped = H.Upstream("time", memory_up.command, memory_up.args, env=memory_up.env)
    write_pinned_config(cfg, [swapped, clock])
    memory = anyio.run(direct_lists, memory_up)
    memory_tools = {t["name"] for t in memory["tools"].items}
    memory_resources = {r["uri"] for r in memory["resources"].items}
    assert memory_tools and not memory_tools & time_tools, (memory_tools, time_tools)

    out = sluice("check", config=cfg)
    expect_exit(out, 1)
    lines = out.stdout.splitlines()
    assert "time: drifted" in lines, show(out)
    assert any(line.startswith("clock: unchanged") for line in lines), show(out)
    removed = {line.removeprefix("  - tool ") for line in lines if line.startswith("  - tool ")}
    added = {line.removeprefix("  + tool ") for line in lines if line.startswith("  + tool ")}
    assert removed == time_tools, show(out)
    assert added == memory_tools, show(out)
    assert {line.removeprefix("  + resource ") for line in lines if line.startswith("  + resource ")} == \
        memory_resources, show(out)

    out = sluice("check", "--json", config=cfg)
    expect_exit(out, 1)
    report = json.loads(out.stdout)
    assert report["result"] == "drifted", show(out)
    verdicts = {u["name"]: u for u in report["upstreams"]}
    assert verdicts["clock"] == {"name": "clock", "verdict": "unchanged"}, show(out)
    t = verdicts["time"]
    assert t["verdict"] == "drifted" and t["inLockfile"] is True and t["changed"] == [], show(out)
    assert {e["key"] for e in t["removed"] if e["list"] == "tools"} == time_tools, show(out)
    assert {e["key"] for e in t["added"] if e["list"] == "tools"} == memory_tools, show(out)
    assert {e["key"] for e in t["added"] if e["list"] == "resources"} == memory_resources, show(out)
    assert len(t["added"]) == len(memory_tools) + len(memory_resources) and len(t["removed"]) == len(time_tools)

    srv = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", {"time", "clock"})
    health = wait_health(srv, {"time": "drifted", "clock": "unchanged"})
    assert health["upstreams"]["time"]["drift"] == {
        "added": len(memory_tools) + len(memory_resources), "removed": len(time_tools), "changed": 0}, health

    blocked = f"time{H.SEPARATOR}{sorted(memory_tools)[0]}"
    for mode in ("legacy", H.MODERN):
        got = anyio.run(drifted_session, srv.url, mode, blocked, f"time{H.SEPARATOR}get_current_time",
                        f"clock{H.SEPARATOR}get_current_time")
        ctx = f"(mode {mode}, negotiated {got['version']})\n--- sluice stderr ---\n{srv.stderr_tail()}"
        assert not [n for n in got["tools"] if n.startswith(f"time{H.SEPARATOR}")], f"{got['tools']} {ctx}"
        assert set(got["tools"]) == {f"clock{H.SEPARATOR}{n}" for n in time_tools}, f"{got['tools']} {ctx}"
        assert not memory_resources & set(got["resources"]), f"{got['resources']} {ctx}"
        b = got["blocked"]
        assert b.get("code") == -32010, f"calling {blocked}: {b} {ctx}"
        assert (b.get("data") or {}).get("drift") == "added", f"{b} {ctx}"
        assert (b.get("data") or {}).get("upstream") == "time", f"{b} {ctx}"
        # A tool the lockfile approved but the server no longer lists is refused the same way.
        r = got["removed"]
        assert r.get("code") == -32010 and r.get("data") == {"upstream": "time", "drift": "removed"}, f"{r} {ctx}"
        assert not got["control"].get("isError") and "UTC" in json.dumps(got["control"]), f"{got['control']} {ctx}"
    assert "catalog drifted from sluice.lock" in srv.stderr_tail(200), srv.stderr_tail()
